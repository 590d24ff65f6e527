#!/bin/sh
# Compares `rtmem latency` with cyclictest (rt-tests) on this machine: the
# same period, SCHED_FIFO priority and CPU, the same duration per run, idle
# and then under the same memory load, the two tools run alternately
# (cyclictest, rtmem, cyclictest, rtmem, ...) so that the machine's noise
# falls on both alike. Each tool runs with its own defaults otherwise; both
# hold /dev/cpu_dma_latency at 0 for the run (the CPUs stay out of deep idle
# states), which the table confirms per run. One default differs and is
# evened out: rt-tests 2.4 keeps cyclictest's main thread on the measured
# CPU, where it now and then keeps the CPU awake as the timer fires (single
# wake-ups 3 to 6 us faster than any other, which set the min), while
# rtmem's main thread runs elsewhere: cyclictest gets --mainaffinity with
# the other CPUs, as rtmem's.
#   compare-cyclictest.sh [--duration S] [--period US] [--prio N] [--cpu N]
#                         [--runs N] [--bytes B]
#     --duration S  seconds per run (default 10)
#     --period US   the wake-up period in us (default 1000)
#     --prio N      the SCHED_FIFO priority (default 80)
#     --cpu N       the measured CPU (default: the last this process may use)
#     --runs N      runs of each tool per condition (default 2)
#     --bytes B     each of the 2 load workers' allocation (default 128M)
# Default total: 2 conditions x 2 tools x 2 runs x 10 s, about 90 s.
#
# The load, the same process for either tool, on every CPU this process may
# use but the measured one, started a second before the tool and stopped
# after it: Debian's `stress --vm 2 --vm-bytes B` (a byte every 4096
# written, then read back) where stress is installed (scripts/ensure-deps.sh
# installs it when it can), else `rtmem pressure --vm 2 --bytes B --stride
# 4096`. Each loaded row gives the load's page faults per second (and
# rtmem pressure's rounds), so that the loads beside the two tools can be
# compared.
#
# Per run: samples, lost (periods without a wake-up: rtmem's overruns;
# cyclictest's expected wake-ups, duration / period, less its samples, as
# it skips a missed period without counting it), min, p50, p99, p99.9, max
# in us, and `wait`, the time the measuring thread spent runnable but not
# running (/proc/PID/task/TID/schedstat). cyclictest's latencies come from
# its histogram (1 us buckets, truncated to whole us); percentiles are
# nearest-rank over every wake-up, as rtmem computes them. A wake-up above
# the histogram's range is counted in `>hist`; a percentile there is `>N`.
#
# Per condition, the mean over the runs of each figure, and whether the
# tools agree on it:
#   min, p50  within 1 us, rtmem's figures truncated to whole us first as
#             cyclictest's are (otherwise its buckets alone differ by 0.5 us)
#   p99       within 5 us or 20% of cyclictest's (the tail of a few runs)
#   lost      within 5 periods or 20%
# or, where a figure varies more than that from run to run of either tool
# (a virtual machine's), within twice the standard error of the difference
# of the two means, which more runs (--runs) narrow; said as such.
#
# A run is disturbed when another real-time task outside the kernel ran
# beside it (a watcher on the other CPUs notes every user-space process
# with a SCHED_FIFO or SCHED_RR thread), or when the measuring thread
# waited more than 5 ms to run within a tenth of a second (read every 0.1
# s): a task of its priority or higher held its CPU. (A wake-up costs a
# microsecond or so of such waiting; a virtual machine's stalls mostly fall
# while the thread sleeps, and show as latency and lost periods instead.) Its figures are then not the tool's, and the comparison
# fails with status 4; rerun on a quiet machine.
#
# Needs root (both tools ask for SCHED_FIFO and mlockall) and python3;
# installs rt-tests if cyclictest is missing (scripts/ensure-deps.sh).
# RTMEM names the rtmem binary (default build/tools/rtmem). Every temporary
# file lives in one directory removed on exit; every process started (the
# load's workers too) is stopped and waited for on exit, error, Ctrl-C or
# SIGTERM.
#
# Exit status: 0 the tools agree on every figure in both conditions, 1 they
# disagree on one, 2 bad usage, 3 the comparison could not run, 4 a run was
# disturbed.
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
sh scripts/ensure-deps.sh stress || die "scripts/ensure-deps.sh stress failed"
if command -v stress >/dev/null 2>&1 && command -v setsid >/dev/null 2>&1 &&
    command -v taskset >/dev/null 2>&1; then
    loader=stress
