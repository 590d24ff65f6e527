/* Shared heaps: the segment header, the catalog entry and the handle. */
#ifndef RTMEM_SRC_SHARED_INTERNAL_H
#define RTMEM_SRC_SHARED_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
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

/* Where a heap's segment lives (names.c). */
struct shared_place {
    int source;          /* RTM_ARENA_POSIX_SHM (base pages) or RTM_ARENA_FILE (a hugetlbfs file) */
    char path[PATH_MAX]; /* "/rtmem-<name>" (shm_open's name), or "<mount>/rtmem-<name>" */
};

/* 0 for a valid heap name; -EINVAL (NULL, empty, a byte other than a
 * letter, digit, '-', '_', '.'), -ENAMETOOLONG. */
int rtm__shared_check_name(const char *name);
/* The POSIX shm object of a (valid) name. */
void rtm__shared_shm_place(const char *name, struct shared_place *pl);
/* Where a heap of page_bytes huge pages is created: on the first hugetlbfs
 * mount of that page size this process may create files in. 0, or the
 * errors of rtm__arena_hugetlbfs_dir (-EOPNOTSUPP, -ENODEV, -EACCES,
 * -EROFS...), -ENAMETOOLONG. */
int rtm__shared_huge_place(const char *name, size_t page_bytes, struct shared_place *pl);
/* The first hugetlbfs mount that holds the name: 0, or -ENOENT. */
int rtm__shared_find_huge(const char *name, struct shared_place *pl);
/* Whether the name exists in /dev/shm or on a hugetlbfs mount as another
 * file than mine_fd's (-1: any file). A place this process cannot search
 * is not looked in. */
bool rtm__shared_taken(const char *name, int mine_fd);
/* For tests, NULL otherwise: called with the name at the two points of
 * attach where another process changing the object decides the answer, so
 * that a test can change it there: RTM__ATTACH_LOOKED, after the object's
 * owner was looked at and before it is opened and mapped; RTM__ATTACH_SHORT,
 * after the open found it too short to map and before it is looked at
 * again (segment.c). */
enum { RTM__ATTACH_LOOKED = 1, RTM__ATTACH_SHORT = 2 };
extern void (*rtm__shared_attach_hook)(int where, const char *name);

/* Removes the name from /dev/shm and from every hugetlbfs mount that holds
 * it: 0; the first refusal of a place that holds it (-EACCES...), the
 * others removed still; or -ENOENT when no place holds it. */
int rtm__shared_remove(const char *name);

/* One process's attachment. malloc'd: the arena inside knows its address. */
struct rtm_shared {
    struct rtm_arena arena;
    struct shared_header *header;
    struct shared_entry *catalog;
    struct rtm_heap *heap;
    int pid; /* the process that created or attached: a fork's copy detaches uncounted */
};

#endif /* RTMEM_SRC_SHARED_INTERNAL_H */
