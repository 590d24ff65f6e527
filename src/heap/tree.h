/*
 * Balanced binary search trees whose nodes live inside heap memory: AVL
 * (rtm__avl_*) and red-black (rtm__rb_*), sharing one node type and one set of
 * navigation and search functions (rtm__tree_*). Internal to rtmem; the heap
 * kinds use them to index free page ranges by address and by size.
 *
 * Offsets, not pointers (heap metadata never holds an address):
 *  - Every link is an offset from a base address chosen by the caller (the
 *    heap's base). The node at offset o is the struct rtm_tnode at
 *    (char *)base + o, computed modulo 2^N, so nodes may lie below the base as
 *    well as above it. A tree stays valid when the memory holding it (nodes
 *    and base alike) is mapped or copied to another address.
 *  - Offset 0 means "no node": the base itself is never a node. An empty tree
 *    is a root of 0.
 *  - These functions never order offsets themselves; only the caller's compare
 *    and probe functions order nodes.
 *
 * Nodes:
 *  - struct rtm_tnode is embedded in the caller's structure, at an address
 *    aligned to _Alignof(struct rtm_tnode). It holds no key: the caller's
 *    rtm_tcmp finds the key from the node's offset.
 *  - A node is in at most one tree at a time. Insertion writes all four words,
 *    so a node's prior contents do not matter. After removal its words are
 *    undefined until it is inserted again.
 *  - Trees are not interchangeable: a tree built with rtm__avl_insert is only
 *    changed with rtm__avl_remove and checked with rtm__avl_check; likewise rb.
 *    The rtm_tree_* functions work on both.
 *
 * Bounds (n = nodes in the tree):
 *  - Height: AVL at most 1.4405 log2(n + 2) - 0.3277 levels; red-black at most
 *    2 log2(n + 1). Either is below RTM_TREE_MAX_HEIGHT for any n < 2^64.
 *  - insert: O(log n) compares and steps; AVL does at most one single or
 *    double rotation, red-black at most two rotations.
 *  - remove: O(log n) steps and no compare; AVL may rotate at every level on
 *    the way up, red-black does at most three rotations.
 *  - first, last, lower_bound, floor: O(log n). next, prev: O(log n) worst
 *    case, O(1) amortised over a full walk.
 *  - check: O(n), no more than max_nodes nodes visited.
 *  - No function allocates, recurses, makes a system call or prints. Stack use
 *    is a few words, except the checks (about RTM_TREE_MAX_HEIGHT words).
 *
 * Not thread-safe: the caller serialises all calls on one tree, readers
 * included.
 */
#ifndef RTMEM_SRC_HEAP_TREE_H
#define RTMEM_SRC_HEAP_TREE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

/* One node, embedded in the caller's structure. */
struct rtm_tnode {
    size_t left, right, parent; /* offsets from base, 0 = none */
    /* AVL: balance factor height(right) - height(left), one of -1, 0, +1,
     * stored as (size_t)(ptrdiff_t)balance. Red-black: colour, 0 = black,
     * 1 = red. Owned by the tree code; callers never write it. */
    size_t meta;
};

_Static_assert(sizeof(struct rtm_tnode) == 4 * sizeof(size_t), "a node is four words, no padding");
_Static_assert(_Alignof(struct rtm_tnode) >= _Alignof(size_t), "links are naturally aligned");

/* Deeper than any valid AVL or red-black tree of fewer than 2^64 nodes
 * (2 log2(2^64) = 128 levels); the checks refuse deeper trees. */
#define RTM_TREE_MAX_HEIGHT 130

/*
 * Orders two nodes given by offset: negative if a comes before b, positive if
 * after, 0 only when a == b. Must be a strict total order over the nodes of
 * the tree and stay the same while they are in it. To keep equal keys in one
 * tree, break ties with anything unique (the offset itself, as an unsigned
 * number, is a strict total order too). Must not change the tree.
 */
typedef int (*rtm_tcmp)(const void *base, size_t a, size_t b);

/*
 * For searches: the sign of (node vs key): negative if node comes before key,
 * 0 if it matches, positive if after. Must be monotone along the tree's order
 * (all negatives, then all zeros, then all positives), which holds whenever it
 * compares the same key (or a prefix of the key) that rtm_tcmp orders by.
 */
typedef int (*rtm_tprobe)(const void *base, size_t node, const void *key);

/* A probe that finds the node it is given unfit to follow (a heap's
 * integrity check failed on it) returns RTM_TPROBE_STOP: the search ends at
 * once, before reading any link of that node, and returns RTM_TREE_STOP,
 * which is never a node (nodes are aligned, see rtm_tnode). */
#define RTM_TPROBE_STOP INT_MIN
#define RTM_TREE_STOP   ((size_t)1)

/* The node at offset off from base; off != 0. Arithmetic is on integers, so
 * it is defined for offsets that wrap below the base. */
static inline struct rtm_tnode *rtm_tnode_at(const void *base, size_t off)
{
    return (struct rtm_tnode *)((uintptr_t)base + off);
}

/* The offset of node (or of any address) from base, modulo 2^N. */
static inline size_t rtm_tnode_off(const void *base, const void *node)
{
    return (size_t)((uintptr_t)node - (uintptr_t)base);
}

/*
 * Insert node into the tree *root (0 when empty), ordered by cmp.
 * Preconditions: node != 0, not in any tree, its memory writable and aligned;
 * cmp orders it against every node of the tree (no node compares equal to it).
 * O(log n).
 */
