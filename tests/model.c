#include <errno.h>

#include "check.h"
#include "model.h"

#define GRAN 16u

static size_t gran_index(const struct model *m, const unsigned char *p)
{
    return (size_t)(p - m->lo) / GRAN;
}

void model_init(struct model *m, struct rtm_heap *h, void *lo, size_t span, size_t given)
{
    memset(m, 0, sizeof(*m));
    m->h = h;
    m->lo = lo;
    m->span = span;
    m->owner = calloc(span / GRAN + 1, sizeof(*m->owner));
    m->cap = 1024;
    m->blocks = malloc(m->cap * sizeof(*m->blocks));
    m->next_id = 1;
    if (!m->owner || !m->blocks) {
        fprintf(stderr, "model: out of memory\n");
        exit(2);
    }
    m->given_bytes = given;
    struct rtm_heap_stats st;
    CHECK_EQ(rtm_heap_stats(h, &st), 0);
    m->usable_bytes = st.usable_bytes;
    m->largest_fresh = st.largest_free_bytes;
    m->failed = st.failed_allocs;
    CHECK_EQ(st.used_bytes, 0);
    CHECK_EQ(st.live_blocks, 0);
    CHECK_EQ(st.usable_bytes + st.overhead_bytes, given);
}

void model_fini(struct model *m)
{
    free(m->owner);
    free(m->blocks);
    memset(m, 0, sizeof(*m));
}

void model_pool_added(struct model *m, size_t given)
{
    struct rtm_heap_stats st;
    rtm_heap_stats(m->h, &st);
    m->given_bytes += given;
    CHECK(st.usable_bytes > m->usable_bytes);
    CHECK_EQ(st.usable_bytes + st.overhead_bytes, m->given_bytes);
    m->usable_bytes = st.usable_bytes;
    if (m->n == 0)
        m->largest_fresh = st.largest_free_bytes;
    else
        m->largest_fresh = 0; /* unknown: set again by the next drain */
}

/* Pattern: the id in the first and last 4 bytes, a tag byte between. */
static unsigned char tag_of(uint32_t id)
{
    return (unsigned char)(id * 151u + 7u) | 1u;
}

static void fill(unsigned char *p, size_t usable, uint32_t id)
{
    memset(p, tag_of(id), usable);
    if (usable >= 8) {
        memcpy(p, &id, 4);
        memcpy(p + usable - 4, &id, 4);
    }
}

/* Checks that the first limit bytes of a block filled with (usable, id) are
 * intact. */
static bool pattern_ok(const unsigned char *p, size_t usable, uint32_t id, size_t limit)
{
    unsigned char tag = tag_of(id);
    size_t n = limit < usable ? limit : usable;
    for (size_t i = 0; i < n; i++) {
        unsigned char want = tag;
        if (usable >= 8 && (i < 4 || i >= usable - 4)) {
            size_t k = i < 4 ? i : i - (usable - 4);
            want = (unsigned char)(id >> (8 * k));
        }
        if (p[i] != want)
            return false;
    }
    return true;
}

static void own(struct model *m, const struct mblock *b, uint32_t id, bool claim)
{
    size_t first = gran_index(m, b->p);
    size_t last = gran_index(m, b->p + (b->usable ? b->usable - 1 : 0));
    for (size_t g = first; g <= last; g++) {
        if (claim) {
            if (m->owner[g] != 0) {
                CHECK(m->owner[g] == 0); /* overlap with a live block */
                return;
            }
            m->owner[g] = id;
        } else {
            CHECK_EQ(m->owner[g], id);
            m->owner[g] = 0;
        }
    }
}

/* Checks a block the heap just returned for size bytes (aligned to
 * alignment, 1 if none was asked) and records it. */
static long record(struct model *m, unsigned char *p, size_t size, size_t alignment,
                   size_t zero_len)
{
    size_t usable = rtm_heap_usable_size(m->h, p);
    size_t asked = size > alignment ? size : alignment;
    CHECK((uintptr_t)p % RTM_HEAP_MIN_ALIGN == 0);
    CHECK(usable >= size);
    CHECK(usable <= 2 * asked + 64); /* not absurdly larger than asked */
    REQUIRE(p >= m->lo && usable <= m->span && (size_t)(p - m->lo) <= m->span - usable, -1);
    for (size_t i = 0; i < zero_len; i++)
        if (p[i] != 0) {
            CHECK(!"calloc memory is zero");
            break;
        }
    if (m->n == m->cap) {
        m->cap *= 2;
        m->blocks = realloc(m->blocks, m->cap * sizeof(*m->blocks));
        if (!m->blocks)
            exit(2);
    }
    struct mblock *b = &m->blocks[m->n];
    *b = (struct mblock){ .p = p, .req = size, .usable = usable, .id = m->next_id++ };
    if (m->next_id == 0)
        m->next_id = 1;
    own(m, b, b->id, true);
    fill(p, usable, b->id);
    return (long)m->n++;
}

