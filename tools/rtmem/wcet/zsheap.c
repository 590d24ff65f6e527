/*
 * `rtmem wcet`: zsheap's scenarios. zsheap packs size classes into zspages
 * of 1 to 4 pages (rtmem/zsheap.h): an allocation from a zspage with a free
 * object and a free that leaves its zspage some object are a few words of
 * its bookkeeping; its longest paths are the two that make a zspage and
 * give one back. Each is built, through the public API alone, in a heap of
 * WCET_POOLS regions whose pages the scenario uses lie in the region the
 * heap's walks find last (the first added), every page of the others in a
 * zspage.
 */
#include <string.h>

#include "wcet.h"

#define PAGE RTM_ZSHEAP_PAGE_SIZE

static void *take(struct wcet_case *c, size_t n, const char *what)
{
    void *p = rtm_heap_alloc(c->heap, n);
    if (!p)
        wcet_fail(c, "build: the %s (%zu bytes) could not be allocated", what, n);
    return p;
}

static uintptr_t page_of(const void *p)
{
    return (uintptr_t)p & ~(uintptr_t)(PAGE - 1);
}

/* The heap of the zsheap scenarios: every page of the regions found first
 * in a zspage (a page-sized object each), none of the scenario's region
 * (wcet_regions_build). 0, or -1 (c->why). */
static int regions_build(struct wcet_case *c)
{
    return wcet_regions_build(c, PAGE);
}

/* A class whose zspage is 4 pages (704-byte objects, 23 to a zspage), and
 * one of 2 pages (2560-byte objects, 3 to a zspage). */
#define OBJ4  ((size_t)700)
#define OBJ2  ((size_t)2560)
#define CAP4  23u
#define CAP2  3u
#define PAGES 4u

/* ---- alloc: a zspage made from a run cut, in the region found last ------- */

/* The scenario's region starts with page-sized objects: A (6 pages), a
 * separator, B (5 pages), a separator; B's then A's are freed, so that
 * its list of runs of 4 pages and more holds A then B. A 4096-byte request
 * (its class's list empty) walks the 8 regions (none of the others has a
 * free page) to the last, takes A from the head of that list, checks its
 * links, cuts a page off and puts the 5-page rest back at the head, ahead
 * of B; the zspage (one page, one object) is made, linked into its class's
 * list, and, full at once, unlinked again. */
static int zspage_make_build(struct wcet_case *c)
{
    if (regions_build(c) != 0)
        return -1;
    void *a[6], *b[5], *sep[2];
    for (int i = 0; i < 6; i++)
        if (!(a[i] = take(c, PAGE, "page of run A")))
            return -1;
    if (!(sep[0] = take(c, PAGE, "separator")))
        return -1;
    for (int i = 0; i < 5; i++)
        if (!(b[i] = take(c, PAGE, "page of run B")))
            return -1;
    if (!(sep[1] = take(c, PAGE, "separator")))
        return -1;
    if (!wcet_in_last_region(c, a[0]) || page_of(sep[1]) != page_of(a[0]) + 12 * PAGE)
        return wcet_fail(c, "build: the region is not laid out in order");
    for (int i = 0; i < 5; i++)
        if (rtm_heap_free(c->heap, b[i]) != 0)
            return wcet_fail(c, "build: a free was refused");
    for (int i = 0; i < 6; i++)
        if (rtm_heap_free(c->heap, a[i]) != 0)
            return wcet_fail(c, "build: a free was refused");
    c->op = WCET_OP_ALLOC;
    c->size = PAGE;
    c->expect[0] = (uintptr_t)a[0];
    c->expect[1] = (uintptr_t)a[1];
    c->expect[2] = (uintptr_t)b[0];
    c->expect[3] = rtm_heap_held_bytes(c->heap);
    return 0;
}

