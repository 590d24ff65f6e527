"""rtmem memcheck: a quick run passes every functional check and writes rows
for every rtmem kind, glibc, every peer that is installed and the example
plugin, in every phase; a plugin without stats runs with the checks it
cannot have turned off; smokey's layout is exact; glibc is measured warm
(page faults, not times); bad usage exits 2 with the message.

The build gives (tests/tools/CMakeLists.txt): --file tlsf_plugin=
(examples/plugin/tlsf_plugin.c built), --file bump_plugin= (a plugin
without stats or check), --file no_symbol= (a shared object without the
plugin symbol), and a --bad-plugin for each plugin memcheck must refuse.
"""
import os
import re

import pytest

from rtmemtest import (BITS, EMULATED, KINDS, PEERS, have_peer, assert_envelope, assert_glibc_rt_skipped_only_if_sanitized,
                       explain, glibc_rt, have_lib, load_json, run)

SANITIZED = os.environ.get("RTMEM_SANITIZED") == "1"


def rows(a, phase, cols):
    return [dict(zip(cols, r)) for r in a[phase]["rows"]]


def names(d):
    return [a["name"] for a in d["allocators"]]


def memcheck_json(rtmem, tmp_dir, *args, env=None):
    """`rtmem memcheck --quick --no-rt ARGS --json PATH`: (its result, its
    document or None)."""
    path = os.path.join(tmp_dir, "m.json")
    r = run(rtmem, "memcheck", "--quick", "--no-rt", *args, "--json", path, env=env)
    return r, load_json(path)


@pytest.fixture(scope="module")
def full(rtmem, files, module_dir):
    """One `memcheck --quick` run of the defaults and the TLSF plugin:
    (its result, its document, its arguments)."""
    path = os.path.join(module_dir, "m.json")
    args = ["--quick", "--no-rt", "--plugin", files["tlsf_plugin"], "--json", path]
    r = run(rtmem, "memcheck", *args)
    assert r.returncode == 0, explain(r)
    d = load_json(path)
    assert d is not None, "memcheck --quick wrote no JSON at %s" % path
    return r, d, args


@pytest.fixture(scope="module")
def by_name(full):
    return {a["name"]: a for a in full[1]["allocators"]}


def test_quick_run_writes_the_envelope(full):
    _, d, args = full
    assert_envelope(d, "memcheck", "rtmem-memcheck/2", args)


def test_quick_run_passes_with_its_seed(full):
    _, d, _ = full
    assert d["passed"] is True and d["seed"] == 20240601, (d["passed"], d["seed"])


def test_rows_are_every_kind_glibc_the_peers_that_loaded_and_the_plugin(rtmem, full):
    _, d, _ = full
    skipped = [s["name"] for s in d["skipped"]]
    loaded = [p for p in PEERS if p not in skipped]
    kinds = run(rtmem, "kinds").stdout.split()
    assert names(d) == kinds + ["glibc"] + glibc_rt(rtmem) + loaded + ["tlsf-plugin"], d["skipped"]
    assert_glibc_rt_skipped_only_if_sanitized(rtmem, d)


def test_glibc_rt_is_tuned_in_its_own_processes_and_its_reserve_held(rtmem, full, by_name):
    if not glibc_rt(rtmem):
        pytest.skip("a sanitizer's malloc: glibc-rt is skipped (checked above)")
    r, d, _ = full
    g = by_name["glibc-rt"]
    assert g["origin"] == "glibc" and g["sort"] == "process" and g["passed"], g
    t = g["glibc_rt"]
    assert t["applied"] and t["why"] is None, t
    assert "M_MMAP_MAX 0" in t["settings"] and "M_TRIM_THRESHOLD -1" in t["settings"], t
    # Room for the largest heap's fill of 16-byte blocks, each with its header.
    h = max(d["params"][k] for k in ("seq_heap_size", "pattern_heap_size", "churn_heap_size"))
    assert t["reserve_bytes"] >= h + h // 16 * 16, (t, h)
    assert t["heap_bytes"] >= t["reserve_bytes"], t
    assert t["grown_bytes"] == 0, t  # the reserve held in every test process
    assert "glibc-rt: " in r.stdout and "it held: the heap never grew" in r.stdout, r.stdout[-600:]
    # glibc's defaults stay glibc's: no settings of glibc-rt's reach it.
    assert by_name["glibc"]["glibc_rt"] is None


