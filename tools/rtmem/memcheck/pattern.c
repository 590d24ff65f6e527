/*
 * `rtmem memcheck`: the pattern phase (smokey's pattern check). Each test
 * fills a fresh heap with blocks of random sizes, each written with its own
 * pattern over its whole usable size, frees them in random order and
 * verifies every live block after the fill and after each free. Functional
 * only: nothing is timed. Its run, its text line and its JSON.
 */
#include <stdint.h>
#include <string.h>

#include "common/child.h"
#include "common/out.h"
#include "common/rng.h"
#include "memcheck.h"

/* A test on a large heap is long: a progress mark every this many frees. */
#define PATTERN_FREES_PER_MARK 4096u

/* Each block gets its own pattern (a start value from its index, a step
 * coprime with 256), so a block written over by a neighbour, or handed out
 * twice, shows. */
static unsigned pattern_tag(size_t k)
{
    return (unsigned)(k * 167u + 13u) & 0xffu;
}

static void fill_pattern(unsigned char *p, size_t len, unsigned tag)
{
    for (size_t i = 0; i < len; i++)
        p[i] = (unsigned char)(tag + i * 47u);
}

/* Offset of the first byte off the pattern, or len. Compares in chunks so
 * the common, clean case stays a vectorizable reduction. */
static size_t find_corruption(const unsigned char *p, size_t len, unsigned tag)
{
    for (size_t off = 0; off < len; off += 256) {
        size_t end = len - off < 256 ? len : off + 256;
        unsigned diff = 0;
        for (size_t i = off; i < end; i++)
            diff |= p[i] ^ (unsigned char)(tag + i * 47u);
        if (diff)
            for (size_t i = off; i < end; i++)
                if (p[i] != (unsigned char)(tag + i * 47u))
                    return i;
    }
    return len;
}

/* Verifies every live block of m->blocks[0 .. n); after is the block just
 * freed (SIZE_MAX: after the fill). */
static int verify_live(struct memcheck *m, struct mc_target *t, const struct mc_test *c, size_t n,
                       size_t after)
{
    for (size_t k = 0; k < n; k++) {
        const unsigned char *p = m->blocks[k];
        if (!p)
            continue;
        size_t len = m->sizes[k], bad = find_corruption(p, len, pattern_tag(k));
        t->pattern.bytes_verified += len;
        if (bad == len)
            continue;
        unsigned want = (unsigned char)(pattern_tag(k) + bad * 47u);
        if (after == SIZE_MAX)
            return mc_failf(t, c,
                            "block #%zu (%zu B at %p) corrupted at byte %zu after the fill "
                            "(0x%02x, expected 0x%02x)",
                            k, len, (const void *)p, bad, p[bad], want);
        return mc_failf(t, c,
                        "block #%zu (%zu B at %p) corrupted at byte %zu after freeing block "
                        "#%zu (0x%02x, expected 0x%02x)",
                        k, len, (const void *)p, bad, after, p[bad], want);
    }
    return 0;
}

/* Checks one new block of a pattern fill and writes its pattern over its
 * whole usable size (its request with --compat). */
static int pattern_block(struct memcheck *m, struct mc_target *t, const struct mc_test *c, void *p,
                         size_t size, size_t n)
{
    struct tk_alloc *a = &t->a;
    if (!tk_alloc_block_ok(a, p, size))
        return mc_failf(t, c, "block #%zu at %p (%zu B) is outside the heap or misaligned", n, p,
                        size);
    size_t us = a->usable_size(a->ctx, p);
    if (us < size)
        return mc_failf(t, c, "usable size %zu of block #%zu is below its request of %zu B", us, n,
                        size);
    size_t len = m->o->compat ? size : us;
    m->blocks[n] = p;
    m->sizes[n] = (uint32_t)len;
    fill_pattern(p, len, pattern_tag(n));
    return 0;
}

/* Fills a fresh heap with patterned blocks, sizes uniform in [1, bmax]
 * (all bmax with --compat, as smokey). Returns the count, or SIZE_MAX after
 * a failure. */
