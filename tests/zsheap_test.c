/*
 * zsheap (rtmem/zsheap.h), beyond the common contract: its classes and
 * their zspages as the header states them; fill counts per class exact and
 * the waste per class the header states equal to what a fill measures;
 * zspages given back when their last object is freed, their runs joined,
 * and a drained heap as good as a fresh one; pointers that are no live
 * object refused with nothing changed; damage to the bookkeeping reported
 * and refused; aligned allocations and realloc.
 */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "heap_layout.h"
#include "../src/heap/kind.h"
#include "../src/lock/lock.h"
#include "rtmem/rtmem.h"

#define PAGE RTM_ZSHEAP_PAGE_SIZE

static unsigned char arena[1u << 20] __attribute__((aligned(4096)));
static unsigned char other[256u << 10] __attribute__((aligned(4096)));

static struct rtm_heap_stats stats(struct rtm_zsheap *h)
{
    struct rtm_heap_stats st;
    rtm_zsheap_stats(h, &st);
    return st;
}

static struct rtm_zsheap_page_stats pages(struct rtm_zsheap *h)
{
    struct rtm_zsheap_page_stats ps;
    rtm_zsheap_page_stats(h, &ps);
    return ps;
}

static size_t held(struct rtm_zsheap *h)
{
    return rtm_heap_held_bytes(rtm_zsheap_heap(h));
}

static struct rtm_zsheap_class class_of(size_t n)
{
    struct rtm_zsheap_class c = { 0 };
    rtm_zsheap_class_of(n, &c);
    return c;
}

/* ---- classes ------------------------------------------------------------------ */

TEST_CASE("every request has the class and zspage the header states")
{
    for (size_t n = 0; n <= RTM_ZSHEAP_MAX_REQUEST; n++) {
        struct rtm_zsheap_class c;
        REQUIRE(rtm_zsheap_class_of(n, &c) == 0, );
        /* 32 bytes, then every 16 */
        size_t want = n <= 32 ? 32 : (n + 15) & ~(size_t)15;
        CHECK_EQ(c.size, want);
        CHECK(c.pages >= 1 && c.pages <= RTM_ZSHEAP_MAX_ZSPAGE);
        CHECK(c.objects >= 1 && c.objects <= 128);
        CHECK_EQ(c.objects, c.pages * PAGE / c.size > 128 ? 128 : c.pages * PAGE / c.size);
        CHECK_EQ(c.waste, c.pages * PAGE - c.objects * c.size);
        /* no other zspage of at most 128 objects wastes a smaller share,
         * and a larger one never wastes the same share */
        for (size_t k = 1; k <= RTM_ZSHEAP_MAX_ZSPAGE; k++) {
            size_t objs = k * PAGE / c.size;
            if (objs > 128)
                continue;
            size_t w = k * PAGE - objs * c.size;
            CHECK(w * c.pages >= c.waste * k);
            if (w * c.pages == c.waste * k)
                CHECK(k >= c.pages);
        }
    }
    struct rtm_zsheap_class c;
    CHECK_EQ(rtm_zsheap_class_of(RTM_ZSHEAP_MAX_REQUEST + 1, &c), -E2BIG);
    CHECK_EQ(rtm_zsheap_class_of(16, NULL), -EINVAL);
    /* the header's example: 48-byte objects waste 16 bytes of a page */
    CHECK_EQ(class_of(48).waste, 16);
    CHECK_EQ(class_of(96).pages, 3);
    CHECK_EQ(class_of(96).waste, 0);
}

/* ---- fills -------------------------------------------------------------------- */

TEST_CASE("a fill of every class holds its count exactly and wastes what the class says")
{
    /* 30 pages: a multiple of no zspage of 4 pages, so the last zspage of
     * a class of 4 (or 3) pages is a shorter one */
    size_t size = RTM_ZSHEAP_CONTROL_BYTES + 30 * (PAGE + RTM_ZSHEAP_PAGE_DESC) + PAGE;
    for (size_t s = 32; s <= RTM_ZSHEAP_MAX_REQUEST; s += 16) {
        struct rtm_zsheap *h = rtm_zsheap_create(arena, size);
        REQUIRE(h != NULL, );
        size_t P = pages(h).pages_max;
        struct rtm_zsheap_class c = class_of(s);
        size_t rest = P % c.pages, rest_objs = rest * PAGE / s > 128 ? 128 : rest * PAGE / s;
        size_t want = P / c.pages * c.objects + rest_objs;
        CHECK_EQ(rtm_heap_fill_count(rtm_zsheap_heap(h), s), want);
        size_t got = 0;
        while (rtm_zsheap_alloc(h, s - 15 + (got % 16)))
            got++;
        CHECK_EQ(got, want);
        /* the waste: what the pages held hold that no object uses */
        CHECK_EQ(held(h), P * PAGE);
        CHECK_EQ(stats(h).used_bytes, got * s);
        size_t waste = P / c.pages * c.waste + (rest * PAGE - rest_objs * s);
        CHECK_EQ(held(h) - stats(h).used_bytes, waste);
        CHECK_EQ(pages(h).zspages, P / c.pages + (rest != 0));
        CHECK_EQ(rtm_zsheap_check(h), 0);
        if (got != want)
            break;
    }
}

/* ---- zspages given back ------------------------------------------------------- */

