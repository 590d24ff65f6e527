/*
 * TLSF-specific promises, beyond the common contract: the exact figures its
 * header documents (block cost, usable size, fill count, largest_free_bytes),
 * in-place realloc, aligned allocation without waste, merging with both
 * neighbours, and the typed API agreeing with the generic one.
 */
#include <errno.h>
#include <sys/mman.h>

#include "check.h"
#include "rtmem/tlsf.h"

static unsigned char arena[1u << 20] __attribute__((aligned(64)));

static size_t cost_of(size_t n) /* as documented in rtmem/tlsf.h */
{
    size_t s = (n + RTM_TLSF_HEADER_BYTES + 15) & ~(size_t)15;
    return s < RTM_TLSF_MIN_BLOCK ? RTM_TLSF_MIN_BLOCK : s;
}

static struct rtm_heap_stats stats(const struct rtm_tlsf *t)
{
    struct rtm_heap_stats st;
    rtm_tlsf_stats(t, &st);
    return st;
}

TEST_CASE("sizes")
{
    test_context = "sizes";
    struct rtm_tlsf *t = rtm_tlsf_create(arena, sizeof(arena));
    REQUIRE(t != NULL, );
    for (size_t n = 0; n <= 5000; n++) {
        CHECK_EQ(rtm_tlsf_block_cost(n), cost_of(n));
        size_t before = stats(t).used_bytes;
        void *p = rtm_tlsf_alloc(t, n);
        REQUIRE(p != NULL, );
        CHECK_EQ(rtm_tlsf_usable_size(t, p), cost_of(n) - RTM_TLSF_HEADER_BYTES);
        CHECK(rtm_tlsf_usable_size(t, p) - n <= 23 || n < 24);
        CHECK_EQ(stats(t).used_bytes - before, cost_of(n)); /* one word of header */
        CHECK_EQ(rtm_tlsf_free(t, p), 0);
    }
    CHECK_EQ(rtm_tlsf_block_cost(SIZE_MAX), 0);
    CHECK_EQ(rtm_tlsf_block_cost(RTM_TLSF_MAX_REQUEST + 1), 0);
    CHECK_EQ(rtm_tlsf_block_cost(RTM_TLSF_MAX_REQUEST), RTM_TLSF_MAX_BLOCK);
    CHECK_EQ(rtm_tlsf_check(t), 0);
}

/* A fresh one-pool heap holds exactly floor(usable / cost) blocks. */
TEST_CASE("exact fill")
{
    test_context = "exact-fill";
    for (size_t n = 1; n <= 70000; n = n * 3 / 2 + 1) {
        struct rtm_tlsf *t = rtm_tlsf_create(arena, sizeof(arena));
        REQUIRE(t != NULL, );
        size_t count = 0;
        while (rtm_tlsf_alloc(t, n))
            count++;
        struct rtm_heap_stats st = stats(t);
        CHECK_EQ(count, st.usable_bytes / cost_of(n));
        CHECK_EQ(count, rtm_heap_fill_count(rtm_tlsf_heap(t), n));
        CHECK_EQ(st.failed_allocs, 1);
    }
}

/* largest_free_bytes is exact: that request succeeds, one byte more fails. */
TEST_CASE("exact largest")
{
    test_context = "exact-largest";
    struct rtm_tlsf *t = rtm_tlsf_create(arena, sizeof(arena));
    REQUIRE(t != NULL, );
    struct rtm_heap_stats st = stats(t);
    CHECK_EQ(st.largest_free_bytes, st.usable_bytes - RTM_TLSF_HEADER_BYTES);
    uint64_t rng = 42;
    void *live[512] = { 0 };
    for (int step = 0; step < 20000; step++) {
        size_t i = rng_next(&rng) % 512;
        if (live[i]) {
            CHECK_EQ(rtm_tlsf_free(t, live[i]), 0);
            live[i] = NULL;
        } else {
            live[i] = rtm_tlsf_alloc(t, (size_t)rng_range(&rng, 1, 8000));
        }
        if (step % 97 == 0) {
            size_t largest = stats(t).largest_free_bytes;
            if (largest == 0)
                continue;
            void *too_big = rtm_tlsf_alloc(t, largest + 1);
            CHECK(too_big == NULL);
            if (too_big)
                rtm_tlsf_free(t, too_big);
            void *p = rtm_tlsf_alloc(t, largest);
            CHECK(p != NULL);
            if (p)
                rtm_tlsf_free(t, p);
        }
    }
    for (size_t i = 0; i < 512; i++)
        if (live[i])
            rtm_tlsf_free(t, live[i]);
    CHECK_EQ(stats(t).largest_free_bytes, st.largest_free_bytes);
    CHECK_EQ(rtm_tlsf_check(t), 0);
}

