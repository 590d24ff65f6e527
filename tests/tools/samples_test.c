/*
 * The bench kit's sample store (tools/common/samples.h), against its header:
 * nearest-rank percentiles on known data (empty, one value, ties, the
 * "fewer than 1 / (1 - q) samples" rule), the summary's min, max, mean and
 * scale, NaN for an empty store, capacity and the dropped count, the
 * log-scale histogram's bucket edges and counts, and the spread's JSON.
 */
#include <errno.h>
#include <math.h>

#include "check.h"
#include "common/out.h"
#include "common/samples.h"

/* A store holding exactly the n values given, in that order. */
static struct tk_samples store_of(const uint64_t *v, size_t n, size_t cap)
{
    struct tk_samples s;
    if (tk_samples_init(&s, cap) != 0) {
        CHECK(!"tk_samples_init");
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        tk_samples_add(&s, v[i]);
    return s;
}

/* The nearest-rank percentile by its definition: the smallest value v of
 * the data with at least q * n values <= v (q * n computed exactly for the
 * q given as parts per 10,000). */
static uint64_t nearest_rank(const uint64_t *v, size_t n, unsigned q_per_10k)
{
    uint64_t best = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        size_t at_most = 0;
        for (size_t k = 0; k < n; k++)
            at_most += v[k] <= v[i];
        if ((uint64_t)at_most * 10000 >= (uint64_t)q_per_10k * n && v[i] < best)
            best = v[i];
    }
    return best;
}

TEST_CASE("init")
{
    test_context = "init";
    struct tk_samples s;
    CHECK_EQ(tk_samples_init(&s, 0), -EINVAL);
    CHECK_EQ(tk_samples_init(&s, SIZE_MAX), -EINVAL);
    CHECK_EQ(tk_samples_init(&s, SIZE_MAX / sizeof(uint64_t) + 1), -EINVAL);
    REQUIRE(tk_samples_init(&s, 3) == 0, );
    CHECK_EQ(s.n, 0);
    CHECK(s.sorted); /* nothing to sort */
    CHECK_EQ(s.cap, 3);
    CHECK_EQ(s.dropped, 0);
    for (uint64_t i = 1; i <= 5; i++)
        tk_samples_add(&s, i * 10);
    CHECK_EQ(s.n, 3);
    CHECK_EQ(s.dropped, 2);
    CHECK(s.v[0] == 10 && s.v[1] == 20 && s.v[2] == 30); /* the first three, never more */
    CHECK_EQ(tk_samples_sum(&s), 60);
    CHECK(!s.sorted);
    tk_samples_reset(&s);
    CHECK_EQ(s.n, 0);
    CHECK_EQ(s.dropped, 0);
    CHECK(s.sorted);
    CHECK_EQ(s.cap, 3); /* storage kept */
    tk_samples_add(&s, 7);
    CHECK_EQ(tk_samples_percentile(&s, 0.5), 7);
    tk_samples_destroy(&s);
    CHECK(s.v == NULL);
    tk_samples_destroy(&s);                 /* NULL storage is fine */
    REQUIRE(tk_samples_init(&s, 1) == 0, ); /* initialised again */
    tk_samples_destroy(&s);
}

TEST_CASE("empty")
{
    test_context = "empty";
    struct tk_samples s = store_of(NULL, 0, 4);
    CHECK_EQ(tk_samples_percentile(&s, 0.5), 0);
    CHECK_EQ(tk_samples_percentile(&s, 1.0), 0);
    CHECK_EQ(tk_samples_sum(&s), 0);
    struct tk_summary sum;
    tk_samples_summarize(&s, 1.0, &sum);
    CHECK_EQ(sum.count, 0);
    CHECK(isnan(sum.min) && isnan(sum.mean) && isnan(sum.p50) && isnan(sum.p99));
    CHECK(isnan(sum.p999) && isnan(sum.p9999) && isnan(sum.max));
    tk_samples_destroy(&s);
}

TEST_CASE("one")
{
    test_context = "one value";
    uint64_t v[] = { 42 };
    struct tk_samples s = store_of(v, 1, 1);
    const double qs[] = { 0.0, 0.01, 0.5, 0.99, 0.9999, 1.0 };
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++)
        CHECK_EQ(tk_samples_percentile(&s, qs[i]), 42);
    struct tk_summary sum;
    tk_samples_summarize(&s, 1.0, &sum);
    CHECK_EQ(sum.count, 1);
    CHECK(sum.min == 42 && sum.max == 42 && sum.mean == 42 && sum.p50 == 42);
    CHECK(sum.p99 == 42 && sum.p999 == 42 && sum.p9999 == 42);
    tk_samples_destroy(&s);
}

