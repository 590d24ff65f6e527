"""rtmem trace: programs recorded unmodified, each trace checked against what
the program did (trace_prog.c: every call of the malloc family, phase
"loop" of 200 blocks of 1..200 bytes, threads, fork, exec, signals, _exit,
SIGKILL; trace_prog_cpp.cpp: STL containers in threads; the Python running
this test, a real program); --show; corrupt and truncated traces refused or
read up to their end, never a crash; usage.

The build gives (tests/tools/CMakeLists.txt): --file trace_prog=, and
--file trace_prog_cpp= where a C++ compiler is found.
"""
import glob
import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from rtmemtest import EMULATED, explain, load_json, run

LOOP = 200
LOOP_PEAK = LOOP * (LOOP + 1) // 2
OPS = ["malloc", "calloc", "realloc", "reallocarray", "free", "memalign", "posix_memalign",
       "aligned_alloc", "valloc", "pvalloc", "malloc_usable_size"]


@pytest.fixture(scope="module")
def prog(files):
    return files["trace_prog"]


def trace(rtmem, tmp_dir, *program, options=(), name="t.trace"):
    """Records program; returns (the run, its JSON, the output path)."""
    out = os.path.join(tmp_dir, name)
    js = os.path.join(tmp_dir, name + ".json")
    r = run(rtmem, "trace", "-o", out, "--json", js, *options, "--", *program)
    assert not glob.glob(os.path.join(tmp_dir, ".rtmem-trace.*")), "its directory was left"
    return r, load_json(js), out


def show(rtmem, tmp_dir, path):
    js = os.path.join(tmp_dir, "show.json")
    if os.path.exists(js):
        os.unlink(js)
    r = run(rtmem, "trace", "--show", path, "--json", js)
    return r, load_json(js)


def phase(doc, name):
    found = [p for p in doc["trace"]["phases"] if p["name"] == name]
    assert len(found) == 1, doc["trace"]["phases"]
    return found[0]


def check_loop(doc):
    """Phase "loop" holds the program's 200 mallocs and frees, all live at once."""
    p = phase(doc, "loop")
    assert p["allocs"] == LOOP and p["frees"] == LOOP, p
    assert p["peak_live_bytes"] - p["start_live_bytes"] == LOOP_PEAK, p


def test_every_call_of_the_family_is_recorded_once(rtmem, tmp_dir, prog):
    r, d, out = trace(rtmem, tmp_dir, prog, "basic")
    assert r.returncode == 0, explain(r)
    t = d["trace"]
    assert t["ending"] == "exited" and t["unrecorded"] == 0, t
    # trace_prog makes each call once before its loop; the C library may
    # add a few mallocs and frees of its own (stdio), never the others
    for op in OPS:
        if op not in ("malloc", "free"):
            assert t["ops"][op] == 1, (op, t["ops"])
    assert t["ops"]["malloc"] >= 1 + 1 + LOOP and t["ops"]["free"] >= 8 + LOOP
    assert {a["align"] for a in t["alignments"]} == {64, 128, 256}
    check_loop(d)
    assert d["program"]["exit_status"] == 0 and d["files"][0]["path"] == out
    # the same figures from the file alone
    r2, d2 = show(rtmem, tmp_dir, out)
    assert r2.returncode == 0, explain(r2)
    assert d2["trace"]["ops"] == t["ops"] and d2["trace"]["phases"] == t["phases"]


def test_threads_each_record_their_own(rtmem, tmp_dir, prog):
    r, d, _ = trace(rtmem, tmp_dir, prog, "threads")
    assert r.returncode == 0, explain(r)
    t = d["trace"]
    assert t["threads"] >= 4, t
    p = phase(d, "loop")
    assert p["allocs"] >= 4 * 1000 and p["frees"] >= 4 * 1000, p
    assert t["unknown_frees"] == 0 and t["reused_live"] == 0, t


