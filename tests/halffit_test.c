/*
 * halffit-specific promises, beyond the common contract: the figures its
 * header documents (fragment sizes, exact fill counts, exact
 * largest_free_bytes), splitting and merging, aligned allocation, the paths
 * of realloc, the hardening refusals, and Robson's bound: adversaries built
 * to need as much memory as they can, the pool each needs (searched), and
 * a pool of the bound's size that none of them exhausts.
 */
#include <errno.h>
#include <sys/mman.h>

#include "check.h"
#include "rtmem/halffit.h"

#define HDR RTM_HALFFIT_HEADER_BYTES

static unsigned char arena[1u << 20] __attribute__((aligned(4096)));

/* F(n), as rtmem/halffit.h documents it. */
static size_t frag_of(size_t n)
{
    size_t f = RTM_HALFFIT_MIN_FRAGMENT;
    while (f < n + HDR)
        f *= 2;
    return f;
}

static struct rtm_heap_stats stats(const struct rtm_halffit *h)
{
    struct rtm_heap_stats st;
    rtm_halffit_stats(h, &st);
    return st;
}

static struct rtm_halffit *fresh(void)
{
    return rtm_halffit_create(arena, sizeof(arena));
}

/* ---- sizes, fill, largest ------------------------------------------------------ */

TEST_CASE("a request takes the power of two that holds it and its header")
{
    struct rtm_halffit *h = fresh();
    REQUIRE(h != NULL, );
    for (size_t n = 0; n <= 9000; n++) {
        CHECK_EQ(rtm_halffit_fragment_size(n), frag_of(n));
        size_t before = stats(h).used_bytes;
        void *p = rtm_halffit_alloc(h, n);
        REQUIRE(p != NULL, );
        CHECK_EQ((uintptr_t)p % RTM_HALFFIT_GRANULE, 0);
        CHECK_EQ(rtm_halffit_usable_size(h, p), frag_of(n) - HDR);
        CHECK(rtm_halffit_usable_size(h, p) < 2 * n + 16 || n < 16);
        CHECK_EQ(stats(h).used_bytes - before, frag_of(n));
        CHECK_EQ(rtm_halffit_free(h, p), 0);
    }
    CHECK_EQ(rtm_halffit_fragment_size(RTM_HALFFIT_MAX_REQUEST), RTM_HALFFIT_MAX_FRAGMENT);
    CHECK_EQ(rtm_halffit_fragment_size(RTM_HALFFIT_MAX_REQUEST + 1), 0);
    CHECK_EQ(rtm_halffit_fragment_size(SIZE_MAX), 0);
    CHECK(rtm_halffit_alloc(h, RTM_HALFFIT_MAX_REQUEST + 1) == NULL);
    CHECK_EQ(stats(h).failed_allocs, 1);
    CHECK_EQ(rtm_halffit_check(h), 0);
}

/* Fills a fresh heap with requests of n bytes: the count, and the same
 * count again once emptied. */
static size_t fill_with(struct rtm_halffit *h, size_t n, void **kept, size_t room)
{
    size_t count = 0;
    void *p;
    while ((p = rtm_halffit_alloc(h, n)) != NULL) {
        if (count < room)
            kept[count] = p;
        count++;
    }
    return count;
}

static void drain(struct rtm_halffit *h, void **kept, size_t count)
{
    for (size_t i = 0; i < count; i++)
        CHECK_EQ(rtm_halffit_free(h, kept[i]), 0);
}

TEST_CASE("a fresh heap holds exactly floor(P / F) fragments of every power of two F")
{
    static void *kept[1u << 15];
    for (int pools = 1; pools <= 3; pools++) {
        for (size_t f = RTM_HALFFIT_MIN_FRAGMENT; f <= sizeof(arena); f *= 2) {
            /* each pool of a different, odd size, at odd addresses */
            size_t part = sizeof(arena) / 4;
            struct rtm_halffit *h =
                rtm_halffit_create(arena + 3, pools == 1 ? sizeof(arena) - 3 : part - 3);
            REQUIRE(h != NULL, );
            size_t expect = stats(h).usable_bytes / f;
            for (int i = 1; i < pools; i++) {
                size_t at = (size_t)i * part + (size_t)i * 1000 + 7, len = part - 5000 * (size_t)i;
                struct rtm_heap_stats before = stats(h);
                CHECK_EQ(rtm_halffit_add_pool(h, arena + at, len), 0);
                expect += (stats(h).usable_bytes - before.usable_bytes) / f;
            }
            CHECK_EQ(stats(h).usable_bytes % RTM_HALFFIT_GRANULE, 0);
            CHECK_EQ(rtm_heap_fill_count(rtm_halffit_heap(h), f - HDR), expect);
            /* the largest request of the class, and the smallest */
            size_t sizes[2] = { f - HDR, f == RTM_HALFFIT_MIN_FRAGMENT ? 0 : f / 2 - HDR + 1 };
            for (int s = 0; s < 2; s++) {
                size_t got = fill_with(h, sizes[s], kept, sizeof(kept) / sizeof(kept[0]));
                CHECK_EQ(got, expect);
                CHECK_EQ(stats(h).used_bytes, got * f);
                /* what is left holds no fragment of f */
                size_t left = stats(h).largest_free_bytes;
                CHECK(left == 0 || left + HDR <= f / 2);
                drain(h, kept, got < sizeof(kept) / sizeof(kept[0]) ? got : 0);
                if (got >= sizeof(kept) / sizeof(kept[0]))
                    break; /* more than the test keeps: the count was the point */
                CHECK_EQ(fill_with(h, sizes[s], kept, sizeof(kept) / sizeof(kept[0])), expect);
                drain(h, kept, got);
            }
            CHECK_EQ(rtm_halffit_check(h), 0);
        }
    }
}

