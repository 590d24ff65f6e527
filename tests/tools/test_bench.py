"""rtmem bench: a quick run writes the envelope and a row per allocator in
every phase; --no-free-order skips that phase; the peers named run or are
skipped with the reason; bad usage exits 2 with the message and the --help
hint, never a crash.
"""
import os
import subprocess

import pytest

from rtmemtest import (BITS, assert_envelope, assert_glibc_rt_skipped_only_if_sanitized, bench_status,
                       explain, glibc_rt, load_json, run)

# A short run: the main phase only, of a few allocators (the threads phase
# is test_bench_threads.py's: lock.bench).
SHORT = ["--quick", "--no-rt", "--no-sweep", "--no-free-order", "--threads", "0"]


@pytest.fixture(scope="module")
def quick(rtmem, module_dir):
    """One `bench --quick` run on the defaults: (its result, its document)."""
    path = os.path.join(module_dir, "b.json")
    args = ["--quick", "--no-rt", "--json", path]
    r = run(rtmem, "bench", *args)
    d = load_json(path)
    assert d is not None and r.returncode == bench_status(d), explain(r)
    assert_envelope(d, "bench", "rtmem-bench/2", args)
    return r, d, path


def short_run(rtmem, tmp_dir, *args, env=None):
    path = os.path.join(tmp_dir, "s.json")
    r = run(rtmem, "bench", *SHORT, *args, "--json", path, env=env)
    return r, load_json(path)


def names(d):
    return [a["name"] for a in d["allocators"]]


def test_quick_run_passes_with_the_runs_seed_and_setup(quick):
    _, d, _ = quick
    assert d["passed"] is (bench_status(d) == 0) and d["seed"] == d["params"]["seed"]
    assert d["real_time"] is not None and "policy" in d["real_time"]


def test_defaults_are_every_kind_and_its_none_row_the_typed_rows_glibc(rtmem, quick):
    _, d, _ = quick
    kinds = run(rtmem, "kinds").stdout.split()
    typed = ["tlsf(typed)", "halffit(typed)"]
    want = ["floor"] + [n for k in kinds for n in (k, k + "-none")] + typed + ["glibc"]
    assert names(d) == want + glibc_rt(rtmem)
    assert_glibc_rt_skipped_only_if_sanitized(rtmem, d)
    # A typed row says which typed API it calls.
    api = {a["name"]: a["api"] for a in d["allocators"]}
    assert api["tlsf(typed)"] == "rtm_tlsf_typed" and api["halffit(typed)"] == "rtm_halffit_typed"
    assert api["halffit"] == "rtm_heap"


def test_glibc_rt_is_measured_alone_with_its_reserve(rtmem, quick):
    if not glibc_rt(rtmem):
        pytest.skip("a sanitizer's malloc: glibc-rt is skipped (checked above)")
    r, d, _ = quick
    a = {x["name"]: x for x in d["allocators"]}
    g = a["glibc-rt"]
    t = g["glibc_rt"]
    assert t["applied"] and t["grown_bytes"] == 0 and t["heap_bytes"] >= t["reserve_bytes"], t
    p = d["params"]
    assert t["reserve_bytes"] >= p["live_cap"] * p["max_size_bytes"], (t, p)
    assert "measured in a process of its own" in g["describe"], g
    assert a["glibc"]["glibc_rt"] is None and a["tlsf"]["glibc_rt"] is None
    # Every phase measured it, as the others.
    for ph in ("alloc", "free"):
        assert g[ph]["count_total"] == a["glibc"][ph]["count_total"] > 0, (g[ph], a["glibc"][ph])
    assert "glibc-rt: " in r.stdout and "it held" in r.stdout


def test_free_order_frees_every_block_of_a_fill(quick):
    _, d, _ = quick
    fo = {a["name"]: a for a in d["free_order"]["allocators"]}
    assert set(fo) == set(names(d))
    fill = d["free_order"]["fill_blocks"]
    for n in set(names(d)) - {"floor"}:
        for k in ("free_in_order", "free_shuffled"):
            count = fo[n][k]["count_per_pass"]
            if n.startswith("xvheap"):
                # requests above a page's block (4008 of 16..4096 bytes) fail, the
                # same ones in every fill, and only those
                lost = fill - count
                assert 0 < lost < fill * 0.05 and fo[n]["failed_allocs"] % lost == 0, (n, k)
            else:
                assert count == fill, (n, k)