TEST_CASE("a zspage goes back when its last object is freed, and pages come back when needed")
{
    struct rtm_zsheap *h = rtm_zsheap_create(arena, sizeof arena);
    REQUIRE(h != NULL, );
    CHECK_EQ(held(h), 0);
    /* 704-byte objects: 23 to a zspage of 4 pages */
    void *p[46];
    for (int i = 0; i < 46; i++)
        REQUIRE((p[i] = rtm_zsheap_alloc(h, 700)) != NULL, );
    CHECK_EQ(held(h), 8 * PAGE);
    CHECK_EQ(pages(h).zspages, 2);
    CHECK_EQ(pages(h).peak_held, 8);
    for (int i = 0; i < 23; i++)
        CHECK_EQ(rtm_zsheap_free(h, p[i]), 0);
    CHECK_EQ(held(h), 4 * PAGE); /* the first zspage went back whole */
    for (int i = 23; i < 45; i++)
        CHECK_EQ(rtm_zsheap_free(h, p[i]), 0);
    CHECK_EQ(held(h), 4 * PAGE); /* one object left holds its zspage */
    CHECK_EQ(rtm_zsheap_free(h, p[45]), 0);
    CHECK_EQ(held(h), 0);
    struct rtm_zsheap_page_stats ps = pages(h);
    CHECK_EQ(ps.made, 2);
    CHECK_EQ(ps.freed, 2);
    CHECK_EQ(ps.zspages, 0);
    /* and they come back */
    void *q = rtm_zsheap_alloc(h, 4096);
    CHECK(q != NULL);
    CHECK_EQ(held(h), PAGE);
    CHECK_EQ(rtm_zsheap_free(h, q), 0);
    CHECK_EQ(rtm_zsheap_check(h), 0);
}

/* Allocates from h until it fails, in requests of n; returns the count
 * and frees them all again. */
static size_t fill_and_free(struct rtm_zsheap *h, size_t n)
{
    static void *p[1u << 15];
    size_t got = 0;
    while (got < sizeof p / sizeof p[0] && (p[got] = rtm_zsheap_alloc(h, n)) != NULL)
        got++;
    for (size_t i = 0; i < got; i++)
        CHECK_EQ(rtm_zsheap_free(h, p[i]), 0);
    return got;
}

TEST_CASE("runs given back join: a heap whose objects were all freed is as good as fresh")
{
    static const size_t probes[] = { 32, 700, 1202, 2560, 3000, 4096 };
    struct rtm_zsheap *h = rtm_zsheap_create(arena, 256u << 10);
    REQUIRE(h != NULL, );
    size_t fresh[6];
    for (int i = 0; i < 6; i++)
        fresh[i] = fill_and_free(h, probes[i]);
    /* random mixes of every class, each drained, in every order of frees */
    uint64_t rng = 42;
    static void *live[4096];
    for (int round = 0; round < 20; round++) {
        size_t n = 0;
        while (n < 4096) {
            void *q = rtm_zsheap_alloc(h, (size_t)rng_range(&rng, 1, 4096));
            if (!q)
                break;
            live[n++] = q;
        }
        CHECK(n > 10);
        for (size_t i = n; i > 1; i--) { /* shuffled */
            size_t j = (size_t)(rng_next(&rng) % i);
            void *t = live[i - 1];
            live[i - 1] = live[j];
            live[j] = t;
        }
        for (size_t i = 0; i < n; i++)
            CHECK_EQ(rtm_zsheap_free(h, live[i]), 0);
        CHECK_EQ(held(h), 0);
        CHECK_EQ(rtm_zsheap_check(h), 0);
        for (int i = 0; i < 6; i++)
            CHECK_EQ(fill_and_free(h, probes[i]), fresh[i]);
    }
}

TEST_CASE("with no run of a class's length left, its zspage takes fewer pages")
{
    /* 16 pages all in 1-page zspages, every other one freed: runs of one
     * page only, none at the bump */
    size_t size = RTM_ZSHEAP_CONTROL_BYTES + 16 * (PAGE + RTM_ZSHEAP_PAGE_DESC) + PAGE;
    struct rtm_zsheap *h = rtm_zsheap_create(arena, size);
    REQUIRE(h != NULL, );
    size_t P = pages(h).pages_max;
    void *p[64];
    for (size_t i = 0; i < P; i++)
        REQUIRE((p[i] = rtm_zsheap_alloc(h, PAGE)) != NULL, );
    for (size_t i = 0; i + 1 < P; i += 2)
        CHECK_EQ(rtm_zsheap_free(h, p[i]), 0);
    /* 704 bytes: a class of 4-page zspages; here one page holds 5 */
    size_t got = 0;
    while (rtm_zsheap_alloc(h, 700))
        got++;
    CHECK_EQ(got, (P / 2) * 5);
    CHECK_EQ(rtm_zsheap_check(h), 0);
}

/* ---- pointers ------------------------------------------------------------------ */

TEST_CASE("a pointer that is no live object of the heap is refused, nothing changed")
{
    struct rtm_zsheap *h = rtm_zsheap_create(arena, 256u << 10);
    struct rtm_zsheap *g = rtm_zsheap_create(other, sizeof other);
    REQUIRE(h && g, );
    unsigned char *a = rtm_zsheap_alloc(h, 100), *b = rtm_zsheap_alloc(h, 100);
    unsigned char *x = rtm_zsheap_alloc(g, 100), *big = rtm_zsheap_alloc(h, 3000);
    REQUIRE(a && b && x && big, );
    CHECK_EQ(b - a, 112); /* one class, side by side */
    unsigned char *gone = rtm_zsheap_alloc(h, 4096);
    REQUIRE(gone != NULL, );
    CHECK_EQ(rtm_zsheap_free(h, gone), 0); /* its page: a run now */
    struct rtm_heap_stats before = stats(h);
    unsigned char *bad[] = {
        a + 1,                   /* inside an object */
        a + 16,                  /* a granule in */
        a + 112 * 2,             /* a free object */
        big + 3008,              /* the next object: free */
        big + 4 * 3008,          /* past the zspage's last object */
        gone,                    /* a page given back */
        gone + 8 * PAGE,         /* past the pages handed out */
        x,                       /* another heap's */
        (unsigned char *)h + 64, /* its control structure */
        arena + sizeof arena - 16,
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        test_context = "bad pointer";
        CHECK_EQ(rtm_zsheap_free(h, bad[i]), -EINVAL);
        CHECK_EQ(rtm_zsheap_usable_size(h, bad[i]), 0);
    }
    test_context = NULL;
    CHECK_EQ(rtm_zsheap_free(h, a), 0);
    CHECK_EQ(rtm_zsheap_free(h, a), -EINVAL); /* twice */
    struct rtm_heap_stats after = stats(h);
    CHECK_EQ(after.corruptions, 0);
    CHECK_EQ(after.live_blocks, before.live_blocks - 1);
    CHECK_EQ(rtm_zsheap_check(h), 0);
    CHECK_EQ(rtm_zsheap_free(g, x), 0);
}

