/*
 * `rtmem size`: adversaries, sequences of calls within a program's limits
 * built to make a heap need as much memory as they can. Each knows the
 * kind it plays against (its classes, where pins must sit), as the worst
 * program could. They work on block ids: the same sequence runs on every
 * pool size, so the smallest pool it needs can be searched.
 *
 *   holes    grows holes that nothing later fits in: blocks of one size
 *            fill what the limit allows, each is then shrunk in place to a
 *            small pin (realloc), leaving a hole behind it; the next round
 *            asks a size one class larger, which no hole can serve. The
 *            worst case of best fit (Robson), the one TLSF's bound follows.
 *   comb     the same with halves: blocks of one size fill the limit, every
 *            other one is freed, and the next size is more than twice as
 *            large.
 *   buckets  a page heap's classes one after the other: each filled with the
 *            smallest requests it serves, then all but one block per page
 *            freed, so that every page stays held for a few bytes.
 *   random   random sizes (log-uniform from the smallest to the largest),
 *            alignments and resizes, a free where the limit leaves no room.
 */
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "size.h"

const char *const adv_names[ADV_COUNT] = { "holes", "comb", "buckets", "random" };
const char *const adv_about[ADV_COUNT] = {
    "holes of growing sizes, each pinned by a block shrunk in place",
    "blocks of doubling sizes, every other one freed",
    "each bucket class filled, then one block kept per page",
    "random sizes, alignments, resizes and frees",
};

/* The builder: the program, and the bytes live by id. */
struct gen {
    struct adv_program *p;
    const struct rtm_heap_limits *lim;
    uint64_t *live_by_id;
    size_t ids_cap;
    uint64_t live;
    bool oom;
};

static bool page_kind(const char *kind)
{
    return strcmp(kind, "tlsf") != 0;
}

static void put(struct gen *g, uint8_t op, uint32_t id, uint64_t size, uint64_t align)
{
    struct adv_program *p = g->p;
    if (g->oom)
        return;
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 4096;
        struct adv_step *s = realloc(p->steps, cap * sizeof(*s));
        if (!s) {
            g->oom = true;
            return;
        }
        p->steps = s;
        p->cap = cap;
    }
    p->steps[p->n++] = (struct adv_step){ .op = op, .id = id, .size = size, .align = align };
}

static bool room(const struct gen *g, uint64_t size)
{
    return size <= g->lim->max_live - g->live;
}

/* A new block of size bytes (aligned when align > 0): its id, or UINT32_MAX
 * when the limit has no room (nothing is put). */
static uint32_t gen_alloc(struct gen *g, uint64_t size, uint64_t align)
{
    if (!room(g, size) || g->oom)
        return UINT32_MAX;
    if (g->p->n_ids == g->ids_cap) {
        size_t cap = g->ids_cap ? g->ids_cap * 2 : 1024;
        uint64_t *v = realloc(g->live_by_id, cap * sizeof(*v));
        if (!v) {
            g->oom = true;
            return UINT32_MAX;
        }
        g->live_by_id = v;
        g->ids_cap = cap;
    }
    uint32_t id = g->p->n_ids++;
    g->live_by_id[id] = size;
    g->live += size;
    if (g->live > g->p->peak_live)
        g->p->peak_live = g->live;
    put(g, align ? ADV_ALIGNED : ADV_ALLOC, id, size, align);
    return id;
}

static void gen_free(struct gen *g, uint32_t id)
{
    g->live -= g->live_by_id[id];
    g->live_by_id[id] = 0;
    put(g, ADV_FREE, id, 0, 0);
}

/* Resizes id to size, the old block counted beside the new one. False (and
 * nothing put) when the limit has no room for both. */
