"""rtmem wcet: a short run's JSON has the envelope and every scenario of
every kind, built, checked and timed (the figures agree with one another:
min <= p50 <= p99 <= max, one sample per repetition); the page heaps'
trees are within their bounds, as deep as the scenarios say; each rtmem
scenario whose state is thrown away (the test hook RTMEM_WCET_SPOIL) fails
its check, so that no change to an allocator can silently turn a scenario
into an easy one; where valgrind is installed (and the build is not
sanitized), every scenario is counted, the counts agree with what the
scenarios do (a 4 KiB copy touches at least 128 lines, the page map's
first use writes its entries), and every rtmem path's instructions stay under the
ceilings docs/wcet.md states (x86-64, the default hardening); where the
kernel offers no CPU counters, the run says why (where it does, their
counts agree with valgrind's); glibc's checks fail where glibc cannot take
the path (GLIBC_TUNABLES); --plugin probes a plugin (the example TLSF
plugin and a bump allocator) and refuses a bad one; a valgrind that fails or writes nothing leaves
the run measured, not counted, saying why, and nothing behind; --count
valgrind without valgrind fails and --count auto says why it did not
count; a run whose scenario fails writes that into its result file; a run
that is interrupted (during the timed run or under valgrind) leaves an
existing result file as it was, and nothing behind (no temporary file or
directory, no valgrind); bad usage exits 2.

No assertion depends on how fast the machine is, but for the time the
interrupted runs are given to reach the phase they are interrupted in
(two minutes).

The build gives (tests/tools/CMakeLists.txt): --file tlsf_plugin= (the
example TLSF plugin), --file bump_plugin= (a bump allocator), and a
--bad-plugin for each plugin wcet must refuse; the ceilings are read
from the source tree's docs/wcet.md.
"""
import os
import re
import select
import shutil
import signal
import stat
import subprocess
import time

import pytest

from rtmemtest import (EMULATED, KINDS, MACHINE, assert_envelope, assert_kept, children_of, explain,
                       load_json, orphans, previous_result, run)

SANITIZED = bool(os.environ.get("RTMEM_SANITIZED"))
# Under qemu-user (a cross build's tests) valgrind, the host's, cannot run
# rtmem: nothing is counted, and the run says why.
SCENARIOS = {
    "tlsf": ["alloc-search-split", "alloc-fallback", "free-merge-both", "free-merge-last-pool",
             "aligned-largest-gap", "realloc-move"],
    "heapmem": ["run-alloc-largest", "run-free-merge-both", "bucket-page-take",
                "bucket-page-give", "bucket-page-give-last-pool", "run-alloc-first-use"],
    "halffit": ["alloc-search-split", "free-merge-both", "free-merge-last-pool",
                "aligned-largest-gap", "realloc-move"],
    "xvheap": ["alloc-page-take", "free-page-give"],
    "zsheap": ["alloc-zspage-make", "free-zspage-give"],
    "glibc": ["malloc-consolidate", "free-trim", "malloc-mmap", "free-munmap"],
}
SCENARIOS["xnheap"] = SCENARIOS["heapmem"]
RTMEM_KINDS = KINDS
# Every scenario of a default run, as "kind id".
ALL = [(k, s) for k in ("tlsf", "heapmem", "glibc", "xnheap", "halffit", "xvheap", "zsheap")
       for s in SCENARIOS[k]] + \
    [("noop", "noop")]
ALL_IDS = ["%s %s" % ks for ks in ALL]
# Under an emulator each repetition takes seconds, and what the cross
# builds check is the code on their targets, not the statistics of 20.
REPS = 4 if EMULATED else 20


# This test adopts the processes a run leaves (orphans() finds them).
pytestmark = pytest.mark.usefixtures("subreaper")


@pytest.fixture(scope="module")
def full(rtmem, module_dir):
    """A default run of REPS repetitions: (its document, its arguments)."""
    path = os.path.join(module_dir, "wcet.json")
    args = ["--reps", str(REPS), "--json", path]
    r = run(rtmem, "wcet", *args)
    assert r.returncode == 0, explain(r)
    d = load_json(path)
    assert d is not None, "a default run wrote no JSON"
    return d, args


