"""rtmem replay: traces of the tests' own programs (trace_prog.c, and
trace_prog_cpp.cpp where a C++ compiler is found) replayed on every kind:
the replay holds what the trace shows (its allocations, its peak of live
bytes), the smallest pool it reports fits and one granule less fails, a
phase replays alone with the blocks live at its start, the verdict says
what the program needs (a lock, a heap at all); usage.

Plugins (rtmem/plugin.h) are replayed like the kinds: TLSF through the
plugin ABI, and a bump allocator without realloc or aligned_alloc.

The build gives (tests/tools/CMakeLists.txt): --file trace_prog=,
--file tlsf_plugin=, --file bump_plugin=, and --file trace_prog_cpp= where
a C++ compiler is found.
"""
import os
import re
import shutil
import struct
import sys

import pytest

from rtmemtest import (EMULATED, KINDS as RTMEM_KINDS, assert_glibc_rt_skipped_only_if_sanitized,
                       explain, glibc_rt, installed_peers, load_json, run, sqlite_workload)

ALLOCATING = ["malloc", "calloc", "realloc", "reallocarray", "memalign", "posix_memalign",
              "aligned_alloc", "valloc", "pvalloc"]
KINDS = list(RTMEM_KINDS)


@pytest.fixture(scope="module")
def traces(rtmem, files, tmp_path_factory):
    """{mode: (trace path, its --show JSON)} for the modes replayed."""
    d = str(tmp_path_factory.mktemp("replay"))
    out = {}
    for mode in ("basic", "threads", "idle"):
        path = os.path.join(d, mode + ".trace")
        js = path + ".json"
        r = run(rtmem, "trace", "-o", path, "--json", js, "--", files["trace_prog"], mode)
        assert r.returncode == 0, explain(r)
        out[mode] = (path, load_json(js))
    return out


def replay(rtmem, tmp_dir, path, *options, env=None, count=False):
    """A quick replay (without the counts under valgrind unless asked)."""
    js = os.path.join(tmp_dir, "r.json")
    if os.path.exists(js):
        os.unlink(js)
    more = [] if count else ["--no-count"]
    r = run(rtmem, "replay", "--quick", "--json", js, *more, *options, path, env=env)
    return r, load_json(js)


def by_name(doc):
    return {a["name"]: a for a in doc["allocators"]}


def never_fits(doc, kind):
    """xvheap serves requests up to a 4 KiB page's block (4008 bytes), with an
    alignment's slack inside the page, and zsheap up to a page (4096 bytes,
    rounded up to the alignment): a trace past that fits no pool of them,
    is not searched, and says so. True for such a kind and trace."""
    x = by_name(doc)[kind]
    if not x.get("too_large"):
        return False
    p = doc["program"]
    assert kind in ("xvheap", "zsheap"), x
    if kind == "xvheap":
        assert p["largest_bytes"] > 4008 or p["max_align"] >= 2048, (p, x)
    else:
        assert p["largest_bytes"] > 4096, (p, x)
    assert not x["fits"] and x["bound"] is None and x["search_replays"] == 0, x
    return True


