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

/* Runs a check on a heap of each page kind, the kind as its context. */
static void each_kind(void (*check)(const char *kind))
{
    static const char *const kinds[] = { "heapmem", "xnheap" };
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        test_context = kinds[k];
        check(kinds[k]);
    }
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
static void extent_bug(const char *kind)
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

TEST_CASE("an extended heap never hands out a block inside a live one")
{
    each_kind(extent_bug);
}

/* A bucket page: full leaves its list, a freed slot is reused first, an
 * empty page goes back to the page runs. */
static void bucket_pages(const char *kind)
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
    CHECK(rtm_heap_alloc(h, 9) == slot[7]);  /* the regained slot, first */
    CHECK_EQ(rtm_heap_free(h, slot[32]), 0); /* its page empties: back to the runs */
    CHECK_EQ(stats(h).largest_free_bytes, fresh.largest_free_bytes - PAGE);
    for (int i = 0; i < 32; i++)
        CHECK_EQ(rtm_heap_free(h, slot[i]), 0);
    CHECK_EQ(stats(h).largest_free_bytes, fresh.largest_free_bytes);
    CHECK_EQ(stats(h).used_bytes, 0);
    /* Classes: 16 for 0..16, then powers of two up to 256, pages above. */
    size_t want[][2] = { { 0, 16 },    { 1, 16 },    { 17, 32 },    { 33, 64 },    { 100, 128 },
                         { 256, 256 }, { 257, 512 }, { 513, 1024 }, { 5000, 5120 } };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        void *p = rtm_heap_alloc(h, want[i][0]);
        CHECK_EQ(rtm_heap_usable_size(h, p), want[i][1]);
        CHECK((uintptr_t)p % (want[i][1] < PAGE ? want[i][1] : PAGE) == 0);
        rtm_heap_free(h, p);
    }
    CHECK_EQ(rtm_heap_check(h), 0);
}

TEST_CASE("a bucket page fills, reuses a freed slot first and empties back into the runs")
{
    each_kind(bucket_pages);
}

static void runs_and_bad_frees(const char *kind)
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
    CHECK_EQ(rtm_heap_free(h, r[0] + PAGE), -EINVAL); /* a run's second page */
    CHECK_EQ(rtm_heap_free(h, r[0] + 16), -EINVAL);   /* inside a run's head page */
    CHECK_EQ(rtm_heap_free(h, s + 16), -EINVAL);      /* inside a 32-byte slot */
    CHECK_EQ(rtm_heap_free(h, s + 32), -EINVAL);      /* a slot that is free */
    CHECK_EQ(rtm_heap_free(h, arena + 16), -EINVAL);  /* the control structure */
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
    CHECK_EQ(rtm_heap_free(h, s), -EINVAL); /* its page went back to the runs */
    CHECK_EQ(stats(h).largest_free_bytes, fresh.largest_free_bytes);
    CHECK_EQ(rtm_heap_check(h), 0);
}

TEST_CASE("bad frees are refused and freed runs merge into one")
{
    each_kind(runs_and_bad_frees);
}

/* Review finding: pages never handed out have uninitialised page-map
 * entries; garbage there that reads as a live run must not make a free
 * valid. Every word of the memory reads as a page-map entry "RUN of 1 page"
 * here, whatever the page map's alignment. */
static void never_used_pages(const char *kind)
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

TEST_CASE("garbage in never-used page-map entries makes no free valid")
{
    each_kind(never_used_pages);
}

/* check() finds a corrupted free-run descriptor (and does not crash). */
static void check_finds_corruption(const char *kind)
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

TEST_CASE("check finds a corrupted free-run descriptor")
{
    each_kind(check_finds_corruption);
}

/* Review finding: going smaller must not fail on a full heap. */
static void shrink_on_full_heap(const char *kind)
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

TEST_CASE("going smaller on a full heap stays in place")
{
    each_kind(shrink_on_full_heap);
}

/* Review finding: runs grow in place into a free run that is larger than
 * needed (its descriptor moves to the rest). */
static void grow_into_larger_run(const char *kind)
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

TEST_CASE("a run grows in place into a larger free run")
{
    each_kind(grow_into_larger_run);
}