/* ---- damage -------------------------------------------------------------------- */

struct heard {
    int calls;
    const char *what;
    const void *block;
};

static void on_corruption(const struct rtm_heap_corruption *c, void *arg)
{
    struct heard *h = arg;
    h->calls++;
    h->what = c->what;
    h->block = c->block;
}

/* The descriptor of the page at p, in h (a heap of one region). */
static unsigned char *desc_of(struct rtm_heap *h, const void *p)
{
    struct heap_layout l;
    if (!heap_layout_find(h, &l))
        return NULL;
    size_t page = ((size_t)((const unsigned char *)p - (unsigned char *)h) - *l.xv.first) / PAGE;
    return (unsigned char *)h + *l.xv.stack + page * RTM_ZSHEAP_PAGE_DESC;
}

TEST_CASE("damage to the bookkeeping is reported and the call refused, nothing written")
{
    struct heard heard = { 0 };
    struct rtm_heap_config cfg = { .on_corruption = on_corruption, .on_corruption_arg = &heard };
    struct rtm_zsheap *z = rtm_zsheap_create_ex(arena, 256u << 10, &cfg);
    REQUIRE(z != NULL, );
    struct rtm_heap *h = rtm_zsheap_heap(z);
    unsigned char *a = rtm_zsheap_alloc(z, 100), *b = rtm_zsheap_alloc(z, 100);
    REQUIRE(a && b, );
    unsigned char *d = desc_of(h, a);
    REQUIRE(d != NULL, );
    unsigned char saved[RTM_ZSHEAP_PAGE_DESC];
    memcpy(saved, d, sizeof saved);
    /* each byte of the zspage's descriptor that says what the zspage is
     * (its first page, tag, capacity, class, length, state), changed
     * alone: the free is refused for damage, or for a pointer no longer
     * found, with nothing written; never accepted. (Its bitmap and count
     * change with every call: check finds them.) */
    const size_t W = sizeof(size_t), page_at = 16 + 2 * W, tag_at = page_at + W;
    size_t at[] = { page_at,    page_at + 1, page_at + W - 1, tag_at,     tag_at + 3,
                    tag_at + 6, tag_at + 7,  tag_at + 8,      tag_at + 9, tag_at + 10 };
    for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
        size_t i = at[k];
        d[i] ^= 0x40;
        int calls = heard.calls;
        int rc = rtm_zsheap_free(z, b);
        d[i] ^= 0x40;
        test_context = "descriptor byte";
        CHECK(rc == -EFAULT || rc == -EINVAL);
        CHECK(memcmp(d, saved, sizeof saved) == 0);
        if (rc == -EFAULT)
            CHECK(heard.calls == calls + 1 && heard.block == b);
    }
    test_context = NULL;
    CHECK(heard.calls > 0);
    CHECK_EQ(stats(z).corruptions, (uint64_t)heard.calls);
    CHECK_EQ(rtm_zsheap_check(z), 0);
    /* its links, first page and tag wiped: reported, and the check names it */
    memset(d + 16, 0x77, 3 * W + 4);
    int calls = heard.calls;
    CHECK_EQ(rtm_zsheap_free(z, a), -EFAULT);
    CHECK_EQ(heard.calls, calls + 1);
    CHECK(heard.what && heard.what[0]);
    CHECK_EQ(rtm_zsheap_check(z), -EFAULT);
    memcpy(d, saved, sizeof saved);
    CHECK_EQ(rtm_zsheap_check(z), 0);
}

TEST_CASE("a damaged run or class list refuses the allocation that would trust it")
{
    struct rtm_zsheap *z = rtm_zsheap_create(arena, 256u << 10);
    REQUIRE(z != NULL, );
    struct rtm_heap *h = rtm_zsheap_heap(z);
    /* a run of one page between two live ones */
    unsigned char *p0 = rtm_zsheap_alloc(z, PAGE), *p1 = rtm_zsheap_alloc(z, PAGE);
    unsigned char *p2 = rtm_zsheap_alloc(z, PAGE);
    REQUIRE(p0 && p1 && p2 && p1 == p0 + PAGE && p2 == p1 + PAGE, );
    CHECK_EQ(rtm_zsheap_free(z, p1), 0);
    unsigned char *d = desc_of(h, p1);
    REQUIRE(d != NULL, );
    d[16 + 2 * sizeof(size_t)] ^= 1; /* the run's length */
    uint64_t before = stats(z).corruptions;
    CHECK(rtm_zsheap_alloc(z, PAGE) == NULL);
    CHECK_EQ(stats(z).corruptions, before + 1);
    CHECK_EQ(rtm_zsheap_check(z), -EFAULT);
    d[16 + 2 * sizeof(size_t)] ^= 1;
    CHECK_EQ(rtm_zsheap_check(z), 0);
    /* a free that would join that run checks it first too */
    d[16 + 2 * sizeof(size_t)] ^= 1;
    CHECK_EQ(rtm_zsheap_free(z, p2), -EFAULT);
    d[16 + 2 * sizeof(size_t)] ^= 1;
    CHECK_EQ(rtm_zsheap_free(z, p2), 0);
    CHECK_EQ(rtm_zsheap_free(z, p0), 0);
    CHECK_EQ(held(z), 0);
    CHECK_EQ(rtm_zsheap_check(z), 0);
}

