/*
 * `rtmem memcheck`: the phases and their timed passes.
 *
 * Timing: each allocator call sits alone between tk_timer_start and
 * tk_timer_end, and its ticks go to a sample store allocated and touched
 * before the run. Checks, pattern fills, fragmentation probes, shuffles and
 * statistics happen between timed calls, never inside one, and the harness
 * allocates nothing while a test runs.
 *
 * Randomness: block sizes come from one stream per phase seeded from --seed
 * (the same sizes for every allocator, so their rows compare); each test's
 * shuffles come from a stream seeded from --seed, the phase and the test's
 * index, so a test does not depend on what the allocators before it did.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/child.h"
#include "common/rng.h"
#include "memcheck.h"

/* Salts separating the phases' random streams. */
static const uint64_t phase_salt[MC_PHASES] = {
    0x243f6a8885a308d3u, 0x13198a2e03707344u, 0xa4093822299f31d0u, 0x082efa98ec4e6c89u,
};

/* Churn workload: an operation is a request size, or MC_OP_FREE | index of
 * the victim in the array of live blocks (swap-remove). */
#define MC_OP_FREE        0x80000000u
#define MC_CHURN_MIN_BYTES ((size_t)16)

/* Progress marks inside the long tests: every this many churn operations
 * (a power of two) and pattern frees. */
#define CHURN_OPS_PER_MARK     65536u
#define PATTERN_FREES_PER_MARK 4096u

/* Phase, heap, block and flags of the test running, for failure messages. */
struct test_ctx {
    enum mc_phase phase;
    size_t index;
    size_t heap, block;
    unsigned flags;
};

/* Which test runs now, for the parent to name if this process dies in it,
 * and a progress mark for its watchdog (memcheck_child.c). */
static void mark_test(struct mc_target *t, const struct test_ctx *c)
{
    t->now = (struct mc_running){.set = true, .phase = c->phase, .index = c->index,
                                 .heap = c->heap, .block = c->block, .flags = c->flags};
    tk_child_beat(&t->beat);
}

static uint64_t test_seed(uint64_t seed, enum mc_phase phase, size_t index)
{
    uint64_t s = seed ^ phase_salt[phase] ^ ((uint64_t)index * 0xd1b54a32d192ed03u);
    return tk_rng_next(&s);
}

/* A block size for a random-size test on a heap of h bytes: uniform in
 * [1, h/2). --compat draws as smokey does, random() % (h/2) with 0 made 1
 * (so 1 comes up twice as often). */
static size_t draw_block(const struct memcheck *m, uint64_t *rng, size_t h)
{
    size_t half = h / 2;
    if (m->o.compat) {
        size_t b = (size_t)(tk_rng_next(rng) % half);
        return b ? b : 1;
    }
    return 1 + (size_t)tk_rng_below(rng, half - 1);
}

