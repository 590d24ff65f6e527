#!/bin/sh
# The C and C++ code of a Markdown file compiles and runs as written: every
# block fenced as ```c is a complete program, compiled as C11 with -Wall
# -Wextra -Werror -pedantic, linked with the library and run; it must exit
# with 0. A block fenced as ```cpp is the same in C++17, compiled by
# $RTMEM_README_CXX (default: c++).
# A block whose fence line is directly preceded by the line
#     <!-- readme-test: compile-only -->
# is compiled as a translation unit but neither linked nor run (a program
# that needs arguments, a device, ...). Code that is not meant to compile
# takes another fence (```text, or none).
#   readme_blocks.sh FILE.md INCLUDE_DIR LIBRARY CC [FLAG...]
# FLAGs go to every compile and link (the sanitizer flags of the build).
set -eu
md=$1
inc=$2
lib=$3
cc=$4
shift 4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Writes block N to $tmp/block_N.c or .cpp (with the line it starts at in
# $tmp/block_N.line), and $tmp/block_N.compile-only for marked blocks.
awk -v dir="$tmp" '
    !inblock && /^```(c|cpp)[[:space:]]*$/ {
        n++; inblock = 1
        file = dir "/block_" n (($0 ~ /cpp/) ? ".cpp" : ".c")
        printf "" > file
        print NR + 1 > (dir "/block_" n ".line")
        if (prev ~ /^<!-- readme-test: compile-only -->[[:space:]]*$/)
            print "" > (dir "/block_" n ".compile-only")
        next
    }
    inblock && /^```[[:space:]]*$/ { inblock = 0; close(file); next }
    inblock { print > file; next }
    { prev = $0 }
    END { if (inblock) { print "unterminated block"; exit 1 } }
' "$md"

passed=0
failed=0
i=0
while [ -e "$tmp/block_$((i + 1)).c" ] || [ -e "$tmp/block_$((i + 1)).cpp" ]; do
    i=$((i + 1))
    b=$tmp/block_$i
    where="$(basename "$md"):$(cat "$b.line")"
    if [ -e "$b.cpp" ]; then
        c=$b.cpp
        comp=${RTMEM_README_CXX:-c++}
        flags="-std=c++17 -Wall -Wextra -Werror -pedantic -I$inc"
    else
        c=$b.c
        comp=$cc
        flags="-std=c11 -Wall -Wextra -Werror -pedantic -I$inc"
    fi
    if [ -e "$b.compile-only" ]; then
        # shellcheck disable=SC2086
        if "$comp" $flags "$@" -c "$c" -o "$b.o" > "$b.log" 2>&1; then
            passed=$((passed + 1))
            echo "readme: the block at $where compiles (compile-only)"
        else
            failed=$((failed + 1))
            echo "readme: FAILED: the block at $where does not compile:"
            head -n 30 "$b.log"
        fi
        continue
    fi
    # shellcheck disable=SC2086
    if ! "$comp" $flags "$@" -o "$b" "$c" "$lib" -lpthread > "$b.log" 2>&1; then
        failed=$((failed + 1))
        echo "readme: FAILED: the block at $where does not build:"
        head -n 30 "$b.log"
    elif ! (cd "$tmp" && "$b") > "$b.out" 2>&1; then
        failed=$((failed + 1))
        echo "readme: FAILED: the block at $where exits with a failure:"
        head -n 30 "$b.out"
    else
        passed=$((passed + 1))
        echo "readme: the block at $where runs: $(head -n 1 "$b.out")"
    fi
done
if [ $((passed + failed)) -eq 0 ]; then
    echo "readme: no \`\`\`c or \`\`\`cpp block found in $md"
    failed=1
fi
echo "readme: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
