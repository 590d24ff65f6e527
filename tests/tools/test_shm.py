"""rtmem shm: a --quick run with a second process has the envelope and a row
for every mechanism at every size, each measured or skipped with a reason
(a huge-page form without reserved pages names nr_hugepages); a measured
row has the phases of phase.h (sync for files only), as many touched pages
as the region maps, the writes and zeroings asked, the page size smaps
reported, and a reader that attached by name where there is one and read
what was written (private mechanisms: no reader); --writes and --zeroings
are done exactly; --duration records its seconds; every name the run
creates (--dir, /dev/shm) and every SysV segment is gone afterwards, also
after SIGINT or SIGTERM, a reader that crashes (the run fails, names
removed) and a reader killed with the run (reaped); the room checks refuse
a file beyond half of --dir's free space (a tiny tmpfs) unless --force;
bad usage exits 2 with the message and the --help hint, and leaves an
existing result file as it was.

No assertion depends on how fast the machine is.

usage: test_shm.py RTMEM_BINARY
"""
import glob
import os
import re
import signal
import subprocess
import sys
import time

from rtmemtest import (BITS, EMULATED, Checks, TempDir, alive, become_subreaper, envelope_ok, load_json, orphans, run,
                       wait_children)

rtmem = sys.argv[1]
checks = Checks("tools.shm")
KIB, MIB = 1024, 1024 * 1024
MECHS = ["file-disk", "file-tmpfs", "posix", "sysv", "memfd", "anon-shared", "memfd-thp",
         "anon-huge2m", "anon-huge1g", "memfd-huge2m", "memfd-huge1g", "sysv-huge2m",
         "anon-private", "anon-thp"]
FILES = {"file-disk", "file-tmpfs"}
BY_NAME = {"file-disk", "file-tmpfs", "posix"}
PRIVATE = {"anon-huge2m", "anon-huge1g", "anon-private", "anon-thp"}
PHASES = ["touch", "writes", "zeroings", "sync", "teardown"]
GOOD = '{"a previous": "good result"}\n'


def sysv_ids():
    with open("/proc/sysvipc/shm") as f:
        return {line.split()[1] for line in f.readlines()[1:]}


# The names the tool makes: rtmem-shm-PID-RANDOM (16 hex digits); others'
# files in /dev/shm are not its own.
OURS = re.compile(r"rtmem-shm-[0-9]+-[0-9a-f]{16}$")


def leftovers(d):
    return [p for p in glob.glob(os.path.join(d, "rtmem-shm-*")) + glob.glob("/dev/shm/rtmem-shm-*")
            if OURS.match(os.path.basename(p))]


def huge_free(kb):
    try:
        with open("/sys/kernel/mm/hugepages/hugepages-%dkB/free_hugepages" % kb) as f:
            return int(f.read())
    except OSError:
        return 0


segments_before = sysv_ids()

