/*
 * A heap found in memory someone else wrote (src/heap/kind.h,
 * rtm__heap_validate), one section per CTest entry (ctest -R validate):
 *   layout  every kind's fresh heap passes, locked or not, with a pool
 *           added; each field of the layout changed alone is refused, and
 *           so is a heap whose memory ends one byte early
 *   check   a heap between two PROT_NONE guard pages, its words changed at
 *           random: whenever validate accepts it, rtm_heap_check reads
 *           nothing outside the heap (a read there faults) and reports the
 *           damage it is sure to see
 */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "heap_layout.h"

#define PAGE RTM_PAGEHEAP_PAGE_SIZE

/* ---- layout ------------------------------------------------------------------------- */

static unsigned char arena[256u << 10] __attribute__((aligned(4096)));

/* Bytes from h to the end of the arena. */
static size_t bytes_after(const struct rtm_heap *h, const unsigned char *end)
{
    return (size_t)(end - (const unsigned char *)h);
}

/* One word of the layout changed to value: validate refuses with want, and
 * takes it again once the word is back. */
static void refused_with(struct rtm_heap *h, size_t bytes, const char *what, size_t *word,
                         size_t value, int want)
{
    test_context = what;
    size_t old = *word;
    *word = value;
    CHECK_EQ(rtm__heap_validate(h, bytes), want);
    *word = old;
    CHECK_EQ(rtm__heap_validate(h, bytes), 0);
}

/* The fields every kind has: counts, the first pool's link, the header. */
static void common_refusals(struct rtm_heap *h, size_t bytes, struct heap_layout *l, size_t unit)
{
    refused_with(h, bytes, "usable + one unit", l->usable, *l->usable + unit, -EFAULT);
    refused_with(h, bytes, "usable past the memory", l->usable, bytes + unit, -EFAULT);
    refused_with(h, bytes, "overhead", l->overhead, *l->overhead + 1, -EFAULT);
    refused_with(h, bytes, "no pool", l->pool_count, 0, -EFAULT);
    refused_with(h, bytes, "two pools", l->pool_count, 2, -EFAULT);
    refused_with(h, bytes, "pool count huge", l->pool_count, SIZE_MAX, -EFAULT);
    refused_with(h, bytes, "next past the end", l->next, bytes, -EFAULT);
    refused_with(h, bytes, "next descriptor across the end", l->next, bytes - 8, -EFAULT);
    refused_with(h, bytes, "next below the heap", l->next, (size_t)-4096, -EFAULT);
    refused_with(h, bytes, "next misaligned", l->next, l->pool0 + 4, -EFAULT);
    refused_with(h, bytes, "next in the header", l->next, 8, -EFAULT);
    refused_with(h, bytes, "pool list cycles", l->next, l->pool0, -EFAULT);
    test_context = "pool list cycles, count huge"; /* the count is no bound then */
    *l->pool_count = SIZE_MAX;
    *l->next = l->pool0;
    CHECK_EQ(rtm__heap_validate(h, bytes), -EFAULT);
    *l->next = 0;
    *l->pool_count = 1;
    refused_with(h, bytes, "raw start after the pool", l->raw_start, *l->raw_start + *l->raw_len,
                 -EFAULT);
    refused_with(h, bytes, "raw length short", l->raw_len, *l->raw_len - unit, -EFAULT);
    refused_with(h, bytes, "raw length 0", l->raw_len, 0, -EFAULT);

    uint32_t *kind = &h->kind, *hard = &h->hardening, *magic = &h->magic;
    uint32_t old = *magic;
    test_context = "magic";
    *magic = 0;
    CHECK_EQ(rtm__heap_validate(h, bytes), -EINVAL);
    *magic = old;
    old = *kind;
    test_context = "kind unknown";
    *kind = 77;
    CHECK_EQ(rtm__heap_validate(h, bytes), -EINVAL);
    /* TLSF's validate reading a page heap's structure as its own, and the
     * other way round (heapmem and xnheap share theirs) */
    test_context = "kind swapped";
    *kind = old == 0 ? 1 : 0;
    CHECK_EQ(rtm__heap_validate(h, bytes), -EFAULT);
    *kind = old == 0 ? 2 : 0;
    CHECK_EQ(rtm__heap_validate(h, bytes), -EFAULT);
    *kind = old;
    old = *hard;
    test_context = "hardening level";
    *hard = RTM_HEAP_HARDEN_FULL + 1;
    CHECK_EQ(rtm__heap_validate(h, bytes), -EINVAL);
    *hard = old;
}

