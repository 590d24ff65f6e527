/*
 * Internal: the page stack of a page region, shared by the public region
 * provider (pages.c) and the region a page heap keeps inside its own
 * memory (xvheap.c).
 *
 * Pages [0, pages) of a region are handed out in two ways: those never
 * handed out yet from a bump index, and those given back from a stack of
 * indices (most recent first). Both O(1), no loop, no write to a page: an
 * overflow that runs past a page can reach only what the next page's user
 * wrote, never the region's bookkeeping. Stores go through RTM_SET (store.h)
 * so that a heap with an undo log can take them back.
 */
#ifndef RTMEM_SRC_HEAP_PAGE_STACK_H
#define RTMEM_SRC_HEAP_PAGE_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

struct page_stack {
    size_t pages; /* in the region */
    size_t bump;  /* pages [bump, pages) have never been handed out */
    size_t top;   /* entries on the stack of given-back pages */
};

/* The index of a page to hand out, or SIZE_MAX when none is left. h is the
 * heap whose log records the stores (any heap, or NULL, in a plain build). */
static inline size_t page_stack_pop(struct rtm_heap *h, struct page_stack *s, uint32_t *stack)
{
    (void)h;
    if (s->top > 0) {
        RTM_SET(h, s->top, s->top - 1);
        return stack[s->top];
    }
    if (s->bump < s->pages) {
        RTM_SET(h, s->bump, s->bump + 1);
        return s->bump - 1;
    }
    return SIZE_MAX;
}

/* Gives back page i, which the caller knows is out. */
static inline void page_stack_push(struct rtm_heap *h, struct page_stack *s, uint32_t *stack,
                                   size_t i)
{
    (void)h;
    RTM_SET(h, stack[s->top], (uint32_t)i);
    RTM_SET(h, s->top, s->top + 1);
}

/* Whether n pages of page_size bytes, aligned to it, fit in [lo, hi) after
 * book(n) bytes of bookkeeping; their first page's address in *first. */
static inline bool page_layout_fits(uintptr_t lo, uintptr_t hi, size_t page_size,
                                    size_t (*book)(size_t pages), size_t n, uintptr_t *first)
{
    size_t b = book(n);
    if (b >= hi - lo)
        return false;
    uintptr_t f = (lo + b + (page_size - 1)) & ~(uintptr_t)(page_size - 1);
    if (f < lo || f >= hi || (size_t)(hi - f) / page_size < n)
        return false;
    *first = f;
    return true;
}

/*
 * The most pages of page_size bytes (a power of two), aligned to it, that
 * fit in [lo, hi) after book(n) bytes of bookkeeping for n pages: their
 * count, with the first page's address in *first; 0 when none fits. A
 * bisection (whether n pages fit only gets harder as n grows), at create
 * only: O(log pages).
 */
static inline size_t page_layout(uintptr_t lo, uintptr_t hi, size_t page_size,
                                 size_t (*book)(size_t pages), uintptr_t *first)
{
    if (hi <= lo)
        return 0;
    size_t good = 0, bad = (size_t)(hi - lo) / page_size + 1; /* fits(good), !fits(bad) */
    uintptr_t at = 0;
    while (bad - good > 1) {
        size_t mid = good + (bad - good) / 2;
        uintptr_t f;
        if (page_layout_fits(lo, hi, page_size, book, mid, &f)) {
            good = mid;
            at = f;
        } else {
            bad = mid;
        }
    }
    if (good)
        *first = at;
    return good;
}

/* Pages out of the region now. */
static inline size_t page_stack_out(const struct page_stack *s)
{
    return s->bump - s->top;
}

#endif /* RTMEM_SRC_HEAP_PAGE_STACK_H */
