/*
 * The bench kit's workload generator (tools/common/rng.h), against its
 * header: tk_rng_next is splitmix64 (its first values for seeds 0 and 1,
 * computed here from the definition and, for seed 0, as published with the
 * reference code), one state step per draw; tk_rng_below stays in [0, n)
 * for n = 1 up to 2^64 - 1 without modulo bias; tk_rng_shuffle yields a
 * permutation, the same one for a seed, every one equally likely, with
 * n - 1 draws, and leaves v alone for an elem_size it does not take.
 */
#include "check.h"
#include "common/rng.h"

#define GAMMA 0x9e3779b97f4a7c15ull /* splitmix64's increment: 2^64 / golden ratio */

/* splitmix64 by its definition: the k-th output (k >= 1) of seed s is the
 * finaliser applied to s + k * GAMMA (mod 2^64). */
static uint64_t splitmix64_at(uint64_t seed, uint64_t k)
{
    uint64_t z = seed + k * GAMMA;
    z ^= z >> 30;
    z *= 0xbf58476d1ce4e5b9ull;
    z ^= z >> 27;
    z *= 0x94d049bb133111ebull;
    z ^= z >> 31;
    return z;
}

TEST_CASE("next")
{
    test_context = "tk_rng_next";
    /* The reference code's first outputs for seed 0. */
    const uint64_t published[] = { 0xe220a8397b1dcdafull, 0x6e789e6aa1b965f4ull,
                                   0x06c45d188009454full };
    uint64_t s = 0;
    for (int k = 0; k < 3; k++) {
        uint64_t v = tk_rng_next(&s);
        CHECK_EQ(v, published[k]);
        CHECK_EQ(v, splitmix64_at(0, (uint64_t)k + 1));
    }
    s = 1;
    CHECK_EQ(tk_rng_next(&s), 0x910a2dec89025cc1ull);
    CHECK_EQ(tk_rng_next(&s), 0xbeeb8da1658eec67ull);

    /* Any seed: the definition, and the state steps by GAMMA per draw. */
    const uint64_t seeds[] = { 0, 1, 2, 42, 20240601, UINT64_MAX, 0x8000000000000000ull };
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        s = seeds[i];
        for (uint64_t k = 1; k <= 1000; k++) {
            uint64_t v = tk_rng_next(&s);
            if (v != splitmix64_at(seeds[i], k) || s != seeds[i] + k * GAMMA) {
                CHECK(!"tk_rng_next follows splitmix64");
                fprintf(stderr, "  seed %" PRIu64 ", draw %" PRIu64 "\n", seeds[i], k);
                break;
            }
        }
    }
}

/* n draws of tk_rng_below(n_max) from seed: all below n_max; returns how
 * many fell below split. */
static uint64_t below_count(uint64_t seed, uint64_t n_max, uint64_t split, int draws)
{
    uint64_t s = seed, under = 0;
    int outside = 0;
    for (int i = 0; i < draws; i++) {
        uint64_t v = tk_rng_below(&s, n_max);
        outside += v >= n_max;
        under += v < split;
    }
    CHECK_EQ(outside, 0);
    return under;
}

TEST_CASE("below")
{
    test_context = "tk_rng_below";
    uint64_t s = 5;
    for (int i = 0; i < 1000; i++)
        CHECK_EQ(tk_rng_below(&s, 1), 0);

    /* In range for n at every scale, up to the largest. */
    const uint64_t ns[] = { 2,
                            3,
                            7,
                            1000,
                            UINT64_C(1) << 32,
                            (UINT64_C(1) << 32) + 1,
                            UINT64_C(1) << 63,
                            (UINT64_C(1) << 63) + 1,
                            UINT64_MAX - 1,
                            UINT64_MAX };
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        below_count(11 + i, ns[i], 0, 20000);

    /* Uniform: n = 6, each value about a sixth of 60000 draws (5 sigma). */
    uint64_t counts[6] = { 0 };
    s = 99;
    for (int i = 0; i < 60000; i++) {
        uint64_t v = tk_rng_below(&s, 6);
        if (v < 6)
            counts[v]++;
    }
    for (int v = 0; v < 6; v++)
        CHECK(counts[v] > 9540 && counts[v] < 10460);
    /* One draw per call when the tail is negligible: the state moved 60000 steps. */
    CHECK_EQ(s, 99 + 60000 * GAMMA);

    /* No modulo bias where modulo would have the most: n = 3 * 2^62. A draw
     * modulo n would put half the results below 2^62; uniform puts a third. */
    uint64_t n = UINT64_C(3) << 62;
    uint64_t under = below_count(1234, n, UINT64_C(1) << 62, 30000);
    CHECK(under > 9500 && under < 10500);
    /* n = 2^64 - 1 covers the whole range: half above 2^63. */
    under = below_count(4321, UINT64_MAX, UINT64_C(1) << 63, 30000);
    CHECK(under > 14500 && under < 15500);

    /* The same seed, the same values. */
    uint64_t a = 77, b = 77;
    for (int i = 0; i < 1000; i++)
        CHECK_EQ(tk_rng_below(&a, 1000003), tk_rng_below(&b, 1000003));
}

