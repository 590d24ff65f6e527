/*
 * `rtmem replay`: one replay of a program, on an rtmem heap, a plugin's
 * heap, or through a process allocator's malloc family (glibc's, or a
 * peer's own entry points). The blocks' contents are never written (a
 * realloc's copy is the allocator's own work): what the replay touches is
 * what the allocator touches.
 *
 * A plugin's table may lack the optional calls. Without aligned_alloc, an
 * aligned request at or below the alignment its alloc gives goes to
 * alloc, and a larger one cannot be made (the plugin is not replayed on a
 * program that asks for one: cli.c). Without realloc, a realloc is what a
 * port would write: alloc the new size, copy the smaller of the old
 * block's usable size and the new size, free the old block; on failure
 * the old block stays live, as rtm_heap_realloc's. A realloc of a block
 * to 0 asks for a one-byte block, as rtm_heap_realloc's does (of NULL, it
 * is alloc(0), as rtm_heap_realloc(NULL, 0) is).
 */
#include <stdlib.h>
#include <string.h>

#include "replay.h"

/* The floor's calls: a call that does nothing but return, through the same
 * path as the allocators' (after their tests). Never inlined. */
static char noop_block;
__attribute__((noinline)) static void *noop_alloc(size_t size)
{
    __asm__ volatile("" : : "r"(size) : "memory");
    return &noop_block;
}

__attribute__((noinline)) static void noop_free(void *p)
{
    __asm__ volatile("" : : "r"(p) : "memory");
}

/* A realloc through a plugin without one: alloc, copy, free. */
static void *plugin_realloc(const struct replay_how *how, void *old, size_t size)
{
    const struct rtm_heap_plugin *t = how->plug;
    if (!old)
        return t->alloc(how->pheap, size);
    void *p = t->alloc(how->pheap, size ? size : 1);
    if (!p)
        return NULL;
    size_t have = t->usable_size(how->pheap, old);
    memcpy(p, old, have < size ? have : size);
    if (t->free(how->pheap, old) != 0 && how->refused)
        (*how->refused)++;
    return p;
}

/* The calls, on an rtmem heap, a plugin's, a peer or glibc. */
static void *call_alloc(const struct replay_how *how, size_t size)
{
    if (how->heap)
        return rtm_heap_alloc(how->heap, size);
    if (how->plug)
        return how->plug->alloc(how->pheap, size);
    if (how->peer)
        return how->peer->alloc(how->peer->ctx, size);
    return how->noop ? noop_alloc(size) : malloc(size);
}

static void *call_aligned(const struct replay_how *how, size_t align, size_t size)
{
    if (how->heap)
        return rtm_heap_aligned_alloc(how->heap, align, size);
    if (how->plug) {
        if (how->plug->aligned_alloc)
            return how->plug->aligned_alloc(how->pheap, align, size);
        return align <= how->plug_align ? how->plug->alloc(how->pheap, size) : NULL;
    }
    if (how->peer)
        return how->peer->aligned(how->peer->ctx, align, size);
    if (how->noop)
        return noop_alloc(size);
    void *p = NULL;
    return posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size) == 0 ? p
                                                                                          : NULL;
}

static void *call_realloc(const struct replay_how *how, void *old, size_t size)
{
    if (how->heap)
        return rtm_heap_realloc(how->heap, old, size);
    if (how->plug)
        return how->plug->realloc ? how->plug->realloc(how->pheap, old, size)
                                  : plugin_realloc(how, old, size);
    if (how->peer)
        return how->peer->realloc(how->peer->ctx, old, size);
    return how->noop ? noop_alloc(size) : realloc(old, size);
}

/* 0, or the heap's refusal of a live block (an rtmem heap's or a
 * plugin's; a process allocator has none to give). */
static int call_free(const struct replay_how *how, void *p)
{
    if (how->heap)
        return rtm_heap_free(how->heap, p);
    if (how->plug)
        return how->plug->free(how->pheap, p);
    if (how->peer)
        how->peer->free(how->peer->ctx, p);
    else if (how->noop)
        noop_free(p);
    else
        free(p);
    return 0;
}

/* The call an op makes. A failed allocation leaves its id NULL (a later
 * free of it does nothing). */
static void *do_alloc(const struct replay_how *how, const struct rop *op, void *old)
{
    switch (op->op) {
    case RO_ALLOC: return call_alloc(how, op->size);
    case RO_ALIGNED: return call_aligned(how, op->align, op->size);
    case RO_REALLOC: return call_realloc(how, old, op->size);
    default: return NULL;
    }
}

static int do_free(const struct replay_how *how, void *p)
{
    return call_free(how, p);
}

/* The calls of a counted replay (count.c), one per kind of call: valgrind
 * counts the instructions inside them alone, so they hold nothing but the
 * call (and the test of what to call). Never inlined, never nested; their
 * names are valgrind's --toggle-collect options. */
__attribute__((noinline)) void *rtmem_replay_count_alloc(const struct replay_how *how, size_t size)
{
    return call_alloc(how, size);
}

__attribute__((noinline)) void *rtmem_replay_count_aligned(const struct replay_how *how,
                                                           size_t align, size_t size)
{
    return call_aligned(how, align, size);
}