TEST_CASE("realloc in place")
{
    test_context = "realloc";
    struct rtm_tlsf *t = rtm_tlsf_create(arena, sizeof(arena));
    REQUIRE(t != NULL, );
    unsigned char *a = rtm_tlsf_alloc(t, 100);
    unsigned char *b = rtm_tlsf_alloc(t, 1000);
    unsigned char *c = rtm_tlsf_alloc(t, 100);
    REQUIRE(a && b && c, );
    memset(a, 0x5a, 100);
    /* Neighbour used: growing moves, contents kept. */
    unsigned char *a2 = rtm_tlsf_realloc(t, a, 300);
    REQUIRE(a2 != NULL, );
    CHECK(a2 != a);
    for (int i = 0; i < 100; i++)
        CHECK(a2[i] == 0x5a);
    /* b's successor is c (used); freeing the old a made b's predecessor free.
     * Shrinking b in place returns the tail as a free block. */
    size_t free_before = stats(t).free_bytes;
    CHECK(rtm_tlsf_realloc(t, b, 200) == b);
    CHECK_EQ(stats(t).free_bytes - free_before, cost_of(1000) - cost_of(200));
    /* Growing b back fits in the tail it just gave up: in place. */
    memset(b, 0x77, 200);
    CHECK(rtm_tlsf_realloc(t, b, 900) == b);
    for (int i = 0; i < 200; i++)
        CHECK(b[i] == 0x77);
    CHECK_EQ(rtm_tlsf_usable_size(t, b), cost_of(900) - RTM_TLSF_HEADER_BYTES);
    /* A smaller request of the same block size keeps the block as it is. */
    size_t used = stats(t).used_bytes;
    CHECK_EQ(cost_of(897), cost_of(900));
    CHECK(rtm_tlsf_realloc(t, b, 897) == b);
    CHECK_EQ(stats(t).used_bytes, used);
    CHECK_EQ(rtm_tlsf_check(t), 0);
    rtm_tlsf_free(t, a2);
    rtm_tlsf_free(t, b);
    rtm_tlsf_free(t, c);
    CHECK_EQ(stats(t).used_bytes, 0);
    /* In a fresh heap, the first block grows in place into the rest of the
     * pool, up to all of it. */
    unsigned char *first = rtm_tlsf_alloc(t, 64);
    REQUIRE(first != NULL, );
    CHECK(rtm_tlsf_realloc(t, first, 100000) == first);
    size_t all = stats(t).usable_bytes - RTM_TLSF_HEADER_BYTES;
    CHECK(rtm_tlsf_realloc(t, first, all) == first);
    CHECK(rtm_tlsf_realloc(t, first, all + 1) == NULL);
    CHECK_EQ(rtm_tlsf_free(t, first), 0);
    CHECK_EQ(stats(t).used_bytes, 0);
    CHECK_EQ(rtm_tlsf_check(t), 0);
}

/* The front gap of an aligned block goes back to the free lists: used bytes
 * grow by the block's cost only. */
TEST_CASE("aligned no waste")
{
    test_context = "aligned";
    for (size_t align = 16; align <= 65536; align *= 2) {
        struct rtm_tlsf *t = rtm_tlsf_create(arena + 8, sizeof(arena) - 8);
        REQUIRE(t != NULL, );
        size_t count = (256u << 10) / align < 20 ? (256u << 10) / align : 20;
        for (size_t i = 0; i < count; i++) {
            size_t n = 40 + i * 13;
            size_t used = stats(t).used_bytes;
            void *p = rtm_tlsf_aligned_alloc(t, align, n);
            REQUIRE(p != NULL, );
            CHECK((uintptr_t)p % align == 0);
            CHECK_EQ(stats(t).used_bytes - used, cost_of(n));
        }
        CHECK_EQ(rtm_tlsf_check(t), 0);
        /* A full heap still serves an aligned request that fits exactly:
         * the search needs at most alignment + 16 bytes of slack. */
        struct rtm_heap_stats st = stats(t);
        CHECK(rtm_tlsf_aligned_alloc(t, align, st.largest_free_bytes - align - 16) != NULL);
    }
}

TEST_CASE("merge both neighbours")
{
    test_context = "merge";
    struct rtm_tlsf *t = rtm_tlsf_create(arena, sizeof(arena));
    REQUIRE(t != NULL, );
    void *p[5];
    for (int i = 0; i < 5; i++)
        p[i] = rtm_tlsf_alloc(t, 1000);
    size_t largest = stats(t).largest_free_bytes;
    rtm_tlsf_free(t, p[1]);
    rtm_tlsf_free(t, p[3]);
    CHECK_EQ(stats(t).largest_free_bytes, largest); /* the tail is bigger */
    rtm_tlsf_free(t, p[2]);                         /* joins 1, 2 and 3 */
    CHECK_EQ(rtm_tlsf_check(t), 0);
    /* Good fit rounds a request up to the next class boundary: ask for one
     * class below the merged block's size, so only that block can serve it. */
    void *q = rtm_tlsf_alloc(t, 3 * cost_of(1000) - RTM_TLSF_HEADER_BYTES - 64);
    CHECK(q == p[1]);
    rtm_tlsf_free(t, q);
    rtm_tlsf_free(t, p[0]);
    rtm_tlsf_free(t, p[4]);
    CHECK_EQ(stats(t).largest_free_bytes, stats(t).usable_bytes - RTM_TLSF_HEADER_BYTES);
}

