/*
 * `rtmem bench`: aggregation over rounds, the human tables and the JSON.
 * Every figure printed or written comes from the measured per-round
 * summaries; a figure that does not exist (no sample, no glibc row to compare
 * with) prints as "-" and is written as null.
 */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "common/out.h"

static const char *const op_names[2] = {"alloc", "free"};
static const char *const fill_order_keys[FILL_ORDERS] = {"in_order", "shuffled"};

/* Longest series of per-pass summaries aggregated: the fills of the
 * free-order phase, FILL_ORDERS per round. */
#define MAX_SERIES (FILL_ORDERS * BENCH_MAX_ROUNDS)

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median, min and max of the finite values among v[0..n); NaN if none. */
static void median_min_max(const double *v, size_t n, double *med, double *lo, double *hi)
{
    double tmp[MAX_SERIES];
    size_t m = 0;
    for (size_t i = 0; i < n && m < MAX_SERIES; i++)
        if (isfinite(v[i]))
            tmp[m++] = v[i];
    if (m == 0) {
        *med = *lo = *hi = NAN;
        return;
    }
    qsort(tmp, m, sizeof(double), cmp_double);
    *med = m % 2 ? tmp[m / 2] : (tmp[m / 2 - 1] + tmp[m / 2]) / 2;
    *lo = tmp[0];
    *hi = tmp[m - 1];
}

static double median_of(const double *v, size_t n)
{
    double med, lo, hi;
    median_min_max(v, n, &med, &lo, &hi);
    return med;
}

/* Field of a summary by offset, so one loop serves every percentile. */
static double field(const struct tk_summary *s, size_t offset)
{
    return *(const double *)((const char *)s + offset);
}

static double median_field(const struct tk_summary *rounds, unsigned n, size_t offset)
{
    double v[MAX_SERIES] = {0};
    for (unsigned r = 0; r < n && r < MAX_SERIES; r++)
        v[r] = field(&rounds[r], offset);
    return median_of(v, n);
}

/* Aggregate of n per-pass summaries rs (n <= MAX_SERIES); fl holds the
 * floor's summaries of the same passes, NULL when rs is the floor's own (its
 * net figure is not a measurement: left out). */
static void aggregate_series(const struct tk_summary *rs, const struct tk_summary *fl,
                             unsigned n, struct op_agg *g)
{
    double mean[MAX_SERIES] = {0}, net[MAX_SERIES] = {0};

    memset(g, 0, sizeof(*g));
    g->count_per_round = rs[0].count;
    g->max_ns = NAN;
    for (unsigned r = 0; r < n && r < MAX_SERIES; r++) {
        g->count_total += rs[r].count;
        mean[r] = rs[r].mean;
        net[r] = fl ? rs[r].mean - fl[r].mean : NAN;
        if (isfinite(rs[r].max) && !(g->max_ns >= rs[r].max))
            g->max_ns = rs[r].max;
    }
    median_min_max(mean, n, &g->avg_ns, &g->avg_min_ns, &g->avg_max_ns);
    median_min_max(net, n, &g->net_avg_ns, &g->net_min_ns, &g->net_max_ns);
    g->p50_ns = median_field(rs, n, offsetof(struct tk_summary, p50));
    g->p99_ns = median_field(rs, n, offsetof(struct tk_summary, p99));
    g->p999_ns = median_field(rs, n, offsetof(struct tk_summary, p999));
    g->p9999_ns = median_field(rs, n, offsetof(struct tk_summary, p9999));
}

/* The floor's matching series, or NULL for the floor itself. */
static const struct tk_summary *floor_of(const struct allocator *a,
                                         const struct tk_summary *floor_series)
{
    return a->type == ALLOC_FLOOR ? NULL : floor_series;
}

void aggregate_main(struct bench *b)
{
    if (!b->ran_main)
        return;
    for (size_t i = 0; i < b->n_al; i++) {
        struct allocator *a = &b->al[i];
        for (int op = 0; op < 2; op++)
            aggregate_series(a->rounds[op], floor_of(a, b->al[0].rounds[op]), b->o.rounds,
                             &a->agg[op]);
    }
}

void aggregate_free_order(struct bench *b)
{
    if (!b->ran_free_order)
        return;
    const struct allocator *fl = &b->al[0];
    for (size_t i = 0; i < b->n_al; i++) {
        struct allocator *a = &b->al[i];
        aggregate_series(a->fill_alloc, floor_of(a, fl->fill_alloc),
                         FILL_ORDERS * b->o.rounds, &a->fill_alloc_agg);
        for (int o = 0; o < FILL_ORDERS; o++)
            aggregate_series(a->fill_free[o], floor_of(a, fl->fill_free[o]), b->o.rounds,
                             &a->fill_free_agg[o]);
    }
}

static const struct allocator *find_glibc(const struct bench *b)
{
    for (size_t i = 0; i < b->n_al; i++)
        if (b->al[i].type == ALLOC_GLIBC)
            return &b->al[i];
    return NULL;
}