@pytest.fixture(scope="module")
def scenarios(full):
    """{(kind, id): scenario} of the default run."""
    return {(s["kind"], s["id"]): s for s in full[0]["scenarios"]}


def scenario(full, scenarios, kind, sid):
    """The scenario of the default run; skipped where glibc is left out,
    or where the scenario failed (it has no figures to check)."""
    if kind == "glibc" and full[0].get("glibc_left_out"):
        pytest.skip("glibc left out: %s" % full[0]["glibc_left_out"])
    s = scenarios[(kind, sid)]
    if not (s["passed"] and s["why"] is None):
        pytest.skip("the scenario failed (test_every_scenario_is_built_and_checked)")
    return s


def test_a_default_run_writes_the_envelope(full):
    d, args = full
    assert_envelope(d, "wcet", "rtmem-wcet/1", args)


def test_the_cold_flush_says_its_method_and_the_walk_it_made(full):
    f = full[0]["cold_flush"]
    if f["method"] == "eviction buffer walk":
        # Under an emulator the walk is kept to 4 MiB (the host's cache is
        # what the program sees); on a board, twice its last-level cache.
        assert 0 < f["walk_bytes"] <= (4 << 20 if EMULATED else 1 << 40), f
    else:
        assert f["method"] in ("clflushopt", "clflush", "dc civac") and f["walk_bytes"] == 0, f
        assert f["line_bytes"] > 0, f


def test_a_default_run_passes_every_scenario(full):
    d = full[0]
    assert d["passed"] and d["failures"] == 0, d["failures"]


def test_a_default_run_has_every_kinds_scenarios_in_order(full):
    d = full[0]
    got = {}
    for s in d["scenarios"]:
        got.setdefault(s["kind"], []).append(s["id"])
    want = dict(SCENARIOS, noop=["noop"])
    if d.get("glibc_left_out"):
        assert SANITIZED, "glibc left out, not by a sanitizer: %s" % d["glibc_left_out"]
        del want["glibc"]
    assert got == want


@pytest.mark.parametrize("kind,sid", ALL, ids=ALL_IDS)
def test_every_scenario_is_built_and_checked(full, scenarios, kind, sid):
    if kind == "glibc" and full[0].get("glibc_left_out"):
        pytest.skip("glibc left out: %s" % full[0]["glibc_left_out"])
    s = scenarios[(kind, sid)]
    assert s["passed"] and s["why"] is None, s


def assert_summary(s, count=REPS):
    assert s["count"] == count, "not one sample per repetition: %s" % s
    assert 0 <= s["min_ns"] <= s["p50_ns"] <= s["p99_ns"] <= s["max_ns"], s


@pytest.mark.parametrize("kind,sid", ALL, ids=ALL_IDS)
def test_every_scenario_has_a_sample_per_repetition_min_p50_p99_max_in_order(full, scenarios,
                                                                             kind, sid):
    s = scenario(full, scenarios, kind, sid)
    if kind != "glibc":
        assert_summary(s["warm"])
        assert_summary(s["cold"])
        return
    # Repetitions glibc's history put off the path are left out (and
    # counted); each half is mostly on the path.
    off = s["reps_off_path"]
    assert off <= REPS and s["warm"]["count"] + s["cold"]["count"] == 2 * REPS - off, s
    assert (off == 0) == (s["off_path_why"] is None), s
    assert_summary(s["warm"], s["warm"]["count"])
    assert_summary(s["cold"], s["cold"]["count"])
    assert s["warm"]["count"] >= REPS // 4 and s["cold"]["count"] >= REPS // 4, s


@pytest.mark.parametrize("kind,sid", ALL[:-1], ids=ALL_IDS[:-1])
def test_every_scenario_says_what_it_found(full, scenarios, kind, sid):
    s = scenario(full, scenarios, kind, sid)
    assert len(s["facts"]) > 20, s["facts"]


