#!/bin/sh
# Installs what building and testing rtmem needs, only what is missing.
# Idempotent: a second run installs nothing.
#   ensure-deps.sh [clang] [format] [fuzz] [sanitizers] [peers] [rt-tests] [stress] [java] [valgrind]
#                  [report] [chromium] [cross] [qemu] [i686]
#     clang  also the clang compiler (CI)
#     format clang-format 19, the one version .clang-format is written for
#            (make format, make format-check): Debian's clang-format-19
#     fuzz   clang and its libFuzzer runtime (make fuzz): Debian installs the
#            runtime (libclang-rt-N-dev) only as a recommendation, which this
#            script does not follow, so it test-links a fuzzer and installs
#            the runtime when that fails
#     sanitizers clang and its UndefinedBehaviorSanitizer and ThreadSanitizer
#            runtimes (make test-ubsan, make test-tsan): the same runtime
#            package, installed when clang cannot link a program with them
#     peers  also the allocators `rtmem memcheck` compares with: jemalloc,
#            mimalloc, tcmalloc (make bench). Optional: when they cannot be
#            installed (no apt-get, neither root nor sudo without a password,
#            no network) it says so and succeeds; memcheck then runs without
#            them and says which it skipped.
#     rt-tests cyclictest, which scripts/compare-cyclictest.sh measures
#            `rtmem latency` against (make compare-cyclictest): Debian's
#            rt-tests
#     stress Debian's stress, the load scripts/compare-cyclictest.sh puts
#            beside both tools. Optional, like peers: without it the script
#            uses rtmem pressure as the load of both, and says so.
#     java   a JDK (javac and java), for `rtmem shm --java` and its test
#            (tools.shm_java): Debian's openjdk-17-jdk-headless, unless a
#            javac is on PATH or in $JAVA_HOME/bin. Optional, like peers:
#            when it cannot be installed it says so and succeeds; the Java
#            contender is then skipped with a message.
#     valgrind valgrind, whose callgrind counts the instructions, branches
#            and cache lines of `rtmem wcet`'s scenarios (make bench, and
#            tools.wcet's instruction ceilings in make test). Optional, like
#            peers: without it rtmem wcet says why nothing was counted, and
#            the ceiling test says it was skipped.
#     report matplotlib and what it needs, at the versions pinned in
#            report/requirements.txt, in the project's own virtual
#            environment .venv/ (never system-wide), which `rtmem report`
#            uses (make bench, and tools.report in make test). Remade only
#            when requirements.txt changes (a copy is kept in .venv/).
#            Optional, like peers: without network it says so and succeeds;
#            rtmem report then says what is missing, and tools.report that
#            it was skipped.
#     cross  Debian's cross compilers for arm64 and 32-bit ARM (gcc and g++
#            aarch64-linux-gnu and arm-linux-gnueabihf, with their C
#            libraries), for make cross (cmake/toolchain-*.cmake)
#     i686   Debian's gcc and g++ for i686-linux-gnu (make test-i686: 32-bit
#            x86 programs run as they are on x86-64)
#     qemu   Debian's qemu-user, which runs the cross builds' tests (make
#            test-cross: CTest starts each test program under it), and
#            qemu-user-static, whose binfmt_misc entries hand qemu the
#            target programs those tests start (scripts/test-cross.sh)
#     chromium Debian's chromium, the browser tools.report renders the
#            report in (headless) to check that every plot loads. Optional,
#            like peers: without it that check says it was skipped.
set -eu
need=""
want=""
want_java=""
want_stress=""
want_valgrind=""
want_chromium=""
want_report=no
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv"
check_fuzz=no
check_san=no
command -v cmake >/dev/null 2>&1 || need="$need cmake"
command -v cc >/dev/null 2>&1 || need="$need gcc"
command -v g++ >/dev/null 2>&1 || need="$need g++" # the public headers are tested as C++ too
command -v make >/dev/null 2>&1 || need="$need make"
command -v pkg-config >/dev/null 2>&1 || need="$need pkg-config"
command -v python3 >/dev/null 2>&1 || need="$need python3" # the tool tests read JSON with it
# a real program from Debian's packages, which the replay tests trace
command -v sqlite3 >/dev/null 2>&1 || need="$need sqlite3"
# ... and are pytest cases: Debian's for Debian's python3, pip's for another
# (a pyenv or a virtual environment first on PATH).
want_pytest=no
python3 -c 'import pytest' >/dev/null 2>&1 || want_pytest=yes
# the Debian package's library dependencies (make deb, the deb_package test)
if command -v dpkg >/dev/null 2>&1; then
    command -v dpkg-shlibdeps >/dev/null 2>&1 || need="$need dpkg-dev"
