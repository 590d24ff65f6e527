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
 * Page map: one RTM_PAGEHEAP_PAGEMAP_BYTES (12-byte) entry per page at the
 * start of each pool, ahead of the pages (2.3% of the page memory, as in
 * Xenomai; bucket lists are kept per pool, linked by page index). Pages
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
 *  - Largest block and pool: RTM_PAGEHEAP_MAX_PAGES, 2^30 - 2 pages (512 GiB
 *    less two pages); a larger pool is refused with E2BIG.
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
 *
 * Hardening (rtmem/heap.h, "Hardening"). Where an overflow lands: a block
 * ends on a page boundary or inside its bucket page; pages carry no metadata
 * but a free run's descriptor, in the run's first page; page maps lie ahead
 * of their pool's pages, and each pool's memory opens with 16 bytes the heap
 * never uses. A free run's descriptor opens with a guard word, keyed by a
 * secret of the heap, the run's offset and its page count; its page count
 * and tree links lie beyond its first 16 bytes, and its address-tree node,
 * in the page's second 64 bytes, has a keyed guard of its own ahead of its
 * links (an overflow reaches no link without changing a guard first).
 *  - At every level, an overflow of up to 16 bytes past any block, of any
 *    bytes, reaches only another slot of its page, the first 16 bytes of the
 *    next page (user data, or a free run's guard and an unused word), the
 *    unused bytes that open a pool placed right after, or, past the last
 *    page of a pool, the rest of the memory given for it or whatever the
 *    caller placed after it: never a page count, tree link, page-map entry
 *    or pool descriptor of this heap. It cannot make an operation crash, write
 *    outside the heap or hand out memory outside a pool or over a live block.
 *  - RTM_HEAP_HARDEN_O1 (the default) checks a free run before it reads its
 *    page count or links: every run a search steps on (best fit: the first
 *    guard and the page count; the address search that finds a freed
 *    block's neighbours: the address node's guard), and both guards of every
 *    run an operation merges with, grows into or takes whole (and, before a
 *    realloc moves a block, the free run two below it, which the move may
 *    make its neighbour); always its offset on a page
 *    of a pool first, and its page count within that pool. All checks come
 *    before the operation's first write; a failed one refuses it (free: -EFAULT;
 *    alloc, aligned_alloc, realloc: NULL), counts it in `corruptions` and
 *    calls the handler with the block given (NULL for an allocation), the
 *    damaged run's address as `where`, and what failed. The damaged run stays:
 *    every later operation that needs it is refused too, and rtm_heap_check
 *    names the heap corrupt.
 *  - Detected: any change to a free run's guards, so every overflow past the
 *    block before a free run that changes its first guard (a store to bytes
 *    8 to 15 past the block changes only an unused word: harmless, and not
 *    reported),
 *    and a use after free that writes the first 8 bytes of a page that now
 *    opens a free run; when the run is next stepped on or used, at the
 *    latest when an allocation needs it or a neighbour of it is freed.
 *  - Not detected: an overflow into another slot of a bucket page or into a
 *    live block (user data: no metadata lies there); a write into a free run
 *    that leaves both guards intact (a stray pointer, a use after free deeper
 *    in the run); a guard rewritten with its exact value. An overflow
 *    of more than 16 bytes into a free run also changes its guard and is
 *    detected the same way, but a tree update that rebalances through that
 *    run before it is checked may follow its damaged links: the guarantee
 *    above is for 16 bytes.
 *  - Bounds at O1: each check is O(1) (a guard load, in a cache line the
 *    operation reads anyway, and one multiplication), plus O(k) to find the
 *    pool of a run outside the first pool. Searches check each of the
 *    O(log r) runs they step on, so every bound above holds as stated (a
 *    search among runs outside the first pool: O(k log r)).
 *  - RTM_HEAP_HARDEN_NONE writes and checks no guard: the paths of the
 *    unhardened heap, the same blocks as at O1. A 16-byte overflow still
 *    reaches no metadata; nothing is detected.
 *  - RTM_HEAP_HARDEN_FULL: O1, and rtm_heap_check (which verifies every guard
 *    too) every check_interval operations, at the check's bound.
 */
#ifndef RTMEM_HEAPMEM_H
#define RTMEM_HEAPMEM_H

#include <stddef.h>

#include "rtmem/export.h"
#include "rtmem/heap.h"
#include "rtmem/pageheap_api.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rtm_heapmem;
typedef struct rtm_heapmem rtm_heapmem_t;

/* Creates a heap in [mem, mem + size); see rtm_heap_create for errors. The
 * result is also a struct rtm_heap (rtm_heapmem_heap). O(1). */
RTM_API struct rtm_heapmem *rtm_heapmem_create(void *mem, size_t size);
/* The same with options (rtm_heap_create_ex); cfg NULL means defaults. A
 * lock is refused (EINVAL): the typed API never locks (rtmem/lock.h); a
 * locked heapmem heap is made with rtm_heap_create_ex and used through
 * rtm_heap_*. O(1). */
RTM_API struct rtm_heapmem *rtm_heapmem_create_ex(void *mem, size_t size,
                                                  const struct rtm_heap_config *cfg);
/* The same heap seen through the generic interface. O(1). */
RTM_API struct rtm_heap *rtm_heapmem_heap(struct rtm_heapmem *h);

/* Typed entry points: the contracts of rtm_heap_* in rtmem/heap.h, without
 * the dispatch, at the bounds listed above. h must come from
 * rtm_heapmem_create and not be destroyed (not checked on the hot paths). */
RTM_API int rtm_heapmem_add_pool(struct rtm_heapmem *h, void *mem, size_t size);
RTM_API void *rtm_heapmem_alloc(struct rtm_heapmem *h, size_t size);
RTM_API void *rtm_heapmem_aligned_alloc(struct rtm_heapmem *h, size_t alignment, size_t size);
RTM_API void *rtm_heapmem_realloc(struct rtm_heapmem *h, void *p, size_t size);
RTM_API int rtm_heapmem_free(struct rtm_heapmem *h, void *p);
RTM_API size_t rtm_heapmem_usable_size(const struct rtm_heapmem *h, const void *p);
RTM_API int rtm_heapmem_stats(const struct rtm_heapmem *h, struct rtm_heap_stats *out);
RTM_API int rtm_heapmem_check(const struct rtm_heapmem *h);

#ifdef __cplusplus
}
#endif

#endif /* RTMEM_HEAPMEM_H */