@pytest.mark.parametrize("kind,sid", [ks for ks in ALL if ks[0] in RTMEM_KINDS],
                         ids=[i for i in ALL_IDS if i.split()[0] in RTMEM_KINDS])
def test_every_rtmem_scenario_gives_its_images_size(full, scenarios, kind, sid):
    s = scenario(full, scenarios, kind, sid)
    assert s.get("image_bytes", 0) >= 256 * 1024, s


@pytest.mark.parametrize("kind", ["heapmem", "xnheap"])
def test_page_heaps_trees_are_combs_within_their_bounds(scenarios, kind):
    for sid in SCENARIOS[kind]:
        st = scenarios[(kind, sid)]["state"]
        if not scenarios[(kind, sid)]["passed"] or "free_runs" not in st:
            continue  # (a failed scenario: test_every_scenario_is_built_and_checked)
        assert st["addr_tree_height"] <= st["height_bound"], (sid, st)
        assert st["free_runs"] > (80 if "pools" in st else 200), \
            "%s: not a comb of free runs: %s" % (sid, st)
        if "prev_addr_depth" in st:
            # The run merged with is among the deepest.
            assert st["addr_tree_height"] - 1 <= st["prev_addr_depth"] \
                <= st["addr_tree_height"], (sid, st)


@pytest.mark.parametrize("kind", ["heapmem", "xnheap"])
def test_a_page_heaps_first_use_writes_the_page_map(scenarios, kind):
    first = scenarios.get((kind, "run-alloc-first-use"))
    assert first and first["state"]["entries_written"] > 400, first


def test_a_default_run_has_a_worst_entry_per_kind(full):
    d = full[0]
    kinds = [k for k in SCENARIOS if not (k == "glibc" and d.get("glibc_left_out"))]
    assert sorted(w["kind"] for w in d["worst"]) == sorted(kinds), d["worst"]


# ---- the counts (valgrind), the CPU's counters ----------------------------------------

def test_the_run_counts_with_valgrind_or_says_why_not(full):
    cnt = full[0]["counting"]
    if SANITIZED:
        # ASan and TSan builds refuse to run under valgrind (and say so);
        # the counts of any sanitized build are the sanitizer's as much as
        # the heap's.
        pytest.skip("counts not checked (sanitized build): %s" % cnt["why_not"])
    if EMULATED:
        assert not cnt["counted"] and "under an emulator" in cnt["why_not"], cnt
    elif not shutil.which("valgrind"):
        assert not cnt["counted"] and "valgrind" in cnt["why_not"], cnt
    else:
        assert cnt["counted"] and cnt["why_not"] is None, cnt


@pytest.fixture(scope="module")
def counts(full):
    """{(kind, id): valgrind's counts} of the default run, where valgrind
    counts them."""
    if SANITIZED:
        pytest.skip("counts not checked (sanitized build)")
    if EMULATED:
        pytest.skip("the counts and the ceilings: under %s" % EMULATED)
    if not shutil.which("valgrind"):
        pytest.skip("the counts and the ceilings: valgrind is not installed")
    return {(s["kind"], s["id"]): s["counted"] for s in full[0]["scenarios"]}


def test_the_noop_call_is_a_handful_of_instructions(counts):
    noop = counts[("noop", "noop")]
    assert noop and noop["instructions"] < 50 and noop["runs"] == 3, noop


def test_the_harness_lines_are_warm_before_each_counted_call(counts):
    noop = counts[("noop", "noop")]
    assert noop and noop["data_lines"] <= 2, noop


@pytest.mark.parametrize("kind,sid", ALL, ids=ALL_IDS)
def test_every_scenario_is_counted_its_lines_adding_up(counts, kind, sid):
    ct = counts[(kind, sid)]
    assert ct is not None, "not counted"
    assert ct["instructions"] >= ct["instructions_min"] > 0 or kind == "noop", ct
    assert ct["data_lines"] == ct["data_lines_read_first"] + ct["data_lines_written_first"], ct
    if kind in RTMEM_KINDS:
        # The restored state runs the same instructions each time.
        assert ct["instructions"] == ct["instructions_min"], ct


