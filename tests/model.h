/*
 * Shadow model of a heap: which granules of the heap memory belong to which
 * live block, and what each block must contain. Every operation on the heap
 * goes through the model, which checks the heap's answer against it:
 * alignment, no overlap (an owner per 16-byte granule), usable size bounds,
 * contents over the whole usable size, statistics, and that an allocation no
 * larger than largest_free_bytes never fails.
 */
#ifndef RTMEM_TESTS_MODEL_H
#define RTMEM_TESTS_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "rtmem/heap.h"

struct mblock {
    unsigned char *p;
    size_t req;    /* size asked for */
    size_t usable; /* usable size the heap reported */
    uint32_t id;
};

struct model {
    struct rtm_heap *h;
    unsigned char *lo; /* memory spanning every pool of the heap */
    size_t span;
    uint32_t *owner; /* id owning each granule of [lo, lo + span), 0 if none */
    struct mblock *blocks;
    size_t n, cap;
    uint32_t next_id;
    uint64_t failed;      /* failed allocations the heap must have counted */
    size_t given_bytes;   /* bytes given to create and add_pool */
    size_t usable_bytes;  /* usable_bytes right after the last pool change */
    size_t largest_fresh; /* largest_free_bytes of the empty heap */
    size_t last_peak;
};

/* Sets up the model for heap h whose pools all lie in [lo, lo + span). */
void model_init(struct model *m, struct rtm_heap *h, void *lo, size_t span, size_t given);
void model_fini(struct model *m);
/* Records a pool added to the heap (after a successful add_pool). */
void model_pool_added(struct model *m, size_t given);

/* Each performs the operation on the heap, checks the outcome and updates the
 * model. Return the new block's index, or -1 when the heap returned NULL. */
long model_alloc(struct model *m, size_t size);
long model_aligned_alloc(struct model *m, size_t alignment, size_t size);
long model_calloc(struct model *m, size_t n, size_t size);
long model_realloc(struct model *m, size_t idx, size_t size);
void model_free(struct model *m, size_t idx);

/* Bad frees: each must give -EINVAL and leave heap and statistics as they
 * were. */
void model_bad_frees(struct model *m, uint64_t *rng);

/* Full checkpoint: rtm_heap_check, statistics against the model, every live
 * block's contents, and that alloc(largest_free_bytes) succeeds. */
void model_checkpoint(struct model *m);

/* Frees everything (in an order drawn from rng) and checks that the heap is
 * back to its initial state. */
void model_drain(struct model *m, uint64_t *rng);

/* A random mixed workload of nops operations. */
void model_run(struct model *m, uint64_t *rng, unsigned long nops, unsigned long checkpoint_every);

#endif
