#!/bin/sh
# The path a board user takes (docs/targets.md, "On a board"), for a cross
# build under qemu-user: the build installed into a staging directory
# (DESTDIR), the staged tree alone run as a board runs it (its bench.sh
# --quick, with a PATH of a few shell utilities: no compiler, valgrind, JDK
# or Python), then the results brought back and drawn on this machine with
# the source tree's report package and its .venv (skipped, saying so,
# where the .venv has no matplotlib).
#   board_path.sh SOURCE_DIR BUILD_DIR
set -eu
src=$1
build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

DESTDIR="$tmp/stage" cmake --install "$build" >/dev/null
suite=$(find "$tmp/stage" -path '*/share/rtmem/bench.sh')
[ -n "$suite" ] || { echo "board_path: no share/rtmem/bench.sh in the staged install"; exit 1; }
prefix=${suite%/share/rtmem/bench.sh}
for f in bin/rtmem libexec/rtmem/control_loop; do
    [ -x "$prefix/$f" ] || { echo "board_path: no $f in the staged install"; exit 1; }
done

# The board's PATH: the utilities bench.sh itself uses, nothing else.
mkdir "$tmp/bin"
for u in sh cat sed grep head tee mktemp mkdir rm dirname; do
    ln -s "$(command -v $u)" "$tmp/bin/$u"
done
set +e
env -i PATH="$tmp/bin" HOME="$tmp" QEMU_LD_PREFIX="${QEMU_LD_PREFIX:-}" \
    sh "$suite" --quick "$tmp/results" >"$tmp/suite.log" 2>&1
status=$?
set -e
if [ $status -ne 0 ] && ! { [ $status -eq 1 ] &&
    grep -q "FAILED: rtmem bench's verdict was a failure" "$tmp/suite.log"; }; then
    echo "board_path: the staged bench.sh failed (exit status $status):"
    tail -n 30 "$tmp/suite.log"
    exit 1
fi
for name in bench memcheck wcet latency latency-noise latency-pressure pressure latency-sweep \
    stride bw shm trace replay run run-glibc-rt size; do
    [ -s "$tmp/results/$name.json" ] || { echo "board_path: no $name.json"; tail -n 30 "$tmp/suite.log"; exit 1; }
done
for said in "no valgrind here" "no JDK here" "no Python with matplotlib here"; do
    grep -q "$said" "$tmp/suite.log" || { echo "board_path: the suite never said '$said'"; exit 1; }
done
[ ! -e "$tmp/results/report" ] || { echo "board_path: a report was drawn without Python"; exit 1; }

# Back on the workstation: the report from the results alone.
python="$src/.venv/bin/python"
if [ -x "$python" ] && "$python" -c 'import matplotlib' >/dev/null 2>&1; then
    "$python" "$src/report/run.py" "$tmp/results" -o "$tmp/report" -q
    [ -s "$tmp/report/index.html" ] || { echo "board_path: no report drawn from the results"; exit 1; }
    echo "board_path: staged suite ran (exit status $status), report drawn here from its results"
else
    echo "board_path: staged suite ran (exit status $status); no matplotlib in $src/.venv:" \
         "the report from its results not drawn"
fi
