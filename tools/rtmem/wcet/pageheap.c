/*
 * `rtmem wcet`: the page heaps' scenarios (heapmem and xnheap: one code,
 * src/heap/pageheap.c, with AVL or red-black trees of free runs).
 *
 * What costs time there is the trees: every run taken or given back is a
 * search (O(log r) steps), removals and insertions in two trees (by
 * address, by pages then address), and, when the largest run shrinks or
 * goes away, a walk down the size tree's right edge to find the new
 * largest (refresh_max). The scenarios make r as large as the image allows
 * (a comb: every other page a free run of one page) and place the run an
 * operation works on at the deepest node of the address tree, then check,
 * by reading the trees (src/heap/pageheap.h, tree.h), the depth of the
 * nodes the operation reached and the tree's height against the bound of
 * the tree (AVL at most 1.4405 log2(r + 2) - 0.3277 levels, red-black at
 * most 2 log2(r + 1)).
 *
 * Pages are handed out from the tail of the free run, so filling a fresh
 * heap with one-page runs gives page i the address pages + i * 512.
 */
#include <math.h>
#include <string.h>

#include "../../../src/heap/pageheap.h"
#include "wcet.h"

#define PAGE RTM_PAGEHEAP_PAGE_SIZE

static struct ph_heap *ph(const struct wcet_case *c)
{
    return (struct ph_heap *)(void *)c->heap;
}

static size_t npages(const struct wcet_case *c)
{
    return ph(c)->pool0.npages;
}

static size_t page_off(const struct wcet_case *c, size_t i)
{
    return ph(c)->pool0.pages + i * PAGE;
}

static void *page_at(const struct wcet_case *c, size_t i)
{
    return (char *)c->heap + page_off(c, i);
}

static size_t addr_node(const struct wcet_case *c, size_t i)
{
    return page_off(c, i) + offsetof(struct ph_range, addr_node);
}

static size_t size_node(const struct wcet_case *c, size_t i)
{
    return page_off(c, i) + offsetof(struct ph_range, size_node);
}

/* Levels from the root down to node (the root is level 1). */
static unsigned depth_of(const struct wcet_case *c, size_t node)
{
    unsigned d = 0;
    for (size_t n = node; n != 0 && d <= RTM_TREE_MAX_HEIGHT; n = rtm_tnode_at(c->heap, n)->parent)
        d++;
    return d;
}

/* Levels of the tree under node. */
static unsigned height_of(const struct wcet_case *c, size_t node)
{
    if (!node)
        return 0;
    const struct rtm_tnode *t = rtm_tnode_at(c->heap, node);
    unsigned l = height_of(c, t->left), r = height_of(c, t->right);
    return 1 + (l > r ? l : r);
}

static bool is_avl(const struct wcet_case *c)
{
    return strcmp(c->kind, "heapmem") == 0;
}

/* The most levels a tree of the kind may have with r nodes. */
static unsigned height_bound(const struct wcet_case *c, size_t r)
{
    if (is_avl(c))
        return (unsigned)floor(1.4405 * log2((double)r + 2) - 0.3277);
    return (unsigned)floor(2 * log2((double)r + 1));
}

/* Fills the pool with one-page runs: 0, or -1 (c->why). */
static int fill(struct wcet_case *c)
{
    size_t n = 0;
    while (rtm_heap_alloc(c->heap, PAGE))
        n++;
    if (n != npages(c))
        return wcet_fail(c, "build: %zu one-page runs fit, not %zu", n, npages(c));
    return 0;
}

static int free_page(struct wcet_case *c, size_t i)
{
    if (rtm_heap_free(c->heap, page_at(c, i)) != 0)
        return wcet_fail(c, "build: the free of page %zu was refused", i);
    return 0;
}

/* Every odd page freed: r runs of one page each, none adjacent (the even
 * pages are used). */
static int comb(struct wcet_case *c)
{
    for (size_t i = 1; i < npages(c); i += 2)
        if (free_page(c, i) != 0)
            return -1;
    return 0;
}

/* The odd page whose run's address node is deepest, with `room` pages
 * after it in the pool (the first of equals). */
static size_t deepest_run(const struct wcet_case *c, size_t room)
{
    size_t best = 1;
    unsigned best_d = 0;
    for (size_t i = 1; i + room < npages(c); i += 2) {
        unsigned d = depth_of(c, addr_node(c, i));
        if (d > best_d) {
            best_d = d;
            best = i;
        }
    }
    return best;
}

/* The trees' shape now, into the facts: runs, heights, bound. */
static void tree_facts(struct wcet_case *c)
{
    size_t r = ph(c)->free_runs;
    unsigned ha = height_of(c, ph(c)->addr_root), hs = height_of(c, ph(c)->size_root);
    wcet_fact(c, "%zu free runs; %s trees of height %u (address) and %u (size), bound %u; ", r,
              is_avl(c) ? "AVL" : "red-black", ha, hs, height_bound(c, r));
    wcet_num(c, "free_runs", (double)r);
    wcet_num(c, "addr_tree_height", ha);
    wcet_num(c, "height_bound", height_bound(c, r));
}

