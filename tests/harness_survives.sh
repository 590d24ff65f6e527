#!/bin/sh
# The harness survives allocators that crash and hang: a plugin that
# dereferences NULL in alloc and one whose free never returns each fail with
# the phase, test and signal (or the timeout) named and a replay command; the
# rows they finished and every other allocator's results are kept in the
# report and the JSON; the run exits 1; no test process is left behind, also
# when the run itself is interrupted.
# rtmem bench, with the same plugins, leaves them out and measures the rest;
# it runs the peers --kinds names, or says why not.
#   harness_survives.sh RTMEM_BINARY CRASH_PLUGIN HANG_PLUGIN TLSF_PLUGIN
set -u
rtmem=$1
crash=$2
hang=$3
tlsf_plugin=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAILED: $*"; }
# Every process of a run carries this in its environment, so the test can
# find the ones left behind (and only them: other tests run in parallel).
mark="RTMEM_HARNESS_TEST=$$.$(date +%s%N)"
# In a sanitizer build, a plugin's SIGSEGV must stay a SIGSEGV (ASan's and
# UBSan's runtimes each catch it otherwise, and exit with status 1).
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0"
UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}handle_segv=0"
export ASAN_OPTIONS UBSAN_OPTIONS
leftovers() {
    for e in /proc/[0-9]*/environ; do
        { tr '\0' '\n' <"$e"; } 2>/dev/null | grep -qx "$mark" && echo "${e%/environ}"
    done
}

env "$mark" "$rtmem" memcheck --quick --no-rt --plugin "$crash" --plugin "$hang" \
    --kinds tlsf,crash,hang,glibc --timeout 1 --json "$tmp/m.json" >"$tmp/m.txt" 2>"$tmp/err.txt"
rc=$?
[ "$rc" -eq 1 ] && ok || { bad "exit status $rc, expected 1"; cat "$tmp/err.txt"; }
[ -z "$(leftovers)" ] && ok || bad "test processes left behind: $(leftovers)"
grep -Eq "^FAILED: crash: pow2 phase, test #[0-9]+: heap [0-9]+ B, block [0-9]+ B: crashed: killed by SIGSEGV \(Segmentation fault\)$" \
    "$tmp/m.txt" && ok || bad "crash: message: $(grep "FAILED: crash" "$tmp/m.txt")"
grep -Eq "^FAILED: hang: pow2 phase, test #[0-9]+: heap [0-9]+ B, block 1024 B: hung: no progress for 1 s" \
    "$tmp/m.txt" && ok || bad "hang: message: $(grep "FAILED: hang" "$tmp/m.txt")"
for name in crash hang; do
    grep -q "^  replay: rtmem memcheck --plugin [^ ]*${name}_plugin.so --kinds $name --phases pow2 .*--timeout 1$" \
        "$tmp/m.txt" && ok || bad "$name: replay command"
    grep -q "FAILED: $name: " "$tmp/err.txt" && ok || bad "$name: failure on stderr"
done
# The others ran every phase; the broken ones kept the rows they finished,
# as many as the number of the test they died in.
if python3 - "$tmp/m.json" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
assert d["passed"] is False
a = {x["name"]: x for x in d["allocators"]}
for n in ("tlsf", "glibc"):
    assert a[n]["passed"] and a[n]["failure"] is None, n
    assert a[n]["pow2"]["rows"] and a[n]["random"]["rows"] and a[n]["churn"]["ops"] > 0, n
for n, kind, sig in (("crash", "crash", "SIGSEGV"), ("hang", "timeout", None)):
    f = a[n]["failure"]
    assert not a[n]["passed"] and f["phase"] == "pow2", (n, f)
    assert f["kind"] == kind and f["signal"] == sig, (n, f)
    test = int(re.search(r"test #(\d+)", f["message"]).group(1))
    assert test > 0 and len(a[n]["pow2"]["rows"]) == test, (n, test, len(a[n]["pow2"]["rows"]))
    assert a[n]["random"] is None and a[n]["churn"] is None, n
PY
then ok; else bad "JSON: results kept, failures recorded"; fi
grep -q "^== summary" "$tmp/m.txt" && grep -q "^  pow2   glibc " "$tmp/m.txt" && ok ||
    bad "the report has the other allocators' summary"

