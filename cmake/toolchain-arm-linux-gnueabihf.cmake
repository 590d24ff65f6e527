# Cross build for arm Linux with Debian's cross compilers (gcc-arm-linux-gnueabihf,
# g++-arm-linux-gnueabihf; scripts/ensure-deps.sh cross installs them with qemu-user):
#   cmake -S . -B build-arm --toolchain cmake/toolchain-arm-linux-gnueabihf.cmake
# Test programs run under qemu-user (CMAKE_CROSSCOMPILING_EMULATOR), with the
# target's libraries from /usr/arm-linux-gnueabihf.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-linux-gnueabihf-gcc)
set(CMAKE_CXX_COMPILER arm-linux-gnueabihf-g++)
set(CMAKE_FIND_ROOT_PATH /usr/arm-linux-gnueabihf)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-arm -L /usr/arm-linux-gnueabihf)