def test_the_replay_holds_what_the_trace_shows(rtmem, tmp_dir, traces):
    path, shown = traces["basic"]
    r, d = replay(rtmem, tmp_dir, path)
    assert r.returncode == 0, explain(r)
    t = shown["trace"]
    allocs = sum(t["ops"][op] for op in ALLOCATING) - t["failed"]
    assert d["program"]["allocs"] == allocs, (d["program"], t["ops"])
    assert d["program"]["peak_live_bytes"] == t["peak_live_bytes"]
    assert d["program"]["max_align"] == 4096  # valloc's page
    # the noise floor: the same calls, each a no-op, timed the same way
    fl = d["floor"]
    assert fl["alloc"]["count"] == allocs and fl["free"]["count"] == d["program"]["frees"], fl
    assert re.search(r"^  floor +[0-9]", r.stdout, re.M), explain(r)
    a = by_name(d)
    assert set(a) == set(KINDS + ["glibc"] + glibc_rt(rtmem)), list(a)
    assert_glibc_rt_skipped_only_if_sanitized(rtmem, d)
    # glibc-rt: every call replayed in its own process, settings applied, and
    # the reserve (the peak and a header a block) held.
    for g in glibc_rt(rtmem):
        x = a[g]
        assert x["replayed"] and x["timed_failures"] == 0 and x["alloc"]["count"] == allocs, x
        g_rt = x["glibc_rt"]
        assert g_rt["applied"] and g_rt["grown_bytes"] == 0, g_rt
        assert g_rt["reserve_bytes"] >= d["program"]["peak_live_bytes"], g_rt
        assert "it held" in x["note"], x
    assert a["glibc"]["glibc_rt"] is None
    # valloc's 4096 alignment: no xvheap page holds it
    assert never_fits(d, "xvheap")
    assert "xvheap         no pool fits this program: the kind serves no request" in r.stdout
    for k in KINDS:
        x = a[k]
        if never_fits(d, k):
            continue
        assert x["replayed"] and x["fits"] and x["timed_failures"] == 0, x
        assert x["min_pool"] > t["peak_live_bytes"], x  # headers and control structure
        assert x["min_pool"] - x["below_fails"] == d["params"]["granule"], x
        assert x["advised_pool"] >= x["min_pool"] * 1.25 - 1, x
        assert x["alloc"]["count"] == allocs and x["free"]["count"] > 0, x
        assert 0 < x["touched_bytes"] <= x["advised_pool"], x
        assert x["used_bytes_at_peak"] >= t["peak_live_bytes"], x
    assert a["glibc"]["replayed"] and a["glibc"]["alloc"]["count"] == allocs
    v = d["verdict"]
    assert v["advised"]["kind"] in KINDS and v["ranking"][0] == v["advised"]["kind"]
    assert v["needs_lock"] is False and v["needs_heap"] is True
    assert "advised: %s, on a pool of" % v["advised"]["kind"] in r.stdout


@pytest.mark.parametrize("kind", KINDS)
def test_the_smallest_pool_fits_and_one_granule_less_fails(rtmem, tmp_dir, traces, kind):
    path, _ = traces["basic"]
    _, d = replay(rtmem, tmp_dir, path, "--kinds", kind)
    if never_fits(d, kind):
        # and a pool of any size fails it
        _, at = replay(rtmem, tmp_dir, path, "--kinds", kind, "--pool", str(1 << 20))
        assert by_name(at)[kind]["pool_failures"] > 0
        return
    smallest = by_name(d)[kind]["min_pool"]
    r, at = replay(rtmem, tmp_dir, path, "--kinds", kind, "--pool", str(smallest))
    assert r.returncode == 0, explain(r)
    x = by_name(at)[kind]
    assert x["pool_created"] and x["pool_failures"] == 0, x
    r, below = replay(rtmem, tmp_dir, path, "--kinds", kind, "--pool", str(smallest - 64))
    assert r.returncode == 0, explain(r)
    x = by_name(below)[kind]
    assert not x["pool_created"] or x["pool_failures"] > 0, x


def test_a_phase_replays_alone_with_the_blocks_live_at_its_start(rtmem, tmp_dir, traces):
    path, shown = traces["basic"]
    loop = [p for p in shown["trace"]["phases"] if p["name"] == "loop"][0]
    r, d = replay(rtmem, tmp_dir, path, "--phase", "loop")
    assert r.returncode == 0, explain(r)
    p = d["program"]
    assert d["phase"] == "loop" and p["allocs"] == 200 and p["frees"] == 200, p
    assert p["peak_live_bytes"] == loop["peak_live_bytes"], (p, loop)
    assert p["preamble"] >= 1  # trace_prog's block kept live through it
    assert loop["start_live_bytes"] >= 1000
    for k in KINDS:
        if not never_fits(d, k):
            assert by_name(d)[k]["alloc"]["count"] == 200  # the preamble is not timed


def test_threads_need_a_locked_heap_and_its_cost_is_measured(rtmem, tmp_dir, traces):
    path, _ = traces["threads"]
    r, d = replay(rtmem, tmp_dir, path)
    assert r.returncode == 0, explain(r)
    assert d["verdict"]["needs_lock"] is True and d["program"]["threads"] >= 4
    for k in KINDS:
        if never_fits(d, k):
            continue
        assert by_name(d)[k]["locked_alloc"]["count"] > 0
        calls = d["program"]["allocs"] + d["program"]["frees"]
        assert 0 <= by_name(d)[k]["contended_calls"] <= calls
    assert "a locked heap: " in r.stdout and "priority-inheritance lock" in r.stdout
    assert "would have found the lock held" in r.stdout


def test_a_phase_without_allocations_needs_no_heap(rtmem, tmp_dir, traces):
    path, _ = traces["idle"]
    r, d = replay(rtmem, tmp_dir, path, "--phase", "idle")
    assert r.returncode == 0, explain(r)
    assert d["verdict"]["needs_heap"] is False and d["program"]["allocs"] == 0
    assert "it needs no heap there" in r.stdout


