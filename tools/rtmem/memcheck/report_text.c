/*
 * `rtmem memcheck`: tables, overall summaries, smokey's layout and the JSON.
 * Every figure comes from the stored rows; a figure that does not exist or
 * does not apply prints as "-" and is written as null.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "common/out.h"
#include "memcheck.h"

static const char *const phase_names[MC_PHASES] = {"pow2", "random", "pattern", "churn"};

const char *mc_phase_name(enum mc_phase phase)
{
    return phase < MC_PHASES ? phase_names[phase] : "?";
}

static const char *const seq_titles[2] = {
    "SEQUENTIAL ALLOC->FREE, ^2 BLOCK SIZES",
    "SEQUENTIAL ALLOC->FREE, RANDOM BLOCK SIZES",
};

static bool is_process(const struct mc_target *t)
{
    return t->a.sort == TK_PROCESS;
}

/* Width of the allocator-name column: the longest name, at least 9. */
static int name_width(const struct memcheck *m)
{
    size_t w = 9;
    for (size_t i = 0; i < m->n_t; i++)
        if (strlen(m->t[i].a.name) > w)
            w = strlen(m->t[i].a.name);
    return (int)w;
}

/* ---- overall lines ------------------------------------------------------------- */

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
    struct mean mx_a = {0}, mx_f = {0}, av_a = {0}, av_f = {0}, ovh = {0}, frag = {0};
    struct mean p99_a = {0}, p99_f = {0}, fail = {0}, tovh = {0};
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

/* ---- sorting ------------------------------------------------------------------- */

enum sort_key { BY_ALLOC, BY_FREE, BY_OVERHEAD, BY_FRAG, BY_HEAP, SORT_KEYS };

static const char *const sort_names[SORT_KEYS] = {
    "alloc time", "free time", "overhead", "fragmentation", "heap size",
};

struct keyed {
    double key;
    size_t idx;
};

/* Highest first, as smokey; NaN last; ties in run order (smokey's qsort
 * leaves them in any order). */
static int cmp_keyed(const void *l, const void *r)
{
    const struct keyed *a = l, *b = r;
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
                         const struct mc_row *r, enum sort_key k)
{
    bool bytes = m->o.compat && t->a.sort == TK_HEAP;
    switch (k) {
    case BY_ALLOC: return r->max_alloc_ns;
    case BY_FREE: return r->max_free_ns;
    case BY_OVERHEAD:
        return bytes ? (double)r->heap_bytes - (double)r->user_bytes : r->overhead_pct;
    case BY_FRAG:
        return bytes ? (double)r->maximum_free - (double)r->largest_free : r->frag_pct;
    case BY_HEAP: return (double)r->heap_bytes;
    default: return NAN;
    }
}

/* Indexes of the rows sorted by k (caller frees), or NULL. */
static struct keyed *sorted_rows(const struct memcheck *m, const struct mc_target *t,
                                 const struct mc_seq *sq, enum sort_key k)
{
    struct keyed *v = malloc((sq->n ? sq->n : 1) * sizeof(*v));
    if (!v)
        return NULL;
    for (size_t i = 0; i < sq->n; i++) {
        v[i].key = sort_value(m, t, &sq->rows[i], k);
        v[i].idx = i;
    }
    qsort(v, sq->n, sizeof(*v), cmp_keyed);
    return v;
}

/* ---- the rtmem (ns) layout ----------------------------------------------------- */

static const char *fmt_size(char *buf, size_t size, size_t bytes)
{
    if (bytes >= 1024 && bytes % 1024 == 0)
        snprintf(buf, size, "%zuk", bytes / 1024);
    else
        snprintf(buf, size, "%zu", bytes);
    return buf;
}

enum { C_HEAP, C_BLOCK, C_NR, C_AVG_A, C_AVG_F, C_P99_A, C_P99_F, C_MAX_A, C_MAX_F, C_FAIL_A,
       C_OVRH, C_TOVRH, C_FRAG, C_FLAGS, C_N };

static const struct tk_col row_cols[C_N] = {
    {"HEAPSZ", 7, false}, {"BLOCKSZ", 7, false}, {"NRBLKS", 7, false}, {"AVG-A", 7, false},
    {"AVG-F", 7, false},  {"P99-A", 6, false},   {"P99-F", 6, false},  {"MAX-A", 6, false},
    {"MAX-F", 6, false},  {"FAIL-A", 6, false},  {"OVRH%", 5, false},  {"TOVRH%", 6, false},
    {"FRAG%", 5, false},  {"FLAGS", 14, true},
};

/* The columns shown: all but TOVRH% unless --true-overhead. */
static size_t shown_cols(const struct memcheck *m, struct tk_col *cols)
{
    size_t n = 0;
    for (size_t c = 0; c < C_N; c++)
        if (c != C_TOVRH || m->o.true_overhead)
            cols[n++] = row_cols[c];
    return n;
}

