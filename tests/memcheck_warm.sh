#!/bin/sh
# A process allocator is measured warm in its test processes: glibc, alone
# (its buffers sized for it too), fills 1 MiB heaps in the pow2 and random
# phases from memory it already holds. Its phases take (nearly) no page
# faults; a test process that left glibc at its default thresholds took
# thousands (each fill grew the heap with brk, each emptied heap was trimmed).
# Counts, not times: the same on any machine.
#   memcheck_warm.sh RTMEM_BINARY
set -u
rtmem=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAILED: $*"; }

if "$rtmem" memcheck --quick --no-rt --kinds glibc --phases pow2,random --seq-heap-size 1M \
       --json "$tmp/w.json" --no-json-rows >"$tmp/out.txt" 2>&1; then ok
else bad "memcheck --kinds glibc"; cat "$tmp/out.txt"; fi
if python3 - "$tmp/w.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["passed"] is True
g = d["allocators"][0]
assert g["name"] == "glibc" and g["passed"], g["failure"]
for ph in ("pow2", "random"):
    faults = g[ph]["minor_faults"]
    assert g[ph]["tests"] > 0, ph
    # Code run for the first time may fault without mlockall; a heap
    # grown per fill faults once a page.
    assert faults is not None and faults < 32, (ph, faults)
PY
then ok; else bad "glibc's phases take no page faults"; fi
echo "memcheck_warm: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
