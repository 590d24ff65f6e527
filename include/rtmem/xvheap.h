/*
 * rtmem xvheap: TLSF inside single pages, in the manner of Linux's
 * xvmalloc. The heap grows by taking a page from its page provider when no
 * free block fits a request, and gives a page back the moment its last live
 * block is freed: the memory it holds follows the memory the program uses,
 * page by page.
 *
 * Within a page, blocks are TLSF's (rtmem/tlsf.h): the same headers, two-level
 * classes, good-fit search, immediate merging and hardening; a block never
 * spans two pages. So:
 *  - the largest request is a page's block area less a header
 *    (rtm_xvheap_max_request: 4008 bytes for 4 KiB pages on 64-bit, 4024
 *    on 32-bit); larger requests fail cleanly (NULL, failed_allocs
 *    counted);
 *  - blocks past about half a page waste the rest of their page: two of
 *    them never share one;
 *  - aligned requests need their block plus the alignment's slack inside
 *    one page.
 *
 * Pages:
 *  - rtm_xvheap_create (and rtm_heap_create("xvheap", ...)) keeps the
 *    pages in the memory it is given: the control structure, a page stack
 *    (4 bytes per page), then RTM_XVHEAP_PAGE_SIZE-byte pages aligned to
 *    their size. Pages given back go to that stack, and a region's pages
 *    given back are taken before the ones it never handed out; the
 *    regions are searched in order, the creating memory's first (add_pool
 *    adds more); rtm_xvheap_keep_empty keeps some empty pages held
 *    instead. Such a heap can be shared between processes like any
 *    other kind (rtmem/shared.h): everything in it is an offset.
 *  - rtm_xvheap_create_on takes pages from a provider of the caller's
 *    (rtmem/pages.h): a page region on an arena, or callbacks of its own.
 *  - Each page starts with a descriptor (its place in the list of pages the
 *    heap holds, and a keyed tag that says the heap holds it), and ends
 *    with a sentinel header and 16 bytes of slack, as TLSF's pools do:
 *    RTM_XVHEAP_PAGE_OVERHEAD bytes of each page are never handed out.
 *
 * Fill and waste: a fresh heap of P pages holds P * floor(S / c) blocks of a
 * request whose block is c bytes (TLSF's cost, rtm_tlsf_block_cost), S =
 * page size - its overhead (4016 bytes for 4 KiB pages on 64-bit):
 * exactly so for blocks below 1 KiB, whose classes are one size wide; at
 * least rtm_heap_fill_count's figure above, where a page's last room can
 * share its class with another page's and the good fit takes a fresh page
 * instead. A full page wastes its overhead and S mod c, of which a rest
 * below 32 bytes (a minimum block) is given to its last block.
 *
 * Statistics (rtm_heap_stats): usable_bytes counts the block area of every
 * page the heap could hold (for a provider: every page in its range), so
 * that free_bytes says what the heap could still take; used_bytes, the live
 * blocks; pool_count, the regions given (create and each add_pool; 1 for a
 * provider). What the heap holds at this moment is rtm_heap_held_bytes
 * (pages held times the page size), and rtm_xvheap_page_stats gives pages
 * held, their peak and the provider calls.
 *
 * Bounds: alloc, aligned_alloc and free O(1), plus one provider call when
 * a page is taken or given back (the page region's are O(1)), and
 * O(regions) for the walks of the heap's regions that placing a block's
 * page, each hardened link check and taking or giving back a page make
 * (one region for a heap on a provider). realloc: O(1) in place, O(1) +
 * O(size) when it moves. stats O(1); check O(blocks in held pages + pages
 * + classes); create O(classes). rtm_heap_destroy of a heap on a provider
 * gives every page it holds back, O(pages held); a heap in its own memory
 * gives nothing back (the memory is the caller's again).
 *
 * Hardening: TLSF's (rtmem/tlsf.h), with the same guarantees: an overflow
 * of 1 to 16 bytes past a block reaches the next header of its own page
 * (a page's last block reaches its sentinel and slack, never the next
 * page), and is reported before anything trusts it. A pointer into a page
 * the heap does not hold (given back, another heap's, outside the range)
 * is refused with -EINVAL, found by the page's tag (keyed apart from the
 * block tags), never by reading outside the heap's regions or the
 * provider's range. Hardened, a page stack's entry and the links of the
 * pages held are checked before anything is written through them: damage
 * is reported (corruptions), the page not taken, or kept held.
 *
 * Worst-case pool (rtm_heap_pool_bound_ex): a live block can pin a page of
 * its own, so a heap with M bytes live in blocks of at least m bytes may
 * hold up to floor((M - m) / m) pages with a block each and still need a
 * fresh page for the next request: the bound counts that many pages plus
 * one, which is large for small blocks. Requests above the largest request
 * are refused (E2BIG).
 */
