/* rtmem: everything public in one include. */
#ifndef RTMEM_RTMEM_H
#define RTMEM_RTMEM_H

#include "rtmem/heap.h"
#include "rtmem/tlsf.h"
#include "rtmem/heapmem.h"
#include "rtmem/xnheap.h"
#include "rtmem/plugin.h"

#define RTMEM_VERSION_MAJOR 0
#define RTMEM_VERSION_MINOR 1
#define RTMEM_VERSION_PATCH 0
#define RTMEM_VERSION_STRING "0.1.0"

#endif /* RTMEM_RTMEM_H */
