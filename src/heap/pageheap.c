/*
 * The page-and-bucket heap behind heapmem and xnheap (see pageheap.h).
 *
 * Small requests (up to half a page) take a slot in a bucket page of their
 * power-of-two class: the class list's first page, a find-first-zero on its
 * slot bitmap, O(1). A page that fills up leaves its class list; one that
 * regains a slot goes back to the head; one that empties returns to the page
 * allocator. Larger requests take a run of whole pages: best fit in the size
 * tree, O(log r) in the number of free runs r, and freeing a run merges it
 * with its free neighbours found in the address tree, O(log r).
 *
 * Multi-pool safety by construction: bucket lists link pages by their offset
 * from the heap base, never by a page number relative to a pool, so a page of
 * one pool can never be read against another pool's page map.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "pageheap.h"
#include "rtmem/pageheap_api.h"

#define PAGE PH_PAGE_SIZE

enum { PG_FREE = 0, PG_RUN = 1, PG_BUCKET = 2 };

struct ph_pgent {
    size_t prev, next; /* BUCKET with a free slot: neighbours in its class list (page offsets) */
    uint32_t type;     /* PG_* in the low byte; a bucket's class shift in the next */
    uint32_t word;     /* BUCKET: busy-slot bitmap; RUN: page count */
};

struct ph_range {
    struct rtm_tnode addr_node; /* first: the node's offset is the range's */
    struct rtm_tnode size_node;
    size_t npages;
};

#define SIZE_NODE(r) ((r) + offsetof(struct ph_range, size_node))
#define RANGE_OF_SIZE_NODE(n) ((n) - offsetof(struct ph_range, size_node))

_Static_assert(offsetof(struct ph_range, addr_node) == 0, "address node opens the range");
_Static_assert(offsetof(struct ph_pool, link) == 0, "a pool's offset is its link's");
_Static_assert(RTM_PAGEHEAP_PAGE_SIZE == PH_PAGE_SIZE, "public page size");
_Static_assert(RTM_PAGEHEAP_MIN_BLOCK == ((size_t)1 << PH_MIN_SHIFT), "public smallest class");
_Static_assert(RTM_PAGEHEAP_MAX_BUCKET == ((size_t)1 << PH_MAX_SHIFT), "public largest class");
_Static_assert(RTM_PAGEHEAP_PAGEMAP_BYTES == sizeof(struct ph_pgent), "public page-map entry size");
_Static_assert(RTM_PAGEHEAP_MAX_PAGES == PH_MAX_PAGES, "public page limit");
_Static_assert(RTM_PAGEHEAP_CONTROL_BYTES >= sizeof(struct ph_heap) + _Alignof(struct ph_heap),
               "RTM_PAGEHEAP_CONTROL_BYTES covers the control structure");
_Static_assert(RTM_PAGEHEAP_POOL_OVERHEAD_MAX >= sizeof(struct ph_pool) + 2 * _Alignof(struct ph_pool) +
                                                   PAGE - 1,
               "RTM_PAGEHEAP_POOL_OVERHEAD_MAX covers descriptor and alignment (page map aside)");
_Static_assert(sizeof(struct ph_range) <= PAGE, "a range descriptor fits in one page");
_Static_assert((PAGE >> PH_MIN_SHIFT) <= 32, "a page's slots fit a 32-bit bitmap");
_Static_assert(PH_MIN_SHIFT >= 4, "bucket slots keep 16-byte alignment");
_Static_assert((1u << PH_MIN_SHIFT) >= _Alignof(max_align_t), "slots aligned to max_align_t");

/* ---- addresses and pools -------------------------------------------------------- */

static inline char *hbase(const struct ph_heap *h)
{
    return (char *)(uintptr_t)h;
}

static inline size_t off_of(const struct ph_heap *h, const void *p)
{
    return (size_t)((uintptr_t)p - (uintptr_t)h);
}

static inline uintptr_t abs_of(const struct ph_heap *h, size_t off)
{
    return (uintptr_t)h + off;
}

static inline const struct ph_pool *pool_at(const struct ph_heap *h, size_t off)
{
    return (const struct ph_pool *)(const void *)(hbase(h) + off);
}

static inline bool in_pool(const struct ph_pool *d, size_t off)
{
    return off - d->pages < d->npages * PAGE;
}

/* The pool whose pages hold offset off, or NULL. O(1) for the first pool,
 * O(pools) otherwise. */
