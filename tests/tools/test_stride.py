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

usage: test_stride.py RTMEM_BINARY
"""
import math
import os
import re
import signal
import subprocess
import sys

from rtmemtest import Checks, TempDir, as_nobody, envelope_ok, load_json, run

rtmem = sys.argv[1]
checks = Checks("tools.stride")
PATTERNS = ["stride_1", "stride_16", "chase"]
RESULT = ["median_ns_per_access", "min_ns_per_access", "max_ns_per_access", "p10_ns_per_access",
          "p90_ns_per_access", "reps", "accesses", "passes", "rep_ns_min", "minor_faults"]
GOOD = '{"a previous": "good result"}\n'
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


def doc_ok(what, d, sizes=None, reps=None):
    """The members every document has, and how they agree."""
    if not checks.ok(d is not None, "%s: the result file is JSON" % what):
        return
    checks.ok([p["id"] for p in d["patterns"]] == PATTERNS, "%s: the three patterns" % what,
              d["patterns"])
    checks.ok(d["patterns"][2]["stride_bytes"] == d["line_bytes"],
              "%s: the chase steps one cache line" % what, d["patterns"])
    points = d["points"]
    got = [p["bytes"] for p in points]
    checks.ok(got == sorted(set(got)) and got, "%s: sizes ascending, each once" % what, got)
    if sizes is not None:
        checks.ok(got == sizes, "%s: the sizes asked" % what, (got, sizes))
    checks.ok(d["buffer"]["bytes"] == got[-1], "%s: the buffer is the largest size" % what,
              d["buffer"])
    for p in points:
        checks.ok(p["level"] == level_of(d["caches"], p["bytes"]),
                  "%s: %d bytes fit in %s" % (what, p["bytes"], p["level"]), d["caches"])
        for pat in PATTERNS:
            r = p.get(pat)
            if not checks.ok(isinstance(r, dict) and list(r.keys()) == RESULT,
                             "%s: %d bytes: %s has its members" % (what, p["bytes"], pat), r):
                continue
            order = [r["min_ns_per_access"], r["p10_ns_per_access"], r["median_ns_per_access"],
                     r["p90_ns_per_access"], r["max_ns_per_access"]]
            checks.ok(all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0
                          for v in order) and order == sorted(order),
                      "%s: %d bytes, %s: 0 < min <= p10 <= median <= p90 <= max"
                      % (what, p["bytes"], pat), order)
            checks.ok(r["accesses"] > 0 and r["rep_ns_min"] > 0,
                      "%s: %d bytes, %s: accesses and time" % (what, p["bytes"], pat), r)
            if reps is not None:
                checks.ok(r["reps"] == reps, "%s: %d repetitions" % (what, reps), r)
            # Whole passes when a repetition holds one or more, else a slice.
            checks.ok(r["passes"] < 1 or r["passes"] == int(r["passes"]),
                      "%s: %d bytes, %s: whole passes, or a slice of one"
                      % (what, p["bytes"], pat), r)
        ratio = p["stride_16"]["median_ns_per_access"] / p["stride_1"]["median_ns_per_access"]
        checks.ok(abs(p["ratio_16_over_1"] - ratio) <= 1e-6 * ratio,
                  "%s: the ratio is stride 16 over stride 1" % what, p)
    checks.ok(d["rep_ns_min"] == min(p[pat]["rep_ns_min"] for p in points for pat in PATTERNS),
              "%s: the shortest repetition of the run" % what, d["rep_ns_min"])
    checks.ok(d["minor_faults_timed"] == sum(p[pat]["minor_faults"] for p in points
                                             for pat in PATTERNS),
              "%s: the page faults add up" % what, d["minor_faults_timed"])
    jumps_ok(what, d)


def jumps_ok(what, d):
    """Each jump as the report defines it: between two measured sizes, at
    least x1.5, from the lowest p10 at a size or any larger one."""
    points = d["points"]
    index = {p["bytes"]: i for i, p in enumerate(points)}
    for pat in PATTERNS:
        floors = []
        for i in range(len(points)):
            floors.append(min(p[pat]["p10_ns_per_access"] for p in points[i:]))
        last = -1
        for j in d["jumps"][pat]:
            a, b = index.get(j["from_bytes"]), index.get(j["to_bytes"])
            if not checks.ok(a is not None and b is not None and last <= a < b,
                             "%s: %s jumps between measured sizes, in order" % (what, pat), j):
                continue
            last = b
            checks.ok(j["from_ns"] == floors[a] and j["to_ns"] == floors[b] and
                      j["factor"] >= 1.5 and abs(j["factor"] - j["to_ns"] / j["from_ns"]) < 1e-6,
                      "%s: %s jump of x1.5 or more between floors" % (what, pat), (j, floors))
            past = [c["name"] for c in d["caches"] if c["type"] != "Instruction" and c["bytes"]
                    and j["from_bytes"] <= c["bytes"] < j["to_bytes"]]
            checks.ok(j["past"] == past and j["to_level"] == points[b]["level"],
                      "%s: %s jump: the caches it passes" % (what, pat), j)


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


def leftovers(d, expected):
    return sorted(set(os.listdir(d)) - set(expected))


def default_signals():
    """In the child: SIGINT at its default action, even where this test
    runs with it ignored (a background job)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