/* 1..100 given in a scrambled order: the percentile sorts on demand. */
TEST_CASE("hundred")
{
    test_context = "1..100";
    uint64_t v[100];
    for (size_t i = 0; i < 100; i++)
        v[i] = (i * 37) % 100 + 1; /* 37 is coprime with 100: a permutation */
    struct tk_samples s = store_of(v, 100, 101);
    CHECK_EQ(tk_samples_percentile(&s, 0.0), 1);
    CHECK_EQ(tk_samples_percentile(&s, 0.01), 1);
    CHECK_EQ(tk_samples_percentile(&s, 0.011), 2);
    CHECK_EQ(tk_samples_percentile(&s, 0.5), 50);
    CHECK_EQ(tk_samples_percentile(&s, 0.505), 51);
    CHECK_EQ(tk_samples_percentile(&s, 0.99), 99);
    CHECK_EQ(tk_samples_percentile(&s, 0.999), 100); /* fewer than 1000 samples */
    CHECK_EQ(tk_samples_percentile(&s, 1.0), 100);
    CHECK_EQ(tk_samples_sum(&s), 5050);

    struct tk_summary sum;
    tk_samples_summarize(&s, 0.5, &sum); /* every figure scaled */
    CHECK_EQ(sum.count, 100);
    CHECK(sum.min == 0.5);
    CHECK(sum.max == 50.0);
    CHECK(fabs(sum.mean - 25.25) < 1e-9);
    CHECK(sum.p50 == 25.0);
    CHECK(sum.p99 == 49.5);
    CHECK(sum.p999 == 50.0 && sum.p9999 == 50.0);

    /* "Summaries sort the array in place" */
    CHECK(s.sorted);
    bool ascending = true;
    for (size_t i = 1; i < s.n; i++)
        ascending &= s.v[i - 1] <= s.v[i];
    CHECK(ascending && s.v[0] == 1 && s.v[99] == 100);

    tk_samples_add(&s, 1000); /* a value added after a summary counts */
    CHECK(!s.sorted);
    CHECK_EQ(tk_samples_percentile(&s, 1.0), 1000);
    CHECK_EQ(tk_samples_percentile(&s, 0.0), 1);
    tk_samples_destroy(&s);
}

/* Ties, and percentiles checked against the definition on many small sets. */
TEST_CASE("ties")
{
    test_context = "ties";
    uint64_t v[] = { 7, 5, 5, 5 };
    struct tk_samples s = store_of(v, 4, 4);
    CHECK_EQ(tk_samples_percentile(&s, 0.25), 5);
    CHECK_EQ(tk_samples_percentile(&s, 0.75), 5);
    CHECK_EQ(tk_samples_percentile(&s, 0.76), 7);
    struct tk_summary sum;
    tk_samples_summarize(&s, 1.0, &sum);
    CHECK(sum.min == 5 && sum.max == 7 && sum.mean == 5.5 && sum.p50 == 5);
    tk_samples_destroy(&s);

    test_context = "definition";
    uint64_t rng = 3;
    const unsigned qs[] = { 1, 100, 2500, 5000, 7500, 9000, 9900, 9990, 9999, 10000 };
    for (int round = 0; round < 300; round++) {
        size_t n = 1 + (size_t)(rng_next(&rng) % 60);
        uint64_t data[60];
        for (size_t i = 0; i < n; i++)
            data[i] = rng_next(&rng) % 8; /* many ties */
        struct tk_samples t = store_of(data, n, n);
        for (size_t k = 0; k < sizeof qs / sizeof qs[0]; k++)
            CHECK_EQ(tk_samples_percentile(&t, qs[k] / 10000.0), nearest_rank(data, n, qs[k]));
        tk_samples_summarize(&t, 1.0, &sum);
        CHECK(sum.p50 == (double)nearest_rank(data, n, 5000));
        CHECK(sum.p99 == (double)nearest_rank(data, n, 9900));
        CHECK(sum.p999 == (double)nearest_rank(data, n, 9990));
        CHECK(sum.p9999 == (double)nearest_rank(data, n, 9999));
        tk_samples_destroy(&t);
    }
}

/* "With fewer than 1 / (1 - q) samples the percentile is the maximum; e.g.
 * p99.99 of 5000 samples is the max", and at 1 / (1 - q) it no longer is. */