static double ratio(double num, double den)
{
    if (!isfinite(num) || !isfinite(den) || den <= 0)
        return NAN;
    return num / den;
}

/* Ratios of a vs glibc: [0] alloc avg-floor, [1] free avg-floor,
 * [2] alloc p99, [3] free p99 (raw). */
static void ratios_vs(const struct allocator *a, const struct allocator *g, double out[4])
{
    out[0] = ratio(a->agg[0].net_avg_ns, g->agg[0].net_avg_ns);
    out[1] = ratio(a->agg[1].net_avg_ns, g->agg[1].net_avg_ns);
    out[2] = ratio(a->agg[0].p99_ns, g->agg[0].p99_ns);
    out[3] = ratio(a->agg[1].p99_ns, g->agg[1].p99_ns);
}

/* Ratio shuffled / in-order of the free-order phase: [0] avg-floor, [1] p99. */
static void free_order_ratios(const struct allocator *a, double out[2])
{
    const struct op_agg *in = &a->fill_free_agg[FILL_IN_ORDER];
    const struct op_agg *sh = &a->fill_free_agg[FILL_SHUFFLED];
    out[0] = ratio(sh->net_avg_ns, in->net_avg_ns);
    out[1] = ratio(sh->p99_ns, in->p99_ns);
}

static double mib(size_t bytes)
{
    return (double)bytes / (1024.0 * 1024.0);
}

void print_header(FILE *f, const struct bench *b)
{
    fprintf(f, "rtmem bench %s (schema %s)\n", RTMEM_VERSION_STRING, BENCH_SCHEMA);
    tk_machine_print(f, &b->mf);
    tk_rt_print(f, &b->rt);

    bool any_heap = false;
    for (size_t i = 0; i < b->n_al; i++) {
        const struct allocator *a = &b->al[i];
        if (!a->mem.mem)
            continue;
        any_heap = true;
        fprintf(f, "heap memory : %-12s %.0f MiB, mmap'd, prefaulted, mlock: %s\n", a->name,
                mib(a->mem.bytes), a->mem.locked ? "yes" : "NO");
        if (!a->mem.locked)
            fprintf(f, "  not permitted: mlock of the %s heap memory: %s\n", a->name,
                    strerror(a->mem.lock_err));
    }
    if (!any_heap)
        fprintf(f, "heap memory : no rtmem heap selected\n");

    tk_timer_print(f, "timer       : ", &b->timer, TK_DETAIL_FULL);
    fprintf(f, "seed        : %llu (workloads generated from it before any timing)\n",
            (unsigned long long)b->o.seed);
    if (!b->o.sweep_only)
        fprintf(f, "main phase  : sizes uniform in [%u, %u] B, live cap %u, %llu ops per pass, "
                   "%u rounds (order alternates),\n              one unrecorded warm-up pass "
                   "per allocator first\n",
                b->o.min_size_bytes, b->o.max_size_bytes, b->o.live_cap,
                (unsigned long long)b->o.ops, b->o.rounds);
    if (!b->o.no_free_order)
        fprintf(f, "free order  : fills of %u blocks, sizes uniform in [%u, %u] B, freed in "
                   "allocation and in random order,\n              a fresh heap each pass, %u "
                   "rounds, one unrecorded warm-up pass per order first\n",
                b->o.fill_blocks, b->o.min_size_bytes, b->o.max_size_bytes, b->o.rounds);
    if (!b->o.no_sweep)
        fprintf(f, "sweep       : %u buckets of %u B (0..%u B), live cap %u, %llu ops per bucket "
                   "per allocator after a warm-up pass\n",
                SWEEP_BUCKETS, SWEEP_BUCKET_BYTES, SWEEP_BUCKETS * SWEEP_BUCKET_BYTES,
                b->o.live_cap, (unsigned long long)b->o.sweep_ops);
    fprintf(f, "allocators  :");
    for (size_t i = 1; i < b->n_al; i++)
        fprintf(f, " %s%s", b->al[i].name,
                b->al[i].type == ALLOC_GLIBC ? " (malloc/free, glibc defaults: no mallopt)" : "");
    for (size_t i = 1; i < b->n_al; i++)
        if (b->al[i].type == ALLOC_LOADED)
            fprintf(f, "\n  %-10s: %s", b->al[i].name, b->al[i].ma.describe);
    if (b->o.timeout_s)
        fprintf(f, "\nwatchdog    : the measuring runs in a child process; an allocator it "
                   "dies in, or that makes no\n              progress for %u s (--timeout), is "
                   "left out and the run starts again",
                b->o.timeout_s);
    fprintf(f, "\nfloor       : the same timing loop and call (through a function pointer "
               "to a wrapper that jumps),\n              to a function that does nothing\n");
}