def test_report_has_its_tables_and_says_where_the_results_went(quick):
    r, _, path = quick
    assert "vs glibc" in r.stdout
    assert "shuffled/in-order" in r.stdout
    assert "results written to " + path in r.stdout


def test_no_free_order_no_sweep_skips_those_phases(rtmem, tmp_dir):
    r, d = short_run(rtmem, tmp_dir, "--kinds", "tlsf")
    assert r.returncode == 0 and d, explain(r)
    assert d["free_order"] is None and d["sweep"] is None and d["wide"] is None
    assert names(d) == ["floor", "tlsf"]


def sweep_run(rtmem, tmp_dir, *args):
    path = os.path.join(tmp_dir, "w.json")
    r = run(rtmem, "bench", "--quick", "--no-rt", "--sweep-only", "--sweep-ops", "300",
            *args, "--json", path)
    return r, load_json(path)


def test_the_sweep_runs_each_wide_range_again_and_again_with_its_spread(rtmem, tmp_dir):
    r, d = sweep_run(rtmem, tmp_dir, "--wide-reps", "4", "--kinds", "tlsf,xvheap,zsheap,glibc")
    assert r.returncode == 0 and d, explain(r)
    assert d["params"]["wide_reps"] == 4
    w = d["wide"]
    assert (w["ranges"], w["reps"], w["range_width_bytes"], w["ops_per_range"]) == (8, 4, 1024, 300)
    assert w["range_min_bytes"] == [i * 1024 + 1 for i in range(8)]
    assert w["range_max_bytes"] == [(i + 1) * 1024 for i in range(8)]
    a = {x["name"]: x for x in w["allocators"]}
    assert list(a) == ["floor", "tlsf", "xvheap", "zsheap", "glibc"]
    for name, x in a.items():
        assert len(x["pair_ns"]) == 8 and all(len(p) == 4 for p in x["pair_ns"]), name
        if name == "floor":
            assert x["net_median_ns"] == [None] * 8
            continue
        for i in range(8):
            m, lo, hi = x["net_median_ns"][i], x["net_min_ns"][i], x["net_max_ns"][i]
            # a page kind above a page fails every request: no figure there
            page_kind = name in ("xvheap", "zsheap")
            if page_kind and i >= 4:
                assert m is None and x["failed_allocs"][i] > 0, (name, i, x)
                continue
            assert m is not None and lo <= m <= hi, (name, i, x)
            assert x["failed_allocs"][i] == 0 or (name == "xvheap" and i == 3), (name, i, x)
    # xvheap's last range below the page holds requests above its 4008 bytes
    assert a["xvheap"]["failed_allocs"][3] > 0
    assert "wide ranges: " in r.stdout and "0K..1K" in r.stdout and "7K..8K" in r.stdout
    assert "note: zsheap failed" in r.stdout and "in the wide ranges" in r.stdout


def test_wide_reps_0_leaves_the_wide_ranges_out(rtmem, tmp_dir):
    r, d = sweep_run(rtmem, tmp_dir, "--wide-reps", "0", "--kinds", "tlsf")
    assert r.returncode == 0 and d, explain(r)
    assert d["wide"] is None and d["sweep"] is not None
    assert "wide ranges:" not in r.stdout