static int zspage_make_check(struct wcet_case *c)
{
    if ((uintptr_t)c->ret != c->expect[0])
        return wcet_fail(c, "alloc did not make its zspage at the head run's first page");
    if (rtm_heap_held_bytes(c->heap) != c->expect[3] + PAGE)
        return wcet_fail(c, "alloc did not take exactly one page");
    if (rtm_heap_usable_size(c->heap, c->ret) != PAGE)
        return wcet_fail(c, "the object is not of the 4096-byte class");
    if (wcet_heap_ok(c) != 0)
        return -1;
    /* the rest went back first in its list, ahead of B */
    if ((uintptr_t)rtm_heap_alloc(c->heap, PAGE) != c->expect[1])
        return wcet_fail(c, "the run's rest is not first in its list");
    struct rtm_heap_stats st;
    if (rtm_heap_stats(c->heap, &st) != 0 || st.pool_count != WCET_POOLS)
        return wcet_fail(c, "the heap does not have its %u regions", WCET_POOLS);
    /* The path: on the built heap, A's run lies ahead of B's in its list. */
    memcpy(c->image, c->saved, c->image_bytes);
    void *x[6];
    for (int i = 0; i < 6; i++)
        x[i] = rtm_heap_alloc(c->heap, PAGE);
    void *y = rtm_heap_alloc(c->heap, PAGE);
    if ((uintptr_t)x[0] != c->expect[0] || (uintptr_t)y != c->expect[2])
        return wcet_fail(c, "the runs are not in the built order");
    wcet_fact(c,
              "a 4096-byte request, its class's list empty: a walk of %u regions to the last; "
              "the head of its list of runs of 4 pages and more, checked, cut by a page, the "
              "rest put back ahead of the other; a 1-page zspage linked and, full, unlinked",
              WCET_POOLS);
    wcet_num(c, "regions", WCET_POOLS);
    return 0;
}

/* ---- free: the last object of a zspage, joined with runs both sides ------- */

/*
 * The scenario's region, page by page from its start:
 *   X1 | R1 R1 | X2 | P P | T T T T | N N | X3 | R2 R2 | X4 | Q x4 | X5 |
 *   Z1 x4 | Z2 x4
 * X: page-sized objects; R1, P, N, R2: zspages of 2 pages (2560-byte
 * objects), freed in that order (R1, P, N, R2), so that the list of 2-page
 * runs is R2 N P R1; Q: 4 page-sized objects freed, a run in the list of 4
 * pages and more; T, Z1, Z2: zspages of 4 pages (704-byte objects), one
 * object of Z1 freed, all of T's but one, one of Z2: the class list is
 * Z2 T Z1. Freeing T's last object unlinks T from the middle of its class
 * list, unlinks the runs P and N from the middle of theirs, and joins the
 * three into a run of 8 pages, put ahead of Q.
 */
static int zspage_give_build(struct wcet_case *c)
{
    if (regions_build(c) != 0)
        return -1;
    void *x[5] = { 0 }, *r1[CAP2] = { 0 }, *p[CAP2] = { 0 }, *t[CAP4] = { 0 }, *n[CAP2] = { 0 },
         *r2[CAP2] = { 0 }, *q[PAGES] = { 0 }, *z1[CAP4] = { 0 }, *z2[CAP4] = { 0 };
    struct {
        void **out;
        size_t size, count;
    } steps[] = { { &x[0], PAGE, 1 }, { r1, OBJ2, CAP2 }, { &x[1], PAGE, 1 }, { p, OBJ2, CAP2 },
                  { t, OBJ4, CAP4 },  { n, OBJ2, CAP2 },  { &x[2], PAGE, 1 }, { r2, OBJ2, CAP2 },
                  { &x[3], PAGE, 1 }, { z1, OBJ4, CAP4 }, { z2, OBJ4, CAP4 } };
    uintptr_t next = 0; /* the region's first page, once X1 has it */
    for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
        for (size_t i = 0; i < steps[s].count; i++)
            if (!(steps[s].out[i] = take(c, steps[s].size, "object of the laid-out region")))
                return -1;
        if (s == 0)
            next = page_of(steps[s].out[0]);
        if (page_of(steps[s].out[0]) != next || !wcet_in_last_region(c, steps[s].out[0]))
            return wcet_fail(c, "build: the region is not laid out in order");
        next += steps[s].size == OBJ4   ? PAGES * PAGE
                : steps[s].size == OBJ2 ? 2 * PAGE
                                        : steps[s].count * PAGE;
    }
    void **runs[] = { r1, p, n, r2 };
    int rc;
    for (size_t k = 0; k < 4; k++)
        for (size_t i = 0; i < CAP2; i++)
            if ((rc = rtm_heap_free(c->heap, runs[k][i])) != 0)
                return wcet_fail(c, "build: the free of run %zu's object %zu: %d", k, i, rc);
    for (size_t i = 0; i < PAGES; i++)
        if ((rc = rtm_heap_free(c->heap, q[i])) != 0)
            return wcet_fail(c, "build: the free of Q's page %zu: %d", i, rc);
    if ((rc = rtm_heap_free(c->heap, z1[0])) != 0)
        return wcet_fail(c, "build: the free of Z1's object: %d", rc);
    for (size_t i = 1; i < CAP4; i++)
        if ((rc = rtm_heap_free(c->heap, t[i])) != 0)
            return wcet_fail(c, "build: the free of T's object %zu: %d", i, rc);
    if ((rc = rtm_heap_free(c->heap, z2[0])) != 0)
        return wcet_fail(c, "build: the free of Z2's object: %d", rc);
    c->op = WCET_OP_FREE;
    c->ptr = t[0];
    c->expect[0] = rtm_heap_held_bytes(c->heap);
    c->expect[1] = page_of(p[0]);
    c->expect[2] = page_of(r2[0]);
    c->expect[3] = page_of(r1[0]);
    c->expect[4] = (uintptr_t)z2[0];
    c->expect[5] = (uintptr_t)z1[0];
    c->expect[6] = page_of(n[0]);
    return 0;
}

