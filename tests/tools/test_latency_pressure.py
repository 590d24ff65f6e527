"""rtmem latency under a load: --pressure runs the workers beside the
measuring thread (on the other CPUs by default), records what they did and
reaps every one, on a normal end, on SIGINT, and (they die with it) when
the tool is killed; a load above half of MemAvailable is refused unless
--force; --sweep writes one JSON with an idle baseline and a run per mode x
stride x size, in that order, skipping (with the reason) a stride larger
than the size and a size above the memory share; bad combinations exit 2.

No assertion depends on how fast the machine is.

usage: test_latency_pressure.py RTMEM_BINARY
"""
import os
import signal
import subprocess
import sys
import time

from rtmemtest import (Checks, TempDir, alive, become_subreaper, envelope_ok, load_json, orphans,
                       over_share, reap_ends, run, wait_children)

rtmem = sys.argv[1]
checks = Checks("tools.latency_pressure")
checks.ok(become_subreaper(), "this test is a child subreaper")
SUMMARY = ["samples", "overruns", "min_ns", "avg_ns", "p50_ns", "p99_ns", "p999_ns", "p9999_ns",
           "max_ns"]


def summary_ok(what, s, deadlines, stopped=False):
    checks.ok(list(s.keys()) == SUMMARY, "%s: the summary has exactly its fields" % what, s)
    if list(s.keys()) != SUMMARY:
        return
    order = [s["min_ns"], s["p50_ns"], s["p99_ns"], s["p999_ns"], s["p9999_ns"], s["max_ns"]]
    checks.ok(order == sorted(order), "%s: min <= p50 <= ... <= max" % what, s)
    if not stopped:
        checks.ok(s["samples"] + s["overruns"] == deadlines,
                  "%s: samples + overruns = deadlines" % what, (s, deadlines))


def start(*args):
    return subprocess.Popen([rtmem, "latency"] + [str(a) for a in args],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL)
                                                for s in (signal.SIGINT, signal.SIGTERM)])


with open("/proc/meminfo") as f:
    avail = next(int(l.split()[1]) * 1024 for l in f if l.startswith("MemAvailable:"))
ncpus = len(os.sched_getaffinity(0))