static int trees_ok(struct wcet_case *c)
{
    size_t r = ph(c)->free_runs;
    if (height_of(c, ph(c)->addr_root) > height_bound(c, r) ||
        height_of(c, ph(c)->size_root) > height_bound(c, r))
        return wcet_fail(c, "a tree is higher than its bound");
    int rc = rtm_heap_check(c->heap);
    if (rc != 0)
        return wcet_fail(c, "rtm_heap_check after the operation: %d", rc);
    return 0;
}

/* ---- alloc of a page run: best fit to the largest run, which moves -------- */

/* A 7-page run at the deepest run of a comb (pages d to d + 6); a request
 * of 6 pages fits nowhere else. The run is cut from its tail: its head
 * stays, one page, which moves in the size tree from the largest place to
 * its address among the one-page runs (a removal and an insertion); and
 * it was the largest, so the new largest is found by a walk down the size
 * tree. */
#define BIG_RUN 7u

static int run_alloc_build(struct wcet_case *c)
{
    if (fill(c) != 0 || comb(c) != 0)
        return -1;
    size_t d = deepest_run(c, BIG_RUN);
    for (size_t i = d + 1; i < d + BIG_RUN; i += 2)
        if (free_page(c, i) != 0)
            return -1;
    tree_facts(c);
    wcet_fact(c, "the run taken: size-tree depth %u; ", depth_of(c, size_node(c, d)));
    c->op = WCET_OP_ALLOC;
    c->size = (BIG_RUN - 1) * PAGE;
    c->expect[0] = (uintptr_t)page_at(c, d + 1);
    c->expect[1] = d;
    c->expect[2] = ph(c)->free_runs;
    return 0;
}

static int run_alloc_check(struct wcet_case *c)
{
    size_t d = c->expect[1];
    if ((uintptr_t)c->ret != c->expect[0])
        return wcet_fail(c, "alloc did not cut the tail of the largest run");
    if (ph(c)->max_free_pages != 1 || ph(c)->free_runs != c->expect[2])
        return wcet_fail(c, "the largest run is not the one-page rest");
    unsigned after = depth_of(c, size_node(c, d));
    wcet_fact(c, "its one-page rest moved to depth %u; new largest found by a walk", after);
    wcet_num(c, "moved_to_depth", after);
    return trees_ok(c);
}

/* ---- free of a page run: merges with both neighbours ---------------------- */

/* The run freed (page d + 1) lies between the deepest one-page run (d)
 * and a 5-page run (d + 2 to d + 6), the largest: the address search
 * reaches d's node, the successor is removed from both trees (and, the
 * largest gone, the new largest walked to), and d's run grows to 7 pages,
 * moving from among the one-page runs to the largest place. */
#define NEXT_RUN 5u

static int run_free_build(struct wcet_case *c)
{
    if (fill(c) != 0 || comb(c) != 0)
        return -1;
    size_t d = deepest_run(c, NEXT_RUN + 2);
    for (size_t i = d + 3; i < d + 2 + NEXT_RUN; i += 2)
        if (free_page(c, i) != 0)
            return -1;
    tree_facts(c);
    wcet_fact(c, "the predecessor's address node at depth %u; ", depth_of(c, addr_node(c, d)));
    wcet_num(c, "prev_addr_depth", depth_of(c, addr_node(c, d)));
    c->op = WCET_OP_FREE;
    c->ptr = page_at(c, d + 1);
    c->expect[1] = d;
    c->expect[2] = ph(c)->free_runs;
    return 0;
}

static int run_free_check(struct wcet_case *c)
{
    size_t d = c->expect[1], merged = 2 + NEXT_RUN;
    if (c->rc != 0)
        return wcet_fail(c, "free returned %d", c->rc);
    if (ph(c)->free_runs != c->expect[2] - 1 || ph(c)->max_free_pages != merged ||
        ((const struct ph_range *)page_at(c, d))->npages != merged)
        return wcet_fail(c, "the run did not merge with both neighbours");
    wcet_fact(c, "merged into %zu pages, now the largest (size-tree depth %u)", merged,
              depth_of(c, size_node(c, d)));
    return trees_ok(c);
}

/* ---- a bucket page taken ---------------------------------------------------- */

/* No page of the 16-byte class exists, and every free run is one page: a
 * best-fit search down to the lowest run, removed from both trees, and
 * (all runs being as large) the largest walked to again. */
static int bucket_take_build(struct wcet_case *c)
{
    if (fill(c) != 0 || comb(c) != 0)
        return -1;
    tree_facts(c);
    wcet_fact(c, "the run taken (page 1): size-tree depth %u; ", depth_of(c, size_node(c, 1)));
    wcet_num(c, "taken_size_depth", depth_of(c, size_node(c, 1)));
    c->op = WCET_OP_ALLOC;
    c->size = RTM_PAGEHEAP_MIN_BLOCK;
    c->expect[0] = (uintptr_t)page_at(c, 1);
    c->expect[2] = ph(c)->free_runs;
    return 0;
}

