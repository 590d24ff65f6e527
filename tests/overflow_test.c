/*
 * Overflow trials: a program writes 1 to 16 bytes past the usable end of a
 * block (the off-by-one and its cousins), then goes on allocating and
 * freeing. For every kind, at the default hardening level, whatever the
 * bytes and whatever lies past the block (a free block, a live one, one
 * freed afterwards, one holding data that looks like heap links):
 *  - no operation crashes (run under ASan and UBSan in CI too);
 *  - no block is handed out outside the heap's memory or overlapping a block
 *    the program still holds (one whose free was refused is still held), and
 *    the contents of held blocks stay as written;
 *  - nothing is written outside the heap's memory (guard zones);
 *  - damage is never silent: if, once the program has allocated until
 *    failure and freed everything it holds, rtm_heap_check still finds the
 *    metadata damaged, the heap must have reported a corruption.
 * Then the same trials at RTM_HEAP_HARDEN_FULL (damage found by the periodic
 * check at the latest) and the corruption handler's report.
 *
 * Usage: overflow_test [kind ...] (default: every kind).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "heap_layout.h"
#include "rtmem/heap.h"

#define GUARD    4096
/* Each trial's heap: 192 KiB, and 512 KiB for zsheap, whose every size
 * class in use holds a zspage of up to 4 pages (set per kind). */
#define HEAP_MAX (512 * 1024)
static size_t heap_bytes = 192 * 1024;
#define HEAP_BYTES heap_bytes
#define MAX_HELD   32768
#define GUARD_BYTE 0xa5

struct held {
    unsigned char *p;
    size_t usable;
    size_t skip; /* leading bytes the program wrote itself (not the pattern) */
    uint32_t seed;
};

#define GRANULE 16 /* every kind's blocks start and end on it */

struct trial {
    struct rtm_heap *h;
    unsigned char *lo, *hi; /* the heap's memory */
    struct held *held;
    size_t n;
    uint64_t rng;
    bool taken[HEAP_MAX / GRANULE]; /* granules of held blocks */
    /* TLSF only: the block whose 8 bytes before it (its header) the
     * overflow changed (B, live), or NULL: see give(). */
    const unsigned char *header_hit;
};

/* Marks [p, p + usable) held (taken) or not; false if a granule to mark held
 * already is (an overlap). O(usable / GRANULE). */
static bool mark(struct trial *t, const unsigned char *p, size_t usable, bool taken)
{
    size_t first = (size_t)(p - t->lo) / GRANULE, last = (size_t)(p + usable - 1 - t->lo) / GRANULE;
    for (size_t g = first; g <= last; g++) {
        if (taken && t->taken[g])
            return false;
    }
    for (size_t g = first; g <= last; g++)
        t->taken[g] = taken;
    return true;
}

static unsigned char fill_byte(uint32_t seed, size_t i)
{
    return (unsigned char)((seed * 2654435761u + (uint32_t)i * 40503u) >> 13);
}

static void fill(const struct held *b)
{
    for (size_t i = b->skip; i < b->usable; i++)
        b->p[i] = fill_byte(b->seed, i);
}

static bool intact(const struct held *b)
{
    for (size_t i = b->skip; i < b->usable; i++)
        if (b->p[i] != fill_byte(b->seed, i))
            return false;
    return true;
}

/* Allocates and checks the block against the heap's memory and every held
 * block; returns its index, or -1 when the heap said no. */
static long take(struct trial *t, size_t size)
{
    if (t->n == MAX_HELD)
        return -1;
    unsigned char *p = rtm_heap_alloc(t->h, size);
    if (!p)
        return -1;
    size_t usable = rtm_heap_usable_size(t->h, p);
    CHECK(usable >= size);
    if (usable < size)
        usable = size;
    CHECK(p >= t->lo && p + usable <= t->hi);
    if (!(p >= t->lo && p + usable <= t->hi))
        return -1; /* never written: the test stays inside the heap */
    if (!mark(t, p, usable, true)) {
        CHECK(!"a new block overlaps a held one");
        return -1;
    }
    struct held *b = &t->held[t->n];
    *b = (struct held){ p, usable, 0, (uint32_t)rng_next(&t->rng) | 1u };
    fill(b);
    return (long)t->n++;
}

/* Frees held block i: 0 (gone), -EFAULT (refused for damage: still held).
 * Any other answer is a failure. */
/* The trial under way, printed with a failure. */
static char trial_desc[160];

