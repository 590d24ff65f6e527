/*
 * rtm_heap_pool_bound and rtm_heap_pool_bound_ex (rtmem/heap.h): their
 * errors; the figure's shape (more limits never give less memory); and the
 * guarantee itself on every kind, at the bound's region placed at every
 * alignment: a fill of the largest count the limits allow, and random
 * sequences within the limits (sizes, alignments, resizes, frees), locked
 * heaps too, where no allocation may fail. The adversaries built to break
 * it run in tests/tools/test_size.py (rtmem size --adversaries).
 *
 *   bound_test [GROUP]
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "rtmem/rtmem.h"

static const char *const kinds[] = { "tlsf", "heapmem", "xnheap", "halffit", "xvheap", "zsheap" };
#define N_KINDS (sizeof(kinds) / sizeof(kinds[0]))

/* Whether the kind never serves a request of n bytes aligned to a: xvheap
 * above a page's block (its alignment's slack counted), zsheap above a page
 * (n rounded up to the alignment), where the bound is refused with E2BIG. */
static bool never_served(const char *kind, size_t n, size_t a)
{
    if (strcmp(kind, "zsheap") == 0)
        return a > RTM_ZSHEAP_PAGE_SIZE ||
               (a > 16 ? (n + a - 1) & ~(a - 1) : n) > RTM_ZSHEAP_MAX_REQUEST;
    if (strcmp(kind, "xvheap") != 0)
        return false;
    size_t slack = a > RTM_TLSF_GRANULE ? a + RTM_TLSF_MIN_BLOCK - RTM_TLSF_GRANULE : 0;
    size_t span = rtm_xvheap_max_request(RTM_XVHEAP_PAGE_SIZE) + RTM_TLSF_HEADER_BYTES;
    return a > span || rtm_tlsf_block_cost(n) > span - slack;
}

static size_t bound(const char *kind, size_t M, size_t n, size_t m, size_t a, int lock)
{
    struct rtm_heap_limits l = {
        .max_live = M, .max_block = n, .min_block = m, .max_align = a, .lock = lock
    };
    return rtm_heap_pool_bound_ex(kind, &l);
}

static void expect_error(size_t got, int err)
{
    CHECK_EQ(got, 0);
    CHECK_EQ(errno, err);
}

TEST_CASE_IN("errors", "bad arguments are refused with the errno heap.h names")
{
    struct rtm_heap_limits ok = { .max_live = 4096, .max_block = 256 };
    errno = 0;
    expect_error(rtm_heap_pool_bound(NULL, 4096, 256), EINVAL);
    expect_error(rtm_heap_pool_bound("nope", 4096, 256), ENOENT);
    expect_error(rtm_heap_pool_bound("tlsf", 0, 256), EINVAL);
    expect_error(rtm_heap_pool_bound("tlsf", 4096, 0), EINVAL);
    expect_error(rtm_heap_pool_bound_ex("tlsf", NULL), EINVAL);
    expect_error(bound("tlsf", 4096, 256, 257, 0, 0), EINVAL);    /* m > n */
    expect_error(bound("tlsf", 4096, 256, 1, 48, 0), EINVAL);     /* not a power of two */
    expect_error(bound("tlsf", 4096, 256, 1, 0, 7), EINVAL);      /* no such lock */
    expect_error(bound("heapmem", 100, 8192, 200, 0, 0), EINVAL); /* m above M */
    CHECK(rtm_heap_pool_bound_ex("tlsf", &ok) != 0);
    for (size_t k = 0; k < N_KINDS; k++) {
        test_context = kinds[k];
        /* figures beyond the address space */
        errno = 0;
        size_t huge = rtm_heap_pool_bound(kinds[k], SIZE_MAX / 4, SIZE_MAX / 8);
        CHECK_EQ(huge, 0);
        CHECK(errno == EOVERFLOW || errno == E2BIG);
        errno = 0;
        huge = rtm_heap_pool_bound(kinds[k], (size_t)1 << (sizeof(size_t) == 8 ? 40 : 24),
                                   (size_t)1 << 20);
        CHECK_EQ(huge, 0);
        CHECK(errno == EOVERFLOW || errno == E2BIG);
        /* near the largest pool a kind takes in one piece: refused, never a
         * size create would refuse (alignment trims and a lock's rounding
         * can make the pool a little larger than the figure) */
        if (sizeof(size_t) == 8) {
            /* shifts counted at run time: a 32-bit build compiles this too */
            unsigned wide = (unsigned)sizeof(size_t) * 4; /* 32 here */
            size_t big = (size_t)1 << (k == 0 ? wide + 7 : wide + 8);
            errno = 0;
            CHECK_EQ(bound(kinds[k], 2 * big - 24, big - 8, big - 8, 0, 0), 0);
            CHECK_EQ(errno, E2BIG);
            errno = 0;
            size_t pages = ((size_t)1 << wide) - 3;
            CHECK_EQ(bound(kinds[k], 256 + 512 * pages, 256, 256, 0, RTM_HEAP_LOCK_PI), 0);
            CHECK_EQ(errno, E2BIG);
        }
        /* the three-argument call is the extended one assuming the worst */
        CHECK_EQ(rtm_heap_pool_bound(kinds[k], 4096, 300), bound(kinds[k], 4096, 300, 0, 0, 0));
        CHECK_EQ(rtm_heap_pool_bound(kinds[k], 4096, 300), bound(kinds[k], 4096, 300, 1, 16, 0));
        /* a block above M counts as M */
        CHECK_EQ(rtm_heap_pool_bound(kinds[k], 4096, 1 << 20),
                 rtm_heap_pool_bound(kinds[k], 4096, 4096));
    }
    test_context = NULL;
}

