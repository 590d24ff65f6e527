#!/bin/sh
# The rtmem command: a quick bench writes valid JSON with a row per allocator;
# bad input gives exit status 2 and a message, never a crash.
#   tool_smoke.sh RTMEM_BINARY
set -u
rtmem=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAILED: $*"; }

if "$rtmem" bench --quick --no-rt --json "$tmp/b.json" >"$tmp/out.txt" 2>&1; then ok; else bad "bench --quick"; cat "$tmp/out.txt"; fi
if python3 - "$tmp/b.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
names = {a["name"] for a in d["allocators"]}
assert {"tlsf", "glibc"} <= names, names
PY
then ok; else bad "JSON has tlsf and glibc rows"; fi
grep -q "vs glibc" "$tmp/out.txt" && ok || bad "ratio table printed"
for args in "bench --ops 0" "bench --min-size 100 --max-size 10" "bench --kinds nosuch" \
            "bench --heap-size 12Q" "bench --bogus" "nosuchcommand"; do
    # shellcheck disable=SC2086
    "$rtmem" $args >/dev/null 2>"$tmp/err.txt"
    rc=$?
    if [ "$rc" -eq 2 ] && [ -s "$tmp/err.txt" ]; then ok; else bad "'rtmem $args' gave $rc"; fi
done
"$rtmem" kinds | grep -qx tlsf && ok || bad "rtmem kinds lists tlsf"
echo "tool_smoke: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