static int give(struct trial *t, size_t i)
{
    struct held *b = &t->held[i];
    if (!intact(b))
        fprintf(stderr, "  held block %p changed (%s)\n", (void *)b->p, trial_desc);
    CHECK(intact(b));
    int rc = rtm_heap_free(t->h, b->p);
    /* A header the overflow left differing from a valid one only by the
     * swallowed mark (TLSF: its low byte rewritten with the same size bits
     * and F_GONE) reads as a header a merge swallowed, as a stale pointer's
     * would: refused without a report, as rtmem/tlsf.h documents; the block
     * before it reports the damage. */
    bool stale_like = rc == -EINVAL && b->p == t->header_hit;
    CHECK(rc == 0 || rc == -EFAULT || stale_like);
    if (rc == 0) {
        mark(t, b->p, b->usable, false);
        t->held[i] = t->held[--t->n];
    }
    return rc;
}

static void random_ops(struct trial *t, int count)
{
    for (int k = 0; k < count; k++) {
        if (t->n > 0 && (rng_next(&t->rng) & 1)) {
            give(t, (size_t)(rng_next(&t->rng) % t->n));
        } else {
            take(t, (size_t)rng_range(&t->rng, 0, 1200));
        }
    }
}

/* Allocates until failure (minimum blocks, so every free block is used),
 * then frees everything held, each refused block once. */
static void fill_and_drain(struct trial *t)
{
    while (take(t, 1) >= 0)
        ;
    for (size_t i = 0; i < t->n;) {
        if (give(t, i) != 0)
            i++;
    }
}

enum neighbour { NB_FREE, NB_LIVE, NB_FREED_AFTER, NB_LINKS, NB_COUNT };
static const char *const nb_names[NB_COUNT] = { "free", "live", "freed-after", "link-like data" };
/* The last two leave the first 8 bytes past the block alone (a store to
 * v[n + 1] past an array v[n]): a free neighbour's header stays intact and
 * only what follows it changes, to what TLSF would store as a next link to
 * a live block, or to a header a merge swallowed (the offset, marked: 5
 * added). TLSF keeps its links past those bytes: were they there, these
 * would plant one. */
enum { PAT_ZERO, PAT_A, PAT_ONES, PAT_NEAR, PAT_OFFSET, PAT_SKIP_LIVE, PAT_SKIP_GONE, PAT_COUNT };

/* The byte the pattern writes at distance i past the block's end. */
static unsigned char pattern_byte(int pat, size_t i, unsigned char was, uint64_t offset,
                                  uint64_t gone)
{
    switch (pat) {
    case PAT_SKIP_LIVE: return i < 8 ? was : (unsigned char)((offset | 5u) >> (8 * (i % 8)));
    case PAT_SKIP_GONE: return i < 8 ? was : (unsigned char)((gone | 5u) >> (8 * (i % 8)));
    case PAT_ZERO: return 0x00;
    case PAT_A: return 0x41;
    case PAT_ONES: return 0xff;
    case PAT_NEAR: return i == 0 ? (unsigned char)(was ^ 0x10) : was; /* one bit of a size */
    default: return (unsigned char)(offset >> (8 * (i % 8)));         /* a real heap offset */
    }
}

/* The heap of a trial in fresh memory between guard zones (*mem, of
 * MEM_SPAN bytes): every other trial, two pools from adjacent memory, where
 * an overflow at the end of one reaches the start of the other. */
