"""rtmem bench's threads phase (CTest lock.bench): --threads-only runs it
alone, with the lock cost uncontended for each lock type asked and a row
per thread and lock type, in the text and the JSON; --threads 0 and
--sweep-only leave it out; bad usage of its options exits 2 with the
message and the --help hint. The shared type's heaps (POSIX shm) leave no
object in /dev/shm: after a run, a run whose shared heap cannot be made
(the row skipped with the reason), and a run interrupted or killed while
a shared heap is mapped.
"""
import math
import os
import re
import signal
import statistics
import subprocess
import time

import pytest

from rtmemtest import assert_envelope, bench_status, explain, load_json, run

LOCKS = ["none", "pi", "robust", "shared"]
SHM = "/dev/shm"


def finite(v):
    return isinstance(v, (int, float)) and math.isfinite(v)


def stale_objects():
    """rtmem bench's shm objects (rtmem-bench-<pid>...) whose process is
    gone. Other tests run in parallel: a live run's object is theirs."""
    found = []
    for name in os.listdir(SHM):
        m = re.match(r"rtmem-bench-(\d+)", name)
        if m and not os.path.exists("/proc/" + m.group(1)):
            found.append(name)
    return found


def objects_of(pid):
    return [n for n in os.listdir(SHM) if re.match(r"rtmem-bench-%d(\D|$)" % pid, n)]


def bench_json(rtmem, directory, *args, env=None):
    """`rtmem bench ARGS --json PATH`: (its result, its document or None)."""
    path = os.path.join(directory, "t.json")
    r = run(rtmem, "bench", *args, "--json", path, env=env)
    return r, load_json(path)


@pytest.fixture(scope="module")
def threads_only(rtmem, module_dir):
    """`bench --threads-only` on 3 threads, every lock type: (its result, its
    document, its arguments, the stale shm objects after it)."""
    path = os.path.join(module_dir, "t.json")
    args = ["--threads-only", "--quick", "--no-rt", "--threads", "3", "--json", path]
    r = run(rtmem, "bench", *args)
    stale = stale_objects()
    d = load_json(path)
    assert d is not None, "bench --threads-only wrote no JSON"
    assert r.returncode == bench_status(d), explain(r)
    return r, d, args, stale


@pytest.fixture(scope="module")
def uncontended(threads_only):
    return {x["lock"]: x for x in threads_only[1]["threads"]["uncontended"]["locks"]}


@pytest.fixture(scope="module")
def contended(threads_only):
    return {x["lock"]: x for x in threads_only[1]["threads"]["contended"]}


def test_threads_only_writes_the_envelope(threads_only):
    _, d, args, _ = threads_only
    assert_envelope(d, "bench", "rtmem-bench/2", args)


def test_threads_only_runs_no_other_phase(threads_only):
    d = threads_only[1]
    assert d["free_order"] is None and d["sweep"] is None, d["params"]
    assert [a["name"] for a in d["allocators"]] == ["floor"]
    assert d["params"]["main_phase"] is False


def test_threads_only_puts_the_phases_setup_on_record(threads_only):
    t = threads_only[1]["threads"]
    assert t["kind"] == "tlsf" and t["threads"] == 3 and len(t["cpus"]) == 3, t
    assert t["error"] is None and t["ops_per_thread"] == 2000, t


def test_uncontended_has_every_lock_type_shared_included(threads_only):
    locks = threads_only[1]["threads"]["uncontended"]["locks"]
    assert [x["lock"] for x in locks] == LOCKS


FIGURES = ("bare_lock_unlock_ns", "call_unlocked_ns", "call_locked_ns", "added_per_call_ns",
           "added_over_bare", "call_locked_over_unlocked", "call_locked_over_unlocked_round_min",
           "call_locked_over_unlocked_round_max")


