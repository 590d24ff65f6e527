/*
 * TLSF: the kind over pools its caller gives (tlsf_core.h has the
 * algorithm).
 */
#include "tlsf_core.h"

_Static_assert(sizeof(struct rtm_tlsf) + GRANULE <= RTM_TLSF_CONTROL_BYTES,
               "RTM_TLSF_CONTROL_BYTES covers the control structure");
_Static_assert((W - 1) + sizeof(struct tlsf_pool) + (GRANULE - 1) + GRANULE + (GRANULE - 1) <=
                   RTM_TLSF_POOL_OVERHEAD_MAX,
               "RTM_TLSF_POOL_OVERHEAD_MAX covers descriptor, trims, sentinel and its slack");

static inline const struct tlsf_pool *pool_at(const struct rtm_tlsf *t, size_t off)
{
    return (const struct tlsf_pool *)(const void *)at_off(t, off);
}

/* The pool whose block area holds block offset b, or NULL. O(1) for the first
 * pool, O(pools) otherwise. */
static inline const struct tlsf_pool *pool_of(const struct rtm_tlsf *t, size_t b)
{
    const struct tlsf_pool *d = &t->pool0;
    if (__builtin_expect(b - d->start < d->end - d->start, 1))
        return d;
    for (size_t n = d->link.next; n != 0; n = d->link.next) {
        d = pool_at(t, n);
        if (b - d->start < d->end - d->start)
            return d;
    }
    return NULL;
}

/* ---- public API ---------------------------------------------------------- */

#if !RTM_LOGGED /* the logged copy (tlsf_logged.c) has the operations that change a heap only */
struct rtm_tlsf *rtm_tlsf_create(void *mem, size_t size)
{
    return rtm_tlsf_create_ex(mem, size, NULL);
}

struct rtm_tlsf *rtm_tlsf_create_ex(void *mem, size_t size, const struct rtm_heap_config *cfg)
{
    if (!(cfg = rtm_kind_config(cfg)))
        return NULL;
    int err;
    uintptr_t ctl =
        rtm_kind_place(mem, size, _Alignof(struct rtm_tlsf), sizeof(struct rtm_tlsf), &err);
    if (!ctl) {
        errno = err;
        return NULL;
    }
    uintptr_t hi = (uintptr_t)mem + size;
    struct rtm_tlsf *t = (struct rtm_tlsf *)ctl;
    memset(t, 0, offsetof(struct rtm_tlsf, heads));
    rtm_kind_init(&t->base, RTM_KIND_TLSF, cfg, mem);
    copies_make(t);
    HDR(t, NIL) = F_FENCE;
    NEXT_SET(t, NIL, NIL);
    PREV_SET(t, NIL, NIL);
    HDR(t, IDLE) = F_FENCE;
    NEXT_SET(t, IDLE, IDLE);
    PREV_SET(t, IDLE, IDLE);
    for (unsigned f = 0; f < FL_COUNT; f++)
        for (unsigned s = 0; s < SL_COUNT; s++)
            t->heads[f][s] = NIL + LINK_MARK;
    t->pool0.link.raw_start = off_of(t, mem);
    t->pool0.link.raw_len = size;
    int rc = pool_format(t, ctl + sizeof(*t), hi, &t->pool0);
    if (rc) {
        errno = -rc;
        return NULL;
    }
    t->start0 = t->pool0.start;
    t->end0 = t->pool0.end;
    t->usable_bytes = t->pool0.end - t->pool0.start;
    t->pool_count = 1;
    t->overhead_bytes = size - t->usable_bytes;
    t->base.magic = RTM_HEAP_MAGIC;
    return t;
}

struct rtm_heap *rtm_tlsf_heap(struct rtm_tlsf *t)
{
    return t ? &t->base : NULL;
}

#endif /* !RTM_LOGGED */

