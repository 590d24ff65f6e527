/*
 * Internal: the lock area of a locked heap (rtmem/lock.h), and taking and
 * giving its mutex. The two lock types differ only in the attributes the
 * mutex is created with (rtm__lock_init); they are taken and given by the
 * same calls. What a caller does when the holder died belongs to the
 * dispatcher (src/heap/heap.c), which knows the heap.
 */
#ifndef RTMEM_SRC_LOCK_LOCK_H
#define RTMEM_SRC_LOCK_LOCK_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#include "rtmem/lock.h"

struct rtm_heap;

/*
 * The lock area, at the start of a locked heap's memory (the heap's header
 * records the distance to it). Nothing in it is an address: a robust mutex
 * links itself into its holder's list only while held. The counters are
 * written by the holder and read without the lock (rtm_heap_lock_stats):
 * both atomically, relaxed, so that a reader sees each one whole.
 */
struct rtm_lock {
    pthread_mutex_t mutex;
    uint32_t type;        /* RTM_HEAP_LOCK_PI or RTM_HEAP_LOCK_ROBUST_SHARED */
    uint32_t lead;        /* bytes of the creating memory before this area (alignment trim) */
    uint32_t recoverable; /* 1; 0 once abandoned (rtm__lock_abandon) */
    uint32_t features;    /* RTM_LOCKF_*: what else the heap keeps (robust heaps) */
    uint64_t calls;
    uint64_t contended;
    uint64_t owner_deaths;
    uint64_t recovered;
    uint32_t timeout_us; /* the longest wait for a held lock (0: no bound): atomic */
    uint32_t reserved;
    uint64_t timeouts; /* waits that hit it: atomic, counted without the lock */
};

/* lock->features: an undo log right after the lock area (src/heap/undo.h),
 * and an owner record at the end of every block (src/heap/robust.c). Both
 * are set for every RTM_HEAP_LOCK_ROBUST_SHARED heap, never for another. */
#define RTM_LOCKF_UNDO   1u
#define RTM_LOCKF_OWNERS 2u
/* The heap has all the memory it will ever have: add_pool is refused
 * (-ENOTSUP). Set on a shared heap (src/shared), whose segment is all
 * its memory: a pool from one process's memory would be garbage, or
 * nothing, at the same offset in every other process. */
#define RTM_LOCKF_FIXED  4u

_Static_assert(sizeof(struct rtm_lock) <= RTM_HEAP_LOCK_AREA_BYTES, "the lock area holds the lock");
_Static_assert(_Alignof(struct rtm_lock) <= RTM_HEAP_LOCK_ALIGN, "the area's alignment suits it");
_Static_assert((RTM_HEAP_LOCK_ALIGN & (RTM_HEAP_LOCK_ALIGN - 1)) == 0, "a power of two");
_Static_assert(RTM_HEAP_LOCK_AREA_BYTES % RTM_HEAP_LOCK_ALIGN == 0,
               "the memory after the area starts aligned as the area");

/* Creates the mutex of the given type (PI, or robust process-shared PI; both
 * error-checking) in l and clears the counters. Returns 0, or the errno of
 * the pthread call that refused: ENOTSUP when the system has no such
 * mutex, EAGAIN or ENOMEM from pthread_mutex_init. */
int rtm__lock_init(struct rtm_lock *l, int type, uint32_t lead);

/* Checks a lock area found in memory another process wrote (a shared
 * heap's, at attach), before any lock call: its type, and with glibc the
 * mutex's kind (what pthread_mutex_init gives that type) and no holder
 * that cannot hold it: a thread that is gone or exiting, a kernel thread
 * (glibc aborts a process that waits on such a mutex). 0 or EINVAL. Reads
 * only; one read of /proc/<tid>/stat when held. */
int rtm__lock_validate(const struct rtm_lock *l);

/* Destroys the mutex (not held, nobody waiting). */
void rtm__lock_destroy(struct rtm_lock *l);

/* One more on a counter only the holder writes. */
/* Counted under the lock, so a plain increment; the release store orders
 * it after the counters incremented before it (calls before contended,
 * owner_deaths before recovered), which the reader relies on. */
static inline void rtm_lock_count(uint64_t *c)
{
    __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELEASE);
}

/* rtm_lock_take's way when the trylock did not take the lock (rc: its
 * errno): waits for a held lock, counts, passes every other code on. Out of
 * line: the uncontended path never comes here. */
int rtm__lock_wait(struct rtm_lock *l, int rc);

/*
 * Takes the lock. Returns 0, or a positive errno:
 *   EOWNERDEAD       taken, from a holder that died (robust only): the
 *                    caller decides, then calls rtm__lock_recovered or
 *                    rtm__lock_abandon;
 *   ENOTRECOVERABLE  not taken: abandoned once, it is never taken again;
 *   EDEADLK          not taken: the calling thread holds it;
 *   EBADMSG          not taken: a robust lock held by a task that cannot
 *                    hold it (gone, exiting, a kernel thread: its state
 *                    damaged, and glibc would abort on it);
 *   ETIMEDOUT        not taken: held by another thread for longer than the
 *                    lock's timeout_us.
 * Uncontended: one trylock and one counter. Held by another thread: waits in
 * the kernel, the holder inheriting the waiter's priority.
 */
static inline int rtm_lock_take(struct rtm_lock *l)
{
    int rc = pthread_mutex_trylock(&l->mutex);
    if (__builtin_expect(rc != 0, 0))
        return rtm__lock_wait(l, rc);
    rtm_lock_count(&l->calls);
    return 0;
}

static inline void rtm_lock_give(struct rtm_lock *l)
{
    (void)pthread_mutex_unlock(&l->mutex);
}

/* After EOWNERDEAD, the heap found consistent: the lock is made consistent
 * (and stays held) and the recovery counted. */
void rtm__lock_recovered(struct rtm_lock *l);

/* After EOWNERDEAD, the heap found damaged: the lock is given back without
 * being made consistent, so that every later take fails with
 * ENOTRECOVERABLE. */
void rtm__lock_abandon(struct rtm_lock *l);

/* What rtm_heap_lock_stats reports for this lock. */
void rtm__lock_stats(const struct rtm_lock *l, struct rtm_heap_lock_stats *out);

/*
 * For tests and the shared heaps' catalog (defined in src/heap/heap.c, not
 * exported by librtmem.so):
 * takes a locked heap's lock as any rtm_heap_* call would (owner-death
 * policy included) and keeps it until rtm__heap_lock_release. Return 0 or a
 * negative errno, as the heap's calls do; -EINVAL for an unlocked heap.
 */
int rtm__heap_lock_hold(struct rtm_heap *h);
int rtm__heap_lock_release(struct rtm_heap *h);

/* The operations of a live heap's kind, or NULL (for the shared heaps'
 * owner calls, which walk and free with the lock held). */
const struct rtm_heap_ops *rtm__heap_ops(const struct rtm_heap *h);

/* Marks a robust heap RTM_LOCKF_FIXED, before any other process can see
 * it. */
void rtm__heap_fix(struct rtm_heap *h);

/* A locked heap's RTM_LOCKF_* (0 for another heap). */
uint32_t rtm__heap_features(const struct rtm_heap *h);

/* Bytes the undo log of a robust heap takes (0 for another heap). */
size_t rtm__heap_undo_bytes(const struct rtm_heap *h);

#endif /* RTMEM_SRC_LOCK_LOCK_H */
