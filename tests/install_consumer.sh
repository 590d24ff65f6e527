#!/bin/sh
# Installs the built tree into a scratch prefix, then builds and runs a small
# consumer twice: with find_package(rtmem) and with pkg-config. Then the
# same for the library alone built with Debian's multiarch layout (the
# library two levels down, lib/<triplet>), installed with DESTDIR: the
# paths pkg-config and CMake give must lead to it.
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
# the library directory (lib, lib64, ...; not libexec, which holds programs)
so=$(ls "$tmp"/prefix/lib*/librtmem.so | head -n 1)
libdir=$(dirname "$so")
ls "$libdir/librtmem.a" >/dev/null

sh "$src/tests/consumer_run.sh" "$src" "$tmp/consumer" "$tmp/prefix" "$libdir/pkgconfig" "$libdir"
# The installed example heap plugin builds from the installed header and
# library alone, and the installed rtmem runs it.
${CC:-cc} -std=c11 -fPIC -shared -I"$tmp/prefix/include" -o "$tmp/tlsf_plugin.so" \
    "$tmp/prefix/share/doc/rtmem/examples/plugin/tlsf_plugin.c" "$libdir/librtmem.a"
if [ -n "$tool" ]; then
    "$tmp/prefix/bin/rtmem" memcheck --quick --no-rt --phases pow2 --plugin "$tmp/tlsf_plugin.so" \
        --kinds tlsf-plugin >/dev/null
    # The installed report runs its installed package with python3 on PATH,
    # never the .venv of the tree it was built in, and says it is installed.
    mkdir -p "$tmp/fakebin" "$tmp/results"
    printf '#!/bin/sh\necho "python3 ran: $1 $RTMEM_REPORT_INSTALLED"\n' >"$tmp/fakebin/python3"
    chmod +x "$tmp/fakebin/python3"
    got=$(env -u RTMEM_PYTHON PATH="$tmp/fakebin:$PATH" "$tmp/prefix/bin/rtmem" report "$tmp/results")
    want="python3 ran: $tmp/prefix/bin/../share/rtmem/report/run.py 1"
    [ "$got" = "$want" ] || { echo "installed rtmem report ran: $got (want: $want)"; exit 1; }
    # With a Python that has no matplotlib it says what to install.
    if python3 -m venv --without-pip "$tmp/bare" >/dev/null 2>&1; then
        cp "$src/tests/fixtures/report/stride.json" "$tmp/results/"
        if RTMEM_PYTHON="$tmp/bare/bin/python" "$tmp/prefix/bin/rtmem" report "$tmp/results" \
            -o "$tmp/report" 2>"$tmp/err"; then
            echo "installed rtmem report drew without matplotlib"; exit 1
        fi
        grep -q "apt install python3-matplotlib" "$tmp/err" ||
            { echo "installed rtmem report, no matplotlib:"; cat "$tmp/err"; exit 1; }
    fi
fi

# The multiarch layout: the library alone, configured for /usr (the prefix
# a Debian package uses) and installed under DESTDIR.
triplet=$(${CC:-cc} -print-multiarch 2>/dev/null || true)
[ -n "$triplet" ] || triplet=$(uname -m)-linux-gnu
cmake -S "$src" -B "$tmp/ma-build" -DCMAKE_C_COMPILER="${CC:-cc}" -DCMAKE_INSTALL_PREFIX=/usr \
    -DCMAKE_INSTALL_LIBDIR="lib/$triplet" -DRTMEM_BUILD_TESTS=OFF -DRTMEM_BUILD_TOOLS=OFF >/dev/null
cmake --build "$tmp/ma-build" -j2 >/dev/null
DESTDIR="$tmp/ma-root" cmake --install "$tmp/ma-build" >/dev/null
ma_lib="$tmp/ma-root/usr/lib/$triplet"
test -e "$ma_lib/librtmem.so" && test -e "$ma_lib/pkgconfig/rtmem.pc" ||
    { echo "multiarch install: no library or rtmem.pc in $ma_lib"; exit 1; }
if command -v pkg-config >/dev/null 2>&1; then
    # pkg-config's own view of a moved install: --define-prefix is not
    # needed, the file finds the prefix from its own place
    inc=$(PKG_CONFIG_PATH="$ma_lib/pkgconfig" pkg-config --variable=includedir rtmem)
    lib=$(PKG_CONFIG_PATH="$ma_lib/pkgconfig" pkg-config --variable=libdir rtmem)
    [ "$(cd "$inc" && pwd -P)" = "$(cd "$tmp/ma-root/usr/include" && pwd -P)" ] &&
        [ "$(cd "$lib" && pwd -P)" = "$(cd "$ma_lib" && pwd -P)" ] ||
        { echo "multiarch rtmem.pc: includedir $inc, libdir $lib"; exit 1; }
fi
sh "$src/tests/consumer_run.sh" "$src" "$tmp/ma-consumer" "$tmp/ma-root/usr" "$ma_lib/pkgconfig" \
    "$ma_lib"
echo "install_consumer: 2 passed, 0 failed"
