"""The tools survive allocators that fail: a plugin that dereferences NULL
in alloc and one whose free never returns each fail with the phase, test
and signal (or the timeout) named and a replay command; the rows they
finished and every other allocator's results are kept in the report and
the JSON; the run exits 1; no process is left behind, also when the run
itself is interrupted; replay fails a plugin that crashes, hangs or exits
on its own line, and replays one that forks, leaving no process. An allocator whose malloc_usable_size lies (injected
with LD_PRELOAD) fails memcheck the same way.

The build gives (tests/tools/CMakeLists.txt): --file crash_plugin=,
--file hang_plugin=, --file exit_plugin=, --file tlsf_plugin=, and --file fault_lib= (the lying
malloc_usable_size; not in a sanitizer build, whose runtime must come
first in the process: those cases are skipped).
"""
import os
import re
import shlex
import shutil
import signal
import subprocess
import time

import pytest

from rtmemtest import EMULATED, children_of, explain, load_json, run, wait_children
from test_replay import write_trace

# Every process of a run carries this in its environment, so the test can
# find the ones left behind (and only them: other tests run in parallel).
MARK_NAME, MARK_VALUE = "RTMEM_HARNESS_TEST", "%d.%d" % (os.getpid(), time.time_ns())
ENV = {MARK_NAME: MARK_VALUE}
# --timeout of the runs with a hanging plugin: under an emulator the set-up
# alone (heaps mapped, prefaulted and locked) can take a second.
TIMEOUT = "5" if EMULATED else "1"
# In a sanitizer build, a plugin's SIGSEGV must stay a SIGSEGV (the
# sanitizers' runtimes catch it otherwise, and exit with status 1).
for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):
    ENV[var] = (os.environ[var] + ":" if os.environ.get(var) else "") + "handle_segv=0"
# A plugin that calls exit() runs the process's exit handlers: in a
# sanitizer build LeakSanitizer's would report the tool's live memory and
# abort, which is not the exit these cases are about.
EXIT_ENV = dict(ENV, ASAN_OPTIONS=ENV["ASAN_OPTIONS"] + ":detect_leaks=0")