static void print_row(FILE *f, const struct memcheck *m, const struct mc_row *r)
{
    char buf[C_N][32];
    const char *cells[C_N];
    size_t n = 0;
    cells[n++] = fmt_size(buf[C_HEAP], 32, r->heap_bytes);
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
    if (m->o.true_overhead)
        cells[n++] = tk_fmt_double(buf[C_TOVRH], 32, r->true_overhead_pct, 1);
    cells[n++] = tk_fmt_double(buf[C_FRAG], 32, r->frag_pct, 1);
    snprintf(buf[C_FLAGS], 32, "%s%s", r->flags & MC_F_SHUFFLE ? "+shuffle " : "",
             r->flags & MC_F_HOT ? "+hot" : "");
    cells[n++] = buf[C_FLAGS];
    struct tk_col cols[C_N];
    tk_table_row(f, cols, shown_cols(m, cols), cells);
}

static void print_sorted(FILE *f, const struct memcheck *m, const struct mc_target *t,
                         const struct mc_seq *sq, enum sort_key k, size_t nr)
{
    struct keyed *v = sorted_rows(m, t, sq, k);
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
    if (m->o.max_results < 0) {
        print_sorted(f, m, t, sq, BY_HEAP, sq->n);
        return;
    }
    size_t nr = (size_t)m->o.max_results < sq->n ? (size_t)m->o.max_results : sq->n;
    if (nr == 0)
        return;
    for (int k = BY_ALLOC; k <= BY_FRAG; k++)
        print_sorted(f, m, t, sq, (enum sort_key)k, nr);
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
    if (is_process(t))
        snprintf(note, sizeof(note), " (%s slack; headers not visible)", t->a.usable_name);
    else if (!(t->a.applies & TK_APPLY_STATS))
        snprintf(note, sizeof(note), " (H is the memory given to create: metadata included)");
    fprintf(f, "  average overhead: %s%s\n", fmt_pct(a, 32, o->avg_overhead_pct), note);
    fprintf(f, "  average fragmentation: %s%s\n", fmt_pct(a, 32, o->avg_frag_pct),
            is_process(t) ? " (probes count only inside the fill's address span)" : "");
    fprintf(f, "  average p99 alloc / free time: %s / %s\n",
            fmt_ns(a, 32, o->avg_p99_alloc_ns, 1), fmt_ns(b, 32, o->avg_p99_free_ns, 1));
    if (t->a.applies & TK_APPLY_FILL_TO_FAILURE)
        fprintf(f, "  failing final allocation: worst %s, average %s\n",
                fmt_ns(a, 32, o->worst_fail_alloc_ns, 0), fmt_ns(c, 32, o->avg_fail_alloc_ns, 1));
    else
        fprintf(f, "  failing final allocation: none (fills stop at the budget)\n");
    fprintf(f, "  average true overhead (metadata outside H counted): %s\n",
            fmt_pct(a, 32, o->avg_true_overhead_pct));
}

static void print_legend(FILE *f, const struct memcheck *m)
{
    fprintf(f,
            "\ncolumns: HEAPSZ usable heap size H | BLOCKSZ block size B | NRBLKS blocks "
            "allocated\n"
            "  AVG, P99, MAX -A/-F: time per alloc/free call in ns (the reported pass; +hot: "
            "the second)\n"
            "  FAIL-A: the failing final allocation of the fill, %s\n"
            "  OVRH%%: 100 - 100 * NRBLKS * B / H   FRAG%%: 100 * (1 - largest_free / freed), "
            "probed once at half-free\n",
            m->o.compat ? "ALSO counted in the alloc times (--compat, as smokey)"
                        : "not counted in the alloc times");
    /* The summary always has the column; the rows only with --true-overhead. */
    fprintf(f, "  TOVRH%%: true overhead, 100 - 100 * NRBLKS * B / (H + metadata outside H, "
               "stats.overhead_bytes)%s\n",
            m->o.true_overhead ? "" : "; in the rows with --true-overhead");
    fprintf(f, "  FLAGS: +shuffle randomized free; +hot measured on a second alloc/free pass on "
               "the same heap%s\n",
            m->o.compat ? " (freed in order, as smokey)" : " (freed shuffled too with +shuffle)");
    fprintf(f, "  process allocators (glibc, peers): OVRH%% is the slack their usable-size call "
               "shows; FAIL-A and TOVRH%% do not apply (\"-\")\n");
}

static void print_pattern(FILE *f, const struct mc_target *t)
{
    const struct mc_pattern *p = &t->pattern;
    fprintf(f, "\npattern check: %zu tests, %zu blocks, %.1f MB verified, %.1f s: %s\n", p->tests,
            p->blocks, (double)p->bytes_verified / 1e6, p->seconds,
            t->fail.failed && t->fail.phase == MC_PH_PATTERN ? "FAILED" : "passed");
}