/* A bound of the first pool changed with its copy (TLSF keeps one beside
 * its counters), so that what is refused is the bound itself. */
static void bound_refused(struct rtm_heap *h, size_t bytes, const char *what, size_t *word,
                          size_t *copy, size_t value)
{
    test_context = what;
    size_t old = *word;
    *word = value;
    if (copy)
        *copy = value;
    CHECK_EQ(rtm__heap_validate(h, bytes), -EFAULT);
    *word = old;
    if (copy)
        *copy = old;
    CHECK_EQ(rtm__heap_validate(h, bytes), 0);
}

/* TLSF keeps copies of the hardening level (after its bitmap of levels,
 * right after the common header), of "more than one pool" and of the tag
 * key (after the end's copy, the key 8-aligned) beside what every call
 * reads: a copy that disagrees, a level the checks would skip included, is
 * refused. */
static void tlsf_copies_refused(struct rtm_heap *h, size_t bytes, size_t *e0)
{
    uint32_t *level = (uint32_t *)(void *)((char *)h + sizeof(*h) + sizeof(uint32_t));
    size_t *several = e0 + 1;
    uintptr_t k = ((uintptr_t)(e0 + 2) + 7) & ~(uintptr_t)7;
    uint64_t *key = (uint64_t *)k;
    test_context = "the copies found";
    CHECK_EQ(*level, h->hardening);
    CHECK_EQ(*key, h->tag_key);
    CHECK_EQ(*several, 0);
    test_context = "level's copy: none";
    uint32_t old_level = *level;
    *level = RTM_HEAP_HARDEN_NONE;
    CHECK_EQ(rtm__heap_validate(h, bytes), -EFAULT);
    *level = old_level;
    test_context = "key's copy";
    *key ^= 1;
    CHECK_EQ(rtm__heap_validate(h, bytes), -EFAULT);
    *key ^= 1;
    refused_with(h, bytes, "several pools with one", several, 1, -EFAULT);
    test_context = "the copies restored";
    CHECK_EQ(rtm__heap_validate(h, bytes), 0);
    CHECK_EQ(rtm_heap_check(h), 0);
}

static void tlsf_refusals(struct rtm_heap *h, size_t bytes, struct heap_layout *l)
{
    size_t start = *l->start, end = *l->end;
    size_t *s0 = l->start0, *e0 = l->end0;
    bound_refused(h, bytes, "start at end", l->start, s0, end);
    bound_refused(h, bytes, "start past end", l->start, s0, end + 16);
    bound_refused(h, bytes, "start misaligned", l->start, s0, start + 8);
    bound_refused(h, bytes, "start in the control structure", l->start, s0, start - 4096);
    bound_refused(h, bytes, "start below the heap", l->start, s0, (size_t)-4096);
    bound_refused(h, bytes, "end off the granule", l->end, e0, end - 8);
    bound_refused(h, bytes, "end past the memory", l->end, e0, bytes);
    bound_refused(h, bytes, "end before start", l->end, e0, start - 16);
    if (s0) { /* the copies alone */
        refused_with(h, bytes, "start's copy", s0, start + 16, -EFAULT);
        refused_with(h, bytes, "end's copy", e0, end - 16, -EFAULT);
        tlsf_copies_refused(h, bytes, e0);
    }
    /* counts that agree, and a sentinel whose slack crosses the end (the
     * pool ends less than two granules before the memory does) */
    test_context = "sentinel past the end";
    size_t grow = RTM_TLSF_GRANULE;
    *l->end += grow;
    if (e0)
        *e0 += grow;
    *l->usable += grow;
    *l->overhead -= grow;
    CHECK_EQ(rtm__heap_validate(h, bytes), -EFAULT);
    *l->end = end;
    if (e0)
        *e0 = end;
    *l->usable -= grow;
    *l->overhead += grow;
    CHECK_EQ(rtm__heap_validate(h, bytes), 0);
}

