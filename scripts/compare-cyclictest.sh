#!/bin/sh
# Compares `rtmem latency` with cyclictest (rt-tests) on this machine: the
# same period, SCHED_FIFO priority and CPU, the same duration per run, idle
# and then under the same memory pressure, the two tools run alternately
# (cyclictest, rtmem, cyclictest, rtmem, ...) so that the machine's noise
# falls on both alike. Prints a row per run (samples, min, p50, p99, p99.9,
# max in us) and, per condition, whether the medians agree: within 10% or
# 5 us of cyclictest's.
#   compare-cyclictest.sh [--duration S] [--period US] [--prio N] [--cpu N]
#                         [--runs N] [--bytes B]
#     --duration S  seconds per run (default 10)
#     --period US   the wake-up period in us (default 1000)
#     --prio N      the SCHED_FIFO priority (default 80)
#     --cpu N       the measured CPU (default: the last this process may use)
#     --runs N      runs of each tool per condition (default 2)
#     --bytes B     each of the 2 pressure workers' allocation (default 128M)
# Default total: 2 conditions x 2 tools x 2 runs x 10 s, about 90 s.
#
# The pressure: for cyclictest, `rtmem pressure --vm 2 --bytes B --stride
# 4096 --cpus OTHERS` started a second before it and stopped after it; for
# rtmem, `rtmem latency --pressure vm=2,bytes=B,stride=4096 --pressure-cpus
# OTHERS`, which starts the same load before its run. OTHERS: every CPU this
# process may use but the measured one. Each pressure row gives the load's
# rate (rounds and page faults per second) so that the two loads can be
# compared.
#
# cyclictest's figures come from its histogram (1 us buckets, latencies
# truncated to whole us); percentiles are nearest-rank over every wake-up,
# as rtmem computes them. A wake-up above the histogram's range is counted
# in `>hist`; a percentile that falls there is shown as `>N`.
#
# Needs root (both tools ask for SCHED_FIFO and mlockall) and python3;
# installs rt-tests if cyclictest is missing (scripts/ensure-deps.sh).
# During each run it watches for other real-time tasks outside the kernel: a
# run that had one beside it is marked `*` (its figures include them; one
# that lives less than a tenth of a second may pass unseen).
# RTMEM names the rtmem binary (default build/tools/rtmem). Every temporary
# file lives in one directory removed on exit; every process started is
# stopped and waited for on exit, error, Ctrl-C or SIGTERM.
#
# Exit status: 0 the medians agree in both conditions, 1 they disagree in
# one, 2 bad usage, 3 the comparison could not run.
set -u
cd "$(dirname "$0")/.." || exit 3

duration=10
period=1000
prio=80
cpu=""
runs=2
bytes=128M
rtmem=${RTMEM:-build/tools/rtmem}
# cyclictest's histogram range in us: the largest latency it places in a
# bucket; above it, wake-ups are only counted (and the maximum kept).
hist_us=100000

# --help: the comment above, from its second line to `set -u`.
usage() {
    sed -n '2,/^set -u/{/^#/s/^# \{0,1\}//p;}' "$0"
}

die() { echo "compare-cyclictest: $*" >&2; exit 3; }
bad_usage() { echo "compare-cyclictest: $*; --help lists the options" >&2; exit 2; }

is_uint() { case "$1" in '' | *[!0-9]*) return 1 ;; *) return 0 ;; esac; }
# Is $1 a whole number from $2 to $3?
in_range() { is_uint "$1" && [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }

while [ $# -gt 0 ]; do
    case "$1" in
    -h | --help) usage; exit 0 ;;
    --duration | --period | --prio | --cpu | --runs | --bytes)
        [ $# -ge 2 ] || bad_usage "$1 needs a value"
        opt=${1#--}
        val=$2
        shift 2
        ;;
    --*=*)
        opt=${1%%=*}
        opt=${opt#--}
        val=${1#*=}
        shift
        ;;
    *) bad_usage "unknown argument '$1'" ;;
    esac
    case "$opt" in
    duration) in_range "$val" 1 3600 || bad_usage "--duration: whole seconds, 1 to 3600"
        duration=$val ;;
    period) in_range "$val" 50 1000000 || bad_usage "--period: us, 50 to 1000000"
        period=$val ;;
    prio) in_range "$val" 1 99 || bad_usage "--prio: 1 to 99"
        prio=$val ;;
    cpu) is_uint "$val" || bad_usage "--cpu: a CPU number"
        cpu=$val ;;
    runs) in_range "$val" 1 20 || bad_usage "--runs: 1 to 20"
        runs=$val ;;
    bytes) case "$val" in
        [0-9]*[KMGT] | [0-9]*) is_uint "${val%[KMGT]}" ||
            bad_usage "--bytes: a size, e.g. 128M" ;;
        *) bad_usage "--bytes: a size, e.g. 128M" ;;
        esac
        bytes=$val ;;
    *) bad_usage "unknown option '--$opt'" ;;
    esac