static inline const struct ph_pool *pool_of(const struct ph_heap *h, size_t off)
{
    const struct ph_pool *d = &h->pool0;
    if (__builtin_expect(in_pool(d, off), 1))
        return d;
    for (size_t n = d->link.next; n != 0; n = d->link.next) {
        d = pool_at(h, n);
        if (in_pool(d, off))
            return d;
    }
    return NULL;
}

static inline struct ph_pgent *entry(const struct ph_heap *h, const struct ph_pool *d, size_t pg)
{
    struct ph_pgent *map = (struct ph_pgent *)(void *)(hbase(h) + d->map);
    return &map[(pg - d->pages) >> PH_PAGE_SHIFT];
}

/* Entry of a page known to be in some pool. */
static inline struct ph_pgent *entry_of(const struct ph_heap *h, size_t pg)
{
    return entry(h, pool_of(h, pg), pg);
}

static inline struct ph_range *range_at(const struct ph_heap *h, size_t r)
{
    return (struct ph_range *)(void *)(hbase(h) + r);
}

static inline void add_used(struct ph_heap *h, size_t bytes)
{
    h->used_bytes += bytes;
    if (h->used_bytes > h->peak_used_bytes)
        h->peak_used_bytes = h->used_bytes;
}

/* A new live block of the given size. */
static inline void note_used(struct ph_heap *h, size_t bytes)
{
    add_used(h, bytes);
    h->live_blocks++;
}

/* ---- the free-run trees ----------------------------------------------------------- */

static int addr_cmp(const void *base, size_t a, size_t b)
{
    uintptr_t x = (uintptr_t)base + a, y = (uintptr_t)base + b;
    return x < y ? -1 : x > y;
}

static int size_cmp(const void *base, size_t a, size_t b)
{
    const struct ph_heap *h = base;
    size_t na = range_at(h, RANGE_OF_SIZE_NODE(a))->npages;
    size_t nb = range_at(h, RANGE_OF_SIZE_NODE(b))->npages;
    if (na != nb)
        return na < nb ? -1 : 1;
    return addr_cmp(base, a, b);
}

/* Runs with fewer pages than *key come before it: lower_bound is best fit. */
static int size_probe(const void *base, size_t node, const void *key)
{
    const struct ph_heap *h = base;
    return range_at(h, RANGE_OF_SIZE_NODE(node))->npages < *(const size_t *)key ? -1 : 1;
}

static int addr_probe(const void *base, size_t node, const void *key)
{
    uintptr_t x = (uintptr_t)base + node, k = *(const uintptr_t *)key;
    return x < k ? -1 : x > k;
}

static void refresh_max(struct ph_heap *h)
{
    size_t last = rtm__tree_last(h, h->size_root);
    h->max_free_pages = last ? range_at(h, RANGE_OF_SIZE_NODE(last))->npages : 0;
}

static void range_insert(struct ph_heap *h, ph_tree tree, size_t r, size_t npages)
{
    range_at(h, r)->npages = npages;
    tree->insert(h, &h->addr_root, r, addr_cmp);
    tree->insert(h, &h->size_root, SIZE_NODE(r), size_cmp);
    h->free_runs++;
    if (npages > h->max_free_pages)
        h->max_free_pages = npages;
}

/* The cached maximum needs a tree walk only when the largest run shrinks or
 * goes away; otherwise it is kept with one comparison. */
static void range_remove(struct ph_heap *h, ph_tree tree, size_t r)
{
    size_t npages = range_at(h, r)->npages;
    tree->remove(h, &h->addr_root, r);
    tree->remove(h, &h->size_root, SIZE_NODE(r));
    h->free_runs--;
    if (npages == h->max_free_pages)
        refresh_max(h);
}

/* New page count for a range that stays at its address. */
static void range_resize(struct ph_heap *h, ph_tree tree, size_t r, size_t npages)
{
    size_t old = range_at(h, r)->npages;
    /* The size tree stores no keys: when the new count keeps the range
     * between its neighbours in (pages, address) order, rewriting the count
     * is all it takes, and the tree is not touched. */
    size_t nb = npages < old ? rtm__tree_prev(h, SIZE_NODE(r)) : rtm__tree_next(h, SIZE_NODE(r));
    range_at(h, r)->npages = npages;
    if (nb && (size_cmp(h, nb, SIZE_NODE(r)) < 0) != (npages < old)) {
        range_at(h, r)->npages = old; /* out of order: move it */
        tree->remove(h, &h->size_root, SIZE_NODE(r));
        range_at(h, r)->npages = npages;
        tree->insert(h, &h->size_root, SIZE_NODE(r), size_cmp);
    }
    if (npages > h->max_free_pages)
        h->max_free_pages = npages;
    else if (old == h->max_free_pages && npages < old)
        refresh_max(h);
}