def test_cpp_program(rtmem, tmp_dir, files):
    if "trace_prog_cpp" not in files:
        pytest.skip("no C++ compiler: trace_prog_cpp not built")
    path = os.path.join(tmp_dir, "cpp.trace")
    r = run(rtmem, "trace", "-o", path, "--", files["trace_prog_cpp"])
    assert r.returncode == 0, explain(r)
    r, d = replay(rtmem, tmp_dir, path, "--phase", "loop")
    assert r.returncode == 0, explain(r)
    assert d["program"]["allocs"] >= 3 * 2000 * 2
    assert all(by_name(d)[k]["fits"] or never_fits(d, k) for k in KINDS)


def test_nothing_fits_below_the_search_limit(rtmem, tmp_dir, traces):
    path, _ = traces["basic"]
    r, d = replay(rtmem, tmp_dir, path, "--kinds", "tlsf", "--max-pool", "8K")
    assert r.returncode == 0, explain(r)
    assert by_name(d)["tlsf"]["fits"] is False and d["verdict"]["advised"] is None
    assert "no pool up to 8.00 KiB fits" in r.stdout


def test_an_allocator_replay_cannot_drive_is_named(rtmem, tmp_dir, traces):
    path, _ = traces["basic"]
    r, d = replay(rtmem, tmp_dir, path, "--kinds", "tlsf,tlsf(typed)")
    assert r.returncode == 0, explain(r)
    x = by_name(d)["tlsf(typed)"]
    assert not x["replayed"] and "not replayed" in x["why_not"]


@pytest.mark.parametrize("args,status,message", [
    ([], 2, "the trace to replay"),
    (["a", "b"], 2, "one trace at a time"),
    (["--pool", "2G", "--max-pool", "1G", "x"], 2, "--pool is more than --max-pool"),
    (["--kinds", "nosuch", "x"], 2, "nosuch"),
])
def test_usage(rtmem, args, status, message):
    r = run(rtmem, "replay", *args)
    assert r.returncode == status, explain(r)
    assert message in r.stderr, explain(r)


def test_an_unknown_phase_and_a_file_that_is_no_trace(rtmem, tmp_dir, traces):
    path, _ = traces["basic"]
    r = run(rtmem, "replay", "--phase", "nosuch", path)
    assert r.returncode == 2 and "no phase named 'nosuch'" in r.stderr, explain(r)
    bad = os.path.join(tmp_dir, "bad")
    with open(bad, "w") as f:
        f.write("x" * 200)
    r = run(rtmem, "replay", bad)
    assert r.returncode == 1 and "is not an rtmem trace" in r.stderr, explain(r)


# ---- traces written by hand (docs/trace-format.md) -------------------------------

def _u(v):
    out = b""
    while v >= 0x80:
        out += bytes([(v & 0x7F) | 0x80])
        v >>= 7
    return out + bytes([v])


def write_trace(path, chunks):
    """A trace of one image, clock in ns, whose chunks are {tid: [(op, seq,
    t_ns, fields...)]}: malloc (1) with size and pointer, free (5) with a
    pointer, realloc (3) with the pointer given, size, pointer returned and
    seq0, a mark (12) with its name."""
    page, chunk = 4096, 65536
    head = b"RTMTRACE" + struct.pack("=HHIII", 1, 128, 0x01020304, 4242, 1)
    head += struct.pack("=QQIIIIQQQ", 0, 0, page, 0, chunk, 0, 0, 0, 0)
    head = head.ljust(128, b"\0")
    end = struct.pack("=BBHIIIIIQQQ", 2, 0, 0, 48, 48, 0, 0, 0, 0, 0, 0)
    end += struct.pack("=QQQiIQQ", 10 ** 11, len(chunks), 0, 0, 0, 0, 0)
    out = (head + end).ljust(page, b"\0")
    for tid, events in chunks.items():
        body, seq, t, prev = b"", 0, 0, 0
        for op, s, when, *fields in events:
            body += bytes([op]) + _u(s - seq) + _u(when - t)
            seq, t = s, when
            if op == 1:
                size, ptr = fields
                d = ptr - prev
                prev = ptr
                body += _u(size) + _u(((d << 1) ^ (d >> 63)) & (2 ** 64 - 1))
            elif op == 3:
                given, size, ret, seq0 = fields
                for i, v in enumerate((given, size, ret)):
                    if i == 1:
                        body += _u(v)
                        continue
                    d = v - prev
                    prev = v
                    body += _u(((d << 1) ^ (d >> 63)) & (2 ** 64 - 1))
                body += _u(s - seq0)
            elif op == 12:
                body += _u(len(fields[0])) + fields[0].encode()
            else:
                d = fields[0] - prev
                prev = fields[0]
                body += _u(((d << 1) ^ (d >> 63)) & (2 ** 64 - 1))
        block = struct.pack("=BBHIIIIIQQQ", 1, 0, 0, chunk - 48, len(body), len(events), tid, 0,
                            events[0][1], 0, 0)
        out += (block + body).ljust(chunk, b"\0")
    with open(path, "wb") as f:
        f.write(out)