done

[ "$(id -u)" -eq 0 ] || die "needs root: both tools run SCHED_FIFO with memory locked"
command -v python3 >/dev/null 2>&1 || die "needs python3 (it reads the results)"
[ -x "$rtmem" ] || die "no rtmem binary at $rtmem (make build, or set RTMEM)"
sh scripts/ensure-deps.sh rt-tests ||
    die "cyclictest (Debian package rt-tests) is missing and could not be installed"
command -v cyclictest >/dev/null 2>&1 || die "cyclictest is still missing after installing rt-tests"

# The CPUs this process may use: the measured one, and the others for the load.
allowed=$(python3 -c 'import os; print(" ".join(str(c) for c in sorted(os.sched_getaffinity(0))))') ||
    die "cannot read this process's CPUs"
if [ -z "$cpu" ]; then
    for c in $allowed; do cpu=$c; done
fi
others=""
found=no
for c in $allowed; do
    if [ "$c" = "$cpu" ]; then found=yes; else others="${others:+$others,}$c"; fi
done
[ "$found" = yes ] || bad_usage "--cpu $cpu: not one of this process's CPUs ($allowed)"
[ -n "$others" ] || die "only CPU $cpu here: the pressure needs another CPU to run on"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/compare-cyclictest.XXXXXX") || die "mktemp -d failed"
pids=""

# Stops what is still running (SIGTERM: each tool then ends as a complete
# run), waits for it, SIGKILL after 5 s, and removes the directory.
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
    for p in $pids; do kill -TERM "$p" 2>/dev/null; done
    for p in $pids; do
        n=0
        while kill -0 "$p" 2>/dev/null && [ "$n" -lt 50 ]; do
            sleep 0.1
            n=$((n + 1))
        done
        kill -KILL "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    pids=""
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'echo "compare-cyclictest: interrupted" >&2; exit 130' INT
trap 'echo "compare-cyclictest: terminated" >&2; exit 143' TERM

# Starts a command in the background, remembered for cleanup; $! is its pid.
start() {
    "$@" &
    pids="$pids $!"
}

# Waits for pid $1 (interruptible by INT and TERM), forgets it; its status.
finish() {
    rc=0
    wait "$1" || rc=$?
    rest=""
    for p in $pids; do [ "$p" = "$1" ] || rest="$rest $p"; done
    pids=$rest
    return $rc
}

# The watcher, on the other CPUs: it notes each process of user space
# (kernel threads are children of kthreadd, pid 2) with a SCHED_FIFO or
# SCHED_RR thread, other than the tool measured (argument 1), as
# "pid:name", once. Reading every thread's stat takes milliseconds: it does
# so every 0.5 s, and every 0.1 s for the processes that appeared in the
# last 2 s (a short run of another real-time tool is one of those). One
# process, no children: SIGTERM ends it.
cat > "$tmp/rt-watch.py" <<'EOF_WATCH'
import os, signal, sys, time

signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
skip = {sys.argv[1], str(os.getpid()), "2"}
try:
    os.sched_setaffinity(0, {int(c) for c in sys.argv[2].split(",")})
except OSError:
    pass


def policy_and_parent(path):
    with open(path) as f:
        stat = f.read()
    rest = stat[stat.rindex(")") + 2 :].split()
    # rest[1] the parent (field 4), rest[38] the policy (field 41)
    return stat[stat.index("(") + 1 : stat.rindex(")")], rest[38] in ("1", "2"), rest[1]


def real_time(pid):
    """The process's name if a thread of it is real-time, else None."""
    try:
        name, rt, parent = policy_and_parent("/proc/%s/stat" % pid)
        if parent == "2":
            return None
        for tid in [] if rt else os.listdir("/proc/%s/task" % pid):
            rt = policy_and_parent("/proc/%s/task/%s/stat" % (pid, tid))[1]
            if rt:
                break
        return name if rt else None
    except (OSError, ValueError, IndexError):
        return None


first_seen = {p: float("-inf") for p in os.listdir("/proc") if p.isdigit()}
seen = set()
n = 0
while True:
    now = time.monotonic()
    pids = [p for p in os.listdir("/proc") if p.isdigit() and p not in skip]
    for p in pids:
        first_seen.setdefault(p, now)
    for p in pids if n % 5 == 0 else [p for p in pids if now - first_seen[p] < 2.0]:
        name = real_time(p)
        if name and p not in seen:
            seen.add(p)
            print(p + ":" + name, flush=True)
    n += 1
    time.sleep(0.1)