static void print_target(FILE *f, struct memcheck *m, const struct mc_target *t)
{
    for (int ph = MC_PH_POW2; ph <= MC_PH_RANDOM; ph++) {
        const struct mc_seq *sq = &t->seq[ph];
        if (!sq->ran)
            continue;
        fprintf(f, "\n== %s: %s (%zu tests, %.1f s)%s\n", t->a.name, seq_titles[ph], sq->n,
                sq->seconds, t->fail.failed && (int)t->fail.phase == ph ? " -- FAILED" : "");
        print_tables(f, m, t, sq);
        print_overall(f, t, &sq->all);
    }
    if (t->pattern.ran)
        print_pattern(f, t);
}

/* ---- churn ------------------------------------------------------------------------ */

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

static void print_churn(FILE *f, const struct memcheck *m)
{
    bool any = false;
    for (size_t i = 0; i < m->n_t; i++)
        any = any || m->t[i].churn.ran;
    if (!any)
        return;
    char sz[32];
    fprintf(f, "\n== churn: heap %s, steady fill %u%% of it in requested bytes, requests "
               "16..%zu B (each power-of-two\n   octave equally likely), %llu operations after "
               "an untimed ramp; fragmentation sampled every %llu ops\n",
            fmt_size(sz, sizeof(sz), m->o.churn_heap_bytes), m->o.churn_fill_pct,
            m->o.churn_max_bytes, (unsigned long long)m->o.churn_ops,
            (unsigned long long)(m->o.churn_sample_every ? m->o.churn_sample_every
                                 : (m->o.churn_ops >= 100 ? m->o.churn_ops / 100 : 1)));
    int w = name_width(m);
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
        if (is_process(&m->t[i]))
            fprintf(f, "- (does not apply: a process allocator's free memory is whatever its "
                       "heap holds from before;\n  %*s the raw samples, inside the span of "
                       "its churn blocks, are in the JSON)\n", w, "");
        else if (!(m->t[i].a.applies & TK_APPLY_STATS))
            fprintf(f, "- (does not apply: no stats, so its free bytes are unknown; estimates "
                       "in the JSON)\n");
        else
            print_frag_series(f, &m->t[i].churn);
    }
}

/* ---- summary across allocators ----------------------------------------------------- */

static void print_summary(FILE *f, const struct memcheck *m)
{
    struct tk_col cols[] = {
        {"phase", 6, true},   {"allocator", name_width(m), true}, {"tests", 6, false},
        {"worst-A", 8, false}, {"worst-F", 8, false},  {"avgmax-A", 8, false},
        {"avgmax-F", 8, false}, {"avg-A", 7, false},   {"avg-F", 7, false},
        {"avgp99-A", 8, false}, {"avgp99-F", 8, false}, {"OVRH%", 6, false},
        {"TOVRH%", 6, false},  {"FRAG%", 6, false},
    };
    const size_t nc = sizeof(cols) / sizeof(cols[0]);
    fprintf(f, "\n== summary: overall lines of every allocator side by side (ns)\n");
    tk_table_header(f, cols, nc);
    for (int ph = MC_PH_POW2; ph <= MC_PH_RANDOM; ph++)
        for (size_t i = 0; i < m->n_t; i++) {
            const struct mc_seq *sq = &m->t[i].seq[ph];
            if (!sq->ran)
                continue;
            const struct mc_overall *o = &sq->all;
            char b[14][32];
            const char *cells[14] = {
                mc_phase_name((enum mc_phase)ph), m->t[i].a.name,
                tk_fmt_uint(b[2], 32, o->tests),
                tk_fmt_double(b[3], 32, o->worst_alloc_ns, 0),
                tk_fmt_double(b[4], 32, o->worst_free_ns, 0),
                tk_fmt_double(b[5], 32, o->avg_max_alloc_ns, 1),
                tk_fmt_double(b[6], 32, o->avg_max_free_ns, 1),
                tk_fmt_double(b[7], 32, o->avg_alloc_ns, 1),
                tk_fmt_double(b[8], 32, o->avg_free_ns, 1),
                tk_fmt_double(b[9], 32, o->avg_p99_alloc_ns, 1),
                tk_fmt_double(b[10], 32, o->avg_p99_free_ns, 1),
                tk_fmt_double(b[11], 32, o->avg_overhead_pct, 1),
                tk_fmt_double(b[12], 32, o->avg_true_overhead_pct, 1),
                tk_fmt_double(b[13], 32, o->avg_frag_pct, 1),
            };
            tk_table_row(f, cols, nc, cells);
        }
}