else
    loader=rtmem
fi

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
groups="" # the loads started in a session of their own: stress's workers

# Waits up to 5 s for process group $1 to end, then SIGKILLs what is left.
# shellcheck disable=SC2317 # also called by the EXIT trap
reap_group() {
    n=0
    while kill -0 "-$1" 2>/dev/null && [ "$n" -lt 50 ]; do
        sleep 0.1
        n=$((n + 1))
    done
    kill -KILL "-$1" 2>/dev/null
}

# Stops what is still running (SIGTERM: each tool then ends as a complete
# run), waits for it, SIGKILL after 5 s, and removes the directory.
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
    for g in $groups; do kill -TERM "-$g" 2>/dev/null; done
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
    for g in $groups; do reap_group "$g"; done
    pids=""
    groups=""
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
    wait "$1" 2>/dev/null || rc=$?
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
# last 2 s (a short run of another real-time tool is one of those). Every
# 0.1 s it also reads how long each real-time thread of the tool has waited
# to run (the second field of its schedstat, in ns); on SIGTERM it writes
# their sum and the most one of them waited between two readings, "wait NS
# WORST_NS", and ends. One process, no children.
cat > "$tmp/rt-watch.py" <<'EOF_WATCH'
import os, signal, sys, time

tool = sys.argv[1]
skip = {tool, str(os.getpid()), "2"}
waited = {}
read_at = {}
worst = 0  # the most it waited in a tenth of a second between two readings


def done(*_):
    print("wait %d %d" % (sum(waited.values()), worst), flush=True)
    sys.exit(0)


signal.signal(signal.SIGTERM, done)
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


def tool_waits():
    """The run-queue wait so far of each real-time thread of the tool, and
    the most it grew by since the last reading."""
    global worst
    try:
        tids = os.listdir("/proc/%s/task" % tool)
    except OSError:
        return
    for tid in tids:
        base = "/proc/%s/task/%s/" % (tool, tid)
        try:
            if policy_and_parent(base + "stat")[1]:
                with open(base + "schedstat") as f:
                    now = int(f.read().split()[1])
                t = time.monotonic()
                if tid in waited:
                    # per tenth of a second, however late this reading is
                    dt = max(0.1, t - read_at[tid])
                    worst = max(worst, int((now - waited[tid]) * 0.1 / dt))
                waited[tid] = now
                read_at[tid] = t
        except (OSError, ValueError, IndexError):
            pass


first_seen = {p: float("-inf") for p in os.listdir("/proc") if p.isdigit()}
seen = set()
n = 0
while True:
    now = time.monotonic()
    tool_waits()
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
# watcher and sets busy to the real-time tasks it saw ("-" for none) and
# waited to the measuring thread's run-queue wait in ns, "TOTAL WORST".
watch_rt() {
    start python3 "$tmp/rt-watch.py" "$1" "$others" > "$2"
    wpid=$!
}
unwatch_rt() {
    kill -TERM "$wpid" 2>/dev/null
    finish "$wpid"
    waited=$(sed -n 's/^wait //p' "$1")
    busy=$(grep -v '^wait ' "$1" | tr '\n' ' ')
    busy=${busy% }
    busy=${busy:--}
    waited=${waited:--}
}

