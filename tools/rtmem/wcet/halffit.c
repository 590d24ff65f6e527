/*
 * `rtmem wcet`: halffit's scenarios. Each builds, through the public API
 * alone, a heap in which one operation takes the longest path halffit's
 * code has for it (src/heap/halffit.c), and checks afterwards, again
 * through the public API, that the operation did what the scenario claims.
 *
 * halffit's alloc and free are straight-line code, as TLSF's: the longest
 * paths are those that touch the most memory. An alloc takes the head of
 * the first non-empty list at or above its power of two with a fragment
 * behind it (its links verified and rewritten on a hardened heap) and
 * puts the rest of the fragment at the head of a non-empty list; a free
 * merges with both neighbours, each unlinked from the middle of its list,
 * and files the result at the head of a non-empty list.
 *
 * The lists are those rtmem/halffit.h documents: a request of n bytes
 * takes a fragment of F(n) = max(32, 2^ceil(log2(n + 16))) bytes, and a
 * free fragment of s bytes waits in list floor(log2(s)). Fragments are cut
 * from the front of the free fragment found, so a fresh pool hands out its
 * fragments in address order; a fragment that is not a power of two is
 * made by freeing two neighbours.
 */
#include <string.h>

#include "wcet.h"

#define HDR   RTM_HALFFIT_HEADER_BYTES
/* A used fragment between free ones, so that they never merge. */
#define GUARD ((size_t)32)

/* A request that takes exactly a fragment of f bytes (a power of two). */
static size_t req(size_t f)
{
    return f - HDR;
}

/* floor(log2(s)): the list of a free fragment of s bytes. */
static unsigned list_of(size_t s)
{
    return 63u - (unsigned)__builtin_clzll((unsigned long long)s);
}

static void *take(struct wcet_case *c, size_t f, const char *what)
{
    void *p = rtm_heap_alloc(c->heap, req(f));
    if (!p) {
        wcet_fail(c, "build: the %s (%zu bytes) could not be allocated", what, f);
        return NULL;
    }
    return p;
}

/* Two neighbouring fragments of a and b bytes, freed later as one of
 * a + b: returns the first's payload, the second's in *second. */
static void *take_pair(struct wcet_case *c, size_t a, size_t b, void **second, const char *what)
{
    void *p = take(c, a, what);
    *second = p ? take(c, b, what) : NULL;
    return *second ? p : NULL;
}

static int free_all(struct wcet_case *c, void *const *order, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (rtm_heap_free(c->heap, order[i]) != 0)
            return wcet_fail(c, "build: a free was refused");
    return 0;
}

/* Everything but the blocks the scenario frees is used: the rest of the
 * pool taken, one power of two at a time (each take leaves a smaller rest). */
static int take_rest(struct wcet_case *c)
{
    for (int i = 0; i < 64; i++) {
        struct rtm_heap_stats st;
        if (rtm_heap_stats(c->heap, &st) != 0)
            return wcet_fail(c, "rtm_heap_stats failed");
        if (st.largest_free_bytes == 0)
            return 0;
        if (!rtm_heap_alloc(c->heap, st.largest_free_bytes))
            return wcet_fail(c, "build: the rest of the pool could not be taken");
    }
    return wcet_fail(c, "build: the rest of the pool was not taken in 64 steps");
}

/* The heap as the build left it, for a check's probes. */
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

/* Pops a request of fragment f and says whether it came from `want`. */
static bool pops(struct wcet_case *c, size_t f, uintptr_t want)
{
    return (uintptr_t)rtm_heap_alloc(c->heap, req(f)) == want;
}

/* ---- alloc: the first non-empty list above, popped, split ------------------- */

/* Request 48 bytes: a 64-byte fragment, list 6. Lists 6 to 9 are empty;
 * list 10 holds two fragments of 1536 bytes (each a 1024 and a 512 freed
 * together), the rest of the pool is used. The head is popped with the
 * other behind it and cut: its 1472-byte rest goes back to list 10, ahead
 * of the other. */