# A quick run of everything, with a second process.
with TempDir() as d:
    out = os.path.join(d, "shm.json")
    args = ["--quick", "--processes", "2", "--dir", d, "--json", out]
    r = run(rtmem, "shm", *args)
    checks.ok(r.returncode == 0, "a quick run passes", r)
    doc = load_json(out)
    envelope_ok(checks, doc, "shm", "rtmem-shm/1", args)
    checks.ok(leftovers(d) == [], "nothing left in --dir or /dev/shm", leftovers(d))
    rows = (doc or {}).get("rows", [])
    checks.ok([(x["mechanism"], x["bytes"]) for x in rows] ==
              [(m, b) for b in (64 * KIB, 4 * MIB) for m in MECHS],
              "a row per mechanism and size, sizes outer", [x["mechanism"] for x in rows])
    checks.ok(doc and doc["params"]["mechanisms"] == MECHS, "params: every mechanism",
              doc and doc["params"])
    checks.ok(doc and doc["rng_ns_per_write"] > 0, "the generator's cost is measured")
    for x in rows:
        what = "%s %d" % (x["mechanism"], x["bytes"])
        checks.ok(x["status"] in ("measured", "skipped"), what + ": measured or skipped", x)
        if x["status"] == "skipped":
            checks.ok(x["why"] != "" and x["phases"]["touch"] is None and x["reader"] is None,
                      what + ": skipped with a reason and no phases", x)
            continue
        ph = x["phases"]
        for p in PHASES:
            want = p != "sync" or x["mechanism"] in FILES
            checks.ok((ph[p] is not None) == want, what + ": phase " + p, ph)
        checks.ok(ph["touch"]["ops"] * x["page_bytes"] == x["mapped_bytes"] >= x["bytes"],
                  what + ": every page touched", (ph["touch"], x["page_bytes"]))
        checks.ok(ph["touch"]["minor_faults"] > 0, what + ": the first touch faults", ph["touch"])
        checks.ok(ph["writes"]["ops"] == 100000, what + ": --quick's writes done",
                  ph["writes"])
        checks.ok(ph["zeroings"]["ops"] >= 3, what + ": at least 3 zeroings", ph["zeroings"])
        checks.ok(all(ph[p]["ns"] >= 0 for p in PHASES if ph[p]), what + ": times", ph)
        pg = x["pages"]
        # (qemu-user maps a 32-bit program at an offset into its own address
        # space: smaps, read at the program's addresses, finds no pages.)
        checks.ok(pg is not None and pg["kernel_page_bytes"] == x["page_bytes"] and
                  (pg["rss_bytes"] + pg["hugetlb_bytes"] > 0 or (EMULATED and BITS == 32)),
                  what + ": smaps: the page size asked, pages present", pg)
        rd = x["reader"]
        if x["mechanism"] in PRIVATE:
            checks.ok(not rd["done"] and "private" in rd["why"], what + ": no reader", rd)
        else:
            checks.ok(rd["done"] and rd["matched"] and
                      rd["pages"] == ph["touch"]["ops"] and
                      rd["by_name"] == (x["mechanism"] in BY_NAME),
                      what + ": the reader attached and read what was written", rd)
    for m, kb in (("anon-huge2m", 2048), ("memfd-huge1g", 1048576)):
        if huge_free(kb) == 0:
            x = [x for x in rows if x["mechanism"] == m]
            # (A 32-bit program under qemu-user is refused before the pool
            # is asked: its huge page alignment cannot be had there.)
            checks.ok(x and x[0]["status"] == "skipped" and
                      ("nr_hugepages" in x[0]["why"] or (EMULATED and BITS == 32)),
                      m + ": without reserved pages, skipped naming nr_hugepages", x)
    thp = [x for x in rows if x["mechanism"] == "anon-thp" and x["bytes"] == 4 * MIB]
    with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
        thp_on = "[never]" not in f.read()
    # (Under qemu-user smaps is the emulator's, and so are the faults.)
    if thp and thp_on and thp[0]["status"] == "measured" and not EMULATED:
        checks.ok(thp[0]["pages"]["anon_huge_bytes"] > 0 and
                  thp[0]["phases"]["touch"]["minor_faults"] < 1024,
                  "anon-thp at 4M: huge pages, fewer faults than pages", thp[0])

    mt = [x for x in rows if x["mechanism"] == "memfd-thp" and x["bytes"] == 4 * MIB]
    with open("/sys/kernel/mm/transparent_hugepage/shmem_enabled") as f:
        shmem = f.read()
    shmem_thp_never = "[never]" in shmem or "[deny]" in shmem
    if mt and shmem_thp_never:
        checks.ok(mt[0]["pages"]["shmem_pmd_bytes"] == 0 and
                  "no transparent huge page" in mt[0]["note"],
                  "memfd-thp under shmem THP never: none, and the note says so", mt[0])
    checks.ok(all(x["note"] == "" for x in rows if x["bytes"] == 64 * KIB),
              "no note at 64K, below a huge page", [x["note"] for x in rows])

# Exact counts, two mechanisms, one size.
with TempDir() as d:
    out = os.path.join(d, "shm.json")
    r = run(rtmem, "shm", "--mechanisms", "memfd,sysv", "--sizes", "64K", "--writes", "1000",
            "--zeroings", "5", "--dir", d, "--json", out)
    doc = load_json(out)
    checks.ok(r.returncode == 0 and doc, "--writes and --zeroings given", r)
    rows = (doc or {}).get("rows", [])
    checks.ok([x["mechanism"] for x in rows] == ["sysv", "memfd"], "the two asked, in order",
              rows)
    checks.ok(all(x["phases"]["writes"]["ops"] == 1000 and not x["writes_capped"] and
                  x["phases"]["zeroings"]["ops"] == 5 for x in rows),
              "exactly the writes and zeroings asked", rows)
    checks.ok(doc and doc["params"]["writes_given"] and doc["params"]["zeroings"] == 5,
              "params say they were given", doc and doc["params"])