# The load beside a run: $1 the file prefix. Sets lpid (the load's process,
# with stress the leader of its own session and process group), lstart.
load_start() {
    if [ "$loader" = stress ]; then
        start setsid taskset -c "$others" stress --vm 2 --vm-bytes "$bytes" --vm-stride 4096 \
            > "$1.txt" 2>&1
        lpid=$!
        groups="$groups $lpid"
    else
        start "$rtmem" pressure --vm 2 --bytes "$bytes" --stride 4096 --cpus "$others" \
            --duration $((duration + 10)) --json "$1.json" > "$1.txt" 2>&1
        lpid=$!
    fi
    lstart=$(date +%s.%N)
    sleep 1
    kill -0 "$lpid" 2>/dev/null || { cat "$1.txt" >&2; die "the load ended before the run started"; }
    if [ "$loader" = stress ]; then
        [ "$(ps -o sid= -p "$lpid" | tr -d ' ')" = "$lpid" ] ||
            die "stress did not start in a session of its own"
    fi
}

# Stops the load of load_start ($1 the same prefix): with stress, first the
# page faults of its workers so far and the seconds they ran, into $1.rate.
# Sets loadres to the file of the load's figures.
load_stop() {
    if [ "$loader" = stress ]; then
        faults=$(ps -o min_flt= --sid "$lpid" | awk '{ s += $1 } END { print s + 0 }')
        echo "$faults $(date +%s.%N) $lstart" > "$1.rate"
        kill -TERM "-$lpid" 2>/dev/null
        finish "$lpid"
        reap_group "$lpid"
        rest=""
        for g in $groups; do [ "$g" = "$lpid" ] || rest="$rest $g"; done
        groups=$rest
        loadres=$1.rate
    else
        kill -TERM "$lpid" 2>/dev/null
        finish "$lpid" || {
            cat "$1.txt" >&2
            die "rtmem pressure did not run as asked (status $rc)"
        }
        loadres=$1.json
    fi
}

manifest=$tmp/manifest
: > "$manifest"

# One run of a tool: $1 condition, $2 run number, $3 cyclictest or rtmem.
run_tool() {
    out=$tmp/$3-$1-$2
    load=-
    [ "$1" = pressure ] && load_start "$tmp/load-$3-$2"
    if [ "$3" = cyclictest ]; then
        start cyclictest -q -m -p "$prio" --policy=fifo -a "$cpu" --mainaffinity="$others" \
            -t 1 -i "$period" -D "$duration" -h "$hist_us" --histfile="$out.hist" \
            > "$out.txt" 2>&1
        result=$out.hist
    else
        start "$rtmem" latency --period "${period}us" --duration "$duration" --cpu "$cpu" \
            --prio "$prio" --json "$out.json" > "$out.txt" 2>&1
        result=$out.json
    fi
    tpid=$!
    watch_rt "$tpid" "$out.busy"
    finish "$tpid" || { cat "$out.txt" >&2; die "$3 failed (status $rc)"; }
    unwatch_rt "$out.busy"
    if [ "$1" = pressure ]; then
        load_stop "$tmp/load-$3-$2"
        load=$loadres
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$3" "$2" "$result" "$load" "$busy" \
        "$waited" "$out.txt" >> "$manifest"
}

total=$((2 * 2 * runs * duration))
echo "compare-cyclictest: period ${period} us, SCHED_FIFO $prio, cpu $cpu, ${duration} s a run," \
     "$runs runs of each tool per condition (about $((total + total / 8)) s)"
echo "  cyclictest: $(cyclictest --help 2>&1 | sed -n '1s/^cyclictest //p'), $(command -v cyclictest);" \
     "rtmem: $rtmem ($("$rtmem" --version 2>/dev/null))"
if [ "$loader" = stress ]; then
    echo "  load: taskset -c $others stress --vm 2 --vm-bytes $bytes --vm-stride 4096" \
         "($(command -v stress)), for both tools"
else
    echo "  load: $rtmem pressure --vm 2 --bytes $bytes --stride 4096 --cpus $others, for both" \
         "tools (stress is not installed)"
