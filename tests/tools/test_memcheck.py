"""rtmem memcheck: a quick run passes every functional check and writes rows
for every rtmem kind, glibc, every peer that is installed and the example
plugin, in every phase; a plugin without stats runs with the checks it
cannot have turned off; smokey's layout is exact; glibc is measured warm
(page faults, not times); bad usage exits 2 with the message.

usage: test_memcheck.py RTMEM_BINARY TLSF_PLUGIN BUMP_PLUGIN NO_SYMBOL_SO BAD_PLUGIN...
TLSF_PLUGIN is examples/plugin/tlsf_plugin.c built; BUMP_PLUGIN a plugin
without stats or check; NO_SYMBOL_SO a shared object without the plugin
symbol; each BAD_PLUGIN a plugin memcheck must refuse.
"""
import os
import re
import sys

from rtmemtest import (BITS, EMULATED, PEERS, Checks, TempDir, envelope_ok, have_lib, load_json, run)

rtmem, tlsf_plugin, bump_plugin, no_symbol = sys.argv[1:5]
bad_plugins = sys.argv[5:]
sanitized = os.environ.get("RTMEM_SANITIZED") == "1"
checks = Checks("tools.memcheck")
kinds = run(rtmem, "kinds").stdout.split()


def rows(a, phase, cols):
    return [dict(zip(cols, r)) for r in a[phase]["rows"]]