TEST_CASE("largest_free_bytes succeeds and one byte more fails, whatever the history")
{
    struct rtm_halffit *h = fresh();
    REQUIRE(h != NULL, );
    struct rtm_heap_stats st = stats(h);
    size_t top = 1;
    while (top * 2 <= st.usable_bytes)
        top *= 2;
    CHECK_EQ(st.largest_free_bytes, top - HDR);
    CHECK(st.largest_free_bytes >= st.usable_bytes / 2 - HDR);
    uint64_t rng = 42;
    void *live[512] = { 0 };
    for (int step = 0; step < 20000; step++) {
        size_t i = rng_next(&rng) % 512;
        if (live[i]) {
            CHECK_EQ(rtm_halffit_free(h, live[i]), 0);
            live[i] = NULL;
        } else {
            live[i] = rtm_halffit_alloc(h, (size_t)rng_range(&rng, 1, 6000));
        }
        if (step % 97 != 0)
            continue;
        size_t largest = stats(h).largest_free_bytes;
        if (largest == 0)
            continue;
        void *too_big = rtm_halffit_alloc(h, largest + 1);
        CHECK(too_big == NULL);
        if (too_big)
            rtm_halffit_free(h, too_big);
        void *p = rtm_halffit_alloc(h, largest);
        CHECK(p != NULL);
        if (p)
            rtm_halffit_free(h, p);
    }
    for (size_t i = 0; i < 512; i++)
        if (live[i])
            rtm_halffit_free(h, live[i]);
    CHECK_EQ(stats(h).largest_free_bytes, st.largest_free_bytes);
    CHECK_EQ(rtm_halffit_check(h), 0);
}

/* ---- split and merge ----------------------------------------------------------- */

TEST_CASE("alloc splits off the tail, which the next request of its class takes")
{
    struct rtm_halffit *h = fresh();
    REQUIRE(h != NULL, );
    unsigned char *a = rtm_halffit_alloc(h, 1000); /* 1024 */
    unsigned char *b = rtm_halffit_alloc(h, 1000);
    unsigned char *c = rtm_halffit_alloc(h, 100); /* 128 */
    REQUIRE(a && b && c, );
    CHECK(b == a + 1024 && c == b + 1024); /* each cut from the front of the rest */
    CHECK_EQ(rtm_halffit_free(h, a), 0);
    /* a's 1024 bytes are the lowest list that serves 128: taken first, and
     * the 896 left stay there, before c's successor */
    unsigned char *d = rtm_halffit_alloc(h, 100);
    CHECK(d == a);
    unsigned char *e = rtm_halffit_alloc(h, 400); /* 512 from the 896 */
    CHECK(e == a + 128);
    unsigned char *g = rtm_halffit_alloc(h, 200); /* 256 from the 384 left */
    CHECK(g == a + 640);
    CHECK_EQ(rtm_halffit_check(h), 0);
}

TEST_CASE("free merges both neighbours into one fragment")
{
    struct rtm_halffit *h = fresh();
    REQUIRE(h != NULL, );
    void *p[5];
    for (int i = 0; i < 5; i++)
        p[i] = rtm_halffit_alloc(h, 1000);
    REQUIRE(p[4] != NULL, );
    rtm_halffit_free(h, p[1]);
    rtm_halffit_free(h, p[3]);
    CHECK_EQ(rtm_halffit_check(h), 0);
    rtm_halffit_free(h, p[2]); /* joins 1, 2 and 3: 3072 bytes */
    CHECK_EQ(rtm_halffit_check(h), 0);
    /* the lowest list holding 2048 is the merged fragment's (3072 is in
     * list 11, the rest of the pool far above) */
    void *q = rtm_halffit_alloc(h, 2000);
    CHECK(q == p[1]);
    /* its rest of 1024 serves the next 1024 */
    void *r = rtm_halffit_alloc(h, 1000);
    CHECK(r == (unsigned char *)p[1] + 2048);
    rtm_halffit_free(h, q);
    rtm_halffit_free(h, r);
    rtm_halffit_free(h, p[0]);
    rtm_halffit_free(h, p[4]);
    struct rtm_heap_stats st = stats(h);
    CHECK_EQ(st.used_bytes, 0);
    CHECK_EQ(rtm_halffit_check(h), 0);
    struct rtm_halffit *again = fresh(); /* coalescing complete: as fresh */
    REQUIRE(again != NULL, );
    CHECK_EQ(st.largest_free_bytes, stats(again).largest_free_bytes);
}

/* ---- aligned ---------------------------------------------------------------- */