@pytest.mark.parametrize("apart_ns,contended", [(0, 4), (10 ** 10, 0)])
def test_contention_estimated_from_the_traces_timing(rtmem, tmp_dir, apart_ns, contended):
    """Two threads each allocate and free two blocks; with apart_ns 0 the
    calls of thread 2 come at the very instants of thread 1's: of each pair
    one starts while the other is in progress (four, or more if a
    preemption made a call's average very long); 10 s apart they never
    meet."""
    path = os.path.join(tmp_dir, "two.trace")
    base = 1000000
    t1 = [(1, 0, base, 64, 0x10000), (1, 2, base + 5000, 64, 0x20000), (5, 4, base + 10000, 0x10000),
          (5, 6, base + 15000, 0x20000)]
    t2 = [(1, 1, base + apart_ns, 64, 0x30000), (1, 3, base + 5000 + apart_ns, 64, 0x40000),
          (5, 5, base + 10000 + apart_ns, 0x30000), (5, 7, base + 15000 + apart_ns, 0x40000)]
    write_trace(path, {11: t1, 12: t2})
    r, d = replay(rtmem, tmp_dir, path, "--kinds", "tlsf")
    assert r.returncode == 0, explain(r)
    assert d["program"]["threads"] == 2 and d["program"]["allocs"] == 4
    x = by_name(d)["tlsf"]
    timed = x["alloc"]["mean_ns"] >= 1 and x["free"]["mean_ns"] >= 1  # calls take time
    if EMULATED and not timed:
        # four calls, each shorter than the emulated timer's overhead: no
        # length to estimate an overlap with
        pytest.skip("the emulator's timer gives these calls no time (net of its overhead)")
    assert timed, x
    if contended:
        assert x["contended_calls"] >= contended, x
    else:
        assert x["contended_calls"] == 0, x


def test_a_real_programs_trace_replays_whole(rtmem, tmp_dir):
    """The Python running this test, serialising JSON (reallocs by the
    thousand): the replay holds every allocation and the peak the trace
    shows, and at the smallest pool tlsf reports, the replay fits."""
    if EMULATED:
        pytest.skip("the Python running the test is the host's: the emulated target's recorder "
                    "cannot be loaded into it")
    path = os.path.join(tmp_dir, "py.trace")
    js = path + ".json"
    script = "import json\nx = [json.dumps(list(range(i))) for i in range(400)]\n"
    r = run(rtmem, "trace", "-o", path, "--json", js, "--", sys.executable, "-c", script)
    assert r.returncode == 0, explain(r)
    t = load_json(js)["trace"]
    r, d = replay(rtmem, tmp_dir, path, "--kinds", "tlsf,glibc")
    assert r.returncode == 0, explain(r)
    allocs = sum(t["ops"][op] for op in ALLOCATING) - t["failed"]
    p = d["program"]
    # a realloc(p, 0) that freed p is a free in the replay, not an allocation
    assert p["allocs"] <= allocs and p["allocs"] >= allocs - t["ops"]["realloc"], (p, t["ops"])
    assert p["peak_live_bytes"] == t["peak_live_bytes"] and p["reused_live"] == 0, p
    x = by_name(d)["tlsf"]
    assert x["fits"] and x["timed_failures"] == 0, x
    r, at = replay(rtmem, tmp_dir, path, "--kinds", "tlsf", "--pool", str(x["min_pool"]))
    assert by_name(at)["tlsf"]["pool_failures"] == 0