def test_cpp_containers_in_threads(rtmem, tmp_dir, files):
    if "trace_prog_cpp" not in files:
        pytest.skip("no C++ compiler: trace_prog_cpp not built")
    r, d, _ = trace(rtmem, tmp_dir, files["trace_prog_cpp"])
    assert r.returncode == 0, explain(r)
    t = d["trace"]
    assert t["threads"] >= 3 and t["unknown_frees"] == 0, t
    p = phase(d, "loop")
    # 3 threads x 2000 map nodes, strings and vectors, freed again
    assert p["allocs"] >= 3 * 2000 * 2 and p["frees"] >= 3 * 2000 * 2, p


@pytest.mark.parametrize("children", ["none", "follow"])
def test_a_forked_child_is_followed_only_when_asked(rtmem, tmp_dir, prog, children):
    r, d, out = trace(rtmem, tmp_dir, prog, "fork", options=("--children", children))
    assert r.returncode == 0, explain(r)
    check_loop(d)
    others = [f for f in d["files"] if f["path"] != out]
    if children == "none":
        assert not others and glob.glob(out + ".*") == [out + ".json"], d["files"]
        return
    assert len(others) == 1 and others[0]["path"] == "%s.%d" % (out, others[0]["pid"]), others
    r2, d2 = show(rtmem, tmp_dir, others[0]["path"])
    assert r2.returncode == 0, explain(r2)
    assert d2["trace"]["ppid"] == d["trace"]["pid"]
    check_loop(d2)


def test_exec_ends_an_image_and_starts_the_next(rtmem, tmp_dir, prog):
    r, d, out = trace(rtmem, tmp_dir, prog, "exec")
    assert r.returncode == 0, explain(r)
    assert d["trace"]["ending"] == "execed"
    check_loop(d)
    pid = d["trace"]["pid"]
    r2, d2 = show(rtmem, tmp_dir, "%s.%d.1" % (out, pid))
    assert r2.returncode == 0, explain(r2)
    assert d2["trace"]["generation"] == 1 and d2["trace"]["ending"] == "exited"
    assert d2["trace"]["ops"]["pvalloc"] == 1
    check_loop(d2)


@pytest.mark.parametrize("mode,ending,how", [
    ("term", "signaled", signal.SIGTERM),
    ("kill", "signaled", signal.SIGKILL),
    ("quick-exit", "exited", 3),
])
def test_a_program_ended_early_leaves_its_whole_trace(rtmem, tmp_dir, prog, mode, ending, how):
    r, d, _ = trace(rtmem, tmp_dir, prog, mode)
    assert r.returncode == 0, explain(r)
    t = d["trace"]
    assert t["ending"] == ending, t
    if how is not None:
        assert t["ending_how"] == how, t
    check_loop(d)  # SIGKILL too: the events are in the file's pages


def test_phases_by_time_and_by_signal(rtmem, tmp_dir, prog):
    r, d, _ = trace(rtmem, tmp_dir, prog, "sleep", options=("--after", "150ms"))
    assert r.returncode == 0, explain(r)
    names = [p["name"] for p in d["trace"]["phases"]]
    assert names == ["start", "loop", "signal-1"], names
    p = phase(d, "signal-1")
    # 150 ms after rtmem trace started the program; the trace's times count
    # from when the recorder started in it, later (the loader's work: tens
    # of ms under an emulator)
    assert 0 < p["start_s"] < 0.25, p  # (and its delivery may be late)
    assert 0 < p["allocs"] < 40, p  # in the 40 rounds of sleep


def test_a_phase_without_allocations_is_said_to_need_no_heap(rtmem, tmp_dir, prog):
    r, d, _ = trace(rtmem, tmp_dir, prog, "idle")
    assert r.returncode == 0, explain(r)
    assert phase(d, "idle")["calls"] == 0
    assert "no call of the malloc family" in r.stdout and "needs no heap in its loop" in r.stdout


def test_a_program_that_never_allocates_leaves_a_trace_that_says_so(rtmem, tmp_dir, prog):
    r, d, _ = trace(rtmem, tmp_dir, prog, "nothing")
    assert r.returncode == 0, explain(r)
    assert d["trace"]["calls"] == 0 and d["trace"]["ending"] == "exited", d["trace"]


