/*
 * `rtmem stride`: the loops that are timed, and the chase's layout.
 *
 * What each loop does, access by access, is what the report says it
 * measures; the compiler must not change it:
 *
 *   stride_rmw_walk  reads an int, adds 1 and writes it back, then moves
 *                    `stride` ints on, back to the first at the end of a
 *                    pass. The ints are volatile: the compiler
 *                    must emit one 4-byte load and one 4-byte store per
 *                    access, in program order, so it can neither vectorise
 *                    the loop (several ints per instruction would be fewer
 *                    accesses than the report counts), nor merge, hoist or
 *                    drop any of them. The hardware is free to do what it
 *                    does for any program: prefetch, reorder within its
 *                    rules, overlap the misses of independent accesses.
 *   stride_chase_walk  loads the pointer at p and goes where it points,
 *                    count times. Each load's address is the previous
 *                    load's value, so no two overlap and no prefetcher can
 *                    guess the next address of a random cycle: each costs
 *                    the full load-to-use latency of the level it hits.
 *                    The walk returns where it stopped, which the run
 *                    keeps (and folds into a checksum it reports), so
 *                    the loads cannot be dropped.
 *
 * Both are noinline and in a file of their own: the timer readings around
 * a call (asm volatile with a memory clobber, timer.h) see one opaque call.
 * The file is built with its loops aligned to 64 bytes (tools/CMakeLists.txt):
 * a loop that happens to cross a fetch block boundary runs slower, which
 * moved the cost of an access in L1 by half from one build to the next.
 */
#include "common/rng.h"
#include "stride.h"

/* Lines linked between two rests (tk_rt_breather) when building a chase. */
#define BUILD_SLICE ((size_t)1 << 20)

__attribute__((noinline)) size_t stride_rmw_walk(volatile uint32_t *ints, size_t per_pass,
                                                 size_t stride, size_t at, uint64_t count)
{
    while (count > 0) {
        /* The accesses left before the walk wraps: no division in the walk,
         * whose turns at the end of short passes are part of what it costs. */
        uint64_t k = per_pass - at;
        if (k > count)
            k = count;
        count -= k;
        volatile uint32_t *p = ints + at * stride;
        at += (size_t)k;
        for (; k > 0; k--) {
            *p = *p + 1u;
            p += stride;
        }
        if (at == per_pass)
            at = 0;
    }
    return at;
}

__attribute__((noinline)) void *stride_chase_walk(void *p, uint64_t count)
{
    void *const *q = p;
    for (; count > 0; count--)
        q = *q;
    return (void *)q;
}

void stride_chase_build(char *base, size_t line_bytes, size_t lines, uint32_t *order, uint64_t *rng,
                        struct tk_rt_state *rt)
{
    for (size_t i = 0; i < lines; i++)
        order[i] = (uint32_t)i;
    /* A uniformly random order of the lines (Fisher-Yates, as
     * tk_rng_shuffle, with rests); linking each to the next, the last to
     * the first, makes one cycle through all of them. */
    for (size_t i = lines - 1; i > 0; i--) {
        size_t j = (size_t)tk_rng_below(rng, (uint64_t)i + 1);
        uint32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
        if (i % BUILD_SLICE == 0)
            tk_rt_breather(rt);
    }
    for (size_t i = 0; i < lines; i++) {
        size_t next = i + 1 < lines ? i + 1 : 0;
        *(void **)(base + (size_t)order[i] * line_bytes) = base + (size_t)order[next] * line_bytes;
        if ((i + 1) % BUILD_SLICE == 0)
            tk_rt_breather(rt);
    }
}

const char *const stride_pattern_names[N_PATTERNS] = {
    [PAT_STRIDE_1] = "stride 1 int (4 B)",
    [PAT_STRIDE_16] = "stride 16 ints (64 B)",
    [PAT_CHASE] = "random chase",
};

const char *const stride_pattern_ids[N_PATTERNS] = {
    [PAT_STRIDE_1] = "stride_1",
    [PAT_STRIDE_16] = "stride_16",
    [PAT_CHASE] = "chase",
};

const char *const stride_thp_choices[] = { "default", "on", "off", NULL };
