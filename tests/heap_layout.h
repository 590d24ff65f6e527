/*
 * Where a heap keeps its layout: the control words that count pools and
 * bytes, and the first pool's descriptor. For the tests that damage them on
 * purpose (validate_test, shared_test's crafted segments).
 *
 * TLSF's control structure is private to tlsf.c, so its fields are found by
 * their values, on a heap with one pool: the run of words usable_bytes,
 * overhead_bytes, pool_count (1), then the pool's descriptor (next 0, raw
 * start, raw length = usable + overhead, first block, sentinel). halffit's
 * (halffit.c) has the same run, its first fragment and sentinel header in
 * the descriptor's last two words, and its pool ends with the sentinel's 16
 * bytes as TLSF's does with its sentinel's granule. A change of that order
 * makes heap_layout_find fail, and the tests with it. The page heaps'
 * fields are named (src/heap/pageheap.h), and xvheap's and zsheap's found by
 * the library (src/heap/xvheap_layout.h).
 */
#ifndef RTMEM_TESTS_HEAP_LAYOUT_H
#define RTMEM_TESTS_HEAP_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "rtmem/rtmem.h"
#include "../src/heap/pageheap.h"
#include "../src/heap/xvheap_layout.h"

struct heap_layout {
    size_t *usable, *overhead, *pool_count;
    size_t *next, *raw_start, *raw_len; /* the first pool's link */
    size_t *start, *end;                /* TLSF: the first pool's blocks and sentinel */
    size_t *start0, *end0;              /* TLSF: their copies beside the counters (else NULL) */
    size_t *map, *pages, *npages;       /* page heaps: the first pool's page map and pages */
    size_t *fresh;
    size_t pool0;         /* offset of the first pool's descriptor from the heap */
    size_t needed;        /* bytes from the heap to the end of what its pools use */
    size_t control_bytes; /* the kind's control structure (TLSF: an upper bound) */
    struct xv_layout xv;  /* xvheap, zsheap: the first region (xv.first NULL for others) */
};

static inline size_t heap_layout_off(const struct rtm_heap *h, const void *p)
{
    return (size_t)((const char *)p - (const char *)h);
}

/* Fills *l for h, a heap of one pool; false when the fields are not found. */
static inline bool heap_layout_find(struct rtm_heap *h, struct heap_layout *l)
{
    memset(l, 0, sizeof *l);
    const char *kind = rtm_heap_kind(h);
    if (!kind)
        return false;
    bool halffit = strcmp(kind, "halffit") == 0;
    if (strcmp(kind, "xvheap") == 0 || strcmp(kind, "zsheap") == 0) {
        if (kind[0] == 'x')
            rtm__xvheap_layout(h, &l->xv);
        else
            rtm__zsheap_layout(h, &l->xv);
        if (*l->xv.pool_count != 1)
            return false;
        l->usable = l->xv.usable;
        l->overhead = l->xv.overhead;
        l->pool_count = l->xv.pool_count;
        l->next = l->xv.next;
        l->raw_start = l->xv.raw_start;
        l->raw_len = l->xv.raw_len;
        l->pool0 = l->xv.region0;
        l->needed = l->xv.needed;
        l->control_bytes = l->xv.control_bytes;
        return true;
    }
    if (strcmp(kind, "tlsf") != 0 && !halffit) {
        struct ph_heap *ph = (struct ph_heap *)(void *)h;
        if (ph->pool_count != 1)
            return false;
        l->usable = &ph->usable_bytes;
        l->overhead = &ph->overhead_bytes;
        l->pool_count = &ph->pool_count;
        l->next = &ph->pool0.link.next;
        l->raw_start = &ph->pool0.link.raw_start;
        l->raw_len = &ph->pool0.link.raw_len;
        l->map = &ph->pool0.map;
        l->pages = &ph->pool0.pages;
        l->npages = &ph->pool0.npages;
        l->fresh = &ph->pool0.fresh;
        l->pool0 = heap_layout_off(h, &ph->pool0);
        l->needed = ph->pool0.pages + ph->pool0.npages * RTM_PAGEHEAP_PAGE_SIZE;
        l->control_bytes = sizeof(struct ph_heap);
        return true;
    }
    struct rtm_heap_stats st;
    if (rtm_heap_stats(h, &st) != 0 || st.pool_count != 1)
        return false;
    size_t *w = (size_t *)(void *)h;
    size_t control = halffit ? RTM_HALFFIT_CONTROL_BYTES : RTM_TLSF_CONTROL_BYTES;
    size_t words = control / sizeof(size_t) - 8;
    for (size_t i = sizeof(struct rtm_heap) / sizeof(size_t); i < words; i++) {
        if (w[i] != st.usable_bytes || w[i + 2] != 1 || w[i + 3] != 0 ||
            w[i + 5] != w[i] + w[i + 1])
            continue;
        l->usable = &w[i];
        l->overhead = &w[i + 1];
        l->pool_count = &w[i + 2];
        l->next = &w[i + 3];
        l->raw_start = &w[i + 4];
        l->raw_len = &w[i + 5];
        l->start = &w[i + 6];
        l->end = &w[i + 7];
        l->pool0 = heap_layout_off(h, l->next);
        /* the sentinel: TLSF's header and the granule it starts,
         * halffit's 16-byte header */
        l->needed = *l->end + (halffit ? RTM_HALFFIT_HEADER_BYTES : RTM_TLSF_GRANULE);
        l->control_bytes = control;
        l->start0 = l->end0 = NULL;
        for (size_t j = sizeof(struct rtm_heap) / sizeof(size_t); !halffit && j + 1 < i; j++)
            if (w[j] == *l->start && w[j + 1] == *l->end) {
                l->start0 = &w[j];
                l->end0 = &w[j + 1];
                break;
            }
        return !halffit == (l->start0 != NULL);
    }
    return false;
}

#endif