enum { COL_NAME, COL_COUNT, COL_AVG, COL_SPREAD, COL_NET, COL_P50, COL_P99, COL_P999,
       COL_P9999, COL_MAX, COL_EXTRA, N_COLS };

static void print_op_table(FILE *f, const struct bench *b, int op)
{
    struct tk_col cols[N_COLS] = {
        [COL_NAME] = {"allocator", 12, true},  [COL_COUNT] = {"ops/round", 9, false},
        [COL_AVG] = {"avg", 8, false},         [COL_SPREAD] = {"avg min..max", 15, false},
        [COL_NET] = {"avg-floor", 9, false},   [COL_P50] = {"p50", 8, false},
        [COL_P99] = {"p99", 8, false},         [COL_P999] = {"p99.9", 8, false},
        [COL_P9999] = {"p99.99", 9, false},    [COL_MAX] = {"max", 10, false},
        [COL_EXTRA] = {op == 0 ? "failed" : "skipped", 7, false},
    };
    char buf[N_COLS][32];
    const char *cells[N_COLS];

    fprintf(f, "\n%s latency, ns\n", op_names[op]);
    tk_table_header(f, cols, N_COLS);
    for (size_t i = 0; i < b->n_al; i++) {
        const struct allocator *a = &b->al[i];
        const struct op_agg *g = &a->agg[op];
        char lo[16], hi[16];
        cells[COL_NAME] = a->name;
        cells[COL_COUNT] = tk_fmt_uint(buf[COL_COUNT], 32, g->count_per_round);
        cells[COL_AVG] = tk_fmt_double(buf[COL_AVG], 32, g->avg_ns, 1);
        snprintf(buf[COL_SPREAD], 32, "%s..%s", tk_fmt_double(lo, sizeof(lo), g->avg_min_ns, 1),
                 tk_fmt_double(hi, sizeof(hi), g->avg_max_ns, 1));
        cells[COL_SPREAD] = buf[COL_SPREAD];
        cells[COL_NET] = tk_fmt_double(buf[COL_NET], 32, g->net_avg_ns, 1);
        cells[COL_P50] = tk_fmt_double(buf[COL_P50], 32, g->p50_ns, 1);
        cells[COL_P99] = tk_fmt_double(buf[COL_P99], 32, g->p99_ns, 1);
        cells[COL_P999] = tk_fmt_double(buf[COL_P999], 32, g->p999_ns, 1);
        cells[COL_P9999] = tk_fmt_double(buf[COL_P9999], 32, g->p9999_ns, 1);
        cells[COL_MAX] = tk_fmt_double(buf[COL_MAX], 32, g->max_ns, 1);
        cells[COL_EXTRA] = tk_fmt_uint(buf[COL_EXTRA], 32,
                                       op == 0 ? a->failed_allocs : a->skipped_frees);
        tk_table_row(f, cols, N_COLS, cells);
    }
}

static void print_ratios(FILE *f, const struct bench *b)
{
    const struct allocator *g = find_glibc(b);
    if (!g) {
        fprintf(f, "\nvs glibc: glibc not selected, no ratios\n");
        return;
    }
    static const struct tk_col cols[5] = {
        {"allocator", 12, true}, {"alloc avg-floor", 15, false}, {"free avg-floor", 14, false},
        {"alloc p99", 9, false}, {"free p99", 9, false},
    };
    fprintf(f, "\nvs glibc: time ratio (below 1 = faster than glibc); averages minus floor, "
               "p99 raw\n");
    tk_table_header(f, cols, 5);
    for (size_t i = 1; i < b->n_al; i++) {
        const struct allocator *a = &b->al[i];
        if (a == g)
            continue;
        double r[4];
        char buf[4][16];
        ratios_vs(a, g, r);
        const char *cells[5] = {a->name};
        for (int k = 0; k < 4; k++)
            cells[k + 1] = tk_fmt_ratio(buf[k], sizeof(buf[k]), r[k]);
        tk_table_row(f, cols, 5, cells);
    }
}

/* Where a failed allocator's run stopped, as options that run just that
 * part again. */
static const char *replay_phase(const struct bench_running *w)
{
    switch (w->phase) {
    case PH_SETUP:
    case PH_MAIN: return " --no-free-order --no-sweep";
    case PH_FREE_ORDER: return " --no-sweep";
    case PH_SWEEP: return " --sweep-only";
    }
    return "";
}

