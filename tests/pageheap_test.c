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
#include "rtmem/xnheap.h"

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
    CHECK_EQ(rtm_heap_free(h, arena + 16), -EINVAL); /* the control structure */
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

/* Review finding: pages never handed out have uninitialised page-map
 * entries; garbage there that reads as a live run must not make a free
 * valid. Every word of the memory reads as a page-map entry "RUN of 1 page"
 * here, whatever the page map's alignment. */
static void test_never_used_pages(const char *kind)
{
    uint64_t fake = 0x0000000100000001ull; /* type RUN, one page, in any 8-byte slot */
    for (size_t i = 0; i < sizeof(arena); i += 8)
        memcpy(arena + i, &fake, 8);
    struct rtm_heap *h = rtm_heap_create(kind, arena, sizeof(arena));
    REQUIRE(h != NULL, );
    unsigned char *last = rtm_heap_alloc(h, PAGE); /* runs come from the tail */
    REQUIRE(last != NULL, );
    unsigned char *first = last + PAGE - stats(h).usable_bytes;
    CHECK((uintptr_t)first % PAGE == 0);
    CHECK_EQ(rtm_heap_free(h, first), -EINVAL);
    CHECK_EQ(rtm_heap_free(h, first + 5 * PAGE), -EINVAL);
    CHECK_EQ(rtm_heap_usable_size(h, first), 0);
    CHECK(rtm_heap_realloc(h, first, 10) == NULL);
    CHECK_EQ(rtm_heap_check(h), 0);
    CHECK_EQ(rtm_heap_free(h, last), 0);
    CHECK_EQ(stats(h).used_bytes, 0);
    CHECK_EQ(rtm_heap_check(h), 0);
}

/* check() finds a corrupted free-run descriptor (and does not crash). */
static void test_check_finds_corruption(const char *kind)
{
    struct rtm_heap *h = rtm_heap_create(kind, arena, sizeof(arena));
    REQUIRE(h != NULL, );
    unsigned char *r[3];
    for (int i = 0; i < 3; i++)
        r[i] = rtm_heap_alloc(h, 2 * PAGE);
    REQUIRE(r[0] && r[1] && r[2], );
    CHECK_EQ(rtm_heap_free(h, r[1]), 0); /* a free run on its own: its descriptor is at r[1] */
    CHECK_EQ(rtm_heap_check(h), 0);
    unsigned char saved[64];
    memcpy(saved, r[1], sizeof(saved));
    memset(r[1], 0xff, sizeof(saved));
    CHECK_EQ(rtm_heap_check(h), -EFAULT);
    memcpy(r[1], saved, sizeof(saved));
    CHECK_EQ(rtm_heap_check(h), 0);
}

/* Review finding: going smaller must not fail on a full heap. */
static void test_shrink_on_full_heap(const char *kind)
{
    struct rtm_heap *h = rtm_heap_create(kind, arena, 64u << 10);
    REQUIRE(h != NULL, );
    unsigned char *run = rtm_heap_alloc(h, 4 * PAGE);
    unsigned char *s32 = rtm_heap_alloc(h, 32);
    REQUIRE(run && s32, );
    while (rtm_heap_alloc(h, 16))
        ;
    while (rtm_heap_alloc(h, 32))
        ;
    while (rtm_heap_alloc(h, PAGE))
        ;
    CHECK_EQ(stats(h).largest_free_bytes, 0);
    CHECK(rtm_heap_realloc(h, s32, 10) == s32); /* no 16-byte slot: stays */
    memset(run, 0x3c, 100);
    CHECK(rtm_heap_realloc(h, run, 100) == run); /* no 128-byte slot: stays, one page */
    CHECK_EQ(rtm_heap_usable_size(h, run), PAGE);
    CHECK(run[99] == 0x3c);
    CHECK_EQ(rtm_heap_check(h), 0);
}

/* Review finding: runs grow in place into a free run that is larger than
 * needed (its descriptor moves to the rest). */
static void test_grow_into_larger_run(const char *kind)
{
    struct rtm_heap *h = rtm_heap_create(kind, arena, sizeof(arena));
    REQUIRE(h != NULL, );
    unsigned char *a = rtm_heap_alloc(h, 8 * PAGE);
    unsigned char *b = rtm_heap_alloc(h, PAGE); /* below a: runs come from the tail */
    REQUIRE(a && b && b + PAGE == a, );
    CHECK_EQ(rtm_heap_free(h, a), 0);           /* a free run of 8 pages after b */
    unsigned char *c = rtm_heap_alloc(h, PAGE); /* keeps a's run from merging away */
    (void)c;
    CHECK(rtm_heap_realloc(h, b, 3 * PAGE) == b);
    CHECK_EQ(rtm_heap_usable_size(h, b), 3 * PAGE);
    CHECK_EQ(rtm_heap_check(h), 0);
}

