"""Helpers for the tests of the rtmem command (tests/tools/test_*.py),
which are pytest cases (conftest.py gives their fixtures): run the
command, read its JSON, and explain a failed run in an assertion.

    def test_bad_ops(rtmem):
        r = run(rtmem, "bench", "--ops", "0")
        assert r.returncode == 2, explain(r)

Imported outside pytest (a test file run as a script, which would define
its cases and pass without running one) it stops with how to run it.
"""

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

if not getattr(sys, "rtmem_under_pytest", False):  # set by conftest.py
    sys.exit("%s: these are pytest cases: python3 -m pytest %s --rtmem BINARY (see "
             "tests/tools/CMakeLists.txt)" % (sys.argv[0], sys.argv[0]))


# rtmem's heap kinds, in `rtmem kinds` order: the tests that run every kind
# take them from here, and test_memcheck.py checks the list against
# `rtmem kinds`, so that a new kind cannot go untested.
KINDS = ("tlsf", "heapmem", "xnheap", "halffit", "xvheap", "zsheap")


def explain(r):
    """A finished command for an assertion's message: its exit status and
    the tails of its output."""
    return "exit status %s; stdout:\n%s\n  stderr:\n%s" % (r.returncode, tail(r.stdout),
                                                         tail(r.stderr))


def tail(text, lines=30):
    text = text or ""
    return "\n".join(text.splitlines()[-lines:])


# A previous result file, which a run that fails or is interrupted leaves
# as it was.
GOOD = '{"a previous": "good result"}\n'


def previous_result(path):
    """Writes GOOD to path; returns path."""
    with open(path, "w") as f:
        f.write(GOOD)
    return path


def assert_kept(path, what="the previous result"):
    """The file at path still holds GOOD."""
    with open(path) as f:
        assert f.read() == GOOD, "%s was changed" % what


def run(*args, timeout=900, env=None, stdout=subprocess.PIPE, stderr=subprocess.PIPE):
    """Runs args with no standard input; text output captured."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run([str(a) for a in args], stdin=subprocess.DEVNULL, stdout=stdout,
                          stderr=stderr, text=True, timeout=timeout, env=full_env)


def bench_status(d):
    """The exit status rtmem bench owes for its document d: 1 when the
    shared heap's cost target was measured and not met (the run fails),
    else 0. A machine decides whether it is met: the tests that are not
    about the target accept either, as long as it agrees with the JSON."""
    t = (d or {}).get("threads") or {}
    for x in (t.get("uncontended") or {}).get("locks") or []:
        if (x.get("target") or {}).get("met") is False:
            return 1
    return 0


def load_json(path):
    """The document at path, or None (with the reason printed) if it is not
    valid JSON."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print("  cannot read JSON %s: %s" % (path, e))
        return None


# A cross build's tests under qemu-user (tests/CMakeLists.txt sets these):
# the emulator, the target's machine (this Python runs on the host's), the
# target's objdump. Timings, faults and residency under emulation are the
# emulator's: the tests check behaviour only there.
EMULATED = os.environ.get("RTMEM_TEST_EMULATED") or None
def _machine(m):
    """uname's and CMake's names of one machine, as one: "arm" for 32-bit
    ARM (armv7l on a board), "i686" for 32-bit x86."""
    if m.startswith("arm") or m == "aarch32":
        return "arm"
    if m in ("i386", "i486", "i586", "i686", "x86"):
        return "i686"
    return m


MACHINE = _machine(os.environ.get("RTMEM_TEST_MACHINE") or os.uname().machine)
OBJDUMP = os.environ.get("RTMEM_TEST_OBJDUMP") or "objdump"
# The target's word size: a 32-bit rtmem refuses sizes beyond its address
# space before anything else.
BITS = int(os.environ.get("RTMEM_TEST_BITS") or struct.calcsize("P") * 8)