/* The same operations through the typed and the generic API give the same
 * heap. */
TEST_CASE("typed matches generic")
{
    test_context = "typed";
    static unsigned char other[sizeof(arena)] __attribute__((aligned(64)));
    struct rtm_tlsf *t = rtm_tlsf_create(arena, sizeof(arena));
    struct rtm_heap *h = rtm_heap_create("tlsf", other, sizeof(other));
    REQUIRE(t && h, );
    CHECK(rtm_tlsf_heap(t) == (struct rtm_heap *)(void *)t);
    uint64_t rng = 7;
    void *a[256] = { 0 }, *b[256] = { 0 };
    for (int step = 0; step < 20000; step++) {
        size_t i = rng_next(&rng) % 256, n = (size_t)rng_range(&rng, 0, 3000);
        if (a[i]) {
            CHECK_EQ(rtm_tlsf_free(t, a[i]), rtm_heap_free(h, b[i]));
            a[i] = b[i] = NULL;
        } else {
            a[i] = rtm_tlsf_alloc(t, n);
            b[i] = rtm_heap_alloc(h, n);
            CHECK(((unsigned char *)a[i] - arena) == ((unsigned char *)b[i] - other));
        }
    }
    struct rtm_heap_stats sa = stats(t), sb;
    rtm_heap_stats(h, &sb);
    CHECK(memcmp(&sa, &sb, sizeof(sa)) == 0);
    /* the typed API refuses a destroyed heap as rtm_heap_* does */
    rtm_heap_destroy(h);
    CHECK_EQ(rtm_tlsf_stats((struct rtm_tlsf *)(void *)h, &sb), -EINVAL);
    CHECK_EQ(rtm_heap_stats(h, &sb), -EINVAL);
}

/* Review finding: a free block's prev link lies at a header position; a
 * stale pointer into free memory must still be refused after the memory was
 * split differently, even over garbage. */
TEST_CASE("stale frees")
{
    test_context = "stale-frees";
    for (int fill = 0; fill < 2; fill++) {
        memset(arena, fill ? 0x41 : 0x00, sizeof(arena));
        struct rtm_tlsf *t = rtm_tlsf_create(arena, sizeof(arena));
        REQUIRE(t != NULL, );
        unsigned char *p0 = rtm_tlsf_alloc(t, 40);
        unsigned char *y = rtm_tlsf_alloc(t, 24);
        REQUIRE(p0 && y, );
        CHECK_EQ(rtm_tlsf_free(t, y), 0);
        CHECK_EQ(rtm_tlsf_free(t, p0), 0);
        void *q = rtm_tlsf_alloc(t, 24); /* re-splits: a free block now starts 16 bytes before y */
        CHECK(q != NULL);
        struct rtm_heap_stats before = stats(t);
        CHECK_EQ(rtm_tlsf_free(t, y), -EINVAL);
        CHECK_EQ(rtm_tlsf_usable_size(t, y), 0);
#if SIZE_MAX > 0xffffffffu /* the 64-bit layout: the prev link at a header position */
        CHECK_EQ(rtm_tlsf_free(t, p0 + 16), -EINVAL); /* lands on a free block's link */
#endif
        struct rtm_heap_stats after = stats(t);
        CHECK(memcmp(&before, &after, sizeof(before)) == 0);
        CHECK_EQ(rtm_tlsf_check(t), 0);
        unsigned char *p = rtm_tlsf_alloc(t, 1000);
        REQUIRE(p != NULL, );
        CHECK_EQ(rtm_tlsf_free(t, p), 0);
        CHECK_EQ(rtm_tlsf_free(t, p), -EINVAL); /* a double free */
#if SIZE_MAX > 0xffffffffu
        /* free(p + 16) right after free(p): the prev link again */
        CHECK_EQ(rtm_tlsf_free(t, p + 16), -EINVAL);
#endif
        CHECK_EQ(rtm_tlsf_check(t), 0);
    }
}

/* Review finding: peak_used_bytes is the highest used_bytes, realloc in
 * place included. */
TEST_CASE("peak exact")
{
    test_context = "peak";
    struct rtm_tlsf *t = rtm_tlsf_create(arena, sizeof(arena));
    REQUIRE(t != NULL, );
    void *p = rtm_tlsf_alloc(t, 64);
    CHECK(rtm_tlsf_realloc(t, p, 100) == p); /* grows into the free rest of the pool */
    CHECK_EQ(stats(t).peak_used_bytes, stats(t).used_bytes);
    rtm_tlsf_free(t, p);
    uint64_t rng = 99;
    void *live[300] = { 0 };
    size_t max_used = stats(t).peak_used_bytes;
    for (int step = 0; step < 30000; step++) {
        size_t i = rng_next(&rng) % 300;
        if (live[i]) {
            rtm_tlsf_free(t, live[i]);
            live[i] = NULL;
        } else {
            live[i] = rtm_tlsf_alloc(t, (size_t)rng_range(&rng, 0, 6000));
        }
        if (stats(t).used_bytes > max_used)
            max_used = stats(t).used_bytes;
    }
    CHECK_EQ(stats(t).peak_used_bytes, max_used);
}

