/*
 * `rtmem wcet`: TLSF's scenarios. Each builds, through the public API
 * alone, a heap in which one operation takes the longest path TLSF's code
 * has for it (src/heap/tlsf.c; docs/wcet.md follows each path through the
 * code), and checks afterwards, again through the public API, that the
 * operation did what the scenario claims.
 *
 * TLSF's alloc and free are straight-line code: the few branches that
 * remain choose between paths of about the same length. The longest ones
 * are those that touch the most memory: a search that fails in the
 * request's own first level and goes to the first-level bitmap; a list
 * popped or unlinked with blocks on both sides (its neighbours' headers
 * read and their links written, on a hardened heap their links verified
 * too); a remainder or a merged block inserted at the head of a non-empty
 * list; a free that merges with both neighbours (the one branch free
 * takes).
 *
 * The classes are those rtmem/tlsf.h documents: one per 16 bytes below
 * 512 bytes (first level 0), then each power of two 2^(f + 8) cut in 32
 * (first level f). class_of below computes them from that text, and the
 * scenarios lay their blocks out with it; the checks say the classes
 * found in words.
 */
#include <string.h>

#include "wcet.h"

#define SMALL_LIMIT 512u /* below: level 0, one class per granule */
#define FL_SHIFT    8u

struct tclass {
    unsigned fl, sl;
};

/* The class of a block of s bytes, as rtmem/tlsf.h documents it. */
static struct tclass class_of(size_t s)
{
    if (s < SMALL_LIMIT)
        return (struct tclass){ 0, (unsigned)(s / RTM_TLSF_GRANULE) };
    unsigned top = 63u - (unsigned)__builtin_clzll((unsigned long long)s);
    unsigned fl = top - FL_SHIFT;
    return (struct tclass){ fl,
                            (unsigned)(s >> (top - RTM_TLSF_SL_LOG2)) & (RTM_TLSF_SL_COUNT - 1) };
}

/* The smallest block size of s's class: a request for it is served from
 * that class when it holds a block (its good fit rounds up within it). */
static size_t class_floor(size_t s)
{
    if (s < SMALL_LIMIT)
        return s / RTM_TLSF_GRANULE * RTM_TLSF_GRANULE;
    unsigned shift = 63u - (unsigned)__builtin_clzll((unsigned long long)s) - RTM_TLSF_SL_LOG2;
    return s >> shift << shift;
}

static bool same_class(struct tclass a, struct tclass b)
{
    return a.fl == b.fl && a.sl == b.sl;
}

/* A request that takes exactly a block of `block` bytes. */
static size_t req(size_t block)
{
    return block - RTM_TLSF_HEADER_BYTES;
}

/* Allocates a block of exactly `block` bytes: its payload, or NULL with
 * c->why. */
static void *take(struct wcet_case *c, size_t block, const char *what)
{
    void *p = rtm_heap_alloc(c->heap, req(block));
    if (!p) {
        wcet_fail(c, "build: the %s (%zu bytes) could not be allocated", what, block);
        return NULL;
    }
    return p;
}

/* A used block between free ones, so that they never merge. */
#define GUARD ((size_t)32)

static int stats(struct wcet_case *c, struct rtm_heap_stats *st)
{
    if (rtm_heap_stats(c->heap, st) != 0)
        return wcet_fail(c, "rtm_heap_stats failed");
    return 0;
}

/* Everything but the blocks the scenario frees is used: the tail of the
 * pool taken whole. */
static int take_rest(struct wcet_case *c)
{
    struct rtm_heap_stats st;
    if (stats(c, &st) != 0)
        return -1;
    if (st.largest_free_bytes && !rtm_heap_alloc(c->heap, st.largest_free_bytes))
        return wcet_fail(c, "build: the rest of the pool could not be taken");
    return 0;
}

static int heap_ok(struct wcet_case *c)
{
    int rc = rtm_heap_check(c->heap);
    if (rc != 0)
        return wcet_fail(c, "rtm_heap_check after the operation: %d", rc);
    return 0;
}

/* ---- alloc: search through the first-level bitmap, pop, split --------------- */

