"""rtmem bench's threads phase (CTest lock.bench): --threads-only runs it
alone, with the lock cost uncontended for each lock type asked and a row
per thread and lock type, in the text and the JSON; --threads 0 and
--sweep-only leave it out; bad usage of its options exits 2 with the
message and the --help hint.

usage: test_bench_threads.py RTMEM_BINARY
"""
import math
import os
import sys

from rtmemtest import Checks, TempDir, envelope_ok, load_json, run

rtmem = sys.argv[1]
checks = Checks("lock.bench")


def finite(v):
    return isinstance(v, (int, float)) and math.isfinite(v)


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
        checks.ok(sorted(un) == ["none", "pi", "robust"], "uncontended: every lock type", un)
        for name in ("pi", "robust"):
            x = un.get(name, {})
            checks.ok(all(finite(x.get(k)) for k in
                          ("bare_lock_unlock_ns", "call_unlocked_ns", "call_locked_ns",
                           "added_per_call_ns", "added_over_bare")) and
                      x["bare_lock_unlock_ns"] > 0 and x["call_locked_ns"] > 0 and
                      len(x["rounds_call_locked_ns"]) == d["params"]["rounds"],
                      "uncontended %s: measured figures" % name, x)
        checks.ok(finite(un.get("none", {}).get("call_unlocked_ns")) and
                  un.get("none", {}).get("added_per_call_ns") is None,
                  "uncontended none: the unlocked call, nothing added", un.get("none"))
        co = {x["lock"]: x for x in t["contended"]}
        checks.ok(sorted(co) == ["none", "pi", "robust"], "contended: every lock type", co)
        for name, x in co.items():
            rows = x["threads"]
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
    for text in ("lock cost, uncontended", "added/bare", "3 threads on one tlsf heap",
                 "alloc p50"):
        checks.ok(text in r.stdout, "bench --threads-only prints '%s'" % text, r)

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

usage = [
    (["--threads", "65"], "--threads: '65' is out of range [0, 64]"),
    (["--locks", "pi,,none"], "--locks: empty name in 'pi,,none'"),
    (["--locks", "spin"], "--locks: unknown lock type 'spin' (none, pi, robust)"),
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
