"""rtmem latency under a load: --pressure runs the workers beside the
measuring thread (on the other CPUs by default), records what they did and
reaps every one, on a normal end, on SIGINT, and (they die with it) when
the tool is killed; a load above half of MemAvailable is refused unless
--force; --sweep writes one JSON with an idle baseline and a run per mode x
stride x size, in that order, skipping (with the reason) a stride larger
than the size and a size above the memory share; bad combinations exit 2.

To see every worker that outlives its parent, this test makes itself a
child subreaper (conftest.py's subreaper). No assertion depends on how
fast the machine is.
"""
import os
import signal
import subprocess
import time

import pytest

from rtmemtest import (alive, assert_envelope, explain, load_json, mem_available, orphans,
                       over_share, reap_ends, run, started, wait_children)

pytestmark = pytest.mark.usefixtures("subreaper")

SUMMARY = ["samples", "overruns", "min_ns", "avg_ns", "p50_ns", "p99_ns", "p999_ns", "p9999_ns",
           "max_ns"]
AVAIL = mem_available()
ALLOWED = sorted(os.sched_getaffinity(0))


def assert_summary(what, s, deadlines, stopped=False):
    assert list(s.keys()) == SUMMARY, "%s: the summary's fields: %s" % (what, s)
    order = [s["min_ns"], s["p50_ns"], s["p99_ns"], s["p999_ns"], s["p9999_ns"], s["max_ns"]]
    assert order == sorted(order), "%s: not min <= p50 <= ... <= max: %s" % (what, s)
    if not stopped:
        assert s["samples"] + s["overruns"] == deadlines, \
            "%s: samples + overruns != deadlines %d: %s" % (what, deadlines, s)


def latency(rtmem, *args):
    return started(rtmem, "latency", *args)


def ended(p, timeout=60):
    out, err = p.communicate(timeout=timeout)
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


# One run under a load: the summary, the load as asked, its counters, the
# workers off the measured CPU, all of them reaped.

@pytest.fixture(scope="module")
def loaded(rtmem, module_dir, subreaper):
    """A second's run beside two vm workers: (its result, its document,
    its arguments, the orphans it left)."""
    path = os.path.join(module_dir, "p.json")
    args = ["--duration", 1, "--pressure", "vm=2,bytes=4M,stride=4096", "--json", path]
    r = run(rtmem, "latency", *args, timeout=120)
    left = orphans()
    assert r.returncode == 0, explain(r)
    return r, load_json(path), args, left


def test_a_run_under_a_load_writes_the_envelope_and_the_summary(loaded):
    _, d, args, _ = loaded
    assert_envelope(d, "latency", "rtmem-latency/1", args)
    assert_summary("--pressure", d["summary"], d["deadlines"])


def test_the_report_describes_the_load_and_what_it_did(loaded):
    r, _, _, _ = loaded
    assert "pressure   : " in r.stdout and "every worker reaped" in r.stdout, explain(r)


def test_the_load_is_as_asked_and_every_worker_worked(loaded):
    _, d, _, _ = loaded
    load, tot = d["pressure"]["load"], d["pressure"]["totals"]
    assert (load["vm"], load["bytes"], load["stride"], load["mode"], load["spin"]) == \
        (2, 4 << 20, 4096, "plain", 0), load
    assert tot["vm_rounds"] > 0 and tot["ended_early_count"] == 0, \
        "the workers did not work, or one ended early: %s" % tot


def test_the_workers_run_on_every_cpu_but_the_one_measured(loaded):
    _, d, _, _ = loaded
    if not (d["real_time"]["affinity"]["granted"] and len(ALLOWED) > 1):
        pytest.skip("the run was not pinned, or this test has one CPU")
    load, cpu = d["pressure"]["load"], d["real_time"]["cpu_now"]
    assert load["cpus"] is not None and cpu not in load["cpus"] and \
        sorted(load["cpus"] + [cpu]) == ALLOWED, (cpu, load["cpus"])


def test_no_worker_outlived_the_run(loaded):
    _, _, _, left = loaded
    assert left == [], "outlived the run: %s" % left


# Where the workers really run (their Cpus_allowed_list): by default every
# CPU but the one measured, or --pressure-cpus.

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


@pytest.mark.parametrize("extra,want", [
    ([], set(ALLOWED[:-1]) if len(ALLOWED) > 1 else None),
    (["--pressure-cpus", str(ALLOWED[0])], {ALLOWED[0]})], ids=["default", "--pressure-cpus"])