# The published comparison's generator: the same counts, named in params.
with TempDir() as d:
    out = os.path.join(d, "shm.json")
    r = run(rtmem, "shm", "--generator", "rand", "--mechanisms", "sysv", "--sizes", "64K",
            "--writes", "1000", "--zeroings", "3", "--json", out)
    doc = load_json(out)
    checks.ok(r.returncode == 0 and doc and doc["params"]["generator"] == "rand" and
              doc["rows"][0]["phases"]["writes"]["ops"] == 1000 and "rand()" in r.stdout,
              "--generator rand", r)

# --duration: its seconds.
with TempDir() as d:
    out = os.path.join(d, "shm.json")
    r = run(rtmem, "shm", "--duration", "1", "--mechanisms", "memfd", "--sizes", "4M",
            "--json", out)
    doc = load_json(out)
    checks.ok(r.returncode == 0 and doc, "--duration 1", r)
    dur = (doc or {}).get("duration") or []
    checks.ok(len(dur) == 1 and dur[0]["mechanism"] == "memfd" and dur[0]["bytes"] == 4 * MIB
              and len(dur[0]["seconds"]) >= 1 and dur[0]["seconds"][0]["writes"] > 0
              and dur[0]["seconds"][0]["span_s"] >= 1,
              "--duration: a second recorded, with writes", dur)
    checks.ok("writes/s" in r.stdout, "--duration prints its seconds", r)

