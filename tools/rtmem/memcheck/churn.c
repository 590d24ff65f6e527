/*
 * `rtmem memcheck`: the churn phase, which smokey does not have:
 * interleaved alloc/free of mixed sizes at a steady fill level, what
 * long-running real-time systems do. Latency percentiles of the timed
 * calls, failing allocations counted apart, fragmentation sampled over
 * time. Its run, its text table and its JSON.
 */
#include <math.h>
#include <string.h>

#include "common/child.h"
#include "common/out.h"
#include "common/rng.h"
#include "memcheck.h"

/* The workload: an operation is a request size, or MC_OP_FREE | index of
 * the victim in the array of live blocks (swap-remove). */
#define MC_OP_FREE         0x80000000u
#define MC_CHURN_MIN_BYTES ((size_t)16)

/* A progress mark every this many operations (a power of two). */
#define CHURN_OPS_PER_MARK 65536u

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
    return (size_t)m->o->churn_ops + m->o->churn_heap_bytes / MC_CHURN_MIN_BYTES + 1;
}

/*
 * The workload, generated before any timing: allocations until the next
 * one would take the live requested bytes above the target (the ramp), then
 * churn_ops operations: allocate the next size if it keeps the live bytes
 * at or below the target, else free a live block chosen at random. Returns
 * the number of operations; *ramp is the ramp's length, *live_end the
 * blocks live at the end (what the drain frees).
 */
