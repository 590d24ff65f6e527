"""rtmem bench's threads phase (CTest lock.bench): --threads-only runs it
alone, with the lock cost uncontended for each lock type asked and a row
per thread and lock type, in the text and the JSON; --threads 0 and
--sweep-only leave it out; bad usage of its options exits 2 with the
message and the --help hint. The shared type's heaps (POSIX shm) leave no
object in /dev/shm: after a run, a run whose shared heap cannot be made
(the row skipped with the reason), and a run interrupted or killed while
a shared heap is mapped.

usage: test_bench_threads.py RTMEM_BINARY
"""
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import time

from rtmemtest import Checks, TempDir, envelope_ok, load_json, run

rtmem = sys.argv[1]
checks = Checks("lock.bench")
LOCKS = ["none", "pi", "robust", "shared"]
SHM = "/dev/shm"


def finite(v):
    return isinstance(v, (int, float)) and math.isfinite(v)


def stale_objects():
    """rtmem bench's shm objects (rtmem-bench-<pid>...) whose process is
    gone. Other tests run in parallel: a live run's object is theirs."""
    found = []
    for name in os.listdir(SHM):
        m = re.match(r"rtmem-bench-(\d+)", name)
        if m and not os.path.exists("/proc/" + m.group(1)):
            found.append(name)
    return found


def objects_of(pid):
    return [n for n in os.listdir(SHM) if re.match(r"rtmem-bench-%d(\D|$)" % pid, n)]


def no_objects_left(what):
    checks.ok(not stale_objects(), "%s: no rtmem-bench object left in %s" % (what, SHM),
              stale_objects())


