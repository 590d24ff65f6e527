/*
 * The page heap (xvheap) and its page providers, beyond the common
 * contract: pages go back to their provider when their last block is
 * freed and come back when needed; a provider with no page, or a bad one,
 * is a clean allocation failure; the page region's own contract; fill
 * counts and the waste per page the header states, measured by fills;
 * pointers of another heap or of a page given back refused.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "rtmem/rtmem.h"

#define PAGE RTM_XVHEAP_PAGE_SIZE
/* A page's block area: the largest request and its header. */
#define SPAN (rtm_xvheap_max_request(PAGE) + RTM_TLSF_HEADER_BYTES)

static unsigned char arena[1u << 20] __attribute__((aligned(4096)));
static unsigned char ctl[2][RTM_XVHEAP_CONTROL_BYTES];

static struct rtm_heap_stats stats(struct rtm_xvheap *h)
{
    struct rtm_heap_stats st;
    rtm_xvheap_stats(h, &st);
    return st;
}

static struct rtm_xvheap_page_stats pages(struct rtm_xvheap *h)
{
    struct rtm_xvheap_page_stats ps;
    rtm_xvheap_page_stats(h, &ps);
    return ps;
}

static size_t held(struct rtm_xvheap *h)
{
    return rtm_heap_held_bytes(rtm_xvheap_heap(h));
}

/* The cost of a request, as rtmem/tlsf.h documents it. */
static size_t cost(size_t n)
{
    size_t c = (n + RTM_TLSF_HEADER_BYTES + RTM_TLSF_GRANULE - 1) & ~(RTM_TLSF_GRANULE - 1);
    return c < RTM_TLSF_MIN_BLOCK ? RTM_TLSF_MIN_BLOCK : c;
}

/* ---- pages taken and given back -------------------------------------------------- */

TEST_CASE("a page goes back when its last block is freed, and comes back when needed")
{
    struct rtm_xvheap *h = rtm_xvheap_create(arena, sizeof arena);
    REQUIRE(h != NULL, );
    CHECK_EQ(held(h), 0);
    unsigned char *a = rtm_xvheap_alloc(h, 100), *b = rtm_xvheap_alloc(h, 100);
    REQUIRE(a && b, );
    CHECK_EQ(held(h), PAGE); /* both in one page */
    CHECK_EQ((uintptr_t)a / PAGE, (uintptr_t)b / PAGE);
    CHECK_EQ(rtm_xvheap_free(h, a), 0);
    CHECK_EQ(held(h), PAGE);
    CHECK_EQ(rtm_xvheap_free(h, b), 0);
    CHECK_EQ(held(h), 0);
    struct rtm_xvheap_page_stats ps = pages(h);
    CHECK(ps.gets == 1 && ps.puts == 1 && ps.pages_held == 0 && ps.peak_held == 1);
    CHECK_EQ(ps.max_request, rtm_xvheap_max_request(PAGE));
    /* the page given back is the one taken next, its block at the same place */
    unsigned char *c = rtm_xvheap_alloc(h, 100);
    CHECK(c == a);
    CHECK_EQ(held(h), PAGE);
    CHECK_EQ(rtm_xvheap_check(h), 0);
    CHECK_EQ(rtm_xvheap_free(h, c), 0);
    /* the statistics: usable is every page's block area, held follows use */
    struct rtm_heap_stats st = stats(h);
    CHECK_EQ(st.usable_bytes, ps.pages_max * SPAN);
    CHECK_EQ(st.usable_bytes + st.overhead_bytes, sizeof arena);
    CHECK_EQ(st.largest_free_bytes, rtm_xvheap_max_request(PAGE));
    CHECK_EQ(st.pool_count, 1);
}

