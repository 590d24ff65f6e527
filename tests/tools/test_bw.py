"""rtmem bw: a --quick run's JSON has the envelope, every method at every
size, every preparation and cache state, with figures that agree with one
another (positive, min <= p10 <= median <= p90 <= max, mbw's average
between min and max) and every copy checked; the preparations move the
page faults where they should (a fresh destination faults inside the copy,
a prefaulted, locked or memset one in its preparation and never in the
copy), mlock's VmLck is read back every time; the perf software fault
count agrees with getrusage's; hardware counters missing is said, not an
error; glibc's thresholds are read at run time (GLIBC_TUNABLES moves them,
and the default sizes bracket them); the dumb loop calls no memcpy
(objdump, with the block dispatcher that does as the control); device
nodes as source and destination (/dev/zero); a regular file is refused as
a destination and left as it was; the memory-share refusal; a run that is
interrupted leaves an existing result file as it was, and nothing behind;
a run without privileges says so and still measures; bad usage exits 2
with the message and the --help hint.

No assertion depends on how fast the machine is.
"""
import os
import re
import shutil
import signal
import stat
import subprocess

import pytest

from rtmemtest import (BITS, EMULATED, MACHINE, OBJDUMP, as_nobody, assert_envelope, assert_kept,
                       explain, left_in, load_json, mem_available, previous_result, run, signal_at,
                       started)

METHODS = ["memcpy", "dumb", "mcblock", "mcblock-same"]
PREPS = ["none", "prefault", "mlock", "memset"]
STATES = ["warm", "flushed", "nt"]
STAT = ["bytes", "copies_per_rep", "reps", "avg_mib_s", "min_mib_s", "max_mib_s", "median_mib_s",
        "p10_mib_s", "p90_mib_s", "median_ns_per_copy", "minor_faults_per_copy",
        "major_faults_per_copy", "counters_per_copy"]
EVENTS = ["cache_references", "cache_misses", "llc_loads", "llc_load_misses", "minor_faults",
          "major_faults"]
KIB, MIB = 1024, 1024 * 1024
PAGE = os.sysconf("SC_PAGE_SIZE")
X86 = MACHINE in ("x86_64", "i686")
# glibc's thresholds are compared with what this (64-bit) Python's loader lists
NATIVE_X86_64 = MACHINE == "x86_64"


def assert_stat(what, s, reps, counters):
    assert isinstance(s, dict) and list(s.keys()) == STAT, "%s: its members: %s" % (what, s)
    order = [s["min_mib_s"], s["p10_mib_s"], s["median_mib_s"], s["p90_mib_s"], s["max_mib_s"]]
    if not EMULATED:  # the emulator's timings: a copy may take no tick of its counter
        assert all(v > 0 for v in order) and order == sorted(order), \
            "%s: not 0 < min <= p10 <= median <= p90 <= max: %s" % (what, order)
        assert s["min_mib_s"] * 0.999 <= s["avg_mib_s"] <= s["max_mib_s"] * 1.001, \
            "%s: mbw's average not between min and max: %s" % (what, s)
    assert s["reps"] == reps and s["copies_per_rep"] >= 1, \
        "%s: not %d repetitions: %s" % (what, reps, s)
    c = s["counters_per_copy"]
    assert list(c.keys()) == EVENTS and \
        all((c[e] is None) == (not counters["events"][e]["available"]) for e in EVENTS), \
        "%s: not a counter per event, null where unavailable: %s" % (what, c)