fi
if [ "$want_pytest" = yes ] && [ "$(command -v python3)" = /usr/bin/python3 ]; then
    need="$need python3-pytest"
    want_pytest=no
fi

# Is clang-format 19 here, under its versioned name or as plain clang-format?
has_clang_format_19() {
    command -v clang-format-19 >/dev/null 2>&1 && return 0
    command -v clang-format >/dev/null 2>&1 &&
        clang-format --version | grep -q 'clang-format version 19\.'
}

# Is a shared library in the dynamic linker's cache (what dlopen finds)?
has_lib() {
    { ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null; } | grep -q "$1"
}

for arg in "$@"; do
    case "$arg" in
    clang) command -v clang >/dev/null 2>&1 || need="$need clang" ;;
    format) has_clang_format_19 || need="$need clang-format-19" ;;
    fuzz)
        command -v clang >/dev/null 2>&1 || need="$need clang"
        check_fuzz=yes
        ;;
    sanitizers)
        command -v clang >/dev/null 2>&1 || need="$need clang"
        check_san=yes
        ;;
    rt-tests) command -v cyclictest >/dev/null 2>&1 || need="$need rt-tests" ;;
    stress) command -v stress >/dev/null 2>&1 || want_stress=stress ;;
    peers)
        # Debian package : the library memcheck loads
        for p in libjemalloc2:libjemalloc.so.2 libmimalloc2.0:libmimalloc.so.2 \
                 libtcmalloc-minimal4:libtcmalloc_minimal.so.4; do
            has_lib "${p#*:}" || want="$want ${p%%:*}"
        done
        ;;
    java)
        if ! command -v javac >/dev/null 2>&1 &&
           ! { [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/javac" ]; }; then
            want_java="openjdk-17-jdk-headless"
        fi
        ;;
    valgrind) command -v valgrind >/dev/null 2>&1 || want_valgrind="valgrind" ;;
    chromium) command -v chromium >/dev/null 2>&1 || want_chromium="chromium" ;;
    qemu)
        command -v qemu-aarch64 >/dev/null 2>&1 && command -v qemu-arm >/dev/null 2>&1 ||
            need="$need qemu-user"
        # the binfmt_misc entries (and their static interpreters) that
        # scripts/test-cross.sh registers
        [ -r /usr/lib/binfmt.d/qemu-aarch64.conf ] && [ -r /usr/lib/binfmt.d/qemu-arm.conf ] ||
            need="$need qemu-user-static"
        ;;
    cross)
        for t in aarch64-linux-gnu arm-linux-gnueabihf; do
            command -v "$t-gcc" >/dev/null 2>&1 || need="$need gcc-$t"
            command -v "$t-g++" >/dev/null 2>&1 || need="$need g++-$t"
        done
        ;;
    i686)
        command -v i686-linux-gnu-gcc >/dev/null 2>&1 || need="$need gcc-i686-linux-gnu"
        command -v i686-linux-gnu-g++ >/dev/null 2>&1 || need="$need g++-i686-linux-gnu"
        ;;
    report)
        cmp -s "$root/report/requirements.txt" "$venv/rtmem-requirements.txt" 2>/dev/null ||
            want_report=yes
        ;;
    *) echo "ensure-deps: unknown extra '$arg'" >&2; exit 2 ;;
    esac
done
# Does clang link a program built with these -fsanitize= flags here?
clang_links() {
    dir=$(mktemp -d)
    printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' > "$dir/f.c"
    [ "$1" = fuzzer ] || printf 'int main(void) { return 0; }\n' >> "$dir/f.c"
    clang "-fsanitize=$1" -o "$dir/f" "$dir/f.c" >/dev/null 2>&1
    rc=$?
    rm -rf "$dir"
    return $rc
}
fuzz_links() { clang_links fuzzer; }
sanitizers_link() { clang_links undefined && clang_links thread; }

[ -z "$need$want$want_java$want_stress$want_valgrind$want_chromium" ] && [ "$check_fuzz" = no ] &&
    [ "$check_san" = no ] && [ "$want_report" = no ] && [ "$want_pytest" = no ] && exit 0

can_apt=yes
command -v apt-get >/dev/null 2>&1 || can_apt=no
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else can_apt=no; fi
fi
export DEBIAN_FRONTEND=noninteractive