static void e2big(const char *kind)
{
    /* (Terabytes of guest mapping exhaust qemu-user's own record of its
     * pages: not tried under an emulator.) */
    if (test_emulated()) {
        printf("pageheap: E2BIG test (terabytes of address space) not tried under %s\n",
               test_emulated());
        return;
    }
    if (RTM_PAGEHEAP_MAX_PAGES >
        (SIZE_MAX - ((size_t)1 << 30)) / (PAGE + RTM_PAGEHEAP_PAGEMAP_BYTES)) {
        printf("pageheap: no pool too large for %s fits this address space; E2BIG test skipped\n",
               kind);
        return;
    }
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

TEST_CASE("a pool beyond the page limit is refused with E2BIG")
{
    each_kind(e2big);
}

/* The typed APIs and the generic one give the same heap. */
TEST_CASE("the typed APIs give the same heap as the generic one")
{
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

static void realloc_in_place(const char *kind)
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

TEST_CASE("realloc shrinks and grows runs in place")
{
    each_kind(realloc_in_place);
}

static void aligned_beyond_page(const char *kind)
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

TEST_CASE("alignments beyond a page give the slack back")
{
    each_kind(aligned_beyond_page);
}

static void exact_fill(const char *kind)
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

TEST_CASE("fill counts are exact for every size class")
{
    each_kind(exact_fill);
}

/* 64 GiB of address space: create touches no page map, and only what is
 * used is ever written. */
static void lazy_page_map(const char *kind)
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

TEST_CASE("a 64 GiB heap writes only the pages it uses")
{
    each_kind(lazy_page_map);
}

/* ---- hardening: overflows past a block ------------------------------------------ */

/* A heap in the middle of ovf_mem, with guard bytes on both sides that the
 * heap must never write. */
#define OVF_GUARD 4096
#define OVF_HEAP  (64u << 10)
static unsigned char ovf_mem[OVF_GUARD + OVF_HEAP + OVF_GUARD] __attribute__((aligned(4096)));
#define OVF_LO (ovf_mem + OVF_GUARD)
#define OVF_HI (OVF_LO + OVF_HEAP)

/* What the corruption handler was told. */
struct reports {
    unsigned calls;
    const void *block, *where;
    const char *what;
    const void *want_where; /* a report with this where was seen: saw_where */
    bool saw_where;
};

static void record(const struct rtm_heap_corruption *c, void *arg)
{
    struct reports *r = arg;
    r->calls++;
    r->block = c->block;
    r->where = c->where;
    r->what = c->what;
    if (c->where && c->where == r->want_where)
        r->saw_where = true;
}

/* The blocks a trial holds: each filled with its own byte, except the
 * neighbour the overflow hit, which is compared with a snapshot. */
#define OVF_MAX_HELD 256
struct held {
    unsigned char *p;
    size_t len;
    unsigned char fill; /* 0: compare with the snapshot */
};

struct trial {
    struct rtm_heap *h;
    struct held b[OVF_MAX_HELD];
    size_t n;
    unsigned char snap[4 * PAGE];
    size_t refused; /* frees refused with -EFAULT, allocations refused and counted */
};

static bool held_intact(const struct trial *t, const struct held *b)
{
    if (b->fill == 0)
        return memcmp(b->p, t->snap, b->len) == 0;
    for (size_t i = 0; i < b->len; i++)
        if (b->p[i] != b->fill)
            return false;
    return true;
}

/* A new block from the heap: inside the heap's memory, overlapping nothing
 * held; filled and held. */
static unsigned char *take(struct trial *t, size_t size)
{
    unsigned char *p = rtm_heap_alloc(t->h, size);
    if (!p)
        return NULL;
    size_t len = rtm_heap_usable_size(t->h, p);
    CHECK(len >= size);
    CHECK(p >= OVF_LO && p + len <= OVF_HI);
    for (size_t i = 0; i < t->n; i++)
        if (!(p + len <= t->b[i].p || t->b[i].p + t->b[i].len <= p)) {
            CHECK(!"a new block overlaps a held one");
            return NULL;
        }
    if (t->n == OVF_MAX_HELD) {
        rtm_heap_free(t->h, p);
        return NULL;
    }
    unsigned char fill = (unsigned char)(0x10 + t->n % 200);
    memset(p, fill, len);
    t->b[t->n++] = (struct held){ p, len, fill };
    return p;
}

/* Frees held block i: its contents must be intact; a refusal (-EFAULT)
 * leaves it held. */
static void give(struct trial *t, size_t i)
{
    CHECK(held_intact(t, &t->b[i]));
    int rc = rtm_heap_free(t->h, t->b[i].p);
    CHECK(rc == 0 || rc == -EFAULT);
    if (rc) {
        t->refused++;
        return;
    }
    t->b[i] = t->b[--t->n];
}

static size_t held_index(const struct trial *t, const unsigned char *p)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->b[i].p == p)
            return i;
    return SIZE_MAX;
}