/* ---- page runs ------------------------------------------------------------------------ */

/* Initialises the page-map entries from page pg up to the pool's fresh mark
 * (to FREE) and lowers the mark to pg. Pages below the mark all lie in the
 * free run at the pool's start, and runs are cut from a run's tail, so this
 * writes at most the entries of the run just taken, each once in the heap's
 * life. */
static void make_fresh_pages_known(struct ph_heap *h, size_t pg)
{
    struct ph_pool *d = (struct ph_pool *)(uintptr_t)pool_of(h, pg);
    size_t i = (pg - d->pages) >> PH_PAGE_SHIFT;
    if (i < d->fresh) {
        memset(entry(h, d, pg), 0, (d->fresh - i) * sizeof(struct ph_pgent));
        d->fresh = i;
    }
}

/* Takes a run of n pages, best fit, and returns its first page's offset, or 0.
 * The run is cut from the tail of the free range, so the range's head keeps
 * its place in the address tree. The pages' entries are FREE. O(log r). */
static size_t run_alloc(struct ph_heap *h, ph_tree tree, size_t n)
{
    if (n > h->max_free_pages)
        return 0;
    size_t node = rtm__tree_lower_bound(h, h->size_root, size_probe, &n);
    if (!node)
        return 0;
    size_t r = RANGE_OF_SIZE_NODE(node);
    size_t have = range_at(h, r)->npages;
    size_t pg = r + (have - n) * PAGE;
    if (have == n)
        range_remove(h, tree, r);
    else
        range_resize(h, tree, r, have - n);
    make_fresh_pages_known(h, pg);
    return pg;
}

/* Returns [pg, pg + n pages) to the free runs, merged with the free runs right
 * before and after it. Their entries must be FREE. Runs of different pools
 * are never adjacent: each pool's pages follow its own descriptor and page
 * map. O(log r). */
static void run_free(struct ph_heap *h, ph_tree tree, size_t pg, size_t n)
{
    uintptr_t start = abs_of(h, pg), end = start + n * PAGE;
    /* One search: the run before [start, end) and, next to it, the one after
     * (no free run lies inside a run being freed). */
    size_t prev = rtm__tree_floor(h, h->addr_root, addr_probe, &start);
    size_t next = prev ? rtm__tree_next(h, prev) : rtm__tree_first(h, h->addr_root);
    if (next && abs_of(h, next) == end) {
        n += range_at(h, next)->npages;
        range_remove(h, tree, next);
    }
    if (prev && abs_of(h, prev) + range_at(h, prev)->npages * PAGE == start)
        range_resize(h, tree, prev, range_at(h, prev)->npages + n);
    else
        range_insert(h, tree, pg, n);
}

/* ---- buckets ------------------------------------------------------------------------- */

static inline unsigned type_of(const struct ph_pgent *e)
{
    return e->type & 0xffu;
}

static inline unsigned shift_of(const struct ph_pgent *e)
{
    return (e->type >> 8) & 0xffu;
}

/* Bitmap of a bucket page with no busy slot: bits beyond the page's slots
 * read as busy, so "full" is always all ones. */
static inline uint32_t empty_map(unsigned shift)
{
    unsigned slots = (unsigned)(PAGE >> shift);
    return slots >= 32 ? 0u : ~((1u << slots) - 1u);
}

static void bucket_push(struct ph_heap *h, unsigned k, size_t pg, struct ph_pgent *e)
{
    size_t head = h->buckets[k];
    e->prev = 0;
    e->next = head;
    if (head)
        entry_of(h, head)->prev = pg;
    h->buckets[k] = pg;
}

static void bucket_unlink(struct ph_heap *h, unsigned k, struct ph_pgent *e)
{
    if (e->prev)
        entry_of(h, e->prev)->next = e->next;
    else
        h->buckets[k] = e->next;
    if (e->next)
        entry_of(h, e->next)->prev = e->prev;
}

