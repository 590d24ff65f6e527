#!/bin/sh
# The rtmem command: a quick bench and a quick memcheck write valid JSON with
# rows for every allocator (peers when installed, plugins); bad input gives
# exit status 2 and a message, never a crash.
#   tool_smoke.sh RTMEM_BINARY TLSF_PLUGIN BUMP_PLUGIN NO_SYMBOL_SO BAD_PLUGIN...
# TLSF_PLUGIN is examples/plugin/tlsf_plugin.c built; BUMP_PLUGIN a plugin
# without stats or check; NO_SYMBOL_SO a shared object without the plugin
# symbol; each BAD_PLUGIN a plugin memcheck must refuse.
set -u
rtmem=$1
tlsf_plugin=$2
bump_plugin=$3
no_symbol=$4
shift 4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
have_lib() { { ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null; } | grep -q "$1"; }
bad() { fail=$((fail + 1)); echo "FAILED: $*"; }

if "$rtmem" bench --quick --no-rt --json "$tmp/b.json" >"$tmp/out.txt" 2>&1; then ok; else bad "bench --quick"; cat "$tmp/out.txt"; fi
if python3 - "$tmp/b.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
names = {a["name"] for a in d["allocators"]}
assert {"tlsf", "glibc"} <= names, names
fo = {a["name"]: a for a in d["free_order"]["allocators"]}
assert set(fo) == names, fo.keys()
for n in names - {"floor"}:
    for k in ("free_in_order", "free_shuffled"):
        assert fo[n][k]["count_per_pass"] == d["free_order"]["fill_blocks"], (n, k)
PY
then ok; else bad "JSON has tlsf and glibc rows, and a free-order row per allocator"; fi
grep -q "vs glibc" "$tmp/out.txt" && ok || bad "ratio table printed"
grep -q "shuffled/in-order" "$tmp/out.txt" && ok || bad "free-order table printed"
if "$rtmem" bench --quick --no-rt --no-sweep --no-free-order --kinds tlsf --json "$tmp/n.json" \
       >/dev/null 2>&1 &&
   python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["free_order"] is None' \
       "$tmp/n.json"; then ok; else bad "--no-free-order skips the phase"; fi
for args in "bench --ops 0" "bench --min-size 100 --max-size 10" "bench --kinds nosuch" \
            "bench --heap-size 12Q" "bench --fill 0" "bench --bogus" "nosuchcommand"; do
    # shellcheck disable=SC2086
    "$rtmem" $args >/dev/null 2>"$tmp/err.txt"
    rc=$?
    if [ "$rc" -eq 2 ] && [ -s "$tmp/err.txt" ]; then ok; else bad "'rtmem $args' gave $rc"; fi
done
"$rtmem" kinds | grep -qx tlsf && ok || bad "rtmem kinds lists tlsf"

# memcheck: a quick run passes every functional check and writes rows for
# every rtmem kind, glibc, every peer that is installed and the example
# plugin, in every phase. Peers are optional: one that is not installed is
# skipped, and the run says so.
"$rtmem" kinds >"$tmp/kinds.txt"
if "$rtmem" memcheck --quick --no-rt --plugin "$tlsf_plugin" --json "$tmp/m.json" \
       >"$tmp/m.txt" 2>&1; then ok; else bad "memcheck --quick"; cat "$tmp/m.txt"; fi
if python3 - "$tmp/m.json" "$tmp/kinds.txt" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
kinds = open(sys.argv[2]).read().split()
assert d["schema"] == "rtmem-memcheck/2", d["schema"]
# The bench kit's envelope first, then memcheck's own members.
assert list(d)[:10] == ["schema", "tool", "version", "command_line", "machine", "timer",
                        "real_time", "seed", "seconds", "passed"], list(d)
assert d["tool"] == "memcheck" and d["command_line"][:2] == ["rtmem", "memcheck"]
assert d["seed"] == 20240601 and d["real_time"] is not None
assert d["passed"] is True
names = [a["name"] for a in d["allocators"]]
peers = ["jemalloc", "mimalloc", "tcmalloc"]
skipped = {s["name"]: s["reason"] for s in d["skipped"]}
for p in peers:
    if p in skipped:
        print("tool_smoke: peer %s skipped: %s" % (p, skipped[p]))
loaded = [p for p in peers if p not in skipped]
assert names == kinds + ["glibc"] + loaded + ["tlsf-plugin"], names
origin = {a["name"]: a["origin"] for a in d["allocators"]}
assert all(origin[p] == "peer" for p in loaded) and origin["tlsf-plugin"] == "plugin", origin
# The plugin is TLSF: through the ABI it must fill exactly as the kind does.
by = {a["name"]: a for a in d["allocators"]}
for ph in ("pow2", "random"):
    nr = lambda n: [dict(zip(d["row_columns"], r))["nrblocks"] for r in by[n][ph]["rows"]]
    assert nr("tlsf") == nr("tlsf-plugin"), ph
