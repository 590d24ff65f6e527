#!/bin/sh
# The arena code (src/arena/*.c, as built into librtmem.a) calls no
# allocator and no stdio stream: rtm_arena_open may be called by a program
# whose malloc lives on an arena, or that is growing its heap, and must not
# call back into it (fopen mallocs its FILE and buffer). /proc and /sys are
# read with read(2) into a buffer on the stack (src/arena/lines.c).
#   arena_calls.sh SOURCE_DIR LIBRTMEM_A
set -eu
src=$1
lib=$2
forbidden='^(malloc|calloc|realloc|reallocarray|free|strdup|strndup|asprintf|vasprintf|fopen|fopen64|fdopen|fclose|fgets|fscanf|__isoc99_fscanf|__isoc23_fscanf|getline|getdelim|getc|fgetc|fread|opendir)$'
failed=0
checked=0
for c in "$src"/src/arena/*.c; do
    member=$(basename "$c").o
    calls=$(nm -u "$lib" 2>/dev/null | awk -v m="$member:" '
        /:$/ { inside = ($0 == m) ; next }
        inside && $1 == "U" { print $2 }')
    checked=$((checked + 1))
    bad=$(printf '%s\n' "$calls" | sed 's/@.*//' | grep -E "$forbidden" || true)
    if [ -n "$bad" ]; then
        echo "arena_calls: $(basename "$c") calls $(echo $bad)"
        failed=$((failed + 1))
    fi
done
[ "$checked" -ge 10 ] || { echo "arena_calls: only $checked arena sources found"; exit 1; }
echo "arena_calls: $checked arena objects, $failed calling an allocator or stdio"
[ "$failed" -eq 0 ]