/* Smallest bucket class (shift) for size bytes, size <= PAGE / 2. */
static inline unsigned bucket_shift(size_t size)
{
    if (size <= ((size_t)1 << PH_MIN_SHIFT))
        return PH_MIN_SHIFT;
    return (unsigned)(sizeof(size_t) * 8) - (unsigned)__builtin_clzl(size - 1);
}

static void *bucket_alloc(struct ph_heap *h, ph_tree tree, unsigned shift)
{
    unsigned k = shift - PH_MIN_SHIFT;
    size_t pg = h->buckets[k];
    struct ph_pgent *e;
    if (pg) {
        e = entry_of(h, pg);
    } else {
        pg = run_alloc(h, tree, 1);
        if (!pg)
            return NULL;
        e = entry_of(h, pg);
        e->type = PG_BUCKET | (shift << 8);
        e->word = empty_map(shift);
        bucket_push(h, k, pg, e);
    }
    unsigned slot = (unsigned)__builtin_ctz(~e->word);
    e->word |= 1u << slot;
    if (e->word == ~0u) /* full: leaves its class list */
        bucket_unlink(h, k, e);
    note_used(h, (size_t)1 << shift);
    return hbase(h) + pg + ((size_t)slot << shift);
}

/* ---- lookups of live blocks ---------------------------------------------------- */

struct live {
    size_t pg;           /* offset of the block's page */
    struct ph_pgent *e;  /* its entry */
    size_t bytes;        /* the block's size */
    unsigned slot;       /* bucket slot */
};

/* Finds the live block at p: a RUN head, or a busy slot of a BUCKET page.
 * False for anything else (outside every pool, misaligned, free, interior). */
static bool live_block(const struct ph_heap *h, const void *p, struct live *lb)
{
    /* Alignment of the address itself: the heap base is only 8-aligned. */
    if ((uintptr_t)p & (((uintptr_t)1 << PH_MIN_SHIFT) - 1))
        return false;
    size_t off = off_of(h, p);
    const struct ph_pool *d = pool_of(h, off);
    if (!d)
        return false;
    lb->pg = d->pages + ((off - d->pages) & ~(PAGE - 1));
    if (((lb->pg - d->pages) >> PH_PAGE_SHIFT) < d->fresh)
        return false; /* never handed out */
    lb->e = entry(h, d, lb->pg);
    lb->slot = 0;
    size_t within = off - lb->pg;
    switch (type_of(lb->e)) {
    case PG_RUN:
        lb->bytes = (size_t)lb->e->word * PAGE;
        return within == 0;
    case PG_BUCKET: {
        unsigned shift = shift_of(lb->e);
        if (within & (((size_t)1 << shift) - 1))
            return false;
        lb->slot = (unsigned)(within >> shift);
        lb->bytes = (size_t)1 << shift;
        return (lb->e->word >> lb->slot) & 1u;
    }
    default:
        return false;
    }
}

/* Frees the block lb describes. */
static void release(struct ph_heap *h, ph_tree tree, const struct live *lb)
{
    struct ph_pgent *e = lb->e;
    h->used_bytes -= lb->bytes;
    h->live_blocks--;
    if (type_of(e) == PG_RUN) {
        size_t n = e->word;
        e->type = PG_FREE;
        run_free(h, tree, lb->pg, n);
        return;
    }
    unsigned shift = shift_of(e), k = shift - PH_MIN_SHIFT;
    bool was_full = e->word == ~0u;
    e->word &= ~(1u << lb->slot);
    if (e->word == empty_map(shift)) {
        if (!was_full)
            bucket_unlink(h, k, e);
        e->type = PG_FREE;
        run_free(h, tree, lb->pg, 1);
    } else if (was_full) {
        bucket_push(h, k, lb->pg, e);
    }
}

/* ---- entry points ------------------------------------------------------------------ */

static inline size_t align_up(uintptr_t x, size_t a)
{
    return (size_t)((x + (a - 1)) & ~(uintptr_t)(a - 1));
}