static size_t largest_now(const struct model *m)
{
    struct rtm_heap_stats st;
    rtm_heap_stats(m->h, &st);
    return st.largest_free_bytes;
}

long model_alloc(struct model *m, size_t size)
{
    size_t largest = largest_now(m);
    unsigned char *p = rtm_heap_alloc(m->h, size);
    if (!p) {
        /* largest_free_bytes promised any size up to it would fit; 0 means
         * nothing fits, not even alloc(0). */
        CHECK(largest == 0 || size > largest);
        m->failed++;
        return -1;
    }
    return record(m, p, size, 1, 0);
}

long model_aligned_alloc(struct model *m, size_t alignment, size_t size)
{
    unsigned char *p = rtm_heap_aligned_alloc(m->h, alignment, size);
    bool valid = alignment != 0 && (alignment & (alignment - 1)) == 0;
    if (!valid)
        CHECK(p == NULL);
    if (!p) {
        m->failed++;
        return -1;
    }
    CHECK((uintptr_t)p % alignment == 0);
    return record(m, p, size, alignment, 0);
}

long model_calloc(struct model *m, size_t n, size_t size)
{
    unsigned char *p = rtm_heap_calloc(m->h, n, size);
    if (!p) {
        m->failed++;
        return -1;
    }
    return record(m, p, n * size, 1, n * size);
}

static void forget(struct model *m, size_t idx)
{
    own(m, &m->blocks[idx], m->blocks[idx].id, false);
    m->blocks[idx] = m->blocks[--m->n];
}

long model_realloc(struct model *m, size_t idx, size_t size)
{
    struct mblock old = m->blocks[idx];
    unsigned char *q = rtm_heap_realloc(m->h, old.p, size);
    if (!q) {
        m->failed++;
        CHECK(pattern_ok(old.p, old.usable, old.id, old.usable)); /* untouched */
        CHECK_EQ(rtm_heap_usable_size(m->h, old.p), old.usable);
        return -1;
    }
    size_t keep = size < old.usable ? size : old.usable;
    CHECK(pattern_ok(q, old.usable, old.id, keep)); /* contents preserved */
    forget(m, idx);
    /* Staying in place when going smaller is allowed: the size bound is then
     * against the block as it was. */
    return record(m, q, size, q == old.p ? old.usable : 1, 0);
}

void model_free(struct model *m, size_t idx)
{
    struct mblock b = m->blocks[idx];
    CHECK(pattern_ok(b.p, b.usable, b.id, b.usable));
    forget(m, idx);
    CHECK_EQ(rtm_heap_free(m->h, b.p), 0);
}

static bool stats_equal(const struct rtm_heap_stats *a, const struct rtm_heap_stats *b)
{
    return a->usable_bytes == b->usable_bytes && a->used_bytes == b->used_bytes &&
           a->free_bytes == b->free_bytes && a->peak_used_bytes == b->peak_used_bytes &&
           a->largest_free_bytes == b->largest_free_bytes && a->live_blocks == b->live_blocks &&
           a->failed_allocs == b->failed_allocs;
}

void model_bad_frees(struct model *m, uint64_t *rng)
{
    /* A block freed for real, to be freed again below. */
    unsigned char *gone = NULL;
    long i = model_alloc(m, (size_t)rng_range(rng, 0, 200));
    if (i >= 0) {
        gone = m->blocks[i].p;
        model_free(m, (size_t)i);
    }
    struct rtm_heap_stats before, after;
    rtm_heap_stats(m->h, &before);
    int local = 0;
    CHECK_EQ(rtm_heap_free(m->h, &local), -EINVAL);                 /* foreign */
    CHECK_EQ(rtm_heap_free(m->h, m->lo + m->span + 4096), -EINVAL); /* past every pool */
    if (m->n) {
        struct mblock *b = &m->blocks[rng_next(rng) % m->n];
        CHECK_EQ(rtm_heap_free(m->h, b->p + 1), -EINVAL); /* misaligned */
        CHECK_EQ(rtm_heap_free(m->h, b->p + 8), -EINVAL);
    }
    if (gone) {
        CHECK_EQ(rtm_heap_free(m->h, gone), -EINVAL); /* double free */
        CHECK_EQ(rtm_heap_usable_size(m->h, gone), 0);
        CHECK(rtm_heap_realloc(m->h, gone, 16) == NULL);
        m->failed++;
        before.failed_allocs++;
    }
    rtm_heap_stats(m->h, &after);
    CHECK(stats_equal(&before, &after));
    CHECK_EQ(rtm_heap_check(m->h), 0);
}