TEST_CASE("a heap that keeps an empty page takes none for an alloc and free in turn")
{
    struct rtm_xvheap *h = rtm_xvheap_create(arena, sizeof arena);
    REQUIRE(h != NULL, );
    CHECK_EQ(pages(h).keep_empty, 0);
    for (int i = 0; i < 10; i++) { /* the default: a page taken and given back each time */
        void *p = rtm_xvheap_alloc(h, 100);
        CHECK(p != NULL && rtm_xvheap_free(h, p) == 0);
    }
    CHECK(pages(h).gets == 10 && pages(h).puts == 10 && held(h) == 0);
    CHECK_EQ(rtm_xvheap_keep_empty(h, 1), 0);
    CHECK_EQ(rtm_xvheap_keep_empty(NULL, 1), -EINVAL);
    for (int i = 0; i < 10; i++) {
        void *p = rtm_xvheap_alloc(h, 100);
        CHECK(p != NULL && rtm_xvheap_free(h, p) == 0);
        CHECK_EQ(pages(h).empty_held, 1);
        CHECK_EQ(rtm_xvheap_check(h), 0);
    }
    CHECK(pages(h).gets == 11 && pages(h).puts == 10 && held(h) == PAGE);
    /* a second empty page beyond the limit goes back; the kept one serves a
     * whole-page request */
    void *a = rtm_xvheap_alloc(h, 3000), *b = rtm_xvheap_alloc(h, 3000);
    CHECK(a && b && pages(h).empty_held == 0 && pages(h).pages_held == 2);
    CHECK(rtm_xvheap_free(h, a) == 0 && rtm_xvheap_free(h, b) == 0);
    CHECK(pages(h).pages_held == 1 && pages(h).empty_held == 1 && pages(h).puts == 11);
    void *w = rtm_xvheap_alloc(h, rtm_xvheap_max_request(PAGE));
    CHECK(w != NULL && pages(h).empty_held == 0 && pages(h).gets == 12);
    CHECK_EQ(rtm_xvheap_check(h), 0);
    CHECK_EQ(rtm_xvheap_free(h, w), 0);
    /* a lower limit: the kept page stays until used again */
    CHECK_EQ(rtm_xvheap_keep_empty(h, 0), 0);
    CHECK(pages(h).empty_held == 1 && held(h) == PAGE);
    void *x = rtm_xvheap_alloc(h, 64);
    CHECK(x != NULL && rtm_xvheap_free(h, x) == 0);
    CHECK(held(h) == 0 && pages(h).empty_held == 0);
    CHECK_EQ(rtm_xvheap_check(h), 0);
}

TEST_CASE("a burst takes pages and gives every one back")
{
    struct rtm_xvheap *h = rtm_xvheap_create(arena, sizeof arena);
    REQUIRE(h != NULL, );
    size_t max = pages(h).pages_max;
    void *p[1024];
    size_t n = 0;
    /* two blocks to a page, and no room for a third block of any size */
    size_t half = ((SPAN / 2) & ~(RTM_TLSF_GRANULE - 1)) - RTM_TLSF_HEADER_BYTES;
    while (n < 1024 && (p[n] = rtm_xvheap_alloc(h, half)) != NULL)
        n++;
    CHECK_EQ(n, max * 2);
    CHECK_EQ(held(h), max * PAGE);
    CHECK(rtm_xvheap_alloc(h, 1) == NULL && stats(h).largest_free_bytes == 0);
    for (size_t i = 0; i < n; i += 2)
        CHECK_EQ(rtm_xvheap_free(h, p[i]), 0);
    CHECK_EQ(held(h), max * PAGE); /* one block left in each page */
    for (size_t i = 1; i < n; i += 2)
        CHECK_EQ(rtm_xvheap_free(h, p[i]), 0);
    CHECK_EQ(held(h), 0);
    CHECK_EQ(rtm_xvheap_check(h), 0);
}