/* The bound, or SIZE_MAX where there is none because the figure passes
 * what a size_t or the kind's largest pool holds (a 32-bit target meets
 * that within these limits): "more" then still holds. */
static size_t bound_or_max(const char *kind, size_t M, size_t n, size_t m, size_t a, int lock)
{
    errno = 0;
    size_t b = bound(kind, M, n, m, a, lock);
    if (b)
        return b;
    CHECK(errno == EOVERFLOW || errno == E2BIG);
    return SIZE_MAX;
}

TEST_CASE_IN("shape", "more live bytes, larger blocks, smaller minimum, a PI lock: never less")
{
    uint64_t rng = 0xb0d5eedull;
    for (size_t k = 0; k < N_KINDS; k++) {
        test_context = kinds[k];
        for (int i = 0; i < 2000; i++) {
            size_t M = (size_t)rng_range(&rng, 1, 1 << 20);
            size_t n = (size_t)rng_range(&rng, 1, M);
            size_t m = (size_t)rng_range(&rng, 1, n);
            size_t a = (size_t)1 << rng_range(&rng, 0, 13);
            size_t b = bound_or_max(kinds[k], M, n, m, a, 0);
            /* on 64-bit, always a figure (but for a request a kind never serves) */
            CHECK(sizeof(size_t) < 8 || b != SIZE_MAX || never_served(kinds[k], n, a));
            if (b == SIZE_MAX)
                continue;
            size_t more = (size_t)rng_range(&rng, 1, 4096);
            CHECK(bound_or_max(kinds[k], M + more, n, m, a, 0) >= b);
            if (n < M)
                CHECK(bound_or_max(kinds[k], M, n + 1, m, a, 0) >= b);
            if (m > 1)
                CHECK(bound_or_max(kinds[k], M, n, m - 1, a, 0) >= b);
            CHECK(bound_or_max(kinds[k], M, n, m, a * 2, 0) >= b);
            size_t pi = bound_or_max(kinds[k], M, n, m, a, RTM_HEAP_LOCK_PI);
            CHECK(pi == SIZE_MAX || pi >= b + RTM_HEAP_LOCK_AREA_BYTES);
            /* a robust heap's records (16 bytes a block) can move requests
             * from a page heap's buckets to its runs: only its log is sure */
            CHECK(bound_or_max(kinds[k], M, n, m, a, RTM_HEAP_LOCK_ROBUST_SHARED) >
                  rtm_heap_lock_bytes(kinds[k], RTM_HEAP_LOCK_ROBUST_SHARED, 4096));
        }
    }
    test_context = NULL;
}

