/*
 * The heap interface: a registry of kinds and the rtm_heap_* entry points,
 * which verify the heap header and dispatch through the kind's operations.
 * Adds one load, one compare and one indirect call to each operation, and a
 * load and compare more for the lock (lock_offset, next to the magic).
 *
 * Locked heaps (rtmem/lock.h): the kinds never lock. A locked heap is the
 * kind's heap created after a lock area (src/lock/), and each entry point
 * runs the kind's operation between taking and giving that lock. What a
 * call does when it takes the lock from a holder that died is decided here,
 * where the heap's check is known (owner_died).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "rtmem/heap.h"
#include "rtmem/pageheap_api.h"
#include "rtmem/xvheap.h"
#include "rtmem/zsheap.h"
#include "kind.h"
#include "robust.h"
#include "store.h"
#include "undo.h"
#include "../lock/lock.h"

static const struct rtm_heap_ops *const registry[RTM_KIND_COUNT] = {
    [RTM_KIND_TLSF] = &rtm__tlsf_ops,     [RTM_KIND_HEAPMEM] = &rtm__heapmem_ops,
    [RTM_KIND_XNHEAP] = &rtm__xnheap_ops, [RTM_KIND_HALFFIT] = &rtm__halffit_ops,
    [RTM_KIND_XVHEAP] = &rtm__xvheap_ops, [RTM_KIND_ZSHEAP] = &rtm__zsheap_ops,
};

static const char *const kind_names[RTM_KIND_COUNT + 1] = {
    [RTM_KIND_TLSF] = "tlsf",       [RTM_KIND_HEAPMEM] = "heapmem", [RTM_KIND_XNHEAP] = "xnheap",
    [RTM_KIND_HALFFIT] = "halffit", [RTM_KIND_XVHEAP] = "xvheap",   [RTM_KIND_ZSHEAP] = "zsheap",
    [RTM_KIND_COUNT] = NULL,
};

const char *const *rtm_heap_kinds(void)
{
    return kind_names;
}

/* The operations of a live heap, or NULL for NULL, destroyed or foreign. */
static inline const struct rtm_heap_ops *ops_of(const struct rtm_heap *h)
{
    if (__builtin_expect(!h || h->magic != RTM_HEAP_MAGIC || h->kind >= RTM_KIND_COUNT, 0))
        return NULL;
    return registry[h->kind];
}

/* ---- locked heaps ------------------------------------------------------------ */

/* The lock area of a locked heap (lock_offset != 0). */
static inline struct rtm_lock *lock_of(const struct rtm_heap *h)
{
    return (struct rtm_lock *)((uintptr_t)h - h->lock_offset);
}

/* Whether a locked heap is robust: an undo log and owner records
 * (robust.c), read after its lock is taken. */
static inline bool robust(const struct rtm_lock *l)
{
    return l->features != 0;
}

size_t rtm__heap_undo_bytes(const struct rtm_heap *h)
{
    if (!h->lock_offset || !(lock_of(h)->features & RTM_LOCKF_UNDO))
        return 0;
    return rtm_undo_bytes(rtm_undo_of(h)->capacity);
}

/* Bytes before the kind's memory: the trim, the lock area, the undo log. */
static inline size_t lock_bytes(const struct rtm_heap *h)
{
    return lock_of(h)->lead + RTM_HEAP_LOCK_AREA_BYTES + rtm__heap_undo_bytes(h);
}

/*
 * The lock was taken from a holder that died, perhaps halfway through
 * changing the heap (rtmem/lock.h, "Owner death"): the heap's full check
 * decides. Consistent: the lock is made consistent and the call goes on (0).
 * Damaged: counted as a corruption, the lock abandoned for good
 * (-ENOTRECOVERABLE, not held).
 */