def test_a_debian_programs_trace_replays_on_every_kind(rtmem, tmp_dir):
    """Debian's sqlite3 shell builds, indexes and queries a table (some
    18,000 allocations, half of them reallocs): traced, its output is what
    it is untraced; replayed on every kind, the replay holds every
    allocation and the peak the trace shows, and each kind's smallest pool
    fits while one granule less fails."""
    if EMULATED:
        pytest.skip("the host's sqlite3: the emulated target's recorder cannot be loaded into it")
    sqlite = shutil.which("sqlite3")
    assert sqlite, "no sqlite3 on PATH: scripts/ensure-deps.sh installs it"
    outs = []
    for traced in (False, True):
        out = os.path.join(tmp_dir, "out-%d.txt" % traced)
        script = os.path.join(tmp_dir, "w-%d.sql" % traced)
        with open(script, "w") as f:
            f.write(".output %s\n%s" % (out, sqlite_workload(3000)))
        cmd = [sqlite, ":memory:", ".read " + script]
        path = os.path.join(tmp_dir, "sqlite.trace")
        js = path + ".json"
        r = run(rtmem, "trace", "-o", path, "--json", js, "--", *cmd) if traced else run(*cmd)
        assert r.returncode == 0, explain(r)
        with open(out) as f:
            outs.append(f.read())
    assert outs[0] == outs[1] and "3000|2250750.0" in outs[0], outs
    t = load_json(js)["trace"]
    r, d = replay(rtmem, tmp_dir, path, "--kinds", ",".join(KINDS))
    assert r.returncode == 0, explain(r)
    p = d["program"]
    allocs = sum(t["ops"][op] for op in ALLOCATING) - t["failed"]
    assert allocs > 10000 and t["ops"]["realloc"] > 1000, t["ops"]
    assert p["allocs"] == allocs and p["peak_live_bytes"] == t["peak_live_bytes"], (p, t["ops"])
    granule = d["params"]["granule"]
    for kind in KINDS:
        x = by_name(d)[kind]
        if never_fits(d, kind):
            continue
        assert x["fits"] and x["timed_failures"] == 0, x
        assert x["below_fails"] == x["min_pool"] - granule, x
        for pool, fails in ((x["min_pool"], False), (x["below_fails"], True)):
            r2, at = replay(rtmem, tmp_dir, path, "--kinds", kind, "--pool", str(pool))
            assert r2.returncode == 0, explain(r2)
            assert (by_name(at)[kind]["pool_failures"] > 0) == fails, (kind, pool)


def test_a_realloc_in_flight_across_a_phase_mark(rtmem, tmp_dir):
    """Thread 1's realloc has its seq0 before the mark and its seq after:
    its old block is live when the phase begins, so the phase's replay makes
    it first, and the peak agrees with --show's."""
    path = os.path.join(tmp_dir, "edge.trace")
    t1 = [(1, 0, 1000, 100, 0x10000), (3, 3, 4000, 0x10000, 200, 0x20000, 1),
          (5, 5, 6000, 0x20000)]
    t2 = [(12, 2, 3000, "loop"), (1, 4, 5000, 8, 0x30000), (5, 6, 7000, 0x30000)]
    write_trace(path, {21: t1, 22: t2})
    js = os.path.join(tmp_dir, "show.json")
    r = run(rtmem, "trace", "--show", path, "--json", js)
    assert r.returncode == 0, explain(r)
    loop = [p for p in load_json(js)["trace"]["phases"] if p["name"] == "loop"][0]
    r, d = replay(rtmem, tmp_dir, path, "--kinds", "tlsf", "--phase", "loop")
    assert r.returncode == 0, explain(r)
    p = d["program"]
    assert p["preamble"] == 1 and p["peak_live_bytes"] == loop["peak_live_bytes"] == 208, (p, loop)


def test_a_thread_that_only_frees_makes_a_lock_needed(rtmem, tmp_dir):
    """A producer mallocs, a consumer frees: two threads call the heap."""
    path = os.path.join(tmp_dir, "pc.trace")
    t1 = [(1, 0, 1000, 64, 0x10000), (1, 2, 3000, 64, 0x20000)]
    t2 = [(5, 1, 2000, 0x10000), (5, 3, 4000, 0x20000)]
    write_trace(path, {31: t1, 32: t2})
    r, d = replay(rtmem, tmp_dir, path, "--kinds", "tlsf")
    assert r.returncode == 0, explain(r)
    assert d["program"]["threads"] == 2 and d["verdict"]["needs_lock"] is True