fi
echo "  load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  cyclictest -q -m -p $prio --policy=fifo -a $cpu --mainaffinity=$others -t 1" \
     "-i $period -D $duration -h $hist_us --histfile=FILE"
echo "  $rtmem latency --period ${period}us --duration $duration --cpu $cpu --prio $prio --json FILE"
for cond in idle pressure; do
    r=1
    while [ "$r" -le "$runs" ]; do
        echo "  $cond, run $r of $runs: cyclictest, then rtmem latency"
        run_tool "$cond" "$r" cyclictest
        run_tool "$cond" "$r" rtmem
        r=$((r + 1))
    done
done
echo

python3 - "$manifest" "$hist_us" "$duration" "$period" <<'EOF'
import json, math, sys

manifest, hist_us = sys.argv[1], int(sys.argv[2])
expected = int(sys.argv[3]) * 1000000 // int(sys.argv[4])  # wake-ups of a whole run
DISTURBED_WAIT_NS = 5000000  # in a tenth of a second


def rank(n, q):
    """The nearest rank (1-based) of the q-quantile among n values."""
    return min(n, max(1, math.ceil(q * n)))


def cyclictest_row(path, out):
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

    with open(out) as f:
        text = f.read()
    return {
        "samples": n, "hist_over": over, "lost": max(0, expected - n),
        "min": float(info["Min Latencies"].split()[0]) if n else None,
        "p50": pct(0.5), "p99": pct(0.99), "p999": pct(0.999), "max": mx if n else None,
        "dma0": "/dev/cpu_dma_latency set to 0us" in text,
    }


def rtmem_row(path, out):
    with open(path) as f:
        j = json.load(f)
    s = j["summary"]
    us = lambda v: None if v is None else v / 1000.0
    return {
        "samples": s["samples"], "hist_over": None, "lost": s["overruns"],
        "min": us(s["min_ns"]), "p50": us(s["p50_ns"]), "p99": us(s["p99_ns"]),
        "p999": us(s["p999_ns"]), "max": us(s["max_ns"]),
        "granted": j.get("real_time_granted"), "dma0": j["cpu_dma_latency"]["held"],
    }


def load_rate(path):
    """The load's (rounds or None, page faults) per second."""
    if path == "-":
        return None
    if path.endswith(".rate"):  # stress: "faults end start"
        with open(path) as f:
            faults, end, start = f.read().split()
        return None, int(faults) / max(1e-3, float(end) - float(start))
    with open(path) as f:
        j = json.load(f)
    t = j["totals"]
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
        cond, tool, run, path, load, busy, waited, out = line.rstrip("\n").split("\t")
        row = cyclictest_row(path, out) if tool == "cyclictest" else rtmem_row(path, out)
        waited, worst = (None, None) if waited == "-" else map(int, waited.split())
        row.update(cond=cond, tool=tool, run=int(run), load=load_rate(load), busy=busy,
                   waited=waited, worst=worst)
        row["disturbed"] = busy != "-" or (worst or 0) > DISTURBED_WAIT_NS
        rows.append(row)

print("all figures in us; cyclictest's truncated to whole us (1 us buckets)")
head = "%-9s %-10s %3s %8s %5s %5s %7s %7s %7s %7s %8s %7s %4s  %s" % (
    "condition", "tool", "run", "samples", "lost", ">hist", "min", "p50", "p99", "p99.9",
    "max", "wait", "dma0", "load faults/s (rounds/s)")
print(head)
print("-" * len(head))
for r in rows:
    if r["load"] is None:
        load = "-"
    else:
        load = "%.0f" % r["load"][1] + ("" if r["load"][0] is None else " (%.1f)" % r["load"][0])
    mark = "*" if r["disturbed"] else " "
    wait = "-" if r["waited"] is None else "%.1f" % (r["waited"] / 1000.0)
    print("%-9s %-10s %2d%s %8d %5s %5s %7s %7s %7s %7s %8s %7s %4s  %s" % (
        r["cond"], r["tool"], r["run"], mark, r["samples"], fmt(r["lost"]),
        fmt(r["hist_over"]), fmt(r["min"]), fmt(r["p50"]), fmt(r["p99"]), fmt(r["p999"]),
        fmt(r["max"]), wait, "yes" if r["dma0"] else "NO", load))
