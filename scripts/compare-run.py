#!/usr/bin/env python3
"""Real programs, unmodified, on glibc, glibc-rt and each rtmem kind, through
`rtmem run` (make compare-run; not part of make bench): how long each run
took and its worst allocator calls, and what the interposer itself costs a
call, counted by valgrind.

    python3 scripts/compare-run.py [--build DIR] [--reps N] [--out DIR] [--no-count]

1. Programs: Debian's sqlite3 building, indexing and querying a table, and
   python3 building and serialising dictionaries. Each is run --reps times
   (default 5) directly and under `rtmem run --kind K` for every K, the
   kinds in turn within each repetition, so that a drift of the machine
   reaches them all alike. Per kind: the program's run time (median, and
   the repetitions' min..max; the pool's set-up included: 64 MiB
   prefaulted for the kinds and glibc-rt's reserve) and the worst
   allocation and free of each run (median over the runs, and the largest).
   The output is checked to be the same as the direct run's.
2. Interposer cost: examples/trace/churn.c (ten million calls of free and
   malloc, 16 to 215 bytes) under valgrind's callgrind, whose instruction
   counts are exact and the same every run: the whole program's
   instructions directly and under librtmem-malloc in several modes, the
   difference per call. The interposer's own share is its glibc mode (every
   call passed to glibc, counted; timed or not): the dispatch, the count,
   the two reads of the CPU's counter.

Writes DIR/compare-run.txt and DIR/compare-run.json (default results/),
each as a new file renamed into place at the end; its scratch files go to a
directory of its own, removed on exit and on Ctrl-C.
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

KINDS = ["glibc", "glibc-rt", "tlsf", "heapmem", "xnheap"]
ALLOC_OPS = ("malloc", "calloc", "realloc", "aligned")
CHURN_CALLS = 10_000_000  # examples/trace/churn.c: 5 rounds of 2 * 1,000,000 calls

SQL = ("CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL);\n"
       "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000)\n"
       "INSERT INTO t SELECT x, printf('name-%05d-%s', x, substr('abcdefghij', 1 + x % 10)),"
       " x * 0.5 FROM c;\n"
       "CREATE INDEX t_name ON t(name);\n"
       "SELECT count(*), sum(v) FROM t;\n"
       "SELECT substr(name, 12), count(*), avg(v) FROM t GROUP BY 1 ORDER BY 1;\n")
PYTHON = ("import json\n"
          "out = [json.dumps({'k%d' % i: list(range(i % 50)) for i in range(200)}) "
          "for _ in range(300)]\n"
          "print(len(out), sum(map(len, out)))\n")


def programs():
    """(name, command, its standard input, the same with no work: its
    start-up, the pool's set-up included)."""
    found = []
    if shutil.which("sqlite3"):
        sq = [shutil.which("sqlite3"), ":memory:"]
        found.append(("sqlite3", sq, SQL, sq, "SELECT 1;\n"))
    py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else None
    if py:
        found.append(("python3", [py, "-c", PYTHON], None, [py, "-c", "pass"], None))
    return found


def run(cmd, stdin, env=None):
    t0 = time.monotonic()
    r = subprocess.run(cmd, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, env=env, timeout=600)
    return r, time.monotonic() - t0


def summarise(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def measure_programs(rtmem, scratch, reps):
    out = []
    for name, cmd, stdin, empty, empty_stdin in programs():
        direct_seconds, per_kind = [], {k: {"seconds": [], "empty_seconds": [],
                                             "worst_alloc_ns": [], "worst_free_ns": [],
                                             "calls": None} for k in KINDS}
        expected = None
        for rep in range(reps):
            r, secs = run(cmd, stdin)
            if r.returncode != 0:
                sys.exit("compare-run: %s failed directly: %s" % (name, r.stderr[-300:]))
            expected = r.stdout
            direct_seconds.append(secs)
            for k in KINDS:
                js = os.path.join(scratch, "run.json")
                r, _ = run([rtmem, "run", "--kind", k, "--json", js, "--"] + cmd, stdin)
                if r.returncode != 0 or r.stdout != expected:
                    sys.exit("compare-run: %s on %s: status %d, output %s\n%s" % (
                        name, k, r.returncode, "the same" if r.stdout == expected else "differs",
                        r.stderr[-600:]))
                with open(js) as f:
                    d = json.load(f)
                h, k_out = d["heap"], per_kind[k]
                k_out["seconds"].append(d["program"]["seconds"])
                w = h["worst_ns"]
                k_out["worst_alloc_ns"].append(max(w[op] for op in ALLOC_OPS if h["calls"][op]))
                k_out["worst_free_ns"].append(w["free"])
                k_out["calls"] = h["calls"]
                r, _ = run([rtmem, "run", "--kind", k, "--json", js, "--"] + empty, empty_stdin)
                with open(js) as f:
                    k_out["empty_seconds"].append(json.load(f)["program"]["seconds"])
            print("compare-run: %s, repetition %d of %d done" % (name, rep + 1, reps),
                  file=sys.stderr)
        out.append({
            "program": name,
            "direct_seconds": summarise(direct_seconds),
            "kinds": [{"kind": k, "calls": per_kind[k]["calls"],
                       "seconds": summarise(per_kind[k]["seconds"]),
                       "empty_seconds": summarise(per_kind[k]["empty_seconds"]),
                       "worst_alloc_ns": summarise(per_kind[k]["worst_alloc_ns"]),
                       "worst_free_ns": summarise(per_kind[k]["worst_free_ns"])}
                      for k in KINDS],
        })
    return out


def callgrind_ir(cmd, env, scratch):
    outf = os.path.join(scratch, "callgrind.out")
    full = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + outf] + cmd
    r = subprocess.run(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                       timeout=1800)
    if r.returncode != 0:
        sys.exit("compare-run: valgrind failed: %s" % r.stderr[-600:])
    m = re.search(r"Collected : (\d+)", r.stderr)
    if not m:
        sys.exit("compare-run: valgrind gave no count")
    os.unlink(outf)
    return int(m.group(1))


def measure_interposer(build, scratch):
    churn = os.path.join(build, "examples", "trace_churn")
    lib = os.path.join(build, "preload", "librtmem-malloc.so")
    if not shutil.which("valgrind"):
        return {"why": "valgrind is not installed"}
    base = dict(os.environ, RTMEM_MALLOC_POOL="1M")
    modes = [("glibc, directly", None),
             ("glibc through the interposer, untimed", {"RTMEM_MALLOC_KIND": "glibc",
                                                        "RTMEM_MALLOC_TIME": "0"}),
             ("glibc through the interposer, timed", {"RTMEM_MALLOC_KIND": "glibc"}),
             ("tlsf, untimed", {"RTMEM_MALLOC_KIND": "tlsf", "RTMEM_MALLOC_TIME": "0"}),
             ("tlsf, timed", {"RTMEM_MALLOC_KIND": "tlsf"})]
    rows = []
    direct = None
    for label, extra in modes:
        env = dict(base)
        if extra:
            env.update(extra, LD_PRELOAD=lib)
        ir = callgrind_ir([churn], env, scratch)
        if direct is None:
            direct = ir
        rows.append({"mode": label, "instructions": ir,
                     "per_call": ir / CHURN_CALLS,
                     "added_per_call": (ir - direct) / CHURN_CALLS})
        print("compare-run: counted %s" % label, file=sys.stderr)
    return {"program": "examples/trace/churn.c", "calls": CHURN_CALLS, "modes": rows, "why": None}


def text_of(doc):
    lines = ["rtmem compare-run: real programs on glibc, glibc-rt and each rtmem kind "
             "(rtmem run), %d repetitions" % doc["reps"],
             "machine: %s" % doc["machine"],
             "run s: the program's run time, median (min..max); empty s: the same program "
             "with no work, its start-up (the pool's or the reserve's set-up included); "
             "worst: each run's worst call, the median over the runs (and the largest)", ""]
    for p in doc["programs"]:
        d = p["direct_seconds"]
        lines.append("%s: directly %.3f s (%.3f..%.3f); per kind, through rtmem run:" % (
            p["program"], d["median"], d["min"], d["max"]))
        lines.append("  %-9s %8s %22s %8s %14s %12s %14s %12s" % (
            "kind", "calls", "run s (min..max)", "empty s", "worst alloc", "(largest)",
            "worst free", "(largest)"))
        for k in p["kinds"]:
            c = sum(k["calls"].values())
            s, a, f = k["seconds"], k["worst_alloc_ns"], k["worst_free_ns"]
            lines.append("  %-9s %8d %6.3f (%.3f..%.3f) %8.3f %11.0f ns %9.0f ns %11.0f ns "
                         "%9.0f ns" % (k["kind"], c, s["median"], s["min"], s["max"],
                                       k["empty_seconds"]["median"], a["median"], a["max"],
                                       f["median"], f["max"]))
        lines.append("")
    i = doc["interposer"]
    if i.get("why"):
        lines.append("interposer cost: not counted: %s" % i["why"])
    else:
        lines.append("interposer cost: %s, %d calls, valgrind's callgrind (instructions, exact):"
                     % (i["program"], i["calls"]))
        for m in i["modes"]:
            lines.append("  %-40s %6.1f instructions a call, %+6.1f over glibc directly" % (
                m["mode"], m["per_call"], m["added_per_call"]))
    return "\n".join(lines) + "\n"


def write_new(path, text):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "x") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default="results")
    ap.add_argument("--no-count", action="store_true", help="no valgrind counts")
    a = ap.parse_args()
    if a.reps < 1 or a.reps > 100:
        ap.error("--reps: 1 to 100")
    rtmem = os.path.join(a.build, "tools", "rtmem")
    if not os.access(rtmem, os.X_OK):
        ap.error("no rtmem at %s: make build first" % rtmem)
    os.makedirs(a.out, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="rtmem-compare-run.")
    # Ctrl-C and SIGTERM end the run through the finally below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        machine = subprocess.run([rtmem, "--version"], stdout=subprocess.PIPE,
                                 text=True).stdout.strip()
        doc = {"schema": "rtmem-compare-run/1", "reps": a.reps,
               "machine": "%s, %d CPUs, load average %.2f at the start" % (
                   os.uname().machine, os.cpu_count(), os.getloadavg()[0]),
               "rtmem": machine,
               "programs": measure_programs(rtmem, scratch, a.reps),
               "interposer": ({"why": "--no-count"} if a.no_count
                              else measure_interposer(a.build, scratch))}
        text = text_of(doc)
        write_new(os.path.join(a.out, "compare-run.json"), json.dumps(doc, indent=1) + "\n")
        write_new(os.path.join(a.out, "compare-run.txt"), text)
        sys.stdout.write(text)
    except KeyboardInterrupt:
        sys.exit(130)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