static size_t churn_generate(struct memcheck *m, size_t target, uint64_t seed, size_t *ramp,
                             size_t *live_end)
{
    uint64_t rng = seed;
    uint32_t *live_sizes = m->sizes; /* scratch until the run */
    size_t live = 0, live_bytes = 0, n = 0, steady = 0;
    uint32_t next = churn_size(&rng, m->o->churn_max_bytes);
    *ramp = 0;
    while (steady < m->o->churn_ops && n < m->churn_cap) {
        if (live_bytes + next <= target && live < m->blocks_cap) {
            m->churn_ops[n++] = next;
            live_sizes[live++] = next;
            live_bytes += next;
            next = churn_size(&rng, m->o->churn_max_bytes);
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
    *live_end = live;
    return n;
}

/* Largest request that fits now, by bisection on [0, free_bytes] (untimed;
 * allocation success is taken to be monotonic in size). */
static size_t largest_fit(struct tk_alloc *a, size_t free_bytes, struct mc_probe *pr)
{
    size_t lo = 0, hi = free_bytes;
    while (lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        if (mc_probe_fits(a, mid, pr))
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
                               bool have_stats, size_t live_bytes, const struct mc_probe *span)
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
static int churn_sample(struct mc_target *t, const struct mc_test *c, uint64_t op,
                        size_t live_bytes, struct mc_probe *pr)
{
    struct tk_alloc *a = &t->a;
    struct mc_churn *ch = &t->churn;
    struct rtm_heap_stats st;
    bool have_stats = tk_alloc_stats(a, &st) == 0;
    if (have_stats && st.largest_free_bytes > 0) {
        void *p = a->alloc(a->ctx, st.largest_free_bytes);
        if (!p)
            return mc_failf(t, c,
                            "after %llu ops, largest_free_bytes (%zu) cannot be allocated, "
                            "though rtm_heap_stats promises it can",
                            (unsigned long long)op, st.largest_free_bytes);
        if (a->free(a->ctx, p) != 0)
            return mc_failf(t, c, "free refused a probe's block");
    }
    size_t free_bytes = churn_free_bytes(a, &st, have_stats, live_bytes, pr);
    size_t largest = largest_fit(a, free_bytes, pr);
    if (pr->free_refused)
        return mc_failf(t, c, "free refused a probe's block");
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
    size_t live;          /* entries of m->blocks / m->sizes */
    size_t live_bytes;    /* usable bytes of the live blocks (without statistics) */
    struct mc_probe span; /* TK_PROCESS: the blocks' address span */
};

/* One churn operation, the call alone timed; recorded if steady. */
static int churn_op(struct memcheck *m, struct mc_target *t, const struct mc_test *c, uint32_t op,
                    bool steady, struct churn_state *cs)
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
            return mc_failf(t, c, "free refused a live block (%p)", p);
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
        return mc_failf(t, c, "block %p (%u B) is outside the heap's memory or misaligned", p, op);
    if ((uintptr_t)p < cs->span.lo)
        cs->span.lo = (uintptr_t)p;
    if ((uintptr_t)p + (bytes ? bytes : op) > cs->span.hi)
        cs->span.hi = (uintptr_t)p + (bytes ? bytes : op);
    return 0;
}

/* One sample of what the heap holds against what it uses (untimed), if it
 * holds a heap of its own and there is room. */
static void held_sample(struct mc_target *t, uint64_t op, enum mc_held_stage stage)
{
    struct mc_churn *ch = &t->churn;
    struct rtm_heap_stats st;
    size_t held;
    if (ch->n_held >= MC_HELD_SAMPLES || !tk_alloc_held(&t->a, &held) ||
        tk_alloc_stats(&t->a, &st) != 0)
        return;
    ch->held[ch->n_held++] = (struct mc_held_sample){ op, stage, st.used_bytes, held };
}

/* Frees every live block, the last allocated first, a held sample every
 * `every` operations (op counts on from the churn's) and one at the end. */
static int churn_drain(struct mc_target *t, const struct mc_test *c, struct memcheck *m,
                       struct churn_state *cs, uint64_t op, uint64_t every)
{
    struct tk_alloc *a = &t->a;
    while (cs->live > 0) {
        void *p = m->blocks[--cs->live];
        if (p && a->free(a->ctx, p) != 0)
            return mc_failf(t, c, "free refused a live block (%p) while draining", p);
        if (++op % every == 0 && cs->live > 0)
            held_sample(t, op, MC_HELD_SHRINK);
    }
    held_sample(t, op, MC_HELD_SHRINK);
    return 0;
}

static void churn_summaries(struct memcheck *m, struct mc_churn *ch)
{
    struct tk_samples *s[2] = { &m->alloc_s, &m->free_s };
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
    struct mc_test c = { .phase = MC_PH_CHURN, .heap = m->o->churn_heap_bytes };
    uint64_t t0 = tk_clock_ns();
    mc_mark_test(t, &c);
    if (mc_create_heap(m, t, &c) != 0)
        return -1;
    size_t target = a->cur.usable_bytes / 100 * m->o->churn_fill_pct, ramp, live_end;
    size_t n = churn_generate(m, target, m->o->seed ^ mc_phase_salt[MC_PH_CHURN], &ramp, &live_end);
    /* held samples spread over the whole run, the drain's frees included */
    uint64_t held_every = (n + live_end) / (MC_HELD_SAMPLES - 3) + 1;
    uint64_t every = m->o->churn_sample_every
                         ? m->o->churn_sample_every
                         : (m->o->churn_ops >= 100 ? m->o->churn_ops / 100 : 1);
    struct churn_state cs = { .span = { .use_span = a->sort == TK_PROCESS, .lo = UINTPTR_MAX } };

    ch->heap_bytes = a->cur.usable_bytes;
    ch->failed_max_ns = NAN;
    ch->n_held = 0;
    held_sample(t, 0, MC_HELD_GROWTH);
    tk_samples_reset(&m->alloc_s);
    tk_samples_reset(&m->free_s);
    mc_progress_begin(m, n);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        bool steady = i >= ramp;
        rc = churn_op(m, t, &c, m->churn_ops[i], steady, &cs);
        if (rc == 0 && ((i + 1) % held_every == 0 || i + 1 == ramp))
            held_sample(t, i + 1, steady ? MC_HELD_STEADY : MC_HELD_GROWTH);
        if (rc == 0 && steady && (i - ramp + 1) % every == 0) {
            rc = churn_sample(t, &c, i - ramp + 1, cs.live_bytes, &cs.span);
            tk_rt_breather(&m->rt);
        }
        if ((i & (CHURN_OPS_PER_MARK - 1)) == 0) {
            mc_progress_step(m, t, MC_PH_CHURN, i);
            tk_child_beat(&t->beat);
        }
    }
    mc_progress_end(m);
    ch->ops = n > ramp ? n - ramp : 0;
    if (rc == 0)
        rc = churn_drain(t, &c, m, &cs, n, held_every);
    if (rc == 0)
        rc = mc_check_empty(t, &c);
    churn_summaries(m, ch);
    tk_alloc_destroy(a);
    ch->seconds = (double)(tk_clock_ns() - t0) / 1e9;
    ch->ran = true;
    return rc;
}

/* ---- text ---------------------------------------------------------------------- */

static void print_churn_row(FILE *f, int w, const char *name, const char *op,
                            const struct tk_summary *s, const char *extra)
{
    char b[8][32];
    fprintf(f, "  %-*s %-5s %9zu %8s %7s %7s %7s %8s %8s  %s\n", w, name, op, s->count,
            tk_fmt_double(b[0], 32, s->mean, 1), tk_fmt_double(b[1], 32, s->p50, 0),
            tk_fmt_double(b[2], 32, s->p99, 0), tk_fmt_double(b[3], 32, s->p999, 0),
            tk_fmt_double(b[4], 32, s->p9999, 0), tk_fmt_double(b[5], 32, s->max, 0), extra);
}

/* Ten samples evenly spaced over the run, the last one included. */
static void print_frag_series(FILE *f, const struct mc_churn *ch)
{
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    for (size_t i = 0; i < ch->n_samples; i++) {
        double v = ch->samples[i].frag_pct;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        sum += v;
    }
    if (ch->n_samples == 0) {
        fprintf(f, "no sample\n");
        return;
    }
    fprintf(f, "min %.1f avg %.1f max %.1f |", lo, sum / (double)ch->n_samples, hi);
    for (size_t k = 1; k <= 10 && k <= ch->n_samples; k++) {
        size_t i = ch->n_samples * k / (ch->n_samples < 10 ? ch->n_samples : 10) - 1;
        fprintf(f, " %.1f", ch->samples[i].frag_pct);
    }
    fputc('\n', f);
}

/* Memory held against used: at the end of the growth, the steady state's
 * means, and after the drain (KiB). */
static void print_held(FILE *f, const struct memcheck *m, int w)
{
    fprintf(f, "  memory held (rtm_heap_held_bytes) against used (live blocks and headers), KiB: "
               "end of growth, steady mean, after the drain\n");
    for (size_t i = 0; i < m->n_t; i++) {
        const struct mc_churn *ch = &m->t[i].churn;
        if (!ch->ran)
            continue;
        fprintf(f, "  %-*s ", w, m->t[i].a.name);
        if (ch->n_held == 0) {
            fprintf(f, "- (no heap of its own to measure)\n");
            continue;
        }
        const struct mc_held_sample *grown = &ch->held[0], *last = &ch->held[ch->n_held - 1];
        double used = 0, held = 0;
        size_t steady = 0;
        for (size_t k = 0; k < ch->n_held; k++) {
            const struct mc_held_sample *s = &ch->held[k];
            if (s->stage == MC_HELD_GROWTH)
                grown = s;
            if (s->stage == MC_HELD_STEADY) {
                used += (double)s->used_bytes;
                held += (double)s->held_bytes;
                steady++;
            }
        }
        fprintf(f, "used %.0f held %.0f | used %.0f held %.0f | held %.0f\n",
                (double)grown->used_bytes / 1024, (double)grown->held_bytes / 1024,
                steady ? used / (double)steady / 1024 : 0.0,
                steady ? held / (double)steady / 1024 : 0.0, (double)last->held_bytes / 1024);
    }
}

void mc_churn_print(FILE *f, const struct memcheck *m)
{
    bool any = false;
    for (size_t i = 0; i < m->n_t; i++)
        any = any || m->t[i].churn.ran;
    if (!any)
        return;
    char sz[32];
    fprintf(f,
            "\n== churn: heap %s, steady fill %u%% of it in requested bytes, requests "
            "16..%zu B (each power-of-two\n   octave equally likely), %llu operations after "
            "an untimed ramp; fragmentation sampled every %llu ops\n",
            mc_fmt_size(sz, sizeof(sz), m->o->churn_heap_bytes), m->o->churn_fill_pct,
            m->o->churn_max_bytes, (unsigned long long)m->o->churn_ops,
            (unsigned long long)(m->o->churn_sample_every
                                     ? m->o->churn_sample_every
                                     : (m->o->churn_ops >= 100 ? m->o->churn_ops / 100 : 1)));
    int w = mc_name_width(m);
    fprintf(f, "  %-*s %-5s %9s %8s %7s %7s %7s %8s %8s  %s\n", w, "allocator", "op", "count",
            "avg", "p50", "p99", "p99.9", "p99.99", "max", "(ns)");
    for (size_t i = 0; i < m->n_t; i++) {
        const struct mc_churn *ch = &m->t[i].churn;
        if (!ch->ran)
            continue;
        char extra[96];
        snprintf(extra, sizeof(extra), "failed allocs: %llu",
                 (unsigned long long)ch->failed_allocs);
        print_churn_row(f, w, m->t[i].a.name, "alloc", &ch->alloc, extra);
        print_churn_row(f, w, "", "free", &ch->free, "");
    }
    fprintf(f, "  FRAG%% over time, 100 * (1 - largest request that fits / free bytes): "
               "min avg max | 10 samples in order\n");
    for (size_t i = 0; i < m->n_t; i++) {
        if (!m->t[i].churn.ran)
            continue;
        fprintf(f, "  %-*s ", w, m->t[i].a.name);
        if (mc_is_process(&m->t[i]))
            fprintf(f,
                    "- (does not apply: a process allocator's free memory is whatever its "
                    "heap holds from before;\n  %*s the raw samples, inside the span of "
                    "its churn blocks, are in the JSON)\n",
                    w, "");
        else if (!(m->t[i].a.applies & TK_APPLY_STATS))
            fprintf(f, "- (does not apply: no stats, so its free bytes are unknown; estimates "
                       "in the JSON)\n");
        else
            print_frag_series(f, &m->t[i].churn);
    }
    print_held(f, m, w);
}

/* ---- JSON ---------------------------------------------------------------------- */

void mc_churn_json(struct tk_json *j, const struct mc_churn *ch, bool frag_applies)
{
    if (!tk_json_key_or_null(j, "churn", ch->ran))
        return;
    tk_json_begin_object(j);
    tk_json_kv_uint(j, "heap_bytes", ch->heap_bytes);
    tk_json_kv_double(j, "seconds", ch->seconds);
    tk_json_kv_uint(j, "ramp_allocs", ch->ramp_allocs);
    tk_json_kv_uint(j, "ops", ch->ops);
    tk_json_kv_uint(j, "allocs", ch->allocs);
    tk_json_kv_uint(j, "frees", ch->frees);
    tk_json_kv_uint(j, "failed_allocs", ch->failed_allocs);
    tk_json_kv_double(j, "failed_alloc_max_ns", ch->failed_max_ns);
    tk_json_kv_uint(j, "skipped_frees", ch->skipped_frees);
    /* A process allocator's samples depend on what its heap held before;
     * without statistics a heap's free bytes are an estimate. */
    tk_json_kv_bool(j, "frag_applies", frag_applies);
    /* held: what the heap holds at each sample (none for an allocator
     * without a heap of its own); stage 0 growth, 1 steady, 2 drain */
    tk_json_key(j, "held_columns");
    tk_json_begin_array_compact(j);
    tk_json_string(j, "op");
    tk_json_string(j, "stage");
    tk_json_string(j, "used_bytes");
    tk_json_string(j, "held_bytes");
    tk_json_end_array(j);
    tk_json_key(j, "held_samples");
    tk_json_begin_array(j);
    for (size_t i = 0; i < ch->n_held; i++) {
        const struct mc_held_sample *s = &ch->held[i];
        tk_json_begin_array_compact(j);
        tk_json_uint(j, s->op);
        tk_json_uint(j, s->stage);
        tk_json_uint(j, s->used_bytes);
        tk_json_uint(j, s->held_bytes);
        tk_json_end_array(j);
    }
    tk_json_end_array(j);
    tk_summary_json(j, "alloc", "avg_ns", &ch->alloc);
    tk_summary_json(j, "free", "avg_ns", &ch->free);
    tk_json_key(j, "frag_columns");
    tk_json_begin_array_compact(j);
    tk_json_string(j, "op");
    tk_json_string(j, "free_bytes");
    tk_json_string(j, "largest_fit_bytes");
    tk_json_string(j, "frag_pct");
    tk_json_end_array(j);
    tk_json_key(j, "frag_samples");
    tk_json_begin_array(j);
    for (size_t i = 0; i < ch->n_samples; i++) {
        const struct mc_frag_sample *s = &ch->samples[i];
        tk_json_begin_array_compact(j);
        tk_json_uint(j, s->op);
        tk_json_uint(j, s->free_bytes);
        tk_json_uint(j, s->largest_bytes);
        mc_json_num(j, s->frag_pct, 0.001);
        tk_json_end_array(j);
    }
    tk_json_end_array(j);
    tk_json_end_object(j);
}