static void print_failed(FILE *f, const struct bench *b)
{
    const struct bench_opts *o = &b->o;
    for (size_t i = 0; i < b->n_gone; i++) {
        const struct allocator *a = &b->gone[i];
        char timeout[32] = "";
        if (o->timeout_s != BENCH_DEFAULT_TIMEOUT_S)
            snprintf(timeout, sizeof(timeout), " --timeout %u", o->timeout_s);
        fprintf(f, "FAILED: %s: %s; its figures are left out\n", a->name, a->fail.msg);
        fprintf(f, "  replay: rtmem bench%s%s --kinds %s%s --seed %llu --ops %llu --rounds %u "
                   "--min-size %u --max-size %u --live %u --heap-size %zu --fill %u "
                   "--sweep-ops %llu%s\n",
                a->ma.plugin_path ? " --plugin " : "", a->ma.plugin_path ? a->ma.plugin_path : "",
                a->name, replay_phase(&a->fail.where), (unsigned long long)o->seed,
                (unsigned long long)o->ops, o->rounds, o->min_size_bytes, o->max_size_bytes,
                o->live_cap, o->heap_bytes, o->fill_blocks, (unsigned long long)o->sweep_ops,
                timeout);
    }
    if (b->skipped[0])
        fprintf(f, "note: %s\n", b->skipped);
}

void print_notes(FILE *f, const struct bench *b)
{
    fputc('\n', f);
    for (size_t i = 0; i < b->n_al; i++) {
        const struct allocator *a = &b->al[i];
        uint64_t sweep_failed = 0;
        for (unsigned bk = 0; b->ran_sweep && bk < SWEEP_BUCKETS; bk++)
            sweep_failed += a->sweep_failed[bk];
        if (a->failed_allocs)
            fprintf(f, "note: %s failed %llu allocations in the measured rounds (heap too "
                       "small?); their frees were skipped, not timed\n",
                    a->name, (unsigned long long)a->failed_allocs);
        if (a->fill_failed_allocs)
            fprintf(f, "note: %s failed %llu allocations in the free-order fills (heap too "
                       "small?); their frees were skipped, not timed\n",
                    a->name, (unsigned long long)a->fill_failed_allocs);
        if (sweep_failed)
            fprintf(f, "note: %s failed %llu allocations in the sweep\n", a->name,
                    (unsigned long long)sweep_failed);
        if (a->free_errors)
            fprintf(f, "WARNING: %s: %llu frees returned an error\n", a->name,
                    (unsigned long long)a->free_errors);
        if (a->check_failures)
            fprintf(f, "WARNING: %s: heap check failed (or blocks left live) after %llu "
                       "passes\n",
                    a->name, (unsigned long long)a->check_failures);
    }
    print_failed(f, b);
    if (b->rt.rests)
        fprintf(f, "rt: rested %u times between passes to keep real-time throttling off\n",
                b->rt.rests);
    fprintf(f, "VmLck at the end: %ld kB\n", b->rt.vmlck_kb);
}

void print_main(FILE *f, const struct bench *b)
{
    if (b->ran_main) {
        fprintf(f, "\nmain phase: %.2f s. Per allocator: avg = median over the %u rounds of the "
                   "per-round mean,\nmin..max = spread of those means, avg-floor = median of "
                   "(round mean - floor's round mean),\npercentiles = median over rounds, max = "
                   "worst of all rounds; failed/skipped: summed over all rounds.\n",
                b->main_seconds, b->o.rounds);
        print_op_table(f, b, 0);
        print_op_table(f, b, 1);
        const struct op_agg *fa = &b->al[0].agg[0], *ff = &b->al[0].agg[1];
        fprintf(f, "\nfloor (no-op call in the same harness): alloc %.1f ns, free %.1f ns "
                   "(median of round means); timer overhead alone p50 %.1f ns\n",
                fa->avg_ns, ff->avg_ns, b->timer.overhead_p50_ns);
        print_ratios(f, b);
    }
}

