#!/bin/sh
# Checks that rtmem's C files are laid out as .clang-format says, with
# clang-format 19: another major version lays the same code out differently,
# so no other is used. Installs it first when missing (ensure-deps.sh format).
#   format-check.sh [--fix] [FILE...]
#     FILE   the files to check; default: every tracked *.c and *.h under
#            src/ include/ tests/ examples/ tools/
#     --fix  reformat them in place instead (make format)
# Exits 0 when every file is formatted, 1 listing those that are not, 2 when
# clang-format 19 cannot be had (or there is nothing to check).
set -eu
major=19
cd "$(dirname "$0")/.."

fix=no
if [ "${1:-}" = --fix ]; then
    fix=yes
    shift
fi

sh scripts/ensure-deps.sh format || true
cf=""
for c in clang-format-$major clang-format; do
    command -v "$c" >/dev/null 2>&1 || continue
    v=$("$c" --version | sed -n 's/.*clang-format version \([0-9][0-9]*\)\..*/\1/p')
    if [ "$v" = "$major" ]; then
        cf=$c
        break
    fi
done
if [ -z "$cf" ]; then
    echo "format-check: clang-format $major is needed (.clang-format is written for it; other" \
         "versions format differently) and was not found: install Debian's clang-format-$major" \
         "(sh scripts/ensure-deps.sh format)" >&2
    exit 2
fi

if [ $# -eq 0 ]; then
    # (Outside a git checkout, every such file there is.)
    files=$(git ls-files -- 'src/*.[ch]' 'include/*.[ch]' 'tests/*.[ch]' 'examples/*.[ch]' \
                'tools/*.[ch]' 2>/dev/null) ||
        files=$(find src include tests examples tools -name '*.[ch]' -type f 2>/dev/null | sort)
    set -f
    # shellcheck disable=SC2086
    set -- $files
    set +f
fi
[ $# -gt 0 ] || { echo "format-check: no files to check" >&2; exit 2; }

if [ "$fix" = yes ]; then
    "$cf" -i "$@"
    echo "format: $# file(s) laid out by $cf"
    exit 0
fi

bad=""
for f in "$@"; do
    "$cf" --dry-run --Werror "$f" >/dev/null 2>&1 || bad="$bad $f"
done
if [ -n "$bad" ]; then
    echo "format-check: not laid out as .clang-format says ($cf):"
    for f in $bad; do echo "  $f"; done
    echo "make format fixes them; $cf FILE | diff -u FILE - shows what it would change."
    exit 1
fi
echo "format-check: $# file(s) checked, all laid out as .clang-format says ($cf)"