/* Review finding: a remainder too small to stand alone goes with the block;
 * the usable size then exceeds the request by up to 39 bytes, as documented. */
TEST_CASE("absorbed remainder")
{
    test_context = "absorbed";
    struct rtm_tlsf *t = rtm_tlsf_create(arena, sizeof(arena));
    REQUIRE(t != NULL, );
    void *a = rtm_tlsf_alloc(t, 56); /* a 64-byte block */
    void *guard = rtm_tlsf_alloc(t, 16);
    REQUIRE(a && guard, );
    rtm_tlsf_free(t, a);
    size_t used = stats(t).used_bytes;
    void *b = rtm_tlsf_alloc(t, 25);
    CHECK(b == a);
    /* costs 48: 16 bytes left, below the minimum block: absorbed */
    CHECK_EQ(stats(t).used_bytes - used, 64);
    CHECK_EQ(rtm_tlsf_usable_size(t, b), 56);
    CHECK(rtm_tlsf_usable_size(t, b) - 25 <= 39);
    CHECK_EQ(rtm_tlsf_check(t), 0);
}

/* check() finds a corrupted block header (and does not crash). */
TEST_CASE("check finds corruption")
{
    test_context = "corruption";
    struct rtm_tlsf *t = rtm_tlsf_create(arena, sizeof(arena));
    REQUIRE(t != NULL, );
    unsigned char *a = rtm_tlsf_alloc(t, 100), *b = rtm_tlsf_alloc(t, 100);
    REQUIRE(a && b, );
    CHECK_EQ(rtm_tlsf_free(t, a), 0);
    size_t saved, w = sizeof(size_t); /* the header: one word below the payload */
    memcpy(&saved, b - w, w);
    size_t bogus = saved + 32; /* a header claiming a larger block */
    memcpy(b - w, &bogus, w);
    CHECK_EQ(rtm_tlsf_check(t), -EFAULT);
    memcpy(b - w, &saved, w);
    CHECK_EQ(rtm_tlsf_check(t), 0);
    memset(a, 0xff, 24); /* the free block's links */
    CHECK_EQ(rtm_tlsf_check(t), -EFAULT);
}

TEST_CASE("too large pool")
{
    test_context = "e2big";
    if (sizeof(size_t) < 8)
        return;
    if (test_emulated()) { /* qemu-user keeps a record of every guest page */
        printf("tlsf: under %s, a terabyte of address space is left out: E2BIG test skipped\n",
               test_emulated());
        return;
    }
    size_t size = RTM_TLSF_MAX_BLOCK + ((size_t)1 << 30);
    void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) {
        printf("tlsf: cannot reserve %zu bytes of address space; E2BIG test skipped\n", size);
        return;
    }
    errno = 0;
    CHECK(rtm_tlsf_create(mem, size) == NULL);
    CHECK_EQ(errno, E2BIG);
    struct rtm_tlsf *t = rtm_tlsf_create(arena, sizeof(arena));
    REQUIRE(t != NULL, );
    CHECK_EQ(rtm_tlsf_add_pool(t, mem, size), -E2BIG);
    CHECK_EQ(stats(t).pool_count, 1);
    /* The largest pool TLSF takes in one piece works. */
    CHECK_EQ(rtm_tlsf_add_pool(t, mem, RTM_TLSF_MAX_BLOCK), 0);
    CHECK_EQ(rtm_tlsf_check(t), 0);
    munmap(mem, size);
}

/*
 * free's first test covers "a header position of the first pool with room
 * for a block" in one compare; the positions at the edges of a pool (the
 * last block, the 16 bytes before the sentinel, the sentinel, past it, and
 * before the first block) must still be told apart exactly, in the first
 * pool and in an added one (the other path).
 */
static void free_bounds_in(struct rtm_tlsf *t, unsigned char *lo, unsigned char *hi)
{
    /* fill the heap with minimum blocks: the pool's last one ends at its
     * sentinel */
    unsigned char *first = hi, *last = lo, *p;
    while ((p = rtm_tlsf_alloc(t, 1)) != NULL) {
        if (p >= lo && p < hi && p < first)
            first = p;
        if (p >= lo && p < hi && p > last)
            last = p;
    }
    REQUIRE(first < last, );
    unsigned char *end = last + rtm_tlsf_usable_size(t, last); /* the sentinel's header */
    CHECK(end < hi);
    CHECK_EQ(rtm_tlsf_free(t, last), 0); /* the highest block is accepted */
    CHECK(rtm_tlsf_alloc(t, 1) == last);
    struct rtm_heap_stats before = stats(t);
    /* last + 16 lies in the last block: the word before it is the marked
     * next link its memory held when it was free, and reads as one
     * (refused quietly). */
    unsigned char *refused[] = { end - 8,    end + 8,    end + 24,   end + 40, end + 4104,
                                 first - 16, first - 32, first - 48, last + 8, last + 16 };
    size_t n_refused = sizeof(refused) / sizeof(refused[0]);
    for (size_t i = 0; i < n_refused; i++)
        CHECK_EQ(rtm_tlsf_free(t, refused[i]), -EINVAL);
    struct rtm_heap_stats after = stats(t);
    CHECK(memcmp(&before, &after, sizeof(before)) == 0);
    CHECK_EQ(rtm_tlsf_check(t), 0);
    CHECK_EQ(rtm_tlsf_free(t, first), 0); /* the lowest block too */
    CHECK(rtm_tlsf_alloc(t, 1) == first);
    CHECK_EQ(rtm_tlsf_check(t), 0);
}