static void xv_refusals(struct rtm_heap *h, size_t bytes, struct heap_layout *l)
{
    struct xv_layout *x = &l->xv;
    const size_t xpage = x->page_size;
    size_t first = *x->first, stack = *x->stack, n = *x->pages;
    refused_with(h, bytes, "stack misaligned", x->stack, stack + 2, -EFAULT);
    refused_with(h, bytes, "stack in the control structure", x->stack, stack - 8, -EFAULT);
    refused_with(h, bytes, "stack past the end", x->stack, bytes, -EFAULT);
    refused_with(h, bytes, "stack over the pages", x->stack, first - 4, -EFAULT);
    refused_with(h, bytes, "pages misaligned", x->first, first + 16, -EFAULT);
    refused_with(h, bytes, "pages past the end", x->first, bytes, -EFAULT);
    refused_with(h, bytes, "pages below the heap", x->first, (size_t)0 - 64 * xpage, -EFAULT);
    refused_with(h, bytes, "no pages", x->pages, 0, -EFAULT);
    refused_with(h, bytes, "bump past the pages", x->bump, n + 1, -EFAULT);
    /* (top against bump is check's: both change with every call, and
     * validate runs without the lock) */
    if (x->top)
        refused_with(h, bytes, "stack deeper than the pages", x->top, n + 1, -EFAULT);
    /* counts that agree, and pages past the end */
    test_context = "pages past the end, counts agreeing";
    size_t span = x->span, grow = 8;
    *x->pages += grow;
    *l->usable += grow * span;
    *l->overhead -= grow * span;
    CHECK(rtm__heap_validate(h, bytes) != 0);
    *x->pages = n;
    *l->usable -= grow * span;
    *l->overhead += grow * span;
    CHECK_EQ(rtm__heap_validate(h, bytes), 0);
}

static void ph_refusals(struct rtm_heap *h, size_t bytes, struct heap_layout *l)
{
    size_t map = *l->map, pages = *l->pages, n = *l->npages;
    /* 2: below the map entry's alignment (4, its words are 32 bits) */
    refused_with(h, bytes, "map misaligned", l->map, map + 2, -EFAULT);
    refused_with(h, bytes, "map in the control structure", l->map, map - 8, -EFAULT);
    refused_with(h, bytes, "map after the pages", l->map, pages + PAGE, -EFAULT);
    refused_with(h, bytes, "map past the end", l->map, bytes + PAGE, -EFAULT);
    refused_with(h, bytes, "map without room", l->map, pages - 8, -EFAULT);
    refused_with(h, bytes, "pages misaligned", l->pages, pages + 8, -EFAULT);
    refused_with(h, bytes, "pages past the end", l->pages, bytes, -EFAULT);
    refused_with(h, bytes, "pages below the heap", l->pages, (size_t)0 - 64 * PAGE, -EFAULT);
    refused_with(h, bytes, "no pages", l->npages, 0, -EFAULT);
    refused_with(h, bytes, "a page more", l->npages, n + 1, -EFAULT);
    refused_with(h, bytes, "pages beyond the limit", l->npages, RTM_PAGEHEAP_MAX_PAGES + 1,
                 -EFAULT);
    refused_with(h, bytes, "fresh past npages", l->fresh, n + 1, -EFAULT);
    /* counts that agree, and pages past the end */
    test_context = "pages past the end, counts agreeing";
    *l->npages += 8;
    *l->usable += 8 * PAGE;
    *l->overhead -= 8 * PAGE;
    CHECK_EQ(rtm__heap_validate(h, bytes), -EFAULT);
    *l->npages = n;
    *l->usable -= 8 * PAGE;
    *l->overhead += 8 * PAGE;
    CHECK_EQ(rtm__heap_validate(h, bytes), 0);
}