enum victim { V_RUN1, V_RUN2, V_SLOT16_LAST, V_SLOT256_LAST, V_SLOT_INTO_SLOT, V_COUNT };
enum neighbour { N_FREE, N_LIVE, N_FREED_AFTER, N_LIVE_LINKS, N_COUNT };
enum { P_00, P_41, P_FF, P_OFFSET, P_GUARD_COPY, P_LINKS_COPY, P_COUNT };

/*
 * One trial: a victim block whose end touches the neighbour; the neighbour
 * prepared as a free run, a live run, a live run freed after the overflow, or
 * a live run holding bytes copied from a real free run's descriptor; len
 * bytes of a pattern written past the victim's usable end; then random
 * operations and a final drain. Nothing may be handed out outside the heap or
 * over a held block, nothing written outside it or into a held block, and a
 * damaged free run must be reported by the end, where it lies.
 */
static unsigned long trials_run, trials_damaged, trials_refusing;

/* A trial's heap: runs come from the tail, in address order downwards:
 * fillers (every other one freed, so that the trees hold several runs), X1,
 * the neighbour X2, the victim, a live run below it; *next is the block
 * the victim's end touches, *a_free_run a free run that did not merge. */
static bool trial_layout(struct trial *t, enum victim v, enum neighbour nb, unsigned char **x2p,
                         unsigned char **next_p, unsigned char **a_free_run)
{
    unsigned char *filler[10];
    for (int i = 0; i < 10; i++)
        filler[i] = take(t, (size_t)(1 + i % 4) * PAGE);
    unsigned char *x1 = take(t, 2 * PAGE), *x2 = take(t, 3 * PAGE);
    REQUIRE(x1 && x2, false);
    unsigned char *victim = NULL, *next = x2;
    switch (v) {
    case V_RUN1: victim = take(t, PAGE); break;
    case V_RUN2: victim = take(t, 2 * PAGE); break;
    case V_SLOT16_LAST:
        for (int i = 0; i < 32; i++)
            victim = take(t, 16);
        break;
    case V_SLOT256_LAST:
        take(t, 256);
        victim = take(t, 256);
        break;
    case V_SLOT_INTO_SLOT:
        victim = take(t, 64);
        next = take(t, 64);
        break;
    default: break;
    }
    REQUIRE(victim != NULL && next != NULL, false);
    size_t vlen = rtm_heap_usable_size(t->h, victim);
    REQUIRE(victim + vlen == next, false);
    take(t, PAGE); /* a live run below the victim */
    for (int i = 0; i < 10; i += 2)
        give(t, held_index(t, filler[i]));
    *a_free_run = filler[0]; /* free, and not merged: its neighbours are live */
    size_t x2i = held_index(t, x2);
    if (nb == N_FREE)
        give(t, x2i);
    else if (nb == N_LIVE_LINKS && next == x2)
        memcpy(x2, *a_free_run, t->b[x2i].len); /* looks like a descriptor with real links */
    *x2p = x2;
    *next_p = next;
    return true;
}

/* The overflow: len bytes of pattern pat written at next. Returns whether
 * they changed what was there. */