/* The region for the bound at every offset 0..63 from a page: reserved,
 * never prefaulted (only what a heap touches is backed). */
static char *region_for(size_t bytes)
{
    void *p = mmap(NULL, bytes + 64, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void region_free(char *p, size_t bytes)
{
    munmap(p, bytes + 64);
}

TEST_CASE_IN("fill", "a heap at the bound holds max_live / size blocks of one size, at any address")
{
    static const size_t sizes[] = { 1, 16, 24, 100, 256, 257, 700, 1024, 4000, 9000 };
    for (size_t k = 0; k < N_KINDS; k++) {
        test_context = kinds[k];
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            size_t M = sizes[s] * 37, n = sizes[s];
            errno = 0;
            size_t b = bound(kinds[k], M, n, n, 0, 0);
            if (never_served(kinds[k], n, 0)) {
                CHECK(b == 0 && errno == E2BIG);
                continue;
            }
            REQUIRE(b != 0, );
            /* one size only: the bound stays near what the blocks take */
            if (k == 0)
                CHECK(b <= RTM_TLSF_CONTROL_BYTES + 64 + 3 * 37 * rtm_tlsf_block_cost(n));
            char *mem = region_for(b);
            REQUIRE(mem, );
            void **blocks = calloc(37, sizeof(*blocks));
            for (size_t off = 0; off < 64; off++) {
                struct rtm_heap *h = rtm_heap_create(kinds[k], mem + off, b);
                REQUIRE(h, );
                size_t got = 0;
                for (size_t i = 0; i < 37; i++)
                    got += (blocks[i] = rtm_heap_alloc(h, n)) != NULL;
                CHECK_EQ(got, 37);
                for (size_t i = 0; i < 37; i++)
                    CHECK(rtm_heap_usable_size(h, blocks[i]) >= n);
                CHECK_EQ(rtm_heap_check(h), 0);
                rtm_heap_destroy(h);
            }
            free(blocks);
            region_free(mem, b);
        }
    }
    test_context = NULL;
}

/* A random sequence within the limits on a heap at the bound: returns the
 * allocations that failed (there must be none). */
static unsigned long random_within(struct rtm_heap *h, size_t M, size_t n, size_t m, size_t a,
                                   uint64_t *rng, unsigned steps)
{
    enum { SLOTS = 4096 };
    static void *ptr[SLOTS];
    static size_t req[SLOTS];
    size_t count = 0, live = 0;
    unsigned long failed = 0;
    for (unsigned i = 0; i < steps; i++) {
        size_t size = (size_t)rng_range(rng, m, n);
        unsigned what = (unsigned)rng_range(rng, 0, 9);
        if (what < 2 && count > 0) {
            size_t j = (size_t)rng_range(rng, 0, count - 1);
            if (size <= M - live) { /* the old block counted beside the new one */
                void *q = rtm_heap_realloc(h, ptr[j], size);
                if (!q) {
                    failed++;
                    continue;
                }
                live = live - req[j] + size;
                ptr[j] = q;
                req[j] = size;
                continue;
            }
        }
        if (what < 6 && count < SLOTS && size <= M - live) {
            size_t al =
                a > 16 && what == 5 ? (size_t)1 << rng_range(rng, 4, 63 - __builtin_clzll(a)) : 0;
            void *p = al ? rtm_heap_aligned_alloc(h, al, size) : rtm_heap_alloc(h, size);
            if (!p) {
                failed++;
                continue;
            }
            CHECK(!al || ((uintptr_t)p & (al - 1)) == 0);
            ptr[count] = p;
            req[count++] = size;
            live += size;
            continue;
        }
        if (count == 0)
            continue;
        size_t j = (size_t)rng_range(rng, 0, count - 1);
        CHECK_EQ(rtm_heap_free(h, ptr[j]), 0);
        live -= req[j];
        ptr[j] = ptr[--count];
        req[j] = req[count];
    }
    while (count)
        rtm_heap_free(h, ptr[--count]);
    return failed;
}

static void random_case(int lock)
{
    static const size_t limits[][4] = {
        /* M, n, m, max_align */
        { 4096, 1024, 1, 0 }, { 16384, 256, 1, 64 },      { 65536, 4096, 16, 0 },
        { 8192, 8192, 2, 0 }, { 65536, 9000, 300, 4096 }, { 8192, 600, 200, 1024 },
    };
    uint64_t rng = 0x51eedb0dull + (uint64_t)lock;
    for (size_t k = 0; k < N_KINDS; k++) {
        test_context = kinds[k];
        for (size_t c = 0; c < sizeof(limits) / sizeof(limits[0]); c++) {
            const size_t *L = limits[c];
            errno = 0;
            size_t b = bound(kinds[k], L[0], L[1], L[2], L[3], lock);
            /* a robust heap's blocks carry a 16-byte owner record (rtmem/lock.h) */
            size_t rec = lock == RTM_HEAP_LOCK_ROBUST_SHARED ? 16 : 0;
            if (never_served(kinds[k], L[1] + rec, L[3])) {
                CHECK(b == 0 && errno == E2BIG);
                continue;
            }
            REQUIRE(b != 0, );
            char *mem = region_for(b);
            REQUIRE(mem, );
            for (size_t off = 0; off < 64; off += 7) {
                struct rtm_heap_config cfg = { .lock = lock };
                struct rtm_heap *h = rtm_heap_create_ex(kinds[k], mem + off, b, &cfg);
                REQUIRE(h, );
                CHECK_EQ(random_within(h, L[0], L[1], L[2], L[3], &rng, 6000), 0);
                struct rtm_heap_stats st;
                CHECK_EQ(rtm_heap_stats(h, &st), 0);
                CHECK_EQ(st.failed_allocs, 0);
                CHECK_EQ(st.live_blocks, 0);
                CHECK_EQ(rtm_heap_check(h), 0);
                rtm_heap_destroy(h);
            }
            region_free(mem, b);
        }
    }
    test_context = NULL;
}

TEST_CASE_IN("random", "random sequences within the limits never fail at the bound")
{
    random_case(RTM_HEAP_LOCK_NONE);
}

TEST_CASE_IN("locked", "the same on heaps with a PI lock and with a robust shared lock")
{
    random_case(RTM_HEAP_LOCK_PI);
    random_case(RTM_HEAP_LOCK_ROBUST_SHARED);
    /* A larger region never holds less: a robust heap's undo log grows
     * with its memory, and the bound reserves the log of twice its size.
     * 23 blocks of 240 bytes fill a region of exactly the bound, and every
     * larger one up to 4 KiB more, at two addresses. */
    int locks[] = { RTM_HEAP_LOCK_PI, RTM_HEAP_LOCK_ROBUST_SHARED };
    for (size_t k = 0; k < N_KINDS; k++) {
        test_context = kinds[k];
        for (size_t l = 0; l < 2; l++) {
            size_t b = bound(kinds[k], 240 * 23, 240, 240, 0, locks[l]);
            char *mem = region_for(b + 4096 + 200);
            REQUIRE(mem, );
            for (size_t extra = 0; extra <= 4096; extra += 51)
                for (size_t off = 0; off < 200; off += 129) {
                    struct rtm_heap_config cfg = { .lock = locks[l] };
                    struct rtm_heap *h = rtm_heap_create_ex(kinds[k], mem + off, b + extra, &cfg);
                    REQUIRE(h, );
                    size_t got = 0;
                    for (int i = 0; i < 23; i++)
                        got += rtm_heap_alloc(h, 240) != NULL;
                    CHECK_EQ(got, 23);
                    rtm_heap_destroy(h);
                }
            region_free(mem, b + 4096 + 200);
        }
    }
    test_context = NULL;
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, "bound");
}
