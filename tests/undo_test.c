/*
 * The undo log of robust heaps (src/heap/undo.h): does it record every
 * metadata word a call writes, and does rolling it back return the heap to
 * the state the call found?
 *
 * For every kind and hardening level, random calls (alloc, aligned alloc,
 * realloc, free, calloc) on a robust heap in private memory. Around each
 * call: the heap's bytes before (S0) and after (S1); the log's entries of
 * that call (a commit empties the count, not the entries). Then, on a copy:
 *   - roll the call back (rtm__undo_rollback over its entries): the heap must
 *     pass rtm_heap_check, and every byte must be as in S0 except those of
 *     the block the call handed out (its owner record, realloc's copy) and,
 *     for an add_pool (made once, half way), the memory of the pool, which
 *     is no heap's after the roll back;
 *   - call it again on the rolled-back heap: the same result and the same
 *     bytes as S1. A store the log missed stays changed after the roll
 *     back, and the call made twice differs from the call made once (a
 *     counter counted twice, a link written over), or the check fails.
 * Each call's entries are also checked against the log's capacity.
 *
 *   undo_test [OPS]   (default 2000 per kind and level)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rtmem/rtmem.h"
#include "../src/heap/kind.h"
#include "../src/heap/store.h"
#include "../src/heap/undo.h"

#define HEAP_BYTES ((size_t)192 << 10) /* the heap in the first 128 KiB, a pool added later */
#define POOL_AT    ((size_t)128 << 10)
#define SLOTS      64

static unsigned char mem[HEAP_BYTES] __attribute__((aligned(4096)));
static unsigned char s0[HEAP_BYTES], s1[HEAP_BYTES], r[HEAP_BYTES];

enum op { OP_ALLOC, OP_ALIGNED, OP_REALLOC, OP_FREE, OP_CALLOC, OP_POOL, OP_COUNT };
static const char *const op_names[OP_COUNT] = { "alloc", "aligned", "realloc",
                                                "free",  "calloc",  "add_pool" };

static int below; /* this run's pool lies below the heap */

struct call {
    enum op op;
    size_t size, align;
    void *p;
};

static void *make_call(struct rtm_heap *h, const struct call *c, int *rc)
{
    *rc = 0;
    switch (c->op) {
    case OP_ALLOC: return rtm_heap_alloc(h, c->size);
    case OP_ALIGNED: return rtm_heap_aligned_alloc(h, c->align, c->size);
    case OP_REALLOC: return rtm_heap_realloc(h, c->p, c->size);
    case OP_CALLOC: return rtm_heap_calloc(h, 1, c->size);
    case OP_FREE: *rc = rtm_heap_free(h, c->p); return NULL;
    case OP_POOL:
        *rc = rtm_heap_add_pool(h, below ? mem : mem + POOL_AT, HEAP_BYTES - POOL_AT);
        return NULL;
    default: return NULL;
    }
}

static int below;             /* this run's pool lies below the heap */
static size_t log_lo, log_hi; /* the lock area and the log in mem: not compared */
/* Nor the countdown to the next periodic check (RTM_HEAP_HARDEN_FULL),
 * which the dispatcher keeps outside the log: a call rolled back and made
 * again counts twice, and no check depends on it. */
static size_t count_lo, count_hi;

static int ignored(size_t i)
{
    return (i >= log_lo && i < log_hi) || (i >= count_lo && i < count_hi);
}
static uint32_t worst_entries[RTM_KIND_COUNT];

/* Whether byte i of mem may differ from S0 after a roll back: the log
 * itself, or the block the call handed out. */
static int may_differ(size_t i, const void *q, size_t qbytes)
{
    if (ignored(i))
        return 1;
    uintptr_t a = (uintptr_t)mem + i, lo = (uintptr_t)q;
    return q && a >= lo && a < lo + qbytes;
}

