"""rtmem shm's figures: docs/shm.md (the default run's table and what the
counters say, the Java rows beside the C ones) and docs/shm-java.md (the
Java rows' fault counts).

make bench runs `rtmem shm --java` on its defaults: every mechanism at
64 KiB and 1 GiB, then the Java rows. The 1 GiB table and the prose about
it are medians over the runs; the Java table and its ratios are the first
run's, as the page says."""
import math
import statistics

from engine import fmt, rule, table
from rules.stride import code_block, span_to

KIB64, GIB = 64 << 10, 1 << 30
# The shmem mechanisms (tmpfs, POSIX, SysV, memfd, /dev/zero) and the two
# whose 1 GiB region the kernel maps with PMDs (the page's reference).
SHMEM = ("file-tmpfs", "posix", "sysv", "memfd", "anon-shared", "memfd-thp")
PMD = ("file-disk", "anon-thp")
JAVA_PAIRS = (("file-disk", "java:disk"), ("file-tmpfs", "java:tmpfs"))


# A run's rows.

def c_rows(doc, size):
    """The C mechanisms measured at SIZE, in the run's order."""
    return [r for r in doc["rows"] if r["bytes"] == size and r["status"] == "measured"
            and not r["mechanism"].startswith("java:")]


def row(doc, mech, size):
    for r in doc["rows"]:
        if r["mechanism"] == mech and r["bytes"] == size and r["status"] == "measured":
            return r
    raise KeyError(f"no measured row {mech} at {size} bytes")


def phase(r, name):
    return r["phases"][name]


def faults(p):
    return p["minor_faults"] + p["major_faults"]


def write_ns(r):
    """The whole write, generator included: the report's `write`."""
    return phase(r, "writes")["ns_per_op"]


def net_ns(r):
    return r["net_ns_per_write"]


def touch_us(r):
    return phase(r, "touch")["ns_per_op"] / 1e3


def zero_us(r):
    return phase(r, "zeroings")["ns_per_op"] / 1e3


def thp_pct(r):
    p = r["pages"]
    return 100 * (p["anon_huge_bytes"] + p["shmem_pmd_bytes"] + p["file_pmd_bytes"]) / r["mapped_bytes"]


def sync_ms(r):
    p = r["phases"].get("sync")
    return None if p is None else p["ns"] / 1e6


def close_ms(r):
    return phase(r, "teardown")["ns"] / 1e6


# Over the runs: each mechanism's median.

def shm_runs(runs):
    return runs.all("shm")


def values(runs, mech, size, get):
    return [get(row(d, mech, size)) for d in shm_runs(runs)]


def med(runs, mech, size, get):
    return statistics.median(values(runs, mech, size, get))


def mechanisms(runs, size):
    """The C mechanisms the first run measured at SIZE."""
    return [r["mechanism"] for r in c_rows(runs.one("shm"), size)]


def meds(runs, mechs, size, get):
    return [med(runs, m, size, get) for m in mechs]


def pmd_reference(runs):
    """The net write of the PMD-mapped regions at 1 GiB: the mean of their medians."""
    return statistics.mean(meds(runs, PMD, GIB, net_ns))


# Formats.

def mag(x):
    """A time with the decimals the table's size gives it: 1609, 27.7, 3.7, 0.006."""
    if x is None:
        return "-"
    if x >= 100:
        return fmt(x, 0)
    if x >= 1:
        return fmt(x, 1)
    return fmt(x, max(1, math.ceil(-math.log10(x))) if x > 0 else 1)


def bracket(vals, show):
    """The median, and '[lo..hi]' when the runs differ: '8.4 [7.6..9.2]'."""
    m = show(statistics.median(vals))
    lo, hi = show(min(vals)), show(max(vals))
    return m if lo == hi else f"{m} [{lo}..{hi}]"


# The default run's 1 GiB table.

@rule("shm.table_1g", "shm",
      what="the C mechanisms at 1 GiB: medians over the runs, net write and msync with their range")