def over_share(avail):
    """vm workers and their bytes ("NM") that take 60% of avail together:
    one worker on 64-bit; on 32-bit as many of at most 1 GiB as it takes,
    each within the address space."""
    total = avail * 6 // 10
    vm = 1 if BITS == 64 else max(1, -(-total // (1 << 30)))
    return vm, "%dM" % ((-(-total // vm)) >> 20)


def have_lib(soname):
    """Is the shared library in the dynamic linker's cache (what dlopen
    finds)? For a cross build: among the target's libraries
    (RTMEM_TEST_SYSROOT), where its loader looks."""
    sysroot = os.environ.get("RTMEM_TEST_SYSROOT")
    if sysroot:
        return any(soname in files for _, _, files in os.walk(sysroot))
    for ldconfig in ("ldconfig", "/sbin/ldconfig"):
        try:
            out = subprocess.run([ldconfig, "-p"], stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True).stdout
            return soname in out
        except OSError:
            continue
    return False


PEERS = {"jemalloc": "libjemalloc.so.2", "mimalloc": "libmimalloc.so.2",
         "tcmalloc": "libtcmalloc_minimal.so.4", "rpmalloc": "librtmem-rpmalloc.so"}


def have_peer(rtmem, peer):
    """Whether rtmem can load the peer: a Debian library on the library path,
    or rpmalloc, which scripts/build-rpmalloc.sh builds into the build
    tree's peers/ (beside tools/) unless $RTMEM_RPMALLOC names it."""
    if peer != "rpmalloc":
        return have_lib(PEERS[peer])
    path = os.environ.get("RTMEM_RPMALLOC") or os.path.join(
        os.path.dirname(os.path.realpath(rtmem)), "..", "peers", PEERS[peer])
    return os.path.exists(path)


def installed_peers(rtmem):
    return [p for p in PEERS if have_peer(rtmem, p)]


_malloc_sanitized = {}


def malloc_sanitized(rtmem):
    """Is rtmem built with a sanitizer that replaces malloc (ASan, TSan;
    not UBSan alone)? Such a build skips glibc-rt: its mallopt reaches
    nothing. Read from the binary, which holds the runtime's entry."""
    if rtmem not in _malloc_sanitized:
        with open(rtmem, "rb") as f:
            image = f.read()
        _malloc_sanitized[rtmem] = any(
            s in image for s in (b"__asan_init", b"__tsan_init", b"__msan_init"))
    return _malloc_sanitized[rtmem]


def glibc_rt(rtmem):
    """["glibc-rt"] where a default list holds it, [] where the build skips it."""
    return [] if malloc_sanitized(rtmem) else ["glibc-rt"]


def assert_glibc_rt_skipped_only_if_sanitized(rtmem, d):
    """glibc-rt is skipped, with the reason, exactly where malloc is replaced."""
    why = [s["reason"] for s in d["skipped"] if s["name"] == "glibc-rt"]
    if malloc_sanitized(rtmem):
        assert why and "sanitizer" in why[0], d["skipped"]
    else:
        assert not why, d["skipped"]


class TempDir:
    """A temporary directory, removed on exit whatever happens."""

    def __enter__(self):
        self.path = tempfile.mkdtemp(prefix="rtmem-test-")
        return self.path

    def __exit__(self, *exc):
        shutil.rmtree(self.path, ignore_errors=True)
        return False


ENVELOPE = ["schema", "tool", "version", "command_line", "machine", "timer", "real_time",
            "seed", "seconds", "passed"]


def assert_envelope(doc, tool, schema, args):
    """The shared envelope of a result file: members first, in order, with
    the values the run had."""
    assert doc is not None, "%s: the result file is not JSON" % tool
    assert list(doc.keys())[:len(ENVELOPE)] == ENVELOPE, list(doc.keys())
    assert doc["schema"] == schema
    assert doc["tool"] == tool
    assert doc["command_line"] == ["rtmem", tool] + [str(a) for a in args]
    assert isinstance(doc["seconds"], (int, float)) and doc["seconds"] >= 0
    assert isinstance(doc["passed"], bool)
    assert isinstance(doc["machine"], dict) and "cpu_model" in doc["machine"]
    assert isinstance(doc["timer"], dict)


# Processes a tool starts: to see every one that outlives its parent, a
# test makes itself a child subreaper (PR_SET_CHILD_SUBREAPER): an orphaned
# worker becomes the test's child, and waitpid finds it.
PR_SET_CHILD_SUBREAPER = 36


def become_subreaper():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def children_of(ppid):
    """Pids of the processes whose parent is ppid."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                stat = f.read()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == ppid:
            out.append(int(name))
    return out


def orphans():
    """Pids of the processes reparented to this (subreaper) test and ended,
    reaped now, plus those still running whose parent is this test."""
    found = []
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        found.append(pid)
    return found + children_of(os.getpid())


def wait_children(pid, n, timeout=20):
    """The pids of pid's children once there are n of them (or what there
    is at the timeout)."""
    import time
    end = time.monotonic() + timeout
    kids = []
    while time.monotonic() < end:
        kids = children_of(pid)
        if len(kids) >= n:
            break
        time.sleep(0.05)
    return kids


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def reap_ends(kids, timeout=10):
    """Waits (this test a subreaper) for the orphaned pids kids to end;
    returns {pid: wait status} of those reaped, then kills and reaps any
    left, so that none outlives the test."""
    import signal
    import time
    ends = {}
    deadline = time.monotonic() + timeout
    while len(ends) < len(kids) and time.monotonic() < deadline:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            time.sleep(0.02)
        else:
            ends[pid] = status
    for k in kids:
        if alive(k):
            os.kill(k, signal.SIGKILL)
    orphans()
    return ends


def as_nobody(test, rtmem):
    """The command prefix that runs rtmem as nobody with no capabilities,
    [] when this test is unprivileged already, or None (said) when root
    cannot switch to nobody here."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        return []
    unpriv = ["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups",
              "--inh-caps=-all", "--bounding-set=-all"]
    probe = run(*unpriv, rtmem, "--version")
    if probe.returncode != 0:
        print("%s: cannot run rtmem as nobody (%s): the privileged run stands for the "
              "unprivileged one" % (test, probe.stderr.strip()))
        return None
    return unpriv


def default_signals():
    """In a child, before exec: SIGINT, SIGTERM and SIGHUP at their default
    action, even where the test runs with them ignored (a background job
    ignores SIGINT, nohup SIGHUP), since rtmem keeps an ignored signal
    ignored. For Popen's preexec_fn."""
    import signal
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


class started:
    """A process started for a case (Popen: no standard input, text output
    piped, the signals at their default action), killed and reaped on
    leaving, whatever happens; if the case failed, the orphans it left
    (a subreaper test's) too.

        with started(rtmem, "latency", "--duration", 60) as p:
            ...
    """

    def __init__(self, *args, **kw):
        kw.setdefault("stdin", subprocess.DEVNULL)
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.PIPE)
        kw.setdefault("text", True)
        kw.setdefault("preexec_fn", default_signals)
        self.p = subprocess.Popen([str(a) for a in args], **kw)

    def __enter__(self):
        return self.p

    def __exit__(self, exc_type, *exc):
        import signal
        p = self.p
        if p.poll() is None:
            p.kill()
        p.__exit__(None, None, None)  # closes the pipes, waits
        if exc_type is not None:
            for k in children_of(os.getpid()):
                try:
                    os.kill(k, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            orphans()
        return False


def signal_at(p, prefix, sig, timeout=120):
    """Sends sig to the started process p once a line of its output starts
    with prefix, and waits for it to end: the CompletedProcess, with the
    whole output."""
    out = []
    for line in p.stdout:
        out.append(line)
        if line.startswith(prefix):
            p.send_signal(sig)
            break
    rest, err = p.communicate(timeout=timeout)
    return subprocess.CompletedProcess(p.args, p.returncode, "".join(out) + rest, err)


def left_in(d, expected=()):
    """The names in directory d besides those expected, sorted."""
    return sorted(set(os.listdir(d)) - set(expected))


def mem_available():
    """MemAvailable of /proc/meminfo, in bytes."""
    with open("/proc/meminfo") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("MemAvailable:"))


def sqlite_workload(rows):
    """SQL for Debian's sqlite3 shell, a real program's work: a table of
    rows rows built, indexed, summed, grouped and searched (thousands of
    allocations, many of them reallocs)."""
    return ("CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL);\n"
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < %d)\n"
            "INSERT INTO t SELECT x, printf('name-%%05d-%%s', x, substr('abcdefghij', 1 + x %% 10)),"
            " x * 0.5 FROM c;\n"
            "CREATE INDEX t_name ON t(name);\n"
            "SELECT count(*), sum(v) FROM t;\n"
            "SELECT substr(name, 12), count(*), avg(v) FROM t GROUP BY 1 ORDER BY 1;\n"
            "SELECT group_concat(id) FROM (SELECT id FROM t WHERE name LIKE '%%-0012%%' "
            "ORDER BY id DESC);\n" % rows)