void mc_print_failures(FILE *f, const struct memcheck *m)
{
    for (size_t i = 0; i < m->n_t; i++) {
        const struct mc_target *t = &m->t[i];
        if (!t->fail.failed)
            continue;
        const struct mc_opts *o = &m->o;
        char timeout[32] = "";
        if (o->timeout_s != MC_DEFAULT_TIMEOUT_S)
            snprintf(timeout, sizeof(timeout), " --timeout %u", o->timeout_s);
        fprintf(f, "\nFAILED: %s: %s\n", t->a.name, t->fail.msg);
        fprintf(f, "  replay: rtmem memcheck%s%s --kinds %s --phases %s --seed %llu "
                   "--seq-heap-size %zu --random-alloc-rounds %u --pattern-heap-size %zu "
                   "--pattern-check-rounds %u --churn-ops %llu --churn-heap-size %zu "
                   "--churn-fill %u --churn-max-size %zu%s%s\n",
                t->a.plugin_path ? " --plugin " : "", t->a.plugin_path ? t->a.plugin_path : "",
                t->a.name, mc_phase_name(t->fail.phase), (unsigned long long)o->seed,
                o->seq_heap_bytes, o->random_rounds, o->pattern_heap_bytes, o->pattern_rounds,
                (unsigned long long)o->churn_ops, o->churn_heap_bytes, o->churn_fill_pct,
                o->churn_max_bytes, o->compat ? " --compat" : "", timeout);
    }
}

void mc_print_results(FILE *f, struct memcheck *m)
{
    print_legend(f, m);
    for (size_t i = 0; i < m->n_t; i++)
        print_target(f, m, &m->t[i]);
    print_churn(f, m);
    print_summary(f, m);
}

/* ---- header ---------------------------------------------------------------------- */

static void print_sizes(FILE *f, const struct memcheck *m)
{
    bool any_heap = false, all_exact = true;
    for (size_t i = 0; i < m->n_t; i++)
        any_heap = any_heap || m->t[i].a.sort == TK_HEAP;
    if (!any_heap)
        return;
    fprintf(f, "heap of usable size H: memory given to create, as H + metadata outside H (B)\n");
    fprintf(f, "  %8s", "H");
    for (size_t i = 0; i < m->n_t; i++)
        if (m->t[i].a.sort == TK_HEAP)
            fprintf(f, " %*s", name_width(m) + 1, m->t[i].a.name);
    fputc('\n', f);
    const struct tk_alloc *first = NULL;
    for (size_t i = 0; i < m->n_t && !first; i++)
        if (m->t[i].a.sort == TK_HEAP)
            first = &m->t[i].a;
    for (size_t k = 0; k < first->n_cache; k++) {
        char sz[32];
        fprintf(f, "  %8s", fmt_size(sz, sizeof(sz), first->cache[k].asked_bytes));
        for (size_t i = 0; i < m->n_t; i++) {
            const struct tk_alloc *a = &m->t[i].a;
            if (a->sort != TK_HEAP)
                continue;
            const struct tk_heap_info *h = k < a->n_cache ? &a->cache[k] : NULL;
            if (!h) {
                fprintf(f, " %*s", name_width(m) + 1, "-");
                continue;
            }
            char cell[32];
            if (h->sized_by_memory)
                snprintf(cell, sizeof(cell), "mem=H");
            else
                snprintf(cell, sizeof(cell), "+%zu%s", h->mem_bytes - h->usable_bytes,
                         h->exact ? "" : "!");
            fprintf(f, " %*s", name_width(m) + 1, cell);
            all_exact = all_exact && h->exact;
        }
        fputc('\n', f);
    }
    bool any_by_memory = false, any_by_stats = false;
    for (size_t i = 0; i < m->n_t; i++)
        if (m->t[i].a.sort == TK_HEAP) {
            bool stats = m->t[i].a.applies & TK_APPLY_STATS;
            any_by_memory = any_by_memory || !stats;
            any_by_stats = any_by_stats || stats;
        }
    if (any_by_memory)
        fprintf(f, "  mem=H: no statistics (a plugin without stats), so the heap gets exactly H "
                   "bytes of memory, its metadata included\n");
    if (all_exact) {
        if (any_by_stats)
            fprintf(f, "  every %sheap has usable_bytes == H exactly\n",
                    any_by_memory ? "other " : "");
        return;
    }
    for (size_t i = 0; i < m->n_t; i++)
        for (size_t k = 0; k < m->t[i].a.n_cache; k++) {
            const struct tk_heap_info *h = &m->t[i].a.cache[k];
            if (!h->exact)
                fprintf(f, "  INEXACT (!): %s cannot make a heap of usable size %zu; its tests "
                           "use the nearest above, %zu\n",
                        m->t[i].a.name, h->asked_bytes, h->usable_bytes);
        }
}

