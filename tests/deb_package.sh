#!/bin/sh
# The Debian package (cpack -G DEB, make deb) of a build: made into a
# scratch directory, for the build's architecture, with every part of the
# install in it. Then, as root on the package's own architecture with no
# rtmem package or files installed already: installed with apt-get, `rtmem
# kinds` run from PATH, a consumer built against it with pkg-config and
# with CMake and run, the package purged, and none of its files left.
# Otherwise the same on the package unpacked into the scratch directory
# (its pkg-config file and CMake package are relocatable), saying why.
#   deb_package.sh SOURCE_DIR BUILD_DIR ARCH
set -eu
src=$1
build=$2
arch=$3
for t in cpack dpkg-deb; do
    command -v $t >/dev/null 2>&1 || { echo "deb_package: skipped: no $t"; exit 77; }
done
tmp=$(mktemp -d)
installed=""
cleanup() {
    if [ -n "$installed" ]; then
        apt-get remove --purge -y rtmem >/dev/null 2>&1 || dpkg --purge rtmem >/dev/null 2>&1 || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

(cd "$tmp" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/out" >"$tmp/cpack.log" 2>&1) ||
    { echo "deb_package: cpack failed:"; tail -n 20 "$tmp/cpack.log"; exit 1; }
deb=$(ls "$tmp"/out/rtmem_*_"$arch".deb)
[ "$(dpkg-deb -f "$deb" Package Architecture | tr '\n' ' ')" = "Package: rtmem Architecture: $arch " ] ||
    { echo "deb_package: control fields:"; dpkg-deb -f "$deb"; exit 1; }
dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' | grep -v '/$' >"$tmp/files"
for want in '^/usr/bin/rtmem$' '^/usr/include/rtmem/rtmem\.h$' '/librtmem\.so\.0$' '/librtmem\.a$' \
    '/pkgconfig/rtmem\.pc$' '/cmake/rtmem/rtmemConfig\.cmake$' '/rtmem/librtmem-malloc\.so$' \
    '/rtmem/librtmem-trace\.so$' '^/usr/share/rtmem/report/run\.py$' \
    '^/usr/share/doc/rtmem/bench\.md$' '^/usr/share/doc/rtmem/copyright$' \
    '^/usr/share/man/man1/rtmem\.1$' '^/usr/share/man/man1/rtmem-bench\.1$'; do
    grep -q "$want" "$tmp/files" || { echo "deb_package: nothing matches $want in the package"; exit 1; }
done
kinds=$("$build/tools/rtmem" kinds)

consumer() { # PREFIX_PATH PKG_CONFIG_DIR LIBDIR: built and run both ways
    sh "$src/tests/consumer_run.sh" "$src" "$tmp/consumer" "$1" "$2" "$3"
}

why=""
[ "$(id -u)" = 0 ] || why="not root"
[ -n "$why" ] || command -v apt-get >/dev/null 2>&1 || why="no apt-get"
[ -n "$why" ] || [ "$(dpkg --print-architecture)" = "$arch" ] || why="a package for $arch"
[ -n "$why" ] || ! dpkg-query -W rtmem >/dev/null 2>&1 || why="an rtmem package is installed"
if [ -z "$why" ]; then
    while read -r f; do
        if [ -e "$f" ]; then why="$f exists"; break; fi
    done <"$tmp/files"
fi
if [ -z "$why" ]; then
    installed=1
    apt-get install -y --no-install-recommends "$deb" >"$tmp/apt.log" 2>&1 ||
        { echo "deb_package: apt-get install failed:"; tail -n 20 "$tmp/apt.log"; exit 1; }
    [ "$(rtmem kinds)" = "$kinds" ] || { echo "deb_package: installed rtmem kinds: $(rtmem kinds)"; exit 1; }
    consumer "" "" ""
    apt-get remove --purge -y rtmem >"$tmp/apt.log" 2>&1 ||
        { echo "deb_package: apt-get remove failed:"; tail -n 20 "$tmp/apt.log"; exit 1; }
    installed=""
    while read -r f; do
        [ ! -e "$f" ] || { echo "deb_package: $f is left after the purge"; exit 1; }
    done <"$tmp/files"
    echo "deb_package: $(basename "$deb") installed, used and purged, nothing left"
else
    dpkg-deb -x "$deb" "$tmp/root"
    [ "$("$tmp/root/usr/bin/rtmem" kinds)" = "$kinds" ] ||
        { echo "deb_package: unpacked rtmem kinds: $("$tmp/root/usr/bin/rtmem" kinds)"; exit 1; }
    lib=$(dirname "$(grep '/librtmem\.so\.0$' "$tmp/files")")
    consumer "$tmp/root/usr" "$tmp/root$lib/pkgconfig" "$tmp/root$lib"
    echo "deb_package: $(basename "$deb") checked unpacked (not installed: $why)"
fi