def table_1g(runs):
    rows = []
    for m in mechanisms(runs, GIB):
        syncs = values(runs, m, GIB, sync_ms)
        rows.append([
            m,
            bracket(values(runs, m, GIB, net_ns), lambda x: fmt(x, 1)),
            fmt(med(runs, m, GIB, touch_us), 1),
            fmt(med(runs, m, GIB, lambda r: faults(phase(r, "touch"))), 0),
            fmt(med(runs, m, GIB, thp_pct), 0),
            fmt(med(runs, m, GIB, zero_us) / 1e3, 1),
            "-" if None in syncs else bracket(syncs, mag),
            mag(med(runs, m, GIB, close_ms)),
        ])
    return table(["mechanism", "1 GiB: net write ns", "first touch us/page", "touch faults",
                  "thp %", "zeroing ms", "msync ms", "close ms"], rows, ["l"] * 8)


@rule("shm.seconds", "shm", what="how long make bench's rtmem shm --java took, s, range over the runs")
def seconds(runs):
    return span_to([d["seconds"] for d in shm_runs(runs)], 0)


@rule("shm.rng_ns", "shm", what="the generator's time per draw, ns, range over the runs")
def rng_ns(runs):
    return span_to([d["rng"]["median_ns_per_draw"] for d in shm_runs(runs)], 1)


@rule("shm.write_1g", "shm", what="a write at 1 GiB, generator included, ns: the C mechanisms' median")
def write_1g(runs):
    return fmt(statistics.median(meds(runs, mechanisms(runs, GIB), GIB, write_ns)), 0)


@rule("shm.writes_1g_seconds", "shm", what="10^8 writes at 1 GiB at that median, s")
def writes_1g_seconds(runs):
    return fmt(statistics.median(meds(runs, mechanisms(runs, GIB), GIB, write_ns)) * 1e8 / 1e9, 1)


@rule("shm.faults_after_touch", "shm",
      what="the faults of every phase after the touch, C mechanisms, both sizes: median over the runs")
def faults_after_touch(runs):
    def total(d):
        return sum(faults(p) for size in (KIB64, GIB) for r in c_rows(d, size)
                   for name, p in r["phases"].items() if name != "touch" and p is not None)
    return fmt(statistics.median([total(d) for d in shm_runs(runs)]), 0)


# 64 KiB.

@rule("shm.write_64k", "shm", what="a write at 64 KiB, generator included, ns: the mechanisms' medians' range")
def write_64k(runs):
    return span_to(meds(runs, mechanisms(runs, KIB64), KIB64, write_ns), 1)


@rule("shm.write_64k_medians", "shm", what="sysv's, file-tmpfs's and file-disk's write at 64 KiB, ns, medians")
def write_64k_medians(runs):
    return ", ".join(f"{fmt(med(runs, m, KIB64, write_ns), 2)} {m}"
                     for m in ("sysv", "file-tmpfs", "file-disk"))


@rule("shm.zero_64k", "shm", what="a zeroing of 64 KiB, us: the mechanisms' medians' range")
def zero_64k(runs):
    return span_to(meds(runs, mechanisms(runs, KIB64), KIB64, zero_us), 1)


@rule("shm.zero_64k_study", "shm", what="10^7 zeroings of 64 KiB at those times, s")
def zero_64k_study(runs):
    return span_to([us * 1e7 / 1e6 for us in meds(runs, mechanisms(runs, KIB64), KIB64, zero_us)], 0)


@rule("shm.touch_64k", "shm", what="the first touch at 64 KiB, us per page: the mechanisms' medians' range")
def touch_64k(runs):
    return span_to(meds(runs, mechanisms(runs, KIB64), KIB64, touch_us), 0)


@rule("shm.touch_64k_examples", "shm", what="sysv's, memfd's and file-disk's first touch at 64 KiB, us per page")
def touch_64k_examples(runs):
    return ", ".join(f"{m} {fmt(med(runs, m, KIB64, touch_us), 0)}" for m in ("sysv", "memfd", "file-disk"))


