/*
 * `rtmem bench`: the free-order phase. Each pass fills a fresh heap with the
 * same pre-generated sizes, then frees every block, in allocation order or
 * in one fixed random order, every call timed; its table and its JSON
 * ("free_order").
 */
#include <math.h>
#include <stdio.h>

#include "bench.h"
#include "common/out.h"

static const char *const fill_order_keys[FILL_ORDERS] = { "in_order", "shuffled" };

/* How many of the fill's requests are above RTM_PAGEHEAP_MAX_BUCKET: page
 * runs (kept in trees) in heapmem and xnheap, bucket slots below. */
static size_t fill_runs(const struct fill_work *fw)
{
    size_t n = 0;
    for (size_t i = 0; i < fw->n; i++)
        n += fw->sizes[i] > RTM_PAGEHEAP_MAX_BUCKET;
    return n;
}

/* Free-order phase: per round, every allocator (order alternating as in the
 * main phase) runs both orders, the one going first alternating by round.
 * 0, or -1 if a heap could not be created again (reported). */
int bench_run_free_order(struct bench *b)
{
    struct pass_out out;
    uint64_t t0 = tk_clock_ns();
    bench_fill_work_generate(&b->fw, b->o.fill_blocks, b->o.min_size_bytes, b->o.max_size_bytes,
                             b->o.seed ^ FILL_SEED_SALT);
    b->fill_n = b->fw.n;
    b->fill_runs = fill_runs(&b->fw);
    /* Warm-up: one unrecorded pass of each order per allocator. */
    for (size_t k = 0; k < b->n_al; k++)
        for (int o = 0; o < FILL_ORDERS && !bench_left_out(b, k); o++) {
            tk_rt_breather(&b->rt);
            bench_mark_pass(b, k, PH_FREE_ORDER, 0, true);
            if (bench_run_fill_pass(b, &b->al[k], (enum fill_order)o, &out) != 0)
                return -1;
        }
    for (unsigned r = 0; r < b->o.rounds; r++) {
        for (size_t k = 0; k < b->n_al; k++) {
            size_t idx = bench_order_index(k, b->n_al, r);
            struct allocator *a = &b->al[idx];
            for (unsigned i = 0; i < FILL_ORDERS && !bench_left_out(b, idx); i++) {
                enum fill_order o = (enum fill_order)((r + i) % FILL_ORDERS);
                tk_rt_breather(&b->rt);
                bench_mark_pass(b, idx, PH_FREE_ORDER, r, false);
                if (bench_run_fill_pass(b, a, o, &out) != 0)
                    return -1;
                tk_samples_summarize(out.alloc_ticks, b->timer.ns_per_tick,
                                     &a->fill_alloc[o * b->o.rounds + r]);
                tk_samples_summarize(out.free_ticks, b->timer.ns_per_tick, &a->fill_free[o][r]);
                a->fill_failed_allocs += out.failed_allocs;
                a->fill_skipped_frees += out.skipped_frees;
                a->free_errors += out.free_errors;
            }
        }
    }
    b->free_order_seconds = (double)(tk_clock_ns() - t0) / 1e9;
    b->ran_free_order = true;
    return 0;
}

/* Ratio shuffled / in-order of the free-order phase: [0] avg-floor, [1] p99. */
static void free_order_ratios(const struct allocator *a, double out[2])
{
    const struct op_agg *in = &a->fill_free_agg[FILL_IN_ORDER];
    const struct op_agg *sh = &a->fill_free_agg[FILL_SHUFFLED];
    out[0] = bench_ratio(sh->net_avg_ns, in->net_avg_ns);
    out[1] = bench_ratio(sh->p99_ns, in->p99_ns);
}

void bench_aggregate_free_order(struct bench *b)
{
    if (!b->ran_free_order)
        return;
    const struct allocator *fl = &b->al[0];
    for (size_t i = 0; i < b->n_al; i++) {
        struct allocator *a = &b->al[i];
        bench_aggregate_series(a->fill_alloc, bench_floor_of(a, fl->fill_alloc),
                               FILL_ORDERS * b->o.rounds, &a->fill_alloc_agg);
        for (int o = 0; o < FILL_ORDERS; o++)
            bench_aggregate_series(a->fill_free[o], bench_floor_of(a, fl->fill_free[o]),
                                   b->o.rounds, &a->fill_free_agg[o]);
        a->shuffled_over_in_order[0] = a->shuffled_over_in_order[1] = NAN;
        if (!a->floor)
            free_order_ratios(a, a->shuffled_over_in_order);
    }
}