/* Runs a check on each kind, the kind as its context. */
static void each_kind(void (*check)(const char *kind))
{
    for (const char *const *k = rtm_heap_kinds(); *k; k++) {
        test_context = *k;
        check(*k);
    }
}

/* A fresh heap of the kind on the whole arena (filled with 0xa5 first),
 * its layout in *l and the bytes from it to the arena's end in *bytes. */
static struct rtm_heap *fresh_heap(const char *kind, struct heap_layout *l, size_t *bytes)
{
    memset(arena, 0xa5, sizeof arena);
    struct rtm_heap *h = rtm_heap_create(kind, arena, sizeof arena);
    REQUIRE(h != NULL, NULL);
    *bytes = bytes_after(h, arena + sizeof arena);
    REQUIRE(heap_layout_find(h, l), NULL);
    return h;
}

/* Allocations of many sizes, every other one freed again. */
static void put_in_use(struct rtm_heap *h)
{
    void *p[64];
    for (int i = 0; i < 64; i++)
        p[i] = rtm_heap_alloc(h, (size_t)(i * 97 % 3000) + 1);
    for (int i = 0; i < 64; i += 2)
        rtm_heap_free(h, p[i]);
}

static void layout_fresh(const char *kind)
{
    unsigned char *end = arena + sizeof arena;
    struct heap_layout l;
    size_t bytes;
    struct rtm_heap *h = fresh_heap(kind, &l, &bytes);
    if (!h)
        return;
    CHECK_EQ(rtm__heap_validate(h, bytes), 0);
    /* exactly the memory the pools use, and not a byte less */
    CHECK(l.needed <= bytes);
    CHECK_EQ(rtm__heap_validate(h, l.needed), 0);
    CHECK_EQ(rtm__heap_validate(h, l.needed - 1), -EFAULT);
    test_context = "no room for the header";
    CHECK_EQ(rtm__heap_validate(h, sizeof(struct rtm_heap)), -EFAULT);
    CHECK_EQ(rtm__heap_validate(h, sizeof(struct rtm_heap) - 1), -EINVAL);
    CHECK_EQ(rtm__heap_validate(NULL, bytes), -EINVAL);
    CHECK_EQ(rtm__heap_validate((struct rtm_heap *)(void *)((char *)h + 4), bytes), -EINVAL);
    /* A heap's header alone, at the end of the memory (the pool's last
     * bytes, put back afterwards). */
    test_context = "header at the end";
    struct rtm_heap *last = (struct rtm_heap *)(void *)(end - sizeof(struct rtm_heap));
    struct rtm_heap was = *last;
    memcpy(last, h, sizeof *last);
    CHECK_EQ(rtm__heap_validate(last, sizeof *last), -EFAULT);
    *last = was;
}

TEST_CASE_IN("layout", "a fresh heap passes with exactly the memory its pools use")
{
    each_kind(layout_fresh);
}

/* What allocations change is not the layout. */
static void layout_in_use(const char *kind)
{
    struct heap_layout l;
    size_t bytes;
    struct rtm_heap *h = fresh_heap(kind, &l, &bytes);
    if (!h)
        return;
    put_in_use(h);
    CHECK_EQ(rtm__heap_validate(h, bytes), 0);
    CHECK_EQ(rtm__heap_validate(h, l.needed), 0);
}

TEST_CASE_IN("layout", "a heap in use passes as it did fresh")
{
    each_kind(layout_in_use);
}

