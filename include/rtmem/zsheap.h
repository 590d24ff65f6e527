/*
 * rtmem zsheap: size classes packed into "zspages" of one to four
 * contiguous pages, in the manner of Linux's zsmalloc. Each class packs its
 * objects into zspages of as many pages as waste the least share of the
 * zspage (a 3-page zspage of 96-byte objects wastes nothing where one page
 * wastes 64 bytes), so that objects near a page's size waste little, unlike
 * xvheap's. A zspage whose
 * last object is freed goes back at once: the memory the heap holds
 * follows the memory the program uses, zspage by zspage.
 *
 * How it differs from zsmalloc: zsmalloc hands out handles, not pointers,
 * because the kernel maps a zspage's pages (which need not be contiguous)
 * only while an object is in use, and an object may straddle two of them.
 * Here a zspage's pages are contiguous in memory the program has mapped,
 * so an object is addressed by its pointer, through rtmem's heap interface
 * like every kind, and an object may straddle a page boundary inside its
 * zspage. zsmalloc also moves objects to compact zspages; zsheap never
 * moves a live object (a pointer must stay valid).
 *
 * Classes: requests of 0 to 4096 bytes (RTM_ZSHEAP_MAX_REQUEST, a page,
 * on 32- and 64-bit alike) round up to a class, 32 bytes and then every 16
 * bytes (255 classes: rtm_zsheap_class_of gives a request's class, its
 * zspage's pages, objects and waste). An object is its class's size and
 * lies at a multiple of it from its zspage's start: 16-aligned. Larger
 * requests fail cleanly (NULL, failed_allocs counted). A zspage holds at
 * most 128 objects: the pages per zspage are the 1 to 4 that waste least
 * with that many at most, the fewest on a tie.
 *
 * Metadata: none inside the pages. Each page has a 64-byte descriptor in
 * the heap's bookkeeping, before its pages: a zspage's first page's says
 * which of its objects are free (a bitmap), its class and its place in its
 * class's list of zspages with a free object; the others say how far their
 * zspage's first page lies. So an overflow past an object reaches only the
 * next object's bytes (or the next page's): never the heap's metadata. A
 * region keeps 16 bytes after its last page, so that an overflow of up to
 * 16 bytes past the last object stays in its memory (another region's
 * descriptor may follow it).
 *
 * Pages: rtm_zsheap_create (and rtm_heap_create("zsheap", ...)) lays out
 * [control structure][descriptors: 64 bytes per page][pages, aligned to
 * 4096] in the memory it is given; add_pool adds another such region. A
 * zspage of k pages is a run of k contiguous free pages of one region: a
 * run of exactly k, a longer run cut (its rest kept as a run), or the
 * region's pages never handed out yet. A zspage given back joins the free
 * runs before and after it, and a run that reaches the pages never handed
 * out lowers that mark: a heap whose objects were all freed is as good as
 * fresh. When no region has a run of k pages, the class's zspage takes
 * the longest run there is (every object fits one page), holding fewer
 * objects. A heap in its own memory can be shared between processes like
 * any other kind (rtmem/shared.h): everything in it is an offset.
 * rtm_zsheap_create_on takes pages from a provider instead (rtmem/pages.h):
 * one at a time, so every zspage is one page there; such a heap lives in
 * one process.
 *
 * Fill and waste: a fresh region of P pages holds, for a class of size s
 * whose zspage is k pages of n objects, floor(P / k) * n objects plus
 * floor((P mod k) * 4096 / s) in a last, shorter zspage
 * (rtm_heap_fill_count says the same). A full zspage wastes
 * k * 4096 - n * s bytes (rtm_zsheap_class_of's waste); a request wastes its
 * class's size less itself.
 *
 * Statistics (rtm_heap_stats): usable_bytes counts every page of the heap's
 * regions (on a provider: every page of its range, which other users of
 * the provider may hold); used_bytes, the live objects at their classes' sizes;
 * overhead_bytes, the control structure and descriptors; pool_count, the
 * regions. What the heap holds at this moment is rtm_heap_held_bytes (pages
 * of its zspages times 4096); rtm_zsheap_page_stats gives pages held, their
 * peak and the zspages made and given back.
 *
 * Bounds: alloc, aligned_alloc and free O(regions): O(1) work, plus, for
 * free, the walk of the regions that places its pointer, and for a zspage
 * made, the regions searched for a run (at most 4 times). A heap of one
 * region (rtm_heap_create without add_pool) is O(1). realloc: O(1) in
 * place (the same class), else an alloc, an O(size) copy and a free. stats
 * O(1); check O(pages + classes), plus O(regions) for each zspage with a
 * free object (placing its descriptor); create O(classes).
 *
 * Hardening: with no metadata in the pages, an overflow of any length
 * inside the heap's pages changes only objects' bytes: it never crashes the
 * heap, never makes it hand out an overlapping or foreign block, never
 * makes it write where the overflow planted. A pointer that is not a live
 * object (not at an object's start, an object already free, a page not in
 * a zspage, another heap's, outside the regions) is refused with -EINVAL,
 * found by the descriptors, never by reading outside the heap's
 * bookkeeping; a double free is so refused. At the default level, each
 * zspage's and free run's descriptor carries a keyed tag over what is fixed
 * in it (offset, class, length, capacity, first page), its bitmap must
 * agree with its count, and list links and runs are checked before they
 * are written through: damage to the bookkeeping (a wild write, not an
 * overflow) is reported (corruptions) and the operation refused, nothing
 * written. Damage to a page's state alone makes its objects no objects
 * (-EINVAL, not reported).
 *
 * Worst-case pool (rtm_heap_pool_bound_ex): a live object can pin a zspage
 * of up to 4 pages of its own, so a heap with M bytes live in blocks of at
 * least m bytes may hold floor((M - m) / m) zspages with an object each and
 * still need a page for the next request: the bound counts k pages for each
 * (k the largest zspage of the classes from m's to the largest block's)
 * plus one. Requests above RTM_ZSHEAP_MAX_REQUEST, or aligned above a
 * page, are refused (E2BIG).
 */