void bench_print_free_order(FILE *f, const struct bench *b)
{
    if (!b->ran_free_order)
        return;
    enum { C_NAME, C_FILL, C_IN, C_IN99, C_SH, C_SH99, C_RATIO, C_N };
    static const struct tk_col cols[C_N] = {
        [C_NAME] = { "allocator", 12, true },
        [C_FILL] = { "fill alloc avg-floor", 20, false },
        [C_IN] = { "in-order avg-floor", 18, false },
        [C_IN99] = { "p99", 8, false },
        [C_SH] = { "shuffled avg-floor", 18, false },
        [C_SH99] = { "p99", 8, false },
        [C_RATIO] = { "shuffled/in-order", 17, false },
    };
    const struct allocator *fl = &b->al[0];
    char buf[C_N][32];
    const char *cells[C_N];

    fprintf(f,
            "\nfree order: %.2f s. Each pass fills a freshly created heap (rtmem kinds; glibc "
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
            b->fill_runs, RTM_PAGEHEAP_MAX_BUCKET, (unsigned long long)(b->o.seed ^ FILL_SEED_SALT),
            b->o.rounds, FILL_ORDERS * b->o.rounds);
    fprintf(f, "\nfree latency by order (and fill alloc), ns\n");
    tk_table_header(f, cols, C_N);
    for (size_t i = 1; i < b->n_al; i++) {
        const struct allocator *a = &b->al[i];
        const struct op_agg *in = &a->fill_free_agg[FILL_IN_ORDER];
        const struct op_agg *sh = &a->fill_free_agg[FILL_SHUFFLED];
        cells[C_NAME] = a->def.name;
        cells[C_FILL] = tk_fmt_double(buf[C_FILL], 32, a->fill_alloc_agg.net_avg_ns, 1);
        cells[C_IN] = tk_fmt_double(buf[C_IN], 32, in->net_avg_ns, 1);
        cells[C_IN99] = tk_fmt_double(buf[C_IN99], 32, in->p99_ns, 1);
        cells[C_SH] = tk_fmt_double(buf[C_SH], 32, sh->net_avg_ns, 1);
        cells[C_SH99] = tk_fmt_double(buf[C_SH99], 32, sh->p99_ns, 1);
        cells[C_RATIO] = tk_fmt_ratio(buf[C_RATIO], 32, a->shuffled_over_in_order[0]);
        tk_table_row(f, cols, C_N, cells);
    }
    fprintf(f,
            "\nfloor in this phase: alloc %.1f ns, free %.1f ns in-order, %.1f ns shuffled "
            "(median of pass means)\n",
            fl->fill_alloc_agg.avg_ns, fl->fill_free_agg[FILL_IN_ORDER].avg_ns,
            fl->fill_free_agg[FILL_SHUFFLED].avg_ns);
}

void bench_json_free_order(struct tk_json *j, const struct bench *b)
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
        tk_json_kv_string(j, "name", a->def.name);
        tk_json_kv_uint(j, "failed_allocs", a->fill_failed_allocs);
        tk_json_kv_uint(j, "skipped_frees", a->fill_skipped_frees);
        tk_json_key(j, "fill_alloc");
        tk_json_begin_object(j);
        bench_json_agg_members(j, &a->fill_alloc_agg, "count_per_pass");
        char key[32];
        for (int o = 0; o < FILL_ORDERS; o++) {
            snprintf(key, sizeof(key), "rounds_%s", fill_order_keys[o]);
            bench_json_series(j, key, a->fill_alloc + (size_t)o * n,
                              bench_floor_of(a, fl->fill_alloc + (size_t)o * n), n);
        }
        tk_json_end_object(j);
        for (int o = 0; o < FILL_ORDERS; o++) {
            snprintf(key, sizeof(key), "free_%s", fill_order_keys[o]);
            tk_json_key(j, key);
            tk_json_begin_object(j);
            bench_json_agg_members(j, &a->fill_free_agg[o], "count_per_pass");
            bench_json_series(j, "rounds", a->fill_free[o], bench_floor_of(a, fl->fill_free[o]), n);
            tk_json_end_object(j);
        }
        tk_json_kv_double(j, "shuffled_over_in_order_avg_minus_floor",
                          a->shuffled_over_in_order[0]);
        tk_json_kv_double(j, "shuffled_over_in_order_p99", a->shuffled_over_in_order[1]);
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
    tk_json_end_object(j);
}