EOF_WATCH

# Watches beside the tool of pid $1 into file $2; unwatch_rt FILE stops the
# watcher and sets busy to what it saw ("-" for nothing).
watch_rt() {
    start python3 "$tmp/rt-watch.py" "$1" "$others" > "$2"
    wpid=$!
}
unwatch_rt() {
    kill -TERM "$wpid" 2>/dev/null
    finish "$wpid"
    busy=$(tr '\n' ' ' < "$1")
    busy=${busy% }
    busy=${busy:--}
}

manifest=$tmp/manifest
: > "$manifest"

# One run of cyclictest: $1 condition, $2 run number.
run_cyclictest() {
    out=$tmp/cyc-$1-$2
    load=""
    if [ "$1" = pressure ]; then
        load=$tmp/load-$1-$2.json
        start "$rtmem" pressure --vm 2 --bytes "$bytes" --stride 4096 --cpus "$others" \
            --duration $((duration + 5)) --json "$load" > "$tmp/load-$1-$2.txt" 2>&1
        lpid=$!
        sleep 1
        kill -0 "$lpid" 2>/dev/null || {
            cat "$tmp/load-$1-$2.txt" >&2
            die "rtmem pressure ended before cyclictest started"
        }
    fi
    start cyclictest -q -m -p "$prio" --policy=fifo -a "$cpu" -t 1 -i "$period" \
        -D "$duration" -h "$hist_us" --histfile="$out.hist" > "$out.txt" 2>&1
    tpid=$!
    watch_rt "$tpid" "$out.busy"
    finish "$tpid" || { cat "$out.txt" >&2; die "cyclictest failed (status $rc)"; }
    unwatch_rt "$out.busy"
    if [ -n "$load" ]; then
        kill -TERM "$lpid" 2>/dev/null
        finish "$lpid" || {
            cat "$tmp/load-$1-$2.txt" >&2
            die "rtmem pressure did not run as asked (status $rc)"
        }
    fi
    printf '%s\tcyclictest\t%s\t%s\t%s\t%s\n' "$1" "$2" "$out.hist" "${load:--}" "$busy" \
        >> "$manifest"
}

# One run of rtmem latency: $1 condition, $2 run number.
run_rtmem() {
    out=$tmp/rtmem-$1-$2
    load=-
    if [ "$1" = pressure ]; then
        load=$out.json
        start "$rtmem" latency --period "${period}us" --duration "$duration" --cpu "$cpu" \
            --prio "$prio" --json "$out.json" \
            --pressure "vm=2,bytes=$bytes,stride=4096" --pressure-cpus "$others" > "$out.txt" 2>&1
    else
        start "$rtmem" latency --period "${period}us" --duration "$duration" --cpu "$cpu" \
            --prio "$prio" --json "$out.json" > "$out.txt" 2>&1
    fi
    tpid=$!
    watch_rt "$tpid" "$out.busy"
    finish "$tpid" || { cat "$out.txt" >&2; die "rtmem latency failed (status $rc)"; }
    unwatch_rt "$out.busy"
    printf '%s\trtmem\t%s\t%s\t%s\t%s\n' "$1" "$2" "$out.json" "$load" "$busy" >> "$manifest"
}

total=$((2 * 2 * runs * duration))
echo "compare-cyclictest: period ${period} us, SCHED_FIFO $prio, cpu $cpu, ${duration} s a run," \
     "$runs runs of each tool per condition (about $((total + total / 8)) s)"
echo "  cyclictest: $(cyclictest --help 2>&1 | sed -n '1s/^cyclictest //p'), $(command -v cyclictest);" \
     "rtmem: $rtmem ($("$rtmem" --version 2>/dev/null))"
echo "  pressure: 2 vm workers of $bytes, a byte every 4096, on cpus $others;" \
     "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  cyclictest -q -m -p $prio --policy=fifo -a $cpu -t 1 -i $period -D $duration" \
     "-h $hist_us --histfile=FILE"
echo "  $rtmem latency --period ${period}us --duration $duration --cpu $cpu --prio $prio --json FILE" \
     "[--pressure vm=2,bytes=$bytes,stride=4096 --pressure-cpus $others]"
for cond in idle pressure; do
    r=1
    while [ "$r" -le "$runs" ]; do
        echo "  $cond, run $r of $runs: cyclictest, then rtmem latency"
        run_cyclictest "$cond" "$r"
        run_rtmem "$cond" "$r"
        r=$((r + 1))
    done
done
echo

python3 - "$manifest" "$hist_us" <<'EOF'
import json, math, sys

manifest, hist_us = sys.argv[1], int(sys.argv[2])