/* Lays out page map and pages in [lo, hi) (absolute) for pool d. */
static int pool_format(struct ph_heap *h, ph_tree tree, struct ph_pool *d, uintptr_t lo,
                       uintptr_t hi)
{
    uintptr_t map = align_up(lo, _Alignof(struct ph_pgent));
    if (map < lo || map >= hi)
        return -ENOMEM;
    size_t avail = (size_t)(hi - map);
    size_t npages = avail / (PAGE + sizeof(struct ph_pgent));
    /* The pad before the first page is under one page: at most one less. */
    while (npages && (align_up(map + npages * sizeof(struct ph_pgent), PAGE) + npages * PAGE > hi ||
                      align_up(map + npages * sizeof(struct ph_pgent), PAGE) < map))
        npages--;
    if (npages == 0)
        return -ENOMEM;
    if (npages > PH_MAX_PAGES)
        return -E2BIG;
    uintptr_t pages = align_up(map + npages * sizeof(struct ph_pgent), PAGE);
    d->map = off_of(h, (void *)map);
    d->pages = off_of(h, (void *)pages);
    d->npages = npages;
    d->fresh = npages; /* the page map is initialised as pages are first used */
    range_insert(h, tree, d->pages, npages);
    h->usable_bytes += npages * PAGE;
    h->pool_count++;
    return 0;
}

struct ph_heap *rtm__ph_create(void *mem, size_t size, uint32_t kind, ph_tree tree,
                               const struct rtm_heap_config *cfg)
{
    int err;
    uintptr_t ctl = rtm_kind_place(mem, size, _Alignof(struct ph_heap), sizeof(struct ph_heap), &err);
    if (!ctl) {
        errno = err;
        return NULL;
    }
    uintptr_t hi = (uintptr_t)mem + size;
    struct ph_heap *h = (struct ph_heap *)ctl;
    memset(h, 0, sizeof(*h));
    rtm_kind_init(&h->base, kind, cfg, mem);
    h->pool0.link.raw_start = off_of(h, mem);
    h->pool0.link.raw_len = size;
    int rc = pool_format(h, tree, &h->pool0, ctl + sizeof(*h), hi);
    if (rc) {
        errno = -rc;
        return NULL;
    }
    h->overhead_bytes = size - h->usable_bytes;
    h->base.magic = RTM_HEAP_MAGIC;
    return h;
}

int rtm__ph_add_pool(struct ph_heap *h, void *mem, size_t size, ph_tree tree)
{
    uintptr_t dp;
    int rc = rtm_kind_pool_room(h, &h->pool0.link, mem, size, _Alignof(struct ph_pool),
                                sizeof(struct ph_pool), &dp);
    if (rc)
        return rc;
    size_t raw = off_of(h, mem);
    uintptr_t hi = (uintptr_t)mem + size;
    struct ph_pool nd = { .link = { .next = h->pool0.link.next, .raw_start = raw,
                                    .raw_len = size } };
    size_t usable_before = h->usable_bytes;
    /* Lay the pool out from a descriptor on the stack: its pages are indexed
     * by nd while the range is inserted, then nd is stored in place. */
    struct ph_pool *d = (struct ph_pool *)dp;
    rc = pool_format(h, tree, &nd, dp + sizeof(*d), hi);
    if (rc)
        return rc;
    *d = nd;
    h->pool0.link.next = off_of(h, d);
    h->overhead_bytes += size - (h->usable_bytes - usable_before);
    return 0;
}

/* Allocates without counting a failure (realloc decides whether it is one). */
static void *alloc_block(struct ph_heap *h, size_t size, ph_tree tree)
{
    if (size <= PAGE / 2)
        return bucket_alloc(h, tree, bucket_shift(size));
    if (size > PH_MAX_PAGES * PAGE)
        return NULL;
    size_t n = (size + PAGE - 1) >> PH_PAGE_SHIFT;
    size_t pg = run_alloc(h, tree, n);
    if (!pg)
        return NULL;
    struct ph_pgent *e = entry_of(h, pg);
    e->type = PG_RUN;
    e->word = (uint32_t)n;
    note_used(h, n * PAGE);
    return hbase(h) + pg;
}

void *rtm__ph_alloc(struct ph_heap *h, size_t size, ph_tree tree)
{
    void *p = alloc_block(h, size, tree);
    if (!p)
        h->base.failed_allocs++;
    return p;
}

