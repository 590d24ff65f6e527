/*
 * xvheap: TLSF (tlsf_core.h) inside single pages taken from a page
 * provider, each page given back when its last live block is freed
 * (rtmem/xvheap.h).
 *
 * Each held page is one TLSF pool: a descriptor (struct xv_page) at the
 * page's start, then blocks, a sentinel and its slack. The pages a heap
 * holds are a list through their descriptors; a keyed tag in the
 * descriptor says the heap holds the page, so that a block's page is
 * found from its address in O(1) (the page size is a power of two and pages
 * are aligned to it) and a foreign or given-back page is told apart
 * without a search. Pages come from the heap's own regions (a page stack
 * each: page_stack.h) or from a provider's callbacks.
 */
#include <errno.h>
#include <string.h>

#include "rtmem/tlsf.h"
#include "rtmem/xvheap.h"
#include "kind.h"
/* Every call writes at most about 100 words, and its log holds 192 (undo.c). */
#define RTM_UNDO_FITS 1
#include "page_stack.h"
#include "xvheap_layout.h"

/* A region of pages the heap keeps itself: the creating memory, or one
 * add_pool gave. */
struct xv_region {
    struct rtm_pool_link link; /* the next region; the memory given */
    size_t first;              /* offset of page 0 */
    size_t stack;              /* offset of the page stack: a uint32_t per page */
    struct page_stack s;
};

#define TLSF_PAGED          1
/* No fast test for a first pool: every position is placed by its page (so
 * a link check still branches on the end and idle tests: tlsf_core.h). */
#define TLSF_OTHER_POOLS(t) 1
/* usable_bytes, overhead_bytes and pool_count of tlsf_core.h's structure are
 * the statistics' (every page's block area, what is not, the regions). */
#define TLSF_EXTRA_FIELDS                                                                    \
    size_t page_size;                                                                        \
    size_t first_off, end_off, span; /* a page's block area: [first, end) */                 \
    size_t held_first;               /* the first page held, 0 for none */                   \
    size_t held_pages, peak_held, gets, puts;                                                \
    size_t keep_empty, empty_held; /* empty pages kept held, and their limit */              \
    uint64_t page_key;             /* keys the page tags (not tag_key: a tag is readable) */ \
    void *(*ext_get)(void *);      /* a provider's, or NULL for the heap's regions */        \
    void (*ext_put)(void *, void *);                                                         \
    void *ext_ctx;                                                                           \
    size_t ext_lo, ext_span; /* the provider's whole pages, as offsets */                    \
    struct xv_region region0;
#define rtm_tlsf rtm_xvheap
#include "tlsf_core.h"

/* What starts every page the heap holds. pool.link.raw_start is the page's
 * own offset and raw_len the page size; pool.link.next the next page held. */
struct xv_page {
    struct tlsf_pool pool;
    size_t prev;  /* the previous page held, 0 for the first */
    uint64_t tag; /* page_tag while held, 0 once given back */
};

_Static_assert(sizeof(struct rtm_xvheap) + _Alignof(struct rtm_xvheap) <= RTM_XVHEAP_CONTROL_BYTES,
               "RTM_XVHEAP_CONTROL_BYTES covers the control structure");
_Static_assert(sizeof(struct xv_region) <= 64, "RTM_XVHEAP_REGION_OVERHEAD covers the descriptor");
_Static_assert(RTM_PAGES_MIN_SIZE >= 8 * MIN_BLOCK && RTM_PAGES_MAX_SIZE <= RTM_TLSF_MAX_BLOCK,
               "a page holds blocks, and its block area is one TLSF block at most");

/* ---- pages ------------------------------------------------------------------ */

static inline struct xv_page *page_at(const struct rtm_xvheap *t, size_t pg)
{
    return (struct xv_page *)(void *)at_off(t, pg);
}

static inline struct xv_region *region_at(const struct rtm_xvheap *t, size_t off)
{
    return (struct xv_region *)(void *)at_off(t, off);
}

/* The offset of the page that holds offset y. */
static inline size_t page_off(const struct rtm_xvheap *t, size_t y)
{
    uintptr_t a = (uintptr_t)t + y;
    return (size_t)((a & ~(uintptr_t)(t->page_size - 1)) - (uintptr_t)t);
}

/* Keyed: a page another heap holds, or this heap held once, fails it. The
 * key is the page tags' own: a tag sits where a program that reads past a
 * block can see it, and must give away nothing of the block tags' key. */
static inline uint64_t page_tag(const struct rtm_xvheap *t, size_t pg)
{
    return (((uint64_t)pg ^ t->page_key) * 0x9e3779b97f4a7c15ull) | 1;
}