void rtm__avl_insert(void *base, size_t *root, size_t node, rtm_tcmp cmp);
void rtm__rb_insert(void *base, size_t *root, size_t node, rtm_tcmp cmp);

/*
 * Remove node, which must be in the tree *root, from it. Any node may be
 * removed, the root and nodes with two children included; other nodes are
 * relinked, never moved or copied, so every other node keeps its offset and
 * contents except its link words. No compare is called. O(log n).
 */
void rtm__avl_remove(void *base, size_t *root, size_t node);
void rtm__rb_remove(void *base, size_t *root, size_t node);

/* The same, for trees in a heap that keeps an undo log (base is the heap):
 * each link and meta word is recorded in the log before it is written
 * (store.h). Compiled from the same code (the *_logged.c files). */
void rtm__avl_insert_logged(void *base, size_t *root, size_t node, rtm_tcmp cmp);
void rtm__rb_insert_logged(void *base, size_t *root, size_t node, rtm_tcmp cmp);
void rtm__avl_remove_logged(void *base, size_t *root, size_t node);
void rtm__rb_remove_logged(void *base, size_t *root, size_t node);

/*
 * Navigation, for both kinds. first/last: the smallest/largest node, 0 if the
 * tree is empty. next/prev: the in-order successor/predecessor of node (which
 * must be in a tree), 0 at the end. O(log n) each.
 */
size_t rtm__tree_first(const void *base, size_t root);
size_t rtm__tree_last(const void *base, size_t root);
size_t rtm__tree_next(const void *base, size_t node);
size_t rtm__tree_prev(const void *base, size_t node);

/* The smallest node with probe(node, key) >= 0, or 0 if none, or
 * RTM_TREE_STOP. O(log n) probes. Best fit by size: the smallest range of at
 * least the wanted size. */
size_t rtm__tree_lower_bound(const void *base, size_t root, rtm_tprobe probe, const void *key);

/* The largest node with probe(node, key) <= 0, or 0 if none, or
 * RTM_TREE_STOP. O(log n) probes. By address: the free range starting at or
 * just below an address. */
size_t rtm__tree_floor(const void *base, size_t root, rtm_tprobe probe, const void *key);

/*
 * Full invariant checks: in-order sequence strictly increasing under cmp,
 * each child's parent link naming its parent, the root's parent 0, no node
 * reachable twice, nodes aligned; AVL: each balance factor valid and equal to
 * the true height difference; red-black: colours valid, root black, no red
 * node with a red child, equal black heights on every path.
 *
 * Returns the number of nodes (>= 0), or -1 if the tree is broken or holds
 * more than max_nodes nodes. Always terminates: a cycle or a node shared by
 * two parents is found through the parent links, and the walk stops after
 * max_nodes nodes or RTM_TREE_MAX_HEIGHT levels. Links must still point into
 * readable memory: a wild offset may fault. O(n) time, calls cmp n - 1 times.
 */
long rtm__avl_check(const void *base, size_t root, rtm_tcmp cmp, size_t max_nodes);
long rtm__rb_check(const void *base, size_t root, rtm_tcmp cmp, size_t max_nodes);

/* ---- building blocks shared by avl.c and rbtree.c (tree_common.c) ----------
 * Not for the heap kinds: the balanced operations above are the interface. */

/* Attach node as a leaf at its place under cmp: left = right = 0, parent set,
 * meta left to the caller. O(log n). */
void rtm__tree_link_leaf(void *base, size_t *root, size_t node, rtm_tcmp cmp);

/* Rotations around x, which has a right (left) child y: y takes x's place and
 * x becomes y's left (right) child. Links only; meta untouched. O(1). */
void rtm__tree_rotate_left(void *base, size_t *root, size_t x);
void rtm__tree_rotate_right(void *base, size_t *root, size_t x);

/*
 * Take node out of the tree's links. A node with two children first trades
 * places with its successor (links and meta swapped, so the tree's shape and
 * per-position meta are unchanged); then node, now with at most one child, is
 * replaced by that child. Returns the parent of the emptied position (0 if it
 * was the root) and sets *was_left to whether it was that parent's left child.
 * node->meta then holds the meta of the position removed. O(log n).
 */
size_t rtm__tree_unlink(void *base, size_t *root, size_t node, int *was_left);

/* The logged twins of the four above (see rtm__avl_insert_logged). */
void rtm__tree_link_leaf_logged(void *base, size_t *root, size_t node, rtm_tcmp cmp);
void rtm__tree_rotate_left_logged(void *base, size_t *root, size_t x);
void rtm__tree_rotate_right_logged(void *base, size_t *root, size_t x);
size_t rtm__tree_unlink_logged(void *base, size_t *root, size_t node, int *was_left);

/*
 * Bounded iterative walk behind the checks: verifies structure and order as
 * rtm__avl_check describes, and calls rank(base, node, left, right) after both
 * subtrees of node, with left/right the values it returned for them (0 for a
 * missing child). rank returns the node's own value, or -1 to reject the tree.
 * Returns the root's value through *root_rank (0 if empty) and the node count,
 * or -1.
 */
typedef long (*rtm__tree_rank)(const void *base, size_t node, long left, long right);
long rtm__tree_check_walk(const void *base, size_t root, rtm_tcmp cmp, size_t max_nodes,
                          rtm__tree_rank rank, long *root_rank);

#endif
