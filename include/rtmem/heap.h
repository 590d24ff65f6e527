/*
 * rtmem: the heap interface.
 *
 * Every heap kind in rtmem (TLSF, and the kinds that follow) is reachable
 * through these entry points, by name. A heap lives entirely inside memory the
 * caller provides: rtmem never calls the operating system, never locks, never
 * prints and never uses malloc on any of these paths. Where that memory comes
 * from (static array, locked mapping, shared memory) is the caller's choice.
 *
 * Concurrency: a heap created without a lock (the default) is not
 * thread-safe: serialise calls on it with a lock of your choice. A heap
 * created with one (struct rtm_heap_config.lock: a priority-inheritance
 * mutex, or a robust process-shared one) takes it inside every rtm_heap_*
 * call; rtmem/lock.h says how, what contention costs and what happens when
 * a holder dies. Different heaps are independent.
 *
 * Contract common to every kind (the conformance suite in tests/ holds every
 * kind listed by rtm_heap_kinds() to it):
 *  - Returned pointers are aligned to at least RTM_HEAP_MIN_ALIGN
 *    (alignof(max_align_t)).
 *  - rtm_heap_alloc(h, 0) returns a unique minimum-size block (non-NULL while
 *    the heap has room), which must be freed like any other.
 *  - Impossible sizes (SIZE_MAX, or anything whose rounding would overflow)
 *    return NULL and count as a failed allocation.
 *  - rtm_heap_free(h, NULL) is a no-op returning 0. Freeing an address outside
 *    every pool, a misaligned address or an already free block returns -EINVAL
 *    and leaves the heap untouched. "Already free" is detected as long as the
 *    block's memory has not been handed out again; freeing a pointer whose
 *    memory now belongs to another live block, or a pointer into a block's
 *    interior, is undefined (kinds refuse what they can cheaply recognise).
 *  - The memory given to create or add_pool may hold any garbage and need not
 *    be aligned; rtmem aligns it internally (and counts what it trims).
 *  - When every block has been freed, used_bytes is 0 and largest_free_bytes
 *    equals its value right after creation (coalescing is complete).
 *  - A pool larger than a kind supports in one piece is either used whole
 *    (split into several internal pools) or refused with -E2BIG; never
 *    silently truncated.
 *  - Several pools per heap, not necessarily adjacent, all usable.
 *
 * Worst-case time bounds are stated per function below as the bound for the
 * dispatching layer; each kind's header (e.g. rtmem/tlsf.h) states its own.
 * On a locked heap every bound grows by one lock and unlock, plus the wait
 * for the lock that rtmem/lock.h bounds, and every call may also fail as
 * rtmem/lock.h says when the lock cannot be taken (-EDEADLK,
 * -ENOTRECOVERABLE).
 */
#ifndef RTMEM_HEAP_H
#define RTMEM_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "rtmem/export.h"
#include "rtmem/lock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Alignment of every pointer a heap returns. */
/* clang-format off */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define RTM_HEAP_MIN_ALIGN ((size_t)alignof(max_align_t))
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define RTM_HEAP_MIN_ALIGN ((size_t)_Alignof(max_align_t))
#elif defined(__i386__) && defined(__GNUC__) && !defined(__clang__)
/* C99 has neither max_align_t nor alignof. gcc's max_align_t on i386 holds
 * a __float128: 16, as C11 and C++ say. */
#define RTM_HEAP_MIN_ALIGN ((size_t)16)
#elif defined(__GNUC__) || defined(__clang__)
/* C99 has neither max_align_t nor alignof: the stricter alignment of its
 * members, the value C11 gives on x86-64, arm64, 32-bit Arm and (clang)
 * i386. */
#define RTM_HEAP_MIN_ALIGN                                       \
    ((size_t)(__alignof__(long double) > __alignof__(long long) \
                  ? __alignof__(long double)                     \
                  : __alignof__(long long)))
#else
#define RTM_HEAP_MIN_ALIGN ((size_t)offsetof(struct { char c; long double ld; }, ld))
#endif
/* clang-format on */