/* Pages the heap could hold: its regions', or its provider's range. */
static inline size_t pages_max(const struct rtm_xvheap *t)
{
    return t->ext_get ? t->ext_span / t->page_size : t->usable_bytes / t->span;
}

/* The region whose pages include page pg, or NULL. O(regions). */
static struct xv_region *region_of(const struct rtm_xvheap *t, size_t pg)
{
    for (struct xv_region *r = (struct xv_region *)&t->region0;; r = region_at(t, r->link.next)) {
        if (pg - r->first < r->s.pages * t->page_size)
            return r;
        if (r->link.next == 0)
            return NULL;
    }
}

/* Whether pg is a page the heap may hold: one of its regions', or inside
 * its provider's range. Reads nothing else. */
static inline bool page_in_range(const struct rtm_xvheap *t, size_t pg)
{
    if (t->ext_get)
        return pg - t->ext_lo <= t->ext_span - t->page_size;
    return region_of(t, pg) != NULL;
}

/* The descriptor of the page that holds offset y if the heap holds that
 * page, else NULL: its range first, then its tag and block area. */
static inline const struct xv_page *held_page(const struct rtm_xvheap *t, size_t y)
{
    size_t pg = page_off(t, y);
    if (!page_in_range(t, pg))
        return NULL;
    const struct xv_page *d = page_at(t, pg);
    if (d->tag != page_tag(t, pg) || d->pool.start != pg + t->first_off ||
        d->pool.end != pg + t->end_off)
        return NULL;
    return d;
}

static inline const struct tlsf_pool *pool_of(const struct rtm_xvheap *t, size_t b)
{
    const struct xv_page *d = held_page(t, b);
    return d && b - d->pool.start < d->pool.end - d->pool.start ? &d->pool : NULL;
}

/* Reports damage a page operation found: out of line, cold. */
static __attribute__((noinline, cold)) void page_damaged(struct rtm_xvheap *t, size_t where,
                                                         const char *what)
{
    rtm__heap_corrupt(&t->base, NULL, at_off(t, where), what);
}

/* Whether page pg (aligned) is held and its neighbours in the list of
 * pages held link back to it: what releasing it will write through. */
static bool held_links_ok(const struct rtm_xvheap *t, size_t pg)
{
    const struct xv_page *d = page_at(t, pg);
    size_t prev = d->prev, next = d->pool.link.next;
    bool pok = prev == 0 ? t->held_first == pg
                         : page_off(t, prev) == prev && held_page(t, prev) &&
                               page_at(t, prev)->pool.link.next == pg;
    bool nok = next == 0 ||
               (page_off(t, next) == next && held_page(t, next) && page_at(t, next)->prev == pg);
    return pok && nok;
}

/* A page to hold, as an offset, or 0 when none is left. A provider's page
 * outside its range, misaligned or held already is not used (nor given
 * back: the provider broke its contract). Hardened, a page stack's entry
 * that names a page never handed out, or one the heap holds, is reported
 * and not taken. */
static size_t page_take(struct rtm_xvheap *t, bool hard)
{
    if (t->ext_get) {
        void *p = t->ext_get(t->ext_ctx);
        size_t pg = off_of(t, p);
        if (!p || ((uintptr_t)p & (t->page_size - 1)) ||
            pg - t->ext_lo > t->ext_span - t->page_size || page_at(t, pg)->tag == page_tag(t, pg))
            return 0;
        return pg;
    }
    for (struct xv_region *r = &t->region0;; r = region_at(t, r->link.next)) {
        uint32_t *stack = (uint32_t *)(void *)at_off(t, r->stack);
        if (hard && r->s.top > 0) {
            size_t i = stack[r->s.top - 1], pg = r->first + i * t->page_size;
            if (i >= r->s.bump || page_at(t, pg)->tag == page_tag(t, pg)) {
                page_damaged(t, r->stack, "page stack");
                return 0;
            }
        }
        size_t i = page_stack_pop(&t->base, &r->s, stack);
        if (i != SIZE_MAX)
            return r->first + i * t->page_size;
        if (r->link.next == 0)
            return 0;
    }
}

static void page_give(struct rtm_xvheap *t, size_t pg)
{
    if (t->ext_get) {
        t->ext_put(t->ext_ctx, at_off(t, pg));
        return;
    }
    struct xv_region *r = region_of(t, pg);
    RTM_ASSERT(r != NULL);
    page_stack_push(&t->base, &r->s, (uint32_t *)(void *)at_off(t, r->stack),
                    (pg - r->first) / t->page_size);
}

