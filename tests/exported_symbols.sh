#!/bin/sh
# The installed libraries define the public API and nothing else:
#  - librtmem.so exports exactly the functions the installed headers declare
#    (every rtm_*( left in rtmem/rtmem.h after preprocessing): no internal
#    symbol, and none of the public ones missing (a forgotten RTM_API);
#  - librtmem.a defines those, plus internals named rtm__*, and no other
#    global name (a static library cannot hide its internals, so they carry
#    the prefix instead);
#  - each of those functions has its prototype written out in a header's
#    text (RTM_API ... rtm_name(), where a reader, grep and ctags find it:
#    none is made by a macro.
#   exported_symbols.sh BUILD_DIR
set -eu
build=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
so=$(ls "$tmp"/prefix/lib*/librtmem.so)
a=$(ls "$tmp"/prefix/lib*/librtmem.a)
failed=0
fail() { echo "exported_symbols: $*"; failed=$((failed + 1)); }

printf '#include <rtmem/rtmem.h>\n' > "$tmp/all.c"
${CC:-cc} -E -P -I"$tmp/prefix/include" "$tmp/all.c" > "$tmp/all.i"
grep -o 'rtm_[A-Za-z0-9_]*[[:space:]]*(' "$tmp/all.i" | sed 's/[[:space:]]*($//' | sort -u \
    > "$tmp/public"
n=$(wc -l < "$tmp/public")
# The headers declare about fifty functions: far fewer means the list above
# is wrong, and the comparisons below would prove nothing.
[ "$n" -ge 40 ] || fail "only $n public functions found in the headers"

# The headers' own text, comments and #define lines left out: what a
# reader sees, before any macro is expanded.
for h in "$tmp"/prefix/include/rtmem/*.h; do
    sed -e 's,/\*.*\*/,,g' -e '/\/\*/,/\*\//d' "$h" | grep -v '^[[:space:]]*#'
done | tr '\n' ' ' | grep -o 'RTM_API[^;{]*rtm_[A-Za-z0-9_]*[[:space:]]*(' \
    | grep -o 'rtm_[A-Za-z0-9_]*[[:space:]]*($' | sed 's/[[:space:]]*($//' | sort -u > "$tmp/written"
comm -23 "$tmp/public" "$tmp/written" > "$tmp/unwritten"
[ -s "$tmp/unwritten" ] && fail "public functions whose prototype no header spells out:" \
    $(cat "$tmp/unwritten")

nm -D --defined-only "$so" | awk '{ print $NF }' | sort -u > "$tmp/so"
comm -13 "$tmp/public" "$tmp/so" > "$tmp/so_extra"
comm -23 "$tmp/public" "$tmp/so" > "$tmp/so_missing"
[ -s "$tmp/so_extra" ] && fail "librtmem.so exports what no public header declares:" \
    $(cat "$tmp/so_extra")
[ -s "$tmp/so_missing" ] && fail "librtmem.so does not export these public functions:" \
    $(cat "$tmp/so_missing")

nm -g --defined-only "$a" | awk 'NF == 3 { print $3 }' | sort -u > "$tmp/a"
# (__x86.get_pc_thunk.*: what gcc emits on i686 for position-independent
# code, hidden and merged across objects: no name of rtmem's.)
grep -v -e '^rtm__' -e '^__x86\.get_pc_thunk\.' "$tmp/a" | comm -23 - "$tmp/public" \
    > "$tmp/a_extra" || true
comm -23 "$tmp/public" "$tmp/a" > "$tmp/a_missing"
[ -s "$tmp/a_extra" ] && fail "librtmem.a defines names that are neither public nor rtm__*:" \
    $(cat "$tmp/a_extra")
[ -s "$tmp/a_missing" ] && fail "librtmem.a does not define these public functions:" \
    $(cat "$tmp/a_missing")

echo "exported_symbols: $n public functions; librtmem.so exports $(wc -l < "$tmp/so") symbols," \
     "librtmem.a defines $(wc -l < "$tmp/a")"
if [ "$failed" -ne 0 ]; then
    echo "exported_symbols: 0 passed, 1 failed"
    exit 1
fi
echo "exported_symbols: 1 passed, 0 failed"