/* Request: a block of 1600 bytes, class (2, 18); rounded up for the good
 * fit, 1631: still (2, 18), and level 2 holds nothing at or above it, so
 * the search reads the second-level bitmap of level 2, finds it empty,
 * and goes to the first-level bitmap: level 3, where two blocks of 2112
 * bytes (class (3, 1)), the largest free blocks, wait (the rest of the
 * pool is used). The head is popped with the other behind it (its links
 * verified, its prev link rewritten) and split; the 512-byte remainder
 * goes to the head of class (1, 0), which holds a block already. */
#define SPLIT_REQ   ((size_t)1600)
#define SPLIT_FOUND ((size_t)2112)
#define SPLIT_REST  (SPLIT_FOUND - SPLIT_REQ)

static int alloc_split_build(struct wcet_case *c)
{
    void *a1 = take(c, SPLIT_FOUND, "first block of the found class");
    void *g1 = a1 ? take(c, GUARD, "guard") : NULL;
    void *a2 = g1 ? take(c, SPLIT_FOUND, "second block of the found class") : NULL;
    void *g2 = a2 ? take(c, GUARD, "guard") : NULL;
    void *r1 = g2 ? take(c, SPLIT_REST, "block of the remainder's class") : NULL;
    void *g3 = r1 ? take(c, GUARD, "guard") : NULL;
    if (!g3 || take_rest(c) != 0)
        return -1;
    rtm_heap_free(c->heap, a1);
    rtm_heap_free(c->heap, a2); /* the head of its list, a1 behind it */
    rtm_heap_free(c->heap, r1);
    c->op = WCET_OP_ALLOC;
    c->size = req(SPLIT_REQ);
    c->expect[0] = (uintptr_t)a2;
    return 0;
}

static int alloc_split_check(struct wcet_case *c)
{
    struct tclass rq = class_of(SPLIT_REQ), rr = class_of(SPLIT_REQ + (1u << 5) - 1),
                  found = class_of(SPLIT_FOUND), rest = class_of(SPLIT_REST);
    if (!same_class(rq, rr) || found.fl <= rq.fl || !(rest.fl < rq.fl))
        return wcet_fail(c, "the classes no longer give the intended search");
    if ((uintptr_t)c->ret != c->expect[0])
        return wcet_fail(c, "alloc did not take the head of class (%u, %u)", found.fl, found.sl);
    if (rtm_heap_usable_size(c->heap, c->ret) != req(SPLIT_REQ))
        return wcet_fail(c, "the block was not split to the request");
    wcet_fact(c,
              "request class (%u,%u) and its level empty; first-level search to (%u,%u), the "
              "largest blocks: popped with one behind it, split; %zu-byte rest to non-empty "
              "class (%u,%u)",
              rq.fl, rq.sl, found.fl, found.sl, SPLIT_REST, rest.fl, rest.sl);
    wcet_num(c, "request_bytes", (double)c->size);
    return heap_ok(c);
}

/* ---- alloc: the good fit fails, its own class's single block is taken ------- */

/* Request 2128 bytes: class (3, 1); rounded up, 2191: class (3, 2), and
 * nothing at or above it, so the good fit finds nothing (both bitmaps
 * read) and falls back to the request's own class, whose single block
 * (2160 bytes) fits: popped, and its 32-byte rest split off. The heap is
 * otherwise full. */
#define FALLBACK_REQ   ((size_t)2128)
#define FALLBACK_BLOCK ((size_t)2160)

static int alloc_fallback_build(struct wcet_case *c)
{
    void *f = take(c, FALLBACK_BLOCK, "single block");
    void *g = f ? take(c, GUARD, "guard") : NULL;
    if (!g || take_rest(c) != 0)
        return -1;
    rtm_heap_free(c->heap, f);
    c->op = WCET_OP_ALLOC;
    c->size = req(FALLBACK_REQ);
    c->expect[0] = (uintptr_t)f;
    return 0;
}