/* A heap. Opaque: it is placed inside the memory given to rtm_heap_create. */
struct rtm_heap;
typedef struct rtm_heap rtm_heap_t;

/*
 * Statistics, kept as O(1) counters (reading them is O(1) for every kind and
 * safe to do in a control loop). All byte counts are in bytes of heap memory.
 */
struct rtm_heap_stats {
    /* Bytes available for blocks in all pools together: pool memory minus what
     * the kind reserves in it (pool descriptors, sentinels, alignment trim).
     * Per-block headers come out of this figure as blocks are allocated.
     * Constant between add_pool calls; never decreases. */
    size_t usable_bytes;
    /* Bytes of usable_bytes taken by live blocks, per-block header and size
     * rounding included. 0 when no block is live. */
    size_t used_bytes;
    /* usable_bytes - used_bytes: always equal, kept for convenience. */
    size_t free_bytes;
    /* Highest used_bytes ever seen since create. Never decreases. */
    size_t peak_used_bytes;
    /* A request size that rtm_heap_alloc would satisfy right now, and every
     * smaller one too: never more than the largest that succeeds, and for
     * TLSF exactly it. 0 when alloc(0) would fail (with TLSF nothing fits
     * then; a bucket kind may still have slots of a larger class). */
    size_t largest_free_bytes;
    /* Number of live blocks (allocated and not yet freed). */
    size_t live_blocks;
    /* Bytes of the caller's memory the kind uses for its own bookkeeping and
     * never hands out: control structure, pool descriptors, sentinels and
     * alignment trim, summed over create and every add_pool. With
     * usable_bytes it accounts for every byte given to the heap. */
    size_t overhead_bytes;
    /* Number of pools (the creating memory counts as one). */
    size_t pool_count;
    /* Allocation requests (alloc, aligned_alloc, calloc, realloc) that
     * returned NULL, bad arguments included. Never decreases. */
    uint64_t failed_allocs;
    /* Operations refused because the heap's metadata was found damaged (see
     * "Hardening" below): frees that returned -EFAULT, allocations that
     * returned NULL for that reason (also counted in failed_allocs), and
     * failed periodic checks. Always 0 at RTM_HEAP_HARDEN_NONE. Never
     * decreases; anything but 0 means a program wrote where it must not. */
    uint64_t corruptions;
};
/* Every public struct has a typedef, NAME_t: in C++, where the function
 * rtm_heap_stats hides the struct's name, rtm_heap_stats_t st{}; is the
 * spelling that compiles (or struct rtm_heap_stats st{};). */
typedef struct rtm_heap_stats rtm_heap_stats_t;

/*
 * Hardening: what a heap checks before it trusts metadata that a program's
 * overflow can reach (a neighbouring block's header, free-list links or tree
 * node). Chosen at create (rtm_heap_create_ex), fixed for the heap's life.
 * Each kind's header says exactly what it can and cannot detect, and
 * docs/hardening.md gives the measured cost of each level.
 *
 * When a check fails, the operation is refused before anything is written:
 * free returns -EFAULT, an allocation returns NULL, the heap is left as it
 * was, the corruptions counter grows and the heap's corruption handler (if
 * any) is called. The damaged metadata stays: later operations that need it
 * are refused too; rtm_heap_check names the heap corrupt.
 */
/* clang-format off */
#define RTM_HEAP_HARDEN_O1   0 /* O(1) checks on every path that trusts metadata (the default) */
#define RTM_HEAP_HARDEN_NONE 1 /* trust all metadata: a heap overflow can make free write anywhere */
#define RTM_HEAP_HARDEN_FULL 2 /* O(1) checks, and a full rtm_heap_check every check_interval
                                  operations made through rtm_heap_* (debugging: not O(1)) */
/* clang-format on */

/* What a failed check found, for the corruption handler. */
struct rtm_heap_corruption {
    const struct rtm_heap *heap;
    /* The address given to the operation (free, realloc, usable_size), or
     * NULL for an allocation or a periodic check. */
    const void *block;
    /* Where the damaged metadata lies (a block header, a free-list link, a
     * free run's descriptor, a page-map entry), or NULL for a periodic check. */
    const void *where;
    /* What was found, as a short static string ("header tag", "free-list
     * links", ...). */
    const char *what;
};
typedef struct rtm_heap_corruption rtm_heap_corruption_t;

