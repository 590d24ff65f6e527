/*
 * `rtmem wcet`: a plugin's probes (--plugin FILE.so, rtmem/plugin.h).
 *
 * A plugin's code is not rtmem's to read, so no scenario can be built for
 * its longest path. What these probes build are the states that make many
 * allocators search or merge the most, whatever their algorithm: a heap
 * filled with small blocks (48 bytes requested), then freed every other
 * one in the order they were handed out, so that its free memory is as
 * many holes as it can be:
 *
 *   alloc-fail-fragmented  a request too large for any one hole: an
 *                          allocator that searches its free blocks visits
 *                          every one before it fails (a list's worst case);
 *   alloc-last-hole        the same, but the last 8 blocks handed out are
 *                          all free: an allocator that merges them has one
 *                          hole the request fits, last in allocation order;
 *   free-merge-both        one block freed between two free ones.
 *
 * The checks hold the plugin to its contract only (a block inside the
 * heap's memory or NULL, a free that returns 0, the plugin's own check if
 * it has one) and say what happened (served, or NULL): the probes measure,
 * they cannot say which path the plugin took. A plugin's heap may keep
 * state outside the memory it is given, so its state is built again before
 * each repetition (and destroyed after), as glibc's is; its cold
 * repetitions flush the memory it was given, not what it keeps elsewhere.
 * Its code runs in children only (run.c, count.c), never in the process
 * that writes the report.
 */
#include <string.h>

#include "wcet.h"

#define PROBE_REQ    ((size_t)48)
#define PROBE_BIG    (4 * PROBE_REQ + 16) /* larger than any one hole */
#define PROBE_TAIL   8u                   /* alloc-last-hole's free blocks in a row */
#define PROBE_BLOCKS (WCET_PLUGIN_IMAGE / 16)

int wcet_case_open_plugin(struct wcet_case *c)
{
    if (!c->plugin)
        return 0;
    char why[TK_WHY_MAX];
    if (tk_plugin_open(c->plugin, why, sizeof(why)) != 0)
        return wcet_fail(c, "%s", why);
    c->plug = c->plugin->table;
    return 0;
}

/* The blocks of the current build (one case is built at a time). */
static void *blocks[PROBE_BLOCKS];
static size_t n_blocks;

/* A fresh heap in the image, filled with PROBE_REQ-byte blocks until the
 * plugin says it is full: 0, or -1 (c->why). */
static int fill(struct wcet_case *c)
{
    c->pheap = c->plug->create(c->image, c->image_bytes);
    if (!c->pheap)
        return wcet_fail(c, "build: the plugin's create refused %zu bytes", c->image_bytes);
    n_blocks = 0;
    void *p;
    while (n_blocks < PROBE_BLOCKS && (p = c->plug->alloc(c->pheap, PROBE_REQ)))
        blocks[n_blocks++] = p;
    if (n_blocks == PROBE_BLOCKS)
        return wcet_fail(c, "build: the plugin handed out more than %zu blocks of %zu bytes",
                         (size_t)PROBE_BLOCKS, PROBE_REQ);
    if (n_blocks < 2 * PROBE_TAIL + 3)
        return wcet_fail(c, "build: the plugin's heap holds only %zu blocks", n_blocks);
    return 0;
}

static int release(struct wcet_case *c, size_t i)
{
    if (c->plug->free(c->pheap, blocks[i]) != 0)
        return wcet_fail(c, "build: the plugin refused the free of a live block");
    blocks[i] = NULL;
    return 0;
}

/* Every other block freed, and with `tail`, the last PROBE_TAIL all. */
static int holes(struct wcet_case *c, bool tail)
{
    for (size_t i = 1; i < n_blocks; i += 2)
        if (release(c, i) != 0)
            return -1;
    if (tail)
        for (size_t i = n_blocks - PROBE_TAIL; i < n_blocks; i++)
            if (blocks[i] && release(c, i) != 0)
                return -1;
    c->op = WCET_OP_ALLOC;
    c->size = PROBE_BIG;
    return 0;
}

static int fragmented_build(struct wcet_case *c)
{
    return fill(c) != 0 ? -1 : holes(c, false);
}

static int last_hole_build(struct wcet_case *c)
{
    return fill(c) != 0 ? -1 : holes(c, true);
}

static int merge_build(struct wcet_case *c)
{
    if (fill(c) != 0)
        return -1;
    size_t k = n_blocks / 2;
    if (release(c, k - 1) != 0 || release(c, k + 1) != 0)
        return -1;
    c->op = WCET_OP_FREE;
    c->ptr = blocks[k];
    return 0;
}

/* The plugin's contract after the operation: 0, or -1 (c->why). */
static int contract(struct wcet_case *c)
{
    uintptr_t lo = (uintptr_t)c->image, hi = lo + c->image_bytes, p = (uintptr_t)c->ret;
    if (c->op == WCET_OP_ALLOC && c->ret && (p < lo || p + c->size > hi))
        return wcet_fail(c, "the plugin handed out a block outside its memory");
    if (c->op == WCET_OP_FREE && c->rc != 0)
        return wcet_fail(c, "the plugin refused the free of a live block (%d)", c->rc);
    if (c->plug->check && c->plug->check(c->pheap) != 0)
        return wcet_fail(c, "the plugin's check failed after the operation");
    return 0;
}

static int alloc_check(struct wcet_case *c)
{
    if (contract(c) != 0)
        return -1;
    wcet_fact(c, "%zu blocks of %zu bytes, every other freed%s; a request of %zu bytes: %s",
              n_blocks, PROBE_REQ,
              c->sc->build == last_hole_build ? " and the last 8 in a row" : "", PROBE_BIG,
              c->ret ? "served" : "NULL");
    wcet_num(c, "blocks", (double)n_blocks);
    wcet_num(c, "served", c->ret != NULL);
    return 0;
}

static int merge_check(struct wcet_case *c)
{
    if (contract(c) != 0)
        return -1;
    wcet_fact(c, "%zu blocks of %zu bytes; one freed between two free ones", n_blocks, PROBE_REQ);
    wcet_num(c, "blocks", (double)n_blocks);
    return 0;
}

/* Gives back what the build and the operation made: the heap. */
static void undo(struct wcet_case *c)
{
    if (c->pheap)
        c->plug->destroy(c->pheap);
    c->pheap = NULL;
    c->ret = NULL;
    n_blocks = 0;
}

const struct wcet_scenario wcet_plugin_scenarios[] = {
    { WCET_PLUGIN, "alloc-fail-fragmented", "alloc",
      "every other 48-byte block free: a request too large for any hole", "unknown (a plugin)",
      fragmented_build, alloc_check, undo },
    { WCET_PLUGIN, "alloc-last-hole", "alloc",
      "the same, the last 8 blocks handed out free in a row: the one hole that fits, last",
      "unknown (a plugin)", last_hole_build, alloc_check, undo },
    { WCET_PLUGIN, "free-merge-both", "free", "a block freed between two free ones",
      "unknown (a plugin)", merge_build, merge_check, undo },
};
const size_t wcet_plugin_n = sizeof(wcet_plugin_scenarios) / sizeof(wcet_plugin_scenarios[0]);
