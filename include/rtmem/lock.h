/*
 * rtmem: heaps that several threads, or processes, share behind a lock the
 * heap keeps in its own memory.
 *
 * The lock is chosen at create (struct rtm_heap_config.lock, rtmem/heap.h)
 * and fixed for the heap's life:
 *   RTM_HEAP_LOCK_NONE           no lock (the default): the caller serialises
 *                                calls on the heap, as before;
 *   RTM_HEAP_LOCK_PI             a priority-inheritance mutex
 *                                (PTHREAD_PRIO_INHERIT), private to the
 *                                process: threads of one program;
 *   RTM_HEAP_LOCK_ROBUST_SHARED  a robust, process-shared, priority-inheritance
 *                                mutex: for a heap in memory that several
 *                                processes map (at whatever address each maps
 *                                it), which outlives a holder that dies
 *                                ("Owner death" below).
 * Both mutexes are error-checking (PTHREAD_MUTEX_ERRORCHECK): a thread that
 * calls into a heap whose lock it holds (a corruption handler calling back)
 * gets -EDEADLK instead of a deadlock.
 *
 * Which calls lock. Every rtm_heap_* call on a locked heap takes its lock and
 * gives it back before it returns, so code written for an unlocked heap works
 * unchanged: alloc, aligned_alloc, realloc (its copy included), free,
 * usable_size, add_pool, stats, check, fill_count,
 * set_corruption_handler and destroy hold it for the whole call; calloc
 * holds it for the allocation only and zeroes the new block after giving it
 * back. rtm_heap_kind, rtm_heap_hardening and the two calls below read what
 * does not change, or atomic counters: they take no lock. The typed fronts
 * (rtm_tlsf_*, rtm_heapmem_*, rtm_xnheap_*, rtm_halffit_*) never lock:
 * their create_ex refuses a lock (EINVAL) and there is no way from a
 * locked heap to them.
 *
 * Layout. A locked heap's memory starts with its lock area:
 * RTM_HEAP_LOCK_AREA_BYTES, aligned to RTM_HEAP_LOCK_ALIGN (up to
 * RTM_HEAP_LOCK_ALIGN - 1 bytes of trim before it). The kind's heap follows,
 * laid out in the rest of the memory exactly as rtm_heap_create would lay it
 * out there. The heap's header records the distance back to its lock area,
 * never an address, so a locked heap works at whatever address its memory is
 * mapped. Statistics count the area and its trim in overhead_bytes
 * (usable_bytes + overhead_bytes is still every byte given), and
 * rtm_heap_fill_count is the kind's for the rest of the memory. An unlocked
 * heap has no lock area: its layout, statistics and fill counts are those
 * of a heap made before locks existed.
 *
 * Time. Uncontended, a call on a locked heap costs its unlocked bound plus
 * one lock and one unlock of the mutex (docs/bench.md has the measured
 * figure, from rtmem bench). A thread that finds the lock held waits for
 * the holder's operation to end. With priority inheritance the holder runs
 * at the highest priority of its waiters until it gives the lock back, so a
 * thread of middle priority cannot delay it, and the kernel hands the lock
 * to its highest-priority waiter first (first come among equals). So:
 *  - the highest-priority waiter waits for at most one operation, the one in
 *    progress, plus the hand-over (the holder's unlock wakes the waiter
 *    through the kernel), plus whatever of higher priority preempts the
 *    holder meanwhile, as it would have preempted the waiter;
 *  - a waiter behind k threads of its priority or higher that use the heap
 *    waits for at most (k + 1) x (one operation + the hand-over);
 *  - the hand-over is the kernel's wake-up latency: bounded on a real-time
 *    (PREEMPT_RT) kernel, not on another, where it reaches milliseconds
 *    under load;
 *  - "one operation" is the longest any thread makes on the heap: the kind's
 *    alloc and free bounds, but also a realloc's copy, an add_pool, an
 *    rtm_heap_check's walk (O(blocks)), RTM_HEAP_HARDEN_FULL's periodic
 *    full check, a corruption handler (it runs inside the operation that
 *    found the damage), and once, after a holder died,
 *    the check that follows ("Owner death"). A heap that a control loop
 *    shares should see only bounded calls from every thread.
 *
 * Statistics for a monitor. rtm_heap_stats holds the lock only while it
 * copies the kind's O(1) counters: a monitor thread reads a consistent
 * snapshot while a control loop allocates, delays that loop by at most one
 * copy, and (with priority inheritance) waits itself for at most one of the
 * loop's operations.
 *
 * Robust heaps keep more (RTM_HEAP_LOCK_ROBUST_SHARED only; other heaps pay
 * nothing for it):
 *  - an undo log, after the lock area: every metadata word a call writes is
 *    recorded with its old value before it is written, and the log is
 *    emptied when the call ends. Each call records a bounded number of
 *    words (TLSF, halffit: a constant; heapmem and xnheap: O(log r)), so
 *    its bound stays O(1) / O(log r) with a larger constant
 *    (docs/sharing.md, "Heaps that processes share", has the measured
 *    cost). The log's size
 *    is fixed at create from the kind and the memory size
 *    (rtm_heap_lock_bytes), and counted in overhead_bytes: TLSF and
 *    halffit 2240 bytes; heapmem and xnheap 2752 bytes + 1024 per
 *    doubling of the memory (64 KiB: 9.7 KiB, 1 MiB: 13.7 KiB, 1 GiB:
 *    23.7 KiB). It names up to 8 pools added after create:
 *    rtm_heap_add_pool refuses a ninth with -ENOSPC;
 *  - an owner record of 16 bytes at the end of every block (the process id
 *    and start time of the process that allocated it): every block costs 16
 *    bytes more, usable sizes and rtm_heap_fill_count are the kind's for the
 *    request + 16, largest_free_bytes the kind's - 16. Shared heaps list and
 *    reclaim the blocks of dead processes from them (rtmem/shared.h). An
 *    overrun of up to 16 bytes past a block's usable size lands in its
 *    record: the hardened checks, which would see it on a heap without
 *    records, do not; the block only loses its owner (never reclaimed).
 *
 * Owner death (RTM_HEAP_LOCK_ROBUST_SHARED). When the thread or process that
 * holds the lock dies, it may have stopped anywhere in the middle of a call.
 * The next caller that takes the lock, before anything else:
 *  1. rolls the dead holder's call back from the undo log: every word it
 *     wrote gets its old value back, last first, so the heap is exactly as
 *     that call found it (an allocation did not happen, a free did not
 *     happen: the block is still the dead process's). O(words of one call).
 *     A call that outgrew the log (none ever has) is not rolled back: the
 *     check below decides;
 *  2. runs the kind's full check (rtm_heap_check: O(blocks), paid once, by
 *     that caller, on top of its own call's bound);
 *  3. if the heap is consistent, makes the lock consistent again
 *     (pthread_mutex_consistent), counts the death (owner_deaths, recovered)
 *     and goes on with its own call as usual. Blocks the dead holder had
 *     allocated stay allocated, with its owner record;
 *  4. if the heap is damaged (the dead holder had damaged it before its call
 *     began, or the log itself is damaged), counts a corruption (the heap's
 *     corruptions counter; such a heap has no corruption handler, since a
 *     handler is an address in one process), leaves the lock unrecoverable
 *     and fails its own call with -ENOTRECOVERABLE (an allocation: NULL,
 *     errno ENOTRECOVERABLE). Every later call fails the same way, at once,
 *     and changes nothing; rtm_heap_lock_stats still reads. Nothing is
 *     repaired: the memory is to be given to a new heap.
 * With RTM_HEAP_LOCK_PI, a thread that ends while it holds the lock (only a
 * handler it calls from inside a heap call can make it) leaves it held for
 * ever: later callers wait, as with any mutex.
 *
 * Bounded waits. A lock held by a thread that does not give it back (one
 * stopped by SIGSTOP or a debugger, one of low priority starved on a
 * kernel without priority inheritance for it, a process gone wrong) makes
 * every other caller wait as long, with no bound. A heap given a timeout
 * (rtm_heap_config.lock_timeout_us, rtm_shared_config.lock_timeout_us,
 * rtm_heap_set_lock_timeout) bounds that wait instead: a call that has
 * waited that long gives up, does nothing and returns -ETIMEDOUT (an
 * allocation: NULL, errno ETIMEDOUT), and the lock's timeouts counter
 * grows (rtm_heap_lock_stats), so that a monitor sees it. The wait is
 * measured on CLOCK_MONOTONIC (with glibc 2.35 or later on a kernel of 5.14 or later; CLOCK_REALTIME
 * otherwise, which a change of the wall clock moves), and ends that long
 * after the call found the lock held, plus the kernel's wake-up latency.
 * The uncontended path does not change. The timeout is the heap's, in its
 * lock area: every thread and process that uses the heap has it. Choose it
 * above the longest operation any user of the heap makes (see "Time"), so
 * that only a holder gone wrong makes a call give up.
 *
 * A robust lock whose word names a holder that cannot hold it (a thread
 * that is gone or exiting, a kernel thread: only damage or a crafted
 * segment leaves that, and the C library would abort the process that
 * waits on it) is not waited on: the call counts a corruption and fails
 * with -ENOTRECOVERABLE, without abandoning the lock (a later call works
 * if the word was repaired). Finding that costs one read of
 * /proc/<tid>/stat per wait for a held robust lock.
 *
 * When the lock cannot be taken (-EDEADLK, -ENOTRECOVERABLE, -ETIMEDOUT), a call does
 * nothing and returns that code; an allocation returns NULL with errno set
 * to the code, and is not counted in failed_allocs; usable_size and
 * fill_count return 0.
 *
 * Thread-safety tools. TLSF's free reads the last word of the block before
 * the one it frees, whatever that block's state, and uses it only when that
 * block is free (a branch-free path). When the block is live and its owner
 * writes that word in another thread at the same instant, the value read is
 * thrown away, but ThreadSanitizer reports a race whose first frame is
 * free_plan: tests/tsan.supp suppresses the reports whose first frame is
 * free_plan (race_top:free_plan: its reads of the neighbours' headers and
 * of that word; a missing lock still shows in the list and bitmap updates
 * that follow), and a program tested under ThreadSanitizer can use the
 * same line.
 *
 * Moving a locked heap's image (copying its memory elsewhere, as an
 * unlocked heap may be) is only for a lock that no thread holds or waits on,
 * and POSIX does not promise that a copied mutex works (glibc's does, and
 * the tests hold rtmem to it). Mapping the same memory at different
 * addresses in several processes is what RTM_HEAP_LOCK_ROBUST_SHARED is for.
 */
