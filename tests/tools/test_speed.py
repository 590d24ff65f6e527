"""scripts/speed.py (make speed), without timing anything: its figures from
bench documents made up here, its parse of valgrind's lackey trace from a
trace made up here, and the script end to end against a stand-in for
`rtmem bench`.

What must hold: net times are the median and range over the runs; ratios
are taken within each run (to rlsf's row and to the kind's own -none row),
then summarised; a call's counts are its instructions and data lines less
the calibration calls'; speed.txt and speed.json are written only when
every run completed; bench's verdict (exit status 1) keeps its figures, any
other failure stops the script; the scratch directory and the child are
gone after an error and after Ctrl-C; bad options are refused.
"""
import copy
import json
import os
import signal
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(ROOT, "scripts", "speed.py")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import speed  # noqa: E402


def alloc_row(name, api, alloc_ns, free_ns):
    return {"name": name, "api": api,
            "alloc": {"avg_minus_floor_ns": alloc_ns}, "free": {"avg_minus_floor_ns": free_ns}}


def bench_doc(rows):
    """A bench document with the fields speed.py reads: rows are
    (name, api, alloc ns, free ns), after the floor."""
    return {"command_line": ["rtmem", "bench"],
            "machine": {"cpu_model": "test CPU", "cpus_online": 2, "kernel_release": "6.1",
                        "compiler": "gcc"},
            "allocators": [alloc_row("floor", "floor", 0.0, 0.0)] +
                          [alloc_row(*r) for r in rows]}


# Three runs chosen so that the median of the within-run ratios (3.0 for
# tlsf's alloc against rlsf; 1.5 against tlsf-none) is not the ratio of the
# medians (20 / 8 = 2.5; 20 / 12).
RUNS = [
    bench_doc([("tlsf", "rtm_heap", 20.0, 30.0), ("tlsf-none", "rtm_heap", 10.0, 15.0),
               ("rlsf", "plugin", 10.0, 10.0)]),
    bench_doc([("tlsf", "rtm_heap", 24.0, 36.0), ("tlsf-none", "rtm_heap", 16.0, 18.0),
               ("rlsf", "plugin", 8.0, 20.0)]),
    bench_doc([("tlsf", "rtm_heap", 18.0, 27.0), ("tlsf-none", "rtm_heap", 12.0, 9.0),
               ("rlsf", "plugin", 6.0, 9.0)]),
]


def by_name(rows):
    return {r["name"]: r for r in rows}


def test_net_times_are_the_median_and_range_over_the_runs():
    rows = by_name(speed.summarise(RUNS))
    assert list(rows) == ["tlsf", "tlsf-none", "rlsf"]  # the floor is no row
    assert rows["tlsf"]["alloc_ns"] == {"median": 20.0, "min": 18.0, "max": 24.0}
    assert rows["tlsf"]["free_ns"] == {"median": 30.0, "min": 27.0, "max": 36.0}
    assert rows["rlsf"]["api"] == "plugin"


def test_ratios_are_taken_within_each_run():
    rows = by_name(speed.summarise(RUNS))
    # tlsf/rlsf alloc per run: 2.0, 3.0, 3.0 (the medians' ratio would be 20/8)
    assert rows["tlsf"]["alloc_vs_rlsf"] == {"median": 3.0, "min": 2.0, "max": 3.0}
    # tlsf/tlsf-none free per run: 2.0, 2.0, 3.0
    assert rows["tlsf"]["free_vs_none"] == {"median": 2.0, "min": 2.0, "max": 3.0}
    # tlsf/tlsf-none alloc per run: 2.0, 1.5, 1.5
    assert rows["tlsf"]["alloc_vs_none"] == {"median": 1.5, "min": 1.5, "max": 2.0}
    # no row is compared with itself, and a -none row has no -none of its own
    assert rows["rlsf"]["alloc_vs_rlsf"] is None
    assert rows["tlsf-none"]["alloc_vs_none"] is None
    assert rows["tlsf-none"]["free_vs_rlsf"] == {"median": 1.0, "min": 0.9, "max": 1.5}


def test_a_run_without_a_row_leaves_it_out_of_that_rows_figures():
    runs = copy.deepcopy(RUNS)
    runs[2]["allocators"] = [x for x in runs[2]["allocators"] if x["name"] != "rlsf"]
    rows = by_name(speed.summarise(runs))
    assert rows["rlsf"]["alloc_ns"] == {"median": 9.0, "min": 8.0, "max": 10.0}
    assert rows["tlsf"]["alloc_vs_rlsf"] == {"median": 2.5, "min": 2.0, "max": 3.0}
    assert rows["tlsf"]["alloc_ns"]["max"] == 24.0  # its own figures keep every run