@pytest.mark.parametrize("lock", ["pi", "robust", "shared"])
def test_uncontended_lock_has_its_measured_figures(threads_only, uncontended, lock):
    x = uncontended.get(lock, {})
    assert all(finite(x.get(k)) for k in FIGURES), x
    assert x["bare_lock_unlock_ns"] > 0 and x["call_locked_ns"] > 0, x
    assert x["call_locked_over_unlocked"] > 0 and x["skipped"] is None, x
    assert (x["call_locked_over_unlocked_round_min"] <= x["call_locked_over_unlocked"]
            <= x["call_locked_over_unlocked_round_max"]), x
    assert len(x["rounds_call_locked_ns"]) == threads_only[1]["params"]["rounds"], x
    assert all(finite(v) and v > 0
               for v in x["rounds_call_locked_ns"] + x["rounds_call_unlocked_ns"]), x
    # A target only for shared.
    assert (x.get("target") is None) == (lock != "shared"), x.get("target")


def test_uncontended_shared_ratio_is_the_median_over_the_rounds(uncontended):
    sh = uncontended.get("shared", {})
    ratio = sh.get("call_locked_over_unlocked")
    assert finite(ratio), sh
    per_round = sorted(lo / un for lo, un in zip(sh["rounds_call_locked_ns"],
                                                  sh["rounds_call_unlocked_ns"]))
    assert abs(ratio / statistics.median(per_round) - 1) < 1e-6, (ratio, per_round)
    assert abs(sh["call_locked_over_unlocked_round_min"] / per_round[0] - 1) < 1e-6, sh
    assert abs(sh["call_locked_over_unlocked_round_max"] / per_round[-1] - 1) < 1e-6, sh


def test_uncontended_shared_target_is_judged_on_the_median_in_text_and_json(threads_only,
                                                                           uncontended):
    r = threads_only[0]
    sh = uncontended.get("shared", {})
    assert finite(sh.get("call_locked_over_unlocked")), sh
    met = sh["call_locked_over_unlocked"] <= 3.0
    assert sh["target"] == {"call_locked_over_unlocked_max": 3.0, "met": met}
    verdict = "met" if met else "not met"
    line = re.search(r"^  shared .*?\s(not met|met)$", r.stdout, re.M)
    assert line and line.group(1) == verdict, r.stdout
    assert ("target <= 3.00x: %s\n" % verdict) in r.stdout, r.stdout


# A target not met fails the run: the text, the JSON's passed and the exit
# status say so (RTMEM_BENCH_TEST_TARGET: the target a test judges against).
@pytest.mark.parametrize("target,met", [("0.01", False), ("100000", True)],
                         ids=["unmet", "met"])
def test_the_shared_target_not_met_fails_the_run_and_met_passes_it(rtmem, tmp_dir, target, met):
    r, d = bench_json(rtmem, tmp_dir, "--threads-only", "--quick", "--no-rt", "--locks",
                      "none,shared", "--threads", "1",
                      env={"RTMEM_BENCH_TEST_TARGET": target})
    assert d, explain(r)
    sh = {x["lock"]: x for x in d["threads"]["uncontended"]["locks"]}["shared"]
    assert sh["target"] == {"call_locked_over_unlocked_max": float(target), "met": met}, sh
    assert d["params"]["test_shared_target"] == float(target), d["params"]
    assert d["passed"] is met and r.returncode == (0 if met else 1), explain(r)
    assert ("TARGET NOT MET" in r.stdout) is not met, r.stdout


def test_uncontended_none_is_the_unlocked_call_with_nothing_added(uncontended):
    x = uncontended.get("none", {})
    assert finite(x.get("call_unlocked_ns")), x
    assert x.get("added_per_call_ns") is None and x.get("call_locked_over_unlocked") is None, x


def test_contended_has_every_lock_type_shared_included(threads_only):
    assert [x["lock"] for x in threads_only[1]["threads"]["contended"]] == LOCKS


