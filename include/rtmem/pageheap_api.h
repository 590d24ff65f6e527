/*
 * rtmem: the figures shared by the page-and-bucket kinds (heapmem, xnheap).
 * Not included directly: rtmem/heapmem.h and rtmem/xnheap.h include it, and
 * declare their functions there. What each figure means is in
 * rtmem/heapmem.h.
 */
#ifndef RTMEM_PAGEHEAP_API_H
#define RTMEM_PAGEHEAP_API_H

#include <stddef.h>

/* Figures common to both kinds (see the kinds' headers). */
#define RTM_PAGEHEAP_PAGE_SIZE         ((size_t)512)
#define RTM_PAGEHEAP_MIN_BLOCK         ((size_t)16)
#define RTM_PAGEHEAP_MAX_BUCKET        ((size_t)256)
/* The page-map entry of each page: 12 bytes on every target (2.3% of a
 * 512-byte page, as in Xenomai). */
#define RTM_PAGEHEAP_PAGEMAP_BYTES     ((size_t)12)
/* Pages of a pool, and of a run (512 GiB less two pages). */
#define RTM_PAGEHEAP_MAX_PAGES         ((size_t)0x3ffffffeu)
/* Upper bounds of the control structure at the start of the creating memory
 * (alignment trim and 16 unused bytes ahead of it included), and of what an
 * added pool spends besides its page map (16 unused bytes, descriptor and
 * alignment of the pages to 512). */
#define RTM_PAGEHEAP_CONTROL_BYTES     ((size_t)368)
#define RTM_PAGEHEAP_POOL_OVERHEAD_MAX ((size_t)704)

#endif /* RTMEM_PAGEHEAP_API_H */