def test_the_study_script_measures_every_kind_and_draws_its_report(rtmem, tmp_dir):
    """scripts/study.sh (make study): bench's sweep with its wide ranges and
    memcheck's churn on 16 MiB, of every kind, glibc and the peers that
    load, then the report."""
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "scripts", "study.sh")
    out = os.path.join(tmp_dir, "study")
    r = subprocess.run(["sh", script, "--quick", out], env=dict(os.environ, RTMEM=rtmem),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    no_report = "the report could not be drawn" in r.stderr
    assert r.returncode == 0 or no_report, explain(r)
    kinds = run(rtmem, "kinds").stdout.split()
    b = load_json(os.path.join(out, "bench.json"))
    assert b["params"]["main_phase"] is False
    assert b["sweep"] is not None and b["wide"] is not None and b["wide"]["reps"] == 3
    ran = [a["name"] for a in b["allocators"]]
    assert ran[:1 + len(kinds)] == ["floor"] + kinds and "glibc" in ran, ran
    m = load_json(os.path.join(out, "memcheck.json"))
    assert m["params"]["churn_heap_size"] == 16 << 20, m["params"]
    held = {a["name"]: a["churn"]["held_samples"] for a in m["allocators"]}
    assert all(held[k] for k in kinds), held.keys()
    for name in ("bench", "memcheck"):
        assert os.path.getsize(os.path.join(out, name + ".txt")) > 0
    if not no_report:
        assert os.path.exists(os.path.join(out, "report", "bench-wide.png"))
        assert os.path.exists(os.path.join(out, "report", "memcheck-held.png"))


def test_each_peer_named_runs_or_is_skipped_with_the_reason(rtmem, tmp_dir):
    r, d = short_run(rtmem, tmp_dir, "--kinds", "glibc,jemalloc,mimalloc,tcmalloc,rpmalloc")
    assert r.returncode == 0 and d, explain(r)
    ran = {a["name"]: a["api"] for a in d["allocators"]}
    skipped = {x["name"]: x["reason"] for x in d["skipped"]}
    for p in ("jemalloc", "mimalloc", "tcmalloc", "rpmalloc"):
        assert (ran.get(p) == "peer") != (skipped.get(p, "") != ""), (p, d["skipped"])
        if p in skipped:
            assert "rtmem bench: %s skipped: " % p in r.stderr


def test_a_peer_that_cannot_load_is_skipped_said_and_recorded(rtmem, tmp_dir):
    # jemalloc, with the marker of a process already executed again for
    # static TLS (or not installed at all), cannot load.
    r, d = short_run(rtmem, tmp_dir, "--kinds", "jemalloc,tlsf",
                     env={"RTMEM_STATIC_TLS_REEXEC": "x"})
    assert r.returncode == 0 and d, explain(r)
    assert names(d) == ["floor", "tlsf"]
    assert [x["name"] for x in d["skipped"]] == ["jemalloc"]
    assert "rtmem bench: jemalloc skipped: " in r.stderr
    assert "note: jemalloc skipped" in r.stdout


def test_kinds_sets_the_order_of_the_rows(rtmem, tmp_dir):
    r, d = short_run(rtmem, tmp_dir, "--kinds", "glibc,tlsf-typed,tlsf")
    assert r.returncode == 0 and d, explain(r)
    assert names(d) == ["floor", "glibc", "tlsf(typed)", "tlsf"]


NO_CPU = max(os.sched_getaffinity(0)) + 1
USAGE = [
    (["--ops", "0"], "--ops: '0' is out of range [1, "),
    (["--ops", "-5"], "--ops needs a whole number in [1, "),
    (["--min-size", "100", "--max-size", "10"], "--min-size (100) is larger than --max-size (10)"),
    (["--kinds", "nosuch"], "unknown allocator 'nosuch'"),
    (["--kinds", "tlsf,"], "--kinds: empty name in 'tlsf,'"),
    (["--heap-size", "12Q"], "--heap-size: '12Q' is not a byte count"),
    (["--heap-size", "2T"], "--heap-size: '2T' is out of range"),
    # (a size in range, which no allocator is made for: 1T is beyond 32-bit's)
    (["--heap-size", "1T" if BITS == 64 else "1G", "--kinds", "nosuch"],
     "unknown allocator 'nosuch'"),
    (["--fill", "0"], "--fill: '0' is out of range"),
    (["--no-sweep", "--sweep-only"], "--no-sweep and --sweep-only exclude each other"),
    (["--cpu", str(NO_CPU)], "--cpu %d: no such CPU for this process (allowed: " % NO_CPU),
    (["--no-rt", "--prio", "50"], "--no-rt runs under SCHED_OTHER: --prio would not be used"),
    (["--plugin"], "option '--plugin' needs a value"),
    (["--bogus"], "unknown option '--bogus'"),
    (["stray"], "unexpected argument 'stray'"),
]


@pytest.mark.parametrize("args,message", USAGE, ids=[" ".join(a) for a, _ in USAGE])
def test_bad_usage_exits_2_with_the_message_and_the_help_hint(rtmem, args, message):
    r = run(rtmem, "bench", *args)
    assert r.returncode == 2, explain(r)
    assert message in r.stderr and "Try 'rtmem bench --help'." in r.stderr
    assert r.stdout == ""
