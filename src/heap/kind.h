/*
 * Internal: what every heap kind provides, and the header every heap starts
 * with. Not installed; kinds and the dispatcher (heap.c) include it.
 */
#ifndef RTMEM_SRC_HEAP_KIND_H
#define RTMEM_SRC_HEAP_KIND_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "rtmem/heap.h"

/*
 * RTM_ASSERT(cond): an internal invariant of an allocator, which no input
 * can break (bad input is refused and reported, never asserted on). Checked
 * in a debug build (cmake -DRTMEM_DEBUG=ON; the sanitizer builds of CI turn
 * it on), where a broken one stops the program at once; compiled out
 * otherwise, so a release build never aborts and pays nothing.
 */
#if defined(RTM_DEBUG) && RTM_DEBUG
#define RTM_ASSERT(cond) ((cond) ? (void)0 : __builtin_trap())
#else
#define RTM_ASSERT(cond) ((void)0)
#endif

/* "RTMH": set by create, cleared by destroy. */
#define RTM_HEAP_MAGIC 0x524d5448u

/*
 * The first bytes of every heap's control structure. Heap metadata holds
 * offsets, never pointers, so a heap image stays valid at any address (a
 * heap shared between processes is mapped wherever each one maps it): the
 * kind is an index into the registry of this process, not an address. The
 * corruption handler below is the one exception, and says so.
 */
struct rtm_heap {
    uint32_t magic;
    uint32_t kind;          /* index into the registry (heap.c) */
    uint64_t failed_allocs; /* shared by the kind and the dispatcher (calloc overflow) */
    uint64_t corruptions;   /* operations refused for damaged metadata */
    uint64_t tag_key;       /* keys the integrity tags of the kinds that keep them */
    uint32_t hardening;     /* RTM_HEAP_HARDEN_*, fixed at create */
    uint32_t check_interval;
    uint32_t until_check; /* RTM_HEAP_HARDEN_FULL: operations before the next full check */
    /* 0: no lock. Else the heap is locked, and its lock area (src/lock/lock.h)
     * starts this many bytes before this header: a distance, so that the
     * heap and its lock move together. Set by the dispatcher (heap.c): kinds
     * never lock. */
    uint32_t lock_offset;
    /* The corruption handler: the one absolute address in a heap, valid only
     * in the process that set it (rtm_heap_set_corruption_handler says so). */
    rtm_heap_corruption_fn on_corruption;
    void *on_corruption_arg;
};

/* One heap kind. Every entry is mandatory; each takes a heap whose magic the
 * dispatcher has already verified. */
struct rtm_heap_ops {
    const char *name;
    /* cfg is never NULL here and has been validated (rtm_kind_config) */
    struct rtm_heap *(*create)(void *mem, size_t size, const struct rtm_heap_config *cfg);
    void *(*alloc)(struct rtm_heap *h, size_t size);
    void *(*aligned_alloc)(struct rtm_heap *h, size_t alignment, size_t size);
    void *(*realloc)(struct rtm_heap *h, void *p, size_t size);
    int (*free)(struct rtm_heap *h, void *p);
    size_t (*usable_size)(const struct rtm_heap *h, const void *p);
    int (*add_pool)(struct rtm_heap *h, void *mem, size_t size);
    int (*stats)(const struct rtm_heap *h, struct rtm_heap_stats *out);
    int (*check)(const struct rtm_heap *h);
    size_t (*fill_count)(const struct rtm_heap *h, size_t size);
    /* Calls fn with the address of every live block (the kind's own
     * address: what its alloc returned), in address order per pool, until
     * fn returns nonzero, which walk returns; fn must not change the heap.
     * -EFAULT when a block's size leaves its pool. O(blocks + pools). */
    int (*walk)(const struct rtm_heap *h, int (*fn)(void *arg, void *block), void *arg);
    /*
     * Whether the kind's layout can be trusted in memory the caller knows
     * only the extent of (a segment another process wrote): h's common
     * header has been accepted (rtm__heap_validate), and bytes >=
     * sizeof(struct rtm_heap) bytes from h on are mapped. Returns 0 when
     * the control structure and every pool descriptor lie in [h, h + bytes),
     * and so does every range they name, aligned and in order, with counts
     * that agree with sizes and a pool list that ends after pool_count
     * descriptors; else -EFAULT. Looks at what only create and add_pool
     * write (and at fields that hold their bounds at every instant), so it
     * needs no lock. Reads nothing outside [h, h + bytes), whatever those
     * bytes hold, and writes nothing. O(pools).
     */
    int (*validate)(const struct rtm_heap *h, size_t bytes);
    /* rtm_heap_pool_bound for a heap of this kind without a lock: the
     * region size, or 0 with errno set (EOVERFLOW, E2BIG). lim has been
     * checked and normalised: 1 <= min_block <= max_block <= max_live, and
     * max_align 0 or a power of two; a robust lock's per-block record is
     * already in the sizes. Writes nothing. */
    size_t (*pool_bound)(const struct rtm_heap_limits *lim);
    /* Optional: the bytes of pages a page heap holds now (rtm_heap_held_bytes);
     * NULL for a kind that holds every byte it was given. O(1), no lock. */
    size_t (*held_bytes)(const struct rtm_heap *h);
    /* Optional: what destroy undoes besides the magic (a heap on a page
     * provider gives its pages back). Called unlocked or with the lock
     * held, before the magic is cleared. */
    void (*destroy)(struct rtm_heap *h);
};