static bool gen_realloc(struct gen *g, uint32_t id, uint64_t size)
{
    if (!room(g, size))
        return false;
    if (g->live + size > g->p->peak_live)
        g->p->peak_live = g->live + size;
    g->live = g->live - g->live_by_id[id] + size;
    g->live_by_id[id] = size;
    put(g, ADV_REALLOC, id, size, 0);
    return true;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

/* The size after s whose blocks no hole a block of s left can serve: a
 * class further (TLSF: 16 bytes below 1 KiB, 1/32 above); a page further
 * for a page heap's runs. */
static uint64_t next_size(const char *kind, uint64_t s)
{
    if (page_kind(kind))
        return s <= 256 ? s * 2 : s + 512;
    return s + max_u64(16, s / 32);
}

/* The bytes of blocks the rounds of holes() ask, starting at s0, when
 * each round fills what the limit leaves: the memory they spread over, as
 * nothing later fits in the holes they leave. Arithmetic only. */
static uint64_t holes_spread(const char *kind, const struct rtm_heap_limits *l, uint64_t pin,
                             uint64_t s0)
{
    uint64_t live = 0, total = 0;
    for (uint64_t s = s0; s <= l->max_block; s = next_size(kind, s)) {
        uint64_t k = (l->max_live - live) / (s + pin);
        if (k == 0)
            break;
        if (k > 1u << 20)
            k = 1u << 20;
        total += k * s;
        live += k * pin;
    }
    return total;
}

static void holes(struct gen *g, const char *kind, uint32_t *ids)
{
    const struct rtm_heap_limits *l = g->lim;
    /* a pin must keep a run apart in a page heap: a page of its own */
    bool runs = page_kind(kind) && l->max_block > 256;
    uint64_t pin = runs ? max_u64(l->min_block, 257) : l->min_block;
    uint64_t align = l->max_align > 16 ? l->max_align : 0;
    if (pin > l->max_block)
        return;
    /* Small first blocks leave more rounds, but their pins take more of the
     * limit: the start that spreads the most is chosen (each pin costs
     * pin / s of a round's bytes). */
    uint64_t s0 = runs ? max_u64(pin, 513) : max_u64(2 * pin, 48), best = 0;
    for (uint64_t f = 2; f <= 4096 && f * pin <= l->max_block; f *= 2) {
        uint64_t from = runs ? max_u64(f * pin, 513) : max_u64(f * pin, 48);
        uint64_t spread = holes_spread(kind, l, pin, from);
        if (spread > best) {
            best = spread;
            s0 = from;
        }
    }
    for (uint64_t s = s0; s <= l->max_block; s = next_size(kind, s)) {
        size_t k = 0;
        /* room for the block and, later, its pin beside it */
        while (room(g, s + pin) && k < 1u << 20) {
            uint32_t id = gen_alloc(g, s, align);
            if (id == UINT32_MAX)
                break;
            ids[k++] = id;
        }
        if (k == 0)
            break;
        for (size_t i = 0; i < k; i++)
            gen_realloc(g, ids[i], pin);
    }
    gen_alloc(g, min_u64(l->max_block, l->max_live - g->live), align);
}

static void comb(struct gen *g, uint32_t *ids)
{
    const struct rtm_heap_limits *l = g->lim;
    for (uint64_t s = max_u64(l->min_block, 16); s <= l->max_block; s = 2 * s + 16) {
        size_t k = 0;
        uint32_t id;
        while (k < 1u << 20 && (id = gen_alloc(g, s, 0)) != UINT32_MAX)
            ids[k++] = id;
        if (k == 0)
            break;
        for (size_t i = 0; i < k; i += 2)
            gen_free(g, ids[i]);
    }
    gen_alloc(g, min_u64(l->max_block, l->max_live - g->live), 0);
}

static void buckets(struct gen *g, uint32_t *ids)
{
    const struct rtm_heap_limits *l = g->lim;
    for (uint64_t c = 16; c <= 256; c *= 2) {
        uint64_t lo = c == 16 ? l->min_block : max_u64(l->min_block, c / 2 + 1);
        if (lo > c || lo > l->max_block)
            continue;
        size_t k = 0, per_page = 512 / c;
        uint32_t id;
        while (k < 1u << 20 && (id = gen_alloc(g, lo, 0)) != UINT32_MAX)
            ids[k++] = id;
        for (size_t i = 0; i < k; i++)
            if (i % per_page != 0)
                gen_free(g, ids[i]);
    }
    gen_alloc(g, min_u64(l->max_block, l->max_live - g->live), 0);
}

/* A size log-uniform in [lo, hi]. */
static uint64_t log_uniform(uint64_t *rng, uint64_t lo, uint64_t hi)
{
    unsigned bits_lo = 63u - (unsigned)__builtin_clzll(lo),
             bits_hi = 63u - (unsigned)__builtin_clzll(hi);
    unsigned b = bits_lo + (unsigned)tk_rng_below(rng, bits_hi - bits_lo + 1);
    uint64_t from = max_u64(lo, (uint64_t)1 << b), to = min_u64(hi, ((uint64_t)2 << b) - 1);
    return from + tk_rng_below(rng, to - from + 1);
}

#define RANDOM_STEPS 20000u

static void random_walk(struct gen *g, uint64_t seed, uint32_t *ids)
{
    const struct rtm_heap_limits *l = g->lim;
    uint64_t rng = seed ? seed : 1;
    size_t k = 0; /* ids[0..k) live */
    for (unsigned i = 0; i < RANDOM_STEPS && !g->oom; i++) {
        uint64_t size = log_uniform(&rng, l->min_block, l->max_block);
        unsigned what = (unsigned)tk_rng_below(&rng, 8);
        if (what == 0 && k > 0) {
            size_t j = (size_t)tk_rng_below(&rng, k);
            if (gen_realloc(g, ids[j], size))
                continue;
        }
        uint64_t align = 0;
        if (what == 1 && l->max_align > 16) {
            unsigned top = 63u - (unsigned)__builtin_clzll(l->max_align);
            align = (uint64_t)1 << (4 + tk_rng_below(&rng, top - 3));
        }
        if (what < 5 || k == 0) {
            uint32_t id = gen_alloc(g, size, align);
            if (id != UINT32_MAX) {
                ids[k++] = id;
                continue;
            }
            if (k == 0)
                continue;
        }
        size_t j = (size_t)tk_rng_below(&rng, k);
        gen_free(g, ids[j]);
        ids[j] = ids[--k];
    }
}

int adv_build(unsigned which, const char *kind, const struct rtm_heap_limits *lim, uint64_t seed,
              struct adv_program *p)
{
    memset(p, 0, sizeof(*p));
    p->name = adv_names[which];
    struct gen g = { .p = p, .lim = lim };
    /* every round's blocks at once: at most max_live / min_block of them */
    size_t n_ids = 1u << 20;
    if (lim->max_live / lim->min_block + 1 < n_ids)
        n_ids = (size_t)(lim->max_live / lim->min_block + 1);
    uint32_t *ids = malloc(n_ids * sizeof(*ids));
    if (!ids)
        return -1;
    switch (which) {
    case 0: holes(&g, kind, ids); break;
    case 1: comb(&g, ids); break;
    case 2: buckets(&g, ids); break;
    default: random_walk(&g, seed, ids); break;
    }
    free(ids);
    free(g.live_by_id);
    if (g.oom) {
        adv_free(p);
        return -1;
    }
    return 0;
}

void adv_free(struct adv_program *p)
{
    free(p->steps);
    p->steps = NULL;
    p->n = p->cap = 0;
}
