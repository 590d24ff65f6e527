/*
 * What AVL and red-black trees share: navigation and searches, attaching a
 * leaf, rotations, unlinking a node, and the bounded checking walk. All of it
 * is plain binary-search-tree code on offset links (see tree.h).
 */
#include <stdbool.h>

#include "tree.h"
#include "store.h"

/* A store to a link: recorded first in the logged copy (store.h), whose
 * base is always a heap. */
#define TSET(base, lv, v) RTM_SET((const struct rtm_heap *)(base), lv, v)

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

#if !RTM_LOGGED /* read only: in the plain copy alone */

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

#endif /* !RTM_LOGGED */

/* ---- structural changes ---------------------------------------------------- */

void RTM_LOGGED_NAME(rtm__tree_link_leaf)(void *base, size_t *root, size_t node, rtm_tcmp cmp)
{
    size_t parent = 0;
    size_t *link = root;
    while (*link) {
        parent = *link;
        struct rtm_tnode *p = at(base, parent);
        link = cmp(base, node, parent) < 0 ? &p->left : &p->right;
    }
    struct rtm_tnode *n = at(base, node);
    TSET(base, n->left, 0);
    TSET(base, n->right, 0);
    TSET(base, n->parent, parent);
    TSET(base, *link, node);
}

void RTM_LOGGED_NAME(rtm__tree_rotate_left)(void *base, size_t *root, size_t x)
{
    size_t *slot = slot_of(base, root, x);
    struct rtm_tnode *xn = at(base, x);
    size_t y = xn->right;
    struct rtm_tnode *yn = at(base, y);
    TSET(base, xn->right, yn->left);
    if (yn->left)
        TSET(base, at(base, yn->left)->parent, x);
    TSET(base, yn->parent, xn->parent);
    TSET(base, *slot, y);
    TSET(base, yn->left, x);
    TSET(base, xn->parent, y);
}

void RTM_LOGGED_NAME(rtm__tree_rotate_right)(void *base, size_t *root, size_t x)
{
    size_t *slot = slot_of(base, root, x);
    struct rtm_tnode *xn = at(base, x);
    size_t y = xn->left;
    struct rtm_tnode *yn = at(base, y);
    TSET(base, xn->left, yn->right);
    if (yn->right)
        TSET(base, at(base, yn->right)->parent, x);
    TSET(base, yn->parent, xn->parent);
    TSET(base, *slot, y);
    TSET(base, yn->right, x);
    TSET(base, xn->parent, y);
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

    TSET(base, *slot_of(base, root, n), s);
    TSET(base, sn->parent, was_n.parent);
    TSET(base, sn->left, was_n.left);
    TSET(base, sn->meta, was_n.meta);
    TSET(base, at(base, was_n.left)->parent, s);
    if (was_s.parent == n) { /* s was n's right child */
        TSET(base, sn->right, n);
        TSET(base, nn->parent, s);
    } else {
        TSET(base, sn->right, was_n.right);
        TSET(base, at(base, was_n.right)->parent, s);
        TSET(base, at(base, was_s.parent)->left, n);
        TSET(base, nn->parent, was_s.parent);
    }
    TSET(base, nn->left, 0);
    TSET(base, nn->right, was_s.right);
    TSET(base, nn->meta, was_s.meta);
    if (was_s.right)
        TSET(base, at(base, was_s.right)->parent, n);
}

size_t RTM_LOGGED_NAME(rtm__tree_unlink)(void *base, size_t *root, size_t node, int *was_left)
{
    struct rtm_tnode *n = at(base, node);
    if (n->left && n->right)
        swap_with_successor(base, root, node);
    size_t child = n->left ? n->left : n->right;
    size_t parent = n->parent;
    *was_left = parent && at(base, parent)->left == node;
    TSET(base, *slot_of(base, root, node), child);
    if (child)
        TSET(base, at(base, child)->parent, parent);
    return parent;
}

/* ---- checking -------------------------------------------------------------- */

#if !RTM_LOGGED

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

#endif /* !RTM_LOGGED */