def test_the_other_processes_of_a_run_are_named_in_the_verdict(rtmem, tmp_dir):
    """A child's trace beside its parent's (rtmem trace --children follow
    names it FILE.<pid>; an exec's image FILE.<pid>.<n>): each replay names
    the other images (a file that is no trace, or not so named, is not
    one); no shared heap is claimed."""
    path = os.path.join(tmp_dir, "run.trace")
    t = [(1, 0, 1000, 64, 0x10000), (5, 1, 2000, 0x10000)]
    write_trace(path, {61: t})
    r, d = replay(rtmem, tmp_dir, path, "--kinds", "tlsf")
    assert r.returncode == 0, explain(r)
    assert d["verdict"]["other_images"] == 0 and d["verdict"]["needs_shared_heap"] is False
    assert "no other process of this run was recorded" in r.stdout, explain(r)
    write_trace(path + ".4242", {62: t})
    write_trace(path + ".4242.1", {63: t})
    with open(path + ".99", "w") as f:
        f.write("not a trace\n")
    write_trace(path + ".bak", {64: t})
    for mine in (path, path + ".4242", path + ".4242.1"):
        r, d = replay(rtmem, tmp_dir, mine, "--kinds", "tlsf")
        assert r.returncode == 0, explain(r)
        assert d["verdict"]["other_images"] == 2, (mine, d["verdict"])
        assert "2 other process images of this run were recorded" in r.stdout, explain(r)


def test_nothing_allocated_advises_no_heap(rtmem, tmp_dir):
    path = os.path.join(tmp_dir, "none.trace")
    write_trace(path, {41: [(12, 0, 1000, "loop")]})
    r, d = replay(rtmem, tmp_dir, path)
    assert r.returncode == 0, explain(r)
    v = d["verdict"]
    assert v["advised"] is None and v["ranking"] == [] and v["needs_heap"] is False, v
    assert "advised:" not in r.stdout and "needs no heap" in r.stdout


def test_the_bound_stands_beside_the_smallest_pool(rtmem, tmp_dir, traces, files):
    path, shown = traces["basic"]
    r, d = replay(rtmem, tmp_dir, path)
    assert r.returncode == 0, explain(r)
    p = d["program"]
    lim = p["limits"]
    # the limits the trace stays within: a realloc's old and new block counted
    assert lim["max_live"] >= p["peak_live_bytes"] > 0
    assert lim["max_block"] == p["largest_bytes"]
    assert 1 <= lim["min_block"] <= lim["max_block"]
    assert lim["max_align"] == 4096  # valloc's page
    a = by_name(d)
    for k in KINDS:
        if never_fits(d, k):
            continue
        assert a[k]["bound"] >= a[k]["min_pool"] > 0, a[k]
        assert "  %s " % k in r.stdout.split("\nbound:")[1].split("verdict:")[0]
    adv = d["verdict"]["advised"]
    assert adv["bound"] == a[adv["kind"]]["bound"]
    assert "for every sequence within its limits" in r.stdout
    assert a["glibc"].get("bound") is None
    # the same figure as rtmem size gives for those limits
    js = os.path.join(tmp_dir, "size.json")
    s = run(rtmem, "size", "--json", js, "--max-live", str(lim["max_live"]),
            "--max-block", str(lim["max_block"]), "--min-block", str(lim["min_block"]),
            "--max-align", str(lim["max_align"]))
    assert s.returncode == 0, explain(s)
    for k in load_json(js)["kinds"]:
        assert k["bound"] == a[k["kind"]]["bound"], k


def counted(d):
    """The counts' availability: the reason when none were made."""
    c = d["counts"]
    if c["valgrind"] is None:
        assert c["why"], c
        # where valgrind cannot run this rtmem, it says why
        assert any(w in c["why"] for w in ("sanitizer", "emulator", "not installed")), c
        return False
    assert c["why"] is None
    return True


def test_instructions_are_counted_exactly_where_valgrind_runs(rtmem, tmp_dir, traces):
    path, _ = traces["basic"]
    scratch = os.path.join(tmp_dir, "scratch")
    os.mkdir(scratch)
    r, d = replay(rtmem, tmp_dir, path, env=dict(os.environ, TMPDIR=scratch), count=True)
    assert r.returncode == 0, explain(r)
    assert os.listdir(scratch) == []  # valgrind's directory, gone
    if os.environ.get("RTMEM_SANITIZED") == "1":
        pytest.skip("RTMEM_SANITIZED: the counts under valgrind are not checked")
    if not counted(d):
        assert "instructions per call: not counted" in r.stdout
        pytest.skip("no valgrind here: " + d["counts"]["why"])
    p = d["program"]
    first = {}
    for a in d["allocators"]:
        n = a["instructions"]
        if a["origin"] == "rtmem" and never_fits(d, a["name"]):
            assert n is None and a["instructions_why"] == "no pool fits this program", a
            first[a["name"]] = n
            continue
        assert n is not None and a["instructions_why"] is None, a
        # every replayed call counted, each a plausible call of an allocator
        assert n["allocs"] == p["allocs"] and 0 < n["frees"] <= p["frees"], (a["name"], n, p)
        assert 20 < n["alloc"] < 20000 and 10 < n["free"] < 20000, (a["name"], n)
        first[a["name"]] = n
        assert "  %s " % a["name"] in r.stdout.split("instructions per call")[1]
    assert "by instructions per call" in r.stdout
    # counted, not timed: the same figures on every run
    r2, d2 = replay(rtmem, tmp_dir, path, count=True)
    assert r2.returncode == 0, explain(r2)
    assert {a["name"]: a["instructions"] for a in d2["allocators"]} == first


