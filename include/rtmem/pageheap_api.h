/*
 * rtmem: the typed API shared by the page-and-bucket kinds (heapmem, xnheap).
 * Not included directly: rtmem/heapmem.h and rtmem/xnheap.h declare their
 * functions with it. The contracts are those of rtmem/heap.h, except that
 * the heap passed to alloc, aligned_alloc, realloc and free must come from
 * the kind's create and not be destroyed: it is not checked on those paths
 * (use rtm_heap_* for checked calls). The bounds are in rtmem/heapmem.h.
 * The typed API never locks: create_ex refuses a lock (EINVAL); a locked
 * heap is made with rtm_heap_create_ex and used through rtm_heap_*
 * (rtmem/lock.h).
 */
#ifndef RTMEM_PAGEHEAP_API_H
#define RTMEM_PAGEHEAP_API_H

#include <stddef.h>

#include "rtmem/export.h"
#include "rtmem/heap.h"

#define RTM_PAGEHEAP_DECLARE(name)                                                                 \
    struct rtm_##name;                                                                             \
    RTM_API struct rtm_##name *rtm_##name##_create(void *mem, size_t size);                        \
    RTM_API struct rtm_##name *rtm_##name##_create_ex(void *mem, size_t size,                      \
                                                      const struct rtm_heap_config *cfg);          \
    RTM_API struct rtm_heap *rtm_##name##_heap(struct rtm_##name *h);                              \
    RTM_API int rtm_##name##_add_pool(struct rtm_##name *h, void *mem, size_t size);               \
    RTM_API void *rtm_##name##_alloc(struct rtm_##name *h, size_t size);                           \
    RTM_API void *rtm_##name##_aligned_alloc(struct rtm_##name *h, size_t alignment, size_t size); \
    RTM_API void *rtm_##name##_realloc(struct rtm_##name *h, void *p, size_t size);                \
    RTM_API int rtm_##name##_free(struct rtm_##name *h, void *p);                                  \
    RTM_API size_t rtm_##name##_usable_size(const struct rtm_##name *h, const void *p);            \
    RTM_API int rtm_##name##_stats(const struct rtm_##name *h, struct rtm_heap_stats *out);        \
    RTM_API int rtm_##name##_check(const struct rtm_##name *h)

/* Figures common to both kinds (see the kinds' headers). */
#define RTM_PAGEHEAP_PAGE_SIZE         ((size_t)512)
#define RTM_PAGEHEAP_MIN_BLOCK         ((size_t)16)
#define RTM_PAGEHEAP_MAX_BUCKET        ((size_t)256)
/* The page-map entry of each page: 24 bytes on 64-bit. */
#define RTM_PAGEHEAP_PAGEMAP_BYTES     (2 * sizeof(size_t) + 8)
#define RTM_PAGEHEAP_MAX_PAGES         ((size_t)0xffffffffu)
/* Upper bounds of the control structure at the start of the creating memory
 * (alignment trim and 16 unused bytes ahead of it included), and of what an
 * added pool spends besides its page map (16 unused bytes, descriptor and
 * alignment of the pages to 512). */
#define RTM_PAGEHEAP_CONTROL_BYTES     ((size_t)272)
#define RTM_PAGEHEAP_POOL_OVERHEAD_MAX ((size_t)640)

#endif /* RTMEM_PAGEHEAP_API_H */
