/*
 * `rtmem memcheck`: what the tests of every phase share.
 *
 * Timing: each allocator call sits alone between tk_timer_start and
 * tk_timer_end, and its ticks go to a sample store allocated and touched
 * before the run. Checks, pattern fills, fragmentation probes, shuffles and
 * statistics happen between timed calls, never inside one, and the harness
 * allocates nothing while a test runs.
 *
 * Randomness: block sizes come from one stream per phase seeded from --seed
 * (the same sizes for every allocator, so their rows compare); each test's
 * shuffles come from a stream seeded from --seed, the phase and the test's
 * index, so a test does not depend on what the allocators before it did.
 */
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "common/child.h"
#include "common/rng.h"
#include "memcheck.h"

const uint64_t mc_phase_salt[MC_PHASES] = {
    0x243f6a8885a308d3u,
    0x13198a2e03707344u,
    0xa4093822299f31d0u,
    0x082efa98ec4e6c89u,
};

/* Which test runs now, for the parent to name if this process dies in it,
 * and a progress mark for its watchdog (child.c). */
void mc_mark_test(struct mc_target *t, const struct mc_test *c)
{
    t->now = (struct mc_running){ .set = true,
                                  .phase = c->phase,
                                  .index = c->index,
                                  .heap = c->heap,
                                  .block = c->block,
                                  .flags = c->flags };
    tk_child_beat(&t->beat);
}

uint64_t mc_test_seed(uint64_t seed, enum mc_phase phase, size_t index)
{
    uint64_t s = seed ^ mc_phase_salt[phase] ^ ((uint64_t)index * 0xd1b54a32d192ed03u);
    return tk_rng_next(&s);
}

/* Uniform in [1, h/2). --compat draws as smokey does, random() % (h/2) with
 * 0 made 1 (so 1 comes up twice as often). */
size_t mc_draw_block(const struct memcheck *m, uint64_t *rng, size_t h)
{
    size_t half = h / 2;
    if (m->o->compat) {
        size_t b = (size_t)(tk_rng_next(rng) % half);
        return b ? b : 1;
    }
    return 1 + (size_t)tk_rng_below(rng, half - 1);
}

int mc_failf(struct mc_target *t, const struct mc_test *c, const char *fmt, ...)
{
    if (t->fail.failed)
        return -1;
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    t->fail.failed = true;
    t->fail.phase = c->phase;
    if (c->phase == MC_PH_CHURN)
        snprintf(t->fail.msg, sizeof(t->fail.msg), "%s phase, heap %zu B (usable %zu B): %s",
                 mc_phase_name(c->phase), c->heap, t->a.cur.usable_bytes, what);
    else
        snprintf(t->fail.msg, sizeof(t->fail.msg),
                 "%s phase, test #%zu: heap %zu B (usable %zu B), block %zu B%s%s: %s",
                 mc_phase_name(c->phase), c->index, c->heap, t->a.cur.usable_bytes, c->block,
                 c->flags & MC_F_SHUFFLE ? " +shuffle" : "", c->flags & MC_F_HOT ? " +hot" : "",
                 what);
    return -1;
}

/* ---- progress ---------------------------------------------------------------- */

void mc_progress_begin(struct memcheck *m, size_t total)
{
    m->progress.done = 0;
    m->progress.total = total;
    m->progress.last_ns = 0;
}

/* done: units of work finished so far in the phase. */
void mc_progress_step(struct memcheck *m, const struct mc_target *t, enum mc_phase ph, size_t done)
{
    struct mc_progress *p = &m->progress;
    p->done = done;
    if (!p->on)
        return;
    uint64_t now = tk_clock_ns();
    if (now - p->last_ns < 250000000u)
        return;
    p->last_ns = now;
    fprintf(stderr, "\rmemcheck: %-8s %-7s %zu/%zu   ", t->a.name, mc_phase_name(ph), p->done,
            p->total);
}

void mc_progress_end(const struct memcheck *m)
{
    if (m->progress.on)
        fprintf(stderr, "\r%60s\r", "");
}

/* ---- heaps and probes ---------------------------------------------------------- */

bool mc_probe_fits(struct tk_alloc *a, size_t size, struct mc_probe *pr)
{
    void *p = a->alloc(a->ctx, size);
    if (!p)
        return false;
    uintptr_t at = (uintptr_t)p;
    bool inside = !pr->use_span || (at >= pr->lo && at <= pr->hi && size <= pr->hi - at);
    if (a->free(a->ctx, p) != 0)
        pr->free_refused = true;
    return inside;
}

/* Its usable size must be the one sizing found (== H unless reported
 * inexact), and nothing may be used. */
int mc_create_heap(struct memcheck *m, struct mc_target *t, const struct mc_test *c)
{
    struct tk_alloc *a = &t->a;
    int rc = tk_alloc_create(a, &m->arena, c->heap);
    if (rc != 0)
        return mc_failf(t, c, "cannot create a heap of usable size %zu: %s", c->heap,
                        strerror(-rc));
    struct rtm_heap_stats st;
    if (tk_alloc_stats(a, &st) != 0)
        return 0;
    if (st.usable_bytes != a->cur.usable_bytes || st.used_bytes != 0 || st.live_blocks != 0) {
        mc_failf(t, c,
                 "memory size inconsistency: usable_bytes %zu (%zu when sized on the same "
                 "memory), used_bytes %zu, live_blocks %zu on a fresh heap",
                 st.usable_bytes, a->cur.usable_bytes, st.used_bytes, st.live_blocks);
        tk_alloc_destroy(a);
        return -1;
    }
    return 0;
}

/* The checks apply to the allocators that have statistics, and an
 * integrity walk. */
int mc_check_empty(struct mc_target *t, const struct mc_test *c)
{
    struct tk_alloc *a = &t->a;
    struct rtm_heap_stats st;
    if (tk_alloc_stats(a, &st) == 0) {
        if (st.used_bytes != 0 || st.live_blocks != 0)
            return mc_failf(t, c,
                            "memory leakage: %zu bytes in %zu blocks still used after "
                            "freeing every block",
                            st.used_bytes, st.live_blocks);
        if (st.largest_free_bytes != a->cur.largest_free_bytes)
            return mc_failf(t, c,
                            "coalescing incomplete: largest_free_bytes %zu after freeing "
                            "every block, %zu after create",
                            st.largest_free_bytes, a->cur.largest_free_bytes);
    }
    if (tk_alloc_check(a) == -EFAULT)
        return mc_failf(t, c, "the heap's integrity check (rtm_heap_check) reports corruption");
    return 0;
}
