/*
 * rtmem heapmem: the McKusick-Karels allocator of Xenomai's user-space heap
 * (4.3BSD kernel malloc, USENIX 1988), with free page runs in AVL trees.
 *
 * Memory is cut into pages of RTM_PAGEHEAP_PAGE_SIZE (512) bytes, aligned to
 * 512 in the address space. A request of n bytes takes:
 *  - n <= 256: a slot of the power-of-two class 16, 32, 64, 128 or 256 bytes
 *    (at least n, and at least 16) in a bucket page of that class. The slot
 *    is the block's usable size: up to 2x the request (16 for 0..16 bytes).
 *    No per-block header: a page's slots are tracked by a 32-bit bitmap in its
 *    page-map entry.
 *  - n > 256: a run of ceil(n / 512) whole pages (usable size: the run).
 * Blocks are aligned to min(their class, 512) bytes, so to at least 16.
 *
 * Page map: one RTM_PAGEHEAP_PAGEMAP_BYTES (24-byte) entry per page at the
 * start of each pool, ahead of the pages (4.7% of the page memory). Pages
 * themselves carry no metadata while used; a free run keeps its range
 * descriptor (links in the two trees) in its first page.
 *
 * Bounds (r = number of free page runs: at most about half the pages, one
 * more per pool; k = number of pools):
 *  - alloc of up to 256 bytes: O(1) when its class has a page with a free
 *    slot, else O(log r) to take a new page. Larger: O(log r) (best fit).
 *  - First use: the page map is initialised lazily, so the first time pages
 *    are handed out their entries are written, O(n) for a run of n pages
 *    (each entry once in the heap's life). A real-time user who wants the
 *    bound without it can allocate and free the whole pool once at start-up.
 *    aligned_alloc with a huge alignment writes the entries of the pages it
 *    slides over too.
 *  - free of a bucket slot: O(1), O(log r) when its page empties and returns
 *    to the free runs. Free of a run: O(log r) (merges with both neighbours).
 *  - A page outside the first pool costs O(k) more to find its pool: on free,
 *    usable_size and realloc, and on alloc of a slot from such a page.
 *  - aligned_alloc: as alloc; alignment above 512: one run of size +
 *    alignment - 512 bytes, whose unused pages return to the free runs.
 *  - realloc: in place within a class, or for a run that shrinks or whose
 *    next run is free; else alloc + copy + free. Going smaller never fails:
 *    without room for the smaller block, the block stays where it is.
 *  - stats O(1); check O(pages used so far * k + r log r); create and add_pool
 *    O(1) (nothing is written to the page map until pages are used).
 *  - Largest block and pool: 2^32 - 1 pages (2 TiB); a larger pool is
 *    refused with E2BIG.
 *  - Fill guarantee: a fresh heap of P pages holds P * (512 / class) blocks
 *    of up to 256 bytes, and sum over pools of floor(P_i / ceil(n / 512))
 *    larger blocks.
 *  - usable_bytes counts page memory only; the control structure (at most
 *    RTM_PAGEHEAP_CONTROL_BYTES), page maps and alignment pad are
 *    overhead_bytes.
 *  - largest_free_bytes: every request up to it succeeds now; with a free
 *    page it is the largest free run. It is 0 when alloc(0) would fail; a
 *    request of a larger class may still find a slot then.
 *
 * A heap image moved in memory stays valid when moved by a multiple of 512.
 */
#ifndef RTMEM_HEAPMEM_H
#define RTMEM_HEAPMEM_H

#include "rtmem/pageheap_api.h"

#ifdef __cplusplus
extern "C" {
#endif

RTM_PAGEHEAP_DECLARE(heapmem);

#ifdef __cplusplus
}
#endif

#endif /* RTMEM_HEAPMEM_H */