with TempDir() as tmp:
    path = os.path.join(tmp, "t.json")
    args = ["--threads-only", "--quick", "--no-rt", "--threads", "3", "--json", path]
    r = run(rtmem, "bench", *args)
    checks.ok(r.returncode == 0, "bench --threads-only", r)
    d = load_json(path)
    envelope_ok(checks, d, "bench", "rtmem-bench/2", args)
    if d:
        t = d["threads"]
        checks.ok(d["free_order"] is None and d["sweep"] is None and
                  [a["name"] for a in d["allocators"]] == ["floor"] and
                  d["params"]["main_phase"] is False,
                  "bench --threads-only: no other phase", d["params"])
        checks.ok(t["kind"] == "tlsf" and t["threads"] == 3 and len(t["cpus"]) == 3 and
                  t["error"] is None and t["ops_per_thread"] == 2000,
                  "bench --threads-only: the phase's setup on record", t)
        un = {x["lock"]: x for x in t["uncontended"]["locks"]}
        checks.ok([x["lock"] for x in t["uncontended"]["locks"]] == LOCKS,
                  "uncontended: every lock type, shared included", un)
        for name in ("pi", "robust", "shared"):
            x = un.get(name, {})
            checks.ok(all(finite(x.get(k)) for k in
                          ("bare_lock_unlock_ns", "call_unlocked_ns", "call_locked_ns",
                           "added_per_call_ns", "added_over_bare", "call_locked_over_unlocked",
                           "call_locked_over_unlocked_round_min",
                           "call_locked_over_unlocked_round_max")) and
                      x["bare_lock_unlock_ns"] > 0 and x["call_locked_ns"] > 0 and
                      x["call_locked_over_unlocked"] > 0 and x["skipped"] is None and
                      x["call_locked_over_unlocked_round_min"] <= x["call_locked_over_unlocked"]
                      <= x["call_locked_over_unlocked_round_max"] and
                      len(x["rounds_call_locked_ns"]) == d["params"]["rounds"] and
                      all(finite(v) and v > 0 for v in x["rounds_call_locked_ns"] +
                          x["rounds_call_unlocked_ns"]),
                      "uncontended %s: measured figures" % name, x)
            checks.ok((x.get("target") is None) == (name != "shared"),
                      "uncontended %s: a target only for shared" % name, x.get("target"))
        sh = un.get("shared", {})
        ratio = sh.get("call_locked_over_unlocked")
        if finite(ratio):
            per_round = sorted(lo / un for lo, un in zip(sh["rounds_call_locked_ns"],
                                                          sh["rounds_call_unlocked_ns"]))
            checks.ok(abs(ratio / statistics.median(per_round) - 1) < 1e-6 and
                      abs(sh["call_locked_over_unlocked_round_min"] / per_round[0] - 1) < 1e-6 and
                      abs(sh["call_locked_over_unlocked_round_max"] / per_round[-1] - 1) < 1e-6,
                      "uncontended shared: the median over the rounds of locked/unlocked", sh)
            met = ratio <= 3.0
            checks.ok(sh["target"] == {"call_locked_over_unlocked_max": 3.0, "met": met},
                      "uncontended shared: the target, judged on the median ratio", sh["target"])
            line = re.search(r"^  shared .*?\s(not met|met)$", r.stdout, re.M)
            checks.ok(line and line.group(1) == ("met" if met else "not met") and
                      ("target <= 3.00x: %s\n" % ("met" if met else "not met")) in r.stdout,
                      "bench --threads-only: the shared row's verdict, as the JSON's", r)
        checks.ok(finite(un.get("none", {}).get("call_unlocked_ns")) and
                  un.get("none", {}).get("added_per_call_ns") is None and
                  un.get("none", {}).get("call_locked_over_unlocked") is None,
                  "uncontended none: the unlocked call, nothing added", un.get("none"))
        co = {x["lock"]: x for x in t["contended"]}
        checks.ok([x["lock"] for x in t["contended"]] == LOCKS,
                  "contended: every lock type, shared included", co)
        for name, x in co.items():
            rows = x["threads"]
            checks.ok(x["skipped"] is None, "contended %s: not skipped" % name, x)
            checks.ok(all(row["alloc"]["count"] + row["free"]["count"] + row["skipped_frees"] ==
                          t["ops_per_thread"] and row["failed_allocs"] == 0 for row in rows),
                      "contended %s: every operation of every thread timed" % name, rows)
            checks.ok(len(rows) == 3 and x["heap_check_failures"] == 0 and
                      all(row["free_errors"] == 0 and row["alloc"]["count"] > 0 and
                          finite(row["alloc"]["p99_9_ns"]) and finite(row["free"]["max_ns"])
                          for row in rows),
                      "contended %s: a row per thread, every heap sound" % name, x)
            checks.ok(x["heap"] == ("one per thread" if name == "none" else "shared"),
                      "contended %s: which heap" % name, x["heap"])
            if name != "none":
                checks.ok(x["lock_calls"] >= sum(row["alloc"]["count"] + row["free"]["count"]
                                                 for row in rows) and
                          x["lock_contended"] <= x["lock_calls"],
                          "contended %s: the lock's counts" % name, x)
    for text in ("lock cost, uncontended", "added/bare", "locked/unlocked", "target <=3.00x",
                 "3 threads on one tlsf heap", "alloc p50", "lock shared: "):
        checks.ok(text in r.stdout, "bench --threads-only prints '%s'" % text, r)
    no_objects_left("bench --threads-only")

    # The shared type alone.
    path = os.path.join(tmp, "s.json")
    r = run(rtmem, "bench", "--threads-only", "--quick", "--no-rt", "--locks", "shared",
            "--threads", "2", "--json", path)
    d = load_json(path)
    if checks.ok(r.returncode == 0 and d, "bench --locks shared", r):
        t = d["threads"]
        un, co = t["uncontended"]["locks"], t["contended"]
        checks.ok([x["lock"] for x in un] == ["shared"] and [x["lock"] for x in co] == ["shared"],
                  "bench --locks shared: that lock type only", t)
        x = un[0]
        checks.ok(x["skipped"] is None and finite(x["call_locked_over_unlocked"]) and
                  x["call_locked_over_unlocked"] > 0 and x["call_unlocked_ns"] > 0 and
                  len(x["rounds_call_unlocked_ns"]) == d["params"]["rounds"] and
                  isinstance(x["target"]["met"], bool),
                  "bench --locks shared: its figures and verdict", x)
        rows = co[0]["threads"]
        checks.ok(co[0]["skipped"] is None and co[0]["heap"] == "shared" and len(rows) == 2 and
                  co[0]["heap_check_failures"] == 0 and
                  all(row["alloc"]["count"] + row["free"]["count"] + row["skipped_frees"] ==
                      t["ops_per_thread"] and row["free_errors"] == 0 for row in rows) and
                  co[0]["lock_calls"] >= sum(row["alloc"]["count"] + row["free"]["count"]
                                             for row in rows),
                  "bench --locks shared: both threads on the shared heap, every call", co[0])
    no_objects_left("bench --locks shared")

    path = os.path.join(tmp, "k.json")
    r = run(rtmem, "bench", "--threads-only", "--quick", "--no-rt", "--locks", "robust",
            "--threads-kind", "xnheap", "--threads", "1", "--json", path)
    d = load_json(path)
    if checks.ok(r.returncode == 0 and d, "bench --locks robust --threads-kind xnheap", r):
        t = d["threads"]
        checks.ok(t["kind"] == "xnheap" and
                  [x["lock"] for x in t["uncontended"]["locks"]] == ["robust"] and
                  [x["lock"] for x in t["contended"]] == ["robust"],
                  "bench --locks robust: that lock type only, on xnheap", t)

    for extra in (["--threads", "0"], ["--sweep-only"]):
        path = os.path.join(tmp, "z.json")
        r = run(rtmem, "bench", "--quick", "--no-rt", "--kinds", "tlsf", "--no-free-order",
                *extra, "--json", path)
        d = load_json(path)
        checks.ok(r.returncode == 0 and d and d["threads"] is None and
                  "threads phase" not in r.stdout,
                  "bench %s: no threads phase" % " ".join(extra), r)



