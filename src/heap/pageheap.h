/*
 * Internal: the page-and-bucket heap shared by the heapmem and xnheap kinds
 * (McKusick-Karels buckets over a page allocator, as in Xenomai). The two
 * kinds differ in the balanced tree that indexes free page runs (AVL for
 * heapmem, red-black for xnheap); everything else is this one core.
 *
 * Layout of each pool:
 *   [ pool descriptor | page map: one entry per page | pad | pages ... ]
 * Pages are PH_PAGE_SIZE bytes, aligned to PH_PAGE_SIZE in the address space.
 * The first pool's descriptor is part of the control structure, which the
 * creating memory starts with.
 *
 * Page map entry of a page: a live run head (RUN, with its page count), a live
 * bucket page (BUCKET, with its slot bitmap and its links in the bucket list
 * of its size class), or FREE (inside a free run, or a continuation page of a
 * run). An entry that stops being RUN or BUCKET is reset to FREE, so a freed
 * address is valid exactly when it is a RUN head or a busy slot of a BUCKET.
 *
 * The page map is initialised lazily, from the top of each pool down, as
 * pages are first handed out (see ph_pool.fresh): creating a heap costs O(1)
 * whatever its size, and each entry is written once in the heap's life.
 *
 * Free runs carry a range descriptor in their first page, linked in two
 * trees: by address (to find the neighbours to merge with) and by (pages,
 * address) (best fit). All links are offsets from the heap base. The
 * descriptor opens with a keyed guard word and keeps its page count and links
 * past the page's first 16 bytes, which is all a short overflow past the
 * block before can reach (pageheap.c, "Hardening").
 */
#ifndef RTMEM_SRC_HEAP_PAGEHEAP_H
#define RTMEM_SRC_HEAP_PAGEHEAP_H

#include <stddef.h>
#include <stdint.h>

#include "kind.h"
#include "tree.h"

#define PH_PAGE_SHIFT 9
#define PH_PAGE_SIZE  ((size_t)1 << PH_PAGE_SHIFT)
#define PH_MIN_SHIFT  4                   /* smallest bucket: 16 bytes */
#define PH_MAX_SHIFT  (PH_PAGE_SHIFT - 1) /* largest bucket: half a page */
#define PH_BUCKETS    (PH_MAX_SHIFT - PH_MIN_SHIFT + 1)
/* A page-map entry links pages of its pool by index in 30 bits (pageheap.c,
 * struct ph_pgent): runs and pools up to 2^30 - 2 pages (512 GiB less two
 * pages, with 512-byte pages). */
#define PH_MAX_PAGES  (((size_t)1 << 30) - 2)

/* A free run's descriptor, at the start of its first page (here, not in
 * pageheap.c, so that rtmem wcet can place a run's tree nodes and measure
 * their depth). */
struct ph_range {
    /* Hardened heaps: range_tag(offset, npages) while the run is free, 0 once
     * it is not. The first PH_REACH bytes hold nothing else that is read. */
    uint64_t guard;
    uint64_t spare;
    /* What a best-fit search or a size-tree update reads, in the page's
     * first 64 bytes; what an address search or update reads, in the next
     * 64, opened by a guard of its own (range_tag(offset, 0), 0 once the
     * run is not free). */
    size_t npages;
    struct rtm_tnode size_node;
    unsigned char pad[64 - 2 * sizeof(uint64_t) - sizeof(size_t) - sizeof(struct rtm_tnode)];
    uint64_t addr_guard;
    struct rtm_tnode addr_node;
};

#define SIZE_NODE(r)          ((r) + offsetof(struct ph_range, size_node))
#define RANGE_OF_SIZE_NODE(n) ((n) - offsetof(struct ph_range, size_node))
#define ADDR_NODE(r)          ((r) + offsetof(struct ph_range, addr_node))
#define RANGE_OF_ADDR_NODE(n) ((n) - offsetof(struct ph_range, addr_node))