static __attribute__((noinline, cold)) int owner_died(struct rtm_heap *h, struct rtm_lock *l)
{
    /* A robust heap first undoes what the dead holder's call had written:
     * the heap is then as that call found it (undo.h). A damaged log
     * writes nothing, and the heap is given up. A fixed heap (a shared
     * one, whose memory another process may have written) must then still
     * hold its layout inside that memory before its check walks it. */
    if (l->features & RTM_LOCKF_UNDO) {
        struct rtm_undo *u = rtm_undo_of(h);
        size_t room = h->lock_offset - RTM_HEAP_LOCK_AREA_BYTES;
        bool fixed = (l->features & RTM_LOCKF_FIXED) != 0;
        if (rtm__undo_rollback(u, room, fixed) < 0 ||
            (fixed && registry[h->kind]->validate(h, (size_t)(u->span - room)) != 0)) {
            rtm__heap_corrupt(h, NULL, NULL, "lock holder died; its undo log is damaged");
            rtm__lock_abandon(l);
            return -ENOTRECOVERABLE;
        }
    }
    if (registry[h->kind]->check(h) == 0) {
        rtm__lock_recovered(l);
        return 0;
    }
    rtm__heap_corrupt(h, NULL, NULL, "lock holder died mid-operation");
    rtm__lock_abandon(l);
    return -ENOTRECOVERABLE;
}

/* The lock's own state is damaged (held by a task that cannot hold it):
 * counted as a corruption (atomically: the lock is not held), the call
 * refused with -ENOTRECOVERABLE, the lock not taken. Not sticky: a lock
 * whose word is repaired (its damage was another process's) works again. */
static __attribute__((noinline, cold)) int lock_damaged(struct rtm_heap *h)
{
    __atomic_add_fetch(&h->corruptions, 1, __ATOMIC_RELAXED);
    return -ENOTRECOVERABLE;
}

/* Takes a locked heap's lock for one call: 0 (held), or a negative errno
 * (not held). A const heap is written to only when a holder died and the
 * check finds damage, which is counted in the heap whatever the call. */
static inline int heap_lock(const struct rtm_heap *h, struct rtm_lock *l)
{
    int rc = rtm_lock_take(l);
    if (__builtin_expect(rc == 0, 1))
        return 0;
    if (rc == EBADMSG)
        return lock_damaged((struct rtm_heap *)(uintptr_t)h);
    return rc == EOWNERDEAD ? owner_died((struct rtm_heap *)(uintptr_t)h, l) : -rc;
}

/*
 * The body of a call on a locked heap h: returns `call`, made with the lock
 * held, or `fail` when the lock cannot be taken (rc then holds the negative
 * errno).
 */
#define WITH_LOCK(h, rc, call, fail)      \
    do {                                  \
        struct rtm_lock *l_ = lock_of(h); \
        int rc = heap_lock((h), l_);      \
        if (rc != 0)                      \
            return fail;                  \
        __typeof__(call) r_ = call;       \
        rtm_lock_give(l_);                \
        return r_;                        \
    } while (0)

/* The rest of an entry point, once ops_of(h) has accepted h: `call` made
 * directly on an unlocked heap, else WITH_LOCK. For the calls that are not
 * on a control loop's path; the others keep their locked half out of line
 * (alloc_locked...), so that the compiler does not save registers for it on
 * an unlocked heap's call, which stays a jump to the kind. */
#define DISPATCH(h, rc, call, fail)   \
    do {                              \
        if (!(h)->lock_offset)        \
            return call;              \
        WITH_LOCK(h, rc, call, fail); \
    } while (0)

/* An allocation that could not take the lock: NULL, errno set, not counted
 * in failed_allocs (the heap was not asked). */
static void *lock_failed(int rc)
{
    errno = -rc;
    return NULL;
}

/* A locked heap: its lock area at the start of mem, aligned, a robust
 * heap's undo log after it, and the kind's heap created in the rest with
 * kcfg (whose lock is none). */
