/*
 * Bench kit: cache maintenance from user space, for tools that measure a
 * cold cache (rtmem bw; later a worst-case timing tool).
 *
 * tk_cache_flush writes back and evicts a range from every level of the
 * data caches, by the best means this CPU gives an unprivileged program:
 *
 *   x86-64  clflushopt on each line when CPUID.(EAX=7,ECX=0):EBX[23] says
 *           the CPU has it, else clflush; then mfence, so that the flushes
 *           are done before any later load or store (clflushopt is ordered
 *           only by a fence). Line size from CPUID.1:EBX[15:8].
 *   i686    the same where CPUID.1:EDX has CLFSH and SSE2 (for mfence),
 *           else as "other" below.
 *   arm64   dc civac (clean and invalidate to the point of coherency) on
 *           each line, the line the smallest that CTR_EL0.DminLine gives;
 *           then dsb sy. Linux lets EL0 run it (SCTLR_EL1.UCI).
 *   other   no instruction reachable: the caches are evicted by walking an
 *           eviction buffer (set with tk_cacheops_init) that is larger
 *           than the last-level cache, writing one word per line. Evicts
 *           everything, not only the range, and only as far as the
 *           replacement policy allows: the method's name says which.
 *
 * tk_copy_nt copies with non-temporal stores (x86-64 SSE2: movntdq, then
 * sfence): the destination's lines are written to memory without being
 * brought into the caches, the nearest a user-space program comes to an
 * uncached (write-combining) destination. Elsewhere it is not available
 * and says so.
 *
 * Architecture code is compiled under #if, so every target builds; the
 * method chosen is reported, never assumed.
 */
#ifndef RTMEM_TOOLS_CACHEOPS_H
#define RTMEM_TOOLS_CACHEOPS_H

#include <stdbool.h>
#include <stddef.h>

enum tk_flush_method {
    TK_FLUSH_CLFLUSHOPT, /* x86-64 */
    TK_FLUSH_CLFLUSH,    /* x86 without clflushopt */
    TK_FLUSH_DC_CIVAC,   /* arm64 */
    TK_FLUSH_EVICT,      /* elsewhere: the eviction buffer's walk */
    TK_FLUSH_NONE,       /* elsewhere, without an eviction buffer */
};

struct tk_cacheops {
    enum tk_flush_method method;
    size_t line_bytes;  /* the flush's step: from the CPU (CPUID, CTR_EL0), or
                         * the eviction walk's (64) */
    bool nt_copy;       /* tk_copy_nt is available */
    char *evict;        /* TK_FLUSH_EVICT: the buffer, owned */
    size_t evict_bytes; /* its size */
};

/*
 * Chooses the method for this CPU. evict_bytes: the size of the eviction
 * buffer to allocate where no flush instruction is reachable (twice the
 * last-level cache is a fair choice; 0: none, TK_FLUSH_NONE there); not
 * used on x86-64 and arm64. Returns 0, or -ENOMEM (the buffer could not be
 * allocated; the method is then TK_FLUSH_NONE). O(1), or O(evict_bytes) to
 * touch the buffer.
 */
int tk_cacheops_init(struct tk_cacheops *c, size_t evict_bytes);

/* Gives back the eviction buffer. */
void tk_cacheops_destroy(struct tk_cacheops *c);

/* "clflushopt", "clflush", "dc civac", "eviction buffer walk", "none". */
const char *tk_flush_method_name(enum tk_flush_method m);

/*
 * Writes back and evicts [p, p + bytes) from the data caches (see the top
 * of this file): contents unchanged. O(bytes / line) instructions, or
 * O(evict_bytes) for the eviction walk; none for TK_FLUSH_NONE.
 */
void tk_cache_flush(const struct tk_cacheops *c, const void *p, size_t bytes);

/*
 * Copies bytes from src to dst (not overlapping) with non-temporal stores,
 * then a store fence: the head up to dst's 16-byte alignment and the tail
 * below 16 bytes are copied with memcpy. Returns 0, or -ENOTSUP where
 * c->nt_copy is false (nothing copied). O(bytes).
 */
int tk_copy_nt(const struct tk_cacheops *c, void *dst, const void *src, size_t bytes);

#endif /* RTMEM_TOOLS_CACHEOPS_H */
