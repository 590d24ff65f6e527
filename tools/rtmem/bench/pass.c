/*
 * `rtmem bench`: the allocators' heaps and calls, and the timed passes.
 *
 * Every allocator, and the no-op floor, is timed by the same machine code:
 * one timing loop per pass kind (timed_pass, timed_fill_pass), each compiled
 * once and called for every allocator with a struct bench_call of function
 * pointers. Each timed call goes through such a pointer to a wrapper that
 * jumps to the allocator's function (rtm_heap_*, rtm_tlsf_*, rtm_halffit_*,
 * malloc/free;
 * for a peer or plugin, through its table), and the floor's wrapper jumps
 * the same way to a function that does nothing (floor.c, out of the
 * compiler's sight). So the floor subtracts exactly the harness's own code,
 * wherever the compiler and linker place it, and floor-subtracted figures
 * are the allocator's own work.
 *
 * The timed free returns nothing, as glibc's free does: a status would cost
 * glibc an extra call level. A free a heap refuses shows in the heap check
 * after the pass (blocks still live); the untimed drain at the end of a pass
 * counts refusals (free_errors).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* Does a run on a heap of its own, in memory the bench maps for it? */
static bool has_heap(const struct allocator *a)
{
    return !a->floor && a->def.sort == TK_HEAP;
}

/* A new heap of a's kind on a's memory; 0 or -errno (reported). */
static int create_heap(struct allocator *a)
{
    bool made;
    errno = 0;
    if (a->def.from == TK_FROM_RTMEM) {
        struct rtm_heap_config cfg = { .hardening = a->def.hardening };
        a->heap = rtm_heap_create_ex(a->def.kind, a->mem.mem, a->mem.bytes, &cfg);
        made = a->heap != NULL;
    } else if (a->def.from == TK_FROM_TYPED && strcmp(a->def.kind, "tlsf") == 0) {
        struct rtm_tlsf *t = rtm_tlsf_create(a->mem.mem, a->mem.bytes);
        a->typed = t;
        a->heap = t ? rtm_tlsf_heap(t) : NULL;
        made = a->heap != NULL;
    } else if (a->def.from == TK_FROM_TYPED) {
        struct rtm_halffit *h = rtm_halffit_create(a->mem.mem, a->mem.bytes);
        a->typed = h;
        a->heap = h ? rtm_halffit_heap(h) : NULL;
        made = a->heap != NULL;
    } else {
        a->loaded_heap = a->def.hops->create(a->def.hops_arg, a->mem.mem, a->mem.bytes);
        made = a->loaded_heap != NULL;
    }
    struct rtm_heap_stats st;
    if (made && a->heap && rtm_heap_stats(a->heap, &st) == 0)
        a->largest_request = st.largest_free_bytes;
    if (!made) {
        int err = errno ? errno : EINVAL;
        fprintf(stderr, "rtmem bench: cannot create a %s heap of %zu bytes: %s\n", a->def.name,
                a->mem.bytes, strerror(err));
        a->typed = NULL;
        return -err;
    }
    return 0;
}

static void destroy_heap(struct allocator *a)
{
    if (a->heap)
        rtm_heap_destroy(a->heap);
    if (a->loaded_heap)
        a->def.hops->destroy(a->loaded_heap);
    a->heap = NULL;
    a->typed = NULL;
    a->loaded_heap = NULL;
}

int bench_allocator_open(struct allocator *a, size_t heap_bytes)
{
    if (!has_heap(a))
        return 0;
    int rc = tk_arena_open(&a->mem, heap_bytes);
    if (rc != 0) {
        fprintf(stderr, "rtmem bench: mmap of %zu bytes for %s: %s\n", heap_bytes, a->def.name,
                strerror(-rc));
        return rc;
    }
    return create_heap(a);
}

/* The calls a timing loop makes, and what they get. */
struct bench_call {
    void *(*alloc)(void *ctx, size_t size);
    void (*free)(void *ctx, void *p);
    int (*free_checked)(void *ctx, void *p); /* untimed: the drain */
    void *ctx;
};

/* The wrappers the timed calls go through: each one jump (a tail call) to
 * the allocator, so every allocator and the floor pay the same call. */
static void *floor_alloc(void *ctx, size_t size)
{
    return bench_noop_alloc(ctx, size);
}
static void floor_free(void *ctx, void *p)
{
    bench_noop_free(ctx, p);
}
static int floor_free_checked(void *ctx, void *p)
{
    bench_noop_free(ctx, p);
    return 0;
}

static void *heap_alloc(void *h, size_t size)
{
    return rtm_heap_alloc(h, size);
}
static void heap_free(void *h, void *p)
{
    (void)rtm_heap_free(h, p);
}
static int heap_free_checked(void *h, void *p)
{
    return rtm_heap_free(h, p);
}

static void *tlsf_alloc(void *t, size_t size)
{
    return rtm_tlsf_alloc(t, size);
}
static void tlsf_free(void *t, void *p)
{
    (void)rtm_tlsf_free(t, p);
}
static int tlsf_free_checked(void *t, void *p)
{
    return rtm_tlsf_free(t, p);
}