TEST_CASE("tail rule")
{
    test_context = "tail rule";
    struct tk_samples s;
    REQUIRE(tk_samples_init(&s, 10000) == 0, );
    for (uint64_t i = 1; i <= 5000; i++)
        tk_samples_add(&s, i);
    struct tk_summary sum;
    tk_samples_summarize(&s, 1.0, &sum);
    CHECK(sum.p9999 == 5000 && sum.max == 5000);
    CHECK(sum.p999 == 4995);
    CHECK(sum.p99 == 4950);
    tk_samples_reset(&s);
    for (uint64_t i = 1; i <= 10000; i++)
        tk_samples_add(&s, i);
    tk_samples_summarize(&s, 1.0, &sum);
    CHECK(sum.p9999 == 9999 && sum.max == 10000);
    tk_samples_destroy(&s);
}

TEST_CASE("hist")
{
    test_context = "histogram";
    CHECK_EQ(tk_hist_bucket_lo(0), 0);
    CHECK_EQ(tk_hist_bucket_lo(1), 1);
    CHECK_EQ(tk_hist_bucket_lo(2), 2);
    CHECK_EQ(tk_hist_bucket_lo(11), 1024);
    CHECK_EQ(tk_hist_bucket_lo(64), UINT64_C(1) << 63);
    CHECK_EQ(tk_hist_bucket_of(0), 0);
    CHECK_EQ(tk_hist_bucket_of(1), 1);
    CHECK_EQ(tk_hist_bucket_of(2), 2);
    CHECK_EQ(tk_hist_bucket_of(3), 2);
    CHECK_EQ(tk_hist_bucket_of(4), 3);
    CHECK_EQ(tk_hist_bucket_of(UINT64_MAX), TK_HIST_BUCKETS - 1);
    /* Every edge: bucket b holds [2^(b-1), 2^b), its lower bound included. */
    for (unsigned b = 1; b < TK_HIST_BUCKETS; b++) {
        uint64_t lo = tk_hist_bucket_lo(b);
        CHECK_EQ(tk_hist_bucket_of(lo), b);
        CHECK_EQ(tk_hist_bucket_of(lo - 1), b - 1);
        if (b + 1 < TK_HIST_BUCKETS)
            CHECK_EQ(tk_hist_bucket_lo(b + 1) - 1 - lo, lo - 1); /* width 2^(b-1) */
        CHECK_EQ(tk_hist_bucket_of(lo + (lo - 1)), b);           /* its last value */
    }

    uint64_t v[] = { 0, 0, 1, 2, 3, 4, 7, 8, 1000, 1023, 1024, UINT64_MAX };
    size_t n = sizeof v / sizeof v[0];
    struct tk_samples s = store_of(v, n, n);
    struct tk_hist h;
    memset(&h, 0xab, sizeof h); /* tk_hist_fill clears it first */
    tk_hist_fill(&h, &s);
    uint64_t want[TK_HIST_BUCKETS] = { 0 };
    want[0] = 2;
    want[1] = 1;
    want[2] = 2;
    want[3] = 2;
    want[4] = 1;
    want[10] = 2;
    want[11] = 1;
    want[64] = 1;
    uint64_t total = 0;
    for (unsigned b = 0; b < TK_HIST_BUCKETS; b++) {
        CHECK_EQ(h.count[b], want[b]);
        total += h.count[b];
    }
    CHECK_EQ(total, n);
    tk_hist_fill(&h, &s); /* again: the same counts, not twice them */
    CHECK_EQ(h.count[0], 2);
    tk_hist_add(&h, 5);
    CHECK_EQ(h.count[3], 3);
    tk_samples_destroy(&s);
}

/* Values above a threshold, strictly, at every edge. */
TEST_CASE("count above")
{
    test_context = "count above";
    uint64_t v[] = { 5, 1, 3, 3, 9, 0 };
    struct tk_samples s = store_of(v, 6, 6);
    CHECK_EQ(tk_samples_count_above(&s, 0), 5);
    CHECK_EQ(tk_samples_count_above(&s, 2), 4);
    CHECK_EQ(tk_samples_count_above(&s, 3), 2);
    CHECK_EQ(tk_samples_count_above(&s, 8), 1);
    CHECK_EQ(tk_samples_count_above(&s, 9), 0);
    CHECK_EQ(tk_samples_count_above(&s, UINT64_MAX), 0);
    tk_samples_destroy(&s);
    struct tk_samples empty = store_of(v, 0, 1);
    CHECK_EQ(tk_samples_count_above(&empty, 0), 0);
    tk_samples_destroy(&empty);
}

