# Cross build for i686 (32-bit x86) Linux with Debian's cross compilers
# (gcc-i686-linux-gnu, g++-i686-linux-gnu; scripts/ensure-deps.sh i686
# installs them):
#   cmake -S . -B build-i686 --toolchain cmake/toolchain-i686-linux-gnu.cmake
# An x86-64 Linux runs i686 programs itself: the compilers are wrapped
# (cmake/i686-linux-gnu-cc) so that every program they link names the
# target's loader and libraries in /usr/i686-linux-gnu, and the tests run
# as they are, on the real kernel, with no emulator: robust futexes, /proc
# and page faults are the program's own.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR i686)
set(CMAKE_C_COMPILER ${CMAKE_CURRENT_LIST_DIR}/i686-linux-gnu-cc)
set(CMAKE_CXX_COMPILER ${CMAKE_CURRENT_LIST_DIR}/i686-linux-gnu-c++)
set(CMAKE_FIND_ROOT_PATH /usr/i686-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