static void *one_call(struct rtm_heap *h, struct rtm_undo *u, const struct call *c, unsigned kind)
{
    CHECK_EQ(rtm_heap_check(h), 0);
    memcpy(s0, mem, HEAP_BYTES);
    u->peak = 0;
    int rc1;
    void *q1 = make_call(h, c, &rc1);
    uint32_t n = u->peak;
    memcpy(s1, mem, HEAP_BYTES);
    CHECK(u->count == 0);
    CHECK(n < u->capacity);
    CHECK(u->overflows == 0);
    if (n > worst_entries[kind])
        worst_entries[kind] = n;
    size_t qbytes = q1 ? rtm_heap_usable_size(h, q1) : 0;
    /* and the owner record after it */
    qbytes += q1 ? 16 : 0;

    /* Roll back on the heap itself, as a process taking the lock would. */
    u->count = n;
    CHECK_EQ(rtm__undo_rollback(u, (size_t)((char *)h - (char *)u), 0), 0);
    memcpy(r, mem, HEAP_BYTES);
    if (rtm_heap_check(h) != 0)
        fprintf(stderr,
                "[%s] %s of %zu (align %zu, p %p): %u entries; check fails after the roll back\n",
                test_context, op_names[c->op], c->size, c->align, c->p, n);
    if (getenv("UNDO_DEBUG"))
        for (uint32_t i = 0; i < n; i++)
            fprintf(stderr, "  entry %u: at %lld, %u bytes, old %llx\n", i,
                    (long long)(u->entry[i].where >> 2), 1u << (u->entry[i].where & 3),
                    (unsigned long long)u->entry[i].old);
    CHECK_EQ(rtm_heap_check(h), 0);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < HEAP_BYTES; i++)
        if (r[i] != s0[i] && !may_differ(i, q1, qbytes) &&
            !(c->op == OP_POOL && (below ? i < HEAP_BYTES - POOL_AT : i >= POOL_AT)) && bad++ == 0)
            first = i;
    if (bad)
        fprintf(stderr, "[%s] %s: %zu bytes not restored, first at offset %zu from the lock\n",
                test_context, op_names[c->op], bad, first - log_lo);
    CHECK_EQ(bad, 0);

    /* The same call again: the same answer, the same bytes. */
    int rc2;
    void *q2 = make_call(h, c, &rc2);
    CHECK(q2 == q1);
    CHECK_EQ(rc2, rc1);
    size_t diff = 0;
    for (size_t i = 0; i < HEAP_BYTES; i++)
        if (mem[i] != s1[i] && !ignored(i))
            diff++;
    if (diff)
        fprintf(stderr, "[%s] %s again: %zu bytes differ\n", test_context, op_names[c->op], diff);
    CHECK_EQ(diff, 0);
    return q2;
}

/* A robust heap of the kind and level in mem, 128 KiB of it: above its
 * pool-to-be (the pool below the log: its entries' distances are negative)
 * or below it, by turns; the bytes not compared noted. *up is its log,
 * *to_end the bytes from the heap to the end of its memory. */
static struct rtm_heap *undo_heap(const char *kind, unsigned kind_id, int hardening,
                                  struct rtm_undo **up, size_t *to_end)
{
    memset(mem, 0, HEAP_BYTES);
    struct rtm_heap_config cfg = { .hardening = hardening, .lock = RTM_HEAP_LOCK_ROBUST_SHARED };
    below = (kind_id + (unsigned)hardening) % 2 == 0;
    unsigned char *heap_at = below ? mem + (HEAP_BYTES - POOL_AT) : mem;
    struct rtm_heap *h = rtm_heap_create_ex(kind, heap_at, POOL_AT, &cfg);
    REQUIRE(h != NULL, NULL);
    struct rtm_undo *u = *up = rtm_undo_of(h);
    /* the lock area (its mutex, its call counters) and the log */
    log_lo = (size_t)((unsigned char *)u - mem) - RTM_HEAP_LOCK_AREA_BYTES;
    log_hi = log_lo + rtm_undo_bytes(u->capacity);
    count_lo = (size_t)((unsigned char *)&h->until_check - mem);
    count_hi = count_lo + sizeof(h->until_check);
    *to_end = (size_t)(heap_at + POOL_AT - (unsigned char *)h);
    return h;
}