static bool trial_overflow(const struct trial *t, unsigned char *next, size_t len, int pat,
                           const unsigned char *a_free_run)
{
    unsigned char bytes[16];
    size_t off = (size_t)((uintptr_t)a_free_run - (uintptr_t)t->h);
    for (size_t i = 0; i < sizeof(bytes); i++) {
        switch (pat) {
        case P_00: bytes[i] = 0x00; break;
        case P_41: bytes[i] = 0x41; break;
        case P_FF: bytes[i] = 0xff; break;
        case P_OFFSET: bytes[i] = (unsigned char)(off >> (8 * (i % sizeof(size_t)))); break;
        case P_GUARD_COPY: bytes[i] = a_free_run[i]; break;      /* another run's first bytes */
        case P_LINKS_COPY: bytes[i] = a_free_run[16 + i]; break; /* the words that follow */
        default: break;
        }
    }
    bool changed = memcmp(next, bytes, len) != 0;
    memcpy(next, bytes, len);
    return changed;
}

/* Random operations, then allocate until failure and free everything. */
static void trial_drain(struct trial *t, uint64_t seed)
{
    uint64_t s = seed;
    for (int op = 0; op < 200; op++) {
        if (t->n && rng_range(&s, 0, 1))
            give(t, rng_range(&s, 0, t->n - 1));
        else
            take(t, rng_range(&s, 0, 1) ? rng_range(&s, 0, 256) : rng_range(&s, 257, 3 * PAGE));
    }
    while (take(t, PAGE))
        ;
    while (take(t, 16))
        ;
    for (size_t round = 0; round < 2; round++)
        for (size_t i = t->n; i-- > 0;)
            give(t, i);
}

static void overflow_trial(const char *kind, int level, enum victim v, enum neighbour nb,
                           size_t len, int pat, uint64_t seed)
{
    static struct trial t;
    memset(&t, 0, sizeof(t));
    memset(ovf_mem, 0xa5, sizeof(ovf_mem));
    struct reports rep = { 0 };
    struct rtm_heap_config cfg = { .hardening = level,
                                   .on_corruption = record,
                                   .on_corruption_arg = &rep };
    t.h = rtm_heap_create_ex(kind, OVF_LO, OVF_HEAP, &cfg);
    REQUIRE(t.h != NULL, );
    unsigned char *x2, *next, *a_free_run;
    if (!trial_layout(&t, v, nb, &x2, &next, &a_free_run))
        return;
    bool changed = trial_overflow(&t, next, len, pat, a_free_run);
    /* At RTM_HEAP_HARDEN_NONE the bytes a short overflow reaches hold
     * nothing: no damage, nothing to report. */
    bool damaged = level != RTM_HEAP_HARDEN_NONE && nb == N_FREE && next == x2 && changed;
    rep.want_where = x2;
    if (nb != N_FREE) {
        /* the neighbour is the user's data: its snapshot is what it holds now */
        size_t i = held_index(&t, next);
        REQUIRE(i != SIZE_MAX, );
        memcpy(t.snap, next, t.b[i].len);
        t.b[i].fill = 0;
        if (nb == N_FREED_AFTER)
            give(&t, i);
    }
    trial_drain(&t, seed);

    struct rtm_heap_stats st = stats(t.h);
    for (size_t i = 0; i < OVF_GUARD; i++)
        CHECK(ovf_mem[i] == 0xa5 && OVF_HI[i] == 0xa5);
    CHECK_EQ(st.corruptions, rep.calls);
    trials_run++;
    trials_damaged += damaged;
    trials_refusing += t.refused != 0;
    if (damaged) {
        CHECK(st.corruptions > 0);
        CHECK(rep.saw_where); /* reported where the damage lies */
        CHECK(rep.what != NULL);
        CHECK_EQ(rtm_heap_check(t.h), -EFAULT);
    } else {
        CHECK_EQ(st.corruptions, 0);
        CHECK_EQ(t.refused, 0);
        CHECK_EQ(t.n, 0);
        CHECK_EQ(st.used_bytes, 0);
        CHECK_EQ(rtm_heap_check(t.h), 0);
    }
}

