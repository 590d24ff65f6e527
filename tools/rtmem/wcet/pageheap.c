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
#include <stdlib.h>
#include <string.h>

#include "heap/pageheap.h"
#include "wcet.h"

#define PAGE RTM_PAGEHEAP_PAGE_SIZE

static struct ph_heap *ph(const struct wcet_case *c)
{
    return (struct ph_heap *)(void *)c->heap;
}

/* The pool the scenario works in. */
static const struct ph_pool *pool(const struct wcet_case *c)
{
    if (!c->pool)
        return &ph(c)->pool0;
    return (const struct ph_pool *)(const void *)((const char *)c->heap + c->pool);
}

static size_t npages(const struct wcet_case *c)
{
    return pool(c)->npages;
}

static size_t page_off(const struct wcet_case *c, size_t i)
{
    return pool(c)->pages + i * PAGE;
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

/* Levels of the tree under node, counted no further than
 * RTM_TREE_MAX_HEIGHT below the root (a damaged tree ends there). */
static unsigned height_below(const struct wcet_case *c, size_t node, unsigned depth)
{
    if (!node || depth > RTM_TREE_MAX_HEIGHT)
        return 0;
    const struct rtm_tnode *t = rtm_tnode_at(c->heap, node);
    unsigned l = height_below(c, t->left, depth + 1), r = height_below(c, t->right, depth + 1);
    return 1 + (l > r ? l : r);
}

static unsigned height_of(const struct wcet_case *c, size_t node)
{
    return height_below(c, node, 0);
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

/*
 * A fresh heap on the image, filled: 0, or -1 (c->why). With c->pools > 1,
 * the heap is made on its first WCET_SMALL_POOL bytes, filled, then the
 * scenario's pool added (the rest of the image but room for the others,
 * rest_pools) and filled: added pools are listed after the first, the
 * latest added first, so the first added, the scenario's, is found last.
 */
static int remake(struct wcet_case *c)
{
    struct rtm_heap_config cfg = { .hardening = c->hardening };
    size_t first = c->pools > 1 ? WCET_SMALL_POOL : c->image_bytes;
    c->pool = 0;
    c->heap = rtm_heap_create_ex(c->kind, c->image, first, &cfg);
    if (!c->heap)
        return wcet_fail(c, "build: the heap could not be made");
    if (c->pools <= 1)
        return fill(c);
    if (fill(c) != 0)
        return -1;
    size_t big = c->image_bytes - (c->pools - 1) * WCET_SMALL_POOL;
    if (rtm_heap_add_pool(c->heap, c->image + first, big) != 0)
        return wcet_fail(c, "build: the scenario's pool could not be added");
    c->pool = ph(c)->pool0.link.next;
    return fill(c);
}

/* The other pools of a heap of c->pools, each added and taken whole: 0,
 * or -1 (c->why). */
static int rest_pools(struct wcet_case *c)
{
    unsigned char *at = c->image + c->image_bytes - (c->pools - 2) * WCET_SMALL_POOL;
    for (unsigned i = 2; i < c->pools; i++, at += WCET_SMALL_POOL) {
        struct rtm_heap_stats st;
        if (rtm_heap_add_pool(c->heap, at, WCET_SMALL_POOL) != 0 ||
            rtm_heap_stats(c->heap, &st) != 0 || !rtm_heap_alloc(c->heap, st.largest_free_bytes))
            return wcet_fail(c, "build: pool %u could not be added and taken", i);
    }
    return 0;
}

static int free_page(struct wcet_case *c, size_t i)
{
    if (rtm_heap_free(c->heap, page_at(c, i)) != 0)
        return wcet_fail(c, "build: the free of page %zu was refused", i);
    return 0;
}

/*
 * The comb: one-page free runs on odd pages, none adjacent (the even pages
 * stay used), as many as the pool holds. The trees' shape depends on the
 * order the runs are freed in; the comb tries four and keeps the one
 * whose address tree is highest, of equals the one whose ends the scenario
 * works at (its lowest run, its largest, or both) lie deepest:
 *   ascending   page 1, 3, 5...: a red-black tree then leans right, near
 *               its bound; an AVL tree stays nearly complete;
 *   descending  the mirror;
 *   fibonacci   the level order of a Fibonacci tree (each node's subtrees
 *               one level apart: an AVL tree of the most levels for its
 *               nodes, 1.44 log2 n) over the lowest runs: inserted in
 *               level order, every node lands where that tree has it and
 *               no insertion rotates, since every truncation of a balanced
 *               tree is balanced. The runs beyond stay used. Its left
 *               subtrees are the higher: the lowest run lies deepest;
 *   mirror      the same with the right subtrees higher: the highest run
 *               lies deepest.
 * (With every run one page long, the size tree orders runs as the address
 * tree does, and takes the same shape.)
 */
enum comb_order { ORDER_ASCENDING, ORDER_DESCENDING, ORDER_FIBONACCI, ORDER_MIRROR, N_ORDERS };

static const char *const order_names[N_ORDERS] = { "ascending", "descending", "Fibonacci",
                                                   "mirrored Fibonacci" };

/* Which end of the trees a scenario works at, besides their height: the
 * lowest run (a best fit for one page), the largest (a best fit for the
 * most pages), or both (a best fit for one page that then walks to the
 * largest to refresh the maximum). */
enum comb_end { END_NONE, END_LOWEST, END_HIGHEST, END_BOTH };

/* Nodes of the Fibonacci tree of height h. */
static size_t fib_nodes(unsigned h)
{
    size_t a = 0, b = 1; /* heights 0 and 1 */
    if (h == 0)
        return 0;
    for (unsigned i = 1; i < h; i++) {
        size_t n = a + b + 1;
        a = b;
        b = n;
    }
    return b;
}

/* The ranks (0 = page 1, 1 = page 3...) in the order o frees them, into
 * *ranks (malloc'd): how many, or 0 (out of memory). */
static size_t comb_ranks(size_t runs, enum comb_order o, size_t **ranks)
{
    size_t n = runs;
    unsigned h = 0;
    bool fib = o == ORDER_FIBONACCI || o == ORDER_MIRROR;
    if (fib) {
        while (fib_nodes(h + 1) <= runs)
            h++;
        n = fib_nodes(h);
    }
    size_t *r = malloc((n ? n : 1) * sizeof(*r));
    if (!r)
        return 0;
    if (!fib) {
        for (size_t i = 0; i < n; i++)
            r[i] = o == ORDER_ASCENDING ? i : n - 1 - i;
        *ranks = r;
        return n;
    }
    /* Breadth first: a subtree is its height and its lowest rank; its root
     * is the rank after its left subtree (height h - 1), its right subtree
     * has height h - 2. */
    struct sub {
        unsigned h;
        size_t lo;
    } *q = malloc((2 * n + 1) * sizeof(*q));
    if (!q) {
        free(r);
        return 0;
    }
    size_t head = 0, tail = 0, k = 0;
    q[tail++] = (struct sub){ h, 0 };
    while (head < tail) {
        struct sub t = q[head++];
        if (t.h == 0)
            continue;
        size_t left = fib_nodes(t.h - 1);
        r[k++] = t.lo + left;
        q[tail++] = (struct sub){ t.h - 1, t.lo };
        q[tail++] = (struct sub){ t.h >= 2 ? t.h - 2 : 0, t.lo + left + 1 };
    }
    free(q);
    if (o == ORDER_MIRROR)
        for (size_t i = 0; i < k; i++)
            r[i] = n - 1 - r[i];
    *ranks = r;
    return k;
}

/* Frees the comb's runs in order o: 0, or -1 (c->why). */
static int comb_free(struct wcet_case *c, enum comb_order o)
{
    size_t *ranks, n = comb_ranks(npages(c) / 2, o, &ranks);
    if (!n)
        return wcet_fail(c, "build: out of memory for the comb");
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = free_page(c, 2 * ranks[i] + 1);
    free(ranks);
    return rc;
}

/* A fresh heap made into the comb of the highest address tree, of equals
 * the one whose end `end` lies deepest; the order it was freed in into
 * *order. 0, or -1 (c->why). */
static int comb(struct wcet_case *c, enum comb_end end, enum comb_order *order)
{
    unsigned best = 0;
    *order = ORDER_ASCENDING;
    for (enum comb_order o = ORDER_ASCENDING; o < N_ORDERS; o++) {
        if (remake(c) != 0 || comb_free(c, o) != 0)
            return -1;
        size_t root = ph(c)->addr_root;
        unsigned lo = depth_of(c, rtm__tree_first(c->heap, root));
        unsigned hi = depth_of(c, rtm__tree_last(c->heap, root));
        unsigned ends = end == END_LOWEST    ? lo
                        : end == END_HIGHEST ? hi
                        : end == END_BOTH    ? lo + hi
                                             : 0;
        unsigned score = height_of(c, root) * (2 * RTM_TREE_MAX_HEIGHT + 1) + ends;
        if (score > best) {
            best = score;
            *order = o;
        }
    }
    return remake(c) != 0 || comb_free(c, *order) != 0 ? -1 : 0;
}

/* The page of the free run whose address node is deepest among those
 * followed by free runs every other page up to `room` pages on (what the
 * scenario merges), inside the pool; the first of equals. 0 (no page) when
 * none is, or out of memory (c->why). */
static size_t deepest_run(struct wcet_case *c, size_t room)
{
    size_t n = npages(c), best = 0;
    bool *is_free = calloc(n, sizeof(*is_free));
    if (!is_free) {
        wcet_fail(c, "build: out of memory");
        return 0;
    }
    const size_t at = pool(c)->pages + offsetof(struct ph_range, addr_node);
    for (size_t x = rtm__tree_first(c->heap, ph(c)->addr_root); x; x = rtm__tree_next(c->heap, x))
        if ((x - at) / PAGE < n) /* runs of other pools: not the scenario's */
            is_free[(x - at) / PAGE] = true;
    unsigned best_d = 0;
    for (size_t x = rtm__tree_first(c->heap, ph(c)->addr_root); x; x = rtm__tree_next(c->heap, x)) {
        size_t i = (x - at) / PAGE;
        bool fits = i < n && i + room <= n;
        for (size_t j = 2; fits && j < room; j += 2)
            fits = is_free[i + j];
        unsigned d = fits ? depth_of(c, x) : 0;
        if (d > best_d) {
            best_d = d;
            best = i;
        }
    }
    free(is_free);
    if (!best)
        wcet_fail(c, "build: no free run with room after it");
    return best;
}

/* The trees' shape now, into the facts: runs, heights, bound. */
static void tree_facts(struct wcet_case *c, enum comb_order o)
{
    size_t r = ph(c)->free_runs;
    unsigned ha = height_of(c, ph(c)->addr_root), hs = height_of(c, ph(c)->size_root);
    wcet_fact(c,
              "%zu free runs (freed in %s order); %s trees of height %u (address) and %u "
              "(size), bound %u; ",
              r, order_names[o], is_avl(c) ? "AVL" : "red-black", ha, hs, height_bound(c, r));
    wcet_num(c, "free_runs", (double)r);
    wcet_num(c, "addr_tree_height", ha);
    wcet_num(c, "height_bound", height_bound(c, r));
}

/* The heap's own check first (a damaged tree is not walked), then each
 * tree's height against its bound. */
static int trees_ok(struct wcet_case *c)
{
    int rc = rtm_heap_check(c->heap);
    if (rc != 0)
        return wcet_fail(c, "rtm_heap_check after the operation: %d", rc);
    size_t r = ph(c)->free_runs;
    if (height_of(c, ph(c)->addr_root) > height_bound(c, r) ||
        height_of(c, ph(c)->size_root) > height_bound(c, r))
        return wcet_fail(c, "a tree is higher than its bound");
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
    enum comb_order order;
    if (comb(c, END_HIGHEST, &order) != 0)
        return -1;
    size_t d = deepest_run(c, BIG_RUN);
    if (!d)
        return -1;
    for (size_t i = d + 1; i < d + BIG_RUN; i += 2)
        if (free_page(c, i) != 0)
            return -1;
    tree_facts(c, order);
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
    enum comb_order order;
    if (comb(c, END_NONE, &order) != 0)
        return -1;
    size_t d = deepest_run(c, NEXT_RUN + 2);
    if (!d)
        return -1;
    for (size_t i = d + 3; i < d + 2 + NEXT_RUN; i += 2)
        if (free_page(c, i) != 0)
            return -1;
    tree_facts(c, order);
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
    enum comb_order order;
    if (comb(c, END_BOTH, &order) != 0)
        return -1;
    tree_facts(c, order);
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
    enum comb_order order;
    if (comb(c, END_NONE, &order) != 0)
        return -1;
    size_t d = deepest_run(c, 3), u = d + 1;
    if (!d || remake(c) != 0 || free_page(c, u) != 0)
        return -1;
    void *slot = rtm_heap_alloc(c->heap, RTM_PAGEHEAP_MIN_BLOCK);
    if (slot != page_at(c, u))
        return wcet_fail(c, "build: the bucket page is not where it was placed");
    if (comb_free(c, order) != 0 || (c->pools > 1 && rest_pools(c) != 0))
        return -1;
    tree_facts(c, order);
    wcet_fact(c, "the predecessor's address node at depth %u; ", depth_of(c, addr_node(c, d)));
    wcet_num(c, "prev_addr_depth", depth_of(c, addr_node(c, d)));
    c->op = WCET_OP_FREE;
    c->ptr = slot;
    c->expect[1] = d;
    c->expect[2] = ph(c)->free_runs;
    return 0;
}

/* The same in the pool found last of WCET_POOLS: every run's pool, on a
 * hardened heap checked before the run is read, is found by a walk of the
 * pool list (O(k log r)), and so is the page's. */
static int bucket_give_pool_build(struct wcet_case *c)
{
    c->pools = WCET_POOLS;
    return bucket_give_build(c);
}

static int bucket_give_check(struct wcet_case *c);

static int bucket_give_pool_check(struct wcet_case *c)
{
    struct rtm_heap_stats st;
    if (rtm_heap_stats(c->heap, &st) != 0 || st.pool_count != WCET_POOLS || !c->pool)
        return wcet_fail(c, "the heap does not have its pools");
    if (bucket_give_check(c) != 0)
        return -1;
    wcet_fact(c, "; in the pool found last of %u", WCET_POOLS);
    wcet_num(c, "pools", WCET_POOLS);
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
      "last busy slot: the page returns to the free runs, merging with both neighbours", "O(log r)",
      bucket_give_build, bucket_give_check, NULL },
    { WCET_PAGEHEAP, "bucket-page-give-last-pool", "free",
      "bucket-page-give in the pool found last of 8: each run's pool found by a walk of the "
      "pool list",
      "O(pools log r)", bucket_give_pool_build, bucket_give_pool_check, NULL },
    { WCET_PAGEHEAP, "run-alloc-first-use", "alloc",
      "a fresh heap's first run: the page map written for every page of it", "O(n) once",
      first_use_build, first_use_check, NULL },
};
const size_t wcet_pageheap_n = sizeof(wcet_pageheap_scenarios) / sizeof(wcet_pageheap_scenarios[0]);