TEST_CASE("aligned allocation takes F(n); the gap before the block stays free")
{
    for (size_t align = 1; align <= 65536; align *= 2) {
        struct rtm_halffit *h = rtm_halffit_create(arena + 16, sizeof(arena) - 16);
        REQUIRE(h != NULL, );
        for (size_t i = 0; i < 12; i++) {
            size_t n = 40 + i * 97;
            size_t used = stats(h).used_bytes;
            unsigned char *p = rtm_halffit_aligned_alloc(h, align, n);
            REQUIRE(p != NULL, );
            CHECK_EQ((uintptr_t)p % align, 0);
            CHECK_EQ(stats(h).used_bytes - used, frag_of(n));
            CHECK_EQ(rtm_halffit_usable_size(h, p), frag_of(n) - HDR);
            memset(p, 0x33, n);
        }
        CHECK_EQ(rtm_halffit_check(h), 0);
    }
    struct rtm_halffit *h = fresh();
    REQUIRE(h != NULL, );
    size_t bad[] = { 0, 3, 48, 1000, RTM_HALFFIT_MAX_FRAGMENT * 2, SIZE_MAX };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK(rtm_halffit_aligned_alloc(h, bad[i], 16) == NULL);
    /* a power of two whose gap and block leave the pool */
    CHECK(rtm_halffit_aligned_alloc(h, RTM_HALFFIT_MAX_FRAGMENT, 16) == NULL);
    CHECK(rtm_halffit_aligned_alloc(h, 64, RTM_HALFFIT_MAX_REQUEST) == NULL);
    CHECK_EQ(stats(h).failed_allocs, sizeof(bad) / sizeof(bad[0]) + 2);
    CHECK_EQ(rtm_halffit_check(h), 0);
}

/* ---- realloc ---------------------------------------------------------------- */

static void pattern(unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(v + i);
}

static bool has_pattern(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(v + i))
            return false;
    return true;
}

TEST_CASE("realloc keeps the fragment in its class and grows into a free successor")
{
    struct rtm_halffit *h = fresh();
    REQUIRE(h != NULL, );
    unsigned char *a = rtm_halffit_alloc(h, 400); /* 512 */
    unsigned char *b = rtm_halffit_alloc(h, 100);
    REQUIRE(a && b, );
    pattern(a, 496, 1);
    size_t used = stats(h).used_bytes;
    CHECK(rtm_halffit_realloc(h, a, 300) == a); /* still 512 */
    CHECK(rtm_halffit_realloc(h, a, 496) == a);
    CHECK_EQ(stats(h).used_bytes, used);
    /* b freed: a grows into it and the rest of the pool beyond */
    CHECK_EQ(rtm_halffit_free(h, b), 0);
    CHECK(rtm_halffit_realloc(h, a, 4000) == a);
    CHECK(has_pattern(a, 496, 1));
    CHECK_EQ(rtm_halffit_usable_size(h, a), 4096 - HDR);
    CHECK_EQ(stats(h).used_bytes, 4096);
    CHECK_EQ(stats(h).peak_used_bytes, 4096);
    CHECK_EQ(rtm_halffit_check(h), 0);
    /* the whole pool's largest fragment, then no more */
    size_t all = stats(h).largest_free_bytes;
    unsigned char *x = rtm_halffit_alloc(h, 16); /* a used successor */
    REQUIRE(x != NULL, );
    CHECK(x == a + 4096);
    unsigned char *moved = rtm_halffit_realloc(h, a, 5000); /* successor used: moves */
    REQUIRE(moved != NULL, );
    CHECK(moved != a);
    CHECK(has_pattern(moved, 496, 1));
    CHECK_EQ(rtm_halffit_usable_size(h, a), 0); /* the old block is free */
    CHECK(rtm_halffit_realloc(h, moved, all * 4) == NULL);
    CHECK(has_pattern(moved, 496, 1));
    CHECK_EQ(rtm_halffit_check(h), 0);
}

TEST_CASE("realloc going down a class moves where the lists choose, or splits when full")
{
    struct rtm_halffit *h = fresh();
    REQUIRE(h != NULL, );
    unsigned char *hole = rtm_halffit_alloc(h, 100); /* 128 at the pool's start */
    unsigned char *a = rtm_halffit_alloc(h, 4000);   /* 4096 */
    unsigned char *guard = rtm_halffit_alloc(h, 16);
    REQUIRE(hole && a && guard, );
    CHECK_EQ(rtm_halffit_free(h, hole), 0);
    pattern(a, 4080, 9);
    /* 100 bytes take 128: the free 128 at the start is the lowest list */
    unsigned char *q = rtm_halffit_realloc(h, a, 100);
    CHECK(q == hole);
    CHECK(has_pattern(q, 100, 9));
    CHECK_EQ(rtm_halffit_usable_size(h, q), 128 - HDR);
    CHECK_EQ(stats(h).used_bytes, 128 + 32);
    CHECK_EQ(rtm_halffit_check(h), 0);
    /* a full heap: a shrink that finds no fragment splits in place */
    void *p;
    while ((p = rtm_halffit_alloc(h, 16)) != NULL)
        ;
    struct rtm_heap_stats before = stats(h);
    CHECK(rtm_halffit_realloc(h, q, 10) == q);
    CHECK(has_pattern(q, 10, 9));
    CHECK_EQ(rtm_halffit_usable_size(h, q), 32 - HDR);
    CHECK_EQ(before.used_bytes - stats(h).used_bytes, 96);
    CHECK_EQ(stats(h).failed_allocs, before.failed_allocs);
    CHECK_EQ(rtm_halffit_check(h), 0);
}