def test_a_4_kib_copy_touches_at_least_128_lines(counts):
    move = counts[("tlsf", "realloc-move")]
    assert move and move["data_lines"] >= 128, move  # 64 read, 64 written


@pytest.mark.parametrize("kind", ["heapmem", "xnheap"])
def test_the_first_use_writes_every_line_of_the_page_map_it_initialises(counts, scenarios, kind):
    first = counts[(kind, "run-alloc-first-use")]
    entries = scenarios[(kind, "run-alloc-first-use")]["state"]["entries_written"]
    entry_bytes = 12  # a page-map entry (rtmem/pageheap_api.h)
    assert first and first["data_lines_written_first"] >= entries * entry_bytes // 64, \
        (first, entries)


def test_glibcs_consolidation_runs_far_more_instructions_than_tlsfs_alloc(counts):
    cons = counts[("glibc", "malloc-consolidate")]
    tlsf = counts[("tlsf", "alloc-search-split")]["instructions"]
    assert cons and cons["instructions"] > 10 * tlsf, (cons, tlsf)


def ceilings(source_dir):
    """{(kind, scenario): instructions at most}, from docs/wcet.md's table."""
    if MACHINE != "x86_64":
        pytest.skip("the ceilings are for x86-64; not checked on %s" % MACHINE)
    with open(os.path.join(source_dir, "docs", "wcet.md")) as f:
        text = f.read()
    block = text.split("<!-- ceilings -->")[1].split("<!-- /ceilings -->")[0]
    return {(m.group(1), m.group(2)): int(m.group(3))
            for m in re.finditer(r"^\| ([a-z]+) \| `([a-z-]+)` \| (\d+) \|", block, re.M)}


RTMEM_SCENARIOS = [(k, s) for k in RTMEM_KINDS for s in SCENARIOS[k]]


def test_docs_wcet_md_has_a_ceiling_per_rtmem_scenario(counts, source_dir):
    assert sorted(ceilings(source_dir)) == sorted(RTMEM_SCENARIOS)


@pytest.mark.parametrize("kind,sid", RTMEM_SCENARIOS,
                         ids=["%s %s" % ks for ks in RTMEM_SCENARIOS])
def test_every_rtmem_path_stays_under_its_ceiling_in_docs_wcet_md(counts, source_dir, kind, sid):
    limit = ceilings(source_dir).get((kind, sid))
    ct = counts.get((kind, sid))
    assert limit is not None, "docs/wcet.md has no ceiling for %s %s" % (kind, sid)
    assert ct and ct["instructions"] <= limit, "at most %d instructions: %s" % (limit, ct)


def pmu_listed():
    return any(os.path.exists("/sys/bus/event_source/devices/" + n)
               for n in ("cpu", "cpu_core", "armv8_pmuv3", "armv8_pmuv3_0"))


def test_without_cpu_counters_the_run_says_why_and_has_none(full):
    d = full[0]
    cnt = d["counting"]
    if cnt["cpu_counters"]:
        pytest.skip("the CPU counters opened here")
    assert cnt["cpu_counters_why_not"] and "perf_event_open" in cnt["cpu_counters_why_not"], cnt
    assert all(s["cpu_counted"] is None for s in d["scenarios"]), d["scenarios"][0]


def test_cpu_counters_count_every_scenario_as_valgrind_does(full):
    d = full[0]
    cnt = d["counting"]
    if not cnt["cpu_counters"]:
        pytest.skip("this machine lists a CPU PMU, and the counters did not open: %s"
                    % cnt["cpu_counters_why_not"] if pmu_listed() else
                    "no CPU PMU here: the CPU counters' figures not checked")
    for s in d["scenarios"]:
        hw, vg = s["cpu_counted"], s["counted"]
        assert hw is not None, "%s %s: no CPU counters" % (s["kind"], s["id"])
        # libc's string routines differ: valgrind counts each iteration of
        # a rep stos or movs, and glibc picks its memcpy by the CPU it sees.
        if s["id"] in ("run-alloc-first-use", "realloc-move"):
            continue
        if hw and vg and s["kind"] in RTMEM_KINDS:
            assert abs(hw["instructions"] - vg["instructions"]) \
                <= 0.1 * vg["instructions"] + 20, (s["kind"], s["id"], hw, vg)


