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

usage: test_bw.py RTMEM_BINARY
"""
import os
import re
import shutil
import signal
import stat
import subprocess
import sys

from rtmemtest import (BITS, EMULATED, MACHINE, OBJDUMP, Checks, TempDir, as_nobody, envelope_ok,
                       load_json, run)

rtmem = sys.argv[1]
checks = Checks("tools.bw")
METHODS = ["memcpy", "dumb", "mcblock", "mcblock-same"]
PREPS = ["none", "prefault", "mlock", "memset"]
STATES = ["warm", "flushed", "nt"]
STAT = ["bytes", "copies_per_rep", "reps", "avg_mib_s", "min_mib_s", "max_mib_s", "median_mib_s",
        "p10_mib_s", "p90_mib_s", "median_ns_per_copy", "minor_faults_per_copy",
        "major_faults_per_copy", "counters_per_copy"]
EVENTS = ["cache_references", "cache_misses", "llc_loads", "llc_load_misses", "minor_faults",
          "major_faults"]
GOOD = '{"a previous": "good result"}\n'
KIB, MIB = 1024, 1024 * 1024
PAGE = os.sysconf("SC_PAGE_SIZE")
X86 = MACHINE in ("x86_64", "i686")
# glibc's thresholds are compared with what this (64-bit) Python's loader lists
NATIVE_X86_64 = MACHINE == "x86_64"


def stat_ok(what, s, reps, counters):
    if not checks.ok(isinstance(s, dict) and list(s.keys()) == STAT, "%s: members" % what, s):
        return
    order = [s["min_mib_s"], s["p10_mib_s"], s["median_mib_s"], s["p90_mib_s"], s["max_mib_s"]]
    if not EMULATED:  # the emulator's timings: a copy may take no tick of its counter
        checks.ok(all(v > 0 for v in order) and order == sorted(order),
                  "%s: 0 < min <= p10 <= median <= p90 <= max" % what, order)
        checks.ok(s["min_mib_s"] * 0.999 <= s["avg_mib_s"] <= s["max_mib_s"] * 1.001,
                  "%s: mbw's average between min and max" % what, s)
    checks.ok(s["reps"] == reps and s["copies_per_rep"] >= 1, "%s: %d repetitions" % (what, reps),
              s)
    c = s["counters_per_copy"]
    checks.ok(list(c.keys()) == EVENTS and
              all((c[e] is None) == (not counters["events"][e]["available"]) for e in EVENTS),
              "%s: a counter per event, null where unavailable" % what, c)


def doc_ok(what, d, sizes=None, reps=3):
    if not checks.ok(d is not None, "%s: the result file is JSON" % what):
        return
    checks.ok(d["verified"] is True and d["mismatch"] == "" and d["passed"] is True,
              "%s: every copy checked" % what, d.get("mismatch"))
    counters = d["counters"]
    checks.ok(list(counters["events"].keys()) == EVENTS, "%s: the counters listed" % what,
              counters)
    if not counters["hardware"]:
        checks.ok(counters["hardware_why"] != "" and
                  not any(counters["events"][e]["available"] for e in EVENTS[:4]),
                  "%s: no hardware counters, and why" % what, counters)
    if d["methods"] is not None:
        got = [p["bytes"] for p in d["methods"]]
        if sizes is not None:
            checks.ok(got == sizes, "%s: the sizes" % what, got)
        for p in d["methods"]:
            for m in METHODS:
                stat_ok("%s: %s at %d" % (what, m, p["bytes"]), p.get(m), reps, counters)
    if d["cache"] is not None:
        c = d["cache"]
        checks.ok(c["flush_method"] in (["clflushopt", "clflush"] if X86 else
                                        ["dc civac", "eviction buffer walk", "none"]),
                  "%s: the flush method" % what, c)
        for p in c["points"]:
            for s in STATES:
                if s == "nt" and not c["nt_copy"]:
                    checks.ok(p[s] is None, "%s: no nt copy, null" % what, p)
                    continue
                stat_ok("%s: cache %s at %d" % (what, s, p["bytes"]), p[s], reps, counters)
                # Source and destination are prefaulted: no copy faults.
                checks.ok(p[s]["minor_faults_per_copy"] == 0,
                          "%s: cache %s: no page faults" % (what, s), p[s])


def prep_ok(what, d, anon=True):
    pr = d["prep"]
    if not checks.ok(pr is not None and list(pr.keys()) == ["bytes"] + PREPS,
                     "%s: the preparations" % what, pr):
        return
    pages = pr["bytes"] // PAGE
    none = pr["none"]
    # Fresh pages each repetition: the copy takes their faults (fewer with
    # transparent huge pages, never none).
    checks.ok(none["copy"]["minor_faults_per_copy"] >= 1 and none["lock_state"] == "not locked",
              "%s: none: the copy faults its pages in" % what, none)
    for p in PREPS[1:]:
        r = pr[p]
        if p == "mlock" and r["lock_state"] in ("not locked", "IGNORED"):
            continue  # refused, or intercepted (a sanitizer's runtime): checked below
        # (Under qemu-user the faults are the emulator's too.)
        checks.ok(r["copy"]["minor_faults_per_copy"] == 0 or EMULATED,
                  "%s: %s: the copy takes no page fault" % (what, p), r["copy"])
        if anon and not EMULATED:  # (the emulator's faults)
            checks.ok(r["prep_minor_faults"] >= 3 and
                      r["prep_minor_faults"] > none["prep_minor_faults"],
                      "%s: %s: the preparation takes them" % (what, p), (r, none))
        if p != "mlock":
            checks.ok(r["locked_bytes_min"] == 0 == r["locked_bytes_max"],
                      "%s: %s: VmLck does not move" % (what, p), r)
    lk = pr["mlock"]
    if lk["lock_state"] == "locked":
        checks.ok(lk["locked_bytes_min"] == pr["bytes"] == lk["locked_bytes_max"],
                  "%s: mlock: VmLck moved by the size every time" % what, lk)
    elif lk["lock_state"] == "IGNORED":
        # Under ASan or TSan mlock is a no-op that returns success: said so.
        checks.ok(lk["lock_errno"] == 0 and lk["locked_bytes_max"] == 0 and
                  "locked nothing" in lk["message"] and
                  lk["copy"]["minor_faults_per_copy"] > 0,
                  "%s: mlock intercepted: on record, the copy faults" % what, lk)
    else:
        checks.ok(lk["lock_state"] == "not locked" and lk["lock_errno"] != 0 and
                  lk["locked_bytes_max"] == 0, "%s: mlock refused: on record" % what, lk)
    # The perf software counter and getrusage count the same faults.
    perf = none["copy"]["counters_per_copy"]["minor_faults"]
    if perf is not None:
        rus = none["copy"]["minor_faults_per_copy"]
        checks.ok(0.9 * rus <= perf <= rus, "%s: perf's faults are getrusage's" % what,
                  (perf, rus))


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


def leftovers(d, expected):
    return sorted(set(os.listdir(d)) - set(expected))


def default_signals():
    signal.signal(signal.SIGINT, signal.SIG_DFL)


with TempDir() as tmp:
    os.chmod(tmp, 0o755)
    # A quick run: every phase.
    path = os.path.join(tmp, "q.json")
    args = ["--quick", "--json", path]
    r = run(rtmem, "bw", *args, timeout=300)
    d = load_json(path)
    checks.ok(r.returncode == 0 and "every copy checked" in r.stdout and
              "as mbw gives them, at 1 MiB" in r.stdout, "bw --quick", r)
    envelope_ok(checks, d, "bw", "rtmem-bw/1", args)
    if d:
        doc_ok("quick", d, sizes=[4 * KIB, 64 * KIB, MIB])
        prep_ok("quick", d)
        checks.ok(d["src"]["source"] == "anon" and d["dst"]["bytes"] >= MIB and
                  d["src"]["lock_state"] in ("locked", "not locked", "IGNORED") and
                  (d["src"]["lock_state"] == "locked") == (d["src"]["locked_bytes"] > 0),
                  "quick: anonymous source and destination", (d["src"], d["dst"]))
        if not d["counters"]["hardware"]:
            checks.ok(r.stdout.count("no hardware counters") == 1 and "FAILED" not in r.stdout,
                      "no hardware counters: said once, no error", r)
        tun = list_tunables()
        g = d["glibc"]
        if NATIVE_X86_64 and tun.get("x86_non_temporal_threshold"):
            checks.ok(g["read"] and g["non_temporal_threshold"] == tun["x86_non_temporal_threshold"]
                      and g["rep_movsb_threshold"] == tun["x86_rep_movsb_threshold"],
                      "glibc's thresholds, as the loader lists them", (g, tun))

    # GLIBC_TUNABLES moves the thresholds: read at run time, and the default
    # sizes bracket them. Made-up caches keep the sizes small.
    fake = os.path.join(tmp, "sysfs")
    for i, (lvl, typ, size) in enumerate([(1, "Data", "32K"), (2, "Unified", "256K")]):
        dd = os.path.join(fake, "cpu%d" % max(os.sched_getaffinity(0)), "cache", "index%d" % i)
        os.makedirs(dd)
        for name, val in (("level", lvl), ("type", typ), ("size", size),
                          ("coherency_line_size", 64), ("shared_cpu_list", "0")):
            with open(os.path.join(dd, name), "w") as f:
                f.write("%s\n" % val)
    if NATIVE_X86_64 and list_tunables():
        path = os.path.join(tmp, "t.json")
        r = run(rtmem, "bw", "--only", "methods", "--reps", "1", "--rep-time", "10us",
                "--json", path, timeout=300,
                env={"GLIBC_TUNABLES": "glibc.cpu.x86_non_temporal_threshold=0x100000:"
                                       "glibc.cpu.x86_rep_movsb_threshold=0x1000",
                     "RTMEM_STRIDE_SYSFS": fake})
        d = load_json(path)
        checks.ok(r.returncode == 0 and d, "bw with GLIBC_TUNABLES", r)
        if d:
            g = d["glibc"]
            checks.ok(g["non_temporal_threshold"] == MIB and g["rep_movsb_threshold"] == 4 * KIB,
                      "the tunables as set", g)
            sizes = [p["bytes"] for p in d["methods"]]
            checks.ok(all(s in sizes for s in (MIB // 8 * 7, MIB, 3584, 4096)) and
                      sizes[0] == KIB and sizes[-1] == 64 * MIB,
                      "the default sizes: doubling 1K to 64M, bracketing each threshold", sizes)
            checks.ok(d["prep"] is None and d["cache"] is None, "--only methods", d)
            doc_ok("tunables", d, reps=1)

    # Devices: /dev/zero as source (read-only) and destination (shared).
    path = os.path.join(tmp, "z.json")
    r = run(rtmem, "bw", "--quick", "--only", "prep", "--src", "/dev/zero",
            "--dst", "/dev/zero:0", "--json", path, timeout=300)
    d = load_json(path)
    checks.ok(r.returncode == 0 and d, "bw --src /dev/zero --dst /dev/zero", r)
    if d:
        checks.ok(d["src"]["source"] == "device" and d["src"]["path"] == "/dev/zero" and
                  d["dst"]["path"] == "/dev/zero" and d["dst"]["offset"] == 0,
                  "devices on record", (d["src"], d["dst"]))
        checks.ok(d["methods"] is None and d["cache"] is None, "--only prep", d)
        prep_ok("devices", d, anon=False)
    # A size not a multiple of the page: no false VmLck warning; memset's
    # residency is read after the memset.
    path = os.path.join(tmp, "p.json")
    r = run(rtmem, "bw", "--quick", "--only", "prep", "--size", "4160", "--json", path,
            timeout=300)
    d = load_json(path)
    checks.ok(r.returncode == 0 and "VmLck did not move by" not in r.stdout,
              "--size 4160: no false VmLck warning", r)
    if d:
        checks.ok(d["prep"]["memset"]["resident_bytes_min"] >= 4160,
                  "memset: resident after the memset", d["prep"]["memset"])
    # The check can fail: the test hook RTMEM_BW_CORRUPT spoils one byte of
    # each checked destination; zeros to zeros too (the destination is
    # spoiled before the checked copy).
    path = os.path.join(tmp, "c.json")
    r = run(rtmem, "bw", "--quick", "--only", "cache", "--size", "64K", "--src", "/dev/zero",
            "--json", path, timeout=300, env={"RTMEM_BW_CORRUPT": "1"})
    d = load_json(path)
    checks.ok(r.returncode == 1 and "FAILED" in r.stdout and d and d["verified"] is False and
              "differs from the source" in d["mismatch"], "a spoiled copy: FAILED, exit 1", r)
    # The arena layer's other memory: memfd both ends; hugetlb when the
    # pool has pages free, else its refusal (the pool is not changed here).
    path = os.path.join(tmp, "m.json")
    r = run(rtmem, "bw", "--quick", "--only", "prep", "--src", "memfd", "--dst", "memfd",
            "--json", path, timeout=300)
    d = load_json(path)
    checks.ok(r.returncode == 0 and d and d["src"]["source"] == "memfd" and
              d["dst"]["source"] == "memfd" and d["src"]["path"] is None,
              "bw --src memfd --dst memfd", r)
    if d:
        prep_ok("memfd", d)
    free = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("HugePages_Free:"):
                free = int(line.split()[1])
    r = run(rtmem, "bw", "--quick", "--only", "cache", "--dst", "hugetlb", timeout=300)
    if free >= 2:
        checks.ok(r.returncode == 0 and "destination: hugetlb" in r.stdout,
                  "bw --dst hugetlb", r)
    else:
        # (A 32-bit program under qemu-user is refused before the pool is
        # asked: its huge page alignment cannot be had there.)
        checks.ok(r.returncode == 1 and "huge pages" in r.stderr and
                  ("nr_hugepages" in r.stderr or (EMULATED and BITS == 32)),
                  "bw --dst hugetlb without a pool: why", r)
    r = run(rtmem, "bw", "--quick", "--dst", "/dev/nonexistent-rtmem:0x1000")
    checks.ok(r.returncode == 1 and "/dev/nonexistent-rtmem" in r.stderr,
              "a missing device: named, exit 1", r)

    # A regular file is never overwritten.
    f_path = os.path.join(tmp, "mine")
    with open(f_path, "w") as f:
        f.write(GOOD)
    r = run(rtmem, "bw", "--quick", "--dst", f_path)
    with open(f_path) as f:
        checks.ok(r.returncode == 2 and "is a regular file" in r.stderr and f.read() == GOOD,
                  "--dst FILE refused, the file as it was", r)

    # The decision is taken on the opened file, not the path's text.
    r = run(rtmem, "bw", "--quick", "--dst", "/sys/.." + f_path)
    with open(f_path) as f:
        checks.ok(r.returncode == 2 and "is a regular file" in r.stderr and f.read() == GOOD,
                  "--dst /sys/../FILE refused, the file as it was", r)
    # A block device is refused before anything maps it.
    blk = os.path.join(tmp, "blk")
    os.mknod(blk, 0o600 | stat.S_IFBLK, os.makedev(7, 200))
    r = run(rtmem, "bw", "--quick", "--dst", blk)
    checks.ok(r.returncode == 2 and "is a block device" in r.stderr,
              "--dst BLOCKDEV refused", r)
    os.unlink(blk)
    # A PCI resource path holds ':': the whole text is the path.
    pci = "/sys/bus/pci/devices/0000:00:7f.7/resource9"
    r = run(rtmem, "bw", "--quick", "--dst", pci)
    checks.ok(r.returncode == 1 and pci in r.stderr, "a PCI resource path kept whole", r)

    # More than half of MemAvailable: refused unless --force.
    with open("/proc/meminfo") as f:
        avail = int(re.search(r"MemAvailable:\s+(\d+) kB", f.read()).group(1)) * 1024
    big = (avail // 2 // (1 << 20) + 1) << 20  # above half of MemAvailable, in MiB
    r = run(rtmem, "bw", "--only", "cache", "--size", str(min(big, 16 << 30)))
    checks.ok(big > 16 << 30 or r.returncode == 2 and "more than half of MemAvailable" in r.stderr,
              "the memory share", r)

    # The dumb loop calls no memcpy; the dispatcher, which does, is the
    # control that the disassembly is read right.
    if shutil.which(OBJDUMP):
        def calls(sym):
            out = run(OBJDUMP, "-d", "--no-show-raw-insn", "--disassemble=" + sym, rtmem).stdout
            body = out.split("<%s>:" % sym, 1)[-1] if ("<%s>:" % sym) in out else ""
            return body, re.findall(r"\b(?:call|jmp|blx|bl|b)\s+\S*\s*<(mem(?:cpy|move)[^>]*)>",
                                    body)
        body, found = calls("bw_copy_dumb")
        checks.ok(body.strip() != "" and not found, "the dumb loop calls no memcpy", (found, body))
        # Nor does it copy with a string instruction or vector registers.
        vec = re.findall(r"\brep\S*\s+movs\w*|%[xyz]mm\d+|\bv\d+\.\d*[bhsdq]\b", body)
        checks.ok(not vec, "the dumb loop: no rep movs, no vector registers", (vec, body))
        body, _ = calls("tk_cache_flush")
        # (32-bit ARM has no user-space flush: an eviction buffer is walked.)
        checks.ok(not body.strip() or MACHINE == "arm" or
                  re.search(r"\bclflush(?:opt)?\b|\bdc\s+c", body),
                  "tk_cache_flush flushes (clflush/clflushopt, dc c*)", body[:2000])
        body, found = calls("bw_copy")
        checks.ok(found, "the control: bw_copy calls memcpy", body[:2000])
    else:
        print("tools.bw: no %s: the dumb loop's check not made" % OBJDUMP)

    # Interrupted: the previous result intact, nothing left behind.
    d_dir = os.path.join(tmp, "intr")
    os.mkdir(d_dir)
    path = os.path.join(d_dir, "s.json")
    with open(path, "w") as f:
        f.write(GOOD)
    p = subprocess.Popen([rtmem, "bw", "--only", "methods", "--sizes", "16M", "--reps", "1000",
                          "--json", path], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, preexec_fn=default_signals)
    out = []
    for line in p.stdout:
        out.append(line)
        if line.startswith("methods    : "):
            p.send_signal(signal.SIGINT)
            break
    rest, err = p.communicate(timeout=300)
    r = subprocess.CompletedProcess(p.args, p.returncode, "".join(out) + rest, err)
    checks.ok(r.returncode == -signal.SIGINT and "summary:" not in r.stdout and
              "16 MiB  L" not in r.stdout,
              "SIGINT ends the run at once", r)
    with open(path) as f:
        checks.ok(f.read() == GOOD, "interrupted: the previous result is intact")
    checks.ok(not leftovers(d_dir, ["s.json"]), "nothing left behind",
              leftovers(d_dir, ["s.json"]))

    # Without privileges: says so, and still measures.
    unpriv = as_nobody("test_bw", rtmem)
    if unpriv is not None:
        n_dir = os.path.join(tmp, "nobody")
        os.mkdir(n_dir)
        os.chmod(tmp, 0o711)
        os.chmod(n_dir, 0o777)
        path = os.path.join(n_dir, "u.json")
        r = run(*unpriv, rtmem, "bw", "--quick", "--only", "prep", "--size", "16M",
                "--json", path, timeout=300)
        d = load_json(path)
        checks.ok(r.returncode == 0 and d, "bw without privileges", r)
        if d:
            prep_ok("without privileges", d)
            if not d["real_time"]["fifo"]["granted"]:
                checks.ok("NOT RT     : SCHED_FIFO refused" in r.stdout,
                          "without privileges: says it has no real-time priority", r)
            if d["prep"]["mlock"]["lock_state"] == "not locked":
                checks.ok("mlock: NOT locked" in r.stdout, "without privileges: mlock refused, "
                          "said", r)
        # A small RLIMIT_MEMLOCK refuses the lock: the summary does not claim it.
        if shutil.which("prlimit"):
            r = run("prlimit", "--memlock=65536:65536", *unpriv, rtmem, "bw", "--quick",
                    "--only", "prep", "--size", "16M", timeout=300)
            checks.ok(r.returncode == 0 and "mlock: NOT locked" in r.stdout and
                      "NOT locked" in r.stdout.split("summary:")[-1] and
                      "locking moves the page faults" not in r.stdout,
                      "mlock refused: the summary does not claim the lock", r)

# Bad usage: exit status 2, the message, the hint; nothing run.
for args, want in (
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
        (["--dst", "/dev/zero:0x1ffffffffffffffff"], "--dst: offset '0x1ffffffffffffffff' is too large"),
        (["--nosuch"], "unknown option '--nosuch'")):
    r = run(rtmem, "bw", *args)
    checks.ok(r.returncode == 2 and ("rtmem bw: " + want) in r.stderr and
              "Try 'rtmem bw --help'." in r.stderr and r.stdout == "",
              "bad usage %s" % " ".join(args), r)

r = run(rtmem, "bw", "--help")
checks.ok(r.returncode == 0 and "usage: rtmem bw" in r.stdout and "--dst MEM" in r.stdout and
          "hugetlb" in r.stdout, "bw --help", r)
r = run(rtmem, "--help")
checks.ok(r.returncode == 0 and "\n  bw " in r.stdout, "rtmem --help lists bw", r)
checks.done()