#ifndef RTMEM_XVHEAP_H
#define RTMEM_XVHEAP_H

#include <stddef.h>
#include <stdint.h>

#include "rtmem/heap.h"
#include "rtmem/pages.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Pages of a heap made by rtm_xvheap_create or rtm_heap_create. */
#define RTM_XVHEAP_PAGE_SIZE     ((size_t)4096)
/* Bytes of each page never handed out: descriptor, first header's trim,
 * sentinel and slack (at most; 80 on 64-bit, 64 on 32-bit). */
#define RTM_XVHEAP_PAGE_OVERHEAD ((size_t)80)
/* Upper bound of the control structure, alignment trim of mem included. */
#define RTM_XVHEAP_CONTROL_BYTES ((size_t)8960)
/* Upper bound of what an added region spends besides its pages' overhead:
 * its descriptor, 4 bytes per page, and the alignment of its first page. */
#define RTM_XVHEAP_REGION_OVERHEAD(pages, page_size) \
    ((size_t)72 + (size_t)4 * (pages) + (page_size))

struct rtm_xvheap;
typedef struct rtm_xvheap rtm_xvheap_t;

/* The pages a heap holds and what its provider was asked. */
struct rtm_xvheap_page_stats {
    size_t page_size;
    size_t pages_held;  /* now: rtm_heap_held_bytes / page_size */
    size_t peak_held;   /* highest pages_held since create */
    size_t pages_max;   /* pages the heap could hold: its regions', or the provider's range */
    size_t gets, puts;  /* pages taken and given back; gets - puts == pages_held */
    size_t empty_held;  /* held pages with no live block (rtm_xvheap_keep_empty) */
    size_t keep_empty;  /* the most it keeps so */
    size_t max_request; /* the largest request that can succeed */
};
typedef struct rtm_xvheap_page_stats rtm_xvheap_page_stats_t;

/* Creates an xvheap in [mem, mem + size), its pages inside (see "Pages"):
 * see rtm_heap_create for the errors (ENOMEM when not one page fits after
 * the control structure). O(classes). */
RTM_API struct rtm_xvheap *rtm_xvheap_create(void *mem, size_t size);
/* The same with options (rtm_heap_create_ex); cfg NULL means defaults. A
 * lock is refused (EINVAL): the typed API never locks. */
RTM_API struct rtm_xvheap *rtm_xvheap_create_ex(void *mem, size_t size,
                                                const struct rtm_heap_config *cfg);
/*
 * Creates an xvheap whose control structure lies in [mem, mem + size) (at
 * least RTM_XVHEAP_CONTROL_BYTES) and whose pages come from pages (copied;
 * its callbacks and ctx must outlive the heap). NULL with errno EINVAL for
 * NULL arguments, a provider without both callbacks, a page size out of
 * [RTM_PAGES_MIN_SIZE, RTM_PAGES_MAX_SIZE] or not a power of two, or a
 * range that wraps or holds no whole page; ENOMEM for too small a control
 * memory; EINVAL for a lock in cfg. Such a heap takes no add_pool
 * (-ENOTSUP) and is not for sharing between processes. O(classes).
 */