# ---- checks that must fail ------------------------------------------------------------

SPOILED = [(k, s) for k in RTMEM_KINDS for s in SCENARIOS[k]]


@pytest.mark.parametrize("kind,sid", SPOILED, ids=["%s %s" % ks for ks in SPOILED])
def test_a_spoiled_scenario_fails_its_check_and_the_others_are_measured(rtmem, kind, sid):
    r = run(rtmem, "wcet", "--kinds", kind, "--reps", "2", "--count", "none",
            env={"RTMEM_WCET_SPOIL": sid})
    failed = [l for l in r.stdout.splitlines() if "FAILED:" in l and sid in l]
    assert r.returncode == 1 and len(failed) == 1, explain(r)
    others = [l for l in r.stdout.splitlines() if l.strip().endswith("measured")]
    assert len(others) == len(SCENARIOS[kind]), explain(r)


def test_a_failed_run_names_the_scenario_and_why_in_its_result_file(rtmem, tmp_dir):
    path = previous_result(os.path.join(tmp_dir, "failed.json"))
    r = run(rtmem, "wcet", "--kinds", "tlsf", "--reps", "2", "--count", "none", "--json", path,
            env={"RTMEM_WCET_SPOIL": "free-merge-both"})
    assert r.returncode == 1, explain(r)
    d = load_json(path)
    assert d and not d["passed"] and d["failures"] == 1, d
    bad = [s for s in d["scenarios"] if not s["passed"]]
    assert len(bad) == 1 and bad[0]["id"] == "free-merge-both" and bad[0]["why"], bad
    assert "warm" not in bad[0], bad[0]
    assert os.listdir(tmp_dir) == ["failed.json"], "a temporary file left"


TUNABLES = [("glibc.malloc.mxfast=0", {"malloc-consolidate", "free-trim"}),
            ("glibc.malloc.mmap_max=0", {"malloc-mmap", "free-munmap"})]


@pytest.mark.parametrize("tunable,failing", TUNABLES, ids=[t for t, _ in TUNABLES])
def test_glibcs_checks_fail_where_glibc_cannot_take_the_path(rtmem, tunable, failing):
    # No fast bins (mxfast=0) for the consolidations, no mmap (mmap_max=0)
    # for the mapped blocks.
    if SANITIZED:
        pytest.skip("glibc's checks not tried (a sanitizer's malloc)")
    r = run(rtmem, "wcet", "--kinds", "glibc", "--reps", "2", "--count", "none",
            env={"GLIBC_TUNABLES": tunable})
    failed = {l.split()[1] for l in r.stdout.splitlines()
              if l.startswith("  glibc") and "FAILED:" in l}
    assert r.returncode == 1, explain(r)
    assert failed == failing, explain(r)


# ---- plugins ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def probed(rtmem, files, module_dir):
    """The example TLSF plugin and a bump allocator probed beside tlsf: the
    run's document."""
    path = os.path.join(module_dir, "plugins.json")
    r = run(rtmem, "wcet", "--kinds", "tlsf", "--plugin", files["tlsf_plugin"], "--plugin",
            files["bump_plugin"], "--reps", "5", "--count", "none", "--json", path)
    d = load_json(path)
    assert r.returncode == 0 and d and d["passed"], explain(r)
    return d


@pytest.mark.parametrize("kind", ["tlsf-plugin", "bump"])
def test_a_plugin_gets_the_three_probes_built_checked_and_measured(probed, kind):
    got = [s for s in probed["scenarios"] if s["kind"] == kind]
    assert [s["id"] for s in got] == ["alloc-fail-fragmented", "alloc-last-hole",
                                      "free-merge-both"], got
    assert all(s["passed"] for s in got), got