/* a + b and a * b, saturated at SIZE_MAX (the pool bounds' arithmetic: a
 * saturated figure is reported as EOVERFLOW). */
static inline size_t rtm_sat_add(size_t a, size_t b)
{
    size_t r;
    return __builtin_add_overflow(a, b, &r) ? SIZE_MAX : r;
}

static inline size_t rtm_sat_mul(size_t a, size_t b)
{
    size_t r;
    return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}

/* The kinds, in registry order ("tlsf" first). */
extern const struct rtm_heap_ops rtm__tlsf_ops;
extern const struct rtm_heap_ops rtm__heapmem_ops;
extern const struct rtm_heap_ops rtm__xnheap_ops;
extern const struct rtm_heap_ops rtm__halffit_ops;
extern const struct rtm_heap_ops rtm__xvheap_ops;
extern const struct rtm_heap_ops rtm__zsheap_ops;

/* The operations that change a heap, as a heap with an undo log runs them:
 * the kind's code compiled a second time, each metadata store recorded
 * first (store.h). The dispatcher calls them with the lock held and ends
 * each call with rtm_undo_commit. */
struct rtm_heap_wops {
    void *(*alloc)(struct rtm_heap *h, size_t size);
    void *(*aligned_alloc)(struct rtm_heap *h, size_t alignment, size_t size);
    void *(*realloc)(struct rtm_heap *h, void *p, size_t size);
    int (*free)(struct rtm_heap *h, void *p);
    int (*add_pool)(struct rtm_heap *h, void *mem, size_t size);
    /* The usable size of p, a block this call has just taken: O(1), its
     * validity not checked again (usable_size does that). */
    size_t (*taken_size)(const struct rtm_heap *h, const void *p);
};

extern const struct rtm_heap_wops rtm__tlsf_logged_ops;
extern const struct rtm_heap_wops rtm__heapmem_logged_ops;
extern const struct rtm_heap_wops rtm__xnheap_logged_ops;
extern const struct rtm_heap_wops rtm__halffit_logged_ops;
extern const struct rtm_heap_wops rtm__xvheap_logged_ops;
extern const struct rtm_heap_wops rtm__zsheap_logged_ops;

/*
 * Finds room for an object of `need` bytes aligned to `align` at the start of
 * [mem, mem + size): returns its address, or 0 with *err set to EINVAL (NULL
 * memory, or a range that wraps around) or ENOMEM (too small). Every kind's
 * create and add_pool start with it.
 */