/* Takes a page for a block of s bytes: formats it as a pool with one free
 * block, puts it first in the list of pages held, and returns that block,
 * unlinked (0 when s does not fit a page or no page is left). */
static size_t page_grow(struct rtm_xvheap *t, size_t s, bool hard)
{
    if (s > t->span)
        return 0;
    size_t head = t->held_first; /* written through below: its prev link */
    if (hard && head != 0 && !(page_off(t, head) == head && held_links_ok(t, head))) {
        page_damaged(t, head, "list of pages held");
        return 0;
    }
    size_t pg = page_take(t, hard);
    if (pg == 0)
        return 0;
    struct xv_page *d = page_at(t, pg);
    struct tlsf_pool pool = { .link = { .next = t->held_first } };
    if (pool_format(t, (uintptr_t)d + sizeof(*d), (uintptr_t)d + t->page_size, &pool) != 0) {
        page_give(t, pg); /* cannot happen: create checked the page's geometry */
        return 0;
    }
    RTM_SET(&t->base, d->pool.link.next, t->held_first);
    RTM_SET(&t->base, d->pool.link.raw_start, pg);
    RTM_SET(&t->base, d->pool.link.raw_len, t->page_size);
    RTM_SET(&t->base, d->pool.start, pool.start);
    RTM_SET(&t->base, d->pool.end, pool.end);
    RTM_SET(&t->base, d->prev, (size_t)0);
    RTM_SET(&t->base, d->tag, page_tag(t, pg));
    if (t->held_first)
        RTM_SET(&t->base, page_at(t, t->held_first)->prev, pg);
    RTM_SET(&t->base, t->held_first, pg);
    RTM_SET(&t->base, t->held_pages, t->held_pages + 1);
    RTM_SET(&t->base, t->gets, t->gets + 1);
    if (t->held_pages > t->peak_held)
        RTM_SET(&t->base, t->peak_held, t->held_pages);
    list_remove(t, pool.start);
    return pool.start;
}

/* A block a search found: the whole block of an empty page the heap kept,
 * in use again? */
static void page_reused(struct rtm_xvheap *t, size_t b)
{
    if (t->empty_held && hdr_size(HDR(t, b)) == t->span)
        RTM_SET(&t->base, t->empty_held, t->empty_held - 1);
}

/* Called with every block free has merged: a block that spans its page's
 * whole block area leaves the lists, and the page goes back. */
static void page_release(struct rtm_xvheap *t, size_t b, size_t size, bool hard)
{
    if (size != t->span)
        return;
    size_t pg = b - t->first_off;
    struct xv_page *d = page_at(t, pg);
    /* Kept, empty, while fewer than keep_empty are (rtm_xvheap_keep_empty);
     * or, its links to its neighbours damaged, reported and kept: its free
     * block stays in the lists, the heap consistent. */
    bool damaged = hard && t->empty_held >= t->keep_empty && !held_links_ok(t, pg);
    if (damaged)
        page_damaged(t, pg, "list of pages held");
    if (damaged || t->empty_held < t->keep_empty) {
        RTM_SET(&t->base, t->empty_held, t->empty_held + 1);
        return;
    }
    list_remove(t, b);
    size_t next = d->pool.link.next, prev = d->prev;
    if (prev)
        RTM_SET(&t->base, page_at(t, prev)->pool.link.next, next);
    else
        RTM_SET(&t->base, t->held_first, next);
    if (next)
        RTM_SET(&t->base, page_at(t, next)->prev, prev);
    RTM_SET(&t->base, d->tag, (uint64_t)0);
    RTM_SET(&t->base, t->held_pages, t->held_pages - 1);
    RTM_SET(&t->base, t->puts, t->puts + 1);
    page_give(t, pg);
}

/* ---- create -------------------------------------------------------------------- */

/* The first header's offset in a page of page_size bytes, and its block
 * area's size (what pool_format lays out after a descriptor). */
static inline void page_geometry(size_t page_size, size_t *first, size_t *span)
{
    *first = ((sizeof(struct xv_page) + HW + GRANULE - 1) & ~(GRANULE - 1)) - HW;
    *span = (page_size - GRANULE - *first) & ~(GRANULE - 1);
}

/* Past the first header (at GRANULE - HW modulo GRANULE), the sentinel's
 * granule and the block area's rounding (GRANULE - HW) are what a page
 * loses; the static assertion pins rtmem/xvheap.h's figure. */
_Static_assert(RTM_XVHEAP_PAGE_OVERHEAD >=
                   ((sizeof(struct xv_page) + HW + GRANULE - 1) & ~(GRANULE - 1)) - HW + GRANULE +
                       (GRANULE - HW),
               "RTM_XVHEAP_PAGE_OVERHEAD covers descriptor, trim, sentinel and slack");

