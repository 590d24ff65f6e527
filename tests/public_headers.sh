#!/bin/sh
# Every public header compiles on its own, warning-free, as C99, C11, C17,
# C++11 and C++17, with gcc/g++ and (when installed) clang/clang++: each is
# included alone, with every object-like macro it defines expanded. Then a
# program in each of those languages, including rtmem/rtmem.h, is linked
# against librtmem.so and run: it creates heaps, allocates, checks the
# alignment RTM_HEAP_MIN_ALIGN promises, frees, and prints that value, which
# must be the same in every language.
#   public_headers.sh SOURCE_DIR LIBRTMEM_SO   (LIBRTMEM_SO "-": compile only)
set -eu
src=$1
lib=$2
inc=$src/include
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
fail() { echo "public_headers: FAILED: $*"; failed=$((failed + 1)); }

warn_c="-Wall -Wextra -Werror -pedantic -Wshadow -Wundef -Wstrict-prototypes -Wmissing-prototypes"
# Not -Wshadow: g++ reports the function rtm_heap_stats as hiding the
# constructor of struct rtm_heap_stats (the C idiom of stat and struct stat).
warn_cxx="-Wall -Wextra -Werror -pedantic -Wundef"

# compiler:standard pairs; gcc and g++ are required, clang and clang++ optional.
# A cross build names its own compilers and how to run what they make
# (RTMEM_CC, RTMEM_CXX, RTMEM_RUN: tests/CMakeLists.txt).
modes=""
if [ -n "${RTMEM_CC:-}" ]; then
    modes="$RTMEM_CC:c99 $RTMEM_CC:c11 $RTMEM_CC:c17 $RTMEM_CXX:c++11 $RTMEM_CXX:c++17"
fi
for cc in gcc clang; do
    [ -n "${RTMEM_CC:-}" ] && break
    if command -v $cc >/dev/null 2>&1; then
        modes="$modes $cc:c99 $cc:c11 $cc:c17"
    elif [ $cc = gcc ]; then
        fail "gcc not found (scripts/ensure-deps.sh installs it)"
    fi
done
for cxx in g++ clang++; do
    [ -n "${RTMEM_CC:-}" ] && break
    if command -v $cxx >/dev/null 2>&1; then
        modes="$modes $cxx:c++11 $cxx:c++17"
    elif [ $cxx = g++ ]; then
        fail "g++ not found (scripts/ensure-deps.sh installs it)"
    fi
done

compile() { # mode file [args...]: compiles file as mode's language
    mode=$1; file=$2; shift 2
    comp=${mode%%:*}
    std=${mode#*:}
    case $std in
    c++*) $comp -x c++ -std=$std $warn_cxx -I"$inc" "$file" -x none "$@" ;;
    *)    $comp -x c -std=$std $warn_c -I"$inc" "$file" -x none "$@" ;;
    esac
}

# 1. Each header alone.
headers=$(cd "$inc" && ls rtmem/*.h)
for h in $headers; do
    name=$(basename "$h" .h)
    tu=$tmp/alone_$name.c
    {
        echo "#include <$h>"
        echo "int main(void)"
        echo "{"
        echo "    unsigned long n = 0;"
        # Object-like macros with a value (not include guards, not RTM_API).
        sed -n 's/^#define \(RTM[A-Z0-9_]*\)[[:space:]][[:space:]]*[^[:space:]].*/\1/p' "$inc/$h" |
            grep -v '^RTM_API$' | sort -u | sed 's/.*/    n += sizeof(&);/'
        echo "    return n == 0;"
        echo "}"
    } > "$tu"
    for mode in $modes; do
        if compile "$mode" "$tu" -fsyntax-only > "$tmp/log" 2>&1; then
            passed=$((passed + 1))
        else
            fail "$h alone as $mode:"
            head -n 20 "$tmp/log"
        fi
    done
done

# 2. A program in each language, against the library. In C++ it spells
# the structs as a C++ user would: NAME_t{} for every public struct (the
# function rtm_heap_stats hides struct rtm_heap_stats's name there).
cat > "$tmp/program.c" <<'PROGRAM'
#include <rtmem/rtmem.h>
#include <stdio.h>
#include <string.h>

static unsigned char pool[256 * 1024];
static unsigned char pool2[64 * 1024];

static int aligned(const void *p, size_t a)
{
    return p != NULL && (uintptr_t)p % a == 0;
}

