/*
 * `rtmem bench`: what the floor's wrappers jump to. In a file of their own,
 * so that the compiler, seeing neither body from the timing loops' file,
 * keeps the floor's call and jump exactly like an allocator's.
 */
#include "bench.h"

void *bench_noop_alloc(void *ctx, size_t size)
{
    (void)size;
    return ctx;
}

void bench_noop_free(void *ctx, void *p)
{
    (void)ctx;
    (void)p;
}