cols = d["row_columns"]
heaps = [8192 << i for i in range(64) if (8192 << i) < d["params"]["seq_heap_size"]]
rounds = d["params"]["random_alloc_rounds"]
pow2 = sum(4 * len([b for b in (16 << k for k in range(40)) if b < h // 2]) for h in heaps)
for a in d["allocators"]:
    assert a["passed"] and a["failure"] is None, a["name"]
    assert len(a["pow2"]["rows"]) == a["pow2"]["tests"] == pow2, (a["name"], pow2)
    assert len(a["random"]["rows"]) == 4 * rounds * len(heaps), a["name"]
    for row in a["pow2"]["rows"] + a["random"]["rows"]:
        r = dict(zip(cols, row))
        assert r["heap_bytes"] in heaps and r["nrblocks"] >= 1, (a["name"], r)
        assert r["nrblocks"] * r["block_bytes"] <= r["heap_bytes"], (a["name"], r)
    assert a["pattern"]["tests"] == d["params"]["pattern_check_rounds"], a["name"]
    assert a["churn"]["ops"] == d["params"]["churn_ops"], a["name"]
    assert a["churn"]["frag_samples"], a["name"]
    if a["sort"] == "heap":
        assert all(h["exact"] for h in a["heap_sizes"]), a["name"]
        for row in a["pow2"]["rows"]:
            r = dict(zip(cols, row))
            assert r["fail_alloc_ns"] is not None and r["true_overhead_pct"] is not None
    else:
        assert all(dict(zip(cols, row))["fail_alloc_ns"] is None for row in a["pow2"]["rows"])
# heapmem and xnheap promise zero overhead for power-of-two sizes.
for a in d["allocators"]:
    if a["name"] in ("heapmem", "xnheap"):
        assert a["pow2"]["overall"]["avg_overhead_pct"] == 0, a["name"]
PY
then ok; else bad "memcheck JSON: rows for every kind and glibc, every phase"; fi
grep -q "average fragmentation" "$tmp/m.txt" && ok || bad "memcheck prints the overall lines"
# A peer that is installed must load (and run); one that is not is skipped.
for lib in libjemalloc.so.2:jemalloc libmimalloc.so.2:mimalloc libtcmalloc_minimal.so.4:tcmalloc; do
    name=${lib#*:}
    if ! have_lib "${lib%%:*}"; then
        echo "tool_smoke: $name not installed: its checks are skipped"
        grep -q "^  $name *SKIPPED: not installed" "$tmp/m.txt" && ok ||
            bad "$name not installed, but not reported as skipped"
        continue
    fi
    grep -q "^  $name *process allocator: $name" "$tmp/m.txt" && ok ||
        bad "$name is installed but did not run: $(grep "^  $name" "$tmp/m.txt")"
done
# jemalloc alone: the run re-executes itself for its static TLS once, and
# says so.
if have_lib libjemalloc.so.2; then
    if "$rtmem" memcheck --quick --no-rt --kinds jemalloc --phases pow2 --json "$tmp/j.json" \
           >"$tmp/j.txt" 2>&1 &&
       python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
assert [a["name"] for a in d["allocators"]] == ["jemalloc"] and d["passed"]
assert len(d["allocators"][0]["pow2"]["rows"]) > 0' "$tmp/j.json"; then ok; else
        bad "memcheck --kinds jemalloc"; cat "$tmp/j.txt"; fi
fi

# A plugin without stats or check runs; the checks it cannot have are off
# and said so.
if "$rtmem" memcheck --quick --no-rt --plugin "$bump_plugin" --kinds bump --json "$tmp/p.json" \
       >"$tmp/p.txt" 2>&1 &&
   python3 - "$tmp/p.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
a = d["allocators"][0]
assert d["passed"] and a["name"] == "bump" and a["origin"] == "plugin", a["name"]
assert not a["applies"]["stats"] and not a["applies"]["integrity_check"]
assert all(h["sized_by_memory"] for h in a["heap_sizes"])
assert a["churn"]["frag_applies"] is False
cols = d["row_columns"]
assert all(dict(zip(cols, r))["true_overhead_pct"] is None for r in a["pow2"]["rows"])
PY
then ok; else bad "memcheck --plugin (no stats)"; cat "$tmp/p.txt"; fi
grep -q "no stats: H is the memory given to create" "$tmp/p.txt" && ok ||
    bad "a plugin without stats: the report says what is not checked"

# Plugins memcheck must refuse: exit status 2 and the reason.
for plugin in "$@" "$no_symbol" "$tmp/nosuch.so"; do
    "$rtmem" memcheck --quick --no-rt --plugin "$plugin" >/dev/null 2>"$tmp/err.txt"
    rc=$?
    if [ "$rc" -eq 2 ] && grep -q -- "--plugin $plugin: " "$tmp/err.txt"; then ok; else
        bad "--plugin $plugin gave $rc: $(cat "$tmp/err.txt")"; fi
done
grep -q "^== summary" "$tmp/m.txt" && ok || bad "memcheck prints the summary"

# --format smokey: smokey's headers, rows and overall lines, exactly.
if "$rtmem" memcheck --quick --no-rt --kinds tlsf --phases pow2 --format smokey --compat \
       >"$tmp/s.txt" 2>&1; then ok; else bad "memcheck --format smokey"; cat "$tmp/s.txt"; fi
for line in "== memcheck started for tlsf at " "     seq_heap_size=256k" \
            "[SEQUENTIAL ALLOC->FREE, ^2 BLOCK SIZES] ON 'tlsf'" "sorted by: max alloc time" \
            "sorted by: max fragmentation" \
            "  HEAPSZ  BLOCKSZ   NRBLKS  AVG-A  AVG-F  MAX-A  MAX-F   OVRH%  FRAG%  FLAGS" \
            "  ... (196 results following) ..." "overall:" "  worst alloc time: " \
            "  average fragmentation: " "== memcheck finished for tlsf at "; do
    grep -qF -- "$line" "$tmp/s.txt" && ok || bad "smokey layout: '$line' missing"
done
grep -Eq '^ +[0-9]+k +[0-9]+[ k] +[0-9]+ +[0-9]+\.[0-9] ' "$tmp/s.txt" && ok ||
    bad "smokey layout: rows in us with one decimal"

for args in "memcheck --seq-heap-size 4K" "memcheck --random-alloc-rounds x" \
            "memcheck --kinds nosuch" "memcheck --kinds tlsf," "memcheck --format xml" \
            "memcheck --max-results -2" "memcheck --phases bogus" "memcheck --churn-fill 0" \
            "memcheck --churn-max-size 1M" "memcheck --seed -1" "memcheck --bogus" \
            "memcheck stray" "memcheck --phases churn --no-churn" "memcheck --plugin" \
            "memcheck --kinds tlsf-plugin"; do
    # shellcheck disable=SC2086
    "$rtmem" $args >/dev/null 2>"$tmp/err.txt"
    rc=$?
    if [ "$rc" -eq 2 ] && [ -s "$tmp/err.txt" ]; then ok; else bad "'rtmem $args' gave $rc"; fi
done
# Bad usage says what is wrong and how to get help: exit status 2, the
# message and the "Try ... --help" line.
no_cpu=$(python3 -c 'import os; print(max(os.sched_getaffinity(0)) + 1)')
while IFS='|' read -r args message; do
    # shellcheck disable=SC2086
    "$rtmem" $args >/dev/null 2>"$tmp/err.txt"
    rc=$?
    if [ "$rc" -eq 2 ] && grep -qF -- "$message" "$tmp/err.txt" &&
       grep -q "^Try 'rtmem [a-z]* --help'" "$tmp/err.txt"; then ok; else
        bad "'rtmem $args' gave $rc: $(cat "$tmp/err.txt")"; fi
done <<USAGE
bench --cpu $no_cpu|--cpu $no_cpu: no such CPU for this process (allowed: 
memcheck --cpu $no_cpu|--cpu $no_cpu: no such CPU for this process
bench --ops -5|--ops needs a whole number in [1, 
bench --ops 0|--ops: '0' is out of range [1, 
memcheck --max-results -2|--max-results needs -1 (every row) or a whole number
bench --kinds foo|unknown allocator 'foo'
memcheck --kinds foo|unknown allocator 'foo'
memcheck --plugin a --plugin b --plugin c --plugin d --plugin e|--plugin: at most 4 plugins
bench --heap-size 1T --kinds nosuch|unknown allocator 'nosuch'
bench --heap-size 2T|--heap-size: '2T' is out of range
memcheck --random-alloc-rounds 0|--random-alloc-rounds: '0' is out of range [1, 
memcheck --pattern-check-rounds 0|--pattern-check-rounds: '0' is out of range [1, 
USAGE

# The legend defines every column the report shows, TOVRH% included.
grep -q "^  TOVRH%: true overhead" "$tmp/m.txt" && ok || bad "legend: TOVRH% not defined"
# --no-json-rows: the overall lines without the rows.
if "$rtmem" memcheck --quick --no-rt --kinds tlsf --phases pow2 --no-json-rows \
       --json "$tmp/r.json" >/dev/null 2>&1 &&
   python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); a = d["allocators"][0]
assert a["pow2"]["rows"] is None and a["pow2"]["overall"]["tests"] > 0
assert d["params"]["json_rows"] is False' "$tmp/r.json"; then ok; else
    bad "memcheck --no-json-rows"; fi

echo "tool_smoke: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
