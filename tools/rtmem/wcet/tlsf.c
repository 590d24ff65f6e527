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

/* The width of s's class: its good fit rounds a request up by this less
 * one. */
static size_t class_width(size_t s)
{
    if (s < SMALL_LIMIT)
        return RTM_TLSF_GRANULE;
    return (size_t)1 << (63u - (unsigned)__builtin_clzll((unsigned long long)s) - RTM_TLSF_SL_LOG2);
}

/* The class a good fit for a block of s bytes starts its search at. */
static struct tclass rounded_class(size_t s)
{
    return class_of(s + class_width(s) - 1);
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

/* The heap as the build left it, for a check's probes (every repetition
 * restores it again). */
static void rebuilt(struct wcet_case *c)
{
    memcpy(c->image, c->saved, c->image_bytes);
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
    c->expect[1] = (uintptr_t)a1;
    c->expect[2] = (uintptr_t)r1;
    return 0;
}

static int alloc_split_check(struct wcet_case *c)
{
    struct tclass rq = class_of(SPLIT_REQ), rr = rounded_class(SPLIT_REQ),
                  found = class_of(SPLIT_FOUND), rest = class_of(SPLIT_REST);
    if (!same_class(rq, rr) || found.fl <= rq.fl || !(rest.fl < rq.fl))
        return wcet_fail(c, "the classes no longer give the intended search");
    if ((uintptr_t)c->ret != c->expect[0])
        return wcet_fail(c, "alloc did not take the head of class (%u, %u)", found.fl, found.sl);
    if (rtm_heap_usable_size(c->heap, c->ret) != req(SPLIT_REQ))
        return wcet_fail(c, "the block was not split to the request");
    /* The other found block is still free, and the rest went ahead of r1. */
    void *a1 = rtm_heap_alloc(c->heap, req(class_floor(SPLIT_FOUND)));
    void *head = rtm_heap_alloc(c->heap, req(class_floor(SPLIT_REST)));
    void *r1 = rtm_heap_alloc(c->heap, req(class_floor(SPLIT_REST)));
    if ((uintptr_t)a1 != c->expect[1] || (uintptr_t)head != c->expect[0] + SPLIT_REQ ||
        (uintptr_t)r1 != c->expect[2])
        return wcet_fail(c, "a list the operation touched is not as the scenario built it");
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
                  rounded = rounded_class(FALLBACK_REQ);
    if (!same_class(rq, blk) || same_class(rq, rounded))
        return wcet_fail(c, "the classes no longer give the fallback");
    if ((uintptr_t)c->ret != c->expect[0])
        return wcet_fail(c, "alloc did not take the single block of its class");
    struct rtm_heap_stats st;
    if (stats(c, &st) != 0)
        return -1;
    if (st.failed_allocs != 0)
        return wcet_fail(c, "an allocation failed");
    if (heap_ok(c) != 0)
        return -1;
    /* The path: on the built heap, the good fit alone (a request at the
     * low end of the rounded class, which it serves unrounded) finds
     * nothing. */
    rebuilt(c);
    if (rtm_heap_alloc(c->heap, req(class_floor(FALLBACK_REQ + class_width(FALLBACK_REQ)))))
        return wcet_fail(c, "the good fit alone finds a block: no fallback");
    wcet_fact(c,
              "good fit from (%u,%u) finds nothing (both bitmaps read); fallback to the "
              "request's class (%u,%u): its single %zu-byte block, split",
              rounded.fl, rounded.sl, rq.fl, rq.sl, FALLBACK_BLOCK);
    wcet_num(c, "request_bytes", (double)c->size);
    return 0;
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
    /* The lists in pop order, for the check: Q2 P Q1 and R2 N R1. */
    c->expect[1] = (uintptr_t)side[1];
    c->expect[2] = (uintptr_t)p;
    c->expect[3] = (uintptr_t)side[0];
    c->expect[4] = (uintptr_t)side[3];
    c->expect[5] = (uintptr_t)n;
    c->expect[6] = (uintptr_t)side[2];
    c->expect[9] = (uintptr_t)side[4];
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
    c->expect[7] = (uintptr_t)at;
    c->expect[8] = (uintptr_t)(at + big);
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
    if (st.pool_count != WCET_POOLS || (uintptr_t)c->ptr < c->expect[7] ||
        (uintptr_t)c->ptr >= c->expect[8])
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
    /* The merged block is the head of its class, M1 behind it: requests
     * of that class get them in turn, the first at the predecessor's
     * place. */
    void *q = rtm_heap_alloc(c->heap, req(class_floor(MERGE_M)));
    void *m1 = rtm_heap_alloc(c->heap, req(class_floor(MERGE_M)));
    if ((uintptr_t)q != c->expect[0] || (uintptr_t)m1 != c->expect[9])
        return wcet_fail(c, "the block did not merge with both neighbours into a non-empty list");
    if (heap_ok(c) != 0)
        return -1;
    /* The path: on the built heap, each neighbour sits in the middle of its
     * list (its class's requests pop Q2 P Q1, and R2 N R1). */
    rebuilt(c);
    for (size_t i = 0; i < 6; i++) {
        void *x = rtm_heap_alloc(c->heap, req(i < 3 ? MERGE_P : MERGE_N));
        if ((uintptr_t)x != c->expect[1 + i])
            return wcet_fail(c, "a neighbour is not in the middle of its list");
    }
    wcet_fact(c,
              "merges a free predecessor of class (%u,%u) and a free successor of class "
              "(%u,%u), each unlinked from the middle of its list; %zu bytes to the head of "
              "non-empty class (%u,%u)",
              cp.fl, cp.sl, cn.fl, cn.sl, MERGE_M, cm.fl, cm.sl);
    return 0;
}

/* ---- aligned_alloc: the largest front gap ----------------------------------- */

/* alignment 4096, 256 bytes: the search is for 4384 bytes (the request and
 * the worst gap), class (4,3) rounded; two blocks of 4608 bytes (class
 * (4,4)) wait, the head's payload 16 bytes below an aligned address. The
 * head is popped with the other behind it; its gap is too small to stand
 * as a free block, so it grows by the alignment (4112 bytes) and becomes a
 * free block inserted ahead of one of its class (4,0); the 224-byte rest
 * after the block goes ahead of one of its class (0,14). */
#define ALIGNED_ALIGN ((size_t)4096)
#define ALIGNED_REQ   ((size_t)256)
#define ALIGNED_FOUND ((size_t)4608)
#define ALIGNED_GAP   (ALIGNED_ALIGN + RTM_TLSF_GRANULE)
#define ALIGNED_REST  (ALIGNED_FOUND - ALIGNED_GAP - rtm_tlsf_block_cost(ALIGNED_REQ))

static int aligned_build(struct wcet_case *c)
{
    void *probe = take(c, GUARD, "probe");
    if (!probe)
        return -1;
    /* The probe's block starts the pool: a first block of `pad` bytes in
     * its place puts the second found block's payload 16 bytes below an
     * aligned address. */
    uintptr_t start = (uintptr_t)probe;
    size_t pad = (size_t)((2 * ALIGNED_ALIGN - RTM_TLSF_GRANULE -
                           (start + ALIGNED_FOUND + GUARD) % ALIGNED_ALIGN) %
                          ALIGNED_ALIGN);
    while (pad < RTM_TLSF_MIN_BLOCK)
        pad += ALIGNED_ALIGN;
    rtm_heap_free(c->heap, probe);
    void *first = take(c, pad, "pad");
    if (!first || (uintptr_t)first != start)
        return first ? wcet_fail(c, "build: the first block moved") : -1;
    void *a1 = take(c, ALIGNED_FOUND, "block of the found class");
    void *a2 = a1 && take(c, GUARD, "guard") ? take(c, ALIGNED_FOUND, "the found block") : NULL;
    void *g =
        a2 && take(c, GUARD, "guard") ? take(c, ALIGNED_GAP, "block of the gap's class") : NULL;
    void *r =
        g && take(c, GUARD, "guard") ? take(c, ALIGNED_REST, "block of the rest's class") : NULL;
    if (!r || !take(c, GUARD, "guard") || take_rest(c) != 0)
        return -1;
    void *order[] = { a1, a2, g, r };
    for (size_t i = 0; i < 4; i++)
        if (rtm_heap_free(c->heap, order[i]) != 0)
            return wcet_fail(c, "build: a free was refused");
    c->op = WCET_OP_ALIGNED;
    c->align = ALIGNED_ALIGN;
    c->size = ALIGNED_REQ;
    c->expect[0] = (uintptr_t)a2; /* the found block's payload */
    c->expect[1] = (uintptr_t)a1;
    c->expect[2] = (uintptr_t)g;
    c->expect[3] = (uintptr_t)r;
    return 0;
}

static int aligned_check(struct wcet_case *c)
{
    uintptr_t p = (uintptr_t)c->ret, found = c->expect[0];
    if (!c->ret || p % ALIGNED_ALIGN != 0)
        return wcet_fail(c, "aligned_alloc did not return an aligned block");
    size_t gap = (size_t)(p - found);
    if (gap != ALIGNED_GAP)
        return wcet_fail(c, "the front gap is %zu bytes, not the alignment plus 16", gap);
    /* Each list the operation touched still holds the block the build put
     * behind: the found class's other block, then the gap's and the rest's
     * classes, each after the block the operation inserted. */
    struct {
        size_t block;
        uintptr_t second;
    } lists[] = { { ALIGNED_FOUND, c->expect[1] },
                  { ALIGNED_GAP, c->expect[2] },
                  { ALIGNED_REST, c->expect[3] } };
    for (size_t i = 0; i < 3; i++) {
        void *x = rtm_heap_alloc(c->heap, req(class_floor(lists[i].block)));
        void *y = i ? rtm_heap_alloc(c->heap, req(class_floor(lists[i].block))) : x;
        if ((uintptr_t)y != lists[i].second)
            return wcet_fail(c, "a list the operation touched is not as the scenario built it");
    }
    struct tclass fc = class_of(ALIGNED_FOUND), gc = class_of(ALIGNED_GAP),
                  rc = class_of(ALIGNED_REST);
    wcet_fact(c,
              "alignment %zu: the head of class (%u,%u) popped with one behind; front gap of "
              "%zu bytes (a free block) ahead of one in (%u,%u); %zu-byte rest ahead of one in "
              "(%u,%u)",
              ALIGNED_ALIGN, fc.fl, fc.sl, gap, gc.fl, gc.sl, (size_t)ALIGNED_REST, rc.fl, rc.sl);
    wcet_num(c, "front_gap_bytes", (double)gap);
    return heap_ok(c);
}

/* ---- realloc: cannot grow in place, moves ------------------------------------ */

/* [X1 g X2 g Y g q g P B N g | rest]: B (4096 bytes) grows to 8 KiB; its
 * successor N is free but too small, so realloc allocates: the head of
 * class (5,2) (X2, X1 behind it), split, its 496-byte rest ahead of Y in
 * class (0,31); copies 4088 bytes; and frees B, merging it with both P
 * and N. */
#define MOVE_P     ((size_t)96)
#define MOVE_B     ((size_t)4096)
#define MOVE_N     ((size_t)64)
#define MOVE_TO    ((size_t)8192)
#define MOVE_FOUND ((size_t)8704)
#define MOVE_REST  (MOVE_FOUND - rtm_tlsf_block_cost(MOVE_TO))
#define MOVE_FILL  0x5a

static int realloc_move_build(struct wcet_case *c)
{
    void *x1 = take(c, MOVE_FOUND, "block of the found class");
    void *x2 = x1 && take(c, GUARD, "guard") ? take(c, MOVE_FOUND, "the found block") : NULL;
    void *y =
        x2 && take(c, GUARD, "guard") ? take(c, MOVE_REST, "block of the rest's class") : NULL;
    void *q = y && take(c, GUARD, "guard") ? take(c, MOVE_P, "list neighbour") : NULL;
    void *g0 = q ? take(c, GUARD, "guard") : NULL;
    void *p = g0 ? take(c, MOVE_P, "free predecessor") : NULL;
    void *b = p ? take(c, MOVE_B, "block moved") : NULL;
    void *n = b ? take(c, MOVE_N, "free successor") : NULL;
    if (!n || !take(c, GUARD, "guard"))
        return -1;
    memset(b, MOVE_FILL, req(MOVE_B));
    void *order[] = { x1, x2, y, q, p, n };
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
        if (rtm_heap_free(c->heap, order[i]) != 0)
            return wcet_fail(c, "build: a free was refused");
    c->op = WCET_OP_REALLOC;
    c->ptr = b;
    c->size = MOVE_TO;
    c->expect[0] = (uintptr_t)p;
    c->expect[1] = (uintptr_t)x2;
    c->expect[2] = (uintptr_t)x1;
    c->expect[3] = (uintptr_t)y;
    return 0;
}

static int realloc_move_check(struct wcet_case *c)
{
    if ((uintptr_t)c->ret != c->expect[1])
        return wcet_fail(c, "realloc did not move the block to the head of the found class");
    const unsigned char *q = c->ret;
    for (size_t i = 0; i < req(MOVE_B); i++)
        if (q[i] != MOVE_FILL)
            return wcet_fail(c, "the contents were not copied");
    void *m = rtm_heap_alloc(c->heap, req(class_floor(MOVE_P + MOVE_B + MOVE_N)));
    if ((uintptr_t)m != c->expect[0])
        return wcet_fail(c, "the old block did not merge with both neighbours");
    void *x1 = rtm_heap_alloc(c->heap, req(class_floor(MOVE_FOUND)));
    void *rest = rtm_heap_alloc(c->heap, req(class_floor(MOVE_REST)));
    void *y = rtm_heap_alloc(c->heap, req(class_floor(MOVE_REST)));
    if ((uintptr_t)x1 != c->expect[2] ||
        (uintptr_t)rest != c->expect[1] + rtm_tlsf_block_cost(MOVE_TO) ||
        (uintptr_t)y != c->expect[3])
        return wcet_fail(c, "a list the operation touched is not as the scenario built it");
    struct tclass fc = class_of(MOVE_FOUND), rc = class_of(MOVE_REST);
    wcet_fact(c,
              "%zu-byte block to %zu bytes: alloc (the head of (%u,%u), one behind; rest ahead "
              "of one in (%u,%u)), copy of %zu bytes, free merging both neighbours",
              MOVE_B, MOVE_TO, fc.fl, fc.sl, rc.fl, rc.sl, req(MOVE_B));
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
      "pop with a block behind; front gap too small to stand alone: grown by the alignment, "
      "inserted in a non-empty list; rest split off to a non-empty list",
      "O(1)", aligned_build, aligned_check, NULL },
    { WCET_TLSF, "realloc-move", "realloc",
      "no room in place: alloc (pop with a block behind, split, rest to a non-empty list), "
      "copy 4088 bytes, free merging both neighbours",
      "O(1) + O(size)", realloc_move_build, realloc_move_check, NULL },
};
const size_t wcet_tlsf_n = sizeof(wcet_tlsf_scenarios) / sizeof(wcet_tlsf_scenarios[0]);
