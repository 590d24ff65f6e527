#!/bin/sh
# A failed or interrupted run never destroys anything: `--json PATH` replaces
# PATH only with complete results, never removes or truncates a file the tool
# did not create (a device, a FIFO, a previous good result), and leaves no
# temporary file behind; a report that cannot be written fails the run with
# its cause.
#   result_files.sh RTMEM_BINARY
set -u
rtmem=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAILED: $*"; }
# The shortest runs of each tool.
bench="bench --quick --no-rt --no-sweep --no-free-order --kinds tlsf,glibc"
memcheck="memcheck --quick --no-rt --kinds tlsf --phases pow2"
# Nothing in $tmp/d but what the test put there: no temporary file left.
no_leftovers() {
    left=$(ls -A "$tmp/d" | grep -v -x -e good.json -e good.orig -e fifo -e fifo.out \
                                     -e full -e link.json -e real.json -e sub)
    [ -z "$left" ] && ok || bad "$1: left behind: $left"
}
mkdir "$tmp/d"
printf '{"a previous": "good result"}\n' >"$tmp/d/good.json"
cp "$tmp/d/good.json" "$tmp/d/good.orig"

# A report that cannot be written fails the run, with its cause; the
# previous results stay as they were.
for tool in "$bench" "$memcheck"; do
    # shellcheck disable=SC2086
    "$rtmem" $tool --json "$tmp/d/good.json" >/dev/full 2>"$tmp/err.txt"
    rc=$?
    [ "$rc" -eq 1 ] && ok || bad "'$tool' > /dev/full gave $rc"
    grep -q "writing to standard output failed: No space left on device" "$tmp/err.txt" && ok ||
        bad "'$tool' > /dev/full: $(cat "$tmp/err.txt")"
    cmp -s "$tmp/d/good.json" "$tmp/d/good.orig" && ok ||
        bad "'$tool' > /dev/full changed the previous result file"
    no_leftovers "'$tool' > /dev/full"
done
"$rtmem" kinds >/dev/full 2>"$tmp/err.txt"
rc=$?
[ "$rc" -eq 1 ] && grep -q "No space left on device" "$tmp/err.txt" && ok ||
    bad "'rtmem kinds' > /dev/full gave $rc: $(cat "$tmp/err.txt")"

# A device as the result file: written to, never removed. /dev/full itself,
# and a device node of our own where we may make one (root).
for dev in /dev/full "$tmp/d/full"; do
    if [ "$dev" = "$tmp/d/full" ] && ! mknod "$dev" c 1 7 2>/dev/null; then
        echo "result_files: cannot mknod (not root?): own device node not tested"
        continue
    fi
    # shellcheck disable=SC2086
    "$rtmem" $bench --json "$dev" >/dev/null 2>"$tmp/err.txt"
    rc=$?
    [ "$rc" -eq 1 ] && ok || bad "--json $dev gave $rc"
    grep -q "writing '$dev' failed: No space left on device" "$tmp/err.txt" && ok ||
        bad "--json $dev: $(cat "$tmp/err.txt")"
    [ -c "$dev" ] && ok || bad "--json $dev: the device node is gone"
    # shellcheck disable=SC2086
    "$rtmem" $memcheck --json "$dev" >/dev/null 2>"$tmp/err.txt"
    rc=$?
    [ "$rc" -eq 1 ] && [ -c "$dev" ] && ok || bad "memcheck --json $dev gave $rc"
done
no_leftovers "--json on a device"

# A FIFO is written directly, and stays a FIFO.
mkfifo "$tmp/d/fifo"
cat "$tmp/d/fifo" >"$tmp/d/fifo.out" &
reader=$!
# shellcheck disable=SC2086
"$rtmem" $bench --json "$tmp/d/fifo" >/dev/null 2>"$tmp/err.txt"
rc=$?
wait "$reader"
[ "$rc" -eq 0 ] && [ -p "$tmp/d/fifo" ] && ok || bad "--json FIFO gave $rc: $(cat "$tmp/err.txt")"
python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["schema"] == "rtmem-bench/2"' \
    "$tmp/d/fifo.out" && ok || bad "--json FIFO: the reader did not get the JSON"