static size_t stack_book(size_t pages)
{
    return pages * sizeof(uint32_t);
}

#if !RTM_LOGGED

/* Lays out the control structure at ctl for pages of page_size bytes. */
static struct rtm_xvheap *init_control(uintptr_t ctl, const struct rtm_heap_config *cfg,
                                       const void *mem, size_t size, size_t page_size)
{
    struct rtm_xvheap *t = (struct rtm_xvheap *)ctl;
    memset(t, 0, sizeof(*t));
    rtm_kind_init(&t->base, RTM_KIND_XVHEAP, cfg, mem);
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
    /* The first-pool tests of tlsf_core.h pass the idle block only, which
     * every check takes for what it is: no block lies outside a page. */
    t->start0 = IDLE;
    t->end0 = IDLE + MIN_BLOCK;
    t->page_key = rtm__heap_new_key(t);
    t->page_size = page_size;
    page_geometry(page_size, &t->first_off, &t->span);
    t->end_off = t->first_off + t->span;
    t->region0.link.raw_start = off_of(t, mem);
    t->region0.link.raw_len = size;
    t->pool_count = 1;
    return t;
}

struct rtm_xvheap *rtm_xvheap_create(void *mem, size_t size)
{
    return rtm_xvheap_create_ex(mem, size, NULL);
}

struct rtm_xvheap *rtm_xvheap_create_ex(void *mem, size_t size, const struct rtm_heap_config *cfg)
{
    if (!(cfg = rtm_kind_config(cfg)))
        return NULL;
    int err;
    uintptr_t ctl =
        rtm_kind_place(mem, size, _Alignof(struct rtm_xvheap), sizeof(struct rtm_xvheap), &err);
    if (!ctl) {
        errno = err;
        return NULL;
    }
    uintptr_t stack = ctl + sizeof(struct rtm_xvheap), first = 0;
    size_t n = page_layout(stack, (uintptr_t)mem + size, RTM_XVHEAP_PAGE_SIZE, stack_book, &first);
    if (n == 0 || n > UINT32_MAX) {
        errno = n ? E2BIG : ENOMEM;
        return NULL;
    }
    struct rtm_xvheap *t = init_control(ctl, cfg, mem, size, RTM_XVHEAP_PAGE_SIZE);
    t->region0.first = off_of(t, (void *)first);
    t->region0.stack = off_of(t, (void *)stack);
    t->region0.s.pages = n;
    t->usable_bytes = n * t->span;
    t->overhead_bytes = size - t->usable_bytes;
    t->base.magic = RTM_HEAP_MAGIC;
    return t;
}

struct rtm_xvheap *rtm_xvheap_create_on(void *mem, size_t size, const struct rtm_heap_config *cfg,
                                        const struct rtm_page_provider *pages)
{
    if (!pages || !pages->get || !pages->put || pages->page_size < RTM_PAGES_MIN_SIZE ||
        pages->page_size > RTM_PAGES_MAX_SIZE || (pages->page_size & (pages->page_size - 1))) {
        errno = EINVAL;
        return NULL;
    }
    size_t ps = pages->page_size;
    uintptr_t base = (uintptr_t)pages->base, end = base + pages->span;
    uintptr_t lo = (base + ps - 1) & ~(uintptr_t)(ps - 1);
    if (!pages->base || end < base || lo < base || lo > end || (end - lo) / ps == 0) {
        errno = EINVAL;
        return NULL;
    }
    if (!(cfg = rtm_kind_config(cfg)))
        return NULL;
    int err;
    uintptr_t ctl =
        rtm_kind_place(mem, size, _Alignof(struct rtm_xvheap), sizeof(struct rtm_xvheap), &err);
    if (!ctl) {
        errno = err;
        return NULL;
    }
    struct rtm_xvheap *t = init_control(ctl, cfg, mem, size, ps);
    size_t n = (size_t)(end - lo) / ps;
    if (rtm_kind_overlap((size_t)(uintptr_t)mem, size, (size_t)lo, n * ps)) {
        errno = EINVAL; /* a page handed out there would overwrite the heap */
        return NULL;
    }
    t->ext_get = pages->get;
    t->ext_put = pages->put;
    t->ext_ctx = pages->ctx;
    t->ext_lo = off_of(t, (void *)lo);
    t->ext_span = n * ps;
    t->usable_bytes = n * t->span;
    t->overhead_bytes = size + n * (ps - t->span);
    t->base.magic = RTM_HEAP_MAGIC;
    return t;
}

