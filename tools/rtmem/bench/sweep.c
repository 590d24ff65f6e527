/*
 * `rtmem bench`: the size sweep. For each 64-byte bucket of request sizes,
 * every allocator runs a warm-up pass and a timed pass of a workload drawn
 * from that bucket; its table (alloc+free pair minus the floor) and its
 * JSON ("sweep", every bucket).
 */
#include <math.h>
#include <string.h>

#include "bench.h"
#include "common/out.h"

double bench_mean_ns(const struct bench *b, const struct tk_samples *s)
{
    if (s->n == 0)
        return NAN;
    return (double)tk_samples_sum(s) / (double)s->n * b->timer.ns_per_tick;
}

void bench_run_sweep(struct bench *b)
{
    struct pass_out out;
    uint64_t t0 = tk_clock_ns();
    double floor_sum = 0;
    for (unsigned bk = 0; bk < SWEEP_BUCKETS; bk++) {
        uint32_t lo = bk * SWEEP_BUCKET_BYTES, hi = lo + SWEEP_BUCKET_BYTES - 1;
        bench_workload_generate(&b->w, b->o.sweep_ops, lo, hi, b->o.live_cap,
                                b->o.seed ^ ((uint64_t)(bk + 1) * 0x9e3779b97f4a7c15u));
        for (size_t k = 0; k < b->n_al; k++) {
            size_t i = bench_order_index(k, b->n_al, bk);
            struct allocator *a = &b->al[i];
            if (bench_left_out(b, i))
                continue;
            tk_rt_breather(&b->rt);
            bench_mark_pass(b, i, PH_SWEEP, bk, false);
            bench_run_pass(b, a, &out); /* warm-up for this size range */
            bench_run_pass(b, a, &out);
            a->sweep_alloc_ns[bk] = bench_mean_ns(b, out.alloc_ticks);
            a->sweep_free_ns[bk] = bench_mean_ns(b, out.free_ticks);
            a->sweep_failed[bk] = out.failed_allocs;
            a->free_errors += out.free_errors;
        }
        floor_sum += b->al[0].sweep_alloc_ns[bk] + b->al[0].sweep_free_ns[bk];
    }
    b->sweep_floor_ns = floor_sum / SWEEP_BUCKETS;
    b->sweep_seconds = (double)(tk_clock_ns() - t0) / 1e9;
    b->ran_sweep = true;
}

/* An alloc+free pair of bucket bk minus the floor's mean pair. */
static double sweep_net(const struct bench *b, const struct allocator *a, unsigned bk)
{
    return a->sweep_alloc_ns[bk] + a->sweep_free_ns[bk] - b->sweep_floor_ns;
}

void bench_aggregate_sweep(struct bench *b)
{
    if (!b->ran_sweep)
        return;
    for (size_t i = 0; i < b->n_al; i++) {
        struct allocator *a = &b->al[i];
        double sum = 0;
        for (unsigned bk = 0; bk < SWEEP_BUCKETS; bk++)
            sum += sweep_net(b, a, bk);
        a->sweep_net_mean_ns = sum / SWEEP_BUCKETS;
    }
}

void bench_print_sweep(FILE *f, const struct bench *b)
{
    if (!b->ran_sweep)
        return;
    struct tk_col cols[BENCH_MAX_ALLOCATORS];
    const char *cells[BENCH_MAX_ALLOCATORS];
    char buf[BENCH_MAX_ALLOCATORS][32];
    size_t n = b->n_al; /* column 0: sizes; columns 1..: allocators but the floor */

    fprintf(f,
            "\nsize sweep: %.2f s. Mean alloc+free pair in ns minus the floor (%.1f ns), by "
            "request size;\nevery %uth of %u buckets shown (all in the JSON), last row: mean "
            "over all buckets\n",
            b->sweep_seconds, b->sweep_floor_ns, SWEEP_PRINT_EVERY, SWEEP_BUCKETS);
    cols[0] = (struct tk_col){ "size, B", 12, true };
    for (size_t i = 1; i < n; i++) {
        int w = (int)strlen(b->al[i].def.name);
        cols[i] = (struct tk_col){ b->al[i].def.name, w < 8 ? 8 : w, false };
    }
    tk_table_header(f, cols, n);
    for (unsigned bk = 0; bk < SWEEP_BUCKETS; bk++) {
        if (bk % SWEEP_PRINT_EVERY != 0 && bk != SWEEP_BUCKETS - 1)
            continue;
        snprintf(buf[0], 32, "%u..%u", bk * SWEEP_BUCKET_BYTES, (bk + 1) * SWEEP_BUCKET_BYTES - 1);
        cells[0] = buf[0];
        for (size_t i = 1; i < n; i++)
            cells[i] = tk_fmt_double(buf[i], 32, sweep_net(b, &b->al[i], bk), 1);
        tk_table_row(f, cols, n, cells);
    }
    cells[0] = "all (mean)";
    for (size_t i = 1; i < n; i++)
        cells[i] = tk_fmt_double(buf[i], 32, b->al[i].sweep_net_mean_ns, 1);
    tk_table_row(f, cols, n, cells);
}

void bench_json_doubles(struct tk_json *j, const char *key, const double *v, size_t n)
{
    tk_json_key(j, key);
    tk_json_begin_array(j);
    for (size_t i = 0; i < n; i++)
        tk_json_double(j, v[i]);
    tk_json_end_array(j);
}

void bench_json_sweep(struct tk_json *j, const struct bench *b)
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
        tk_json_kv_string(j, "name", a->def.name);
        bench_json_doubles(j, "alloc_avg_ns", a->sweep_alloc_ns, SWEEP_BUCKETS);
        bench_json_doubles(j, "free_avg_ns", a->sweep_free_ns, SWEEP_BUCKETS);
        for (unsigned bk = 0; bk < SWEEP_BUCKETS; bk++)
            v[bk] = a->floor ? NAN : sweep_net(b, a, bk);
        bench_json_doubles(j, "alloc_free_minus_floor_ns", v, SWEEP_BUCKETS);
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
