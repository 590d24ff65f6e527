#!/bin/sh
# The page-heap study (docs/pages.md, "The study, reproduced"): what each
# allocator costs against request size and how much memory it holds,
# redone on this machine in one command (make study).
#
#   study.sh [--quick] [DIR]
#
# DIR (default results/study) gets, each as its .txt and .json:
#   bench.json     rtmem bench --sweep-only: alloc+free time in 64-byte
#                  buckets from 0 to 10 KiB, then in 1 KiB wide ranges to
#                  8 KiB, each run 20 times with its spread; every rtmem
#                  kind, glibc and the peers that load (jemalloc, mimalloc,
#                  tcmalloc, rpmalloc);
#   memcheck.json  rtmem memcheck's churn on a 16 MiB heap half full of
#                  16 to 4000-byte blocks: memory held against memory used
#                  over growth, a million operations and a drain;
# and DIR/report/index.html draws them (rtmem report). --quick: a smoke
# test (seconds; its figures mean little).
# Environment: RTMEM, the rtmem command (default: the one installed beside
# this script, else rtmem on PATH).
# Exit status: 0; 1 when a tool failed (its verdict: an allocator that
# failed is in its results, and the others still run) or could not run
# (the study stops there); 2 bad usage; 130 interrupted.
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
    echo "study.sh: unknown option $1 (study.sh [--quick] [DIR])" >&2
    exit 2
    ;;
esac
[ $# -le 1 ] || { echo "study.sh: one results directory at most" >&2; exit 2; }
dir=${1:-results/study}
stamp=""
trap 'rm -f "$stamp"' EXIT
trap 'exit 130' INT TERM

here=$(cd "$(dirname "$0")" && pwd)
prefix=$(cd "$here/../.." && pwd)
if [ -z "${RTMEM:-}" ]; then
    if [ -x "$prefix/bin/rtmem" ]; then RTMEM=$prefix/bin/rtmem; else RTMEM=rtmem; fi
fi
mkdir -p "$dir" || exit 1
# older than every result this run writes: a result file not newer than it
# is a previous run's (each tool writes its JSON to a temporary file and
# renames it into place; none is removed here)
stamp=$(mktemp "${TMPDIR:-/tmp}/rtmem-study.XXXXXX") || exit 1
kinds=$("$RTMEM" kinds | tr '\n' ',')
all="${kinds}glibc,jemalloc,mimalloc,tcmalloc,rpmalloc"

verdict=0
# One tool: its report to DIR/NAME.txt and the terminal. A verdict of
# failure (exit status 1, its results written) is kept for the end; any
# other failure stops the study.
step() { # NAME RTMEM-ARGS...
    name=$1
    shift
    echo "== rtmem $*"
    "$RTMEM" "$@" --json "$dir/$name.json" >"$dir/$name.txt"
    status=$?
    cat "$dir/$name.txt"
    if [ $status -eq 1 ] && [ "$dir/$name.json" -nt "$stamp" ]; then
        echo "study.sh: rtmem $1 failed its verdict (above); the study goes on" >&2
        verdict=1
    elif [ $status -ne 0 ]; then
        echo "study.sh: rtmem $1 failed (exit status $status)" >&2
        exit 1
    fi
}

step bench bench $quick --sweep-only --kinds "$all"
step memcheck memcheck $quick --phases churn --churn-heap-size 16M --churn-max-size 4000 \
    --kinds "$all"
"$RTMEM" report "$dir" -o "$dir/report" || {
    echo "study.sh: the report could not be drawn (rtmem report $dir says why)" >&2
    exit 1
}
exit $verdict
