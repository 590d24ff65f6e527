/*
 * rtmem's version: the one place it is written. CMake reads it for the
 * project's version (library SONAME, package config, rtmem.pc), and the
 * tools print it.
 */
#ifndef RTMEM_VERSION_H
#define RTMEM_VERSION_H

#define RTMEM_VERSION_MAJOR 0
#define RTMEM_VERSION_MINOR 1
#define RTMEM_VERSION_PATCH 0

#define RTMEM_VERSION_STR_(x) #x
#define RTMEM_VERSION_STR(x)  RTMEM_VERSION_STR_(x)
/* "MAJOR.MINOR.PATCH" */
/* clang-format off */
#define RTMEM_VERSION_STRING                                                              \
    RTMEM_VERSION_STR(RTMEM_VERSION_MAJOR) "." RTMEM_VERSION_STR(RTMEM_VERSION_MINOR) "." \
    RTMEM_VERSION_STR(RTMEM_VERSION_PATCH)
/* clang-format on */

#endif /* RTMEM_VERSION_H */