static int zspage_give_check(struct wcet_case *c)
{
    if (c->rc != 0)
        return wcet_fail(c, "free returned %d", c->rc);
    if (rtm_heap_held_bytes(c->heap) + PAGES * PAGE != c->expect[0])
        return wcet_fail(c, "free did not give the zspage's 4 pages back");
    if (wcet_heap_ok(c) != 0)
        return -1;
    /* the class list pops Z2, then Z1; the list of 2-page runs R2, then
     * R1; the joined run of 8 pages (P's first) serves a 4-page zspage */
    if ((uintptr_t)rtm_heap_alloc(c->heap, OBJ4) != c->expect[4] ||
        (uintptr_t)rtm_heap_alloc(c->heap, OBJ4) != c->expect[5])
        return wcet_fail(c, "the class list is not as the scenario built it");
    void *a = rtm_heap_alloc(c->heap, OBJ2);
    for (unsigned i = 1; i < CAP2; i++)
        rtm_heap_alloc(c->heap, OBJ2);
    void *b = rtm_heap_alloc(c->heap, OBJ2);
    if (page_of(a) != c->expect[2] || page_of(b) != c->expect[3])
        return wcet_fail(c, "the list of 2-page runs is not as the scenario built it");
    if (page_of(rtm_heap_alloc(c->heap, OBJ4)) != c->expect[1])
        return wcet_fail(c, "the runs were not joined into one");
    /* The path: on the built heap, N lies in the middle of its list (R2's
     * zspage and N's come back in that order). */
    memcpy(c->image, c->saved, c->image_bytes);
    void *r2 = rtm_heap_alloc(c->heap, OBJ2);
    for (unsigned i = 1; i < CAP2; i++)
        rtm_heap_alloc(c->heap, OBJ2);
    void *n = rtm_heap_alloc(c->heap, OBJ2);
    if (page_of(r2) != c->expect[2] || page_of(n) != c->expect[6])
        return wcet_fail(c, "a neighbour run is not in the middle of its list");
    wcet_fact(c,
              "the last object of a 4-page zspage in the middle of its class list; the runs "
              "before and after it, each in the middle of its list, joined with its pages into "
              "a run of 8 put ahead of another, in the region found last of %u",
              WCET_POOLS);
    wcet_num(c, "regions", WCET_POOLS);
    return 0;
}

const struct wcet_scenario wcet_zsheap_scenarios[] = {
    { WCET_ZSHEAP, "alloc-zspage-make", "alloc",
      "a page-sized request, its class's list empty: in the region found last of 8, the head "
      "run of 4 pages and more cut, its rest put back ahead of another; a zspage made, full",
      "O(regions)", zspage_make_build, zspage_make_check, NULL },
    { WCET_ZSHEAP, "free-zspage-give", "free",
      "the last object of a 4-page zspage in the middle of its class list: unlinked, joined "
      "with the runs before and after it (each in the middle of its list) into one of 8 pages, "
      "put ahead of another",
      "O(regions)", zspage_give_build, zspage_give_check, NULL },
};
const size_t wcet_zsheap_n = sizeof(wcet_zsheap_scenarios) / sizeof(wcet_zsheap_scenarios[0]);