static int add_pool_entry(struct rtm_tlsf *t, void *mem, size_t size)
{
    if (!t)
        return -EINVAL;
    uintptr_t dp;
    int rc = rtm_kind_pool_room(t, &t->pool0.link, mem, size, _Alignof(struct tlsf_pool),
                                sizeof(struct tlsf_pool), &dp);
    if (rc)
        return rc;
    size_t raw = off_of(t, mem);
    uintptr_t hi = (uintptr_t)mem + size;
    struct tlsf_pool *d = (struct tlsf_pool *)dp;
    struct tlsf_pool nd = {
        .link = { .next = t->pool0.link.next, .raw_start = raw, .raw_len = size },
    };
    rc = pool_format(t, dp + sizeof(*d), hi, &nd);
    if (rc)
        return rc;
    *d = nd; /* memory the heap did not have: nothing to undo there */
    size_t span = nd.end - nd.start;
    RTM_SET(&t->base, t->pool0.link.next, off_of(t, d));
    RTM_SET(&t->base, t->usable_bytes, t->usable_bytes + span);
    RTM_SET(&t->base, t->pool_count, t->pool_count + 1);
    RTM_SET(&t->base, t->several_pools, (size_t)1);
    RTM_SET(&t->base, t->overhead_bytes, t->overhead_bytes + size - span);
    return 0;
}

#if RTM_LOGGED

/* ---- the logged operations (store.h) ------------------------------------ */

#define T(h) ((struct rtm_tlsf *)(void *)(h))

static void *logged_alloc(struct rtm_heap *h, size_t n)
{
    return alloc_entry(T(h), n);
}
static void *logged_aligned(struct rtm_heap *h, size_t a, size_t n)
{
    return aligned_entry(T(h), a, n);
}
static void *logged_realloc(struct rtm_heap *h, void *p, size_t n)
{
    return realloc_entry(T(h), p, n);
}
static int logged_free(struct rtm_heap *h, void *p)
{
    return free_entry(T(h), p);
}
static int logged_add_pool(struct rtm_heap *h, void *m, size_t n)
{
    return add_pool_entry(T(h), m, n);
}

static size_t logged_taken_size(const struct rtm_heap *h, const void *p)
{
    const struct rtm_tlsf *t = (const struct rtm_tlsf *)(const void *)h;
    return hdr_size(HDR(t, off_of(t, p) - HW)) - HW;
}

const struct rtm_heap_wops rtm__tlsf_logged_ops = {
    .alloc = logged_alloc,
    .aligned_alloc = logged_aligned,
    .realloc = logged_realloc,
    .free = logged_free,
    .add_pool = logged_add_pool,
    .taken_size = logged_taken_size,
};

#else /* the plain copy: the typed API, the read-only calls, the kind's entry */

int rtm_tlsf_add_pool(struct rtm_tlsf *t, void *mem, size_t size)
{
    return add_pool_entry(t, mem, size);
}

void *rtm_tlsf_alloc(struct rtm_tlsf *t, size_t size)
{
    return alloc_entry(t, size);
}

void *rtm_tlsf_aligned_alloc(struct rtm_tlsf *t, size_t alignment, size_t size)
{
    return aligned_entry(t, alignment, size);
}

void *rtm_tlsf_realloc(struct rtm_tlsf *t, void *p, size_t size)
{
    return realloc_entry(t, p, size);
}

int rtm_tlsf_free(struct rtm_tlsf *t, void *p)
{
    return free_entry(t, p);
}

size_t rtm_tlsf_usable_size(const struct rtm_tlsf *t, const void *p)
{
    if (!t || !p)
        return 0;
    size_t b = live_block(t, p, hardened(t));
    return b ? hdr_size(HDR(t, b)) - HW : 0;
}

size_t rtm_tlsf_block_cost(size_t size)
{
    return adjust_request(size);
}