void mc_print_header(FILE *f, const struct memcheck *m)
{
    const struct tk_timer *t = &m->timer;
    const struct mc_opts *o = &m->o;
    fprintf(f, "rtmem memcheck %s (schema %s): Xenomai smokey's memory test sequence\n",
            RTMEM_VERSION_STRING, MC_SCHEMA);
    tk_machine_print(f, &m->mf);
    const struct tk_arena *ar = &m->sh->arena;
    if (m->sh->have_rt) {
        fprintf(f, "test processes (one per allocator and phase): ");
        tk_rt_print(f, &m->sh->rt);
        fprintf(f, "arena: %zu KiB for every heap, mmap'd, prefaulted, mlock: %s%s%s\n",
                ar->bytes / 1024, ar->locked ? "yes" : "NO", ar->locked ? "" : " -- ",
                ar->locked ? "" : strerror(ar->lock_err));
    } else {
        fprintf(f, "test processes: none ran its setup\n");
    }
    if (o->timeout_s)
        fprintf(f, "watchdog: a test process without progress for %u s is killed "
                   "(--timeout)\n", o->timeout_s);
    else
        fprintf(f, "watchdog: none (--timeout 0)\n");
    tk_timer_print(f, "timer: ", t, TK_DETAIL_BRIEF);
    if (o->subtract_overhead)
        fprintf(f, "  --subtract-timer-overhead: %.1f ns (the p50) taken off every sample, "
                   "clamped at 0\n",
                tk_timer_ns(t, m->sub_ticks));
    else
        fprintf(f, "  every time below includes it (--subtract-timer-overhead removes it)\n");
    fprintf(f, "seed: %llu\n", (unsigned long long)o->seed);
    fprintf(f, "behaviour: %s\n",
            o->compat ? "--compat: smokey's (failing alloc in the alloc times, hot pass freed in "
                        "order, smokey's size draw and sort keys, one size per pattern test)"
                      : "rtmem's (failing alloc apart, +shuffle +hot frees shuffled; --compat "
                        "for smokey's)");
    fprintf(f, "sequence: seq_heap_size=%zuk random_alloc_rounds=%u pattern_heap_size=%zuk "
               "pattern_check_rounds=%u max_results=%d\n",
            o->seq_heap_bytes / 1024, o->random_rounds, o->pattern_heap_bytes / 1024,
            o->pattern_rounds, o->max_results);
    fprintf(f, "phases:");
    for (int ph = 0; ph < MC_PHASES; ph++)
        if (o->phases & (1u << ph))
            fprintf(f, " %s", mc_phase_name((enum mc_phase)ph));
    fprintf(f, "\nallocators:\n");
    for (size_t i = 0; i < m->n_t; i++)
        fprintf(f, "  %-*s %s\n", name_width(m), m->t[i].a.name, m->t[i].a.describe);
    for (size_t i = 0; i < m->n_skipped; i++)
        fprintf(f, "  %-*s SKIPPED: %s\n", name_width(m), m->skipped[i].name,
                m->skipped[i].why);
    print_sizes(f, m);
}

/* ---- smokey's layout --------------------------------------------------------------- */

/* Smokey prints a block size below 1 KiB in bytes, else in KiB, truncated. */
static void smokey_row(FILE *f, const struct mc_row *r)
{
    bool small = r->block_bytes < 1024;
    fprintf(f, "%7zuk  %7zu%s  %6zu  %5.1f  %5.1f  %5.1f  %5.1f   %4.1f  %5.1f   %s%s%s\n",
            r->heap_bytes / 1024, small ? r->block_bytes : r->block_bytes / 1024,
            small ? " " : "k", r->nrblocks, r->avg_alloc_ns / 1000.0, r->avg_free_ns / 1000.0,
            r->max_alloc_ns / 1000.0, r->max_free_ns / 1000.0, r->overhead_pct, r->frag_pct,
            r->nrblocks == 0 ? "FAILED " : "", r->flags & MC_F_SHUFFLE ? "+shuffle " : "",
            r->flags & MC_F_HOT ? "+hot" : "");
}

static void smokey_sorted(FILE *f, const struct memcheck *m, const struct mc_target *t,
                          const struct mc_seq *sq, enum sort_key k, size_t nr)
{
    struct keyed *v = sorted_rows(m, t, sq, k);
    if (!v)
        return;
    fprintf(f, "\nsorted by: max %s\n%8s  %7s  %7s  %5s  %5s  %5s  %5s   %5s  %5s  %s\n",
            sort_names[k], "HEAPSZ", "BLOCKSZ", "NRBLKS", "AVG-A", "AVG-F", "MAX-A", "MAX-F",
            "OVRH%", "FRAG%", "FLAGS");
    for (size_t i = 0; i < nr; i++)
        smokey_row(f, &sq->rows[v[i].idx]);
    if (nr < sq->n)
        fprintf(f, "  ... (%zu results following) ...\n", sq->n - nr);
    free(v);
}