struct ph_tree_ops {
    void (*insert)(void *base, size_t *root, size_t node, rtm_tcmp cmp);
    void (*remove)(void *base, size_t *root, size_t node);
    long (*check)(const void *base, size_t root, rtm_tcmp cmp, size_t max_nodes);
};

struct ph_pool {
    struct rtm_pool_link link; /* first: the pool list links descriptors */
    size_t map;                /* offset of the page map */
    size_t pages;              /* offset of the first page */
    size_t npages;
    /* Pages [0, fresh) have never been handed out: their page-map entries
     * are not initialised yet (create does not touch the page map), and
     * they all lie in the free run that starts at the pool's first page. */
    size_t fresh;
    /* Per bucket class: the first of this pool's bucket pages with a free
     * slot (page index + 1; 0: none), and this pool's neighbours in the
     * heap's list of pools that have one (descriptor offsets; 0: none). */
    uint32_t bhead[PH_BUCKETS];
    size_t bprev[PH_BUCKETS], bnext[PH_BUCKETS];
};

struct ph_heap {
    struct rtm_heap base;
    size_t buckets[PH_BUCKETS];  /* per class, the first pool with a bucket page that has a
                                    free slot (descriptor offset; 0: none) */
    size_t addr_root, size_root; /* free runs */
    size_t max_free_pages;       /* pages of the largest free run (kept for O(1) stats) */
    size_t free_runs;
    size_t used_bytes, peak_used_bytes, live_blocks;
    size_t usable_bytes, overhead_bytes, pool_count;
    struct ph_pool pool0;
};

/* See rtm_heap_* for the contracts. Those that change the free-run trees
 * take the kind's tree operations (never stored in the heap, which holds no
 * absolute address). */
typedef const struct ph_tree_ops *ph_tree;
struct ph_heap *rtm__ph_create(void *mem, size_t size, uint32_t kind, ph_tree tree,
                               const struct rtm_heap_config *cfg);
int rtm__ph_add_pool(struct ph_heap *h, void *mem, size_t size, ph_tree tree);
void *rtm__ph_alloc(struct ph_heap *h, size_t size, ph_tree tree);
void *rtm__ph_aligned_alloc(struct ph_heap *h, size_t alignment, size_t size, ph_tree tree);
void *rtm__ph_realloc(struct ph_heap *h, void *p, size_t size, ph_tree tree);
int rtm__ph_free(struct ph_heap *h, void *p, ph_tree tree);
size_t rtm__ph_usable_size(const struct ph_heap *h, const void *p);
int rtm__ph_stats(const struct ph_heap *h, struct rtm_heap_stats *out);
int rtm__ph_check(const struct ph_heap *h, uint32_t kind, ph_tree tree);
size_t rtm__ph_fill_count(const struct ph_heap *h, size_t size);
size_t rtm__ph_pool_bound(const struct rtm_heap_limits *lim);
/* The validate op of both kinds (kind.h). */
int rtm__ph_validate(const struct ph_heap *h, size_t bytes);

int rtm__ph_walk(const struct ph_heap *h, int (*fn)(void *arg, void *block), void *arg);

/* The same operations compiled with logged stores (pageheap_logged.c,
 * store.h), for heaps that keep an undo log; their tree must be the logged
 * one too (the *_logged tree operations). */
int rtm__ph_add_pool_logged(struct ph_heap *h, void *mem, size_t size, ph_tree tree);
void *rtm__ph_alloc_logged(struct ph_heap *h, size_t size, ph_tree tree);
void *rtm__ph_aligned_alloc_logged(struct ph_heap *h, size_t alignment, size_t size, ph_tree tree);
void *rtm__ph_realloc_logged(struct ph_heap *h, void *p, size_t size, ph_tree tree);
int rtm__ph_free_logged(struct ph_heap *h, void *p, ph_tree tree);

#endif /* RTMEM_SRC_HEAP_PAGEHEAP_H */
