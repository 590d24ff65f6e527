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
"""
import glob
import os
import re
import signal
import subprocess
import time

import pytest

from rtmemtest import (BITS, EMULATED, alive, assert_envelope, assert_kept, become_subreaper,
                       explain, load_json, orphans, previous_result, run, started, wait_children)

KIB, MIB = 1024, 1024 * 1024
MECHS = ["file-disk", "file-tmpfs", "posix", "sysv", "memfd", "anon-shared", "memfd-thp",
         "anon-huge2m", "anon-huge1g", "memfd-huge2m", "memfd-huge1g", "sysv-huge2m",
         "anon-private", "anon-thp"]
FILES = {"file-disk", "file-tmpfs"}
BY_NAME = {"file-disk", "file-tmpfs", "posix"}
PRIVATE = {"anon-huge2m", "anon-huge1g", "anon-private", "anon-thp"}
PHASES = ["touch", "writes", "zeroings", "sync", "teardown"]
QUICK_SIZES = [64 * KIB, 4 * MIB]


def sysv_ids():
    with open("/proc/sysvipc/shm") as f:
        return {line.split()[1] for line in f.readlines()[1:]}


# The names the tool makes: rtmem-shm-PID-START-RANDOM (16 hex digits);
# others' files in /dev/shm are not its own.
OURS = re.compile(r"rtmem-shm-[0-9]+-[0-9]+-[0-9a-f]{16}$")


def leftovers(d):
    return [p for p in glob.glob(os.path.join(d, "rtmem-shm-*")) + glob.glob("/dev/shm/rtmem-shm-*")
            if OURS.match(os.path.basename(p))]


def huge_free(kb):
    try:
        with open("/sys/kernel/mm/hugepages/hugepages-%dkB/free_hugepages" % kb) as f:
            return int(f.read())
    except OSError:
        return 0


def shm_json(rtmem, d, *args, env=None):
    """A run writing d/shm.json: (its result, its document or {})."""
    out = os.path.join(d, "shm.json")
    r = run(rtmem, "shm", *args, "--json", out, env=env)
    return r, load_json(out) or {}


@pytest.fixture(scope="module", autouse=True)
def segments_before():
    """The SysV segments there were before this file's first case."""
    return sysv_ids()


# A quick run of everything, with a second process.

@pytest.fixture(scope="module")
def quick(rtmem, module_dir):
    """`shm --quick --processes 2`: (its result, its document, its
    arguments, the names it left)."""
    out = os.path.join(module_dir, "shm.json")
    args = ["--quick", "--processes", "2", "--dir", module_dir, "--json", out]
    r = run(rtmem, "shm", *args)
    return r, load_json(out), args, leftovers(module_dir)


def rows_of(quick):
    return (quick[1] or {}).get("rows", [])


def test_a_quick_run_passes_and_writes_the_envelope(quick):
    r, doc, args, _ = quick
    assert r.returncode == 0, explain(r)
    assert_envelope(doc, "shm", "rtmem-shm/2", args)


def test_a_quick_run_leaves_nothing_in_dir_or_dev_shm(quick):
    assert quick[3] == [], "left behind: %s" % quick[3]


def test_a_quick_run_has_a_row_per_mechanism_and_size_sizes_outer(quick):
    doc = quick[1]
    assert [(x["mechanism"], x["bytes"]) for x in rows_of(quick)] == \
        [(m, b) for b in QUICK_SIZES for m in MECHS]
    assert doc["params"]["mechanisms"] == MECHS, doc["params"]
    assert doc["rng_ns_per_write"] > 0, "the generator's cost is not measured"


def test_the_generator_is_timed_in_five_runs_of_as_many_draws_as_writes_at_least_2_20(quick):
    rng = quick[1]["rng"]
    assert rng["runs"] == 5 and rng["draws"] == 1 << 20, rng
    assert rng["median_ns_per_draw"] == quick[1]["rng_ns_per_write"] > 0 and \
        rng["iqr_ns_per_draw"] >= 0, rng