print("lost: periods without a wake-up; wait: the measuring thread's time runnable but not "
      "running, in all\n(a microsecond or so per wake-up is the kernel's own); dma0: "
      "/dev/cpu_dma_latency held at 0 for the run")
disturbed = [r for r in rows if r["disturbed"]]
if disturbed:
    busy = sorted({t for r in rows if r["busy"] != "-" for t in r["busy"].split()})
    print("* DISTURBED: %s" % "; ".join(
        "%s/%s/%d" % (r["cond"], r["tool"], r["run"]) for r in disturbed))
    if busy:
        print("  another real-time task ran beside it: %s" % ", ".join(busy))
    if any((r["worst"] or 0) > DISTURBED_WAIT_NS for r in disturbed):
        print("  or its measuring thread waited more than 5 ms in a tenth of a second to run: "
              "a task of its priority or higher held its CPU")
for r in rows:
    if r["tool"] == "rtmem" and r.get("granted") is False:
        print("rtmem run %s/%d: real-time NOT granted" % (r["cond"], r["run"]))
print()


def stats(v):
    """The mean of the figures in v and its standard error (0 for one run)."""
    v = [x for x in v if isinstance(x, (int, float))]
    if not v:
        return None, None
    m = sum(v) / len(v)
    if len(v) < 2:
        return m, 0.0
    var = sum((x - m) ** 2 for x in v) / (len(v) - 1)
    return m, math.sqrt(var / len(v))


def tolerance(fig, c):
    """The difference allowed on figure fig, cyclictest's mean c, and its
    rule."""
    if fig in ("min", "p50"):
        return 1.0, "1 us"
    return max(5.0, 0.2 * c), "5 us or 20%" if fig == "p99" else "5 or 20%"


status = 0
print("mean of the runs'   cyclictest      rtmem  (rtmem exact)  difference  2 x s.e.  verdict")
for cond in ("idle", "pressure"):
    for fig in ("min", "p50", "p99", "lost"):
        vals, ses = {}, {}
        for tool in ("cyclictest", "rtmem"):
            v = [r[fig] for r in rows if r["cond"] == cond and r["tool"] == tool]
            if tool == "rtmem" and fig in ("min", "p50", "p99"):
                vals["exact"] = stats(v)[0]
                v = [math.floor(x) if isinstance(x, float) else x for x in v]
            vals[tool], ses[tool] = stats(v)
        c, m = vals["cyclictest"], vals["rtmem"]
        name = "%s %s" % (cond, fig)
        if c is None or m is None:
            print("%-18s  no figure to compare: DISAGREE" % name)
            status = 1
            continue
        tol, rule = tolerance(fig, c)
        noise = 2 * math.sqrt(ses["cyclictest"] ** 2 + ses["rtmem"] ** 2)
        d = m - c
        if abs(d) <= tol:
            verdict = "agree (within %s)" % rule
        elif abs(d) <= noise:
            verdict = "agree within the runs' spread (not within %s)" % rule
        else:
            verdict = "DISAGREE (beyond %s and the spread)" % rule
            status = 1
        exact = "(%.2f)" % vals["exact"] if vals.get("exact") is not None else ""
        print("%-18s %11.1f %10.1f  %-13s %+10.1f %9.1f  %s" % (name, c, m, exact, d, noise,
                                                             verdict))
print("(rtmem's min, p50 and p99 truncated to whole us before the mean, as cyclictest's are;\n"
      " 2 x s.e.: twice the standard error of the difference of the means, from the runs' "
      "spread)")
if disturbed:
    print("the comparison FAILS: a run was disturbed (*); rerun on a quiet machine")
    status = 4
sys.exit(status)
EOF
exit $?
