/*
 * Bench kit: a small reproducible random generator for workloads.
 *
 * splitmix64: 64 bits of state, one add and three xor-shift-multiplies per
 * draw, well mixed and the same sequence on every machine for a given seed,
 * which is all a workload needs (it is not for cryptography). Every function
 * is O(1) per draw and allocates nothing; tk_rng_below loops only on the
 * rare draws in the short tail (fewer than one in 2^32 for n below 2^32).
 * A generator's state is a plain uint64_t, seeded by assignment.
 */
#ifndef RTMEM_TOOLS_RNG_H
#define RTMEM_TOOLS_RNG_H

#include <stddef.h>
#include <stdint.h>

/* Next 64 random bits of the generator *state. */
static inline uint64_t tk_rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Uniform in [0, n), n > 0, without modulo bias (rejects the short tail). */
static inline uint64_t tk_rng_below(uint64_t *state, uint64_t n)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t r;
    do
        r = tk_rng_next(state);
    while (r >= limit);
    return r % n;
}

/* Largest element tk_rng_shuffle moves. */
#define TK_RNG_MAX_ELEM 16

/* Fisher-Yates: the n elements of elem_size bytes (1..TK_RNG_MAX_ELEM) at v
 * in a uniformly random order, every permutation equally likely. n - 1
 * draws, O(n). Any other elem_size leaves v as it is. */
void tk_rng_shuffle(void *v, size_t n, size_t elem_size, uint64_t *state);

#endif /* RTMEM_TOOLS_RNG_H */