def test_a_worker_runs_on_the_cpus_it_is_given_and_is_reaped(rtmem, extra, want):
    with latency(rtmem, "--duration", 60, "--pressure", "vm=1,bytes=1M", *extra) as p:
        time.sleep(0.5)
        cpus = worker_cpus(p.pid)
        p.send_signal(signal.SIGTERM)
        r = ended(p)
    if want is not None:
        assert [cpu_set(c) for c in cpus.values()] == [want], \
            "the worker does not run on cpus %s: %s" % (sorted(want), cpus)
    assert r.returncode == 0, explain(r)
    assert orphans() == [], "a worker was not reaped"


def test_a_worker_killed_during_the_run_fails_it_named_and_on_record(rtmem, tmp_dir):
    # (the OOM killer, here kill -9). The run lasts long enough for the kill
    # to land inside it on a loaded machine under qemu-user too (at 3 s, a
    # slow start there once let it end first, every worker reaped).
    path = os.path.join(tmp_dir, "p.json")
    with latency(rtmem, "--duration", 8, "--pressure", "vm=2,bytes=4M", "--json", path) as p:
        kids = wait_children(p.pid, 2)
        assert kids, "no worker started"
        time.sleep(1)
        os.kill(kids[0], signal.SIGKILL)
        r = ended(p)
    assert r.returncode == 1 and "WORKER ENDED EARLY" in r.stdout and "SIGKILL" in r.stdout, \
        explain(r)
    d = load_json(path)
    assert d is not None and d["passed"] is False and \
        d["pressure"]["totals"]["ended_early_count"] == 1, \
        "the result file does not say the load did not run as asked: %s" % (d and d["pressure"])
    assert orphans() == [], "the other worker was not reaped"


def test_sigint_without_json_ends_a_complete_run_every_worker_reaped(rtmem):
    with latency(rtmem, "--duration", 60, "--pressure", "vm=1,bytes=1M") as p:
        wait_children(p.pid, 1)
        time.sleep(1)
        p.send_signal(signal.SIGINT)
        r = ended(p)
    assert r.returncode == 0 and "stopped by SIGINT" in r.stdout, explain(r)
    assert orphans() == [], "a worker was not reaped"


def test_sigint_ends_a_complete_run_and_reaps_every_worker(rtmem, tmp_dir):
    path = os.path.join(tmp_dir, "p.json")
    with latency(rtmem, "--duration", 60, "--pressure", "vm=1,bytes=4M,spin=1",
                 "--json", path) as p:
        kids = wait_children(p.pid, 2)
        assert len(kids) == 2, "not two workers beside the run: %s" % kids
        time.sleep(1.5)
        p.send_signal(signal.SIGINT)
        r = ended(p)
    d = load_json(path)
    assert r.returncode == 0 and d and d["stopped_by"] == "SIGINT" and \
        d["pressure"]["totals"]["vm_rounds"] > 0, explain(r)
    assert not any(alive(k) for k in kids) and orphans() == [], \
        "a worker was not reaped: %s" % kids


def test_sigkill_of_the_tool_ends_every_worker_with_it(rtmem):
    with latency(rtmem, "--duration", 60, "--pressure", "vm=1,bytes=4M,spin=1") as p:
        kids = wait_children(p.pid, 2)
        assert len(kids) == 2, "not two workers beside the run: %s" % kids
        p.kill()
        p.communicate(timeout=60)
    ends = reap_ends(kids)
    assert sorted(ends) == sorted(kids), "workers that did not end with the tool: %s of %s" \
        % (sorted(set(kids) - set(ends)), kids)


def test_a_load_above_the_memory_share_is_refused_naming_force(rtmem):
    vm, big = over_share(AVAIL)
    r = run(rtmem, "latency", "--duration", 1, "--pressure", "vm=%d,bytes=%s" % (vm, big),
            timeout=60)
    assert r.returncode == 2 and "MemAvailable" in r.stderr and "--force" in r.stderr and \
        r.stdout == "", "--pressure vm=%d,bytes=%s: %s" % (vm, big, explain(r))