static void *halffit_alloc(void *h, size_t size)
{
    return rtm_halffit_alloc(h, size);
}
static void halffit_free(void *h, void *p)
{
    (void)rtm_halffit_free(h, p);
}
static int halffit_free_checked(void *h, void *p)
{
    return rtm_halffit_free(h, p);
}

static void *glibc_alloc(void *ctx, size_t size)
{
    (void)ctx;
    return malloc(size);
}

static void glibc_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}

static int glibc_free_checked(void *ctx, void *p)
{
    (void)ctx;
    free(p);
    return 0;
}

/* What a loaded allocator's own calls take: its heap, or its own data. */
static void *loaded_ctx(const struct allocator *a)
{
    return a->def.sort == TK_HEAP ? a->loaded_heap : a->def.ctx;
}

/* A peer or plugin: its table's calls, reached through the allocator. */
static void *loaded_alloc(void *ctx, size_t size)
{
    const struct allocator *a = ctx;
    return a->def.alloc(loaded_ctx(a), size);
}

static void loaded_free(void *ctx, void *p)
{
    const struct allocator *a = ctx;
    (void)a->def.free(loaded_ctx(a), p);
}

static int loaded_free_checked(void *ctx, void *p)
{
    const struct allocator *a = ctx;
    return a->def.free(loaded_ctx(a), p);
}

static void make_call(struct allocator *a, struct bench_call *c)
{
    if (a->floor) {
        *c = (struct bench_call){ floor_alloc, floor_free, floor_free_checked, a->scratch };
        return;
    }
    switch (a->def.from) {
    case TK_FROM_RTMEM:
        *c = (struct bench_call){ heap_alloc, heap_free, heap_free_checked, a->heap };
        break;
    case TK_FROM_TYPED:
        if (strcmp(a->def.kind, "tlsf") == 0)
            *c = (struct bench_call){ tlsf_alloc, tlsf_free, tlsf_free_checked, a->typed };
        else
            *c = (struct bench_call){ halffit_alloc, halffit_free, halffit_free_checked, a->typed };
        break;
    case TK_FROM_GLIBC:
        *c = (struct bench_call){ glibc_alloc, glibc_free, glibc_free_checked, NULL };
        break;
    case TK_FROM_PEER:
    case TK_FROM_PLUGIN:
        *c = (struct bench_call){ loaded_alloc, loaded_free, loaded_free_checked, a };
        break;
    }
}

/* One compiled copy of each timing loop, whatever the allocator: never
 * inlined, cloned or specialized for a call site. */
#if defined(__clang__)
#define TIMING_LOOP __attribute__((noinline))
#else
#define TIMING_LOOP __attribute__((noipa))
#endif

/*
 * The timed calls every pass is made of: the region between
 * tk_timer_start and tk_timer_end holds just the call through the
 * pointer.
 *
 * timed_alloc returns an allocation of size (read before the timer
 * starts; stored after it stops), ticks to o->alloc_ticks; a NULL result
 * counts in o->failed_allocs; otherwise one byte of the block (none for a
 * 0-byte request) is written, outside the timed region, as a user would,
 * with the low bits of seq. Inlined into each loop, which is compiled once.
 */
static inline __attribute__((always_inline)) void *
timed_alloc(void *(*volatile *alloc_fn)(void *, size_t), void *ctx, uint32_t size, size_t seq,
            struct pass_out *o)
{
    void *(*fn)(void *, size_t) = *alloc_fn;
    uint64_t t0 = tk_timer_start();
    void *p = fn(ctx, size);
    uint64_t t1 = tk_timer_end();
    tk_samples_add(o->alloc_ticks, t1 - t0);
    if (!p)
        o->failed_allocs++;
    else if (size != 0)
        *(volatile unsigned char *)p = (unsigned char)seq;
    return p;
}

/* timed_free frees p (not NULL: a failed allocation's slot is skipped by
 * the caller, untimed), ticks to o->free_ticks. */
static inline __attribute__((always_inline)) void
timed_free(void (*volatile *free_fn)(void *, void *), void *ctx, void *p, struct pass_out *o)
{
    void (*fn)(void *, void *) = *free_fn;
    uint64_t t0 = tk_timer_start();
    fn(ctx, p);
    uint64_t t1 = tk_timer_end();
    tk_samples_add(o->free_ticks, t1 - t0);
}

/* One timed pass of w. Samples go to preallocated stores: nothing is
 * allocated here. */