#define SPLIT_F     ((size_t)64)
#define SPLIT_FOUND ((size_t)1536)

static int alloc_split_build(struct wcet_case *c)
{
    void *a2, *b2;
    void *a1 = take_pair(c, 1024, 512, &a2, "found fragment");
    void *b1 =
        a1 && take(c, GUARD, "guard") ? take_pair(c, 1024, 512, &b2, "found fragment") : NULL;
    if (!b1 || !take(c, GUARD, "guard") || take_rest(c) != 0)
        return -1;
    void *order[] = { a1, a2, b1, b2 };
    if (free_all(c, order, 4) != 0)
        return -1;
    c->op = WCET_OP_ALLOC;
    c->size = req(SPLIT_F);
    c->expect[0] = (uintptr_t)b1;
    c->expect[1] = (uintptr_t)a1;
    return 0;
}

static int alloc_split_check(struct wcet_case *c)
{
    if ((uintptr_t)c->ret != c->expect[0])
        return wcet_fail(c, "alloc did not take the head of list %u", list_of(SPLIT_FOUND));
    if (rtm_heap_usable_size(c->heap, c->ret) != req(SPLIT_F))
        return wcet_fail(c, "the block is not a %zu-byte fragment", SPLIT_F);
    /* List 10 now: the rest, then the other found fragment. */
    if (!pops(c, 1024, c->expect[0] + SPLIT_F) || !pops(c, 1024, c->expect[1]))
        return wcet_fail(c, "the rest is not at the head of a list that held a fragment");
    if (heap_ok(c) != 0)
        return -1;
    wcet_fact(c,
              "lists %u to %u empty; the head of list %u (%zu bytes) popped with one behind, "
              "cut to %zu bytes; the %zu-byte rest ahead of the other in list %u",
              list_of(SPLIT_F), list_of(SPLIT_FOUND) - 1, list_of(SPLIT_FOUND), SPLIT_FOUND,
              SPLIT_F, SPLIT_FOUND - SPLIT_F, list_of(SPLIT_FOUND - SPLIT_F));
    return 0;
}

/* ---- free: both neighbours merged, each from the middle of its list ---------- */

/* [q1 g q2 g r1 g r2 g P B N g | used]: lists 9 (q2 P q1) and 10 (r2 N r1),
 * P of 512 bytes and N of 1024, each in the middle; freeing B (64 bytes)
 * unlinks both and files the 1600-byte result at the head of list 10. */
#define MERGE_P ((size_t)512)
#define MERGE_B ((size_t)64)
#define MERGE_N ((size_t)1024)
#define MERGE_M (MERGE_P + MERGE_B + MERGE_N)

static int free_merge_layout(struct wcet_case *c)
{
    static const size_t sizes[] = { MERGE_P, MERGE_P, MERGE_N, MERGE_N };
    void *side[4];
    for (size_t i = 0; i < 4; i++) {
        side[i] = take(c, sizes[i], "list neighbour");
        if (!side[i] || !take(c, GUARD, "guard"))
            return -1;
    }
    void *p = take(c, MERGE_P, "free predecessor");
    void *b = p ? take(c, MERGE_B, "block freed") : NULL;
    void *n = b ? take(c, MERGE_N, "free successor") : NULL;
    if (!n || !take(c, GUARD, "guard") || take_rest(c) != 0)
        return -1;
    void *order[] = { side[0], p, side[1], side[2], n, side[3] };
    if (free_all(c, order, 6) != 0)
        return -1;
    c->op = WCET_OP_FREE;
    c->ptr = b;
    c->expect[0] = (uintptr_t)p;
    c->expect[1] = (uintptr_t)side[1]; /* list 9, head first */
    c->expect[2] = (uintptr_t)p;
    c->expect[3] = (uintptr_t)side[0];
    c->expect[4] = (uintptr_t)side[3]; /* list 10 */
    c->expect[5] = (uintptr_t)n;
    c->expect[6] = (uintptr_t)side[2];
    return 0;
}