def test_no_count_and_no_valgrind_say_so(rtmem, tmp_dir, traces):
    path, _ = traces["basic"]
    r, d = replay(rtmem, tmp_dir, path, "--no-count")
    assert r.returncode == 0, explain(r)
    assert d["counts"] == {"valgrind": None, "why": "not asked (--no-count)"}
    assert all(a["instructions"] is None for a in d["allocators"])
    assert "not counted: not asked (--no-count)" in r.stdout
    # a PATH without valgrind: the replay goes on, and says why there are no counts
    env = dict(os.environ, PATH="/nonexistent")
    js = os.path.join(tmp_dir, "r.json")
    os.unlink(js)
    r = run(rtmem, "replay", "--quick", "--json", js, path, env=env)
    assert r.returncode == 0, explain(r)
    d = load_json(js)
    assert counted(d) is False
    assert all(a["instructions"] is None for a in d["allocators"])


def test_the_peers_replay_through_their_own_malloc_family(rtmem, tmp_dir, traces):
    peers = installed_peers(rtmem)
    if not peers:
        pytest.skip("no peer installed (jemalloc, mimalloc, tcmalloc, rpmalloc)")
    path, _ = traces["basic"]
    r, d = replay(rtmem, tmp_dir, path, "--kinds", ",".join(["tlsf"] + peers), count=True)
    assert r.returncode == 0, explain(r)
    a = by_name(d)
    p = d["program"]
    for name in peers:
        x = a[name]
        assert x["origin"] == "peer" and x["replayed"] and x["why_not"] is None, x
        assert x["timed_failures"] == 0
        # every call replayed on it: the realloc and the aligned ones too
        assert x["alloc"]["count"] == p["allocs"] and x["free"]["count"] > 0, (name, x["alloc"])
        assert "min_pool" not in x and "bound" not in x  # no pool to size
        if d["counts"]["valgrind"] and os.environ.get("RTMEM_SANITIZED") != "1":
            assert x["instructions"]["allocs"] == p["allocs"], x
    # ranked as a contender? no: the verdict advises rtmem kinds only
    assert d["verdict"]["advised"]["kind"] == "tlsf"


def test_a_valgrind_that_gives_up_is_reported_not_fatal(rtmem, tmp_dir, traces):
    """A valgrind that cannot read this rtmem (older than its compiler's
    debug information): the replay goes on, and each allocator says why
    it has no counts, in valgrind's words."""
    path, _ = traces["basic"]
    shim = os.path.join(tmp_dir, "bin")
    os.mkdir(shim)
    with open(os.path.join(shim, "valgrind"), "w") as f:
        f.write("#!/bin/sh\n"
                "case \"$1\" in --version) echo valgrind-9.9.9; exit 0;; esac\n"
                "echo '==1== Valgrind: debuginfo reader: Possibly corrupted debuginfo file.' >&2\n"
                "echo \"==1== Valgrind: I can't recover.  Giving up.  Sorry.\" >&2\n"
                "echo '==1== ' >&2\n"
                "exit 1\n")
    os.chmod(os.path.join(shim, "valgrind"), 0o755)
    env = dict(os.environ, PATH=shim + ":" + os.environ["PATH"])
    r, d = replay(rtmem, tmp_dir, path, "--kinds", "tlsf,glibc", env=env, count=True)
    assert r.returncode == 0, explain(r)
    if d["counts"]["valgrind"] is None:  # a sanitized build or an emulator: never tried
        assert counted(d) is False
        return
    assert d["counts"]["valgrind"] == "valgrind-9.9.9"
    for a in d["allocators"]:
        assert a["instructions"] is None, a
        assert a["instructions_why"] == (
            "valgrind exited with status 1: Valgrind: debuginfo reader: Possibly corrupted "
            "debuginfo file. (a valgrind older than the compiler that built rtmem?)"), a


