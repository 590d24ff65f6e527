/*
 * Promises of the page-and-bucket kinds (heapmem, xnheap) beyond the common
 * contract: the extent bug of Xenomai's heapmem cannot happen, bucket pages
 * live and die as documented, page runs merge, bad frees of every sort are
 * refused, realloc stays in place where it can, fill counts are exact, and a
 * huge reservation costs nothing until used.
 */
#include <errno.h>
#include <sys/mman.h>

#include "check.h"
#include "rtmem/heap.h"
#include "rtmem/heapmem.h"

#define PAGE RTM_PAGEHEAP_PAGE_SIZE

static unsigned char arena[1u << 20] __attribute__((aligned(4096)));
static unsigned char second[1u << 18] __attribute__((aligned(4096)));

static struct rtm_heap_stats stats(const struct rtm_heap *h)
{
    struct rtm_heap_stats st;
    rtm_heap_stats(h, &st);
    return st;
}

static bool disjoint(const struct rtm_heap *h, const unsigned char *a, const unsigned char *b)
{
    size_t ua = rtm_heap_usable_size(h, a), ub = rtm_heap_usable_size(h, b);
    return a + ua <= b || b + ub <= a;
}

/*
 * Xenomai's heapmem, once extended, reads one extent's small-block
 * bookkeeping against another extent's page map and hands out a 16-byte block
 * inside a live 32-byte block. The scenario: 32 bytes, the rest of the first
 * pool as one run, a second pool, then two 16-byte blocks.
 */
static void test_extent_bug(const char *kind)
{
    memset(arena, 0x5a, sizeof(arena));
    struct rtm_heap *h = rtm_heap_create(kind, arena, 64u << 10);
    REQUIRE(h != NULL, );
    unsigned char *b32 = rtm_heap_alloc(h, 32);
    REQUIRE(b32 != NULL, );
    unsigned char *run = rtm_heap_alloc(h, stats(h).largest_free_bytes);
    CHECK(run != NULL);
    CHECK(stats(h).largest_free_bytes <= 32); /* only 32-byte slots are left */
    CHECK_EQ(rtm_heap_add_pool(h, second, sizeof(second)), 0);
    unsigned char *a = rtm_heap_alloc(h, 16), *b = rtm_heap_alloc(h, 16);
    REQUIRE(a && b, );
    CHECK(disjoint(h, a, b));
    CHECK(disjoint(h, a, b32) && disjoint(h, b, b32));
    CHECK(!run || (disjoint(h, a, run) && disjoint(h, b, run)));
    CHECK(a >= second && a < second + sizeof(second)); /* new class page: new pool */
    memset(b32, 0x11, 32);
    memset(a, 0x22, 16);
    memset(b, 0x33, 16);
    for (int i = 0; i < 32; i++)
        CHECK(b32[i] == 0x11);
    CHECK_EQ(rtm_heap_check(h), 0);
    CHECK_EQ(rtm_heap_free(h, a), 0);
    CHECK_EQ(rtm_heap_free(h, b), 0);
    CHECK_EQ(rtm_heap_free(h, b32), 0);
    if (run)
        CHECK_EQ(rtm_heap_free(h, run), 0);
    CHECK_EQ(stats(h).used_bytes, 0);
    CHECK_EQ(rtm_heap_check(h), 0);
}

/* A bucket page: full leaves its list, a freed slot is reused first, an
 * empty page goes back to the page runs. */