static int free_merge_check(struct wcet_case *c)
{
    if (c->rc != 0)
        return wcet_fail(c, "free returned %d", c->rc);
    /* List 10: the merged fragment, then r2 and r1. */
    if (!pops(c, 1024, c->expect[0]) || !pops(c, 1024, c->expect[4]) ||
        !pops(c, 1024, c->expect[6]))
        return wcet_fail(c, "the block did not merge with both neighbours into a non-empty list");
    if (heap_ok(c) != 0)
        return -1;
    /* The path: on the built heap, each neighbour sits in the middle of its
     * list. */
    rebuilt(c);
    for (size_t i = 0; i < 6; i++)
        if (!pops(c, i < 3 ? MERGE_P : MERGE_N, c->expect[1 + i]))
            return wcet_fail(c, "a neighbour is not in the middle of its list");
    wcet_fact(c,
              "merges a free predecessor of list %u and a free successor of list %u, each "
              "unlinked from the middle of its list; %zu bytes to the head of non-empty list %u",
              list_of(MERGE_P), list_of(MERGE_N), MERGE_M, list_of(MERGE_M));
    return 0;
}

/* ---- free: the same, in the pool found last ------------------------------------ */

/* As TLSF's: WCET_POOLS pools in the image, the one the scenario uses added
 * first, so that it is found last (added pools are listed newest first);
 * every other pool is full. The scenario's pool is held whole while the
 * others are added and filled (filling one takes the largest free
 * fragments, which would otherwise be the scenario's), then given back and
 * laid out. */
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
    c->expect[7] = (uintptr_t)at;
    c->expect[8] = (uintptr_t)(at + big);
    void *held[64];
    size_t n_held = 0;
    for (struct rtm_heap_stats st; rtm_heap_stats(c->heap, &st) == 0 && st.largest_free_bytes;) {
        if (n_held == 64 || !(held[n_held++] = rtm_heap_alloc(c->heap, st.largest_free_bytes)))
            return wcet_fail(c, "build: the scenario's pool could not be held");
    }
    at += big;
    for (size_t i = 2; i < WCET_POOLS; i++, at += WCET_SMALL_POOL)
        if (rtm_heap_add_pool(c->heap, at, WCET_SMALL_POOL) != 0 || take_rest(c) != 0)
            return wcet_fail(c, "build: pool %zu could not be added and filled", i);
    if (free_all(c, held, n_held) != 0)
        return -1;
    return free_merge_layout(c);
}

static int free_pool_check(struct wcet_case *c)
{
    struct rtm_heap_stats st;
    if (rtm_heap_stats(c->heap, &st) != 0)
        return wcet_fail(c, "rtm_heap_stats failed");
    if (st.pool_count != WCET_POOLS || (uintptr_t)c->ptr < c->expect[7] ||
        (uintptr_t)c->ptr >= c->expect[8])
        return wcet_fail(c, "the block is not in the pool found last");
    if (free_merge_check(c) != 0)
        return -1;
    wcet_fact(c, "; in the pool found last of %u", WCET_POOLS);
    wcet_num(c, "pools", WCET_POOLS);
    return 0;
}

/* ---- aligned_alloc: the largest front gap ----------------------------------- */

/* alignment 4096, 48 bytes (a 64-byte fragment): the search is for 4128
 * bytes, list 13 and above; list 13 holds two 8192-byte fragments, the
 * head's payload 32 bytes past an aligned address, so its front gap is the
 * largest, 4064 bytes: a free fragment put ahead of one in list 11; the
 * 4064-byte rest after the block goes to list 11 too, ahead of the gap. */
#define ALIGNED_ALIGN ((size_t)4096)
#define ALIGNED_F     ((size_t)64)
#define ALIGNED_FOUND ((size_t)8192)
#define ALIGNED_GAP   (ALIGNED_ALIGN - RTM_HALFFIT_GRANULE)
#define ALIGNED_REST  (ALIGNED_FOUND - ALIGNED_GAP - ALIGNED_F)