__attribute__((noinline)) void *rtmem_replay_count_realloc(const struct replay_how *how, void *old,
                                                           size_t size)
{
    return call_realloc(how, old, size);
}

__attribute__((noinline)) void rtmem_replay_count_free(const struct replay_how *how, void *p)
{
    (void)call_free(how, p);
}

static void *counted_alloc(const struct replay_how *how, const struct rop *op, void *old)
{
    switch (op->op) {
    case RO_ALLOC: return rtmem_replay_count_alloc(how, op->size);
    case RO_ALIGNED: return rtmem_replay_count_aligned(how, op->align, op->size);
    case RO_REALLOC: return rtmem_replay_count_realloc(how, old, op->size);
    default: return NULL;
    }
}

/* The heap's statistics at the program's peak: an rtmem heap's, or a
 * plugin's that has them. */
static void peak_stats(const struct replay_how *how, struct replay_outcome *out)
{
    memset(&out->at_peak, 0, sizeof(out->at_peak));
    if (how->heap)
        out->have_peak = rtm_heap_stats(how->heap, &out->at_peak) == 0;
    else if (how->plug && how->plug->stats)
        out->have_peak = how->plug->stats(how->pheap, &out->at_peak) == 0;
}

void replay_once(const struct replay_program *p, const struct replay_how *given, void **blocks,
                 struct replay_outcome *out)
{
    memset(out, 0, sizeof(*out));
    out->first_failure = p->n;
    struct replay_how with_count = *given;
    with_count.refused = &out->refused_frees;
    const struct replay_how *how = &with_count;
    for (size_t i = 0; i < p->n; i++) {
        const struct rop *op = &p->ops[i];
        bool timing = op->timed && how->allocs;
        if (op->op == RO_FREE) {
            void *b = blocks[op->id];
            blocks[op->id] = NULL;
            if (!b)
                continue;
            if (timing) {
                uint64_t t0 = tk_timer_start();
                int rc = do_free(how, b);
                uint64_t t1 = tk_timer_end();
                out->refused_frees += rc != 0;
                tk_samples_add(how->frees, t1 - t0);
                if (t1 - t0 > out->max_ticks)
                    out->max_ticks = t1 - t0;
            } else if (how->counted && op->timed) {
                rtmem_replay_count_free(how, b);
                out->counted_frees++;
            } else {
                out->refused_frees += do_free(how, b) != 0;
            }
        } else {
            void *old = op->op == RO_REALLOC && op->old != RO_NONE ? blocks[op->old] : NULL;
            void *b;
            if (timing) {
                uint64_t t0 = tk_timer_start();
                b = do_alloc(how, op, old);
                uint64_t t1 = tk_timer_end();
                tk_samples_add(how->allocs, t1 - t0);
                if (t1 - t0 > out->max_ticks)
                    out->max_ticks = t1 - t0;
            } else if (how->counted && op->timed) {
                b = counted_alloc(how, op, old);
                out->counted_allocs++;
            } else {
                b = do_alloc(how, op, old);
            }
            /* glibc's and a peer's realloc(p, 0) free p and give NULL; an
             * rtmem heap's and a plugin's give a block, NULL only when
             * they fail (p then stays live). */
            if (b || (op->size == 0 && !how->heap && !how->plug)) {
                if (op->op == RO_REALLOC && op->old != RO_NONE)
                    blocks[op->old] = NULL; /* moved, or freed by a realloc to 0 */
                blocks[op->id] = b;
            } else {
                if (out->failures++ == 0)
                    out->first_failure = i;
                if (how->stop_at_failure)
                    return;
            }
        }
        if (i == p->peak_op)
            peak_stats(how, out);
    }
}

/* ---- contention, from the trace's timing ------------------------------------------ */

struct span {
    uint64_t start, end;
    uint32_t tid;
};

static int by_start(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

uint64_t replay_contended(const struct replay_program *p, double alloc_ns, double free_ns)
{
    struct span *s = malloc((p->n ? p->n : 1) * sizeof(*s));
    if (!s)
        return UINT64_MAX;
    size_t n = 0;
    uint64_t a = (uint64_t)(alloc_ns + 0.5), f = (uint64_t)(free_ns + 0.5);
    for (size_t i = 0; i < p->n; i++) {
        const struct rop *op = &p->ops[i];
        if (!op->timed)
            continue;
        if (op->op == RO_FREE)
            s[n++] = (struct span){ op->t_ns, op->t_ns + f, op->tid };
        else
            s[n++] = (struct span){ op->t_ns > a ? op->t_ns - a : 0, op->t_ns, op->tid };
    }
    qsort(s, n, sizeof(*s), by_start);
    /* The two latest ends so far, of two different threads: the latest end
     * of a thread other than any given one is one of them. */
    struct span best = { 0, 0, UINT32_MAX }, second = { 0, 0, UINT32_MAX };
    uint64_t contended = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t other = best.tid != s[i].tid ? best.end : second.end;
        if (other > s[i].start)
            contended++;
        if (s[i].end > best.end) {
            if (best.tid != s[i].tid)
                second = best;
            best = s[i];
        } else if (s[i].tid != best.tid && s[i].end > second.end) {
            second = s[i];
        }
    }
    free(s);
    return contended;
}
