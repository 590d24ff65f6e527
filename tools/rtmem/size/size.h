/*
 * `rtmem size`: the pool a heap needs so that no allocation ever fails,
 * from a program's limits alone (rtm_heap_pool_bound_ex, rtmem/heap.h),
 * per kind; and, asked, adversaries that try to exceed it: sequences
 * within the limits built to fragment each kind, each run on a pool of
 * exactly the bound (where none may fail: the run fails if one does) and
 * searched for the smallest pool it needs (how close it came). Its manual
 * is docs/size.md.
 *
 *   cli.c        options, set-up, size_tool
 *   adversary.c  the sequences
 *   run.c        the bounds, the runs, the report and the JSON
 */
#ifndef RTMEM_TOOLS_SIZE_SIZE_H
#define RTMEM_TOOLS_SIZE_SIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/describe.h"
#include "common/kinds.h"
#include "common/tool.h"
#include "rtmem/rtmem.h"

#define SIZE_SCHEMA "rtmem-size/1"

struct size_opts {
    uint64_t max_live, max_block, min_block, max_align;
    int lock; /* index into size_lock_names: none, pi, robust */
    const char *kinds;
    bool adversaries;
    uint64_t granule; /* the search's resolution */
    uint64_t seed;
    const char *json_path;
};

/* ---- the sequences (adversary.c) ----------------------------------------- */

enum adv_op { ADV_ALLOC, ADV_ALIGNED, ADV_REALLOC, ADV_FREE };

struct adv_step {
    uint8_t op;    /* enum adv_op */
    uint32_t id;   /* the block made, resized or freed */
    uint64_t size; /* requested */
    uint64_t align;
};

struct adv_program {
    const char *name;
    struct adv_step *steps;
    size_t n, cap;
    uint32_t n_ids;
    uint64_t peak_live; /* bytes requested by live blocks at most, a realloc's
                           old and new block both counted: within max_live */
};

/* Names of the adversaries, in the order adv_build takes them. */
#define ADV_COUNT 4
extern const char *const adv_names[ADV_COUNT];
extern const char *const adv_about[ADV_COUNT];

/* Builds adversary `which` for kind within lim (seed: the random one's).
 * 0, or -1 when out of memory. */
int adv_build(unsigned which, const char *kind, const struct rtm_heap_limits *lim, uint64_t seed,
              struct adv_program *p);
void adv_free(struct adv_program *p);

/* ---- the run (run.c) -------------------------------------------------------- */

struct size_adv_result {
    uint64_t steps;
    uint64_t peak_live;
    bool held;         /* no allocation failed at the bound, at every offset tried */
    uint64_t fails_at; /* when not held: the step of the first failure */
    bool searched;     /* the smallest pool it needs was searched */
    uint64_t needed;   /* that pool (granule resolution) */
    uint64_t below;    /* needed - granule: tried, and an allocation failed (0: none) */
};

struct size_kind {
    char name[48];
    size_t bound; /* 0: none, why in why */
    char why[160];
    struct size_adv_result adv[ADV_COUNT];
    uint64_t worst;  /* the largest needed over the adversaries */
    bool map_failed; /* the bound could not be mapped: adversaries not run */
};

struct size_state {
    struct size_opts o;
    const char *prog;
    struct tk_machine mf;
    struct tk_kinds kinds;
    struct rtm_heap_limits lim;
    struct size_kind k[TK_MAX_ALLOCS];
    size_t n_k;
    bool exceeded; /* an adversary made an allocation fail at a bound */
};

extern const char *const size_lock_names[];

enum tk_run_end size_run(struct tk_session *s);
void size_report(const struct tk_session *s, FILE *f);
void size_json(const struct tk_session *s, struct tk_json *j);

#endif /* RTMEM_TOOLS_SIZE_SIZE_H */