TEST_CASE("realloc of NULL, to 0, to an impossible size, of a freed block")
{
    struct rtm_halffit *h = fresh();
    REQUIRE(h != NULL, );
    void *a = rtm_halffit_realloc(h, NULL, 300);
    REQUIRE(a != NULL, );
    CHECK_EQ(rtm_halffit_usable_size(h, a), 512 - HDR);
    void *z = rtm_halffit_realloc(h, a, 0);
    REQUIRE(z != NULL, );
    CHECK_EQ(rtm_halffit_usable_size(h, z), RTM_HALFFIT_MIN_FRAGMENT - HDR);
    uint64_t failed = stats(h).failed_allocs;
    CHECK(rtm_halffit_realloc(h, z, SIZE_MAX) == NULL);
    CHECK(rtm_halffit_realloc(h, z, RTM_HALFFIT_MAX_REQUEST + 1) == NULL);
    CHECK_EQ(rtm_halffit_usable_size(h, z), RTM_HALFFIT_MIN_FRAGMENT - HDR);
    CHECK_EQ(rtm_halffit_free(h, z), 0);
    CHECK(rtm_halffit_realloc(h, z, 64) == NULL); /* no live block */
    CHECK_EQ(stats(h).failed_allocs, failed + 3);
    CHECK_EQ(stats(h).live_blocks, 0);
    CHECK_EQ(rtm_halffit_check(h), 0);
}

/* ---- hardening -------------------------------------------------------------- */

struct heard {
    int calls;
    const void *block;
    const char *what;
};

static void on_corruption(const struct rtm_heap_corruption *c, void *arg)
{
    struct heard *h = arg;
    h->calls++;
    h->block = c->block;
    h->what = c->what;
}

static struct rtm_halffit *hardened(int level, struct heard *heard)
{
    struct rtm_heap_config cfg = { .hardening = level,
                                   .on_corruption = heard ? on_corruption : NULL,
                                   .on_corruption_arg = heard };
    return rtm_halffit_create_ex(arena, sizeof(arena), &cfg);
}

TEST_CASE("a double free, a stale pointer and a foreign pointer are refused, at every level")
{
    for (int level = RTM_HEAP_HARDEN_O1; level <= RTM_HEAP_HARDEN_FULL; level++) {
        struct rtm_halffit *h = hardened(level, NULL);
        REQUIRE(h != NULL, );
        unsigned char *a = rtm_halffit_alloc(h, 200), *b = rtm_halffit_alloc(h, 200);
        unsigned char *c = rtm_halffit_alloc(h, 200);
        REQUIRE(a && b && c, );
        CHECK_EQ(rtm_halffit_free(h, b), 0);
        CHECK_EQ(rtm_halffit_free(h, b), -EINVAL); /* free header */
        CHECK_EQ(rtm_halffit_free(h, a), 0);       /* b swallowed into a's */
        CHECK_EQ(rtm_halffit_free(h, b), -EINVAL); /* swallowed header */
        CHECK_EQ(rtm_halffit_free(h, a), -EINVAL);
        CHECK_EQ(rtm_halffit_usable_size(h, b), 0);
        int local;
        CHECK_EQ(rtm_halffit_free(h, &local), -EINVAL);
        CHECK_EQ(rtm_halffit_free(h, c + 16), -EINVAL); /* misaligned */
        CHECK_EQ(rtm_halffit_free(h, c + 1), -EINVAL);
        CHECK_EQ(rtm_halffit_free(h, (void *)((uintptr_t)arena + sizeof(arena) + 4096)), -EINVAL);
        CHECK_EQ(rtm_halffit_free(h, NULL), 0);
        CHECK_EQ(stats(h).corruptions, 0);
        CHECK_EQ(stats(h).live_blocks, 1);
        CHECK_EQ(rtm_halffit_check(h), 0);
    }
}

/* A run of bytes over the 16 bytes past a's usable end: b's header. */
static void overflow(unsigned char *a, struct rtm_halffit *h, unsigned char v, size_t len)
{
    memset(a + rtm_halffit_usable_size(h, a), v, len);
}

TEST_CASE("an overflow into a free neighbour's header is refused at the next alloc and free")
{
    struct heard heard = { 0 };
    struct rtm_halffit *h = hardened(RTM_HEAP_HARDEN_O1, &heard);
    REQUIRE(h != NULL, );
    unsigned char *a = rtm_halffit_alloc(h, 700), *b = rtm_halffit_alloc(h, 700);
    unsigned char *c = rtm_halffit_alloc(h, 700);
    REQUIRE(a && b && c, );
    CHECK_EQ(rtm_halffit_free(h, b), 0);
    overflow(a, h, 0x41, 16);
    /* b's 1024 is the lowest list serving 700: alloc finds the damage */
    CHECK(rtm_halffit_alloc(h, 700) == NULL);
    CHECK_EQ(heard.calls, 1);
    CHECK(heard.block == NULL && heard.what != NULL);
    CHECK_EQ(rtm_halffit_free(h, a), -EFAULT); /* merging b */
    CHECK(heard.block == a);
    CHECK_EQ(rtm_halffit_free(h, c), -EFAULT); /* merging b from the other side */
    CHECK(heard.block == c);
    CHECK(rtm_halffit_realloc(h, a, 2000) == NULL);
    struct rtm_heap_stats st = stats(h);
    CHECK_EQ(st.corruptions, 4);
    CHECK_EQ((uint64_t)heard.calls, st.corruptions);
    CHECK_EQ(st.live_blocks, 2);
    CHECK_EQ(rtm_halffit_check(h), -EFAULT);
}

