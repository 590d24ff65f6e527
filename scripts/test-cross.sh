#!/bin/sh
# make test-cross: every test of the arm64 and armv7 cross builds under
# qemu-user (docs/targets.md).
#
# usage: scripts/test-cross.sh BUILD JOBS
#   BUILD  the build directory's prefix: the builds are BUILD-arm64 and
#          BUILD-armv7 (make cross)
#   JOBS   ctest -j
#   RTMEM_CROSS_TESTS=REGEX in the environment runs only the tests it
#   matches (ctest -R), on both targets.
#   RTMEM_CROSS_PYTEST="arm64 armv7" (the default) names the targets that
#   run the rtmem command's end-to-end tests (label pytest); the others
#   leave them out (ctest -LE pytest); empty, none runs them. CI runs them
#   on armv7 only. Another word is refused (exit status 2).
#
# CTest starts each test program under qemu (the toolchain files name it),
# but many tests start target programs themselves (the tools' Python tests,
# the README's blocks, the consumers): the kernel hands those to qemu
# through binfmt_misc. Where the system has no enabled qemu-aarch64 or
# qemu-arm entry, this script (as root) registers its own, under a name of
# this run (rtmem-qemu-aarch64-PID), from Debian's qemu-user-static
# (/usr/lib/binfmt.d), mounting binfmt_misc first if it is not; on exit (and
# on Ctrl-C) it removes exactly those, and unmounts what it mounted. It
# never enables, disables or removes an entry of the system's, so a run
# beside it is not disturbed.
#
# Without binfmt (not root, no binfmt_misc, no qemu-user-static) only the
# tests that start no target program run, and the script says which it left
# out; with RTMEM_CROSS_REQUIRE_BINFMT=1 (CI) that is an error instead.
#
# Tests that qemu-user cannot support (robust futexes, the kernel's view
# of a mapping, terabytes of address space) skip themselves or those
# checks, saying why.
set -eu
build=$1
jobs=$2
# The targets that run the end-to-end tests (RTMEM_CROSS_PYTEST, above).
pytest_on=${RTMEM_CROSS_PYTEST-arm64 armv7}
for word in $pytest_on; do
    case $word in
    arm64 | armv7) ;;
    *)
        echo "test-cross: RTMEM_CROSS_PYTEST=\"$pytest_on\": $word is no target (arm64, armv7)" >&2
        exit 2
        ;;
    esac
done
bm=/proc/sys/fs/binfmt_misc
undo="" # what to undo on exit, one action per line
mounted=no

restore() {
    printf '%s\n' "$undo" | while read -r name; do
        [ -n "$name" ] && { echo -1 > "$bm/$name"; } 2>/dev/null || true
    done
    if [ "$mounted" = yes ]; then umount "$bm" 2>/dev/null || true; fi
}
trap restore EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# Sets why (empty when binfmt hands both architectures to qemu).
setup_binfmt() {
    why=""
    if [ ! -e "$bm/register" ]; then
        if [ "$(id -u)" != 0 ]; then
            why="binfmt_misc is not mounted, and mounting it needs root"
            return
        fi
        if ! mount -t binfmt_misc binfmt_misc "$bm" 2>/dev/null; then
            why="binfmt_misc cannot be mounted here"
            return
        fi
        mounted=yes
    fi
    if ! grep -q enabled "$bm/status" 2>/dev/null; then
        why="binfmt_misc is disabled ($bm/status)"
        return
    fi
    for name in qemu-aarch64 qemu-arm; do
        if [ -e "$bm/$name" ] && head -n 1 "$bm/$name" | grep -q enabled; then
            continue # the system's own entry
        fi
        conf=/usr/lib/binfmt.d/$name.conf
        if [ ! -r "$conf" ]; then
            why="no enabled $name entry, and no $conf (Debian's qemu-user-static:"
            why="$why scripts/ensure-deps.sh qemu)"
            return
        fi
        ours=rtmem-$name-$$
        undo="$undo
$ours" # recorded first: a signal between the two still removes it
        if ! { sed "s/^:[^:]*:/:$ours:/" "$conf" > "$bm/register"; } 2>/dev/null; then
            why="no enabled $name entry, and registering one needs root"
            return
        fi
    done
}

setup_binfmt
if [ -z "$why" ]; then
    # The proof: a target program started the way the tests start them.
    for arch in arm64 armv7; do
        prefix=/usr/aarch64-linux-gnu
        [ "$arch" = armv7 ] && prefix=/usr/arm-linux-gnueabihf
        if ! QEMU_LD_PREFIX=$prefix "$build-$arch/tools/rtmem" --version >/dev/null 2>&1; then
            why="binfmt_misc is set up, but $build-$arch/tools/rtmem does not start through it"
        fi
    done
fi

# The tests that start no target program (CTest starts each under qemu).
noexec='public_headers|exported_symbols|conformance\.(model|fill|pools|bad|relocate)|tlsf'
noexec="$noexec|fuzz_replay|overflow\..*|lock\.conformance\..*|lock\.(layout|undo|pi|robust)"
noexec="$noexec|lock\.threads\..*|validate\..*|tree|arena\..*|shared\..*"
noexec="$noexec|tools\.(samples|json|rng|opt|cacheops|perf|describe|cleanup|kinds|tool|speed)"
arm64_only=""
armv7_only=""
if [ -n "$why" ]; then
    if [ "${RTMEM_CROSS_REQUIRE_BINFMT:-0}" = 1 ]; then
        echo "test-cross: $why; the whole suite cannot run (RTMEM_CROSS_REQUIRE_BINFMT=1)" >&2
        exit 1
    fi
    echo "test-cross: $why."
    echo "test-cross: running only the tests that start no target program; left out: the"
    echo "  tools' tests (tools.bench, ...), the README's blocks and the consumers (docs/targets.md)"
    arm64_only="^($noexec|pageheap|conformance\.big)\$"
    armv7_only="^($noexec|pageheap|conformance\.big)\$"
else
    echo "test-cross: binfmt_misc hands ARM programs to qemu: the whole suite runs"
fi
# RTMEM_CROSS_TESTS: a ctest -R of the tests to run, for a developer's run.
if [ -n "${RTMEM_CROSS_TESTS:-}" ]; then
    arm64_only=${arm64_only:+$arm64_only|}$RTMEM_CROSS_TESTS
    armv7_only=${armv7_only:+$armv7_only|}$RTMEM_CROSS_TESTS
fi


# ctest for target $1 in build directory $2 with the arguments after it,
# -R $3 when $3 is not empty, and -LE pytest when $1 is not in pytest_on.
run_ctest() {
    arch=$1
    dir=$2
    only=$3
    shift 3
    if [ -n "$only" ]; then set -- "$@" -R "$only"; fi
    case " $pytest_on " in
    *" $arch "*) ;;
    *)
        echo "test-cross: $arch leaves out the rtmem command's end-to-end tests" \
            "(RTMEM_CROSS_PYTEST=\"$pytest_on\")"
        set -- "$@" -LE pytest
        ;;
    esac
    (cd "$dir" && ctest --output-on-failure -j "$jobs" --timeout 900 "$@")
}

rc=0
echo "=== arm64 (qemu-aarch64)"
run_ctest arm64 "$build-arm64" "$arm64_only" || rc=1
echo "=== armv7 (qemu-arm)"
run_ctest armv7 "$build-armv7" "$armv7_only" || rc=1
exit $rc
