"""rtmem pressure: a short run's JSON has the envelope, the load as asked
and counters that add up; no worker outlives the run, whether it ends on
its own, on SIGINT or SIGTERM, or with the tool killed by SIGKILL (the
workers die with it); the disk writers' files are never seen and never
left behind; a worker that cannot allocate fails the run (exit 1) with the
cause; memory above half of MemAvailable is refused unless --force; bad
usage exits 2.

To see every worker that outlives its parent, this test makes itself a
child subreaper (PR_SET_CHILD_SUBREAPER, conftest.py's subreaper): an
orphaned worker becomes its child, and waitpid finds it.
"""
import os
import signal
import subprocess
import time

import pytest

from rtmemtest import (BITS, alive, assert_envelope, explain, load_json, mem_available, orphans,
                       over_share, previous_result, reap_ends, run, started, wait_children)

pytestmark = pytest.mark.usefixtures("subreaper")

WORKERS = ["rtmem-hdd", "rtmem-spin", "rtmem-vm"]


def pressure(rtmem, *args):
    return started(rtmem, "pressure", *args)


def ended(p, timeout=30):
    out, err = p.communicate(timeout=timeout)
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def overcommit():
    with open("/proc/sys/vm/overcommit_memory") as f:
        return f.read().strip()


@pytest.fixture
def wdir(tmp_dir):
    """The disk writers' directory."""
    path = os.path.join(tmp_dir, "w")
    os.mkdir(path)
    return path


# A short run of every kind of worker: the envelope, the load as given,
# counters that add up, nothing left in the disk writers' directory.

@pytest.fixture(scope="module")
def short(rtmem, module_dir, subreaper):
    """(its result, its document, its arguments, what was left in --dir,
    the orphans it left)."""
    path = os.path.join(module_dir, "p.json")
    wdir = os.path.join(module_dir, "w")
    os.mkdir(wdir)
    args = ["--vm", 2, "--bytes", "8M", "--stride", 64, "--spin", 1, "--sync", 1, "--hdd", 1,
            "--hdd-bytes", "4M", "--dir", wdir, "--duration", 1, "--json", path]
    r = run(rtmem, "pressure", *args, timeout=60)
    left = orphans()
    assert r.returncode == 0, explain(r)
    return r, load_json(path), args, os.listdir(wdir), left


def test_a_short_run_writes_the_envelope_and_the_load_as_asked(short):
    _, d, args, _, _ = short
    assert_envelope(d, "pressure", "rtmem-pressure/1", args)
    load = d["load"]
    assert (load["vm"], load["bytes"], load["stride"], load["spin"], load["sync"],
            load["hdd"], load["hdd_bytes"], load["mode"], load["alloc"]) == \
        (2, 8 << 20, 64, 1, 1, 1, 4 << 20, "plain", "malloc"), load


def test_the_vm_spin_and_hdd_workers_worked_none_ended_early(short):
    _, d, _, _, _ = short
    tot = d["totals"]
    # (A sync() may take longer than the run on a busy disk: not counted on.)
    assert tot["vm_rounds"] > 0 and tot["spin_loops"] > 0 and tot["hdd_bytes_written"] > 0, tot
    assert tot["ended_early"] == [] and tot["ended_early_count"] == 0 and d["passed"], tot


def test_bytes_written_are_rounds_times_bytes_over_stride_and_swept_times_stride(short):
    tot = short[1]["totals"]
    # Each round writes bytes / stride bytes: at least that many per
    # completed round, at most one round more (rounds in progress aside).
    per_round = (8 << 20) // 64
    assert tot["vm_rounds"] * per_round <= tot["vm_bytes_written"] <= \
        (tot["vm_rounds"] + 2) * per_round, tot
    assert tot["vm_bytes_swept"] == tot["vm_bytes_written"] * 64, tot