# ---- plugins -------------------------------------------------------------------------

def test_a_plugin_is_searched_timed_and_ranked_as_a_kind(rtmem, tmp_dir, traces, files):
    """TLSF through the plugin ABI (it has realloc and aligned_alloc): the
    program's every call replayed on it, its smallest pool fits and one
    granule less fails (replayed at --pool, as a user would check), its
    figures beside tlsf's, no bound claimed for it, ranked in the verdict."""
    path, _ = traces["basic"]
    r, d = replay(rtmem, tmp_dir, path, "--plugin", files["tlsf_plugin"], "--kinds",
                  "tlsf,glibc,tlsf-plugin")
    assert r.returncode == 0, explain(r)
    x = by_name(d)["tlsf-plugin"]
    p = d["program"]
    assert x["origin"] == "plugin" and x["replayed"] and x["why_not"] is None, x
    assert x["note"] is None  # its table has realloc: nothing emulated
    assert x["fits"] and x["min_pool"] > p["peak_live_bytes"], x
    assert x["below_fails"] == x["min_pool"] - d["params"]["granule"], x
    assert x["timed_failures"] == 0 and x["alloc"]["count"] == p["allocs"], x
    assert x["touched_bytes"] > 0 and x["fragmentation_at_peak"] is not None, x
    assert x["bound"] is None and "plugin" in x["bound_why"], x
    assert "tlsf-plugin" in d["verdict"]["ranking"]
    assert re.search(r"^  tlsf-plugin +no bound: ", r.stdout, re.M), explain(r)
    for pool, fails in ((x["min_pool"], False), (x["below_fails"], True)):
        r2, at = replay(rtmem, tmp_dir, path, "--plugin", files["tlsf_plugin"], "--kinds",
                        "tlsf-plugin", "--pool", str(pool))
        assert r2.returncode == 0, explain(r2)
        assert (by_name(at)["tlsf-plugin"]["pool_failures"] > 0) == fails, (pool, fails)


def test_a_plugin_without_realloc_or_aligned_alloc(rtmem, tmp_dir, traces, files):
    """The bump plugin has neither: on a program that asks for a page's
    alignment it is not replayed, and says why; on one that reallocs, each
    realloc is its alloc, a copy and its free, and the note says so."""
    path, _ = traces["basic"]
    r, d = replay(rtmem, tmp_dir, path, "--plugin", files["bump_plugin"], "--kinds", "tlsf,bump")
    assert r.returncode == 0, explain(r)
    x = by_name(d)["bump"]
    assert not x["replayed"] and "aligned to 4096" in x["why_not"], x
    assert "aligned_alloc" in x["why_not"]
    trace = os.path.join(tmp_dir, "grow.trace")
    t = [(1, 0, 1000, 100, 0x10000), (3, 2, 2000, 0x10000, 300, 0x20000, 1),
         (3, 4, 3000, 0x20000, 50, 0x30000, 3), (5, 5, 4000, 0x30000)]
    write_trace(trace, {51: t})
    r, d = replay(rtmem, tmp_dir, trace, "--plugin", files["bump_plugin"], "--kinds", "bump")
    assert r.returncode == 0, explain(r)
    x = by_name(d)["bump"]
    assert x["replayed"] and x["fits"] and x["timed_failures"] == 0, x
    assert "the 2 reallocs are its alloc, a copy and its free" in x["note"], x
    assert x["note"] in r.stdout
    # old and new block live together in each realloc: 400 bytes asked
    assert d["program"]["limits"]["max_live"] == 400, d["program"]
    assert x["min_pool"] >= 400, x


def test_a_plugins_instructions_are_counted(rtmem, tmp_dir, traces, files):
    """Its counted replay loads it in valgrind's process (--plugin passed
    on): every call counted, as a kind's."""
    if os.environ.get("RTMEM_SANITIZED") == "1":
        pytest.skip("RTMEM_SANITIZED: the counts under valgrind are not checked")
    path, _ = traces["basic"]
    r, d = replay(rtmem, tmp_dir, path, "--plugin", files["tlsf_plugin"], "--kinds",
                  "tlsf-plugin", count=True)
    assert r.returncode == 0, explain(r)
    if not counted(d):
        pytest.skip("no valgrind here: " + d["counts"]["why"])
    x = by_name(d)["tlsf-plugin"]
    n = x["instructions"]
    assert n is not None, x
    assert n["allocs"] == d["program"]["allocs"] and 20 < n["alloc"] < 20000, n