static TIMING_LOOP void timed_pass(const struct bench_call *c, const struct workload *w,
                                   void **slots, struct pass_out *o)
{
    /* Read through volatile at each call: the compiler cannot know, or
     * hoist, what is called. */
    void *(*volatile alloc_fn)(void *, size_t) = c->alloc;
    void (*volatile free_fn)(void *, void *) = c->free;
    void *ctx = c->ctx;
    size_t live = 0;
    for (size_t i = 0; i < w->n; i++) {
        uint32_t op = w->ops[i];
        if (op & OP_FREE) {
            uint32_t victim = op & ~OP_FREE;
            void *p = slots[victim];
            slots[victim] = slots[--live];
            if (!p) {
                o->skipped_frees++;
                continue;
            }
            timed_free(&free_fn, ctx, p, o);
        } else {
            slots[live++] = timed_alloc(&alloc_fn, ctx, op, i, o);
        }
    }
    /* Leave the allocator empty for the next pass (not timed). */
    while (live > 0) {
        void *p = slots[--live];
        if (p && c->free_checked(ctx, p) != 0)
            o->free_errors++;
    }
}

/*
 * One pass of the free-order phase: fill (each allocation timed), then free
 * every block in the order given, each free timed. Both orders run this
 * same loop; only the contents of order differ.
 */
static TIMING_LOOP void timed_fill_pass(const struct bench_call *c, const struct fill_work *fw,
                                        const uint32_t *order, struct pass_out *o)
{
    void *(*volatile alloc_fn)(void *, size_t) = c->alloc;
    void (*volatile free_fn)(void *, void *) = c->free;
    void *ctx = c->ctx;
    for (size_t i = 0; i < fw->n; i++)
        fw->blocks[i] = timed_alloc(&alloc_fn, ctx, fw->sizes[i], i, o);
    for (size_t i = 0; i < fw->n; i++) {
        void *p = fw->blocks[order[i]];
        if (!p) {
            o->skipped_frees++;
            continue;
        }
        timed_free(&free_fn, ctx, p, o);
    }
}

/* After a drained pass a heap must be consistent and empty (as far as a
 * plugin's optional calls can tell). */
static void check_heap(struct allocator *a)
{
    struct rtm_heap_stats st;
    memset(&st, 0, sizeof(st));
    if (a->heap) {
        if (rtm_heap_check(a->heap) != 0 || rtm_heap_stats(a->heap, &st) != 0 ||
            st.live_blocks != 0 || st.used_bytes != 0)
            a->check_failures++;
        return;
    }
    if (!a->loaded_heap)
        return;
    const struct tk_heap_ops *h = a->def.hops;
    if ((h->check && h->check(a->loaded_heap) != 0) ||
        (h->stats &&
         (h->stats(a->loaded_heap, &st) != 0 || st.live_blocks != 0 || st.used_bytes != 0)))
        a->check_failures++;
}

static void pass_out_reset(struct bench *b, struct pass_out *out)
{
    tk_samples_reset(&b->alloc_s);
    tk_samples_reset(&b->free_s);
    memset(out, 0, sizeof(*out));
    out->alloc_ticks = &b->alloc_s;
    out->free_ticks = &b->free_s;
}

void bench_run_pass(struct bench *b, struct allocator *a, struct pass_out *out)
{
    struct bench_call c;
    pass_out_reset(b, out);
    make_call(a, &c);
    timed_pass(&c, &b->w, b->slots, out);
    check_heap(a);
}

int bench_run_fill_pass(struct bench *b, struct allocator *a, enum fill_order order,
                        struct pass_out *out)
{
    const uint32_t *ord = b->fw.order[order];
    pass_out_reset(b, out);
    if (has_heap(a)) {
        /* Every pass starts from the state right after creation. */
        destroy_heap(a);
        int rc = create_heap(a);
        if (rc != 0)
            return rc;
    }
    struct bench_call c;
    make_call(a, &c);
    timed_fill_pass(&c, &b->fw, ord, out);
    check_heap(a);
    return 0;
}

/* Before a pass: which allocator and where, for the parent to name should
 * the process die in it, and progress for the watchdog. */
void bench_mark_pass(struct bench *b, size_t al, enum bench_phase phase, unsigned round,
                     bool warmup)
{
    b->now = (struct bench_running){
        .set = true, .al = al, .phase = phase, .round = round, .warmup = warmup
    };
    tk_child_beat(&b->beat);
}

static const char *const phase_names[] = { "setup", "main phase", "free-order phase", "sweep",
                                           "wide ranges" };

const char *bench_where(const struct bench_running *w, char *buf, size_t size)
{
    if (w->phase == PH_SETUP)
        snprintf(buf, size, "creating its heap");
    else if (w->warmup)
        snprintf(buf, size, "%s, warm-up pass", phase_names[w->phase]);
    else if (w->phase == PH_SWEEP)
        snprintf(buf, size, "sweep, bucket %u..%u B", w->round * SWEEP_BUCKET_BYTES,
                 (w->round + 1) * SWEEP_BUCKET_BYTES - 1);
    else if (w->phase == PH_WIDE)
        snprintf(buf, size, "sweep, wide range %u..%u B", w->round * WIDE_RANGE_BYTES + 1,
                 (w->round + 1) * WIDE_RANGE_BYTES);
    else
        snprintf(buf, size, "%s, round %u", phase_names[w->phase], w->round + 1);
    return buf;
}
