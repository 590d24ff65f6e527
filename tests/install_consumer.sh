#!/bin/sh
# Installs the built tree into a scratch prefix, then builds and runs a small
# consumer twice: with find_package(rtmem) and with pkg-config.
#   install_consumer.sh SOURCE_DIR BUILD_DIR
set -eu
src=$1
build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
tool=""
[ -e "$build/tools/rtmem" ] && tool=bin/rtmem # only when tools were built
for f in include/rtmem/heap.h include/rtmem/tlsf.h include/rtmem/rtmem.h include/rtmem/plugin.h \
         include/rtmem/export.h \
         $tool; do
    test -e "$tmp/prefix/$f" || { echo "missing after install: $f"; exit 1; }
done
ls "$tmp"/prefix/lib*/librtmem.a "$tmp"/prefix/lib*/librtmem.so >/dev/null

cmake -S "$src/tests/consumer" -B "$tmp/cmake-build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/cmake-build" >/dev/null
"$tmp/cmake-build/consumer_static"
LD_LIBRARY_PATH=$(echo "$tmp"/prefix/lib*) "$tmp/cmake-build/consumer_shared"

if command -v pkg-config >/dev/null 2>&1; then
    pc=$(echo "$tmp"/prefix/lib*/pkgconfig)
    flags=$(PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs rtmem)
    ${CC:-cc} -std=c11 -o "$tmp/consumer_pc" "$src/tests/consumer/main.c" $flags
    LD_LIBRARY_PATH=$(echo "$tmp"/prefix/lib*) "$tmp/consumer_pc"
else
    echo "pkg-config not installed: pkg-config check skipped"
fi
# A heap plugin builds from the installed header and library alone, and the
# installed rtmem runs it.
${CC:-cc} -std=c11 -fPIC -shared -I"$tmp/prefix/include" -o "$tmp/tlsf_plugin.so" \
    "$src/examples/plugin/tlsf_plugin.c" "$tmp"/prefix/lib*/librtmem.a
if [ -n "$tool" ]; then
    "$tmp/prefix/bin/rtmem" memcheck --quick --no-rt --phases pow2 --plugin "$tmp/tlsf_plugin.so" \
        --kinds tlsf-plugin >/dev/null
fi
echo "install_consumer: 1 passed, 0 failed"
