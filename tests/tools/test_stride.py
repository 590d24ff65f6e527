"""rtmem stride: a --quick run's JSON has the envelope, the caches sysfs
lists for the measured CPU, every pattern for every size, and figures that
agree with one another (positive, finite, min <= p10 <= median <= p90 <=
max, the default sizes doubling up to 4x the last-level cache, each size's
level the smallest cache it fits in, the jumps computed from the points);
--sizes measures exactly the sizes named; the caches are read from a
made-up sysfs tree (the test hook RTMEM_STRIDE_SYSFS), and a missing one
degrades to unknown caches and an assumed 64-byte line; a run that fails,
is refused or is interrupted leaves an existing result file as it was,
and nothing behind; a run without privileges says so and still measures;
bad usage exits 2 with the message and the --help hint. RTMEM_SANITIZED
in the environment: the build is sanitized, and the timed repetitions take
the page faults of the sanitizer's shadow memory.

No assertion depends on how fast the machine is: the figures are checked
against each other, never against a bound in nanoseconds.
"""
import math
import os
import re
import signal

import pytest

from rtmemtest import (EMULATED, as_nobody, assert_envelope, assert_kept, explain, left_in,
                       load_json, previous_result, run, signal_at, started)

PATTERNS = ["stride_1", "stride_16", "chase"]
RESULT = ["median_ns_per_access", "min_ns_per_access", "max_ns_per_access", "p10_ns_per_access",
          "p90_ns_per_access", "reps", "accesses", "passes", "rep_ns_min", "minor_faults"]
KIB, MIB = 1024, 1024 * 1024
# The CPU a run measures by default: the last this process may use.
CPU = max(os.sched_getaffinity(0))
# The shortest runs: one round, one repetition of 100 us per point.
FAST = ["--reps", "1", "--rounds", "1", "--rep-time", "100us"]


def level_of(caches, size):
    """The smallest data or unified cache size fits in, as the tool names it."""
    data = [c for c in caches if c["type"] != "Instruction" and c["bytes"]]
    for c in data:
        if size <= c["bytes"]:
            return c["name"]
    return "memory" if data else "unknown"


def assert_doc(what, d, sizes=None, reps=None):
    """The members every document has, and how they agree."""
    assert d is not None, "%s: the result file is not JSON" % what
    assert [p["id"] for p in d["patterns"]] == PATTERNS, "%s: %s" % (what, d["patterns"])
    assert d["patterns"][2]["stride_bytes"] == d["line_bytes"], \
        "%s: the chase does not step one cache line: %s" % (what, d["patterns"])
    points = d["points"]
    got = [p["bytes"] for p in points]
    assert got and got == sorted(set(got)), "%s: sizes not ascending, each once: %s" % (what, got)
    if sizes is not None:
        assert got == sizes, "%s: not the sizes asked" % what
    assert d["buffer"]["bytes"] == got[-1], \
        "%s: the buffer is not the largest size: %s" % (what, d["buffer"])
    for p in points:
        at = "%s: %d bytes" % (what, p["bytes"])
        assert p["level"] == level_of(d["caches"], p["bytes"]), \
            "%s: not in %s: %s" % (at, p["level"], d["caches"])
        for pat in PATTERNS:
            r = p.get(pat)
            assert isinstance(r, dict) and list(r.keys()) == RESULT, \
                "%s: %s's members: %s" % (at, pat, r)
            order = [r["min_ns_per_access"], r["p10_ns_per_access"], r["median_ns_per_access"],
                     r["p90_ns_per_access"], r["max_ns_per_access"]]
            assert all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0
                       for v in order) and order == sorted(order), \
                "%s, %s: not 0 < min <= p10 <= median <= p90 <= max: %s" % (at, pat, order)
            assert r["accesses"] > 0 and r["rep_ns_min"] > 0, "%s, %s: %s" % (at, pat, r)
            if reps is not None:
                assert r["reps"] == reps, "%s, %s: not %d repetitions: %s" % (at, pat, reps, r)
            # Whole passes when a repetition holds one or more, else a slice.
            assert r["passes"] < 1 or r["passes"] == int(r["passes"]), \
                "%s, %s: neither whole passes nor a slice of one: %s" % (at, pat, r)
        ratio = p["stride_16"]["median_ns_per_access"] / p["stride_1"]["median_ns_per_access"]
        assert abs(p["ratio_16_over_1"] - ratio) <= 1e-6 * ratio, \
            "%s: the ratio is not stride 16 over stride 1: %s" % (at, p)
    assert d["rep_ns_min"] == min(p[pat]["rep_ns_min"] for p in points for pat in PATTERNS), \
        "%s: not the shortest repetition of the run: %s" % (what, d["rep_ns_min"])
    assert d["minor_faults_timed"] == sum(p[pat]["minor_faults"] for p in points
                                          for pat in PATTERNS), \
        "%s: the page faults do not add up: %s" % (what, d["minor_faults_timed"])
    assert_jumps(what, d)