# What the counters say (1 GiB, medians over the runs).

def one_mechanism(name, mech, get, nd, what):
    rule(name, "shm", what=what)(lambda runs: fmt(med(runs, mech, GIB, get), nd))


one_mechanism("shm.file_disk_thp", "file-disk", thp_pct, 0, "file-disk's share in PMD-mapped folios at 1 GiB, %")
one_mechanism("shm.file_disk_touch_faults", "file-disk", lambda r: faults(phase(r, "touch")), 0,
              "file-disk's first-touch faults at 1 GiB")
one_mechanism("shm.anon_thp_thp", "anon-thp", thp_pct, 0, "anon-thp's share in huge pages at 1 GiB, %")
one_mechanism("shm.anon_thp_touch_faults", "anon-thp", lambda r: faults(phase(r, "touch")), 0,
              "anon-thp's first-touch faults at 1 GiB")
one_mechanism("shm.memfd_thp_thp", "memfd-thp", thp_pct, 0, "memfd-thp's share in huge pages at 1 GiB, %")
one_mechanism("shm.file_disk_touch_us", "file-disk", touch_us, 1, "file-disk's first touch at 1 GiB, us per page")
one_mechanism("shm.file_disk_close_ms", "file-disk", close_ms, 0, "file-disk's close at 1 GiB, ms")


@rule("shm.shmem_write_ratio", "shm",
      what="the shmem mechanisms' net write at 1 GiB over the PMD-mapped ones' (file-disk, anon-thp): range")
def shmem_write_ratio(runs):
    ref = pmd_reference(runs)
    return span_to([x / ref for x in meds(runs, SHMEM, GIB, net_ns)], 1)


@rule("shm.anon_private_write_ratio", "shm",
      what="anon-private's net write at 1 GiB over the PMD-mapped ones'")
def anon_private_write_ratio(runs):
    return fmt(med(runs, "anon-private", GIB, net_ns) / pmd_reference(runs), 1)


@rule("shm.shmem_touch_us", "shm", what="the shmem mechanisms' first touch at 1 GiB, us per page, median")
def shmem_touch_us(runs):
    return fmt(statistics.median(meds(runs, SHMEM, GIB, touch_us)), 0)


@rule("shm.file_disk_msync_s", "shm", what="file-disk's msync of 1 GiB, s, median")
def file_disk_msync_s(runs):
    return fmt(med(runs, "file-disk", GIB, sync_ms) / 1e3, 1)


@rule("shm.tmpfs_msync_us", "shm", what="file-tmpfs's msync of 1 GiB, us, median")
def tmpfs_msync_us(runs):
    return fmt(med(runs, "file-tmpfs", GIB, sync_ms) * 1e3, 0)


@rule("shm.shmem_close_ms", "shm", what="the shmem mechanisms' close at 1 GiB, ms: their medians' range")
def shmem_close_ms(runs):
    return span_to(meds(runs, SHMEM, GIB, close_ms), 0)


@rule("shm.zero_1g_ms", "shm", what="a zeroing of 1 GiB, ms: the C mechanisms' medians' range")
def zero_1g_ms(runs):
    return span_to([us / 1e3 for us in meds(runs, mechanisms(runs, GIB), GIB, zero_us)], 0)


@rule("shm.zero_1g_gbs", "shm", what="the zeroings' bandwidth at 1 GiB, GB/s, at the mechanisms' median")
def zero_1g_gbs(runs):
    us = statistics.median(meds(runs, mechanisms(runs, GIB), GIB, zero_us))
    return fmt(GIB / (us * 1e3), 0)


# Beside Java: the first run's rows.

def java_doc(runs):
    return runs.one("shm")


@rule("shm.java_runtime", "shm", what="the JVM of the Java rows: 'OpenJDK 17.0.15' (one run)")
def java_runtime(runs):
    words = java_doc(runs)["java"]["runtime"].split()
    return f"{words[0]} {words[-1]}"


