/*
 * The lock policies of locked heaps (rtmem/lock.h): a priority-inheritance
 * mutex, or a robust, process-shared one, both error-checking, in the heap's
 * lock area. No policy of its own beyond the mutex's attributes: the
 * dispatcher (src/heap/heap.c) decides what an owner death means for the
 * heap.
 */
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include "lock.h"

/* The futex word's owner bits (linux/futex.h's FUTEX_TID_MASK). */
#define LOCK_TID_MASK 0x3fffffffu

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

#if defined(__GLIBC__)
/* The mutex's futex word: 0, or its holder's thread id with the kernel's
 * flag bits (glibc keeps it in __data.__lock). */
static unsigned lock_word(const struct rtm_lock *l)
{
    return (unsigned)__atomic_load_n(&l->mutex.__data.__lock, __ATOMIC_RELAXED);
}

/* The kind glibc's pthread_mutex_init gives a mutex of this type. */
static int reference_kind(int type)
{
    struct rtm_lock r;
    if (rtm__lock_init(&r, type, 0) != 0)
        return -1;
    int kind = r.mutex.__data.__kind;
    rtm__lock_destroy(&r);
    return kind;
}
#endif

/* Whether the futex word names a holder that no longer exists. The kernel
 * clears the holder of a robust mutex whose holder dies (it leaves the
 * owner-died flag) before that thread is gone, so a robust lock's word
 * never names a thread that is gone: only a damaged or crafted one does,
 * and glibc aborts the process that waits on it. */
static bool holder_gone(const struct rtm_lock *l)
{
#if defined(__GLIBC__)
    pid_t tid = (pid_t)(lock_word(l) & LOCK_TID_MASK);
    return tid != 0 && kill(tid, 0) != 0 && errno == ESRCH;
#else
    (void)l;
    return false;
#endif
}

int rtm__lock_validate(const struct rtm_lock *l)
{
    int type = (int)l->type;
    if (type != RTM_HEAP_LOCK_PI && type != RTM_HEAP_LOCK_ROBUST_SHARED)
        return EINVAL;
#if defined(__GLIBC__)
    /* The kind decides which of glibc's paths a call takes (some assert
     * what the kind promises): it must be the one init gave. */
    if (__atomic_load_n(&l->mutex.__data.__kind, __ATOMIC_RELAXED) != reference_kind(type))
        return EINVAL;
#endif
    return holder_gone(l) ? EINVAL : 0;
}

/* An absolute deadline timeout_us from now on clock. */
static struct timespec deadline(clockid_t clock, uint32_t timeout_us)
{
    struct timespec t;
    clock_gettime(clock, &t);
    t.tv_sec += (time_t)(timeout_us / 1000000u);
    t.tv_nsec += (long)(timeout_us % 1000000u) * 1000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

/* Waits for the held lock: for ever, or until timeout_us has passed
 * (ETIMEDOUT). On CLOCK_MONOTONIC where the C library can wait on it with
 * a priority-inheritance mutex (glibc 2.30 and later, the kernel's
 * FUTEX_LOCK_PI2), else on CLOCK_REALTIME, which a change of the wall
 * clock moves. */
static int wait_for(struct rtm_lock *l)
{
    uint32_t timeout_us = __atomic_load_n(&l->timeout_us, __ATOMIC_RELAXED);
    if (timeout_us == 0)
        return pthread_mutex_lock(&l->mutex);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 30)
    struct timespec mono = deadline(CLOCK_MONOTONIC, timeout_us);
    int rc = pthread_mutex_clocklock(&l->mutex, CLOCK_MONOTONIC, &mono);
    if (rc != EINVAL)
        return rc;
#endif
    struct timespec wall = deadline(CLOCK_REALTIME, timeout_us);
    return pthread_mutex_timedlock(&l->mutex, &wall);
}

__attribute__((noinline, cold)) int rtm__lock_wait(struct rtm_lock *l, int rc)
{
    bool waited = rc == EBUSY;
    /* Held, by a thread that is gone: a damaged robust lock, which glibc
     * would abort on (see holder_gone). */
    if (waited && l->type == RTM_HEAP_LOCK_ROBUST_SHARED && holder_gone(l))
        return EBADMSG;
    if (waited)
        rc = wait_for(l);
    if (rc == ETIMEDOUT) {
        __atomic_add_fetch(&l->timeouts, 1, __ATOMIC_RELAXED);
        return rc;
    }
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
    out->timeout_us = __atomic_load_n(&l->timeout_us, __ATOMIC_RELAXED);
    out->timeouts = __atomic_load_n(&l->timeouts, __ATOMIC_RELAXED);
}