#define MEM_SPAN (HEAP_BYTES + 2 * GUARD)
static bool trial_heap(struct trial *t, unsigned char **mem, const char *kind, int hardening,
                       uint64_t seed)
{
    static struct held held[MAX_HELD];
    *mem = mmap(NULL, MEM_SPAN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(*mem != MAP_FAILED, false);
    memset(*mem, GUARD_BYTE, MEM_SPAN);
    memset(t, 0, sizeof(*t));
    t->lo = *mem + GUARD;
    t->hi = *mem + GUARD + HEAP_BYTES;
    t->held = held;
    t->rng = seed;
    struct rtm_heap_config cfg = { .hardening = hardening, .check_interval = 64 };
    bool two_pools = seed & 1;
    t->h = rtm_heap_create_ex(kind, t->lo, two_pools ? HEAP_BYTES / 2 : HEAP_BYTES, &cfg);
    REQUIRE(t->h != NULL, ((void)munmap(*mem, MEM_SPAN), false));
    if (two_pools)
        CHECK_EQ(rtm_heap_add_pool(t->h, t->lo + HEAP_BYTES / 2, HEAP_BYTES / 2), 0);
    return true;
}

/* Some history, with a header swallowed by a merge (for a kind with
 * headers): g1 freed, then g0 before it. Returns that header's offset. */
static uint64_t history(struct trial *t)
{
    random_ops(t, 60);
    long g0 = take(t, 24), g1 = take(t, 40);
    uint64_t gone = 0;
    if (g0 >= 0 && g1 >= 0) {
        unsigned char *p0 = t->held[g0].p, *p1 = t->held[g1].p;
        gone = (uint64_t)(p1 - (unsigned char *)t->h) - 8;
        give(t, (size_t)g1);
        for (size_t i = 0; i < t->n; i++)
            if (t->held[i].p == p0) {
                give(t, i); /* g0, wherever give() moved it */
                break;
            }
    }
    return gone;
}

/* The overflow: len bytes of pattern pat past A's usable end (B follows
 * it). Returns whether they changed anything. What it overwrote in a live
 * block of the program's own is the program's business: those bytes are
 * no longer compared. */
static bool overflow(struct trial *t, const char *kind, unsigned char *pa, unsigned char *pb,
                     size_t len, int pat, enum neighbour nb, uint64_t offset, uint64_t gone)
{
    unsigned char *end = pa + rtm_heap_usable_size(t->h, pa);
    bool changed = false;
    for (size_t i = 0; i < len && end + i < t->hi; i++) {
        unsigned char v = pattern_byte(pat, i, end[i], offset, gone);
        changed |= v != end[i];
        if (v != end[i] && nb != NB_FREE && !strcmp(kind, "tlsf") && end + i >= pb - 8 &&
            end + i < pb)
            t->header_hit = pb;
        end[i] = v;
    }
    for (size_t i = 0; i < t->n; i++) {
        struct held *h = &t->held[i];
        if (h->p < end + len && end < h->p + h->usable) {
            size_t upto = (size_t)(end + len - h->p);
            if (upto > h->usable)
                upto = h->usable;
            if (upto > h->skip)
                h->skip = upto;
        }
    }
    return changed;
}

/* After the drain: damage is never silent, nothing reported where nothing
 * changed, nothing written outside the heap. */
static void verdict(struct trial *t, const unsigned char *mem, bool changed)
{
    struct rtm_heap_stats st;
    CHECK_EQ(rtm_heap_stats(t->h, &st), 0);
    int check = rtm_heap_check(t->h);
    CHECK(check == 0 || check == -EFAULT);
    if (check != 0 && st.corruptions == 0) {
        CHECK(!"damaged metadata went unreported");
        fprintf(stderr, "  (%s)\n", trial_desc);
    }
    if (!changed)
        CHECK_EQ(st.corruptions, 0); /* nothing damaged: nothing reported */
    for (size_t i = 0; i < GUARD; i++) {
        if (mem[i] != GUARD_BYTE || mem[GUARD + HEAP_BYTES + i] != GUARD_BYTE) {
            CHECK(!"nothing written outside the heap");
            break;
        }
    }
}

static void trial(const char *kind, int hardening, size_t len, int pat, enum neighbour nb,
                  size_t size_a, uint64_t seed)
{
    static struct trial t;
    unsigned char *mem;
    snprintf(trial_desc, sizeof(trial_desc),
             "%s, level %d, %zu bytes of pattern %d past a %zu-byte block, "
             "neighbour %s, %s",
             kind, hardening, len, pat, size_a, nb_names[nb], seed & 1 ? "two pools" : "one pool");
    if (!trial_heap(&t, &mem, kind, hardening, seed))
        return;
    /* Then A and its successor B, allocated back to back. */
    uint64_t gone = history(&t);
    long a = take(&t, size_a);
    long b = take(&t, size_a);
    long other = take(&t, 40);
    if (a < 0 || b < 0 || other < 0) {
        CHECK(!"room for the trial's blocks");
        munmap(mem, MEM_SPAN);
        return;
    }
    unsigned char *pa = t.held[a].p;
    unsigned char *pb = t.held[b].p;
    /* a value that means something in this heap: another block's offset */
    uint64_t offset = (uint64_t)(t.held[other].p - (unsigned char *)t.h) - 8;
    if (nb == NB_LINKS) {
        /* B holds what a free block's header and links would: real offsets,
         * bare and marked as TLSF marks its links (next + 5, prev + 1) */
        uint64_t links[4] = { offset, offset | 5u, offset | 1u, offset };
        size_t n = t.held[b].usable < sizeof(links) ? t.held[b].usable : sizeof(links);
        memcpy(pb, links, n);
        t.held[b].skip = n;
    }
    if (nb == NB_FREE)
        CHECK_EQ(give(&t, (size_t)b), 0);
    bool changed = overflow(&t, kind, pa, pb, len, pat, nb, offset, gone);
    if (nb == NB_FREED_AFTER) {
        for (size_t i = 0; i < t.n; i++)
            if (t.held[i].p == pb) {
                give(&t, i);
                break;
            }
    }
    random_ops(&t, 300);
    fill_and_drain(&t);
    verdict(&t, mem, changed);
    munmap(mem, MEM_SPAN);
}

static void overflow_trials(const char *kind, int hardening)
{
    heap_bytes = strcmp(kind, "zsheap") == 0 ? HEAP_MAX : 192 * 1024;
    /* sizes: small slots, a size that fills its block exactly, page runs */
    static const size_t sizes[] = { 24, 100, 248, 700, 1500 };
    uint64_t seed = 1;
    for (size_t len = 1; len <= 16; len++)
        for (int pat = 0; pat < PAT_COUNT; pat++)
            for (int nb = 0; nb < NB_COUNT; nb++) {
                size_t size_a = sizes[(len + (size_t)pat + (size_t)nb) % 5];
                trial(kind, hardening, len, pat, (enum neighbour)nb, size_a, seed++);
            }
}

/* The kinds given (overflow_test [kind ...]), or every kind; each as the
 * context of the checks run on it. */
static void each_kind(void (*check)(const char *kind))
{
    const char *const *names = test_argc > 0 ? (const char *const *)test_argv : rtm_heap_kinds();
    for (; *names; names++) {
        test_context = *names;
        check(*names);
    }
}

static void trials_default(const char *kind)
{
    overflow_trials(kind, RTM_HEAP_HARDEN_O1);
}

TEST_CASE("overflows past a block at the default level crash nothing, and damage is never silent")
{
    each_kind(trials_default);
}

static void trials_full(const char *kind)
{
    overflow_trials(kind, RTM_HEAP_HARDEN_FULL);
}

TEST_CASE("overflows past a block at full hardening crash nothing, and damage is never silent")
{
    each_kind(trials_full);
}

/* The handler hears of damage with the block and what was found, and the
 * counter counts it; at RTM_HEAP_HARDEN_NONE nothing is counted on a clean
 * workload and the heap behaves as at the default level. */
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

static unsigned char mem[1 << 16] __attribute__((aligned(4096)));
static unsigned char other[1 << 16] __attribute__((aligned(4096)));

static void handler_hears(const char *kind)
{
    struct heard heard = { 0, NULL, NULL };
    struct rtm_heap_config cfg = { .on_corruption = on_corruption, .on_corruption_arg = &heard };
    /* the heap leaves the array's last page free: the overflow below may
     * run past the heap's memory, never past the array */
    struct rtm_heap *h = rtm_heap_create_ex(kind, mem, sizeof(mem) - 4096, &cfg);
    REQUIRE(h != NULL, );
    CHECK_EQ(rtm_heap_hardening(h), RTM_HEAP_HARDEN_O1);
    /* two blocks side by side (a kind may hand them out upwards or
     * downwards): the lower one is a, the upper one b */
    unsigned char *one = rtm_heap_alloc(h, 700), *two = rtm_heap_alloc(h, 700);
    REQUIRE(one && two, );
    unsigned char *a = one < two ? one : two, *b = one < two ? two : one;
    REQUIRE(a + rtm_heap_usable_size(h, a) + 64 > b, );
    CHECK_EQ(rtm_heap_free(h, b), 0);
    /* a run of 0xff over everything past a, as far as 16 bytes */
    memset(a + rtm_heap_usable_size(h, a), 0xff, 16);
    rtm_heap_alloc(h, 700);
    if (strcmp(kind, "zsheap") == 0) {
        /* no metadata in its pages: the overflow reached b's bytes only.
         * Its bookkeeping damaged instead (a wild write): the first page
         * and the tag in a's page's descriptor, the first of its region
         * (after its bitmap and list links) */
        struct heap_layout l;
        CHECK_EQ(rtm_heap_check(h), 0);
        REQUIRE(heap_layout_find(h, &l), );
        CHECK(a == (unsigned char *)h + *l.xv.first);
        memset((unsigned char *)h + *l.xv.stack + 16 + 2 * sizeof(size_t), 0x77,
               sizeof(size_t) + 4);
    }
    int rc = rtm_heap_free(h, a);
    struct rtm_heap_stats st;
    rtm_heap_stats(h, &st);
    /* every kind but zsheap keeps metadata within 16 bytes past a block
     * whose successor is free, and checks it before the free merges */
    CHECK(rtm_heap_check(h) == -EFAULT);
    CHECK_EQ(rc, -EFAULT);
    CHECK(st.corruptions > 0);
    CHECK(heard.calls > 0 && (uint64_t)heard.calls == st.corruptions);
    CHECK(heard.what != NULL && heard.what[0] != '\0');
    CHECK(heard.block == a);
    CHECK_EQ(rtm_heap_set_corruption_handler(h, NULL, NULL), 0);
    rtm_heap_destroy(h);
    CHECK_EQ(rtm_heap_set_corruption_handler(h, on_corruption, &heard), -EINVAL);
    CHECK_EQ(rtm_heap_hardening(h), -EINVAL);
}

TEST_CASE("the handler hears of damage with the block and what was found, counted")
{
    each_kind(handler_hears);
}

static void unknown_level(const char *kind)
{
    struct rtm_heap_config bad = { .hardening = 7 };
    errno = 0;
    CHECK(rtm_heap_create_ex(kind, mem, sizeof(mem), &bad) == NULL && errno == EINVAL);
}

TEST_CASE("an unknown hardening level is refused")
{
    each_kind(unknown_level);
}

/* The same clean workload at every level: same addresses, no corruption. */
static void levels_alike(const char *kind)
{
    for (int level = RTM_HEAP_HARDEN_O1; level <= RTM_HEAP_HARDEN_FULL; level++) {
        struct rtm_heap_config c1 = { .hardening = RTM_HEAP_HARDEN_NONE };
        struct rtm_heap_config c2 = { .hardening = level, .check_interval = 3 };
        struct rtm_heap *x = rtm_heap_create_ex(kind, mem, sizeof(mem), &c1);
        struct rtm_heap *y = rtm_heap_create_ex(kind, other, sizeof(other), &c2);
        REQUIRE(x && y, );
        CHECK_EQ(rtm_heap_hardening(y), level);
        void *px[64] = { 0 }, *py[64] = { 0 };
        uint64_t rng = 9;
        for (int k = 0; k < 4000; k++) {
            size_t i = rng_next(&rng) % 64, n = (size_t)rng_range(&rng, 0, 2000);
            if (px[i]) {
                CHECK_EQ(rtm_heap_free(x, px[i]), 0);
                CHECK_EQ(rtm_heap_free(y, py[i]), 0);
                px[i] = py[i] = NULL;
            } else {
                px[i] = rtm_heap_alloc(x, n);
                py[i] = rtm_heap_alloc(y, n);
                /* both refused alike when full (halffit's fragments fill this heap) */
                CHECK(px[i]
                          ? py[i] && (unsigned char *)px[i] - mem == (unsigned char *)py[i] - other
                          : py[i] == NULL);
            }
        }
        struct rtm_heap_stats sx, sy;
        rtm_heap_stats(x, &sx);
        rtm_heap_stats(y, &sy);
        CHECK_EQ(sx.used_bytes, sy.used_bytes);
        CHECK_EQ(sy.corruptions, 0);
        CHECK_EQ(rtm_heap_check(y), 0);
    }
}

TEST_CASE("every level gives the blocks no hardening gives, and counts nothing, on a clean "
          "workload")
{
    each_kind(levels_alike);
}

/* RTM_HEAP_HARDEN_FULL: damage that no O(1) check reads (a free block's
 * footer in the middle of nowhere) is found by the next periodic check, and
 * every operation is refused from then on. */
static void full_level_finds_damage(const char *kind)
{
    static unsigned char own[1 << 16] __attribute__((aligned(4096)));
    struct rtm_heap_config cfg = { .hardening = RTM_HEAP_HARDEN_FULL, .check_interval = 4 };
    struct rtm_heap *h = rtm_heap_create_ex(kind, own, sizeof(own), &cfg);
    REQUIRE(h != NULL, );
    unsigned char *a = rtm_heap_alloc(h, 1000);
    unsigned char *b = rtm_heap_alloc(h, 1000);
    unsigned char *c = rtm_heap_alloc(h, 1000);
    REQUIRE(a && b && c, );
    CHECK_EQ(rtm_heap_free(h, b), 0);
    /* every byte of the free block b, as a use after free would */
    memset(b, 0x5a, 1000);
    if (rtm_heap_check(h) == 0)
        return; /* the kind keeps nothing there */
    int refused = 0;
    for (int k = 0; k < 8; k++)
        refused += rtm_heap_alloc(h, 16) == NULL;
    struct rtm_heap_stats st;
    rtm_heap_stats(h, &st);
    CHECK(refused > 0);
    CHECK(st.corruptions > 0);
}

TEST_CASE("full hardening finds damage no O(1) check reads, and refuses from then on")
{
    each_kind(full_level_finds_damage);
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, "overflow");
}
