/*
 * The lock policies of locked heaps (rtmem/lock.h): a priority-inheritance
 * mutex, or a robust, process-shared one, both error-checking, in the heap's
 * lock area. No policy of its own beyond the mutex's attributes: the
 * dispatcher (src/heap/heap.c) decides what an owner death means for the
 * heap.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/types.h>
#include <time.h>

#include "lock.h"

/* ThreadSanitizer does not see pthread_mutex_clocklock take a mutex (it
 * has no interceptor for it): its builds wait with timedlock. */
#if defined(__SANITIZE_THREAD__)
#define LOCK_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LOCK_TSAN 1
#endif
#endif
#ifndef LOCK_TSAN
#define LOCK_TSAN 0
#endif

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

#if defined(__GLIBC__)
/* The kernel's flag of a kernel thread in /proc/<tid>/stat (PF_KTHREAD). */
#define TASK_KTHREAD 0x00200000UL

/* Whether tid is a task that can hold a futex: a user thread that has not
 * exited (not a zombie, not a kernel thread), by /proc/<tid>/stat; without
 * /proc, whether kill(tid, 0) finds it. */
static bool live_user_task(pid_t tid)
{
    char path[48], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (access("/proc/self/stat", F_OK) != 0)
            return kill(tid, 0) == 0 || errno != ESRCH; /* no /proc here */
        return false;
    }
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return false; /* it ended as it was read */
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* after the command: " S ppid ..." */
    if (!p || p[1] != ' ' || !p[2])
        return true;
    char state = p[2];
    if (state == 'Z' || state == 'X' || state == 'x')
        return false;
    p += 2; /* the state is field 3; flags is field 9 */
    for (int field = 3; field < 9 && p; field++)
        p = strchr(p + 1, ' ');
    unsigned long flags = p ? strtoul(p + 1, NULL, 10) : 0;
    return !(flags & TASK_KTHREAD);
}
#endif

/* Whether the futex word names a holder that cannot hold it: a thread that
 * is gone or exiting, or a kernel thread. The kernel clears the holder of a
 * robust mutex whose holder dies (it leaves the owner-died flag) before
 * that thread is gone, and a holder that unlocks clears it too: a word that
 * still names such a task after it was looked at is damaged or crafted,
 * and glibc aborts a process that locks it (the kernel answers ESRCH or
 * EPERM). A word that changed meanwhile is looked at again. */
static bool holder_bad(const struct rtm_lock *l)
{
#if defined(__GLIBC__)
    for (int tries = 0; tries < 4; tries++) {
        unsigned word = lock_word(l);
        pid_t tid = (pid_t)(word & LOCK_TID_MASK);
        if (tid == 0 || live_user_task(tid))
            return false;
        if (lock_word(l) == word)
            return true;
    }
#else
    (void)l;
#endif
    return false;
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
    return holder_bad(l) ? EINVAL : 0;
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
 * a priority-inheritance mutex (glibc 2.35 and later on a kernel with
 * FUTEX_LOCK_PI2), else on CLOCK_REALTIME, which a change of the wall
 * clock moves. */
static int wait_for(struct rtm_lock *l)
{
    uint32_t timeout_us = __atomic_load_n(&l->timeout_us, __ATOMIC_RELAXED);
    if (timeout_us == 0)
        return pthread_mutex_lock(&l->mutex);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 30) && !LOCK_TSAN
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
    /* Held by a task that cannot hold it: a damaged robust lock, which
     * glibc would abort on (see holder_bad). One read of /proc per wait. */
    if (waited && l->type == RTM_HEAP_LOCK_ROBUST_SHARED && holder_bad(l))
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