if [ -n "$need" ]; then
    echo "ensure-deps: installing:$need"
    if [ "$can_apt" = no ]; then
        echo "ensure-deps: no apt-get here, or not root and no sudo; please install:$need" >&2
        exit 1
    fi
    $sudo apt-get update -qq
    # shellcheck disable=SC2086
    $sudo apt-get install -y -qq --no-install-recommends $need >/dev/null
fi

if [ "$want_pytest" = yes ]; then
    echo "ensure-deps: installing pytest for $(command -v python3)"
    python3 -m pip install -q --disable-pip-version-check --no-input 'pytest>=7,<10' ||
        { echo "ensure-deps: please install pytest for $(command -v python3)" >&2; exit 1; }
fi

# clang's runtime for -fsanitize=$1 (checked by the function $2), installed
# when missing: libclang-rt-N-dev, which Debian installs only as a
# recommendation of clang.
clang_runtime() {
    major=$(clang --version | sed -n 's/.*clang version \([0-9][0-9]*\).*/\1/p' | head -n 1)
    echo "ensure-deps: installing clang's $1 runtime: libclang-rt-$major-dev"
    if [ "$can_apt" = no ] || [ -z "$major" ]; then
        echo "ensure-deps: cannot install it here; please install libclang-rt-$major-dev" >&2
        exit 1
    fi
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends "libclang-rt-$major-dev" >/dev/null
    $2 || { echo "ensure-deps: clang still cannot link with -fsanitize=$1" >&2; exit 1; }
}
if [ "$check_fuzz" = yes ] && ! fuzz_links; then clang_runtime fuzzer fuzz_links; fi
if [ "$check_san" = yes ] && ! sanitizers_link; then
    clang_runtime undefined,thread sanitizers_link
fi

# Installs optional packages $1 ("what they are for" in $2): on failure it
# says so, ending with $3 (what runs without them), and goes on.
optional() {
    echo "ensure-deps: installing $2:$1"
    # Never a password prompt for something optional.
    s="$sudo"
    [ -n "$s" ] && s="sudo -n"
    if [ "$can_apt" = no ]; then
        echo "ensure-deps: cannot install them here (no apt-get, or not root and no sudo); $3" >&2
    elif ! { $s apt-get update -qq && \
             $s apt-get install -y -qq --no-install-recommends $1 >/dev/null; }; then
        echo "ensure-deps: installing$1 failed; $3" >&2
    fi
}

[ -n "$want" ] && optional "$want" "the allocators memcheck compares with" \
    "memcheck runs without them"
[ -n "$want_java" ] && optional " $want_java" "a JDK for rtmem shm --java" \
    "rtmem shm runs without its Java contender"
[ -n "$want_stress" ] && optional " $want_stress" "stress, the comparison's load" \
    "compare-cyclictest.sh loads with rtmem pressure"
[ -n "$want_valgrind" ] && optional " $want_valgrind" "valgrind for rtmem wcet's counts" \
    "rtmem wcet runs without counting"
[ -n "$want_chromium" ] && optional " $want_chromium" "a browser for tools.report's page check" \
    "tools.report skips its browser check"

# The report's Python packages, pinned, in .venv/, made afresh: a .venv/
# this script made (it holds rtmem-venv) is replaced; any other is left
# alone and reported. rtmem-requirements.txt, copied last, marks it done.
report_venv() {
    if [ -e "$venv" ] && [ ! -e "$venv/rtmem-venv" ]; then
        echo "ensure-deps: $venv exists and was not made by this script: left alone;" \
             "move it away for rtmem report's matplotlib" >&2
        return 1
    fi
    echo "ensure-deps: installing matplotlib (report/requirements.txt) into $venv"
    rm -rf "$venv"
    if ! python3 -m venv "$venv" >/dev/null 2>&1; then
        rm -rf "$venv"
        # Debian's python3 makes virtual environments with python3-venv.
        optional " python3-venv" "Python's virtual environments" "rtmem report cannot draw"
        python3 -m venv "$venv" >/dev/null 2>&1 || { rm -rf "$venv"; return 1; }
    fi
    echo "made by scripts/ensure-deps.sh report for rtmem report" > "$venv/rtmem-venv"
    if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-input \
            -r "$root/report/requirements.txt"; then
        rm -rf "$venv"
        return 1
    fi
    cp "$root/report/requirements.txt" "$venv/rtmem-requirements.txt"
}
if [ "$want_report" = yes ] && ! report_venv; then
    echo "ensure-deps: no matplotlib in $venv: rtmem report cannot draw until it is" \
         "installed (scripts/ensure-deps.sh report)" >&2
fi
exit 0