def assert_doc(what, d, sizes=None, reps=3):
    assert d is not None, "%s: the result file is not JSON" % what
    assert d["verified"] is True and d["mismatch"] == "" and d["passed"] is True, \
        "%s: not every copy checked: %s" % (what, d["mismatch"])
    counters = d["counters"]
    assert list(counters["events"].keys()) == EVENTS, "%s: the counters: %s" % (what, counters)
    if not counters["hardware"]:
        assert counters["hardware_why"] != "" and \
            not any(counters["events"][e]["available"] for e in EVENTS[:4]), \
            "%s: no hardware counters, and not why: %s" % (what, counters)
    if d["methods"] is not None:
        got = [p["bytes"] for p in d["methods"]]
        if sizes is not None:
            assert got == sizes, "%s: the sizes" % what
        for p in d["methods"]:
            for m in METHODS:
                assert_stat("%s: %s at %d" % (what, m, p["bytes"]), p.get(m), reps, counters)
    if d["cache"] is not None:
        c = d["cache"]
        assert c["flush_method"] in (["clflushopt", "clflush"] if X86 else
                                     ["dc civac", "eviction buffer walk", "none"]), \
            "%s: the flush method: %s" % (what, c)
        for p in c["points"]:
            for s in STATES:
                if s == "nt" and not c["nt_copy"]:
                    assert p[s] is None, "%s: no nt copy, yet not null: %s" % (what, p)
                    continue
                at = "%s: cache %s at %d" % (what, s, p["bytes"])
                assert_stat(at, p[s], reps, counters)
                # Source and destination are prefaulted: no copy faults (the
                # emulator's own faults aside).
                assert p[s]["minor_faults_per_copy"] == 0 or EMULATED, \
                    "%s: page faults: %s" % (at, p[s])


def assert_prep(what, d, anon=True):
    pr = d["prep"]
    assert pr is not None and list(pr.keys()) == ["bytes"] + PREPS, \
        "%s: the preparations: %s" % (what, pr)
    none = pr["none"]
    # Fresh pages each repetition: the copy takes their faults (fewer with
    # transparent huge pages, never none).
    assert none["copy"]["minor_faults_per_copy"] >= 1 and none["lock_state"] == "not locked", \
        "%s: none: the copy does not fault its pages in: %s" % (what, none)
    for p in PREPS[1:]:
        r = pr[p]
        if p == "mlock" and r["lock_state"] in ("not locked", "IGNORED"):
            continue  # refused, or intercepted (a sanitizer's runtime): checked below
        # (Under qemu-user the faults are the emulator's too.)
        assert r["copy"]["minor_faults_per_copy"] == 0 or EMULATED, \
            "%s: %s: the copy takes page faults: %s" % (what, p, r["copy"])
        if anon and not EMULATED:  # (the emulator's faults)
            assert r["prep_minor_faults"] >= 3 and \
                r["prep_minor_faults"] > none["prep_minor_faults"], \
                "%s: %s: the preparation does not take them: %s, none: %s" % (what, p, r, none)
        if p != "mlock":
            assert r["locked_bytes_min"] == 0 == r["locked_bytes_max"], \
                "%s: %s: VmLck moved: %s" % (what, p, r)
    lk = pr["mlock"]
    if lk["lock_state"] == "locked":
        assert lk["locked_bytes_min"] == pr["bytes"] == lk["locked_bytes_max"], \
            "%s: mlock: VmLck not moved by the size every time: %s" % (what, lk)
    elif lk["lock_state"] == "IGNORED":
        # Under ASan or TSan mlock is a no-op that returns success: said so.
        assert lk["lock_errno"] == 0 and lk["locked_bytes_max"] == 0 and \
            "locked nothing" in lk["message"] and lk["copy"]["minor_faults_per_copy"] > 0, \
            "%s: mlock intercepted, not on record or the copy does not fault: %s" % (what, lk)
    else:
        assert lk["lock_state"] == "not locked" and lk["lock_errno"] != 0 and \
            lk["locked_bytes_max"] == 0, "%s: mlock refused, not on record: %s" % (what, lk)
    # The perf software counter and getrusage count the same faults.
    perf = none["copy"]["counters_per_copy"]["minor_faults"]
    if perf is not None:
        rus = none["copy"]["minor_faults_per_copy"]
        assert 0.9 * rus <= perf <= rus, \
            "%s: perf's faults (%s) are not getrusage's (%s)" % (what, perf, rus)


def list_tunables():
    """The dynamic loader's thresholds, as the tool should read them."""
    ldso = None
    with open("/proc/self/maps") as f:
        for line in f:
            m = re.search(r"(/\S*/ld-\S*\.so\S*)", line)
            if m:
                ldso = m.group(1)
                break
    if not ldso:
        return {}
    out = subprocess.run([ldso, "--list-tunables"], capture_output=True, text=True).stdout
    return {k: int(v, 0) for k, v in re.findall(r"glibc\.cpu\.(x86_\w+): (0x[0-9a-f]+)", out)}