@pytest.mark.parametrize("kind", ["tlsf-plugin", "bump"])
def test_a_plugins_probes_say_what_the_request_got(probed, kind):
    # TLSF merges the last 8 blocks and serves the request there; a bump
    # allocator reuses nothing.
    served = {s["id"]: s["state"].get("served") for s in probed["scenarios"]
              if s["kind"] == kind}
    assert served == {"alloc-fail-fragmented": 0,
                      "alloc-last-hole": 1 if kind == "tlsf-plugin" else 0,
                      "free-merge-both": None}


def test_the_plugins_are_kinds_after_the_others(probed):
    assert probed["params"]["kinds"] == ["tlsf", "tlsf-plugin", "bump"]


def unusable(rtmem, plugin):
    r = run(rtmem, "wcet", "--kinds", "tlsf", "--plugin", plugin, "--reps", "2")
    assert r.returncode == 2 and "--plugin" in r.stderr, explain(r)


def test_a_bad_plugin_is_bad_usage(rtmem, bad_plugin):
    unusable(rtmem, bad_plugin)


def test_a_missing_plugin_is_bad_usage(rtmem, files):
    unusable(rtmem, files["tlsf_plugin"] + "-missing")


def test_a_plugins_name_taken_twice_is_bad_usage(rtmem, files):
    r = run(rtmem, "wcet", "--kinds", "tlsf", "--plugin", files["tlsf_plugin"], "--plugin",
            files["tlsf_plugin"], "--reps", "2")
    assert r.returncode == 2, explain(r)


# ---- valgrind that fails, or is not there ---------------------------------------------

FAKE_VALGRIND = {
    "fails": 'echo "fake valgrind: cannot run" >&2; exit 1',
    "silent": "exit 0",
    # One that leaves a file in its $TMPDIR, as a real valgrind killed
    # between making and unlinking its own does.
    "litters": 'touch "$TMPDIR/valgrind_proc_$$_cmdline_x"; '
               'echo "fake valgrind: cannot run" >&2; exit 1',
}


@pytest.mark.parametrize("name", FAKE_VALGRIND)
def test_a_valgrind_that_fails_leaves_the_run_measured_saying_why_and_nothing_behind(
        rtmem, tmp_dir, name):
    bindir, work = os.path.join(tmp_dir, "bin"), os.path.join(tmp_dir, "tmp")
    os.mkdir(bindir)
    os.mkdir(work)
    fake = os.path.join(bindir, "valgrind")
    with open(fake, "w") as f:
        f.write('#!/bin/sh\n[ "$1" = --version ] && { echo valgrind-fake; exit 0; }\n%s\n'
                % FAKE_VALGRIND[name])
    os.chmod(fake, stat.S_IRWXU)
    path = os.path.join(tmp_dir, "fake.json")
    r = run(rtmem, "wcet", "--kinds", "tlsf", "--reps", "2", "--json", path,
            env={"PATH": bindir + ":/usr/bin:/bin", "TMPDIR": work})
    d = load_json(path)
    assert r.returncode == 0 and d and not d["counting"]["counted"], explain(r)
    why = d["counting"]["why_not"]
    want = "no counts" if name == "silent" else "cannot run"
    # An address or thread sanitizer's build never starts valgrind (and
    # says so); an UndefinedBehaviorSanitizer one does.
    assert why and (want in why or (SANITIZED and "sanitizer" in why)
                    or (EMULATED and "under an emulator" in why)), why
    assert os.listdir(work) == [], "left in TMPDIR: %s" % os.listdir(work)