static void overflow_trials(const char *kind)
{
    static const size_t lens[] = { 1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16 };
    uint64_t seed = 0x6f766572666c6f77ull;
    unsigned long failed_before = test_checks_failed;
    for (int level = RTM_HEAP_HARDEN_O1; level <= RTM_HEAP_HARDEN_NONE; level++) {
        for (int v = 0; v < V_COUNT; v++)
            for (int nb = 0; nb < N_COUNT; nb++) {
                if (v == V_SLOT_INTO_SLOT && nb != N_LIVE)
                    continue;
                for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
                    for (int pat = 0; pat < P_COUNT; pat++) {
                        overflow_trial(kind, level, (enum victim)v, (enum neighbour)nb, lens[l],
                                       pat, rng_next(&seed));
                        if (test_checks_failed != failed_before) {
                            fprintf(stderr,
                                    "  trial: level %d victim %d neighbour %d len %zu pattern %d\n",
                                    level, v, nb, lens[l], pat);
                            return;
                        }
                    }
            }
        printf("%s, hardening %d: %lu overflow trials, %lu damaged a free run (all reported), "
               "%lu had a free refused\n",
               kind, level, trials_run, trials_damaged, trials_refusing);
        trials_run = trials_damaged = trials_refusing = 0;
    }
}

TEST_CASE("overflows past a block stay in the heap and damage is reported")
{
    each_kind(overflow_trials);
}

/* A heap of the level given, laid out as the trials lay it out: a free run
 * X2 of 3 pages between the live runs X1 (above) and V (below), and a
 * bucket page with free slots. Returns V; *x2 is the free run. */
static unsigned char *guarded_layout(struct rtm_heap **hp, const char *kind, int level,
                                     uint32_t interval, struct reports *rep, unsigned char **x2)
{
    memset(arena, 0, sizeof(arena));
    struct rtm_heap_config cfg = { .hardening = level,
                                   .check_interval = interval,
                                   .on_corruption = record,
                                   .on_corruption_arg = rep };
    struct rtm_heap *h = *hp = rtm_heap_create_ex(kind, arena, 64u << 10, &cfg);
    REQUIRE(h != NULL, NULL);
    CHECK_EQ(rtm_heap_hardening(h), level);
    unsigned char *x1 = rtm_heap_alloc(h, 2 * PAGE);
    *x2 = rtm_heap_alloc(h, 3 * PAGE);
    unsigned char *v = rtm_heap_alloc(h, PAGE);
    REQUIRE(x1 && *x2 && v && v + PAGE == *x2, NULL);
    REQUIRE(rtm_heap_alloc(h, PAGE) && rtm_heap_alloc(h, 16), NULL);
    CHECK_EQ(rtm_heap_free(h, *x2), 0);
    return v;
}

/* The handler hears of a refused free: the block given, where the damage
 * lies, what was found; the heap is unchanged and the block still live. */