# A tiny sweep: its shape.
HUGE = "%dM" % ((AVAIL * 6 // 10) >> 20)
SIZES = sorted([1 << 20, 2 << 20, int(HUGE[:-1]) << 20])


@pytest.fixture(scope="module")
def sweep(rtmem, module_dir, subreaper):
    """A sweep of 2 modes x 2 strides x 3 sizes, the last above the memory
    share: (its result, its document, its arguments, the orphans it left)."""
    path = os.path.join(module_dir, "s.json")
    args = ["--sweep", "--sizes", "1M,2M," + HUGE, "--strides", "4096,4M", "--modes",
            "plain,keep", "--duration", "300ms", "--pressure", "vm=1", "--json", path]
    r = run(rtmem, "latency", *args, timeout=300)
    left = orphans()
    assert r.returncode == 0, explain(r)
    return r, load_json(path), args, left


def test_the_sweep_writes_one_document_without_a_top_level_summary(sweep):
    r, d, args, _ = sweep
    assert_envelope(d, "latency", "rtmem-latency/1", args)
    assert d["mode"] == "sweep" and d["summary"] is None and d["pressure"] is None, \
        (d["mode"], d["summary"], d["pressure"])
    assert "the worst of each curve" in r.stdout, explain(r)


def test_the_sweep_records_its_parameters_and_runs(sweep):
    s = sweep[1]["sweep"]
    assert s["sizes"] == SIZES and s["strides"] == [4096, 4 << 20] and \
        s["modes"] == ["plain", "keep"] and s["run_ns"] == 300000000, s
    assert s["runs_planned"] == 13 and s["runs_done"] == 13 and len(s["runs"]) == 12, \
        "not a baseline and 2 modes x 2 strides x 3 sizes: %s planned, %s done, %d runs" \
        % (s["runs_planned"], s["runs_done"], len(s["runs"]))


def test_the_sweep_starts_with_an_idle_baseline(sweep):
    b = sweep[1]["sweep"]["baseline"]
    assert b["mode"] == "idle" and b["load"] is None and b["skipped"] is None, b
    assert_summary("baseline", b["summary"], b["deadlines"])


def test_the_sweep_runs_in_mode_stride_size_order(sweep):
    order = [(x["mode"], x["stride"], x["bytes"]) for x in sweep[1]["sweep"]["runs"]]
    want = [(m, st, sz) for m in ("plain", "keep") for st in (4096, 4 << 20) for sz in SIZES]
    assert order == want


def test_each_sweep_run_ran_or_was_skipped_with_the_reason(sweep):
    for x in sweep[1]["sweep"]["runs"]:
        what = "%s %s %s" % (x["mode"], x["stride"], x["bytes"])
        if x["stride"] > x["bytes"]:
            assert x["skipped"] and "stride" in x["skipped"] and x["summary"] is None, \
                "%s: not skipped for the stride larger than the size: %s" % (what, x)
        elif x["bytes"] == SIZES[-1]:
            assert x["skipped"] and "memory available" in x["skipped"] and \
                x["summary"] is None, "%s: not skipped above the memory share: %s" % (what, x)
        else:
            assert x["skipped"] is None and x["load"]["vm_rounds"] > 0 and \
                x["load"]["ended_early_count"] == 0, "%s: did not run its load: %s" % (what, x)
            assert_summary(what, x["summary"], x["deadlines"])


def test_no_worker_outlived_the_sweep(sweep):
    assert sweep[3] == [], "outlived the sweep: %s" % sweep[3]


def test_a_sched_fifo_neighbour_on_the_measured_cpu_is_named(rtmem, tmp_dir):
    # (one of the same priority delays the thread unseen) Root only: chrt.
    cpu = max(ALLOWED)
    path = os.path.join(tmp_dir, "p.json")
    try:
        other = started("chrt", "-f", "10", "taskset", "-c", cpu, "sleep", "30",
                        stdout=None, stderr=subprocess.DEVNULL, preexec_fn=None)
    except OSError:
        pytest.skip("no real-time neighbour: no chrt")
    with other as o:
        time.sleep(0.3)
        if o.poll() is not None:
            pytest.skip("no real-time neighbour: chrt -f refused here")
        r = run(rtmem, "latency", "--duration", "200ms", "--cpu", cpu, "--json", path, timeout=60)
    d = load_json(path)
    words = " ".join(r.stdout.split())
    assert r.returncode == 0 and d is not None, explain(r)
    assert (d["rt_neighbours"] or 0) >= 1 and "other real-time task" in words, explain(r)
    # Only the first one is named: another test's task may come first.
    assert (d["rt_neighbours"] or 0) > 1 or "(sleep) SCHED_FIFO 10" in words, explain(r)


BAD = [(["--sizes", "4M"], "need --sweep"),
       (["--noise", "--pressure", "vm=1"], "--noise runs on its own"),
       (["--pressure", "vm=1,bogus=2"], "unknown item 'bogus'"),
       (["--pressure", "vm=1,bytes"], "needs a value"),
       (["--pressure-cpus", "0"], "needs --pressure"),
       (["--force"], "needs --pressure"),
       (["--sweep", "--pressure", "spin=1"], "needs vm=N"),
       (["--sweep", "--pressure", "vm=1,hdd=1,dir=/nonexistent/rtmem"],
        "the disk writers' directory"),
       (["--sweep", "--modes", "plain,fast"], "not plain, keep or hang"),
       (["--pressure", "vm=1,bytes=4K,stride=8K"], "larger than the bytes")]


@pytest.mark.parametrize("args,why", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_a_bad_combination_exits_2_saying_why(rtmem, args, why):
    r = run(rtmem, "latency", *args, timeout=30)
    assert r.returncode == 2 and why in r.stderr and r.stdout == "", explain(r)