static struct rtm_heap *create_locked(uint32_t kind, void *mem, size_t size,
                                      const struct rtm_heap_config *kcfg, int lock,
                                      uint32_t timeout_us)
{
    const struct rtm_heap_ops *ops = registry[kind];
    uint32_t cap = lock == RTM_HEAP_LOCK_ROBUST_SHARED ? rtm__undo_capacity(kind, size) : 0;
    size_t log = cap ? rtm_undo_bytes(cap) : 0;
    int err;
    uintptr_t at =
        rtm_kind_place(mem, size, RTM_HEAP_LOCK_ALIGN, RTM_HEAP_LOCK_AREA_BYTES + log, &err);
    if (!at) {
        errno = err;
        return NULL;
    }
    uintptr_t rest = at + RTM_HEAP_LOCK_AREA_BYTES + log;
    struct rtm_heap *h = ops->create((void *)rest, (uintptr_t)mem + size - rest, kcfg);
    if (!h)
        return NULL;
    /* Not a heap until its lock is in place: whoever else maps this memory
     * must never see a valid heap that looks unlocked. */
    uint32_t magic = h->magic;
    __atomic_store_n(&h->magic, 0, __ATOMIC_RELAXED);
    struct rtm_lock *l = (struct rtm_lock *)at;
    int rc = rtm__lock_init(l, lock, (uint32_t)(at - (uintptr_t)mem));
    if (rc) {
        errno = rc;
        return NULL;
    }
    l->timeout_us = timeout_us;
    if (cap) {
        uint32_t self, stamp; /* learnt now, not in a call under the lock */
        rtm__owner_self(&self, &stamp);
        struct rtm_undo *u = (struct rtm_undo *)(at + RTM_HEAP_LOCK_AREA_BYTES);
        memset(u, 0, sizeof(*u));
        u->capacity = cap;
        u->span = (uint64_t)((uintptr_t)mem + size - (uintptr_t)u);
        l->features = RTM_LOCKF_UNDO | RTM_LOCKF_OWNERS;
    }
    /* Kinds place their header at most an alignment and a guard past the
     * memory they are given. */
    RTM_ASSERT((uintptr_t)h >= rest && (uintptr_t)h - rest < 4096);
    h->lock_offset = (uint32_t)((uintptr_t)h - at);
    __atomic_store_n(&h->magic, magic, __ATOMIC_RELEASE);
    return h;
}

/* ---- creating, and what never changes ------------------------------------------- */

struct rtm_heap *rtm_heap_create_ex(const char *kind, void *mem, size_t size,
                                    const struct rtm_heap_config *cfg)
{
    if (!kind || !mem) {
        errno = EINVAL;
        return NULL;
    }
    int lock = cfg ? cfg->lock : RTM_HEAP_LOCK_NONE;
    uint32_t timeout_us = cfg ? cfg->lock_timeout_us : 0;
    /* A handler is an address in one process: in a heap other processes
     * share it would be called, in the next process to find damage, at an
     * address that means nothing there. */
    if (lock < RTM_HEAP_LOCK_NONE || lock > RTM_HEAP_LOCK_ROBUST_SHARED ||
        (lock == RTM_HEAP_LOCK_ROBUST_SHARED && cfg->on_corruption)) {
        errno = EINVAL;
        return NULL;
    }
    struct rtm_heap_config kcfg; /* what the kind sees: no lock */
    if (lock != RTM_HEAP_LOCK_NONE) {
        kcfg = *cfg;
        kcfg.lock = RTM_HEAP_LOCK_NONE;
        kcfg.lock_timeout_us = 0;
        cfg = &kcfg;
    }
    if (!(cfg = rtm_kind_config(cfg)))
        return NULL;
    for (unsigned i = 0; i < RTM_KIND_COUNT; i++) {
        if (strcmp(kind, registry[i]->name) != 0)
            continue;
        if (lock == RTM_HEAP_LOCK_NONE)
            return registry[i]->create(mem, size, cfg);
        return create_locked(i, mem, size, cfg, lock, timeout_us);
    }
    errno = ENOENT;
    return NULL;
}

struct rtm_heap *rtm_heap_create(const char *kind, void *mem, size_t size)
{
    return rtm_heap_create_ex(kind, mem, size, NULL);
}

static int set_handler(struct rtm_heap *h, rtm_heap_corruption_fn fn, void *arg)
{
    h->on_corruption = fn;
    h->on_corruption_arg = fn ? arg : NULL;
    return 0;
}

int rtm_heap_set_corruption_handler(struct rtm_heap *h, rtm_heap_corruption_fn fn, void *arg)
{
    /* Not on a heap shared between processes (see rtm_heap_create_ex). */
    if (!ops_of(h) || (fn && rtm_heap_lock_type(h) == RTM_HEAP_LOCK_ROBUST_SHARED))
        return -EINVAL;
    DISPATCH(h, rc, set_handler(h, fn, arg), rc);
}

int rtm_heap_hardening(const struct rtm_heap *h)
{
    return ops_of(h) ? (int)h->hardening : -EINVAL;
}

int rtm_heap_lock_type(const struct rtm_heap *h)
{
    if (!ops_of(h))
        return -EINVAL;
    return h->lock_offset ? (int)lock_of(h)->type : RTM_HEAP_LOCK_NONE;
}

int rtm_heap_set_lock_timeout(struct rtm_heap *h, uint32_t timeout_us)
{
    if (!ops_of(h) || !h->lock_offset)
        return -EINVAL;
    __atomic_store_n(&lock_of(h)->timeout_us, timeout_us, __ATOMIC_RELAXED);
    return 0;
}