static inline uintptr_t rtm_kind_place(void *mem, size_t size, size_t align, size_t need, int *err)
{
    uintptr_t lo = (uintptr_t)mem, at = (lo + (align - 1)) & ~(uintptr_t)(align - 1);
    if (!mem || lo + size < lo) {
        *err = EINVAL;
        return 0;
    }
    if (at < lo || at > lo + size || lo + size - at < need) {
        *err = ENOMEM;
        return 0;
    }
    return at;
}

/* Whether [a, a + alen) and [b, b + blen) overlap, for offsets taken modulo
 * 2^N from one base (neither range wraps in the address space). */
static inline int rtm_kind_overlap(size_t a, size_t alen, size_t b, size_t blen)
{
    return a - b < blen || b - a < alen;
}

/* The head of every kind's pool descriptor: the list of pools and the memory
 * each was given, as offsets from the heap base. */
struct rtm_pool_link {
    size_t next;      /* offset of the next pool's descriptor (its link), 0 at the end */
    size_t raw_start; /* the memory given for the pool */
    size_t raw_len;
};

/*
 * The pool-list walk of a kind's validate op (struct rtm_heap_ops), for a
 * control structure at base of ctl_size bytes holding the first pool's
 * link, and the counters it keeps (read by the caller). Every descriptor
 * after the first lies inside [base, base + bytes), aligned to desc_align,
 * desc_size bytes long; pool_ok checks the pool whose descriptor starts
 * with link d, given lo (the end of the structure that holds d: its pool
 * starts there or after), and sets *usable to the pool's usable bytes
 * (at least 1). Then the list holds pool_count descriptors, whose usable
 * bytes add up to usable_bytes and whose memory (raw_len) to usable_bytes
 * + overhead_bytes. Returns 0, or -EFAULT for the first thing that fails.
 * Reads nothing outside [base, base + bytes). The walk ends after
 * min(pool_count, usable_bytes) + 1 descriptors, a cyclic list included
 * (each kind's pools hold more than a byte: its validate op states the
 * tighter bound). O(pools).
 */
static inline int
rtm_kind_validate_pools(const void *base, size_t bytes, size_t ctl_size,
                        const struct rtm_pool_link *first, size_t pool_count, size_t usable_bytes,
                        size_t overhead_bytes, size_t desc_size, size_t desc_align,
                        int (*pool_ok)(const void *base, const struct rtm_pool_link *d, size_t lo,
                                       size_t bytes, size_t *usable))
{
    size_t pools = 0, usable = 0, raw = 0, total, lo = ctl_size;
    if (usable_bytes > bytes)
        return -EFAULT;
    for (const struct rtm_pool_link *d = first;;) {
        size_t span = 0;
        if (++pools > pool_count || pool_ok(base, d, lo, bytes, &span) != 0 || span == 0 ||
            span > usable_bytes - usable || __builtin_add_overflow(raw, d->raw_len, &raw))
            return -EFAULT;
        usable += span;
        size_t next = d->next;
        if (next == 0)
            break;
        if (next >= bytes || bytes - next < desc_size || ((uintptr_t)base + next) % desc_align != 0)
            return -EFAULT;
        d = (const struct rtm_pool_link *)((uintptr_t)base + next);
        lo = next + desc_size;
    }
    if (pools != pool_count || usable != usable_bytes ||
        __builtin_add_overflow(usable, overhead_bytes, &total) || total != raw)
        return -EFAULT;
    return 0;
}

/*
 * The checks every add_pool starts with: [mem, mem + size) must be memory
 * (EINVAL), overlap no pool of the heap whose pools start at first (EINVAL),
 * and hold a descriptor of `need` bytes aligned to `align` (ENOMEM). Returns
 * 0 with the descriptor's address in *at, or the negative errno. O(pools).
 */
static inline int rtm_kind_pool_room(const void *base, const struct rtm_pool_link *first, void *mem,
                                     size_t size, size_t align, size_t need, uintptr_t *at)
{
    int err;
    *at = rtm_kind_place(mem, size, align, need, &err);
    if (!*at && err == EINVAL)
        return -EINVAL;
    size_t raw = (size_t)((uintptr_t)mem - (uintptr_t)base);
    /* d->next is an offset modulo 2^N (a pool below base has a "negative"
     * one): added as an integer, since pointer arithmetic that wraps around
     * is undefined. */
    for (const struct rtm_pool_link *d = first;;
         d = (const struct rtm_pool_link *)((uintptr_t)base + d->next)) {
        if (rtm_kind_overlap(raw, size, d->raw_start, d->raw_len))
            return -EINVAL;
        if (d->next == 0)
            break;
    }
    return *at ? 0 : -ENOMEM;
}