#ifndef RTMEM_LOCK_H
#define RTMEM_LOCK_H

#include <stddef.h>
#include <stdint.h>

#include "rtmem/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* clang-format off */
#define RTM_HEAP_LOCK_NONE          0 /* no lock (the default) */
#define RTM_HEAP_LOCK_PI            1 /* priority-inheritance mutex, this process's threads */
#define RTM_HEAP_LOCK_ROBUST_SHARED 2 /* robust, process-shared, priority-inheritance mutex */
/* clang-format on */

/* The lock area at the start of a locked heap's memory, and its alignment:
 * at most RTM_HEAP_LOCK_OVERHEAD_MAX bytes come before the kind's memory (a
 * robust heap's undo log comes on top), and the kind's heap in what is
 * left may have less usable room than by that much (a page heap rounds to
 * its pages): rtm_heap_lock_bytes gives the whole difference. */
#define RTM_HEAP_LOCK_AREA_BYTES   ((size_t)128)
#define RTM_HEAP_LOCK_ALIGN        ((size_t)64)
#define RTM_HEAP_LOCK_OVERHEAD_MAX (RTM_HEAP_LOCK_AREA_BYTES + RTM_HEAP_LOCK_ALIGN - 1)

struct rtm_heap;

/* What a heap's lock has seen. Every counter only grows. */
struct rtm_heap_lock_stats {
    int type;           /* RTM_HEAP_LOCK_* */
    int recoverable;    /* 1; 0 once the heap was found damaged after an owner
                        death: every call fails with -ENOTRECOVERABLE */
    uint64_t calls;     /* calls that took the lock */
    uint64_t contended; /* of those, calls that found it held and waited */
    /* Times the lock was taken from a holder that had died (robust lock
     * only), and of those, times the heap was found consistent and the call
     * went on. recovered never exceeds owner_deaths; a holder that dies
     * while checking the heap after an earlier death counts again, so the
     * difference is the deaths whose check did not complete, plus one when
     * recoverable is 0. */
    uint64_t owner_deaths;
    uint64_t recovered;
    /* The heap's bound on a wait for the lock, in microseconds (0: none),
     * and the waits that reached it and gave up (-ETIMEDOUT). */
    uint32_t timeout_us;
    uint64_t timeouts;
};
typedef struct rtm_heap_lock_stats rtm_heap_lock_stats_t;