void print_free_order(FILE *f, const struct bench *b)
{
    if (!b->ran_free_order)
        return;
    enum { C_NAME, C_FILL, C_IN, C_IN99, C_SH, C_SH99, C_RATIO, C_N };
    static const struct tk_col cols[C_N] = {
        [C_NAME] = {"allocator", 12, true},
        [C_FILL] = {"fill alloc avg-floor", 20, false},
        [C_IN] = {"in-order avg-floor", 18, false},
        [C_IN99] = {"p99", 8, false},
        [C_SH] = {"shuffled avg-floor", 18, false},
        [C_SH99] = {"p99", 8, false},
        [C_RATIO] = {"shuffled/in-order", 17, false},
    };
    const struct allocator *fl = &b->al[0];
    char buf[C_N][32];
    const char *cells[C_N];

    fprintf(f, "\nfree order: %.2f s. Each pass fills a freshly created heap (rtmem kinds; glibc "
               "keeps its arena)\nwith %zu blocks, sizes uniform in [%u, %u] B (%zu of them above "
               "%zu B: page runs in heapmem and\nxnheap), the same sizes for every allocator "
               "(seed %llu), timing each allocation;\nthen frees them all, timing each free, in "
               "allocation order (in-order) or in one fixed random\npermutation (shuffled). "
               "Every round runs each allocator in both orders, which goes first\nalternating by "
               "round; %u rounds. avg-floor = median over rounds of (pass mean - floor's pass\n"
               "mean); p99 = median over rounds of the pass's p99, raw; fill alloc: the same over "
               "all %u fills;\nshuffled/in-order = ratio of the two free avg-floor figures "
               "(above 1: random order costs more).\n",
            b->free_order_seconds, b->fill_n, b->o.min_size_bytes, b->o.max_size_bytes,
            b->fill_runs, RTM_PAGEHEAP_MAX_BUCKET,
            (unsigned long long)(b->o.seed ^ FILL_SEED_SALT), b->o.rounds,
            FILL_ORDERS * b->o.rounds);
    fprintf(f, "\nfree latency by order (and fill alloc), ns\n");
    tk_table_header(f, cols, C_N);
    for (size_t i = 1; i < b->n_al; i++) {
        const struct allocator *a = &b->al[i];
        const struct op_agg *in = &a->fill_free_agg[FILL_IN_ORDER];
        const struct op_agg *sh = &a->fill_free_agg[FILL_SHUFFLED];
        cells[C_NAME] = a->name;
        cells[C_FILL] = tk_fmt_double(buf[C_FILL], 32, a->fill_alloc_agg.net_avg_ns, 1);
        cells[C_IN] = tk_fmt_double(buf[C_IN], 32, in->net_avg_ns, 1);
        cells[C_IN99] = tk_fmt_double(buf[C_IN99], 32, in->p99_ns, 1);
        cells[C_SH] = tk_fmt_double(buf[C_SH], 32, sh->net_avg_ns, 1);
        cells[C_SH99] = tk_fmt_double(buf[C_SH99], 32, sh->p99_ns, 1);
        double r[2];
        free_order_ratios(a, r);
        cells[C_RATIO] = tk_fmt_ratio(buf[C_RATIO], 32, r[0]);
        tk_table_row(f, cols, C_N, cells);
    }
    fprintf(f, "\nfloor in this phase: alloc %.1f ns, free %.1f ns in-order, %.1f ns shuffled "
               "(median of pass means)\n",
            fl->fill_alloc_agg.avg_ns, fl->fill_free_agg[FILL_IN_ORDER].avg_ns,
            fl->fill_free_agg[FILL_SHUFFLED].avg_ns);
}

static double sweep_net(const struct bench *b, const struct allocator *a, unsigned bk)
{
    return a->sweep_alloc_ns[bk] + a->sweep_free_ns[bk] - b->sweep_floor_ns;
}

void print_sweep(FILE *f, const struct bench *b)
{
    if (!b->ran_sweep)
        return;
    struct tk_col cols[BENCH_MAX_ALLOCATORS];
    const char *cells[BENCH_MAX_ALLOCATORS];
    char buf[BENCH_MAX_ALLOCATORS][32];
    size_t n = b->n_al;   /* column 0: sizes; columns 1..: allocators but the floor */

    fprintf(f, "\nsize sweep: %.2f s. Mean alloc+free pair in ns minus the floor (%.1f ns), by "
               "request size;\nevery %uth of %u buckets shown (all in the JSON), last row: mean "
               "over all buckets\n",
            b->sweep_seconds, b->sweep_floor_ns, SWEEP_PRINT_EVERY, SWEEP_BUCKETS);
    cols[0] = (struct tk_col){"size, B", 12, true};
    for (size_t i = 1; i < n; i++) {
        int w = (int)strlen(b->al[i].name);
        cols[i] = (struct tk_col){b->al[i].name, w < 8 ? 8 : w, false};
    }
    tk_table_header(f, cols, n);
    for (unsigned bk = 0; bk < SWEEP_BUCKETS; bk++) {
        if (bk % SWEEP_PRINT_EVERY != 0 && bk != SWEEP_BUCKETS - 1)
            continue;
        snprintf(buf[0], 32, "%u..%u", bk * SWEEP_BUCKET_BYTES,
                 (bk + 1) * SWEEP_BUCKET_BYTES - 1);
        cells[0] = buf[0];
        for (size_t i = 1; i < n; i++)
            cells[i] = tk_fmt_double(buf[i], 32, sweep_net(b, &b->al[i], bk), 1);
        tk_table_row(f, cols, n, cells);
    }
    cells[0] = "all (mean)";
    for (size_t i = 1; i < n; i++) {
        double sum = 0;
        for (unsigned bk = 0; bk < SWEEP_BUCKETS; bk++)
            sum += sweep_net(b, &b->al[i], bk);
        cells[i] = tk_fmt_double(buf[i], 32, sum / SWEEP_BUCKETS, 1);
    }
    tk_table_row(f, cols, n, cells);
}