TEST_CASE("an overflow of 1 to 16 bytes into a live neighbour is refused when either is freed")
{
    for (size_t len = 1; len <= 16; len++) {
        struct heard heard = { 0 };
        struct rtm_halffit *h = hardened(RTM_HEAP_HARDEN_O1, &heard);
        REQUIRE(h != NULL, );
        unsigned char *a = rtm_halffit_alloc(h, 100), *b = rtm_halffit_alloc(h, 100);
        unsigned char *c = rtm_halffit_alloc(h, 100);
        REQUIRE(a && b && c, );
        overflow(a, h, 0x00, len); /* zeros: the prev word first */
        /* the first 8 bytes are b's prev word (a's size), the next 8 its
         * tagged word: either way both frees are refused */
        CHECK_EQ(rtm_halffit_free(h, b), -EFAULT);
        CHECK_EQ(rtm_halffit_free(h, a), -EFAULT);
        /* c's predecessor b: refused too once b's tagged word is hit */
        CHECK_EQ(rtm_halffit_free(h, c), len <= 8 ? 0 : -EFAULT);
        CHECK_EQ(stats(h).corruptions, len <= 8 ? 2 : 3);
        CHECK_EQ((uint64_t)heard.calls, stats(h).corruptions);
        CHECK_EQ(rtm_halffit_check(h), -EFAULT);
    }
}

TEST_CASE("a free fragment's links written after its free are refused when it is unlinked")
{
    struct heard heard = { 0 };
    struct rtm_halffit *h = hardened(RTM_HEAP_HARDEN_O1, &heard);
    REQUIRE(h != NULL, );
    unsigned char *a = rtm_halffit_alloc(h, 300), *b = rtm_halffit_alloc(h, 300);
    unsigned char *c = rtm_halffit_alloc(h, 300);
    REQUIRE(a && b && c, );
    CHECK_EQ(rtm_halffit_free(h, b), 0);
    /* a use after free: b's next link now leads to c, a fragment position
     * whose links do not lead back */
    size_t planted = (size_t)(c - (unsigned char *)h) - HDR;
    memcpy(b, &planted, sizeof(planted));
    pattern(c, 300, 5);
    CHECK_EQ(rtm_halffit_free(h, a), -EFAULT); /* would merge b */
    CHECK(heard.block == a);
    CHECK_EQ(rtm_halffit_free(h, c), -EFAULT);
    CHECK(rtm_halffit_alloc(h, 300) == NULL); /* b heads its list: refused */
    CHECK_EQ(stats(h).corruptions, 3);
    CHECK(has_pattern(c, 300, 5)); /* nothing written there */
    CHECK_EQ(rtm_halffit_check(h), -EFAULT);
}

/* A free fragment's next link rewritten (a use after free, beyond an
 * overflow's reach: the links lie past the header) to a fragment position
 * inside a live block whose data reads as a free header and links back.
 * Safe unlinking passes it, and the one link that leads back to it is
 * rewritten (a word of the program's data that mimicked one); what the
 * tag stops is the rest: no fragment is ever handed out there, and the
 * next alloc of that list reports the damage. */
TEST_CASE("a link to planted data that links back: never handed out")
{
    for (int via_free = 0; via_free < 2; via_free++) {
        struct heard heard = { 0 };
        struct rtm_halffit *h = hardened(RTM_HEAP_HARDEN_O1, &heard);
        REQUIRE(h != NULL, );
        unsigned char *a = rtm_halffit_alloc(h, 48), *n = rtm_halffit_alloc(h, 240);
        unsigned char *g = rtm_halffit_alloc(h, 16), *v = rtm_halffit_alloc(h, 240);
        REQUIRE(a && n && g && v && rtm_halffit_alloc(h, 16), );
        CHECK_EQ(rtm_halffit_free(h, n), 0); /* alone in its list */
        size_t noff = (size_t)(n - (unsigned char *)h) - HDR;
        size_t yoff = (size_t)(v - (unsigned char *)h) - HDR + 32; /* a fragment position in v */
        uint64_t words[2] = { 64, 256 | 1 };                       /* the previous size, a header */
        size_t links[2] = { 0, noff }; /* next, and the prev link back */
        memcpy(v + 16, words, sizeof(words));
        memcpy(v + 32, links, sizeof(links));
        const size_t back = 32 + sizeof(size_t); /* where the prev link lies in v */
        unsigned char before[240];
        memcpy(before, v, sizeof(before));
        memcpy(n, &yoff, sizeof(yoff)); /* n's next link, written after its free */
        if (via_free)
            CHECK_EQ(rtm_halffit_free(h, a), 0); /* merges n, whose links agree */
        else
            CHECK(rtm_halffit_alloc(h, 240) == n); /* n is intact: handed out */
        CHECK_EQ(stats(h).corruptions, 0);
        /* the word that linked back now links to the list head: the rest
         * of v's data as it was */
        CHECK(memcmp(before, v, back) == 0);
        CHECK(memcmp(before + back + sizeof(size_t), v + back + sizeof(size_t),
                     sizeof(before) - back - sizeof(size_t)) == 0);
        size_t now;
        memcpy(&now, v + back, sizeof(now)); /* a list head's place: before every fragment */
        CHECK(now != noff && now < (size_t)(a - (unsigned char *)h));
        if (via_free) /* the merged fragment came first in that list */
            CHECK(rtm_halffit_alloc(h, 240) == a);
        CHECK(rtm_halffit_alloc(h, 240) == NULL); /* y heads the list: refused */
        CHECK_EQ(stats(h).corruptions, 1);
        CHECK_EQ(heard.calls, 1);
        CHECK_EQ(rtm_halffit_check(h), -EFAULT);
    }
}