def check_full_run(d, text):
    cols = d["row_columns"]
    skipped = {s["name"]: s["reason"] for s in d["skipped"]}
    for p in skipped:
        print("test_memcheck: peer %s skipped: %s" % (p, skipped[p]))
    loaded = [p for p in PEERS if p not in skipped]
    names = [a["name"] for a in d["allocators"]]
    checks.ok(names == kinds + ["glibc"] + loaded + ["tlsf-plugin"],
              "memcheck: every kind, glibc, the peers that loaded, the plugin, in order", names)
    by = {a["name"]: a for a in d["allocators"]}
    checks.ok(all(by[p]["origin"] == "peer" for p in loaded) and
              by["tlsf-plugin"]["origin"] == "plugin", "memcheck: origins")
    # The plugin is TLSF: through the ABI it must fill exactly as the kind does.
    for ph in ("pow2", "random"):
        nr = [[r["nrblocks"] for r in rows(by[n], ph, cols)] for n in ("tlsf", "tlsf-plugin")]
        checks.ok(nr[0] == nr[1], "memcheck %s: the TLSF plugin fills as tlsf" % ph)
    heaps = [8192 << i for i in range(64) if (8192 << i) < d["params"]["seq_heap_size"]]
    rounds = d["params"]["random_alloc_rounds"]
    pow2 = sum(4 * len([b for b in (16 << k for k in range(40)) if b < h // 2]) for h in heaps)
    for a in d["allocators"]:
        n = a["name"]
        checks.ok(a["passed"] and a["failure"] is None, "memcheck: %s passed" % n, a["failure"])
        checks.ok(len(a["pow2"]["rows"]) == a["pow2"]["tests"] == pow2,
                  "memcheck: %s has every pow2 row" % n, len(a["pow2"]["rows"]))
        checks.ok(len(a["random"]["rows"]) == 4 * rounds * len(heaps),
                  "memcheck: %s has every random row" % n)
        bad = [r for r in rows(a, "pow2", cols) + rows(a, "random", cols)
               if r["heap_bytes"] not in heaps or r["nrblocks"] < 1
               or r["nrblocks"] * r["block_bytes"] > r["heap_bytes"]]
        checks.ok(not bad, "memcheck: %s rows within their heaps" % n, bad[:3])
        checks.ok(a["pattern"]["tests"] == d["params"]["pattern_check_rounds"],
                  "memcheck: %s pattern tests" % n)
        checks.ok(a["churn"]["ops"] == d["params"]["churn_ops"] and a["churn"]["frag_samples"],
                  "memcheck: %s churn" % n)
        fail_a = [r["fail_alloc_ns"] for r in rows(a, "pow2", cols)]
        if a["sort"] == "heap":
            checks.ok(all(h["exact"] for h in a["heap_sizes"]), "memcheck: %s heaps exact" % n)
            checks.ok(all(v is not None for v in fail_a) and
                      all(r["true_overhead_pct"] is not None for r in rows(a, "pow2", cols)),
                      "memcheck: %s has FAIL-A and TOVRH%%" % n)
        else:
            checks.ok(all(v is None for v in fail_a), "memcheck: %s has no FAIL-A" % n)
    # heapmem and xnheap promise zero overhead for power-of-two sizes.
    for n in ("heapmem", "xnheap"):
        if n in by:
            checks.ok(by[n]["pow2"]["overall"]["avg_overhead_pct"] == 0,
                      "memcheck: %s has no overhead for powers of two" % n)
    checks.ok("average fragmentation" in text and "\n== summary" in text,
              "memcheck: the overall lines and the summary")
    checks.ok(re.search(r"^  TOVRH%: true overhead", text, re.M) is not None,
              "memcheck: the legend defines TOVRH%")
    # A peer that is installed must load (and run); one that is not is skipped.
    for p, so in PEERS.items():
        if not have_lib(so):
            checks.ok(re.search(r"^  %s +SKIPPED: not installed" % p, text, re.M) is not None,
                      "memcheck: %s not installed, and reported as skipped" % p)
        else:
            checks.ok(re.search(r"^  %s +process allocator: %s" % (p, p), text, re.M) is not None,
                      "memcheck: %s is installed and ran" % p)


with TempDir() as tmp:
    path = os.path.join(tmp, "m.json")
    args = ["--quick", "--no-rt", "--plugin", tlsf_plugin, "--json", path]
    r = run(rtmem, "memcheck", *args)
    checks.ok(r.returncode == 0, "memcheck --quick", r)
    d = load_json(path)
    envelope_ok(checks, d, "memcheck", "rtmem-memcheck/2", args)
    if d:
        checks.ok(d["passed"] is True and d["seed"] == 20240601, "memcheck: passed, its seed")
        check_full_run(d, r.stdout)

    # jemalloc alone: the run executes itself again once for its static TLS.
    if have_lib(PEERS["jemalloc"]):
        path = os.path.join(tmp, "j.json")
        r = run(rtmem, "memcheck", "--quick", "--no-rt", "--kinds", "jemalloc", "--phases", "pow2",
                "--json", path)
        d = load_json(path)
        checks.ok(r.returncode == 0 and d and d["passed"] and
                  [a["name"] for a in d["allocators"]] == ["jemalloc"] and
                  d["allocators"][0]["pow2"]["rows"], "memcheck --kinds jemalloc", r)

    # A plugin without stats or check runs; the checks it cannot have are
    # off, and the report says so.
    path = os.path.join(tmp, "p.json")
    r = run(rtmem, "memcheck", "--quick", "--no-rt", "--plugin", bump_plugin, "--kinds", "bump",
            "--json", path)
    d = load_json(path)
    if checks.ok(r.returncode == 0 and d, "memcheck --plugin (no stats)", r):
        a = d["allocators"][0]
        cols = d["row_columns"]
        checks.ok(d["passed"] and a["name"] == "bump" and a["origin"] == "plugin" and
                  not a["applies"]["stats"] and not a["applies"]["integrity_check"] and
                  all(h["sized_by_memory"] for h in a["heap_sizes"]) and
                  a["churn"]["frag_applies"] is False and
                  all(x["true_overhead_pct"] is None for x in rows(a, "pow2", cols)),
                  "memcheck: a plugin without stats has those checks off", a["applies"])
        checks.ok("no stats: H is the memory given to create" in r.stdout,
                  "memcheck: the report says what a plugin without stats leaves out")

    # --kinds sets the order; an unloadable peer (see test_bench.py) is
    # skipped, said on stderr and recorded.
    path = os.path.join(tmp, "o.json")
    r = run(rtmem, "memcheck", "--quick", "--no-rt", "--kinds", "glibc,jemalloc,tlsf", "--phases",
            "pow2", "--seq-heap-size", "16K", "--json", path,
            env={"RTMEM_STATIC_TLS_REEXEC": "x"})
    d = load_json(path)
    checks.ok(r.returncode == 0 and d and [a["name"] for a in d["allocators"]] == ["glibc", "tlsf"]
              and [x["name"] for x in d["skipped"]] == ["jemalloc"] and
              "rtmem memcheck: jemalloc skipped: " in r.stderr,
              "memcheck: --kinds order, an unloadable peer skipped and said", r)

    # --no-json-rows: the overall lines without the rows.
    path = os.path.join(tmp, "r.json")
    r = run(rtmem, "memcheck", "--quick", "--no-rt", "--kinds", "tlsf", "--phases", "pow2",
            "--no-json-rows", "--json", path)
    d = load_json(path)
    checks.ok(r.returncode == 0 and d and d["allocators"][0]["pow2"]["rows"] is None and
              d["allocators"][0]["pow2"]["overall"]["tests"] > 0 and
              d["params"]["json_rows"] is False, "memcheck --no-json-rows", r)

    # glibc measured warm: its pow2 and random phases take (nearly) no page
    # faults; a process that left glibc at its default thresholds took a
    # fault per page its heap grew by. Counts, not times. (Not with
    # sanitizers: their allocator stands in for glibc's.)
    if not sanitized:
        path = os.path.join(tmp, "w.json")
        r = run(rtmem, "memcheck", "--quick", "--no-rt", "--kinds", "glibc", "--phases",
                "pow2,random", "--seq-heap-size", "1M", "--json", path, "--no-json-rows")
        d = load_json(path)
        if checks.ok(r.returncode == 0 and d and d["passed"], "memcheck --kinds glibc", r):
            g = d["allocators"][0]
            for ph in ("pow2", "random"):
                faults = g[ph]["minor_faults"]
                # Code run for the first time may fault without mlockall
                # (and under qemu-user the faults are the emulator's; 32-bit
                # glibc never raises its mmap threshold past 512 KiB, so the
                # warm-up cannot make it keep the memory of the large
                # blocks, and its timed fills grow the heap: faults, which
                # memcheck reports).
                checks.ok(g[ph]["tests"] > 0 and faults is not None and
                          (faults < 32 or EMULATED or BITS == 32),
                          "memcheck: glibc's %s phase takes no page faults" % ph, faults)

# --format smokey: smokey's headers, rows and overall lines, exactly.
r = run(rtmem, "memcheck", "--quick", "--no-rt", "--kinds", "tlsf", "--phases", "pow2", "--format",
        "smokey", "--compat")
checks.ok(r.returncode == 0, "memcheck --format smokey", r)
for line in ["== memcheck started for tlsf at ", "     seq_heap_size=256k",
             "[SEQUENTIAL ALLOC->FREE, ^2 BLOCK SIZES] ON 'tlsf'", "sorted by: max alloc time",
             "sorted by: max fragmentation",
             "  HEAPSZ  BLOCKSZ   NRBLKS  AVG-A  AVG-F  MAX-A  MAX-F   OVRH%  FRAG%  FLAGS",
             "  ... (196 results following) ...", "overall:", "  worst alloc time: ",
             "  average fragmentation: ", "== memcheck finished for tlsf at "]:
    checks.ok(line in r.stdout, "smokey layout: '%s'" % line)
checks.ok(re.search(r"^ +[0-9]+k +[0-9]+[ k] +[0-9]+ +[0-9]+\.[0-9] ", r.stdout, re.M) is not None,
          "smokey layout: rows in us with one decimal")

# Plugins memcheck must refuse: exit status 2 and the reason.
for plugin in bad_plugins + [no_symbol, "/nonexistent/nosuch.so"]:
    r = run(rtmem, "memcheck", "--quick", "--no-rt", "--plugin", plugin)
    checks.ok(r.returncode == 2 and ("--plugin %s: " % plugin) in r.stderr,
              "memcheck --plugin %s is refused" % plugin, r)

# Bad usage: exit status 2, the message, and how to get help; nothing run.
no_cpu = max(os.sched_getaffinity(0)) + 1
usage = [
    (["--seq-heap-size", "4K"], "--seq-heap-size: '4K' is out of range"),
    (["--random-alloc-rounds", "x"], "--random-alloc-rounds needs a whole number"),
    (["--random-alloc-rounds", "0"], "--random-alloc-rounds: '0' is out of range [1, "),
    (["--pattern-check-rounds", "0"], "--pattern-check-rounds: '0' is out of range [1, "),
    (["--kinds", "nosuch"], "unknown allocator 'nosuch'"),
    (["--kinds", "tlsf,"], "--kinds: empty name in 'tlsf,'"),
    (["--kinds", "tlsf-plugin"], "unknown allocator 'tlsf-plugin'"),
    (["--format", "xml"], "--format: 'xml' is not one of ns, smokey"),
    (["--max-results", "-2"], "--max-results needs -1 (every row) or a whole number"),
    (["--phases", "bogus"], "--phases: unknown phase 'bogus'"),
    (["--phases", "churn", "--no-churn"], "no phase left to run"),
    (["--churn-fill", "0"], "--churn-fill: '0' is out of range"),
    (["--churn-max-size", "1M"], "--churn-max-size (1048576) is above the churn fill"),
    (["--seed", "-1"], "--seed needs a whole number"),
    (["--cpu", str(no_cpu)], "--cpu %d: no such CPU for this process" % no_cpu),
    (["--plugin", "a", "--plugin", "b", "--plugin", "c", "--plugin", "d", "--plugin", "e"],
     "--plugin: at most 4"),
    (["--plugin"], "option '--plugin' needs a value"),
    (["--bogus"], "unknown option '--bogus'"),
    (["stray"], "unexpected argument 'stray'"),
]
for args, message in usage:
    r = run(rtmem, "memcheck", *args)
    checks.ok(r.returncode == 2 and message in r.stderr and
              "Try 'rtmem memcheck --help'." in r.stderr and r.stdout == "",
              "rtmem memcheck %s: exit 2 with '%s'" % (" ".join(args), message), r)

r = run(rtmem, "memcheck", "--help")
checks.ok(r.returncode == 0 and r.stdout.startswith("usage: rtmem memcheck") and
          "  --seq-heap-size B " in r.stdout and "exit status" in r.stdout, "memcheck --help", r)
checks.ok(all(len(line) <= 80 for line in r.stdout.splitlines()),
          "memcheck --help: lines within 80 columns",
          [line for line in r.stdout.splitlines() if len(line) > 80])

# The command itself.
r = run(rtmem, "kinds")
checks.ok(r.returncode == 0 and "tlsf" in r.stdout.split(), "rtmem kinds lists tlsf", r)
r = run(rtmem, "nosuchcommand")
checks.ok(r.returncode == 2 and "unknown command 'nosuchcommand'" in r.stderr, "unknown command", r)
r = run(rtmem, "--help")
checks.ok(r.returncode == 0 and "  bench " in r.stdout and "  memcheck " in r.stdout,
          "rtmem --help lists the tools", r)
checks.done()