int rtm_heap_lock_stats(const struct rtm_heap *h, struct rtm_heap_lock_stats *out)
{
    if (!ops_of(h) || !out)
        return -EINVAL;
    if (h->lock_offset)
        rtm__lock_stats(lock_of(h), out);
    else
        *out = (struct rtm_heap_lock_stats){ .type = RTM_HEAP_LOCK_NONE, .recoverable = 1 };
    return 0;
}

int rtm__heap_lock_hold(struct rtm_heap *h)
{
    if (!ops_of(h) || !h->lock_offset)
        return -EINVAL;
    return heap_lock(h, lock_of(h));
}

size_t rtm_heap_lock_bytes(const char *kind, int lock, size_t size)
{
    if (!kind || lock < RTM_HEAP_LOCK_NONE || lock > RTM_HEAP_LOCK_ROBUST_SHARED)
        return 0;
    for (uint32_t i = 0; i < RTM_KIND_COUNT; i++) {
        if (strcmp(kind, registry[i]->name) != 0)
            continue;
        if (lock == RTM_HEAP_LOCK_NONE)
            return 0;
        size_t log =
            lock == RTM_HEAP_LOCK_ROBUST_SHARED ? rtm_undo_bytes(rtm__undo_capacity(i, size)) : 0;
        /* a page heap rounds its memory to pages */
        size_t rounding = i == RTM_KIND_TLSF || i == RTM_KIND_HALFFIT ? 0
                          : i == RTM_KIND_XVHEAP                      ? RTM_XVHEAP_PAGE_SIZE
                          : i == RTM_KIND_ZSHEAP                      ? RTM_ZSHEAP_PAGE_SIZE
                                                                      : RTM_PAGEHEAP_PAGE_SIZE;
        return RTM_HEAP_LOCK_OVERHEAD_MAX + log + rounding;
    }
    return 0;
}

size_t rtm_heap_pool_bound_ex(const char *kind, const struct rtm_heap_limits *lim)
{
    if (!kind || !lim || lim->max_live == 0 || lim->max_block == 0 ||
        lim->min_block > lim->max_block || (lim->max_align & (lim->max_align - 1)) != 0 ||
        lim->lock < RTM_HEAP_LOCK_NONE || lim->lock > RTM_HEAP_LOCK_ROBUST_SHARED) {
        errno = EINVAL;
        return 0;
    }
    uint32_t i = 0;
    while (i < RTM_KIND_COUNT && strcmp(kind, registry[i]->name) != 0)
        i++;
    if (i == RTM_KIND_COUNT) {
        errno = ENOENT;
        return 0;
    }
    struct rtm_heap_limits k = *lim;
    if (k.min_block == 0)
        k.min_block = 1;
    if (k.max_block > k.max_live)
        k.max_block = k.max_live;
    if (k.min_block > k.max_block) { /* a smallest request above M: none fits */
        errno = EINVAL;
        return 0;
    }
    if (k.lock == RTM_HEAP_LOCK_ROBUST_SHARED) {
        /* each block carries its owner record: the kind sees every request
         * RTM_OWNER_BYTES larger, at most M / m blocks of them */
        size_t extra = rtm_sat_mul(k.max_live / k.min_block, RTM_OWNER_BYTES);
        k.max_live = rtm_sat_add(k.max_live, extra);
        k.max_block = rtm_sat_add(k.max_block, RTM_OWNER_BYTES);
        k.min_block += RTM_OWNER_BYTES;
        if (k.max_live == SIZE_MAX || k.max_block == SIZE_MAX) {
            errno = EOVERFLOW;
            return 0;
        }
    }
    size_t region = registry[i]->pool_bound(&k);
    if (!region || k.lock == RTM_HEAP_LOCK_NONE)
        return region;
    /* the lock area (and a robust heap's undo log, which grows with the
     * memory: taken at the final size, which only ever grows it) */
    /* The lock area, and a robust heap's undo log, which grows with the
     * memory (by a constant per doubling): taken for twice the final size,
     * so that any larger region works too (up to twice, its log is no
     * larger; beyond, the region grows by more than its log). A fixed point
     * in a few steps. */
    size_t total = region;
    for (;;) {
        size_t next = rtm_sat_add(region, rtm_heap_lock_bytes(kind, k.lock, rtm_sat_mul(total, 2)));
        if (next <= total)
            break;
        total = next;
    }
    if (total == SIZE_MAX) {
        errno = EOVERFLOW;
        return 0;
    }
    return total;
}