static void smokey_dump(FILE *f, const struct memcheck *m, const struct mc_target *t,
                        enum mc_phase ph)
{
    const struct mc_seq *sq = &t->seq[ph];
    const struct mc_overall *o = &sq->all;
    fprintf(f, "\n[%s] ON '%s'\n\n", seq_titles[ph], t->a.name);
    fprintf(f, "HEAPSZ\ttest heap size\nBLOCKSZ\ttested block size\n"
               "NRBLKS\tnumber of blocks allocatable in heap\n"
               "AVG-A\taverage time to allocate block (us)\n"
               "AVG-F\taverage time to free block (us)\n"
               "MAX-A\tmax time to allocate block (us)\nMAX-F\tmax time to free block (us)\n"
               "OVRH%%\toverhead\nFRAG%%\texternal fragmentation\n"
               "FLAGS\t+shuffle: randomized free\n"
               "    \t+hot: measure after initial alloc/free pass (hot heap)\n");
    if (m->o.max_results > 0) {
        size_t nr = (size_t)m->o.max_results < sq->n ? (size_t)m->o.max_results : sq->n;
        for (int k = BY_ALLOC; k <= BY_FRAG; k++)
            smokey_sorted(f, m, t, sq, (enum sort_key)k, nr);
    } else if (m->o.max_results < 0) {
        smokey_sorted(f, m, t, sq, BY_HEAP, sq->n);
    }
    fprintf(f, "\noverall:\n");
    fprintf(f, "  worst alloc time: %.1f (us)\n", o->worst_alloc_ns / 1000.0);
    fprintf(f, "  worst free time: %.1f (us)\n", o->worst_free_ns / 1000.0);
    fprintf(f, "  average of max. alloc times: %.1f (us)\n", o->avg_max_alloc_ns / 1000.0);
    fprintf(f, "  average of max. free times: %.1f (us)\n", o->avg_max_free_ns / 1000.0);
    fprintf(f, "  average alloc time: %.1f (us)\n", o->avg_alloc_ns / 1000.0);
    fprintf(f, "  average free time: %.1f (us)\n", o->avg_free_ns / 1000.0);
    fprintf(f, "  average overhead: %.1f%%\n", o->avg_overhead_pct);
    fprintf(f, "  average fragmentation: %.1f%%\n", o->avg_frag_pct);
}

/* ctime's text, newline included, as smokey prints it. */
static const char *when(const time_t *at, char *buf)
{
    if (!ctime_r(at, buf))
        snprintf(buf, 26, "?\n");
    return buf;
}

void mc_print_smokey(FILE *f, struct memcheck *m)
{
    char tb[32];
    for (size_t i = 0; i < m->n_t; i++) {
        const struct mc_target *t = &m->t[i];
        fprintf(f, "== memcheck started for %s at %s\n", t->a.name, when(&t->started, tb));
        fprintf(f, "     seq_heap_size=%zuk\n     random_alloc_rounds=%u\n"
                   "     pattern_heap_size=%zuk\n     pattern_check_rounds=%u\n",
                m->o.seq_heap_bytes / 1024, m->o.random_rounds, m->o.pattern_heap_bytes / 1024,
                m->o.pattern_rounds);
        if (is_process(t))
            fprintf(f, "# %s is a process allocator: OVRH%% is the slack %s shows, FRAG%% "
                       "counts probes inside the fill's span\n",
                    t->a.name, t->a.usable_name);
        else if (!(t->a.applies & TK_APPLY_STATS))
            fprintf(f, "# %s has no stats: H is the memory given to create, OVRH%% includes "
                       "its metadata\n",
                    t->a.name);
        for (int ph = MC_PH_POW2; ph <= MC_PH_RANDOM; ph++)
            if (t->seq[ph].ran)
                smokey_dump(f, m, t, (enum mc_phase)ph);
        if (t->pattern.ran)
            fprintf(f, "\n(running the pattern check test for '%s' -- this may take some time)\n",
                    t->a.name);
        if (t->fail.failed)
            fprintf(f, "** '%s' FAILED: %s\n", t->a.name, t->fail.msg);
        fprintf(f, "\n== memcheck finished for %s at %s\n", t->a.name, when(&t->finished, tb));
    }
}

/* ---- JSON ----------------------------------------------------------------------------- */

/* Rounded so that 10 significant digits do not print noise: times to
 * 0.1 ns (the timer's grain is several ns), percentages to 0.001. */
static void json_num(struct tk_json *j, double v, double grain)
{
    tk_json_double(j, isfinite(v) ? round(v / grain) * grain : v);
}

static const char *const row_columns[] = {
    "heap_bytes", "block_bytes", "nrblocks", "avg_alloc_ns", "avg_free_ns", "p99_alloc_ns",
    "p99_free_ns", "max_alloc_ns", "max_free_ns", "fail_alloc_ns", "overhead_pct",
    "true_overhead_pct", "frag_pct", "probe_freed_bytes", "probe_largest_bytes", "shuffle",
    "hot",
};

static void json_row(struct tk_json *j, const struct mc_row *r)
{
    tk_json_begin_array_compact(j);
    tk_json_uint(j, r->heap_bytes);
    tk_json_uint(j, r->block_bytes);
    tk_json_uint(j, r->nrblocks);
    const double ns[7] = {r->avg_alloc_ns, r->avg_free_ns, r->p99_alloc_ns, r->p99_free_ns,
                          r->max_alloc_ns, r->max_free_ns, r->fail_alloc_ns};
    for (int i = 0; i < 7; i++)
        json_num(j, ns[i], 0.1);
    json_num(j, r->overhead_pct, 0.001);
    json_num(j, r->true_overhead_pct, 0.001);
    json_num(j, r->frag_pct, 0.001);
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

static void json_seq(struct tk_json *j, const struct mc_seq *sq, enum mc_phase ph, bool rows)
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

static void json_summary(struct tk_json *j, const char *key, const struct tk_summary *s)
{
    tk_json_key(j, key);
    tk_json_begin_object(j);
    tk_json_kv_uint(j, "count", s->count);
    tk_json_kv_double(j, "avg_ns", s->mean);
    tk_summary_json_spread(j, s);
    tk_json_end_object(j);
}

static void json_churn(struct tk_json *j, const struct mc_churn *ch, bool frag_applies)
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
    json_summary(j, "alloc", &ch->alloc);
    json_summary(j, "free", &ch->free);
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
        json_num(j, s->frag_pct, 0.001);
        tk_json_end_array(j);
    }
    tk_json_end_array(j);
    tk_json_end_object(j);
}

