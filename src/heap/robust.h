/*
 * Internal: the calls of a robust heap (RTM_HEAP_LOCK_ROBUST_SHARED), made
 * by the dispatcher (heap.c) with the heap's lock held. Each runs the kind's
 * logged operation (store.h) and empties the undo log before it returns
 * (undo.h), and keeps an owner record at the end of every block (robust.c says
 * how). ops is the kind's (plain) table, for the calls that only read.
 */
#ifndef RTMEM_SRC_HEAP_ROBUST_H
#define RTMEM_SRC_HEAP_ROBUST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kind.h"

/* Bytes of the owner record at the end of every block of a robust heap. */
#define RTM_OWNER_BYTES 16u

void *rtm__robust_alloc(const struct rtm_heap_ops *ops, struct rtm_heap *h, size_t size);
void *rtm__robust_aligned_alloc(const struct rtm_heap_ops *ops, struct rtm_heap *h,
                                size_t alignment, size_t size);
void *rtm__robust_realloc(const struct rtm_heap_ops *ops, struct rtm_heap *h, void *p, size_t size);
int rtm__robust_free(const struct rtm_heap_ops *ops, struct rtm_heap *h, void *p);
size_t rtm__robust_usable_size(const struct rtm_heap_ops *ops, const struct rtm_heap *h,
                               const void *p);
size_t rtm__robust_fill_count(const struct rtm_heap_ops *ops, const struct rtm_heap *h,
                              size_t size);
int rtm__robust_add_pool(struct rtm_heap *h, void *mem, size_t size);

/* This process's identity in owner records: its pid and the low 32 bits of
 * its start time (clock ticks since boot, /proc/self/stat), so that a pid
 * the system reuses is not taken for the process that died. Learnt once
 * per process (and again in a child after fork). */
void rtm__owner_self(uint32_t *pid, uint32_t *stamp);

/* Whether the process (pid, stamp) still runs: /proc/<pid>/stat exists,
 * is no zombie, and has that start time; where /proc cannot say (not
 * mounted, or hiding other users' processes), whether kill(pid, 0) finds
 * the pid (then a reused pid counts as alive). A system call or three:
 * never on a heap call's path. */
int rtm__owner_alive(uint32_t pid, uint32_t stamp);

/* The start-time stamp of running process pid: true, or false when it
 * does not run. Where /proc cannot say, true with a stamp of 0 (unknown)
 * for a pid kill(2) finds. */
bool rtm__owner_stamp(uint32_t pid, uint32_t *stamp);

/* One live block of a robust heap, as rtm__robust_walk reports it. */
struct rtm_owned {
    void *p;        /* the caller's address */
    size_t bytes;   /* usable bytes */
    uint32_t pid;   /* owner; 0: the heap itself (never reclaimed) */
    uint32_t stamp; /* owner's start time (rtm__owner_self) */
};

/* Calls fn for every live block of the robust heap h, in address order,
 * until fn returns nonzero (returned). -EFAULT for a block whose owner
 * record is damaged, or a walk the kind refuses. Lock held. O(blocks). */
int rtm__robust_walk(const struct rtm_heap_ops *ops, const struct rtm_heap *h,
                     int (*fn)(void *arg, const struct rtm_owned *b), void *arg);

/* Rewrites the owner of block p (lock held). 0, or -EINVAL for no block. */
int rtm__robust_set_owner(const struct rtm_heap_ops *ops, const struct rtm_heap *h, void *p,
                          uint32_t pid, uint32_t stamp);

/* The owner of block p (lock held): 0 and *pid, *stamp, or -EINVAL. */
int rtm__robust_owner(const struct rtm_heap_ops *ops, const struct rtm_heap *h, const void *p,
                      uint32_t *pid, uint32_t *stamp);

#endif /* RTMEM_SRC_HEAP_ROBUST_H */