/* Called in the thread whose operation found the damage, with the heap's
 * state unchanged, before the operation returns its refusal. It must not
 * call back into the same heap. */
typedef void (*rtm_heap_corruption_fn)(const struct rtm_heap_corruption *c, void *arg);

/* Options for rtm_heap_create_ex. Zero-initialised, it means the defaults of
 * rtm_heap_create: RTM_HEAP_HARDEN_O1, no handler, no lock. */
struct rtm_heap_config {
    int hardening; /* RTM_HEAP_HARDEN_*; 0 is RTM_HEAP_HARDEN_O1 */
    /* RTM_HEAP_HARDEN_FULL: operations between two full checks (0 or 1:
     * before every operation). Ignored at the other levels. */
    uint32_t check_interval;
    rtm_heap_corruption_fn on_corruption; /* NULL: count only */
    void *on_corruption_arg;
    /* RTM_HEAP_LOCK_* (rtmem/lock.h); 0 is RTM_HEAP_LOCK_NONE. Only
     * rtm_heap_create_ex takes a lock: a typed create_ex refuses one. */
    int lock;
    /* A locked heap: how long a call waits for a lock another thread holds
     * before it gives up with -ETIMEDOUT, in microseconds (0: no bound; the
     * wait then lasts as long as the holder holds it). rtmem/lock.h,
     * "Bounded waits"; rtm_heap_set_lock_timeout changes it later. With no
     * lock it must be 0. */
    uint32_t lock_timeout_us;
};
typedef struct rtm_heap_config rtm_heap_config_t;

/* Names of the heap kinds built into this library, NULL-terminated, "tlsf"
 * first. The array is static; do not modify or free it. O(1). */
RTM_API const char *const *rtm_heap_kinds(void);

/*
 * Creates a heap of the named kind inside [mem, mem + size). The heap's
 * control structure is placed at the start of that memory and the rest
 * becomes its first pool. mem may be unaligned and hold any garbage.
 * Returns the heap (an address inside mem), or NULL with errno set:
 *   EINVAL  kind or mem is NULL, or mem + size wraps around;
 *   ENOENT  no kind of that name;
 *   ENOMEM  size is too small for the control structure and one block;
 *   E2BIG   the kind cannot use a pool this large (see the kind's header).
 * Time: O(number of kinds) to find the name, then the kind's create bound
 * (O(size of control structure) for TLSF). Never touches the pool memory
 * beyond a fixed number of words.
 */
RTM_API struct rtm_heap *rtm_heap_create(const char *kind, void *mem, size_t size);

/* rtm_heap_create with options; cfg NULL means all defaults (the same as
 * rtm_heap_create). Fails as rtm_heap_create does, and with EINVAL for an
 * unknown hardening level or lock type, or a corruption handler on a heap
 * locked RTM_HEAP_LOCK_ROBUST_SHARED (a handler is an address in one
 * process; such a heap counts corruptions only). With a lock, the lock area comes
 * first in mem (rtmem/lock.h: the heap is then not at its start), and
 * creating the mutex may fail: ENOTSUP when the system has no
 * priority-inheritance (or robust, process-shared) mutexes, or the errno of
 * pthread_mutex_init (EAGAIN, ENOMEM); the memory is then the caller's
 * again. Same bounds, plus the mutex's initialisation. */
RTM_API struct rtm_heap *rtm_heap_create_ex(const char *kind, void *mem, size_t size,
                                            const struct rtm_heap_config *cfg);

/* Sets (fn != NULL) or clears the heap's corruption handler. The handler is
 * an address in this process: a heap image moved to another address, or
 * used by another process, must have its handler set again there, and a
 * heap locked RTM_HEAP_LOCK_ROBUST_SHARED (one that processes share at the
 * same time) takes none. Returns 0, or -EINVAL for a NULL or destroyed heap
 * or a handler on such a heap; on a locked heap, the lock's errors
 * (rtmem/lock.h; -EDEADLK from the thread holding it). O(1). */