def assert_jumps(what, d):
    """Each jump as the report defines it: between two measured sizes, at
    least x1.5, from the lowest p10 at a size or any larger one."""
    points = d["points"]
    index = {p["bytes"]: i for i, p in enumerate(points)}
    for pat in PATTERNS:
        floors = [min(p[pat]["p10_ns_per_access"] for p in points[i:])
                  for i in range(len(points))]
        last = -1
        for j in d["jumps"][pat]:
            a, b = index.get(j["from_bytes"]), index.get(j["to_bytes"])
            assert a is not None and b is not None and last <= a < b, \
                "%s: a %s jump not between measured sizes, in order: %s" % (what, pat, j)
            last = b
            assert j["from_ns"] == floors[a] and j["to_ns"] == floors[b] and \
                j["factor"] >= 1.5 and abs(j["factor"] - j["to_ns"] / j["from_ns"]) < 1e-6, \
                "%s: a %s jump not of x1.5 or more between floors: %s %s" % (what, pat, j, floors)
            past = [c["name"] for c in d["caches"] if c["type"] != "Instruction" and c["bytes"]
                    and j["from_bytes"] <= c["bytes"] < j["to_bytes"]]
            assert j["past"] == past and j["to_level"] == points[b]["level"], \
                "%s: a %s jump: not the caches it passes (%s): %s" % (what, pat, past, j)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text + "\n")


def fake_sysfs(root, cpu, caches):
    """A made-up cpuN/cache tree: caches as (level, type, size, line, shared)."""
    for i, (level, typ, size, line, shared) in enumerate(caches):
        d = os.path.join(root, "cpu%d" % cpu, "cache", "index%d" % i)
        write(os.path.join(d, "level"), str(level))
        write(os.path.join(d, "type"), typ)
        write(os.path.join(d, "size"), size)
        if line:
            write(os.path.join(d, "coherency_line_size"), str(line))
        write(os.path.join(d, "shared_cpu_list"), shared)


def unwrapped(text):
    """The report with its header's items unwrapped (they wrap at 80)."""
    return re.sub(r"\n +", " ", text)


# A quick run on this machine's caches.

@pytest.fixture(scope="module")
def quick(rtmem, module_dir):
    """`stride --quick`: (its result, its document, its arguments)."""
    path = os.path.join(module_dir, "q.json")
    args = ["--quick", "--json", path]
    r = run(rtmem, "stride", *args, timeout=300)
    assert r.returncode == 0, explain(r)
    return r, load_json(path), args


def test_quick_writes_the_envelope_and_passes_with_3_repetitions_in_one_round(quick):
    _, d, args = quick
    assert_envelope(d, "stride", "rtmem-stride/1", args)
    assert d["passed"] is True and d["params"]["quick"] is True and \
        d["params"]["reps"] == 3 and d["params"]["rounds"] == 1, (d["passed"], d["params"])
    assert d["seed"] == d["params"]["seed"] == 1, "the chase's seed: %s" % d["seed"]