# ---- no shm object left behind, whatever ends the run ----------------------------------

def measuring_process(parent, deadline):
    """The child of parent that measures (it leads its own process group)."""
    while time.time() < deadline:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open("/proc/%s/stat" % pid) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == parent:
                        return int(pid)
            except (OSError, ValueError, IndexError):
                continue
        time.sleep(0.01)
    return None


def maps_shared_heap(pid, parent):
    """Does pid map parent's run's shared heap, its name already unlinked?"""
    try:
        with open("/proc/%d/maps" % pid) as f:
            return ("%s/rtmem-bench-%d (deleted)" % (SHM, parent)) in f.read()
    except OSError:
        return False


def dead(pid):
    """Gone, or a zombie (its mappings are released)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def wait_dead(pid, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline and not dead(pid):
        time.sleep(0.01)
    return dead(pid)


# A threads phase that lasts a few seconds, most of it on a shared heap.
LONG = ["bench", "--threads-only", "--no-rt", "--locks", "none,shared", "--rounds", "99",
        "--thread-ops", "200000"]


def start_long():
    """The long run, stopped once its measuring process maps a shared heap
    whose name is already unlinked: (process, measuring pid), or None."""
    p = subprocess.Popen([rtmem, *LONG], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    child = measuring_process(p.pid, deadline)
    while child and time.time() < deadline and not maps_shared_heap(child, p.pid):
        time.sleep(0.005)
    if checks.ok(child and maps_shared_heap(child, p.pid),
                 "a shared heap is mapped with its name unlinked (%s)" % " ".join(LONG)):
        return p, child
    p.kill()
    p.communicate()
    return None


# Ctrl-C: the tool kills its measuring process and dies of the signal.
started = start_long()
if started:
    p, child = started
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    checks.ok(p.returncode == -signal.SIGINT and dead(child),
              "SIGINT mid-phase: the tool and its measuring process die", (p.returncode, err))
    checks.ok(not objects_of(p.pid), "SIGINT mid-phase: no object left", objects_of(p.pid))

# The measuring process killed (as the watchdog does): the run fails, said so.
started = start_long()
if started:
    p, child = started
    os.kill(child, signal.SIGKILL)
    _, err = p.communicate(timeout=60)
    checks.ok(p.returncode == 1 and "the measuring process died of SIGKILL" in err,
              "SIGKILL of the measuring process mid-phase: the run fails", (p.returncode, err))
    checks.ok(not objects_of(p.pid), "SIGKILL of the measuring process: no object left",
              objects_of(p.pid))

# Both processes killed, nothing left to clean up: the unlinked name is gone.
started = start_long()
if started:
    p, child = started
    os.kill(p.pid, signal.SIGKILL)
    os.kill(child, signal.SIGKILL)
    p.communicate(timeout=60)
    checks.ok(wait_dead(child), "SIGKILL of both processes: both die", child)
    checks.ok(not objects_of(p.pid), "SIGKILL of both processes: no object left",
              objects_of(p.pid))


def hold_name(pid):
    """Makes the object a measuring process of run pid would have left had it
    died between making its shared heap and unlinking it."""
    try:
        os.close(os.open("%s/rtmem-bench-%d" % (SHM, pid), os.O_CREAT | os.O_EXCL | os.O_WRONLY,
                         0o600))
        return True
    except OSError as e:
        return checks.ok(False, "the name of run %d is free" % pid, e)


# The name taken: the shared rows are skipped with the reason, the run
# passes, and the parent removes what holds its run's name.
with TempDir() as tmp:
    path = os.path.join(tmp, "x.json")
    p = subprocess.Popen([rtmem, "bench", "--threads-only", "--quick", "--no-rt", "--locks",
                          "none,shared", "--json", path], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    held = hold_name(p.pid)
    out, err = p.communicate(timeout=300)
    d = load_json(path)
    if held and checks.ok(p.returncode == 0 and d, "bench, its shared heap's name taken", err):
        t = d["threads"]
        un = {x["lock"]: x for x in t["uncontended"]["locks"]}
        co = {x["lock"]: x for x in t["contended"]}
        x, y = un.get("shared", {}), co.get("shared", {})
        checks.ok("File exists" in (x.get("skipped") or "") and x["call_locked_ns"] is None and
                  x["call_locked_over_unlocked"] is None and x["target"]["met"] is None,
                  "name taken: uncontended shared skipped, with the reason", x)
        checks.ok("File exists" in (y.get("skipped") or "") and y["threads"] == [],
                  "name taken: contended shared skipped, with the reason", y)
        checks.ok(un["none"]["skipped"] is None and finite(un["none"]["call_unlocked_ns"]) and
                  len(co["none"]["threads"]) == t["threads"],
                  "name taken: the other lock types measured", t)
        checks.ok(out.count("shared: skipped: rtm_shared_create_ex") == 2 and
                  re.search(r"^  shared .* skipped$", out, re.M),
                  "name taken: the text says the shared rows were skipped, and why", out)
    checks.ok(not objects_of(p.pid), "name taken: the parent removes it", objects_of(p.pid))

# The name taken, and Ctrl-C: the signal's cleanup removes it.
p = subprocess.Popen([rtmem, *LONG], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)
if hold_name(p.pid):
    line = ""
    while not line.startswith("threads     :") and p.poll() is None:
        line = p.stdout.readline()
    time.sleep(0.2)
    checks.ok(p.poll() is None and objects_of(p.pid),
              "name taken, mid-phase: the name is still held", objects_of(p.pid))
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=60)
    checks.ok(p.returncode == -signal.SIGINT and not objects_of(p.pid),
              "name taken, SIGINT mid-phase: the signal's cleanup removes it",
              (p.returncode, objects_of(p.pid)))
else:
    p.kill()
    p.communicate()
no_objects_left("every run")

usage = [
    (["--threads", "65"], "--threads: '65' is out of range [0, 64]"),
    (["--locks", "pi,,none"], "--locks: empty name in 'pi,,none'"),
    (["--locks", "spin"], "--locks: unknown lock type 'spin' (none, pi, robust, shared)"),
    (["--threads-kind", "glibc"], "--threads-kind: no heap kind 'glibc'"),
    (["--threads-only", "--sweep-only"], "--threads-only and --sweep-only exclude each other"),
    (["--threads-only", "--threads", "0"], "--threads-only needs threads (--threads is 0)"),
    (["--thread-ops", "0"], "--thread-ops: '0' is out of range [1, "),
]
for args, message in usage:
    r = run(rtmem, "bench", *args)
    checks.ok(r.returncode == 2 and message in r.stderr and
              "Try 'rtmem bench --help'." in r.stderr and r.stdout == "",
              "rtmem bench %s: exit 2 with '%s'" % (" ".join(args), message), r)
checks.done()
