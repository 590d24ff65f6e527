/*
 * `rtmem wcet`: xvheap's scenarios. xvheap is TLSF inside single pages
 * (rtmem/xvheap.h): its alloc and free are TLSF's (tlsf.c here), plus the
 * two paths only a page heap has, which are its longest: an allocation
 * that finds no free block and takes a page, and a free that empties its
 * page and gives it back. Each is built, through the public API alone, in
 * a heap of WCET_POOLS regions whose pages the scenario uses lie in the
 * region the heap's walks find last (the O(regions) of rtmem/xvheap.h):
 * the region the first add_pool gave, every other one full.
 */
#include <string.h>

#include "wcet.h"

/* A request that takes exactly a block of `block` bytes. */
static size_t req(size_t block)
{
    return block - RTM_TLSF_HEADER_BYTES;
}

static void *take(struct wcet_case *c, size_t block, const char *what)
{
    void *p = rtm_heap_alloc(c->heap, req(block));
    if (!p)
        wcet_fail(c, "build: the %s (%zu bytes) could not be allocated", what, block);
    return p;
}

/* The lowest block size of s's class (rtmem/tlsf.h): a request for it
 * searches from that class, where a larger one's good fit starts above. */
static size_t class_floor(size_t s)
{
    if (s < 512)
        return s;
    unsigned shift = 63u - (unsigned)__builtin_clzll((unsigned long long)s) - RTM_TLSF_SL_LOG2;
    return s >> shift << shift;
}

/* The page that holds p. */
static uintptr_t page_of(const void *p)
{
    return (uintptr_t)p & ~(uintptr_t)(RTM_XVHEAP_PAGE_SIZE - 1);
}

/* A page's block area: what a request of rtm_xvheap_max_request takes. */
static size_t span(void)
{
    return rtm_xvheap_max_request(RTM_XVHEAP_PAGE_SIZE) + RTM_TLSF_HEADER_BYTES;
}

/* The heap of the xvheap scenarios: every page of the regions found first
 * taken (one largest block each), none of the scenario's region
 * (wcet_regions_build). 0, or -1 (c->why). */
static int regions_build(struct wcet_case *c)
{
    return wcet_regions_build(c, req(span()));
}

/* ---- alloc: nothing fits, a page is taken from the region found last -------- */

/* Request 3000 bytes (a block of 3008: class (3, 15), which its good fit
 * does not round past): the only free block is one of 1008 bytes, in a
 * page held with a 3008-byte block, so both bitmaps are read and the
 * request's own class is empty. A page is taken: every region but the
 * last walked has none left; it is formatted, put at the head of the
 * list of pages held, its block split, and the 1008-byte rest goes to the
 * head of the list that holds the other one. */
#define TAKE_BLOCK ((size_t)3008)
/* the rest of a page: 1008 bytes (1024 where a page holds 4032: 32-bit) */
#define TAKE_REST  (span() - TAKE_BLOCK)

static int page_take_build(struct wcet_case *c)
{
    if (regions_build(c) != 0)
        return -1;
    void *x = take(c, TAKE_BLOCK, "block of the held page");
    void *y = x ? take(c, TAKE_REST, "free block of the rest's class") : NULL;
    if (!y)
        return -1;
    if (page_of(x) != page_of(y) || !wcet_in_last_region(c, x))
        return wcet_fail(c, "build: the held page is not as laid out");
    rtm_heap_free(c->heap, y);
    c->op = WCET_OP_ALLOC;
    c->size = req(TAKE_BLOCK);
    c->expect[0] = page_of(x);
    c->expect[1] = (uintptr_t)y;
    c->expect[2] = rtm_heap_held_bytes(c->heap);
    return 0;
}

static int page_take_check(struct wcet_case *c)
{
    if (!c->ret || !wcet_in_last_region(c, c->ret) || page_of(c->ret) == c->expect[0])
        return wcet_fail(c, "alloc did not take a page of the region found last");
    if (rtm_heap_held_bytes(c->heap) != c->expect[2] + RTM_XVHEAP_PAGE_SIZE)
        return wcet_fail(c, "alloc did not take exactly one page");
    if (rtm_heap_usable_size(c->heap, c->ret) != req(TAKE_BLOCK))
        return wcet_fail(c, "the page's block was not split to the request");
    /* The rest went ahead of the other block of its class. */
    void *rest = rtm_heap_alloc(c->heap, req(TAKE_REST));
    void *y = rtm_heap_alloc(c->heap, req(TAKE_REST));
    if (page_of(rest) != page_of(c->ret) || (uintptr_t)y != c->expect[1])
        return wcet_fail(c, "the rest is not at the head of a non-empty list");
    struct rtm_heap_stats st;
    if (rtm_heap_stats(c->heap, &st) != 0 || st.pool_count != WCET_POOLS)
        return wcet_fail(c, "the heap does not have its %u regions", WCET_POOLS);
    wcet_fact(c,
              "no free block of %zu bytes (both bitmaps read, own class empty): a page from "
              "the region found last of %u, formatted, first in the list of pages held, split; "
              "%zu-byte rest to a non-empty list",
              TAKE_BLOCK, WCET_POOLS, TAKE_REST);
    wcet_num(c, "regions", WCET_POOLS);
    return wcet_heap_ok(c);
}

/* ---- free: both neighbours merged, the page emptied and given back ---------- */

/* Page S holds [P 96 | B 160 | N 3760] (N: the rest of the page): P and N free, each in the middle
 * of its class list (Q2 P Q1, R2 N R1, in pages of their own); S in the
 * middle of the list of pages held (taken between R1's and R2's). Freeing
 * B merges all three into the page's whole block area: inserted ahead of
 * M1 (3968 bytes, its class), then taken out again, S unlinked from
 * between its neighbours in the list of pages held, its tag cleared and
 * the page given back to the region found last. */