static int cmp_int(const void *x, const void *y)
{
    int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b);
}

TEST_CASE("a shuffle is a permutation, the same for a seed")
{
    enum { N = 50 };
    int v[N], w[N], sorted[N];
    for (int i = 0; i < N; i++)
        v[i] = w[i] = i * 3;

    uint64_t s1 = 8, s2 = 8;
    tk_rng_shuffle(v, N, sizeof v[0], &s1);
    tk_rng_shuffle(w, N, sizeof w[0], &s2);
    CHECK(memcmp(v, w, sizeof v) == 0); /* deterministic for a seed */
    CHECK_EQ(s1, 8 + (N - 1) * GAMMA);  /* n - 1 draws */
    memcpy(sorted, v, sizeof v);
    qsort(sorted, N, sizeof sorted[0], cmp_int);
    int perm = 1, moved = 0;
    for (int i = 0; i < N; i++) {
        perm &= sorted[i] == i * 3;
        moved += v[i] != i * 3;
    }
    CHECK(perm);      /* a permutation of the input */
    CHECK(moved > 0); /* 1 / 50! to fail */
    for (int i = 0; i < N; i++)
        w[i] = i * 3;
    uint64_t s3 = 9;
    tk_rng_shuffle(w, N, sizeof w[0], &s3);
    CHECK(memcmp(v, w, sizeof v) != 0); /* another seed, another order */
}

TEST_CASE("a shuffle keeps the bytes of elements of every size it takes")
{
    for (size_t size = 1; size <= TK_RNG_MAX_ELEM; size++) {
        unsigned char e[20 * TK_RNG_MAX_ELEM], before[sizeof e];
        for (size_t i = 0; i < 20 * size; i++)
            e[i] = (unsigned char)(i / size + 20 * (i % size)); /* byte 0: the element */
        memcpy(before, e, 20 * size);
        uint64_t s = size;
        tk_rng_shuffle(e, 20, size, &s);
        bool seen[20] = { false };
        int ok = 1;
        for (size_t i = 0; i < 20; i++) {
            unsigned elem = e[i * size];
            ok &= elem < 20 && !seen[elem];
            if (elem < 20)
                seen[elem] = true;
            for (size_t k = 0; k < size; k++)
                ok &= e[i * size + k] == (unsigned char)(elem + 20 * k);
        }
        CHECK(ok);
        CHECK(memcmp(e, before, 20 * size) != 0);
    }
}

TEST_CASE("a shuffle leaves alone sizes it does not take, and n of 0 and 1")
{
    int u[4] = { 1, 2, 3, 4 };
    uint64_t s = 3;
    tk_rng_shuffle(u, 4, 0, &s);
    tk_rng_shuffle(u, 4, TK_RNG_MAX_ELEM + 1, &s);
    tk_rng_shuffle(u, 0, sizeof u[0], &s);
    tk_rng_shuffle(u, 1, sizeof u[0], &s);
    CHECK(u[0] == 1 && u[1] == 2 && u[2] == 3 && u[3] == 4);
    s = 3;
    tk_rng_shuffle(u, 1, sizeof u[0], &s);
    CHECK_EQ(s, 3); /* n - 1 = 0 draws */
}

/* Every permutation equally likely: the 6 orders of 3 elements, each about
 * a sixth of 60000 shuffles (5 sigma), and with 4 elements each element at
 * each place a quarter of the time. */
TEST_CASE("every order of a shuffle is equally likely")
{
    uint64_t orders[6] = { 0 }, place[4][4] = { { 0 } };
    uint64_t s = 2024;
    for (int t = 0; t < 60000; t++) {
        int x[3] = { 0, 1, 2 };
        tk_rng_shuffle(x, 3, sizeof x[0], &s);
        int code = x[0] * 2 + (x[1] > x[2]); /* 0..5, one per order */
        orders[code]++;
        int y[4] = { 0, 1, 2, 3 };
        tk_rng_shuffle(y, 4, sizeof y[0], &s);
        for (int i = 0; i < 4; i++)
            place[y[i]][i]++;
    }
    for (int i = 0; i < 6; i++)
        CHECK(orders[i] > 9540 && orders[i] < 10460);
    for (int e = 0; e < 4; e++)
        for (int i = 0; i < 4; i++)
            CHECK(place[e][i] > 14470 && place[e][i] < 15530);
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, "tools.rng");
}