TEST_CASE("free bounds")
{
    test_context = "free-bounds";
    size_t span = 64u << 10;
    for (size_t trim = 0; trim < 64; trim += 16) { /* the sentinel at varied alignments */
        memset(arena, 0, sizeof(arena));
        struct rtm_tlsf *t = rtm_tlsf_create(arena, span - trim);
        REQUIRE(t != NULL, );
        free_bounds_in(t, arena, arena + span);
        /* a second pool, away from the first: its blocks take the other path */
        unsigned char *mem2 = arena + (512u << 10);
        REQUIRE(rtm_tlsf_add_pool(t, mem2 + trim, span - trim) == 0, );
        free_bounds_in(t, mem2, mem2 + span);
        CHECK_EQ(rtm_tlsf_free(t, NULL), 0);
        CHECK_EQ(rtm_tlsf_check(t), 0);
    }
}

/* ---- hardening: the review's findings, each as the scenario that showed it -- */

static uint64_t corruptions_of(struct rtm_heap *h)
{
    struct rtm_heap_stats st;
    rtm_heap_stats(h, &st);
    return st.corruptions;
}

/* The damage tests below write headers and links where TLSF keeps them:
 * an 8-byte header HDR below each payload (tags in its top bits), then the
 * rest of the block's first granule, which nothing reads, then a free
 * block's links: the next link LINKS bytes from its header, stored with 5
 * added (it lies at a header position), and the prev link a word (LINK)
 * after it, stored with 1 added on 64-bit (where it is a minimum block's
 * footer word) (src/heap/tlsf_core.h). */
#define HDR       ((size_t)8)
#define LINK      sizeof(size_t)
#define LINKS     ((size_t)16)
#define NEXT_MARK ((size_t)5)
#define PREV_MARK ((size_t)(LINK == 8 ? 1 : 0))

/* Writes value v as free block x's next link (x: its payload), marked as
 * TLSF marks it: a stray write (a use after free) that knows the layout. */
static void write_next(unsigned char *x, size_t v)
{
    v += NEXT_MARK;
    memcpy(x - HDR + LINKS, &v, LINK);
}

/* Writes 16 bytes past live block a: its successor's header as it is, then
 * v as a next link is stored (marked), where the links would lie if they
 * were in an overflow's reach: they are not, so this changes nothing. */
static void overflow_keeping_header(struct rtm_heap *h, unsigned char *a, size_t v)
{
    v += NEXT_MARK;
    memcpy(a + rtm_heap_usable_size(h, a) + HDR, &v, LINK);
}

/* A stray write makes a free block's next link point at a list head's
 * pseudo-node. Once accepted, list code wrote through it outside the heap. */
TEST_CASE("link into list heads")
{
    test_context = "link-into-heads";
    struct rtm_heap *h = rtm_heap_create("tlsf", arena, sizeof(arena));
    REQUIRE(h != NULL, );
    unsigned char *a = rtm_heap_alloc(h, 24), *x = rtm_heap_alloc(h, 40);
    rtm_heap_alloc(h, 24);
    unsigned char *f3 = rtm_heap_alloc(h, 40);
    rtm_heap_alloc(h, 24);
    REQUIRE(a && x && f3, );
    CHECK_EQ(rtm_heap_free(h, x), 0);
    /* the list head slot that holds x, marked (the last such word of the
     * control structure, which ends before a's header), and the
     * pseudo-node LINKS bytes before it */
    size_t x_off = (size_t)(x - HDR - (unsigned char *)h), slot = 0;
    size_t control = (size_t)(a - HDR - (unsigned char *)h);
    REQUIRE(control <= RTM_TLSF_CONTROL_BYTES, );
    const size_t *w = (const size_t *)(const void *)h;
    for (size_t i = control / LINK; i-- > 0;)
        if (w[i] == x_off + NEXT_MARK) {
            slot = i * LINK;
            break;
        }
    REQUIRE(slot != 0, );
    size_t y = slot - LINKS;
    overflow_keeping_header(h, a, y); /* an overflow reaches no link: nothing happens */
    write_next(x, y);
    CHECK(rtm_heap_alloc(h, 40) == NULL); /* x's next link is no block: refused */
    CHECK_EQ(corruptions_of(h), 1);
    CHECK_EQ(rtm_heap_free(h, f3), 0);   /* its own list: unaffected */
    CHECK(rtm_heap_check(h) == -EFAULT); /* the damage stays, and is seen */
}

/* A free successor swallowed by a merge kept a valid free header; a link
 * overwritten to point at it made alloc hand out two overlapping blocks. */