static int aligned_build(struct wcet_case *c)
{
    void *probe = take(c, GUARD, "probe");
    if (!probe)
        return -1;
    /* Fragments from the pool's start up to one whose payload lies 32
     * bytes past an aligned address: powers of two, largest first. */
    uintptr_t start = (uintptr_t)probe - HDR;
    size_t pad = (size_t)((ALIGNED_ALIGN + HDR - start % ALIGNED_ALIGN) % ALIGNED_ALIGN);
    rtm_heap_free(c->heap, probe);
    for (size_t f = ALIGNED_ALIGN / 2; f >= RTM_HALFFIT_MIN_FRAGMENT; f /= 2)
        if ((pad & f) && !take(c, f, "pad"))
            return -1;
    void *h1 = take(c, ALIGNED_FOUND, "found fragment");
    void *h2 = h1 && take(c, GUARD, "guard") ? take(c, ALIGNED_FOUND, "fragment behind") : NULL;
    void *g = h2 && take(c, GUARD, "guard") ? take(c, 2048, "fragment of list 11") : NULL;
    if (!g || !take(c, GUARD, "guard") || take_rest(c) != 0)
        return -1;
    if (((uintptr_t)h1 - RTM_HALFFIT_GRANULE) % ALIGNED_ALIGN != 0)
        return wcet_fail(c, "build: the found fragment's payload is not 32 bytes past alignment");
    void *order[] = { g, h2, h1 };
    if (free_all(c, order, 3) != 0)
        return -1;
    c->op = WCET_OP_ALIGNED;
    c->align = ALIGNED_ALIGN;
    c->size = req(ALIGNED_F);
    c->expect[0] = (uintptr_t)h1;
    c->expect[1] = (uintptr_t)h2;
    c->expect[2] = (uintptr_t)g;
    return 0;
}

static int aligned_check(struct wcet_case *c)
{
    uintptr_t p = (uintptr_t)c->ret, found = c->expect[0];
    if (!c->ret || p % ALIGNED_ALIGN != 0)
        return wcet_fail(c, "aligned_alloc did not return an aligned block");
    if (p - found != ALIGNED_GAP)
        return wcet_fail(c, "the front gap is %zu bytes, not %zu", (size_t)(p - found),
                         (size_t)ALIGNED_GAP);
    /* List 11: the rest, the gap, then the fragment the build put there;
     * list 13: the fragment behind. (Each 2048 taken from a 4064 leaves
     * 2016 bytes in list 10, out of the way.) */
    if (!pops(c, 2048, p + ALIGNED_F) || !pops(c, 2048, found) || !pops(c, 2048, c->expect[2]) ||
        !pops(c, ALIGNED_FOUND, c->expect[1]))
        return wcet_fail(c, "a list the operation touched is not as the scenario built it");
    wcet_fact(c,
              "alignment %zu: the head of list %u popped with one behind; front gap of %zu "
              "bytes (a free fragment) ahead of one in list %u; %zu-byte rest ahead of it",
              ALIGNED_ALIGN, list_of(ALIGNED_FOUND), (size_t)ALIGNED_GAP, list_of(ALIGNED_GAP),
              (size_t)ALIGNED_REST);
    wcet_num(c, "front_gap_bytes", (double)ALIGNED_GAP);
    return heap_ok(c);
}

/* ---- realloc: cannot grow in place, moves ------------------------------------ */

/* [X1 g X2 g Y g q g P B N g | used]: B (a 4096-byte fragment) grows to
 * 8000 bytes (an 8192-byte fragment); its successor N is free but too
 * small, so realloc allocates: the head of list 13 (X2, 12288 bytes, X1
 * behind it), cut, its 4096-byte rest ahead of Y in list 12; copies 4080
 * bytes; and frees B, merging it with P (from the middle of list 9) and N
 * (its head), the 5120-byte result at the head of list 12. */
