#!/bin/sh
# A functional failure fails `rtmem memcheck`: with glibc's malloc_usable_size
# replaced by one that lies (memcheck_fault.c), the run exits 1, names the
# failing allocator, the check and a replay command, writes a JSON result that
# says so, and still runs and passes the other allocators.
#   memcheck_fault.sh RTMEM_BINARY FAULT_LIBRARY
set -u
rtmem=$1
lib=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAILED: $*"; }

LD_PRELOAD="$lib" "$rtmem" memcheck --quick --no-rt --kinds tlsf,glibc --json "$tmp/f.json" \
    >"$tmp/out.txt" 2>&1
rc=$?
[ "$rc" -eq 1 ] && ok || { bad "exit status $rc, expected 1"; cat "$tmp/out.txt"; }
grep -q "^FAILED: glibc: pow2 phase, test #0: .*usable size 0 of block #0 is below its request of 16 B" \
    "$tmp/out.txt" && ok || bad "failure message"
grep -q "replay: rtmem memcheck --kinds glibc --phases pow2 --seed " "$tmp/out.txt" && ok ||
    bad "replay command"
if python3 - "$tmp/f.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["passed"] is False
a = {x["name"]: x for x in d["allocators"]}
assert a["tlsf"]["passed"] and a["tlsf"]["churn"] is not None
assert not a["glibc"]["passed"] and a["glibc"]["failure"]["phase"] == "pow2"
assert a["glibc"]["random"] is None, "a failed allocator runs no further phase"
PY
then ok; else bad "JSON records the failure, tlsf still ran"; fi
echo "memcheck_fault: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