static size_t pattern_fill(struct memcheck *m, struct mc_target *t, const struct mc_test *c,
                           uint64_t *rng)
{
    struct tk_alloc *a = &t->a;
    size_t u = a->cur.usable_bytes, n = 0, total = 0;
    bool bounded = a->applies & TK_APPLY_FILL_TO_FAILURE;
    for (; n < m->blocks_cap; n++) {
        size_t size = m->o->compat ? c->block : 1 + (size_t)tk_rng_below(rng, c->block);
        if (!bounded && total + size > u)
            return n;
        void *p = a->alloc(a->ctx, size);
        if (!p && bounded)
            return n;
        if (!p) {
            mc_failf(t, c, "the allocator returned NULL within the budget");
            return SIZE_MAX;
        }
        total += size;
        if (total > u) {
            mc_failf(t, c, "the blocks hold %zu B, more than the heap's usable size", total);
            return SIZE_MAX;
        }
        if (pattern_block(m, t, c, p, size, n) != 0)
            return SIZE_MAX;
    }
    mc_failf(t, c, "more than %zu blocks", m->blocks_cap);
    return SIZE_MAX;
}

static int pattern_test(struct memcheck *m, struct mc_target *t, const struct mc_test *c,
                        uint64_t rng)
{
    struct tk_alloc *a = &t->a;
    if (mc_create_heap(m, t, c) != 0)
        return -1;
    int rc = -1;
    size_t n = pattern_fill(m, t, c, &rng);
    if (n == SIZE_MAX || verify_live(m, t, c, n, SIZE_MAX) != 0)
        goto out;
    for (size_t k = 0; k < n; k++)
        m->order[k] = (uint32_t)k;
    tk_rng_shuffle(m->order, n, sizeof(*m->order), &rng);
    for (size_t i = 0; i < n; i++) {
        size_t k = m->order[i];
        /* A test on a large heap is long (each free verifies every live
         * block): slices of it are progress too. */
        if (i % PATTERN_FREES_PER_MARK == 0)
            tk_child_beat(&t->beat);
        if (a->free(a->ctx, m->blocks[k]) != 0) {
            mc_failf(t, c, "free refused block #%zu (%p)", k, m->blocks[k]);
            goto out;
        }
        m->blocks[k] = NULL;
        if (verify_live(m, t, c, n, k) != 0)
            goto out;
    }
    if (mc_check_empty(t, c) != 0)
        goto out;
    t->pattern.tests++;
    t->pattern.blocks += n;
    rc = 0;
out:
    tk_alloc_destroy(a);
    return rc;
}

int mc_run_pattern(struct memcheck *m, struct mc_target *t)
{
    struct mc_test c = { .phase = MC_PH_PATTERN,
                         .heap = m->o->pattern_heap_bytes,
                         .flags = MC_F_SHUFFLE };
    uint64_t sizes = m->o->seed ^ mc_phase_salt[MC_PH_PATTERN];
    uint64_t t0 = tk_clock_ns();
    int rc = 0;
    t->pattern.ran = true; /* its tests so far count, should the process die */
    mc_progress_begin(m, m->o->pattern_rounds);
    for (uint32_t r = 0; r < m->o->pattern_rounds && rc == 0; r++) {
        tk_rt_breather(&m->rt);
        c.index = r;
        c.block = mc_draw_block(m, &sizes, c.heap);
        mc_mark_test(t, &c);
        rc = pattern_test(m, t, &c, mc_test_seed(m->o->seed, MC_PH_PATTERN, r));
        mc_progress_step(m, t, MC_PH_PATTERN, r + 1);
    }
    mc_progress_end(m);
    t->pattern.seconds = (double)(tk_clock_ns() - t0) / 1e9;
    return rc;
}

/* ---- text and JSON ------------------------------------------------------------ */

void mc_pattern_print(FILE *f, const struct mc_target *t)
{
    const struct mc_pattern *p = &t->pattern;
    fprintf(f, "\npattern check: %zu tests, %zu blocks, %.1f MB verified, %.1f s: %s\n", p->tests,
            p->blocks, (double)p->bytes_verified / 1e6, p->seconds,
            t->fail.failed && t->fail.phase == MC_PH_PATTERN ? "FAILED" : "passed");
}

void mc_pattern_json(struct tk_json *j, const struct mc_target *t)
{
    if (!tk_json_key_or_null(j, "pattern", t->pattern.ran))
        return;
    tk_json_begin_object(j);
    tk_json_kv_uint(j, "tests", t->pattern.tests);
    tk_json_kv_uint(j, "blocks", t->pattern.blocks);
    tk_json_kv_uint(j, "bytes_verified", t->pattern.bytes_verified);
    tk_json_kv_double(j, "seconds", t->pattern.seconds);
    tk_json_end_object(j);
}