static void handler_and_refusal(const char *kind)
{
    struct reports rep = { 0 };
    struct rtm_heap *h;
    unsigned char *x2, *v = guarded_layout(&h, kind, RTM_HEAP_HARDEN_O1, 0, &rep, &x2);
    REQUIRE(v != NULL, );
    v[PAGE] ^= 0xff; /* one byte past v */
    /* Slots of the open bucket page: no free run is used, nothing found. */
    void *s = rtm_heap_alloc(h, 16);
    CHECK(s != NULL);
    CHECK_EQ(rtm_heap_free(h, s), 0);
    CHECK_EQ(rep.calls, 0);
    struct rtm_heap_stats before = stats(h);
    /* Nothing written but the counters in the control structure. */
    static unsigned char image[64u << 10];
    const size_t ctl = RTM_PAGEHEAP_CONTROL_BYTES;
    memcpy(image, arena, sizeof(image));
    CHECK_EQ(rtm_heap_free(h, v), -EFAULT); /* v merges with x2: refused */
    CHECK_EQ(memcmp(image + ctl, arena + ctl, sizeof(image) - ctl), 0);
    CHECK_EQ(rep.calls, 1);
    CHECK(rep.block == v && rep.where == x2 && rep.what != NULL);
    struct rtm_heap_stats after = stats(h);
    CHECK_EQ(after.corruptions, 1);
    CHECK_EQ(after.used_bytes, before.used_bytes);
    CHECK_EQ(rtm_heap_usable_size(h, v), PAGE); /* still live */
    /* Runs are best fit: a 3-page request lands on x2, refused. */
    CHECK(rtm_heap_alloc(h, 3 * PAGE) == NULL);
    CHECK_EQ(stats(h).corruptions, 2);
    CHECK_EQ(stats(h).failed_allocs, before.failed_allocs + 1);
    CHECK(rep.block == NULL && rep.where == x2);
    CHECK(rtm_heap_realloc(h, v, 2 * PAGE) == NULL); /* grows into x2: refused */
    CHECK_EQ(stats(h).corruptions, 3);
    CHECK(rep.block == v && rep.where == x2);
    CHECK_EQ(rtm_heap_check(h), -EFAULT);
    v[PAGE] ^= 0xff; /* repaired: all goes on */
    CHECK_EQ(rtm_heap_check(h), 0);
    CHECK_EQ(rtm_heap_free(h, v), 0);
    CHECK_EQ(rtm_heap_check(h), 0);
    /* Without a handler, refusals are only counted. */
    CHECK_EQ(rtm_heap_set_corruption_handler(h, NULL, NULL), 0);
    unsigned char *w = rtm_heap_alloc(h, PAGE);
    REQUIRE(w != NULL, );
    CHECK_EQ(rtm_heap_free(h, w), 0);
    CHECK_EQ(rep.calls, 3);
}

TEST_CASE("the handler hears of a refused free and the heap is unchanged")
{
    each_kind(handler_and_refusal);
}

/* RTM_HEAP_HARDEN_FULL finds damage at its next periodic check, even in
 * operations that use no free run; O1 does not see it there. */
static void full_periodic(const char *kind)
{
    for (int level = RTM_HEAP_HARDEN_O1; level <= RTM_HEAP_HARDEN_FULL; level += 2) {
        struct reports rep = { 0 };
        struct rtm_heap *h;
        unsigned char *x2, *v = guarded_layout(&h, kind, level, 4, &rep, &x2);
        REQUIRE(v != NULL, );
        v[PAGE] ^= 0x5a;
        int ops = 0, refused_at = 0;
        while (ops < 8 && !refused_at) {
            void *s = rtm_heap_alloc(h, 16);
            ops++;
            if (!s) {
                refused_at = ops;
                break;
            }
            ops++;
            if (rtm_heap_free(h, s) != 0)
                refused_at = ops;
        }
        if (level == RTM_HEAP_HARDEN_FULL) {
            CHECK(refused_at >= 1 && refused_at <= 4);
            CHECK_EQ(stats(h).corruptions, 1);
            CHECK(rep.where == NULL && rep.block == NULL && rep.what != NULL);
        } else {
            CHECK_EQ(refused_at, 0);
            CHECK_EQ(stats(h).corruptions, 0);
        }
        v[PAGE] ^= 0x5a;
        CHECK_EQ(rtm_heap_check(h), 0);
    }
}

TEST_CASE("full hardening finds damage at its next periodic check")
{
    each_kind(full_periodic);
}

/* RTM_HEAP_HARDEN_NONE: the same blocks as the default level on a clean
 * workload, every kind of request included; nothing is reported. */