def test_count_auto_without_valgrind_measures_and_says_why_not(rtmem, tmp_dir):
    path = os.path.join(tmp_dir, "nv.json")
    r = run(rtmem, "wcet", "--kinds", "tlsf", "--reps", "2", "--json", path,
            env={"PATH": "/nonexistent"})
    d = load_json(path)
    assert r.returncode == 0 and d and not d["counting"]["counted"], explain(r)
    assert "not installed" in d["counting"]["why_not"] or SANITIZED or EMULATED, d["counting"]


def test_count_valgrind_without_valgrind_fails_saying_why(rtmem):
    r = run(rtmem, "wcet", "--kinds", "tlsf", "--reps", "2", "--count", "valgrind",
            env={"PATH": "/nonexistent"})
    assert r.returncode == 1 and "nothing counted" in r.stderr, explain(r)


# ---- interrupted ---------------------------------------------------------------------

def interrupt(rtmem, work, path, name, marker, args):
    """Runs wcet ARGS --json path, and sends SIGINT once marker is in its
    output (and, in the counted run, valgrind started: the tool's child).
    A run that ends before the signal is sent (a loaded machine can keep
    this test from reading its output in time) proves nothing: tried again,
    a few times. Returns (was the marker seen, the exit status)."""
    env = dict(os.environ, TMPDIR=work)
    for _ in range(3):
        previous_result(path)
        p = subprocess.Popen([rtmem, "wcet"] + args + ["--json", path],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
        seen = False
        deadline = time.time() + 120
        while not seen and time.time() < deadline:
            ready, _, _ = select.select([p.stdout], [], [], deadline - time.time())
            line = p.stdout.readline() if ready else ""
            if not line:
                break
            seen = marker in line
        if name == "counted":
            end = time.time() + 30
            while not children_of(p.pid) and p.poll() is None and time.time() < end:
                time.sleep(0.02)
            seen = seen and bool(children_of(p.pid))
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=120)
        if p.returncode != 0:
            break
        print("the %s run ended before the signal; again" % name)
    return seen, p.returncode


INTERRUPTED = [("timed", "measured", ["--reps", "3000"]),
               # every kind: some seconds under valgrind, for the signal to land in
               ("counted", "counting under",
                ["--kinds", "tlsf,heapmem,xnheap,glibc", "--reps", "200"])]


@pytest.mark.parametrize("name,marker,args", INTERRUPTED, ids=[n for n, _, _ in INTERRUPTED])
def test_sigint_leaves_the_result_file_as_it_was_and_nothing_behind(rtmem, tmp_dir, name,
                                                                    marker, args):
    if name == "counted" and not (shutil.which("valgrind") and not SANITIZED and not EMULATED):
        pytest.skip("no counted run here (no valgrind, or a sanitized or emulated build)")
    work = os.path.join(tmp_dir, "work")
    os.mkdir(work)
    path = os.path.join(work, "r.json")
    seen, rc = interrupt(rtmem, work, path, name, marker, args)
    assert seen and rc == -signal.SIGINT, "'%s' seen: %s; exit status %s" % (marker, seen, rc)
    assert_kept(path, "the result file")
    assert os.listdir(work) == ["r.json"], "a temporary file or directory left"
    time.sleep(0.5)
    left = orphans()
    assert left == [], "processes of the run left (valgrind not reaped): %s" % left


USAGE = [
    (["--kinds", "nope"], "an unknown kind"),
    (["--kinds", "tlsf,tlsf"], "a kind named twice"),
    (["--kinds", ""], "an empty kind"),
    (["--page-image", "65537"], "a page image that is not a multiple of 4K"),
    (["--page-image", "128K"], "a page image below 256K"),
    (["--reps", "0"], "no repetition"),
    (["--no-rt", "--prio", "10"], "--prio with --no-rt"),
    (["--count", "maybe"], "an unknown --count"),
    (["extra"], "an operand"),
]


@pytest.mark.parametrize("args", [a for a, _ in USAGE], ids=[w for _, w in USAGE])
def test_bad_usage_exits_2_naming_the_tool(rtmem, args):
    r = run(rtmem, "wcet", *args)
    assert r.returncode == 2 and "rtmem wcet" in r.stderr, explain(r)