/* The histogram's JSON and text: the span of non-empty buckets only. */
TEST_CASE("hist out")
{
    test_context = "histogram out";
    struct tk_hist h;
    memset(&h, 0, sizeof h);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    REQUIRE(f, );
    struct tk_json j;
    tk_json_init(&j, f);
    tk_hist_json(&j, &h, "ns");
    CHECK_EQ(tk_json_finish(&j), 0);
    tk_hist_print(f, &h, 1.0, 0, "ns");
    fclose(f);
    CHECK(buf && strcmp(buf, "[]\n  (empty)\n") == 0);
    free(buf);

    tk_hist_add(&h, 1500); /* bucket 11: [1024, 2048) */
    tk_hist_add(&h, 1500);
    tk_hist_add(&h, 5000); /* bucket 13: [4096, 8192) */
    tk_hist_add(&h, UINT64_MAX);
    buf = NULL;
    f = open_memstream(&buf, &len);
    REQUIRE(f, );
    tk_json_init(&j, f);
    tk_hist_json(&j, &h, "ns");
    CHECK_EQ(tk_json_finish(&j), 0);
    fclose(f);
    const char *head = "[\n"
                       "  {\"lo_ns\": 1024, \"hi_ns\": 2048, \"count\": 2},\n"
                       "  {\"lo_ns\": 2048, \"hi_ns\": 4096, \"count\": 0},\n"
                       "  {\"lo_ns\": 4096, \"hi_ns\": 8192, \"count\": 1},\n";
    CHECK(buf && strncmp(buf, head, strlen(head)) == 0);
    CHECK(buf && strstr(buf, "{\"lo_ns\": 9223372036854775808, \"hi_ns\": null, "
                             "\"count\": 1}\n]\n") != NULL);
    if (buf && strncmp(buf, head, strlen(head)) != 0)
        fprintf(stderr, "got:\n%s", buf);
    free(buf);

    memset(&h, 0, sizeof h);
    tk_hist_add(&h, 1500);
    tk_hist_add(&h, 1500);
    tk_hist_add(&h, 5000);
    buf = NULL;
    f = open_memstream(&buf, &len);
    REQUIRE(f, );
    tk_hist_print(f, &h, 1e-3, 3, "us");
    fclose(f);
    const char *want =
        "       1.024 ..      2.048 us         2  ####################################\n"
        "       2.048 ..      4.096 us         0  \n"
        "       4.096 ..      8.192 us         1  ##################\n";
    CHECK(buf && strcmp(buf, want) == 0);
    if (buf && strcmp(buf, want) != 0)
        fprintf(stderr, "got:\n%s", buf);
    free(buf);
}

/* The spread's members, null where the summary has NaN. */
TEST_CASE("spread json")
{
    test_context = "spread json";
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    REQUIRE(f, );
    struct tk_json j;
    tk_json_init(&j, f);
    tk_json_begin_object(&j);
    struct tk_summary empty = { 0, NAN, NAN, NAN, NAN, NAN, NAN, NAN };
    tk_summary_json_spread(&j, &empty);
    tk_json_end_object(&j);
    CHECK_EQ(tk_json_finish(&j), 0);
    fclose(f);
    const char *want = "{\n"
                       "  \"min_ns\": null,\n"
                       "  \"p50_ns\": null,\n"
                       "  \"p99_ns\": null,\n"
                       "  \"p99_9_ns\": null,\n"
                       "  \"p99_99_ns\": null,\n"
                       "  \"max_ns\": null\n"
                       "}\n";
    CHECK(buf && strcmp(buf, want) == 0);
    free(buf);

    buf = NULL;
    f = open_memstream(&buf, &len);
    REQUIRE(f, );
    tk_json_init(&j, f);
    tk_json_begin_object(&j);
    struct tk_summary one = { 3, 1.0, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5 };
    tk_summary_json_spread(&j, &one);
    tk_json_end_object(&j);
    CHECK_EQ(tk_json_finish(&j), 0);
    fclose(f);
    want = "{\n"
           "  \"min_ns\": 1,\n"
           "  \"p50_ns\": 2.5,\n"
           "  \"p99_ns\": 3,\n"
           "  \"p99_9_ns\": 3.5,\n"
           "  \"p99_99_ns\": 4,\n"
           "  \"max_ns\": 4.5\n"
           "}\n";
    CHECK(buf && strcmp(buf, want) == 0);
    if (buf && strcmp(buf, want) != 0)
        fprintf(stderr, "got:\n%s", buf);
    free(buf);
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, "tools.samples");
}
