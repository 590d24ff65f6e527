/*
 * Internal: where an xvheap keeps its layout, for the tests that damage it
 * on purpose (validate_test, shared_test's crafted segments). Not installed.
 */
#ifndef RTMEM_SRC_HEAP_XVHEAP_LAYOUT_H
#define RTMEM_SRC_HEAP_XVHEAP_LAYOUT_H

#include <stddef.h>

#include "rtmem/heap.h"

struct xv_layout {
    size_t *usable, *overhead, *pool_count; /* as the statistics give them */
    size_t *next, *raw_start, *raw_len;     /* the first region's link */
    size_t *first, *stack;                  /* its first page and page stack (offsets) */
    size_t *pages, *bump, *top;             /* its page stack's counts */
    size_t *used, *live;                    /* counts rtm_heap_check recounts */
    size_t region0;                         /* offset of the first region's link */
    size_t needed;                          /* bytes from the heap to its last page's end */
    size_t control_bytes;                   /* the control structure */
};

/* Fills *l for h, an xvheap (rtm_heap_kind "xvheap"). */
void rtm__xvheap_layout(struct rtm_heap *h, struct xv_layout *l);

#endif
