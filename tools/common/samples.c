/* Bench kit: sample store, percentiles and log-scale histogram (samples.h). */
#include "common/samples.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/out.h"

int tk_samples_init(struct tk_samples *s, size_t cap)
{
    memset(s, 0, sizeof(*s));
    if (cap == 0 || cap > SIZE_MAX / sizeof(uint64_t))
        return -EINVAL;
    s->v = malloc(cap * sizeof(uint64_t));
    if (!s->v)
        return -ENOMEM;
    /* Touch every page now so the first pass does not take the page faults.
     * Through a volatile pointer: compilers turn malloc and a memset of 0
     * into calloc, which writes nothing to a block glibc mmaps. */
    volatile uint64_t *v = s->v;
    for (size_t i = 0; i < cap; i += 512)
        v[i] = 0;
    s->cap = cap;
    s->sorted = true;
    return 0;
}

void tk_samples_destroy(struct tk_samples *s)
{
    free(s->v);
    memset(s, 0, sizeof(*s));
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void sort_store(struct tk_samples *s)
{
    if (!s->sorted) {
        qsort(s->v, s->n, sizeof(uint64_t), cmp_u64);
        s->sorted = true;
    }
}

/* Index of the nearest-rank q-percentile among n sorted values (n > 0). */
static size_t rank_index(size_t n, double q)
{
    if (!(q > 0.0))
        return 0;
    if (q >= 1.0)
        return n - 1;
    double rank = ceil(q * (double)n);
    size_t idx = rank < 1.0 ? 0 : (size_t)rank - 1;
    return idx < n ? idx : n - 1;
}

uint64_t tk_samples_percentile(struct tk_samples *s, double q)
{
    if (s->n == 0)
        return 0;
    sort_store(s);
    return s->v[rank_index(s->n, q)];
}

size_t tk_samples_count_above(struct tk_samples *s, uint64_t v)
{
    sort_store(s);
    /* The first index holding a value above v. */
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->v[mid] <= v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return s->n - lo;
}

uint64_t tk_samples_sum(const struct tk_samples *s)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < s->n; i++)
        sum += s->v[i];
    return sum;
}

void tk_samples_summarize(struct tk_samples *s, double scale, struct tk_summary *out)
{
    out->count = s->n;
    if (s->n == 0) {
        out->min = out->mean = out->p50 = out->p99 = NAN;
        out->p999 = out->p9999 = out->max = NAN;
        return;
    }
    sort_store(s);
    out->min = (double)s->v[0] * scale;
    out->max = (double)s->v[s->n - 1] * scale;
    out->mean = (double)tk_samples_sum(s) / (double)s->n * scale;
    out->p50 = (double)s->v[rank_index(s->n, 0.50)] * scale;
    out->p99 = (double)s->v[rank_index(s->n, 0.99)] * scale;
    out->p999 = (double)s->v[rank_index(s->n, 0.999)] * scale;
    out->p9999 = (double)s->v[rank_index(s->n, 0.9999)] * scale;
}

uint64_t tk_hist_bucket_lo(unsigned b)
{
    if (b == 0)
        return 0;
    if (b >= TK_HIST_BUCKETS)
        return UINT64_MAX;
    return (uint64_t)1 << (b - 1);
}

void tk_hist_fill(struct tk_hist *h, const struct tk_samples *s)
{
    memset(h, 0, sizeof(*h));
    for (size_t i = 0; i < s->n; i++)
        tk_hist_add(h, s->v[i]);
}

void tk_summary_json_spread(struct tk_json *j, const struct tk_summary *s)
{
    tk_json_kv_double(j, "min_ns", s->min);
    tk_json_kv_double(j, "p50_ns", s->p50);
    tk_json_kv_double(j, "p99_ns", s->p99);
    tk_json_kv_double(j, "p99_9_ns", s->p999);
    tk_json_kv_double(j, "p99_99_ns", s->p9999);
    tk_json_kv_double(j, "max_ns", s->max);
}

void tk_summary_json(struct tk_json *j, const char *key, const char *mean_key,
                     const struct tk_summary *s)
{
    tk_json_key(j, key);
    tk_json_begin_object(j);
    tk_json_kv_uint(j, "count", s->count);
    tk_json_kv_double(j, mean_key, s->mean);
    tk_summary_json_spread(j, s);
    tk_json_end_object(j);
}

/* The first and last non-empty buckets of h into *first, *last; false if
 * every bucket is empty. */
static bool hist_span(const struct tk_hist *h, unsigned *first, unsigned *last)
{
    unsigned b = 0;
    while (b < TK_HIST_BUCKETS && h->count[b] == 0)
        b++;
    if (b == TK_HIST_BUCKETS)
        return false;
    *first = b;
    for (b = TK_HIST_BUCKETS - 1; h->count[b] == 0; b--)
        ;
    *last = b;
    return true;
}

void tk_hist_json(struct tk_json *j, const struct tk_hist *h, const char *unit)
{
    char lo_key[32], hi_key[32];
    snprintf(lo_key, sizeof(lo_key), "lo_%s", unit);
    snprintf(hi_key, sizeof(hi_key), "hi_%s", unit);
    tk_json_begin_array(j);
    unsigned first, last;
    if (hist_span(h, &first, &last)) {
        for (unsigned b = first; b <= last; b++) {
            tk_json_begin_object_compact(j);
            tk_json_kv_uint(j, lo_key, tk_hist_bucket_lo(b));
            if (tk_json_key_or_null(j, hi_key, b + 1 < TK_HIST_BUCKETS))
                tk_json_uint(j, tk_hist_bucket_lo(b + 1));
            tk_json_kv_uint(j, "count", h->count[b]);
            tk_json_end_object(j);
        }
    }
    tk_json_end_array(j);
}

#define HIST_BAR 36

void tk_hist_print(FILE *f, const struct tk_hist *h, double scale, int decimals, const char *unit)
{
    unsigned first, last;
    if (!hist_span(h, &first, &last)) {
        fprintf(f, "  (empty)\n");
        return;
    }
    uint64_t most = 0;
    for (unsigned b = first; b <= last; b++)
        most = h->count[b] > most ? h->count[b] : most;
    for (unsigned b = first; b <= last; b++) {
        char lo[TK_FMT_MAX], hi[TK_FMT_MAX], count[TK_FMT_MAX];
        tk_fmt_double(lo, sizeof(lo), (double)tk_hist_bucket_lo(b) * scale, decimals);
        if (b + 1 < TK_HIST_BUCKETS)
            tk_fmt_double(hi, sizeof(hi), (double)tk_hist_bucket_lo(b + 1) * scale, decimals);
        else
            snprintf(hi, sizeof(hi), "inf");
        tk_fmt_uint(count, sizeof(count), h->count[b]);
        /* Rounded up: a bucket with anything in it shows. */
        unsigned bar = (unsigned)ceil((double)h->count[b] * HIST_BAR / (double)most);
        fprintf(f, "  %10s .. %10s %s %9s  %.*s\n", lo, hi, unit, count, (int)bar,
                "####################################");
    }
}