static void json_params(struct tk_json *j, const struct bench *b)
{
    tk_json_key(j, "params");
    tk_json_begin_object(j);
    tk_json_kv_uint(j, "ops", b->o.ops);
    tk_json_kv_uint(j, "rounds", b->o.rounds);
    tk_json_kv_uint(j, "warmup_passes", 1);
    tk_json_kv_uint(j, "min_size_bytes", b->o.min_size_bytes);
    tk_json_kv_uint(j, "max_size_bytes", b->o.max_size_bytes);
    tk_json_kv_uint(j, "live_cap", b->o.live_cap);
    tk_json_kv_uint(j, "heap_bytes", b->o.heap_bytes);
    tk_json_kv_uint(j, "seed", b->o.seed);
    tk_json_kv_uint(j, "sweep_ops", b->o.sweep_ops);
    tk_json_kv_bool(j, "quick", b->o.quick);
    tk_json_kv_bool(j, "no_rt", b->o.no_rt);
    tk_json_kv_bool(j, "main_phase", b->ran_main);
    tk_json_kv_bool(j, "sweep", b->ran_sweep);
    tk_json_kv_string(j, "glibc_config", "defaults (no mallopt)");
    tk_json_kv_string(j, "floor",
                      "the same timing loop and call as every allocator (through a function "
                      "pointer to a wrapper that jumps), to a function that does nothing");
    tk_json_end_object(j);
}

static void json_summary(struct tk_json *j, const struct tk_summary *s, double floor_mean)
{
    tk_json_begin_object(j);
    tk_json_kv_uint(j, "count", s->count);
    tk_json_kv_double(j, "avg_ns", s->mean);
    tk_json_kv_double(j, "avg_minus_floor_ns", s->mean - floor_mean);
    tk_summary_json_spread(j, s);
    tk_json_end_object(j);
}

/* Per-pass summaries rs[0..n) as an array; fl: the floor's (NULL for the floor). */
static void json_series(struct tk_json *j, const char *key, const struct tk_summary *rs,
                        const struct tk_summary *fl, unsigned n)
{
    tk_json_key(j, key);
    tk_json_begin_array(j);
    for (unsigned r = 0; r < n; r++)
        json_summary(j, &rs[r], fl ? fl[r].mean : NAN);
    tk_json_end_array(j);
}

/* The aggregate figures of g as members of the open object. */
static void json_agg_members(struct tk_json *j, const struct op_agg *g, const char *count_key)
{
    tk_json_kv_uint(j, count_key, g->count_per_round);
    tk_json_kv_uint(j, "count_total", g->count_total);
    tk_json_kv_double(j, "avg_ns", g->avg_ns);
    tk_json_kv_double(j, "avg_ns_round_min", g->avg_min_ns);
    tk_json_kv_double(j, "avg_ns_round_max", g->avg_max_ns);
    tk_json_kv_double(j, "avg_minus_floor_ns", g->net_avg_ns);
    tk_json_kv_double(j, "avg_minus_floor_ns_round_min", g->net_min_ns);
    tk_json_kv_double(j, "avg_minus_floor_ns_round_max", g->net_max_ns);
    tk_json_kv_double(j, "p50_ns", g->p50_ns);
    tk_json_kv_double(j, "p99_ns", g->p99_ns);
    tk_json_kv_double(j, "p99_9_ns", g->p999_ns);
    tk_json_kv_double(j, "p99_99_ns", g->p9999_ns);
    tk_json_kv_double(j, "max_ns", g->max_ns);
}

static void json_op(struct tk_json *j, const struct bench *b, const struct allocator *a, int op)
{
    tk_json_key(j, op_names[op]);
    tk_json_begin_object(j);
    json_agg_members(j, &a->agg[op], "count_per_round");
    json_series(j, "rounds", a->rounds[op], floor_of(a, b->al[0].rounds[op]), b->o.rounds);
    tk_json_end_object(j);
}

static const char *type_name(enum alloc_type t)
{
    switch (t) {
    case ALLOC_FLOOR: return "floor";
    case ALLOC_HEAP: return "rtm_heap";
    case ALLOC_TLSF_TYPED: return "rtm_tlsf_typed";
    case ALLOC_GLIBC: return "glibc";
    case ALLOC_LOADED: return "loaded";
    }
    return "unknown";
}

static const char *api_name(const struct allocator *a)
{
    return a->type == ALLOC_LOADED ? a->ma.origin : type_name(a->type);
}

