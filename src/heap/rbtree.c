/*
 * Red-black trees (Bayer 1972; Guibas and Sedgewick 1978) on offset links,
 * following the classic bottom-up fix-ups (Cormen et al., ch. 13).
 *
 * Rules: every node is red or black, the root is black, a red node has no red
 * child, and every path from a node down to a missing child passes the same
 * number of black nodes. Insertion adds a red leaf and repairs a red-red pair
 * by recolouring upwards, ending with at most two rotations. Removal of a
 * black position leaves one path short of a black node; the fix-up recolours
 * upwards and ends with at most three rotations. Both walk parent links.
 */
#include <stdbool.h>

#include "tree.h"
#include "store.h"

#define TSET(base, lv, v) RTM_SET((const struct rtm_heap *)(base), lv, v)

#define BLACK ((size_t)0)
#define RED   ((size_t)1)

static inline struct rtm_tnode *at(const void *base, size_t off)
{
    return rtm_tnode_at(base, off);
}

/* Missing children count as black. */
static inline bool is_red(const void *base, size_t node)
{
    return node && at(base, node)->meta == RED;
}

/* The child on one side: right if `right`, else left. */
static inline size_t child_on(const struct rtm_tnode *n, bool right)
{
    return right ? n->right : n->left;
}

/* The child of x on side `right` takes x's place. */
static void raise_child(void *base, size_t *root, size_t x, bool right)
{
    if (right)
        RTM_LOGGED_NAME(rtm__tree_rotate_left)(base, root, x);
    else
        RTM_LOGGED_NAME(rtm__tree_rotate_right)(base, root, x);
}

void RTM_LOGGED_NAME(rtm__rb_insert)(void *base, size_t *root, size_t node, rtm_tcmp cmp)
{
    RTM_LOGGED_NAME(rtm__tree_link_leaf)(base, root, node, cmp);
    TSET(base, at(base, node)->meta, RED);
    /* x is red; its parent p may be red too (the only broken rule). */
    size_t x = node, p;
    while ((p = at(base, x)->parent) && is_red(base, p)) {
        size_t g = at(base, p)->parent; /* exists: the root is black */
        bool p_right = at(base, g)->right == p;
        size_t uncle = child_on(at(base, g), !p_right);
        if (is_red(base, uncle)) { /* push g's blackness down; g may now clash */
            TSET(base, at(base, p)->meta, BLACK);
            TSET(base, at(base, uncle)->meta, BLACK);
            TSET(base, at(base, g)->meta, RED);
            x = g;
            continue;
        }
        if (child_on(at(base, p), !p_right) == x) { /* inner grandchild: make it outer */
            raise_child(base, root, p, !p_right);
            p = x;
        }
        TSET(base, at(base, p)->meta, BLACK);
        TSET(base, at(base, g)->meta, RED);
        raise_child(base, root, g, p_right);
        break;
    }
    TSET(base, at(base, *root)->meta, BLACK);
}

void RTM_LOGGED_NAME(rtm__rb_remove)(void *base, size_t *root, size_t node)
{
    int left;
    size_t p = RTM_LOGGED_NAME(rtm__tree_unlink)(base, root, node, &left);
    if (at(base, node)->meta == RED) /* a red position held no black height */
        return;
    size_t x = p ? child_on(at(base, p), !left) : *root;
    /* Paths through x (maybe missing) are one black short. */
    while (p && !is_red(base, x)) {
        struct rtm_tnode *pn = at(base, p);
        bool x_right = !left;
        size_t w = child_on(pn, !x_right); /* exists: its side has black height >= 1 */
        if (is_red(base, w)) {             /* make the sibling black; p turns red */
            TSET(base, at(base, w)->meta, BLACK);
            TSET(base, pn->meta, RED);
            raise_child(base, root, p, !x_right);
            w = child_on(pn, !x_right);
        }
        struct rtm_tnode *wn = at(base, w);
        size_t near = child_on(wn, x_right), far = child_on(wn, !x_right);
        if (!is_red(base, near) && !is_red(base, far)) { /* shorten w's side too, move up */
            TSET(base, wn->meta, RED);
            x = p;
            p = pn->parent;
            left = p && at(base, p)->left == x;
            continue;
        }
        if (!is_red(base, far)) { /* make the far nephew the red one */
            TSET(base, at(base, near)->meta, BLACK);
            TSET(base, wn->meta, RED);
            raise_child(base, root, w, x_right);
            w = near;
            wn = at(base, w);
            far = child_on(wn, !x_right);
        }
        /* w rises over p; the extra black on x's side completes the path. */
        TSET(base, wn->meta, pn->meta);
        TSET(base, pn->meta, BLACK);
        TSET(base, at(base, far)->meta, BLACK);
        raise_child(base, root, p, !x_right);
        return;
    }
    if (x)
        TSET(base, at(base, x)->meta, BLACK);
}

#if !RTM_LOGGED /* the check reads only: in the plain copy alone */
static long rb_rank(const void *base, size_t node, long left, long right)
{
    const struct rtm_tnode *n = at(base, node);
    if ((n->meta != RED && n->meta != BLACK) || left != right)
        return -1;
    if (n->meta == RED && (is_red(base, n->left) || is_red(base, n->right)))
        return -1;
    return left + (n->meta == BLACK); /* black height */
}

long rtm__rb_check(const void *base, size_t root, rtm_tcmp cmp, size_t max_nodes)
{
    long black_height;
    long count = rtm__tree_check_walk(base, root, cmp, max_nodes, rb_rank, &black_height);
    if (count > 0 && at(base, root)->meta != BLACK)
        return -1;
    return count;
}
#endif /* !RTM_LOGGED */
