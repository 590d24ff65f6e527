/*
 * Internal: where a heap of pages (xvheap, zsheap) keeps its layout, for
 * the tests that damage it on purpose (validate_test, shared_test's crafted
 * segments, lock_test). Not installed.
 */
#ifndef RTMEM_SRC_HEAP_XVHEAP_LAYOUT_H
#define RTMEM_SRC_HEAP_XVHEAP_LAYOUT_H

#include <stddef.h>

#include "rtmem/heap.h"

struct xv_layout {
    size_t *usable, *overhead, *pool_count; /* as the statistics give them */
    size_t *next, *raw_start, *raw_len;     /* the first region's link */
    size_t *first, *stack;                  /* its first page and bookkeeping (offsets):
                                               xvheap's page stack, zsheap's descriptors */
    size_t *pages, *bump, *top;             /* its counts (top: xvheap's only, else NULL) */
    size_t *used, *live;                    /* counts rtm_heap_check recounts */
    size_t region0;                         /* offset of the first region's link */
    size_t needed;                          /* bytes from the heap to its last page's end */
    size_t control_bytes;                   /* the control structure */
    size_t page_size, span;                 /* its pages, and the usable bytes of each */
};

/* Fills *l for h, an xvheap (rtm_heap_kind "xvheap"). */
void rtm__xvheap_layout(struct rtm_heap *h, struct xv_layout *l);
/* The same for h, a zsheap (rtm_heap_kind "zsheap"). */
void rtm__zsheap_layout(struct rtm_heap *h, struct xv_layout *l);

#endif