def test_quick_is_pinned_to_the_cpu_it_measures(quick):
    d = quick[1]
    assert d["real_time"]["affinity"]["granted"] is True and \
        d["real_time"]["cpu_now"] == d["cpu"], (d["cpu"], d["real_time"])


def test_quick_figures_agree_with_one_another(quick):
    assert_doc("quick", quick[1], reps=3)


def test_quick_gives_both_ratios_per_access_and_per_pass(quick):
    r, d, _ = quick
    for p in d["points"]:
        per_access, per_pass = p["ratio_16_over_1"], p["pass_ratio_1_over_16"]
        assert per_access > 0 and abs(per_pass * per_access - 16) < 1e-6 * 16, p
    assert "16/1   pass" in r.stdout, r.stdout


# --first-touch: the published program's form, each loop timed whole on a
# fresh buffer: loop 1 takes a fault per page, loop 2 and loop 1 again none.
def test_first_touch_times_the_published_loops_and_loop_1_takes_the_faults(rtmem, tmp_dir):
    path = os.path.join(tmp_dir, "f.json")
    r = run(rtmem, "stride", "--first-touch", "--sizes", "8M", "--reps", "3", "--json", path,
            timeout=300)
    assert r.returncode == 0, explain(r)
    d = load_json(path)
    assert d["passed"] is True and len(d["first_touch"]) == 1, d.get("first_touch")
    ft = d["first_touch"][0]
    assert ft["bytes"] == 8 << 20 and ft["reps"] == 3, ft
    pages = (8 << 20) // os.sysconf("SC_PAGESIZE")
    first, loop2, again = ft["loop1_first_touch"], ft["loop2"], ft["loop1_again"]
    if not EMULATED:
        # every page faulted in by loop 1, about twice (the read maps the
        # zero page, the write copies it; fewer if the kernel maps larger
        # folios at a fault; a few more in a sanitizer's build, whose shadow
        # memory faults in beside), none by the loops after it
        assert 3 <= first["minor_faults"] <= 3 * 3 * pages and loop2["minor_faults"] == 0 and \
            again["minor_faults"] == 0, ft
    for k in (first, loop2, again):
        assert 0 < k["p10_ns"] <= k["median_ns"] <= k["p90_ns"], ft
    assert abs(ft["ratio_loop1_over_loop2"] - first["median_ns"] / loop2["median_ns"]) < 1e-6 * \
        ft["ratio_loop1_over_loop2"], ft
    assert abs(ft["ratio_16_over_1_per_access"] - 16 * loop2["median_ns"] / again["median_ns"]) \
        < 1e-6 * ft["ratio_16_over_1_per_access"], ft
    said = unwrapped(r.stdout)
    assert "the published program's ratio, loop 1's first touch included" in said, r.stdout
    assert "loop 1, stride 1 int, first touch" in r.stdout, r.stdout