TEST_CASE("unhardened, no tags and no checks, and the same blocks")
{
    struct rtm_halffit *x = hardened(RTM_HEAP_HARDEN_NONE, NULL);
    REQUIRE(x != NULL, );
    unsigned char *a = rtm_halffit_alloc(x, 100);
    REQUIRE(a != NULL, );
    uint64_t hdr;
    memcpy(&hdr, a - 8, sizeof(hdr));
    CHECK_EQ(hdr >> 40, 0); /* no tag bits */
    CHECK_EQ(hdr, 128);     /* size, no flag: used */
    CHECK_EQ(rtm_halffit_free(x, a), 0);
    CHECK_EQ(rtm_halffit_free(x, a), -EINVAL);
    CHECK_EQ(rtm_halffit_check(x), 0);
}

/* ---- Robson's bound ----------------------------------------------------------- */

/*
 * An adversary is a program of steps on block ids, built against a heap
 * (the placements it sees may guide it), then replayed on pools of other
 * sizes: the smallest pool it needs is searched. Live requested bytes stay
 * within max_live throughout (a realloc counts the old block beside the
 * new, as rtm_heap_pool_bound does).
 */
enum { STEP_ALLOC, STEP_FREE, STEP_REALLOC };

struct step {
    uint8_t op;
    uint32_t id;
    size_t size;
};

struct adversary {
    const char *name;
    struct rtm_heap_limits lim;
    struct step *steps;
    size_t n, cap;
    size_t *size_of; /* live requested bytes by id */
    uint32_t ids, ids_cap;
    size_t live;
    void **at; /* the blocks, while built */
    struct rtm_heap *h;
};

static void put(struct adversary *a, uint8_t op, uint32_t id, size_t size)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 4096;
        a->steps = realloc(a->steps, a->cap * sizeof(*a->steps));
        if (!a->steps)
            exit(2);
    }
    a->steps[a->n++] = (struct step){ op, id, size };
}

/* A block of size bytes: its id, or UINT32_MAX when the limit has no room
 * (or the building heap none: the program ends there). */
static uint32_t adv_alloc(struct adversary *a, size_t size)
{
    if (size > a->lim.max_live - a->live)
        return UINT32_MAX;
    void *p = rtm_heap_alloc(a->h, size);
    CHECK(p != NULL); /* within the limits, on a heap of the bound's size */
    if (!p)
        return UINT32_MAX;
    if (a->ids == a->ids_cap) {
        a->ids_cap = a->ids_cap ? a->ids_cap * 2 : 4096;
        a->size_of = realloc(a->size_of, a->ids_cap * sizeof(*a->size_of));
        a->at = realloc(a->at, a->ids_cap * sizeof(*a->at));
        if (!a->size_of || !a->at)
            exit(2);
    }
    uint32_t id = a->ids++;
    a->size_of[id] = size;
    a->at[id] = p;
    a->live += size;
    put(a, STEP_ALLOC, id, size);
    return id;
}

static void adv_free(struct adversary *a, uint32_t id)
{
    CHECK_EQ(rtm_heap_free(a->h, a->at[id]), 0);
    a->live -= a->size_of[id];
    a->size_of[id] = 0;
    a->at[id] = NULL;
    put(a, STEP_FREE, id, 0);
}

static bool adv_realloc(struct adversary *a, uint32_t id, size_t size)
{
    if (size > a->lim.max_live - a->live)
        return false;
    void *q = rtm_heap_realloc(a->h, a->at[id], size);
    CHECK(q != NULL);
    if (!q)
        return false;
    a->at[id] = q;
    a->live = a->live - a->size_of[id] + size;
    a->size_of[id] = size;
    put(a, STEP_REALLOC, id, size);
    return true;
}

/* The smallest request whose fragment is f. */
static size_t smallest_of(size_t f)
{
    return f == RTM_HALFFIT_MIN_FRAGMENT ? 1 : f / 2 - HDR + 1;
}

/* Orders block ids by the address of their blocks (qsort has no argument
 * for it: the blocks of the adversary being built). */
static void *const *sort_at;
static int by_address(const void *x, const void *y)
{
    uintptr_t px = (uintptr_t)sort_at[*(const uint32_t *)x];
    uintptr_t py = (uintptr_t)sort_at[*(const uint32_t *)y];
    return px < py ? -1 : px > py;
}

/* The first and last byte of block id's fragment. */
static uintptr_t frag_start(const struct adversary *a, uint32_t id)
{
    return (uintptr_t)a->at[id] - HDR;
}

static uintptr_t frag_end(const struct adversary *a, uint32_t id)
{
    return (uintptr_t)a->at[id] + rtm_heap_usable_size(a->h, a->at[id]);
}

/*
 * Robson's: each class in turn, from the smallest fragment up, fills what
 * the limit leaves with its smallest requests (about half of each fragment
 * requested). Then every live block, in address order, is freed if the
 * hole it leaves between the blocks kept on either side stays smaller than
 * the next class's fragment: the next round, a class up, finds no hole to
 * use, and has all the limit the frees gave back. comb: instead, every
 * other block of the round just made is freed, and nothing older.
 */
