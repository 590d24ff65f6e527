/*
 * `rtmem bench`: the sweep's wide ranges. After the 64-byte buckets, the
 * sweep runs wide ranges of request sizes (1 KiB each, from 1 byte to
 * 8 KiB, past the page) --wide-reps times, each time with draws of its
 * own, every allocator on the same draws in turn: each repetition gives a
 * mean alloc+free pair, less the floor's on the same draws, and the
 * repetitions give its median and spread. Its table and its JSON ("wide").
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "common/out.h"

/* Salts the wide ranges' draws apart from the buckets' (sweep.c). */
#define WIDE_SEED_SALT 0x2545f4914f6cdd1du

void bench_run_wide(struct bench *b)
{
    struct pass_out out;
    uint64_t t0 = tk_clock_ns();
    unsigned reps = b->o.wide_reps;
    for (unsigned k = 0; k < reps; k++) {
        for (unsigned r = 0; r < WIDE_RANGES; r++) {
            uint32_t lo = r * WIDE_RANGE_BYTES + 1, hi = (r + 1) * WIDE_RANGE_BYTES;
            uint64_t draw = (uint64_t)k * WIDE_RANGES + r + 1;
            bench_workload_generate(&b->w, b->o.sweep_ops, lo, hi, b->o.live_cap,
                                    b->o.seed ^ WIDE_SEED_SALT ^ (draw * 0x9e3779b97f4a7c15u));
            for (size_t j = 0; j < b->n_al; j++) {
                size_t i = bench_order_index(j, b->n_al, k * WIDE_RANGES + r);
                struct allocator *a = &b->al[i];
                if (bench_left_out(b, i))
                    continue;
                tk_rt_breather(&b->rt);
                bench_mark_pass(b, i, PH_WIDE, r, false);
                bench_run_pass(b, a, &out); /* warm-up for these draws */
                bench_run_pass(b, a, &out);
                a->wide_pair_ns[r * reps + k] =
                    bench_mean_ns(b, out.alloc_ticks) + bench_mean_ns(b, out.free_ticks);
                a->wide_failed[r] += out.failed_allocs;
                a->free_errors += out.free_errors;
            }
        }
    }
    b->wide_seconds = (double)(tk_clock_ns() - t0) / 1e9;
    b->ran_wide = true;
}

/* The median, least and most of the repetitions of range r of a, each less
 * the floor's pair on the same draws; NaN where no repetition has a
 * figure (every allocation failed: no free was timed). */
struct wide_stat {
    double median, min, max;
    unsigned n;
};

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static struct wide_stat wide_stat(const struct bench *b, const struct allocator *a, unsigned r)
{
    unsigned reps = b->o.wide_reps, n = 0;
    double v[BENCH_MAX_WIDE_REPS];
    for (unsigned k = 0; k < reps; k++) {
        double x = a->wide_pair_ns[r * reps + k] - b->al[0].wide_pair_ns[r * reps + k];
        if (!isnan(x))
            v[n++] = x;
    }
    if (n == 0)
        return (struct wide_stat){ NAN, NAN, NAN, 0 };
    qsort(v, n, sizeof(v[0]), cmp_double);
    double median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    return (struct wide_stat){ median, v[0], v[n - 1], n };
}