static void layout_refusals(const char *kind)
{
    struct heap_layout l;
    size_t bytes;
    struct rtm_heap *h = fresh_heap(kind, &l, &bytes);
    if (!h)
        return;
    put_in_use(h);
    /* halffit's descriptor and fragments are TLSF's in shape (heap_layout.h) */
    bool headers = l.start != NULL;
    if (l.xv.first) {
        common_refusals(h, bytes, &l, l.xv.page_size);
        xv_refusals(h, bytes, &l);
    } else {
        common_refusals(h, bytes, &l, headers ? RTM_TLSF_GRANULE : PAGE);
        if (headers)
            tlsf_refusals(h, bytes, &l);
        else
            ph_refusals(h, bytes, &l);
    }
    test_context = "after the refusals";
    CHECK_EQ(rtm__heap_validate(h, bytes), 0);
    CHECK_EQ(rtm_heap_check(h), 0);
}

TEST_CASE_IN("layout", "each field of the layout changed alone is refused")
{
    each_kind(layout_refusals);
}

/* A pool added above the heap: inside; two pools that cycle: refused. */
static void layout_second_pool(const char *kind)
{
    unsigned char *end = arena + sizeof arena;
    size_t half = sizeof arena / 2;
    memset(arena, 0xa5, sizeof arena);
    struct rtm_heap *h = rtm_heap_create(kind, arena, half);
    REQUIRE(h != NULL, );
    struct heap_layout l;
    REQUIRE(heap_layout_find(h, &l), );
    size_t bytes = bytes_after(h, end);
    CHECK_EQ(rtm__heap_validate(h, bytes), 0);
    CHECK_EQ(rtm_heap_add_pool(h, arena + half, half), 0);
    CHECK_EQ(rtm__heap_validate(h, bytes), 0);
    CHECK_EQ(rtm__heap_validate(h, bytes - 4096), -EFAULT); /* the second pool crosses the end */
    size_t *second_next = (size_t *)(void *)((char *)h + *l.next);
    refused_with(h, bytes, "two pools that cycle", second_next, l.pool0, -EFAULT);
    refused_with(h, bytes, "second pool links itself", second_next, *l.next, -EFAULT);
}

TEST_CASE_IN("layout", "a second pool inside the memory passes and pools that cycle do not")
{
    each_kind(layout_second_pool);
}

/* A pool below the heap lies outside what the caller says is mapped. */
static void layout_pool_below(const char *kind)
{
    size_t half = sizeof arena / 2;
    memset(arena, 0xa5, sizeof arena);
    struct rtm_heap *h = rtm_heap_create(kind, arena + half, half);
    REQUIRE(h != NULL, );
    CHECK_EQ(rtm_heap_add_pool(h, arena, half), 0);
    CHECK_EQ(rtm__heap_validate(h, bytes_after(h, arena + sizeof arena)), -EFAULT);
}

TEST_CASE_IN("layout", "a pool below the heap is refused")
{
    each_kind(layout_pool_below);
}

/* Locked: the kind's heap follows the lock area, its raw memory starts
 * before it. */
static void layout_locked(const char *kind)
{
    unsigned char *end = arena + sizeof arena;
    memset(arena, 0xa5, sizeof arena);
    struct rtm_heap_config cfg = { .lock = RTM_HEAP_LOCK_PI };
    struct rtm_heap *h = rtm_heap_create_ex(kind, arena + 3, sizeof arena - 3, &cfg);
    REQUIRE(h != NULL, );
    CHECK_EQ(rtm__heap_validate(h, bytes_after(h, end)), 0);
    rtm_heap_destroy(h);
    test_context = "destroyed";
    CHECK_EQ(rtm__heap_validate(h, bytes_after(h, end)), -EINVAL);
}

TEST_CASE_IN("layout", "a locked heap passes and a destroyed one does not")
{
    each_kind(layout_locked);
}

/* ---- check ---------------------------------------------------------------------------- */

#define GUARD      ((size_t)4096)
#define HEAP_BYTES ((size_t)64 << 10)
#define TRIALS     20000
#define LIVE       160

/* A value for a damaged word: random bits, one bit flipped, a neighbour's
 * offset, 0, or offsets that lead just past either end of the heap or to a
 * page start (where the page heaps keep their free-run nodes). */