static int failf(struct mc_target *t, const struct test_ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Records the first functional failure of t with where it happened. */
static int failf(struct mc_target *t, const struct test_ctx *c, const char *fmt, ...)
{
    if (t->fail.failed)
        return -1;
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    t->fail.failed = true;
    t->fail.phase = c->phase;
    if (c->phase == MC_PH_CHURN)
        snprintf(t->fail.msg, sizeof(t->fail.msg), "%s phase, heap %zu B (usable %zu B): %s",
                 mc_phase_name(c->phase), c->heap, t->a.cur.usable_bytes, what);
    else
        snprintf(t->fail.msg, sizeof(t->fail.msg),
                 "%s phase, test #%zu: heap %zu B (usable %zu B), block %zu B%s%s: %s",
                 mc_phase_name(c->phase), c->index, c->heap, t->a.cur.usable_bytes, c->block,
                 c->flags & MC_F_SHUFFLE ? " +shuffle" : "", c->flags & MC_F_HOT ? " +hot" : "",
                 what);
    return -1;
}

/* ---- progress ---------------------------------------------------------------- */

static void progress_begin(struct memcheck *m, size_t total)
{
    m->progress.done = 0;
    m->progress.total = total;
    m->progress.last_ns = 0;
}

/* done: units of work finished so far in the phase. */
static void progress_step(struct memcheck *m, const struct mc_target *t, enum mc_phase ph,
                          size_t done)
{
    struct mc_progress *p = &m->progress;
    p->done = done;
    if (!p->on)
        return;
    uint64_t now = tk_clock_ns();
    if (now - p->last_ns < 250000000u)
        return;
    p->last_ns = now;
    fprintf(stderr, "\rmemcheck: %-8s %-7s %zu/%zu   ", t->a.name, mc_phase_name(ph), p->done,
            p->total);
}

static void progress_end(const struct memcheck *m)
{
    if (m->progress.on)
        fprintf(stderr, "\r%60s\r", "");
}

/* ---- timed passes ---------------------------------------------------------- */

struct pass {
    size_t n;               /* blocks allocated */
    bool failed_alloc;      /* the fill ended on a failing allocation */
    uint64_t fail_ticks;    /* its time */
    size_t usable_sum;      /* sum of usable sizes of the fill */
};

/* Fragmentation probe of one test (smokey's find_largest_free). */
struct probe {
    bool done;
    size_t user_bytes;      /* requested bytes of the fill */
    size_t maximum_free;    /* bytes freed when probed */
    size_t largest_free;    /* largest probe that fit */
    bool use_span;          /* TK_PROCESS: a probe fits only inside [lo, hi) */
    uintptr_t lo, hi;
    bool free_refused;
};

/* Allocates b-byte blocks into m->blocks until an allocation fails or limit
 * blocks are held, timing each call; the failing call is kept apart. */
static void timed_fill(struct memcheck *m, struct tk_alloc *a, size_t b, size_t limit,
                       struct pass *ps)
{
    void *(*alloc)(void *, size_t) = a->alloc;
    void *ctx = a->ctx;
    void **blocks = m->blocks;
    struct tk_samples *s = &m->alloc_s;
    size_t n = 0;

    tk_samples_reset(s);
    ps->failed_alloc = false;
    ps->fail_ticks = 0;
    while (n < limit) {
        uint64_t t0 = tk_timer_start();
        void *p = alloc(ctx, b);
        uint64_t t1 = tk_timer_end();
        if (!p) {
            ps->failed_alloc = true;
            ps->fail_ticks = t1 - t0;
            break;
        }
        tk_samples_add(s, t1 - t0);
        blocks[n++] = p;
    }
    ps->n = n;
}

static bool probe_fits(struct tk_alloc *a, size_t size, struct probe *pr)
{
    void *p = a->alloc(a->ctx, size);
    if (!p)
        return false;
    uintptr_t at = (uintptr_t)p;
    bool inside = !pr->use_span || (at >= pr->lo && at <= pr->hi && size <= pr->hi - at);
    if (a->free(a->ctx, p) != 0)
        pr->free_refused = true;
    return inside;
}

/* Smokey's probe, untimed: the largest of freed, freed - b, freed - 2b, ...
 * that can be allocated now. 0 if none can (smokey returns the last size
 * tried, unverified; --compat does too). */
static void probe_fragmentation(const struct memcheck *m, struct tk_alloc *a, size_t freed,
                                size_t b, struct probe *pr)
{
    size_t s = freed;
    pr->done = true;
    pr->maximum_free = freed;
    for (;;) {
        if (probe_fits(a, s, pr))
            break;
        if (s <= b) {
            s = m->o.compat ? s : 0;
            break;
        }
        s -= b;
    }
    pr->largest_free = s;
}

/* Frees m->blocks[0 .. n) in that order, timing each call, and probes the
 * fragmentation once half the requested bytes are freed (pr non-NULL).
 * Returns the index of the first refused free, or n. */
static size_t timed_free(struct memcheck *m, struct tk_alloc *a, size_t n, size_t b,
                         struct probe *pr)
{
    int (*fr)(void *, void *) = a->free;
    void *ctx = a->ctx;
    void **blocks = m->blocks;
    struct tk_samples *s = &m->free_s;
    size_t freed = 0;

    tk_samples_reset(s);
    for (size_t i = 0; i < n; i++) {
        uint64_t t0 = tk_timer_start();
        int rc = fr(ctx, blocks[i]);
        uint64_t t1 = tk_timer_end();
        tk_samples_add(s, t1 - t0);
        if (rc != 0)
            return i;
        freed += b;
        if (pr && !pr->done && freed >= pr->user_bytes / 2)
            probe_fragmentation(m, a, freed, b, pr);
    }
    return n;
}

/* ---- functional checks ------------------------------------------------------ */

/* Count of a fill against H/B and against what the allocator promises. */
static int check_count(struct mc_target *t, const struct test_ctx *c, size_t n, size_t maxblocks)
{
    struct tk_alloc *a = &t->a;
    if (!(a->applies & TK_APPLY_FILL_TO_FAILURE)) {
        if (n != maxblocks)
            return failf(t, c, "the allocator returned NULL after %zu of %zu requests", n,
                         maxblocks);
        return 0;
    }
    if (n > maxblocks)
        return failf(t, c, "too many blocks fetched: more than H/B = %zu", maxblocks);
    size_t promised = tk_alloc_fill_count(a, c->block);
    if (promised && n < promised) {
        if (promised * c->block == a->cur.usable_bytes)
            return failf(t, c,
                         "unexpected overhead: %zu blocks, but the kind promises zero overhead "
                         "for %zu-byte blocks (%zu blocks)",
                         n, c->block, promised);
        return failf(t, c, "%zu blocks, fewer than the %zu the kind documents for a fresh heap "
                           "(rtm_heap_fill_count)",
                     n, promised);
    }
    return 0;
}

/* Bounds, alignment and usable size of every block of a fill; their span. */
static int inspect_fill(struct memcheck *m, struct mc_target *t, const struct test_ctx *c,
                        size_t size, struct pass *ps, struct probe *pr)
{
    struct tk_alloc *a = &t->a;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    size_t sum = 0;
    for (size_t i = 0; i < ps->n; i++) {
        void *p = m->blocks[i];
        if (!tk_alloc_block_ok(a, p, size))
            return failf(t, c, "block #%zu at %p (%zu B) is outside the heap's memory or "
                               "misaligned",
                         i, p, size);
        size_t us = a->usable_size(a->ctx, p);
        if (us < size)
            return failf(t, c, "usable size %zu of block #%zu is below its request of %zu B", us,
                         i, size);
        sum += us;
        if ((uintptr_t)p < lo)
            lo = (uintptr_t)p;
        if ((uintptr_t)p + us > hi)
            hi = (uintptr_t)p + us;
    }
    ps->usable_sum = sum;
    if (pr) {
        pr->lo = lo;
        pr->hi = hi;
    }
    return 0;
}

/* After every block is freed: nothing used, coalescing complete, heap
 * consistent (for the allocators these apply to). */
static int check_empty(struct mc_target *t, const struct test_ctx *c)
{
    struct tk_alloc *a = &t->a;
    struct rtm_heap_stats st;
    if (tk_alloc_stats(a, &st) == 0) {
        if (st.used_bytes != 0 || st.live_blocks != 0)
            return failf(t, c, "memory leakage: %zu bytes in %zu blocks still used after "
                               "freeing every block",
                         st.used_bytes, st.live_blocks);
        if (st.largest_free_bytes != a->cur.largest_free_bytes)
            return failf(t, c, "coalescing incomplete: largest_free_bytes %zu after freeing "
                               "every block, %zu after create",
                         st.largest_free_bytes, a->cur.largest_free_bytes);
    }
    if (tk_alloc_check(a) == -EFAULT)
        return failf(t, c, "the heap's integrity check (rtm_heap_check) reports corruption");
    return 0;
}

static int free_all(struct memcheck *m, struct mc_target *t, const struct test_ctx *c, size_t n,
                    struct probe *pr)
{
    size_t done = timed_free(m, &t->a, n, c->block, pr);
    if (done < n)
        return failf(t, c, "free refused block #%zu of %zu (%p)", done, n, m->blocks[done]);
    if (pr && pr->free_refused)
        return failf(t, c, "free refused a fragmentation probe's block");
    return 0;
}

/* A fresh heap of usable size H for a test, checked: its usable size is
 * the one sizing found (== H unless reported inexact) and nothing is used. */
static int create_heap(struct memcheck *m, struct mc_target *t, const struct test_ctx *c)
{
    struct tk_alloc *a = &t->a;
    int rc = tk_alloc_create(a, &m->arena, c->heap);
    if (rc != 0)
        return failf(t, c, "cannot create a heap of usable size %zu: %s", c->heap,
                     strerror(-rc));
    struct rtm_heap_stats st;
    if (tk_alloc_stats(a, &st) != 0)
        return 0;
    if (st.usable_bytes != a->cur.usable_bytes || st.used_bytes != 0 || st.live_blocks != 0) {
        failf(t, c, "memory size inconsistency: usable_bytes %zu (%zu when sized on the same "
                    "memory), used_bytes %zu, live_blocks %zu on a fresh heap",
              st.usable_bytes, a->cur.usable_bytes, st.used_bytes, st.live_blocks);
        tk_alloc_destroy(a);
        return -1;
    }
    return 0;
}

/* ---- rows -------------------------------------------------------------------- */

/* Subtracts the timer overhead if asked (clamped at 0) and summarizes a
 * pass: mean over divisor calls, p99 and max, in ns. */
static void summarize(const struct memcheck *m, struct tk_samples *s, size_t divisor,
                      double *avg, double *p99, double *max)
{
    if (s->n == 0 || divisor == 0) {
        *avg = *p99 = *max = NAN;
        return;
    }
    uint64_t sum = 0, mx = 0;
    for (size_t i = 0; i < s->n; i++) {
        uint64_t v = s->v[i] > m->sub_ticks ? s->v[i] - m->sub_ticks : 0;
        s->v[i] = v;
        sum += v;
        if (v > mx)
            mx = v;
    }
    double npt = m->timer.ns_per_tick;
    *avg = (double)sum * npt / (double)divisor;
    if (m->o.compat)
        *avg = floor(*avg);   /* smokey keeps integer nanoseconds */
    *p99 = (double)tk_samples_percentile(s, 0.99) * npt;
    *max = (double)mx * npt;
}

static void make_row(struct memcheck *m, const struct tk_alloc *a, const struct test_ctx *c,
                     const struct pass *ps, const struct probe *pr, struct mc_row *row)
{
    size_t u = a->cur.usable_bytes;
    memset(row, 0, sizeof(*row));
    row->heap_bytes = u;
    row->block_bytes = c->block;
    row->nrblocks = ps->n;
    row->user_bytes = ps->n * c->block;
    row->flags = c->flags;
    row->fail_alloc_ns = NAN;
    if (ps->failed_alloc) {
        uint64_t v = ps->fail_ticks > m->sub_ticks ? ps->fail_ticks - m->sub_ticks : 0;
        row->fail_alloc_ns = (double)v * m->timer.ns_per_tick;
        /* Smokey counts the failing call in the alloc times (not in the
         * divisor); --compat does too. */
        if (m->o.compat)
            tk_samples_add(&m->alloc_s, ps->fail_ticks);
    }
    summarize(m, &m->alloc_s, ps->n, &row->avg_alloc_ns, &row->p99_alloc_ns, &row->max_alloc_ns);
    summarize(m, &m->free_s, ps->n, &row->avg_free_ns, &row->p99_free_ns, &row->max_free_ns);

    double user = (double)row->user_bytes;
    if (a->applies & TK_APPLY_FILL_TO_FAILURE)
        row->overhead_pct = 100.0 - 100.0 * user / (double)u;
    else
        row->overhead_pct = ps->usable_sum ? 100.0 - 100.0 * user / (double)ps->usable_sum : NAN;
    row->true_overhead_pct = a->applies & TK_APPLY_STATS
                                 ? 100.0 - 100.0 * user / (double)(u + a->cur.overhead_bytes)
                                 : NAN;
    row->frag_pct = NAN;
    if (pr->done) {
        row->maximum_free = pr->maximum_free;
        row->largest_free = pr->largest_free;
        if (pr->maximum_free)
            row->frag_pct = 100.0 * (1.0 - (double)pr->largest_free / (double)pr->maximum_free);
    }
}

/* ---- sequential phases ------------------------------------------------------- */

/*
 * One test, as smokey's test_seq: a fresh heap of usable size H; fill with
 * B-byte blocks (timed), free them in allocation or shuffled order (timed),
 * probing fragmentation at half; "hot" repeats the fill and the frees on the
 * same heap and reports that second pass. Then the heap must be empty.
 */
static int seq_test(struct memcheck *m, struct mc_target *t, const struct test_ctx *c,
                    uint64_t rng, struct mc_row *row)
{
    struct tk_alloc *a = &t->a;
    if (create_heap(m, t, c) != 0)
        return -1;
    size_t b = c->block, maxblocks = a->cur.usable_bytes / b;
    /* One more than H/B for a heap, so a fill that gets too many shows. */
    size_t limit = a->applies & TK_APPLY_FILL_TO_FAILURE ? maxblocks + 1 : maxblocks;
    struct pass p1 = {0}, p2 = {0};
    struct probe pr = {.use_span = a->sort == TK_PROCESS};
    const struct pass *rep = &p1;
    int rc = -1;

    timed_fill(m, a, b, limit, &p1);
    if (check_count(t, c, p1.n, maxblocks) != 0 || inspect_fill(m, t, c, b, &p1, &pr) != 0)
        goto out;
    pr.user_bytes = p1.n * b;
    if (c->flags & MC_F_SHUFFLE)
        tk_rng_shuffle(m->blocks, p1.n, sizeof(*m->blocks), &rng);
    if (free_all(m, t, c, p1.n, &pr) != 0)
        goto out;
    if (c->flags & MC_F_HOT) {
        timed_fill(m, a, b, limit, &p2);
        if (p2.n != p1.n) {
            failf(t, c, "different block count in the hot pass: %zu, against %zu in the first",
                  p2.n, p1.n);
            goto out;
        }
        if (inspect_fill(m, t, c, b, &p2, NULL) != 0)
            goto out;
        /* Smokey frees the hot pass in allocation order even when shuffling. */
        if ((c->flags & MC_F_SHUFFLE) && !m->o.compat)
            tk_rng_shuffle(m->blocks, p2.n, sizeof(*m->blocks), &rng);
        if (free_all(m, t, c, p2.n, NULL) != 0)
            goto out;
        rep = &p2;
    }
    if (check_empty(t, c) != 0)
        goto out;
    make_row(m, a, c, rep, &pr, row);
    rc = 0;
out:
    tk_alloc_destroy(a);
    return rc;
}

/* Smokey's variants, in its order. */
static const unsigned variants[4] = {0, MC_F_HOT, MC_F_SHUFFLE, MC_F_SHUFFLE | MC_F_HOT};

static size_t pow2_blocks(size_t h)
{
    size_t n = 0;
    for (size_t b = MC_POW2_MIN_BLOCK; b < h / 2; b <<= 1)
        n++;
    return n;
}

size_t mc_seq_tests(const struct memcheck *m, enum mc_phase phase)
{
    size_t n = 0;
    for (size_t i = 0; i < m->n_heap_sizes; i++)
        n += phase == MC_PH_POW2 ? 4 * pow2_blocks(m->heap_sizes[i])
                                 : 4 * (size_t)m->o.random_rounds;
    return n;
}

static int run_one(struct memcheck *m, struct mc_target *t, struct test_ctx *c)
{
    struct mc_seq *sq = &t->seq[c->phase];
    tk_rt_breather(&m->rt);
    c->index = sq->n;
    mark_test(t, c);
    if (seq_test(m, t, c, test_seed(m->o.seed, c->phase, c->index), &sq->rows[sq->n]) != 0)
        return -1;
    sq->n++;
    progress_step(m, t, c->phase, sq->n);
    return 0;
}

/* Power-of-two phase, in smokey's order: per heap size, each variant over
 * every block size. */
static int run_pow2(struct memcheck *m, struct mc_target *t)
{
    struct test_ctx c = {.phase = MC_PH_POW2};
    for (size_t i = 0; i < m->n_heap_sizes; i++)
        for (unsigned v = 0; v < 4; v++)
            for (size_t b = MC_POW2_MIN_BLOCK; b < m->heap_sizes[i] / 2; b <<= 1) {
                c.heap = m->heap_sizes[i];
                c.block = b;
                c.flags = variants[v];
                if (run_one(m, t, &c) != 0)
                    return -1;
            }
    return 0;
}

/* Random phase, in smokey's order: per variant, each heap size, rounds. */
static int run_random(struct memcheck *m, struct mc_target *t)
{
    struct test_ctx c = {.phase = MC_PH_RANDOM};
    uint64_t sizes = m->o.seed ^ phase_salt[MC_PH_RANDOM];
    for (unsigned v = 0; v < 4; v++)
        for (size_t i = 0; i < m->n_heap_sizes; i++)
            for (uint32_t r = 0; r < m->o.random_rounds; r++) {
                c.heap = m->heap_sizes[i];
                c.block = draw_block(m, &sizes, c.heap);
                c.flags = variants[v];
                if (run_one(m, t, &c) != 0)
                    return -1;
            }
    return 0;
}

/* Minor page faults of this process so far, or -1. */
static long minor_faults(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_minflt : -1;
}

int mc_run_seq(struct memcheck *m, struct mc_target *t, enum mc_phase phase)
{
    struct mc_seq *sq = &t->seq[phase];
    uint64_t t0 = tk_clock_ns();
    sq->n = 0;
    sq->minor_faults = -1;
    sq->ran = true;   /* its rows so far count, should the process die */
    long f0 = minor_faults();
    progress_begin(m, mc_seq_tests(m, phase));
    int rc = phase == MC_PH_POW2 ? run_pow2(m, t) : run_random(m, t);
    progress_end(m);
    long f1 = minor_faults();
    sq->seconds = (double)(tk_clock_ns() - t0) / 1e9;
    /* Memory an allocator takes from the kernel during the phase: under
     * mlockall(MCL_FUTURE) populated inside the timed call that grew it. */
    sq->minor_faults = f0 >= 0 && f1 >= f0 ? f1 - f0 : -1;
    return rc;
}

/* ---- pattern phase ------------------------------------------------------------- */

/* Each block gets its own pattern (a start value from its index, a step
 * coprime with 256), so a block written over by a neighbour, or handed out
 * twice, shows. */
static unsigned pattern_tag(size_t k)
{
    return (unsigned)(k * 167u + 13u) & 0xffu;
}

static void fill_pattern(unsigned char *p, size_t len, unsigned tag)
{
    for (size_t i = 0; i < len; i++)
        p[i] = (unsigned char)(tag + i * 47u);
}

/* Offset of the first byte off the pattern, or len. Compares in chunks so
 * the common, clean case stays a vectorizable reduction. */
static size_t find_corruption(const unsigned char *p, size_t len, unsigned tag)
{
    for (size_t off = 0; off < len; off += 256) {
        size_t end = len - off < 256 ? len : off + 256;
        unsigned diff = 0;
        for (size_t i = off; i < end; i++)
            diff |= p[i] ^ (unsigned char)(tag + i * 47u);
        if (diff)
            for (size_t i = off; i < end; i++)
                if (p[i] != (unsigned char)(tag + i * 47u))
                    return i;
    }
    return len;
}

/* Verifies every live block of m->blocks[0 .. n); after is the block just
 * freed (SIZE_MAX: after the fill). */
static int verify_live(struct memcheck *m, struct mc_target *t, const struct test_ctx *c,
                       size_t n, size_t after)
{
    for (size_t k = 0; k < n; k++) {
        const unsigned char *p = m->blocks[k];
        if (!p)
            continue;
        size_t len = m->sizes[k], bad = find_corruption(p, len, pattern_tag(k));
        t->pattern.bytes_verified += len;
        if (bad == len)
            continue;
        unsigned want = (unsigned char)(pattern_tag(k) + bad * 47u);
        if (after == SIZE_MAX)
            return failf(t, c, "block #%zu (%zu B at %p) corrupted at byte %zu after the fill "
                               "(0x%02x, expected 0x%02x)",
                         k, len, (const void *)p, bad, p[bad], want);
        return failf(t, c, "block #%zu (%zu B at %p) corrupted at byte %zu after freeing block "
                           "#%zu (0x%02x, expected 0x%02x)",
                     k, len, (const void *)p, bad, after, p[bad], want);
    }
    return 0;
}

/* Checks one new block of a pattern fill and writes its pattern over its
 * whole usable size (its request with --compat). */
static int pattern_block(struct memcheck *m, struct mc_target *t, const struct test_ctx *c,
                         void *p, size_t size, size_t n)
{
    struct tk_alloc *a = &t->a;
    if (!tk_alloc_block_ok(a, p, size))
        return failf(t, c, "block #%zu at %p (%zu B) is outside the heap or misaligned", n, p,
                     size);
    size_t us = a->usable_size(a->ctx, p);
    if (us < size)
        return failf(t, c, "usable size %zu of block #%zu is below its request of %zu B", us, n,
                     size);
    size_t len = m->o.compat ? size : us;
    m->blocks[n] = p;
    m->sizes[n] = (uint32_t)len;
    fill_pattern(p, len, pattern_tag(n));
    return 0;
}

/* Fills a fresh heap with patterned blocks, sizes uniform in [1, bmax]
 * (all bmax with --compat, as smokey). Returns the count, or SIZE_MAX after
 * a failure. */
static size_t pattern_fill(struct memcheck *m, struct mc_target *t, const struct test_ctx *c,
                           uint64_t *rng)
{
    struct tk_alloc *a = &t->a;
    size_t u = a->cur.usable_bytes, n = 0, total = 0;
    bool bounded = a->applies & TK_APPLY_FILL_TO_FAILURE;
    for (; n < m->blocks_cap; n++) {
        size_t size = m->o.compat ? c->block : 1 + (size_t)tk_rng_below(rng, c->block);
        if (!bounded && total + size > u)
            return n;
        void *p = a->alloc(a->ctx, size);
        if (!p && bounded)
            return n;
        if (!p) {
            failf(t, c, "the allocator returned NULL within the budget");
            return SIZE_MAX;
        }
        total += size;
        if (total > u) {
            failf(t, c, "the blocks hold %zu B, more than the heap's usable size", total);
            return SIZE_MAX;
        }
        if (pattern_block(m, t, c, p, size, n) != 0)
            return SIZE_MAX;
    }
    failf(t, c, "more than %zu blocks", m->blocks_cap);
    return SIZE_MAX;
}

static int pattern_test(struct memcheck *m, struct mc_target *t, const struct test_ctx *c,
                        uint64_t rng)
{
    struct tk_alloc *a = &t->a;
    if (create_heap(m, t, c) != 0)
        return -1;
    int rc = -1;
    size_t n = pattern_fill(m, t, c, &rng);
    if (n == SIZE_MAX || verify_live(m, t, c, n, SIZE_MAX) != 0)
        goto out;
    for (size_t k = 0; k < n; k++)
        m->order[k] = (uint32_t)k;
    tk_rng_shuffle(m->order, n, sizeof(*m->order), &rng);
    for (size_t i = 0; i < n; i++) {
        size_t k = m->order[i];
        /* A test on a large heap is long (each free verifies every live
         * block): slices of it are progress too. */
        if (i % PATTERN_FREES_PER_MARK == 0)
            tk_child_beat(&t->beat);
        if (a->free(a->ctx, m->blocks[k]) != 0) {
            failf(t, c, "free refused block #%zu (%p)", k, m->blocks[k]);
            goto out;
        }
        m->blocks[k] = NULL;
        if (verify_live(m, t, c, n, k) != 0)
            goto out;
    }
    if (check_empty(t, c) != 0)
        goto out;
    t->pattern.tests++;
    t->pattern.blocks += n;
    rc = 0;
out:
    tk_alloc_destroy(a);
    return rc;
}

int mc_run_pattern(struct memcheck *m, struct mc_target *t)
{
    struct test_ctx c = {.phase = MC_PH_PATTERN, .heap = m->o.pattern_heap_bytes,
                         .flags = MC_F_SHUFFLE};
    uint64_t sizes = m->o.seed ^ phase_salt[MC_PH_PATTERN];
    uint64_t t0 = tk_clock_ns();
    int rc = 0;
    t->pattern.ran = true;   /* its tests so far count, should the process die */
    progress_begin(m, m->o.pattern_rounds);
    for (uint32_t r = 0; r < m->o.pattern_rounds && rc == 0; r++) {
        tk_rt_breather(&m->rt);
        c.index = r;
        c.block = draw_block(m, &sizes, c.heap);
        mark_test(t, &c);
        rc = pattern_test(m, t, &c, test_seed(m->o.seed, MC_PH_PATTERN, r));
        progress_step(m, t, MC_PH_PATTERN, r + 1);
    }
    progress_end(m);
    t->pattern.seconds = (double)(tk_clock_ns() - t0) / 1e9;
    return rc;
}

/* ---- churn phase ----------------------------------------------------------------- */

static unsigned log2_floor(size_t v)
{
    return (unsigned)(sizeof(unsigned long long) * 8 - 1) - (unsigned)__builtin_clzll(v);
}

/* A churn request: each power-of-two octave from 16 B to the largest size
 * equally likely, uniform within it (many small blocks, some large ones). */
static uint32_t churn_size(uint64_t *rng, size_t max_bytes)
{
    unsigned lo = log2_floor(MC_CHURN_MIN_BYTES), hi = log2_floor(max_bytes);
    unsigned k = lo + (unsigned)tk_rng_below(rng, hi - lo + 1);
    size_t first = (size_t)1 << k, last = 2 * first - 1;
    if (last > max_bytes)
        last = max_bytes;
    return (uint32_t)(first + tk_rng_below(rng, last - first + 1));
}

size_t mc_churn_capacity(const struct memcheck *m)
{
    /* The ramp makes at most fill / 16 allocations. */
    return (size_t)m->o.churn_ops + m->o.churn_heap_bytes / MC_CHURN_MIN_BYTES + 1;
}

/*
 * The workload, generated before any timing: allocations until the next
 * one would take the live requested bytes above the target (the ramp), then
 * churn_ops operations: allocate the next size if it keeps the live bytes
 * at or below the target, else free a live block chosen at random. Returns
 * the number of operations; *ramp is the ramp's length.
 */
static size_t churn_generate(struct memcheck *m, size_t target, uint64_t seed, size_t *ramp)
{
    uint64_t rng = seed;
    uint32_t *live_sizes = m->sizes;   /* scratch until the run */
    size_t live = 0, live_bytes = 0, n = 0, steady = 0;
    uint32_t next = churn_size(&rng, m->o.churn_max_bytes);
    *ramp = 0;
    while (steady < m->o.churn_ops && n < m->churn_cap) {
        if (live_bytes + next <= target && live < m->blocks_cap) {
            m->churn_ops[n++] = next;
            live_sizes[live++] = next;
            live_bytes += next;
            next = churn_size(&rng, m->o.churn_max_bytes);
        } else {
            /* target >= the largest size (checked with the options), so
             * something is live here. */
            uint32_t v = (uint32_t)tk_rng_below(&rng, live);
            m->churn_ops[n++] = MC_OP_FREE | v;
            live_bytes -= live_sizes[v];
            live_sizes[v] = live_sizes[--live];
        }
        if (steady == 0 && !(m->churn_ops[n - 1] & MC_OP_FREE))
            (*ramp)++;
        else
            steady++;
    }
    return n;
}

/* Largest request that fits now, by bisection on [0, free_bytes] (untimed;
 * allocation success is taken to be monotonic in size). */
static size_t largest_fit(struct tk_alloc *a, size_t free_bytes, struct probe *pr)
{
    size_t lo = 0, hi = free_bytes;
    while (lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        if (probe_fits(a, mid, pr))
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Free bytes for a fragmentation sample: the heap's statistics; for a heap
 * without statistics, its memory less the usable bytes of the live blocks
 * (its metadata, unknown, counts as free); for a process allocator, the
 * bytes of the span the churn's blocks occupy that
 * no live block covers (the probe counts only blocks inside that span),
 * the span taken as at most the budget H: an allocator with size-class
 * regions far apart (or a sanitizer's) spreads its blocks over a span of
 * terabytes, and no probe may ask for more than H. */
static size_t churn_free_bytes(const struct tk_alloc *a, const struct rtm_heap_stats *st,
                               bool have_stats, size_t live_bytes, const struct probe *span)
{
    if (have_stats)
        return st->free_bytes;
    if (a->sort == TK_HEAP)
        return a->cur.usable_bytes > live_bytes ? a->cur.usable_bytes - live_bytes : 0;
    size_t bytes = span->hi > span->lo ? (size_t)(span->hi - span->lo) : 0;
    if (bytes > a->cur.usable_bytes)
        bytes = a->cur.usable_bytes;
    return bytes > live_bytes ? bytes - live_bytes : 0;
}

/* One fragmentation sample (untimed). For heaps with statistics, also
 * checks their promise that largest_free_bytes can be allocated now. */
static int churn_sample(struct mc_target *t, const struct test_ctx *c, uint64_t op,
                        size_t live_bytes, struct probe *pr)
{
    struct tk_alloc *a = &t->a;
    struct mc_churn *ch = &t->churn;
    struct rtm_heap_stats st;
    bool have_stats = tk_alloc_stats(a, &st) == 0;
    if (have_stats && st.largest_free_bytes > 0) {
        void *p = a->alloc(a->ctx, st.largest_free_bytes);
        if (!p)
            return failf(t, c, "after %llu ops, largest_free_bytes (%zu) cannot be allocated, "
                               "though rtm_heap_stats promises it can",
                         (unsigned long long)op, st.largest_free_bytes);
        if (a->free(a->ctx, p) != 0)
            return failf(t, c, "free refused a probe's block");
    }
    size_t free_bytes = churn_free_bytes(a, &st, have_stats, live_bytes, pr);
    size_t largest = largest_fit(a, free_bytes, pr);
    if (pr->free_refused)
        return failf(t, c, "free refused a probe's block");
    if (ch->n_samples < ch->cap_samples) {
        struct mc_frag_sample *s = &ch->samples[ch->n_samples++];
        s->op = op;
        s->free_bytes = free_bytes;
        s->largest_bytes = largest;
        s->frag_pct = free_bytes ? 100.0 * (1.0 - (double)largest / (double)free_bytes) : 0.0;
    }
    return 0;
}

struct churn_state {
    size_t live;           /* entries of m->blocks / m->sizes */
    size_t live_bytes;     /* usable bytes of the live blocks (without statistics) */
    struct probe span;     /* TK_PROCESS: the blocks' address span */
};

/* One churn operation, the call alone timed; recorded if steady. */
static int churn_op(struct memcheck *m, struct mc_target *t, const struct test_ctx *c,
                    uint32_t op, bool steady, struct churn_state *cs)
{
    struct tk_alloc *a = &t->a;
    struct mc_churn *ch = &t->churn;
    if (op & MC_OP_FREE) {
        uint32_t v = op & ~MC_OP_FREE;
        void *p = m->blocks[v];
        size_t size = m->sizes[v];
        cs->live--;
        m->blocks[v] = m->blocks[cs->live];
        m->sizes[v] = m->sizes[cs->live];
        if (!p) {
            ch->skipped_frees += steady;
            return 0;
        }
        uint64_t t0 = tk_timer_start();
        int rc = a->free(a->ctx, p);
        uint64_t t1 = tk_timer_end();
        if (steady)
            tk_samples_add(&m->free_s, t1 - t0);
        if (rc != 0)
            return failf(t, c, "free refused a live block (%p)", p);
        ch->frees += steady;
        cs->live_bytes -= size;
        return 0;
    }
    uint64_t t0 = tk_timer_start();
    void *p = a->alloc(a->ctx, op);
    uint64_t t1 = tk_timer_end();
    /* Without statistics, live blocks are counted by usable size (see
     * churn_free_bytes). */
    size_t bytes = p && !(a->applies & TK_APPLY_STATS) ? a->usable_size(a->ctx, p) : 0;
    m->blocks[cs->live] = p;
    m->sizes[cs->live] = (uint32_t)bytes;
    cs->live++;
    if (!p) {
        double ns = (double)(t1 - t0) * m->timer.ns_per_tick;
        ch->failed_allocs++;
        if (!(ch->failed_max_ns >= ns))
            ch->failed_max_ns = ns;
        return 0;
    }
    if (steady) {
        tk_samples_add(&m->alloc_s, t1 - t0);
        ch->allocs++;
    } else {
        ch->ramp_allocs++;
    }
    cs->live_bytes += bytes;
    if (!tk_alloc_block_ok(a, p, op))
        return failf(t, c, "block %p (%u B) is outside the heap's memory or misaligned", p, op);
    if ((uintptr_t)p < cs->span.lo)
        cs->span.lo = (uintptr_t)p;
    if ((uintptr_t)p + (bytes ? bytes : op) > cs->span.hi)
        cs->span.hi = (uintptr_t)p + (bytes ? bytes : op);
    return 0;
}

static int churn_drain(struct mc_target *t, const struct test_ctx *c, struct memcheck *m,
                       struct churn_state *cs)
{
    struct tk_alloc *a = &t->a;
    while (cs->live > 0) {
        void *p = m->blocks[--cs->live];
        if (p && a->free(a->ctx, p) != 0)
            return failf(t, c, "free refused a live block (%p) while draining", p);
    }
    return 0;
}

static void churn_summaries(struct memcheck *m, struct mc_churn *ch)
{
    struct tk_samples *s[2] = {&m->alloc_s, &m->free_s};
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < s[k]->n; i++)
            s[k]->v[i] = s[k]->v[i] > m->sub_ticks ? s[k]->v[i] - m->sub_ticks : 0;
    tk_samples_summarize(&m->alloc_s, m->timer.ns_per_tick, &ch->alloc);
    tk_samples_summarize(&m->free_s, m->timer.ns_per_tick, &ch->free);
}

int mc_run_churn(struct memcheck *m, struct mc_target *t)
{
    struct tk_alloc *a = &t->a;
    struct mc_churn *ch = &t->churn;
    struct test_ctx c = {.phase = MC_PH_CHURN, .heap = m->o.churn_heap_bytes};
    uint64_t t0 = tk_clock_ns();
    mark_test(t, &c);
    if (create_heap(m, t, &c) != 0)
        return -1;
    size_t target = a->cur.usable_bytes / 100 * m->o.churn_fill_pct, ramp;
    size_t n = churn_generate(m, target, m->o.seed ^ phase_salt[MC_PH_CHURN], &ramp);
    uint64_t every = m->o.churn_sample_every ? m->o.churn_sample_every
                                             : (m->o.churn_ops >= 100 ? m->o.churn_ops / 100 : 1);
    struct churn_state cs = {.span = {.use_span = a->sort == TK_PROCESS, .lo = UINTPTR_MAX}};

    ch->heap_bytes = a->cur.usable_bytes;
    ch->failed_max_ns = NAN;
    tk_samples_reset(&m->alloc_s);
    tk_samples_reset(&m->free_s);
    progress_begin(m, n);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        bool steady = i >= ramp;
        rc = churn_op(m, t, &c, m->churn_ops[i], steady, &cs);
        if (rc == 0 && steady && (i - ramp + 1) % every == 0) {
            rc = churn_sample(t, &c, i - ramp + 1, cs.live_bytes, &cs.span);
            tk_rt_breather(&m->rt);
        }
        if ((i & (CHURN_OPS_PER_MARK - 1)) == 0) {
            progress_step(m, t, MC_PH_CHURN, i);
            tk_child_beat(&t->beat);
        }
    }
    progress_end(m);
    ch->ops = n > ramp ? n - ramp : 0;
    if (rc == 0)
        rc = churn_drain(t, &c, m, &cs);
    if (rc == 0)
        rc = check_empty(t, &c);
    churn_summaries(m, ch);
    tk_alloc_destroy(a);
    ch->seconds = (double)(tk_clock_ns() - t0) / 1e9;
    ch->ran = true;
    return rc;
}
