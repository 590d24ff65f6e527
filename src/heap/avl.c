/*
 * AVL trees (Adelson-Velsky and Landis, 1962) on offset links.
 *
 * Each node keeps its balance factor, height(right) - height(left), in meta.
 * Insertion walks up from the new leaf adjusting factors until a subtree's
 * height stops growing or one rotation (single or double) restores it.
 * Removal walks up from the emptied position while subtree heights keep
 * shrinking, rotating where a factor would reach +-2. Both walks follow parent
 * links, so neither recurses nor keeps a path stack.
 */
#include "tree.h"
#include "store.h"

#define TSET(base, lv, v) RTM_SET((const struct rtm_heap *)(base), lv, v)

static inline struct rtm_tnode *at(const void *base, size_t off)
{
    return rtm_tnode_at(base, off);
}

static inline int balance_of(const struct rtm_tnode *n)
{
    return (int)(ptrdiff_t)n->meta;
}

#define set_balance(n, balance) TSET(base, (n)->meta, (size_t)(ptrdiff_t)(balance))

_Static_assert((ptrdiff_t)(size_t)(ptrdiff_t)-1 == -1, "balance -1 survives the size_t encoding");

/* The child of x on side s (+1 right, -1 left) takes x's place. */
static void raise_child(void *base, size_t *root, size_t x, int s)
{
    if (s > 0)
        RTM_LOGGED_NAME(rtm__tree_rotate_left)(base, root, x);
    else
        RTM_LOGGED_NAME(rtm__tree_rotate_right)(base, root, x);
}

static inline size_t child_on(const struct rtm_tnode *n, int s)
{
    return s > 0 ? n->right : n->left;
}

/*
 * x is two levels heavier on side s (+1 right, -1 left). One single or double
 * rotation fixes it; returns the subtree's new root. *dropped tells whether the
 * subtree is now one level lower than it was with the imbalance; it is not
 * only when the heavy child was balanced, which happens on removal alone.
 */
static size_t rebalance(void *base, size_t *root, size_t x, int s, int *dropped)
{
    struct rtm_tnode *xn = at(base, x);
    size_t y = child_on(xn, s);
    struct rtm_tnode *yn = at(base, y);
    int yb = balance_of(yn);

    if (yb * s >= 0) { /* y leans outward or not at all: single rotation */
        raise_child(base, root, x, s);
        set_balance(xn, yb ? 0 : s);
        set_balance(yn, yb ? 0 : -s);
        *dropped = yb != 0;
        return y;
    }
    /* y leans inward: its inner child z rises two levels */
    size_t z = child_on(yn, -s);
    struct rtm_tnode *zn = at(base, z);
    int zb = balance_of(zn);
    raise_child(base, root, y, -s);
    raise_child(base, root, x, s);
    set_balance(xn, zb == s ? -s : 0);
    set_balance(yn, zb == -s ? s : 0);
    set_balance(zn, 0);
    *dropped = 1;
    return z;
}

void RTM_LOGGED_NAME(rtm__avl_insert)(void *base, size_t *root, size_t node, rtm_tcmp cmp)
{
    RTM_LOGGED_NAME(rtm__tree_link_leaf)(base, root, node, cmp);
    set_balance(at(base, node), 0);
    /* The subtree rooted at child grew by one level. */
    size_t child = node;
    for (size_t p = at(base, node)->parent; p; child = p, p = at(base, p)->parent) {
        struct rtm_tnode *pn = at(base, p);
        int s = pn->left == child ? -1 : 1;
        int b = balance_of(pn) + s;
        if (b == 0) { /* the shorter side caught up: p's height is unchanged */
            set_balance(pn, 0);
            return;
        }
        if (b == 2 || b == -2) { /* the rotation restores p's former height */
            int dropped;
            rebalance(base, root, p, s, &dropped);
            return;
        }
        set_balance(pn, b); /* p grew too */
    }
}

void RTM_LOGGED_NAME(rtm__avl_remove)(void *base, size_t *root, size_t node)
{
    int left;
    size_t p = RTM_LOGGED_NAME(rtm__tree_unlink)(base, root, node, &left);
    /* The subtree on side `left` of p lost one level. */
    while (p) {
        struct rtm_tnode *pn = at(base, p);
        int s = left ? 1 : -1; /* the side that is now heavier */
        int b = balance_of(pn) + s;
        size_t sub = p;
        if (b == 1 || b == -1) { /* p was even: its height is unchanged */
            set_balance(pn, b);
            return;
        }
        if (b == 0) {
            set_balance(pn, 0);
        } else {
            int dropped;
            sub = rebalance(base, root, p, s, &dropped);
            if (!dropped)
                return;
        }
        /* The subtree now rooted at sub lost one level. */
        p = at(base, sub)->parent;
        left = p && at(base, p)->left == sub;
    }
}

#if !RTM_LOGGED /* the check reads only: in the plain copy alone */
static long avl_rank(const void *base, size_t node, long left, long right)
{
    ptrdiff_t b = (ptrdiff_t)at(base, node)->meta;
    if (b < -1 || b > 1 || b != right - left)
        return -1;
    return 1 + (left > right ? left : right);
}

long rtm__avl_check(const void *base, size_t root, rtm_tcmp cmp, size_t max_nodes)
{
    long height;
    return rtm__tree_check_walk(base, root, cmp, max_nodes, avl_rank, &height);
}
#endif /* !RTM_LOGGED */