void bench_print_wide(FILE *f, const struct bench *b)
{
    if (!b->ran_wide)
        return;
    struct tk_col cols[1 + WIDE_RANGES];
    const char *cells[1 + WIDE_RANGES];
    char buf[1 + WIDE_RANGES][40];
    fprintf(f,
            "\nwide ranges: %.2f s. Alloc+free pair in ns minus the floor's on the same draws, "
            "by request\nsize range: median over %u runs of each range (each its own draws, "
            "%llu operations),\nthen the least and the most; - where every allocation failed\n",
            b->wide_seconds, b->o.wide_reps, (unsigned long long)b->o.sweep_ops);
    char titles[WIDE_RANGES][16];
    cols[0] = (struct tk_col){ "allocator", 14, true };
    for (unsigned r = 0; r < WIDE_RANGES; r++) {
        snprintf(titles[r], sizeof(titles[r]), "%uK..%uK", r, r + 1);
        cols[1 + r] = (struct tk_col){ titles[r], 16, false };
    }
    tk_table_header(f, cols, 1 + WIDE_RANGES);
    for (size_t i = 1; i < b->n_al; i++) {
        const struct allocator *a = &b->al[i];
        cells[0] = a->def.name;
        for (unsigned r = 0; r < WIDE_RANGES; r++) {
            struct wide_stat s = wide_stat(b, a, r);
            if (s.n == 0)
                snprintf(buf[1 + r], sizeof(buf[0]), "-");
            else
                snprintf(buf[1 + r], sizeof(buf[0]), "%.0f [%.0f, %.0f]", s.median, s.min, s.max);
            cells[1 + r] = buf[1 + r];
        }
        tk_table_row(f, cols, 1 + WIDE_RANGES, cells);
    }
}

void bench_json_wide(struct tk_json *j, const struct bench *b)
{
    if (!tk_json_key_or_null(j, "wide", b->ran_wide))
        return;
    unsigned reps = b->o.wide_reps;
    tk_json_begin_object(j);
    tk_json_kv_uint(j, "range_width_bytes", WIDE_RANGE_BYTES);
    tk_json_kv_uint(j, "ranges", WIDE_RANGES);
    tk_json_kv_uint(j, "reps", reps);
    tk_json_kv_uint(j, "ops_per_range", b->o.sweep_ops);
    tk_json_kv_double(j, "seconds", b->wide_seconds);
    tk_json_key(j, "range_min_bytes");
    tk_json_begin_array(j);
    for (unsigned r = 0; r < WIDE_RANGES; r++)
        tk_json_uint(j, r * WIDE_RANGE_BYTES + 1);
    tk_json_end_array(j);
    tk_json_key(j, "range_max_bytes");
    tk_json_begin_array(j);
    for (unsigned r = 0; r < WIDE_RANGES; r++)
        tk_json_uint(j, (r + 1) * WIDE_RANGE_BYTES);
    tk_json_end_array(j);
    tk_json_key(j, "allocators");
    tk_json_begin_array(j);
    for (size_t i = 0; i < b->n_al; i++) {
        const struct allocator *a = &b->al[i];
        double med[WIDE_RANGES], lo[WIDE_RANGES], hi[WIDE_RANGES];
        tk_json_begin_object(j);
        tk_json_kv_string(j, "name", a->def.name);
        /* each range's repetitions: the raw pair, floor included */
        tk_json_key(j, "pair_ns");
        tk_json_begin_array(j);
        for (unsigned r = 0; r < WIDE_RANGES; r++) {
            tk_json_begin_array(j);
            for (unsigned k = 0; k < reps; k++)
                tk_json_double(j, a->wide_pair_ns[r * reps + k]);
            tk_json_end_array(j);
        }
        tk_json_end_array(j);
        for (unsigned r = 0; r < WIDE_RANGES; r++) {
            struct wide_stat s =
                a->floor ? (struct wide_stat){ NAN, NAN, NAN, 0 } : wide_stat(b, a, r);
            med[r] = s.median;
            lo[r] = s.min;
            hi[r] = s.max;
        }
        bench_json_doubles(j, "net_median_ns", med, WIDE_RANGES);
        bench_json_doubles(j, "net_min_ns", lo, WIDE_RANGES);
        bench_json_doubles(j, "net_max_ns", hi, WIDE_RANGES);
        tk_json_key(j, "failed_allocs");
        tk_json_begin_array(j);
        for (unsigned r = 0; r < WIDE_RANGES; r++)
            tk_json_uint(j, a->wide_failed[r]);
        tk_json_end_array(j);
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
    tk_json_end_object(j);
}
