/*
 * The conformance suite: every kind that rtm_heap_kinds() lists is held to the
 * contract of rtmem/heap.h. A new kind is covered by registering it.
 *
 *   conformance [--seed N] [--ops N] [--quick] [--kind NAME] [--lock pi|robust] SECTION...
 *
 * Sections: model, fill, pools, bad, big, relocate (all when none is named).
 * --quick (for emulators, tens of times slower) fills fewer sizes: each
 * power of two and one size between, and 10 random sizes instead of 40.
 * The seed is printed; rerun with --seed to replay a failure. --lock creates
 * every heap with that lock (rtmem/lock.h): a locked heap keeps the whole
 * contract, through the same calls.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <sys/mman.h>

#include "check.h"
#include "model.h"
#include "rtmem/heap.h"
#include "rtmem/xvheap.h"
#include "rtmem/zsheap.h"

static uint64_t seed = 0x5eed2026ull;
static unsigned long model_ops = 500000; /* per configuration; two per kind */
static bool quick;                       /* --quick: fewer fill sizes */
static const char *only_kind;
static int lock = RTM_HEAP_LOCK_NONE; /* --lock */

/* Every heap of the suite: rtm_heap_create, or with --lock, the same with
 * that lock. */
static struct rtm_heap *create(const char *kind, void *mem, size_t size)
{
    if (lock == RTM_HEAP_LOCK_NONE)
        return rtm_heap_create(kind, mem, size);
    struct rtm_heap_config cfg = { .lock = lock };
    return rtm_heap_create_ex(kind, mem, size, &cfg);
}

