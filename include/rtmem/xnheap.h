/*
 * rtmem xnheap: the algorithm of Xenomai's Cobalt kernel heap (xnheap, 3.1
 * and later): the same page and bucket scheme as heapmem (rtmem/heapmem.h),
 * with free page runs in red-black trees instead of AVL trees.
 *
 * Page map: as in Xenomai, the heap's pages carry no metadata; in rtmem the
 * page map sits at the start of each pool, ahead of the pages (not in a
 * separate allocation), and usable_bytes counts the pages only. Every figure
 * and bound of rtmem/heapmem.h, and what its hardening detects and what not,
 * holds as written there, red-black trees replacing AVL trees (both
 * O(log r); red-black trees rotate less on update, AVL trees are shallower
 * to search).
 */
#ifndef RTMEM_XNHEAP_H
#define RTMEM_XNHEAP_H

#include "rtmem/pageheap_api.h"

#ifdef __cplusplus
extern "C" {
#endif

RTM_PAGEHEAP_DECLARE(xnheap);

#ifdef __cplusplus
}
#endif

#endif /* RTMEM_XNHEAP_H */
