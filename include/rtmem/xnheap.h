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

#include <stddef.h>

#include "rtmem/export.h"
#include "rtmem/heap.h"
#include "rtmem/pageheap_api.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rtm_xnheap;
typedef struct rtm_xnheap rtm_xnheap_t;

/* Creates a heap in [mem, mem + size); see rtm_heap_create for errors. The
 * result is also a struct rtm_heap (rtm_xnheap_heap). O(1). */
RTM_API struct rtm_xnheap *rtm_xnheap_create(void *mem, size_t size);
/* The same with options (rtm_heap_create_ex); cfg NULL means defaults. A
 * lock is refused (EINVAL): the typed API never locks (rtmem/lock.h); a
 * locked xnheap heap is made with rtm_heap_create_ex and used through
 * rtm_heap_*. O(1). */
RTM_API struct rtm_xnheap *rtm_xnheap_create_ex(void *mem, size_t size,
                                                const struct rtm_heap_config *cfg);
/* The same heap seen through the generic interface. O(1). */
RTM_API struct rtm_heap *rtm_xnheap_heap(struct rtm_xnheap *h);

/* Typed entry points: the contracts of rtm_heap_* in rtmem/heap.h, without
 * the dispatch, at the bounds of rtmem/heapmem.h. h must come from
 * rtm_xnheap_create and not be destroyed (not checked on the hot paths). */
RTM_API int rtm_xnheap_add_pool(struct rtm_xnheap *h, void *mem, size_t size);
RTM_API void *rtm_xnheap_alloc(struct rtm_xnheap *h, size_t size);
RTM_API void *rtm_xnheap_aligned_alloc(struct rtm_xnheap *h, size_t alignment, size_t size);
RTM_API void *rtm_xnheap_realloc(struct rtm_xnheap *h, void *p, size_t size);
RTM_API int rtm_xnheap_free(struct rtm_xnheap *h, void *p);
RTM_API size_t rtm_xnheap_usable_size(const struct rtm_xnheap *h, const void *p);
RTM_API int rtm_xnheap_stats(const struct rtm_xnheap *h, struct rtm_heap_stats *out);
RTM_API int rtm_xnheap_check(const struct rtm_xnheap *h);

#ifdef __cplusplus
}
#endif

#endif /* RTMEM_XNHEAP_H */