/* Every pointer of gone[] is refused as no object, nothing reported. */
static void none_live(struct rtm_zsheap *z, unsigned char *const *gone, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        CHECK_EQ(rtm_zsheap_usable_size(z, gone[i]), 0);
        CHECK_EQ(rtm_zsheap_free(z, gone[i]), -EINVAL);
        CHECK(rtm_zsheap_realloc(z, gone[i], 100) == NULL);
    }
    CHECK_EQ(stats(z).corruptions, 0);
    CHECK_EQ(rtm_zsheap_check(z), 0);
}

TEST_CASE("an object freed is no object, whatever run its pages joined, at every level")
{
    for (int level = RTM_HEAP_HARDEN_O1; level <= RTM_HEAP_HARDEN_NONE; level++) {
        test_context = level == RTM_HEAP_HARDEN_O1 ? "hardened" : "unhardened";
        struct rtm_heap_config cfg = { .hardening = level };
        struct rtm_zsheap *z = rtm_zsheap_create_ex(arena, 256u << 10, &cfg);
        REQUIRE(z != NULL, );
        /* four 1-page zspages side by side; three freed join one run, b's
         * page in its middle */
        unsigned char *a = rtm_zsheap_alloc(z, PAGE), *b = rtm_zsheap_alloc(z, PAGE);
        unsigned char *c = rtm_zsheap_alloc(z, PAGE), *d = rtm_zsheap_alloc(z, PAGE);
        REQUIRE(a && b == a + PAGE && c == b + PAGE && d == c + PAGE, );
        CHECK_EQ(rtm_zsheap_free(z, a), 0);
        CHECK_EQ(rtm_zsheap_free(z, c), 0);
        CHECK_EQ(rtm_zsheap_free(z, b), 0);
        unsigned char *abc[] = { a, b, c };
        none_live(z, abc, 3);
        /* 2560-byte objects: a zspage of 2 pages (3 objects) cut from that
         * run, given back; its third object starts in its second page */
        unsigned char *e = rtm_zsheap_alloc(z, 2560), *f = rtm_zsheap_alloc(z, 2560);
        unsigned char *g = rtm_zsheap_alloc(z, 2560);
        REQUIRE(e == a && f && g == e + 5120, );
        CHECK_EQ(rtm_zsheap_free(z, f), 0);
        CHECK_EQ(rtm_zsheap_free(z, g), 0);
        CHECK_EQ(rtm_zsheap_free(z, e), 0);
        unsigned char *efg[] = { e, f, g };
        none_live(z, efg, 3);
        CHECK_EQ(stats(z).live_blocks, 1);
        CHECK_EQ(held(z), PAGE);
        CHECK_EQ(rtm_zsheap_free(z, d), 0);
        CHECK_EQ(held(z), 0);
    }
    test_context = NULL;
}

TEST_CASE("wild writes to a zspage's descriptor are found before the heap trusts them")
{
    struct rtm_zsheap *z = rtm_zsheap_create(arena, 256u << 10);
    REQUIRE(z != NULL, );
    struct rtm_heap *h = rtm_zsheap_heap(z);
    const size_t W = sizeof(size_t);
    unsigned char *a = rtm_zsheap_alloc(z, 100), *b = rtm_zsheap_alloc(z, 100);
    REQUIRE(a && b, );
    unsigned char *d = desc_of(h, a);
    REQUIRE(d != NULL, );
    unsigned char saved[RTM_ZSHEAP_PAGE_DESC];
    memcpy(saved, d, sizeof saved);
    uint64_t reported = stats(z).corruptions;
    /* its first page moved 1 GiB away: no object handed out there */
    size_t page;
    memcpy(&page, d + 16 + 2 * W, W);
    page += (size_t)1 << 30;
    memcpy(d + 16 + 2 * W, &page, W);
    CHECK(rtm_zsheap_alloc(z, 100) == NULL);
    CHECK_EQ(stats(z).corruptions, ++reported);
    memcpy(d, saved, sizeof saved);
    /* a free object past its capacity (73 of 112 bytes in 2 pages): the
     * bitmap disagrees with the count */
    d[9] |= 0x80; /* object 79 */
    CHECK(rtm_zsheap_alloc(z, 100) == NULL);
    CHECK_EQ(stats(z).corruptions, ++reported);
    memcpy(d, saved, sizeof saved);
    /* its next link far outside the heap: never followed */
    size_t far = (size_t)1 << (sizeof(size_t) == 8 ? 44 : 30);
    memcpy(d + 16, &far, W);
    CHECK_EQ(rtm_zsheap_free(z, a), -EFAULT);
    CHECK_EQ(stats(z).corruptions, ++reported);
    CHECK(memcmp(d + 24 + W, saved + 24 + W, sizeof saved - 24 - W) == 0);
    memcpy(d, saved, sizeof saved);
    CHECK_EQ(rtm_zsheap_check(z), 0);
    CHECK_EQ(rtm_zsheap_free(z, a), 0);
    CHECK_EQ(rtm_zsheap_free(z, b), 0);
    CHECK_EQ(held(z), 0);
}