#define REL_P ((size_t)96)
#define REL_B ((size_t)160)
#define REL_G ((size_t)32)
/* the rest of the page: 3760 bytes (3776 where a page holds 4032: 32-bit) */
#define REL_N (span() - REL_P - REL_B)
#define REL_M ((size_t)3968)

/* Takes blocks of the given sizes in turn: they fill a fresh page exactly.
 * Their payloads go to out. 0, or -1 (c->why). */
static int page_of_blocks(struct wcet_case *c, const size_t *sizes, size_t n, void **out)
{
    for (size_t i = 0; i < n; i++)
        if (!(out[i] = take(c, sizes[i], "block of a laid-out page")))
            return -1;
    for (size_t i = 1; i < n; i++)
        if (page_of(out[i]) != page_of(out[0]))
            return wcet_fail(c, "build: a laid-out page did not hold its blocks");
    return wcet_in_last_region(c, out[0]) ? 0 : wcet_fail(c, "build: a page outside the region");
}

static int release_build(struct wcet_case *c)
{
    if (regions_build(c) != 0)
        return -1;
    size_t s = span();
    const size_t q[] = { REL_P, REL_G, REL_P, s - 2 * REL_P - REL_G };
    const size_t r[] = { REL_N, s - REL_N };
    const size_t pbn[] = { REL_P, REL_B, REL_N };
    const size_t m[] = { REL_M, s - REL_M };
    void *qp[4], *r1[2], *sp[3], *r2[2], *mp[2];
    if (class_floor(REL_N) == class_floor(REL_M) || s - REL_M < RTM_TLSF_MIN_BLOCK)
        return wcet_fail(c, "build: the classes no longer give the intended lists");
    if (page_of_blocks(c, q, 4, qp) != 0 || page_of_blocks(c, r, 2, r1) != 0 ||
        page_of_blocks(c, pbn, 3, sp) != 0 || page_of_blocks(c, r, 2, r2) != 0 ||
        page_of_blocks(c, m, 2, mp) != 0)
        return -1;
    /* Lists, head first: Q2 P Q1, R2 N R1, M1. */
    void *order[] = { qp[0], sp[0], qp[2], r1[0], sp[2], r2[0], mp[0] };
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
        if (rtm_heap_free(c->heap, order[i]) != 0)
            return wcet_fail(c, "build: a free was refused");
    c->op = WCET_OP_FREE;
    c->ptr = sp[1];
    c->expect[0] = (uintptr_t)qp[2]; /* the lists in pop order, for the check */
    c->expect[1] = (uintptr_t)qp[0];
    c->expect[2] = (uintptr_t)r2[0];
    c->expect[3] = (uintptr_t)r1[0];
    c->expect[4] = (uintptr_t)mp[0];
    c->expect[5] = rtm_heap_held_bytes(c->heap);
    c->expect[6] = page_of(sp[1]);
    return 0;
}

static int release_check(struct wcet_case *c)
{
    if (c->rc != 0)
        return wcet_fail(c, "free returned %d", c->rc);
    if (rtm_heap_held_bytes(c->heap) + RTM_XVHEAP_PAGE_SIZE != c->expect[5])
        return wcet_fail(c, "free did not give the page back");
    /* P and N left their lists with the page: each list pops its others;
     * the merged block left M1 alone at the head of its class. */
    const size_t sizes[] = { REL_P, REL_P, REL_N, REL_N, REL_M };
    for (size_t i = 0; i < 5; i++) {
        void *x = rtm_heap_alloc(c->heap, req(class_floor(sizes[i])));
        if ((uintptr_t)x != c->expect[i])
            return wcet_fail(c, "a list the free touched is not as the scenario built it");
    }
    if (wcet_heap_ok(c) != 0)
        return -1;
    /* The path: on the built heap, P and N are each in the middle of their
     * lists (the pops above, without B freed, find Q2 P Q1 and R2 N R1),
     * and the page is held between two others. */
    memcpy(c->image, c->saved, c->image_bytes);
    void *q2 = rtm_heap_alloc(c->heap, req(REL_P));
    void *p = rtm_heap_alloc(c->heap, req(REL_P));
    void *r2 = rtm_heap_alloc(c->heap, req(class_floor(REL_N)));
    void *n = rtm_heap_alloc(c->heap, req(class_floor(REL_N)));
    if ((uintptr_t)q2 != c->expect[0] || page_of(p) != c->expect[6] ||
        (uintptr_t)r2 != c->expect[2] || page_of(n) != c->expect[6])
        return wcet_fail(c, "a neighbour is not in the middle of its list");
    wcet_fact(c,
              "merges a free predecessor and successor, each unlinked from the middle of its "
              "list, into the page's whole block area: inserted, unlinked again, the page "
              "unlinked from the middle of the pages held and given back to the region found "
              "last of %u",
              WCET_POOLS);
    wcet_num(c, "regions", WCET_POOLS);
    return 0;
}

const struct wcet_scenario wcet_xvheap_scenarios[] = {
    { WCET_XVHEAP, "alloc-page-take", "alloc",
      "nothing fits (both bitmaps, own class empty): a page from the region found last of 8, "
      "formatted, linked first, split, rest to a non-empty list",
      "O(regions)", page_take_build, page_take_check, NULL },
    { WCET_XVHEAP, "free-page-give", "free",
      "both neighbours free, each unlinked from the middle of its list; the merged block fills "
      "the page: unlinked, the page unlinked from the middle of the pages held and given back "
      "to the region found last of 8",
      "O(regions)", release_build, release_check, NULL },
};
const size_t wcet_xvheap_n = sizeof(wcet_xvheap_scenarios) / sizeof(wcet_xvheap_scenarios[0]);