TEST_CASE("link to swallowed header")
{
    test_context = "link-to-swallowed";
    struct rtm_heap *h = rtm_heap_create("tlsf", arena, sizeof(arena));
    REQUIRE(h != NULL, );
    unsigned char *a = rtm_heap_alloc(h, 24), *x = rtm_heap_alloc(h, 40);
    rtm_heap_alloc(h, 24);
    unsigned char *y0 = rtm_heap_alloc(h, 24), *y = rtm_heap_alloc(h, 40);
    rtm_heap_alloc(h, 24);
    REQUIRE(a && x && y0 && y, );
    CHECK_EQ(rtm_heap_free(h, y), 0);
    CHECK_EQ(rtm_heap_free(h, x), 0);       /* the 48-byte list: x, y */
    CHECK_EQ(rtm_heap_free(h, y0), 0);      /* y0 swallows y */
    CHECK_EQ(rtm_heap_free(h, y), -EINVAL); /* a double free of y: no damage */
    CHECK_EQ(corruptions_of(h), 0);
    size_t y_off = (size_t)(y - HDR - (unsigned char *)h);
    overflow_keeping_header(h, a, y_off); /* an overflow reaches no link */
    CHECK(rtm_heap_check(h) == 0);
    /* A stray write: x's next link leads to y, no block any more. y's old
     * prev link, left in the free memory y0 holds now, still links back to
     * x, so taking x goes ahead (it is intact) and y becomes the list's
     * head: taking y is refused, and y0's block stays whole, unshared. */
    write_next(x, y_off);
    CHECK(rtm_heap_alloc(h, 40) == x);
    CHECK_EQ(corruptions_of(h), 0);
    CHECK(rtm_heap_alloc(h, 40) == NULL);
    CHECK_EQ(corruptions_of(h), 1);
    unsigned char *p3 = rtm_heap_alloc(h, 72); /* y0's merged block */
    CHECK(p3 != NULL && p3 == y0);
}

/* Two pools from adjacent memory: 9 to 16 bytes past the first pool's last
 * block were the next pool's descriptor. They now lie inside the pool. */
TEST_CASE("overflow at a pool end")
{
    test_context = "pool-end";
    static unsigned char pools[2 * 4096] __attribute__((aligned(4096)));
    struct rtm_heap *h = rtm_heap_create("tlsf", arena, 16384);
    REQUIRE(h != NULL, );
    CHECK_EQ(rtm_heap_add_pool(h, pools, 4096), 0);
    CHECK_EQ(rtm_heap_add_pool(h, pools + 4096, 4096), 0);
    static void *blocks[2048];
    size_t n = 0;
    while (n < 2048 && (blocks[n] = rtm_heap_alloc(h, 24)) != NULL)
        n++;
    unsigned char *last = NULL;
    for (size_t i = 0; i < n; i++) {
        unsigned char *p = blocks[i];
        if (p >= pools && p < pools + 4096 && (!last || p > last))
            last = p;
    }
    REQUIRE(last != NULL, );
    unsigned char *end = last + rtm_heap_usable_size(h, last);
    CHECK(end + 16 <= pools + 4096); /* the sentinel and its slack are the pool's */
    unsigned char before[16];
    memcpy(before, pools + 4096, 16);
    memset(end, 0x41, 16);
    CHECK(memcmp(before, pools + 4096, 16) == 0);
    CHECK_EQ(rtm_heap_free(h, last), -EFAULT); /* its successor, the sentinel, is damaged */
    for (size_t i = 0; i < n; i++)
        if (blocks[i] != last)
            CHECK_EQ(rtm_heap_free(h, blocks[i]), 0);
    CHECK_EQ(corruptions_of(h), 1);
}

/* Damage to a free predecessor's header, then a merge into it: the merge
 * rewrote the header without looking at its tag, and the damage vanished. */
TEST_CASE("damaged predecessor not laundered")
{
    test_context = "launder";
    struct rtm_heap *h = rtm_heap_create("tlsf", arena, sizeof(arena));
    REQUIRE(h != NULL, );
    unsigned char *a = rtm_heap_alloc(h, 24), *n = rtm_heap_alloc(h, 40),
                  *m = rtm_heap_alloc(h, 24);
    rtm_heap_alloc(h, 24);
    REQUIRE(a && n && m, );
    CHECK_EQ(rtm_heap_free(h, n), 0);
    a[rtm_heap_usable_size(h, a)] ^= 0x08;  /* one bit no size uses */
    CHECK_EQ(rtm_heap_free(h, m), -EFAULT); /* m would merge into n */
    CHECK_EQ(rtm_heap_free(h, a), -EFAULT); /* a would merge with n */
    CHECK_EQ(corruptions_of(h), 2);
    CHECK(rtm_heap_check(h) == -EFAULT);
    /* The same with only a bit of n's tag changed (its size and flags as
     * they were): the merge would rewrite the header and erase the damage. */
    for (size_t byte = 5; byte < 8; byte++) {
        h = rtm_heap_create("tlsf", arena, sizeof(arena));
        REQUIRE(h != NULL, );
        a = rtm_heap_alloc(h, 24), n = rtm_heap_alloc(h, 40), m = rtm_heap_alloc(h, 24);
        rtm_heap_alloc(h, 24);
        REQUIRE(a && n && m, );
        CHECK_EQ(rtm_heap_free(h, n), 0);
        a[rtm_heap_usable_size(h, a) + byte] ^= 0x01;
        CHECK_EQ(rtm_heap_free(h, m), -EFAULT);
        CHECK_EQ(rtm_heap_free(h, a), -EFAULT);
        CHECK_EQ(corruptions_of(h), 2);
        CHECK(rtm_heap_check(h) == -EFAULT);
    }
}