struct rtm_heap *rtm_xvheap_heap(struct rtm_xvheap *t)
{
    return t ? &t->base : NULL;
}

#endif /* !RTM_LOGGED */

static int add_pool_entry(struct rtm_xvheap *t, void *mem, size_t size)
{
    if (!t)
        return -EINVAL;
    if (t->ext_get)
        return -ENOTSUP;
    uintptr_t at;
    int rc = rtm_kind_pool_room(t, &t->region0.link, mem, size, _Alignof(struct xv_region),
                                sizeof(struct xv_region), &at);
    if (rc)
        return rc;
    uintptr_t stack = at + sizeof(struct xv_region), first = 0;
    size_t n = page_layout(stack, (uintptr_t)mem + size, t->page_size, stack_book, &first);
    if (n == 0)
        return -ENOMEM;
    if (n > UINT32_MAX)
        return -E2BIG;
    struct xv_region *r = (struct xv_region *)at;
    /* memory the heap did not have: nothing to undo there */
    *r = (struct xv_region){
        .link = { .next = t->region0.link.next, .raw_start = off_of(t, mem), .raw_len = size },
        .first = off_of(t, (void *)first),
        .stack = off_of(t, (void *)stack),
        .s = { .pages = n },
    };
    RTM_SET(&t->base, t->region0.link.next, off_of(t, r));
    RTM_SET(&t->base, t->usable_bytes, t->usable_bytes + n * t->span);
    RTM_SET(&t->base, t->overhead_bytes, t->overhead_bytes + size - n * t->span);
    RTM_SET(&t->base, t->pool_count, t->pool_count + 1);
    return 0;
}

#if RTM_LOGGED

/* ---- the logged operations (store.h) ------------------------------------ */

#define T(h) ((struct rtm_xvheap *)(void *)(h))

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
    const struct rtm_xvheap *t = (const struct rtm_xvheap *)(const void *)h;
    return hdr_size(HDR(t, off_of(t, p) - HW)) - HW;
}

const struct rtm_heap_wops rtm__xvheap_logged_ops = {
    .alloc = logged_alloc,
    .aligned_alloc = logged_aligned,
    .realloc = logged_realloc,
    .free = logged_free,
    .add_pool = logged_add_pool,
    .taken_size = logged_taken_size,
};

#else /* the plain copy: the typed API, the read-only calls, the kind's entry */

int rtm_xvheap_add_pool(struct rtm_xvheap *t, void *mem, size_t size)
{
    return add_pool_entry(t, mem, size);
}

void *rtm_xvheap_alloc(struct rtm_xvheap *t, size_t size)
{
    return alloc_entry(t, size);
}

void *rtm_xvheap_aligned_alloc(struct rtm_xvheap *t, size_t alignment, size_t size)
{
    return aligned_entry(t, alignment, size);
}

void *rtm_xvheap_realloc(struct rtm_xvheap *t, void *p, size_t size)
{
    return realloc_entry(t, p, size);
}

int rtm_xvheap_free(struct rtm_xvheap *t, void *p)
{
    return free_entry(t, p);
}

size_t rtm_xvheap_usable_size(const struct rtm_xvheap *t, const void *p)
{
    if (!t || !p)
        return 0;
    size_t b = live_block(t, p, hardened(t));
    return b ? hdr_size(HDR(t, b)) - HW : 0;
}

size_t rtm_xvheap_max_request(size_t page_size)
{
    if (page_size < RTM_PAGES_MIN_SIZE || page_size > RTM_PAGES_MAX_SIZE ||
        (page_size & (page_size - 1)))
        return 0;
    size_t first, span;
    page_geometry(page_size, &first, &span);
    return span - HW;
}

int rtm_xvheap_stats(const struct rtm_xvheap *t, struct rtm_heap_stats *out)
{
    if (!t || !out || t->base.magic != RTM_HEAP_MAGIC)
        return -EINVAL;
    out->usable_bytes = t->usable_bytes;
    out->used_bytes = t->used_bytes;
    out->free_bytes = t->usable_bytes - t->used_bytes;
    out->peak_used_bytes = t->peak_used_bytes;
    /* a page left in the heap's own regions serves the largest request; a
     * provider's may have none left, so only the held pages count then */
    bool page_left = !t->ext_get && t->held_pages < pages_max(t);
    out->largest_free_bytes = page_left ? t->span - HW : largest_request(t);
    out->live_blocks = t->live_blocks;
    out->overhead_bytes = t->overhead_bytes;
    out->pool_count = t->pool_count;
    out->failed_allocs = t->base.failed_allocs;
    out->corruptions = t->base.corruptions;
    return 0;
}