int rtm_tlsf_stats(const struct rtm_tlsf *t, struct rtm_heap_stats *out)
{
    if (!t || !out || t->base.magic != RTM_HEAP_MAGIC)
        return -EINVAL;
    out->usable_bytes = t->usable_bytes;
    out->used_bytes = t->used_bytes;
    out->free_bytes = t->usable_bytes - t->used_bytes;
    out->peak_used_bytes = t->peak_used_bytes;
    out->largest_free_bytes = largest_request(t);
    out->live_blocks = t->live_blocks;
    out->overhead_bytes = t->overhead_bytes;
    out->pool_count = t->pool_count;
    out->failed_allocs = t->base.failed_allocs;
    out->corruptions = t->base.corruptions;
    return 0;
}

/* ---- consistency walk ------------------------------------------------------ */

int rtm_tlsf_check(const struct rtm_tlsf *t)
{
    if (!t || t->base.magic != RTM_HEAP_MAGIC || t->base.kind != RTM_KIND_TLSF)
        return -EINVAL;
    /* the copies every call reads, before the walk trusts them */
    CHECK(copies_agree(t));
    size_t used = 0, live = 0, free_bytes = 0, free_blocks = 0, pools = 0;
    uint64_t walk_sig = 0;
    for (const struct tlsf_pool *d = &t->pool0;; d = pool_at(t, d->link.next)) {
        CHECK(++pools <= t->pool_count);
        int rc = check_pool(t, d, &used, &live, &free_bytes, &free_blocks, &walk_sig);
        if (rc)
            return rc;
        if (d->link.next == 0)
            break;
    }
    CHECK(pools == t->pool_count && t->several_pools == (pools > 1));
    CHECK(used == t->used_bytes && live == t->live_blocks);
    CHECK(used + free_bytes == t->usable_bytes);
    CHECK(t->peak_used_bytes >= t->used_bytes && t->peak_used_bytes <= t->usable_bytes);
    return check_lists(t, free_blocks, walk_sig);
}

/* ---- layout, for memory another process wrote -------------------------------- */

/*
 * Whether the pool whose descriptor d lies at a placed offset holds
 * together inside [0, bytes): its blocks start at or after lo (the end of
 * the structure that holds d), on a header position, and end with the
 * sentinel's header and slack (GRANULE bytes) inside bytes; the memory
 * given for the pool covers d and all of that. Its block area's size goes
 * to *span. Reads d only. Bounds by subtraction: nothing overflows.
 */
static int validate_pool(const void *base, const struct rtm_pool_link *link, size_t lo,
                         size_t bytes, size_t *span)
{
    const struct rtm_tlsf *t = base;
    const struct tlsf_pool *d = (const struct tlsf_pool *)(const void *)link;
    size_t start = d->start, end = d->end;
    CHECK(start >= lo && start < end && end < bytes && bytes - end >= GRANULE);
    CHECK(((uintptr_t)t + start + HW) % GRANULE == 0 && (end - start) % GRANULE == 0);
    CHECK(end - start >= MIN_BLOCK && end - start <= RTM_TLSF_MAX_BLOCK);
    /* descriptor, blocks, sentinel and slack, in that order in the raw memory
     * (whose start may lie below the heap base: offsets modulo 2^N) */
    size_t raw = d->link.raw_start;
    CHECK(off_of(t, d) - raw <= end + GRANULE - raw && end + GRANULE - raw <= d->link.raw_len);
    *span = end - start;
    return 0;
}

/*
 * The kind's validate op (kind.h): the control structure inside bytes, and
 * every pool, as validate_pool says; pool_count descriptors, whose block
 * areas add up to usable_bytes and whose memory to usable_bytes +
 * overhead_bytes. Each pool holds at least MIN_BLOCK usable bytes, so the
 * walk ends after min(pool_count, bytes / MIN_BLOCK) + 1 descriptors, a
 * cyclic list included. O(pools).
 */