def measured_rows(quick):
    return [x for x in rows_of(quick) if x["status"] == "measured"]


def test_the_writes_are_timed_whole_never_a_clamped_zero(quick):
    # (The net, the writes less the generator, was once written in their
    # place, and clamped at 0 where the generator cost more.)
    whole = [(x["mechanism"], x["bytes"], x["phases"]["writes"]["ns"]) for x in measured_rows(quick)]
    assert whole and all(ns > 0 for _, _, ns in whole), whole


def test_the_net_is_the_median_slice_less_the_generator_with_its_precision(quick):
    for x in measured_rows(quick):
        if x["writes_spread_ns"] is None:
            # Fewer than 4 slices: only where the budget cut --quick's 10^5
            # writes (8 slices) short, on a machine that stalled the run.
            assert x["writes_capped"], x
            continue
        # The median slice lies within the slices, whose mean is the whole.
        assert x["slice_ns_per_write"] > 0 and x["writes_spread_ns"] >= 0, x
        assert abs(x["net_ns_per_write"] - (x["slice_ns_per_write"] - x["rng_ns_per_write"])) \
            < 1e-6, x
        p = x["net_precision_ns"]
        assert x["rng_spread_ns"] >= 0 and \
            abs(p - (x["rng_spread_ns"] + x["writes_spread_ns"])) < 1e-6, x
        assert x["net_resolved"] == (x["net_ns_per_write"] > p), x
        assert x["net_consistent"] == (x["net_ns_per_write"] >= -p), x


def test_the_table_prints_the_net_with_its_precision_or_below_it(quick):
    out = quick[0].stdout
    assert re.search(r"^mechanism .* write +vs sysv +net write ", out, re.M), explain(quick[0])
    table = out.split("\nmechanism ", 1)[1].split("\n\n", 1)[0]
    rows = [l for l in table.splitlines() if l.split(" ", 1)[0] in MECHS and "skipped" not in l]
    assert len(rows) == len(measured_rows(quick)), table
    cells = [re.match(r".* [0-9.]+x +(\S+) +\S+ +\S+ +\S+$", l) for l in rows]
    assert all(cells), table  # (a FAILED row, or a cell missing, fails here)
    net = re.compile(r"<\d+\.\d\d|\d+\.\d\d~\d+\.\d\d|-\d+\.\d\d~\d+\.\d\d!")
    assert all(net.fullmatch(c.group(1)) for c in cells), table
    # A net below minus its precision is flagged, and the note says why.
    assert ("!" in "".join(c.group(1) for c in cells)) == ("\n! a net below" in out), out