/* Runs a check for every kind and hardening level, the two as its context. */
static void each_level(void (*check)(const char *kind, unsigned kind_id, int hardening))
{
    static char ctx[64];
    const char *const *kinds = rtm_heap_kinds();
    for (unsigned k = 0; kinds[k]; k++)
        for (int hard = RTM_HEAP_HARDEN_O1; hard <= RTM_HEAP_HARDEN_FULL; hard++) {
            snprintf(ctx, sizeof(ctx), "%s/harden%d", kinds[k], hard);
            test_context = ctx;
            check(kinds[k], k, hard);
        }
}

/* What attach checks of the log (rtm__heap_validate): it must span exactly
 * to the end of the memory, fit before the heap, and count no more than it
 * holds; a roll back trusts all three. */
static void log_validated(const char *kind, unsigned kind_id, int hardening)
{
    struct rtm_undo *u;
    size_t to_end;
    struct rtm_heap *h = undo_heap(kind, kind_id, hardening, &u, &to_end);
    if (!h)
        return;
    CHECK_EQ(rtm__heap_validate(h, to_end), 0);
    u->span++;
    CHECK_EQ(rtm__heap_validate(h, to_end), -EFAULT);
    u->span--;
    u->capacity += 1000;
    CHECK_EQ(rtm__heap_validate(h, to_end), -EFAULT);
    u->capacity -= 1000;
    u->count = u->capacity + 1;
    CHECK_EQ(rtm__heap_validate(h, to_end), -EFAULT);
    CHECK_EQ(rtm__undo_rollback(u, (size_t)((char *)h - (char *)u), 0), -1); /* writes nothing */
    u->count = 0;
    CHECK_EQ(rtm__heap_validate(h, to_end), 0);
}

TEST_CASE("a log whose span, capacity or count does not hold is refused, and written by no one")
{
    each_level(log_validated);
}

/* A crafted log may not write the heap's header but failed_allocs (a
 * handler address, a kind, a key). */
static void header_entries_refused(const char *kind, unsigned kind_id, int hardening)
{
    struct rtm_undo *u;
    size_t to_end;
    struct rtm_heap *h = undo_heap(kind, kind_id, hardening, &u, &to_end);
    if (!h)
        return;
    size_t room = (size_t)((char *)h - (char *)u);
    uint64_t fa = h->failed_allocs;
    const struct {
        size_t off, width;
        int want;
    } header_entries[] = {
        { offsetof(struct rtm_heap, on_corruption), sizeof(void *), -1 },
        { offsetof(struct rtm_heap, tag_key), 8, -1 },
        { offsetof(struct rtm_heap, kind), 4, -1 },
        { offsetof(struct rtm_heap, failed_allocs) - 4, 8, -1 }, /* straddles into it */
        { offsetof(struct rtm_heap, failed_allocs), 8, 0 },
    };
    for (size_t i = 0; i < sizeof header_entries / sizeof header_entries[0]; i++) {
        size_t w = header_entries[i].width;
        u->entry[0].where = (uint64_t)(room + header_entries[i].off) << 2 | (w == 8 ? 3 : 2);
        u->entry[0].old = fa;
        u->count = 1;
        CHECK_EQ(rtm__undo_rollback(u, room, 0), header_entries[i].want);
        u->count = 0;
    }
    CHECK_EQ(h->failed_allocs, fa);
}

TEST_CASE("a crafted log writes no word of the heap's header but failed_allocs")
{
    each_level(header_entries_refused);
}

/* Nor may it name pools in a fixed heap. */
static void pools_refused_when_fixed(const char *kind, unsigned kind_id, int hardening)
{
    struct rtm_undo *u;
    size_t to_end;
    struct rtm_heap *h = undo_heap(kind, kind_id, hardening, &u, &to_end);
    if (!h)
        return;
    size_t room = (size_t)((char *)h - (char *)u);
    uint64_t fa = h->failed_allocs;
    u->pools = 1;
    u->pool[0].at = (uint64_t)POOL_AT;
    u->pool[0].len = 4096;
    u->entry[0].where = (uint64_t)(room + offsetof(struct rtm_heap, failed_allocs)) << 2 | 3;
    u->entry[0].old = fa;
    u->count = 1;
    CHECK_EQ(rtm__undo_rollback(u, room, 1), -1); /* fixed: no pool */
    u->pools = 0;
    CHECK_EQ(rtm__undo_rollback(u, room, 1), 0);
    CHECK_EQ(h->failed_allocs, fa);
}