static int alloc_fallback_check(struct wcet_case *c)
{
    struct tclass rq = class_of(FALLBACK_REQ), blk = class_of(FALLBACK_BLOCK),
                  rounded = class_of(FALLBACK_REQ + (1u << 6) - 1);
    if (!same_class(rq, blk) || same_class(rq, rounded))
        return wcet_fail(c, "the classes no longer give the fallback");
    if ((uintptr_t)c->ret != c->expect[0])
        return wcet_fail(c, "alloc did not take the single block of its class");
    struct rtm_heap_stats st;
    if (stats(c, &st) != 0)
        return -1;
    if (st.failed_allocs != 0)
        return wcet_fail(c, "an allocation failed");
    wcet_fact(c,
              "good fit from (%u,%u) finds nothing (both bitmaps read); fallback to the "
              "request's class (%u,%u): its single %zu-byte block, split",
              rounded.fl, rounded.sl, rq.fl, rq.sl, FALLBACK_BLOCK);
    wcet_num(c, "request_bytes", (double)c->size);
    return heap_ok(c);
}

/* ---- free: merge with both neighbours, each unlinked from a list's middle ---- */

/* [Q1 g Q2 g R1 g R2 g M1 g | P B N | g ...]: P (96 bytes, class (0, 6))
 * and N (1056 bytes, class (2, 1)) are free, each in the middle of its
 * class list (Q1 and Q2, R1 and R2 around it); freeing B (160 bytes)
 * merges all three into 1312 bytes (class (2, 9)), inserted ahead of M1.
 * Every free neighbour and each of their list neighbours is read (and on a
 * hardened heap verified); that is the most memory free touches. */
#define MERGE_P ((size_t)96)
#define MERGE_B ((size_t)160)
#define MERGE_N ((size_t)1056)
#define MERGE_M (MERGE_P + MERGE_B + MERGE_N)

/* The blocks above, B's neighbours freed: 0, or -1 (c->why). */
static int free_merge_layout(struct wcet_case *c)
{
    static const size_t sizes[] = { MERGE_P, MERGE_P, MERGE_N, MERGE_N, MERGE_M };
    void *side[5];
    for (size_t i = 0; i < 5; i++) {
        side[i] = take(c, sizes[i], "list neighbour");
        if (!side[i] || !take(c, GUARD, "guard"))
            return -1;
    }
    void *p = take(c, MERGE_P, "free predecessor");
    void *b = p ? take(c, MERGE_B, "block freed") : NULL;
    void *n = b ? take(c, MERGE_N, "free successor") : NULL;
    if (!n || !take(c, GUARD, "guard"))
        return -1;
    /* Lists, head first: Q2 P Q1, R2 N R1, M1. */
    void *order[] = { side[0], p, side[1], side[2], n, side[3], side[4] };
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
        if (rtm_heap_free(c->heap, order[i]) != 0)
            return wcet_fail(c, "build: a free was refused");
    c->op = WCET_OP_FREE;
    c->ptr = b;
    c->expect[0] = (uintptr_t)p;
    return 0;
}

static int free_merge_build(struct wcet_case *c)
{
    return free_merge_layout(c);
}

static int free_merge_check(struct wcet_case *c);

/* ---- free: the same, in the pool found last ------------------------------------ */

/* The heap made of WCET_POOLS pools in the image: the first (created with
 * the heap) and the later ones WCET_SMALL_POOL bytes, the one the
 * scenario uses the rest. Added pools are listed after the first, the
 * latest added first, so the first added is found last: the scenario's.
 * Every other pool is full. Each lookup of its blocks (the block freed,
 * and on a hardened heap each link of a neighbour checked) walks the
 * whole list: the O(pools) of rtmem/tlsf.h. */
static int free_pool_build(struct wcet_case *c)
{
    size_t big = c->image_bytes - (WCET_POOLS - 1) * WCET_SMALL_POOL;
    unsigned char *at = c->image;
    struct rtm_heap_config cfg = { .hardening = c->hardening };
    c->heap = rtm_heap_create_ex(c->kind, at, WCET_SMALL_POOL, &cfg);
    if (!c->heap || take_rest(c) != 0)
        return c->heap ? -1 : wcet_fail(c, "build: the first pool could not be made");
    at += WCET_SMALL_POOL;
    if (rtm_heap_add_pool(c->heap, at, big) != 0)
        return wcet_fail(c, "build: the scenario's pool could not be added");
    if (free_merge_layout(c) != 0 || take_rest(c) != 0)
        return -1;
    c->expect[1] = (uintptr_t)at;
    c->expect[2] = (uintptr_t)(at + big);
    at += big;
    for (size_t i = 2; i < WCET_POOLS; i++, at += WCET_SMALL_POOL)
        if (rtm_heap_add_pool(c->heap, at, WCET_SMALL_POOL) != 0 || take_rest(c) != 0)
            return wcet_fail(c, "build: pool %zu could not be added and filled", i);
    return 0;
}