RTM_API struct rtm_xvheap *rtm_xvheap_create_on(void *mem, size_t size,
                                                const struct rtm_heap_config *cfg,
                                                const struct rtm_page_provider *pages);
/* The same heap seen through the generic interface (NULL for NULL). O(1). */
RTM_API struct rtm_heap *rtm_xvheap_heap(struct rtm_xvheap *h);

/* Typed entry points: the contracts of rtm_heap_* in rtmem/heap.h, without
 * the dispatch. h must come from an rtm_xvheap_create* call. */

/* Adds [mem, mem + size) as one more region of pages: 0, -EINVAL (NULL,
 * wrap-around, overlap with a region of h), -ENOMEM (not one page fits),
 * -E2BIG (2^32 pages or more), -ENOTSUP (a heap on a provider).
 * O(regions). */
RTM_API int rtm_xvheap_add_pool(struct rtm_xvheap *h, void *mem, size_t size);
/* A block of at least size bytes, 16-aligned; NULL above the largest
 * request, when no free block fits and no page is left, or (hardened) when
 * the block it would take is damaged. O(1) + a provider call. */
RTM_API void *rtm_xvheap_alloc(struct rtm_xvheap *h, size_t size);
/* The same aligned to alignment (a power of two); the block and the
 * alignment's slack must fit one page. O(1) + a provider call. */
RTM_API void *rtm_xvheap_aligned_alloc(struct rtm_xvheap *h, size_t alignment, size_t size);
/* rtm_heap_realloc: in place when the block shrinks or its free successor
 * in the page holds the growth, else it moves. */
RTM_API void *rtm_xvheap_realloc(struct rtm_xvheap *h, void *p, size_t size);
/* Frees p, and gives its page back when no live block is left in it: 0,
 * -EINVAL (no live block of h), -EFAULT (a hardening check failed: nothing
 * written). free(NULL) is 0. O(1) + a provider call. */
RTM_API int rtm_xvheap_free(struct rtm_xvheap *h, void *p);
/* The usable size of a live block; 0 for NULL or anything else. O(1). */
RTM_API size_t rtm_xvheap_usable_size(const struct rtm_xvheap *h, const void *p);
/* rtm_heap_stats (see "Statistics" above): 0, or -EINVAL. O(1). */
RTM_API int rtm_xvheap_stats(const struct rtm_xvheap *h, struct rtm_heap_stats *out);
/* Fills *out: 0, or -EINVAL for NULL or no xvheap. O(1). */
RTM_API int rtm_xvheap_page_stats(const struct rtm_xvheap *h, struct rtm_xvheap_page_stats *out);
/* How many empty pages h keeps held instead of giving them back: 0, the
 * default, gives each back at once (as xvmalloc). A program that allocates
 * and frees in turn across a page boundary otherwise takes and gives back
 * a page on every pair; with one page kept it takes none. Empty pages
 * above a lower new limit stay held until used again. 0, or -EINVAL for
 * NULL or no xvheap. O(1); not for a heap other threads or processes are
 * using at that moment (set it after create). */
RTM_API int rtm_xvheap_keep_empty(struct rtm_xvheap *h, size_t pages);
/* Walks every held page, every list and the page stacks: 0, -EINVAL (no
 * xvheap), or -EFAULT at the first thing that does not hold. O(blocks in
 * held pages + pages + classes). */
RTM_API int rtm_xvheap_check(const struct rtm_xvheap *h);
/* The largest request a heap with pages of page_size bytes can serve
 * (0 for a page size out of range). O(1). */
RTM_API size_t rtm_xvheap_max_request(size_t page_size);

#ifdef __cplusplus
}
#endif

#endif /* RTMEM_XVHEAP_H */
