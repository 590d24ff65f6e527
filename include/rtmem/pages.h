/*
 * rtmem pages: where the page heaps (xvheap) take their pages from, and
 * where they give them back.
 *
 * A page heap grows by taking one page from its provider when no free
 * block fits a request, and gives a page back as soon as no live block is
 * left in it. The provider is a pair of callbacks over a range of memory
 * the caller reserved up front (an arena, a static array, a region carved
 * from shared memory), so the memory a heap gives back can serve another
 * heap or another use of the same provider.
 *
 * rtmem ships one provider, the page region below: a fixed range cut into
 * pages, O(1) get and put, its bookkeeping outside the pages. Put it on an
 * arena (rtm_page_region_on_arena: rtm_arena_open's mapping, prefaulted
 * and locked) to have pages that stay resident when a heap gives them
 * back. docs/pages.md shows both. A heap made by
 * rtm_heap_create("xvheap", mem, size) keeps a region of its own inside
 * mem and needs none of this.
 */
#ifndef RTMEM_PAGES_H
#define RTMEM_PAGES_H

#include <stddef.h>

#include "rtmem/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Page sizes a provider may use: powers of two in this range. */
#define RTM_PAGES_MIN_SIZE ((size_t)1024)
#define RTM_PAGES_MAX_SIZE ((size_t)1 << 20)

/*
 * A source of pages. The heap copies the struct at create; the callbacks
 * and ctx must stay valid for the heap's life. A heap with a provider of
 * its own lives in one process: its callbacks are addresses of this
 * process (a heap shared between processes keeps its region inside the
 * shared memory instead: rtm_heap_create).
 */
struct rtm_page_provider {
    /* One page of page_size bytes, aligned to page_size and inside
     * [base, base + span), which the caller may write; NULL when none is
     * left (the allocation that asked then fails cleanly). Called inside
     * an allocation: it must be bounded. A page that breaks this contract
     * is not used, nor given back. */
    void *(*get)(void *ctx);
    /* Takes back a page get gave and nobody uses any more. */
    void (*put)(void *ctx, void *page);
    void *ctx;
    /* A power of two between RTM_PAGES_MIN_SIZE and RTM_PAGES_MAX_SIZE. */
    size_t page_size;
    /* Every page get gives lies in [base, base + span): a heap tells its
     * own pages from foreign addresses with one compare and one read of
     * the page's first bytes, and never reads outside this range. */
    void *base;
    size_t span;
};
typedef struct rtm_page_provider rtm_page_provider_t;

/* ---- the page region: a ready provider over a fixed range ----------------- */

struct rtm_page_region;
typedef struct rtm_page_region rtm_page_region_t;

/* What a region holds. */
struct rtm_page_region_stats {
    size_t page_size;
    size_t pages;      /* pages in the region */
    size_t pages_out;  /* given by get and not yet put back */
    size_t peak_out;   /* highest pages_out since create */
    size_t gets, puts; /* successful calls; gets - puts == pages_out */
};
typedef struct rtm_page_region_stats rtm_page_region_stats_t;

/*
 * Makes a region in [mem, mem + size): its bookkeeping (under 64 bytes plus
 * 4 bytes and one bit per page) at the start, then as many pages of
 * page_size bytes, aligned to page_size, as fit. NULL with errno EINVAL for
 * no memory, a range that wraps or a page size that is not a power of two
 * in [RTM_PAGES_MIN_SIZE, RTM_PAGES_MAX_SIZE]; ENOMEM when not one page
 * fits; E2BIG above 2^32 - 1 pages. O(pages / 8) (it clears the bitmap).
 * The region writes nothing in its pages. Not locked: give each region to
 * heaps used from one thread, or wrap the callbacks in a lock.
 */
RTM_API struct rtm_page_region *rtm_page_region_create(void *mem, size_t size, size_t page_size);
struct rtm_arena;
/* A region on an open arena's whole memory (rtmem/arena.h): its pages are
 * the arena's, prefaulted and locked as it was opened, and stay so when a
 * heap gives them back. The arena must stay open while the region is
 * used. NULL with errno EINVAL for NULL or an arena not open, else as
 * rtm_page_region_create. O(pages / 8). */
RTM_API struct rtm_page_region *rtm_page_region_on_arena(struct rtm_arena *a, size_t page_size);
/* The provider that hands out r's pages. O(1). */
RTM_API struct rtm_page_provider rtm_page_region_provider(struct rtm_page_region *r);
/* A page, or NULL when none is left. Pages given back are given again
 * first, most recent first. O(1). */
RTM_API void *rtm_page_region_get(struct rtm_page_region *r);
/* Gives page back: 0, or -EINVAL (nothing changed) for NULL, an address
 * that is not one of r's pages or a page that is not out. O(1). */
RTM_API int rtm_page_region_put(struct rtm_page_region *r, void *page);
/* Fills *out: 0, or -EINVAL for NULL. O(1). */
RTM_API int rtm_page_region_stats(const struct rtm_page_region *r,
                                  struct rtm_page_region_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* RTMEM_PAGES_H */