def test_a_round_reads_back_every_byte_it_wrote_as_stress_does(short):
    tot = short[1]["totals"]
    # A round is counted once its bytes are read back: every completed
    # round's, and at most the round in progress's written bytes besides.
    per_round = (8 << 20) // 64
    assert tot["vm_rounds"] * per_round <= tot["vm_bytes_read"] <= tot["vm_bytes_written"], tot
    assert "a byte written and read back every 64" in short[0].stdout, short[0].stdout


def test_a_short_run_has_a_line_for_its_one_second_and_was_not_stopped(short):
    d = short[1]
    lines = d["per_second"]
    assert len(lines) == 1 and lines[-1]["vm_rounds"] <= d["totals"]["vm_rounds"], lines
    assert d["stopped_by"] is None, d["stopped_by"]


def test_a_short_run_leaves_nothing_in_dir_and_no_worker(short):
    _, _, _, in_dir, left = short
    assert in_dir == [], "the disk writers left %s in --dir" % in_dir
    assert left == [], "outlived the run: %s" % left


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_sigint_and_sigterm_end_a_complete_run_every_worker_reaped(rtmem, tmp_dir, wdir, sig):
    name = signal.Signals(sig).name
    path = os.path.join(tmp_dir, "s.json")
    with pressure(rtmem, "--vm", 2, "--bytes", "4M", "--hdd", 1, "--hdd-bytes", "4M", "--dir",
                  wdir, "--duration", 60, "--json", path) as p:
        kids = wait_children(p.pid, 3)
        assert len(kids) == 3, "not three workers running: %s" % kids
        assert os.listdir(wdir) == [], "the disk writer's file has a name: %s" % os.listdir(wdir)
        time.sleep(0.5)
        p.send_signal(sig)
        r = ended(p)
    assert r.returncode == 0, explain(r)
    assert "stopped by %s" % name in r.stdout, explain(r)
    d = load_json(path)
    assert d is not None and d["stopped_by"] == name, d and d.get("stopped_by")
    assert not any(alive(k) for k in kids) and orphans() == [], \
        "a worker was not reaped: %s" % kids
    assert os.listdir(wdir) == [], "left in --dir: %s" % os.listdir(wdir)


def test_sigint_without_json_ends_a_complete_run_every_worker_reaped(rtmem):
    # (the kit's cleanup is installed early, not over the stop handler)
    with pressure(rtmem, "--vm", 1, "--bytes", "4M", "--duration", 60) as p:
        kids = wait_children(p.pid, 1)
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        r = ended(p)
    assert r.returncode == 0 and "stopped by SIGINT" in r.stdout, explain(r)
    assert not any(alive(k) for k in kids) and orphans() == [], \
        "a worker was not reaped: %s" % kids


# What each worker is: its name, its CPUs, first for the OOM killer,
# nothing of the tool's open (a disk writer: its own file as fd 3).

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


@pytest.fixture(scope="module")
def workers(rtmem, module_dir, subreaper):
    """{name: (CPUs, oom_score_adj, fds)} of the three workers of a run
    pinned to the first CPU, once each has set itself up (it renames
    itself last); then the orphans the run left, ended by SIGTERM."""
    cpu = min(os.sched_getaffinity(0))
    wdir = os.path.join(module_dir, "workers")
    os.mkdir(wdir)
    with pressure(rtmem, "--vm", 1, "--bytes", "4M", "--spin", 1, "--hdd", 1, "--hdd-bytes",
                  "1M", "--dir", wdir, "--cpus", cpu, "--duration", 60, "--json",
                  os.path.join(module_dir, "w.json")) as p:
        kids = wait_children(p.pid, 3)
        seen = {}
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            seen = dict(x for x in (describe(k) for k in kids) if x)
            if sorted(seen) == WORKERS and seen["rtmem-hdd"][2][-1:] == [3] and \
                    len(seen["rtmem-vm"][2]) == 3 and len(seen["rtmem-spin"][2]) == 3:
                break
            time.sleep(0.05)
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=30)
    return cpu, seen, orphans()


def test_the_workers_are_named_for_what_they_do(workers):
    _, seen, _ = workers
    assert sorted(seen) == WORKERS, seen