def bw_json(rtmem, d, name, *args, env=None):
    """A run writing d/name: (its result, its document)."""
    path = os.path.join(d, name)
    r = run(rtmem, "bw", *args, "--json", path, timeout=300, env=env)
    return r, load_json(path)


# A quick run: every phase.

@pytest.fixture(scope="module")
def quick(rtmem, module_dir):
    """`bw --quick`: (its result, its document, its arguments)."""
    path = os.path.join(module_dir, "q.json")
    args = ["--quick", "--json", path]
    r = run(rtmem, "bw", *args, timeout=300)
    return r, load_json(path), args


def test_quick_checks_every_copy_and_writes_the_envelope(quick):
    r, d, args = quick
    assert r.returncode == 0 and "every copy checked" in r.stdout and \
        "as mbw gives them, at 1 MiB" in r.stdout, explain(r)
    assert_envelope(d, "bw", "rtmem-bw/1", args)


def test_quick_figures_agree_at_every_size_and_cache_state(quick):
    assert_doc("quick", quick[1], sizes=[4 * KIB, 64 * KIB, MIB])


def test_quick_preparations_move_the_page_faults_out_of_the_copy(quick):
    assert_prep("quick", quick[1])


def test_quick_source_and_destination_are_anonymous(quick):
    d = quick[1]
    src, dst = d["src"], d["dst"]
    assert src["source"] == "anon" and dst["bytes"] >= MIB and \
        src["lock_state"] in ("locked", "not locked", "IGNORED") and \
        (src["lock_state"] == "locked") == (src["locked_bytes"] > 0), (src, dst)


def test_no_hardware_counters_is_said_once_and_no_error(quick):
    r, d, _ = quick
    if d["counters"]["hardware"]:
        pytest.skip("hardware counters here")
    assert r.stdout.count("no hardware counters") == 1 and "FAILED" not in r.stdout, explain(r)


def test_glibcs_thresholds_are_the_ones_the_loader_lists(quick):
    tun = list_tunables()
    if not (NATIVE_X86_64 and tun.get("x86_non_temporal_threshold")):
        pytest.skip("not native x86_64, or the loader lists no thresholds")
    g = quick[1]["glibc"]
    assert g["read"] and g["non_temporal_threshold"] == tun["x86_non_temporal_threshold"] and \
        g["rep_movsb_threshold"] == tun["x86_rep_movsb_threshold"], (g, tun)