/* Offsets in a descriptor (zsheap.c's struct zs_desc): the bitmap, the
 * list links, the first page (a run's length), the tag, the counts. */
#define D_NEXT 16
#define D_PAGE (16 + 2 * sizeof(size_t))
#define D_TAG  (16 + 3 * sizeof(size_t))

static void flip(unsigned char *d, size_t at)
{
    d[at] ^= 0x40;
}

TEST_CASE("damaged runs are found by every call that would join, cut or link them")
{
    struct rtm_zsheap *z = rtm_zsheap_create(arena, 256u << 10);
    REQUIRE(z != NULL, );
    struct rtm_heap *h = rtm_zsheap_heap(z);
    unsigned char *p[10];
    for (int i = 0; i < 10; i++)
        REQUIRE((p[i] = rtm_zsheap_alloc(z, PAGE)) != NULL && p[i] == p[0] + i * PAGE, );
    /* runs: p1 (one page), p3..p5 (three pages) */
    CHECK_EQ(rtm_zsheap_free(z, p[1]), 0);
    for (int i = 3; i < 6; i++)
        CHECK_EQ(rtm_zsheap_free(z, p[i]), 0);
    CHECK_EQ(held(z), 6 * PAGE);
    unsigned char *r1 = desc_of(h, p[1]), *r3 = desc_of(h, p[3]);
    uint64_t reported = stats(z).corruptions;
    /* p0's free would join the run after it: checked */
    flip(r1, D_TAG);
    CHECK_EQ(rtm_zsheap_free(z, p[0]), -EFAULT);
    CHECK_EQ(stats(z).corruptions, ++reported);
    /* p8's free joins nothing, but its run goes first in the list of
     * one-page runs, whose head it writes: checked */
    CHECK_EQ(rtm_zsheap_free(z, p[8]), -EFAULT);
    CHECK_EQ(stats(z).corruptions, ++reported);
    /* a 2-page zspage cut from p3..p5 puts its rest in that list: checked */
    CHECK(rtm_zsheap_alloc(z, 2560) == NULL);
    CHECK_EQ(stats(z).corruptions, ++reported);
    CHECK_EQ(rtm_zsheap_check(z), -EFAULT);
    flip(r1, D_TAG);
    CHECK_EQ(rtm_zsheap_check(z), 0);
    /* the run p3..p5 itself damaged: a zspage cut from it is refused */
    flip(r3, D_PAGE);
    CHECK(rtm_zsheap_alloc(z, 2560) == NULL);
    CHECK_EQ(stats(z).corruptions, ++reported);
    flip(r3, D_PAGE);
    /* undamaged, every call goes through, and the heap drains whole */
    unsigned char *q = rtm_zsheap_alloc(z, 2560);
    CHECK(q == p[3]);
    CHECK_EQ(rtm_zsheap_free(z, q), 0);
    for (int i = 0; i < 10; i++)
        if (i != 1 && (i < 3 || i > 5))
            CHECK_EQ(rtm_zsheap_free(z, p[i]), 0);
    CHECK_EQ(held(z), 0);
    CHECK_EQ(rtm_zsheap_check(z), 0);
}

TEST_CASE("a bitmap that agrees with its count but names an object past the zspage is refused")
{
    struct rtm_zsheap *z = rtm_zsheap_create(arena, 256u << 10);
    REQUIRE(z != NULL, );
    /* 2560-byte objects: 3 to a zspage; two taken, object 2 free */
    unsigned char *a = rtm_zsheap_alloc(z, 2560), *b = rtm_zsheap_alloc(z, 2560);
    REQUIRE(a && b, );
    unsigned char *d = desc_of(rtm_zsheap_heap(z), a);
    REQUIRE(d != NULL && d[0] == 0x04, );
    d[0] = 0x20; /* object 5 free instead: the count still agrees */
    uint64_t reported = stats(z).corruptions;
    CHECK(rtm_zsheap_alloc(z, 2560) == NULL);
    CHECK_EQ(stats(z).corruptions, reported + 1);
    d[0] = 0x04;
    CHECK(rtm_zsheap_alloc(z, 2560) == a + 5120);
    CHECK_EQ(rtm_zsheap_check(z), 0);
}

TEST_CASE("a realloc whose old object cannot be freed for damage gives the new one back")
{
    struct rtm_zsheap *z = rtm_zsheap_create(arena, 256u << 10);
    REQUIRE(z != NULL, );
    struct rtm_heap *h = rtm_zsheap_heap(z);
    unsigned char *keep = rtm_zsheap_alloc(z, 100); /* a 112-byte zspage with room */
    unsigned char *p0 = rtm_zsheap_alloc(z, PAGE), *p1 = rtm_zsheap_alloc(z, PAGE);
    unsigned char *p2 = rtm_zsheap_alloc(z, PAGE);
    REQUIRE(keep && p0 && p1 && p2, );
    CHECK_EQ(rtm_zsheap_free(z, p2), 0); /* at the bump: given back whole */
    unsigned char *after = rtm_zsheap_alloc(z, PAGE), *last = rtm_zsheap_alloc(z, PAGE);
    REQUIRE(after == p2 && last, );
    CHECK_EQ(rtm_zsheap_free(z, after), 0); /* a run after p1 */
    memset(p1, 0x3c, 64);
    flip(desc_of(h, after), D_TAG);
    struct rtm_heap_stats before = stats(z);
    /* p1 moves to a 112-byte object (no run needed), then its free would
     * join the damaged run: refused, the new object given back */
    CHECK(rtm_zsheap_realloc(z, p1, 100) == NULL);
    struct rtm_heap_stats st = stats(z);
    CHECK_EQ(st.live_blocks, before.live_blocks);
    CHECK_EQ(st.used_bytes, before.used_bytes);
    CHECK(st.corruptions > before.corruptions);
    CHECK_EQ(rtm_zsheap_usable_size(z, p1), PAGE);
    CHECK_EQ(p1[63], 0x3c);
    flip(desc_of(h, after), D_TAG);
    CHECK_EQ(rtm_zsheap_check(z), 0);
}