/* A stray write to a free block's footer (its last word, out of an
 * overflow's reach), made to lead into a live block's data that reads as
 * a free header of that size: the free of the block after it must not
 * merge with program data. The header's tag refuses it. */
TEST_CASE("footer led into live data")
{
    test_context = "footer-into-live";
    static unsigned char mem[1 << 15] __attribute__((aligned(64)));
    struct rtm_heap *h = rtm_heap_create("tlsf", mem, sizeof(mem));
    REQUIRE(h != NULL, );
    unsigned char *l = rtm_heap_alloc(h, 400), *p = rtm_heap_alloc(h, 40);
    unsigned char *b = rtm_heap_alloc(h, 40);
    rtm_heap_alloc(h, 24);
    REQUIRE(l && p && b, );
    CHECK_EQ(rtm_heap_free(h, p), 0); /* p: a free 48-byte block before b */
    size_t fake = 160;
    uint64_t fake_hdr = fake | 1; /* free, that size, no tag */
    memcpy(b - HDR - fake, &fake_hdr, HDR);
    /* and links that agree: a ring of it and another fake 64 bytes before */
    size_t f1 = (size_t)(b - HDR - fake - (unsigned char *)h), f2 = f1 - 64;
    size_t words[4] = { f2 + NEXT_MARK, f2 + PREV_MARK, f1 + NEXT_MARK, f1 + PREV_MARK };
    memcpy((unsigned char *)h + f1 + LINKS, words, 2 * LINK);
    memcpy((unsigned char *)h + f2 + LINKS, words + 2, 2 * LINK);
    unsigned char before[400];
    memcpy(before, l, sizeof(before));
    memcpy(b - HDR - LINK, &fake, LINK); /* p's footer: 160 */
    CHECK_EQ(rtm_heap_free(h, b), -EFAULT);
    CHECK_EQ(corruptions_of(h), 1);
    CHECK(memcmp(before, l, sizeof(before)) == 0);
    unsigned char *q = rtm_heap_alloc(h, 150);
    CHECK(q == NULL || q >= l + 400 || q + rtm_heap_usable_size(h, q) <= l);
}

/* A live neighbour's header with only its free bit set by the overflow ('0'
 * written as '1') was refused as a double free, uncounted. */
static int handler_calls;
static void count_calls(const struct rtm_heap_corruption *c, void *arg)
{
    (void)c;
    (void)arg;
    handler_calls++;
}

TEST_CASE("free bit set by overflow")
{
    test_context = "free-bit";
    struct rtm_heap_config cfg = { .on_corruption = count_calls };
    struct rtm_heap *h = rtm_heap_create_ex("tlsf", arena, sizeof(arena), &cfg);
    REQUIRE(h != NULL, );
    unsigned char *a = rtm_heap_alloc(h, 24), *n = rtm_heap_alloc(h, 40);
    rtm_heap_alloc(h, 24);
    REQUIRE(a && n, );
    handler_calls = 0;
    a[rtm_heap_usable_size(h, a)] |= 0x01;
    CHECK_EQ(rtm_heap_free(h, n), -EFAULT);
    CHECK_EQ(rtm_heap_usable_size(h, n), 0);
    CHECK(rtm_heap_realloc(h, n, 10) == NULL);
    CHECK_EQ(rtm_heap_free(h, a), -EFAULT);
    CHECK_EQ(corruptions_of(h), 3); /* free(n), realloc(n), free(a) */
    CHECK_EQ(handler_calls, 3);
}

/* A next link pointing at a live block, whose payload holds what a prev
 * link back would (the program's own data). Taking the damaged block made
 * the live one a list head, and a later alloc of that class handed it out,
 * too small, over the block after it. */
