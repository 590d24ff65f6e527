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
 *
 * Hardening (rtmem/heapmem.h says what it detects). A block ends on a page
 * boundary or inside its bucket page, so an overflow of up to PH_REACH bytes
 * past a block reaches another slot of its page or the first PH_REACH bytes
 * of the next page, never the page map (ahead of every page of its pool).
 * Nor does it reach past a pool's memory into the descriptor of a pool that
 * follows: each pool's memory starts with PH_REACH bytes the heap never uses.
 * The one piece of metadata inside pages is a free run's descriptor, in the
 * run's first page: it starts with a keyed guard word and keeps everything
 * it trusts (page count, tree links) beyond PH_REACH, and the address node,
 * in the page's second cache line, has a guard of its own ahead of its links,
 * so that a longer overflow reaches no link without changing a guard first.
 * A hardened heap checks the guard of every free run a search steps on before
 * reading its count or links (the guard in the cache line the search reads),
 * and both guards of every run it merges with or grows into, all before the
 * operation's first write; a heap at RTM_HEAP_HARDEN_NONE writes and checks
 * no guard.
 * Every operation that changes the heap takes the level once and runs one
 * of two instantiations of its path (`hard` is a constant in each).
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "pageheap.h"
#include "store.h"
#include "rtmem/pageheap_api.h"

#define PAGE PH_PAGE_SIZE

/* The longest overflow past a block that the hardened heap is built to
 * withstand: it reaches nothing the heap trusts (see the file comment). */
#define PH_REACH 16

/* Inlined into each of the two instantiations of a path (see above). */
#define PH_INLINE static inline __attribute__((always_inline))

enum { PG_FREE = 0, PG_RUN = 1, PG_BUCKET = 2 };

/*
 * A page-map entry: 12 bytes, as in Xenomai. Each pool keeps, per bucket
 * class, a list of its bucket pages with a free slot, linked by page index
 * in the pool plus one (0: none) in PG_IDX_BITS; the heap links the pools
 * whose list of a class is not empty (ph_pool.bnext, ph_heap.buckets).
 *   - FREE: all zero.
 *   - RUN (the first page of a live run): word is its page count.
 *   - BUCKET: word is its busy-slot bitmap; the class (shift - PH_MIN_SHIFT
 *     + 1, never 0) lies in the top bits of prev (its low two bits) and of
 *     next (the third), above the links.
 * The type is read off the entry: a class makes a BUCKET, else a page
 * count makes a RUN. A pool holds at most PH_MAX_PAGES pages, so that
 * every link fits.
 */
struct ph_pgent {
    uint32_t prev; /* BUCKET: class bits, and the previous page in its list */
    uint32_t next; /* BUCKET: class bit, and the next page in its list */
    uint32_t word; /* BUCKET: busy-slot bitmap; RUN: page count; FREE: 0 */
};

#define PG_IDX_BITS 30
#define PG_IDX_MASK ((UINT32_C(1) << PG_IDX_BITS) - 1)
_Static_assert(PH_MAX_PAGES + 1 <= PG_IDX_MASK, "a link (index + 1) fits");
_Static_assert(PH_BUCKETS <= 7, "a class (1 to PH_BUCKETS) fits in three bits");
_Static_assert(sizeof(struct ph_pgent) == 12, "a page-map entry is 12 bytes");

_Static_assert(offsetof(struct ph_range, guard) == 0, "the guard opens the range");
_Static_assert(offsetof(struct ph_range, addr_guard) == 64 &&
                   offsetof(struct ph_range, addr_node) + sizeof(struct rtm_tnode) <= 128,
               "address node and its guard: in the page's second 64 bytes");
_Static_assert(PH_REACH % _Alignof(struct ph_heap) == 0 && PH_REACH % _Alignof(struct ph_pool) == 0,
               "the gap ahead of a pool's descriptor keeps it aligned");
_Static_assert(offsetof(struct ph_range, npages) >= PH_REACH,
               "what a range trusts lies beyond a short overflow's reach");
_Static_assert(offsetof(struct ph_pool, link) == 0, "a pool's offset is its link's");
_Static_assert(RTM_PAGEHEAP_PAGE_SIZE == PH_PAGE_SIZE, "public page size");
_Static_assert(RTM_PAGEHEAP_MIN_BLOCK == ((size_t)1 << PH_MIN_SHIFT), "public smallest class");
_Static_assert(RTM_PAGEHEAP_MAX_BUCKET == ((size_t)1 << PH_MAX_SHIFT), "public largest class");
_Static_assert(RTM_PAGEHEAP_PAGEMAP_BYTES == sizeof(struct ph_pgent), "public page-map entry size");
_Static_assert(RTM_PAGEHEAP_MAX_PAGES == PH_MAX_PAGES, "public page limit");
_Static_assert(RTM_PAGEHEAP_CONTROL_BYTES >=
                   PH_REACH + sizeof(struct ph_heap) + _Alignof(struct ph_heap),
               "RTM_PAGEHEAP_CONTROL_BYTES covers the control structure");
_Static_assert(RTM_PAGEHEAP_POOL_OVERHEAD_MAX >=
                   PH_REACH + sizeof(struct ph_pool) + 2 * _Alignof(struct ph_pool) + PAGE - 1,
               "RTM_PAGEHEAP_POOL_OVERHEAD_MAX covers descriptor and alignment (page map aside)");
_Static_assert(sizeof(struct ph_range) <= PAGE, "a range descriptor fits in one page");
_Static_assert((PAGE >> PH_MIN_SHIFT) <= 32, "a page's slots fit a 32-bit bitmap");
_Static_assert(PH_MIN_SHIFT >= 4, "bucket slots keep 16-byte alignment");
_Static_assert((1u << PH_MIN_SHIFT) >= _Alignof(max_align_t), "slots aligned to max_align_t");

/* ---- addresses and pools -------------------------------------------------------- */

/* The address at offset off from the heap base. Offsets are modulo 2^N (a
 * pool may lie below the base), so the sum is made on integers and turned
 * into a pointer once: pointer arithmetic that wraps is undefined. */
static inline void *at_off(const struct ph_heap *h, size_t off)
{
    return (void *)((uintptr_t)h + off);
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
    return (const struct ph_pool *)at_off(h, off);
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
    struct ph_pgent *map = at_off(h, d->map);
    return &map[(pg - d->pages) >> PH_PAGE_SHIFT];
}

/* Entry of a page known to be in some pool. */
static inline struct ph_pgent *entry_of(const struct ph_heap *h, size_t pg)
{
    return entry(h, pool_of(h, pg), pg);
}

static inline struct ph_range *range_at(const struct ph_heap *h, size_t r)
{
    return at_off(h, r);
}