# /dev/stdout: the JSON goes into the report's stream, after the report.
# shellcheck disable=SC2086
"$rtmem" $bench --json /dev/stdout >"$tmp/stdout.txt" 2>"$tmp/err.txt"
rc=$?
[ "$rc" -eq 0 ] && grep -q '"schema": "rtmem-bench/2"' "$tmp/stdout.txt" &&
    grep -q "^floor (no-op call" "$tmp/stdout.txt" && ok ||
    bad "--json /dev/stdout gave $rc: $(cat "$tmp/err.txt")"

# A complete run replaces the file, keeping its mode; through a symbolic
# link, the link's target is replaced and the link stays.
chmod 640 "$tmp/d/good.json"
# shellcheck disable=SC2086
if "$rtmem" $memcheck --json "$tmp/d/good.json" >/dev/null 2>&1 &&
   python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["passed"]' \
       "$tmp/d/good.json"; then ok; else bad "a complete run replaces the result file"; fi
[ "$(stat -c %a "$tmp/d/good.json")" = 640 ] && ok || bad "the replaced file lost its mode"
cp "$tmp/d/good.orig" "$tmp/d/good.json"
cp "$tmp/d/good.orig" "$tmp/d/real.json"
ln -s real.json "$tmp/d/link.json"
# shellcheck disable=SC2086
"$rtmem" $bench --json "$tmp/d/link.json" >/dev/null 2>&1 && [ -L "$tmp/d/link.json" ] &&
    grep -q '"schema": "rtmem-bench/2"' "$tmp/d/real.json" && ok ||
    bad "--json through a symbolic link"
no_leftovers "complete runs"

# Names that cannot be written: bad usage, found before the run.
mkdir "$tmp/d/sub"
for path in "$tmp/d/sub" "$tmp/d/nosuchdir/x.json"; do
    # shellcheck disable=SC2086
    "$rtmem" $bench --json "$path" >/dev/null 2>"$tmp/err.txt"
    rc=$?
    [ "$rc" -eq 2 ] && grep -q "cannot write '$path'" "$tmp/err.txt" && ok ||
        bad "--json $path gave $rc: $(cat "$tmp/err.txt")"
done
[ -d "$tmp/d/sub" ] && [ -z "$(ls -A "$tmp/d/sub")" ] && ok || bad "--json on a directory"

# Interrupted (SIGINT, SIGTERM) during a run: the previous result is intact,
# no temporary file is left, the tool dies of the signal. python3 starts it
# with the default dispositions (a shell's background job ignores SIGINT).
for sig in INT TERM; do
    if python3 - "$rtmem" "$tmp/d/good.json" "$sig" <<'PY'
import os, signal, subprocess, sys, time
rtmem, path, sig = sys.argv[1], sys.argv[2], getattr(signal, "SIG" + sys.argv[3])
p = subprocess.Popen([rtmem, "memcheck", "--no-rt", "--kinds", "tlsf,glibc", "--json", path],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
d = os.path.dirname(path)
# Interrupt it once its temporary file exists (the run has started).
deadline = time.time() + 10
while time.time() < deadline and p.poll() is None:
    if any(n.startswith(".good.json.") for n in os.listdir(d)):
        break
    time.sleep(0.02)
time.sleep(0.3)
p.send_signal(sig)
try:
    rc = p.wait(timeout=10)
except subprocess.TimeoutExpired:
    p.kill()
    p.wait()
    sys.exit("did not stop within 10 s")
assert rc == -sig, "exit %d, expected death by the signal" % rc
PY
    then ok; else bad "SIG$sig during memcheck --json"; fi
    cmp -s "$tmp/d/good.json" "$tmp/d/good.orig" && ok ||
        bad "SIG$sig during memcheck changed the previous result file"
    no_leftovers "SIG$sig during memcheck"
done

echo "result_files: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
