/*
 * What AVL and red-black trees share: navigation and searches, attaching a
 * leaf, rotations, unlinking a node, and the bounded checking walk. All of it
 * is plain binary-search-tree code on offset links (see tree.h).
 */
#include <stdbool.h>

#include "tree.h"

static inline struct rtm_tnode *at(const void *base, size_t off)
{
    return rtm_tnode_at(base, off);
}

/* The link that points to x: the root, or its parent's left or right. */
static size_t *slot_of(void *base, size_t *root, size_t x)
{
    size_t parent = at(base, x)->parent;
    if (!parent)
        return root;
    struct rtm_tnode *p = at(base, parent);
    return p->left == x ? &p->left : &p->right;
}

/* ---- navigation and search ----------------------------------------------- */

size_t rtm__tree_first(const void *base, size_t root)
{
    if (!root)
        return 0;
    while (at(base, root)->left)
        root = at(base, root)->left;
    return root;
}

size_t rtm__tree_last(const void *base, size_t root)
{
    if (!root)
        return 0;
    while (at(base, root)->right)
        root = at(base, root)->right;
    return root;
}

size_t rtm__tree_next(const void *base, size_t node)
{
    if (at(base, node)->right)
        return rtm__tree_first(base, at(base, node)->right);
    size_t parent = at(base, node)->parent;
    while (parent && at(base, parent)->right == node) {
        node = parent;
        parent = at(base, node)->parent;
    }
    return parent;
}

size_t rtm__tree_prev(const void *base, size_t node)
{
    if (at(base, node)->left)
        return rtm__tree_last(base, at(base, node)->left);
    size_t parent = at(base, node)->parent;
    while (parent && at(base, parent)->left == node) {
        node = parent;
        parent = at(base, node)->parent;
    }
    return parent;
}

size_t rtm__tree_lower_bound(const void *base, size_t root, rtm_tprobe probe, const void *key)
{
    size_t best = 0;
    while (root) {
        int c = probe(base, root, key);
        if (c >= 0) {
            best = root;
            root = at(base, root)->left;
        } else {
            if (c == RTM_TPROBE_STOP)
                return RTM_TREE_STOP;
            root = at(base, root)->right;
        }
    }
    return best;
}

size_t rtm__tree_floor(const void *base, size_t root, rtm_tprobe probe, const void *key)
{
    size_t best = 0;
    while (root) {
        int c = probe(base, root, key);
        if (c <= 0) {
            if (c == RTM_TPROBE_STOP)
                return RTM_TREE_STOP;
            best = root;
            root = at(base, root)->right;
        } else {
            root = at(base, root)->left;
        }
    }
    return best;
}

/* ---- structural changes ---------------------------------------------------- */

void rtm__tree_link_leaf(void *base, size_t *root, size_t node, rtm_tcmp cmp)
{
    size_t parent = 0;
    size_t *link = root;
    while (*link) {
        parent = *link;
        struct rtm_tnode *p = at(base, parent);
        link = cmp(base, node, parent) < 0 ? &p->left : &p->right;
    }
    struct rtm_tnode *n = at(base, node);
    n->left = 0;
    n->right = 0;
    n->parent = parent;
    *link = node;
}

void rtm__tree_rotate_left(void *base, size_t *root, size_t x)
{
    size_t *slot = slot_of(base, root, x);
    struct rtm_tnode *xn = at(base, x);
    size_t y = xn->right;
    struct rtm_tnode *yn = at(base, y);
    xn->right = yn->left;
    if (yn->left)
        at(base, yn->left)->parent = x;
    yn->parent = xn->parent;
    *slot = y;
    yn->left = x;
    xn->parent = y;
}

void rtm__tree_rotate_right(void *base, size_t *root, size_t x)
{
    size_t *slot = slot_of(base, root, x);
    struct rtm_tnode *xn = at(base, x);
    size_t y = xn->left;
    struct rtm_tnode *yn = at(base, y);
    xn->left = yn->right;
    if (yn->right)
        at(base, yn->right)->parent = x;
    yn->parent = xn->parent;
    *slot = y;
    yn->right = x;
    xn->parent = y;
}

