"""rtmem pressure: a short run's JSON has the envelope, the load as asked
and counters that add up; no worker outlives the run, whether it ends on
its own, on SIGINT or SIGTERM, or with the tool killed by SIGKILL (the
workers die with it); the disk writers' files are never seen and never
left behind; a worker that cannot allocate fails the run (exit 1) with the
cause; memory above half of MemAvailable is refused unless --force; bad
usage exits 2.

To see every worker that outlives its parent, this test makes itself a
child subreaper (PR_SET_CHILD_SUBREAPER): an orphaned worker becomes its
child, and waitpid finds it.

usage: test_pressure.py RTMEM_BINARY
"""
import os
import signal
import subprocess
import sys
import time

from rtmemtest import (BITS, Checks, TempDir, alive, become_subreaper, envelope_ok, load_json,
                       orphans, over_share, reap_ends, run, wait_children)

rtmem = sys.argv[1]
checks = Checks("tools.pressure")
checks.ok(become_subreaper(), "this test is a child subreaper")


def start(*args):
    return subprocess.Popen([rtmem, "pressure"] + [str(a) for a in args],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL)
                                                for s in (signal.SIGINT, signal.SIGTERM)])


with TempDir() as tmp:
    # A short run of every kind of worker: the envelope, the load as given,
    # counters that add up, nothing left in the disk writers' directory.
    path = os.path.join(tmp, "p.json")
    wdir = os.path.join(tmp, "w")
    os.mkdir(wdir)
    args = ["--vm", 2, "--bytes", "8M", "--stride", 64, "--spin", 1, "--sync", 1, "--hdd", 1,
            "--hdd-bytes", "4M", "--dir", wdir, "--duration", 1, "--json", path]
    r = run(rtmem, "pressure", *args, timeout=60)
    checks.ok(r.returncode == 0, "pressure --duration 1", r)
    d = load_json(path)
    envelope_ok(checks, d, "pressure", "rtmem-pressure/1", args)
    if d:
        load, tot = d["load"], d["totals"]
        checks.ok((load["vm"], load["bytes"], load["stride"], load["spin"], load["sync"],
                   load["hdd"], load["hdd_bytes"], load["mode"], load["alloc"]) ==
                  (2, 8 << 20, 64, 1, 1, 1, 4 << 20, "plain", "malloc"),
                  "the load as asked", load)
        # (A sync() may take longer than the run on a busy disk: not counted on.)
        checks.ok(tot["vm_rounds"] > 0 and tot["spin_loops"] > 0 and
                  tot["hdd_bytes_written"] > 0, "the vm, spin and hdd workers worked", tot)
        # Each round writes bytes / stride bytes: at least that many per
        # completed round, at most one round more.
        per_round = (8 << 20) // 64
        checks.ok(tot["vm_rounds"] * per_round <= tot["vm_bytes_written"] <=
                  (tot["vm_rounds"] + 2) * per_round,
                  "bytes written = rounds x bytes / stride (rounds in progress aside)", tot)
        checks.ok(tot["vm_bytes_swept"] == tot["vm_bytes_written"] * 64, "swept = written x stride",
                  tot)
        checks.ok(tot["ended_early"] == [] and tot["ended_early_count"] == 0 and d["passed"],
                  "no worker ended early", tot)
        lines = d["per_second"]
        checks.ok(len(lines) == 1 and lines[-1]["vm_rounds"] <= tot["vm_rounds"],
                  "a line for the one second", lines)
        checks.ok(d["stopped_by"] is None, "not stopped", d["stopped_by"])
    checks.ok(os.listdir(wdir) == [], "the disk writers left nothing in --dir", os.listdir(wdir))
    checks.ok(orphans() == [], "no worker outlived the run")

    # SIGINT and SIGTERM: the run ends early, completely, every worker reaped.
    for sig in (signal.SIGINT, signal.SIGTERM):
        name = signal.Signals(sig).name
        path = os.path.join(tmp, "s.json")
        p = start("--vm", 2, "--bytes", "4M", "--hdd", 1, "--hdd-bytes", "4M", "--dir", wdir,
                  "--duration", 60, "--json", path)
        kids = wait_children(p.pid, 3)
        checks.ok(len(kids) == 3, "%s: three workers running" % name, kids)
        checks.ok(os.listdir(wdir) == [], "%s: the disk writer's file has no name" % name,
                  os.listdir(wdir))
        time.sleep(0.5)
        p.send_signal(sig)
        out, err = p.communicate(timeout=30)
        checks.ok(p.returncode == 0, "%s: a complete run, exit 0" % name, (p.returncode, err))
        checks.ok("stopped by %s" % name in out, "%s: the report says so" % name, out)
        d = load_json(path)
        checks.ok(d is not None and d["stopped_by"] == name, "%s: the JSON says so" % name,
                  d and d.get("stopped_by"))
        checks.ok(not any(alive(k) for k in kids) and orphans() == [],
                  "%s: every worker reaped" % name, kids)
        checks.ok(os.listdir(wdir) == [], "%s: nothing left in --dir" % name, os.listdir(wdir))

    # Without --json too (the kit's cleanup is installed early, not over
    # the stop handler): SIGINT ends the run as a complete one.
    p = start("--vm", 1, "--bytes", "4M", "--duration", 60)
    kids = wait_children(p.pid, 1)
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    checks.ok(p.returncode == 0 and "stopped by SIGINT" in out,
              "SIGINT without --json: a complete run, exit 0", (p.returncode, out, err))
    checks.ok(not any(alive(k) for k in kids) and orphans() == [],
              "SIGINT without --json: every worker reaped", kids)

    # What each worker is: its name, its CPUs, first for the OOM killer,
    # nothing of the tool's open (a disk writer: its own file as fd 3).
    cpu = min(os.sched_getaffinity(0))
    p = start("--vm", 1, "--bytes", "4M", "--spin", 1, "--hdd", 1, "--hdd-bytes", "1M", "--dir",
              wdir, "--cpus", cpu, "--duration", 60, "--json", os.path.join(tmp, "w.json"))
    kids = wait_children(p.pid, 3)

    def describe(k):
        """A worker's name, CPUs, OOM score and open fds; None if unreadable."""
        try:
            with open("/proc/%d/comm" % k) as f:
                comm = f.read().strip()
            with open("/proc/%d/status" % k) as f:
                cpus = next(l.split()[1] for l in f if l.startswith("Cpus_allowed_list:"))
            with open("/proc/%d/oom_score_adj" % k) as f:
                adj = f.read().strip()
            return comm, (cpus, adj, sorted(int(x) for x in os.listdir("/proc/%d/fd" % k)))
        except OSError:
            return None

    # Until every worker has set itself up (it renames itself last).
    seen = {}
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        found = [describe(k) for k in kids]
        seen = dict(x for x in found if x)
        if sorted(seen) == ["rtmem-hdd", "rtmem-spin", "rtmem-vm"] and \
                seen["rtmem-hdd"][2][-1:] == [3] and len(seen["rtmem-vm"][2]) == 3:
            break
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=30)
    checks.ok(sorted(seen) == ["rtmem-hdd", "rtmem-spin", "rtmem-vm"],
              "the workers are named for what they do", seen)
    checks.ok(seen and all(v[0] == str(cpu) and v[1] == "1000" for v in seen.values()),
              "each pinned to --cpus %d, oom_score_adj 1000" % cpu, seen)
    checks.ok(seen.get("rtmem-vm", (0, 0, None))[2] == [0, 1, 2] and
              seen.get("rtmem-spin", (0, 0, None))[2] == [0, 1, 2] and
              seen.get("rtmem-hdd", (0, 0, None))[2] == [0, 1, 2, 3],
              "nothing of the tool's open in a worker (the result file's temporary neither)",
              seen)
    checks.ok(orphans() == [], "SIGTERM: every worker reaped")

    # A stopped tool (Ctrl-Z) stops renewing its lease: its workers end
    # within 3 s, and once resumed it reports them (exit 1).
    p = start("--vm", 1, "--bytes", "4M", "--spin", 1, "--duration", 60)
    kids = wait_children(p.pid, 2)
    checks.ok(len(kids) == 2, "SIGSTOP: two workers running", kids)
    time.sleep(0.3)
    os.kill(p.pid, signal.SIGSTOP)

    def state(pid):
        try:
            with open("/proc/%d/stat" % pid) as f:
                return f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            return "gone"

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(state(k) not in ("Z", "gone") for k in kids):
        time.sleep(0.1)
    ended = [state(k) for k in kids]
    os.kill(p.pid, signal.SIGCONT)
    out, err = p.communicate(timeout=30)
    checks.ok(all(x in ("Z", "gone") for x in ended),
              "SIGSTOP: the workers ended while the tool was stopped", ended)
    checks.ok(p.returncode == 1 and "stopped renewing its lease" in out,
              "SIGSTOP: resumed, the tool reports them and fails", (p.returncode, out, err))
    checks.ok(orphans() == [], "SIGSTOP: every worker reaped")

    # SIGKILL of the tool: its workers die with it (they become this test's
    # children here, which is how the test sees them end).
    p = start("--vm", 2, "--bytes", "4M", "--spin", 1, "--duration", 60)
    kids = wait_children(p.pid, 3)
    checks.ok(len(kids) == 3, "SIGKILL: three workers running", kids)
    p.kill()
    p.communicate(timeout=30)
    ends = reap_ends(kids)
    checks.ok(sorted(ends) == sorted(kids), "SIGKILL: every worker ended with the tool",
              (kids, ends, [k for k in kids if alive(k)]))
    # A worker killed before it armed PR_SET_PDEATHSIG finds its parent gone
    # and exits 4 at its start (pressure.c's worker_main): gone too.
    checks.ok(all((os.WIFSIGNALED(s) and os.WTERMSIG(s) == signal.SIGKILL) or
                  (os.WIFEXITED(s) and os.WEXITSTATUS(s) == 4) for s in ends.values()),
              "SIGKILL: each died of SIGKILL (PR_SET_PDEATHSIG) or its orphan check", ends)

    # A worker that cannot allocate: the run fails (exit 1) and says why; it
    # completes, so its result file says so ("passed": false). The kernel
    # refuses a private mapping of 1T beyond RAM and swap, unless it
    # overcommits always (overcommit_memory 1); a limit on the address
    # space (RLIMIT_AS) would do it too, but the sanitizers' shadow memory
    # needs more than any limit that would.
    with open("/proc/sys/vm/overcommit_memory") as f:
        always = f.read().strip() == "1"
    path = os.path.join(tmp, "f.json")
    with open(path, "w") as f:
        f.write('{"a previous": "good result"}\n')
    if always:
        print("  (no failing-allocation test: overcommit_memory 1 grants any mapping)")
    else:
        # (3G on 32-bit: within its address space, but more than it maps)
        huge = "1T" if BITS == 64 else "3G"
        r = run(rtmem, "pressure", "--vm", 1, "--bytes", huge, "--stride", huge, "--alloc", "mmap",
                "--force", "--duration", 5, "--json", path, timeout=60)
        checks.ok(r.returncode == 1, "a worker that cannot allocate fails the run", r)
        checks.ok("WORKER ENDED EARLY" in r.stdout and "Cannot allocate memory" in r.stdout,
                  "the report names the worker and the cause", r)
        d = load_json(path)
        checks.ok(d is not None and d.get("passed") is False and
                  d["totals"]["ended_early_count"] == 1,
                  "the result file says the run failed", d)
    checks.ok(orphans() == [], "no worker outlived the failed run")

    # Memory above half of MemAvailable: refused, unless --force (the
    # forced run maps that much but writes one page of it per round).
    with open("/proc/meminfo") as f:
        avail = next(int(l.split()[1]) * 1024 for l in f if l.startswith("MemAvailable:"))
    vm, big = over_share(avail)
    r = run(rtmem, "pressure", "--vm", vm, "--bytes", big, "--duration", 1, timeout=60)
    checks.ok(r.returncode == 2 and "MemAvailable" in r.stderr and "--force" in r.stderr,
              "--vm %d --bytes %s (60%% of MemAvailable) refused, naming --force" % (vm, big), r)
    checks.ok(r.stdout == "", "nothing ran", r)
    with open("/proc/sys/vm/overcommit_memory") as f:
        strict = f.read().strip() == "2"
    if strict:
        print("  (--force not run: overcommit_memory 2 would refuse the mapping)")
    else:
        r = run(rtmem, "pressure", "--vm", vm, "--bytes", big, "--stride", big, "--alloc", "mmap",
                "--force", "--duration", 1, timeout=60)
        checks.ok(r.returncode == 0, "the same with --force runs", r)
        checks.ok(orphans() == [], "no worker outlived the forced run")

    # Bad usage: exit 2, a message, nothing run.
    for bad, why in [(["--vm", 0], "no workers"),
                     (["--bytes", "4K", "--stride", "8K"], "larger than the bytes"),
                     (["--cpus", "4096"], "not a range of CPUs"),
                     (["--cpus", "0-"], "not a CPU list"),
                     (["--hdd", 1, "--dir", os.path.join(tmp, "none")], "directory"),
                     (["--alloc", "brk"], "--alloc"),
                     (["--duration", "0"], "--duration")]:
        r = run(rtmem, "pressure", *bad, timeout=30)
        checks.ok(r.returncode == 2 and why in r.stderr and "Try 'rtmem pressure --help'" in
                  r.stderr and r.stdout == "", "bad usage %s: exit 2, '%s'" % (bad, why), r)

checks.done()
