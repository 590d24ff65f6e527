#!/bin/sh
# rtmem's benchmark suite: every tool on its defaults, then the report.
# make bench runs it after installing what is missing and building; an
# installed rtmem has it as <prefix>/share/rtmem/bench.sh, to run where
# nothing is built or installed, a board (docs/targets.md, "On a board").
#
#   bench.sh [--quick] [RESULTS]
#
# RESULTS (default results/) gets each run's report (.txt) and JSON; the
# report goes to RESULTS/report/. --quick runs each tool's quick variant
# (a smoke test: seconds, not minutes; its figures mean little).
# Environment: RTMEM, the rtmem command (default: the one installed beside
# this script, else rtmem on PATH); RTMEM_CONTROL_LOOP, the example control
# loop traced and replayed (default: beside this script's install,
# libexec/rtmem/control_loop). What the machine lacks is left out with one
# line each: valgrind (wcet's counts), a JDK (shm's Java contender),
# Python with matplotlib (the report: draw it elsewhere, rtmem report DIR).
#
# Exit status: 0; 1 when a tool failed (the first one stops the suite,
# except bench's verdict of failure, which lets the others and the report
# run and is the status at the end); 2 bad usage; 130 interrupted.
set -u
quick=""
if [ "${1:-}" = "--quick" ]; then
    quick=--quick
    shift
fi
case "${1:-}" in
-h | --help)
    sed -n '2,/^set -u/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
    exit 0
    ;;
-*)
    echo "bench.sh: unknown option $1 (bench.sh [--quick] [RESULTS])" >&2
    exit 2
    ;;
esac
[ $# -le 1 ] || { echo "bench.sh: one results directory at most" >&2; exit 2; }
results=${1:-results}
st=""
err=""
trap 'rm -f "$st" "$err"' EXIT
trap 'exit 130' INT TERM

here=$(cd "$(dirname "$0")" && pwd)
prefix=$(cd "$here/../.." && pwd)
if [ -z "${RTMEM:-}" ]; then
    if [ -x "$prefix/bin/rtmem" ]; then RTMEM=$prefix/bin/rtmem; else RTMEM=rtmem; fi
fi
loop=${RTMEM_CONTROL_LOOP:-$prefix/libexec/rtmem/control_loop}
mkdir -p "$results" || exit 1

# One tool: its report to RESULTS/NAME.txt, then to the terminal (or only
# its summary, for memcheck); the suite stops when it fails.
step() { # NAME RTMEM-ARGS...
    name=$1
    shift
    "$RTMEM" "$@" --json "$results/$name.json" >"$results/$name.txt"
    status=$?
    if [ "$name" = memcheck ]; then
        sed -n '/^== summary/,$p' "$results/$name.txt"
    else
        cat "$results/$name.txt"
    fi
    if [ $status -ne 0 ]; then
        echo "bench.sh: rtmem $1 failed (exit status $status): $results/$name.txt" >&2
        exit $status
    fi
}

# bench first, as it goes, to the terminal and its file; its verdict of
# failure (status 1) is kept for the end.
bench_status=0
st=$(mktemp) || exit 1
{ "$RTMEM" bench $quick --json "$results/bench.json"; echo $? >"$st"; } | tee "$results/bench.txt"
bench_status=$(cat "$st")
case $bench_status in
0 | 1) ;;
*) echo "bench.sh: rtmem bench failed (exit status $bench_status)" >&2; exit "$bench_status" ;;
esac

step memcheck memcheck $quick
command -v valgrind >/dev/null 2>&1 ||
    echo "bench.sh: no valgrind here: wcet times its scenarios and counts nothing"
step wcet wcet $quick
step latency latency $quick
step latency-noise latency --noise $quick
step latency-pressure latency --pressure vm=2,bytes=128M,stride=4096 $quick
step pressure pressure $quick
step latency-sweep latency --sweep --quick
step stride stride $quick
step bw bw $quick
java=--java
if ! command -v java >/dev/null 2>&1; then
    java=""
    echo "bench.sh: no JDK here: shm runs without its Java contender"
fi
step shm shm $java --dir "$results" $quick

# A program's allocations, from recording to verdict: the example control
# loop traced unmodified, its loop replayed on every kind, then run on the
# kind and pool the replay advised, and on glibc-rt beside it.
if [ -x "$loop" ]; then
    "$RTMEM" trace -o "$results/control_loop.trace" --json "$results/trace.json" -- "$loop" \
        >"$results/trace.txt"
    status=$?
    cat "$results/trace.txt"
    [ $status -eq 0 ] || { echo "bench.sh: rtmem trace failed (exit status $status)" >&2; exit $status; }
    step replay replay --phase loop $quick "$results/control_loop.trace"
    # the advice, from the verdict's one-line "advised" object (null: none)
    advice=$(grep '"advised": {' "$results/replay.json" | head -n 1)
    kind=$(printf '%s' "$advice" | sed -n 's/.*"kind": "\([^"]*\)".*/\1/p')
    origin=$(printf '%s' "$advice" | sed -n 's/.*"origin": "\([^"]*\)".*/\1/p')
    pool=$(printf '%s' "$advice" | sed -n 's/.*"pool": \([0-9][0-9]*\).*/\1/p')
    set --
    if [ -n "$kind" ] && [ -n "$pool" ] && [ "$origin" = rtmem ]; then
        set -- --kind "$kind" --pool "$pool"
        # xvheap and zsheap serve no block above a page's: the program's
        # others (its set-up's) go to the C library
        case "$kind" in xvheap | zsheap) set -- "$@" --on-full fallback ;; esac
    fi
    "$RTMEM" run "$@" --json "$results/run.json" -- "$loop" 2>"$results/run.txt"
    status=$?
    cat "$results/run.txt"
    [ $status -eq 0 ] || { echo "bench.sh: rtmem run failed (exit status $status)" >&2; exit $status; }
    "$RTMEM" run --kind glibc-rt --json "$results/run-glibc-rt.json" -- "$loop" \
        2>"$results/run-glibc-rt.txt"
    status=$?
    cat "$results/run-glibc-rt.txt"
    [ $status -eq 0 ] || { echo "bench.sh: rtmem run failed (exit status $status)" >&2; exit $status; }
else
    echo "bench.sh: no example control loop at $loop: trace, replay and run left out"
fi
# The pool each kind needs so that no allocation within stated limits fails.
step size size --max-live 64K --max-block 4K --min-block 16 --adversaries

# The report: where this machine can draw it (Python with matplotlib).
err=$(mktemp) || exit 1
if "$RTMEM" report "$results" -o "$results/report" 2>"$err"; then
    echo "report:  $results/report/index.html: open it in a browser,"
    echo "         file://$(cd "$results/report" && pwd)/index.html (xdg-open it on a desktop)"
elif grep -q "cannot draw\|cannot run" "$err"; then
    sed 's/^/  /' "$err"
    echo "bench.sh: no Python with matplotlib here: the report is left out; copy $results/"
    echo "          to a machine with one and run rtmem report there (docs/report.md)"
else
    cat "$err" >&2
    echo "bench.sh: rtmem report failed" >&2
    exit 1
fi
echo "results: $results/*.txt, $results/*.json"
if [ "$bench_status" = 1 ]; then
    echo "bench.sh: FAILED: rtmem bench's verdict was a failure (exit status 1):" \
        "$results/bench.txt says why (an allocator failed, or a target not met)"
    exit 1
fi
exit 0