int rtm_xvheap_page_stats(const struct rtm_xvheap *t, struct rtm_xvheap_page_stats *out)
{
    if (!t || !out || t->base.magic != RTM_HEAP_MAGIC || t->base.kind != RTM_KIND_XVHEAP)
        return -EINVAL;
    *out = (struct rtm_xvheap_page_stats){ .page_size = t->page_size,
                                           .pages_held = t->held_pages,
                                           .peak_held = t->peak_held,
                                           .pages_max = pages_max(t),
                                           .gets = t->gets,
                                           .puts = t->puts,
                                           .empty_held = t->empty_held,
                                           .keep_empty = t->keep_empty,
                                           .max_request = t->span - HW };
    return 0;
}

int rtm_xvheap_keep_empty(struct rtm_xvheap *t, size_t pages)
{
    if (!t || t->base.magic != RTM_HEAP_MAGIC || t->base.kind != RTM_KIND_XVHEAP)
        return -EINVAL;
    t->keep_empty = pages;
    return 0;
}

/* The page stacks of the heap's regions: indices of pages handed out once,
 * pages out adding up to the pages held. O(pages). */
static int check_regions(const struct rtm_xvheap *t)
{
    if (t->ext_get)
        return 0;
    size_t out = 0, regions = 0, pages = 0;
    for (const struct xv_region *r = &t->region0;; r = region_at(t, r->link.next)) {
        CHECK(++regions <= t->pool_count);
        CHECK(r->s.bump <= r->s.pages && r->s.top <= r->s.bump);
        const uint32_t *stack = (const uint32_t *)(const void *)at_off(t, r->stack);
        for (size_t i = 0; i < r->s.top; i++)
            CHECK(stack[i] < r->s.bump && page_at(t, r->first + stack[i] * t->page_size)->tag !=
                                              page_tag(t, r->first + stack[i] * t->page_size));
        out += page_stack_out(&r->s);
        pages += r->s.pages;
        if (r->link.next == 0)
            break;
    }
    CHECK(regions == t->pool_count && pages == pages_max(t) && out == t->held_pages);
    return 0;
}

int rtm_xvheap_check(const struct rtm_xvheap *t)
{
    if (!t || t->base.magic != RTM_HEAP_MAGIC || t->base.kind != RTM_KIND_XVHEAP)
        return -EINVAL;
    /* the copies every call reads (tlsf_core.h; several_pools is TLSF's:
     * this kind's blocks lie in pages, never in a first pool) */
    CHECK(copies_agree(t));
    size_t used = 0, live = 0, free_bytes = 0, free_blocks = 0, pages = 0, prev = 0, empty = 0;
    uint64_t walk_sig = 0;
    for (size_t pg = t->held_first; pg != 0; pg = page_at(t, pg)->pool.link.next) {
        CHECK(++pages <= t->held_pages && pages <= pages_max(t));
        CHECK(page_off(t, pg) == pg && held_page(t, pg) != NULL);
        const struct xv_page *d = page_at(t, pg);
        CHECK(d->prev == prev && d->pool.link.raw_start == pg &&
              d->pool.link.raw_len == t->page_size);
        /* an empty page goes back at once, but for those kept
         * (rtm_xvheap_keep_empty, or with links found damaged) */
        size_t live_before = live;
        int rc = check_pool(t, &d->pool, &used, &live, &free_bytes, &free_blocks, &walk_sig);
        if (rc)
            return rc;
        empty += live == live_before;
        prev = pg;
    }
    CHECK(pages == t->held_pages && t->peak_held >= pages && t->peak_held <= pages_max(t));
    CHECK(t->gets - t->puts == pages && empty == t->empty_held);
    CHECK(used == t->used_bytes && live == t->live_blocks);
    CHECK(used + free_bytes == pages * t->span);
    CHECK(t->peak_used_bytes >= t->used_bytes && t->peak_used_bytes <= t->usable_bytes);
    int rc = check_regions(t);
    if (rc)
        return rc;
    return check_lists(t, free_blocks, walk_sig);
}

/* ---- layout, for memory another process wrote -------------------------------- */

/*
 * Whether a region whose descriptor lies at a placed offset holds together
 * inside [0, bytes): its page stack after lo, then its pages, aligned to
 * the page size, inside the memory given for it; a stack no fuller than
 * its pages. Its pages' block areas go to *usable. Reads the descriptor
 * only.
 */