@pytest.mark.parametrize("mech,size", [(m, b) for b in QUICK_SIZES for m in MECHS],
                         ids=["%s-%dK" % (m, b // KIB) for b in QUICK_SIZES for m in MECHS])
def test_each_row_is_measured_in_every_phase_or_skipped_with_a_reason(quick, mech, size):
    x = next((x for x in rows_of(quick) if (x["mechanism"], x["bytes"]) == (mech, size)), None)
    assert x is not None, "no row"
    assert x["status"] in ("measured", "skipped"), x
    if x["status"] == "skipped":
        assert x["why"] != "" and x["phases"]["touch"] is None and x["reader"] is None, x
        return
    ph = x["phases"]
    for p in PHASES:
        assert (ph[p] is not None) == (p != "sync" or mech in FILES), "phase %s: %s" % (p, ph)
    assert ph["touch"]["ops"] * x["page_bytes"] == x["mapped_bytes"] >= x["bytes"], \
        "not every page touched: %s, page %s" % (ph["touch"], x["page_bytes"])
    assert ph["touch"]["minor_faults"] > 0, "the first touch does not fault: %s" % ph["touch"]
    # --quick's writes are "up to 100000, cut at --budget": under an emulator
    # on a loaded machine (CI's cross builds, beside the fuzzer) the budget
    # may end them first.
    assert ph["writes"]["ops"] == 100000 or (EMULATED and 0 < ph["writes"]["ops"] < 100000), \
        "not --quick's writes: %s" % ph["writes"]
    assert ph["zeroings"]["ops"] >= 3, "fewer than 3 zeroings: %s" % ph["zeroings"]
    assert all(ph[p]["ns"] >= 0 for p in PHASES if ph[p]), ph
    pg = x["pages"]
    # (qemu-user maps a 32-bit program at an offset into its own address
    # space: smaps, read at the program's addresses, finds no pages.)
    assert pg is not None and pg["kernel_page_bytes"] == x["page_bytes"] and \
        (pg["rss_bytes"] + pg["hugetlb_bytes"] > 0 or (EMULATED and BITS == 32)), \
        "smaps: not the page size asked, or no pages present: %s" % pg
    rd = x["reader"]
    if mech in PRIVATE:
        assert not rd["done"] and "private" in rd["why"], "a reader: %s" % rd
    else:
        assert rd["done"] and rd["matched"] and rd["pages"] == ph["touch"]["ops"] and \
            rd["by_name"] == (mech in BY_NAME), \
            "the reader did not attach or read what was written: %s" % rd


@pytest.mark.parametrize("mech,kb", [("anon-huge2m", 2048), ("memfd-huge1g", 1048576)])
def test_a_huge_page_form_without_reserved_pages_is_skipped_naming_nr_hugepages(quick, mech,
                                                                                 kb):
    if huge_free(kb) != 0:
        pytest.skip("%d kB huge pages are reserved here" % kb)
    x = [x for x in rows_of(quick) if x["mechanism"] == mech]
    # (A 32-bit program under qemu-user is refused before the pool is
    # asked: its huge page alignment cannot be had there.)
    assert x and x[0]["status"] == "skipped" and \
        ("nr_hugepages" in x[0]["why"] or (EMULATED and BITS == 32)), x


def test_anon_thp_at_4m_takes_huge_pages_and_fewer_faults_than_pages(quick):
    thp = [x for x in rows_of(quick) if x["mechanism"] == "anon-thp" and x["bytes"] == 4 * MIB]
    with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
        thp_on = "[never]" not in f.read()
    # (Under qemu-user smaps is the emulator's, and so are the faults.)
    if not (thp and thp_on and thp[0]["status"] == "measured" and not EMULATED):
        pytest.skip("transparent huge pages off, anon-thp not measured, or emulated")
    assert thp[0]["pages"]["anon_huge_bytes"] > 0 and \
        thp[0]["phases"]["touch"]["minor_faults"] < 1024, thp[0]


def test_memfd_thp_under_shmem_thp_never_has_none_and_says_so(quick):
    mt = [x for x in rows_of(quick) if x["mechanism"] == "memfd-thp" and x["bytes"] == 4 * MIB]
    with open("/sys/kernel/mm/transparent_hugepage/shmem_enabled") as f:
        shmem = f.read()
    if not (mt and ("[never]" in shmem or "[deny]" in shmem)):
        pytest.skip("shmem THP is not never here")
    assert mt[0]["pages"]["shmem_pmd_bytes"] == 0 and \
        "no transparent huge page" in mt[0]["note"], mt[0]


def test_no_note_at_64k_below_a_huge_page(quick):
    notes = [(x["mechanism"], x["note"]) for x in rows_of(quick) if x["bytes"] == 64 * KIB]
    assert all(note == "" for _, note in notes), notes


def test_writes_and_zeroings_given_are_done_exactly(rtmem, tmp_dir):
    r, doc = shm_json(rtmem, tmp_dir, "--mechanisms", "memfd,sysv", "--sizes", "64K",
                      "--writes", "1000", "--zeroings", "5", "--dir", tmp_dir)
    assert r.returncode == 0 and doc, explain(r)
    rows = doc.get("rows", [])
    assert [x["mechanism"] for x in rows] == ["sysv", "memfd"], "not the two asked, in order"
    done = [(x["mechanism"], x["phases"]["writes"]["ops"], x["writes_capped"],
             x["phases"]["zeroings"]["ops"]) for x in rows]
    assert all(w == 1000 and not capped and z == 5 for _, w, capped, z in done), \
        "not exactly 1000 writes, uncapped, and 5 zeroings: %s" % done
    assert doc["params"]["writes_given"] and doc["params"]["zeroings"] == 5, doc["params"]


def test_generator_rand_does_the_same_counts_named_in_params(rtmem, tmp_dir):
    # (the published comparison's generator)
    r, doc = shm_json(rtmem, tmp_dir, "--generator", "rand", "--mechanisms", "sysv", "--sizes",
                      "64K", "--writes", "1000", "--zeroings", "3")
    assert r.returncode == 0 and doc and "rand()" in r.stdout, explain(r)
    assert doc["params"]["generator"] == "rand" and \
        doc["rows"][0]["phases"]["writes"]["ops"] == 1000, doc


def test_duration_records_and_prints_its_seconds(rtmem, tmp_dir):
    r, doc = shm_json(rtmem, tmp_dir, "--duration", "1", "--mechanisms", "memfd", "--sizes", "4M")
    assert r.returncode == 0 and doc, explain(r)
    dur = doc.get("duration") or []
    assert len(dur) == 1 and dur[0]["mechanism"] == "memfd" and dur[0]["bytes"] == 4 * MIB \
        and len(dur[0]["seconds"]) >= 1 and dur[0]["seconds"][0]["writes"] > 0 \
        and dur[0]["seconds"][0]["span_s"] >= 1, "not a second recorded, with writes: %s" % dur
    assert "writes/s" in r.stdout, explain(r)


@pytest.mark.parametrize("sig,mech", [(signal.SIGINT, "file-disk"), (signal.SIGTERM, "posix")],
                         ids=["SIGINT-file-disk", "SIGTERM-posix"])
def test_a_signal_removes_the_file_or_posix_name_the_run_made(rtmem, tmp_dir, sig, mech):
    with started(rtmem, "shm", "--mechanisms", mech, "--sizes", "64M", "--writes",
                 str(10 ** 12), "--dir", tmp_dir, stdout=subprocess.DEVNULL) as p:
        end = time.monotonic() + 30
        while not leftovers(tmp_dir) and time.monotonic() < end and p.poll() is None:
            time.sleep(0.01)
        made = leftovers(tmp_dir)
        p.send_signal(sig)
        p.wait(timeout=60)
    assert made != [], "the run made no object"
    assert p.returncode == -sig, "the run did not die of the signal: %s" % p.returncode
    assert leftovers(tmp_dir) == [], "not removed on the signal: %s" % leftovers(tmp_dir)


def test_a_reader_that_crashes_fails_the_run_and_the_names_are_removed(rtmem, tmp_dir):
    r = run(rtmem, "shm", "--mechanisms", "posix,file-disk", "--sizes", "64K", "--writes", "100",
            "--processes", "2", "--dir", tmp_dir, env={"RTMEM_SHM_TEST_READER": "crash"})
    # Under a sanitizer the SIGSEGV is its report, then an abort (ASan with
    # abort_on_error: "died of") or an exit with its error status (UBSan's
    # handler): the run fails either way.
    died = "the reader died of SIG" in r.stdout
    sanitized = "the reader exited" in r.stdout and "Sanitizer:DEADLYSIGNAL" in r.stderr
    assert r.returncode == 1 and (died or sanitized), explain(r)
    assert leftovers(tmp_dir) == [], "left behind: %s" % leftovers(tmp_dir)


def paused_reader(rtmem):
    """A run whose reader pauses (RTMEM_SHM_TEST_READER=pause); this test
    a subreaper first, to see the reader end."""
    if not become_subreaper():
        pytest.skip("this test cannot be a child subreaper")
    return started(rtmem, "shm", "--mechanisms", "posix", "--sizes", "64K", "--writes", "100",
                   "--processes", "2", env=dict(os.environ, RTMEM_SHM_TEST_READER="pause"),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_a_reader_killed_with_the_run_is_reaped_and_the_name_removed(rtmem, tmp_dir):
    with paused_reader(rtmem) as p:
        kids = wait_children(p.pid, 1)
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=60)
    assert len(kids) == 1, "the reader did not start: %s" % kids
    time.sleep(0.2)
    assert orphans() == [], "the reader was not reaped with the run"
    assert leftovers(tmp_dir) == [], "left behind: %s" % leftovers(tmp_dir)


def test_sigkill_of_the_run_kills_its_reader_too(rtmem):
    # The run cannot reap or clean up, but its reader must not outlive it
    # (it dies with its parent). The name it leaves the test removes.
    with paused_reader(rtmem) as p:
        kids = wait_children(p.pid, 1)
        p.kill()
        p.wait(timeout=60)
    try:
        assert len(kids) == 1, "the reader did not start: %s" % kids
        running = kids
        for _ in range(200):
            orphans()  # reaps a reader that died and came to this subreaper
            running = [k for k in kids if alive(k)]
            if not running:
                break
            time.sleep(0.05)
        assert running == [], "the reader outlived the run: %s" % running
    finally:
        for k in kids:
            if alive(k):
                os.kill(k, signal.SIGKILL)
        orphans()
        for x in glob.glob("/dev/shm/rtmem-shm-%d-*" % p.pid):
            os.unlink(x)


def start_time(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])


def test_a_sigkilled_run_leaves_names_the_next_run_removes(rtmem, tmp_dir):
    with started(rtmem, "shm", "--mechanisms", "file-disk", "--sizes", "64M", "--writes",
                 str(10 ** 12), "--dir", tmp_dir, stdout=subprocess.DEVNULL,
                 stderr=subprocess.DEVNULL) as p:
        end = time.monotonic() + 30
        while not leftovers(tmp_dir) and time.monotonic() < end and p.poll() is None:
            time.sleep(0.01)
        p.kill()
        p.wait(timeout=60)
    left = leftovers(tmp_dir)
    assert left, "the killed run left nothing to find"
    # Beside it: a name of a run still going (this test's own process), one
    # of another form, and a dead run's directory with a file in it.
    live = os.path.join(tmp_dir, "rtmem-shm-%d-%d-%016x" % (os.getpid(), start_time(os.getpid()),
                                                           1))
    other = os.path.join(tmp_dir, "rtmem-shm-notarun")
    dead_dir = os.path.join(tmp_dir, "rtmem-shm-java-%d-1-abcdef" % p.pid)
    for path in (live, other):
        open(path, "w").close()
    os.mkdir(dead_dir)
    open(os.path.join(dead_dir, "region"), "w").close()
    r = run(rtmem, "shm", "--quick", "--mechanisms", "memfd", "--sizes", "64K", "--dir", tmp_dir)
    assert r.returncode == 0, explain(r)
    for path in left + [dead_dir]:
        assert not os.path.exists(path), "not removed: %s" % path
        assert ("removed %s, left by run %d, which ended without removing it" % (path, p.pid)) \
            in r.stderr, explain(r)
    assert os.path.exists(live) and os.path.exists(other), "removed what was not a dead run's"
    os.unlink(live)
    os.unlink(other)


def test_a_dead_runs_name_of_another_user_is_left(rtmem, tmp_dir):
    if os.geteuid() != 0:
        pytest.skip("needs root: to give a file to another user")
    theirs = os.path.join(tmp_dir, "rtmem-shm-999999-1-%016x" % 7)
    open(theirs, "w").close()
    os.chown(theirs, 65534, 65534)
    r = run(rtmem, "shm", "--quick", "--mechanisms", "memfd", "--sizes", "64K", "--dir", tmp_dir)
    assert r.returncode == 0 and "removed" not in r.stderr, explain(r)
    assert os.path.exists(theirs)
    os.unlink(theirs)


# Room: a file beyond half of --dir's free space (a 1 MiB tmpfs) is refused.

@pytest.fixture(scope="module")
def tiny_tmpfs(module_dir):
    """A 1 MiB tmpfs, unmounted after the file's last case."""
    d = os.path.join(module_dir, "tmpfs")
    os.mkdir(d)
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1M", "tmpfs", d],
                       stderr=subprocess.DEVNULL)
    if m.returncode != 0:
        pytest.skip("cannot mount a tmpfs here: the room check is not tested")
    try:
        yield d
    finally:
        subprocess.run(["umount", d])


def test_a_file_beyond_half_of_dirs_free_space_is_refused(rtmem, tiny_tmpfs):
    r = run(rtmem, "shm", "--mechanisms", "file-disk", "--sizes", "1M", "--dir", tiny_tmpfs)
    assert r.returncode == 2 and "half of the free space" in r.stderr, explain(r)


def test_force_runs_it_saying_a_tmpfs_is_not_a_disk_and_leaves_nothing(rtmem, tiny_tmpfs):
    r = run(rtmem, "shm", "--mechanisms", "file-disk", "--sizes", "768K", "--dir", tiny_tmpfs,
            "--force", "--quick")
    assert r.returncode == 0, explain(r)
    assert "NOT a disk" in r.stdout, explain(r)
    assert leftovers(tiny_tmpfs) == [], "left behind: %s" % leftovers(tiny_tmpfs)


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


@pytest.fixture
def pages_reserved(request):
    """(kb, pages) reserved for the case, given back after it."""
    kb, pages = request.param
    added = reserve(kb, pages)
    if added is None:
        pytest.skip("%d %d kB huge pages cannot be had here" % (pages, kb))
    try:
        yield kb, pages
    finally:
        give_back(kb, added)


HUGE = [((2048, 2), ["anon-huge2m", "memfd-huge2m", "sysv-huge2m"], "4M"),
        ((1048576, 1), ["anon-huge1g", "memfd-huge1g"], "1G")]


@pytest.mark.parametrize("pages_reserved,mechs,size", HUGE, indirect=["pages_reserved"],
                         ids=["2M-pages", "1G-page"])
def test_huge_page_forms_are_measured_on_their_pages_and_shared_ones_read(
        rtmem, tmp_dir, pages_reserved, mechs, size):
    kb, pages = pages_reserved
    r, doc = shm_json(rtmem, tmp_dir, "--quick", "--mechanisms", ",".join(mechs), "--sizes",
                      size, "--processes", "2", "--zeroings", "3")
    assert r.returncode == 0, explain(r)
    rows = doc.get("rows", [])
    assert [x["mechanism"] for x in rows] == mechs
    for x in rows:
        what = "%s %s" % (x["mechanism"], size)
        if EMULATED and x["status"] == "skipped":
            # qemu-user places the guest's mappings itself: a 1 GiB page's
            # alignment may not be had there.
            assert x["why"] != "", "%s: under emulation, skipped without why" % what
            continue
        assert x["status"] == "measured" and x["page_bytes"] == kb * 1024 and \
            x["phases"]["touch"]["ops"] == pages and \
            x["pages"]["kernel_page_bytes"] == kb * 1024 and \
            x["pages"]["hugetlb_bytes"] == pages * kb * 1024, \
            "%s: not measured on its huge pages, every one touched: %s" % (what, x)
        rd = x["reader"] or {}
        if x["mechanism"].startswith("anon-"):
            assert not rd.get("done"), "%s: private, yet a reader: %s" % (what, rd)
        else:
            assert rd.get("done") and rd.get("matched") and rd.get("pages") == pages, \
                "%s: the second process did not read what was written: %s" % (what, rd)
    assert leftovers(tmp_dir) == [], "left behind: %s" % leftovers(tmp_dir)


# --java: the JVM's rows beside the C ones, with the C rows' counts; its
# directory and file removed; without a JDK, skipped rows that say why.
JAVA = ["--quick", "--java", "--mechanisms", "file-disk,memfd", "--sizes", "64K",
        "--writes", "20000", "--zeroings", "4"]


def java_leftovers(d):
    return glob.glob(os.path.join(d, "rtmem-shm-java-*")) + glob.glob("/dev/shm/rtmem-shm-java-*")


def test_java_rows_follow_the_c_rows_with_their_counts_and_leave_nothing(rtmem, tmp_dir):
    if not any(os.access(os.path.join(p, "javac"), os.X_OK)
               for p in os.environ.get("PATH", "").split(os.pathsep) if p):
        pytest.skip("no javac on PATH: --java's measured rows are not tested here "
                    "(scripts/ensure-deps.sh java installs a JDK)")
    r, doc = shm_json(rtmem, tmp_dir, *JAVA, "--dir", tmp_dir)
    assert r.returncode == 0, explain(r)
    rows = doc.get("rows", [])
    assert [x["mechanism"] for x in rows] == ["file-disk", "memfd", "java:disk", "java:tmpfs"]
    java = doc.get("java") or {}
    assert doc.get("params", {}).get("java") is True and java.get("available") is True and \
        "VM" in java.get("runtime", ""), "params, or the JVM not named: %s" % java
    for x in rows[2:]:
        ph = x["phases"]
        assert x["status"] == "measured" and ph["writes"]["ops"] == 20000 and \
            ph["zeroings"]["ops"] == 4 and ph["touch"]["ops"] == 16 and \
            ph["sync"] is not None and ph["teardown"] is not None, \
            "%s: not measured with the counts asked in every phase: %s" % (x["mechanism"], x)
    assert "java rows: " in r.stdout and "whole JVM" in r.stdout, \
        "the report does not say whose faults the java rows count:\n" + r.stdout
    assert java_leftovers(tmp_dir) == [] and leftovers(tmp_dir) == [], \
        "left behind: %s" % (java_leftovers(tmp_dir) + leftovers(tmp_dir))


def test_java_without_a_jdk_skips_the_java_rows_saying_why(rtmem, tmp_dir):
    r, doc = shm_json(rtmem, tmp_dir, *JAVA, "--dir", tmp_dir,
                      env={"PATH": "/nonexistent-rtmem", "JAVA_HOME": ""})
    rows = [x for x in doc.get("rows", []) if x["mechanism"].startswith("java:")]
    assert r.returncode == 0, explain(r)
    assert len(rows) == 2 and all(x["status"] == "skipped" and "javac" in x["why"]
                                  for x in rows), rows
    assert java_leftovers(tmp_dir) == [], "left behind: %s" % java_leftovers(tmp_dir)


USAGE = [(["--mechanisms", "bogus"], "'bogus' is not a mechanism"),
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
         (["--dir", "LONG"], "at most 400 bytes")]


@pytest.mark.parametrize("args,said", USAGE, ids=[" ".join(a) for a, _ in USAGE])
def test_bad_usage_exits_2_with_the_message_and_keeps_the_result_file(rtmem, tmp_dir, args,
                                                                       said):
    out = previous_result(os.path.join(tmp_dir, "keep.json"))
    if "LONG" in args:  # a directory of 500 bytes and more
        long_dir = os.path.join(tmp_dir, *(["d" * 100] * 5))
        os.makedirs(long_dir)
        args = [long_dir if a == "LONG" else a for a in args]
    r = run(rtmem, "shm", *args, "--json", out)
    assert r.returncode == 2 and said in r.stderr and "rtmem shm --help" in r.stderr, explain(r)
    assert_kept(out, "the result file")


def test_help_lists_every_mechanism(rtmem):
    # (that --help is a synopsis of the manual's options: test_docs.py)
    r = run(rtmem, "shm", "--help")
    assert all(m in r.stdout for m in MECHS), explain(r)


def test_no_sysv_segment_is_left(segments_before):
    # (the last case: after every run above)
    assert sysv_ids() == segments_before, "left: %s" % (sysv_ids() - segments_before)