TEST_CASE("full hardening refuses every call once its periodic check finds damage")
{
    struct rtm_heap_config cfg = { .hardening = RTM_HEAP_HARDEN_FULL, .check_interval = 1 };
    struct rtm_zsheap *z = rtm_zsheap_create_ex(arena, 256u << 10, &cfg);
    REQUIRE(z != NULL, );
    unsigned char *a = rtm_zsheap_alloc(z, 100), *b = rtm_zsheap_alloc(z, 100);
    REQUIRE(a && b, );
    unsigned char *d = desc_of(rtm_zsheap_heap(z), a);
    d[1] &= 0x7f; /* object 15 taken, says the bitmap alone */
    CHECK(rtm_zsheap_alloc(z, 100) == NULL);
    CHECK(rtm_zsheap_aligned_alloc(z, 64, 100) == NULL);
    CHECK(rtm_zsheap_realloc(z, a, 200) == NULL);
    CHECK_EQ(rtm_zsheap_free(z, b), -EFAULT);
    CHECK(stats(z).corruptions >= 4);
    d[1] |= 0x80;
    CHECK_EQ(rtm_zsheap_free(z, b), 0);
    CHECK_EQ(rtm_zsheap_free(z, a), 0);
}

struct walked {
    size_t n, stop_at;
    void *seen[64];
};

static int count_block(void *arg, void *block)
{
    struct walked *w = arg;
    if (w->n < 64)
        w->seen[w->n] = block;
    return ++w->n == w->stop_at ? 7 : 0;
}

TEST_CASE("the walk reports every live object, stops when asked, and refuses damage")
{
    struct rtm_zsheap *z = rtm_zsheap_create(arena, 256u << 10);
    REQUIRE(z != NULL, );
    struct rtm_heap *h = rtm_zsheap_heap(z);
    const struct rtm_heap_ops *ops = rtm__heap_ops(h);
    REQUIRE(ops != NULL, );
    unsigned char *a = rtm_zsheap_alloc(z, 100), *b = rtm_zsheap_alloc(z, 100);
    unsigned char *c = rtm_zsheap_alloc(z, 3000), *e = rtm_zsheap_alloc(z, PAGE);
    REQUIRE(a && b && c && e, );
    CHECK_EQ(rtm_zsheap_free(z, b), 0);
    unsigned char *gone = rtm_zsheap_alloc(z, PAGE), *last = rtm_zsheap_alloc(z, PAGE);
    REQUIRE(gone && last, );
    CHECK_EQ(rtm_zsheap_free(z, gone), 0); /* a run between two zspages */
    struct walked w = { 0, 0, { 0 } };
    CHECK_EQ(ops->walk(h, count_block, &w), 0);
    CHECK_EQ(w.n, 4);
    CHECK(w.seen[0] == a && w.seen[1] == c && w.seen[2] == e && w.seen[3] == last);
    w = (struct walked){ 0, 2, { 0 } };
    CHECK_EQ(ops->walk(h, count_block, &w), 7);
    CHECK_EQ(w.n, 2);
    /* a zspage whose capacity does not follow from its class: refused
     * before any object of it is reported */
    unsigned char *dc = desc_of(h, c);
    flip(dc, D_TAG + 6);
    w = (struct walked){ 0, 0, { 0 } };
    CHECK_EQ(ops->walk(h, count_block, &w), -EFAULT);
    CHECK_EQ(w.n, 1);
    flip(dc, D_TAG + 6);
    /* a page handed out that is in no zspage and no run */
    unsigned char *dg = desc_of(h, gone);
    flip(dg, D_TAG + 10);
    CHECK_EQ(ops->walk(h, count_block, &w), -EFAULT);
    flip(dg, D_TAG + 10);
    CHECK_EQ(rtm_zsheap_check(z), 0);
    struct rtm_heap_stats st;
    CHECK_EQ(rtm_zsheap_stats(NULL, &st), -EINVAL);
    CHECK_EQ(rtm_zsheap_stats(z, NULL), -EINVAL);
}

/* ---- on a page provider ------------------------------------------------------ */

static unsigned char ctl[RTM_ZSHEAP_CONTROL_ON(64)] __attribute__((aligned(64)));

/* A provider that hands out what a test says. */
struct fake {
    struct rtm_page_region *r;
    void *next; /* handed out once instead of the region's page, if set */
    int gets, puts;
};

static void *fake_get(void *ctx)
{
    struct fake *f = ctx;
    f->gets++;
    if (f->next) {
        void *p = f->next;
        f->next = NULL;
        return p;
    }
    return rtm_page_region_get(f->r);
}

static void fake_put(void *ctx, void *page)
{
    struct fake *f = ctx;
    f->puts++;
    CHECK_EQ(rtm_page_region_put(f->r, page), 0);
}