static int validate_region(const void *base, const struct rtm_pool_link *link, size_t lo,
                           size_t bytes, size_t *usable)
{
    const struct rtm_xvheap *t = base;
    const struct xv_region *r = (const struct xv_region *)(const void *)link;
    size_t n = r->s.pages, ps = t->page_size, stack = r->stack, first = r->first;
    /* bump and top change with every call, and this runs without the lock:
     * each is read once and held to its own bound (check relates them) */
    size_t bump = __atomic_load_n(&r->s.bump, __ATOMIC_RELAXED);
    size_t top = __atomic_load_n(&r->s.top, __ATOMIC_RELAXED);
    CHECK(n > 0 && n <= UINT32_MAX && bump <= n && top <= n);
    CHECK(stack >= lo && stack < bytes && (bytes - stack) / sizeof(uint32_t) >= n);
    CHECK(stack % sizeof(uint32_t) == 0 && first >= stack + n * sizeof(uint32_t));
    CHECK(first < bytes && (bytes - first) / ps >= n && ((uintptr_t)t + first) % ps == 0);
    size_t raw = r->link.raw_start;
    CHECK(off_of(t, r) - raw < r->link.raw_len && first + n * ps - raw <= r->link.raw_len);
    *usable = n * t->span;
    return 0;
}

/*
 * The kind's validate op (kind.h): the control structure inside bytes, a
 * page geometry that follows from its page size, no provider (a heap on
 * callbacks is never shared), and every region as validate_region says.
 * The pages held change with every call: what reads them (held_page)
 * reads only inside the regions validated here. O(regions).
 */
static int xvheap_validate(const struct rtm_heap *h, size_t bytes)
{
    const struct rtm_xvheap *t = (const struct rtm_xvheap *)(const void *)h;
    CHECK((uintptr_t)t % _Alignof(struct rtm_xvheap) == 0 && bytes >= sizeof(*t));
    CHECK(t->base.kind == RTM_KIND_XVHEAP && t->ext_get == NULL && t->ext_put == NULL);
    size_t ps = t->page_size, first, span;
    CHECK(ps >= RTM_PAGES_MIN_SIZE && ps <= RTM_PAGES_MAX_SIZE && (ps & (ps - 1)) == 0);
    page_geometry(ps, &first, &span);
    CHECK(t->first_off == first && t->span == span && t->end_off == first + span);
    CHECK(t->start0 == IDLE && t->end0 == IDLE + MIN_BLOCK);
    CHECK(copies_agree(t));
    return rtm_kind_validate_pools(t, bytes, sizeof(*t), &t->region0.link, t->pool_count,
                                   t->usable_bytes, t->overhead_bytes, sizeof(struct xv_region),
                                   _Alignof(struct xv_region), validate_region);
}

void rtm__xvheap_layout(struct rtm_heap *h, struct xv_layout *l)
{
    struct rtm_xvheap *t = (struct rtm_xvheap *)(void *)h;
    struct xv_region *r = &t->region0;
    *l = (struct xv_layout){ .usable = &t->usable_bytes,
                             .overhead = &t->overhead_bytes,
                             .pool_count = &t->pool_count,
                             .next = &r->link.next,
                             .raw_start = &r->link.raw_start,
                             .raw_len = &r->link.raw_len,
                             .first = &r->first,
                             .stack = &r->stack,
                             .pages = &r->s.pages,
                             .bump = &r->s.bump,
                             .top = &r->s.top,
                             .used = &t->used_bytes,
                             .live = &t->live_blocks,
                             .region0 = off_of(t, &r->link),
                             .needed = r->first + r->s.pages * t->page_size,
                             .control_bytes = sizeof(*t),
                             .page_size = t->page_size,
                             .span = t->span };
}

/* ---- generic interface --------------------------------------------------- */

static struct rtm_heap *ops_create(void *mem, size_t size, const struct rtm_heap_config *cfg)
{
    return rtm_xvheap_heap(rtm_xvheap_create_ex(mem, size, cfg));
}

#define T(h)  ((struct rtm_xvheap *)(void *)(h))
#define CT(h) ((const struct rtm_xvheap *)(const void *)(h))

static void *ops_alloc(struct rtm_heap *h, size_t n)
{
    return alloc_entry(T(h), n);
}
static void *ops_aligned(struct rtm_heap *h, size_t a, size_t n)
{
    return aligned_entry(T(h), a, n);
}
static void *ops_realloc(struct rtm_heap *h, void *p, size_t n)
{
    return realloc_entry(T(h), p, n);
}
static int ops_free(struct rtm_heap *h, void *p)
{
    return free_entry(T(h), p);
}
static size_t ops_usable(const struct rtm_heap *h, const void *p)
{
    return rtm_xvheap_usable_size(CT(h), p);
}
static int ops_add_pool(struct rtm_heap *h, void *m, size_t n)
{
    return add_pool_entry(T(h), m, n);
}
static int ops_stats(const struct rtm_heap *h, struct rtm_heap_stats *o)
{
    return rtm_xvheap_stats(CT(h), o);
}
static int ops_check(const struct rtm_heap *h)
{
    return rtm_xvheap_check(CT(h));
}