RTM_API int rtm_heap_set_corruption_handler(struct rtm_heap *h, rtm_heap_corruption_fn fn,
                                            void *arg);

/* The heap's hardening level (RTM_HEAP_HARDEN_*), or -EINVAL for a NULL or
 * destroyed heap. O(1). */
RTM_API int rtm_heap_hardening(const struct rtm_heap *h);

/* Ends the heap. Every block becomes invalid; the memory is the caller's
 * again (rtmem never owned it). NULL is ignored. O(1). A locked heap's
 * destroy takes the lock (an operation in progress ends first), then
 * destroys the mutex: no thread may be inside, or enter, a call on the heap
 * by then, as with any mutex. */
RTM_API void rtm_heap_destroy(struct rtm_heap *h);

/* Allocates a block of at least size bytes, aligned to RTM_HEAP_MIN_ALIGN.
 * size 0 gives a minimum-size block. NULL when no free block fits or the size
 * is impossible (counted in failed_allocs). Time: the kind's alloc bound. */
RTM_API void *rtm_heap_alloc(struct rtm_heap *h, size_t size);

/* Like rtm_heap_alloc, aligned to alignment, which must be a power of two
 * (alignments below RTM_HEAP_MIN_ALIGN are raised to it). NULL for an
 * alignment that is 0 or not a power of two, or when nothing fits. The block
 * is freed with rtm_heap_free. Time: the kind's alloc bound. */
RTM_API void *rtm_heap_aligned_alloc(struct rtm_heap *h, size_t alignment, size_t size);

/* Allocates n * size bytes, all zero. NULL if n * size overflows (counted in
 * failed_allocs) or nothing fits. Time: alloc bound + O(n * size) to zero. */
RTM_API void *rtm_heap_calloc(struct rtm_heap *h, size_t n, size_t size);

/*
 * Resizes the block at p to at least size bytes, keeping its contents up to
 * the smaller of the old and new sizes. Grows or shrinks in place when the
 * kind allows, otherwise allocates, copies and frees.
 *   p == NULL: same as rtm_heap_alloc(h, size).
 *   size == 0: resizes to a minimum-size block (does NOT free p), so that NULL
 *              always means failure.
 * On failure returns NULL and p stays valid and unchanged. A p that
 * rtm_heap_free would refuse also gives NULL. Time: the kind's alloc + free
 * bounds + O(size) for a copy.
 */
RTM_API void *rtm_heap_realloc(struct rtm_heap *h, void *p, size_t size);

/* Frees the block at p. Returns 0, or -EINVAL for an address outside every
 * pool, a misaligned address, or a block that is not live (double free), or
 * -EFAULT when a hardening check finds the metadata it would trust damaged
 * (see "Hardening"); the heap is then left as it was. free(NULL) returns 0.
 * Time: the kind's free bound. */
RTM_API int rtm_heap_free(struct rtm_heap *h, void *p);

/* Usable bytes of the live block at p: at least the size it was requested
 * with, and it may all be written. 0 for NULL, a foreign or misaligned
 * address, or a free block. O(1) for a heap with one pool; see the kind for
 * more pools. */
RTM_API size_t rtm_heap_usable_size(const struct rtm_heap *h, const void *p);

/* Adds [mem, mem + size) to the heap as one more pool. It must not overlap
 * any existing pool. Returns 0, -EINVAL (NULL, wrap-around, overlap with a
 * pool of this heap), -ENOMEM (too small to hold one block), -E2BIG (too large
 * for the kind), -ENOTSUP (the kind takes one pool only, or the heap is a
 * shared heap, rtmem/shared.h, whose segment is all its memory) or -ENOSPC
 * (a robust heap has taken its 8 pools, rtmem/lock.h). Time: O(1) plus
 * O(number of pools) for the overlap check. */
RTM_API int rtm_heap_add_pool(struct rtm_heap *h, void *mem, size_t size);