void *rtm__ph_aligned_alloc(struct ph_heap *h, size_t alignment, size_t size, ph_tree tree)
{
    if (alignment == 0 || (alignment & (alignment - 1))) {
        h->base.failed_allocs++;
        return NULL;
    }
    /* Up to a page, the natural alignment of bucket slots and of pages does
     * it: a class of at least the alignment, or a page run. */
    if (alignment <= PAGE)
        return rtm__ph_alloc(h, size > alignment ? size : alignment, tree);
    /* Beyond: a run with room to slide to an aligned page, whose unused
     * pages before and after go back to the free runs. */
    size_t extra = alignment / PAGE - 1;
    if (size > PH_MAX_PAGES * PAGE || alignment / PAGE > PH_MAX_PAGES) {
        h->base.failed_allocs++;
        return NULL;
    }
    size_t n = size ? (size + PAGE - 1) >> PH_PAGE_SHIFT : 1;
    size_t total = n + extra;
    size_t pg = total <= PH_MAX_PAGES ? run_alloc(h, tree, total) : 0;
    if (!pg) {
        h->base.failed_allocs++;
        return NULL;
    }
    size_t lead = (align_up(abs_of(h, pg), alignment) - (size_t)abs_of(h, pg)) / PAGE;
    size_t trail = total - lead - n;
    if (lead)
        run_free(h, tree, pg, lead);
    if (trail)
        run_free(h, tree, pg + (lead + n) * PAGE, trail);
    pg += lead * PAGE;
    struct ph_pgent *e = entry_of(h, pg);
    e->type = PG_RUN;
    e->word = (uint32_t)n;
    note_used(h, n * PAGE);
    return hbase(h) + pg;
}

/* Grows or shrinks the run lb in place to n pages if it can. */
static bool run_resize_in_place(struct ph_heap *h, ph_tree tree, struct live *lb, size_t n)
{
    size_t have = lb->e->word;
    if (n == have)
        return true;
    if (n < have) {
        run_free(h, tree, lb->pg + n * PAGE, have - n);
        lb->e->word = (uint32_t)n;
        h->used_bytes -= (have - n) * PAGE;
        return true;
    }
    uintptr_t end = abs_of(h, lb->pg) + have * PAGE;
    size_t next = rtm__tree_lower_bound(h, h->addr_root, addr_probe, &end);
    if (!next || abs_of(h, next) != end || range_at(h, next)->npages < n - have)
        return false;
    size_t rest = range_at(h, next)->npages - (n - have);
    range_remove(h, tree, next);
    if (rest)
        range_insert(h, tree, next + (n - have) * PAGE, rest);
    lb->e->word = (uint32_t)n;
    add_used(h, (n - have) * PAGE);
    return true;
}

void *rtm__ph_realloc(struct ph_heap *h, void *p, size_t size, ph_tree tree)
{
    if (!p)
        return rtm__ph_alloc(h, size, tree);
    struct live lb;
    if (!live_block(h, p, &lb)) {
        h->base.failed_allocs++;
        return NULL;
    }
    if (type_of(lb.e) == PG_BUCKET) {
        if (size <= PAGE / 2 && bucket_shift(size) == shift_of(lb.e))
            return p;
    } else if (size > PAGE / 2 && size <= PH_MAX_PAGES * PAGE) {
        if (run_resize_in_place(h, tree, &lb, (size + PAGE - 1) >> PH_PAGE_SHIFT))
            return p;
    }
    void *q = alloc_block(h, size, tree);
    if (!q) {
        /* Going smaller never fails: when no block of the smaller class is
         * to be had, the block stays where it is (a run keeps one page). */
        if (size <= lb.bytes) {
            if (type_of(lb.e) == PG_RUN)
                run_resize_in_place(h, tree, &lb, 1);
            return p;
        }
        h->base.failed_allocs++;
        return NULL;
    }
    memcpy(q, p, lb.bytes < size ? lb.bytes : size);
    release(h, tree, &lb);
    return q;
}

int rtm__ph_free(struct ph_heap *h, void *p, ph_tree tree)
{
    if (!p)
        return 0;
    struct live lb;
    if (!live_block(h, p, &lb))
        return -EINVAL;
    release(h, tree, &lb);
    return 0;
}

size_t rtm__ph_usable_size(const struct ph_heap *h, const void *p)
{
    struct live lb;
    return p && live_block(h, p, &lb) ? lb.bytes : 0;
}

int rtm__ph_stats(const struct ph_heap *h, struct rtm_heap_stats *out)
{
    out->usable_bytes = h->usable_bytes;
    out->used_bytes = h->used_bytes;
    out->free_bytes = h->usable_bytes - h->used_bytes;
    out->peak_used_bytes = h->peak_used_bytes;
    /* Every request up to this succeeds: a free page serves any bucket class
     * and runs up to the largest; without one, only the classes (from the
     * smallest up, without a gap) whose lists have a page with a free slot. */
    size_t largest = h->max_free_pages * PAGE;
    if (!largest)
        for (unsigned k = 0; k < PH_BUCKETS && h->buckets[k]; k++)
            largest = (size_t)1 << (k + PH_MIN_SHIFT);
    out->largest_free_bytes = largest;
    out->live_blocks = h->live_blocks;
    out->overhead_bytes = h->overhead_bytes;
    out->pool_count = h->pool_count;
    out->failed_allocs = h->base.failed_allocs;
    out->corruptions = h->base.corruptions;
    return 0;
}