@pytest.mark.parametrize("lock", LOCKS)
def test_contended_lock_times_every_operation_of_every_thread(threads_only, contended, lock):
    ops = threads_only[1]["threads"]["ops_per_thread"]
    x = contended[lock]
    rows = x["threads"]
    assert x["skipped"] is None, x
    assert all(row["alloc"]["count"] + row["free"]["count"] + row["skipped_frees"] == ops and
               row["failed_allocs"] == 0 for row in rows), rows
    # A row per thread, every heap sound.
    assert len(rows) == 3 and x["heap_check_failures"] == 0, x
    assert all(row["free_errors"] == 0 and row["alloc"]["count"] > 0 and
               finite(row["alloc"]["p99_9_ns"]) and finite(row["free"]["max_ns"])
               for row in rows), rows
    assert x["heap"] == ("one per thread" if lock == "none" else "shared")
    if lock != "none":
        assert x["lock_calls"] >= sum(row["alloc"]["count"] + row["free"]["count"]
                                      for row in rows), x
        assert x["lock_contended"] <= x["lock_calls"], x


TEXT = ["lock cost, uncontended", "added/bare", "locked/unlocked", "target <=3.00x",
        "3 threads on one tlsf heap", "alloc p50", "lock shared: "]


@pytest.mark.parametrize("text", TEXT)
def test_threads_only_prints_its_tables(threads_only, text):
    assert text in threads_only[0].stdout, threads_only[0].stdout


def test_threads_only_leaves_no_shm_object(threads_only):
    assert not threads_only[3], "left in %s: %s" % (SHM, threads_only[3])


@pytest.fixture(scope="module")
def shared_alone(rtmem, module_dir):
    """`bench --threads-only --locks shared` on 2 threads: (its document,
    the stale shm objects after it)."""
    r, d = bench_json(rtmem, module_dir, "--threads-only", "--quick", "--no-rt", "--locks",
                      "shared", "--threads", "2")
    stale = stale_objects()
    assert d and r.returncode == bench_status(d), explain(r)
    return d, stale


def test_locks_shared_runs_that_lock_type_only(shared_alone):
    t = shared_alone[0]["threads"]
    assert [x["lock"] for x in t["uncontended"]["locks"]] == ["shared"], t
    assert [x["lock"] for x in t["contended"]] == ["shared"], t


def test_locks_shared_has_its_figures_and_verdict(shared_alone):
    x = shared_alone[0]["threads"]["uncontended"]["locks"][0]
    assert x["skipped"] is None and finite(x["call_locked_over_unlocked"]), x
    assert x["call_locked_over_unlocked"] > 0 and x["call_unlocked_ns"] > 0, x
    assert len(x["rounds_call_unlocked_ns"]) == shared_alone[0]["params"]["rounds"], x
    assert isinstance(x["target"]["met"], bool), x


def test_locks_shared_runs_both_threads_on_the_shared_heap_every_call_locked(shared_alone):
    t = shared_alone[0]["threads"]
    co = t["contended"][0]
    rows = co["threads"]
    assert co["skipped"] is None and co["heap"] == "shared" and len(rows) == 2, co
    assert co["heap_check_failures"] == 0, co
    assert all(row["alloc"]["count"] + row["free"]["count"] + row["skipped_frees"] ==
               t["ops_per_thread"] and row["free_errors"] == 0 for row in rows), rows
    assert co["lock_calls"] >= sum(row["alloc"]["count"] + row["free"]["count"]
                                   for row in rows), co


def test_locks_shared_leaves_no_shm_object(shared_alone):
    assert not shared_alone[1], "left in %s: %s" % (SHM, shared_alone[1])


def test_locks_robust_threads_kind_xnheap_runs_that_type_on_xnheap(rtmem, tmp_dir):
    r, d = bench_json(rtmem, tmp_dir, "--threads-only", "--quick", "--no-rt", "--locks",
                      "robust", "--threads-kind", "xnheap", "--threads", "1")
    assert r.returncode == 0 and d, explain(r)
    t = d["threads"]
    assert t["kind"] == "xnheap", t
    assert [x["lock"] for x in t["uncontended"]["locks"]] == ["robust"], t
    assert [x["lock"] for x in t["contended"]] == ["robust"], t