static inline void add_used(struct ph_heap *h, size_t bytes)
{
    RTM_SET(&h->base, h->used_bytes, h->used_bytes + (bytes));
    if (h->used_bytes > h->peak_used_bytes)
        RTM_SET(&h->base, h->peak_used_bytes, h->used_bytes);
}

/* A new live block of the given size. */
static inline void note_used(struct ph_heap *h, size_t bytes)
{
    add_used(h, bytes);
    RTM_SET(&h->base, h->live_blocks, h->live_blocks + 1);
}

/* ---- integrity of free runs --------------------------------------------------- */

/* The guard of a free run of npages pages at offset r: the heap's random
 * secret mixed with both, so no byte pattern a program writes by mistake
 * (the bytes of real offsets, counts, or another run's guard included) is a
 * valid guard but with odds of 2^-63; never 0, the value of a page that is
 * not a free run's head. One multiplication: it lies off the path of the
 * loads a search chains, and a mistake is not an attacker. */
static inline uint64_t range_tag(const struct ph_heap *h, size_t r, size_t npages)
{
    return (h->base.tag_key ^ (uint64_t)r ^ ((uint64_t)npages * 0x9e3779b97f4a7c15ull)) | 1u;
}

/* Which parts of a free run's descriptor range_fault checks. */
enum { RF_SIZE = 1, RF_ADDR = 2, RF_ALL = 3 };

/*
 * NULL if a hardened heap may trust the free run at offset r, else what is
 * wrong with it. r must lie on a page of a pool (checked before anything at
 * r is read); RF_SIZE: the guard must match the page count it covers, and
 * the run must end inside that pool; RF_ADDR: the address node's guard must
 * match. O(1) in the first pool, O(pools) elsewhere.
 */
PH_INLINE const char *range_fault(const struct ph_heap *h, size_t r, int parts)
{
    const struct ph_pool *d = pool_of(h, r);
    if (!d || ((r - d->pages) & (PAGE - 1)))
        return "free run outside the pools";
    const struct ph_range *g = range_at(h, r);
    if (parts & RF_SIZE) {
        size_t n = g->npages;
        if (g->guard != range_tag(h, r, n))
            return "free run guard";
        if (n == 0 || n > d->npages - ((r - d->pages) >> PH_PAGE_SHIFT))
            return "free run page count";
    }
    if ((parts & RF_ADDR) && g->addr_guard != range_tag(h, r, 0))
        return "free run address node guard";
    return NULL;
}

/* Reports a damaged free run (the operation is then refused). */
static __attribute__((cold, noinline)) void range_damaged(struct ph_heap *h, const void *block,
                                                          size_t r, const char *what)
{
    rtm__heap_corrupt(&h->base, block, at_off(h, r), what);
}

/* Whether a hardened heap may use the free run at r; reports it if not. */
static inline bool range_ok(struct ph_heap *h, const void *block, size_t r)
{
    const char *what = range_fault(h, r, RF_ALL);
    if (__builtin_expect(what != NULL, 0)) {
        range_damaged(h, block, r, what);
        return false;
    }
    return true;
}

/* ---- the free-run trees ----------------------------------------------------------- */

/* Both trees order by (pages, address) or address; an address tree node and
 * its range lie a constant apart, so comparing node offsets as addresses
 * orders ranges. */
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

/* A search key: a page count (size tree) or a range's address (address
 * tree). The checking probes record the range they stopped on. */
struct probe {
    uintptr_t key;
    size_t bad;
    const char *what;
};

/* Runs with fewer pages than the key come before it: lower_bound is best fit. */
static int size_probe(const void *base, size_t node, const void *key)
{
    const struct ph_heap *h = base;
    const struct probe *k = key;
    return range_at(h, RANGE_OF_SIZE_NODE(node))->npages < k->key ? -1 : 1;
}

static int addr_probe(const void *base, size_t node, const void *key)
{
    uintptr_t x = (uintptr_t)base + RANGE_OF_ADDR_NODE(node), k = ((const struct probe *)key)->key;
    return x < k ? -1 : x > k;
}

/* The probes of a hardened heap: the node's range is checked before the
 * search reads its page count or follows its links, with the guard in the
 * cache line the search reads. */
static int stop_at(const void *key, size_t r, const char *what)
{
    struct probe *k = (struct probe *)(uintptr_t)key; /* the caller's own, writable */
    k->bad = r;
    k->what = what;
    return RTM_TPROBE_STOP;
}

static int size_probe_checked(const void *base, size_t node, const void *key)
{
    const char *what = range_fault(base, RANGE_OF_SIZE_NODE(node), RF_SIZE);
    return __builtin_expect(what != NULL, 0) ? stop_at(key, RANGE_OF_SIZE_NODE(node), what)
                                             : size_probe(base, node, key);
}

static int addr_probe_checked(const void *base, size_t node, const void *key)
{
    const char *what = range_fault(base, RANGE_OF_ADDR_NODE(node), RF_ADDR);
    return __builtin_expect(what != NULL, 0) ? stop_at(key, RANGE_OF_ADDR_NODE(node), what)
                                             : addr_probe(base, node, key);
}

/* The address tree's node of the free run starting at or just below (floor)
 * or at or just above (!floor) address a: 0 for none, RTM_TREE_STOP
 * (reported, with block) when a hardened search met a damaged run. */
PH_INLINE size_t addr_search(struct ph_heap *h, bool hard, bool floor, uintptr_t a,
                             const void *block)
{
    struct probe k = { a, 0, NULL };
    rtm_tprobe probe = hard ? addr_probe_checked : addr_probe;
    size_t node = floor ? rtm__tree_floor(h, h->addr_root, probe, &k)
                        : rtm__tree_lower_bound(h, h->addr_root, probe, &k);
    if (hard && __builtin_expect(node == RTM_TREE_STOP, 0))
        range_damaged(h, block, k.bad, k.what);
    return node;
}

static void refresh_max(struct ph_heap *h)
{
    size_t last = rtm__tree_last(h, h->size_root);
    RTM_SET(&h->base, h->max_free_pages, last ? range_at(h, RANGE_OF_SIZE_NODE(last))->npages : 0);
}

PH_INLINE void range_insert(struct ph_heap *h, ph_tree tree, size_t r, size_t npages, bool hard)
{
    struct ph_range *g = range_at(h, r);
    RTM_SET(&h->base, g->npages, npages);
    if (hard) {
        RTM_SET(&h->base, g->guard, range_tag(h, r, npages));
        RTM_SET(&h->base, g->addr_guard, range_tag(h, r, 0));
    }
    tree->insert(h, &h->addr_root, ADDR_NODE(r), addr_cmp);
    tree->insert(h, &h->size_root, SIZE_NODE(r), size_cmp);
    RTM_SET(&h->base, h->free_runs, h->free_runs + 1);
    if (npages > h->max_free_pages)
        RTM_SET(&h->base, h->max_free_pages, npages);
}