# Interrupted while a test process spins: it is killed and reaped, the
# previous result file stays, the run dies of the signal.
printf 'previous\n' >"$tmp/keep.json"
if env "$mark" python3 - "$rtmem" "$hang" "$tmp/keep.json" "$mark" <<'PY'
import os, signal, subprocess, sys, time
rtmem, hang, path, mark = sys.argv[1:5]
p = subprocess.Popen([rtmem, "memcheck", "--quick", "--no-rt", "--plugin", hang, "--kinds", "hang",
                      "--phases", "pow2", "--json", path],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
def children():
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == p.pid:
            continue
        try:
            stat = open("/proc/%s/stat" % pid).read()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == p.pid:
            found.append(int(pid))
    return found
# Wait until the test process has spun for a while, then interrupt.
deadline = time.time() + 10
while time.time() < deadline and not children():
    time.sleep(0.05)
time.sleep(0.5)
spinning = children()
p.send_signal(signal.SIGINT)
try:
    rc = p.wait(timeout=10)
except subprocess.TimeoutExpired:
    p.kill()
    p.wait()
    sys.exit("memcheck did not stop on SIGINT")
assert spinning, "no test process seen"
assert rc == -signal.SIGINT, rc
for pid in spinning:
    assert not os.path.exists("/proc/%d" % pid), "test process %d left" % pid
PY
then ok; else bad "SIGINT while a test process spins"; fi
[ -z "$(leftovers)" ] && ok || bad "after SIGINT, processes left: $(leftovers)"
[ "$(cat "$tmp/keep.json")" = previous ] && [ "$(ls -A "$tmp" | grep -c '^\.keep')" -eq 0 ] && ok ||
    bad "after SIGINT: the result file changed or a temporary file was left"

# rtmem bench: the broken plugins are left out, named, with a replay
# command; the run measures everything else, a working plugin included.
env "$mark" "$rtmem" bench --quick --no-rt --no-sweep --plugin "$crash" --plugin "$hang" \
    --plugin "$tlsf_plugin" --kinds tlsf,glibc,crash,hang,tlsf-plugin --timeout 1 \
    --json "$tmp/b.json" >"$tmp/b.txt" 2>"$tmp/err.txt"
rc=$?
[ "$rc" -eq 1 ] && ok || { bad "bench: exit status $rc, expected 1"; cat "$tmp/err.txt"; }
[ -z "$(leftovers)" ] && ok || bad "bench: processes left behind: $(leftovers)"
grep -Eq "^FAILED: crash: main phase, .*: crashed: killed by SIGSEGV \(Segmentation fault\)" \
    "$tmp/b.txt" && ok || bad "bench: crash: $(grep "crash" "$tmp/b.txt")"
grep -Eq "^FAILED: hang: main phase, .*: hung: no progress for 1 s" "$tmp/b.txt" && ok ||
    bad "bench: hang: $(grep "hang" "$tmp/b.txt")"
for name in crash hang; do
    grep -q "^  replay: rtmem bench --plugin [^ ]*${name}_plugin.so --kinds $name .*--timeout 1$" \
        "$tmp/b.txt" && ok || bad "bench: $name: replay command"
done
if python3 - "$tmp/b.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
names = [a["name"] for a in d["allocators"]]
assert names == ["floor", "tlsf", "glibc", "tlsf-plugin"], names
assert d["schema"] == "rtmem-bench/2" and d["passed"] is False, "a failed allocator fails the run"
assert all(a["alloc"]["count_total"] > 0 for a in d["allocators"]), "rows measured"
assert [r["name"] for r in d["ratios_vs_glibc"]] == ["tlsf", "tlsf-plugin"]
failed = {f["name"]: f for f in d["failed_allocators"]}
assert failed["crash"]["kind"] == "crash" and failed["crash"]["signal"] == "SIGSEGV", failed
assert failed["hang"]["kind"] == "timeout" and failed["hang"]["api"] == "plugin", failed
PY
then ok; else bad "bench JSON: the others measured, the failures recorded"; fi

# Peers in rtmem bench: each one named runs, or is skipped with the reason.
if "$rtmem" bench --quick --no-rt --no-sweep --no-free-order --kinds glibc,jemalloc,mimalloc,tcmalloc \
       --json "$tmp/p.json" >/dev/null 2>"$tmp/err.txt" &&
   python3 - "$tmp/p.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ran = {a["name"]: a["api"] for a in d["allocators"]}
for p in ("jemalloc", "mimalloc", "tcmalloc"):
    assert ran.get(p) == "peer" or (d["skipped"] and p + " skipped: " in d["skipped"]), p
PY
then ok; else bad "bench --kinds with the peers: $(cat "$tmp/err.txt")"; fi

echo "harness_survives: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
