/*
 * Bench kit: a sample store with percentiles and a log-scale histogram.
 *
 * The store is an array of uint64 values (timer ticks, or nanoseconds, or any
 * other unit: the store does not care) allocated and prefaulted once by
 * tk_samples_init, so that recording a sample in a timed loop is a bounds
 * check and a store: no allocation, no page fault. Samples beyond the
 * capacity are counted in `dropped`, never written.
 *
 * Summaries sort the array in place (O(n log n), never in a timed loop) and
 * use the nearest-rank percentile: the smallest value v such that at least
 * q * count samples are <= v. With fewer than 1 / (1 - q) samples the
 * percentile is the maximum; e.g. p99.99 of 5000 samples is the max.
 */
#ifndef RTMEM_TOOLS_SAMPLES_H
#define RTMEM_TOOLS_SAMPLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct tk_samples {
    uint64_t *v;    /* the values, v[0 .. n) */
    size_t n;       /* values recorded */
    size_t cap;     /* capacity of v */
    size_t dropped; /* add() calls refused because the store was full */
    bool sorted;    /* v is sorted (set by the summaries, cleared by add) */
};

/* Allocates room for cap values and touches every page of it. Returns 0, or
 * -EINVAL for cap 0 or too large, -ENOMEM. */
int tk_samples_init(struct tk_samples *s, size_t cap);

/* Releases the storage; *s may be initialised again. NULL storage is fine. */
void tk_samples_destroy(struct tk_samples *s);

/* Forgets every value (and the dropped count); keeps the storage. O(1). */
static inline void tk_samples_reset(struct tk_samples *s)
{
    s->n = 0;
    s->dropped = 0;
    s->sorted = true;
}

/* Records one value. O(1), no allocation: safe in a timed loop. */
static inline void tk_samples_add(struct tk_samples *s, uint64_t value)
{
    if (s->n < s->cap) {
        s->v[s->n++] = value;
        s->sorted = false;
    } else {
        s->dropped++;
    }
}

/* Summary of a store, every figure multiplied by the scale given to
 * tk_samples_summarize (e.g. ns per tick, to get nanoseconds). With no
 * sample, count is 0 and every other field is NaN. */
struct tk_summary {
    size_t count;
    double min;
    double mean;
    double p50;
    double p99;
    double p999;  /* 99.9th percentile */
    double p9999; /* 99.99th percentile */
    double max;
};

/* Sorts the store (if needed) and fills *out. O(n log n). */
void tk_samples_summarize(struct tk_samples *s, double scale, struct tk_summary *out);

/* Nearest-rank percentile q in [0, 1] of the (sorted on demand) store, in
 * the store's unit; 0 for an empty store. O(n log n) the first time, O(1)
 * after. */
uint64_t tk_samples_percentile(struct tk_samples *s, double q);

/* How many values are above v (strictly). Sorts the store on demand, then
 * O(log n). */
size_t tk_samples_count_above(struct tk_samples *s, uint64_t v);

/* Sum of all values, exact (no rounding) unless it overflows 64 bits. O(n). */
uint64_t tk_samples_sum(const struct tk_samples *s);

struct tk_json;

/* The spread of a summary in nanoseconds as members of the open JSON object:
 * min_ns, p50_ns, p99_ns, p99_9_ns, p99_99_ns, max_ns (null where NaN). The
 * caller writes count, the mean and anything else around them. */
void tk_summary_json_spread(struct tk_json *j, const struct tk_summary *s);
/* The summary as the member key of the open JSON object: {count, the mean
 * under mean_key ("avg_ns", "mean_ns"), then the spread above}. */
void tk_summary_json(struct tk_json *j, const char *key, const char *mean_key,
                     const struct tk_summary *s);

/*
 * Log-scale histogram: bucket 0 counts the value 0, bucket b >= 1 counts
 * values in [2^(b-1), 2^b). 65 buckets cover every uint64. Fill it from a
 * store after the timed loop (tk_hist_fill), or value by value (tk_hist_add,
 * O(1), safe in a timed loop).
 */
#define TK_HIST_BUCKETS 65

struct tk_hist {
    uint64_t count[TK_HIST_BUCKETS];
};

/* Lower bound (inclusive) of bucket b, in the values' unit. */
uint64_t tk_hist_bucket_lo(unsigned b);

static inline unsigned tk_hist_bucket_of(uint64_t value)
{
    return value ? 64u - (unsigned)__builtin_clzll(value) : 0u;
}

static inline void tk_hist_add(struct tk_hist *h, uint64_t value)
{
    h->count[tk_hist_bucket_of(value)]++;
}

/* Clears h, then counts every value of s into it. O(n). */
void tk_hist_fill(struct tk_hist *h, const struct tk_samples *s);

/* The buckets from the first non-empty one to the last, as a JSON array
 * value of one-line objects {"lo_<unit>", "hi_<unit>", "count"} (values in
 * [lo, hi); hi is null for bucket 64, whose bound no uint64 holds); [] if
 * every bucket is empty. unit names the values' unit in the keys ("ns"). */
void tk_hist_json(struct tk_json *j, const struct tk_hist *h, const char *unit);

/* The same buckets as text, a row each: "  lo .. hi unit  count  ###",
 * the bounds multiplied by scale (1e-3: ns shown in us) with that many
 * decimals, a bar of up to 36 '#' in proportion to the count (one at
 * least for a count above 0), within 80 columns for bounds of up to 10
 * characters. "  (empty)" if every bucket is. */
void tk_hist_print(FILE *f, const struct tk_hist *h, double scale, int decimals, const char *unit);

#endif /* RTMEM_TOOLS_SAMPLES_H */
