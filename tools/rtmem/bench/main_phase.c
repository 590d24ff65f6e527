/*
 * `rtmem bench`: the main phase. Every allocator runs the same random
 * workload of interleaved allocs and frees, one unrecorded warm-up pass
 * each, then --rounds recorded rounds in alternating order; its tables
 * (alloc and free latency, ratios to glibc) and its JSON (the "allocators"
 * rows and "ratios_vs_glibc").
 */
#include <math.h>
#include <string.h>

#include "bench.h"
#include "common/out.h"

static const char *const op_names[2] = { "alloc", "free" };

void bench_run_main(struct bench *b)
{
    struct pass_out out;
    uint64_t t0 = tk_clock_ns();
    bench_workload_generate(&b->w, b->o.ops, b->o.min_size_bytes, b->o.max_size_bytes,
                            b->o.live_cap, b->o.seed);
    /* Warm-up: one unrecorded pass each (caches, glibc's arenas, page tables). */
    for (size_t k = 0; k < b->n_al; k++) {
        if (bench_left_out(b, k))
            continue;
        tk_rt_breather(&b->rt);
        bench_mark_pass(b, k, PH_MAIN, 0, true);
        bench_run_pass(b, &b->al[k], &out);
    }
    for (unsigned r = 0; r < b->o.rounds; r++) {
        for (size_t k = 0; k < b->n_al; k++) {
            size_t i = bench_order_index(k, b->n_al, r);
            struct allocator *a = &b->al[i];
            if (bench_left_out(b, i))
                continue;
            tk_rt_breather(&b->rt);
            bench_mark_pass(b, i, PH_MAIN, r, false);
            bench_run_pass(b, a, &out);
            tk_samples_summarize(out.alloc_ticks, b->timer.ns_per_tick, &a->rounds[0][r]);
            tk_samples_summarize(out.free_ticks, b->timer.ns_per_tick, &a->rounds[1][r]);
            a->failed_allocs += out.failed_allocs;
            a->skipped_frees += out.skipped_frees;
            a->free_errors += out.free_errors;
        }
    }
    b->main_seconds = (double)(tk_clock_ns() - t0) / 1e9;
    b->ran_main = true;
}

static const struct allocator *find_glibc(const struct bench *b)
{
    for (size_t i = 0; i < b->n_al; i++)
        if (bench_glibc(&b->al[i]))
            return &b->al[i];
    return NULL;
}

/* Ratios of a vs glibc: [0] alloc avg-floor, [1] free avg-floor,
 * [2] alloc p99, [3] free p99 (raw). */
static void ratios_vs(const struct allocator *a, const struct allocator *g, double out[4])
{
    out[0] = bench_ratio(a->agg[0].net_avg_ns, g->agg[0].net_avg_ns);
    out[1] = bench_ratio(a->agg[1].net_avg_ns, g->agg[1].net_avg_ns);
    out[2] = bench_ratio(a->agg[0].p99_ns, g->agg[0].p99_ns);
    out[3] = bench_ratio(a->agg[1].p99_ns, g->agg[1].p99_ns);
}

void bench_aggregate_main(struct bench *b)
{
    if (!b->ran_main)
        return;
    for (size_t i = 0; i < b->n_al; i++) {
        struct allocator *a = &b->al[i];
        for (int op = 0; op < 2; op++)
            bench_aggregate_series(a->rounds[op], bench_floor_of(a, b->al[0].rounds[op]),
                                   b->o.rounds, &a->agg[op]);
    }
    const struct allocator *g = find_glibc(b);
    for (size_t i = 0; i < b->n_al; i++) {
        struct allocator *a = &b->al[i];
        for (int k = 0; k < 4; k++)
            a->vs_glibc[k] = NAN;
        if (g && a != g && !a->floor)
            ratios_vs(a, g, a->vs_glibc);
    }
}

enum {
    COL_NAME,
    COL_COUNT,
    COL_AVG,
    COL_SPREAD,
    COL_NET,
    COL_P50,
    COL_P99,
    COL_P999,
    COL_P9999,
    COL_MAX,
    COL_EXTRA,
    N_COLS
};