TEST_CASE("on a provider, zspages are pages taken when needed and given back when empty")
{
    /* a region of 40 pages after its bookkeeping */
    struct rtm_page_region *r = rtm_page_region_create(other, 41 * PAGE, PAGE);
    REQUIRE(r != NULL, );
    struct rtm_page_provider prov = rtm_page_region_provider(r);
    size_t range = prov.span / PAGE;
    REQUIRE(range <= 64, );
    struct rtm_zsheap *z = rtm_zsheap_create_on(ctl, sizeof ctl, NULL, &prov);
    REQUIRE(z != NULL, );
    struct rtm_page_region_stats rs;
    rtm_page_region_stats(r, &rs);
    CHECK_EQ(pages(z).pages_max, range);
    /* 3000 bytes: one object to a page on a provider (4 to 3 pages here) */
    unsigned char *a = rtm_zsheap_alloc(z, 3000), *b = rtm_zsheap_alloc(z, 3000);
    REQUIRE(a && b, );
    CHECK((uintptr_t)a % PAGE == 0 && (uintptr_t)b % PAGE == 0 && a != b);
    CHECK_EQ(held(z), 2 * PAGE);
    rtm_page_region_stats(r, &rs);
    CHECK_EQ(rs.pages_out, 2);
    /* 100 bytes: 36 objects of 112 share a page */
    unsigned char *c[36];
    for (int i = 0; i < 36; i++)
        REQUIRE((c[i] = rtm_zsheap_alloc(z, 100)) != NULL, );
    CHECK_EQ((uintptr_t)c[0] / PAGE, (uintptr_t)c[35] / PAGE);
    CHECK_EQ(held(z), 3 * PAGE);
    CHECK_EQ(rtm_zsheap_free(z, a), 0);
    rtm_page_region_stats(r, &rs);
    CHECK_EQ(rs.pages_out, 2); /* a's page went back */
    CHECK_EQ(rtm_zsheap_free(z, a), -EINVAL);
    for (int i = 0; i < 36; i++)
        CHECK_EQ(rtm_zsheap_free(z, c[i]), 0);
    CHECK_EQ(held(z), PAGE);
    CHECK_EQ(rtm_zsheap_check(z), 0);
    /* the fill: a page per object of 3000 bytes, every page of the range */
    CHECK_EQ(rtm_heap_fill_count(rtm_zsheap_heap(z), 3000), range);
    size_t n = 1;
    while (rtm_zsheap_alloc(z, 3000))
        n++;
    CHECK_EQ(n, range);
    struct rtm_heap_stats st = stats(z);
    CHECK(st.failed_allocs >= 1 && st.corruptions == 0);
    CHECK_EQ(st.largest_free_bytes, 0); /* no page left, no class with room */
    CHECK_EQ(rtm_zsheap_add_pool(z, arena, 64u << 10), -ENOTSUP);
    /* destroy gives every page back */
    rtm_heap_destroy(rtm_zsheap_heap(z));
    rtm_page_region_stats(r, &rs);
    CHECK_EQ(rs.pages_out, 0);
}

TEST_CASE(
    "on a provider: no page is a clean failure, a bad page is not used, a foreign block refused")
{
    struct rtm_page_region *r = rtm_page_region_create(other, 41 * PAGE, PAGE);
    REQUIRE(r != NULL, );
    struct fake f = { r, NULL, 0, 0 };
    struct rtm_page_provider prov = rtm_page_region_provider(r);
    prov.get = fake_get;
    prov.put = fake_put;
    prov.ctx = &f;
    struct rtm_zsheap *z = rtm_zsheap_create_on(ctl, sizeof ctl, NULL, &prov);
    REQUIRE(z != NULL, );
    unsigned char *a = rtm_zsheap_alloc(z, 4096);
    REQUIRE(a != NULL, );
    /* a page outside the range, a misaligned one, one the heap holds */
    void *bad[] = { arena, a + 16, a };
    for (int i = 0; i < 3; i++) {
        f.next = bad[i];
        CHECK(rtm_zsheap_alloc(z, 4096) == NULL);
    }
    CHECK_EQ(stats(z).corruptions, 0);
    CHECK_EQ(held(z), PAGE);
    /* a second heap on the same region: each refuses the other's blocks */
    static unsigned char ctl2[RTM_ZSHEAP_CONTROL_ON(64)] __attribute__((aligned(64)));
    struct rtm_page_provider plain = rtm_page_region_provider(r);
    struct rtm_zsheap *y = rtm_zsheap_create_on(ctl2, sizeof ctl2, NULL, &plain);
    REQUIRE(y != NULL, );
    unsigned char *q = rtm_zsheap_alloc(y, 200);
    REQUIRE(q != NULL, );
    CHECK_EQ(rtm_zsheap_free(z, q), -EINVAL);
    CHECK_EQ(rtm_zsheap_free(y, a), -EINVAL);
    CHECK_EQ(rtm_zsheap_usable_size(z, q), 0);
    /* the region runs dry: a clean failure in both */
    size_t n = 0;
    while (rtm_zsheap_alloc(y, 4096))
        n++;
    CHECK(n > 0);
    CHECK(rtm_zsheap_alloc(z, 4096) == NULL);
    CHECK_EQ(rtm_zsheap_check(z), 0);
    CHECK_EQ(rtm_zsheap_check(y), 0);
    CHECK_EQ(rtm_zsheap_free(z, a), 0);
    CHECK_EQ(f.puts, 1);
    /* bad providers and control memory refused */
    struct rtm_page_provider p2 = plain;
    p2.page_size = 8192;
    CHECK(rtm_zsheap_create_on(ctl2, sizeof ctl2, NULL, &p2) == NULL && errno == EINVAL);
    p2 = plain;
    p2.put = NULL;
    CHECK(rtm_zsheap_create_on(ctl2, sizeof ctl2, NULL, &p2) == NULL && errno == EINVAL);
    CHECK(rtm_zsheap_create_on(ctl2, RTM_ZSHEAP_CONTROL_BYTES, NULL, &plain) == NULL &&
          errno == ENOMEM);
    CHECK(rtm_zsheap_create_on(other, sizeof ctl2, NULL, &plain) == NULL && errno == EINVAL);
    CHECK(rtm_zsheap_create_on(ctl2, sizeof ctl2, NULL, NULL) == NULL && errno == EINVAL);
}