def test_glibc_tunables_move_the_thresholds_and_the_default_sizes_bracket_them(rtmem, tmp_dir):
    # Read at run time. Made-up caches keep the sizes small.
    if not (NATIVE_X86_64 and list_tunables()):
        pytest.skip("not native x86_64, or the loader lists no thresholds")
    fake = os.path.join(tmp_dir, "sysfs")
    for i, (lvl, typ, size) in enumerate([(1, "Data", "32K"), (2, "Unified", "256K")]):
        dd = os.path.join(fake, "cpu%d" % max(os.sched_getaffinity(0)), "cache", "index%d" % i)
        os.makedirs(dd)
        for name, val in (("level", lvl), ("type", typ), ("size", size),
                          ("coherency_line_size", 64), ("shared_cpu_list", "0")):
            with open(os.path.join(dd, name), "w") as f:
                f.write("%s\n" % val)
    r, d = bw_json(rtmem, tmp_dir, "t.json", "--only", "methods", "--reps", "1", "--rep-time",
                   "10us", env={"GLIBC_TUNABLES": "glibc.cpu.x86_non_temporal_threshold="
                                "0x100000:glibc.cpu.x86_rep_movsb_threshold=0x1000",
                                "RTMEM_STRIDE_SYSFS": fake})
    assert r.returncode == 0 and d, explain(r)
    g = d["glibc"]
    assert g["non_temporal_threshold"] == MIB and g["rep_movsb_threshold"] == 4 * KIB, g
    sizes = [p["bytes"] for p in d["methods"]]
    assert all(s in sizes for s in (MIB // 8 * 7, MIB, 3584, 4096)) and sizes[0] == KIB and \
        sizes[-1] == 64 * MIB, "not doubling 1K to 64M, bracketing each threshold: %s" % sizes
    assert d["prep"] is None and d["cache"] is None, "--only methods ran another phase"
    assert_doc("tunables", d, reps=1)


def test_dev_zero_as_source_and_destination(rtmem, tmp_dir):
    # (source: read-only; destination: shared)
    r, d = bw_json(rtmem, tmp_dir, "z.json", "--quick", "--only", "prep", "--src", "/dev/zero",
                   "--dst", "/dev/zero:0")
    assert r.returncode == 0 and d, explain(r)
    assert d["src"]["source"] == "device" and d["src"]["path"] == "/dev/zero" and \
        d["dst"]["path"] == "/dev/zero" and d["dst"]["offset"] == 0, (d["src"], d["dst"])
    assert d["methods"] is None and d["cache"] is None, "--only prep ran another phase"
    assert_prep("devices", d, anon=False)


def test_a_size_not_a_multiple_of_the_page_gives_no_false_vmlck_warning(rtmem, tmp_dir):
    r, d = bw_json(rtmem, tmp_dir, "p.json", "--quick", "--only", "prep", "--size", "4160")
    assert r.returncode == 0 and d and "VmLck did not move by" not in r.stdout, explain(r)
    # memset's residency is read after the memset.
    assert d["prep"]["memset"]["resident_bytes_min"] >= 4160, d["prep"]["memset"]


def test_a_spoiled_copy_fails_the_check(rtmem, tmp_dir):
    # The test hook RTMEM_BW_CORRUPT spoils one byte of each checked
    # destination; zeros to zeros too (the destination is spoiled before
    # the checked copy).
    r, d = bw_json(rtmem, tmp_dir, "c.json", "--quick", "--only", "cache", "--size", "64K",
                   "--src", "/dev/zero", env={"RTMEM_BW_CORRUPT": "1"})
    assert r.returncode == 1 and "FAILED" in r.stdout, explain(r)
    assert d and d["verified"] is False and "differs from the source" in d["mismatch"], \
        d and d["mismatch"]


def test_memfd_at_both_ends(rtmem, tmp_dir):
    # (the arena layer's other memory)
    r, d = bw_json(rtmem, tmp_dir, "m.json", "--quick", "--only", "prep", "--src", "memfd",
                   "--dst", "memfd")
    assert r.returncode == 0 and d, explain(r)
    assert d["src"]["source"] == "memfd" and d["dst"]["source"] == "memfd" and \
        d["src"]["path"] is None, (d["src"], d["dst"])
    assert_prep("memfd", d)


def test_a_hugetlb_destination_runs_when_the_pool_has_pages_else_says_why(rtmem):
    # (the pool is not changed here)
    free = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("HugePages_Free:"):
                free = int(line.split()[1])
    r = run(rtmem, "bw", "--quick", "--only", "cache", "--dst", "hugetlb", timeout=300)
    if free >= 2:
        assert r.returncode == 0 and "destination: hugetlb" in r.stdout, explain(r)
    else:
        # (A 32-bit program under qemu-user is refused before the pool is
        # asked: its huge page alignment cannot be had there.)
        assert r.returncode == 1 and "huge pages" in r.stderr and \
            ("nr_hugepages" in r.stderr or (EMULATED and BITS == 32)), explain(r)


def test_a_missing_device_is_named(rtmem):
    r = run(rtmem, "bw", "--quick", "--dst", "/dev/nonexistent-rtmem:0x1000")
    assert r.returncode == 1 and "/dev/nonexistent-rtmem" in r.stderr, explain(r)


@pytest.mark.parametrize("prefix", ["", "/sys/.."], ids=["FILE", "/sys/../FILE"])
def test_a_regular_file_destination_is_refused_and_left_as_it_was(rtmem, tmp_dir, prefix):
    # The decision is taken on the opened file, not the path's text.
    path = os.path.join(tmp_dir, "mine")
    previous_result(path)
    r = run(rtmem, "bw", "--quick", "--dst", prefix + path)
    assert r.returncode == 2 and "is a regular file" in r.stderr, explain(r)
    assert_kept(path, "the file")


def test_a_block_device_destination_is_refused_before_anything_maps_it(rtmem, tmp_dir):
    blk = os.path.join(tmp_dir, "blk")
    os.mknod(blk, 0o600 | stat.S_IFBLK, os.makedev(7, 200))
    r = run(rtmem, "bw", "--quick", "--dst", blk)
    assert r.returncode == 2 and "is a block device" in r.stderr, explain(r)


def test_a_pci_resource_path_with_colons_is_kept_whole(rtmem):
    pci = "/sys/bus/pci/devices/0000:00:7f.7/resource9"
    r = run(rtmem, "bw", "--quick", "--dst", pci)
    assert r.returncode == 1 and pci in r.stderr, explain(r)


def test_more_than_half_of_memavailable_is_refused(rtmem):
    big = (mem_available() // 2 // (1 << 20) + 1) << 20  # above half, in MiB
    if big > 16 << 30:
        pytest.skip("half of MemAvailable is more than --size's 16G")
    r = run(rtmem, "bw", "--only", "cache", "--size", str(big))
    assert r.returncode == 2 and "more than half of MemAvailable" in r.stderr, explain(r)


# The dumb loop calls no memcpy; the dispatcher, which does, is the control
# that the disassembly is read right.

@pytest.fixture(scope="module")
def disassembly(rtmem):
    """disassembly(sym): the body of sym in rtmem, and the memcpy or
    memmove it calls."""
    if not shutil.which(OBJDUMP):
        pytest.skip("no %s: the dumb loop's check not made" % OBJDUMP)

    def calls(sym):
        out = run(OBJDUMP, "-d", "--no-show-raw-insn", "--disassemble=" + sym, rtmem).stdout
        body = out.split("<%s>:" % sym, 1)[-1] if ("<%s>:" % sym) in out else ""
        return body, re.findall(r"\b(?:call|jmp|blx|bl|b)\s+\S*\s*<(mem(?:cpy|move)[^>]*)>",
                                body)
    return calls


def test_the_dumb_loop_calls_no_memcpy(disassembly):
    body, found = disassembly("bw_copy_dumb")
    assert body.strip() != "", "bw_copy_dumb not found in the disassembly"
    assert not found, "bw_copy_dumb calls %s:\n%s" % (found, body)


def test_the_dumb_loop_copies_with_no_rep_movs_and_no_vector_register(disassembly):
    body, _ = disassembly("bw_copy_dumb")
    vec = re.findall(r"\brep\S*\s+movs\w*|%[xyz]mm\d+|\bv\d+\.\d*[bhsdq]\b", body)
    assert not vec, "bw_copy_dumb uses %s:\n%s" % (vec, body)


def test_tk_cache_flush_flushes_with_clflush_or_dc_c(disassembly):
    body, _ = disassembly("tk_cache_flush")
    # (32-bit ARM has no user-space flush: an eviction buffer is walked.)
    assert not body.strip() or MACHINE == "arm" or \
        re.search(r"\bclflush(?:opt)?\b|\bdc\s+c", body), body[:2000]


def test_the_control_bw_copy_calls_memcpy(disassembly):
    body, found = disassembly("bw_copy")
    assert found, "the disassembly of bw_copy has no memcpy call:\n" + body[:2000]


def test_sigint_ends_the_run_at_once_and_keeps_the_previous_result(rtmem, tmp_dir):
    path = previous_result(os.path.join(tmp_dir, "s.json"))
    with started(rtmem, "bw", "--only", "methods", "--sizes", "16M", "--reps", "1000",
                 "--json", path) as p:
        r = signal_at(p, "methods    : ", signal.SIGINT, timeout=300)
    assert r.returncode == -signal.SIGINT and "summary:" not in r.stdout and \
        "16 MiB  L" not in r.stdout, explain(r)
    assert_kept(path)
    assert left_in(tmp_dir, ["s.json"]) == [], "left behind"


# Without privileges: says so, and still measures.

@pytest.fixture
def unpriv(rtmem):
    """The prefix that runs rtmem without privileges (rtmemtest.as_nobody)."""
    prefix = as_nobody("test_bw", rtmem)
    if prefix is None:
        pytest.skip("root cannot run rtmem as nobody here")
    return prefix


def test_a_run_without_privileges_says_so_and_still_measures(rtmem, tmp_dir, unpriv):
    n_dir = os.path.join(tmp_dir, "nobody")
    os.mkdir(n_dir)
    os.chmod(tmp_dir, 0o711)
    os.chmod(n_dir, 0o777)
    path = os.path.join(n_dir, "u.json")
    r = run(*unpriv, rtmem, "bw", "--quick", "--only", "prep", "--size", "16M", "--json", path,
            timeout=300)
    d = load_json(path)
    assert r.returncode == 0 and d, explain(r)
    assert_prep("without privileges", d)
    if not d["real_time"]["fifo"]["granted"]:
        assert "NOT RT     : SCHED_FIFO refused" in r.stdout, explain(r)
    if d["prep"]["mlock"]["lock_state"] == "not locked":
        assert "mlock: NOT locked" in r.stdout, explain(r)


def test_a_refused_lock_is_not_claimed_in_the_summary(rtmem, unpriv):
    # A small RLIMIT_MEMLOCK refuses the lock.
    if not shutil.which("prlimit"):
        pytest.skip("no prlimit")
    r = run("prlimit", "--memlock=65536:65536", *unpriv, rtmem, "bw", "--quick", "--only",
            "prep", "--size", "16M", timeout=300)
    assert r.returncode == 0 and "mlock: NOT locked" in r.stdout, explain(r)
    assert "NOT locked" in r.stdout.split("summary:")[-1] and \
        "locking moves the page faults" not in r.stdout, explain(r)


# Bad usage: exit status 2, the message, the hint; nothing run.
USAGE = [
    (["--sizes", "32"], "--sizes: '32' is out of range [64, 17179869184] bytes"),
    (["--sizes", "100"], "--sizes: '100' is not a multiple of 64 bytes"),
    (["--size", "1000"], "--size: '1000' is not a multiple of 64 bytes"),
    (["--block", "65"], "--block: '65' is not a multiple of 64 bytes"),
    (["--size", "32G"], "--size: '32G' is out of range"),
    (["--only", "prep", "--sizes", "4K"], "--sizes and --block are the methods phase's"),
    (["--only", "methods", "--size", "4K"], "--size is the prep and cache phases'"),
    (["--only", "maybe"], "--only: 'maybe' is not one of all, methods, prep, cache"),
    (["--no-rt", "--prio", "50"], "--no-rt runs under SCHED_OTHER: --prio would not be used"),
    (["--reps", "0"], "--reps: '0' is out of range [1, 1000]"),
    (["--src", ""], "--src needs a path"),
    (["--src", "shm"], "--src: 'shm' is neither anon, memfd, hugetlb nor a path"),
    (["--dst", "/dev/zero:12q"], "--dst: '12q' is not a byte count"),
    (["--dst", "/dev/zero:0x"], "--dst: '0x' is not an offset"),
    (["--dst", "/dev/zero:0x-1"], "--dst: '0x-1' is not an offset"),
    (["--dst", "/dev/zero:0x1ffffffffffffffff"],
     "--dst: offset '0x1ffffffffffffffff' is too large"),
    (["--nosuch"], "unknown option '--nosuch'"),
]


@pytest.mark.parametrize("args,message", USAGE,
                         ids=[" ".join(a if a[-1] else a[:-1] + ["''"]) for a, _ in USAGE])
def test_bad_usage_exits_2_with_the_message_and_the_help_hint(rtmem, args, message):
    r = run(rtmem, "bw", *args)
    assert r.returncode == 2, explain(r)
    assert ("rtmem bw: " + message) in r.stderr, explain(r)
    assert "Try 'rtmem bw --help'." in r.stderr and r.stdout == "", explain(r)


def test_help_names_hugetlb_memory(rtmem):
    # (that --help is a synopsis of the manual's options: test_docs.py)
    r = run(rtmem, "bw", "--help")
    assert "hugetlb" in r.stdout, explain(r)
