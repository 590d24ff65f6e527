/*
 * Replays rtmem bench's main workload (sizes uniform in [16, 4096] bytes, at
 * most 1000 live blocks, alloc or free with probability 1/2) on one TLSF heap
 * through the typed API, untimed: a driver for instruction counts, which
 * cachegrind measures deterministically where wall-clock time is noisy.
 *
 *   heap_replay o1|none [ops]
 *   valgrind --tool=callgrind --cache-sim=yes --toggle-collect=rtm_tlsf_free \
 *       build/tests/heap_replay o1
 *   callgrind_annotate callgrind.out.<pid> | grep "PROGRAM TOTALS"
 * gives the instructions and cache misses of all frees together (the program
 * prints how many it made); --toggle-collect=rtm_tlsf_alloc the same for
 * alloc.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rtmem/tlsf.h"

#define LIVE 1000

static unsigned char mem[64 << 20] __attribute__((aligned(64)));
static void *live[LIVE];

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "o1") != 0 && strcmp(argv[1], "none") != 0)) {
        fprintf(stderr, "usage: heap_replay o1|none [ops]\n");
        return 2;
    }
    long ops = argc > 2 ? atol(argv[2]) : 2000000;
    struct rtm_heap_config cfg = { .hardening = strcmp(argv[1], "o1") == 0 ? RTM_HEAP_HARDEN_O1
                                                                           : RTM_HEAP_HARDEN_NONE };
    struct rtm_tlsf *t = rtm_tlsf_create_ex(mem, sizeof(mem), &cfg);
    if (!t) {
        perror("rtm_tlsf_create_ex");
        return 1;
    }
    uint64_t rng = 20240601;
    long n = 0, allocs = 0, frees = 0;
    for (long i = 0; i < ops; i++) {
        if (n == LIVE || (n > 0 && (rng_next(&rng) & 1))) {
            long k = (long)(rng_next(&rng) % (uint64_t)n);
            if (rtm_tlsf_free(t, live[k]) != 0)
                return 1;
            live[k] = live[--n];
            frees++;
        } else {
            void *p = rtm_tlsf_alloc(t, (size_t)rng_range(&rng, 16, 4096));
            if (!p)
                return 1;
            live[n++] = p;
            allocs++;
        }
    }
    printf("%s: %ld allocs, %ld frees\n", argv[1], allocs, frees);
    return rtm_tlsf_check(t) == 0 ? 0 : 1;
}