def rank(n, q):
    """The nearest rank (1-based) of the q-quantile among n values."""
    return min(n, max(1, math.ceil(q * n)))


def cyclictest_row(path):
    counts, info = [], {}
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                if ":" in line:
                    key, _, val = line[1:].partition(":")
                    info[key.strip()] = val.strip()
                continue
            fields = line.split()
            if len(fields) >= 2:
                counts.append((int(fields[0]), int(fields[1])))
    over = int(info.get("Histogram Overflows", "0").split()[0])
    inside = sum(c for _, c in counts)
    n = inside + over
    mx = float(info["Max Latencies"].split()[0])

    def pct(q):
        if n == 0:
            return None
        k = rank(n, q)
        if k == n:
            return mx
        seen = 0
        for us, c in counts:
            seen += c
            if seen >= k:
                return float(us)
        return ">%d" % hist_us

    return {
        "samples": n, "hist_over": over, "overruns": None,
        "min": float(info["Min Latencies"].split()[0]) if n else None,
        "p50": pct(0.5), "p99": pct(0.99), "p999": pct(0.999), "max": mx if n else None,
    }


def rtmem_row(path):
    with open(path) as f:
        j = json.load(f)
    s = j["summary"]
    us = lambda v: None if v is None else v / 1000.0
    return {
        "samples": s["samples"], "hist_over": None, "overruns": s["overruns"],
        "min": us(s["min_ns"]), "p50": us(s["p50_ns"]), "p99": us(s["p99_ns"]),
        "p999": us(s["p999_ns"]), "max": us(s["max_ns"]),
        "granted": j.get("real_time_granted"), "slack": j.get("timer_slack_ns"),
    }


def load_rate(path):
    """The load's rounds and page faults per second, from either JSON."""
    if path == "-":
        return None
    with open(path) as f:
        j = json.load(f)
    t = j["pressure"]["totals"] if "pressure" in j else j["totals"]
    sec = t["seconds"] or 1.0
    return t["vm_rounds"] / sec, t["vm_minor_faults"] / sec


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, (str, int)):
        return str(v)
    return "%.1f" % v


rows = []
with open(manifest) as f:
    for line in f:
        cond, tool, run, path, load, busy = line.rstrip("\n").split("\t")
        row = cyclictest_row(path) if tool == "cyclictest" else rtmem_row(path)
        row.update(cond=cond, tool=tool, run=int(run), load=load_rate(load), busy=busy)
        rows.append(row)

print("all figures in us; %s" % "cyclictest's truncated to whole us (1 us buckets)")
head = "%-9s %-10s %3s %8s %7s %5s %8s %8s %8s %8s %9s  %s" % (
    "condition", "tool", "run", "samples", "overrun", ">hist", "min", "p50", "p99",
    "p99.9", "max", "load rounds/s, faults/s")
print(head)
print("-" * len(head))
for r in rows:
    load = "-" if r["load"] is None else "%.1f, %.0f" % r["load"]
    mark = "*" if r["busy"] != "-" else " "
    print("%-9s %-10s %2d%s %8d %7s %5s %8s %8s %8s %8s %9s  %s" % (
        r["cond"], r["tool"], r["run"], mark, r["samples"], fmt(r["overruns"]),
        fmt(r["hist_over"]), fmt(r["min"]), fmt(r["p50"]), fmt(r["p99"]), fmt(r["p999"]),
        fmt(r["max"]), load))
busy = sorted({t for r in rows if r["busy"] != "-" for t in r["busy"].split()})
if busy:
    print("* another real-time task ran beside the run: %s" % ", ".join(busy))
for r in rows:
    if r["tool"] == "rtmem" and r.get("granted") is False:
        print("rtmem run %s/%d: real-time NOT granted" % (r["cond"], r["run"]))
print()

status = 0
for cond in ("idle", "pressure"):
    meds = {}
    for tool in ("cyclictest", "rtmem"):
        v = [r["p50"] for r in rows if r["cond"] == cond and r["tool"] == tool]
        v = [x for x in v if isinstance(x, float)]
        meds[tool] = sum(v) / len(v) if v else None
    c, m = meds["cyclictest"], meds["rtmem"]
    if c is None or m is None:
        print("%-9s no median to compare" % cond)
        status = 1
        continue
    diff = m - c
    rel = abs(diff) / c * 100 if c > 0 else float("inf")
    ok = abs(diff) <= 5.0 or rel <= 10.0
    status = status if ok else 1
    print("%-9s p50 (mean of the runs'): cyclictest %.1f, rtmem %.1f: %+.1f us (%.0f%%): %s" % (
        cond, c, m, diff, rel, "agree" if ok else "DISAGREE"))
print("(agree: medians within 10% or 5 us of cyclictest's)")
sys.exit(status)
EOF
exit $?