static void none_same_as_default(const char *kind)
{
    const size_t half = sizeof(arena) / 2;
    struct rtm_heap_config none = { .hardening = RTM_HEAP_HARDEN_NONE };
    struct rtm_heap *hn = rtm_heap_create_ex(kind, arena, half, &none);
    struct rtm_heap *hd = rtm_heap_create(kind, arena + half, half);
    REQUIRE(hn && hd, );
    CHECK_EQ(rtm_heap_hardening(hn), RTM_HEAP_HARDEN_NONE);
    CHECK_EQ(rtm_heap_hardening(hd), RTM_HEAP_HARDEN_O1);
    static unsigned char *live[400];
    size_t n = 0;
    uint64_t s = 0x6e6f6e65ull;
    bool same = true;
    for (int op = 0; op < 40000 && same; op++) {
        unsigned r = (unsigned)rng_range(&s, 0, 9);
        if (n && (r < 4 || n == 400)) {
            size_t i = rng_range(&s, 0, n - 1);
            same &= rtm_heap_free(hn, live[i]) == 0 && rtm_heap_free(hd, live[i] + half) == 0;
            live[i] = live[--n];
        } else if (n && r == 4) {
            size_t i = rng_range(&s, 0, n - 1), size = rng_range(&s, 0, 6000);
            unsigned char *a = rtm_heap_realloc(hn, live[i], size),
                          *b = rtm_heap_realloc(hd, live[i] + half, size);
            same &= (a == NULL) == (b == NULL) && (!a || a + half == b);
            if (a)
                live[i] = a;
        } else {
            size_t size = r == 5 ? rng_range(&s, 0, 6000) : rng_range(&s, 0, 300);
            size_t align = r == 6 ? (size_t)1 << rng_range(&s, 4, 13) : 0;
            unsigned char *a =
                align ? rtm_heap_aligned_alloc(hn, align, size) : rtm_heap_alloc(hn, size);
            unsigned char *b =
                align ? rtm_heap_aligned_alloc(hd, align, size) : rtm_heap_alloc(hd, size);
            same &= (a == NULL) == (b == NULL) && (!a || a + half == b);
            if (a)
                live[n++] = a;
        }
    }
    CHECK(same);
    struct rtm_heap_stats a = stats(hn), b = stats(hd);
    CHECK_EQ(a.used_bytes, b.used_bytes);
    CHECK_EQ(a.largest_free_bytes, b.largest_free_bytes);
    CHECK_EQ(a.failed_allocs, b.failed_allocs);
    CHECK_EQ(a.corruptions + b.corruptions, 0);
    CHECK_EQ(rtm_heap_check(hn), 0);
    CHECK_EQ(rtm_heap_check(hd), 0);
}

TEST_CASE("no hardening gives the same blocks as the default level")
{
    each_kind(none_same_as_default);
}

/* Pools back to back: an overflow of 16 bytes past the last page of one
 * lands in the unused bytes that open the next (the control structure or a
 * pool descriptor follows them), and nothing is damaged. */
static void adjacent_pools(const char *kind)
{
    const size_t part = 32u << 10;
    /* pools a, c (creating), b */
    unsigned char *a = arena, *c = arena + part, *b = arena + 2 * part;
    memset(arena, 0, 3 * part);
    struct rtm_heap *h = rtm_heap_create(kind, c, part);
    REQUIRE(h != NULL, );
    CHECK_EQ(rtm_heap_add_pool(h, a, part), 0);
    CHECK_EQ(rtm_heap_add_pool(h, b, part), 0);
    unsigned char *last_a = NULL, *last_c = NULL;
    for (int i = 0; i < 400; i++) { /* every page; keep the last of a and of c */
        unsigned char *p = rtm_heap_alloc(h, PAGE);
        if (!p)
            break;
        if (p < c && (!last_a || p > last_a))
            last_a = p;
        if (p >= c && p < b && (!last_c || p > last_c))
            last_c = p;
    }
    REQUIRE(last_a && last_c, );
    CHECK(last_a + PAGE <= c && last_c + PAGE <= b);
#if SIZE_MAX > 0xffffffffu
    /* on 64-bit the last page ends its pool's memory exactly: the overflow
     * lands in the next pool's opening bytes */
    CHECK(last_a + PAGE == c && last_c + PAGE == b);
#endif
    memset(last_a + PAGE, 0xff, 16);
    memset(last_c + PAGE, 0xff, 16);
    CHECK_EQ(rtm_heap_check(h), 0);
    CHECK_EQ(rtm_heap_free(h, last_a), 0);
    CHECK_EQ(rtm_heap_free(h, last_c), 0);
    CHECK(rtm_heap_alloc(h, 100) != NULL);
    CHECK_EQ(stats(h).pool_count, 3);
    CHECK_EQ(stats(h).corruptions, 0);
    CHECK_EQ(rtm_heap_check(h), 0);
}

TEST_CASE("an overflow past a pool's last page damages nothing in the next pool")
{
    each_kind(adjacent_pools);
}