# Interrupted: SIGINT and SIGTERM while a file and a POSIX name exist.
for sig, mech in ((signal.SIGINT, "file-disk"), (signal.SIGTERM, "posix")):
    with TempDir() as d:
        p = subprocess.Popen([rtmem, "shm", "--mechanisms", mech, "--sizes", "64M",
                              "--writes", str(10 ** 12), "--dir", d],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        end = time.monotonic() + 30
        while not leftovers(d) and time.monotonic() < end and p.poll() is None:
            time.sleep(0.01)
        made = leftovers(d)
        p.send_signal(sig)
        p.wait(timeout=60)
        checks.ok(made != [], "%s: the run made its object" % mech, made)
        checks.ok(p.returncode == -sig, "%s: the run dies of the signal" % mech, p.returncode)
        checks.ok(leftovers(d) == [], "%s: removed on the signal" % mech, leftovers(d))

# A reader that crashes: the run fails, the names are removed.
with TempDir() as d:
    r = run(rtmem, "shm", "--mechanisms", "posix,file-disk", "--sizes", "64K", "--writes",
            "100", "--processes", "2", "--dir", d, env={"RTMEM_SHM_TEST_READER": "crash"})
    # Under a sanitizer the SIGSEGV is its report, then an abort (ASan with
    # abort_on_error: "died of") or an exit with its error status (UBSan's
    # handler): the run fails either way.
    died = "the reader died of SIG" in r.stdout
    sanitized = "the reader exited" in r.stdout and "Sanitizer:DEADLYSIGNAL" in r.stderr
    checks.ok(r.returncode == 1 and (died or sanitized),
              "a crashed reader fails the run", r)
    checks.ok(leftovers(d) == [], "a crashed reader: nothing left", leftovers(d))

# A reader killed with the run: reaped, the name removed.
if become_subreaper():
    with TempDir() as d:
        env = dict(os.environ, RTMEM_SHM_TEST_READER="pause")
        p = subprocess.Popen([rtmem, "shm", "--mechanisms", "posix", "--sizes", "64K",
                              "--writes", "100", "--processes", "2"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        kids = wait_children(p.pid, 1)
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=60)
        checks.ok(len(kids) == 1, "the reader started", kids)
        time.sleep(0.2)
        checks.ok(orphans() == [], "the reader is reaped with the run")
        checks.ok(leftovers(d) == [], "the paused reader's run: nothing left", leftovers(d))

    # SIGKILL: the run cannot reap or clean up, but its reader must not
    # outlive it (it dies with its parent). The name it leaves the test
    # removes.
    with TempDir() as d:
        env = dict(os.environ, RTMEM_SHM_TEST_READER="pause")
        p = subprocess.Popen([rtmem, "shm", "--mechanisms", "posix", "--sizes", "64K",
                              "--writes", "100", "--processes", "2"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        kids = wait_children(p.pid, 1)
        p.kill()
        p.wait(timeout=60)
        checks.ok(len(kids) == 1, "the reader started (SIGKILL)", kids)
        running = kids
        for _ in range(200):
            orphans()  # reaps a reader that died and came to this subreaper
            running = [k for k in kids if alive(k)]
            if not running:
                break
            time.sleep(0.05)
        checks.ok(running == [], "a SIGKILL of the run kills its reader too", running)
        for k in running:
            os.kill(k, signal.SIGKILL)
        mine = [x for x in glob.glob("/dev/shm/rtmem-shm-%d-*" % p.pid)]
        for x in mine:
            os.unlink(x)

checks.ok(sysv_ids() == segments_before, "no SysV segment left",
          sysv_ids() - segments_before)

# Room: a file beyond half of --dir's free space (a 1 MiB tmpfs) is refused.
with TempDir() as d:
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1M", "tmpfs", d],
                       stderr=subprocess.DEVNULL)
    if m.returncode != 0:
        print("tools.shm: cannot mount a tmpfs here: the room check is not tested")
    else:
        try:
            r = run(rtmem, "shm", "--mechanisms", "file-disk", "--sizes", "1M", "--dir", d)
            checks.ok(r.returncode == 2 and "half of the free space" in r.stderr,
                      "a file beyond half of --dir's space is refused", r)
            r = run(rtmem, "shm", "--mechanisms", "file-disk", "--sizes", "768K", "--dir", d,
                    "--force", "--quick")
            checks.ok(r.returncode == 0, "--force runs it", r)
            checks.ok("NOT a disk" in r.stdout, "a tmpfs --dir is said not to be a disk", r)
            checks.ok(leftovers(d) == [], "--force: nothing left", leftovers(d))
        finally:
            subprocess.run(["umount", d])

# The huge-page forms on pages this test reserves (as root) and gives back:
# measured on pages of that size, shared ones read by the second process.
def pool_path(kb, name):
    return "/sys/kernel/mm/hugepages/hugepages-%dkB/%s" % (kb, name)


def pool_num(kb, name):
    with open(pool_path(kb, name)) as f:
        return int(f.read())


def pool_set(kb, n):
    with open(pool_path(kb, "nr_hugepages"), "w") as f:
        f.write("%d\n" % n)


def reserve(kb, need):
    """Pages added so that need are free (0: free already), or None (with
    what was added given back) when they cannot be had here."""
    if not os.path.exists(pool_path(kb, "nr_hugepages")) or os.geteuid() != 0:
        return None
    avail = pool_num(kb, "free_hugepages") - pool_num(kb, "resv_hugepages")
    if avail >= need:
        return 0
    nr = pool_num(kb, "nr_hugepages")
    pool_set(kb, nr + need - avail)
    added = max(0, pool_num(kb, "nr_hugepages") - nr)
    if pool_num(kb, "free_hugepages") - pool_num(kb, "resv_hugepages") < need:
        give_back(kb, added)
        return None
    return added


def give_back(kb, added):
    if added:
        pool_set(kb, pool_num(kb, "nr_hugepages") - added)


for kb, mechs, size, pages in ((2048, ["anon-huge2m", "memfd-huge2m", "sysv-huge2m"], "4M", 2),
                               (1048576, ["anon-huge1g", "memfd-huge1g"], "1G", 1)):
    added = reserve(kb, pages)
    if added is None:
        print("tools.shm: %d %d kB huge pages cannot be had here: %s not measured" %
              (pages, kb, ",".join(mechs)))
        continue
    try:
        with TempDir() as d:
            out = os.path.join(d, "huge.json")
            r = run(rtmem, "shm", "--quick", "--mechanisms", ",".join(mechs), "--sizes", size,
                    "--processes", "2", "--zeroings", "3", "--json", out)
            checks.ok(r.returncode == 0, "huge %d kB: the run passes" % kb, r)
            rows = (load_json(out) or {}).get("rows", [])
            checks.ok([x["mechanism"] for x in rows] == mechs, "huge %d kB: its rows" % kb, rows)
            for x in rows:
                what = "%s %s" % (x["mechanism"], size)
                if EMULATED and x["status"] == "skipped":
                    # qemu-user places the guest's mappings itself: a 1 GiB
                    # page's alignment may not be had there.
                    checks.ok(x["why"] != "", what + ": under emulation, skipped saying why", x)
                    continue
                checks.ok(x["status"] == "measured" and x["page_bytes"] == kb * 1024 and
                          x["phases"]["touch"]["ops"] == pages and
                          x["pages"]["kernel_page_bytes"] == kb * 1024 and
                          x["pages"]["hugetlb_bytes"] == pages * kb * 1024,
                          what + ": measured on its huge pages, every one touched", x)
                rd = x["reader"] or {}
                if x["mechanism"].startswith("anon-"):
                    checks.ok(not rd.get("done"), what + ": private, no reader", rd)
                else:
                    checks.ok(rd.get("done") and rd.get("matched") and rd.get("pages") == pages,
                              what + ": the second process read what was written", rd)
            checks.ok(leftovers(d) == [], "huge %d kB: nothing left" % kb, leftovers(d))
    finally:
        give_back(kb, added)

# --java: the JVM's rows beside the C ones, with the C rows' counts; its
# directory and file removed; without a JDK, skipped rows that say why.
def java_leftovers(d):
    return glob.glob(os.path.join(d, "rtmem-shm-java-*")) + glob.glob("/dev/shm/rtmem-shm-java-*")


have_javac = any(os.access(os.path.join(p, "javac"), os.X_OK)
                 for p in os.environ.get("PATH", "").split(os.pathsep) if p)
with TempDir() as d:
    out = os.path.join(d, "java.json")
    args = ["--quick", "--java", "--mechanisms", "file-disk,memfd", "--sizes", "64K",
            "--writes", "20000", "--zeroings", "4", "--dir", d, "--json", out]
    if not have_javac:
        print("tools.shm: no javac on PATH: --java's measured rows are not tested here "
              "(scripts/ensure-deps.sh java installs a JDK)")
    else:
        r = run(rtmem, "shm", *args)
        checks.ok(r.returncode == 0, "--java: a quick run passes", r)
        doc = load_json(out) or {}
        rows = doc.get("rows", [])
        checks.ok([x["mechanism"] for x in rows] == ["file-disk", "memfd", "java:disk",
                                                     "java:tmpfs"],
                  "--java: the java rows follow the C rows", [x["mechanism"] for x in rows])
        checks.ok(doc.get("params", {}).get("java") is True and
                  (doc.get("java") or {}).get("available") is True and
                  "VM" in (doc.get("java") or {}).get("runtime", ""),
                  "--java: params and the JVM named", doc.get("java"))
        for x in rows[2:]:
            ph = x["phases"]
            checks.ok(x["status"] == "measured" and ph["writes"]["ops"] == 20000 and
                      ph["zeroings"]["ops"] == 4 and ph["touch"]["ops"] == 16 and
                      ph["sync"] is not None and ph["teardown"] is not None,
                      x["mechanism"] + ": measured, the counts asked, every phase", x)
        checks.ok("java rows: " in r.stdout and "whole JVM" in r.stdout,
                  "--java: the report says whose faults the java rows count", r.stdout)
        checks.ok(java_leftovers(d) == [] and leftovers(d) == [],
                  "--java: nothing left in --dir or /dev/shm", java_leftovers(d))
    r = run(rtmem, "shm", *args, env={"PATH": "/nonexistent-rtmem", "JAVA_HOME": ""})
    doc = load_json(out) or {}
    rows = [x for x in doc.get("rows", []) if x["mechanism"].startswith("java:")]
    checks.ok(r.returncode == 0 and len(rows) == 2 and
              all(x["status"] == "skipped" and "javac" in x["why"] for x in rows),
              "--java without a JDK: the java rows skipped, saying why", (r, rows))
    checks.ok(java_leftovers(d) == [], "--java without a JDK: nothing left", java_leftovers(d))

# Usage.
with TempDir() as d:
    out = os.path.join(d, "keep.json")
    with open(out, "w") as f:
        f.write(GOOD)
    long_dir = os.path.join(d, *(["d" * 100] * 5))
    os.makedirs(long_dir)
    for bad, said in ((["--mechanisms", "bogus"], "'bogus' is not a mechanism"),
                      (["--sizes", "5000"], "not a multiple of 4K"),
                      (["--sizes", "8G"], "--sizes"),
                      (["--processes", "3"], "--processes"),
                      (["--prio", "10"], "give --fifo too"),
                      (["--generator", "rand", "--sizes", "4G"], "up to 2G"),
                      (["--generator", "mt"], "--generator"),
                      (["--duration", "1", "--processes", "2"], "--duration"),
                      (["--java", "--duration", "1"], "not with --duration"),
                      (["--java", "--generator", "rand"], "splitmix64 only"),
                      (["--dir", "/nonexistent-rtmem"], "not a directory"),
                      (["--dir", long_dir], "at most 400 bytes")):
        r = run(rtmem, "shm", *bad, "--json", out)
        checks.ok(r.returncode == 2 and said in r.stderr and "rtmem shm --help" in r.stderr,
                  "usage: %s" % " ".join(bad), r)
    with open(out) as f:
        checks.ok(f.read() == GOOD, "bad usage leaves the result file as it was")
r = run(rtmem, "shm", "--help")
checks.ok(r.returncode == 0 and all(m in r.stdout for m in MECHS), "--help lists the mechanisms",
          r)

checks.done()