def test_peers_and_the_plugin_have_their_origin(full, by_name):
    skipped = [s["name"] for s in full[1]["skipped"]]
    loaded = [p for p in PEERS if p not in skipped]
    assert {p: by_name.get(p, {}).get("origin") for p in loaded} == {p: "peer" for p in loaded}
    assert by_name["tlsf-plugin"]["origin"] == "plugin"


@pytest.mark.parametrize("phase", ["pow2", "random"])
def test_the_tlsf_plugin_fills_as_the_tlsf_kind(full, by_name, phase):
    # The plugin is TLSF: through the ABI it must fill exactly as the kind does.
    cols = full[1]["row_columns"]
    kind, plugin = ([r["nrblocks"] for r in rows(by_name[n], phase, cols)]
                    for n in ("tlsf", "tlsf-plugin"))
    assert kind == plugin


def test_every_allocator_passes_with_every_row_within_its_heap(full):
    _, d, _ = full
    cols = d["row_columns"]
    heaps = [8192 << i for i in range(64) if (8192 << i) < d["params"]["seq_heap_size"]]
    rounds = d["params"]["random_alloc_rounds"]
    pow2 = sum(4 * len([b for b in (16 << k for k in range(40)) if b < h // 2]) for h in heaps)
    for a in d["allocators"]:
        n = a["name"]
        assert a["passed"] and a["failure"] is None, (n, a["failure"])
        assert len(a["pow2"]["rows"]) == a["pow2"]["tests"] == pow2, \
            (n, len(a["pow2"]["rows"]), a["pow2"]["tests"], pow2)
        assert len(a["random"]["rows"]) == 4 * rounds * len(heaps), (n, len(a["random"]["rows"]))
        # a heap a page kind cannot size exactly runs at its usable size
        sized = {h["asked_bytes"]: h["usable_bytes"] for h in a.get("heap_sizes") or []}
        within = set(heaps) | {sized.get(h, h) for h in heaps}
        # xvheap's blocks live in 4 KiB pages: none above 4008 bytes (4024 on
        # 32-bit), and only those hold none; zsheap's, none above 4096
        def wrong_count(r):
            big = r["block_bytes"]
            if n == "xvheap":
                return (r["nrblocks"] < 1 and big <= 4008) or (r["nrblocks"] > 0 and big > 4024)
            if n == "zsheap":
                return (r["nrblocks"] < 1) != (big > 4096)
            return r["nrblocks"] < 1
        bad = [r for r in rows(a, "pow2", cols) + rows(a, "random", cols)
               if r["heap_bytes"] not in within or wrong_count(r)
               or r["nrblocks"] * r["block_bytes"] > r["heap_bytes"]]
        assert not bad, "%s: rows outside their heaps: %s" % (n, bad[:3])


def test_every_allocator_runs_the_pattern_and_churn_phases(full):
    _, d, _ = full
    for a in d["allocators"]:
        assert a["pattern"]["tests"] == d["params"]["pattern_check_rounds"], a["name"]
        assert a["churn"]["ops"] == d["params"]["churn_ops"] and a["churn"]["frag_samples"], \
            (a["name"], a["churn"])


def test_heaps_are_exact_with_fail_a_and_tovrh_and_others_have_no_fail_a(full):
    _, d, _ = full
    cols = d["row_columns"]
    for a in d["allocators"]:
        n = a["name"]
        fail_a = [r["fail_alloc_ns"] for r in rows(a, "pow2", cols)]
        if a["sort"] == "heap":
            if n == "xvheap":
                # usable bytes come a page's block area at a time: the least above H
                span = 4096 - 64  # a page less its overhead (80 bytes on 64-bit, 64 on 32)
                assert all(0 <= h["usable_bytes"] - h["asked_bytes"] < span
                           for h in a["heap_sizes"]), (n, a["heap_sizes"])
            else:
                assert all(h["exact"] for h in a["heap_sizes"]), (n, a["heap_sizes"])
            assert all(v is not None for v in fail_a), "%s: a pow2 row without FAIL-A" % n
            assert all(r["true_overhead_pct"] is not None for r in rows(a, "pow2", cols)), \
                "%s: a pow2 row without TOVRH%%" % n
        else:
            assert all(v is None for v in fail_a), "%s: FAIL-A on a process allocator" % n


@pytest.mark.parametrize("kind", ["heapmem", "xnheap"])
def test_heapmem_and_xnheap_have_no_overhead_for_powers_of_two(by_name, kind):
    if kind not in by_name:
        pytest.skip("%s is not built" % kind)
    assert by_name[kind]["pow2"]["overall"]["avg_overhead_pct"] == 0


def test_report_has_the_overall_lines_the_summary_and_the_tovrh_legend(full):
    text = full[0].stdout
    assert "average fragmentation" in text and "\n== summary" in text, text
    assert re.search(r"^  TOVRH%: true overhead", text, re.M), text


@pytest.mark.parametrize("peer", sorted(PEERS))
def test_an_installed_peer_runs_and_a_missing_one_is_reported_skipped(rtmem, full, peer):
    text = full[0].stdout
    if have_peer(rtmem, peer):
        assert re.search(r"^  %s +process allocator: %s" % (peer, peer), text, re.M), text
    else:
        # rpmalloc is built in the tree, not installed
        missing = "not built" if peer == "rpmalloc" else "not installed"
        assert re.search(r"^  %s +SKIPPED: %s" % (peer, missing), text, re.M), text


def test_jemalloc_alone_runs_executed_again_for_its_static_tls(rtmem, tmp_dir):
    if not have_lib(PEERS["jemalloc"]):
        pytest.skip("jemalloc is not installed")
    r, d = memcheck_json(rtmem, tmp_dir, "--kinds", "jemalloc", "--phases", "pow2")
    assert r.returncode == 0 and d and d["passed"], explain(r)
    assert names(d) == ["jemalloc"] and d["allocators"][0]["pow2"]["rows"], d["allocators"]


def test_a_plugin_without_stats_runs_with_those_checks_off(rtmem, files, tmp_dir):
    r, d = memcheck_json(rtmem, tmp_dir, "--plugin", files["bump_plugin"], "--kinds", "bump")
    assert r.returncode == 0 and d, explain(r)
    a = d["allocators"][0]
    assert d["passed"] and a["name"] == "bump" and a["origin"] == "plugin", a
    assert not a["applies"]["stats"] and not a["applies"]["integrity_check"], a["applies"]
    assert all(h["sized_by_memory"] for h in a["heap_sizes"]), a["heap_sizes"]
    assert a["churn"]["frag_applies"] is False, a["churn"]
    assert all(x["true_overhead_pct"] is None for x in rows(a, "pow2", d["row_columns"]))
    assert "no stats: H is the memory given to create" in r.stdout, r.stdout


def test_kinds_sets_the_order_and_an_unloadable_peer_is_skipped_and_said(rtmem, tmp_dir):
    # jemalloc with the marker of a process already executed again (see
    # test_bench.py) cannot load.
    r, d = memcheck_json(rtmem, tmp_dir, "--kinds", "glibc,jemalloc,tlsf", "--phases", "pow2",
                         "--seq-heap-size", "16K", env={"RTMEM_STATIC_TLS_REEXEC": "x"})
    assert r.returncode == 0 and d, explain(r)
    assert names(d) == ["glibc", "tlsf"]
    assert [x["name"] for x in d["skipped"]] == ["jemalloc"]
    assert "rtmem memcheck: jemalloc skipped: " in r.stderr, explain(r)


def test_no_json_rows_keeps_the_overall_lines_without_the_rows(rtmem, tmp_dir):
    r, d = memcheck_json(rtmem, tmp_dir, "--kinds", "tlsf", "--phases", "pow2",
                         "--no-json-rows")
    assert r.returncode == 0 and d, explain(r)
    pow2 = d["allocators"][0]["pow2"]
    assert pow2["rows"] is None and pow2["overall"]["tests"] > 0, pow2
    assert d["params"]["json_rows"] is False


@pytest.fixture(scope="module")
def glibc_warm(rtmem, module_dir):
    """glibc's pow2 and random phases on a 1M heap: its allocator entry."""
    if SANITIZED:
        pytest.skip("RTMEM_SANITIZED: the sanitizers' allocator stands in for glibc's")
    path = os.path.join(module_dir, "w.json")
    r = run(rtmem, "memcheck", "--quick", "--no-rt", "--kinds", "glibc", "--phases",
            "pow2,random", "--seq-heap-size", "1M", "--json", path, "--no-json-rows")
    d = load_json(path)
    assert r.returncode == 0 and d and d["passed"], explain(r)
    return d["allocators"][0]


@pytest.mark.parametrize("phase", ["pow2", "random"])
def test_glibc_is_measured_warm_without_page_faults(glibc_warm, phase):
    # A process that left glibc at its default thresholds took a fault per
    # page its heap grew by. Code run for the first time may fault without
    # mlockall (and under qemu-user the faults are the emulator's; 32-bit
    # glibc never raises its mmap threshold past 512 KiB, so the warm-up
    # cannot make it keep the memory of the large blocks, and its timed
    # fills grow the heap: faults, which memcheck reports).
    faults = glibc_warm[phase]["minor_faults"]
    assert glibc_warm[phase]["tests"] > 0 and faults is not None, glibc_warm[phase]
    assert faults < 32 or EMULATED or BITS == 32, "%d page faults" % faults


@pytest.fixture(scope="module")
def smokey(rtmem):
    r = run(rtmem, "memcheck", "--quick", "--no-rt", "--kinds", "tlsf", "--phases", "pow2",
            "--format", "smokey", "--compat")
    assert r.returncode == 0, explain(r)
    return r.stdout


SMOKEY_LINES = [
    "== memcheck started for tlsf at ", "     seq_heap_size=256k",
    "[SEQUENTIAL ALLOC->FREE, ^2 BLOCK SIZES] ON 'tlsf'", "sorted by: max alloc time",
    "sorted by: max fragmentation",
    "  HEAPSZ  BLOCKSZ   NRBLKS  AVG-A  AVG-F  MAX-A  MAX-F   OVRH%  FRAG%  FLAGS",
    "  ... (196 results following) ...", "overall:", "  worst alloc time: ",
    "  average fragmentation: ", "== memcheck finished for tlsf at ",
]


@pytest.mark.parametrize("line", SMOKEY_LINES, ids=[l.strip() for l in SMOKEY_LINES])
def test_format_smokey_has_smokeys_headers_and_overall_lines(smokey, line):
    assert line in smokey, smokey


def test_format_smokey_rows_are_in_us_with_one_decimal(smokey):
    assert re.search(r"^ +[0-9]+k +[0-9]+[ k] +[0-9]+ +[0-9]+\.[0-9] ", smokey, re.M), smokey


def refused(rtmem, plugin):
    r = run(rtmem, "memcheck", "--quick", "--no-rt", "--plugin", plugin)
    assert r.returncode == 2 and ("--plugin %s: " % plugin) in r.stderr, explain(r)


def test_a_bad_plugin_is_refused_with_the_reason(rtmem, bad_plugin):
    refused(rtmem, bad_plugin)


def test_a_shared_object_without_the_plugin_symbol_is_refused(rtmem, files):
    refused(rtmem, files["no_symbol"])


def test_a_missing_plugin_file_is_refused(rtmem):
    refused(rtmem, "/nonexistent/nosuch.so")


NO_CPU = max(os.sched_getaffinity(0)) + 1
USAGE = [
    (["--seq-heap-size", "4K"], "--seq-heap-size: '4K' is out of range"),
    (["--random-alloc-rounds", "x"], "--random-alloc-rounds needs a whole number"),
    (["--random-alloc-rounds", "0"], "--random-alloc-rounds: '0' is out of range [1, "),
    (["--pattern-check-rounds", "0"], "--pattern-check-rounds: '0' is out of range [1, "),
    (["--kinds", "nosuch"], "unknown allocator 'nosuch'"),
    (["--kinds", "tlsf,"], "--kinds: empty name in 'tlsf,'"),
    (["--kinds", "tlsf-plugin"], "unknown allocator 'tlsf-plugin'"),
    (["--format", "xml"], "--format: 'xml' is not one of ns, smokey"),
    (["--max-results", "-2"], "--max-results needs -1 (every row) or a whole number"),
    (["--phases", "bogus"], "--phases: unknown phase 'bogus'"),
    (["--phases", "churn", "--no-churn"], "no phase left to run"),
    (["--churn-fill", "0"], "--churn-fill: '0' is out of range"),
    (["--churn-max-size", "1M"], "--churn-max-size (1048576) is above the churn fill"),
    (["--seed", "-1"], "--seed needs a whole number"),
    (["--cpu", str(NO_CPU)], "--cpu %d: no such CPU for this process" % NO_CPU),
    (["--plugin", "a", "--plugin", "b", "--plugin", "c", "--plugin", "d", "--plugin", "e"],
     "--plugin: at most 4"),
    (["--plugin"], "option '--plugin' needs a value"),
    (["--bogus"], "unknown option '--bogus'"),
    (["stray"], "unexpected argument 'stray'"),
]


@pytest.mark.parametrize("args,message", USAGE, ids=[" ".join(a) for a, _ in USAGE])
def test_bad_usage_exits_2_with_the_message_and_the_help_hint(rtmem, args, message):
    r = run(rtmem, "memcheck", *args)
    assert r.returncode == 2, explain(r)
    assert message in r.stderr and "Try 'rtmem memcheck --help'." in r.stderr, explain(r)
    assert r.stdout == ""


def test_rtmem_kinds_lists_the_kinds_the_tests_run(rtmem):
    r = run(rtmem, "kinds")
    assert r.returncode == 0 and tuple(r.stdout.split()) == KINDS, explain(r)


def test_an_unknown_command_exits_2_and_is_named(rtmem):
    r = run(rtmem, "nosuchcommand")
    assert r.returncode == 2 and "unknown command 'nosuchcommand'" in r.stderr, explain(r)


def test_the_churn_samples_what_each_heap_holds_against_what_it_uses(full):
    # growth, steady state and drain in order; a page heap holds what its
    # blocks need and nothing before or after, the others all they were given
    _, d, _ = full
    for a in d["allocators"]:
        n, c = a["name"], a["churn"]
        h = c["held_samples"]
        assert c["held_columns"] == ["op", "stage", "used_bytes", "held_bytes"], n
        if a["sort"] != "heap":
            assert h == [], n  # no heap of its own
            continue
        if a["origin"] != "rtmem":
            continue
        assert 3 < len(h) <= 240, (n, len(h))
        stages = [s[1] for s in h]
        assert stages == sorted(stages) and set(stages) == {0, 1, 2}, (n, stages)
        assert [s[0] for s in h] == sorted(s[0] for s in h), n
        assert h[0][2] == 0 and h[-1][2] == 0, n  # fresh, and drained
        if n.startswith(("xvheap", "zsheap")):
            assert h[0][3] == 0 and h[-1][3] == 0, n
            assert all(s[2] <= s[3] for s in h), n  # the pages held cover the blocks
            # xvheap never holds all it could; zsheap, with a zspage for each
            # class in use (255 classes), may at this churn's occupancy
            assert max(s[3] for s in h) < c["heap_bytes"] or n.startswith("zsheap"), n
            assert max(s[3] for s in h) <= c["heap_bytes"], n
        else:
            assert len({s[3] for s in h}) == 1 and h[0][3] > c["heap_bytes"], n