TEST_CASE("link to live block")
{
    test_context = "link-to-live";
    static unsigned char mem[1 << 15] __attribute__((aligned(64)));
    for (int stray = 0; stray < 2; stray++) {
        struct rtm_heap *h = rtm_heap_create("tlsf", mem, sizeof(mem));
        REQUIRE(h != NULL, );
        unsigned char *a = rtm_heap_alloc(h, 24), *n = rtm_heap_alloc(h, 248);
        rtm_heap_alloc(h, 24);
        unsigned char *v = rtm_heap_alloc(h, 200), *g2 = rtm_heap_alloc(h, 24);
        REQUIRE(a && n && v && g2, );
        CHECK_EQ(rtm_heap_free(h, n), 0); /* class 256: n alone */
        size_t noff = (size_t)(n - HDR - (unsigned char *)h);
        size_t voff = (size_t)(v - HDR - (unsigned char *)h);
        size_t word = noff + PREV_MARK;
        size_t at = LINKS + LINK - HDR; /* v's data where a prev link would lie */
        memcpy(v + at, &word, LINK);    /* like a prev link to n */
        if (!stray) {
            /* 16 bytes past a: n's header as it was, then v. They reach
             * no link: n is handed out, v untouched, nothing damaged. */
            overflow_keeping_header(h, a, voff);
            CHECK(rtm_heap_alloc(h, 248) == n);
            CHECK_EQ(word, *(size_t *)(void *)(v + at));
            CHECK_EQ(corruptions_of(h), 0);
            CHECK(rtm_heap_check(h) == 0);
            continue;
        }
        /* A stray write into free n's next link (not an overflow: beyond
         * its reach). n is intact and v links back, so n is handed out;
         * the link back is rewritten (v's data, which mimicked one), and
         * v, a list head now, is never handed out: its header says live. */
        write_next(n, voff);
        CHECK(rtm_heap_alloc(h, 248) == n);
        CHECK(rtm_heap_alloc(h, 248) == NULL);
        CHECK_EQ(corruptions_of(h), 1);
        CHECK_EQ(rtm_heap_free(h, v), 0);
        unsigned char *y = rtm_heap_alloc(h, 248);
        CHECK(y == NULL || y + rtm_heap_usable_size(h, y) <= g2 - HDR || y > g2);
        struct rtm_heap_stats st;
        CHECK_EQ(rtm_heap_stats(h, &st), 0); /* readable, whatever the damage */
    }
}

/* The same with the target inside the live block: its data reads as a free
 * header 8 bytes in, and as a prev link back where that header's would
 * lie. A check of the target's flags alone let alloc hand out a block
 * there; its tag is what refuses it. */
TEST_CASE("link into live data")
{
    test_context = "link-into-live-data";
    static unsigned char mem[1 << 15] __attribute__((aligned(64)));
    for (int via_free = 0; via_free < 2; via_free++) {
        struct rtm_heap *h = rtm_heap_create("tlsf", mem, sizeof(mem));
        REQUIRE(h != NULL, );
        unsigned char *a = rtm_heap_alloc(h, 24), *n = rtm_heap_alloc(h, 248);
        rtm_heap_alloc(h, 24);
        unsigned char *v = rtm_heap_alloc(h, 200);
        rtm_heap_alloc(h, 24);
        REQUIRE(a && n && v, );
        CHECK_EQ(rtm_heap_free(h, n), 0);
        size_t noff = (size_t)(n - HDR - (unsigned char *)h);
        size_t yoff = (size_t)(v + 8 - (unsigned char *)h); /* a header position in v's data */
        uint64_t one = 1;
        size_t back = noff + PREV_MARK;
        memcpy(v + 8, &one, HDR);                  /* reads as a free header at yoff */
        memcpy(v + 8 + LINKS + LINK, &back, LINK); /* and its prev link, back to n */
        unsigned char before[200];
        memcpy(before, v, sizeof(before));
        overflow_keeping_header(h, a, yoff); /* out of the links' reach: no effect */
        CHECK(memcmp(before, v, sizeof(before)) == 0);
        CHECK(rtm_heap_check(h) == 0);
        write_next(n, yoff); /* a stray write */
        if (via_free)
            CHECK_EQ(rtm_heap_free(h, a), 0); /* a merges with n, which links to y */
        else
            CHECK(rtm_heap_alloc(h, 248) == n); /* n is intact: handed out */
        CHECK_EQ(corruptions_of(h), 0);
        /* y heads n's list now: taking it is refused (a forged header
         * fails its tag), so no block is handed out inside v */
        CHECK(rtm_heap_alloc(h, 248) == NULL);
        CHECK_EQ(corruptions_of(h), 1);
        CHECK(rtm_heap_check(h) == -EFAULT);
    }
}

/* Five bytes past a block into the only free block, its free flag kept and
 * its size made 0: stats read that size unchecked (largest_free_bytes came
 * out as SIZE_MAX - 7). */
TEST_CASE("stats with a damaged head")
{
    test_context = "stats-damaged-head";
    static unsigned char mem[1 << 15] __attribute__((aligned(64)));
    struct rtm_heap *h = rtm_heap_create("tlsf", mem, sizeof(mem));
    REQUIRE(h != NULL, );
    unsigned char *a = rtm_heap_alloc(h, 24);
    REQUIRE(a != NULL, );
    memcpy(a + rtm_heap_usable_size(h, a), "\x01\0\0\0\0", 5);
    struct rtm_heap_stats st;
    CHECK_EQ(rtm_heap_stats(h, &st), 0);
    CHECK(st.largest_free_bytes <= st.free_bytes);
    CHECK(rtm_heap_alloc(h, 16) == NULL); /* and the damaged block is refused */
    CHECK_EQ(corruptions_of(h), 1);
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, "tlsf");
}
