/*
 * `rtmem memcheck`: the sequential phases, as smokey's test_seq: power-of-two
 * block sizes (pow2) and random ones (random). Their run (timed fills and
 * frees, the checks, one row per test), their text (tables sorted by each
 * metric, the overall lines) and their JSON.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "common/out.h"
#include "common/rng.h"
#include "memcheck.h"

/* ---- timed passes ---------------------------------------------------------- */

struct pass {
    size_t n;            /* blocks allocated */
    bool failed_alloc;   /* the fill ended on a failing allocation */
    uint64_t fail_ticks; /* its time */
    size_t usable_sum;   /* sum of usable sizes of the fill */
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

/* Smokey's probe, untimed: the largest of freed, freed - b, freed - 2b, ...
 * that can be allocated now. 0 if none can (smokey returns the last size
 * tried, unverified; --compat does too). */
static void probe_fragmentation(const struct memcheck *m, struct tk_alloc *a, size_t freed,
                                size_t b, struct mc_probe *pr)
{
    size_t s = freed;
    pr->done = true;
    pr->maximum_free = freed;
    for (;;) {
        if (mc_probe_fits(a, s, pr))
            break;
        if (s <= b) {
            s = m->o->compat ? s : 0;
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
                         struct mc_probe *pr)
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
static int check_count(struct mc_target *t, const struct mc_test *c, size_t n, size_t maxblocks)
{
    struct tk_alloc *a = &t->a;
    if (!(a->applies & TK_APPLY_FILL_TO_FAILURE)) {
        if (n != maxblocks)
            return mc_failf(t, c, "the allocator returned NULL after %zu of %zu requests", n,
                            maxblocks);
        return 0;
    }
    if (n > maxblocks)
        return mc_failf(t, c, "too many blocks fetched: more than H/B = %zu", maxblocks);
    size_t promised = tk_alloc_fill_count(a, c->block);
    if (promised && n < promised) {
        if (promised * c->block == a->cur.usable_bytes)
            return mc_failf(t, c,
                            "unexpected overhead: %zu blocks, but the kind promises zero overhead "
                            "for %zu-byte blocks (%zu blocks)",
                            n, c->block, promised);
        return mc_failf(t, c,
                        "%zu blocks, fewer than the %zu the kind documents for a fresh heap "
                        "(rtm_heap_fill_count)",
                        n, promised);
    }
    return 0;
}

/* Bounds, alignment and usable size of every block of a fill; their span. */
static int inspect_fill(struct memcheck *m, struct mc_target *t, const struct mc_test *c,
                        size_t size, struct pass *ps, struct mc_probe *pr)
{
    struct tk_alloc *a = &t->a;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    size_t sum = 0;
    for (size_t i = 0; i < ps->n; i++) {
        void *p = m->blocks[i];
        if (!tk_alloc_block_ok(a, p, size))
            return mc_failf(t, c,
                            "block #%zu at %p (%zu B) is outside the heap's memory or "
                            "misaligned",
                            i, p, size);
        size_t us = a->usable_size(a->ctx, p);
        if (us < size)
            return mc_failf(t, c, "usable size %zu of block #%zu is below its request of %zu B", us,
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

static int free_all(struct memcheck *m, struct mc_target *t, const struct mc_test *c, size_t n,
                    struct mc_probe *pr)
{
    size_t done = timed_free(m, &t->a, n, c->block, pr);
    if (done < n)
        return mc_failf(t, c, "free refused block #%zu of %zu (%p)", done, n, m->blocks[done]);
    if (pr && pr->free_refused)
        return mc_failf(t, c, "free refused a fragmentation probe's block");
    return 0;
}

/* ---- rows -------------------------------------------------------------------- */

/* Subtracts the timer overhead if asked (clamped at 0) and summarizes a
 * pass: mean over divisor calls, p99 and max, in ns. */
static void summarize(const struct memcheck *m, struct tk_samples *s, size_t divisor, double *avg,
                      double *p99, double *max)
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
    if (m->o->compat)
        *avg = floor(*avg); /* smokey keeps integer nanoseconds */
    *p99 = (double)tk_samples_percentile(s, 0.99) * npt;
    *max = (double)mx * npt;
}

static void make_row(struct memcheck *m, const struct tk_alloc *a, const struct mc_test *c,
                     const struct pass *ps, const struct mc_probe *pr, struct mc_row *row)
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
        if (m->o->compat)
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
static int seq_test(struct memcheck *m, struct mc_target *t, const struct mc_test *c, uint64_t rng,
                    struct mc_row *row)
{
    struct tk_alloc *a = &t->a;
    if (mc_create_heap(m, t, c) != 0)
        return -1;
    size_t b = c->block, maxblocks = a->cur.usable_bytes / b;
    /* One more than H/B for a heap, so a fill that gets too many shows. */
    size_t limit = a->applies & TK_APPLY_FILL_TO_FAILURE ? maxblocks + 1 : maxblocks;
    struct pass p1 = { 0 }, p2 = { 0 };
    struct mc_probe pr = { .use_span = a->sort == TK_PROCESS };
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
            mc_failf(t, c, "different block count in the hot pass: %zu, against %zu in the first",
                     p2.n, p1.n);
            goto out;
        }
        if (inspect_fill(m, t, c, b, &p2, NULL) != 0)
            goto out;
        /* Smokey frees the hot pass in allocation order even when shuffling. */
        if ((c->flags & MC_F_SHUFFLE) && !m->o->compat)
            tk_rng_shuffle(m->blocks, p2.n, sizeof(*m->blocks), &rng);
        if (free_all(m, t, c, p2.n, NULL) != 0)
            goto out;
        rep = &p2;
    }
    if (mc_check_empty(t, c) != 0)
        goto out;
    make_row(m, a, c, rep, &pr, row);
    rc = 0;
out:
    tk_alloc_destroy(a);
    return rc;
}

/* Smokey's variants, in its order. */
static const unsigned variants[4] = { 0, MC_F_HOT, MC_F_SHUFFLE, MC_F_SHUFFLE | MC_F_HOT };

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
                                 : 4 * (size_t)m->o->random_rounds;
    return n;
}

static int run_one(struct memcheck *m, struct mc_target *t, struct mc_test *c)
{
    struct mc_seq *sq = &t->seq[c->phase];
    tk_rt_breather(&m->rt);
    c->index = sq->n;
    mc_mark_test(t, c);
    if (seq_test(m, t, c, mc_test_seed(m->o->seed, c->phase, c->index), &sq->rows[sq->n]) != 0)
        return -1;
    sq->n++;
    mc_progress_step(m, t, c->phase, sq->n);
    return 0;
}

/* Power-of-two phase, in smokey's order: per heap size, each variant over
 * every block size. */
static int run_pow2(struct memcheck *m, struct mc_target *t)
{
    struct mc_test c = { .phase = MC_PH_POW2 };
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
    struct mc_test c = { .phase = MC_PH_RANDOM };
    uint64_t sizes = m->o->seed ^ mc_phase_salt[MC_PH_RANDOM];
    for (unsigned v = 0; v < 4; v++)
        for (size_t i = 0; i < m->n_heap_sizes; i++)
            for (uint32_t r = 0; r < m->o->random_rounds; r++) {
                c.heap = m->heap_sizes[i];
                c.block = mc_draw_block(m, &sizes, c.heap);
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
    sq->ran = true; /* its rows so far count, should the process die */
    long f0 = minor_faults();
    mc_progress_begin(m, mc_seq_tests(m, phase));
    int rc = phase == MC_PH_POW2 ? run_pow2(m, t) : run_random(m, t);
    mc_progress_end(m);
    long f1 = minor_faults();
    sq->seconds = (double)(tk_clock_ns() - t0) / 1e9;
    /* Memory an allocator takes from the kernel during the phase: under
     * mlockall(MCL_FUTURE) populated inside the timed call that grew it. */
    sq->minor_faults = f0 >= 0 && f1 >= f0 ? f1 - f0 : -1;
    return rc;
}

/* ---- overall lines: computed in the run, once every phase is done ------------------ */

/* Running mean of the finite values fed to it. */
struct mean {
    double sum;
    size_t n;
};

static void mean_add(struct mean *m, double v)
{
    if (isfinite(v)) {
        m->sum += v;
        m->n++;
    }
}

static double mean_of(const struct mean *m)
{
    return m->n ? m->sum / (double)m->n : NAN;
}

static void worst(double *w, double v)
{
    if (isfinite(v) && !(*w >= v))
        *w = v;
}

static void overall_of(const struct mc_seq *sq, struct mc_overall *o)
{
    struct mean mx_a = { 0 }, mx_f = { 0 }, av_a = { 0 }, av_f = { 0 }, ovh = { 0 }, frag = { 0 };
    struct mean p99_a = { 0 }, p99_f = { 0 }, fail = { 0 }, tovh = { 0 };
    memset(o, 0, sizeof(*o));
    o->tests = sq->n;
    o->worst_alloc_ns = o->worst_free_ns = o->worst_fail_alloc_ns = NAN;
    for (size_t i = 0; i < sq->n; i++) {
        const struct mc_row *r = &sq->rows[i];
        worst(&o->worst_alloc_ns, r->max_alloc_ns);
        worst(&o->worst_free_ns, r->max_free_ns);
        worst(&o->worst_fail_alloc_ns, r->fail_alloc_ns);
        mean_add(&mx_a, r->max_alloc_ns);
        mean_add(&mx_f, r->max_free_ns);
        mean_add(&av_a, r->avg_alloc_ns);
        mean_add(&av_f, r->avg_free_ns);
        mean_add(&ovh, r->overhead_pct);
        mean_add(&frag, r->frag_pct);
        mean_add(&p99_a, r->p99_alloc_ns);
        mean_add(&p99_f, r->p99_free_ns);
        mean_add(&fail, r->fail_alloc_ns);
        mean_add(&tovh, r->true_overhead_pct);
    }
    o->avg_max_alloc_ns = mean_of(&mx_a);
    o->avg_max_free_ns = mean_of(&mx_f);
    o->avg_alloc_ns = mean_of(&av_a);
    o->avg_free_ns = mean_of(&av_f);
    o->avg_overhead_pct = mean_of(&ovh);
    o->avg_frag_pct = mean_of(&frag);
    o->avg_p99_alloc_ns = mean_of(&p99_a);
    o->avg_p99_free_ns = mean_of(&p99_f);
    o->avg_fail_alloc_ns = mean_of(&fail);
    o->avg_true_overhead_pct = mean_of(&tovh);
}

void mc_compute_overall(struct memcheck *m)
{
    for (size_t i = 0; i < m->n_t; i++)
        for (int ph = MC_PH_POW2; ph <= MC_PH_RANDOM; ph++)
            overall_of(&m->t[i].seq[ph], &m->t[i].seq[ph].all);
}

/* ---- text ---------------------------------------------------------------------- */

static const char *const seq_titles[2] = {
    "SEQUENTIAL ALLOC->FREE, ^2 BLOCK SIZES",
    "SEQUENTIAL ALLOC->FREE, RANDOM BLOCK SIZES",
};

const char *mc_seq_title(enum mc_phase phase)
{
    return seq_titles[phase == MC_PH_RANDOM];
}

static const char *const sort_names[MC_SORT_KEYS] = {
    "alloc time", "free time", "overhead", "fragmentation", "heap size",
};

const char *mc_sort_name(enum mc_sort_key k)
{
    return sort_names[k];
}

/* Highest first, as smokey; NaN last; ties in run order (smokey's qsort
 * leaves them in any order). */
static int cmp_keyed(const void *l, const void *r)
{
    const struct mc_keyed *a = l, *b = r;
    bool na = isnan(a->key), nb = isnan(b->key);
    if (na != nb)
        return na - nb;
    if (!na && a->key != b->key)
        return a->key < b->key ? 1 : -1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

/* Smokey sorts overhead and fragmentation by bytes (heap - user, freed -
 * largest), which favours large heaps; rtmem by the percentages shown.
 * --compat sorts a heap's rows as smokey (a process allocator's overhead
 * in bytes would be H mod B, so its rows stay sorted by percentage). */
static double sort_value(const struct memcheck *m, const struct mc_target *t,
                         const struct mc_row *r, enum mc_sort_key k)
{
    bool bytes = m->o->compat && t->a.sort == TK_HEAP;
    switch (k) {
    case MC_BY_ALLOC: return r->max_alloc_ns;
    case MC_BY_FREE: return r->max_free_ns;
    case MC_BY_OVERHEAD:
        return bytes ? (double)r->heap_bytes - (double)r->user_bytes : r->overhead_pct;
    case MC_BY_FRAG: return bytes ? (double)r->maximum_free - (double)r->largest_free : r->frag_pct;
    case MC_BY_HEAP: return (double)r->heap_bytes;
    default: return NAN;
    }
}

struct mc_keyed *mc_sorted_rows(const struct memcheck *m, const struct mc_target *t,
                                const struct mc_seq *sq, enum mc_sort_key k)
{
    struct mc_keyed *v = malloc((sq->n ? sq->n : 1) * sizeof(*v));
    if (!v)
        return NULL;
    for (size_t i = 0; i < sq->n; i++) {
        v[i].key = sort_value(m, t, &sq->rows[i], k);
        v[i].idx = i;
    }
    qsort(v, sq->n, sizeof(*v), cmp_keyed);
    return v;
}

/* ---- the tables --------------------------------------------------------------- */

enum {
    C_HEAP,
    C_BLOCK,
    C_NR,
    C_AVG_A,
    C_AVG_F,
    C_P99_A,
    C_P99_F,
    C_MAX_A,
    C_MAX_F,
    C_FAIL_A,
    C_OVRH,
    C_TOVRH,
    C_FRAG,
    C_FLAGS,
    C_N
};

static const struct tk_col row_cols[C_N] = {
    { "HEAPSZ", 7, false }, { "BLOCKSZ", 7, false }, { "NRBLKS", 7, false }, { "AVG-A", 7, false },
    { "AVG-F", 7, false },  { "P99-A", 6, false },   { "P99-F", 6, false },  { "MAX-A", 6, false },
    { "MAX-F", 6, false },  { "FAIL-A", 6, false },  { "OVRH%", 5, false },  { "TOVRH%", 6, false },
    { "FRAG%", 5, false },  { "FLAGS", 14, true },
};

/* The columns shown: all but TOVRH% unless --true-overhead. */
static size_t shown_cols(const struct memcheck *m, struct tk_col *cols)
{
    size_t n = 0;
    for (size_t c = 0; c < C_N; c++)
        if (c != C_TOVRH || m->o->true_overhead)
            cols[n++] = row_cols[c];
    return n;
}

static void print_row(FILE *f, const struct memcheck *m, const struct mc_row *r)
{
    char buf[C_N][32];
    const char *cells[C_N];
    size_t n = 0;
    cells[n++] = mc_fmt_size(buf[C_HEAP], 32, r->heap_bytes);
    cells[n++] = tk_fmt_uint(buf[C_BLOCK], 32, r->block_bytes);
    cells[n++] = tk_fmt_uint(buf[C_NR], 32, r->nrblocks);
    cells[n++] = tk_fmt_double(buf[C_AVG_A], 32, r->avg_alloc_ns, 1);
    cells[n++] = tk_fmt_double(buf[C_AVG_F], 32, r->avg_free_ns, 1);
    cells[n++] = tk_fmt_double(buf[C_P99_A], 32, r->p99_alloc_ns, 0);
    cells[n++] = tk_fmt_double(buf[C_P99_F], 32, r->p99_free_ns, 0);
    cells[n++] = tk_fmt_double(buf[C_MAX_A], 32, r->max_alloc_ns, 0);
    cells[n++] = tk_fmt_double(buf[C_MAX_F], 32, r->max_free_ns, 0);
    cells[n++] = tk_fmt_double(buf[C_FAIL_A], 32, r->fail_alloc_ns, 0);
    cells[n++] = tk_fmt_double(buf[C_OVRH], 32, r->overhead_pct, 1);
    if (m->o->true_overhead)
        cells[n++] = tk_fmt_double(buf[C_TOVRH], 32, r->true_overhead_pct, 1);
    cells[n++] = tk_fmt_double(buf[C_FRAG], 32, r->frag_pct, 1);
    snprintf(buf[C_FLAGS], 32, "%s%s", r->flags & MC_F_SHUFFLE ? "+shuffle " : "",
             r->flags & MC_F_HOT ? "+hot" : "");
    cells[n++] = buf[C_FLAGS];
    struct tk_col cols[C_N];
    tk_table_row(f, cols, shown_cols(m, cols), cells);
}

static void print_sorted(FILE *f, const struct memcheck *m, const struct mc_target *t,
                         const struct mc_seq *sq, enum mc_sort_key k, size_t nr)
{
    struct mc_keyed *v = mc_sorted_rows(m, t, sq, k);
    if (!v) {
        fprintf(f, "(out of memory sorting by %s)\n", sort_names[k]);
        return;
    }
    struct tk_col cols[C_N];
    fprintf(f, "\nsorted by: max %s\n", sort_names[k]);
    tk_table_header(f, cols, shown_cols(m, cols));
    for (size_t i = 0; i < nr; i++)
        print_row(f, m, &sq->rows[v[i].idx]);
    if (nr < sq->n)
        fprintf(f, "  ... (%zu results following) ...\n", sq->n - nr);
    free(v);
}

static void print_tables(FILE *f, const struct memcheck *m, const struct mc_target *t,
                         const struct mc_seq *sq)
{
    if (m->o->max_results < 0) {
        print_sorted(f, m, t, sq, MC_BY_HEAP, sq->n);
        return;
    }
    size_t nr = (size_t)m->o->max_results < sq->n ? (size_t)m->o->max_results : sq->n;
    if (nr == 0)
        return;
    for (int k = MC_BY_ALLOC; k <= MC_BY_FRAG; k++)
        print_sorted(f, m, t, sq, (enum mc_sort_key)k, nr);
}

static const char *fmt_ns(char *buf, size_t size, double ns, int decimals)
{
    if (isfinite(ns))
        snprintf(buf, size, "%.*f ns", decimals, ns);
    else
        snprintf(buf, size, "-");
    return buf;
}

static const char *fmt_pct(char *buf, size_t size, double pct)
{
    if (isfinite(pct))
        snprintf(buf, size, "%.1f%%", pct);
    else
        snprintf(buf, size, "-");
    return buf;
}

static void print_overall(FILE *f, const struct mc_target *t, const struct mc_overall *o)
{
    char a[32], b[32], c[32];
    fprintf(f, "\noverall (%zu tests):\n", o->tests);
    fprintf(f, "  worst alloc time: %s\n", fmt_ns(a, 32, o->worst_alloc_ns, 0));
    fprintf(f, "  worst free time: %s\n", fmt_ns(a, 32, o->worst_free_ns, 0));
    fprintf(f, "  average of max. alloc times: %s\n", fmt_ns(a, 32, o->avg_max_alloc_ns, 1));
    fprintf(f, "  average of max. free times: %s\n", fmt_ns(a, 32, o->avg_max_free_ns, 1));
    fprintf(f, "  average alloc time: %s\n", fmt_ns(a, 32, o->avg_alloc_ns, 1));
    fprintf(f, "  average free time: %s\n", fmt_ns(a, 32, o->avg_free_ns, 1));
    char note[96] = "";
    if (mc_is_process(t))
        snprintf(note, sizeof(note), " (%s slack; headers not visible)", t->a.usable_name);
    else if (!(t->a.applies & TK_APPLY_STATS))
        snprintf(note, sizeof(note), " (H is the memory given to create: metadata included)");
    fprintf(f, "  average overhead: %s%s\n", fmt_pct(a, 32, o->avg_overhead_pct), note);
    fprintf(f, "  average fragmentation: %s%s\n", fmt_pct(a, 32, o->avg_frag_pct),
            mc_is_process(t) ? " (probes count only inside the fill's address span)" : "");
    fprintf(f, "  average p99 alloc / free time: %s / %s\n", fmt_ns(a, 32, o->avg_p99_alloc_ns, 1),
            fmt_ns(b, 32, o->avg_p99_free_ns, 1));
    if (t->a.applies & TK_APPLY_FILL_TO_FAILURE)
        fprintf(f, "  failing final allocation: worst %s, average %s\n",
                fmt_ns(a, 32, o->worst_fail_alloc_ns, 0), fmt_ns(c, 32, o->avg_fail_alloc_ns, 1));
    else
        fprintf(f, "  failing final allocation: none (fills stop at the budget)\n");
    fprintf(f, "  average true overhead (metadata outside H counted): %s\n",
            fmt_pct(a, 32, o->avg_true_overhead_pct));
}

void mc_seq_print_legend(FILE *f, const struct memcheck *m)
{
    fprintf(f,
            "\ncolumns: HEAPSZ usable heap size H | BLOCKSZ block size B | NRBLKS blocks "
            "allocated\n"
            "  AVG, P99, MAX -A/-F: time per alloc/free call in ns (the reported pass; +hot: "
            "the second)\n"
            "  FAIL-A: the failing final allocation of the fill, %s\n"
            "  OVRH%%: 100 - 100 * NRBLKS * B / H   FRAG%%: 100 * (1 - largest_free / freed), "
            "probed once at half-free\n",
            m->o->compat ? "ALSO counted in the alloc times (--compat, as smokey)"
                         : "not counted in the alloc times");
    /* The summary always has the column; the rows only with --true-overhead. */
    fprintf(f,
            "  TOVRH%%: true overhead, 100 - 100 * NRBLKS * B / (H + metadata outside H, "
            "stats.overhead_bytes)%s\n",
            m->o->true_overhead ? "" : "; in the rows with --true-overhead");
    fprintf(f,
            "  FLAGS: +shuffle randomized free; +hot measured on a second alloc/free pass on "
            "the same heap%s\n",
            m->o->compat ? " (freed in order, as smokey)" : " (freed shuffled too with +shuffle)");
    fprintf(f, "  process allocators (glibc, peers): OVRH%% is the slack their usable-size call "
               "shows; FAIL-A and TOVRH%% do not apply (\"-\")\n");
}

void mc_seq_print(FILE *f, const struct memcheck *m, const struct mc_target *t, enum mc_phase ph)
{
    const struct mc_seq *sq = &t->seq[ph];
    fprintf(f, "\n== %s: %s (%zu tests, %.1f s)%s\n", t->a.name, seq_titles[ph], sq->n, sq->seconds,
            t->fail.failed && t->fail.phase == ph ? " -- FAILED" : "");
    print_tables(f, m, t, sq);
    print_overall(f, t, &sq->all);
}

/* ---- JSON ---------------------------------------------------------------------- */

static const char *const row_columns[] = {
    "heap_bytes",
    "block_bytes",
    "nrblocks",
    "avg_alloc_ns",
    "avg_free_ns",
    "p99_alloc_ns",
    "p99_free_ns",
    "max_alloc_ns",
    "max_free_ns",
    "fail_alloc_ns",
    "overhead_pct",
    "true_overhead_pct",
    "frag_pct",
    "probe_freed_bytes",
    "probe_largest_bytes",
    "shuffle",
    "hot",
};

void mc_seq_json_columns(struct tk_json *j)
{
    tk_json_begin_array_compact(j);
    for (size_t c = 0; c < sizeof(row_columns) / sizeof(row_columns[0]); c++)
        tk_json_string(j, row_columns[c]);
    tk_json_end_array(j);
}

static void json_row(struct tk_json *j, const struct mc_row *r)
{
    tk_json_begin_array_compact(j);
    tk_json_uint(j, r->heap_bytes);
    tk_json_uint(j, r->block_bytes);
    tk_json_uint(j, r->nrblocks);
    const double ns[7] = { r->avg_alloc_ns, r->avg_free_ns, r->p99_alloc_ns, r->p99_free_ns,
                           r->max_alloc_ns, r->max_free_ns, r->fail_alloc_ns };
    for (int i = 0; i < 7; i++)
        mc_json_num(j, ns[i], 0.1);
    mc_json_num(j, r->overhead_pct, 0.001);
    mc_json_num(j, r->true_overhead_pct, 0.001);
    mc_json_num(j, r->frag_pct, 0.001);
    tk_json_uint(j, r->maximum_free);
    tk_json_uint(j, r->largest_free);
    tk_json_bool(j, r->flags & MC_F_SHUFFLE);
    tk_json_bool(j, r->flags & MC_F_HOT);
    tk_json_end_array(j);
}

static void json_overall(struct tk_json *j, const struct mc_overall *o)
{
    tk_json_key(j, "overall");
    tk_json_begin_object(j);
    tk_json_kv_uint(j, "tests", o->tests);
    tk_json_kv_double(j, "worst_alloc_ns", o->worst_alloc_ns);
    tk_json_kv_double(j, "worst_free_ns", o->worst_free_ns);
    tk_json_kv_double(j, "avg_max_alloc_ns", o->avg_max_alloc_ns);
    tk_json_kv_double(j, "avg_max_free_ns", o->avg_max_free_ns);
    tk_json_kv_double(j, "avg_alloc_ns", o->avg_alloc_ns);
    tk_json_kv_double(j, "avg_free_ns", o->avg_free_ns);
    tk_json_kv_double(j, "avg_overhead_pct", o->avg_overhead_pct);
    tk_json_kv_double(j, "avg_frag_pct", o->avg_frag_pct);
    tk_json_kv_double(j, "avg_p99_alloc_ns", o->avg_p99_alloc_ns);
    tk_json_kv_double(j, "avg_p99_free_ns", o->avg_p99_free_ns);
    tk_json_kv_double(j, "worst_fail_alloc_ns", o->worst_fail_alloc_ns);
    tk_json_kv_double(j, "avg_fail_alloc_ns", o->avg_fail_alloc_ns);
    tk_json_kv_double(j, "avg_true_overhead_pct", o->avg_true_overhead_pct);
    tk_json_end_object(j);
}

void mc_seq_json(struct tk_json *j, const struct mc_seq *sq, enum mc_phase ph, bool rows)
{
    if (!tk_json_key_or_null(j, mc_phase_name(ph), sq->ran))
        return;
    tk_json_begin_object(j);
    tk_json_kv_uint(j, "tests", sq->n);
    tk_json_kv_double(j, "seconds", sq->seconds);
    if (tk_json_key_or_null(j, "minor_faults", sq->minor_faults >= 0))
        tk_json_int(j, sq->minor_faults);
    json_overall(j, &sq->all);
    if (tk_json_key_or_null(j, "rows", rows)) {
        tk_json_begin_array(j);
        for (size_t i = 0; i < sq->n; i++)
            json_row(j, &sq->rows[i]);
        tk_json_end_array(j);
    }
    tk_json_end_object(j);
}