static void robson(struct adversary *a, bool comb)
{
    size_t lo = rtm_halffit_fragment_size(a->lim.min_block);
    size_t hi = rtm_halffit_fragment_size(a->lim.max_block);
    uint32_t *ids = malloc(sizeof(uint32_t) * (a->lim.max_live / a->lim.min_block + 1));
    REQUIRE(ids != NULL, );
    for (size_t f = lo; f <= hi; f *= 2) {
        size_t r = smallest_of(f);
        if (r < a->lim.min_block)
            r = a->lim.min_block;
        if (r > a->lim.max_block)
            break;
        size_t k = 0, first = a->ids;
        while (adv_alloc(a, r) != UINT32_MAX)
            k++;
        if (k == 0)
            break;
        k = 0;
        for (uint32_t id = comb ? (uint32_t)first : 0; id < a->ids; id++)
            if (a->at[id])
                ids[k++] = id;
        sort_at = a->at;
        qsort(ids, k, sizeof(*ids), by_address);
        uintptr_t run = frag_end(a, ids[0]); /* where the hole being made starts */
        for (size_t i = 1; i + 1 < k; i++) {
            bool drop = comb ? i % 2 == 0 : frag_start(a, ids[i + 1]) - run < 2 * f;
            if (drop)
                adv_free(a, ids[i]);
            else
                run = frag_end(a, ids[i]);
        }
    }
    free(ids);
    /* the last request: as large as the limits allow */
    size_t last = a->lim.max_live - a->live;
    adv_alloc(a, last < a->lim.max_block ? last : a->lim.max_block);
}

/* Pins made by realloc: blocks of one size fill the limit and are shrunk
 * to the smallest request (rtmem size's "holes"); the next round asks a
 * size a class larger. A shrink moves the block where the lists choose. */
static void pins(struct adversary *a)
{
    size_t pin = a->lim.min_block;
    uint32_t *round = malloc(sizeof(uint32_t) * (a->lim.max_live / a->lim.min_block + 1));
    REQUIRE(round != NULL, );
    for (size_t s = 2 * pin + 16; s <= a->lim.max_block; s = 2 * s + 16) {
        size_t k = 0;
        uint32_t id;
        while (a->live + s + pin <= a->lim.max_live && (id = adv_alloc(a, s)) != UINT32_MAX)
            round[k++] = id;
        for (size_t i = 0; i < k; i++)
            adv_realloc(a, round[i], pin);
    }
    free(round);
    size_t last = a->lim.max_live - a->live;
    adv_alloc(a, last < a->lim.max_block ? last : a->lim.max_block);
}

/* Pins made one at a time behind the next large block: x(i) and x(i + 1)
 * live, x(i) shrunk to a pin, a hole behind it (were shrinking done in
 * place, each pin would hold a hole of the largest class for a few bytes
 * and the memory needed would grow as M n / m). */
static void trail(struct adversary *a)
{
    size_t big = a->lim.max_block, pin = a->lim.min_block;
    uint32_t prev = adv_alloc(a, big);
    while (prev != UINT32_MAX) {
        if (a->live + big + pin > a->lim.max_live)
            break;
        uint32_t next = adv_alloc(a, big);
        if (next == UINT32_MAX || !adv_realloc(a, prev, pin))
            break;
        prev = next;
    }
    size_t last = a->lim.max_live - a->live;
    adv_alloc(a, last < a->lim.max_block ? last : a->lim.max_block);
}

/* Random sizes (log-uniform), resizes and frees within the limits. */
static void walk(struct adversary *a)
{
    uint64_t rng = 0x40b50f;
    uint32_t live[4096];
    size_t k = 0;
    for (int i = 0; i < 20000; i++) {
        unsigned bits = (unsigned)rng_range(&rng, 0, 20);
        size_t size = a->lim.min_block + (size_t)(rng_next(&rng) % ((size_t)1 << bits));
        if (size > a->lim.max_block)
            size = a->lim.max_block;
        unsigned what = (unsigned)(rng_next(&rng) % 8);
        if (what == 0 && k > 0 && adv_realloc(a, live[rng_next(&rng) % k], size))
            continue;
        if (what < 5 && k < 4096) {
            uint32_t id = adv_alloc(a, size);
            if (id != UINT32_MAX) {
                live[k++] = id;
                continue;
            }
        }
        if (k == 0)
            continue;
        size_t j = (size_t)(rng_next(&rng) % k);
        adv_free(a, live[j]);
        live[j] = live[--k];
    }
}

/* Replays the program on a fresh heap in [mem, mem + bytes): the number of
 * requests refused (0: the pool was enough). */
static size_t replay(const struct adversary *a, unsigned char *mem, size_t bytes, void **at)
{
    struct rtm_halffit *h = rtm_halffit_create(mem, bytes);
    if (!h)
        return 1;
    size_t refused = 0;
    for (size_t i = 0; i < a->n && refused == 0; i++) {
        const struct step *s = &a->steps[i];
        if (s->op == STEP_ALLOC)
            refused += (at[s->id] = rtm_halffit_alloc(h, s->size)) == NULL;
        else if (s->op == STEP_FREE)
            CHECK_EQ(rtm_halffit_free(h, at[s->id]), 0);
        else {
            void *q = rtm_halffit_realloc(h, at[s->id], s->size);
            refused += q == NULL;
            at[s->id] = q;
        }
    }
    CHECK(refused || rtm_halffit_check(h) == 0);
    return refused;
}

/* Builds the adversary on a heap of the bound's size, replays it there
 * (it must never be refused) and searches the smallest pool it needs.
 * Returns needed / bound. */
