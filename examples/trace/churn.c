/*
 * The recorder's cost per call: a loop of free and malloc (16 to 215
 * bytes, 64 blocks in turn), timed in ROUNDS rounds of CALLS calls each.
 * Prints each round's ns per call and their median. Run it untraced, then
 * under rtmem trace, and compare (docs/trace.md, "Cost"):
 *
 *   build/examples/trace_churn
 *   rtmem trace -o /tmp/churn.trace -- build/examples/trace_churn
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ROUNDS 5
#define PAIRS  1000000L /* a free and a malloc each: CALLS = 2 * PAIRS */

static void *volatile keep;

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(void)
{
    void *blocks[64];
    for (int i = 0; i < 64; i++)
        blocks[i] = malloc(64);
    double per_call[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = now_ns();
        for (long i = 0; i < PAIRS; i++) {
            int k = (int)(i & 63);
            free(blocks[k]);
            keep = blocks[k] = malloc(16 + (size_t)(i % 200));
        }
        per_call[r] = (now_ns() - t0) / (2.0 * PAIRS);
        printf("round %d: %.1f ns per call\n", r + 1, per_call[r]);
    }
    qsort(per_call, ROUNDS, sizeof(per_call[0]), by_value);
    printf("median: %.1f ns per call (%ld calls a round)\n", per_call[ROUNDS / 2], 2 * PAIRS);
    for (int i = 0; i < 64; i++)
        free(blocks[i]);
    return 0;
}