static void test_bucket_pages(const char *kind)
{
    struct rtm_heap *h = rtm_heap_create(kind, arena, sizeof(arena));
    REQUIRE(h != NULL, );
    struct rtm_heap_stats fresh = stats(h);
    unsigned char *slot[33];
    for (int i = 0; i < 32; i++) {
        slot[i] = rtm_heap_alloc(h, 16);
        REQUIRE(slot[i] != NULL, );
        CHECK_EQ(rtm_heap_usable_size(h, slot[i]), 16);
        /* all 32 slots of one page, in order */
        CHECK(slot[i] == slot[0] + 16 * i);
    }
    CHECK((uintptr_t)slot[0] % PAGE == 0);
    CHECK_EQ(stats(h).used_bytes, 32 * 16);
    CHECK_EQ(stats(h).largest_free_bytes, fresh.largest_free_bytes - PAGE);
    slot[32] = rtm_heap_alloc(h, 16); /* the page is full: a new one */
    CHECK((uintptr_t)slot[32] % PAGE == 0 && slot[32] != slot[0]);
    CHECK_EQ(rtm_heap_free(h, slot[7]), 0);
    CHECK(rtm_heap_alloc(h, 9) == slot[7]); /* the regained slot, first */
    CHECK_EQ(rtm_heap_free(h, slot[32]), 0); /* its page empties: back to the runs */
    CHECK_EQ(stats(h).largest_free_bytes, fresh.largest_free_bytes - PAGE);
    for (int i = 0; i < 32; i++)
        CHECK_EQ(rtm_heap_free(h, slot[i]), 0);
    CHECK_EQ(stats(h).largest_free_bytes, fresh.largest_free_bytes);
    CHECK_EQ(stats(h).used_bytes, 0);
    /* Classes: 16 for 0..16, then powers of two up to 256, pages above. */
    size_t want[][2] = { { 0, 16 }, { 1, 16 }, { 17, 32 }, { 33, 64 }, { 100, 128 },
                         { 256, 256 }, { 257, 512 }, { 513, 1024 }, { 5000, 5120 } };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        void *p = rtm_heap_alloc(h, want[i][0]);
        CHECK_EQ(rtm_heap_usable_size(h, p), want[i][1]);
        CHECK((uintptr_t)p % (want[i][1] < PAGE ? want[i][1] : PAGE) == 0);
        rtm_heap_free(h, p);
    }
    CHECK_EQ(rtm_heap_check(h), 0);
}

static void test_runs_and_bad_frees(const char *kind)
{
    struct rtm_heap *h = rtm_heap_create(kind, arena, sizeof(arena));
    REQUIRE(h != NULL, );
    struct rtm_heap_stats fresh = stats(h);
    unsigned char *r[3];
    for (int i = 0; i < 3; i++)
        r[i] = rtm_heap_alloc(h, 1000); /* two pages each */
    REQUIRE(r[0] && r[1] && r[2], );
    unsigned char *s = rtm_heap_alloc(h, 32);
    REQUIRE(s != NULL, );
    struct rtm_heap_stats before = stats(h);
    /* Refused, heap unchanged: */
    CHECK_EQ(rtm_heap_free(h, r[0] + PAGE), -EINVAL);  /* a run's second page */
    CHECK_EQ(rtm_heap_free(h, r[0] + 16), -EINVAL);    /* inside a run's head page */
    CHECK_EQ(rtm_heap_free(h, s + 16), -EINVAL);       /* inside a 32-byte slot */
    CHECK_EQ(rtm_heap_free(h, s + 32), -EINVAL);       /* a slot that is free */
    CHECK_EQ(rtm_heap_free(h, arena + 4096 * 3), -EINVAL);  /* a page never handed out */
    CHECK_EQ(rtm_heap_free(h, arena + 8), -EINVAL);          /* the control structure */
    struct rtm_heap_stats after = stats(h);
    CHECK_EQ(after.used_bytes, before.used_bytes);
    CHECK_EQ(after.live_blocks, before.live_blocks);
    CHECK_EQ(rtm_heap_check(h), 0);
    /* Free the outer runs, then the middle: one free run again. */
    CHECK_EQ(rtm_heap_free(h, r[0]), 0);
    CHECK_EQ(rtm_heap_free(h, r[0]), -EINVAL); /* twice */
    CHECK_EQ(rtm_heap_free(h, r[2]), 0);
    CHECK_EQ(rtm_heap_free(h, r[1]), 0);
    CHECK_EQ(rtm_heap_free(h, r[1]), -EINVAL); /* its page is inside a free run now */
    CHECK_EQ(rtm_heap_free(h, s), 0);
    CHECK_EQ(rtm_heap_free(h, s), -EINVAL);    /* its page went back to the runs */
    CHECK_EQ(stats(h).largest_free_bytes, fresh.largest_free_bytes);
    CHECK_EQ(rtm_heap_check(h), 0);
}

static void test_realloc_in_place(const char *kind)
{
    struct rtm_heap *h = rtm_heap_create(kind, arena, sizeof(arena));
    REQUIRE(h != NULL, );
    unsigned char *a = rtm_heap_alloc(h, 4 * PAGE);
    REQUIRE(a != NULL, );
    memset(a, 0x6b, 4 * PAGE);
    size_t used = stats(h).used_bytes;
    CHECK(rtm_heap_realloc(h, a, 2 * PAGE) == a); /* shrink: tail pages freed */
    CHECK_EQ(stats(h).used_bytes, used - 2 * PAGE);
    /* Runs are cut from the tail of the free run, so the pages after a are
     * the ones just given back: growing reclaims them in place. */
    CHECK(rtm_heap_realloc(h, a, 3 * PAGE + 1) == a);
    CHECK_EQ(rtm_heap_usable_size(h, a), 4 * PAGE);
    for (size_t i = 0; i < 2 * PAGE; i++)
        if (a[i] != 0x6b) {
            CHECK(!"contents kept");
            break;
        }
    unsigned char *s = rtm_heap_alloc(h, 40);
    CHECK(rtm_heap_realloc(h, s, 64) == s); /* same class */
    unsigned char *t = rtm_heap_realloc(h, s, 65);
    CHECK(t != NULL && t != s && rtm_heap_usable_size(h, t) == 128);
    CHECK_EQ(rtm_heap_check(h), 0);
}