size_t rtm_heap_pool_bound(const char *kind, size_t max_live, size_t max_block)
{
    struct rtm_heap_limits lim = { .max_live = max_live, .max_block = max_block };
    return rtm_heap_pool_bound_ex(kind, &lim);
}

uint32_t rtm__heap_features(const struct rtm_heap *h)
{
    return ops_of(h) && h->lock_offset ? lock_of(h)->features : 0;
}

void rtm__heap_fix(struct rtm_heap *h)
{
    if (ops_of(h) && h->lock_offset && robust(lock_of(h)))
        lock_of(h)->features |= RTM_LOCKF_FIXED;
}

const struct rtm_heap_ops *rtm__heap_ops(const struct rtm_heap *h)
{
    return ops_of(h);
}

int rtm__heap_lock_release(struct rtm_heap *h)
{
    if (!ops_of(h) || !h->lock_offset)
        return -EINVAL;
    return -pthread_mutex_unlock(&lock_of(h)->mutex);
}

uint64_t rtm__heap_new_key(const void *mem)
{
    /* atomic: heaps may be created in several threads at once */
    static uint64_t serial;
    uint64_t n = __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED);
    int local;
    uint64_t k = (uint64_t)(uintptr_t)mem ^ ((uint64_t)(uintptr_t)&local << 17) ^
                 ((uint64_t)(uintptr_t)&rtm__heap_new_key << 31) ^ n * 0x9e3779b97f4a7c15ull;
    /* splitmix64's finaliser: every input bit moves about half the output */
    k = (k ^ (k >> 30)) * 0xbf58476d1ce4e5b9ull;
    k = (k ^ (k >> 27)) * 0x94d049bb133111ebull;
    k ^= k >> 31;
    return k ? k : 0x2545f4914f6cdd1dull;
}

__attribute__((noinline, cold)) void rtm__heap_corrupt(struct rtm_heap *h, const void *block,
                                                       const void *where, const char *what)
{
    h->corruptions++;
    /* Never on a robust heap, whose memory other processes write: create
     * and attach refuse a handler there, and an address found there
     * anyway is none of this process's. */
    if (h->on_corruption && !(h->lock_offset && robust(lock_of(h)))) {
        struct rtm_heap_corruption c = { h, block, where, what };
        h->on_corruption(&c, h->on_corruption_arg);
    }
}

__attribute__((noinline)) int rtm__heap_periodic_check(struct rtm_heap *h)
{
    if (--h->until_check != 0)
        return 0;
    h->until_check = h->check_interval;
    if (registry[h->kind]->check(h) == 0)
        return 0;
    rtm__heap_corrupt(h, NULL, NULL, "periodic full check");
    return -EFAULT;
}

/* ---- the operations --------------------------------------------------------------- */

void rtm_heap_destroy(struct rtm_heap *h)
{
    const struct rtm_heap_ops *ops = ops_of(h);
    if (!ops)
        return;
    if (!h->lock_offset) {
        if (ops->destroy)
            ops->destroy(h);
        h->magic = 0;
        return;
    }
    /* The operation in progress ends first. A destroy from inside a call on
     * this heap (a corruption handler) cannot end it: the heap stays. */
    struct rtm_lock *l = lock_of(h);
    int rc = heap_lock(h, l);
    if (rc == -EDEADLK)
        return;
    if (ops->destroy && rc == 0)
        ops->destroy(h);
    h->magic = 0;
    if (rc == 0)
        rtm_lock_give(l);
    rtm__lock_destroy(l);
}

/* The locked halves of the calls a control loop makes (see DISPATCH). */
static __attribute__((noinline)) void *alloc_locked(const struct rtm_heap_ops *ops,
                                                    struct rtm_heap *h, size_t size)
{
    WITH_LOCK(h, rc, robust(l_) ? rtm__robust_alloc(ops, h, size) : ops->alloc(h, size),
              lock_failed(rc));
}

static __attribute__((noinline)) void *aligned_alloc_locked(const struct rtm_heap_ops *ops,
                                                            struct rtm_heap *h, size_t alignment,
                                                            size_t size)
{
    WITH_LOCK(h, rc,
              robust(l_) ? rtm__robust_aligned_alloc(ops, h, alignment, size)
                         : ops->aligned_alloc(h, alignment, size),
              lock_failed(rc));
}

