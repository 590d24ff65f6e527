#!/bin/sh
# A project that vendors rtmem (add_subdirectory) builds and runs against it
# (rtmem::static, and rtmem::rtmem as find_package has it),
# and rtmem's own targets are built without -Werror there: a newer compiler's
# new warning must not break a user's build. rtmem's warning flags do not
# reach the user's targets either.
#   vendored_consumer.sh SOURCE_DIR
set -eu
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/user"
cat > "$tmp/user/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.16)
project(user C)
add_subdirectory("$src" rtmem)
add_executable(user main.c)
target_link_libraries(user PRIVATE rtmem::static)
add_executable(user_shared main.c)
target_link_libraries(user_shared PRIVATE rtmem::rtmem)
CMAKE
cp "$src/tests/consumer/main.c" "$tmp/user/main.c"
cmake -S "$tmp/user" -B "$tmp/build" -DRTMEM_BUILD_TESTS=OFF -DRTMEM_BUILD_TOOLS=OFF >/dev/null
cmake --build "$tmp/build" -j 2 >/dev/null
"$tmp/build/user"
"$tmp/build/user_shared" # rtmem::rtmem, as find_package names it
flags=$(cat "$tmp/build/rtmem/CMakeFiles/rtmem_objects.dir/flags.make")
case "$flags" in
*-Werror*) echo "FAILED: rtmem built with -Werror inside a user's project"; exit 1 ;;
esac
case "$flags" in
*-Wall*) ;;
*) echo "FAILED: rtmem's own warnings are off"; exit 1 ;;
esac
if grep -q -e "-Wshadow" "$tmp/build/CMakeFiles/user.dir/flags.make"; then
    echo "FAILED: rtmem's warning flags reached the user's target"
    exit 1
fi
echo "vendored_consumer: 1 passed, 0 failed"