void model_checkpoint(struct model *m)
{
    CHECK_EQ(rtm_heap_check(m->h), 0);
    struct rtm_heap_stats st;
    CHECK_EQ(rtm_heap_stats(m->h, &st), 0);
    size_t usable_sum = 0;
    for (size_t i = 0; i < m->n; i++) {
        const struct mblock *b = &m->blocks[i];
        usable_sum += b->usable;
        if (!pattern_ok(b->p, b->usable, b->id, b->usable)) {
            CHECK(!"live block contents intact");
            break;
        }
        if (rtm_heap_usable_size(m->h, b->p) != b->usable) {
            CHECK(!"usable size stable while live");
            break;
        }
    }
    CHECK_EQ(st.live_blocks, m->n);
    CHECK_EQ(st.failed_allocs, m->failed);
    CHECK_EQ(st.usable_bytes, m->usable_bytes);
    CHECK_EQ(st.used_bytes + st.free_bytes, st.usable_bytes);
    CHECK_EQ(st.usable_bytes + st.overhead_bytes, m->given_bytes);
    CHECK(st.used_bytes >= usable_sum);
    CHECK(st.peak_used_bytes >= st.used_bytes && st.peak_used_bytes >= m->last_peak);
    CHECK(st.largest_free_bytes <= st.free_bytes);
    m->last_peak = st.peak_used_bytes;
    if (st.largest_free_bytes > 0) {
        void *p = rtm_heap_alloc(m->h, st.largest_free_bytes);
        CHECK(p != NULL); /* the figure is a promise */
        if (p) {
            CHECK(rtm_heap_usable_size(m->h, p) >= st.largest_free_bytes);
            CHECK_EQ(rtm_heap_free(m->h, p), 0);
        } else {
            m->failed++;
        }
    }
}

void model_drain(struct model *m, uint64_t *rng)
{
    while (m->n)
        model_free(m, (size_t)(rng_next(rng) % m->n));
    CHECK_EQ(rtm_heap_check(m->h), 0);
    struct rtm_heap_stats st;
    rtm_heap_stats(m->h, &st);
    CHECK_EQ(st.used_bytes, 0);
    CHECK_EQ(st.live_blocks, 0);
    CHECK_EQ(st.free_bytes, st.usable_bytes);
    if (m->largest_fresh)
        CHECK_EQ(st.largest_free_bytes, m->largest_fresh); /* coalescing is complete */
    m->largest_fresh = st.largest_free_bytes;
}

/* Mixed sizes: mostly small, some medium, a few large. */
static size_t draw_size(uint64_t *rng)
{
    unsigned r = (unsigned)(rng_next(rng) % 1000);
    if (r < 20)
        return 0;
    if (r < 700)
        return (size_t)rng_range(rng, 1, 256);
    if (r < 980)
        return (size_t)rng_range(rng, 257, 4096);
    return (size_t)rng_range(rng, 4097, 65536);
}

void model_run(struct model *m, uint64_t *rng, unsigned long nops, unsigned long checkpoint_every)
{
    for (unsigned long op = 0; op < nops; op++) {
        /* Phases of growth and shrinkage, so the heap is driven both to full
         * (failure paths, fragmentation) and back towards empty. */
        bool growing = (op / 20000) % 2 == 0;
        unsigned r = (unsigned)(rng_next(rng) % 100);
        unsigned free_share = growing ? 35 : 62;
        if (m->n && r < free_share) {
            model_free(m, (size_t)(rng_next(rng) % m->n));
        } else if (m->n && r < free_share + 8) {
            size_t idx = (size_t)(rng_next(rng) % m->n);
            size_t old = m->blocks[idx].req;
            size_t size;
            switch (rng_next(rng) % 4) {
            case 0: size = old / 2; break;                             /* shrink */
            case 1: size = old + (size_t)rng_range(rng, 1, 64); break; /* grow a bit */
            case 2: size = old * 2 + 1; break;                         /* grow */
            default: size = draw_size(rng); break;
            }
            model_realloc(m, idx, size);
        } else if (r < free_share + 13) {
            unsigned shift = (unsigned)rng_range(rng, 0, 13);
            size_t alignment = (size_t)1 << shift;
            if (rng_next(rng) % 50 == 0)
                alignment = (size_t[]){ 0, 3, 24, 48, 1000 }[rng_next(rng) % 5]; /* invalid */
            model_aligned_alloc(m, alignment, draw_size(rng));
        } else if (r < free_share + 17) {
            model_calloc(m, (size_t)rng_range(rng, 0, 16), (size_t)rng_range(rng, 0, 96));
        } else if (r == 99 && rng_next(rng) % 16 == 0) {
            model_bad_frees(m, rng);
            CHECK(rtm_heap_alloc(m->h, SIZE_MAX) == NULL);
            m->failed++;
        } else {
            model_alloc(m, draw_size(rng));
        }
        if (checkpoint_every && (op + 1) % checkpoint_every == 0)
            model_checkpoint(m);
    }
}