/* Node n has two children; s, the leftmost node of its right subtree, takes
 * its place (links and meta), and n takes s's old place. Nodes are relinked,
 * never copied: they are embedded in the caller's structures. */
static void swap_with_successor(void *base, size_t *root, size_t n)
{
    struct rtm_tnode *nn = at(base, n);
    size_t s = rtm__tree_first(base, nn->right);
    struct rtm_tnode *sn = at(base, s);
    const struct rtm_tnode was_n = *nn;
    const struct rtm_tnode was_s = *sn; /* was_s.left == 0 */

    *slot_of(base, root, n) = s;
    sn->parent = was_n.parent;
    sn->left = was_n.left;
    sn->meta = was_n.meta;
    at(base, was_n.left)->parent = s;
    if (was_s.parent == n) { /* s was n's right child */
        sn->right = n;
        nn->parent = s;
    } else {
        sn->right = was_n.right;
        at(base, was_n.right)->parent = s;
        at(base, was_s.parent)->left = n;
        nn->parent = was_s.parent;
    }
    nn->left = 0;
    nn->right = was_s.right;
    nn->meta = was_s.meta;
    if (was_s.right)
        at(base, was_s.right)->parent = n;
}

size_t rtm__tree_unlink(void *base, size_t *root, size_t node, int *was_left)
{
    struct rtm_tnode *n = at(base, node);
    if (n->left && n->right)
        swap_with_successor(base, root, node);
    size_t child = n->left ? n->left : n->right;
    size_t parent = n->parent;
    *was_left = parent && at(base, parent)->left == node;
    *slot_of(base, root, node) = child;
    if (child)
        at(base, child)->parent = parent;
    return parent;
}

/* ---- checking -------------------------------------------------------------- */

/* Checks made when the walk first reaches node from parent. Once every node
 * reached has been reached from the parent its own link names, and no node has
 * the same child twice, each node is reached once: the walk is finite. */
static bool enter_ok(const void *base, size_t node, size_t parent)
{
    if (((uintptr_t)base + node) % _Alignof(struct rtm_tnode))
        return false;
    const struct rtm_tnode *n = at(base, node);
    return n->parent == parent && (n->left != n->right || !n->left);
}

long rtm__tree_check_walk(const void *base, size_t root, rtm_tcmp cmp, size_t max_nodes,
                          rtm__tree_rank rank, long *root_rank)
{
    long left_rank[RTM_TREE_MAX_HEIGHT]; /* per depth: rank of the left subtree */
    size_t count = 0, cur = root, parent = 0, last = 0;
    unsigned depth = 0;
    bool down = true; /* cur is reached for the first time (else: its left is done) */

    *root_rank = 0;
    if (!root)
        return 0;
    for (;;) {
        if (down) {
            if (depth >= RTM_TREE_MAX_HEIGHT || ++count > max_nodes || !enter_ok(base, cur, parent))
                return -1;
            if (at(base, cur)->left) {
                parent = cur;
                cur = at(base, cur)->left;
                depth++;
                continue;
            }
            left_rank[depth] = 0;
        }
        /* In-order visit: strictly after the previous node. */
        if (last && cmp(base, last, cur) >= 0)
            return -1;
        last = cur;
        if (at(base, cur)->right) {
            parent = cur;
            cur = at(base, cur)->right;
            depth++;
            down = true;
            continue;
        }
        /* cur's subtree is complete: climb, finishing each node whose right
         * subtree this was, up to one whose left subtree it was. */
        long value = rank(base, cur, left_rank[depth], 0);
        for (;;) {
            if (value < 0)
                return -1;
            if (depth == 0) {
                *root_rank = value;
                return (long)count;
            }
            size_t up = at(base, cur)->parent;
            depth--;
            if (at(base, up)->left == cur) {
                left_rank[depth] = value;
                cur = up;
                down = false;
                break;
            }
            value = rank(base, up, left_rank[depth], value);
            cur = up;
        }
    }
}
