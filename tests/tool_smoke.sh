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
echo "tool_smoke: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