static int tlsf_validate(const struct rtm_heap *h, size_t bytes)
{
    const struct rtm_tlsf *t = (const struct rtm_tlsf *)(const void *)h;
    CHECK((uintptr_t)t % _Alignof(struct rtm_tlsf) == 0 && bytes >= sizeof(*t));
    CHECK(t->base.kind == RTM_KIND_TLSF);
    CHECK(t->start0 == t->pool0.start && t->end0 == t->pool0.end);
    CHECK(copies_agree(t));
    CHECK(t->several_pools == (t->pool_count > 1));
    return rtm_kind_validate_pools(t, bytes, sizeof(*t), &t->pool0.link, t->pool_count,
                                   t->usable_bytes, t->overhead_bytes, sizeof(struct tlsf_pool),
                                   _Alignof(struct tlsf_pool), validate_pool);
}

/* ---- generic interface --------------------------------------------------- */

static struct rtm_heap *ops_create(void *mem, size_t size, const struct rtm_heap_config *cfg)
{
    return rtm_tlsf_heap(rtm_tlsf_create_ex(mem, size, cfg));
}

#define T(h)  ((struct rtm_tlsf *)(void *)(h))
#define CT(h) ((const struct rtm_tlsf *)(const void *)(h))

static void *ops_alloc(struct rtm_heap *h, size_t n)
{
    return rtm_tlsf_alloc(T(h), n);
}
static void *ops_aligned(struct rtm_heap *h, size_t a, size_t n)
{
    return rtm_tlsf_aligned_alloc(T(h), a, n);
}
static void *ops_realloc(struct rtm_heap *h, void *p, size_t n)
{
    return rtm_tlsf_realloc(T(h), p, n);
}
static int ops_free(struct rtm_heap *h, void *p)
{
    return free_entry(T(h), p);
}
static size_t ops_usable(const struct rtm_heap *h, const void *p)
{
    return rtm_tlsf_usable_size(CT(h), p);
}
static int ops_add_pool(struct rtm_heap *h, void *m, size_t n)
{
    return rtm_tlsf_add_pool(T(h), m, n);
}
static int ops_stats(const struct rtm_heap *h, struct rtm_heap_stats *o)
{
    return rtm_tlsf_stats(CT(h), o);
}
static int ops_check(const struct rtm_heap *h)
{
    return rtm_tlsf_check(CT(h));
}

static size_t ops_fill_count(const struct rtm_heap *h, size_t n)
{
    const struct rtm_tlsf *t = CT(h);
    size_t cost = adjust_request(n), count = 0;
    if (cost == 0)
        return 0;
    for (const struct tlsf_pool *d = &t->pool0;; d = pool_at(t, d->link.next)) {
        count += (d->end - d->start) / cost;
        if (d->link.next == 0)
            break;
    }
    /* Classes one granule wide hold one size only, so every fitting block is
     * found. In wider classes, a pool's last remainder that fits but shares
     * its class with another block is not found: at most one block per pool
     * when there are several. */
    size_t lost = class_fl(cost) <= 1 || t->pool_count == 1 ? 0 : t->pool_count;
    return count > lost ? count - lost : 0;
}

static int ops_walk(const struct rtm_heap *h, int (*fn)(void *arg, void *block), void *arg)
{
    const struct rtm_tlsf *t = CT(h);
    size_t pools = 0;
    for (const struct tlsf_pool *d = &t->pool0;; d = pool_at(t, d->link.next)) {
        if (++pools > t->pool_count || d->end - d->start >= d->link.raw_len)
            return -EFAULT;
        int rc = walk_pool(t, d, fn, arg);
        if (rc)
            return rc;
        if (d->link.next == 0)
            return 0;
    }
}

/* ---- pool bound (rtm_heap_pool_bound: heap.h, docs/size.md) ------------------ */

/* A block size s rounded up to the class boundary at or above it: a request
 * of block size s fails only when every free block is smaller than this
 * (find_free searches from there up). */