static void json_applies(struct tk_json *j, const struct tk_alloc *a)
{
    tk_json_key(j, "applies");
    tk_json_begin_object(j);
    tk_json_kv_bool(j, "fill_to_failure", a->applies & TK_APPLY_FILL_TO_FAILURE);
    tk_json_kv_bool(j, "stats", a->applies & TK_APPLY_STATS);
    tk_json_kv_bool(j, "integrity_check", a->applies & TK_APPLY_CHECK);
    tk_json_kv_bool(j, "free_status", a->applies & TK_APPLY_FREE_STATUS);
    tk_json_kv_bool(j, "bounds", a->applies & TK_APPLY_BOUNDS);
    tk_json_kv_bool(j, "fill_promise", a->applies & TK_APPLY_FILL_PROMISE);
    char ovh[96];
    if (a->sort == TK_PROCESS)
        snprintf(ovh, sizeof(ovh), "100 - 100 * requested / sum(%s)", a->usable_name);
    else if (!(a->applies & TK_APPLY_STATS))
        snprintf(ovh, sizeof(ovh), "100 - 100 * nrblocks * B / H, H the memory given to create");
    else
        snprintf(ovh, sizeof(ovh), "100 - 100 * nrblocks * B / H");
    tk_json_kv_string(j, "overhead_pct", ovh);
    tk_json_kv_string(j, "frag_probe", a->sort == TK_HEAP
                                           ? "fits in the heap"
                                           : "fits inside the fill's address span");
    tk_json_end_object(j);
}

static const char *fail_kind_name(enum mc_fail_kind k)
{
    switch (k) {
    case MC_FAIL_CHECK: return "check";
    case MC_FAIL_CRASH: return "crash";
    case MC_FAIL_TIMEOUT: return "timeout";
    case MC_FAIL_ERROR: return "error";
    }
    return "?";
}