size_t rtm__ph_fill_count(const struct ph_heap *h, size_t size)
{
    size_t count = 0;
    for (const struct ph_pool *d = &h->pool0;; d = pool_at(h, d->link.next)) {
        if (size <= PAGE / 2)
            count += d->npages * (PAGE >> bucket_shift(size));
        else if (size <= PH_MAX_PAGES * PAGE)
            count += d->npages / ((size + PAGE - 1) >> PH_PAGE_SHIFT);
        if (d->link.next == 0)
            break;
    }
    return count;
}

/* ---- consistency walk ------------------------------------------------------------- */

#define CHECK(cond)          \
    do {                     \
        if (!(cond))         \
            return -EFAULT;  \
    } while (0)

/*
 * Before anything reads a tree node: every node reachable from root lies on a
 * page start inside a pool (node - delta is the range's first page). A
 * depth-first walk with a bounded stack and node count, reading only nodes
 * it has placed, so a corrupt link gives -EFAULT instead of a wild read.
 */
static int tree_nodes_in_pools(const struct ph_heap *h, size_t root, size_t delta, size_t max_nodes)
{
    size_t stack[RTM_TREE_MAX_HEIGHT + 2], depth = 0, seen = 0;
    if (root)
        stack[depth++] = root;
    while (depth) {
        size_t node = stack[--depth];
        const struct ph_pool *d = pool_of(h, node - delta);
        CHECK(d && (node - delta - d->pages) % PAGE == 0 && ++seen <= max_nodes);
        const struct rtm_tnode *n = (const struct rtm_tnode *)(const void *)(hbase(h) + node);
        size_t kids[2] = { n->left, n->right };
        for (int i = 0; i < 2; i++) {
            if (!kids[i])
                continue;
            CHECK(depth < sizeof(stack) / sizeof(stack[0]));
            stack[depth++] = kids[i];
        }
    }
    return 0;
}

struct tally {
    size_t used, live, free_runs, max_run, bucket_pages_open[PH_BUCKETS];
};

static int check_pool(const struct ph_heap *h, const struct ph_pool *d, struct tally *t)
{
    /* The descriptor first: page map and pages inside the pool's memory. */
    CHECK(d->npages > 0 && d->npages <= PH_MAX_PAGES);
    CHECK(d->map - d->link.raw_start < d->link.raw_len && d->pages - d->link.raw_start < d->link.raw_len);
    CHECK(d->npages * sizeof(struct ph_pgent) <= d->pages - d->map);
    CHECK(d->npages * PAGE <= d->link.raw_len - (d->pages - d->link.raw_start));
    CHECK(abs_of(h, d->pages) % PAGE == 0 && d->fresh <= d->npages);
    bool prev_free = false;
    size_t i = 0;
    if (d->fresh) {
        /* Never-used pages: the start of the run at the pool's first page. */
        uintptr_t a = abs_of(h, d->pages);
        size_t r = rtm__tree_lower_bound(h, h->addr_root, addr_probe, &a);
        CHECK(r == d->pages);
        size_t n = range_at(h, r)->npages;
        CHECK(n >= d->fresh && n <= d->npages);
        for (size_t j = d->fresh; j < n; j++)
            CHECK(type_of(entry(h, d, d->pages + j * PAGE)) == PG_FREE);
        t->free_runs++;
        t->max_run = n > t->max_run ? n : t->max_run;
        i = n;
        prev_free = true;
    }
    while (i < d->npages) {
        size_t pg = d->pages + i * PAGE;
        const struct ph_pgent *e = entry(h, d, pg);
        switch (type_of(e)) {
        case PG_RUN:
            CHECK(e->word >= 1 && e->word <= d->npages - i);
            for (size_t j = 1; j < e->word; j++)
                CHECK(type_of(entry(h, d, pg + j * PAGE)) == PG_FREE);
            t->used += (size_t)e->word * PAGE;
            t->live++;
            i += e->word;
            prev_free = false;
            break;
        case PG_BUCKET: {
            unsigned shift = shift_of(e);
            CHECK(shift >= PH_MIN_SHIFT && shift <= PH_MAX_SHIFT);
            uint32_t empty = empty_map(shift);
            CHECK((e->word & empty) == empty && e->word != empty); /* an empty page is released */
            size_t busy = (size_t)__builtin_popcount(e->word & ~empty);
            t->used += busy << shift;
            t->live += busy;
            if (e->word != ~0u)
                t->bucket_pages_open[shift - PH_MIN_SHIFT]++;
            i++;
            prev_free = false;
            break;
        }
        case PG_FREE: {
            /* Must open a free run (coalesced: never right after another). */
            CHECK(!prev_free);
            uintptr_t a = abs_of(h, pg);
            size_t r = rtm__tree_lower_bound(h, h->addr_root, addr_probe, &a);
            CHECK(r == pg);
            size_t n = range_at(h, r)->npages;
            CHECK(n >= 1 && n <= d->npages - i);
            for (size_t j = 1; j < n; j++)
                CHECK(type_of(entry(h, d, pg + j * PAGE)) == PG_FREE);
            t->free_runs++;
            if (n > t->max_run)
                t->max_run = n;
            i += n;
            prev_free = true;
            break;
        }
        default:
            return -EFAULT;
        }
    }
    return 0;
}

