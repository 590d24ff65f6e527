"""rtmem bench: a quick run writes the envelope and a row per allocator in
every phase; --no-free-order skips that phase; the peers named run or are
skipped with the reason; bad usage exits 2 with the message and the --help
hint, never a crash.

usage: test_bench.py RTMEM_BINARY
"""
import os
import sys

from rtmemtest import BITS, Checks, TempDir, envelope_ok, load_json, run

rtmem = sys.argv[1]
checks = Checks("tools.bench")

with TempDir() as tmp:
    path = os.path.join(tmp, "b.json")
    args = ["--quick", "--no-rt", "--json", path]
    r = run(rtmem, "bench", *args)
    checks.ok(r.returncode == 0, "bench --quick", r)
    d = load_json(path)
    envelope_ok(checks, d, "bench", "rtmem-bench/2", args)
    if d:
        checks.ok(d["passed"] is True and d["seed"] == d["params"]["seed"],
                  "bench: passed, and the seed is the run's", d.get("seed"))
        checks.ok(d["real_time"] is not None and "policy" in d["real_time"],
                  "bench: the real-time setup on record", d.get("real_time"))
        names = [a["name"] for a in d["allocators"]]
        kinds = run(rtmem, "kinds").stdout.split()
        want = ["floor"] + [n for k in kinds for n in (k, k + "-none")] + ["tlsf(typed)", "glibc"]
        checks.ok(names == want, "bench: by default the floor, each kind and its -none row, "
                  "tlsf(typed), glibc, and no peer", names)
        fo = {a["name"]: a for a in d["free_order"]["allocators"]}
        checks.ok(set(fo) == set(names), "bench: a free-order row per allocator", sorted(fo))
        for n in set(names) - {"floor"}:
            for k in ("free_in_order", "free_shuffled"):
                checks.ok(fo[n][k]["count_per_pass"] == d["free_order"]["fill_blocks"],
                          "bench: %s %s frees every block of a fill" % (n, k))
    checks.ok("vs glibc" in r.stdout, "bench: the ratio table", r)
    checks.ok("shuffled/in-order" in r.stdout, "bench: the free-order table", r)
    checks.ok("results written to " + path in r.stdout, "bench: says where the results went", r)

    path = os.path.join(tmp, "n.json")
    r = run(rtmem, "bench", "--quick", "--no-rt", "--no-sweep", "--no-free-order", "--kinds",
            "tlsf", "--json", path)
    d = load_json(path)
    checks.ok(r.returncode == 0 and d and d["free_order"] is None and d["sweep"] is None,
              "bench --no-free-order --no-sweep skips those phases", r)
    checks.ok(d and [a["name"] for a in d["allocators"]] == ["floor", "tlsf"],
              "bench --kinds tlsf: the floor and tlsf", d and d["allocators"])

    # Peers: each one named runs, or is skipped with the reason.
    path = os.path.join(tmp, "p.json")
    r = run(rtmem, "bench", "--quick", "--no-rt", "--no-sweep", "--no-free-order", "--kinds",
            "glibc,jemalloc,mimalloc,tcmalloc", "--json", path)
    d = load_json(path)
    if checks.ok(r.returncode == 0 and d, "bench --kinds with the peers", r):
        ran = {a["name"]: a["api"] for a in d["allocators"]}
        skipped = {x["name"]: x["reason"] for x in d["skipped"]}
        for p in ("jemalloc", "mimalloc", "tcmalloc"):
            checks.ok((ran.get(p) == "peer") != (p in skipped and skipped[p] != ""),
                      "bench: peer %s ran or was skipped with the reason" % p, d["skipped"])
            if p in skipped:
                checks.ok("rtmem bench: %s skipped: " % p in r.stderr,
                          "bench: a named peer skipped is said on stderr", r)

    # A peer that cannot load is skipped, said and recorded, and the run goes
    # on: jemalloc, with the marker of a process already executed again for
    # static TLS (or not installed at all), cannot load.
    path = os.path.join(tmp, "s.json")
    r = run(rtmem, "bench", "--quick", "--no-rt", "--no-sweep", "--no-free-order", "--kinds",
            "jemalloc,tlsf", "--json", path, env={"RTMEM_STATIC_TLS_REEXEC": "x"})
    d = load_json(path)
    checks.ok(r.returncode == 0 and d and [a["name"] for a in d["allocators"]] == ["floor", "tlsf"]
              and [x["name"] for x in d["skipped"]] == ["jemalloc"] and
              "rtmem bench: jemalloc skipped: " in r.stderr and "note: jemalloc skipped" in r.stdout,
              "bench: an unloadable peer is skipped, said and recorded", r)

    # Rows come in the order of --kinds, as in every tool; without --kinds:
    # every kind and its -none row, tlsf(typed), glibc, no peer.
    path = os.path.join(tmp, "o.json")
    r = run(rtmem, "bench", "--quick", "--no-rt", "--no-sweep", "--no-free-order", "--kinds",
            "glibc,tlsf-typed,tlsf", "--json", path)
    d = load_json(path)
    checks.ok(d and [a["name"] for a in d["allocators"]] == ["floor", "glibc", "tlsf(typed)", "tlsf"],
              "bench: --kinds sets the order", d and d["allocators"])

# Bad usage: exit status 2, the message, and how to get help; nothing run.
no_cpu = max(os.sched_getaffinity(0)) + 1
usage = [
    (["--ops", "0"], "--ops: '0' is out of range [1, "),
    (["--ops", "-5"], "--ops needs a whole number in [1, "),
    (["--min-size", "100", "--max-size", "10"], "--min-size (100) is larger than --max-size (10)"),
    (["--kinds", "nosuch"], "unknown allocator 'nosuch'"),
    (["--kinds", "tlsf,"], "--kinds: empty name in 'tlsf,'"),
    (["--heap-size", "12Q"], "--heap-size: '12Q' is not a byte count"),
    (["--heap-size", "2T"], "--heap-size: '2T' is out of range"),
    # (a size in range, which no allocator is made for: 1T is beyond 32-bit's)
    (["--heap-size", "1T" if BITS == 64 else "1G", "--kinds", "nosuch"],
     "unknown allocator 'nosuch'"),
    (["--fill", "0"], "--fill: '0' is out of range"),
    (["--no-sweep", "--sweep-only"], "--no-sweep and --sweep-only exclude each other"),
    (["--cpu", str(no_cpu)], "--cpu %d: no such CPU for this process (allowed: " % no_cpu),
    (["--plugin"], "option '--plugin' needs a value"),
    (["--bogus"], "unknown option '--bogus'"),
    (["stray"], "unexpected argument 'stray'"),
]
for args, message in usage:
    r = run(rtmem, "bench", *args)
    checks.ok(r.returncode == 2 and message in r.stderr and
              "Try 'rtmem bench --help'." in r.stderr and r.stdout == "",
              "rtmem bench %s: exit 2 with '%s'" % (" ".join(args), message), r)

r = run(rtmem, "bench", "--help")
checks.ok(r.returncode == 0 and r.stdout.startswith("usage: rtmem bench") and
          "  --ops N " in r.stdout and "exit status" in r.stdout, "bench --help", r)
checks.ok(all(len(line) <= 80 for line in r.stdout.splitlines()),
          "bench --help: lines within 80 columns",
          [line for line in r.stdout.splitlines() if len(line) > 80])
checks.done()