/* Review finding: taking a free run whole unlinked its address node without
 * checking that node's guard, so damage there (a write through a dangling
 * pointer) was erased unreported, or its links followed. */
static void taken_run_checked_whole(const char *kind)
{
    static unsigned char mem[64 * 1024] __attribute__((aligned(4096)));
    struct rtm_heap *h = rtm_heap_create(kind, mem, sizeof(mem));
    REQUIRE(h != NULL, );
    unsigned char *a = rtm_heap_alloc(h, 1024), *b = rtm_heap_alloc(h, 2048);
    unsigned char *c = rtm_heap_alloc(h, 1024);
    REQUIRE(a && b && c, );
    CHECK_EQ(rtm_heap_free(h, b), 0); /* a free run between two live blocks */
    memset(b + 64, 0x41, 8);          /* its address node's guard */
    CHECK(rtm_heap_check(h) == -EFAULT);
    CHECK(rtm_heap_alloc(h, 2048) == NULL); /* best fit is exactly that run: refused */
    struct rtm_heap_stats st;
    rtm_heap_stats(h, &st);
    CHECK_EQ(st.corruptions, 1);
    CHECK(rtm_heap_check(h) == -EFAULT); /* the damage stays seen */
}

TEST_CASE("a free run taken whole has its guard checked")
{
    each_kind(taken_run_checked_whole);
}

/* Review finding: a refused realloc left its new block allocated. The new
 * block used up the free run just below the old one, whose free then met the
 * run below that, damaged and unchecked. */
static void realloc_refusal_leaks_nothing(const char *kind)
{
    static unsigned char mem[64 * 1024] __attribute__((aligned(4096)));
    struct rtm_heap *h = rtm_heap_create(kind, mem, sizeof(mem));
    REQUIRE(h != NULL, );
    static unsigned char *b[200];
    int n = 0;
    while (n < 200 && (b[n] = rtm_heap_alloc(h, 512)) != NULL)
        n++; /* every page, one block each */
    REQUIRE(n > 40, );
    /* free runs of 1, 1, 1, 1, 1, 3, 4, 5, 6 and 7 pages, each followed by a
     * live page; then L (live), F (one free page), X (live), D (two free
     * pages), B (live): B's overflow reaches D's guard */
    static const int runs[] = { 1, 1, 1, 1, 1, 3, 4, 5, 6, 7 };
    int i = 0;
    for (size_t r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
        for (int k = 0; k < runs[r]; k++) {
            CHECK_EQ(rtm_heap_free(h, b[i + k]), 0);
            b[i + k] = NULL;
        }
        i += runs[r] + 1;
    }
    int l = i, f = i + 1, d0 = i + 3, d1 = i + 4, bb = i + 5;
    REQUIRE(bb < n, );
    CHECK_EQ(rtm_heap_free(h, b[f]), 0);
    CHECK_EQ(rtm_heap_free(h, b[d0]), 0);
    CHECK_EQ(rtm_heap_free(h, b[d1]), 0);
    b[f] = b[d0] = b[d1] = NULL;
    struct rtm_heap_stats before, after;
    rtm_heap_stats(h, &before);
    b[bb][512] ^= 0x01; /* one byte past B: D's guard */
    CHECK(rtm_heap_realloc(h, b[l], 100) == NULL);
    rtm_heap_stats(h, &after);
    CHECK_EQ(after.used_bytes, before.used_bytes); /* nothing taken, nothing leaked */
    CHECK_EQ(after.live_blocks, before.live_blocks);
    CHECK_EQ(after.corruptions, 1);
    b[bb][512] ^= 0x01; /* undone: everything frees, and the heap is whole */
    for (int k = 0; k < n; k++)
        if (b[k])
            CHECK_EQ(rtm_heap_free(h, b[k]), 0);
    rtm_heap_stats(h, &after);
    CHECK_EQ(after.used_bytes, 0);
    CHECK_EQ(rtm_heap_check(h), 0);
}

TEST_CASE("a refused realloc leaks no block")
{
    each_kind(realloc_refusal_leaks_nothing);
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, "pageheap");
}