static __attribute__((noinline)) void *realloc_locked(const struct rtm_heap_ops *ops,
                                                      struct rtm_heap *h, void *p, size_t size)
{
    WITH_LOCK(h, rc, robust(l_) ? rtm__robust_realloc(ops, h, p, size) : ops->realloc(h, p, size),
              lock_failed(rc));
}

static __attribute__((noinline)) int free_locked(const struct rtm_heap_ops *ops, struct rtm_heap *h,
                                                 void *p)
{
    WITH_LOCK(h, rc, robust(l_) ? rtm__robust_free(ops, h, p) : ops->free(h, p), rc);
}

static __attribute__((noinline)) size_t usable_size_locked(const struct rtm_heap_ops *ops,
                                                           const struct rtm_heap *h, const void *p)
{
    WITH_LOCK(h, rc, robust(l_) ? rtm__robust_usable_size(ops, h, p) : ops->usable_size(h, p),
              (size_t)0);
}

void *rtm_heap_alloc(struct rtm_heap *h, size_t size)
{
    const struct rtm_heap_ops *ops = ops_of(h);
    if (!ops)
        return NULL;
    return h->lock_offset ? alloc_locked(ops, h, size) : ops->alloc(h, size);
}

void *rtm_heap_aligned_alloc(struct rtm_heap *h, size_t alignment, size_t size)
{
    const struct rtm_heap_ops *ops = ops_of(h);
    if (!ops)
        return NULL;
    return h->lock_offset ? aligned_alloc_locked(ops, h, alignment, size)
                          : ops->aligned_alloc(h, alignment, size);
}

/* calloc's block of n * size bytes (*total), not zeroed; an overflow is a
 * failed allocation. */
static void *calloc_block(const struct rtm_heap_ops *ops, struct rtm_heap *h, size_t n, size_t size,
                          size_t *total)
{
    if (__builtin_mul_overflow(n, size, total)) {
        h->failed_allocs++;
        return NULL;
    }
    if (h->lock_offset && robust(lock_of(h)))
        return rtm__robust_alloc(ops, h, *total);
    return ops->alloc(h, *total);
}

static void *calloc_take(const struct rtm_heap_ops *ops, struct rtm_heap *h, size_t n, size_t size,
                         size_t *total)
{
    DISPATCH(h, rc, calloc_block(ops, h, n, size, total), lock_failed(rc));
}

void *rtm_heap_calloc(struct rtm_heap *h, size_t n, size_t size)
{
    const struct rtm_heap_ops *ops = ops_of(h);
    if (!ops)
        return NULL;
    size_t total = 0;
    void *p = calloc_take(ops, h, n, size, &total);
    /* Zeroed after the lock is given back: the block is the caller's alone. */
    if (p)
        memset(p, 0, total);
    return p;
}

void *rtm_heap_realloc(struct rtm_heap *h, void *p, size_t size)
{
    const struct rtm_heap_ops *ops = ops_of(h);
    if (!ops)
        return NULL;
    return h->lock_offset ? realloc_locked(ops, h, p, size) : ops->realloc(h, p, size);
}

int rtm_heap_free(struct rtm_heap *h, void *p)
{
    const struct rtm_heap_ops *ops = ops_of(h);
    if (!ops)
        return -EINVAL;
    return h->lock_offset ? free_locked(ops, h, p) : ops->free(h, p);
}

size_t rtm_heap_usable_size(const struct rtm_heap *h, const void *p)
{
    const struct rtm_heap_ops *ops = ops_of(h);
    if (!ops)
        return 0;
    return h->lock_offset ? usable_size_locked(ops, h, p) : ops->usable_size(h, p);
}

/* Whether [mem, mem + size) overlaps a locked heap's lock area or the trim
 * before it: memory the kind does not know as its own. */
static bool overlaps_lock(const struct rtm_heap *h, const void *mem, size_t size)
{
    uintptr_t base = (uintptr_t)h;
    size_t area = (size_t)((uintptr_t)lock_of(h) - lock_of(h)->lead - base);
    return rtm_kind_overlap((size_t)((uintptr_t)mem - base), size, area, lock_bytes(h));
}

