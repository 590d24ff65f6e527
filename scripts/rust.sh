#!/bin/sh
# The Rust crates in bindings/rust (rtmem-sys, rtmem): their tests, and the
# benchmark docs/rust.md quotes.
#   rust.sh test            cargo test (every crate, every test and doctest),
#                           examples/global.rs run, cargo fmt --check and
#                           clippy -D warnings (where installed),
#                           then the same tests again linked with the library
#                           built under AddressSanitizer and UBSan when
#                           RTMEM_ASAN_LIB_DIR names that build (CI: make
#                           test-asan's): the C side checked, and every Rust
#                           allocation through ASan's malloc
#   rust.sh bench [ROUNDS]  the Vec/BTreeMap workload, rtmem against the
#                           system allocator (examples/bench.rs), at
#                           SCHED_FIFO 80 on CPU 1 when chrt and taskset may
# The toolchain: cargo on PATH, or rustup's in ~/.cargo/bin; without either,
# Debian's cargo and rustc are installed (apt-get, as root or with sudo).
# The crates need Rust 1.78 or later (and crates.io, for allocator-api2 and
# the build's cmake, cc and pkg-config crates): with an older toolchain, or
# none to be had, it says so and exits 0 without testing (77 with
# RTMEM_RUST_REQUIRED=1 in the environment: then it fails).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
manifest=$root/bindings/rust/Cargo.toml
mode=${1:-test}

find_cargo() {
    for c in "$(command -v cargo 2>/dev/null || true)" "${CARGO_HOME:-$HOME/.cargo}/bin/cargo"; do
        [ -n "$c" ] && [ -x "$c" ] && { echo "$c"; return 0; }
    done
    return 1
}

skip() {
    echo "rust: SKIPPED: $*"
    [ -n "${RTMEM_RUST_REQUIRED:-}" ] && exit 77
    exit 0
}

cargo=$(find_cargo) || {
    if command -v apt-get > /dev/null 2>&1 && { [ "$(id -u)" -eq 0 ] || command -v sudo > /dev/null 2>&1; }; then
        sudo=""
        [ "$(id -u)" -eq 0 ] || sudo=sudo
        echo "rust: installing Debian's cargo and rustc"
        $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
            $sudo apt-get install -y -qq --no-install-recommends cargo rustc > /dev/null || true
    fi
    find_cargo
} || skip "no cargo (install rustup's toolchain, or Debian's cargo and rustc)"
PATH=$(dirname "$cargo"):$PATH
export PATH
version=$("$cargo" --version | sed -n 's/^cargo \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
set -- "$@"
major=${version% *}
minor=${version#* }
if [ -z "$version" ] || [ "$major" -lt 1 ] || { [ "$major" -eq 1 ] && [ "$minor" -lt 78 ]; }; then
    skip "$("$cargo" --version) is older than the crates need (Rust 1.78)"
fi

case $mode in
test)
    echo "rust: cargo test ($("$cargo" --version))"
    "$cargo" test --locked --manifest-path "$manifest"
    # The global-allocator example, whole (cargo test only builds it).
    "$cargo" run --locked --quiet --manifest-path "$manifest" --example global
    # Layout and lints, where the toolchain has rustfmt and clippy.
    if "$cargo" fmt --version > /dev/null 2>&1; then
        (cd "$root/bindings/rust" && "$cargo" fmt --all --check)
    else
        echo "rust: no rustfmt: the layout check left out"
    fi
    if "$cargo" clippy --version > /dev/null 2>&1; then
        "$cargo" clippy --locked --quiet --manifest-path "$manifest" --all-targets -- -D warnings
    else
        echo "rust: no clippy: the lint check left out"
    fi
    if [ -n "${RTMEM_ASAN_LIB_DIR:-}" ]; then
        [ -e "$RTMEM_ASAN_LIB_DIR/librtmem.a" ] || { echo "rust: no librtmem.a in $RTMEM_ASAN_LIB_DIR"; exit 1; }
        echo "rust: cargo test against $RTMEM_ASAN_LIB_DIR/librtmem.a (ASan and UBSan)"
        # --target: so that RUSTFLAGS reach the tests, not the build scripts.
        host=$(rustc -vV | sed -n 's/^host: //p')
        # rustc links with -nodefaultlibs: the runtimes by name (gcc's,
        # which built that library), ASan's preloaded so that it comes first.
        flags="-Clink-arg=-Wl,--no-as-needed -Clink-arg=-lasan -Clink-arg=-lubsan -Clink-arg=-lgcov"
        # The tests (not cargo, rustc or rustdoc) start with ASan preloaded:
        # the runner; the doctests are left to the first pass.
        runner=CARGO_TARGET_$(echo "$host" | tr 'a-z-' 'A-Z_')_RUNNER
        env "$runner=env LD_PRELOAD=$(gcc -print-file-name=libasan.so)" \
            RTMEM_LIB_DIR="$RTMEM_ASAN_LIB_DIR" RUSTFLAGS="$flags" \
            ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
            "$cargo" test --locked --manifest-path "$manifest" --tests \
            --target-dir "$root/bindings/rust/target/asan" --target "$host"
    fi
    ;;
bench)
    "$cargo" build --locked --release --quiet --manifest-path "$manifest" --example bench
    exe=$root/bindings/rust/target/release/examples/bench
    run=""
    if command -v chrt > /dev/null 2>&1 && chrt -f 80 true 2> /dev/null; then run="chrt -f 80"; fi
    if command -v taskset > /dev/null 2>&1 && taskset -c 1 true 2> /dev/null; then run="$run taskset -c 1"; fi
    echo "rust: running ${run:-without chrt or taskset}: $exe ${2:-300}"
    # shellcheck disable=SC2086
    $run "$exe" ${2:-300}
    ;;
*)
    echo "usage: rust.sh test | bench [ROUNDS]" >&2
    exit 2
    ;;
esac