static void json_target(struct tk_json *j, const struct mc_target *t, bool rows)
{
    const struct tk_alloc *a = &t->a;
    tk_json_begin_object(j);
    tk_json_kv_string(j, "name", a->name);
    tk_json_kv_string(j, "sort", a->sort == TK_HEAP ? "heap" : "process");
    tk_json_kv_string(j, "origin", a->origin);
    tk_json_kv_string(j, "describe", a->describe);
    json_applies(j, a);
    tk_json_kv_bool(j, "passed", !t->fail.failed);
    if (tk_json_key_or_null(j, "failure", t->fail.failed)) {
        tk_json_begin_object(j);
        tk_json_kv_string(j, "phase", mc_phase_name(t->fail.phase));
        tk_json_kv_string(j, "kind", fail_kind_name(t->fail.kind));
        char sig[16] = "";
        if (t->fail.kind == MC_FAIL_CRASH && sigabbrev_np(t->fail.signal))
            snprintf(sig, sizeof(sig), "SIG%s", sigabbrev_np(t->fail.signal));
        tk_json_kv_string(j, "signal", sig[0] ? sig : NULL);
        tk_json_kv_string(j, "message", t->fail.msg);
        tk_json_end_object(j);
    }
    tk_json_key(j, "heap_sizes");
    tk_json_begin_array(j);
    for (size_t k = 0; k < a->n_cache; k++) {
        const struct tk_heap_info *h = &a->cache[k];
        tk_json_begin_object(j);
        tk_json_kv_uint(j, "asked_bytes", h->asked_bytes);
        tk_json_kv_uint(j, "usable_bytes", h->usable_bytes);
        tk_json_kv_uint(j, "mem_bytes", h->mem_bytes);
        tk_json_kv_uint(j, "overhead_bytes", h->overhead_bytes);
        tk_json_kv_bool(j, "exact", h->exact);
        tk_json_kv_bool(j, "sized_by_memory", h->sized_by_memory);
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
    for (int ph = MC_PH_POW2; ph <= MC_PH_RANDOM; ph++)
        json_seq(j, &t->seq[ph], (enum mc_phase)ph, rows);
    if (tk_json_key_or_null(j, "pattern", t->pattern.ran)) {
        tk_json_begin_object(j);
        tk_json_kv_uint(j, "tests", t->pattern.tests);
        tk_json_kv_uint(j, "blocks", t->pattern.blocks);
        tk_json_kv_uint(j, "bytes_verified", t->pattern.bytes_verified);
        tk_json_kv_double(j, "seconds", t->pattern.seconds);
        tk_json_end_object(j);
    }
    json_churn(j, &t->churn, a->applies & TK_APPLY_STATS);
    tk_json_end_object(j);
}

static void json_params(struct tk_json *j, const struct memcheck *m)
{
    const struct mc_opts *o = &m->o;
    tk_json_key(j, "params");
    tk_json_begin_object(j);
    tk_json_kv_uint(j, "seq_heap_size", o->seq_heap_bytes);
    tk_json_kv_uint(j, "seq_min_heap_size", MC_SEQ_MIN_HEAP);
    tk_json_kv_uint(j, "random_alloc_rounds", o->random_rounds);
    tk_json_kv_uint(j, "pattern_heap_size", o->pattern_heap_bytes);
    tk_json_kv_uint(j, "pattern_check_rounds", o->pattern_rounds);
    tk_json_kv_int(j, "max_results", o->max_results);
    tk_json_kv_uint(j, "churn_ops", o->churn_ops);
    tk_json_kv_uint(j, "churn_heap_size", o->churn_heap_bytes);
    tk_json_kv_uint(j, "churn_fill_pct", o->churn_fill_pct);
    tk_json_kv_uint(j, "churn_max_size", o->churn_max_bytes);
    tk_json_kv_uint(j, "churn_sample_every", o->churn_sample_every);
    tk_json_kv_bool(j, "compat", o->compat);
    tk_json_kv_bool(j, "subtract_timer_overhead", o->subtract_overhead);
    tk_json_kv_double(j, "subtracted_ns", tk_timer_ns(&m->timer, m->sub_ticks));
    tk_json_kv_bool(j, "quick", o->quick);
    tk_json_kv_bool(j, "json_rows", !o->no_json_rows);
    tk_json_kv_uint(j, "timeout_s", o->timeout_s);
    tk_json_kv_bool(j, "no_rt", o->no_rt);
    tk_json_key(j, "phases");
    tk_json_begin_array_compact(j);
    for (int ph = 0; ph < MC_PHASES; ph++)
        if (o->phases & (1u << ph))
            tk_json_string(j, mc_phase_name((enum mc_phase)ph));
    tk_json_end_array(j);
    tk_json_end_object(j);
}

int mc_write_json(FILE *f, struct memcheck *m)
{
    struct tk_json j;
    bool passed = true;
    for (size_t i = 0; i < m->n_t; i++)
        passed = passed && !m->t[i].fail.failed;
    tk_json_init(&j, f);
    tk_json_begin_object(&j);
    tk_json_kv_string(&j, "schema", MC_SCHEMA);
    tk_json_kv_string(&j, "rtmem_version", RTMEM_VERSION_STRING);
    tk_json_kv_bool(&j, "passed", passed);
    tk_json_kv_uint(&j, "seed", m->o.seed);
    tk_json_kv_double(&j, "seconds", m->seconds);
    json_params(&j, m);
    tk_json_key(&j, "machine");
    tk_machine_json(&j, &m->mf, TK_DETAIL_BRIEF);
    tk_json_key(&j, "timer");
    tk_timer_json(&j, &m->timer, TK_DETAIL_BRIEF);
    /* What the test processes had: the latest one's record. */
    const struct tk_arena *ar = &m->sh->arena;
    if (tk_json_key_or_null(&j, "real_time", m->sh->have_rt))
        tk_rt_json(&j, &m->sh->rt);
    tk_json_key(&j, "arena");
    tk_json_begin_object(&j);
    tk_json_kv_uint(&j, "bytes", ar->bytes);
    tk_json_kv_bool(&j, "locked", ar->locked);
    tk_json_kv_string(&j, "lock_error", ar->locked ? NULL : strerror(ar->lock_err));
    tk_json_end_object(&j);
    tk_json_key(&j, "row_columns");
    tk_json_begin_array_compact(&j);
    for (size_t c = 0; c < sizeof(row_columns) / sizeof(row_columns[0]); c++)
        tk_json_string(&j, row_columns[c]);
    tk_json_end_array(&j);
    tk_json_key(&j, "allocators");
    tk_json_begin_array(&j);
    for (size_t i = 0; i < m->n_t; i++)
        json_target(&j, &m->t[i], !m->o.no_json_rows);
    tk_json_end_array(&j);
    /* Allocators asked for (or run by default) that did not load. */
    tk_json_key(&j, "skipped");
    tk_json_begin_array(&j);
    for (size_t i = 0; i < m->n_skipped; i++) {
        tk_json_begin_object(&j);
        tk_json_kv_string(&j, "name", m->skipped[i].name);
        tk_json_kv_string(&j, "reason", m->skipped[i].why);
        tk_json_end_object(&j);
    }
    tk_json_end_array(&j);
    tk_json_kv_bool(&j, "static_tls_reexec", tk_reexeced());
    tk_json_end_object(&j);
    return tk_json_finish(&j);
}