static int bucket_take_check(struct wcet_case *c)
{
    if ((uintptr_t)c->ret != c->expect[0])
        return wcet_fail(c, "alloc did not take a new bucket page from the lowest run");
    if (ph(c)->free_runs != c->expect[2] - 1)
        return wcet_fail(c, "the run was not removed");
    wcet_fact(c, "a new bucket page of the 16-byte class");
    return trees_ok(c);
}

/* ---- a bucket page given back -------------------------------------------------- */

/* A bucket page with one busy slot at page d + 1, between the deepest
 * one-page run (d) and another (d + 2): freeing the slot empties the page,
 * which returns to the free runs and merges with both (the successor
 * removed, the predecessor grown to 3 pages and moved to the largest
 * place). The depth is found on a first comb, then the heap is made again
 * with the bucket page in place before the comb. */
static int bucket_give_build(struct wcet_case *c)
{
    if (fill(c) != 0 || comb(c) != 0)
        return -1;
    size_t d = deepest_run(c, 3), u = d + 1;
    struct rtm_heap_config cfg = { .hardening = c->hardening };
    c->heap = rtm_heap_create_ex(c->kind, c->image, c->image_bytes, &cfg);
    if (!c->heap || fill(c) != 0)
        return c->heap ? -1 : wcet_fail(c, "build: the heap could not be made again");
    if (free_page(c, u) != 0)
        return -1;
    void *slot = rtm_heap_alloc(c->heap, RTM_PAGEHEAP_MIN_BLOCK);
    if (slot != page_at(c, u))
        return wcet_fail(c, "build: the bucket page is not where it was placed");
    if (comb(c) != 0)
        return -1;
    tree_facts(c);
    wcet_fact(c, "the predecessor's address node at depth %u; ", depth_of(c, addr_node(c, d)));
    wcet_num(c, "prev_addr_depth", depth_of(c, addr_node(c, d)));
    c->op = WCET_OP_FREE;
    c->ptr = slot;
    c->expect[1] = d;
    c->expect[2] = ph(c)->free_runs;
    return 0;
}

static int bucket_give_check(struct wcet_case *c)
{
    size_t d = c->expect[1];
    if (c->rc != 0)
        return wcet_fail(c, "free returned %d", c->rc);
    if (ph(c)->free_runs != c->expect[2] - 1 ||
        ((const struct ph_range *)page_at(c, d))->npages != 3)
        return wcet_fail(c, "the emptied page did not merge with both neighbours");
    wcet_fact(c, "the emptied page merged into 3 pages");
    return trees_ok(c);
}

/* ---- the first use of pages -------------------------------------------------- */

/* A fresh heap: the page map is written lazily, as pages are first handed
 * out; one run of every page but the first writes every other entry
 * (O(n), once in the heap's life: rtmem/heapmem.h, "First use"). */
static int first_use_build(struct wcet_case *c)
{
    c->op = WCET_OP_ALLOC;
    c->size = (npages(c) - 1) * PAGE;
    c->expect[0] = (uintptr_t)page_at(c, 1);
    return 0;
}

static int first_use_check(struct wcet_case *c)
{
    if ((uintptr_t)c->ret != c->expect[0] || ph(c)->pool0.fresh != 1)
        return wcet_fail(c, "the run did not take the fresh pages");
    size_t entries = npages(c) - 1;
    wcet_fact(c, "%zu page-map entries written (%zu bytes) by one alloc", entries,
              entries * RTM_PAGEHEAP_PAGEMAP_BYTES);
    wcet_num(c, "entries_written", (double)entries);
    return trees_ok(c);
}

const struct wcet_scenario wcet_pageheap_scenarios[] = {
    { WCET_PAGEHEAP, "run-alloc-largest", "alloc",
      "best fit down the size tree to the largest run; its rest moves in the size tree; "
      "new largest walked to",
      "O(log r)", run_alloc_build, run_alloc_check, NULL },
    { WCET_PAGEHEAP, "run-free-merge-both", "free",
      "address search to the deepest run; both neighbours free: the largest removed, the "
      "other grown and moved",
      "O(log r)", run_free_build, run_free_check, NULL },
    { WCET_PAGEHEAP, "bucket-page-take", "alloc",
      "no page with a free slot: best fit for one page, removed from both trees, largest "
      "walked to",
      "O(log r)", bucket_take_build, bucket_take_check, NULL },
    { WCET_PAGEHEAP, "bucket-page-give", "free",
      "last busy slot: the page returns to the free runs, merging with both neighbours",
      "O(log r)", bucket_give_build, bucket_give_check, NULL },
    { WCET_PAGEHEAP, "run-alloc-first-use", "alloc",
      "a fresh heap's first run: the page map written for every page of it",
      "O(n) once", first_use_build, first_use_check, NULL },
};
const size_t wcet_pageheap_n = sizeof(wcet_pageheap_scenarios) / sizeof(wcet_pageheap_scenarios[0]);