def test_quick_sizes_double_from_4k_up_to_4x_the_last_level_cache(quick):
    d = quick[1]
    data = [c for c in d["caches"] if c["type"] != "Instruction" and c["bytes"]]
    if not data:
        pytest.skip("sysfs lists no data cache here")
    l1d = [c["bytes"] for c in data if c["level"] == 1]
    s = min(4 * KIB, l1d[0] // 2) if l1d else 4 * KIB
    top = 4 * max(c["bytes"] for c in data)
    want = []
    while s < top:
        want.append(s)
        s *= 2
    want.append(top)
    assert [p["bytes"] for p in d["points"]] == want


def test_quick_report_has_its_sections_one_round_and_a_row_per_size(quick):
    r, d, args = quick
    for text in ("rtmem stride: the cost of touching memory", "caches     : cpu %d: " % CPU,
                 "stride 1 int     stride 16 ints       random chase",
                 "where each pattern's cost per access jumps", "results written to " + args[-1],
                 "round 1 of 1: every size measured"):
        assert text in r.stdout, "the report has no '%s':\n%s" % (text, explain(r))
    rows = [ln for ln in r.stdout.splitlines() if ln.endswith(tuple("0123456789-"))
            and (" KiB  " in ln or " MiB  " in ln or " GiB  " in ln)]
    assert len(rows) == len(d["points"]), "not a row per size: %s" % rows


def test_quick_takes_no_page_fault_during_the_timed_repetitions(quick):
    # A prefaulted buffer takes no page fault; under a sanitizer its shadow
    # memory does, and under qemu-user the emulator's own memory does
    # (its translated code, now and then: 33 in one CI run on arm64).
    r = quick[0]
    faults = re.search(r"^page faults: (\d+) during the timed repetitions$", r.stdout, re.M)
    assert faults, explain(r)
    assert os.environ.get("RTMEM_SANITIZED") or EMULATED or faults.group(1) == "0", \
        faults.group(0)


def test_sizes_are_measured_as_named_once_each_ascending(rtmem, tmp_dir):
    # (out of order, repeated)
    path = os.path.join(tmp_dir, "s.json")
    args = ["--sizes", "64K,4K", "--sizes", "1M,4K", "--reps", "5", "--json", path]
    r = run(rtmem, "stride", *args, timeout=300)
    d = load_json(path)
    assert r.returncode == 0 and d, explain(r)
    assert_envelope(d, "stride", "rtmem-stride/1", args)
    assert_doc("--sizes", d, sizes=[4 * KIB, 64 * KIB, MIB], reps=5)
    assert d["params"]["sizes"] == [4 * KIB, 64 * KIB, MIB] and d["params"]["rounds"] == 3, \
        d["params"]


# A made-up sysfs: a 48K L1d, a 1280K L2, a 3M L3 with 128-byte lines.

@pytest.fixture(scope="module")
def made_up(rtmem, module_dir):
    """A run on a made-up sysfs: (its result, its document, the tree)."""
    fake = os.path.join(module_dir, "sys")
    fake_sysfs(fake, CPU, [(1, "Data", "48K", 128, "0"), (1, "Instruction", "32K", 128, "0"),
                           (2, "Unified", "1280K", 128, "0"), (3, "Unified", "3M", 128, "0-3")])
    path = os.path.join(module_dir, "f.json")
    r = run(rtmem, "stride", *FAST, "--json", path, env={"RTMEM_STRIDE_SYSFS": fake},
            timeout=300)
    d = load_json(path)
    assert r.returncode == 0 and d, explain(r)
    return r, d, fake


def test_made_up_sysfs_figures_agree_with_one_another(made_up):
    assert_doc("made-up sysfs", made_up[1], reps=1)


def test_made_up_sysfs_caches_are_read_with_their_128_byte_lines(made_up):
    _, d, fake = made_up
    assert [(c["name"], c["bytes"], c["line_bytes"], c["shared_cpu_list"])
            for c in d["caches"]] == [("L1d", 48 * KIB, 128, "0"), ("L1i", 32 * KIB, 128, "0"),
                                      ("L2", 1280 * KIB, 128, "0"), ("L3", 3 * MIB, 128, "0-3")]
    assert d["caches_dir"] == fake and d["line_bytes"] == 128 and \
        d["line_bytes_assumed"] is False, (d["caches_dir"], d["line_bytes"],
                                           d["line_bytes_assumed"])


def test_made_up_sysfs_sizes_double_from_4k_to_4x_the_l3_in_their_levels(made_up):
    d = made_up[1]
    assert [p["bytes"] for p in d["points"]] == [4 * KIB << i for i in range(12)] + [12 * MIB]
    # 32K fits the L1d, 64K to 1M the L2.
    assert [p["level"] for p in d["points"]][3:7] == ["L1d", "L2", "L2", "L2"], d["points"]


def test_made_up_sysfs_header_lists_the_caches(made_up):
    r = made_up[0]
    assert "L1d 48 KiB, L1i 32 KiB, L2 1280 KiB, L3 3 MiB (shared by cpus 0-3)" in \
        unwrapped(r.stdout), "the header:\n" + r.stdout[:1000]


def test_a_small_l1d_starts_the_sizes_at_half_of_it_and_max_size_bounds_them(rtmem, tmp_dir):
    small = os.path.join(tmp_dir, "small")
    fake_sysfs(small, CPU, [(1, "Data", "4K", 64, "0"), (2, "Unified", "64K", 64, "0")])
    path = os.path.join(tmp_dir, "m.json")
    r = run(rtmem, "stride", *FAST, "--max-size", "24K", "--json", path,
            env={"RTMEM_STRIDE_SYSFS": small}, timeout=300)
    d = load_json(path)
    assert r.returncode == 0 and d, explain(r)
    assert_doc("--max-size", d, sizes=[2 * KIB, 4 * KIB, 8 * KIB, 16 * KIB, 24 * KIB])
    assert d["params"]["max_size_bytes"] == 24 * KIB, d["params"]


def test_without_sysfs_caches_are_unknown_and_64_byte_lines_assumed_and_said(rtmem, tmp_dir):
    empty = os.path.join(tmp_dir, "empty")
    os.mkdir(empty)
    path = os.path.join(tmp_dir, "e.json")
    r = run(rtmem, "stride", *FAST, "--sizes", "4K,8K", "--json", path,
            env={"RTMEM_STRIDE_SYSFS": empty}, timeout=300)
    d = load_json(path)
    assert r.returncode == 0 and d, explain(r)
    assert_doc("without sysfs", d, sizes=[4 * KIB, 8 * KIB])
    assert d["caches"] == [] and d["line_bytes"] == 64 and d["line_bytes_assumed"] is True and \
        all(p["level"] == "unknown" for p in d["points"]), d
    assert ("caches     : cpu %d: UNKNOWN: no cache is listed in %s/cpu%d/cache" %
            (CPU, empty, CPU)) in unwrapped(r.stdout), "the header:\n" + r.stdout[:1000]
    assert "cache line 64 B ASSUMED (sysfs does not give it)\n" in r.stdout, \
        "the header:\n" + r.stdout[:1000]


# A run that fails (its report cannot be written), is refused, or is
# interrupted leaves the previous result as it was, and nothing behind.

@pytest.fixture
def previous(tmp_dir):
    """A previous result in a directory of its own: its path."""
    return previous_result(os.path.join(tmp_dir, "s.json"))
    assert left_in(os.path.dirname(previous), ["s.json"]) == [], "left behind"


def test_a_run_whose_report_cannot_be_written_fails_and_keeps_the_previous_result(rtmem, previous):
    with open("/dev/full", "w") as full:
        r = run(rtmem, "stride", *FAST, "--sizes", "4K", "--json", previous, stdout=full)
    assert r.returncode == 1 and "No space left on device" in r.stderr, explain(r)
    assert_kept(previous)


def test_bad_usage_with_json_keeps_the_previous_result(rtmem, previous):
    r = run(rtmem, "stride", "--reps", "0", "--json", previous)
    assert r.returncode == 2, explain(r)
    assert_kept(previous)


def test_sigint_ends_the_run_at_once_and_keeps_the_previous_result(rtmem, previous):
    # Interrupted once the header is out: the run measures (for minutes).
    with started(rtmem, "stride", "--sizes", "4K,8K,16K,32K", "--reps", "1000", "--rep-time",
                 "10ms", "--json", previous) as p:
        r = signal_at(p, "repetitions: ", signal.SIGINT, timeout=300)
    assert r.returncode == -signal.SIGINT and "round 1 of 3" not in r.stdout, explain(r)
    assert_kept(previous)


def test_a_run_without_privileges_says_so_and_still_measures(rtmem, tmp_dir):
    # As nobody, when this test may switch to it; otherwise this test is
    # unprivileged already.
    unpriv = as_nobody("test_stride", rtmem)
    if unpriv is None:
        pytest.skip("root cannot run rtmem as nobody here")
    n_dir = os.path.join(tmp_dir, "nobody")
    os.mkdir(n_dir)
    os.chmod(tmp_dir, 0o711)
    os.chmod(n_dir, 0o777)
    path = os.path.join(n_dir, "u.json")
    r = run(*unpriv, rtmem, "stride", *FAST, "--sizes", "4K,64K", "--json", path, timeout=300)
    d = load_json(path)
    assert r.returncode == 0 and d, explain(r)
    assert_doc("without privileges", d, sizes=[4 * KIB, 64 * KIB])
    fifo = d["real_time"]["fifo"]
    assert d["real_time_granted"] == fifo["granted"] and (fifo["granted"] or fifo["error"]), \
        d["real_time"]
    if not fifo["granted"]:
        assert "NOT RT     : SCHED_FIFO refused" in r.stdout, explain(r)


# Bad usage: exit status 2, the message, the hint; nothing run.
USAGE = [
    (["--sizes", "1000"], "--sizes: '1000' is out of range [1024, 4294967296] bytes"),
    (["--sizes", "1500K,8G"], "--sizes: '8G' is out of range"),
    (["--sizes", "1025"], "--sizes: '1025' is not a multiple of 1K"),
    (["--sizes", "4K,,8K"], "--sizes: '' is not a byte count"),
    (["--sizes", ",".join("%dK" % i for i in range(1, 66))],
     "--sizes: at most 64 sizes; '65K' is one more"),
    (["--max-size", "1500"], "--max-size: '1500' is not a multiple of 1K"),
    (["--max-size", "5G"], "--max-size: '5G' is out of range"),
    (["--sizes", "4K", "--max-size", "1M"], "--max-size bounds the default sizes"),
    (["--no-rt", "--prio", "50"], "--no-rt runs under SCHED_OTHER: --prio would not be used"),
    (["--reps", "0"], "--reps: '0' is out of range [1, 1000]"),
    (["--rounds", "0"], "--rounds: '0' is out of range [1, 100]"),
    (["--reps", "2"], "--rounds (3) is more than --reps (2)"),
    (["--rep-time", "10us"], "--rep-time: '10us' is out of range [100us, 1s]"),
    (["--thp", "maybe"], "--thp: 'maybe' is not one of default, on, off"),
    (["--prio", "100"], "--prio: '100' is out of range [1, 99]"),
    (["--first-touch", "--rounds", "1"], "--first-touch times whole loops on fresh buffers"),
    (["--first-touch", "--thp", "on"], "--first-touch times whole loops on fresh buffers"),
    (["--nosuch"], "unknown option '--nosuch'"),
    (["operand"], "unexpected argument 'operand'"),
]


@pytest.mark.parametrize("args,message", USAGE,
                         ids=[" ".join(a) if len(a[-1]) < 40 else "--sizes 1K,...,65K"
                              for a, _ in USAGE])
def test_bad_usage_exits_2_with_the_message_and_the_help_hint(rtmem, args, message):
    r = run(rtmem, "stride", *args)
    assert r.returncode == 2, explain(r)
    assert ("rtmem stride: " + message) in r.stderr, explain(r)
    assert "Try 'rtmem stride --help'." in r.stderr and r.stdout == "", explain(r)


def test_help_gives_the_repetitions_rounds_and_rep_time_defaults(rtmem):
    # (that --help is a synopsis of the manual's options: test_docs.py)
    r = run(rtmem, "stride", "--help")
    words = " ".join(r.stdout.split())
    for text in ("(default 11; --quick 3)", "(default 3; --quick 1)", "(default 1ms;"):
        assert text in words, "--help has no '%s':\n%s" % (text, explain(r))