int rtm_heap_add_pool(struct rtm_heap *h, void *mem, size_t size)
{
    const struct rtm_heap_ops *ops = ops_of(h);
    if (!ops)
        return -EINVAL;
    if (h->lock_offset && mem && overlaps_lock(h, mem, size))
        return -EINVAL;
    if (!h->lock_offset)
        return ops->add_pool(h, mem, size);
    WITH_LOCK(h, rc,
              (l_->features & RTM_LOCKF_FIXED) ? -ENOTSUP
              : robust(l_)                     ? rtm__robust_add_pool(h, mem, size)
                                               : ops->add_pool(h, mem, size),
              rc);
}

/* The kind's statistics, with a lock area counted as overhead. */
static int stats_of(const struct rtm_heap_ops *ops, const struct rtm_heap *h,
                    struct rtm_heap_stats *out)
{
    int rc = ops->stats(h, out);
    if (rc == 0 && h->lock_offset) {
        out->overhead_bytes += lock_bytes(h);
        /* a robust heap's caller gets 16 bytes less than the kind's block */
        if (robust(lock_of(h)))
            out->largest_free_bytes = out->largest_free_bytes > RTM_OWNER_BYTES
                                          ? out->largest_free_bytes - RTM_OWNER_BYTES
                                          : 0;
    }
    return rc;
}

int rtm_heap_stats(const struct rtm_heap *h, struct rtm_heap_stats *out)
{
    const struct rtm_heap_ops *ops = ops_of(h);
    if (!ops || !out)
        return -EINVAL;
    DISPATCH(h, rc, stats_of(ops, h, out), rc);
}

size_t rtm_heap_held_bytes(const struct rtm_heap *h)
{
    const struct rtm_heap_ops *ops = ops_of(h);
    if (!ops)
        return 0;
    if (ops->held_bytes)
        return ops->held_bytes(h);
    struct rtm_heap_stats st;
    return rtm_heap_stats(h, &st) == 0 ? st.usable_bytes + st.overhead_bytes : 0;
}

int rtm_heap_check(const struct rtm_heap *h)
{
    const struct rtm_heap_ops *ops = ops_of(h);
    if (!ops)
        return -EINVAL;
    DISPATCH(h, rc, ops->check(h), rc);
}

int rtm__heap_validate(const struct rtm_heap *h, size_t bytes)
{
    if (!h || (uintptr_t)h % _Alignof(struct rtm_heap) != 0 || bytes < sizeof *h)
        return -EINVAL;
    if (!ops_of(h) || h->hardening > RTM_HEAP_HARDEN_FULL)
        return -EINVAL;
    /* A robust heap's undo log (the caller has checked that the lock area
     * lies in the memory it knows): between the lock area and the heap, and
     * spanning exactly to the end of the memory, or a roll back could write
     * outside it. The count may be non-zero: a call may be in progress. */
    if (h->lock_offset) {
        const struct rtm_lock *l = lock_of(h);
        if (l->features & ~(RTM_LOCKF_UNDO | RTM_LOCKF_OWNERS | RTM_LOCKF_FIXED))
            return -EINVAL;
        if (l->features & RTM_LOCKF_UNDO) {
            const struct rtm_undo *u = rtm_undo_of(h);
            size_t room = h->lock_offset - RTM_HEAP_LOCK_AREA_BYTES;
            /* the capacity create gave it (a smaller one would let TLSF's
             * unchecked notes run past it), and no added pool in a fixed
             * heap */
            if (h->lock_offset < RTM_HEAP_LOCK_AREA_BYTES || !rtm__undo_valid(u, room) ||
                u->span != room + bytes ||
                u->capacity != rtm__undo_capacity(h->kind, l->lead + RTM_HEAP_LOCK_AREA_BYTES +
                                                               (size_t)u->span) ||
                ((l->features & RTM_LOCKF_FIXED) && u->pools != 0))
                return -EFAULT;
        }
    }
    return registry[h->kind]->validate(h, bytes);
}

const char *rtm_heap_kind(const struct rtm_heap *h)
{
    const struct rtm_heap_ops *ops = ops_of(h);
    return ops ? ops->name : NULL;
}

size_t rtm_heap_fill_count(const struct rtm_heap *h, size_t size)
{
    const struct rtm_heap_ops *ops = ops_of(h);
    if (!ops)
        return 0;
    if (!h->lock_offset)
        return ops->fill_count(h, size);
    WITH_LOCK(h, rc, robust(l_) ? rtm__robust_fill_count(ops, h, size) : ops->fill_count(h, size),
              (size_t)0);
}