def test_each_worker_is_pinned_to_cpus_and_first_for_the_oom_killer(workers):
    cpu, seen, _ = workers
    assert seen and all(v[0] == str(cpu) and v[1] == "1000" for v in seen.values()), \
        "not each pinned to --cpus %d, oom_score_adj 1000: %s" % (cpu, seen)


def test_a_worker_has_nothing_of_the_tools_open(workers):
    # (the result file's temporary neither; a disk writer: its file, fd 3)
    _, seen, _ = workers
    fds = {name: seen.get(name, (0, 0, None))[2] for name in WORKERS}
    assert fds == {"rtmem-vm": [0, 1, 2], "rtmem-spin": [0, 1, 2], "rtmem-hdd": [0, 1, 2, 3]}, \
        seen


def test_sigterm_reaps_every_worker(workers):
    assert workers[2] == [], "outlived the run: %s" % workers[2]


def state(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def test_a_stopped_tool_loses_its_workers_and_once_resumed_reports_them(rtmem):
    # A stopped tool (Ctrl-Z) stops renewing its lease: its workers end
    # within 3 s, and once resumed it reports them (exit 1).
    with pressure(rtmem, "--vm", 1, "--bytes", "4M", "--spin", 1, "--duration", 60) as p:
        kids = wait_children(p.pid, 2)
        assert len(kids) == 2, "not two workers running: %s" % kids
        time.sleep(0.3)
        os.kill(p.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(state(k) not in ("Z", "gone") for k in kids):
            time.sleep(0.1)
        states = [state(k) for k in kids]
        os.kill(p.pid, signal.SIGCONT)
        r = ended(p)
    assert all(x in ("Z", "gone") for x in states), \
        "the workers did not end while the tool was stopped: %s" % states
    assert r.returncode == 1 and "stopped renewing its lease" in r.stdout, explain(r)
    assert orphans() == [], "a worker was not reaped"


def test_sigkill_of_the_tool_kills_every_worker_with_it(rtmem):
    # (they become this test's children here, which is how it sees them end)
    with pressure(rtmem, "--vm", 2, "--bytes", "4M", "--spin", 1, "--duration", 60) as p:
        kids = wait_children(p.pid, 3)
        assert len(kids) == 3, "not three workers running: %s" % kids
        p.kill()
        p.communicate(timeout=30)
    ends = reap_ends(kids)
    assert sorted(ends) == sorted(kids), "workers that did not end with the tool: %s of %s" \
        % ([k for k in kids if k not in ends], kids)
    # A worker killed before it armed PR_SET_PDEATHSIG finds its parent gone
    # and exits 4 at its start (pressure.c's worker_main): gone too.
    assert all((os.WIFSIGNALED(s) and os.WTERMSIG(s) == signal.SIGKILL) or
               (os.WIFEXITED(s) and os.WEXITSTATUS(s) == 4) for s in ends.values()), \
        "a worker that did not die of SIGKILL nor of its orphan check: %s" % ends


def test_a_worker_that_cannot_allocate_fails_the_run_with_the_cause(rtmem, tmp_dir):
    # The kernel refuses a private mapping of 1T beyond RAM and swap, unless
    # it overcommits always (overcommit_memory 1); a limit on the address
    # space (RLIMIT_AS) would do it too, but the sanitizers' shadow memory
    # needs more than any limit that would. The run completes, so its
    # result file says so ("passed": false).
    if overcommit() == "1":
        pytest.skip("overcommit_memory 1 grants any mapping")
    path = os.path.join(tmp_dir, "f.json")
    previous_result(path)
    # (3G on 32-bit: within its address space, but more than it maps)
    huge = "1T" if BITS == 64 else "3G"
    r = run(rtmem, "pressure", "--vm", 1, "--bytes", huge, "--stride", huge, "--alloc", "mmap",
            "--force", "--duration", 5, "--json", path, timeout=60)
    assert r.returncode == 1, explain(r)
    assert "WORKER ENDED EARLY" in r.stdout and "Cannot allocate memory" in r.stdout, explain(r)
    d = load_json(path)
    assert d is not None and d.get("passed") is False and \
        d["totals"]["ended_early_count"] == 1, "the result file does not say it failed: %s" % d
    assert orphans() == [], "a worker outlived the failed run"


def test_memory_above_half_of_memavailable_is_refused_naming_force(rtmem):
    vm, big = over_share(mem_available())
    r = run(rtmem, "pressure", "--vm", vm, "--bytes", big, "--duration", 1, timeout=60)
    assert r.returncode == 2 and "MemAvailable" in r.stderr and "--force" in r.stderr, \
        "--vm %d --bytes %s (60%% of MemAvailable): %s" % (vm, big, explain(r))
    assert r.stdout == "", "something ran: %s" % explain(r)


def test_force_runs_past_the_memory_share(rtmem):
    # (the forced run maps that much but writes one page of it per round)
    if overcommit() == "2":
        pytest.skip("overcommit_memory 2 would refuse the mapping")
    vm, big = over_share(mem_available())
    r = run(rtmem, "pressure", "--vm", vm, "--bytes", big, "--stride", big, "--alloc", "mmap",
            "--force", "--duration", 1, timeout=60)
    assert r.returncode == 0, explain(r)
    assert orphans() == [], "a worker outlived the forced run"


BAD = [(["--vm", 0], "no workers"),
       (["--bytes", "4K", "--stride", "8K"], "larger than the bytes"),
       (["--cpus", "4096"], "not a range of CPUs"),
       (["--cpus", "0-"], "not a CPU list"),
       (["--hdd", 1, "--dir", "TMP/none"], "directory"),
       (["--alloc", "brk"], "--alloc"),
       (["--duration", "0"], "--duration")]


@pytest.mark.parametrize("args,why", BAD, ids=[" ".join(map(str, a)) for a, _ in BAD])
def test_bad_usage_exits_2_with_a_message_and_nothing_run(rtmem, tmp_dir, args, why):
    args = [str(a).replace("TMP", tmp_dir) for a in args]  # TMP/none: a directory not there
    r = run(rtmem, "pressure", *args, timeout=30)
    assert r.returncode == 2 and why in r.stderr and "Try 'rtmem pressure --help'" in r.stderr \
        and r.stdout == "", explain(r)


# ---- the progress line (tools/common/progress.h) -----------------------------------------

def progress_run(rtmem, tmp_dir, *extra, stdout_tty=False):
    """rtmem pressure --quick with standard error on a pseudo-terminal and
    standard output in a file (as make bench has it) or on the terminal
    too: (exit status, what the terminal got)."""
    import pty
    master, slave = pty.openpty()
    out = open(os.path.join(tmp_dir, "out.txt"), "w")
    try:
        p = subprocess.Popen([str(rtmem), "pressure", "--quick", "--duration", "1s"] + list(extra),
                             stdin=subprocess.DEVNULL, stdout=slave if stdout_tty else out,
                             stderr=slave, env=dict(os.environ, RTMEM_PROGRESS="1"))
        os.close(slave)
        got = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the terminal's last writer is gone
                break
            if not chunk:
                break
            got += chunk
        return p.wait(timeout=60), got.decode("utf-8", "replace")
    finally:
        out.close()
        os.close(master)


def test_a_terminal_sees_the_phase_and_the_time_left_then_the_line_cleared(rtmem, tmp_dir):
    status, got = progress_run(rtmem, tmp_dir)
    assert status == 0, got
    assert "\r\x1b[Krtmem pressure: the load " in got and "left)" in got, repr(got[:400])
    assert got.endswith("\r\x1b[K"), repr(got[-200:])  # nothing of it stays on the screen


def test_quiet_and_a_terminal_on_standard_output_draw_no_line(rtmem, tmp_dir):
    status, got = progress_run(rtmem, tmp_dir, "--quiet")
    assert status == 0 and "\x1b[K" not in got, repr(got[:400])
    status, got = progress_run(rtmem, tmp_dir, stdout_tty=True)
    assert status == 0 and "\x1b[K" not in got, repr(got[:400])  # the run's own lines there
