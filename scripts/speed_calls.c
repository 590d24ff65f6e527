/*
 * Per-call instruction and data-line counts of one allocator, for
 * scripts/speed.py (make speed): run under valgrind's lackey, which prints
 * every instruction and data access; speed.py counts what lies between the
 * two marker calls around each alloc and free, less what an empty callee
 * costs between them (three calibration calls first).
 *
 *   speed_calls KIND|FILE.so [none] [OPS]
 *
 * KIND: an rtmem kind through rtm_heap_*, or "tlsf(typed)" through
 * rtm_tlsf_*, or "halffit(typed)" through rtm_halffit_* ("none": at
 * RTM_HEAP_HARDEN_NONE);
 * FILE.so: a heap plugin (rtmem/plugin.h). The workload is bench's main
 * phase: sizes uniform in 16..4096, at most 1000 live blocks, each step an
 * alloc or the free of a random live block with even odds (an alloc when
 * none is live, a free at 1000), a fixed seed; OPS steps (default 20000).
 * 64 MiB of memory, 16 bytes of each block written. Exit status 0, or 1
 * when the allocator fails (a failed alloc or a refused free).
 */
#include <alloca.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rtmem/halffit.h"
#include "rtmem/heap.h"
#include "rtmem/plugin.h"
#include "rtmem/tlsf.h"

#define LIVE 1000
static unsigned char mem[64 << 20] __attribute__((aligned(4096)));
static void *live[LIVE];
static void *heap;
static void *(*do_alloc_fn)(void *, size_t);
static int (*do_free_fn)(void *, void *);

/* The markers: speed.py finds them by name (nm), so never inlined. */
__attribute__((noinline)) void speed_mark_begin(void)
{
    __asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) void speed_mark_end(void)
{
    __asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) void *speed_alloc(size_t n)
{
    speed_mark_begin();
    void *p = do_alloc_fn(heap, n);
    speed_mark_end();
    return p;
}
__attribute__((noinline)) int speed_free(void *p)
{
    speed_mark_begin();
    int rc = do_free_fn(heap, p);
    speed_mark_end();
    return rc;
}
__attribute__((noinline)) static void *empty_alloc(void *h, size_t n)
{
    (void)h;
    (void)n;
    __asm__ volatile("");
    return NULL;
}

static void *heap_alloc(void *h, size_t n)
{
    return rtm_heap_alloc(h, n);
}
static int heap_free(void *h, void *p)
{
    return rtm_heap_free(h, p);
}

static void *typed_alloc(void *h, size_t n)
{
    return rtm_tlsf_alloc(h, n);
}
static int typed_free(void *h, void *p)
{
    return rtm_tlsf_free(h, p);
}

static void *hf_typed_alloc(void *h, size_t n)
{
    return rtm_halffit_alloc(h, n);
}
static int hf_typed_free(void *h, void *p)
{
    return rtm_halffit_free(h, p);
}

static int workload(long ops);

static uint64_t seed = 20240601;
static uint64_t draw(void) /* splitmix64 */
{
    uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: speed_calls KIND|FILE.so [none] [OPS]\n");
        return 2;
    }
    int ai = 2;
    struct rtm_heap_config cfg = { .hardening = RTM_HEAP_HARDEN_O1 };
    if (argc > ai && strcmp(argv[ai], "none") == 0) {
        cfg.hardening = RTM_HEAP_HARDEN_NONE;
        ai++;
    }
    long ops = argc > ai ? atol(argv[ai]) : 20000;
    if (strchr(argv[1], '/')) {
        void *dl = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        const struct rtm_heap_plugin *pl = dl ? dlsym(dl, RTM_HEAP_PLUGIN_SYMBOL) : NULL;
        if (!pl) {
            fprintf(stderr, "speed_calls: %s: %s\n", argv[1], dlerror());
            return 2;
        }
        heap = pl->create(mem, sizeof mem);
        do_alloc_fn = pl->alloc;
        do_free_fn = pl->free;
    } else if (strcmp(argv[1], "tlsf(typed)") == 0) {
        heap = rtm_tlsf_create_ex(mem, sizeof mem, &cfg);
        do_alloc_fn = typed_alloc;
        do_free_fn = typed_free;
    } else if (strcmp(argv[1], "halffit(typed)") == 0) {
        heap = rtm_halffit_create_ex(mem, sizeof mem, &cfg);
        do_alloc_fn = hf_typed_alloc;
        do_free_fn = hf_typed_free;
    } else {
        heap = rtm_heap_create_ex(argv[1], mem, sizeof mem, &cfg);
        do_alloc_fn = heap_alloc;
        do_free_fn = heap_free;
    }
    if (!heap) {
        fprintf(stderr, "speed_calls: cannot create a heap of %s\n", argv[1]);
        return 2;
    }
    /* The stack at the same place modulo a page whatever the environment
     * and arguments above it, so that the lines a call's frame touches are
     * the same on every run. */
    size_t skew = (size_t)((uintptr_t)__builtin_frame_address(0) % 4096);
    volatile char *pad = alloca(skew + 64);
    pad[0] = 0;
    return workload(ops);
}

__attribute__((noinline)) static int workload(long ops)
{
    void *(*real)(void *, size_t) = do_alloc_fn;
    do_alloc_fn = empty_alloc;
    for (int i = 0; i < 3; i++)
        speed_alloc(1);
    do_alloc_fn = real;
    long n = 0;
    for (long i = 0; i < ops; i++) {
        if (n == LIVE || (n > 0 && (draw() & 1))) {
            long k = (long)(draw() % (uint64_t)n);
            if (speed_free(live[k]) != 0) {
                fprintf(stderr, "speed_calls: a free was refused\n");
                return 1;
            }
            live[k] = live[--n];
        } else {
            void *p = speed_alloc(16 + draw() % 4081);
            if (!p) {
                fprintf(stderr, "speed_calls: an alloc failed\n");
                return 1;
            }
            memset(p, 0, 16);
            live[n++] = p;
        }
    }
    return 0;
}