/* The cached maximum needs a tree walk only when the largest run shrinks or
 * goes away; otherwise it is kept with one comparison. */
PH_INLINE void range_remove(struct ph_heap *h, ph_tree tree, size_t r, bool hard)
{
    size_t npages = range_at(h, r)->npages;
    tree->remove(h, &h->addr_root, ADDR_NODE(r));
    tree->remove(h, &h->size_root, SIZE_NODE(r));
    if (hard) /* its page is no free run's head any more */
    {
        RTM_SET(&h->base, range_at(h, r)->guard, 0);
        RTM_SET(&h->base, range_at(h, r)->addr_guard, 0);
    }
    RTM_SET(&h->base, h->free_runs, h->free_runs - 1);
    if (npages == h->max_free_pages)
        refresh_max(h);
}

/* New page count for a range that stays at its address. */
PH_INLINE void range_resize(struct ph_heap *h, ph_tree tree, size_t r, size_t npages, bool hard)
{
    struct ph_range *g = range_at(h, r);
    size_t old = g->npages;
    /* The size tree stores no keys: when the new count keeps the range
     * between its neighbours in (pages, address) order, rewriting the count
     * is all it takes, and the tree is not touched. */
    size_t nb = npages < old ? rtm__tree_prev(h, SIZE_NODE(r)) : rtm__tree_next(h, SIZE_NODE(r));
    RTM_SET(&h->base, g->npages, npages);
    if (nb && (size_cmp(h, nb, SIZE_NODE(r)) < 0) != (npages < old)) {
        RTM_SET(&h->base, g->npages, old); /* out of order: move it */
        tree->remove(h, &h->size_root, SIZE_NODE(r));
        RTM_SET(&h->base, g->npages, npages);
        tree->insert(h, &h->size_root, SIZE_NODE(r), size_cmp);
    }
    if (hard)
        RTM_SET(&h->base, g->guard, range_tag(h, r, npages));
    if (npages > h->max_free_pages)
        RTM_SET(&h->base, h->max_free_pages, npages);
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
        RTM_SET(&h->base, d->fresh, i);
    }
}

/* Best fit for n pages: the free run's offset, or 0 when none is large
 * enough or (reported) a hardened search met a damaged run. Writes nothing.
 * O(log r) nodes, each checked before it is read when hard. */
PH_INLINE size_t run_find(struct ph_heap *h, size_t n, bool hard)
{
    if (n > h->max_free_pages)
        return 0;
    struct probe k = { n, 0, NULL };
    size_t node =
        rtm__tree_lower_bound(h, h->size_root, hard ? size_probe_checked : size_probe, &k);
    if (hard && __builtin_expect(node == RTM_TREE_STOP, 0)) {
        range_damaged(h, NULL, k.bad, k.what);
        return 0;
    }
    return node ? RANGE_OF_SIZE_NODE(node) : 0;
}

/* Takes pages [lead, lead + n) of the free run r of `have` pages out of the
 * free runs: the pages before stay in r, those after become a run of their
 * own. Returns the first page's offset; the pages' entries are FREE.
 * O(log r). */
PH_INLINE size_t run_take(struct ph_heap *h, ph_tree tree, size_t r, size_t have, size_t lead,
                          size_t n, bool hard)
{
    size_t pg = r + lead * PAGE, trail = have - lead - n;
    if (lead)
        range_resize(h, tree, r, lead, hard);
    else
        range_remove(h, tree, r, hard);
    if (trail)
        range_insert(h, tree, pg + n * PAGE, trail, hard);
    make_fresh_pages_known(h, pg);
    return pg;
}

/* Takes a run of n pages, best fit, and returns its first page's offset, or 0.
 * The run is cut from the tail of the free range, so the range's head keeps
 * its place in the address tree. The pages' entries are FREE. O(log r). */
PH_INLINE size_t run_alloc(struct ph_heap *h, ph_tree tree, size_t n, bool hard)
{
    size_t r = run_find(h, n, hard);
    if (!r)
        return 0;
    /* The search checked the run's first guard; taking it unlinks its
     * address node too, whose guard is checked first. */
    if (hard && !range_ok(h, NULL, r))
        return 0;
    size_t have = range_at(h, r)->npages;
    return run_take(h, tree, r, have, have - n, n, hard);
}

/* The free runs that [pg, pg + n pages) merges with when it is freed: the
 * one ending at pg and the one starting right after it (0: none). */
struct merge {
    size_t prev, next;
};

/* Finds them, and checks them on a hardened heap: 0, or -EFAULT (reported,
 * with block). Writes nothing. Runs of different pools are never adjacent:
 * each pool's pages follow its own descriptor and page map. O(log r). */
PH_INLINE int merge_find(struct ph_heap *h, size_t pg, size_t n, bool hard, const void *block,
                         struct merge *m)
{
    uintptr_t start = abs_of(h, pg), end = start + n * PAGE;
    /* One search: the run before [start, end) and, next to it, the one after
     * (no free run lies inside a run being freed). The hardened search
     * checked the address node of the run it returns; its page count is
     * checked before it is read. */
    size_t prev = addr_search(h, hard, true, start, block);
    if (hard && __builtin_expect(prev == RTM_TREE_STOP, 0))
        return -EFAULT;
    size_t next = prev ? rtm__tree_next(h, prev) : rtm__tree_first(h, h->addr_root);
    m->prev = m->next = 0;
    if (prev) {
        size_t r = RANGE_OF_ADDR_NODE(prev);
        if (hard && !range_ok(h, block, r))
            return -EFAULT;
        uintptr_t prev_end = abs_of(h, r) + range_at(h, r)->npages * PAGE;
        if (hard && __builtin_expect(prev_end > start, 0)) {
            range_damaged(h, block, r, "free run overlaps the block");
            return -EFAULT;
        }
        if (prev_end == start)
            m->prev = r;
    }
    if (next) {
        size_t r = RANGE_OF_ADDR_NODE(next);
        if (abs_of(h, r) == end) {
            if (hard && !range_ok(h, block, r))
                return -EFAULT;
            m->next = r;
        }
    }
    return 0;
}

/* Returns [pg, pg + n pages) to the free runs, merged as merge_find found.
 * Their entries must be FREE. O(log r). */
PH_INLINE void merge_apply(struct ph_heap *h, ph_tree tree, size_t pg, size_t n,
                           const struct merge *m, bool hard)
{
    if (m->next) {
        n += range_at(h, m->next)->npages;
        range_remove(h, tree, m->next, hard);
    }
    if (m->prev)
        range_resize(h, tree, m->prev, range_at(h, m->prev)->npages + n, hard);
    else
        range_insert(h, tree, pg, n, hard);
}