static int free_pool_check(struct wcet_case *c)
{
    struct rtm_heap_stats st;
    if (stats(c, &st) != 0)
        return -1;
    if (st.pool_count != WCET_POOLS || c->ptr < (void *)c->expect[1] ||
        (uintptr_t)c->ptr >= c->expect[2])
        return wcet_fail(c, "the block is not in the pool found last");
    if (free_merge_check(c) != 0)
        return -1;
    wcet_fact(c, "; in the pool found last of %u", WCET_POOLS);
    wcet_num(c, "pools", WCET_POOLS);
    return 0;
}

static int free_merge_check(struct wcet_case *c)
{
    struct tclass cp = class_of(MERGE_P), cn = class_of(MERGE_N), cm = class_of(MERGE_M);
    if (same_class(cp, cn) || same_class(cp, cm) || same_class(cn, cm))
        return wcet_fail(c, "the neighbours' classes are no longer distinct");
    if (c->rc != 0)
        return wcet_fail(c, "free returned %d", c->rc);
    /* The merged block is the head of its class: a request of that class
     * gets it, at the predecessor's place. */
    void *q = rtm_heap_alloc(c->heap, req(class_floor(MERGE_M)));
    if ((uintptr_t)q != c->expect[0])
        return wcet_fail(c, "the block did not merge with both neighbours");
    wcet_fact(c,
              "merges a free predecessor of class (%u,%u) and a free successor of class "
              "(%u,%u), each unlinked from the middle of its list; %zu bytes to the head of "
              "non-empty class (%u,%u)",
              cp.fl, cp.sl, cn.fl, cn.sl, MERGE_M, cm.fl, cm.sl);
    return heap_ok(c);
}

/* ---- aligned_alloc: the largest front gap ----------------------------------- */

/* alignment 4096: the free block's payload sits 16 bytes below an aligned
 * address, a gap too small to stand as a free block, so the gap grows by
 * the alignment (4112 bytes, a free block of its own, inserted) and the
 * rest is split off after the block (inserted too). */
#define ALIGNED_ALIGN ((size_t)4096)
#define ALIGNED_REQ   ((size_t)256)

static int aligned_build(struct wcet_case *c)
{
    void *probe = take(c, GUARD, "probe");
    if (!probe)
        return -1;
    /* The probe's block starts the pool: a first block of `first` bytes in
     * its place puts the next payload 16 bytes below an aligned address. */
    uintptr_t start = (uintptr_t)probe;
    size_t first =
        (size_t)((ALIGNED_ALIGN - RTM_TLSF_GRANULE - start % ALIGNED_ALIGN) % ALIGNED_ALIGN);
    while (first < RTM_TLSF_MIN_BLOCK)
        first += ALIGNED_ALIGN;
    rtm_heap_free(c->heap, probe);
    void *f = take(c, first, "first block");
    if (!f || (uintptr_t)f != start)
        return f ? wcet_fail(c, "build: the first block moved") : -1;
    c->op = WCET_OP_ALIGNED;
    c->align = ALIGNED_ALIGN;
    c->size = ALIGNED_REQ;
    c->expect[0] = start + first; /* the free block's payload */
    return 0;
}

static int aligned_check(struct wcet_case *c)
{
    uintptr_t p = (uintptr_t)c->ret, free_payload = c->expect[0];
    if (!c->ret || p % ALIGNED_ALIGN != 0)
        return wcet_fail(c, "aligned_alloc did not return an aligned block");
    size_t gap = (size_t)(p - free_payload);
    if (gap != ALIGNED_ALIGN + RTM_TLSF_GRANULE)
        return wcet_fail(c, "the front gap is %zu bytes, not the alignment plus 16", gap);
    wcet_fact(c,
              "alignment %zu: front gap of %zu bytes (a free block, inserted), the rest split "
              "off and inserted",
              ALIGNED_ALIGN, gap);
    wcet_num(c, "front_gap_bytes", (double)gap);
    return heap_ok(c);
}