/* Copies the statistics into *out. Returns 0, or -EINVAL for NULL arguments.
 * O(1). On a locked heap the lock is held only for the copy: a consistent
 * snapshot, safe to take from a monitor thread (rtmem/lock.h). */
RTM_API int rtm_heap_stats(const struct rtm_heap *h, struct rtm_heap_stats *out);

/* The bytes of memory the heap holds now. A page heap (xvheap) takes pages
 * from its provider as it grows and gives each back when its last block is
 * freed: the pages it holds times their size (its control structure and
 * page stacks not counted). Every other kind holds all it was given:
 * usable_bytes + overhead_bytes of its statistics. 0 for NULL or a destroyed
 * heap. O(1); a page heap's figure is read without its lock (one word). */
RTM_API size_t rtm_heap_held_bytes(const struct rtm_heap *h);

/* Walks the whole heap and verifies every invariant the kind keeps (block
 * chain, free lists, bitmaps, counters). Returns 0 if consistent, -EINVAL for
 * a NULL or destroyed heap, -EFAULT if the heap is corrupt. O(number of
 * blocks + number of free lists): not for a control loop, nor, on a locked
 * heap, for any thread sharing the heap with one (it holds the lock for the
 * whole walk). Every link, offset and count it follows is first checked to
 * lead inside one of the heap's pools: whatever the blocks, free lists,
 * trees and page maps hold, it reads nothing outside the control structure
 * and the pools, as long as the pool list and each pool's bounds (written
 * by create and add_pool only) are intact, which attaching to a shared heap
 * verifies (rtmem/shared.h). */
RTM_API int rtm_heap_check(const struct rtm_heap *h);

/* Name of the heap's kind, as listed by rtm_heap_kinds(). O(1). */
RTM_API const char *rtm_heap_kind(const struct rtm_heap *h);

/* How many blocks of size bytes a freshly created heap with the pools this
 * heap has now is guaranteed to hold, as the kind documents it (the
 * conformance suite checks the real fill against it). O(number of pools). */
RTM_API size_t rtm_heap_fill_count(const struct rtm_heap *h, size_t size);