/* ---- buckets ------------------------------------------------------------------------- */

/* A bucket page's class plus one, 0 for the other types. */
static inline unsigned class_of(const struct ph_pgent *e)
{
    return (e->prev >> PG_IDX_BITS) | (e->next >> PG_IDX_BITS) << 2;
}

static inline unsigned type_of(const struct ph_pgent *e)
{
    return ((e->prev | e->next) & ~PG_IDX_MASK) ? PG_BUCKET : e->word ? PG_RUN : PG_FREE;
}

/* A BUCKET page's class shift. */
static inline unsigned shift_of(const struct ph_pgent *e)
{
    return class_of(e) + PH_MIN_SHIFT - 1;
}

/* An entry's links, and the words that set them with its class kept. */
static inline uint32_t prev_of(const struct ph_pgent *e)
{
    return e->prev & PG_IDX_MASK;
}

static inline uint32_t next_of(const struct ph_pgent *e)
{
    return e->next & PG_IDX_MASK;
}

static inline uint32_t with_link(uint32_t word, uint32_t link)
{
    return (word & ~PG_IDX_MASK) | link;
}

/* The entry of page index i of pool d. */
static inline struct ph_pgent *entry_at(const struct ph_heap *h, const struct ph_pool *d, size_t i)
{
    struct ph_pgent *map = at_off(h, d->map);
    return &map[i];
}

static inline struct ph_pool *pool_w(const struct ph_pool *d)
{
    return (struct ph_pool *)(uintptr_t)d;
}

/* Bitmap of a bucket page with no busy slot: bits beyond the page's slots
 * read as busy, so "full" is always all ones. */
static inline uint32_t empty_map(unsigned shift)
{
    unsigned slots = (unsigned)(PAGE >> shift);
    return slots >= 32 ? 0u : ~((1u << slots) - 1u);
}

/* Puts page index i of pool d (entry e) at the head of its class-k list;
 * the pool joins the heap's list of class k when its own was empty. */
static void bucket_push(struct ph_heap *h, unsigned k, struct ph_pool *d, size_t i,
                        struct ph_pgent *e)
{
    uint32_t head = d->bhead[k];
    RTM_SET(&h->base, e->prev, with_link(e->prev, 0));
    RTM_SET(&h->base, e->next, with_link(e->next, head));
    if (head) {
        struct ph_pgent *f = entry_at(h, d, head - 1);
        RTM_SET(&h->base, f->prev, with_link(f->prev, (uint32_t)i + 1));
    } else {
        size_t first = h->buckets[k], self = off_of(h, d);
        RTM_SET(&h->base, d->bprev[k], 0);
        RTM_SET(&h->base, d->bnext[k], first);
        if (first)
            RTM_SET(&h->base, pool_w(pool_at(h, first))->bprev[k], self);
        RTM_SET(&h->base, h->buckets[k], self);
    }
    RTM_SET(&h->base, d->bhead[k], (uint32_t)i + 1);
}

/* Takes entry e out of pool d's class-k list; the pool leaves the heap's
 * list of class k when its own empties. */
static void bucket_unlink(struct ph_heap *h, unsigned k, struct ph_pool *d, struct ph_pgent *e)
{
    uint32_t prev = prev_of(e), next = next_of(e);
    if (prev) {
        struct ph_pgent *f = entry_at(h, d, prev - 1);
        RTM_SET(&h->base, f->next, with_link(f->next, next));
    } else {
        RTM_SET(&h->base, d->bhead[k], next);
    }
    if (next) {
        struct ph_pgent *f = entry_at(h, d, next - 1);
        RTM_SET(&h->base, f->prev, with_link(f->prev, prev));
    }
    if (!prev && !next) {
        size_t bp = d->bprev[k], bn = d->bnext[k];
        if (bp)
            RTM_SET(&h->base, pool_w(pool_at(h, bp))->bnext[k], bn);
        else
            RTM_SET(&h->base, h->buckets[k], bn);
        if (bn)
            RTM_SET(&h->base, pool_w(pool_at(h, bn))->bprev[k], bp);
    }
}

/* Smallest bucket class (shift) for size bytes, size <= PAGE / 2. */
static inline unsigned bucket_shift(size_t size)
{
    if (size <= ((size_t)1 << PH_MIN_SHIFT))
        return PH_MIN_SHIFT;
    return (unsigned)(sizeof(size_t) * 8) - (unsigned)__builtin_clzl(size - 1);
}

PH_INLINE void *bucket_alloc(struct ph_heap *h, ph_tree tree, unsigned shift, bool hard)
{
    unsigned k = shift - PH_MIN_SHIFT;
    size_t first = h->buckets[k], pg, i;
    struct ph_pool *d;
    struct ph_pgent *e;
    if (first) {
        d = pool_w(pool_at(h, first));
        i = d->bhead[k] - 1;
        pg = d->pages + i * PAGE;
        e = entry_at(h, d, i);
    } else {
        pg = run_alloc(h, tree, 1, hard);
        if (!pg)
            return NULL;
        d = pool_w(pool_of(h, pg));
        i = (pg - d->pages) >> PH_PAGE_SHIFT;
        e = entry_at(h, d, i);
        uint32_t cls = k + 1;
        RTM_SET(&h->base, e->prev, (cls & 3u) << PG_IDX_BITS);
        RTM_SET(&h->base, e->next, (cls >> 2) << PG_IDX_BITS);
        RTM_SET(&h->base, e->word, empty_map(shift));
        bucket_push(h, k, d, i, e);
    }
    unsigned slot = (unsigned)__builtin_ctz(~e->word);
    RTM_SET(&h->base, e->word, e->word | (1u << slot));
    if (e->word == ~0u) /* full: leaves its class list */
        bucket_unlink(h, k, d, e);
    note_used(h, (size_t)1 << shift);
    return at_off(h, pg + ((size_t)slot << shift));
}

/* ---- lookups of live blocks ---------------------------------------------------- */

struct live {
    unsigned type;      /* its page's: PG_RUN or PG_BUCKET */
    struct ph_pool *d;  /* the block's pool */
    size_t pg;          /* offset of the block's page */
    struct ph_pgent *e; /* its entry */
    size_t bytes;       /* the block's size */
    unsigned slot;      /* bucket slot */
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
    lb->d = pool_w(d);
    lb->slot = 0;
    size_t within = off - lb->pg;
    switch (lb->type = type_of(lb->e)) {
    case PG_RUN:
        /* a run is one block: p must be its first byte */
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
    default: return false;
    }
}