def leftovers():
    """Pids of the processes that carry this test's mark."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/environ" % pid, "rb") as f:
                if ("%s=%s" % (MARK_NAME, MARK_VALUE)).encode() in f.read().split(b"\0"):
                    found.append(int(pid))
        except OSError:
            continue
    return found


@pytest.fixture(scope="module")
def memcheck_broken(rtmem, files, module_dir):
    """memcheck with the crashing and the hanging plugin beside tlsf and
    glibc: (its result, its document or None, the processes left after)."""
    path = os.path.join(module_dir, "m.json")
    r = run(rtmem, "memcheck", "--quick", "--no-rt", "--plugin", files["crash_plugin"],
            "--plugin", files["hang_plugin"], "--kinds", "tlsf,crash,hang,glibc", "--timeout",
            TIMEOUT, "--json", path, env=ENV)
    return r, load_json(path), leftovers()


def test_memcheck_with_broken_plugins_exits_1_and_leaves_no_process(memcheck_broken):
    r, _, left = memcheck_broken
    assert r.returncode == 1, explain(r)
    assert not left, "test processes left: %s" % left


def test_memcheck_names_the_crash_its_phase_test_and_signal(memcheck_broken):
    r = memcheck_broken[0]
    assert re.search(r"^FAILED: crash: pow2 phase, test #[0-9]+: heap [0-9]+ B, block [0-9]+ B: "
                     r"crashed: killed by SIGSEGV \(Segmentation fault\)$", r.stdout, re.M), \
        explain(r)


def test_memcheck_names_the_hang_its_phase_test_and_timeout(memcheck_broken):
    r = memcheck_broken[0]
    assert re.search(r"^FAILED: hang: pow2 phase, test #[0-9]+: heap [0-9]+ B, block 1024 B: "
                     r"hung: no progress for %s s" % TIMEOUT, r.stdout, re.M), explain(r)


@pytest.mark.parametrize("name", ["crash", "hang"])
def test_memcheck_gives_each_failure_a_replay_command_and_says_it_on_stderr(memcheck_broken,
                                                                             name):
    r = memcheck_broken[0]
    assert re.search(r"^  replay: rtmem memcheck --plugin [^ ]*%s_plugin.so --kinds %s "
                     r"--phases pow2 .*--timeout %s$" % (name, name, TIMEOUT), r.stdout,
                     re.M), explain(r)
    assert "FAILED: %s: " % name in r.stderr, explain(r)


def test_memcheck_report_keeps_the_other_allocators_summary(memcheck_broken):
    r = memcheck_broken[0]
    assert re.search(r"^== summary", r.stdout, re.M), explain(r)
    assert re.search(r"^  pow2   glibc ", r.stdout, re.M), explain(r)


def test_memcheck_writes_results_despite_the_failures_not_passed(memcheck_broken):
    d = memcheck_broken[1]
    assert d is not None, "memcheck wrote no results"
    assert d["passed"] is False


@pytest.mark.parametrize("name", ["tlsf", "glibc"])
def test_memcheck_runs_every_phase_of_the_working_allocators(memcheck_broken, name):
    d = memcheck_broken[1]
    assert d is not None, "memcheck wrote no results"
    a = {x["name"]: x for x in d["allocators"]}[name]
    assert a["passed"] and a["failure"] is None, a["failure"]
    assert a["pow2"]["rows"] and a["random"]["rows"] and a["churn"]["ops"] > 0, a["churn"]


@pytest.mark.parametrize("name,kind,sig", [("crash", "crash", "SIGSEGV"),
                                           ("hang", "timeout", None)], ids=["crash", "hang"])
def test_memcheck_records_the_failure_and_keeps_the_rows_finished(memcheck_broken, name, kind,
                                                                    sig):
    d = memcheck_broken[1]
    assert d is not None, "memcheck wrote no results"
    a = {x["name"]: x for x in d["allocators"]}[name]
    f = a["failure"]
    assert not a["passed"] and f, a
    assert (f["phase"], f["kind"], f["signal"]) == ("pow2", kind, sig), f
    # The rows before the failing test are kept, nothing after it ran.
    test = int(re.search(r"test #(\d+)", f["message"]).group(1))
    assert test > 0 and len(a["pow2"]["rows"]) == test, (test, len(a["pow2"]["rows"]))
    assert a["random"] is None and a["churn"] is None


@pytest.fixture(scope="module")
def interrupted(rtmem, files, module_dir):
    """memcheck of the hanging plugin, sent SIGINT while its test process
    spins, writing over a previous result file: (the test processes that
    ran, its exit status, the processes left, the result file's text, the
    directory's files after)."""
    tmp = os.path.join(module_dir, "interrupted")
    os.mkdir(tmp)
    keep = os.path.join(tmp, "keep.json")
    with open(keep, "w") as f:
        f.write("previous\n")
    p = subprocess.Popen([rtmem, "memcheck", "--quick", "--no-rt", "--plugin",
                          files["hang_plugin"], "--kinds", "hang", "--phases", "pow2", "--json",
                          keep], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, env=dict(os.environ, **ENV))
    wait_children(p.pid, 1, timeout=10)
    time.sleep(0.5)  # into the hang
    spinning = children_of(p.pid)
    p.send_signal(signal.SIGINT)
    try:
        rc = p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = p.wait()
    left = [c for c in spinning if os.path.exists("/proc/%d" % c)] + leftovers()
    with open(keep) as f:
        text = f.read()
    return spinning, rc, left, text, os.listdir(tmp)


def test_sigint_kills_and_reaps_the_spinning_test_process(interrupted):
    spinning, _, left, _, _ = interrupted
    assert spinning, "no test process was running when SIGINT came"
    assert not left, "processes left: %s" % left


def test_sigint_memcheck_dies_of_the_signal(interrupted):
    assert interrupted[1] == -signal.SIGINT, "exit status %s" % interrupted[1]


def test_sigint_keeps_the_previous_result_file_and_leaves_no_temporary(interrupted):
    _, _, _, text, listing = interrupted
    assert text == "previous\n"
    assert not [n for n in listing if n.startswith(".keep")], listing


@pytest.fixture(scope="module")
def bench_broken(rtmem, files, module_dir):
    """bench with the crashing and the hanging plugin beside tlsf, glibc
    and the TLSF plugin: (its result, its document or None, the processes
    left after)."""
    path = os.path.join(module_dir, "b.json")
    r = run(rtmem, "bench", "--quick", "--no-rt", "--no-sweep", "--threads", "0", "--plugin",
            files["crash_plugin"],
            "--plugin", files["hang_plugin"], "--plugin", files["tlsf_plugin"], "--kinds",
            "tlsf,glibc,crash,hang,tlsf-plugin", "--timeout", TIMEOUT, "--json", path, env=ENV)
    return r, load_json(path), leftovers()


# A plugin that calls exit() in its alloc: with 0 the measuring process
# looked successful, with 3 it collided with an internal status. Its exit is
# its failure, named, whatever the status; the others are measured.
@pytest.mark.parametrize("status", ["0", "3", "1"])
def test_bench_fails_a_plugin_that_exits_whatever_its_status(rtmem, files, tmp_dir, status):
    path = os.path.join(tmp_dir, "e.json")
    r = run(rtmem, "bench", "--quick", "--no-rt", "--no-sweep", "--no-free-order", "--threads",
            "0", "--plugin", files["exit_plugin"], "--kinds", "tlsf,exit,glibc", "--json", path,
            env=dict(EXIT_ENV, RTMEM_TEST_PLUGIN_EXIT=status))
    assert r.returncode == 1, explain(r)
    assert re.search(r"^FAILED: exit: .*the measuring process exited \(status %s\) without its "
                     r"results" % status, r.stdout, re.M), explain(r)
    d = load_json(path)
    assert d is not None and d["passed"] is False, "no JSON, or passed"
    assert [a["name"] for a in d["allocators"]] == ["floor", "tlsf", "glibc"]
    assert all(a["alloc"]["count_total"] > 0 for a in d["allocators"])
    assert not leftovers()


@pytest.mark.parametrize("status", ["0", "3"])
def test_memcheck_fails_a_plugin_that_exits_whatever_its_status(rtmem, files, tmp_dir, status):
    path = os.path.join(tmp_dir, "e.json")
    r = run(rtmem, "memcheck", "--quick", "--no-rt", "--plugin", files["exit_plugin"], "--kinds",
            "tlsf,exit", "--json", path, env=dict(EXIT_ENV, RTMEM_TEST_PLUGIN_EXIT=status))
    assert r.returncode == 1, explain(r)
    assert "exited (status %s) without its results" % status in r.stdout + r.stderr, explain(r)
    d = load_json(path)
    assert d is not None and d["passed"] is False
    assert not leftovers()


# wcet runs each plugin case in a process of its own under a watchdog: a
# plugin that crashes, hangs, exits or forks fails its cases, named, and
# the run goes on, writes its JSON, and leaves no process behind.
@pytest.mark.parametrize("plugin,env,why", [
    ("crash_plugin", {}, "crashed: killed by SIGSEGV"),
    ("exit_plugin", {"RTMEM_TEST_PLUGIN_EXIT": "hang"}, "hung: not done in %s s (--timeout)"
     % TIMEOUT),
    ("exit_plugin", {"RTMEM_TEST_PLUGIN_EXIT": "0"}, "exited (status 0) without its results"),
    ("exit_plugin", {"RTMEM_TEST_PLUGIN_EXIT": "fork"}, None),
], ids=["crash", "hang", "exit", "fork"])
def test_wcet_survives_a_plugin_that_crashes_hangs_exits_or_forks(rtmem, files, tmp_dir, plugin,
                                                                   env, why):
    path = os.path.join(tmp_dir, "w.json")
    r = run(rtmem, "wcet", "--quick", "--no-rt", "--count", "none", "--kinds", "tlsf",
            "--plugin", files[plugin], "--timeout", TIMEOUT, "--json", path,
            env=dict(EXIT_ENV, **env))
    d = load_json(path)
    assert d is not None, explain(r)
    if why:
        assert r.returncode == 1 and why in r.stdout, explain(r)
        assert d["passed"] is False
    else:
        assert r.returncode in (0, 1), explain(r)
    assert any(s["kind"] == "tlsf" and s["passed"] for s in d["scenarios"]), "tlsf not measured"
    time.sleep(0.2)
    assert not leftovers(), "processes left: %s" % leftovers()


# A plugin's constructors run first in a trial load in a child: one that
# exits refuses the plugin (bad usage, said), never ends the tool with 0;
# what one prints goes to standard error, never into the report.
@pytest.mark.parametrize("tool", ["bench", "memcheck", "wcet"])
def test_a_plugin_whose_constructor_exits_is_refused(rtmem, files, tool, tmp_dir):
    r = run(rtmem, tool, "--quick", "--no-rt", "--plugin", files["exit_plugin"],
            env=dict(EXIT_ENV, RTMEM_TEST_PLUGIN_CTOR="exit"))
    assert r.returncode == 2, explain(r)
    assert "loading it ended the process (exit status 0)" in r.stderr, explain(r)
    assert not leftovers()


def test_what_a_plugins_constructor_prints_goes_to_stderr(rtmem, files, tmp_dir):
    r = run(rtmem, "bench", "--quick", "--no-rt", "--no-sweep", "--no-free-order", "--threads",
            "0", "--plugin", files["exit_plugin"], "--kinds", "tlsf,exit",
            env=dict(ENV, RTMEM_TEST_PLUGIN_CTOR="print"))
    assert "PLUGIN CONSTRUCTOR SAYS HELLO" not in r.stdout, explain(r)
    assert "PLUGIN CONSTRUCTOR SAYS HELLO" in r.stderr, explain(r)
    assert not leftovers()


# A plugin's code runs in the tools' children only: the tool's own process
# (which writes the report) never loads it, and what the plugin prints
# while it is measured goes to standard error, never into the report.
PLUGIN_RUNS = {
    "bench": ["--no-sweep", "--no-free-order", "--threads", "0", "--kinds", "tlsf,exit"],
    "memcheck": ["--kinds", "tlsf,exit"],
    "wcet": ["--count", "none", "--kinds", "tlsf"],
}


@pytest.mark.parametrize("tool", sorted(PLUGIN_RUNS))
def test_a_plugin_runs_in_children_only_and_prints_to_stderr(rtmem, files, tool, tmp_dir):
    pids = os.path.join(tmp_dir, "pids")
    env = dict(os.environ, **ENV, RTMEM_TEST_PLUGIN_EXIT="never", RTMEM_TEST_PLUGIN_PRINT="1",
               RTMEM_TEST_PLUGIN_PIDS=pids)
    p = subprocess.Popen([str(rtmem), tool, "--quick", "--no-rt", "--plugin", files["exit_plugin"]]
                         + PLUGIN_RUNS[tool], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    out, err = p.communicate(timeout=600)
    r = subprocess.CompletedProcess(p.args, p.returncode, out, err)
    assert r.returncode == 0, explain(r)
    with open(pids) as f:
        loaded_in = [int(x) for x in f.read().split()]
    # the trial load and at least one measuring child; never the tool
    assert len(loaded_in) >= 2 and p.pid not in loaded_in, (p.pid, loaded_in)
    assert "PLUGIN CREATE SAYS HELLO" not in r.stdout, explain(r)
    assert "PLUGIN CREATE SAYS HELLO" in r.stderr, explain(r)
    assert re.search(r"^\s*exit\b", r.stdout, re.M), "the plugin was not measured:\n" + r.stdout
    assert not leftovers()


# replay runs each plugin in a process of its own under a watchdog: a
# plugin that crashes, hangs or exits fails its own line (FAILED, named,
# `failed` in the JSON, exit status 1), one that forks is replayed; tlsf's
# figures stand, the JSON is written, and no process is left. The
# watchdog's --timeout is short for the plugins that hang, and long for the
# others (a busy machine may take more than a second to load one). The trace: eight blocks of 2 KiB made, then freed, so
# that the search's first heap (twice the peak) is one the plugins
# misbehave in, and the frees are the hanging plugin's.
@pytest.mark.parametrize("plugin,env,why", [
    ("crash_plugin", {}, "FAILED: crashed: killed by SIGSEGV"),
    ("exit_plugin", {"RTMEM_TEST_PLUGIN_EXIT": "hang"},
     "FAILED: hung: no progress for %s s (--timeout)" % TIMEOUT),
    ("hang_plugin", {}, "FAILED: hung: no progress for %s s (--timeout)" % TIMEOUT),
    ("exit_plugin", {"RTMEM_TEST_PLUGIN_EXIT": "0"},
     "FAILED: its process exited (status 0) without its figures"),
    ("exit_plugin", {"RTMEM_TEST_PLUGIN_EXIT": "fork"}, None),
], ids=["crash", "hang-alloc", "hang-free", "exit", "fork"])
def test_replay_survives_a_plugin_that_crashes_hangs_exits_or_forks(rtmem, files, tmp_dir, plugin,
                                                                     env, why):
    trace = os.path.join(tmp_dir, "blocks.trace")
    write_blocks_trace(trace)
    name = os.path.basename(files[plugin])[3:-len("_plugin.so")]
    path = os.path.join(tmp_dir, "r.json")
    hangs = why and "hung" in why
    r = run(rtmem, "replay", "--quick", "--no-rt", "--no-count", "--kinds", "tlsf," + name,
            "--plugin", files[plugin], "--timeout", TIMEOUT if hangs else "120", "--json", path,
            trace, env=dict(EXIT_ENV, **env))
    d = load_json(path)
    assert d is not None, explain(r)
    x = {a["name"]: a for a in d["allocators"]}
    assert x["tlsf"]["replayed"] and x["tlsf"]["fits"], x["tlsf"]
    if why:
        assert r.returncode == 1 and d["passed"] is False, explain(r)
        assert re.search(r"^  %s +%s" % (name, re.escape(why)), r.stdout, re.M), explain(r)
        assert not x[name]["replayed"] and x[name]["failed"], x[name]
        assert x[name]["origin"] == "plugin" and not x["tlsf"]["failed"], x[name]
    else:  # it forks and goes on: replayed, and its waiting children gone
        assert r.returncode == 0 and x[name]["replayed"] and not x[name]["failed"], explain(r)
    time.sleep(0.2)
    assert not leftovers(), "processes left: %s" % leftovers()


def write_blocks_trace(path):
    """Eight 2 KiB blocks made, then freed (one thread)."""
    events = [(1, i, 1000 * (i + 1), 2048, 0x100000 + 0x1000 * i) for i in range(8)]
    events += [(5, 8 + i, 1000 * (9 + i), 0x100000 + 0x1000 * i) for i in range(8)]
    write_trace(path, {7: events})


def test_replay_runs_a_plugin_in_children_only_and_prints_to_stderr(rtmem, files, tmp_dir):
    """The plugin's code runs in the trial load and the replay's child,
    never in the tool; what it prints goes to standard error."""
    trace = os.path.join(tmp_dir, "blocks.trace")
    write_blocks_trace(trace)
    pids = os.path.join(tmp_dir, "pids")
    env = dict(os.environ, **ENV, RTMEM_TEST_PLUGIN_EXIT="never", RTMEM_TEST_PLUGIN_PRINT="1",
               RTMEM_TEST_PLUGIN_PIDS=pids)
    p = subprocess.Popen([str(rtmem), "replay", "--quick", "--no-rt", "--no-count", "--plugin",
                          files["exit_plugin"], "--kinds", "tlsf,exit", trace],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
    out, err = p.communicate(timeout=600)
    r = subprocess.CompletedProcess(p.args, p.returncode, out, err)
    assert r.returncode == 0, explain(r)
    with open(pids) as f:
        loaded_in = [int(x) for x in f.read().split()]
    assert len(loaded_in) == 2 and p.pid not in loaded_in, (p.pid, loaded_in)
    assert "PLUGIN CREATE SAYS HELLO" not in r.stdout, explain(r)
    assert "PLUGIN CREATE SAYS HELLO" in r.stderr, explain(r)
    assert re.search(r"^  exit +[0-9.]+ KiB", r.stdout, re.M), explain(r)
    assert not leftovers()


def test_bench_with_broken_plugins_exits_1_and_leaves_no_process(bench_broken):
    r, _, left = bench_broken
    assert r.returncode == 1, explain(r)
    assert not left, "processes left: %s" % left


def test_bench_names_the_crash_and_the_hang(bench_broken):
    r = bench_broken[0]
    assert re.search(r"^FAILED: crash: main phase, .*: crashed: killed by SIGSEGV "
                     r"\(Segmentation fault\)", r.stdout, re.M), explain(r)
    assert re.search(r"^FAILED: hang: main phase, .*: hung: no progress for %s s" % TIMEOUT,
                     r.stdout, re.M), explain(r)


@pytest.mark.parametrize("name", ["crash", "hang"])
def test_bench_gives_each_failure_a_replay_command(bench_broken, name):
    r = bench_broken[0]
    assert re.search(r"^  replay: rtmem bench --plugin [^ ]*%s_plugin.so --kinds %s "
                     r".*--timeout %s$" % (name, name, TIMEOUT), r.stdout, re.M), explain(r)


def test_bench_measures_the_others_a_working_plugin_included(bench_broken):
    d = bench_broken[1]
    assert d is not None, "bench wrote no results"
    names = [a["name"] for a in d["allocators"]]
    assert names == ["floor", "tlsf", "glibc", "tlsf-plugin"]
    assert all(a["alloc"]["count_total"] > 0 for a in d["allocators"]), d["allocators"]
    assert [x["name"] for x in d["ratios_vs_glibc"]] == ["tlsf", "tlsf-plugin"]


def test_bench_records_the_failures_not_passed(bench_broken):
    d = bench_broken[1]
    assert d is not None, "bench wrote no results"
    failed = {f["name"]: f for f in d["failed_allocators"]}
    assert failed.get("crash", {}).get("kind") == "crash", failed
    assert failed["crash"]["signal"] == "SIGSEGV", failed
    assert failed.get("hang", {}).get("kind") == "timeout", failed
    assert failed["hang"]["api"] == "plugin", failed
    assert d["passed"] is False


@pytest.mark.parametrize("tool", ["memcheck", "bench"])
def test_a_replay_command_run_through_a_shell_reproduces_the_crash(rtmem, files, tmp_dir, tool):
    # The plugin in a directory whose name a shell would split.
    spaced = os.path.join(tmp_dir, "a dir")
    os.mkdir(spaced)
    plugin = os.path.join(spaced, "libcrash_plugin.so")
    shutil.copy(files["crash_plugin"], plugin)
    r = run(rtmem, tool, "--quick", "--no-rt", "--plugin", plugin, "--kinds", "crash,tlsf",
            *(["--phases", "pow2"] if tool == "memcheck" else ["--no-sweep", "--threads", "0"]),
            env=ENV)
    m = re.search(r"^  replay: (rtmem .*)$", r.stdout, re.M)
    assert r.returncode == 1 and m, explain(r)
    words = shlex.split(m.group(1))
    assert plugin in words and words[words.index("--kinds") + 1] == "crash", words
    again = run(rtmem, *words[1:], env=ENV)
    assert again.returncode == 1, explain(again)
    assert "FAILED: crash: " in again.stdout and "killed by SIGSEGV" in again.stdout, \
        explain(again)


@pytest.fixture(scope="module")
def lying(rtmem, files, module_dir):
    """memcheck of tlsf and glibc, glibc's malloc_usable_size lying
    (LD_PRELOAD): (its result, its document or None)."""
    if "fault_lib" not in files:
        pytest.skip("no fault library (a sanitizer build: its runtime must come first)")
    path = os.path.join(module_dir, "f.json")
    r = run(rtmem, "memcheck", "--quick", "--no-rt", "--kinds", "tlsf,glibc", "--json", path,
            env={"LD_PRELOAD": files["fault_lib"]})
    return r, load_json(path)


def test_a_lying_malloc_usable_size_fails_memcheck_named_with_a_replay(lying):
    r = lying[0]
    assert r.returncode == 1, explain(r)
    assert re.search(r"^FAILED: glibc: pow2 phase, test #0: .*usable size 0 of block #0 is "
                     r"below its request of 16 B", r.stdout, re.M), explain(r)
    assert "replay: rtmem memcheck --kinds glibc --phases pow2 --seed " in r.stdout, explain(r)


def test_a_lying_malloc_usable_size_is_recorded_and_tlsf_still_runs(lying):
    d = lying[1]
    assert d is not None, "no results written for the failed run"
    a = {x["name"]: x for x in d["allocators"]}
    assert d["passed"] is False
    assert a["tlsf"]["passed"] and a["tlsf"]["churn"] is not None, a["tlsf"]["failure"]
    assert not a["glibc"]["passed"] and a["glibc"]["failure"]["phase"] == "pow2", \
        a["glibc"]["failure"]
    assert a["glibc"]["random"] is None