static void test_e2big(const char *kind)
{
    size_t size = RTM_PAGEHEAP_MAX_PAGES * (PAGE + RTM_PAGEHEAP_PAGEMAP_BYTES) + ((size_t)1 << 30);
    unsigned char *mem = mmap(NULL, size, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) {
        printf("pageheap: cannot reserve %zu bytes; E2BIG test skipped\n", size);
        return;
    }
    errno = 0;
    CHECK(rtm_heap_create(kind, mem, size) == NULL);
    CHECK_EQ(errno, E2BIG);
    struct rtm_heap *h = rtm_heap_create(kind, arena, sizeof(arena));
    REQUIRE(h != NULL, );
    CHECK_EQ(rtm_heap_add_pool(h, mem, size), -E2BIG);
    CHECK_EQ(rtm_heap_add_pool(h, mem, 600), -ENOMEM); /* a descriptor, no page */
    CHECK_EQ(stats(h).pool_count, 1);
    CHECK_EQ(rtm_heap_check(h), 0);
    munmap(mem, size);
}

/* The typed APIs and the generic one give the same heap. */
static void test_typed(void)
{
    test_context = "typed";
    static unsigned char other[sizeof(arena)] __attribute__((aligned(4096)));
    struct rtm_heapmem *m = rtm_heapmem_create(arena, sizeof(arena));
    struct rtm_heap *g = rtm_heap_create("heapmem", other, sizeof(other));
    REQUIRE(m && g, );
    CHECK(strcmp(rtm_heap_kind(rtm_heapmem_heap(m)), "heapmem") == 0);
    uint64_t rng = 5;
    void *a[128] = { 0 }, *b[128] = { 0 };
    for (int step = 0; step < 20000; step++) {
        size_t i = rng_next(&rng) % 128, n = (size_t)rng_range(&rng, 0, 5000);
        if (a[i]) {
            CHECK_EQ(rtm_heapmem_free(m, a[i]), rtm_heap_free(g, b[i]));
            a[i] = b[i] = NULL;
        } else {
            a[i] = rtm_heapmem_alloc(m, n);
            b[i] = rtm_heap_alloc(g, n);
            CHECK(((unsigned char *)a[i] - arena) == ((unsigned char *)b[i] - other));
            CHECK_EQ(rtm_heapmem_usable_size(m, a[i]), rtm_heap_usable_size(g, b[i]));
        }
    }
    CHECK_EQ(rtm_heapmem_check(m), 0);
    struct rtm_heap_stats sm, sg;
    CHECK_EQ(rtm_heapmem_stats(m, &sm), 0);
    rtm_heap_stats(g, &sg);
    CHECK(memcmp(&sm, &sg, sizeof(sm)) == 0);
    struct rtm_xnheap *x = rtm_xnheap_create(arena, sizeof(arena));
    REQUIRE(x != NULL, );
    void *p = rtm_xnheap_aligned_alloc(x, 4096, 100);
    CHECK(p != NULL && (uintptr_t)p % 4096 == 0);
    p = rtm_xnheap_realloc(x, p, 3000);
    CHECK(p != NULL && rtm_xnheap_usable_size(x, p) >= 3000);
    CHECK_EQ(rtm_xnheap_add_pool(x, second, sizeof(second)), 0);
    CHECK_EQ(rtm_xnheap_free(x, p), 0);
    CHECK_EQ(rtm_xnheap_check(x), 0);
    CHECK_EQ(rtm_xnheap_add_pool(NULL, second, sizeof(second)), -EINVAL);
    CHECK_EQ(rtm_xnheap_check(NULL), -EINVAL);
    /* the typed API refuses a destroyed heap as rtm_heap_* does */
    struct rtm_heap_stats sd;
    rtm_heap_destroy(rtm_xnheap_heap(x));
    CHECK_EQ(rtm_xnheap_stats(x, &sd), -EINVAL);
    rtm_heap_destroy(rtm_heapmem_heap(m));
    CHECK_EQ(rtm_heapmem_stats(m, &sd), -EINVAL);
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
        test_never_used_pages(kinds[k]);
        test_check_finds_corruption(kinds[k]);
        test_shrink_on_full_heap(kinds[k]);
        test_grow_into_larger_run(kinds[k]);
        test_e2big(kinds[k]);
    }
    test_typed();
    test_context = NULL;
    return test_summary("pageheap");
}