static void test_aligned_beyond_page(const char *kind)
{
    struct rtm_heap *h = rtm_heap_create(kind, arena, sizeof(arena));
    REQUIRE(h != NULL, );
    struct rtm_heap_stats fresh = stats(h);
    void *p[8];
    for (int i = 0; i < 8; i++) {
        size_t align = (size_t)1024 << (i % 4);
        p[i] = rtm_heap_aligned_alloc(h, align, 700);
        REQUIRE(p[i] != NULL, );
        CHECK((uintptr_t)p[i] % align == 0);
        CHECK_EQ(rtm_heap_usable_size(h, p[i]), 2 * PAGE); /* the slack went back */
    }
    CHECK_EQ(stats(h).used_bytes, 8 * 2 * PAGE);
    for (int i = 0; i < 8; i++)
        CHECK_EQ(rtm_heap_free(h, p[i]), 0);
    CHECK_EQ(stats(h).largest_free_bytes, fresh.largest_free_bytes);
    CHECK_EQ(rtm_heap_check(h), 0);
}

static void test_exact_fill(const char *kind)
{
    struct rtm_heap *h = rtm_heap_create(kind, arena, sizeof(arena));
    REQUIRE(h != NULL, );
    size_t pages = stats(h).usable_bytes / PAGE;
    size_t sizes[] = { 1, 16, 24, 64, 200, 256, 257, 512, 513, 3000, 70000 };
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t n = sizes[i], count = 0;
        while (rtm_heap_alloc(h, n))
            count++;
        size_t expect = pages / ((n + PAGE - 1) / PAGE);
        if (n <= 256) {
            size_t cls = 16;
            while (cls < n)
                cls *= 2;
            expect = pages * (PAGE / cls);
        }
        CHECK_EQ(count, expect);
        CHECK_EQ(count, rtm_heap_fill_count(h, n));
        /* empty the heap again */
        h = rtm_heap_create(kind, arena, sizeof(arena));
        REQUIRE(h != NULL, );
    }
}

/* 64 GiB of address space: create touches no page map, and only what is
 * used is ever written. */
static void test_lazy_page_map(const char *kind)
{
    size_t size = (size_t)64 << 30;
    unsigned char *mem = mmap(NULL, size, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) {
        printf("pageheap: cannot reserve 64 GiB; lazy page map test skipped\n");
        return;
    }
    struct rtm_heap *h = rtm_heap_create(kind, mem, size);
    REQUIRE(h != NULL, );
    CHECK(stats(h).usable_bytes > size - size / 16);
    void *p[100];
    for (int i = 0; i < 100; i++)
        p[i] = rtm_heap_alloc(h, (size_t)(i + 1) * 300);
    CHECK_EQ(rtm_heap_check(h), 0);
    for (int i = 0; i < 100; i++)
        CHECK_EQ(rtm_heap_free(h, p[i]), 0);
    CHECK_EQ(rtm_heap_check(h), 0);
    /* Resident memory of the mapping: a few pages, not the 3 GiB page map. */
    unsigned char vec[1];
    size_t resident = 0;
    for (size_t off = 0; off < size; off += (size_t)1 << 26) /* sample every 64 MiB */
        if (mincore(mem + off, 4096, vec) == 0 && (vec[0] & 1))
            resident++;
    CHECK(resident <= 4);
    munmap(mem, size);
}

int main(void)
{
    const char *kinds[] = { "heapmem", "xnheap" };
    for (size_t k = 0; k < 2; k++) {
        test_context = kinds[k];
        test_extent_bug(kinds[k]);
        test_bucket_pages(kinds[k]);
        test_runs_and_bad_frees(kinds[k]);
        test_realloc_in_place(kinds[k]);
        test_aligned_beyond_page(kinds[k]);
        test_exact_fill(kinds[k]);
        test_lazy_page_map(kinds[k]);
    }
    test_context = NULL;
    return test_summary("pageheap");
}