TEST_CASE("a region sized by RTM_XVHEAP_REGION_OVERHEAD holds its pages at any address")
{
    static const size_t counts[] = { 1, 2, 255, 1025, 3071, 4097 };
    size_t most = 4097 * PAGE + RTM_XVHEAP_REGION_OVERHEAD(4097, PAGE) + 64;
    unsigned char *mem = mmap(NULL, most, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    REQUIRE(mem != MAP_FAILED, );
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        for (size_t off = 0; off < 64; off += 5) {
            struct rtm_xvheap *h = rtm_xvheap_create(arena, sizeof arena);
            REQUIRE(h != NULL, );
            size_t before = pages(h).pages_max, n = counts[i];
            CHECK_EQ(
                rtm_xvheap_add_pool(h, mem + off, n * PAGE + RTM_XVHEAP_REGION_OVERHEAD(n, PAGE)),
                0);
            CHECK(pages(h).pages_max - before >= n);
        }
    munmap(mem, most);
}

/* ---- providers -------------------------------------------------------------------- */

/* A provider over a page region that has `left` pages to give, then none;
 * or, bad set, pages that break the contract. */
struct test_provider {
    struct rtm_page_region *r;
    int left;
    int bad; /* 1 misaligned, 2 outside the range, 3 the last page again */
    void *last;
    int gets, puts;
};

static void *tp_get(void *ctx)
{
    struct test_provider *t = ctx;
    if (t->left == 0)
        return NULL;
    t->left--;
    t->gets++;
    if (t->bad == 1)
        return (char *)rtm_page_region_get(t->r) + 16;
    if (t->bad == 2)
        return arena; /* no page of the region */
    if (t->bad == 3 && t->last)
        return t->last;
    return t->last = rtm_page_region_get(t->r);
}

static void tp_put(void *ctx, void *page)
{
    struct test_provider *t = ctx;
    t->puts++;
    CHECK_EQ(rtm_page_region_put(t->r, page), 0);
}

static struct rtm_page_provider provider_of(struct test_provider *t)
{
    struct rtm_page_provider pp = rtm_page_region_provider(t->r);
    pp.get = tp_get;
    pp.put = tp_put;
    pp.ctx = t;
    return pp;
}

TEST_CASE("a provider with no page left is a clean allocation failure")
{
    struct test_provider t = { .r = rtm_page_region_create(arena + (64u << 10), 256u << 10, PAGE),
                               .left = 2 };
    REQUIRE(t.r != NULL, );
    struct rtm_page_provider pp = provider_of(&t);
    struct rtm_xvheap *h = rtm_xvheap_create_on(ctl[0], sizeof ctl[0], NULL, &pp);
    REQUIRE(h != NULL, );
    void *a = rtm_xvheap_alloc(h, 3000), *b = rtm_xvheap_alloc(h, 3000);
    CHECK(a && b);
    CHECK(rtm_xvheap_alloc(h, 3000) == NULL); /* asked, refused */
    CHECK_EQ(t.gets, 2);
    CHECK_EQ(stats(h).failed_allocs, 1);
    void *c = rtm_xvheap_alloc(h, 900); /* a held page's room still serves */
    CHECK(c != NULL);
    CHECK_EQ(rtm_xvheap_check(h), 0);
    CHECK_EQ(rtm_xvheap_free(h, a), 0);
    CHECK_EQ(rtm_xvheap_free(h, b), 0);
    CHECK_EQ(t.puts, 1); /* the page without c went back; c's keeps a 3008-byte hole */
    void *d = rtm_xvheap_alloc(h, 3000);
    CHECK(d != NULL && (uintptr_t)d / PAGE == (uintptr_t)c / PAGE);
    CHECK(rtm_xvheap_alloc(h, 3000) == NULL); /* and the provider has none left */
    CHECK_EQ(t.gets, 2);
    CHECK(rtm_xvheap_free(h, c) == 0 && rtm_xvheap_free(h, d) == 0);
    CHECK_EQ(t.puts, 2);
    CHECK_EQ(rtm_xvheap_add_pool(h, arena, 4096), -ENOTSUP);
    CHECK_EQ(rtm_xvheap_check(h), 0);
}

TEST_CASE("a provider's misaligned, foreign or held page is not used")
{
    for (int bad = 1; bad <= 3; bad++) {
        struct test_provider t = { .r = rtm_page_region_create(arena + (64u << 10), 256u << 10,
                                                               PAGE),
                                   .left = 4,
                                   .bad = bad };
        REQUIRE(t.r != NULL, );
        struct rtm_page_provider pp = provider_of(&t);
        struct rtm_xvheap *h = rtm_xvheap_create_on(ctl[0], sizeof ctl[0], NULL, &pp);
        REQUIRE(h != NULL, );
        void *first = rtm_xvheap_alloc(h, 3000);
        CHECK(bad == 3 ? first != NULL : first == NULL);
        CHECK(rtm_xvheap_alloc(h, 3000) == NULL); /* bad 3: the held page again */
        CHECK_EQ(rtm_xvheap_check(h), 0);
        CHECK_EQ(pages(h).pages_held, bad == 3 ? 1u : 0u);
    }
}

TEST_CASE("a create_on refuses providers that break the contract")
{
    struct rtm_page_region *r = rtm_page_region_create(arena, sizeof arena, PAGE);
    REQUIRE(r != NULL, );
    struct rtm_page_provider good = rtm_page_region_provider(r), pp;
    struct rtm_heap_config locked = { .lock = RTM_HEAP_LOCK_PI };
    pp = good, pp.get = NULL;
    CHECK(rtm_xvheap_create_on(ctl[0], sizeof ctl[0], NULL, &pp) == NULL && errno == EINVAL);
    pp = good, pp.page_size = 3000;
    CHECK(rtm_xvheap_create_on(ctl[0], sizeof ctl[0], NULL, &pp) == NULL && errno == EINVAL);
    pp = good, pp.page_size = RTM_PAGES_MAX_SIZE * 2;
    CHECK(rtm_xvheap_create_on(ctl[0], sizeof ctl[0], NULL, &pp) == NULL && errno == EINVAL);
    pp = good, pp.span = PAGE - 1;
    CHECK(rtm_xvheap_create_on(ctl[0], sizeof ctl[0], NULL, &pp) == NULL && errno == EINVAL);
    pp = good, pp.span = SIZE_MAX;
    CHECK(rtm_xvheap_create_on(ctl[0], sizeof ctl[0], NULL, &pp) == NULL && errno == EINVAL);
    CHECK(rtm_xvheap_create_on(ctl[0], sizeof ctl[0], NULL, NULL) == NULL && errno == EINVAL);
    CHECK(rtm_xvheap_create_on(ctl[0], 100, NULL, &good) == NULL && errno == ENOMEM);
    CHECK(rtm_xvheap_create_on(ctl[0], sizeof ctl[0], &locked, &good) == NULL && errno == EINVAL);
    CHECK(rtm_xvheap_create_on(ctl[0], sizeof ctl[0], NULL, &good) != NULL);
}

/* ---- two heaps on one region ---------------------------------------------------- */

TEST_CASE("two heaps share a region, and each refuses the other's blocks")
{
    struct rtm_page_region *r = rtm_page_region_create(arena, sizeof arena, PAGE);
    REQUIRE(r != NULL, );
    struct rtm_page_provider pp = rtm_page_region_provider(r);
    struct rtm_xvheap *a = rtm_xvheap_create_on(ctl[0], sizeof ctl[0], NULL, &pp);
    struct rtm_xvheap *b = rtm_xvheap_create_on(ctl[1], sizeof ctl[1], NULL, &pp);
    REQUIRE(a && b, );
    void *x = rtm_xvheap_alloc(a, 500), *y = rtm_xvheap_alloc(b, 3496);
    REQUIRE(x && y, );
    CHECK_EQ(rtm_xvheap_free(a, y), -EINVAL);
    CHECK_EQ(rtm_xvheap_usable_size(a, y), 0);
    CHECK_EQ(rtm_xvheap_usable_size(b, y), 3496);
    CHECK(rtm_xvheap_realloc(a, y, 600) == NULL);
    CHECK_EQ(stats(a).corruptions, 0);
    /* x's page goes back and b takes it: x is b's page now, not a's */
    CHECK_EQ(rtm_xvheap_free(a, x), 0);
    void *z = rtm_xvheap_alloc(b, 3000);
    CHECK((uintptr_t)z / PAGE == (uintptr_t)x / PAGE);
    CHECK_EQ(rtm_xvheap_free(a, x), -EINVAL);
    CHECK_EQ(rtm_xvheap_usable_size(a, z), 0);
    struct rtm_page_region_stats rs;
    CHECK_EQ(rtm_page_region_stats(r, &rs), 0);
    CHECK(rs.pages_out == 2 && rs.gets == 3 && rs.puts == 1 && rs.peak_out == 2);
    CHECK_EQ(stats(a).corruptions + stats(b).corruptions, 0);
    CHECK(rtm_xvheap_check(a) == 0 && rtm_xvheap_check(b) == 0);
}

TEST_CASE("a destroy gives a provider's pages back")
{
    struct rtm_page_region *r = rtm_page_region_create(arena, sizeof arena, PAGE);
    REQUIRE(r != NULL, );
    struct rtm_page_provider pp = rtm_page_region_provider(r);
    struct rtm_xvheap *h = rtm_xvheap_create_on(ctl[0], sizeof ctl[0], NULL, &pp);
    REQUIRE(h != NULL, );
    for (int i = 0; i < 10; i++)
        CHECK(rtm_xvheap_alloc(h, 3000) != NULL);
    struct rtm_page_region_stats rs;
    rtm_page_region_stats(r, &rs);
    CHECK_EQ(rs.pages_out, 10);
    rtm_heap_destroy(rtm_xvheap_heap(h));
    rtm_page_region_stats(r, &rs);
    CHECK(rs.pages_out == 0 && rs.puts == 10);
    /* control memory inside the provider's range is refused */
    CHECK(rtm_xvheap_create_on(arena + (512u << 10), RTM_XVHEAP_CONTROL_BYTES, NULL, &pp) == NULL &&
          errno == EINVAL);
}

TEST_CASE("a damaged page stack or list of pages held is reported, never followed")
{
    struct rtm_xvheap *h = rtm_xvheap_create(arena, sizeof arena);
    REQUIRE(h != NULL, );
    void *a = rtm_xvheap_alloc(h, 3000), *b = rtm_xvheap_alloc(h, 3000);
    void *c = rtm_xvheap_alloc(h, 3000);
    REQUIRE(a && b && c, );
    /* b's page is held between c's and a's; its descriptor's prev link (the
     * word before its tag) pointed elsewhere: b's free is refused nothing,
     * but its page stays held, reported */
    uintptr_t pb = (uintptr_t)b & ~(uintptr_t)(PAGE - 1);
    size_t *prev = (size_t *)(pb + 5 * sizeof(size_t));
    size_t was = *prev;
    *prev = was + PAGE;
    CHECK_EQ(rtm_xvheap_free(h, b), 0);
    CHECK_EQ(stats(h).corruptions, 1);
    CHECK_EQ(pages(h).pages_held, 3);
    *prev = was;
    CHECK_EQ(rtm_xvheap_check(h), 0); /* consistent: the page kept its free block */
    CHECK(rtm_xvheap_free(h, a) == 0 && rtm_xvheap_free(h, c) == 0);
    CHECK_EQ(pages(h).pages_held, 1);
}

TEST_CASE("a pointer into a page given back is refused, not taken for damage")
{
    struct rtm_xvheap *h = rtm_xvheap_create(arena, sizeof arena);
    REQUIRE(h != NULL, );
    void *p = rtm_xvheap_alloc(h, 64);
    REQUIRE(p != NULL, );
    CHECK_EQ(rtm_xvheap_free(h, p), 0);
    CHECK_EQ(held(h), 0);
    CHECK_EQ(rtm_xvheap_free(h, p), -EINVAL);
    CHECK_EQ(rtm_xvheap_usable_size(h, p), 0);
    CHECK_EQ(stats(h).corruptions, 0);
    CHECK_EQ(rtm_xvheap_check(h), 0);
}

/* ---- the page region -------------------------------------------------------------- */

TEST_CASE("a page region hands out each page once and refuses bad puts")
{
    struct rtm_page_region *r = rtm_page_region_create(arena + 3, (256u << 10) - 3, 8192);
    REQUIRE(r != NULL, );
    struct rtm_page_region_stats rs;
    rtm_page_region_stats(r, &rs);
    /* the bookkeeping and the alignment take the first page's place */
    CHECK(rs.page_size == 8192 && rs.pages == 31 && rs.pages_out == 0);
    struct rtm_page_provider pp = rtm_page_region_provider(r);
    void *p[31];
    for (int i = 0; i < 31; i++) {
        p[i] = rtm_page_region_get(r);
        REQUIRE(p[i] != NULL, );
        CHECK_EQ((uintptr_t)p[i] % 8192, 0);
        CHECK((char *)p[i] >= (char *)pp.base && (char *)p[i] + 8192 <= (char *)pp.base + pp.span);
        for (int j = 0; j < i; j++)
            CHECK(p[j] != p[i]);
    }
    CHECK(rtm_page_region_get(r) == NULL);
    CHECK_EQ(rtm_page_region_put(r, (char *)p[3] + 8), -EINVAL);
    CHECK_EQ(rtm_page_region_put(r, arena + (512u << 10)), -EINVAL);
    CHECK_EQ(rtm_page_region_put(r, NULL), -EINVAL);
    CHECK_EQ(rtm_page_region_put(r, p[3]), 0);
    CHECK_EQ(rtm_page_region_put(r, p[3]), -EINVAL); /* not out any more */
    CHECK(rtm_page_region_get(r) == p[3]);
    rtm_page_region_stats(r, &rs);
    CHECK(rs.pages_out == 31 && rs.peak_out == 31 && rs.gets == 32 && rs.puts == 1);
    /* bad creations */
    CHECK(rtm_page_region_create(arena, sizeof arena, 3000) == NULL && errno == EINVAL);
    CHECK(rtm_page_region_create(arena, sizeof arena, 512) == NULL && errno == EINVAL);
    CHECK(rtm_page_region_create(NULL, sizeof arena, 4096) == NULL && errno == EINVAL);
    CHECK(rtm_page_region_create(arena, 4096, 4096) == NULL && errno == ENOMEM);
    CHECK(rtm_page_region_on_arena(NULL, 4096) == NULL && errno == EINVAL);
    struct rtm_page_region_stats none;
    CHECK_EQ(rtm_page_region_stats(NULL, &none), -EINVAL);
    CHECK(rtm_page_region_get(NULL) == NULL);
}

/* ---- fills and waste ---------------------------------------------------------------- */

/* A fresh heap of P pages holds P * floor(span / cost) blocks (classes one
 * granule wide, below 1 KiB: exactly; wider ones: at least what
 * rtm_heap_fill_count says), and what its held pages do not give to them
 * is the waste the header states: each page's overhead and span % cost. */
TEST_CASE("fills hold the documented count, and waste what the header says")
{
    CHECK(PAGE - SPAN <= RTM_XVHEAP_PAGE_OVERHEAD);
    for (size_t n = 1; n <= rtm_xvheap_max_request(PAGE); n += n < 64 ? 7 : n / 5) {
        struct rtm_xvheap *h = rtm_xvheap_create(arena, sizeof arena);
        REQUIRE(h != NULL, );
        size_t np = pages(h).pages_max, per = SPAN / cost(n), got = 0;
        size_t expect = rtm_heap_fill_count(rtm_xvheap_heap(h), n);
        while (rtm_xvheap_alloc(h, n))
            got++;
        if (cost(n) < 1024) {
            CHECK_EQ(got, np * per);
            CHECK_EQ(expect, np * per);
        }
        CHECK(got >= expect && expect > 0);
        CHECK(got <= np * per);
        /* a page's rest below a minimum block goes to its last block */
        size_t rest = SPAN % cost(n), absorbed = rest < RTM_TLSF_MIN_BLOCK ? rest : 0;
        struct rtm_heap_stats st = stats(h);
        if (got == np * per) { /* every page full: the waste the header states */
            CHECK_EQ(st.used_bytes, got * cost(n) + np * absorbed);
            CHECK_EQ(held(h) - st.used_bytes, np * ((PAGE - SPAN) + rest - absorbed));
        }
        CHECK_EQ(rtm_xvheap_check(h), 0);
    }
}

TEST_CASE("requests a page cannot hold fail cleanly")
{
    struct rtm_xvheap *h = rtm_xvheap_create(arena, sizeof arena);
    REQUIRE(h != NULL, );
    size_t max = rtm_xvheap_max_request(PAGE);
    CHECK_EQ(max, SPAN - RTM_TLSF_HEADER_BYTES);
    CHECK(sizeof(size_t) != 8 || max == 4008);
    void *p = rtm_xvheap_alloc(h, max);
    CHECK(p != NULL && rtm_xvheap_usable_size(h, p) == max);
    CHECK(rtm_xvheap_alloc(h, max + 1) == NULL);
    CHECK(rtm_xvheap_aligned_alloc(h, 4096, 16) == NULL);
    void *q = rtm_xvheap_aligned_alloc(h, 2048, 100);
    CHECK(q != NULL && (uintptr_t)q % 2048 == 0);
    CHECK(rtm_xvheap_realloc(h, q, max + 1) == NULL);
    CHECK(rtm_xvheap_usable_size(h, q) >= 100); /* still q's */
    CHECK_EQ(stats(h).failed_allocs, 3);
    CHECK_EQ(rtm_xvheap_max_request(3000), 0);
    CHECK_EQ(rtm_xvheap_max_request(RTM_PAGES_MIN_SIZE / 2), 0);
    CHECK(rtm_xvheap_max_request(RTM_PAGES_MAX_SIZE) > RTM_PAGES_MAX_SIZE - 128);
    CHECK_EQ(rtm_xvheap_check(h), 0);
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, "pages");
}