int rtm__ph_check(const struct ph_heap *h, uint32_t kind, ph_tree tree)
{
    if (!h || h->base.magic != RTM_HEAP_MAGIC || h->base.kind != kind)
        return -EINVAL;
    struct tally t = { 0 };
    size_t pools = 0, pages = 0;
    /* The trees first, so that the page walk's lookups follow sound links. */
    size_t limit = h->usable_bytes / PAGE;
    int rc = tree_nodes_in_pools(h, h->addr_root, 0, limit);
    if (!rc)
        rc = tree_nodes_in_pools(h, h->size_root, offsetof(struct ph_range, size_node), limit);
    if (rc)
        return rc;
    CHECK(tree->check(h, h->addr_root, addr_cmp, limit) == (long)h->free_runs);
    CHECK(tree->check(h, h->size_root, size_cmp, limit) == (long)h->free_runs);
    for (const struct ph_pool *d = &h->pool0;; d = pool_at(h, d->link.next)) {
        CHECK(++pools <= h->pool_count);
        rc = check_pool(h, d, &t);
        if (rc)
            return rc;
        pages += d->npages;
        if (d->link.next == 0)
            break;
    }
    CHECK(pools == h->pool_count && pages * PAGE == h->usable_bytes);
    CHECK(t.used == h->used_bytes && t.live == h->live_blocks);
    CHECK(t.free_runs == h->free_runs && t.max_run == h->max_free_pages);
    CHECK(h->peak_used_bytes >= h->used_bytes && h->peak_used_bytes <= h->usable_bytes);
    /* Both trees hold exactly the free runs: the page walk found each one in
     * the address tree, and each run of the size tree is in it too. */
    for (size_t n = rtm__tree_first(h, h->size_root); n; n = rtm__tree_next(h, n))
        CHECK(rtm__tree_lower_bound(h, h->addr_root, addr_probe,
                                   &(uintptr_t){ abs_of(h, RANGE_OF_SIZE_NODE(n)) }) ==
              RANGE_OF_SIZE_NODE(n));
    /* Bucket lists: exactly the bucket pages of their class with a free slot. */
    for (unsigned k = 0; k < PH_BUCKETS; k++) {
        size_t count = 0, prev = 0;
        for (size_t pg = h->buckets[k]; pg; pg = entry_of(h, pg)->next) {
            CHECK(++count <= t.bucket_pages_open[k]);
            const struct ph_pool *d = pool_of(h, pg);
            CHECK(d && (pg - d->pages) % PAGE == 0);
            CHECK(((pg - d->pages) >> PH_PAGE_SHIFT) >= d->fresh);
            const struct ph_pgent *e = entry(h, d, pg);
            CHECK(type_of(e) == PG_BUCKET && shift_of(e) == k + PH_MIN_SHIFT);
            CHECK(e->word != ~0u); /* a full page is in no list */
            CHECK(e->prev == prev);
            prev = pg;
        }
        CHECK(count == t.bucket_pages_open[k]);
    }
    return 0;
}