static size_t wild_value(uint64_t *rng, size_t old, uintptr_t h, uintptr_t lo, uintptr_t hi)
{
    static const size_t in_page[] = { 0, 8, 16, 24, 64, 72 };
    switch (rng_next(rng) % 8) {
    case 0: return (size_t)rng_next(rng);
    case 1: return old ^ ((size_t)1 << (rng_next(rng) % (sizeof(size_t) * 8)));
    case 2: return old + (size_t)(rng_range(rng, 0, 32) * 8) - 128;
    case 3: return 0;
    case 4: return (size_t)(hi - h) + (size_t)(rng_range(rng, 0, 64) * 8) - 256;
    case 5: return (size_t)(lo - h) - (size_t)(rng_range(rng, 0, 64) * 8);
    case 6: {
        uintptr_t page = ((lo & ~(uintptr_t)(PAGE - 1)) - 2 * PAGE) +
                         (uintptr_t)rng_range(rng, 0, (hi - lo) / PAGE + 4) * PAGE;
        return (size_t)(page - h) + in_page[rng_next(rng) % 6];
    }
    default: return (size_t)(lo - h) + (size_t)(rng_range(rng, 0, (hi - lo) / 8 - 1) * 8);
    }
}

/* Words whose every change rtm_heap_check reports, whatever the heap's
 * key (tags and guards are keyed at random: a header changed at random
 * keeps a valid tag once in 2^24 runs): the counts it recounts, and the
 * roots of the page heaps' trees, whose nodes it counts. */
static size_t sure_words(struct rtm_heap *h, size_t **out)
{
    size_t n = 0;
    const char *kind = rtm_heap_kind(h);
    if (strcmp(kind, "xvheap") == 0 || strcmp(kind, "zsheap") == 0) {
        struct heap_layout l;
        if (!heap_layout_find(h, &l))
            return 0;
        out[n++] = l.xv.used;
        out[n++] = l.xv.live;
    } else if (strcmp(kind, "tlsf") == 0 || strcmp(kind, "halffit") == 0) {
        struct heap_layout l;
        if (!heap_layout_find(h, &l))
            return 0;
        /* used_bytes, peak, live_blocks: in TLSF right before the first
         * pool's bounds' copies, in halffit right before usable_bytes */
        size_t *counters = l.start0 ? l.start0 - 3 : l.usable - 3;
        out[n++] = counters;
        out[n++] = counters + 2;
    } else {
        struct ph_heap *ph = (struct ph_heap *)(void *)h;
        out[n++] = &ph->used_bytes;
        out[n++] = &ph->live_blocks;
        out[n++] = &ph->free_runs;
        out[n++] = &ph->addr_root;
        out[n++] = &ph->size_root;
    }
    return n;
}

/* A heap of the kind between two PROT_NONE guard pages (*map, of
 * *map_bytes), with blocks of every size class, half of them freed again:
 * free runs, bucket pages, free lists of several classes. */