/* ---- realloc: cannot grow in place, moves ------------------------------------ */

/* [P B N g | rest]: B (4096 bytes) grows to 8 KiB; its successor N is free
 * but too small, so realloc allocates (a split of the rest), copies 4088
 * bytes and frees B, merging it with both P and N. */
#define MOVE_P    ((size_t)96)
#define MOVE_B    ((size_t)4096)
#define MOVE_N    ((size_t)64)
#define MOVE_TO   ((size_t)8192)
#define MOVE_FILL 0x5a

static int realloc_move_build(struct wcet_case *c)
{
    void *q = take(c, MOVE_P, "list neighbour");
    void *g0 = q ? take(c, GUARD, "guard") : NULL;
    void *p = g0 ? take(c, MOVE_P, "free predecessor") : NULL;
    void *b = p ? take(c, MOVE_B, "block moved") : NULL;
    void *n = b ? take(c, MOVE_N, "free successor") : NULL;
    if (!n || !take(c, GUARD, "guard"))
        return -1;
    memset(b, MOVE_FILL, req(MOVE_B));
    rtm_heap_free(c->heap, q);
    rtm_heap_free(c->heap, p);
    rtm_heap_free(c->heap, n);
    c->op = WCET_OP_REALLOC;
    c->ptr = b;
    c->size = MOVE_TO;
    c->expect[0] = (uintptr_t)p;
    return 0;
}

static int realloc_move_check(struct wcet_case *c)
{
    if (!c->ret || c->ret == c->ptr)
        return wcet_fail(c, "realloc did not move the block");
    const unsigned char *q = c->ret;
    for (size_t i = 0; i < req(MOVE_B); i++)
        if (q[i] != MOVE_FILL)
            return wcet_fail(c, "the contents were not copied");
    void *m = rtm_heap_alloc(c->heap, req(class_floor(MOVE_P + MOVE_B + MOVE_N)));
    if ((uintptr_t)m != c->expect[0])
        return wcet_fail(c, "the old block did not merge with both neighbours");
    wcet_fact(c,
              "%zu-byte block to %zu bytes: alloc (split), copy of %zu bytes, free merging both "
              "neighbours",
              MOVE_B, MOVE_TO, req(MOVE_B));
    wcet_num(c, "copied_bytes", (double)req(MOVE_B));
    return heap_ok(c);
}

const struct wcet_scenario wcet_tlsf_scenarios[] = {
    { WCET_TLSF, "alloc-search-split", "alloc",
      "good fit empty in the request's level: second- then first-level bitmap to the largest "
      "blocks, pop with a block behind, split, rest to a non-empty list",
      "O(1)", alloc_split_build, alloc_split_check, NULL },
    { WCET_TLSF, "alloc-fallback", "alloc",
      "good fit finds nothing; the request's own class holds one block that fits: popped and "
      "split",
      "O(1)", alloc_fallback_build, alloc_fallback_check, NULL },
    { WCET_TLSF, "free-merge-both", "free",
      "both neighbours free, of different classes, each unlinked from the middle of its list; "
      "merged block to a non-empty list",
      "O(1)", free_merge_build, free_merge_check, NULL },
    { WCET_TLSF, "free-merge-last-pool", "free",
      "free-merge-both in the pool found last of 8: the block's and every checked link's "
      "pool found by a walk of the pool list",
      "O(pools)", free_pool_build, free_pool_check, NULL },
    { WCET_TLSF, "aligned-largest-gap", "aligned_alloc",
      "front gap too small to stand alone: grown by the alignment, inserted as a free block; "
      "rest split off",
      "O(1)", aligned_build, aligned_check, NULL },
    { WCET_TLSF, "realloc-move", "realloc",
      "no room in place: alloc, copy 4088 bytes, free merging both neighbours", "O(1) + O(size)",
      realloc_move_build, realloc_move_check, NULL },
};
const size_t wcet_tlsf_n = sizeof(wcet_tlsf_scenarios) / sizeof(wcet_tlsf_scenarios[0]);