TEST_CASE("a crafted log names no pool in a fixed heap")
{
    each_level(pools_refused_when_fixed);
}

/* A call drawn at random on slot k's block: free or realloc it if there is
 * one, else alloc or aligned alloc (calloc is an alloc, then a memset after
 * the call: the memset is the caller's, no call of the heap's to undo). */
static struct call random_call(uint64_t *rng, void *const *slot, unsigned *k)
{
    *k = (unsigned)tk_rng_below(rng, SLOTS);
    struct call c = { .p = slot[*k] };
    unsigned dice = (unsigned)tk_rng_below(rng, 10);
    /* sizes: mostly small, some page runs, now and then large */
    unsigned band = (unsigned)tk_rng_below(rng, 8);
    c.size = band < 5   ? 1 + tk_rng_below(rng, 256)
             : band < 7 ? 256 + tk_rng_below(rng, 4096)
                        : 4096 + tk_rng_below(rng, 24u << 10);
    if (slot[*k] && dice < 4) {
        c.op = OP_FREE;
    } else if (slot[*k]) {
        c.op = OP_REALLOC;
    } else {
        c.op = dice < 7 ? OP_ALLOC : OP_ALIGNED;
        c.align = (size_t)1 << (3 + tk_rng_below(rng, 9));
        if (tk_rng_below(rng, 50) == 0)
            c.align = tk_rng_below(rng, 2) ? 0 : 48; /* refused: counted, logged */
    }
    return c;
}

/* The operations per kind and level: undo_test [OPS]. */
static unsigned long ops_asked(void)
{
    return test_argc > 0 ? strtoul(test_argv[0], NULL, 10) : 2000;
}

/* The failures before the case below: it stops at its first (the calls
 * after it would only repeat it). */
static unsigned long failed_before_calls;

static void calls_rolled_back(const char *kind, unsigned kind_id, int hardening)
{
    struct rtm_undo *u;
    size_t to_end;
    struct rtm_heap *h = undo_heap(kind, kind_id, hardening, &u, &to_end);
    if (!h)
        return;
    unsigned long ops = ops_asked();
    void *slot[SLOTS] = { 0 };
    uint64_t rng = 0x5eed0000u + kind_id * 7 + (unsigned)hardening;
    for (unsigned long i = 0; i < ops && test_checks_failed == failed_before_calls; i++) {
        unsigned k;
        struct call c = random_call(&rng, slot, &k);
        if (i == ops / 3) { /* the second pool, once, half way through */
            struct call pool = { .op = OP_POOL };
            one_call(h, u, &pool, kind_id);
            CHECK_EQ(u->pools, 1);
        }
        void *q = one_call(h, u, &c, kind_id);
        if (c.op == OP_FREE)
            slot[k] = NULL;
        else if (q)
            slot[k] = q;
    }
}

TEST_CASE("every call rolled back leaves the heap as it found it, and made again the same")
{
    failed_before_calls = test_checks_failed;
    each_level(calls_rolled_back);
    const char *const *kinds = rtm_heap_kinds();
    for (unsigned k = 0; kinds[k]; k++)
        printf("%-8s most log entries one call wrote: %u\n", kinds[k], worst_entries[k]);
}

/* A robust heap's log names at most RTM_UNDO_POOLS added pools. */
TEST_CASE("a robust heap takes at most RTM_UNDO_POOLS added pools")
{
    struct rtm_heap_config cfg = { .lock = RTM_HEAP_LOCK_ROBUST_SHARED };
    struct rtm_heap *h = rtm_heap_create_ex("tlsf", mem, 64u << 10, &cfg);
    CHECK(h != NULL);
    for (unsigned i = 0; h && i <= RTM_UNDO_POOLS; i++)
        CHECK_EQ(rtm_heap_add_pool(h, mem + (64u << 10) + i * 8192u, 8192),
                 i < RTM_UNDO_POOLS ? 0 : -ENOSPC);
    CHECK(h && rtm_heap_check(h) == 0);
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, "undo_test");
}