#ifndef RTMEM_ZSHEAP_H
#define RTMEM_ZSHEAP_H

#include <stddef.h>
#include <stdint.h>

#include "rtmem/heap.h"
#include "rtmem/pages.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RTM_ZSHEAP_PAGE_SIZE     ((size_t)4096)
/* The largest request (a page), and the most pages in one zspage. */
#define RTM_ZSHEAP_MAX_REQUEST   ((size_t)4096)
#define RTM_ZSHEAP_MAX_ZSPAGE    4
/* The smallest class, and the step between classes. */
#define RTM_ZSHEAP_MIN_CLASS     ((size_t)32)
#define RTM_ZSHEAP_CLASS_STEP    ((size_t)16)
/* Bookkeeping per page: its descriptor. */
#define RTM_ZSHEAP_PAGE_DESC     ((size_t)64)
/* Upper bound of the control structure, alignment trim of mem included. */
#define RTM_ZSHEAP_CONTROL_BYTES ((size_t)6144)
/* Upper bound of what an added region spends besides its pages: its
 * descriptor, a descriptor per page, the alignment of its first page. */
#define RTM_ZSHEAP_REGION_OVERHEAD(pages) \
    ((size_t)192 + RTM_ZSHEAP_PAGE_DESC * (pages) + RTM_ZSHEAP_PAGE_SIZE)

struct rtm_zsheap;
typedef struct rtm_zsheap rtm_zsheap_t;

/* A request's class. */
struct rtm_zsheap_class {
    size_t size;    /* the class's object size: what a request of it uses */
    size_t pages;   /* pages in one of its zspages */
    size_t objects; /* objects in one zspage */
    size_t waste;   /* bytes of a full zspage no object uses: pages * 4096 - objects * size */
};
typedef struct rtm_zsheap_class rtm_zsheap_class_t;

/* The pages a heap holds. */
struct rtm_zsheap_page_stats {
    size_t page_size;
    size_t pages_held;  /* pages of its zspages now: rtm_heap_held_bytes / page_size */
    size_t peak_held;   /* highest pages_held since create */
    size_t pages_max;   /* pages in the heap's regions */
    size_t zspages;     /* zspages held now */
    size_t made, freed; /* zspages made and given back; made - freed == zspages */
    size_t max_request; /* the largest request that can succeed */
};
typedef struct rtm_zsheap_page_stats rtm_zsheap_page_stats_t;

/* Creates a zsheap in [mem, mem + size), its pages inside (see "Pages"):
 * see rtm_heap_create for the errors (ENOMEM when not one page fits after
 * the control structure and its descriptor; E2BIG at 2^32 pages or more).
 * O(classes). */
RTM_API struct rtm_zsheap *rtm_zsheap_create(void *mem, size_t size);
/* The same with options (rtm_heap_create_ex); cfg NULL means defaults. A
 * lock is refused (EINVAL): the typed API never locks. */
RTM_API struct rtm_zsheap *rtm_zsheap_create_ex(void *mem, size_t size,
                                                const struct rtm_heap_config *cfg);
/* The control memory rtm_zsheap_create_on needs for a provider's range of
 * that many 4 KiB pages: the control structure, a descriptor per page. */
