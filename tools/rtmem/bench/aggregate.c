/*
 * `rtmem bench`: aggregation over rounds, shared by the phases. Every figure
 * printed or written comes from the measured per-pass summaries: medians,
 * spreads and worst cases over the passes, each pass minus the floor's
 * matching pass; a figure that does not exist (no sample) is NaN, printed
 * as "-" and written as null.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* Longest series of per-pass summaries aggregated: the fills of the
 * free-order phase, FILL_ORDERS per round. */
#define MAX_SERIES (FILL_ORDERS * BENCH_MAX_ROUNDS)

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void bench_median_min_max(const double *v, size_t n, double *med, double *lo, double *hi)
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
    bench_median_min_max(v, n, &med, &lo, &hi);
    return med;
}

/* Field of a summary by offset, so one loop serves every percentile. */
static double field(const struct tk_summary *s, size_t offset)
{
    return *(const double *)((const char *)s + offset);
}

static double median_field(const struct tk_summary *rounds, unsigned n, size_t offset)
{
    double v[MAX_SERIES] = { 0 };
    for (unsigned r = 0; r < n && r < MAX_SERIES; r++)
        v[r] = field(&rounds[r], offset);
    return median_of(v, n);
}

/* Aggregate of n per-pass summaries rs (n <= MAX_SERIES); fl holds the
 * floor's summaries of the same passes, NULL when rs is the floor's own (its
 * net figure is not a measurement: left out). */
void bench_aggregate_series(const struct tk_summary *rs, const struct tk_summary *fl, unsigned n,
                            struct op_agg *g)
{
    double mean[MAX_SERIES] = { 0 }, net[MAX_SERIES] = { 0 };

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
    bench_median_min_max(mean, n, &g->avg_ns, &g->avg_min_ns, &g->avg_max_ns);
    bench_median_min_max(net, n, &g->net_avg_ns, &g->net_min_ns, &g->net_max_ns);
    g->p50_ns = median_field(rs, n, offsetof(struct tk_summary, p50));
    g->p99_ns = median_field(rs, n, offsetof(struct tk_summary, p99));
    g->p999_ns = median_field(rs, n, offsetof(struct tk_summary, p999));
    g->p9999_ns = median_field(rs, n, offsetof(struct tk_summary, p9999));
}

/* The floor's matching series, or NULL for the floor itself. */
const struct tk_summary *bench_floor_of(const struct allocator *a,
                                        const struct tk_summary *floor_series)
{
    return a->floor ? NULL : floor_series;
}

double bench_ratio(double num, double den)
{
    if (!isfinite(num) || !isfinite(den) || den <= 0)
        return NAN;
    return num / den;
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
void bench_json_series(struct tk_json *j, const char *key, const struct tk_summary *rs,
                       const struct tk_summary *fl, unsigned n)
{
    tk_json_key(j, key);
    tk_json_begin_array(j);
    for (unsigned r = 0; r < n; r++)
        json_summary(j, &rs[r], fl ? fl[r].mean : NAN);
    tk_json_end_array(j);
}

/* The aggregate figures of g as members of the open object. */
void bench_json_agg_members(struct tk_json *j, const struct op_agg *g, const char *count_key)
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

const char *bench_api_name(const struct allocator *a)
{
    if (a->floor)
        return "floor";
    switch (a->def.from) {
    case TK_FROM_RTMEM: return "rtm_heap";
    case TK_FROM_TYPED:
        return strcmp(a->def.kind, "tlsf") == 0 ? "rtm_tlsf_typed" : "rtm_halffit_typed";
    case TK_FROM_GLIBC: return "glibc";
    case TK_FROM_PEER:
    case TK_FROM_PLUGIN: return a->def.origin; /* "peer" or "plugin" */
    }
    return "unknown";
}