static size_t class_ceiling(size_t s)
{
    size_t width = ((size_t)1) << class_shift_fl(class_fl(s));
    return (s + width - 1) & ~(width - 1);
}

/*
 * At a failure, free blocks never touch, so with L live blocks at most L + 1
 * are free, each below the failing request's class ceiling; each live block
 * takes its request plus at most e bytes. The usable bytes are then at most
 * (M - r) + L * (e + big) + big, big the largest free block a failure leaves
 * and L <= (M - r) / m: the largest over the requests r in [m, n] bounds them
 * all. Within one class ceiling, a smaller r gives more, so one r per
 * ceiling is tried: O(classes between m and n).
 */
static size_t tlsf_pool_bound(const struct rtm_heap_limits *lim)
{
    size_t M = lim->max_live, n = lim->max_block, m = lim->min_block;
    /* an aligned request searches for its block plus the worst front gap */
    size_t slack = lim->max_align > GRANULE ? lim->max_align + MIN_BLOCK - GRANULE : 0;
    if (n > RTM_TLSF_MAX_REQUEST || lim->max_align > RTM_TLSF_MAX_BLOCK ||
        adjust_request(n) > RTM_TLSF_MAX_BLOCK - slack) {
        errno = E2BIG;
        return 0;
    }
    /* cost(r) - r is largest at r = m or, from 25 up, at r = 9 modulo 16:
     * 48 requests from m cover both; an absorbed remainder adds GRANULE */
    size_t e = 0;
    for (size_t r = m; r <= n && r - m < 48; r++)
        if (adjust_request(r) + GRANULE - r > e)
            e = adjust_request(r) + GRANULE - r;
    size_t worst = 0;
    for (size_t r = m;;) {
        size_t ceiling = class_ceiling(adjust_request(r) + slack);
        size_t big = ceiling - GRANULE, live = M - r;
        size_t x = rtm_sat_add(rtm_sat_add(live, rtm_sat_mul(live / m, e + big)), big);
        if (x > worst)
            worst = x;
        /* the smallest request whose search passes this ceiling: its cost is
         * at least ceiling + GRANULE - slack (>= 48), so it lies above 24,
         * where cost(r) = round_up(r + 8, 16) */
        size_t next = ceiling + GRANULE - slack - (GRANULE + HW - 1);
        if (next > n)
            break;
        r = next;
    }
    /* failing needs usable <= worst: one granule more rules it out */
    size_t usable = rtm_sat_add(worst, GRANULE) & ~(GRANULE - 1);
    if (worst >= SIZE_MAX - 2 * GRANULE) {
        errno = EOVERFLOW;
        return 0;
    }
    /* A region this large, or a little larger (alignment trims, a lock's
     * rounding), must still make a pool create accepts: a margin below the
     * largest block. */
    if (usable > RTM_TLSF_MAX_BLOCK - 4096) {
        errno = E2BIG;
        return 0;
    }
    /* create: the control structure at its alignment, then the first
     * header's trim, the sentinel and its granule, and the span's rounding */
    size_t region = rtm_sat_add(usable, sizeof(struct rtm_tlsf) + _Alignof(struct rtm_tlsf) - 1 +
                                            (GRANULE - 1) + GRANULE + (GRANULE - 1));
    if (region == SIZE_MAX)
        errno = EOVERFLOW;
    return region == SIZE_MAX ? 0 : region;
}

const struct rtm_heap_ops rtm__tlsf_ops = {
    .name = "tlsf",
    .create = ops_create,
    .alloc = ops_alloc,
    .aligned_alloc = ops_aligned,
    .realloc = ops_realloc,
    .free = ops_free,
    .usable_size = ops_usable,
    .add_pool = ops_add_pool,
    .stats = ops_stats,
    .check = ops_check,
    .fill_count = ops_fill_count,
    .walk = ops_walk,
    .validate = tlsf_validate,
    .pool_bound = tlsf_pool_bound,
};

#endif /* RTM_LOGGED */