static unsigned char *map_bytes(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void garbage(unsigned char *p, size_t n, uint64_t *rng)
{
    for (size_t i = 0; i + 8 <= n; i += 8) {
        uint64_t v = rng_next(rng);
        memcpy(p + i, &v, 8);
    }
}

/* A kind that hands out power-of-two fragments only (halffit): its largest
 * block from U free bytes is the largest power of two in U less a header,
 * no less than half of U, where the other kinds give nearly all of U; and
 * its fill count is exact, not a lower bound. */
static bool power_of_two_kind(const char *kind)
{
    return strcmp(kind, "halffit") == 0;
}

/* A kind whose blocks live inside pages (xvheap, zsheap): its largest
 * request is about a page (xvheap: a page's block area less a header;
 * zsheap: a page), and a pool must hold one whole page, aligned to its
 * size. */
static bool page_kind(const char *kind)
{
    return strcmp(kind, "xvheap") == 0 || strcmp(kind, "zsheap") == 0;
}

/* A page kind's largest request. */
static size_t page_max_request(const char *kind)
{
    return strcmp(kind, "zsheap") == 0 ? RTM_ZSHEAP_MAX_REQUEST
                                       : rtm_xvheap_max_request(RTM_XVHEAP_PAGE_SIZE);
}

/* Runs a check on every kind (or the one --kind names), "kind/section" as
 * its context. */
static void each_kind(const char *section, void (*check)(const char *kind))
{
    static char ctx[96];
    for (const char *const *k = rtm_heap_kinds(); *k; k++) {
        if (only_kind && strcmp(only_kind, *k) != 0)
            continue;
        snprintf(ctx, sizeof(ctx), "%s/%s", *k, section);
        test_context = ctx;
        check(*k);
    }
}

/* ---- model: long random sequences against the shadow model ---------------- */

/* One pool, in garbage-filled memory at an odd address. */
static void model_one_pool(const char *kind)
{
    uint64_t rng = seed;
    size_t span = 4u << 20;
    unsigned char *mem = map_bytes(span);
    REQUIRE(mem != NULL, );
    garbage(mem, span, &rng);
    struct rtm_heap *h = create(kind, mem + 3, span - 3);
    REQUIRE(h != NULL, );
    struct model m;
    model_init(&m, h, mem, span, span - 3);
    model_run(&m, &rng, model_ops, 5000);
    model_checkpoint(&m);
    model_drain(&m, &rng);
    model_fini(&m);
    rtm_heap_destroy(h);
    munmap(mem, span);
}

TEST_CASE_IN("model", "one pool in garbage at an odd address keeps to the model")
{
    each_kind("model", model_one_pool);
}

/* Four pools, not adjacent, one below the creating memory, one small,
 * added while blocks are live. */
static void model_four_pools(const char *kind)
{
    uint64_t rng = seed ^ 0x4f001;
    size_t span = 8u << 20;
    unsigned char *mem = map_bytes(span);
    REQUIRE(mem != NULL, );
    garbage(mem, span, &rng);
    struct rtm_heap *h = create(kind, mem + (3u << 20), 2u << 20);
    REQUIRE(h != NULL, );
    struct model m;
    model_init(&m, h, mem, span, 2u << 20);
    model_run(&m, &rng, model_ops / 4, 5000);
    struct {
        size_t off, len;
    } pools[] = {
        { 1u << 20, 1u << 20 },              /* below the heap */
        { (6u << 20) + 8, (1u << 20) - 24 }, /* above, odd bounds */
        { (7u << 20) + 4096, 64u << 10 },    /* small */
    };
    for (size_t i = 0; i < sizeof(pools) / sizeof(pools[0]); i++) {
        CHECK_EQ(rtm_heap_add_pool(h, mem + pools[i].off, pools[i].len), 0);
        model_pool_added(&m, pools[i].len);
        model_run(&m, &rng, model_ops / 4, 5000);
    }
    model_checkpoint(&m);
    model_drain(&m, &rng);
    /* An empty multi-pool heap runs the workload again and drains back to the
     * same largest free block. */
    model_run(&m, &rng, 20000, 5000);
    model_drain(&m, &rng);
    model_fini(&m);
    munmap(mem, span);
}

TEST_CASE_IN("model", "four pools added while blocks are live keep to the model, and drain back")
{
    each_kind("model", model_four_pools);
}

/* ---- fill: how many B-byte blocks fit in a fresh heap ------------------------ */

static void fill_one(const char *kind, unsigned char *mem, size_t span, int npools, size_t bsize,
                     uint64_t *rng)
{
    size_t part = span / 4;
    struct rtm_heap *h = create(kind, mem, npools == 1 ? span : part);
    REQUIRE(h != NULL, );
    size_t given = npools == 1 ? span : part;
    for (int i = 1; i < npools; i++) {
        /* every other quarter: pools with gaps between them */
        size_t off = (size_t)(2 * i) * part / 2 + part + (size_t)i * 4096;
        size_t len = part - 2 * 4096;
        if (off + len > span)
            len = span - off;
        CHECK_EQ(rtm_heap_add_pool(h, mem + off, len), 0);
        given += len;
    }
    struct model m;
    model_init(&m, h, mem, span, given);
    struct rtm_heap_stats st;
    rtm_heap_stats(h, &st);
    size_t expect = rtm_heap_fill_count(h, bsize);
    size_t count = 0;
    while (model_alloc(&m, bsize) >= 0)
        count++;
    CHECK(count >= expect); /* at least what the kind documents */
    if (power_of_two_kind(kind))
        CHECK_EQ(count, expect); /* halffit documents the count exactly */
    CHECK(count * bsize <= st.usable_bytes);
    CHECK(count > 0 || bsize > st.largest_free_bytes);
    if (count < expect)
        fprintf(stderr, "  [%s] %d pool(s), %zu-byte blocks: %zu fit, %zu documented\n", kind,
                npools, bsize, count, expect);
    rtm_heap_stats(h, &st);
    CHECK_EQ(st.failed_allocs, 1);
    CHECK_EQ(st.live_blocks, count);
    CHECK(st.largest_free_bytes < bsize);
    model_checkpoint(&m);
    model_drain(&m, rng);
    /* Same fill again on the emptied heap: the same count. */
    size_t again = 0;
    while (model_alloc(&m, bsize) >= 0)
        again++;
    CHECK_EQ(again, count);
    model_drain(&m, rng);
    model_fini(&m);
    rtm_heap_destroy(h);
}

static void fill_counts(const char *kind)
{
    uint64_t rng = seed ^ 0xf111;
    size_t span = 1u << 20;
    unsigned char *mem = map_bytes(span);
    REQUIRE(mem != NULL, );
    for (size_t b = 16; b <= 65536; b *= 2) {
        size_t sizes[] = { b, b + b / 2 + 3, b + 1, b - 8 };
        for (size_t i = 0; i < (quick ? 2u : 4u); i++) {
            garbage(mem, span, &rng);
            fill_one(kind, mem, span, 1, sizes[i], &rng);
            fill_one(kind, mem, span, 3, sizes[i], &rng);
        }
    }
    for (int i = 0; i < (quick ? 10 : 40); i++)
        fill_one(kind, mem, span, 1 + i % 3, (size_t)rng_range(&rng, 0, 70000), &rng);
    munmap(mem, span);
}

TEST_CASE_IN("fill", "a fresh heap holds at least the documented count of blocks of any size")
{
    each_kind("fill", fill_counts);
}

/* The largest single allocation from a fresh heap is close to the free
 * size, is what largest_free_bytes says, and nothing larger fits. */
static void fill_largest(const char *kind)
{
    uint64_t rng = seed ^ 0xf112;
    size_t span = 1u << 20;
    unsigned char *mem = map_bytes(span);
    REQUIRE(mem != NULL, );
    garbage(mem, span, &rng);
    struct rtm_heap *h = create(kind, mem, span);
    REQUIRE(h != NULL, );
    struct rtm_heap_stats st;
    rtm_heap_stats(h, &st);
    if (power_of_two_kind(kind))
        CHECK(st.largest_free_bytes >= st.free_bytes / 2 - 64);
    else if (page_kind(kind))
        /* (a robust heap's owner record takes 16 bytes of it) */
        CHECK(st.largest_free_bytes <= page_max_request(kind) &&
              st.largest_free_bytes + 16 >= page_max_request(kind));
    else
        CHECK(st.largest_free_bytes >= st.free_bytes - st.free_bytes / 16);
    void *p = rtm_heap_alloc(h, st.largest_free_bytes);
    CHECK(p != NULL);
    CHECK(rtm_heap_alloc(h, 16) == NULL || st.largest_free_bytes + 64 < st.free_bytes);
    if (page_kind(kind)) /* one byte more fits no page */
        CHECK(rtm_heap_alloc(h, st.largest_free_bytes + 1) == NULL);
    CHECK_EQ(rtm_heap_free(h, p), 0);
    rtm_heap_destroy(h);
    munmap(mem, span);
}

TEST_CASE_IN("fill", "the largest allocation is what largest_free_bytes says, close to all")
{
    each_kind("fill", fill_largest);
}

/* ---- pools: several pools, non-adjacent ----------------------------------------- */

/* Xenomai heapmem's extent bug, as a scenario for every kind: 32 bytes, the
 * rest of the first pool as one block, a second pool, then two 16-byte
 * blocks: none may overlap (the model checks every granule). */
static void pools_extent_bug(const char *kind)
{
    uint64_t rng = seed ^ 0x9001;
    unsigned char *m2 = map_bytes(256u << 10);
    REQUIRE(m2 != NULL, );
    struct rtm_heap *x = create(kind, m2 + (128u << 10), 64u << 10);
    REQUIRE(x != NULL, );
    struct model xm;
    model_init(&xm, x, m2, 256u << 10, 64u << 10);
    CHECK(model_alloc(&xm, 32) >= 0);
    struct rtm_heap_stats xs;
    rtm_heap_stats(x, &xs);
    model_alloc(&xm, xs.largest_free_bytes);
    CHECK_EQ(rtm_heap_add_pool(x, m2, 64u << 10), 0);
    model_pool_added(&xm, 64u << 10);
    CHECK(model_alloc(&xm, 16) >= 0);
    CHECK(model_alloc(&xm, 16) >= 0);
    model_checkpoint(&xm);
    model_drain(&xm, &rng);
    model_fini(&xm);
    munmap(m2, 256u << 10);
}

TEST_CASE_IN("pools", "blocks after a pool is added to an extended heap overlap nothing")
{
    each_kind("pools", pools_extent_bug);
}

/* The pools section's heap: 64 KiB at 512 KiB into *mem (1 MiB of
 * garbage), its model in *m; with the first pool full of small blocks
 * and a second pool of 64 KiB at 128 KiB added when second is set. */
static struct rtm_heap *pools_heap(const char *kind, unsigned char **mem, struct model *m,
                                   uint64_t *rng, bool second)
{
    *mem = map_bytes(1u << 20);
    REQUIRE(*mem != NULL, NULL);
    garbage(*mem, 1u << 20, rng);
    struct rtm_heap *h = create(kind, *mem + (512u << 10), 64u << 10);
    REQUIRE(h != NULL, NULL);
    model_init(m, h, *mem, 1u << 20, 64u << 10);
    if (second) {
        while (model_alloc(m, 32) >= 0)
            ;
        CHECK_EQ(rtm_heap_add_pool(h, *mem + (128u << 10), 64u << 10), 0);
        model_pool_added(m, 64u << 10);
    }
    return h;
}

/* Fill the first pool completely with small blocks, then add a pool: small
 * blocks must come from the new pool and overlap nothing. */
static void pools_small_from_new(const char *kind)
{
    uint64_t rng = seed ^ 0x9002;
    unsigned char *mem;
    struct model m;
    if (!pools_heap(kind, &mem, &m, &rng, true))
        return;
    size_t got = 0;
    for (int i = 0; i < 64; i++)
        got += model_alloc(&m, 16) >= 0;
    CHECK_EQ(got, 64);
    model_checkpoint(&m);
    model_fini(&m);
    munmap(mem, 1u << 20);
}

TEST_CASE_IN("pools", "a pool added to a full heap gives small blocks that overlap nothing")
{
    each_kind("pools", pools_small_from_new);
}

/* Add pools of assorted sizes and alignments; each must be usable. */
static void pools_assorted(const char *kind)
{
    uint64_t rng = seed ^ 0x9003;
    unsigned char *mem;
    struct model m;
    struct rtm_heap *h = pools_heap(kind, &mem, &m, &rng, true);
    if (!h)
        return;
    size_t offs[] = { 300u << 10, 700u << 10, 900u << 10 };
    /* a page kind's pool holds whole aligned pages after its bookkeeping: five pages' worth */
    size_t lens[] = { page_kind(kind) ? 5 * 4096 + 5 : 4096 + 5, 100u << 10, 33u << 10 };
    for (size_t i = 0; i < 3; i++) {
        struct rtm_heap_stats before, after;
        rtm_heap_stats(h, &before);
        CHECK_EQ(rtm_heap_add_pool(h, mem + offs[i] + i, lens[i]), 0);
        model_pool_added(&m, lens[i]);
        rtm_heap_stats(h, &after);
        CHECK_EQ(after.pool_count, before.pool_count + 1);
        CHECK(after.free_bytes - before.free_bytes >= lens[i] / 2);
    }
    /* Everything fits again after a drain; a long run over all pools. */
    model_drain(&m, &rng);
    model_run(&m, &rng, 50000, 2500);
    model_drain(&m, &rng);
    model_fini(&m);
    munmap(mem, 1u << 20);
}

TEST_CASE_IN("pools", "pools of assorted sizes and alignments are each usable")
{
    each_kind("pools", pools_assorted);
}

/* Overlapping or bad pools are refused and change nothing. */
static void pools_refused(const char *kind)
{
    uint64_t rng = seed ^ 0x9004;
    unsigned char *mem;
    struct model m;
    struct rtm_heap *h = pools_heap(kind, &mem, &m, &rng, true);
    if (!h)
        return;
    struct rtm_heap_stats before, after;
    rtm_heap_stats(h, &before);
    CHECK_EQ(rtm_heap_add_pool(h, mem + (512u << 10) + 100, 4096), -EINVAL); /* inside the heap */
    CHECK_EQ(rtm_heap_add_pool(h, mem + (128u << 10) - 100, 4096), -EINVAL); /* straddles a pool */
    CHECK_EQ(rtm_heap_add_pool(h, mem + (100u << 10), 200u << 10), -EINVAL); /* covers a pool */
    CHECK_EQ(rtm_heap_add_pool(h, NULL, 4096), -EINVAL);
    CHECK_EQ(rtm_heap_add_pool(h, mem + (1000u << 10), 8), -ENOMEM);
    CHECK_EQ(rtm_heap_add_pool(h, (void *)(UINTPTR_MAX - 100), 4096), -EINVAL); /* wraps */
    rtm_heap_stats(h, &after);
    CHECK_EQ(after.pool_count, before.pool_count);
    CHECK_EQ(after.usable_bytes, before.usable_bytes);
    CHECK_EQ(rtm_heap_check(h), 0);
    model_fini(&m);
    munmap(mem, 1u << 20);
}

TEST_CASE_IN("pools", "overlapping or bad pools are refused and change nothing")
{
    each_kind("pools", pools_refused);
}

/* ---- bad: bad input of every sort ------------------------------------------------ */

#define BAD_SPAN (256u << 10)

static void bad_create(const char *kind)
{
    unsigned char *mem = map_bytes(BAD_SPAN);
    REQUIRE(mem != NULL, );
    errno = 0;
    CHECK(create(kind, NULL, BAD_SPAN) == NULL && errno == EINVAL);
    errno = 0;
    CHECK(create("no-such-kind", mem, BAD_SPAN) == NULL && errno == ENOENT);
    errno = 0;
    CHECK(create(NULL, mem, BAD_SPAN) == NULL && errno == EINVAL);
    errno = 0;
    CHECK(create(kind, (void *)(UINTPTR_MAX - 64), 4096) == NULL && errno == EINVAL);
    munmap(mem, BAD_SPAN);
}

TEST_CASE_IN("bad", "create refuses no memory, an unknown kind, no kind and a wrapping range")
{
    each_kind("bad", bad_create);
}

/* Tiny arenas, full of garbage: refused with ENOMEM, or a working heap. */
static void bad_tiny(const char *kind)
{
    uint64_t rng = seed ^ 0xbad;
    unsigned char *mem = map_bytes(BAD_SPAN);
    REQUIRE(mem != NULL, );
    for (size_t size = 0; size <= 16384; size += size < 512 ? 1 : 509) {
        garbage(mem, BAD_SPAN, &rng);
        errno = 0;
        struct rtm_heap *h = create(kind, mem + size % 16, size);
        if (!h) {
            CHECK_EQ(errno, ENOMEM);
            continue;
        }
        CHECK((unsigned char *)h >= mem && (unsigned char *)h < mem + 16 + size);
        CHECK_EQ(rtm_heap_check(h), 0);
        struct model m;
        model_init(&m, h, mem, BAD_SPAN, size);
        model_run(&m, &rng, 200, 50);
        model_drain(&m, &rng);
        model_fini(&m);
    }
    munmap(mem, BAD_SPAN);
}

TEST_CASE_IN("bad", "a tiny arena full of garbage is refused with ENOMEM, or a working heap")
{
    each_kind("bad", bad_tiny);
}

/* The bad section's heap, in garbage at an odd address, after a workload
 * of 2000 calls through the model m; *mem is its memory. */
static struct rtm_heap *bad_heap(const char *kind, unsigned char **mem, struct model *m,
                                 uint64_t *rng)
{
    *mem = map_bytes(BAD_SPAN);
    REQUIRE(*mem != NULL, NULL);
    garbage(*mem, BAD_SPAN, rng);
    struct rtm_heap *h = create(kind, *mem + 1, BAD_SPAN - 1);
    REQUIRE(h != NULL, NULL);
    CHECK(strcmp(rtm_heap_kind(h), kind) == 0);
    model_init(m, h, *mem, BAD_SPAN, BAD_SPAN - 1);
    model_run(m, rng, 2000, 500);
    return h;
}

/* Impossible sizes: NULL, and each counted as a failed allocation. */
static void bad_sizes(const char *kind)
{
    uint64_t rng = seed ^ 0xbad;
    unsigned char *mem;
    struct model m;
    struct rtm_heap *h = bad_heap(kind, &mem, &m, &rng);
    if (!h)
        return;
    struct rtm_heap_stats st;
    rtm_heap_stats(h, &st);
    uint64_t failed = st.failed_allocs;
    size_t huge[] = { SIZE_MAX,     SIZE_MAX - 1,        SIZE_MAX - 15,    SIZE_MAX / 2 + 1,
                      SIZE_MAX / 2, st.usable_bytes + 1, st.free_bytes + 1 };
    for (size_t i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
        CHECK(rtm_heap_alloc(h, huge[i]) == NULL);
        CHECK(rtm_heap_aligned_alloc(h, 64, huge[i]) == NULL);
        CHECK(rtm_heap_aligned_alloc(h, (size_t)1 << 20, huge[i]) == NULL);
        CHECK(rtm_heap_calloc(h, 1, huge[i]) == NULL);
        failed += 4;
    }
    CHECK(rtm_heap_calloc(h, SIZE_MAX / 2, 3) == NULL); /* n * size overflows */
    size_t half_bits = (size_t)1 << (sizeof(size_t) * CHAR_BIT / 2 + 1);
    CHECK(rtm_heap_calloc(h, half_bits, half_bits) == NULL); /* the product overflows */
    CHECK(rtm_heap_aligned_alloc(h, (size_t)1 << (sizeof(size_t) * CHAR_BIT - 1), 16) == NULL);
    CHECK(rtm_heap_aligned_alloc(h, 0, 16) == NULL);
    CHECK(rtm_heap_aligned_alloc(h, 3, 16) == NULL);
    CHECK(rtm_heap_aligned_alloc(h, 48, 16) == NULL);
    CHECK(rtm_heap_aligned_alloc(h, SIZE_MAX, 16) == NULL);
    failed += 7;
    rtm_heap_stats(h, &st);
    CHECK_EQ(st.failed_allocs, failed);
    m.failed = failed;
    CHECK_EQ(rtm_heap_check(h), 0);
    model_checkpoint(&m);
    model_fini(&m);
    munmap(mem, BAD_SPAN);
}

TEST_CASE_IN("bad", "impossible sizes give NULL, each counted as a failed allocation")
{
    each_kind("bad", bad_sizes);
}

/* alloc(0) and realloc(p, 0) give distinct minimum blocks, never NULL; a
 * realloc to an impossible size fails and leaves the block as it was. On
 * the bad section's heap, its blocks given back and a lighter workload run
 * (live blocks around, and room for the blocks asked: the workload alone
 * may leave a heap full, where a minimum block is rightly refused). */
static void bad_zero_and_impossible(const char *kind)
{
    uint64_t rng = seed ^ 0xbad;
    unsigned char *mem;
    struct model m;
    if (!bad_heap(kind, &mem, &m, &rng))
        return;
    model_drain(&m, &rng);
    model_run(&m, &rng, 200, 50);
    long a = model_alloc(&m, 0), b = model_alloc(&m, 0);
    CHECK(a >= 0 && b >= 0);
    if (a >= 0 && b >= 0)
        CHECK(m.blocks[a].p != m.blocks[b].p);
    if (b >= 0)
        CHECK(model_realloc(&m, (size_t)b, 0) >= 0);
    long c = model_calloc(&m, 0, 100);
    CHECK(c >= 0);
    long d = model_alloc(&m, 100);
    if (d >= 0) {
        CHECK(model_realloc(&m, (size_t)d, SIZE_MAX) < 0);
        CHECK(model_realloc(&m, (size_t)d, SIZE_MAX / 2) < 0);
    }
    model_checkpoint(&m);
    model_drain(&m, &rng);
    model_fini(&m);
    munmap(mem, BAD_SPAN);
}

TEST_CASE_IN("bad", "size 0 gives distinct minimum blocks, an impossible realloc keeps the block")
{
    each_kind("bad", bad_zero_and_impossible);
}

/* Bad frees of every sort, with live blocks around. */
static void bad_frees(const char *kind)
{
    uint64_t rng = seed ^ 0xbad;
    unsigned char *mem;
    struct model m;
    if (!bad_heap(kind, &mem, &m, &rng))
        return;
    for (int i = 0; i < 20; i++)
        model_bad_frees(&m, &rng);
    model_checkpoint(&m);
    model_drain(&m, &rng);
    model_fini(&m);
    munmap(mem, BAD_SPAN);
}

TEST_CASE_IN("bad", "bad frees of every sort are refused, with live blocks around")
{
    each_kind("bad", bad_frees);
}

/* realloc(NULL, n) is alloc(n); usable_size of NULL or foreign is 0. */
static void bad_realloc_null(const char *kind)
{
    uint64_t rng = seed ^ 0xbad;
    unsigned char *mem;
    struct model m;
    struct rtm_heap *h = bad_heap(kind, &mem, &m, &rng);
    if (!h)
        return;
    model_drain(&m, &rng);
    struct rtm_heap_stats s0, st;
    rtm_heap_stats(h, &s0);
    void *r = rtm_heap_realloc(h, NULL, 300);
    CHECK(r != NULL);
    if (r) {
        CHECK(rtm_heap_usable_size(h, r) >= 300);
        rtm_heap_stats(h, &st);
        CHECK_EQ(st.live_blocks, s0.live_blocks + 1);
        CHECK_EQ(rtm_heap_free(h, r), 0);
    }
    int local;
    CHECK_EQ(rtm_heap_usable_size(h, NULL), 0);
    CHECK_EQ(rtm_heap_usable_size(h, &local), 0);
    CHECK_EQ(rtm_heap_usable_size(NULL, &local), 0);
    model_fini(&m);
    munmap(mem, BAD_SPAN);
}

TEST_CASE_IN("bad", "realloc of NULL is alloc, and a NULL or foreign block has no usable size")
{
    each_kind("bad", bad_realloc_null);
}

/* A NULL or destroyed heap is refused everywhere, without a crash. */
static void bad_heap_gone(const char *kind)
{
    uint64_t rng = seed ^ 0xbad;
    unsigned char *mem;
    struct model m;
    struct rtm_heap *h = bad_heap(kind, &mem, &m, &rng);
    if (!h)
        return;
    model_drain(&m, &rng);
    struct rtm_heap_stats st;
    CHECK(rtm_heap_alloc(NULL, 16) == NULL);
    CHECK_EQ(rtm_heap_free(NULL, mem), -EINVAL);
    CHECK_EQ(rtm_heap_check(NULL), -EINVAL);
    CHECK_EQ(rtm_heap_stats(NULL, &st), -EINVAL);
    CHECK_EQ(rtm_heap_stats(h, NULL), -EINVAL);
    CHECK_EQ(rtm_heap_free(h, NULL), 0);
    void *live = rtm_heap_alloc(h, 64);
    CHECK(live != NULL);
    rtm_heap_destroy(h);
    CHECK(rtm_heap_alloc(h, 16) == NULL);
    CHECK_EQ(rtm_heap_free(h, live), -EINVAL);
    CHECK_EQ(rtm_heap_check(h), -EINVAL);
    CHECK(rtm_heap_kind(h) == NULL);
    rtm_heap_destroy(NULL);
    model_fini(&m);
    munmap(mem, BAD_SPAN);
}

TEST_CASE_IN("bad", "a NULL or destroyed heap is refused everywhere, without a crash")
{
    each_kind("bad", bad_heap_gone);
}

/* ---- big: pools above 4 GiB, and pools larger than a kind supports ------------- */

#if SIZE_MAX > 0xffffffffu
static void big_above_4g(const char *kind)
{
    size_t size = (size_t)5 << 30; /* reserved, not touched: only headers are written */
    /* 4.5 GiB, or for a power-of-two kind the largest it cuts from 5 GiB
     * (4 GiB less its header): either way the small block after it lies
     * above 4 GiB */
    size_t want = power_of_two_kind(kind) ? ((size_t)4 << 30) - 64 : (size_t)9 << 29;
    if (page_kind(kind)) /* a page's block: no offset above 4 GiB until the pages below are held */
        want = page_max_request(kind);
    unsigned char *mem = map_bytes(size);
    if (!mem) {
        printf("  [%s] big: cannot reserve 5 GiB, skipped\n", kind);
        return;
    }
    struct rtm_heap *h = create(kind, mem, size);
    REQUIRE(h != NULL, );
    struct rtm_heap_stats st;
    rtm_heap_stats(h, &st);
    CHECK_EQ(st.usable_bytes + st.overhead_bytes, size);
    CHECK(st.usable_bytes > ((size_t)4 << 30));
    CHECK(st.largest_free_bytes >= want);
    unsigned char *big = rtm_heap_alloc(h, want);
    CHECK(big != NULL);
    unsigned char *small = rtm_heap_alloc(h, 100);
    CHECK(small != NULL);
    if (big) {
        big[0] = 1;
        big[want - 1] = 2;
        CHECK(rtm_heap_usable_size(h, big) >= want);
    }
    CHECK_EQ(rtm_heap_check(h), 0);
    CHECK_EQ(rtm_heap_free(h, big), 0);
    CHECK_EQ(rtm_heap_free(h, small), 0);
    rtm_heap_stats(h, &st);
    CHECK_EQ(st.used_bytes, 0);
    CHECK_EQ(rtm_heap_check(h), 0);
    munmap(mem, size);
}

/* 2 TiB of address space: used whole, or refused with E2BIG. Never
 * silently truncated. (Not under an emulator: qemu-user keeps its own
 * record of every page of a guest mapping, and terabytes of them exhaust
 * its memory.) */
static void big_2t(const char *kind)
{
    if (test_emulated()) {
        printf("  [%s] big: 2 TiB of address space not tried under %s\n", kind, test_emulated());
        return;
    }
    size_t size = (size_t)2 << 40;
    unsigned char *mem = map_bytes(size);
    if (!mem) {
        printf("  [%s] big: cannot reserve 2 TiB of address space, skipped\n", kind);
        return;
    }
    struct rtm_heap_stats st;
    errno = 0;
    struct rtm_heap *h = create(kind, mem, size);
    if (h) {
        rtm_heap_stats(h, &st);
        CHECK_EQ(st.usable_bytes + st.overhead_bytes, size);
        CHECK(st.overhead_bytes <= size / 16); /* bookkeeping, not the pool */
        CHECK_EQ(rtm_heap_check(h), 0);
    } else {
        /* The way out the error points to: the same memory as several pools. */
        CHECK_EQ(errno, E2BIG);
        size_t quarter = size / 4;
        h = create(kind, mem, quarter);
        CHECK(h != NULL);
        for (int i = 1; h && i < 4; i++)
            CHECK_EQ(rtm_heap_add_pool(h, mem + (size_t)i * quarter, quarter), 0);
        if (h) {
            rtm_heap_stats(h, &st);
            CHECK_EQ(st.usable_bytes + st.overhead_bytes, size);
            CHECK_EQ(st.pool_count, 4);
            CHECK_EQ(rtm_heap_check(h), 0);
        }
    }
    munmap(mem, size);
}
#else
/* A 32-bit address space holds no pool above 4 GiB. */
static void big_above_4g(const char *kind)
{
    (void)kind;
}
static void big_2t(const char *kind)
{
    (void)kind;
}
#endif

TEST_CASE_IN("big",
             "a pool of 5 GiB holds a block of 4.5 GiB (4 GiB: halffit; a page: xvheap, zsheap)")
{
    each_kind("big", big_above_4g);
}

TEST_CASE_IN("big", "2 TiB of address space is used whole, or refused with E2BIG and pooled")
{
    each_kind("big", big_2t);
}

/* ---- relocate: a heap image works at another address ----------------------- */

/* Moves the image, wipes the original, and goes on at the new address. */
static void relocated(const char *kind)
{
    uint64_t rng = seed ^ 0x4e10c;
    size_t span = 512u << 10;
    unsigned char *a = map_bytes(span), *b = map_bytes(span);
    REQUIRE(a && b, );
    garbage(a, span, &rng);
    struct rtm_heap *h = create(kind, a, span);
    REQUIRE(h != NULL, );
    struct model m;
    model_init(&m, h, a, span, span);
    model_run(&m, &rng, 20000, 0);
    CHECK_EQ(rtm_heap_check(h), 0);
    memcpy(b, a, span);
    memset(a, 0xee, span);
    ptrdiff_t delta = b - a;
    m.h = (struct rtm_heap *)(void *)((unsigned char *)h + delta);
    m.lo = b;
    for (size_t i = 0; i < m.n; i++)
        m.blocks[i].p += delta;
    model_checkpoint(&m);
    model_run(&m, &rng, 20000, 5000);
    model_drain(&m, &rng);
    model_fini(&m);
    munmap(a, span);
    munmap(b, span);
}

TEST_CASE_IN("relocate", "a heap image copied elsewhere works at its new address")
{
    each_kind("relocate", relocated);
}

/* ---- driver ----------------------------------------------------------------------- */

static const char *const sections[] = { "model", "fill", "pools", "bad", "big", "relocate" };
#define N_SECTIONS (sizeof(sections) / sizeof(sections[0]))

static void usage(FILE *f)
{
    fprintf(f, "usage: conformance [--seed N] [--ops N] [--quick] [--kind NAME] "
               "[--lock pi|robust] [SECTION...]\n"
               "sections: model fill pools bad big relocate (default: all)\n"
               "--ops N: model operations per configuration (two per kind; default 500000)\n"
               "--quick: fill fewer sizes (each power of two and one between, 10 random)\n"
               "--lock: every heap created with that lock (default none)\n");
}

/* Parses the options into the globals above, then runs the sections named
 * (each a group of the cases above), or all of them. */
int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "seed", required_argument, NULL, 's' },
        { "ops", required_argument, NULL, 'o' },
        { "kind", required_argument, NULL, 'k' },
        { "lock", required_argument, NULL, 'l' },
        { "quick", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 's': seed = strtoull(optarg, NULL, 0); break;
        case 'o': model_ops = strtoul(optarg, NULL, 0); break;
        case 'q': quick = true; break;
        case 'k': only_kind = optarg; break;
        case 'l':
            if (strcmp(optarg, "pi") == 0)
                lock = RTM_HEAP_LOCK_PI;
            else if (strcmp(optarg, "robust") == 0)
                lock = RTM_HEAP_LOCK_ROBUST_SHARED;
            else {
                usage(stderr);
                return 2;
            }
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    for (int i = optind; i < argc; i++) {
        bool known = false;
        for (size_t s = 0; s < N_SECTIONS; s++)
            known |= strcmp(argv[i], sections[s]) == 0;
        if (!known) {
            fprintf(stderr, "conformance: unknown section '%s'\n", argv[i]);
            return 2;
        }
    }
    int nkinds = 0;
    for (const char *const *k = rtm_heap_kinds(); *k; k++)
        nkinds += !only_kind || strcmp(only_kind, *k) == 0;
    if (nkinds == 0) {
        fprintf(stderr, "conformance: no kind to test\n");
        return 2;
    }
    printf("conformance: seed %#llx (replay with --seed %#llx)%s\n", (unsigned long long)seed,
           (unsigned long long)seed,
           lock == RTM_HEAP_LOCK_PI              ? ", heaps locked (pi)"
           : lock == RTM_HEAP_LOCK_ROBUST_SHARED ? ", heaps locked (robust)"
                                                 : "");
    if (optind == argc)
        return test_main(1, argv, "conformance"); /* every section */
    int rc = 0;
    for (int i = optind; i < argc; i++) {
        char *one[] = { argv[0], argv[i], NULL };
        int r = test_main(2, one, "conformance");
        rc = r > rc ? r : rc;
    }
    return rc;
}