def test_text_has_a_line_per_allocator_and_a_dash_for_no_ratio():
    rows = speed.summarise(RUNS)
    out = speed.text(rows, RUNS, ["rlsf: a note"])
    lines = out.splitlines()
    tlsf = next(line for line in lines if line.startswith("tlsf "))
    assert "20.00 (18.00..24.00)" in tlsf and "3.00x (2.00..3.00)" in tlsf
    rlsf = next(line for line in lines if line.startswith("rlsf "))
    assert rlsf.split()[-4:] == ["-", "-", "-", "-"]
    assert "the median of 3 runs" in out
    assert "machine: test CPU, 2 CPUs, 6.1, gcc" in out
    assert "note: rlsf: a note" in out


# ---- the lackey trace ---------------------------------------------------------------

BEGIN, END, FREE, ALLOC_CALLER, BODY = 0x1000, 0x2000, 0x3000, 0x5000, 0x6000


def call(caller, ins, data):
    """A marked call's lines: its caller, the begin marker (two instructions
    of its own), ins instructions, the data addresses, the end marker."""
    out = ["I  %08x,3" % caller, "I  %08x,1" % BEGIN, "I  %08x,1" % (BEGIN + 4)]
    out += ["I  %08x,4" % (BODY + 4 * i) for i in range(ins)]
    out += [" L %08x,8" % a for a in data]
    out.append("I  %08x,1" % END)
    return out


def fake_valgrind(d, lines, status=0, said=""):
    """A `valgrind` in directory d that prints lines on standard error."""
    trace = os.path.join(d, "trace")
    with open(trace, "w") as f:
        f.write("".join(line + "\n" for line in lines))
        if said:
            f.write("speed_calls: %s\n" % said)
    path = os.path.join(d, "valgrind")
    with open(path, "w") as f:
        f.write("#!/bin/sh\ncat '%s' >&2\nexit %d\n" % (trace, status))
    os.chmod(path, 0o755)


@pytest.fixture
def lackey(tmp_dir, monkeypatch):
    """speed.count_calls on a trace of ours: the markers at fixed addresses,
    and a setarch that only runs its command (a container may refuse the
    real one's personality change)."""
    monkeypatch.setattr(speed, "symbols", lambda exe: {
        "speed_mark_begin": (BEGIN, 0x10), "speed_mark_end": (END, 0x10),
        "speed_free": (FREE, 0x100)})
    setarch = os.path.join(tmp_dir, "setarch")
    with open(setarch, "w") as f:
        f.write('#!/bin/sh\nshift 2\nexec "$@"\n')
    os.chmod(setarch, 0o755)
    monkeypatch.setenv("PATH", tmp_dir + os.pathsep + os.environ.get("PATH", ""))
    return tmp_dir


def test_counts_are_each_calls_less_the_calibration(lackey):
    calib = []
    for _ in range(3):  # one instruction, one line: what an empty call costs
        calib += call(ALLOC_CALLER, 1, [0x7000])
    lines = calib
    lines += call(ALLOC_CALLER, 5, [0x8000, 0x8008, 0x8040])      # 4 instructions, 1 line
    lines += call(FREE + 0x10, 9, [0x9000, 0x9040, 0x9080, 0x90c0])  # 8, 3
    lines += call(ALLOC_CALLER, 3, [0xa000])                        # 2, 0
    fake_valgrind(lackey, lines)
    r = speed.count_calls("exe", ["tlsf"], 4)
    assert r["alloc"]["calls"] == 2 and r["free"]["calls"] == 1
    assert r["alloc"]["instructions_avg"] == 3.0
    assert r["alloc"]["instructions_max"] == 4 and r["alloc"]["lines_max"] == 1
    assert r["alloc"]["lines_avg"] == 0.5
    assert r["free"]["instructions_max"] == 8 and r["free"]["lines_max"] == 3


def test_a_failing_driver_is_reported_with_what_it_said(lackey):
    fake_valgrind(lackey, [], status=2, said="cannot create a heap of xvheap")
    with pytest.raises(speed.CountFailed) as e:
        speed.count_calls("exe", ["xvheap"], 4)
    assert "exited with status 2" in str(e.value)
    assert e.value.said == "cannot create a heap of xvheap"


# ---- the script end to end, against a stand-in for rtmem bench -------------------------

FAKE_RTMEM = """#!%s
import json, os, sys, time
args = sys.argv[1:]
if os.environ.get("FAKE_PIDFILE"):
    with open(os.environ["FAKE_PIDFILE"], "w") as f:
        f.write(str(os.getpid()))
if os.environ.get("FAKE_SLEEP"):
    time.sleep(float(os.environ["FAKE_SLEEP"]))
runs = json.load(open(os.environ["FAKE_RUNS"]))
n = len(os.listdir(os.path.dirname(args[args.index("--json") + 1])))
with open(args[args.index("--json") + 1], "w") as f:
    json.dump(runs[n %% len(runs)], f)
sys.exit(int(os.environ.get("FAKE_STATUS", "0")))
"""