/* ---- aligned, realloc -------------------------------------------------------- */

TEST_CASE("aligned allocations: every alignment up to a page, the object at a multiple")
{
    struct rtm_zsheap *z = rtm_zsheap_create(arena, sizeof arena);
    REQUIRE(z != NULL, );
    uint64_t rng = 7;
    for (int i = 0; i < 3000; i++) {
        size_t a = (size_t)1 << rng_range(&rng, 0, 12), n = (size_t)rng_range(&rng, 0, 4096);
        unsigned char *p = rtm_zsheap_aligned_alloc(z, a, n);
        REQUIRE(p != NULL, );
        CHECK_EQ((uintptr_t)p % a, 0);
        CHECK((uintptr_t)p % 16 == 0);
        CHECK(rtm_zsheap_usable_size(z, p) >= n);
        memset(p, 0x5a, n);
        CHECK_EQ(rtm_zsheap_free(z, p), 0);
    }
    CHECK(rtm_zsheap_aligned_alloc(z, 2 * PAGE, 16) == NULL);
    CHECK(rtm_zsheap_aligned_alloc(z, 48, 16) == NULL);
    CHECK(rtm_zsheap_aligned_alloc(z, 1024, 4097) == NULL);
    unsigned char *p = rtm_zsheap_aligned_alloc(z, 1024, 3073); /* the class of 4096 */
    CHECK(p != NULL && rtm_zsheap_usable_size(z, p) == 4096 && (uintptr_t)p % 1024 == 0);
    CHECK_EQ(rtm_zsheap_check(z), 0);
}

TEST_CASE("realloc keeps the object within its class and moves it across classes")
{
    struct rtm_zsheap *z = rtm_zsheap_create(arena, sizeof arena);
    REQUIRE(z != NULL, );
    unsigned char *p = rtm_zsheap_alloc(z, 100);
    REQUIRE(p != NULL, );
    for (int i = 0; i < 100; i++)
        p[i] = (unsigned char)i;
    CHECK(rtm_zsheap_realloc(z, p, 112) == p); /* its class: 112 */
    unsigned char *q = rtm_zsheap_realloc(z, p, 2000);
    REQUIRE(q != NULL && q != p, );
    for (int i = 0; i < 100; i++)
        CHECK_EQ(q[i], (unsigned char)i);
    CHECK_EQ(rtm_zsheap_usable_size(z, q), 2000 + 0);
    CHECK(rtm_zsheap_realloc(z, q, 4097) == NULL); /* too large: q intact */
    CHECK_EQ(rtm_zsheap_usable_size(z, q), 2000);
    unsigned char *r = rtm_zsheap_realloc(z, q, 10);
    REQUIRE(r != NULL, );
    CHECK_EQ(rtm_zsheap_usable_size(z, r), 32);
    for (int i = 0; i < 10; i++)
        CHECK_EQ(r[i], (unsigned char)i);
    CHECK_EQ(stats(z).live_blocks, 1);
    CHECK_EQ(rtm_zsheap_free(z, r), 0);
    CHECK_EQ(held(z), 0);
    CHECK_EQ(rtm_zsheap_check(z), 0);
}

TEST_CASE("regions added: objects in each, freed from each, and the typed API's errors")
{
    struct rtm_zsheap *z = rtm_zsheap_create(arena, 64u << 10);
    REQUIRE(z != NULL, );
    CHECK_EQ(rtm_zsheap_add_pool(z, arena + (512u << 10), 64u << 10), 0);
    CHECK_EQ(rtm_zsheap_add_pool(z, arena + (512u << 10), 64u << 10), -EINVAL); /* overlap */
    CHECK_EQ(rtm_zsheap_add_pool(z, arena + (800u << 10), 4096), -ENOMEM);
    CHECK_EQ(rtm_zsheap_add_pool(z, NULL, 4096), -EINVAL);
    size_t n = 0;
    static void *p[64];
    while (n < 64 && (p[n] = rtm_zsheap_alloc(z, PAGE)) != NULL)
        n++;
    CHECK_EQ(n, pages(z).pages_max);
    CHECK(n > 20);
    bool second = false;
    for (size_t i = 0; i < n; i++)
        second |= (unsigned char *)p[i] >= arena + (512u << 10);
    CHECK(second);
    for (size_t i = 0; i < n; i++)
        CHECK_EQ(rtm_zsheap_free(z, p[i]), 0);
    CHECK_EQ(held(z), 0);
    CHECK_EQ(stats(z).pool_count, 2);
    CHECK_EQ(rtm_zsheap_check(z), 0);
    CHECK(rtm_zsheap_create(arena, 4096) == NULL && errno == ENOMEM);
    CHECK(rtm_zsheap_create(NULL, 4096) == NULL && errno == EINVAL);
    struct rtm_heap_config locked = { .lock = RTM_HEAP_LOCK_PI };
    CHECK(rtm_zsheap_create_ex(arena, sizeof arena, &locked) == NULL && errno == EINVAL);
    struct rtm_zsheap_page_stats ps;
    CHECK_EQ(rtm_zsheap_page_stats(NULL, &ps), -EINVAL);
    CHECK_EQ(rtm_zsheap_check(NULL), -EINVAL);
    CHECK_EQ(rtm_zsheap_free(z, NULL), 0);
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, "zsheap");
}