#ifdef __cplusplus
static size_t cxx_spellings(void)
{
    rtm_heap_stats_t st{};
    rtm_heap_lock_stats_t ls{};
    rtm_heap_config_t cfg{};
    rtm_heap_limits_t lim{};
    rtm_heap_corruption_t cor{};
    rtm_heap_plugin_t plugin{};
    rtm_arena_config_t acfg{};
    rtm_arena_report_t arep{};
    rtm_arena_t arena{};
    rtm_shared_config_t scfg{};
    rtm_shared_info_t sinfo{};
    rtm_shared_orphan_t orphan{};
    rtm_heap_config plain{}; /* a struct whose name no function hides: no _t needed */
    rtm_heap_t *h = nullptr;
    rtm_tlsf_t *t = nullptr;
    rtm_halffit_t *hf = nullptr;
    rtm_heapmem_t *hm = nullptr;
    rtm_xnheap_t *xn = nullptr;
    rtm_shared_t *sh = nullptr;
    return st.used_bytes + (size_t)ls.calls + (size_t)cfg.hardening + lim.max_live +
           (cor.what != nullptr) + (plugin.name != nullptr) + acfg.size_bytes +
           arep.size_bytes + (arena.base != nullptr) + (size_t)scfg.hardening +
           sinfo.size_bytes + orphan.bytes + (size_t)plain.lock + (h != nullptr) +
           (t != nullptr) + (hf != nullptr) + (hm != nullptr) + (xn != nullptr) + (sh != nullptr);
}
#endif

static int run(void)
{
#ifdef __cplusplus
    if (cxx_spellings() != 0)
        return 8;
    rtm_heap_stats_t st;
#else
    struct rtm_heap_stats st;
#endif
    struct rtm_heap *h = rtm_heap_create("tlsf", pool, sizeof pool);
    if (!h)
        return 1;
    char *p = (char *)rtm_heap_alloc(h, 100);
    void *q = rtm_heap_aligned_alloc(h, 64, 256);
    if (!aligned(p, RTM_HEAP_MIN_ALIGN) || !aligned(q, 64))
        return 2;
    memset(p, 0x5a, 100);
    if (rtm_heap_free(h, p) || rtm_heap_free(h, q) || rtm_heap_stats(h, &st) || st.used_bytes)
        return 3;
    if (rtm_heap_check(h))
        return 4;
    rtm_heap_destroy(h);

    struct rtm_tlsf *t = rtm_tlsf_create(pool, sizeof pool);
    void *b = t ? rtm_tlsf_alloc(t, 24) : NULL;
    if (!aligned(b, RTM_HEAP_MIN_ALIGN) || rtm_tlsf_free(t, b) || rtm_tlsf_check(t))
        return 5;
    struct rtm_heapmem *hm = rtm_heapmem_create(pool, sizeof pool);
    struct rtm_xnheap *xn = rtm_xnheap_create(pool2, sizeof pool2);
    void *c = hm ? rtm_heapmem_alloc(hm, 1000) : NULL;
    void *d = xn ? rtm_xnheap_alloc(xn, 16) : NULL;
    if (!aligned(c, RTM_HEAP_MIN_ALIGN) || !aligned(d, RTM_HEAP_MIN_ALIGN))
        return 6;
    if (rtm_heapmem_free(hm, c) || rtm_xnheap_free(xn, d) || rtm_heapmem_check(hm) ||
        rtm_xnheap_check(xn))
        return 7;
    return 0;
}

int main(void)
{
    int rc = run();
    printf("%lu %s\n", (unsigned long)RTM_HEAP_MIN_ALIGN, rc ? "failed" : "ok");
    return rc;
}
PROGRAM
if [ "$lib" != - ]; then
    libdir=$(dirname "$lib")
    for mode in $modes; do
        exe=$tmp/program_$(echo "${mode##*/}" | tr ':+' '_x')
        if ! compile "$mode" "$tmp/program.c" -o "$exe" "$lib" > "$tmp/log" 2>&1; then
            fail "program as $mode does not build:"
            head -n 20 "$tmp/log"
        elif ! LD_LIBRARY_PATH=$libdir ${RTMEM_RUN:-} "$exe" > "$tmp/out" 2>&1; then
            fail "program as $mode: $(cat "$tmp/out")"
        else
            echo "$(cat "$tmp/out") $mode" >> "$tmp/aligns"
            passed=$((passed + 1))
        fi
    done
    if [ -s "$tmp/aligns" ]; then
        if [ "$(cut -d' ' -f1 "$tmp/aligns" | sort -u | wc -l)" -ne 1 ]; then
            fail "RTM_HEAP_MIN_ALIGN differs between languages:"
            cat "$tmp/aligns"
        else
            echo "public_headers: RTM_HEAP_MIN_ALIGN is $(head -n 1 "$tmp/aligns" | cut -d' ' -f1) in" \
                 "every language"
        fi
    fi
fi
echo "public_headers: modes:$modes"
echo "public_headers: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