static double needs(const char *name, void (*build)(struct adversary *),
                    const struct rtm_heap_limits *lim, double at_least)
{
    static char ctx[128];
    snprintf(ctx, sizeof(ctx), "%s, M %zu, requests %zu..%zu", name, lim->max_live, lim->min_block,
             lim->max_block);
    test_context = ctx;
    size_t bound = rtm_heap_pool_bound_ex("halffit", lim);
    REQUIRE(bound != 0, 0);
    unsigned char *mem = mmap(NULL, bound, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    REQUIRE(mem != MAP_FAILED, 0);
    struct adversary a = { .name = name, .lim = *lim };
    a.h = rtm_heap_create("halffit", mem, bound);
    REQUIRE(a.h != NULL, 0);
    build(&a);
    CHECK(a.live <= lim->max_live);
    void **at = calloc(a.ids + 1, sizeof(void *));
    REQUIRE(at != NULL, 0);
    CHECK_EQ(replay(&a, mem, bound, at), 0); /* the bound is enough */
    /* the smallest pool that is enough (below lo: refused) */
    size_t lo = 0, hi = bound;
    while (hi - lo > 64) {
        size_t mid = lo + (hi - lo) / 2;
        if (replay(&a, mem, mid, at) == 0)
            hi = mid;
        else
            lo = mid;
    }
    double ratio = (double)hi / (double)bound;
    printf("  %-8s M %7zu, requests %5zu..%-6zu  needs %9zu bytes: %5.1f x M, %.2f of the bound "
           "(%zu)\n",
           name, lim->max_live, lim->min_block, lim->max_block, hi, (double)hi / lim->max_live,
           ratio, bound);
    CHECK(ratio >= at_least);
    free(at);
    free(a.steps);
    free(a.size_of);
    free(a.at);
    munmap(mem, bound);
    test_context = NULL;
    return ratio;
}

static void robson_spans(struct adversary *a)
{
    robson(a, false);
}

static void robson_comb(struct adversary *a)
{
    robson(a, true);
}

/* Limits, and the share of the bound Robson's adversary reaches at least
 * (the bound counts every class at the worst fragment-per-byte ratio,
 * rho, which only the smallest requests reach: with requests of one byte
 * (rho 32) it is the loosest). */
static const struct {
    struct rtm_heap_limits lim;
    double spans;
} robson_limits[] = {
    { { .max_live = 64u << 10, .max_block = 4080, .min_block = 16 }, 0.3 },
    { { .max_live = 256u << 10, .max_block = 16368, .min_block = 16 }, 0.3 },
    { { .max_live = 256u << 10, .max_block = 65520, .min_block = 100 }, 0.4 },
    { { .max_live = 128u << 10, .max_block = 8176, .min_block = 1 }, 0.12 },
};
#define N_LIMITS (sizeof(robson_limits) / sizeof(robson_limits[0]))

TEST_CASE("Robson's adversary needs a large share of the bound, and none needs more")
{
    for (size_t i = 0; i < N_LIMITS; i++) {
        needs("spans", robson_spans, &robson_limits[i].lim, robson_limits[i].spans);
        needs("comb", robson_comb, &robson_limits[i].lim, 0.1);
    }
}

TEST_CASE("pins made by realloc, alone or behind the next block, stay within the bound")
{
    for (size_t i = 0; i < N_LIMITS; i++) {
        needs("pins", pins, &robson_limits[i].lim, 0.0);
        needs("trail", trail, &robson_limits[i].lim, 0.0);
        needs("walk", walk, &robson_limits[i].lim, 0.0);
    }
}

/* The bound's figure itself (rtmem/halffit.h): one class is exactly M_f;
 * each class more adds M_f. */
TEST_CASE("the bound is M_f (1 + classes), plus the heap's own bytes")
{
    struct rtm_heap_limits one = { .max_live = 37 * 1000, .max_block = 1000, .min_block = 1000 };
    size_t b1 = rtm_heap_pool_bound_ex("halffit", &one);
    /* rho = 1024 / 1000: M_f = 37 * 1024, and less than 1 KiB of control */
    CHECK(b1 >= 37 * 1024 && b1 < 37 * 1024 + RTM_HALFFIT_CONTROL_BYTES + 256);
    struct rtm_heap_limits two = one;
    two.min_block = 1000 - 8 * 64;
    two.max_live = 37 * 1000;
    size_t b2 = rtm_heap_pool_bound_ex("halffit", &two);
    CHECK(b2 > 2 * 37 * 1024);
    struct rtm_heap_limits big = { .max_live = (size_t)1 << (sizeof(size_t) == 8 ? 34 : 26),
                                   .max_block = 4096 };
    errno = 0;
    /* E2BIG past the largest pool; on 32-bit that is past half the address
     * space too, which the bound calls EOVERFLOW (rtmem/heap.h) */
    CHECK(rtm_heap_pool_bound_ex("halffit", &big) == 0 &&
          errno == (sizeof(size_t) == 8 ? E2BIG : EOVERFLOW));
    struct rtm_heap_limits huge = { .max_live = 4096, .max_block = RTM_HALFFIT_MAX_REQUEST + 1 };
    errno = 0;
    CHECK(rtm_heap_pool_bound_ex("halffit", &huge) != 0); /* max_block above M counts as M */
    huge.max_live = SIZE_MAX;
    errno = 0;
    CHECK(rtm_heap_pool_bound_ex("halffit", &huge) == 0 && errno == E2BIG);
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, "halffit");
}