with TempDir() as tmp:
    # A quick run on this machine's caches.
    path = os.path.join(tmp, "q.json")
    args = ["--quick", "--json", path]
    r = run(rtmem, "stride", *args, timeout=300)
    checks.ok(r.returncode == 0, "stride --quick", r)
    d = load_json(path)
    envelope_ok(checks, d, "stride", "rtmem-stride/1", args)
    if d:
        checks.ok(d["passed"] is True and d["params"]["quick"] is True and
                  d["params"]["reps"] == 3 and d["params"]["rounds"] == 1,
                  "quick: passed, 3 repetitions in one round", d["params"])
        checks.ok(d["seed"] == d["params"]["seed"] == 1, "quick: the chase's seed", d["seed"])
        checks.ok(d["real_time"]["affinity"]["granted"] is True and
                  d["real_time"]["cpu_now"] == d["cpu"], "quick: pinned to the CPU measured",
                  d["real_time"])
        doc_ok("quick", d, reps=3)
        sizes = [p["bytes"] for p in d["points"]]
        data = [c for c in d["caches"] if c["type"] != "Instruction" and c["bytes"]]
        if data:
            l1d = [c["bytes"] for c in data if c["level"] == 1]
            start = min(4 * KIB, l1d[0] // 2) if l1d else 4 * KIB
            top = 4 * max(c["bytes"] for c in data)
            want = []
            s = start
            while s < top:
                want.append(s)
                s *= 2
            want.append(top)
            checks.ok(sizes == want, "quick: doubling from 4K up to 4 x the last-level cache",
                      (sizes, want))
    for text in ("rtmem stride: the cost of touching memory", "caches     : cpu %d: " % CPU,
                 "stride 1 int     stride 16 ints       random chase",
                 "where each pattern's cost per access jumps", "results written to " + path):
        checks.ok(text in r.stdout, "quick: the report has '%s'" % text, r)
    checks.ok("round 1 of 1: every size measured" in r.stdout, "quick: one round", r)
    # A prefaulted buffer takes no page fault; under a sanitizer its shadow
    # memory does.
    faults = re.search(r"^page faults: (\d+) during the timed repetitions$", r.stdout, re.M)
    checks.ok(faults and (os.environ.get("RTMEM_SANITIZED") or faults.group(1) == "0"),
              "quick: no page fault during the timed repetitions", r)
    if d:
        rows = [ln for ln in r.stdout.splitlines() if ln.endswith(tuple("0123456789-"))
                and (" KiB  " in ln or " MiB  " in ln or " GiB  " in ln)]
        checks.ok(len(rows) == len(d["points"]), "quick: a row per size", rows)

    # Sizes as named (out of order, repeated: measured once each, ascending).
    path = os.path.join(tmp, "s.json")
    args = ["--sizes", "64K,4K", "--sizes", "1M,4K", "--reps", "5", "--json", path]
    r = run(rtmem, "stride", *args, timeout=300)
    d = load_json(path)
    checks.ok(r.returncode == 0 and d, "stride --sizes", r)
    envelope_ok(checks, d, "stride", "rtmem-stride/1", args)
    if d:
        doc_ok("--sizes", d, sizes=[4 * KIB, 64 * KIB, MIB], reps=5)
        checks.ok(d["params"]["sizes"] == [4 * KIB, 64 * KIB, MIB] and
                  d["params"]["rounds"] == 3, "--sizes: on record, 3 rounds", d["params"])

    # A made-up sysfs: a 48K L1d, a 1280K L2, a 3M L3 with 128-byte lines.
    fake = os.path.join(tmp, "sys")
    fake_sysfs(fake, CPU, [(1, "Data", "48K", 128, "0"), (1, "Instruction", "32K", 128, "0"),
                         (2, "Unified", "1280K", 128, "0"), (3, "Unified", "3M", 128, "0-3")])
    path = os.path.join(tmp, "f.json")
    r = run(rtmem, "stride", *FAST, "--json", path,
            env={"RTMEM_STRIDE_SYSFS": fake}, timeout=300)
    d = load_json(path)
    checks.ok(r.returncode == 0 and d, "stride on a made-up sysfs", r)
    if d:
        doc_ok("made-up sysfs", d, reps=1)
        checks.ok([(c["name"], c["bytes"], c["line_bytes"], c["shared_cpu_list"])
                   for c in d["caches"]] ==
                  [("L1d", 48 * KIB, 128, "0"), ("L1i", 32 * KIB, 128, "0"),
                   ("L2", 1280 * KIB, 128, "0"), ("L3", 3 * MIB, 128, "0-3")],
                  "made-up sysfs: its caches read", d["caches"])
        checks.ok(d["caches_dir"] == fake and d["line_bytes"] == 128 and
                  d["line_bytes_assumed"] is False, "made-up sysfs: 128-byte lines", d)
        want = [4 * KIB << i for i in range(12)] + [12 * MIB]
        checks.ok([p["bytes"] for p in d["points"]] == want,
                  "made-up sysfs: 4K doubling up to 4 x 3M, 12M included",
                  [p["bytes"] for p in d["points"]])
        checks.ok([p["level"] for p in d["points"]][3:7] == ["L1d", "L2", "L2", "L2"],
                  "made-up sysfs: 32K fits the L1d, 64K to 1M the L2", d["points"])
    # (the header's items wrap at 80 columns)
    flat = re.sub(r"\n +", " ", r.stdout)
    checks.ok("L1d 48 KiB, L1i 32 KiB, L2 1280 KiB, L3 3 MiB (shared by cpus 0-3)" in flat,
              "made-up sysfs: the header lists them", r)

    # A small L1d: the sizes start at half of it; --max-size bounds them.
    small = os.path.join(tmp, "small")
    fake_sysfs(small, CPU, [(1, "Data", "4K", 64, "0"), (2, "Unified", "64K", 64, "0")])
    path = os.path.join(tmp, "m.json")
    r = run(rtmem, "stride", *FAST, "--max-size", "24K", "--json", path,
            env={"RTMEM_STRIDE_SYSFS": small}, timeout=300)
    d = load_json(path)
    checks.ok(r.returncode == 0 and d, "stride --max-size on a small L1d", r)
    if d:
        doc_ok("--max-size", d, sizes=[2 * KIB, 4 * KIB, 8 * KIB, 16 * KIB, 24 * KIB])
        checks.ok(d["params"]["max_size_bytes"] == 24 * KIB, "--max-size: on record", d["params"])

    # No sysfs: unknown caches, 64-byte lines assumed, and said.
    empty = os.path.join(tmp, "empty")
    os.mkdir(empty)
    path = os.path.join(tmp, "e.json")
    r = run(rtmem, "stride", *FAST, "--sizes", "4K,8K", "--json", path,
            env={"RTMEM_STRIDE_SYSFS": empty}, timeout=300)
    d = load_json(path)
    checks.ok(r.returncode == 0 and d, "stride without sysfs", r)
    if d:
        doc_ok("without sysfs", d, sizes=[4 * KIB, 8 * KIB])
        checks.ok(d["caches"] == [] and d["line_bytes"] == 64 and d["line_bytes_assumed"] is True
                  and all(p["level"] == "unknown" for p in d["points"]),
                  "without sysfs: unknown caches, 64-byte lines assumed", d)
    flat = re.sub(r"\n +", " ", r.stdout)
    checks.ok(("caches     : cpu %d: UNKNOWN: no cache is listed in %s/cpu%d/cache" %
               (CPU, empty, CPU)) in flat and
              "cache line 64 B ASSUMED (sysfs does not give it)\n" in r.stdout,
              "without sysfs: the header says so", r)

    # A run that fails (its report cannot be written), is refused, or is
    # interrupted leaves the previous result as it was, and nothing behind.
    d_dir = os.path.join(tmp, "res")
    os.mkdir(d_dir)
    path = os.path.join(d_dir, "s.json")
    with open(path, "w") as f:
        f.write(GOOD)
    with open("/dev/full", "w") as full:
        r = run(rtmem, "stride", *FAST, "--sizes", "4K", "--json", path, stdout=full)
    checks.ok(r.returncode == 1 and "No space left on device" in r.stderr,
              "stride > /dev/full fails with its cause", r)
    r = run(rtmem, "stride", "--reps", "0", "--json", path)
    checks.ok(r.returncode == 2, "bad usage with --json", r)
    p = subprocess.Popen([rtmem, "stride", "--sizes", "4K,8K,16K,32K", "--reps", "1000",
                          "--rep-time", "10ms", "--json", path], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=default_signals)
    # Interrupted once the header is out: the run measures (for minutes).
    out = []
    for line in p.stdout:
        out.append(line)
        if line.startswith("repetitions: "):
            p.send_signal(signal.SIGINT)
            break
    rest, err = p.communicate(timeout=300)
    r = subprocess.CompletedProcess(p.args, p.returncode, "".join(out) + rest, err)
    checks.ok(r.returncode == -signal.SIGINT and "round 1 of 3" not in r.stdout,
              "SIGINT ends the run at once", r)
    with open(path) as f:
        checks.ok(f.read() == GOOD, "a failed, refused or interrupted run: the previous result "
                  "is intact")
    checks.ok(not leftovers(d_dir, ["s.json"]), "nothing left behind",
              leftovers(d_dir, ["s.json"]))

    # Without privileges: says so, and still measures. As nobody, when this
    # test may switch to it; otherwise this test is unprivileged already.
    unpriv = as_nobody("test_stride", rtmem)
    if unpriv is not None:
        n_dir = os.path.join(tmp, "nobody")
        os.mkdir(n_dir)
        os.chmod(tmp, 0o711)
        os.chmod(n_dir, 0o777)
        path = os.path.join(n_dir, "u.json")
        r = run(*unpriv, rtmem, "stride", *FAST, "--sizes", "4K,64K", "--json", path,
                timeout=300)
        d = load_json(path)
        checks.ok(r.returncode == 0 and d, "stride without privileges", r)
        if d:
            doc_ok("without privileges", d, sizes=[4 * KIB, 64 * KIB])
            fifo = d["real_time"]["fifo"]
            checks.ok(d["real_time_granted"] == fifo["granted"] and
                      (fifo["granted"] or fifo["error"]), "without privileges: on record",
                      d["real_time"])
            if not fifo["granted"]:
                checks.ok("NOT RT     : SCHED_FIFO refused" in r.stdout,
                          "without privileges: says it has no real-time priority", r)

# Bad usage: exit status 2, the message, the hint; nothing run.
for args, want in (
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
        (["--nosuch"], "unknown option '--nosuch'"),
        (["operand"], "unexpected argument 'operand'")):
    r = run(rtmem, "stride", *args)
    checks.ok(r.returncode == 2 and ("rtmem stride: " + want) in r.stderr and
              "Try 'rtmem stride --help'." in r.stderr and r.stdout == "",
              "bad usage %s" % " ".join(args), r)

r = run(rtmem, "stride", "--help")
words = " ".join(r.stdout.split())
checks.ok(r.returncode == 0 and "usage: rtmem stride" in r.stdout and
          "(default 11; --quick 3)" in words and "(default 3; --quick 1)" in words and
          "(default 1ms;" in words and
          "--sizes B[,B...]" in r.stdout and "--max-size B" in r.stdout,
          "stride --help: the options and their defaults", r)
r = run(rtmem, "--help")
checks.ok(r.returncode == 0 and "\n  stride " in r.stdout, "rtmem --help lists stride", r)
checks.done()
