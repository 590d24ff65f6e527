/* Shared heaps: the segment header, the catalog entry and the handle. */
#ifndef RTMEM_SRC_SHARED_INTERNAL_H
#define RTMEM_SRC_SHARED_INTERNAL_H

#include <stdint.h>

#include "rtmem/arena.h"
#include "rtmem/shared.h"

/* "rtmSHRD\0" read as a little-endian word. */
#define SHARED_MAGIC        0x00445248536d7472ull
/* header.state: 0 (the zeros of a new object) until the heap is built. */
#define SHARED_INITIALISING 0u
#define SHARED_READY        0x59444552u /* "REDY" */

#define SHARED_KIND_BYTES 32

/* At offset 0 of the segment. Written by the creator before it publishes
 * the state "ready"; afterwards only attach_count changes. */
struct shared_header {
    uint64_t magic;
    uint32_t version;
    uint32_t state;        /* SHARED_INITIALISING, SHARED_READY: atomic */
    uint64_t size_bytes;   /* the whole segment */
    uint32_t attach_count; /* atomic */
    uint32_t catalog_entries;
    uint64_t catalog_offset;
    uint64_t heap_offset;
    int32_t creator_pid;
    uint32_t reserved0;
    char kind[SHARED_KIND_BYTES]; /* NUL-terminated */
    uint8_t reserved[40];         /* zeros: room for later versions' fields */
};

/* A catalog entry: in use when offset is non-zero (written last, cleared
 * first), so that a process killed in a catalog call leaves it
 * consistent. */
struct shared_entry {
    char name[RTM_SHARED_CATALOG_NAME_MAX + 1];
    uint64_t offset;
    uint64_t reserved;
};

_Static_assert(sizeof(struct shared_header) == 128, "rtmem/shared.h gives the header's size");
_Static_assert(sizeof(struct shared_entry) == 48, "rtmem/shared.h gives the entry's size");

/* One process's attachment. malloc'd: the arena inside knows its address. */
struct rtm_shared {
    struct rtm_arena arena;
    struct shared_header *header;
    struct shared_entry *catalog;
    struct rtm_heap *heap;
    int pid; /* the process that created or attached: a fork's copy detaches uncounted */
};

#endif /* RTMEM_SRC_SHARED_INTERNAL_H */