/* The heap's lock type (RTM_HEAP_LOCK_*), or -EINVAL for a NULL or destroyed
 * heap. O(1); takes no lock. */
RTM_API int rtm_heap_lock_type(const struct rtm_heap *h);

/* How many usable bytes a heap of kind created in size bytes loses to lock
 * (RTM_HEAP_LOCK_*), at most: the lock area and its alignment trim
 * (RTM_HEAP_LOCK_OVERHEAD_MAX), a robust heap's undo log, and for heapmem
 * and xnheap one page (RTM_PAGEHEAP_PAGE_SIZE) lost to rounding; 0 for no
 * lock, an unknown kind or lock. Give a locked heap this much more memory
 * than an unlocked one would need (a shared segment: its header and catalog
 * too, rtmem/shared.h). O(1). */
RTM_API size_t rtm_heap_lock_bytes(const char *kind, int lock, size_t size);

/* Sets how long a call on the locked heap h waits for a lock another
 * thread holds before it gives up with -ETIMEDOUT, in microseconds (0: no
 * bound), for every thread and every process that uses h from now on
 * (rtm_heap_config.lock_timeout_us sets it at create; "Bounded waits"
 * above). Returns 0, or -EINVAL for NULL, a destroyed or an unlocked heap.
 * O(1); takes no lock. */
RTM_API int rtm_heap_set_lock_timeout(struct rtm_heap *h, uint32_t timeout_us);

/* Copies what the heap's lock has seen into *out (an unlocked heap: type
 * RTM_HEAP_LOCK_NONE, recoverable 1, counters 0). Returns 0, or -EINVAL for
 * NULL arguments or a destroyed heap. O(1); takes no lock, so it answers on
 * an unrecoverable heap too: each counter is read atomically, not all of
 * them at one instant. */
RTM_API int rtm_heap_lock_stats(const struct rtm_heap *h, struct rtm_heap_lock_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* RTMEM_LOCK_H */