#define RTM_ZSHEAP_CONTROL_ON(pages) \
    (RTM_ZSHEAP_CONTROL_BYTES + 64 + RTM_ZSHEAP_PAGE_DESC * (size_t)(pages))
/*
 * Creates a zsheap whose pages come from a provider (rtmem/pages.h) of
 * 4096-byte pages, its control structure and a descriptor for every page
 * of the provider's range in [mem, mem + size) (RTM_ZSHEAP_CONTROL_ON).
 * A provider hands out pages one at a time, with no promise that two are
 * contiguous: on a provider, every class's zspage is one page (holding
 * floor(4096 / size) objects, 128 at most), taken when the class has no
 * free object and given back when its last object is freed. NULL with
 * errno EINVAL for NULL arguments, a provider without both callbacks, a
 * page size other than 4096, a range that wraps, holds no whole page or
 * overlaps [mem, mem + size), or a lock in cfg; ENOMEM for too small a
 * control memory; E2BIG for 2^32 pages or more. Such a heap takes no
 * add_pool (-ENOTSUP), is not for sharing between processes, and gives
 * its pages back at rtm_heap_destroy. O(pages) (its descriptors cleared).
 */
RTM_API struct rtm_zsheap *rtm_zsheap_create_on(void *mem, size_t size,
                                                const struct rtm_heap_config *cfg,
                                                const struct rtm_page_provider *pages);
/* The same heap seen through the generic interface (NULL for NULL). O(1). */
RTM_API struct rtm_heap *rtm_zsheap_heap(struct rtm_zsheap *h);

/* Typed entry points: the contracts of rtm_heap_* in rtmem/heap.h, without
 * the dispatch. h must come from an rtm_zsheap_create* call. */

/* Adds [mem, mem + size) as one more region of pages: 0, -EINVAL (NULL,
 * wrap-around, overlap with a region of h), -ENOMEM (not one page fits),
 * -E2BIG (2^32 pages or more), -ENOTSUP (a heap on a provider).
 * O(regions). */
RTM_API int rtm_zsheap_add_pool(struct rtm_zsheap *h, void *mem, size_t size);
/* An object of size's class, 16-aligned; NULL above
 * RTM_ZSHEAP_MAX_REQUEST, when no zspage of the class has a free object and
 * no page is left, or (hardened) when the bookkeeping it would trust is
 * damaged. O(regions), O(1) with one region. */
RTM_API void *rtm_zsheap_alloc(struct rtm_zsheap *h, size_t size);
/* The same aligned to alignment (a power of two up to a page): an object
 * of the class of size rounded up to alignment, whose objects all lie at
 * multiples of it. O(regions). */
RTM_API void *rtm_zsheap_aligned_alloc(struct rtm_zsheap *h, size_t alignment, size_t size);
/* rtm_heap_realloc: in place when size's class is p's (or, shrinking,
 * when no object of the smaller class is to be had), else it moves. */
RTM_API void *rtm_zsheap_realloc(struct rtm_zsheap *h, void *p, size_t size);
/* Frees p, and gives its zspage back when no live object is left in it:
 * 0, -EINVAL (no live object of h), -EFAULT (a hardening check failed:
 * nothing written). free(NULL) is 0. O(regions). */
RTM_API int rtm_zsheap_free(struct rtm_zsheap *h, void *p);
/* The usable size of a live object (its class's size); 0 for NULL or
 * anything else. O(regions). */
RTM_API size_t rtm_zsheap_usable_size(const struct rtm_zsheap *h, const void *p);
/* rtm_heap_stats (see "Statistics" above): 0, or -EINVAL. O(1). */
RTM_API int rtm_zsheap_stats(const struct rtm_zsheap *h, struct rtm_heap_stats *out);
/* Fills *out: 0, or -EINVAL for NULL or no zsheap. O(1). */
RTM_API int rtm_zsheap_page_stats(const struct rtm_zsheap *h, struct rtm_zsheap_page_stats *out);
/* Walks every descriptor, every class's list and the runs given back: 0,
 * -EINVAL (no zsheap), or -EFAULT at the first thing that does not hold.
 * O(pages + classes). */
RTM_API int rtm_zsheap_check(const struct rtm_zsheap *h);
/* The class of a request of size bytes: 0, or -E2BIG above
 * RTM_ZSHEAP_MAX_REQUEST, -EINVAL for NULL. O(1) (the table is fixed). */
RTM_API int rtm_zsheap_class_of(size_t size, struct rtm_zsheap_class *out);

#ifdef __cplusplus
}
#endif

#endif /* RTMEM_ZSHEAP_H */
