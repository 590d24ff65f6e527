#!/bin/sh
# make test-cross: every test of the arm64 and armv7 cross builds under
# qemu-user (docs/targets.md).
#
# usage: scripts/test-cross.sh BUILD JOBS
#   BUILD  the build directory's prefix: the builds are BUILD-arm64 and
#          BUILD-armv7 (make cross)
#   JOBS   ctest -j
#
# CTest starts each test program under qemu (the toolchain files name it),
# but many tests start target programs themselves (the tools' Python tests,
# the README's blocks, the consumers): the kernel hands those to qemu
# through binfmt_misc. As root, this script mounts binfmt_misc if it is not,
# and registers or enables the qemu-aarch64 and qemu-arm entries of Debian's
# qemu-user-static where they are missing or disabled; on exit (and on
# Ctrl-C) it undoes exactly what it did, so the machine is left as it was.
#
# Without binfmt (not root, no binfmt_misc, no qemu-user-static) only the
# tests that start no target program run, and the script says which it left
# out; with RTMEM_CROSS_REQUIRE_BINFMT=1 (CI) that is an error instead.
#
# Left out on purpose, with the reason: on arm64 the page heaps' test and
# the big pools (heapmem's page map over a 5 GiB pool takes minutes under
# qemu; they run on x86-64 and armv7). Tests that qemu-user cannot support
# (robust futexes, the kernel's view of a mapping) skip themselves, saying
# why.
set -euf # no globbing: the test patterns are passed unquoted
build=$1
jobs=$2
bm=/proc/sys/fs/binfmt_misc
undo="" # what to undo on exit, one action per line
mounted=no

restore() {
    printf '%s\n' "$undo" | while read -r action name; do
        case "$action" in
        disable) echo 0 > "$bm/$name" 2>/dev/null || true ;;
        remove) echo -1 > "$bm/$name" 2>/dev/null || true ;;
        esac
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
    for name in qemu-aarch64 qemu-arm; do
        if [ -e "$bm/$name" ]; then
            if head -n 1 "$bm/$name" | grep -q disabled; then
                if ! { echo 1 > "$bm/$name"; } 2>/dev/null; then
                    why="the $name entry is disabled, and enabling it needs root"
                    return
                fi
                undo="$undo
disable $name"
            fi
            continue
        fi
        conf=/usr/lib/binfmt.d/$name.conf
        if [ ! -r "$conf" ]; then
            why="no $conf (Debian's qemu-user-static: scripts/ensure-deps.sh qemu)"
            return
        fi
        if ! { cat "$conf" > "$bm/register"; } 2>/dev/null; then
            why="registering $name needs root"
            return
        fi
        undo="$undo
remove $name"
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
noexec="$noexec|tools\.(samples|json|rng|opt|cacheops|perf|describe|cleanup|kinds|tool)"
if [ -n "$why" ]; then
    if [ "${RTMEM_CROSS_REQUIRE_BINFMT:-0}" = 1 ]; then
        echo "test-cross: $why; the whole suite cannot run (RTMEM_CROSS_REQUIRE_BINFMT=1)" >&2
        exit 1
    fi
    echo "test-cross: $why."
    echo "test-cross: running only the tests that start no target program; left out: the"
    echo "  tools' tests (tools.bench, ...), the README's blocks and the consumers (docs/targets.md)"
    arm64_only="-R ^($noexec)\$"
    armv7_only="-R ^($noexec|pageheap|conformance\.big)\$"
else
    echo "test-cross: binfmt_misc hands ARM programs to qemu: the whole suite runs"
    arm64_only=""
    armv7_only=""
fi

rc=0
echo "=== arm64 (qemu-aarch64)"
(cd "$build-arm64" && ctest --output-on-failure -j "$jobs" --timeout 900 \
    -E '^(pageheap|conformance\.big)$' $arm64_only) || rc=1
echo "=== armv7 (qemu-arm)"
(cd "$build-armv7" && ctest --output-on-failure -j "$jobs" --timeout 900 $armv7_only) || rc=1
exit $rc