def test_sigterm_to_rtmem_trace_reaches_the_program_and_the_trace_is_kept(rtmem, tmp_dir, prog):
    out = os.path.join(tmp_dir, "t.trace")
    p = subprocess.Popen([rtmem, "trace", "-o", out, "--", prog, "sleep"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    time.sleep(0.15)
    p.send_signal(signal.SIGTERM)
    stdout, stderr = p.communicate(timeout=60)
    assert p.returncode == 0, stderr
    assert "program     ended by SIGTERM" in stdout, stdout
    assert "cut by SIGTERM" in stdout, stdout
    assert not glob.glob(os.path.join(tmp_dir, ".rtmem-trace.*"))


def test_a_real_program(rtmem, tmp_dir):
    """The Python running this test: thousands of calls, every block it
    frees seen handed out or from before the recorder (none here: it
    starts with the process)."""
    if EMULATED:
        pytest.skip("the Python running the test is the host's: the emulated target's recorder "
                    "cannot be loaded into it")
    script = "import json\nx = [json.dumps(list(range(i))) for i in range(300)]\nprint(len(x))\n"
    r, d, _ = trace(rtmem, tmp_dir, sys.executable, "-c", script)
    assert r.returncode == 0, explain(r)
    t = d["trace"]
    assert t["ending"] == "exited" and t["calls"] > 1000, t
    assert t["peak_live_bytes"] > 100000 and t["largest_bytes"] > 1000, t
    assert d["program"]["exit_status"] == 0


def test_a_program_that_cannot_start(rtmem, tmp_dir):
    r, _, _ = trace(rtmem, tmp_dir, os.path.join(tmp_dir, "no-such-program"))
    assert r.returncode == 1, explain(r)
    assert "cannot run" in r.stderr and "did not start" in r.stderr, explain(r)


def test_corrupt_and_truncated_traces_are_refused_or_read_never_a_crash(rtmem, tmp_dir, prog):
    r, _, out = trace(rtmem, tmp_dir, prog, "basic")
    assert r.returncode == 0, explain(r)
    with open(out, "rb") as f:
        good = f.read()
    rng = random.Random(5)
    path = os.path.join(tmp_dir, "bad.trace")
    seen = {0: 0, 1: 0}
    cases = [good[:n] for n in (0, 10, 63, 64, 100, 4096, 4100, len(good) - 1)]
    for _ in range(150):
        b = bytearray(good)
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        cases.append(bytes(b))
    for data in cases:
        with open(path, "wb") as f:
            f.write(data)
        r2 = run(rtmem, "trace", "--show", path)
        assert r2.returncode in (0, 1), explain(r2)  # never a signal
        seen[r2.returncode] += 1
        if r2.returncode == 1:
            assert r2.stderr.startswith("rtmem trace: "), explain(r2)
    assert seen[0] > 0 and seen[1] > 0, seen
    with open(path, "wb") as f:
        f.write(good[:5000])
    r3 = run(rtmem, "trace", "--show", path)
    assert r3.returncode == 0 and "cut short" in r3.stdout, explain(r3)


@pytest.mark.parametrize("args,message", [
    ([], "no program to trace"),
    (["--show", "x", "--", "true"], "--show reads a trace: no program is run with it"),
    (["--show", "x", "-o", "y"], "--output is for recording"),
    (["--after", "1s", "--mark-signal", "none", "--", "true"], "--after marks a phase"),
    (["-o", "/no/such/dir/t.trace", "--", "true"], "cannot write in /no/such/dir"),
    (["--children", "maybe", "--", "true"], "--children"),
])
def test_usage(rtmem, args, message):
    r = run(rtmem, "trace", *args)
    assert r.returncode == 2, explain(r)
    assert message in r.stderr, explain(r)


def test_show_of_a_file_that_is_no_trace(rtmem, tmp_dir):
    path = os.path.join(tmp_dir, "no.trace")
    with open(path, "w") as f:
        f.write("hello, this is not a trace at all, and it is long enough" * 3)
    r = run(rtmem, "trace", "--show", path)
    assert r.returncode == 1 and "is not an rtmem trace" in r.stderr, explain(r)


def test_help_names_the_command_form(rtmem):
    r = run(rtmem, "trace", "--help")
    assert r.returncode == 0
    assert "usage: rtmem trace [options] -- PROGRAM [ARGS...]" in r.stdout
    assert "-o, --output FILE" in r.stdout


def test_a_static_program_is_not_traced_and_not_harmed(rtmem, tmp_dir):
    """No recorder in it: rtmem trace says so, and --after's signal, which
    the program does not catch, is not sent (it would end it)."""
    if EMULATED:
        pytest.skip("the host's compiler builds for the host, not the emulated target")
    src = os.path.join(tmp_dir, "st.c")
    exe = os.path.join(tmp_dir, "st")
    with open(src, "w") as f:
        f.write("#include <unistd.h>\nint main(void) { usleep(300000); return 7; }\n")
    cc = subprocess.run(["cc", "-static", "-o", exe, src], capture_output=True, text=True)
    if cc.returncode != 0:
        pytest.skip("no static C library to build with: " + cc.stderr[-200:])
    r, _, _ = trace(rtmem, tmp_dir, exe, options=("--after", "50ms"))
    assert r.returncode == 1, explain(r)
    assert "wrote no trace: it is not dynamically linked" in r.stderr, explain(r)


@pytest.mark.parametrize("mode", ["basic", "threads", "kill", "exec"])
def test_the_python_reader_agrees_with_the_c_reader(rtmem, tmp_dir, prog, source_dir, mode):
    """report/rtmem_report/tracefile.py, event for event: the counts per
    call, the peak of live bytes and when, the phases, how it ended."""
    sys.path.insert(0, os.path.join(source_dir, "report"))
    try:
        from rtmem_report import tracefile
    finally:
        sys.path.pop(0)
    r, d, out = trace(rtmem, tmp_dir, prog, mode)
    assert r.returncode == 0, explain(r)
    t = tracefile.read(out)
    c = d["trace"]
    assert t.ending == c["ending"] and t.header["pid"] == c["pid"]
    counts = {name: 0 for name in c["ops"]}
    for e in t.events:
        if e.name != "mark":
            counts[e.name] += 1
    assert counts == c["ops"]
    peak, peak_t, _ = tracefile.live_bytes(t)
    assert peak == c["peak_live_bytes"] and abs(peak_t / 1e9 - c["peak_at_s"]) < 1e-6
    assert [e.mark for e in t.events if e.name == "mark"] == \
        [p["name"] for p in c["phases"]][1:]
    with open(out, "rb") as f:
        head = f.read(64)
    bad = os.path.join(tmp_dir, "bad.trace")
    with open(bad, "wb") as f:
        f.write(head)
    with pytest.raises(tracefile.TraceError):
        tracefile.read(bad)


@pytest.mark.parametrize("mode,ending", [("threads", "exited"), ("threads-term", "signaled")])
def test_a_file_size_limit_leaves_calls_counted_never_a_signal(rtmem, tmp_dir, prog, mode, ending):
    """Under `ulimit -f`, a chunk the limit refuses is never a SIGXFSZ in
    the program: its calls are counted as unrecorded, in the end record the
    recorder writes (exit) or the one rtmem trace writes for it (a signal),
    and no chunk is tried again (each call would pay for it)."""
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (200 * 1024, resource.RLIM_INFINITY))

    out = os.path.join(tmp_dir, "t.trace")
    js = out + ".json"
    r = subprocess.run([rtmem, "trace", "-o", out, "--json", js, "--", prog, mode],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       preexec_fn=limit, timeout=120)
    assert r.returncode == 0, explain(r)
    t = load_json(js)["trace"]
    assert t["ending"] == ending, t
    if mode == "threads":
        assert "exited with status 0" in r.stdout, explain(r)
    assert t["unrecorded"] > 0 and t["calls"] + t["unrecorded"] >= 8000, t
    assert t["chunks"] <= 200 * 1024 // 65536, t