#define MOVE_P     ((size_t)512)
#define MOVE_B     ((size_t)4096)
#define MOVE_N     ((size_t)512)
#define MOVE_TO    ((size_t)8000)
#define MOVE_F     ((size_t)8192)
#define MOVE_FOUND ((size_t)12288)
#define MOVE_FILL  0x5a

static int realloc_move_build(struct wcet_case *c)
{
    void *x1b, *x2b;
    void *x1 = take_pair(c, 8192, 4096, &x1b, "fragment of the found list");
    void *x2 =
        x1 && take(c, GUARD, "guard") ? take_pair(c, 8192, 4096, &x2b, "found fragment") : NULL;
    void *y = x2 && take(c, GUARD, "guard") ? take(c, 4096, "fragment of the rest's list") : NULL;
    void *q = y && take(c, GUARD, "guard") ? take(c, MOVE_P, "list neighbour") : NULL;
    void *p = q && take(c, GUARD, "guard") ? take(c, MOVE_P, "free predecessor") : NULL;
    void *b = p ? take(c, MOVE_B, "block moved") : NULL;
    void *n = b ? take(c, MOVE_N, "free successor") : NULL;
    if (!n || !take(c, GUARD, "guard") || take_rest(c) != 0)
        return -1;
    memset(b, MOVE_FILL, req(MOVE_B));
    void *order[] = { x1, x1b, x2, x2b, y, q, p, n };
    if (free_all(c, order, 8) != 0)
        return -1;
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
        return wcet_fail(c, "realloc did not move the block to the head of list %u",
                         list_of(MOVE_FOUND));
    const unsigned char *q = c->ret;
    for (size_t i = 0; i < req(MOVE_B); i++)
        if (q[i] != MOVE_FILL)
            return wcet_fail(c, "the contents were not copied");
    /* List 12: the merged fragment, the rest, then Y; list 13: X1. */
    if (!pops(c, 4096, c->expect[0]) || !pops(c, 4096, c->expect[1] + MOVE_F) ||
        !pops(c, 4096, c->expect[3]) || !pops(c, 8192, c->expect[2]))
        return wcet_fail(c, "a list the operation touched is not as the scenario built it");
    wcet_fact(c,
              "%zu-byte fragment to %zu bytes: alloc (the head of list %u, one behind; rest "
              "ahead of one in list %u), copy of %zu bytes, free merging both neighbours",
              MOVE_B, MOVE_TO, list_of(MOVE_FOUND), list_of(MOVE_FOUND - MOVE_F), req(MOVE_B));
    wcet_num(c, "copied_bytes", (double)req(MOVE_B));
    return heap_ok(c);
}

const struct wcet_scenario wcet_halffit_scenarios[] = {
    { WCET_HALFFIT, "alloc-search-split", "alloc",
      "lists at and above the request's empty up to one with two fragments: its head popped "
      "(links checked), cut, the rest to the head of a non-empty list",
      "O(1)", alloc_split_build, alloc_split_check, NULL },
    { WCET_HALFFIT, "free-merge-both", "free",
      "both neighbours free, each unlinked from the middle of its list, the merged fragment to "
      "the head of a non-empty list",
      "O(1)", free_merge_layout, free_merge_check, NULL },
    { WCET_HALFFIT, "free-merge-last-pool", "free",
      "free-merge-both in the pool found last of several", "O(pools)", free_pool_build,
      free_pool_check, NULL },
    { WCET_HALFFIT, "aligned-largest-gap", "aligned_alloc",
      "the largest front gap: a free fragment of its own, the block, the rest, each to a "
      "non-empty list",
      "O(1)", aligned_build, aligned_check, NULL },
    { WCET_HALFFIT, "realloc-move", "realloc",
      "cannot grow in place: alloc (popped with one behind, split), copy, free merging both "
      "neighbours",
      "O(1) + O(size)", realloc_move_build, realloc_move_check, NULL },
};

const size_t wcet_halffit_n = sizeof(wcet_halffit_scenarios) / sizeof(wcet_halffit_scenarios[0]);