/*
 * Pool sizing: how much memory a heap needs so that no allocation ever
 * fails, from a program's limits alone (docs/size.md has the derivations,
 * and the adversaries that test them).
 *
 * The limits, for every instant of the heap's life: the bytes requested by
 * the live blocks, the request being made included, never exceed max_live
 * (M); no request exceeds max_block (n) nor is below min_block (m);
 * rtm_heap_aligned_alloc is never given an alignment above max_align. A
 * request of 0 bytes counts as 1; calloc(k, s) requests k * s bytes; a
 * realloc requests its new size while the old block is still live (the
 * two together within M), and so does one that resizes in place.
 *
 * The guarantee: a heap of the kind created on a region of the returned
 * size or larger (rtm_heap_create, or rtm_heap_create_ex with the lock
 * given; the control structure, the lock area and every alignment trim are
 * counted, for a region at any address) never fails an allocation made within the
 * limits, whatever the order of the allocations and frees. It is proven
 * from the kind's structure, not measured; it assumes a heap that no
 * program write has damaged, and one pool (add_pool adds room, and never
 * harm, but is not part of the figure).
 *
 * The figure per kind, from L, the number of live blocks, at most
 * (M - r) / m beside a request of r bytes:
 *  - tlsf: free blocks never touch, so at most L + 1 lie between the live
 *    ones, and a request fails only when each is smaller than its size
 *    rounded up to its class boundary, R (16-byte classes below 1 KiB, 32
 *    classes per power of two above; the request's cost plus alignment + 16
 *    for an alignment above 16). With e the most a block can take beyond its
 *    request (header, rounding, an absorbed remainder: at most 47 bytes),
 *    the usable bytes at a failure are at most
 *        (M - r) + floor((M - r) / m) * (e + R - 16) + R - 16,
 *    and the bound is the largest of these over m <= r <= n, plus 16 and the
 *    control structure. It grows as M * n / m: the worst case of best fit
 *    (Robson), which TLSF's good fit shares. Give min_block when the
 *    smallest request is known.
 *  - heapmem, xnheap: a bucket class takes a new 512-byte page only when
 *    all its pages are full, so class c never holds more than
 *    1 + (M - lo) / (512 / c * lo) pages (lo: the smallest request the
 *    class serves); page runs number at most (M - r) / max(m, 257) (or
 *    (M - r) / m when max_align is a page or more: any request may then
 *    take a run); free runs never touch; a request of k pages fails only
 *    when every free run is shorter. The pages at a failure are at most B + N + (M - 1) / 512 +
 *    (B + N + 1)(k - 1) (B bucket pages, N runs), maximised over the
 *    requests; the bound is one page more, with the page map, the control
 *    structure and the pages' alignment. With max_block up to 256 it is
 *    about 25 * M for m = 1 and 9 * M for m = 16; with larger blocks the
 *    term (B + 1)(k - 1) leads: about M * n / 20 for m = 1, M * n / 58 for
 *    m = 16, M * n / 257 when no request is small enough for a bucket.
 *  - halffit: a request of r bytes takes the power of two F(r) = max(32,
 *    2^ceil(log2(r + 16))), the live fragments at most M_f = floor(rho M)
 *    bytes (rho: the largest F(r) / r over the requests), and the bound is
 *    Robson's for allocators of power-of-two blocks,
 *        M_f (1 + log2(F(n) / F(m))),
 *    plus the control structure, fence and sentinel: the figure the
 *    literature gives for half-fit (as o1heap's), which grows as M log(n /
 *    m) where tlsf's grows as M n / m. It is the exception to "proven"
 *    above: the adversaries of tests/halffit_test.c keep within it, and
 *    none known needs more. With max_align above 32 the bound is at least
 *    the figure that holds for any placement (rtmem/halffit.h).
 * These are upper bounds: the adversaries of docs/size.md come within the
 * factors it lists, and a tighter proof may exist.
 */
struct rtm_heap_limits {
    size_t max_live;  /* M: at least 1 */
    size_t max_block; /* n: at least 1; above max_live it counts as max_live */
    size_t min_block; /* m: 0 counts as 1; at most max_block */
    size_t max_align; /* largest alignment given to aligned_alloc (a power
                         of two), or 0 when it is never called */
    int lock;         /* RTM_HEAP_LOCK_*: the lock the heap is created with
                         (a robust heap's blocks carry 16 bytes more each) */
};
typedef struct rtm_heap_limits rtm_heap_limits_t;

/*
 * A region size (bytes) for which the guarantee above holds for
 * a heap of the kind without a lock, within max_live, with requests from 1
 * to max_block bytes, alignments of RTM_HEAP_MIN_ALIGN: the three-argument
 * form of rtm_heap_pool_bound_ex, assuming the worst (requests as small as
 * one byte). Returns 0 with errno set:
 *   EINVAL     kind NULL, max_live or max_block 0;
 *   ENOENT     no kind of that name;
 *   EOVERFLOW  the figure does not fit in a size_t;
 *   E2BIG      the kind cannot use a pool that large in one piece (or
 *              within a few KiB of it), or never serves a request of
 *              max_block bytes (xvheap: above a page's largest, with the
 *              alignment's slack).
 * O(number of the kind's size classes up to max_block): at most about 1,100
 * steps for tlsf, and a few dozen for heapmem, xnheap and halffit; O(1)
 * for xvheap. Never allocates.
 */
RTM_API size_t rtm_heap_pool_bound(const char *kind, size_t max_live, size_t max_block);

/* rtm_heap_pool_bound with all the limits (lim NULL: EINVAL; min_block
 * above max_block or max_live, a max_align that is not 0 or a power of two, or an
 * unknown lock: EINVAL). Same errors and bound otherwise. */
RTM_API size_t rtm_heap_pool_bound_ex(const char *kind, const struct rtm_heap_limits *lim);

#ifdef __cplusplus
}
#endif

#endif /* RTMEM_HEAP_H */
