/*
 * AVL and red-black trees on offset links (src/heap/tree.h), checked against
 * a shadow model: a sorted array of the live nodes' offsets.
 *
 *   tree_test [--seed N]
 *
 * For each kind: random inserts and removals with many duplicate keys, each
 * followed by searches against the shadow and, often, by the full check, both
 * walks and the height bound; the same with the base above the nodes (offsets
 * wrap) and in their middle; relocation by copying; and corrupt trees, which
 * the checks must reject without hanging. The seed is printed; rerun with
 * --seed to replay a failure.
 */
#include "check.h"
#include "../src/heap/tree.h"

#define MAX_LIVE   5000
#define POOL_ITEMS (MAX_LIVE + 64)
#define BIG_OPS    200000ul
#define SMALL_OPS  40000ul

struct item {
    struct rtm_tnode node; /* first: the item's offset is the node's offset */
    size_t key;
};

static struct item pool_a[POOL_ITEMS], pool_b[POOL_ITEMS];
static uint64_t seed = 0x7ee5eed2026ull;
static unsigned long cmp_calls;

struct kind {
    const char *name;
    void (*insert)(void *base, size_t *root, size_t node, rtm_tcmp cmp);
    void (*remove)(void *base, size_t *root, size_t node);
    long (*check)(const void *base, size_t root, rtm_tcmp cmp, size_t max_nodes);
    unsigned (*height_bound)(size_t n);
};

/* Largest h with minimal AVL size N(h) <= n; N(h) = N(h-1) + N(h-2) + 1. This
 * is exactly the bound 1.4405 log2(n + 2) - 0.3277, rounded down. */
static unsigned avl_bound(size_t n)
{
    size_t a = 0, b = 1; /* N(h - 1), N(h) */
    unsigned h = 0;
    while (b <= n) {
        size_t c = a + b + 1;
        a = b;
        b = c;
        h++;
    }
    return h;
}

/* Largest h with h <= 2 log2(n + 1), that is 2^h <= (n + 1)^2. */
static unsigned rb_bound(size_t n)
{
    uint64_t square = (uint64_t)(n + 1) * (n + 1);
    unsigned h = 0;
    while (h < 63 && (UINT64_C(1) << (h + 1)) <= square)
        h++;
    return h;
}

static const struct kind kinds[] = {
    { "avl", rtm__avl_insert, rtm__avl_remove, rtm__avl_check, avl_bound },
    { "rb", rtm__rb_insert, rtm__rb_remove, rtm__rb_check, rb_bound },
};

/* ---- the caller's side: items, order, probes ------------------------------ */

/* An address d bytes from p, by integer arithmetic: it may lie outside any
 * object, as a base may. */
static void *shifted(const void *p, intptr_t d)
{
    return (void *)((uintptr_t)p + (uintptr_t)d);
}

static struct item *item_at(const void *base, size_t off)
{
    return (struct item *)((uintptr_t)base + off);
}

static size_t off_of(const void *base, const struct item *it)
{
    return (size_t)((uintptr_t)it - (uintptr_t)base);
}

/* By key, then by offset (as an unsigned number: a strict total order even
 * when offsets wrap, just not address order). */
static int item_cmp(const void *base, size_t a, size_t b)
{
    cmp_calls++;
    size_t ka = item_at(base, a)->key, kb = item_at(base, b)->key;
    if (ka != kb)
        return ka < kb ? -1 : 1;
    return (a > b) - (a < b);
}

static int key_probe(const void *base, size_t node, const void *key)
{
    size_t k = item_at(base, node)->key, want = *(const size_t *)key;
    return (k > want) - (k < want);
}

struct exact_key {
    size_t key, off;
};

static int exact_probe(const void *base, size_t node, const void *key)
{
    const struct exact_key *want = key;
    size_t k = item_at(base, node)->key;
    if (k != want->key)
        return k < want->key ? -1 : 1;
    return (node > want->off) - (node < want->off);
}

/* ---- the model ------------------------------------------------------------- */

struct env {
    const struct kind *k;
    void *base;
    struct item *items;
    size_t root;
    size_t n;
    size_t sorted[POOL_ITEMS]; /* offsets of live nodes, in tree order */
    size_t free_idx[POOL_ITEMS];
    size_t nfree;
    unsigned max_height_full; /* largest height seen with MAX_LIVE nodes */
};

static struct env env_storage;

