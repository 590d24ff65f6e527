#!/bin/sh
# Builds tests/consumer against an installed rtmem and runs it: with CMake
# (find_package: rtmem::static and rtmem::rtmem, and the C++17 program on
# rtmem::rtmem where a C++ compiler is) and with pkg-config (where
# it is installed), the shared builds run with the library's directory.
# An empty PREFIX_PATH, PKG_CONFIG_DIR or LIBDIR: the system's own search.
#   consumer_run.sh SOURCE_DIR WORK_DIR PREFIX_PATH PKG_CONFIG_DIR LIBDIR
# (install_consumer.sh, deb_package.sh; CC names the compiler)
set -eu
src=$1
work=$2
prefix_path=$3
pc_dir=$4
libdir=$5
mkdir -p "$work"
# The C++ program takes the C++ compiler of CC (a cross build's), unless CXX
# names one: gcc -> g++, clang -> clang++, cc -> c++. One that is not
# installed leaves the C++ program out.
if [ -z "${CXX:-}" ] && [ -n "${CC:-}" ]; then
    case $CC in
    *clang*) CXX=$(printf '%s\n' "$CC" | sed 's/clang/clang++/') ;;
    *gcc*) CXX=$(printf '%s\n' "$CC" | sed 's/gcc\([^/]*\)$/g++\1/') ;;
    *cc) CXX=${CC%cc}c++ ;;
    esac
    export CXX
fi
cmake -S "$src/tests/consumer" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix_path" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
"$work/cmake-build/consumer_static"
LD_LIBRARY_PATH="$libdir" "$work/cmake-build/consumer_shared"
if [ -e "$work/cmake-build/consumer_cxx" ]; then
    LD_LIBRARY_PATH="$libdir" "$work/cmake-build/consumer_cxx"
else
    echo "no C++ compiler: the C++ consumer left out"
fi
if command -v pkg-config >/dev/null 2>&1; then
    flags=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs rtmem)
    # shellcheck disable=SC2086
    ${CC:-cc} -std=c11 -o "$work/consumer_pc" "$src/tests/consumer/main.c" $flags
    LD_LIBRARY_PATH="$libdir" "$work/consumer_pc"
else
    echo "pkg-config not installed: the pkg-config build left out"
fi