static void json_failed(struct tk_json *j, const struct bench *b)
{
    tk_json_key(j, "failed_allocators");
    tk_json_begin_array(j);
    for (size_t i = 0; i < b->n_gone; i++) {
        const struct allocator *a = &b->gone[i];
        char where[96], sig[16] = "";
        if (a->fail.signal && sigabbrev_np(a->fail.signal))
            snprintf(sig, sizeof(sig), "SIG%s", sigabbrev_np(a->fail.signal));
        tk_json_begin_object(j);
        tk_json_kv_string(j, "name", a->name);
        tk_json_kv_string(j, "api", api_name(a));
        tk_json_kv_string(j, "kind", a->fail.timed_out ? "timeout"
                                     : a->fail.signal ? "crash"
                                                      : "error");
        tk_json_kv_string(j, "signal", sig[0] ? sig : NULL);
        tk_json_kv_string(j, "where", bench_where(&a->fail.where, where, sizeof(where)));
        tk_json_kv_string(j, "message", a->fail.msg);
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
    tk_json_kv_string(j, "skipped", b->skipped[0] ? b->skipped : NULL);
}

static void json_allocators(struct tk_json *j, const struct bench *b)
{
    tk_json_key(j, "allocators");
    tk_json_begin_array(j);
    for (size_t i = 0; i < b->n_al; i++) {
        const struct allocator *a = &b->al[i];
        tk_json_begin_object(j);
        tk_json_kv_string(j, "name", a->name);
        tk_json_kv_string(j, "api", api_name(a));
        if (a->type == ALLOC_LOADED)
            tk_json_kv_string(j, "describe", a->ma.describe);
        if (a->mem.mem) {
            tk_json_kv_uint(j, "heap_bytes", a->mem.bytes);
            tk_json_kv_bool(j, "heap_mlocked", a->mem.locked);
            tk_json_kv_string(j, "heap_mlock_error",
                              a->mem.locked ? NULL : strerror(a->mem.lock_err));
            tk_json_kv_uint(j, "heap_check_failures", a->check_failures);
        }
        tk_json_kv_uint(j, "failed_allocs", a->failed_allocs);
        tk_json_kv_uint(j, "skipped_frees", a->skipped_frees);
        tk_json_kv_uint(j, "free_errors", a->free_errors);
        if (b->ran_main) {
            json_op(j, b, a, 0);
            json_op(j, b, a, 1);
        }
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
}

static void json_ratios(struct tk_json *j, const struct bench *b)
{
    const struct allocator *g = find_glibc(b);
    if (!tk_json_key_or_null(j, "ratios_vs_glibc", g && b->ran_main))
        return;
    tk_json_begin_array(j);
    for (size_t i = 1; i < b->n_al; i++) {
        const struct allocator *a = &b->al[i];
        if (a == g)
            continue;
        double r[4];
        ratios_vs(a, g, r);
        tk_json_begin_object(j);
        tk_json_kv_string(j, "name", a->name);
        tk_json_kv_double(j, "alloc_avg_minus_floor", r[0]);
        tk_json_kv_double(j, "free_avg_minus_floor", r[1]);
        tk_json_kv_double(j, "alloc_p99", r[2]);
        tk_json_kv_double(j, "free_p99", r[3]);
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
}

static void json_free_order(struct tk_json *j, const struct bench *b)
{
    if (!tk_json_key_or_null(j, "free_order", b->ran_free_order))
        return;
    const struct allocator *fl = &b->al[0];
    unsigned n = b->o.rounds;
    tk_json_begin_object(j);
    tk_json_kv_string(j, "description",
                      "each pass: a freshly created heap (rtmem kinds; glibc keeps its arena), "
                      "fill_blocks allocations of the same pre-generated sizes, each timed, then "
                      "every block freed, each free timed, in allocation order (in-order) or in "
                      "one fixed random permutation (shuffled); per round every allocator runs "
                      "both orders, the first alternating by round");
    tk_json_kv_uint(j, "fill_blocks", b->fill_n);
    tk_json_kv_uint(j, "min_size_bytes", b->o.min_size_bytes);
    tk_json_kv_uint(j, "max_size_bytes", b->o.max_size_bytes);
    tk_json_kv_uint(j, "blocks_above_bucket_max", b->fill_runs);
    tk_json_kv_uint(j, "bucket_max_bytes", RTM_PAGEHEAP_MAX_BUCKET);
    tk_json_kv_uint(j, "seed", b->o.seed ^ FILL_SEED_SALT);
    tk_json_kv_uint(j, "rounds", n);
    tk_json_kv_uint(j, "warmup_passes_per_order", 1);
    tk_json_kv_bool(j, "fresh_heap_per_pass", true);
    tk_json_key(j, "allocators");
    tk_json_begin_array(j);
    for (size_t i = 0; i < b->n_al; i++) {
        const struct allocator *a = &b->al[i];
        tk_json_begin_object(j);
        tk_json_kv_string(j, "name", a->name);
        tk_json_kv_uint(j, "failed_allocs", a->fill_failed_allocs);
        tk_json_kv_uint(j, "skipped_frees", a->fill_skipped_frees);
        tk_json_key(j, "fill_alloc");
        tk_json_begin_object(j);
        json_agg_members(j, &a->fill_alloc_agg, "count_per_pass");
        char key[32];
        for (int o = 0; o < FILL_ORDERS; o++) {
            snprintf(key, sizeof(key), "rounds_%s", fill_order_keys[o]);
            json_series(j, key, a->fill_alloc + (size_t)o * n,
                        floor_of(a, fl->fill_alloc + (size_t)o * n), n);
        }
        tk_json_end_object(j);
        for (int o = 0; o < FILL_ORDERS; o++) {
            snprintf(key, sizeof(key), "free_%s", fill_order_keys[o]);
            tk_json_key(j, key);
            tk_json_begin_object(j);
            json_agg_members(j, &a->fill_free_agg[o], "count_per_pass");
            json_series(j, "rounds", a->fill_free[o], floor_of(a, fl->fill_free[o]), n);
            tk_json_end_object(j);
        }
        double r[2] = {NAN, NAN};
        if (a->type != ALLOC_FLOOR)
            free_order_ratios(a, r);
        tk_json_kv_double(j, "shuffled_over_in_order_avg_minus_floor", r[0]);
        tk_json_kv_double(j, "shuffled_over_in_order_p99", r[1]);
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
    tk_json_end_object(j);
}

static void json_double_array(struct tk_json *j, const char *key, const double *v, size_t n)
{
    tk_json_key(j, key);
    tk_json_begin_array(j);
    for (size_t i = 0; i < n; i++)
        tk_json_double(j, v[i]);
    tk_json_end_array(j);
}

static void json_sweep(struct tk_json *j, const struct bench *b)
{
    if (!tk_json_key_or_null(j, "sweep", b->ran_sweep))
        return;
    double v[SWEEP_BUCKETS];
    tk_json_begin_object(j);
    tk_json_kv_uint(j, "bucket_width_bytes", SWEEP_BUCKET_BYTES);
    tk_json_kv_uint(j, "buckets", SWEEP_BUCKETS);
    tk_json_kv_uint(j, "ops_per_bucket", b->o.sweep_ops);
    tk_json_kv_uint(j, "live_cap", b->o.live_cap);
    tk_json_kv_double(j, "floor_alloc_free_ns", b->sweep_floor_ns);
    tk_json_key(j, "bucket_min_bytes");
    tk_json_begin_array(j);
    for (unsigned bk = 0; bk < SWEEP_BUCKETS; bk++)
        tk_json_uint(j, bk * SWEEP_BUCKET_BYTES);
    tk_json_end_array(j);
    tk_json_key(j, "bucket_max_bytes");
    tk_json_begin_array(j);
    for (unsigned bk = 0; bk < SWEEP_BUCKETS; bk++)
        tk_json_uint(j, (bk + 1) * SWEEP_BUCKET_BYTES - 1);
    tk_json_end_array(j);
    tk_json_key(j, "allocators");
    tk_json_begin_array(j);
    for (size_t i = 0; i < b->n_al; i++) {
        const struct allocator *a = &b->al[i];
        tk_json_begin_object(j);
        tk_json_kv_string(j, "name", a->name);
        json_double_array(j, "alloc_avg_ns", a->sweep_alloc_ns, SWEEP_BUCKETS);
        json_double_array(j, "free_avg_ns", a->sweep_free_ns, SWEEP_BUCKETS);
        for (unsigned bk = 0; bk < SWEEP_BUCKETS; bk++)
            v[bk] = a->type == ALLOC_FLOOR ? NAN : sweep_net(b, a, bk);
        json_double_array(j, "alloc_free_minus_floor_ns", v, SWEEP_BUCKETS);
        tk_json_key(j, "failed_allocs");
        tk_json_begin_array(j);
        for (unsigned bk = 0; bk < SWEEP_BUCKETS; bk++)
            tk_json_uint(j, a->sweep_failed[bk]);
        tk_json_end_array(j);
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
    tk_json_end_object(j);
}

int write_json(FILE *f, const struct bench *b)
{
    struct tk_json j;
    tk_json_init(&j, f);
    tk_json_begin_object(&j);
    tk_json_kv_string(&j, "schema", BENCH_SCHEMA);
    tk_json_kv_string(&j, "tool", "rtmem bench");
    tk_json_kv_string(&j, "rtmem_version", RTMEM_VERSION_STRING);
    tk_json_key(&j, "machine");
    tk_machine_json(&j, &b->mf, TK_DETAIL_FULL);
    json_params(&j, b);
    tk_json_key(&j, "rt");
    tk_rt_json(&j, &b->rt);
    tk_json_key(&j, "timer");
    tk_timer_json(&j, &b->timer, TK_DETAIL_FULL);
    tk_json_key(&j, "floor");
    tk_json_begin_object(&j);
    tk_json_kv_double(&j, "alloc_avg_ns", b->ran_main ? b->al[0].agg[0].avg_ns : NAN);
    tk_json_kv_double(&j, "free_avg_ns", b->ran_main ? b->al[0].agg[1].avg_ns : NAN);
    tk_json_kv_double(&j, "sweep_alloc_free_ns", b->ran_sweep ? b->sweep_floor_ns : NAN);
    tk_json_end_object(&j);
    json_allocators(&j, b);
    json_ratios(&j, b);
    json_free_order(&j, b);
    json_sweep(&j, b);
    json_failed(&j, b);
    tk_json_end_object(&j);
    return tk_json_finish(&j);
}
