/*
 * The lock policies of locked heaps (rtmem/lock.h): a priority-inheritance
 * mutex, or a robust, process-shared one, both error-checking, in the heap's
 * lock area. No policy of its own beyond the mutex's attributes: the
 * dispatcher (src/heap/heap.c) decides what an owner death means for the
 * heap.
 */
#include <stdbool.h>
#include <string.h>

#include "lock.h"

int rtm__lock_init(struct rtm_lock *l, int type, uint32_t lead)
{
    pthread_mutexattr_t a;
    int rc = pthread_mutexattr_init(&a);
    if (rc)
        return rc;
    /* Error-checking: a thread taking a lock it holds gets EDEADLK. With
     * priority inheritance glibc compares the owner anyway, so it costs
     * nothing. */
    rc = pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    if (!rc)
        rc = pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
    if (!rc && type == RTM_HEAP_LOCK_ROBUST_SHARED) {
        rc = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
        if (!rc)
            rc = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    }
    memset(l, 0, sizeof(*l));
    if (!rc)
        rc = pthread_mutex_init(&l->mutex, &a);
    pthread_mutexattr_destroy(&a);
    if (rc)
        return rc;
    l->type = (uint32_t)type;
    l->lead = lead;
    l->recoverable = 1;
    return 0;
}

void rtm__lock_destroy(struct rtm_lock *l)
{
    (void)pthread_mutex_destroy(&l->mutex);
}

__attribute__((noinline, cold)) int rtm__lock_wait(struct rtm_lock *l, int rc)
{
    bool waited = rc == EBUSY;
    if (waited)
        rc = pthread_mutex_lock(&l->mutex);
    if (rc != 0 && rc != EOWNERDEAD)
        return rc; /* ENOTRECOVERABLE, EDEADLK: not taken */
    rtm_lock_count(&l->calls);
    if (waited)
        rtm_lock_count(&l->contended);
    if (rc == EOWNERDEAD)
        rtm_lock_count(&l->owner_deaths);
    return rc;
}

void rtm__lock_recovered(struct rtm_lock *l)
{
    (void)pthread_mutex_consistent(&l->mutex);
    rtm_lock_count(&l->recovered);
}

void rtm__lock_abandon(struct rtm_lock *l)
{
    __atomic_store_n(&l->recoverable, 0, __ATOMIC_RELAXED);
    (void)pthread_mutex_unlock(&l->mutex);
}

void rtm__lock_stats(const struct rtm_lock *l, struct rtm_heap_lock_stats *out)
{
    out->type = (int)l->type;
    out->recoverable = (int)__atomic_load_n(&l->recoverable, __ATOMIC_RELAXED);
    /* Each counter before the one counted ahead of it, with acquire loads:
     * a snapshot never shows contended > calls or recovered > owner_deaths. */
    out->contended = __atomic_load_n(&l->contended, __ATOMIC_ACQUIRE);
    out->calls = __atomic_load_n(&l->calls, __ATOMIC_ACQUIRE);
    out->recovered = __atomic_load_n(&l->recovered, __ATOMIC_ACQUIRE);
    out->owner_deaths = __atomic_load_n(&l->owner_deaths, __ATOMIC_ACQUIRE);
}
