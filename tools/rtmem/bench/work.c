/*
 * `rtmem bench`: the workloads, generated from the seed before any timing:
 * the main phase's and the sweep's interleaved allocs and frees, and the
 * free-order phase's fill (sizes, and the orders its blocks are freed in).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "common/rng.h"

int bench_workload_init(struct workload *w, size_t cap)
{
    memset(w, 0, sizeof(*w));
    if (cap == 0 || cap > SIZE_MAX / sizeof(uint32_t))
        return -EINVAL;
    w->ops = calloc(cap, sizeof(uint32_t));
    if (!w->ops)
        return -ENOMEM;
    w->cap = cap;
    return 0;
}

void bench_workload_generate(struct workload *w, size_t n_ops, uint32_t min_bytes,
                             uint32_t max_bytes, uint32_t live_cap, uint64_t seed)
{
    uint64_t rng = seed;
    uint64_t span = (uint64_t)max_bytes - min_bytes + 1;
    uint32_t live = 0;
    if (n_ops > w->cap)
        n_ops = w->cap;
    for (size_t i = 0; i < n_ops; i++) {
        bool do_free;
        if (live == live_cap)
            do_free = true;
        else if (live == 0)
            do_free = false;
        else
            do_free = tk_rng_next(&rng) & 1u;
        if (do_free) {
            w->ops[i] = OP_FREE | (uint32_t)tk_rng_below(&rng, live);
            live--;
        } else {
            w->ops[i] = min_bytes + (uint32_t)tk_rng_below(&rng, span);
            live++;
        }
    }
    w->n = n_ops;
}

static void fill_work_destroy(struct fill_work *fw)
{
    free(fw->sizes);
    free(fw->blocks);
    for (int o = 0; o < FILL_ORDERS; o++)
        free(fw->order[o]);
    memset(fw, 0, sizeof(*fw));
}

int bench_fill_work_init(struct fill_work *fw, size_t cap)
{
    memset(fw, 0, sizeof(*fw));
    if (cap == 0 || cap > UINT32_MAX)
        return -EINVAL;
    fw->sizes = calloc(cap, sizeof(uint32_t));
    fw->blocks = calloc(cap, sizeof(void *));
    for (int o = 0; o < FILL_ORDERS; o++)
        fw->order[o] = calloc(cap, sizeof(uint32_t));
    fw->cap = cap;
    if (!fw->sizes || !fw->blocks || !fw->order[FILL_IN_ORDER] || !fw->order[FILL_SHUFFLED]) {
        fill_work_destroy(fw);
        return -ENOMEM;
    }
    return 0;
}

void bench_fill_work_generate(struct fill_work *fw, size_t n, uint32_t min_bytes,
                              uint32_t max_bytes, uint64_t seed)
{
    uint64_t rng = seed;
    uint64_t span = (uint64_t)max_bytes - min_bytes + 1;
    uint32_t *in_order = fw->order[FILL_IN_ORDER], *shuffled = fw->order[FILL_SHUFFLED];
    if (n > fw->cap)
        n = fw->cap;
    for (size_t i = 0; i < n; i++) {
        fw->sizes[i] = min_bytes + (uint32_t)tk_rng_below(&rng, span);
        in_order[i] = shuffled[i] = (uint32_t)i;
    }
    tk_rng_shuffle(shuffled, n, sizeof(*shuffled), &rng);
    fw->n = n;
}
