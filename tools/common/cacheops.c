/*
 * Bench kit: cache maintenance from user space (cacheops.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/cacheops.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

/* The eviction walk's step: a line on every machine rtmem knows. */
#define EVICT_LINE 64u

const char *tk_flush_method_name(enum tk_flush_method m)
{
    switch (m) {
    case TK_FLUSH_CLFLUSHOPT: return "clflushopt";
    case TK_FLUSH_CLFLUSH: return "clflush";
    case TK_FLUSH_DC_CIVAC: return "dc civac";
    case TK_FLUSH_EVICT: return "eviction buffer walk";
    case TK_FLUSH_NONE: break;
    }
    return "none";
}

#if defined(__x86_64__)
static void choose(struct tk_cacheops *c)
{
    unsigned a, b, cx, d;
    c->line_bytes = EVICT_LINE;
    if (__get_cpuid(1, &a, &b, &cx, &d) && ((b >> 8) & 0xff) != 0)
        c->line_bytes = ((b >> 8) & 0xff) * 8;
    bool opt = __get_cpuid_count(7, 0, &a, &b, &cx, &d) && (b & (1u << 23));
    c->method = opt ? TK_FLUSH_CLFLUSHOPT : TK_FLUSH_CLFLUSH;
    c->nt_copy = true; /* SSE2 is part of x86-64 */
}
#elif defined(__i386__)
/* 32-bit x86: clflush where the CPU has it and SSE2's mfence to order it
 * (every CPU an i686 program meets today); no non-temporal copy (its SSE2
 * stores are not in an i686 build). */
static void choose(struct tk_cacheops *c)
{
    unsigned a, b, cx, d;
    c->line_bytes = EVICT_LINE;
    c->method = TK_FLUSH_NONE; /* tk_cacheops_init falls back to the eviction walk */
    c->nt_copy = false;
    if (!__get_cpuid(1, &a, &b, &cx, &d) || !(d & (1u << 19)) || !(d & (1u << 26)))
        return; /* no clflush (CLFSH) or no mfence (SSE2) */
    if (((b >> 8) & 0xff) != 0)
        c->line_bytes = ((b >> 8) & 0xff) * 8;
    bool opt = __get_cpuid_count(7, 0, &a, &b, &cx, &d) && (b & (1u << 23));
    c->method = opt ? TK_FLUSH_CLFLUSHOPT : TK_FLUSH_CLFLUSH;
}
#elif defined(__aarch64__)
static void choose(struct tk_cacheops *c)
{
    uint64_t ctr;
    __asm__ __volatile__("mrs %0, ctr_el0" : "=r"(ctr));
    /* DminLine, bits 19:16: log2 of the smallest data line in 4-byte words. */
    c->line_bytes = (size_t)4 << ((ctr >> 16) & 0xf);
    c->method = TK_FLUSH_DC_CIVAC;
    c->nt_copy = false;
}
#else
static void choose(struct tk_cacheops *c)
{
    c->line_bytes = EVICT_LINE;
    c->method = TK_FLUSH_NONE;
    c->nt_copy = false;
}
#endif

int tk_cacheops_init(struct tk_cacheops *c, size_t evict_bytes)
{
    memset(c, 0, sizeof(*c));
    choose(c);
    if (c->method != TK_FLUSH_NONE || evict_bytes == 0)
        return 0;
    c->evict = malloc(evict_bytes);
    if (!c->evict)
        return -ENOMEM;
    memset(c->evict, 1, evict_bytes);
    c->evict_bytes = evict_bytes;
    c->method = TK_FLUSH_EVICT;
    return 0;
}

void tk_cacheops_destroy(struct tk_cacheops *c)
{
    free(c->evict);
    c->evict = NULL;
    c->evict_bytes = 0;
}

/* Every line of the eviction buffer written: what the caches held is
 * replaced by it, as far as their replacement policy goes. */
static void evict_walk(const struct tk_cacheops *c)
{
    volatile char *e = c->evict;
    for (size_t i = 0; i < c->evict_bytes; i += EVICT_LINE)
        e[i] = (char)(e[i] + 1);
}

void tk_cache_flush(const struct tk_cacheops *c, const void *p, size_t bytes)
{
    if (bytes == 0)
        return;
    uintptr_t line = c->line_bytes;
    uintptr_t at = (uintptr_t)p & ~(line - 1), end = (uintptr_t)p + bytes;
    switch (c->method) {
#if defined(__x86_64__) || defined(__i386__)
    case TK_FLUSH_CLFLUSHOPT:
        for (; at < end; at += line)
            __asm__ __volatile__("clflushopt %0" : "+m"(*(volatile char *)at));
        __asm__ __volatile__("mfence" ::: "memory");
        return;
    case TK_FLUSH_CLFLUSH:
        for (; at < end; at += line)
            __asm__ __volatile__("clflush %0" : "+m"(*(volatile char *)at));
        __asm__ __volatile__("mfence" ::: "memory");
        return;
#elif defined(__aarch64__)
    case TK_FLUSH_DC_CIVAC:
        for (; at < end; at += line)
            __asm__ __volatile__("dc civac, %0" : : "r"((uint64_t)at) : "memory");
        __asm__ __volatile__("dsb sy" ::: "memory");
        return;
#endif
    case TK_FLUSH_EVICT: evict_walk(c); return;
    default:
        (void)at;
        (void)end;
        return;
    }
}

int tk_copy_nt(const struct tk_cacheops *c, void *dst, const void *src, size_t bytes)
{
    if (!c->nt_copy)
        return -ENOTSUP;
#if defined(__x86_64__)
    char *d = dst;
    const char *s = src;
    size_t head = (size_t)(-(uintptr_t)d & 15u);
    if (head > bytes)
        head = bytes;
    memcpy(d, s, head);
    d += head;
    s += head;
    bytes -= head;
    /* Four 16-byte stores a step: a whole 64-byte line per iteration, so
     * that the write-combining buffers fill line by line. */
    for (; bytes >= 64; bytes -= 64, d += 64, s += 64) {
        __m128i x0 = _mm_loadu_si128((const __m128i *)(const void *)s);
        __m128i x1 = _mm_loadu_si128((const __m128i *)(const void *)(s + 16));
        __m128i x2 = _mm_loadu_si128((const __m128i *)(const void *)(s + 32));
        __m128i x3 = _mm_loadu_si128((const __m128i *)(const void *)(s + 48));
        _mm_stream_si128((__m128i *)(void *)d, x0);
        _mm_stream_si128((__m128i *)(void *)(d + 16), x1);
        _mm_stream_si128((__m128i *)(void *)(d + 32), x2);
        _mm_stream_si128((__m128i *)(void *)(d + 48), x3);
    }
    for (; bytes >= 16; bytes -= 16, d += 16, s += 16)
        _mm_stream_si128((__m128i *)(void *)d, _mm_loadu_si128((const __m128i *)(const void *)s));
    _mm_sfence();
    memcpy(d, s, bytes);
    return 0;
#else
    (void)dst;
    (void)src;
    (void)bytes;
    return -ENOTSUP;
#endif
}