@rule("shm.run_seconds", "shm", what="how long the first run's rtmem shm --java took, s")
def run_seconds(runs):
    return fmt(java_doc(runs)["seconds"], 0)


@rule("shm.java_writes_million", "shm", what="the writes the Java rows did at 1 GiB, millions (one run)")
def java_writes_million(runs):
    return fmt(phase(row(java_doc(runs), "java:disk", GIB), "writes")["ops"] / 1e6, 1)


@rule("shm.java_zeroings", "shm", what="the zeroings the Java rows did at 1 GiB (one run)")
def java_zeroings(runs):
    return str(phase(row(java_doc(runs), "java:disk", GIB), "zeroings")["ops"])


def java_line(r):
    size = "64 KiB" if r["bytes"] == KIB64 else "1 GiB"
    z = zero_us(r)
    sync = sync_ms(r)
    return (f"{r['mechanism']:<10}{size:>10}{fmt(write_ns(r), 2):>10}"
            f"{fmt(z, 1 if z < 100 else 0):>16}{faults(phase(r, 'touch')):>14}"
            f"{'-' if sync is None else fmt(sync, 2 if sync < 100 else 0):>9}"
            f"{fmt(close_ms(r), 2 if close_ms(r) < 100 else 0):>10}")


@rule("shm.java_table", "shm", what="file-disk, file-tmpfs and their Java rows at both sizes (one run)")
def java_table(runs):
    d = java_doc(runs)
    lines = ["mechanism       size  write ns  zero us (each)  touch faults  sync ms  close ms"]
    for size in (KIB64, GIB):
        for c, j in JAVA_PAIRS:
            lines += [java_line(row(d, c, size)), java_line(row(d, j, size))]
    return code_block("\n".join(lines))


def java_ratios(runs, size, get):
    d = java_doc(runs)
    return [get(row(d, j, size)) / get(row(d, c, size)) for c, j in JAVA_PAIRS]


@rule("shm.java_write_ratio_1g", "shm", what="the Java rows' write at 1 GiB over C's, range (one run)")
def java_write_ratio_1g(runs):
    return span_to(java_ratios(runs, GIB, write_ns), 1)


@rule("shm.java_write_ratio_64k", "shm", what="the Java rows' write at 64 KiB over C's, range (one run)")
def java_write_ratio_64k(runs):
    return span_to(java_ratios(runs, KIB64, write_ns), 1)


@rule("shm.java_zero_ratio_64k", "shm", what="the Java rows' zeroing at 64 KiB over C's memset, range (one run)")
def java_zero_ratio_64k(runs):
    return span_to(java_ratios(runs, KIB64, zero_us), 1)


@rule("shm.java_zero_ratio_1g", "shm", what="the Java rows' zeroing at 1 GiB over C's memset, mean (one run)")
def java_zero_ratio_1g(runs):
    return fmt(statistics.mean(java_ratios(runs, GIB, zero_us)), 0)


# docs/shm-java.md: what the Java rows' fault counts include.

def java_64k_rows(runs):
    return [row(d, j, KIB64) for d in shm_runs(runs) for _, j in JAVA_PAIRS]


@rule("shm.java_touch_faults_64k", "shm", what="the Java rows' first-touch faults at 64 KiB, over the runs")
def java_touch_faults_64k(runs):
    return span_to([faults(phase(r, "touch")) for r in java_64k_rows(runs)], 0)


@rule("shm.java_other_faults_64k", "shm",
      what="the Java rows' faults in each phase after the touch at 64 KiB: '0 or 1'")
def java_other_faults_64k(runs):
    seen = sorted({faults(p) for r in java_64k_rows(runs)
                   for name, p in r["phases"].items() if name != "touch" and p is not None})
    texts = [str(n) for n in seen]
    return texts[0] if len(texts) == 1 else ", ".join(texts[:-1]) + " or " + texts[-1]
