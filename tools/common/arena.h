/*
 * Bench kit: a block of memory for heaps under test, mapped, prefaulted and
 * (if permitted) locked before any timing.
 *
 * A heap created on fresh anonymous memory takes a page fault the first time
 * it touches each page, and an unlocked page may be reclaimed later: either
 * would show up as a latency of the allocator. tk_arena_open writes every
 * page once and asks mlock for the whole range, so a timed call never faults.
 * A refused mlock (EPERM without CAP_IPC_LOCK, ENOMEM beyond
 * RLIMIT_MEMLOCK) is not a failure: it is recorded in locked/lock_err for the
 * report, and the run goes on with the memory unlocked.
 */
#ifndef RTMEM_TOOLS_ARENA_H
#define RTMEM_TOOLS_ARENA_H

#include <stdbool.h>
#include <stddef.h>

struct tk_arena {
    void *mem;    /* start of the mapping; NULL when not open */
    size_t bytes; /* length of the mapping */
    bool locked;  /* mlock succeeded: no page of it faults or is reclaimed */
    int lock_err; /* errno of a refused mlock, 0 if locked */
};

/* Maps bytes (> 0) of private anonymous memory, writes every page and tries
 * to lock it. O(bytes). Returns 0, or -errno of a failed mmap (*ar is then
 * all zero). */
int tk_arena_open(struct tk_arena *ar, size_t bytes);

#endif /* RTMEM_TOOLS_ARENA_H */