/*
 * The configuration create uses: cfg itself, or the defaults for NULL; NULL
 * with errno EINVAL for a level that does not exist, or a lock: a kind's
 * create makes unlocked heaps (the dispatcher wraps a locked one around it,
 * with a configuration whose lock is RTM_HEAP_LOCK_NONE).
 */
static inline const struct rtm_heap_config *rtm_kind_config(const struct rtm_heap_config *cfg)
{
    static const struct rtm_heap_config defaults = { .lock = RTM_HEAP_LOCK_NONE };
    if (!cfg)
        return &defaults;
    if (cfg->hardening < RTM_HEAP_HARDEN_O1 || cfg->hardening > RTM_HEAP_HARDEN_FULL ||
        cfg->lock != RTM_HEAP_LOCK_NONE || cfg->lock_timeout_us) {
        errno = EINVAL;
        return NULL;
    }
    return cfg;
}

/* A key for the integrity tags of a heap created in mem: different between
 * heaps and between runs (it mixes in stack and code addresses, which the
 * system places at random), never 0. No system call. */
uint64_t rtm__heap_new_key(const void *mem);

/* Fills the common header of a heap being created (all but magic, which the
 * kind sets last, once the heap is usable). */
static inline void rtm_kind_init(struct rtm_heap *h, uint32_t kind,
                                 const struct rtm_heap_config *cfg, const void *mem)
{
    h->kind = kind;
    h->failed_allocs = 0;
    h->corruptions = 0;
    h->tag_key = rtm__heap_new_key(mem);
    h->hardening = (uint32_t)cfg->hardening;
    h->check_interval = cfg->check_interval > 1 ? cfg->check_interval : 1;
    h->until_check = h->check_interval;
    h->lock_offset = 0;
    h->on_corruption = cfg->on_corruption;
    h->on_corruption_arg = cfg->on_corruption_arg;
}

/*
 * Records a failed integrity check: counts it and calls the heap's handler.
 * Kinds call it before refusing the operation, with nothing written yet.
 * Out of line and cold: it is never on a path that succeeds.
 */
void rtm__heap_corrupt(struct rtm_heap *h, const void *block, const void *where, const char *what);

/*
 * RTM_HEAP_HARDEN_FULL: counts one operation and runs the kind's full check
 * when the interval is reached. Returns nonzero (after rtm__heap_corrupt)
 * when the check failed, and the operation must then be refused. Kinds call
 * it at the start of every operation that changes the heap, only at that
 * level.
 */
int rtm__heap_periodic_check(struct rtm_heap *h);

/*
 * The layout of a heap found in memory the caller knows only the extent of:
 * h must be the start of a heap (aligned, its common header: magic, kind,
 * hardening level) with its kind's control structure and pools inside the
 * bytes from h on (the kind's validate op). Returns 0, -EINVAL for no heap
 * (NULL, misaligned, fewer bytes than a header, a bad header), or -EFAULT
 * for a kind's layout that does not hold. A locked heap's lock area, which
 * lies before h, is the caller's to check. Reads nothing outside
 * [h, h + bytes), writes nothing, takes no lock. O(pools).
 */
int rtm__heap_validate(const struct rtm_heap *h, size_t bytes);

/* Registry index of a kind's ops, for kinds stamping their header. */
enum rtm_heap_kind_id {
    RTM_KIND_TLSF = 0,
    RTM_KIND_HEAPMEM,
    RTM_KIND_XNHEAP,
    RTM_KIND_HALFFIT,
    RTM_KIND_XVHEAP,
    RTM_KIND_ZSHEAP,
    RTM_KIND_COUNT
};

#endif /* RTMEM_SRC_HEAP_KIND_H */