/* The pages freeing lb gives back to the free runs: its run, or its bucket
 * page when lb is the page's last busy slot; 0 pages for none. */
static inline size_t pages_released(const struct live *lb)
{
    if (lb->type == PG_RUN)
        return lb->e->word;
    return (lb->e->word & ~(1u << lb->slot)) == empty_map(shift_of(lb->e));
}

/* Frees the block lb describes (block: the address given, for reports).
 * 0, or -EFAULT (reported) with nothing written when a run it would merge
 * with is damaged. */
PH_INLINE int release(struct ph_heap *h, ph_tree tree, const struct live *lb, bool hard,
                      const void *block)
{
    struct ph_pgent *e = lb->e;
    size_t n = pages_released(lb);
    struct merge m = { 0, 0 };
    if (n && merge_find(h, lb->pg, n, hard, block, &m))
        return -EFAULT;
    RTM_SET(&h->base, h->used_bytes, h->used_bytes - (lb->bytes));
    RTM_SET(&h->base, h->live_blocks, h->live_blocks - 1);
    if (lb->type == PG_RUN) {
        RTM_SET(&h->base, e->word, 0); /* FREE */
        merge_apply(h, tree, lb->pg, n, &m, hard);
        return 0;
    }
    unsigned k = shift_of(e) - PH_MIN_SHIFT;
    bool was_full = e->word == ~0u;
    RTM_SET(&h->base, e->word, e->word & (~(1u << lb->slot)));
    if (n) {
        if (!was_full)
            bucket_unlink(h, k, lb->d, e);
        RTM_SET(&h->base, e->prev, 0); /* FREE */
        RTM_SET(&h->base, e->next, 0);
        RTM_SET(&h->base, e->word, 0);
        merge_apply(h, tree, lb->pg, 1, &m, hard);
    } else if (was_full) {
        bucket_push(h, k, lb->d, (lb->pg - lb->d->pages) >> PH_PAGE_SHIFT, e);
    }
    return 0;
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
    range_insert(h, tree, d->pages, npages, h->base.hardening != RTM_HEAP_HARDEN_NONE);
    RTM_SET(&h->base, h->usable_bytes, h->usable_bytes + (npages * PAGE));
    RTM_SET(&h->base, h->pool_count, h->pool_count + 1);
    return 0;
}