static void env_init(struct env *e, const struct kind *k, struct item *items, void *base)
{
    e->k = k;
    e->items = items;
    e->base = base;
    e->root = 0;
    e->n = 0;
    e->nfree = POOL_ITEMS;
    for (size_t i = 0; i < POOL_ITEMS; i++)
        e->free_idx[i] = POOL_ITEMS - 1 - i;
    e->max_height_full = 0;
}

/* Index in e->sorted of the first live node not before off. */
static size_t shadow_pos(const struct env *e, size_t off)
{
    size_t lo = 0, hi = e->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (item_cmp(e->base, e->sorted[mid], off) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Index of the first live node with key > k (or >= k if !strict). */
static size_t shadow_key_pos(const struct env *e, size_t k, bool strict)
{
    size_t lo = 0, hi = e->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        size_t mk = item_at(e->base, e->sorted[mid])->key;
        if (mk < k || (strict && mk == k))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void op_insert(struct env *e, size_t key)
{
    size_t idx = e->free_idx[--e->nfree];
    struct item *it = &e->items[idx];
    it->key = key;
    memset(&it->node, 0xa5, sizeof(it->node)); /* insert must not rely on old contents */
    size_t off = off_of(e->base, it);
    size_t pos = shadow_pos(e, off);
    cmp_calls = 0;
    e->k->insert(e->base, &e->root, off, item_cmp);
    CHECK(cmp_calls <= e->k->height_bound(e->n + 1)); /* one root-to-leaf path */
    memmove(&e->sorted[pos + 1], &e->sorted[pos], (e->n - pos) * sizeof(size_t));
    e->sorted[pos] = off;
    e->n++;
}

static void op_remove(struct env *e, size_t pos)
{
    size_t off = e->sorted[pos];
    cmp_calls = 0;
    e->k->remove(e->base, &e->root, off);
    CHECK_EQ(cmp_calls, 0);
    memmove(&e->sorted[pos], &e->sorted[pos + 1], (e->n - pos - 1) * sizeof(size_t));
    e->n--;
    e->free_idx[e->nfree++] = (size_t)(item_at(e->base, off) - e->items);
}

/* Searches for a random key (lower bound and floor) and for one live node. */
static bool probe_ok(struct env *e, uint64_t *rng, size_t key_span)
{
    size_t k = (size_t)rng_next(rng) % (key_span + 2);
    size_t i = shadow_key_pos(e, k, false), j = shadow_key_pos(e, k, true);
    size_t want_lb = i < e->n ? e->sorted[i] : 0, want_floor = j ? e->sorted[j - 1] : 0;
    bool ok = rtm__tree_lower_bound(e->base, e->root, key_probe, &k) == want_lb &&
              rtm__tree_floor(e->base, e->root, key_probe, &k) == want_floor;
    if (e->n) {
        size_t off = e->sorted[rng_next(rng) % e->n];
        struct exact_key x = { item_at(e->base, off)->key, off };
        ok = ok && rtm__tree_lower_bound(e->base, e->root, exact_probe, &x) == off &&
             rtm__tree_floor(e->base, e->root, exact_probe, &x) == off;
    }
    CHECK(ok);
    return ok;
}

static unsigned height(const void *base, size_t node) /* only on a checked tree */
{
    if (!node)
        return 0;
    unsigned l = height(base, rtm_tnode_at(base, node)->left);
    unsigned r = height(base, rtm_tnode_at(base, node)->right);
    return 1 + (l > r ? l : r);
}

/* The full check, both walks against the shadow, the height bound. */
static bool verify(struct env *e)
{
    long count = e->k->check(e->base, e->root, item_cmp, e->n);
    CHECK_EQ(count, e->n);
    if (count != (long)e->n)
        return false;
    if (e->n)
        CHECK_EQ(e->k->check(e->base, e->root, item_cmp, e->n - 1), -1);
    size_t o = rtm__tree_first(e->base, e->root);
    for (size_t i = 0; i < e->n; i++, o = rtm__tree_next(e->base, o))
        if (o != e->sorted[i]) {
            CHECK_EQ(o, e->sorted[i]);
            return false;
        }
    CHECK_EQ(o, 0);
    o = rtm__tree_last(e->base, e->root);
    for (size_t i = e->n; i-- > 0; o = rtm__tree_prev(e->base, o))
        if (o != e->sorted[i]) {
            CHECK_EQ(o, e->sorted[i]);
            return false;
        }
    CHECK_EQ(o, 0);
    unsigned h = height(e->base, e->root);
    CHECK(h <= e->k->height_bound(e->n));
    if (e->n == MAX_LIVE && h > e->max_height_full)
        e->max_height_full = h;
    return h <= e->k->height_bound(e->n);
}

/* Random inserts and removals: the live count climbs to MAX_LIVE and falls to
 * 0 in turn; each cycle draws keys a different way. */
static bool run_random(struct env *e, uint64_t rng, unsigned long ops)
{
    bool growing = true;
    unsigned cycle = 0;
    size_t counter = 0, key_span = 63;
    for (unsigned long op = 0; op < ops; op++) {
        bool insert = e->n == 0 || (e->n < MAX_LIVE && rng_next(&rng) % 4 < (growing ? 3u : 1u));
        if (insert) {
            size_t key;
            switch (cycle % 4) {
            case 0: /* many equal keys */
                key = (size_t)rng_next(&rng) % 64;
                key_span = 63;
                break;
            case 1:
                key = (size_t)rng_next(&rng);
                key_span = SIZE_MAX - 2;
                break;
            case 2: /* ascending */
                key = counter++ / 3;
                key_span = counter / 3;
                break;
            default:
                key = (size_t)(1u << 20) - counter++ / 2;
                key_span = 1u << 20;
                break;
            }
            op_insert(e, key);
        } else {
            op_remove(e, (size_t)(rng_next(&rng) % e->n));
        }
        if (!probe_ok(e, &rng, key_span))
            return false;
        bool turn = (growing && e->n == MAX_LIVE) || (!growing && e->n == 0);
        if ((e->n < 40 || op % 61 == 0 || turn) && !verify(e))
            return false;
        if (turn) {
            growing = !growing;
            if (growing)
                cycle++;
        }
    }
    return true;
}

/* Empties the tree, removing in random order and checking now and then. */
static bool drain(struct env *e, uint64_t *rng)
{
    while (e->n) {
        op_remove(e, (size_t)(rng_next(rng) % e->n));
        if ((e->n % 97 == 0 || e->n < 20) && !verify(e))
            return false;
    }
    CHECK_EQ(e->root, 0);
    return true;
}

/* ---- tests ----------------------------------------------------------------- */

/* Runs a check on each kind of tree, the kind as its context. */
static void each_kind(void (*check)(const struct kind *k))
{
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        test_context = kinds[i].name;
        check(&kinds[i]);
    }
}

static void empty(const struct kind *k)
{
    struct env *e = &env_storage;
    env_init(e, k, pool_a, shifted(pool_a, -64));
    size_t key = 5;
    CHECK_EQ(k->check(e->base, 0, item_cmp, 0), 0);
    CHECK_EQ(rtm__tree_first(e->base, 0), 0);
    CHECK_EQ(rtm__tree_last(e->base, 0), 0);
    CHECK_EQ(rtm__tree_lower_bound(e->base, 0, key_probe, &key), 0);
    CHECK_EQ(rtm__tree_floor(e->base, 0, key_probe, &key), 0);
    op_insert(e, 5);
    CHECK(verify(e));
    CHECK_EQ(rtm_tnode_at(e->base, e->root)->parent, 0);
    op_remove(e, 0);
    CHECK_EQ(e->root, 0);
}

TEST_CASE("an empty tree walks and searches to nothing, and one node is a root")
{
    each_kind(empty);
}

/* Base below the nodes (ordinary), one cycle per key mode and more. */
static void random_ops(const struct kind *k)
{
    struct env *e = &env_storage;
    env_init(e, k, pool_a, shifted(pool_a, -64));
    uint64_t rng = seed ^ 0x1001;
    bool ok = run_random(e, rng, BIG_OPS) && drain(e, &rng);
    CHECK(ok);
    printf("%s: %lu random ops up to %d nodes: height %u at %d nodes (bound %u)\n", k->name,
           BIG_OPS, MAX_LIVE, e->max_height_full, MAX_LIVE, k->height_bound(MAX_LIVE));
}

TEST_CASE("random inserts and removals match the shadow within the height bound")
{
    each_kind(random_ops);
}

/* In order of keys, all distinct: the classic worst input for plain trees. */
static void sorted(const struct kind *k)
{
    struct env *e = &env_storage;
    env_init(e, k, pool_a, shifted(pool_a, -64));
    for (size_t i = 0; i < MAX_LIVE; i++)
        op_insert(e, i);
    CHECK(verify(e));
    unsigned up = height(e->base, e->root);
    while (e->n)
        op_remove(e, 0);
    for (size_t i = 0; i < MAX_LIVE; i++)
        op_insert(e, MAX_LIVE - i);
    CHECK(verify(e));
    unsigned down = height(e->base, e->root);
    while (e->n)
        op_remove(e, e->n - 1);
    CHECK(verify(e));
    printf("%s: sorted inserts of %d keys: height %u ascending, %u descending\n", k->name, MAX_LIVE,
           up, down);
}

TEST_CASE("sorted inserts stay within the height bound")
{
    each_kind(sorted);
}

/* Offsets that wrap: base far above every node, and base amid the nodes (some
 * offsets "negative", some positive). Neither base is ever dereferenced. */
static void wrapped_bases(const struct kind *k)
{
    struct env *e = &env_storage;
    char *above = shifted(pool_a, (intptr_t)1 << (sizeof(intptr_t) == 8 ? 40 : 30));
    char *amid = (char *)&pool_a[POOL_ITEMS / 2].key; /* inside an item, never a node start */
    char *bases[] = { above, amid };
    for (unsigned i = 0; i < 2; i++) {
        env_init(e, k, pool_a, bases[i]);
        uint64_t rng = seed ^ (0x2002 + i);
        CHECK(off_of(e->base, &pool_a[0]) > SIZE_MAX / 2 + 1); /* really below the base */
        bool ok = run_random(e, rng, SMALL_OPS) && drain(e, &rng);
        CHECK(ok);
    }
}

TEST_CASE("offsets that wrap around the base work")
{
    each_kind(wrapped_bases);
}

/* A tree copied to another address works with the base moved alike, and no
 * longer depends on the original memory. */
static void relocation(const struct kind *k)
{
    struct env *e = &env_storage;
    env_init(e, k, pool_a, (char *)&pool_a[7].key);
    uint64_t rng = seed ^ 0x3003;
    for (size_t i = 0; i < 3000; i++)
        op_insert(e, (size_t)rng_next(&rng) % 500);
    REQUIRE(verify(e), );
    memcpy(pool_b, pool_a, sizeof(pool_a));
    memset(pool_a, 0xff, sizeof(pool_a));
    e->items = pool_b;
    e->base = (char *)&pool_b[7].key; /* the same place relative to the nodes */
    REQUIRE(verify(e), );
    for (int i = 0; i < 5000; i++) {
        if (rng_next(&rng) % 2 && e->n < MAX_LIVE)
            op_insert(e, (size_t)rng_next(&rng) % 500);
        else if (e->n)
            op_remove(e, (size_t)(rng_next(&rng) % e->n));
        REQUIRE(probe_ok(e, &rng, 500), );
    }
    REQUIRE(verify(e), );
    CHECK(drain(e, &rng));
}

TEST_CASE("a tree copied elsewhere works with its base moved alike")
{
    each_kind(relocation);
}

/* Builds a 200-node tree in pool_a, checked, and its copy in pool_b: each
 * corruption below is made on it, checked, and undone by restoring the
 * copy. NULL if the tree does not verify. */
static struct env *corrupt_setup(const struct kind *k)
{
    struct env *e = &env_storage;
    env_init(e, k, pool_a, shifted(pool_a, -64));
    uint64_t rng = seed ^ 0x4004;
    for (size_t i = 0; i < 200; i++)
        op_insert(e, (size_t)rng_next(&rng) % 1000);
    REQUIRE(verify(e), NULL);
    memcpy(pool_b, pool_a, sizeof(pool_a));
    return e;
}

/* One link or word changed at a time: the check refuses each, and passes
 * once the copy is restored. */
static void corrupt_links(const struct kind *k)
{
    struct env *e = corrupt_setup(k);
    if (!e)
        return;
    void *base = e->base;
    size_t root = e->root, n = e->n;
    size_t first = e->sorted[0], last = e->sorted[n - 1];
    struct rtm_tnode *rn = rtm_tnode_at(base, root);
    /* a node with two children, below the root */
    size_t inner = rn->left;
    while (!(rtm_tnode_at(base, inner)->left && rtm_tnode_at(base, inner)->right))
        inner = rtm_tnode_at(base, inner)->right;
    struct rtm_tnode *in = rtm_tnode_at(base, inner);
    size_t leaf = in->left; /* any node of the inner's subtree, then its leftmost leaf */
    while (rtm_tnode_at(base, leaf)->left || rtm_tnode_at(base, leaf)->right)
        leaf = rtm_tnode_at(base, leaf)->left ? rtm_tnode_at(base, leaf)->left
                                              : rtm_tnode_at(base, leaf)->right;
    struct rtm_tnode *ln = rtm_tnode_at(base, leaf);

    struct {
        const char *what;
        size_t *word;
        size_t value;
    } cases[] = {
        { "leaf links back to the root", &ln->left, root },
        { "leaf links to itself", &ln->right, leaf },
        { "leaf links to its grandparent", &ln->left, rtm_tnode_at(base, ln->parent)->parent },
        { "both children the same", &in->right, in->left },
        { "parent link names another node", &ln->parent, root },
        { "root has a parent", &rn->parent, leaf },
        { "child link skips levels", &rn->left, leaf },
        { "misaligned child", &ln->left, leaf + 4 },
        { "meta out of range", &ln->meta, 7 },
        { "meta flipped at a leaf", &ln->meta, k->check == rtm__avl_check ? 1 : !ln->meta },
        { "meta flipped at the root", &rn->meta,
          k->check == rtm__avl_check ? (rn->meta ? 0 : 1) : 1 },
        { "order: first node's key raised", &item_at(base, first)->key,
          item_at(base, last)->key + 1 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        test_context = cases[i].what;
        *cases[i].word = cases[i].value;
        CHECK_EQ(k->check(base, root, item_cmp, n + 1000), -1);
        memcpy(pool_a, pool_b, sizeof(pool_a));
        CHECK_EQ(k->check(base, root, item_cmp, n), n);
    }
    test_context = k->name;
}

TEST_CASE("a corrupt link or word anywhere is refused")
{
    each_kind(corrupt_links);
}

/* A two-node cycle made the root, both of its links consistent but one. */
static void corrupt_cycle(const struct kind *k)
{
    struct env *e = corrupt_setup(k);
    if (!e)
        return;
    void *base = e->base;
    size_t a = e->sorted[10], b = e->sorted[20];
    *rtm_tnode_at(base, a) = (struct rtm_tnode){ .left = b, .right = 0, .parent = 0, .meta = 0 };
    *rtm_tnode_at(base, b) = (struct rtm_tnode){ .left = a, .right = 0, .parent = a, .meta = 0 };
    CHECK_EQ(k->check(base, a, item_cmp, SIZE_MAX), -1);
    memcpy(pool_a, pool_b, sizeof(pool_a));
}

TEST_CASE("a two-node cycle is refused")
{
    each_kind(corrupt_cycle);
}

/* A well-formed ordered chain deeper than any balanced tree: refused at
 * RTM_TREE_MAX_HEIGHT levels, without walking past its per-level state. */
static void corrupt_chain(const struct kind *k)
{
    struct env *e = corrupt_setup(k);
    if (!e)
        return;
    void *base = e->base;
    size_t root = e->root, n = e->n;
    for (size_t i = 0; i < 200; i++) {
        size_t o = e->sorted[i];
        item_at(base, o)->key = i;
        *rtm_tnode_at(base, o) = (struct rtm_tnode){ .left = 0,
                                                     .right = i + 1 < 200 ? e->sorted[i + 1] : 0,
                                                     .parent = i ? e->sorted[i - 1] : 0,
                                                     .meta = 0 };
    }
    CHECK_EQ(k->check(base, e->sorted[0], item_cmp, SIZE_MAX), -1);
    memcpy(pool_a, pool_b, sizeof(pool_a));
    CHECK_EQ(k->check(base, root, item_cmp, SIZE_MAX), n);
}

TEST_CASE("an ordered chain deeper than any balanced tree is refused")
{
    each_kind(corrupt_chain);
}

/* --seed N replaces the seed; the cases take no argument. */
int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            seed = strtoull(argv[++i], NULL, 0);
        } else {
            fprintf(stderr, "usage: tree_test [--seed N]\n");
            return 2;
        }
    }
    printf("tree_test: seed %#llx (replay with --seed %#llx)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    return test_main(1, argv, "tree_test");
}