@pytest.fixture
def fake_build(tmp_dir):
    """A build directory whose tools/rtmem writes RUNS' documents in turn."""
    tools = os.path.join(tmp_dir, "build", "tools")
    os.makedirs(tools)
    exe = os.path.join(tools, "rtmem")
    with open(exe, "w") as f:
        f.write(FAKE_RTMEM % sys.executable)
    os.chmod(exe, 0o755)
    with open(os.path.join(tmp_dir, "runs.json"), "w") as f:
        json.dump(RUNS, f)
    os.makedirs(os.path.join(tmp_dir, "tmp"))
    return tmp_dir


def speed_cmd(d, *extra):
    return [sys.executable, SCRIPT, "--build", os.path.join(d, "build"), "--no-rlsf",
            "--no-count", "--out", os.path.join(d, "out")] + list(extra)


def speed_env(d, **kv):
    env = dict(os.environ, TMPDIR=os.path.join(d, "tmp"), FAKE_RUNS=os.path.join(d, "runs.json"))
    env.update(kv)
    return env


def test_the_script_writes_both_files_from_every_run(fake_build):
    d = fake_build
    r = subprocess.run(speed_cmd(d, "--runs", "3"), env=speed_env(d), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(os.path.join(d, "out"))) == ["speed.json", "speed.txt"]
    doc = json.load(open(os.path.join(d, "out", "speed.json")))
    assert doc["schema"] == "rtmem-speed/1" and doc["runs"] == 3 and doc["counts"] == []
    rows = by_name(doc["allocators"])
    assert rows["tlsf"]["alloc_vs_rlsf"] == {"median": 3.0, "min": 2.0, "max": 3.0}
    txt = open(os.path.join(d, "out", "speed.txt")).read()
    assert "3.00x (2.00..3.00)" in txt and txt in r.stdout
    assert os.listdir(os.path.join(d, "tmp")) == []  # the scratch directory is gone


def test_benchs_verdict_keeps_its_figures(fake_build):
    d = fake_build
    r = subprocess.run(speed_cmd(d, "--runs", "2"), env=speed_env(d, FAKE_STATUS="1"),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.load(open(os.path.join(d, "out", "speed.json")))["runs"] == 2


def test_a_failed_bench_stops_the_script_and_writes_nothing(fake_build):
    d = fake_build
    os.makedirs(os.path.join(d, "out"))
    with open(os.path.join(d, "out", "speed.txt"), "w") as f:
        f.write("a result kept from before\n")
    r = subprocess.run(speed_cmd(d), env=speed_env(d, FAKE_STATUS="3"), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode != 0
    assert "rtmem bench failed (exit status 3)" in r.stderr
    assert os.listdir(os.path.join(d, "out")) == ["speed.txt"]
    assert open(os.path.join(d, "out", "speed.txt")).read() == "a result kept from before\n"
    assert os.listdir(os.path.join(d, "tmp")) == []


def test_ctrl_c_ends_the_bench_and_removes_the_scratch(fake_build):
    d = fake_build
    pidfile = os.path.join(d, "child.pid")
    p = subprocess.Popen(speed_cmd(d), env=speed_env(d, FAKE_SLEEP="60", FAKE_PIDFILE=pidfile),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    child = None
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(pidfile) or not open(pidfile).read():
            assert time.monotonic() < deadline, "the stand-in never started"
            time.sleep(0.05)
        child = int(open(pidfile).read())
        p.send_signal(signal.SIGINT)
        assert p.wait(timeout=30) == 128 + signal.SIGINT
        # the child was ended and reaped: no such process any more
        with pytest.raises(ProcessLookupError):
            os.kill(child, 0)
        assert os.listdir(os.path.join(d, "tmp")) == []
        assert not os.path.exists(os.path.join(d, "out", "speed.txt"))
    finally:  # a failure leaves no process behind either
        if p.poll() is None:
            p.kill()
            p.wait()
        if child is not None:
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.mark.parametrize("args,says", [
    (["--runs", "0"], "--runs must be at least 1"),
    (["--plugin", "/nonexistent/x.so"], "no plugin at /nonexistent/x.so"),
])
def test_bad_options_are_refused(fake_build, args, says):
    d = fake_build
    r = subprocess.run(speed_cmd(d, *args), env=speed_env(d), capture_output=True, text=True,
                       timeout=60)
    assert r.returncode != 0 and says in r.stderr
    assert not os.path.exists(os.path.join(d, "out", "speed.txt"))


def test_a_build_without_rtmem_is_refused(tmp_dir):
    r = subprocess.run([sys.executable, SCRIPT, "--build", tmp_dir, "--no-rlsf", "--no-count",
                        "--out", os.path.join(tmp_dir, "out")], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode != 0 and "not found: build first" in r.stderr