@pytest.mark.parametrize("extra", [["--threads", "0"], ["--sweep-only"]], ids=" ".join)
def test_threads_0_and_sweep_only_leave_the_threads_phase_out(rtmem, tmp_dir, extra):
    r, d = bench_json(rtmem, tmp_dir, "--quick", "--no-rt", "--kinds", "tlsf",
                      "--no-free-order", *extra)
    assert r.returncode == 0 and d, explain(r)
    assert d["threads"] is None
    assert "threads phase" not in r.stdout, r.stdout


# ---- no shm object left behind, whatever ends the run ----------------------------------

def measuring_process(parent, deadline):
    """The child of parent that measures (it leads its own process group)."""
    while time.time() < deadline:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open("/proc/%s/stat" % pid) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == parent:
                        return int(pid)
            except (OSError, ValueError, IndexError):
                continue
        time.sleep(0.01)
    return None


def maps_shared_heap(pid, parent):
    """Does pid map parent's run's shared heap, its name already unlinked?"""
    try:
        with open("/proc/%d/maps" % pid) as f:
            return ("%s/rtmem-bench-%d (deleted)" % (SHM, parent)) in f.read()
    except OSError:
        return False


def dead(pid):
    """Gone, or a zombie (its mappings are released)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def wait_dead(pid, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline and not dead(pid):
        time.sleep(0.01)
    return dead(pid)


# A threads phase that lasts a few seconds, most of it on a shared heap.
LONG = ["bench", "--threads-only", "--no-rt", "--locks", "none,shared", "--rounds", "99",
        "--thread-ops", "200000"]


def start_long(rtmem):
    """The long run, once its measuring process maps a shared heap whose
    name is already unlinked: (process, measuring pid); the test fails
    (the run killed) if it never does."""
    p = subprocess.Popen([rtmem, *LONG], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    child = measuring_process(p.pid, deadline)
    while child and time.time() < deadline and not maps_shared_heap(child, p.pid):
        time.sleep(0.005)
    if child and maps_shared_heap(child, p.pid):
        return p, child
    p.kill()
    _, err = p.communicate()
    pytest.fail("no shared heap mapped with its name unlinked (%s): %s" % (" ".join(LONG), err))


def test_sigint_mid_phase_kills_the_measuring_process_and_leaves_no_object(rtmem):
    p, child = start_long(rtmem)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == -signal.SIGINT, (p.returncode, err)
    assert dead(child), "the measuring process %d lives on" % child
    assert not objects_of(p.pid), objects_of(p.pid)


def test_the_measuring_process_killed_mid_phase_fails_the_run_leaving_no_object(rtmem):
    # As the watchdog does.
    p, child = start_long(rtmem)
    os.kill(child, signal.SIGKILL)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 1 and "the measuring process died of SIGKILL" in err, \
        (p.returncode, err)
    assert not objects_of(p.pid), objects_of(p.pid)


def test_both_processes_killed_leave_no_object(rtmem):
    # Nothing left to clean up: the unlinked name is gone.
    p, child = start_long(rtmem)
    os.kill(p.pid, signal.SIGKILL)
    os.kill(child, signal.SIGKILL)
    p.communicate(timeout=60)
    assert wait_dead(child), "the measuring process %d lives on" % child
    assert not objects_of(p.pid), objects_of(p.pid)


def hold_name(p):
    """Makes the object a measuring process of run p would have left had it
    died between making its shared heap and unlinking it; if the name is
    not free, kills the run and fails the test. Its path (drop_name removes
    it where the run did not)."""
    path = "%s/rtmem-bench-%d" % (SHM, p.pid)
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except OSError as e:
        p.kill()
        p.communicate()
        pytest.fail("the name of run %d is not free: %s" % (p.pid, e))
    return path


def drop_name(path):
    """Removes the object hold_name made, if the run (failing, say) left
    it: a test leaves nothing behind."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


