#!/bin/sh
# Builds rpmalloc, from the rpmalloc-sys crate on crates.io, into the shared
# object rtmem's tools load as a peer allocator beside jemalloc, mimalloc and
# tcmalloc (tools/common/alloc_load.c; docs/bench.md):
#   build-rpmalloc.sh BUILD_DIR    -> BUILD_DIR/peers/librtmem-rpmalloc.so
# BUILD_DIR/tools/rtmem finds it there (or wherever $RTMEM_RPMALLOC says).
# Optional, like the Debian peers: without cargo (Debian's cargo package, or
# rustup's ~/.cargo/bin), or when the crate cannot be fetched, it says so and
# succeeds, and the tools skip rpmalloc with the reason. Idempotent: cargo
# rebuilds nothing the second time. Never linked into rtmem.
set -u
build=${1:?usage: build-rpmalloc.sh BUILD_DIR}
top=$(cd "$(dirname "$0")/.." && pwd)
cargo=$(command -v cargo 2>/dev/null || true)
[ -n "$cargo" ] || { [ -x "${HOME:-}/.cargo/bin/cargo" ] && cargo="$HOME/.cargo/bin/cargo"; }
if [ -z "$cargo" ]; then
    echo "build-rpmalloc.sh: no cargo: rpmalloc is not built (the tools skip it and say so)"
    exit 0
fi
out="$build/peers"
so="$out/librtmem-rpmalloc.so"
mkdir -p "$out" || exit 1
skip() { # WHY: no library of an earlier build left to be taken for this one
    rm -f "$so"
    echo "build-rpmalloc.sh: $1: the tools skip rpmalloc and say so"
    exit 0
}
"$cargo" build --release --quiet --manifest-path "$top/peers/rpmalloc/Cargo.toml" \
    --target-dir "$out/rpmalloc" 2>"$out/rpmalloc.log" ||
    skip "cargo could not build it ($out/rpmalloc.log says why)"
# release/, or <target>/release/ when cargo's configuration names a target
built=$(find "$out/rpmalloc" -path '*/release/librtmem_rpmalloc.so' 2>/dev/null | head -n 1)
[ -n "$built" ] || skip "cargo built no librtmem_rpmalloc.so under $out/rpmalloc"
# in place only whole: a copy beside it, renamed over it
cp "$built" "$so.tmp.$$" && mv -f "$so.tmp.$$" "$so" || {
    rm -f "$so.tmp.$$"
    exit 1
}