#if !RTM_LOGGED /* created plain; the logged copy has the operations that change a heap */
struct ph_heap *rtm__ph_create(void *mem, size_t size, uint32_t kind, ph_tree tree,
                               const struct rtm_heap_config *cfg)
{
    int err;
    /* PH_REACH bytes ahead of the control structure: an overflow past the
     * last page of a pool the caller placed right before this memory
     * lands there, not on the heap's header. */
    uintptr_t ctl = rtm_kind_place(mem, size, _Alignof(struct ph_heap),
                                   PH_REACH + sizeof(struct ph_heap), &err);
    if (!ctl) {
        errno = err;
        return NULL;
    }
    ctl += PH_REACH;
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

#endif /* !RTM_LOGGED */

int RTM_LOGGED_NAME(rtm__ph_add_pool)(struct ph_heap *h, void *mem, size_t size, ph_tree tree)
{
    uintptr_t dp;
    /* PH_REACH bytes ahead of the descriptor, as ahead of the control
     * structure (rtm__ph_create). */
    int rc = rtm_kind_pool_room(h, &h->pool0.link, mem, size, _Alignof(struct ph_pool),
                                PH_REACH + sizeof(struct ph_pool), &dp);
    if (rc)
        return rc;
    dp += PH_REACH;
    size_t raw = off_of(h, mem);
    uintptr_t hi = (uintptr_t)mem + size;
    struct ph_pool nd = {
        .link = { .next = h->pool0.link.next, .raw_start = raw, .raw_len = size },
    };
    size_t usable_before = h->usable_bytes;
    /* Lay the pool out from a descriptor on the stack: its pages are indexed
     * by nd while the range is inserted, then nd is stored in place. */
    struct ph_pool *d = (struct ph_pool *)dp;
    rc = pool_format(h, tree, &nd, dp + sizeof(*d), hi);
    if (rc)
        return rc;
    *d = nd;
    RTM_SET(&h->base, h->pool0.link.next, off_of(h, d));
    RTM_SET(&h->base, h->overhead_bytes,
            h->overhead_bytes + (size - (h->usable_bytes - usable_before)));
    return 0;
}

/* Allocates without counting a failure (realloc decides whether it is one). */
PH_INLINE void *alloc_block(struct ph_heap *h, size_t size, ph_tree tree, bool hard)
{
    if (size <= PAGE / 2)
        return bucket_alloc(h, tree, bucket_shift(size), hard);
    if (size > PH_MAX_PAGES * PAGE)
        return NULL;
    size_t n = (size + PAGE - 1) >> PH_PAGE_SHIFT;
    size_t pg = run_alloc(h, tree, n, hard);
    if (!pg)
        return NULL;
    RTM_SET(&h->base, entry_of(h, pg)->word, (uint32_t)n); /* FREE to RUN */
    note_used(h, n * PAGE);
    return at_off(h, pg);
}

/* RTM_HEAP_HARDEN_FULL: the periodic full check, at the start of every
 * operation that changes the heap. True when the operation must be refused. */
static inline bool periodic_refusal(struct ph_heap *h)
{
    return __builtin_expect(h->base.hardening == RTM_HEAP_HARDEN_FULL, 0) &&
           rtm__heap_periodic_check(&h->base) != 0;
}

static inline bool hardened(const struct ph_heap *h)
{
    return h->base.hardening != RTM_HEAP_HARDEN_NONE;
}

void *RTM_LOGGED_NAME(rtm__ph_alloc)(struct ph_heap *h, size_t size, ph_tree tree)
{
    void *p = NULL;
    if (!periodic_refusal(h))
        p = hardened(h) ? alloc_block(h, size, tree, true) : alloc_block(h, size, tree, false);
    if (!p)
        RTM_SET(&h->base, h->base.failed_allocs, h->base.failed_allocs + 1);
    return p;
}

PH_INLINE void *aligned_block(struct ph_heap *h, size_t alignment, size_t size, ph_tree tree,
                              bool hard)
{
    /* Up to a page, the natural alignment of bucket slots and of pages does
     * it: a class of at least the alignment, or a page run. */
    if (alignment <= PAGE)
        return alloc_block(h, size > alignment ? size : alignment, tree, hard);
    /* Beyond: the tail of a run with room to slide to an aligned page, whose
     * unused pages before and after stay free runs. */
    size_t extra = alignment / PAGE - 1;
    if (size > PH_MAX_PAGES * PAGE || alignment / PAGE > PH_MAX_PAGES)
        return NULL;
    size_t n = size ? (size + PAGE - 1) >> PH_PAGE_SHIFT : 1;
    size_t total = n + extra;
    size_t r = total <= PH_MAX_PAGES ? run_find(h, total, hard) : 0;
    if (!r || (hard && !range_ok(h, NULL, r)))
        return NULL;
    size_t have = range_at(h, r)->npages, tail = r + (have - total) * PAGE;
    size_t lead = (align_up(abs_of(h, tail), alignment) - (size_t)abs_of(h, tail)) / PAGE;
    size_t pg = run_take(h, tree, r, have, have - total + lead, n, hard);
    RTM_SET(&h->base, entry_of(h, pg)->word, (uint32_t)n); /* FREE to RUN */
    note_used(h, n * PAGE);
    return at_off(h, pg);
}

void *RTM_LOGGED_NAME(rtm__ph_aligned_alloc)(struct ph_heap *h, size_t alignment, size_t size,
                                             ph_tree tree)
{
    void *p = NULL;
    if (alignment != 0 && (alignment & (alignment - 1)) == 0 && !periodic_refusal(h))
        p = hardened(h) ? aligned_block(h, alignment, size, tree, true)
                        : aligned_block(h, alignment, size, tree, false);
    if (!p)
        RTM_SET(&h->base, h->base.failed_allocs, h->base.failed_allocs + 1);
    return p;
}

/* Whether the free run two below page pg (the one before the run that
 * precedes pg in address order) is intact, or there is none. Reports
 * damage. O(log r). */
PH_INLINE bool second_below_ok(struct ph_heap *h, size_t pg, const void *block)
{
    size_t node = addr_search(h, true, true, abs_of(h, pg), block);
    if (node == RTM_TREE_STOP)
        return false;
    size_t before = node ? rtm__tree_prev(h, node) : 0;
    return !before || range_ok(h, block, RANGE_OF_ADDR_NODE(before));
}

/* Grows or shrinks the run lb in place to n pages if it can: 0 done, 1 not
 * possible, -EFAULT (reported) when a run it would use is damaged. */
PH_INLINE int run_resize_in_place(struct ph_heap *h, ph_tree tree, struct live *lb, size_t n,
                                  bool hard, const void *block)
{
    size_t have = lb->e->word;
    if (n == have)
        return 0;
    if (n < have) {
        struct merge m = { 0, 0 };
        if (merge_find(h, lb->pg + n * PAGE, have - n, hard, block, &m))
            return -EFAULT;
        merge_apply(h, tree, lb->pg + n * PAGE, have - n, &m, hard);
        RTM_SET(&h->base, lb->e->word, (uint32_t)n);
        RTM_SET(&h->base, h->used_bytes, h->used_bytes - ((have - n) * PAGE));
        return 0;
    }
    uintptr_t end = abs_of(h, lb->pg) + have * PAGE;
    size_t node = addr_search(h, hard, false, end, block);
    if (hard && __builtin_expect(node == RTM_TREE_STOP, 0))
        return -EFAULT;
    if (!node)
        return 1;
    size_t next = RANGE_OF_ADDR_NODE(node);
    if (abs_of(h, next) != end)
        return 1;
    if (hard && !range_ok(h, block, next))
        return -EFAULT;
    if (range_at(h, next)->npages < n - have)
        return 1;
    size_t rest = range_at(h, next)->npages - (n - have);
    range_remove(h, tree, next, hard);
    if (rest)
        range_insert(h, tree, next + (n - have) * PAGE, rest, hard);
    RTM_SET(&h->base, lb->e->word, (uint32_t)n);
    add_used(h, (n - have) * PAGE);
    return 0;
}

/* realloc of a live block (p != NULL). Refused (NULL, p unchanged) when a
 * check fails before anything is written. */
PH_INLINE void *realloc_block(struct ph_heap *h, void *p, size_t size, ph_tree tree, bool hard)
{
    struct live lb;
    if (!live_block(h, p, &lb))
        return NULL;
    if (lb.type == PG_BUCKET) {
        if (size <= PAGE / 2 && bucket_shift(size) == shift_of(lb.e))
            return p;
    } else if (size > PAGE / 2 && size <= PH_MAX_PAGES * PAGE) {
        int rc = run_resize_in_place(h, tree, &lb, (size + PAGE - 1) >> PH_PAGE_SHIFT, hard, p);
        if (rc <= 0)
            return rc ? NULL : p;
    }
    /* Moving: the runs freeing p merges with are checked before the new
     * block is taken, and the run below the one just below p: taking the new
     * block may use that one up, and p's free then meets the next below. */
    struct merge m = { 0, 0 };
    if (hard && pages_released(&lb) &&
        (merge_find(h, lb.pg, pages_released(&lb), hard, p, &m) || !second_below_ok(h, lb.pg, p)))
        return NULL;
    void *q = alloc_block(h, size, tree, hard);
    if (!q) {
        /* Going smaller never fails: when no block of the smaller class is
         * to be had, the block stays where it is (a run keeps one page, or
         * all of it if the merge that gives the rest back is refused). */
        if (size <= lb.bytes) {
            if (lb.type == PG_RUN)
                (void)run_resize_in_place(h, tree, &lb, 1, hard, p);
            return p;
        }
        return NULL;
    }
    RTM_NOTE_BLOCK(&h->base, q, lb.bytes < size ? lb.bytes : size);
    memcpy(q, p, lb.bytes < size ? lb.bytes : size);
    if (release(h, tree, &lb, hard, p) == 0)
        return q;
    /* Taking q moved the trees, and freeing p met a damaged run the check
     * above did not (reported): p stays, q goes back. */
    struct live lq;
    if (live_block(h, q, &lq))
        (void)release(h, tree, &lq, hard, q);
    return NULL;
}

void *RTM_LOGGED_NAME(rtm__ph_realloc)(struct ph_heap *h, void *p, size_t size, ph_tree tree)
{
    if (!p)
        return RTM_LOGGED_NAME(rtm__ph_alloc)(h, size, tree);
    void *q = NULL;
    if (!periodic_refusal(h))
        q = hardened(h) ? realloc_block(h, p, size, tree, true)
                        : realloc_block(h, p, size, tree, false);
    if (!q)
        RTM_SET(&h->base, h->base.failed_allocs, h->base.failed_allocs + 1);
    return q;
}

int RTM_LOGGED_NAME(rtm__ph_free)(struct ph_heap *h, void *p, ph_tree tree)
{
    if (!p)
        return 0;
    if (periodic_refusal(h))
        return -EFAULT;
    struct live lb;
    if (!live_block(h, p, &lb))
        return -EINVAL;
    return hardened(h) ? release(h, tree, &lb, true, p) : release(h, tree, &lb, false, p);
}

#if !RTM_LOGGED /* the calls that only read: in the plain copy alone */

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

/* floor(a * j / d), saturated at SIZE_MAX; d > 0. */
static size_t mul_div(size_t a, size_t j, size_t d)
{
    return rtm_sat_add(rtm_sat_mul(a / d, j), rtm_sat_mul(a % d, j) / d);
}

/*
 * rtm_heap_pool_bound for heapmem and xnheap (heap.h, docs/size.md): the
 * pages a failure can leave, at most, plus one; then the page map, control
 * structure and alignment that many pages need.
 *  - Bucket pages: a class takes a page only when all its pages are full,
 *    each slot holding a request of at least lo bytes (the smallest the
 *    class serves), and M bounds them with the request that takes the new
 *    page: class c never has more than 1 + (M - lo) / (slots * lo) pages.
 *  - Page runs: N <= (M - r) / lo_run of them, whose pages number at most
 *    N + (M - 1) / 512 (each ceil(bytes / 512)).
 *  - A request of k pages (k = 1 for a bucket slot: it fails only without
 *    a free page) fails only when every free run is shorter; free runs
 *    never touch, so at most B + N + 1 lie between the used pages, and
 *    pages <= B + N + (M - 1) / 512 + (B + N + 1)(k - 1). With j =
 *    ceil(r / 512) - 1 and E the pages an alignment above 512 adds,
 *    N (k - 1) <= (M - 1 - 512 j) j / lo_run + E (M - 1) / lo_run, and
 *    (M - 1 - 512 j) j grows up to j = (M - 1) / 1024: its largest value
 *    over the allowed j is at the smaller of that and the largest j, or one
 *    past it. O(bucket classes).
 */
size_t rtm__ph_pool_bound(const struct rtm_heap_limits *lim)
{
    size_t M = lim->max_live, n = lim->max_block, m = lim->min_block, a = lim->max_align;
    if (n > PH_MAX_PAGES * PAGE || a / PAGE > PH_MAX_PAGES) {
        errno = E2BIG;
        return 0;
    }
    size_t bucket_pages = 0;
    for (unsigned shift = PH_MIN_SHIFT; ((size_t)1 << shift) <= PAGE / 2; shift++) {
        size_t c = (size_t)1 << shift;
        /* requests above c / 2 land in c; any request does with an
         * alignment of c (aligned_alloc takes the class of the alignment) */
        size_t lo = shift == PH_MIN_SHIFT || a >= c ? m : (m > c / 2 ? m : c / 2 + 1);
        if (lo > c || lo > n)
            continue;
        size_t slots = PAGE >> shift;
        bucket_pages = rtm_sat_add(bucket_pages, 1 + (M - lo) / rtm_sat_mul(slots, lo));
    }
    size_t pages = bucket_pages;
    if (n > PAGE / 2 || a >= PAGE) {
        /* with an alignment of a page or more, a request of any size may
         * take a run */
        size_t lo_run = a >= PAGE ? m : (m > PAGE / 2 ? m : PAGE / 2 + 1);
        size_t extra = a > PAGE ? a / PAGE - 1 : 0;
        size_t jmax = (n - 1) / PAGE; /* ceil(n / 512) - 1 */
        size_t kmax = jmax + 1 + extra;
        size_t runs = (M - 1) / lo_run;
        size_t j = (M - 1) / (2 * PAGE) < jmax ? (M - 1) / (2 * PAGE) : jmax;
        size_t spread = mul_div(M - 1 - PAGE * j, j, lo_run);
        if (j < jmax) {
            size_t past = mul_div(M - 1 - PAGE * (j + 1), j + 1, lo_run);
            if (past > spread)
                spread = past;
        }
        pages = rtm_sat_add(pages, rtm_sat_add(runs, (M - 1) / PAGE));
        pages = rtm_sat_add(pages, rtm_sat_mul(bucket_pages + 1, kmax - 1));
        pages = rtm_sat_add(pages, spread);
        pages = rtm_sat_add(pages, rtm_sat_mul(extra, runs + 1));
    }
    pages = rtm_sat_add(pages, 1);
    /* a region this large, or a little larger (alignment, a lock's
     * rounding), must still make a pool create accepts: a margin of pages */
    if (pages > PH_MAX_PAGES - 64) {
        errno = pages == SIZE_MAX ? EOVERFLOW : E2BIG;
        return 0;
    }
    /* create: the control structure, the page map at its alignment, and
     * the pages aligned to 512 */
    size_t region =
        rtm_sat_add(rtm_sat_mul(pages, PAGE + sizeof(struct ph_pgent)),
                    RTM_PAGEHEAP_CONTROL_BYTES + _Alignof(struct ph_pgent) - 1 + PAGE - 1);
    if (region == SIZE_MAX) {
        errno = EOVERFLOW;
        return 0;
    }
    return region;
}

int rtm__ph_walk(const struct ph_heap *h, int (*fn)(void *arg, void *block), void *arg)
{
    size_t pools = 0;
    for (const struct ph_pool *d = &h->pool0;; d = pool_at(h, d->link.next)) {
        if (++pools > h->pool_count || d->fresh > d->npages)
            return -EFAULT;
        for (size_t i = d->fresh; i < d->npages;) {
            size_t pg = d->pages + i * PAGE;
            const struct ph_pgent *e = entry(h, d, pg);
            int rc = 0;
            switch (type_of(e)) {
            case PG_RUN:
                if (e->word == 0 || e->word > d->npages - i)
                    return -EFAULT;
                rc = fn(arg, at_off(h, pg));
                i += e->word;
                break;
            case PG_BUCKET: {
                unsigned shift = shift_of(e);
                if (shift < PH_MIN_SHIFT || shift > PH_MAX_SHIFT)
                    return -EFAULT;
                for (unsigned s = 0; s < (unsigned)(PAGE >> shift) && !rc; s++)
                    if ((e->word >> s) & 1u)
                        rc = fn(arg, at_off(h, pg + ((size_t)s << shift)));
                i++;
                break;
            }
            default: i++; break;
            }
            if (rc)
                return rc;
        }
        if (d->link.next == 0)
            return 0;
    }
}

/* ---- consistency walk ------------------------------------------------------------- */

#define CHECK(cond)         \
    do {                    \
        if (!(cond))        \
            return -EFAULT; \
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
        const struct rtm_tnode *n = at_off(h, node);
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

/* Whether the address tree holds a free run at offset r, and, on a hardened
 * heap, its guards are sound. */
static bool free_run_at(const struct ph_heap *h, size_t r)
{
    struct probe k = { abs_of(h, r), 0, NULL };
    if (rtm__tree_lower_bound(h, h->addr_root, addr_probe, &k) != ADDR_NODE(r))
        return false;
    return !hardened(h) || range_fault(h, r, RF_ALL) == NULL;
}

struct tally {
    size_t used, live, free_runs, max_run, bucket_pages_open[PH_BUCKETS];
};

static int check_pool(const struct ph_heap *h, const struct ph_pool *d, struct tally *t)
{
    /* The descriptor first: page map and pages inside the pool's memory. */
    CHECK(d->npages > 0 && d->npages <= PH_MAX_PAGES);
    CHECK(d->map - d->link.raw_start < d->link.raw_len &&
          d->pages - d->link.raw_start < d->link.raw_len);
    CHECK(d->npages * sizeof(struct ph_pgent) <= d->pages - d->map);
    CHECK(d->npages * PAGE <= d->link.raw_len - (d->pages - d->link.raw_start));
    CHECK(abs_of(h, d->pages) % PAGE == 0 && d->fresh <= d->npages);
    bool prev_free = false;
    size_t i = 0;
    if (d->fresh) {
        /* Never-used pages: the start of the run at the pool's first page. */
        CHECK(free_run_at(h, d->pages));
        size_t n = range_at(h, d->pages)->npages;
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
            CHECK(e->word >= 1 && e->word <= d->npages - i && e->prev == 0 && e->next == 0);
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
            CHECK(free_run_at(h, pg));
            size_t n = range_at(h, pg)->npages;
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
        default: return -EFAULT;
        }
    }
    return 0;
}

/* Whether off is the offset of one of h's pool descriptors. O(pools). */
static bool is_pool(const struct ph_heap *h, size_t off)
{
    for (const struct ph_pool *d = &h->pool0;; d = pool_at(h, d->link.next)) {
        if (off_of(h, d) == off)
            return true;
        if (d->link.next == 0)
            return false;
    }
}

int rtm__ph_check(const struct ph_heap *h, uint32_t kind, ph_tree tree)
{
    if (!h || h->base.magic != RTM_HEAP_MAGIC || h->base.kind != kind)
        return -EINVAL;
    struct tally t = { 0 };
    size_t pools = 0, pages = 0;
    /* The trees first, so that the page walk's lookups follow sound links. */
    size_t limit = h->usable_bytes / PAGE;
    int rc = tree_nodes_in_pools(h, h->addr_root, offsetof(struct ph_range, addr_node), limit);
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
        CHECK(free_run_at(h, RANGE_OF_SIZE_NODE(n)));
    /* Bucket lists: exactly the bucket pages of their class with a free
     * slot, each in its pool's list; exactly the pools with such a page in
     * the heap's list of the class. */
    for (unsigned k = 0; k < PH_BUCKETS; k++) {
        size_t count = 0, listed = 0, bprev = 0;
        for (size_t off = h->buckets[k]; off;) {
            CHECK(++listed <= h->pool_count && is_pool(h, off));
            const struct ph_pool *d = pool_at(h, off);
            CHECK(d->bprev[k] == bprev && d->bhead[k] != 0);
            uint32_t prev = 0;
            for (uint32_t link = d->bhead[k]; link;) {
                CHECK(++count <= t.bucket_pages_open[k]);
                CHECK(link - 1 < d->npages && link - 1 >= d->fresh);
                const struct ph_pgent *e = entry_at(h, d, link - 1);
                CHECK(type_of(e) == PG_BUCKET && shift_of(e) == k + PH_MIN_SHIFT);
                CHECK(e->word != ~0u); /* a full page is in no list */
                CHECK(prev_of(e) == prev);
                prev = link;
                link = next_of(e);
            }
            bprev = off;
            off = d->bnext[k];
        }
        CHECK(count == t.bucket_pages_open[k]);
        /* and a pool outside that list has no page in its list */
        size_t with = 0;
        for (const struct ph_pool *d = &h->pool0;; d = pool_at(h, d->link.next)) {
            with += d->bhead[k] != 0;
            if (d->link.next == 0)
                break;
        }
        CHECK(with == listed);
    }
    return 0;
}

/* ---- layout, for memory another process wrote ---------------------------------------- */

/*
 * Whether the pool whose descriptor d lies at a placed offset holds
 * together inside [0, bytes): its page map starts at or after lo (the end
 * of the structure that holds d), aligned, and holds npages entries before
 * the first page; the pages are page-aligned and end inside bytes; the
 * memory given for the pool covers d, map and pages; the fresh mark is at
 * most npages. Its pages' bytes go to *usable. Reads d only. Bounds by
 * subtraction and division: nothing overflows.
 */
static int validate_pool(const void *base, const struct rtm_pool_link *link, size_t lo,
                         size_t bytes, size_t *usable)
{
    const struct ph_heap *h = base;
    const struct ph_pool *d = (const struct ph_pool *)(const void *)link;
    size_t map = d->map, pages = d->pages, n = d->npages;
    /* Lowered by allocations, which may run in other processes meanwhile:
     * read whole (it stays at most npages at every instant). */
    size_t fresh = __atomic_load_n(&d->fresh, __ATOMIC_RELAXED);
    CHECK(n >= 1 && n <= PH_MAX_PAGES && fresh <= n);
    CHECK(map >= lo && map <= pages && pages < bytes);
    CHECK(abs_of(h, map) % _Alignof(struct ph_pgent) == 0 && abs_of(h, pages) % PAGE == 0);
    CHECK(n <= (pages - map) / sizeof(struct ph_pgent) && n <= (bytes - pages) / PAGE);
    /* descriptor, page map and pages, in that order in the raw memory (whose
     * start may lie below the heap base: offsets modulo 2^N) */
    size_t raw = d->link.raw_start, end = pages + n * PAGE;
    CHECK(off_of(h, d) - raw <= end - raw && end - raw <= d->link.raw_len);
    *usable = n * PAGE; /* at most bytes: no overflow */
    return 0;
}

/*
 * The kinds' validate op (kind.h): the control structure inside bytes, and
 * every pool, as validate_pool says; pool_count descriptors, whose pages
 * add up to usable_bytes and whose memory to usable_bytes + overhead_bytes.
 * Each pool holds a page at least, so the walk ends after min(pool_count,
 * bytes / PH_PAGE_SIZE) + 1 descriptors, a cyclic list included. O(pools).
 */
int rtm__ph_validate(const struct ph_heap *h, size_t bytes)
{
    CHECK((uintptr_t)h % _Alignof(struct ph_heap) == 0 && bytes >= sizeof(*h));
    return rtm_kind_validate_pools(h, bytes, sizeof(*h), &h->pool0.link, h->pool_count,
                                   h->usable_bytes, h->overhead_bytes, sizeof(struct ph_pool),
                                   _Alignof(struct ph_pool), validate_pool);
}

#endif /* !RTM_LOGGED */