/* Blocks of n bytes a fresh heap holds: floor(span / cost) per page. A
 * page's first block is its whole fresh block, cut without a search; in
 * classes wider than a granule, a later remainder that fits but shares its
 * class with another page's is not found (good fit: see find_free), and a
 * fresh page is taken instead: at most one block per page is lost, when a
 * page holds two or more and there are several pages. */
static size_t ops_fill_count(const struct rtm_heap *h, size_t n)
{
    const struct rtm_xvheap *t = CT(h);
    size_t cost = adjust_request(n);
    if (cost == 0 || cost > t->span)
        return 0;
    size_t pages = pages_max(t), per = t->span / cost, count = pages * per;
    size_t lost = per < 2 || class_fl(cost) <= 1 || pages == 1 ? 0 : pages;
    return count > lost ? count - lost : 0;
}

static int ops_walk(const struct rtm_heap *h, int (*fn)(void *arg, void *block), void *arg)
{
    const struct rtm_xvheap *t = CT(h);
    size_t pages = 0;
    for (size_t pg = t->held_first; pg != 0; pg = page_at(t, pg)->pool.link.next) {
        if (++pages > t->held_pages || pages > pages_max(t) || page_off(t, pg) != pg ||
            !held_page(t, pg))
            return -EFAULT;
        int rc = walk_pool(t, &page_at(t, pg)->pool, fn, arg);
        if (rc)
            return rc;
    }
    return 0;
}

static size_t ops_held_bytes(const struct rtm_heap *h)
{
    /* without the lock: one word that changes, read whole */
    return __atomic_load_n(&CT(h)->held_pages, __ATOMIC_RELAXED) * CT(h)->page_size;
}

/* Before a destroy: a heap on a provider gives every page it holds back
 * (its own regions go with its memory). O(pages held). */
static void ops_destroy(struct rtm_heap *h)
{
    struct rtm_xvheap *t = T(h);
    size_t n = 0;
    if (!t->ext_get)
        return;
    for (size_t pg = t->held_first; pg != 0 && n++ < t->held_pages;) {
        if (page_off(t, pg) != pg || !held_page(t, pg))
            return; /* damaged: what is left stays out */
        struct xv_page *d = page_at(t, pg);
        size_t next = d->pool.link.next;
        d->tag = 0;
        t->ext_put(t->ext_ctx, d);
        pg = next;
    }
    t->held_first = 0;
    t->held_pages = 0;
}

/*
 * The pool bound (rtm_heap_pool_bound, heap.h): every page the heap holds
 * has a live block (an empty one goes back at once), so with at most
 * L = floor((M - m) / m) blocks live besides the request, L + 1 pages
 * leave one free for it; a request (with an alignment's slack) that fits a
 * page then always succeeds. The region adds the control structure, a
 * stack entry per page and the first page's alignment.
 */
static size_t xvheap_pool_bound(const struct rtm_heap_limits *lim)
{
    size_t first, span;
    page_geometry(RTM_XVHEAP_PAGE_SIZE, &first, &span);
    size_t slack = lim->max_align > GRANULE ? lim->max_align + MIN_BLOCK - GRANULE : 0;
    size_t cost = adjust_request(lim->max_block);
    if (cost == 0 || lim->max_align > span || cost > span - slack) {
        errno = E2BIG;
        return 0;
    }
    size_t pages = rtm_sat_add((lim->max_live - lim->min_block) / lim->min_block, 1);
    size_t region =
        rtm_sat_add(rtm_sat_mul(pages, RTM_XVHEAP_PAGE_SIZE + sizeof(uint32_t)),
                    sizeof(struct rtm_xvheap) + _Alignof(struct rtm_xvheap) + RTM_XVHEAP_PAGE_SIZE);
    if (pages > UINT32_MAX || region == SIZE_MAX) {
        errno = pages > UINT32_MAX ? E2BIG : EOVERFLOW;
        return 0;
    }
    return region;
}

const struct rtm_heap_ops rtm__xvheap_ops = {
    .name = "xvheap",
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
    .validate = xvheap_validate,
    .pool_bound = xvheap_pool_bound,
    .held_bytes = ops_held_bytes,
    .destroy = ops_destroy,
};

#endif /* RTM_LOGGED */