static void print_op_table(FILE *f, const struct bench *b, int op)
{
    struct tk_col cols[N_COLS] = {
        [COL_NAME] = { "allocator", 12, true },
        [COL_COUNT] = { "ops/round", 9, false },
        [COL_AVG] = { "avg", 8, false },
        [COL_SPREAD] = { "avg min..max", 15, false },
        [COL_NET] = { "avg-floor", 9, false },
        [COL_P50] = { "p50", 8, false },
        [COL_P99] = { "p99", 8, false },
        [COL_P999] = { "p99.9", 8, false },
        [COL_P9999] = { "p99.99", 9, false },
        [COL_MAX] = { "max", 10, false },
        [COL_EXTRA] = { op == 0 ? "failed" : "skipped", 7, false },
    };
    char buf[N_COLS][32];
    const char *cells[N_COLS];

    fprintf(f, "\n%s latency, ns\n", op_names[op]);
    tk_table_header(f, cols, N_COLS);
    for (size_t i = 0; i < b->n_al; i++) {
        const struct allocator *a = &b->al[i];
        const struct op_agg *g = &a->agg[op];
        char lo[16], hi[16];
        cells[COL_NAME] = a->def.name;
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
        cells[COL_EXTRA] =
            tk_fmt_uint(buf[COL_EXTRA], 32, op == 0 ? a->failed_allocs : a->skipped_frees);
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
        { "allocator", 12, true },       { "alloc avg-floor", 15, false },
        { "free avg-floor", 14, false }, { "alloc p99", 9, false },
        { "free p99", 9, false },
    };
    fprintf(f, "\nvs glibc: time ratio (below 1 = faster than glibc); averages minus floor, "
               "p99 raw\n");
    tk_table_header(f, cols, 5);
    for (size_t i = 1; i < b->n_al; i++) {
        const struct allocator *a = &b->al[i];
        if (a == g)
            continue;
        char buf[4][16];
        const char *cells[5] = { a->def.name };
        for (int k = 0; k < 4; k++)
            cells[k + 1] = tk_fmt_ratio(buf[k], sizeof(buf[k]), a->vs_glibc[k]);
        tk_table_row(f, cols, 5, cells);
    }
}

void bench_print_main(FILE *f, const struct bench *b)
{
    if (b->ran_main) {
        fprintf(f,
                "\nmain phase: %.2f s. Per allocator: avg = median over the %u rounds of the "
                "per-round mean,\nmin..max = spread of those means, avg-floor = median of "
                "(round mean - floor's round mean),\npercentiles = median over rounds, max = "
                "worst of all rounds; failed/skipped: summed over all rounds.\n",
                b->main_seconds, b->o.rounds);
        print_op_table(f, b, 0);
        print_op_table(f, b, 1);
        const struct op_agg *fa = &b->al[0].agg[0], *ff = &b->al[0].agg[1];
        fprintf(f,
                "\nfloor (no-op call in the same harness): alloc %.1f ns, free %.1f ns "
                "(median of round means); timer overhead alone p50 %.1f ns\n",
                fa->avg_ns, ff->avg_ns, b->timer.overhead_p50_ns);
        print_ratios(f, b);
    }
}

static void json_op(struct tk_json *j, const struct bench *b, const struct allocator *a, int op)
{
    tk_json_key(j, op_names[op]);
    tk_json_begin_object(j);
    bench_json_agg_members(j, &a->agg[op], "count_per_round");
    bench_json_series(j, "rounds", a->rounds[op], bench_floor_of(a, b->al[0].rounds[op]),
                      b->o.rounds);
    tk_json_end_object(j);
}

void bench_json_allocators(struct tk_json *j, const struct bench *b)
{
    tk_json_key(j, "allocators");
    tk_json_begin_array(j);
    for (size_t i = 0; i < b->n_al; i++) {
        const struct allocator *a = &b->al[i];
        tk_json_begin_object(j);
        tk_json_kv_string(j, "name", a->def.name);
        tk_json_kv_string(j, "api", bench_api_name(a));
        if (bench_loaded(a) || a->def.own_process)
            tk_json_kv_string(j, "describe", a->def.describe);
        tk_glibc_rt_json(j, &a->def);
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

void bench_json_ratios(struct tk_json *j, const struct bench *b)
{
    const struct allocator *g = find_glibc(b);
    if (!tk_json_key_or_null(j, "ratios_vs_glibc", g && b->ran_main))
        return;
    tk_json_begin_array(j);
    for (size_t i = 1; i < b->n_al; i++) {
        const struct allocator *a = &b->al[i];
        if (a == g)
            continue;
        tk_json_begin_object(j);
        tk_json_kv_string(j, "name", a->def.name);
        tk_json_kv_double(j, "alloc_avg_minus_floor", a->vs_glibc[0]);
        tk_json_kv_double(j, "free_avg_minus_floor", a->vs_glibc[1]);
        tk_json_kv_double(j, "alloc_p99", a->vs_glibc[2]);
        tk_json_kv_double(j, "free_p99", a->vs_glibc[3]);
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
}
