#!/bin/sh
# rtmem/rtmem.hpp under every C++ standard it supports: tests/cpp/hpp_test.cpp
# built warning-free (-Wall -Wextra -Werror -pedantic) as C++11, C++17 and
# C++20, and as C++17 without exceptions, with g++ and (when installed)
# clang++, linked with the library and run; each build must pass every case.
#   cpp_standards.sh SOURCE_DIR LIBRARY CXX [FLAG...]
# CXX is the build's own C++ compiler, always used. Unless RTMEM_CXX_ONLY is
# set (a cross or sanitizer build, whose library only its own compiler's
# programs can link), g++ and clang++ are used too. FLAGs go to every
# compile and link (the sanitizer flags); RTMEM_RUN runs the programs (a
# cross build's emulator).
set -eu
src=$1
lib=$2
cxx=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
compilers=$cxx
if [ -z "${RTMEM_CXX_ONLY:-}" ]; then
    first=$(readlink -f "$(command -v "$cxx")")
    for c in g++ clang++; do
        path=$(command -v $c 2> /dev/null) || continue
        [ "$(readlink -f "$path")" = "$first" ] || compilers="$compilers $c"
    done
fi
n=0
for comp in $compilers; do
    for mode in c++11 c++17 c++20 c++17:no-exceptions; do
        n=$((n + 1))
        std=${mode%%:*}
        extra=""
        [ "$mode" = "${mode%no-exceptions}" ] || extra=-fno-exceptions
        what="$comp -std=$std $extra"
        exe=$tmp/hpp_$n
        # shellcheck disable=SC2086
        if ! "$comp" -std=$std $extra -Wall -Wextra -Werror -pedantic -I"$src/include" "$@" \
            -o "$exe" "$src/tests/cpp/hpp_test.cpp" "$lib" -lpthread > "$exe.log" 2>&1; then
            failed=$((failed + 1))
            echo "cpp_standards: FAILED: $what does not build:"
            head -n 30 "$exe.log"
        # shellcheck disable=SC2086
        elif ! ${RTMEM_RUN:-} "$exe" > "$exe.out" 2>&1; then
            failed=$((failed + 1))
            echo "cpp_standards: FAILED: $what:"
            cat "$exe.out"
        else
            passed=$((passed + 1))
            echo "cpp_standards: $what: $(tail -n 1 "$exe.out")"
        fi
    done
done
echo "cpp_standards: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