static struct rtm_heap *guarded_heap(const char *kind, int hardening, uint64_t *rng,
                                     unsigned char **map, size_t *map_bytes)
{
    *map_bytes = GUARD + HEAP_BYTES + GUARD;
    *map = mmap(NULL, *map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(*map != MAP_FAILED, NULL);
    REQUIRE(mprotect(*map, GUARD, PROT_NONE) == 0 &&
                mprotect(*map + GUARD + HEAP_BYTES, GUARD, PROT_NONE) == 0,
            NULL);
    struct rtm_heap_config cfg = { .hardening = hardening };
    struct rtm_heap *h = rtm_heap_create_ex(kind, *map + GUARD, HEAP_BYTES, &cfg);
    REQUIRE(h != NULL, NULL);
    void *live[LIVE] = { 0 };
    for (int i = 0; i < 4 * LIVE; i++) {
        size_t k = (size_t)(rng_next(rng) % LIVE);
        if (live[k]) {
            rtm_heap_free(h, live[k]);
            live[k] = NULL;
        } else {
            size_t top = (size_t)1 << rng_range(rng, 4, 12);
            live[k] = rtm_heap_alloc(h, (size_t)rng_range(rng, 1, top));
        }
    }
    return h;
}

/* What the trials saw: heaps rtm_heap_check read, of which it found damage
 * in; heaps validate refused. */
struct tally {
    size_t checked, found, refused;
};

/* TRIALS times, one to three words of the heap (which ends at hi) changed
 * and put back: whenever validate takes the heap, rtm_heap_check runs and
 * must report a change to sure words only. */
static struct tally damage_trials(struct rtm_heap *h, uintptr_t hi, uint64_t *rng)
{
    struct tally t = { 0 };
    size_t *sure[8];
    size_t nsure = sure_words(h, sure);
    CHECK(nsure >= 2);
    uintptr_t lo = hi - HEAP_BYTES, base = (uintptr_t)h;
    size_t bytes = (size_t)(hi - base), words = bytes / sizeof(size_t);
    size_t *lock_word =
        (size_t *)(void *)h + offsetof(struct rtm_heap, lock_offset) / sizeof(size_t);
    for (int trial = 0; trial < TRIALS; trial++) {
        /* One to three words: a sure one, one of the control structure, or
         * any of the heap's (the lock offset aside: a lock area is the
         * caller's to check, as attach does). */
        size_t *at[3], old[3];
        int n = (int)rng_range(rng, 1, 3), sure_only = 1;
        for (int i = 0; i < n; i++) {
            size_t pick = (size_t)(rng_next(rng) % 3);
            if (pick == 0 && nsure) {
                at[i] = sure[rng_next(rng) % nsure];
            } else {
                size_t span = pick == 1 ? 512 / sizeof(size_t) : words;
                at[i] = (size_t *)(void *)h + rng_next(rng) % span;
                sure_only = 0;
            }
            if (at[i] == lock_word)
                at[i] = lock_word + 1;
            old[i] = *at[i];
        }
        for (int i = 0; i < n; i++)
            *at[i] = wild_value(rng, *at[i], base, lo, hi);
        bool changed = false;
        for (int i = 0; i < n; i++)
            changed |= *at[i] != old[i];
        if (rtm__heap_validate(h, bytes) != 0) {
            t.refused++;
        } else {
            int rc = rtm_heap_check(h);
            t.checked++;
            t.found += rc != 0;
            if (sure_only && changed)
                CHECK(rc != 0);
        }
        for (int i = n - 1; i >= 0; i--)
            *at[i] = old[i];
    }
    return t;
}

static void check_damage(const char *kind, int hardening)
{
    uint64_t rng = 0x5eedc0deu + (uint64_t)hardening;
    unsigned char *map;
    size_t map_bytes;
    struct rtm_heap *h = guarded_heap(kind, hardening, &rng, &map, &map_bytes);
    if (!h)
        return;
    uintptr_t end = (uintptr_t)(map + GUARD + HEAP_BYTES);
    REQUIRE(rtm_heap_check(h) == 0 && rtm__heap_validate(h, end - (uintptr_t)h) == 0, );
    struct tally t = damage_trials(h, end, &rng);
    CHECK_EQ(rtm_heap_check(h), 0); /* every word back as it was */
    CHECK(t.checked > TRIALS / 2 && t.found > t.checked / 4 && t.refused > 0);
    printf("%s, hardening %d: %zu checked (%zu found damage), %zu refused by validate\n", kind,
           hardening, t.checked, t.found, t.refused);
    munmap(map, map_bytes);
}

static void check_damage_o1(const char *kind)
{
    check_damage(kind, RTM_HEAP_HARDEN_O1);
}

static void check_damage_none(const char *kind)
{
    check_damage(kind, RTM_HEAP_HARDEN_NONE);
}

TEST_CASE_IN("check", "damage validate accepts is read only inside the heap, hardened")
{
    each_kind(check_damage_o1);
}

TEST_CASE_IN("check", "damage validate accepts is read only inside the heap, unhardened")
{
    each_kind(check_damage_none);
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, "validate_test");
}