with TempDir() as tmp:
    # One run under a load: the summary, the load as asked, its counters,
    # the workers off the measured CPU, all of them reaped.
    path = os.path.join(tmp, "p.json")
    args = ["--duration", 1, "--pressure", "vm=2,bytes=4M,stride=4096", "--json", path]
    r = run(rtmem, "latency", *args, timeout=120)
    checks.ok(r.returncode == 0, "latency --pressure", r)
    checks.ok("pressure   : " in r.stdout and "every worker reaped" in r.stdout,
              "the report describes the load and what it did", r)
    d = load_json(path)
    envelope_ok(checks, d, "latency", "rtmem-latency/1", args)
    if d:
        summary_ok("--pressure", d["summary"], d["deadlines"])
        p = d["pressure"]
        load, tot = p["load"], p["totals"]
        checks.ok((load["vm"], load["bytes"], load["stride"], load["mode"], load["spin"]) ==
                  (2, 4 << 20, 4096, "plain", 0), "the load as asked", load)
        checks.ok(tot["vm_rounds"] > 0 and tot["ended_early_count"] == 0,
                  "the workers worked, none ended early", tot)
        cpu = d["real_time"]["cpu_now"]
        if d["real_time"]["affinity"]["granted"] and ncpus > 1:
            checks.ok(load["cpus"] is not None and cpu not in load["cpus"] and
                      sorted(load["cpus"] + [cpu]) == sorted(os.sched_getaffinity(0)),
                      "the workers on every CPU but the one measured", (cpu, load["cpus"]))
    checks.ok(orphans() == [], "no worker outlived the run")

    # Where the workers really run (their Cpus_allowed_list): by default
    # every CPU but the one measured, or --pressure-cpus.
    def worker_cpus(pid):
        out = {}
        for k in wait_children(pid, 1):
            try:
                with open("/proc/%d/status" % k) as f:
                    out[k] = next(l.split()[1] for l in f if l.startswith("Cpus_allowed_list:"))
            except OSError:
                pass
        return out

    def cpu_set(text):
        """"0-2,5" as {0, 1, 2, 5}."""
        out = set()
        for part in text.split(","):
            lo, _, hi = part.partition("-")
            out.update(range(int(lo), int(hi or lo) + 1))
        return out

    allowed = sorted(os.sched_getaffinity(0))
    for extra, want in [([], set(allowed[:-1]) if len(allowed) > 1 else None),
                        (["--pressure-cpus", str(allowed[0])], {allowed[0]})]:
        p = start("--duration", 60, "--pressure", "vm=1,bytes=1M", *extra)
        time.sleep(0.5)
        cpus = worker_cpus(p.pid)
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=60)
        if want is not None:
            checks.ok([cpu_set(c) for c in cpus.values()] == [want],
                      "%s: the worker runs on cpus %s" % (extra or "default", sorted(want)), cpus)
        checks.ok(p.returncode == 0 and orphans() == [], "%s: ended, reaped" % extra, err)

    # A worker that dies during the run (the OOM killer, here kill -9): the
    # run reports it and fails; its result file says so.
    p = start("--duration", 3, "--pressure", "vm=2,bytes=4M", "--json", path)
    kids = wait_children(p.pid, 2)
    time.sleep(1)
    if kids:
        os.kill(kids[0], signal.SIGKILL)
    out, err = p.communicate(timeout=60)
    d = load_json(path)
    checks.ok(p.returncode == 1 and "WORKER ENDED EARLY" in out and "SIGKILL" in out,
              "a worker killed during the run fails it, named", (p.returncode, out, err))
    checks.ok(d is not None and d["passed"] is False and
              d["pressure"]["totals"]["ended_early_count"] == 1,
              "the result file says the load did not run as asked", d and d.get("pressure"))
    checks.ok(orphans() == [], "the other worker reaped")

    # SIGINT without --json: a complete run too.
    p = start("--duration", 60, "--pressure", "vm=1,bytes=1M")
    wait_children(p.pid, 1)
    time.sleep(1)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    checks.ok(p.returncode == 0 and "stopped by SIGINT" in out,
              "SIGINT without --json: a complete run", (p.returncode, err))
    checks.ok(orphans() == [], "SIGINT without --json: every worker reaped")

    # SIGINT: a complete run, the workers reaped; SIGKILL: they die with it.
    p = start("--duration", 60, "--pressure", "vm=1,bytes=4M,spin=1", "--json", path)
    kids = wait_children(p.pid, 2)
    checks.ok(len(kids) == 2, "two workers beside the run", kids)
    time.sleep(1.5)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    d = load_json(path)
    checks.ok(p.returncode == 0 and d and d["stopped_by"] == "SIGINT" and
              d["pressure"]["totals"]["vm_rounds"] > 0, "SIGINT: a complete run", (out, err))
    checks.ok(not any(alive(k) for k in kids) and orphans() == [], "SIGINT: every worker reaped",
              kids)
    p = start("--duration", 60, "--pressure", "vm=1,bytes=4M,spin=1")
    kids = wait_children(p.pid, 2)
    checks.ok(len(kids) == 2, "SIGKILL: two workers beside the run", kids)
    p.kill()
    p.communicate(timeout=60)
    ends = reap_ends(kids)
    checks.ok(sorted(ends) == sorted(kids), "SIGKILL: every worker ended with the tool",
              (kids, ends))

    # The memory share.
    vm, big = over_share(avail)
    r = run(rtmem, "latency", "--duration", 1, "--pressure", "vm=%d,bytes=%s" % (vm, big),
            timeout=60)
    checks.ok(r.returncode == 2 and "MemAvailable" in r.stderr and "--force" in r.stderr and
              r.stdout == "", "--pressure vm=%d,bytes=%s refused, naming --force" % (vm, big), r)

    # A tiny sweep: its shape.
    huge = "%dM" % ((avail * 6 // 10) >> 20)
    path = os.path.join(tmp, "s.json")
    args = ["--sweep", "--sizes", "1M,2M," + huge, "--strides", "4096,4M", "--modes",
            "plain,keep", "--duration", "300ms", "--pressure", "vm=1", "--json", path]
    r = run(rtmem, "latency", *args, timeout=300)
    checks.ok(r.returncode == 0, "a tiny sweep", r)
    d = load_json(path)
    envelope_ok(checks, d, "latency", "rtmem-latency/1", args)
    if d:
        checks.ok(d["mode"] == "sweep" and d["summary"] is None and d["pressure"] is None,
                  "the sweep's document: mode sweep, no top-level summary", d["mode"])
        s = d["sweep"]
        sizes = sorted([1 << 20, 2 << 20, int(huge[:-1]) << 20])
        checks.ok(s["sizes"] == sizes and s["strides"] == [4096, 4 << 20] and
                  s["modes"] == ["plain", "keep"] and s["run_ns"] == 300000000,
                  "the sweep's parameters", s)
        checks.ok(s["runs_planned"] == 13 and s["runs_done"] == 13 and len(s["runs"]) == 12,
                  "a baseline and 2 modes x 2 strides x 3 sizes", s["runs_planned"])
        b = s["baseline"]
        checks.ok(b["mode"] == "idle" and b["load"] is None and b["skipped"] is None,
                  "the baseline is idle", b)
        summary_ok("baseline", b["summary"], b["deadlines"])
        order = [(x["mode"], x["stride"], x["bytes"]) for x in s["runs"]]
        want = [(m, st, sz) for m in ("plain", "keep") for st in (4096, 4 << 20) for sz in sizes]
        checks.ok(order == want, "runs in mode, stride, size order", order)
        for x in s["runs"]:
            what = "%s %s %s" % (x["mode"], x["stride"], x["bytes"])
            if x["stride"] > x["bytes"]:
                checks.ok(x["skipped"] and "stride" in x["skipped"] and x["summary"] is None,
                          "%s: skipped, the stride larger than the size" % what, x)
            elif x["bytes"] == sizes[-1]:
                checks.ok(x["skipped"] and "memory available" in x["skipped"] and
                          x["summary"] is None, "%s: skipped, above the memory share" % what, x)
            else:
                checks.ok(x["skipped"] is None and x["load"]["vm_rounds"] > 0 and
                          x["load"]["ended_early_count"] == 0, "%s: ran, its load worked" % what, x)
                summary_ok(what, x["summary"], x["deadlines"])
        checks.ok("the worst of each curve" in r.stdout, "the report ends with the worst", r)
    checks.ok(orphans() == [], "no worker outlived the sweep")

    # Another real-time task that may run on the measured CPU is named (one
    # of the same priority delays the thread unseen). Root only: chrt.
    cpu = max(os.sched_getaffinity(0))
    try:
        other = subprocess.Popen(["chrt", "-f", "10", "taskset", "-c", str(cpu), "sleep", "30"],
                                 stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        other = None
    time.sleep(0.3)
    if other is None or other.poll() is not None:
        print("  (no real-time neighbour test: chrt -f refused here)")
    else:
        r = run(rtmem, "latency", "--duration", "200ms", "--cpu", cpu, "--json", path, timeout=60)
        other.kill()
        other.wait()
        d = load_json(path)
        words = " ".join(r.stdout.split())
        # Only the first one is named: another test's task may come first.
        checks.ok(r.returncode == 0 and d is not None and
                  (d["rt_neighbours"] or 0) >= 1 and "other real-time task" in words and
                  ((d["rt_neighbours"] or 0) > 1 or "(sleep) SCHED_FIFO 10" in words),
                  "a SCHED_FIFO neighbour on the measured CPU is named", r)

    # Bad combinations.
    for bad, why in [(["--sizes", "4M"], "need --sweep"),
                     (["--noise", "--pressure", "vm=1"], "--noise runs on its own"),
                     (["--pressure", "vm=1,bogus=2"], "unknown item 'bogus'"),
                     (["--pressure", "vm=1,bytes"], "needs a value"),
                     (["--pressure-cpus", "0"], "needs --pressure"),
                     (["--force"], "needs --pressure"),
                     (["--sweep", "--pressure", "spin=1"], "needs vm=N"),
                     (["--sweep", "--pressure", "vm=1,hdd=1,dir=/nonexistent/rtmem"],
                      "the disk writers' directory"),
                     (["--sweep", "--modes", "plain,fast"], "not plain, keep or hang"),
                     (["--pressure", "vm=1,bytes=4K,stride=8K"], "larger than the bytes")]:
        r = run(rtmem, "latency", *bad, timeout=30)
        checks.ok(r.returncode == 2 and why in r.stderr and r.stdout == "",
                  "bad usage %s: exit 2, '%s'" % (bad, why), r)

checks.done()