@pytest.fixture(scope="module")
def name_taken(rtmem, module_dir):
    """A quick run whose shared heap's name is taken: (its exit status, its
    stdout, its stderr, its document, its objects left)."""
    path = os.path.join(module_dir, "x.json")
    p = subprocess.Popen([rtmem, "bench", "--threads-only", "--quick", "--no-rt", "--locks",
                          "none,shared", "--json", path], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    held = hold_name(p)
    try:
        out, err = p.communicate(timeout=300)
        d = load_json(path)
        left = objects_of(p.pid)
    finally:
        drop_name(held)
    assert p.returncode == 0 and d, (p.returncode, err)
    return out, d["threads"], left


def test_name_taken_skips_uncontended_shared_with_the_reason(name_taken):
    x = {x["lock"]: x for x in name_taken[1]["uncontended"]["locks"]}.get("shared", {})
    assert "File exists" in (x.get("skipped") or ""), x
    assert x["call_locked_ns"] is None and x["call_locked_over_unlocked"] is None, x
    assert x["target"]["met"] is None, x


def test_name_taken_skips_contended_shared_with_the_reason(name_taken):
    y = {x["lock"]: x for x in name_taken[1]["contended"]}.get("shared", {})
    assert "File exists" in (y.get("skipped") or "") and y["threads"] == [], y


def test_name_taken_measures_the_other_lock_types(name_taken):
    t = name_taken[1]
    un = {x["lock"]: x for x in t["uncontended"]["locks"]}
    co = {x["lock"]: x for x in t["contended"]}
    assert un["none"]["skipped"] is None and finite(un["none"]["call_unlocked_ns"]), un["none"]
    assert len(co["none"]["threads"]) == t["threads"], co["none"]


def test_name_taken_the_text_says_the_shared_rows_were_skipped_and_why(name_taken):
    out = name_taken[0]
    assert out.count("shared: skipped: rtm_shared_create_ex") == 2, out
    assert re.search(r"^  shared .* skipped$", out, re.M), out


def test_name_taken_the_parent_removes_it(name_taken):
    assert not name_taken[2], name_taken[2]


def test_name_taken_sigint_mid_phase_the_signals_cleanup_removes_it(rtmem):
    p = subprocess.Popen([rtmem, *LONG], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    name = hold_name(p)
    try:
        line = ""
        while not line.startswith("threads     :") and p.poll() is None:
            line = p.stdout.readline()
        time.sleep(0.2)
        held = p.poll() is None and objects_of(p.pid)
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=60)
        left = objects_of(p.pid)
    finally:
        drop_name(name)
    assert held, "mid-phase, the name is no longer held (exit status %s)" % p.returncode
    assert p.returncode == -signal.SIGINT, p.returncode
    assert not left, left


def test_no_rtmem_bench_object_is_left_after_every_run():
    assert not stale_objects(), "left in %s: %s" % (SHM, stale_objects())


USAGE = [
    (["--threads", "65"], "--threads: '65' is out of range [0, 64]"),
    (["--locks", "pi,,none"], "--locks: empty name in 'pi,,none'"),
    (["--locks", "spin"], "--locks: unknown lock type 'spin' (none, pi, robust, shared)"),
    (["--threads-kind", "glibc"], "--threads-kind: no heap kind 'glibc'"),
    (["--threads-only", "--sweep-only"], "--threads-only and --sweep-only exclude each other"),
    (["--threads-only", "--threads", "0"], "--threads-only needs threads (--threads is 0)"),
    (["--thread-ops", "0"], "--thread-ops: '0' is out of range [1, "),
]


@pytest.mark.parametrize("args,message", USAGE, ids=[" ".join(a) for a, _ in USAGE])
def test_bad_usage_exits_2_with_the_message_and_the_help_hint(rtmem, args, message):
    r = run(rtmem, "bench", *args)
    assert r.returncode == 2, explain(r)
    assert message in r.stderr and "Try 'rtmem bench --help'." in r.stderr, explain(r)
    assert r.stdout == ""
