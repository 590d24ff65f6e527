/*
 * zsheap: size classes packed into zspages of 1 to 4 contiguous pages, each
 * zspage given back when its last object is freed (rtmem/zsheap.h).
 *
 * A region is [descriptor][page descriptors: 64 bytes each][pages]. A
 * page's descriptor is one of:
 *  - ZS_HEAD: the first page of a zspage of `pages` pages holding `cap`
 *    objects of class `cls`; `map` has a bit set per free object, `used`
 *    counts the live ones, next/prev link it in its class's list of
 *    zspages with a free object (while used < cap);
 *  - ZS_TAIL: a later page of a zspage, `pos` pages after its first;
 *  - ZS_RUN: the first page of a run of free pages (`page` of them),
 *    linked (next, prev) in its region's list of runs of 1, 2, 3, or 4
 *    and more pages;
 *  - ZS_RUN_END: the last page of a run of two or more, `page` its first
 *    page's descriptor;
 *  - anything else: a page inside a run. Pages at or past the region's
 *    bump index were never handed out: their descriptors are never read.
 * A zspage given back joins the runs before and after it, and a run that
 * reaches the bump index lowers it: a region whose zspages all went back
 * is as it was fresh. A head's and a run's descriptor carry a keyed tag of
 * their offset, state, class and length. Every link is an offset from the
 * heap base, so a heap image is valid at any address.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "rtmem/zsheap.h"
#include "kind.h"
#include "xvheap_layout.h"
/* Every call writes at most about 100 words (a moving realloc: a zspage
 * made from a run cut, its copy's notes, a zspage given back), and its log
 * holds 192 (undo.c). */
#define RTM_UNDO_FITS 1
#include "store.h"

#define PAGE       RTM_ZSHEAP_PAGE_SIZE
#define PAGE_SHIFT 12u
#define MAX_RUN    RTM_ZSHEAP_MAX_ZSPAGE
#define MIN_CLASS  RTM_ZSHEAP_MIN_CLASS
#define STEP       RTM_ZSHEAP_CLASS_STEP
#define CLASSES    ((RTM_ZSHEAP_MAX_REQUEST - MIN_CLASS) / STEP + 1)
#define MAX_OBJS   128u
#define DESC_SHIFT 6u
#define SLACK      ((size_t)16) /* bytes after a region's last page */

enum { ZS_FREE = 0, ZS_HEAD = 0x5a, ZS_TAIL = 0xa5, ZS_RUN = 0x3c, ZS_RUN_END = 0xc3 };

struct zs_desc {
    _Alignas(64) uint64_t map[MAX_OBJS / 64];
    size_t next, prev; /* HEAD: its class list; RUN: its region's list of runs */
    size_t page;       /* HEAD: its first page's offset; RUN: its pages; RUN_END: its RUN */
    uint32_t tag;
    uint16_t used, cap;
    uint8_t cls, pages, state, pos;
};

struct zs_class {
    uint32_t recip; /* ceil(2^32 / size): an offset in a zspage over size, exactly */
    uint16_t size, cap;
    uint8_t pages;
};

struct zs_region {
    struct rtm_pool_link link; /* the next region; the memory given */
    size_t descs;              /* offset of page 0's descriptor */
    size_t first;              /* offset of page 0 */
    size_t pages;              /* in the region */
    size_t bump;               /* pages [bump, pages) never handed out */
    size_t runs[MAX_RUN + 1];  /* free runs: 1, 2, 3 pages, 4 or more (0: none) */
};

struct rtm_zsheap {
    struct rtm_heap base;
    size_t usable_bytes, used_bytes, peak_used_bytes, live_blocks, overhead_bytes, pool_count;
    size_t held_pages, peak_held, zspages, made, freed;
    _Alignas(8) uint64_t page_key; /* keys the descriptor tags */
    /* whole words, aligned (a logged store must be: undo.h), on 32-bit too */
    _Alignas(8) uint64_t partial_map[(CLASSES + 63) / 64];
    size_t partial[CLASSES]; /* the first zspage of each class with a free object, 0 none */
    struct zs_class cls[CLASSES];
    /* A heap on a page provider (rtm_zsheap_create_on): its callbacks, else
     * NULL. region0 then covers the provider's range, every page's
     * descriptor kept (ZS_FREE while the provider has the page), and every
     * zspage is one page. */
    void *(*ext_get)(void *);
    void (*ext_put)(void *, void *);
    void *ext_ctx;
    struct zs_region region0;
};

_Static_assert(sizeof(struct zs_desc) == RTM_ZSHEAP_PAGE_DESC, "a descriptor is 64 bytes");
_Static_assert(sizeof(struct rtm_zsheap) + _Alignof(struct rtm_zsheap) <= RTM_ZSHEAP_CONTROL_BYTES,
               "RTM_ZSHEAP_CONTROL_BYTES covers the control structure");
_Static_assert(sizeof(struct zs_region) + 64 + SLACK <= 192,
               "RTM_ZSHEAP_REGION_OVERHEAD covers a region's descriptor");
_Static_assert(CLASSES <= 256, "a class index fits a byte");
_Static_assert(offsetof(struct rtm_zsheap, partial_map) % 8 == 0,
               "the class bitmap's words are aligned: logged stores are");

static inline char *at_off(const struct rtm_zsheap *t, size_t off)
{
    return (char *)(uintptr_t)((uintptr_t)t + off);
}

static inline size_t off_of(const struct rtm_zsheap *t, const void *p)
{
    return (size_t)((uintptr_t)p - (uintptr_t)t);
}

static inline struct zs_desc *desc_at(const struct rtm_zsheap *t, size_t off)
{
    return (struct zs_desc *)(void *)at_off(t, off);
}

static inline struct zs_region *region_at(const struct rtm_zsheap *t, size_t off)
{
    return (struct zs_region *)(void *)at_off(t, off);
}

/* ---- classes ------------------------------------------------------------------ */

/* The class of a request (at most RTM_ZSHEAP_MAX_REQUEST). */
static inline unsigned class_of(size_t n)
{
    return n <= MIN_CLASS ? 0 : (unsigned)((n - MIN_CLASS + STEP - 1) / STEP);
}

static inline size_t class_size(unsigned c)
{
    return MIN_CLASS + STEP * c;
}

/* The zspage of class c: the pages (1 to MAX_RUN) whose waste is the least
 * share of the zspage with at most MAX_OBJS objects, the fewest on a tie;
 * its objects in *cap. */
static __attribute__((unused)) unsigned class_pages(unsigned c, unsigned *cap)
{
    size_t s = class_size(c), best_k = 0, best_w = 0, best_n = 0;
    for (size_t k = 1; k <= MAX_RUN; k++) {
        size_t n = k * PAGE / s;
        if (n > MAX_OBJS)
            break;
        size_t w = k * PAGE - n * s;
        if (best_k == 0 || w * best_k < best_w * k) {
            best_k = k;
            best_w = w;
            best_n = n;
        }
    }
    /* one page holds at most 4096 / 32 = MAX_OBJS objects: k = 1 always fits */
    RTM_ASSERT(best_k != 0);
    *cap = (unsigned)best_n;
    return (unsigned)best_k;
}

/* Objects of class c in a zspage of k pages (a short one, when runs of the
 * class's length are gone). */
static inline unsigned cap_of(const struct rtm_zsheap *t, unsigned c, unsigned k)
{
    if (k == t->cls[c].pages)
        return t->cls[c].cap;
    size_t n = k * PAGE / class_size(c);
    return (unsigned)(n < MAX_OBJS ? n : MAX_OBJS);
}

#if !RTM_LOGGED
int rtm_zsheap_class_of(size_t size, struct rtm_zsheap_class *out)
{
    if (!out)
        return -EINVAL;
    if (size > RTM_ZSHEAP_MAX_REQUEST)
        return -E2BIG;
    unsigned c = class_of(size), cap;
    unsigned k = class_pages(c, &cap);
    *out = (struct rtm_zsheap_class){
        .size = class_size(c), .pages = k, .objects = cap, .waste = k * PAGE - cap * class_size(c)
    };
    return 0;
}
#endif

/* ---- descriptors --------------------------------------------------------------- */

/* Keyed over a descriptor's offset and the fields fixed while it is a
 * zspage's or a run's: state, class, capacity and length, first page. */
static inline uint32_t desc_tag(const struct rtm_zsheap *t, size_t off, unsigned state,
                                unsigned cls, size_t pages, size_t page)
{
    uint64_t x = ((uint64_t)off ^ t->page_key) + ((uint64_t)state << 56 | (uint64_t)cls << 48) +
                 (uint64_t)pages + (uint64_t)page * 0xff51afd7ed558ccdull;
    return (uint32_t)((x * 0x9e3779b97f4a7c15ull) >> 32) | 1u;
}

static inline bool head_ok(const struct rtm_zsheap *t, size_t off, const struct zs_desc *d)
{
    return d->state == ZS_HEAD &&
           d->tag == desc_tag(t, off, ZS_HEAD, d->cls, (size_t)d->cap << 8 | d->pages, d->page);
}

static inline int popcount_map(const struct zs_desc *d)
{
    int n = 0;
    for (unsigned w = 0; w < MAX_OBJS / 64; w++)
        n += __builtin_popcountll(d->map[w]);
    return n;
}

/* Hardened: a head whose tag holds, its counts within its capacity and its
 * bitmap saying as many objects free as its count says (the fields that
 * change with every call, which the tag cannot cover). */
static inline bool head_sound(const struct rtm_zsheap *t, size_t off, const struct zs_desc *d)
{
    return head_ok(t, off, d) && d->cap <= MAX_OBJS && d->used <= d->cap &&
           popcount_map(d) == d->cap - d->used;
}

static inline bool run_tag_ok(const struct rtm_zsheap *t, size_t off, const struct zs_desc *d)
{
    return d->state == ZS_RUN && d->tag == desc_tag(t, off, ZS_RUN, 0, d->page, 0);
}

/* Reports damage an operation found: out of line, cold. */
static __attribute__((noinline, cold)) void damaged(struct rtm_zsheap *t, const void *block,
                                                    size_t where, const char *what)
{
    rtm__heap_corrupt(&t->base, block, at_off(t, where), what);
}

/* The region whose pages include offset y (handed out: below its bump), or
 * NULL; the page's index in *i. O(regions). */
static inline struct zs_region *region_of(const struct rtm_zsheap *t, size_t y, size_t *i)
{
    for (struct zs_region *r = (struct zs_region *)&t->region0;; r = region_at(t, r->link.next)) {
        size_t k = (y - r->first) >> PAGE_SHIFT;
        if (y - r->first < r->pages << PAGE_SHIFT) {
            if (k >= r->bump)
                return NULL;
            *i = k;
            return r;
        }
        if (r->link.next == 0)
            return NULL;
    }
}

static inline size_t desc_off(const struct zs_region *r, size_t i)
{
    return r->descs + (i << DESC_SHIFT);
}

/* Whether off is the descriptor of a page some region has handed out
 * (below its bump). Reads the regions only. O(regions). */
static bool handed_out(const struct rtm_zsheap *t, size_t off)
{
    for (const struct zs_region *r = &t->region0;; r = region_at(t, r->link.next)) {
        if (off - r->descs < r->bump << DESC_SHIFT)
            return (off - r->descs) % RTM_ZSHEAP_PAGE_DESC == 0;
        if (r->link.next == 0)
            return false;
    }
}

/* ---- class lists ------------------------------------------------------------ */

static inline void partial_set(struct rtm_zsheap *t, unsigned c, bool on)
{
    uint64_t w = t->partial_map[c / 64], bit = (uint64_t)1 << (c % 64);
    RTM_SET(&t->base, t->partial_map[c / 64], on ? w | bit : w & ~bit);
}

/* Puts zspage d (at off) first in its class's list. Hardened, the old
 * first's back link is checked before it is written: false, nothing
 * written, when it does not hold. */
static bool list_push(struct rtm_zsheap *t, size_t off, struct zs_desc *d, bool hard)
{
    unsigned c = d->cls;
    size_t head = t->partial[c];
    if (head) {
        /* placed before it is read, then read */
        if (hard && (!handed_out(t, head) || !head_ok(t, head, desc_at(t, head)) ||
                     desc_at(t, head)->prev != 0 || desc_at(t, head)->cls != c)) {
            damaged(t, NULL, head, "class list");
            return false;
        }
        RTM_SET(&t->base, desc_at(t, head)->prev, off);
    } else {
        partial_set(t, c, true);
    }
    RTM_SET(&t->base, d->next, head);
    RTM_SET(&t->base, d->prev, (size_t)0);
    RTM_SET(&t->base, t->partial[c], off);
    return true;
}

/* Whether zspage d's neighbours in its class list are zspages of the heap
 * that link back to it (read only after their offsets are placed). */
static bool list_links_ok(const struct rtm_zsheap *t, size_t off, const struct zs_desc *d)
{
    size_t n = d->next, p = d->prev;
    bool pok = p == 0
                   ? t->partial[d->cls] == off
                   : handed_out(t, p) && head_ok(t, p, desc_at(t, p)) && desc_at(t, p)->next == off;
    bool nok =
        n == 0 || (handed_out(t, n) && head_ok(t, n, desc_at(t, n)) && desc_at(t, n)->prev == off);
    return pok && nok;
}

/* Takes zspage d out of its class list (links checked by the caller). */
static void list_remove(struct rtm_zsheap *t, size_t off, struct zs_desc *d)
{
    RTM_ASSERT(d->prev != 0 || t->partial[d->cls] == off);
    (void)off;
    size_t n = d->next, p = d->prev;
    if (p)
        RTM_SET(&t->base, desc_at(t, p)->next, n);
    else
        RTM_SET(&t->base, t->partial[d->cls], n);
    if (n)
        RTM_SET(&t->base, desc_at(t, n)->prev, p);
    else if (p == 0)
        partial_set(t, d->cls, false);
}

/* ---- runs of pages ------------------------------------------------------------ */

/* A run of len free pages is in list min(len, MAX_RUN) of its region. */
static inline unsigned run_list(size_t len)
{
    return len < MAX_RUN ? (unsigned)len : MAX_RUN;
}

/* Whether off is the descriptor of a page r has handed out. */
static inline bool in_region(const struct zs_region *r, size_t off)
{
    return off - r->descs < r->bump << DESC_SHIFT && (off - r->descs) % RTM_ZSHEAP_PAGE_DESC == 0;
}

static inline size_t index_of(const struct zs_region *r, size_t off)
{
    return (off - r->descs) >> DESC_SHIFT;
}

/* Whether the run whose first page's descriptor is off (in r) holds: its
 * tag, its length inside the pages handed out, and the links around it. */
static bool run_ok(const struct rtm_zsheap *t, const struct zs_region *r, size_t off)
{
    if (!in_region(r, off))
        return false;
    const struct zs_desc *d = desc_at(t, off);
    if (!run_tag_ok(t, off, d) || d->page == 0 || d->page > r->bump - index_of(r, off))
        return false;
    size_t n = d->next, p = d->prev;
    bool pok =
        p == 0 ? r->runs[run_list(d->page)] == off
               : in_region(r, p) && run_tag_ok(t, p, desc_at(t, p)) && desc_at(t, p)->next == off;
    bool nok = n == 0 ||
               (in_region(r, n) && run_tag_ok(t, n, desc_at(t, n)) && desc_at(t, n)->prev == off);
    return pok && nok;
}

/* Whether run_add may put a run first in list l of r: the list is empty,
 * or its first run holds (tag, no back link), or is one of the runs a or b
 * that the caller takes out first (their links checked with them). */
static bool list_head_ok(const struct rtm_zsheap *t, const struct zs_region *r, unsigned l,
                         size_t a, size_t b)
{
    size_t head = r->runs[l];
    return head == 0 || head == a || head == b ||
           (in_region(r, head) && run_tag_ok(t, head, desc_at(t, head)) &&
            desc_at(t, head)->prev == 0);
}

/* Makes pages [i, i + len) of r a run, first in its list. */
static void run_add(struct rtm_zsheap *t, struct zs_region *r, size_t i, size_t len)
{
    size_t off = desc_off(r, i);
    struct zs_desc *d = desc_at(t, off);
    unsigned l = run_list(len);
    size_t head = r->runs[l];
    RTM_SET(&t->base, d->state, (uint8_t)ZS_RUN);
    RTM_SET(&t->base, d->page, len);
    RTM_SET(&t->base, d->tag, desc_tag(t, off, ZS_RUN, 0, len, 0));
    RTM_SET(&t->base, d->next, head);
    RTM_SET(&t->base, d->prev, (size_t)0);
    if (head)
        RTM_SET(&t->base, desc_at(t, head)->prev, off);
    RTM_SET(&t->base, r->runs[l], off);
    if (len > 1) { /* its last page says where it starts */
        struct zs_desc *e = desc_at(t, desc_off(r, i + len - 1));
        RTM_SET(&t->base, e->state, (uint8_t)ZS_RUN_END);
        RTM_SET(&t->base, e->page, off);
    }
}

/* Takes the run at off (in r) out of its list. */
static void run_remove(struct rtm_zsheap *t, struct zs_region *r, size_t off)
{
    struct zs_desc *d = desc_at(t, off);
    size_t n = d->next, p = d->prev;
    if (p)
        RTM_SET(&t->base, desc_at(t, p)->next, n);
    else
        RTM_SET(&t->base, r->runs[run_list(d->page)], n);
    if (n)
        RTM_SET(&t->base, desc_at(t, n)->prev, p);
    RTM_SET(&t->base, d->state, (uint8_t)ZS_FREE);
}

/* What giving pages [i, i + k) of r back joins: the run that ends right
 * before (its first page's descriptor in *before, else 0) and the one that
 * starts right after (*after). Hardened, a neighbour that says it is a run
 * and does not hold is damage: -EFAULT, its descriptor in *where. */
static int run_neighbours(const struct rtm_zsheap *t, const struct zs_region *r, size_t i, size_t k,
                          bool hard, size_t *before, size_t *after, size_t *where)
{
    *before = *after = 0;
    if (i + k < r->bump) {
        size_t off = desc_off(r, i + k);
        if (desc_at(t, off)->state == ZS_RUN) {
            if (hard && !run_ok(t, r, off)) {
                *where = off;
                return -EFAULT;
            }
            *after = off;
        }
    }
    if (i > 0) {
        size_t off = desc_off(r, i - 1);
        const struct zs_desc *e = desc_at(t, off);
        size_t head = e->state == ZS_RUN ? off : e->state == ZS_RUN_END ? e->page : 0;
        if (head) {
            /* a run's last page: its first page's run ends at i */
            if (hard && (!run_ok(t, r, head) || index_of(r, head) + desc_at(t, head)->page != i)) {
                *where = off;
                return -EFAULT;
            }
            *before = head;
        }
    }
    /* the list the joined run goes to: its first run's back link is
     * written (unless that run is one of those joined, checked above) */
    size_t first = *before ? index_of(r, *before) : i;
    size_t len = i + k - first + (*after ? desc_at(t, *after)->page : 0);
    if (hard && first + len != r->bump && !list_head_ok(t, r, run_list(len), *before, *after)) {
        *where = r->runs[run_list(len)];
        return -EFAULT;
    }
    return 0;
}

/* Gives pages [i, i + k) of r back, joined with the runs run_neighbours
 * found; a run that reaches the bump index lowers it instead: a region
 * whose every zspage went back is as it was fresh. */
static void run_give(struct rtm_zsheap *t, struct zs_region *r, size_t i, size_t k, size_t before,
                     size_t after)
{
    size_t len = k;
    if (after) {
        len += desc_at(t, after)->page;
        run_remove(t, r, after);
    }
    if (before) {
        size_t h = index_of(r, before);
        len += i - h;
        i = h;
        run_remove(t, r, before);
    }
    if (i + len == r->bump)
        RTM_SET(&t->base, r->bump, i);
    else
        run_add(t, r, i, len);
}

/* The most pages, up to k, that run_take can give from r now: O(1). */
static inline unsigned run_most(const struct zs_region *r, unsigned k)
{
    size_t room = r->pages - r->bump;
    if (room >= k)
        return k;
    for (unsigned l = MAX_RUN; l > room; l--)
        if (r->runs[l])
            return l < k ? l : k;
    return (unsigned)room;
}

/* k contiguous pages of r: a run of exactly k pages, a longer run cut (its
 * rest a run again), or pages never handed out. SIZE_MAX when none;
 * hardened, a run whose descriptor or links do not hold is reported and
 * not taken (*bad set). */
static size_t run_take(struct rtm_zsheap *t, struct zs_region *r, unsigned k, bool hard, bool *bad)
{
    for (unsigned l = k; l <= MAX_RUN; l++) {
        size_t off = r->runs[l];
        if (off == 0)
            continue;
        if (hard && !run_ok(t, r, off)) {
            damaged(t, NULL, off, "run of free pages");
            *bad = true;
            return SIZE_MAX;
        }
        size_t i = index_of(r, off), len = desc_at(t, off)->page;
        if (hard && len > k && !list_head_ok(t, r, run_list(len - k), off, 0)) {
            damaged(t, NULL, r->runs[run_list(len - k)], "run of free pages");
            *bad = true;
            return SIZE_MAX;
        }
        run_remove(t, r, off);
        if (len > k)
            run_add(t, r, i + k, len - k);
        return i;
    }
    if (r->pages - r->bump >= k) {
        size_t i = r->bump;
        RTM_SET(&t->base, r->bump, r->bump + k);
        return i;
    }
    return SIZE_MAX;
}

/* Makes a zspage of class c: k pages of any region, or fewer when no run
 * of k is left. Returns its head's offset, linked first in its class's
 * list, or 0 when no page is left (or damage was found). */
/* A page from the provider, as its index in region0, or SIZE_MAX: none
 * left, or a page that breaks the provider's contract (outside its range,
 * misaligned, one the heap holds), which is not used, nor given back. */
static size_t provider_take(struct rtm_zsheap *t)
{
    struct zs_region *r = &t->region0;
    void *p = t->ext_get(t->ext_ctx);
    size_t y = off_of(t, p);
    if (!p || ((uintptr_t)p & (PAGE - 1)) || y - r->first >= r->pages << PAGE_SHIFT)
        return SIZE_MAX;
    size_t i = (y - r->first) >> PAGE_SHIFT;
    return desc_at(t, desc_off(r, i))->state == ZS_HEAD ? SIZE_MAX : i;
}

static size_t zspage_make(struct rtm_zsheap *t, unsigned c, bool hard)
{
    RTM_ASSERT(t->partial[c] == 0); /* made only for a class with no free object */
    unsigned k = t->cls[c].pages, best = 0;
    struct zs_region *r, *at = NULL;
    size_t i;
    if (t->ext_get) {
        r = &t->region0;
        k = 1; /* every class's zspage is a page on a provider */
        if ((i = provider_take(t)) == SIZE_MAX)
            return 0;
        goto make;
    }
    /* One walk of the regions: the first with a run of k pages (or pages
     * never handed out) serves; else the one with the longest run below
     * k, remembered on the way. */
    for (r = &t->region0;; r = region_at(t, r->link.next)) {
        unsigned most = run_most(r, k);
        if (most == k) {
            at = r;
            best = k;
            break;
        }
        if (most > best) {
            at = r;
            best = most;
        }
        if (r->link.next == 0)
            break;
    }
    if (best == 0)
        return 0;
    r = at;
    k = best;
    bool bad = false;
    i = run_take(t, r, k, hard, &bad);
    if (i == SIZE_MAX)
        return 0;
make:;
    unsigned cap = cap_of(t, c, k);
    size_t off = desc_off(r, i);
    struct zs_desc *d = desc_at(t, off);
    for (unsigned w = 0; w < MAX_OBJS / 64; w++) {
        unsigned lo = 64 * w, n = cap > lo ? cap - lo : 0;
        RTM_SET(&t->base, d->map[w], n >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << n) - 1);
    }
    RTM_SET(&t->base, d->page, r->first + (i << PAGE_SHIFT));
    RTM_SET(&t->base, d->cls, (uint8_t)c);
    RTM_SET(&t->base, d->pages, (uint8_t)k);
    RTM_SET(&t->base, d->cap, (uint16_t)cap);
    RTM_SET(&t->base, d->used, (uint16_t)0);
    RTM_SET(&t->base, d->pos, (uint8_t)0);
    RTM_SET(&t->base, d->state, (uint8_t)ZS_HEAD);
    RTM_SET(&t->base, d->tag,
            desc_tag(t, off, ZS_HEAD, c, (size_t)cap << 8 | k, r->first + (i << PAGE_SHIFT)));
    for (unsigned j = 1; j < k; j++) {
        struct zs_desc *e = desc_at(t, off + ((size_t)j << DESC_SHIFT));
        RTM_SET(&t->base, e->state, (uint8_t)ZS_TAIL);
        RTM_SET(&t->base, e->pos, (uint8_t)j);
    }
    list_push(t, off, d, false); /* its list is empty */
    RTM_SET(&t->base, t->held_pages, t->held_pages + k);
    if (t->held_pages > t->peak_held)
        RTM_SET(&t->base, t->peak_held, t->held_pages);
    RTM_SET(&t->base, t->zspages, t->zspages + 1);
    RTM_SET(&t->base, t->made, t->made + 1);
    return off;
}

/* ---- alloc and free ------------------------------------------------------------- */

static __attribute__((noinline, cold)) void *alloc_failed(struct rtm_zsheap *t)
{
    RTM_SET(&t->base, t->base.failed_allocs, t->base.failed_allocs + 1);
    return NULL;
}

/* An object of n's class (at most RTM_ZSHEAP_MAX_REQUEST), or NULL,
 * nothing counted. */
static inline void *zs_take(struct rtm_zsheap *t, size_t n, bool hard)
{
    unsigned c = class_of(n);
    size_t off = t->partial[c];
    struct zs_desc *d;
    if (off) {
        d = desc_at(t, off);
        if (hard && (!handed_out(t, off) || !head_sound(t, off, d) || d->cls != c ||
                     d->used >= d->cap || d->prev != 0)) {
            damaged(t, NULL, off, "zspage descriptor");
            return NULL;
        }
    } else {
        off = zspage_make(t, c, hard);
        if (!off)
            return NULL;
        d = desc_at(t, off);
    }
    unsigned w = d->map[0] ? 0 : 1;
    uint64_t m = d->map[w];
    bool full = d->used + 1 == d->cap;
    unsigned slot = m ? 64 * w + (unsigned)__builtin_ctzll(m) : MAX_OBJS;
    if (hard && (slot >= d->cap || (full && !list_links_ok(t, off, d)))) {
        damaged(t, NULL, off, slot >= d->cap ? "zspage bitmap" : "class list");
        return NULL;
    }
    RTM_SET(&t->base, d->map[w], m & (m - 1));
    RTM_SET(&t->base, d->used, (uint16_t)(d->used + 1));
    if (full)
        list_remove(t, off, d);
    size_t s = t->cls[c].size;
    RTM_SET(&t->base, t->used_bytes, t->used_bytes + s);
    RTM_SET(&t->base, t->live_blocks, t->live_blocks + 1);
    if (t->used_bytes > t->peak_used_bytes)
        RTM_SET(&t->base, t->peak_used_bytes, t->used_bytes);
    return at_off(t, d->page + (size_t)slot * s);
}

static inline void *zs_alloc(struct rtm_zsheap *t, size_t n, bool hard)
{
    void *p = __builtin_expect(n <= RTM_ZSHEAP_MAX_REQUEST, 1) ? zs_take(t, n, hard) : NULL;
    return p ? p : alloc_failed(t);
}

/* Where a pointer's object lies. */
struct zs_obj {
    struct zs_region *r;
    size_t i;   /* the zspage's first page in r */
    size_t off; /* its descriptor */
    struct zs_desc *d;
    unsigned slot;
};

/* Finds p's object: 0, -EINVAL (no live object of this heap), -EFAULT
 * (hardened: its zspage's descriptor does not hold). Reads only the
 * heap's regions' descriptors. */
static inline int find_obj(const struct rtm_zsheap *t, const void *p, struct zs_obj *o, bool hard)
{
    size_t y = off_of(t, p), i;
    struct zs_region *r = region_of(t, y, &i);
    if (!r)
        return -EINVAL;
    size_t off = desc_off(r, i);
    struct zs_desc *d = desc_at(t, off);
    if (d->state == ZS_TAIL) {
        unsigned pos = d->pos;
        if (pos == 0 || pos >= MAX_RUN || pos > i)
            return -EINVAL; /* a page in a run keeps what it said before */
        i -= pos;
        off = desc_off(r, i);
        d = desc_at(t, off);
    }
    if (d->state != ZS_HEAD) /* a page in no zspage: no object there */
        return -EINVAL;
    if (hard && (!head_sound(t, off, d) || d->page != r->first + (i << PAGE_SHIFT) ||
                 i + d->pages > r->bump))
        return -EFAULT;
    size_t z = y - d->page;
    const struct zs_class *k = &t->cls[d->cls];
    unsigned slot = (unsigned)(((uint64_t)z * k->recip) >> 32);
    if ((size_t)slot * k->size != z || slot >= d->cap)
        return -EINVAL;
    if (d->map[slot / 64] & ((uint64_t)1 << (slot % 64)))
        return -EINVAL; /* free already */
    *o = (struct zs_obj){ r, i, off, d, slot };
    return 0;
}

static __attribute__((noinline, cold)) int free_refused(struct rtm_zsheap *t, const void *p, int rc,
                                                        size_t where, const char *what)
{
    if (rc == -EFAULT)
        damaged(t, p, where, what);
    return rc;
}

static inline int zs_free(struct rtm_zsheap *t, void *p, bool hard)
{
    if (!p)
        return 0;
    struct zs_obj o;
    int rc = find_obj(t, p, &o, hard);
    if (rc)
        return free_refused(t, p, rc, rc == -EFAULT ? off_of(t, p) : 0, "zspage descriptor");
    struct zs_desc *d = o.d;
    size_t s = t->cls[d->cls].size;
    bool listed = d->used < d->cap;
    if (hard && listed && !list_links_ok(t, o.off, d))
        return free_refused(t, p, -EFAULT, o.off, "class list");
    if (d->used == 1) {
        /* its last object: the zspage goes back (listed unless it holds
         * one object), joined with the free runs around it */
        unsigned k = d->pages;
        size_t before = 0, after = 0, where = 0;
        if (!t->ext_get && run_neighbours(t, o.r, o.i, k, hard, &before, &after, &where) != 0)
            return free_refused(t, p, -EFAULT, where, "run of free pages");
        if (listed)
            list_remove(t, o.off, d);
        /* no zspage any more, wherever its first page ends up in the run */
        RTM_SET(&t->base, d->state, (uint8_t)ZS_FREE);
        if (t->ext_get)
            t->ext_put(t->ext_ctx, at_off(t, d->page)); /* its one page */
        else
            run_give(t, o.r, o.i, k, before, after);
        RTM_SET(&t->base, t->held_pages, t->held_pages - k);
        RTM_SET(&t->base, t->zspages, t->zspages - 1);
        RTM_SET(&t->base, t->freed, t->freed + 1);
    } else {
        if (!listed && !list_push(t, o.off, d, hard))
            return -EFAULT;
        RTM_SET(&t->base, d->map[o.slot / 64], d->map[o.slot / 64] | (uint64_t)1 << (o.slot % 64));
        RTM_SET(&t->base, d->used, (uint16_t)(d->used - 1));
    }
    RTM_SET(&t->base, t->used_bytes, t->used_bytes - s);
    RTM_SET(&t->base, t->live_blocks, t->live_blocks - 1);
    return 0;
}

static inline void *zs_aligned_alloc(struct rtm_zsheap *t, size_t a, size_t n, bool hard)
{
    if (a == 0 || (a & (a - 1)) || a > PAGE || n > RTM_ZSHEAP_MAX_REQUEST)
        return alloc_failed(t);
    if (a <= STEP)
        return zs_alloc(t, n, hard);
    /* a class whose size is a multiple of a: every object of it lies at a
     * multiple of a from a page-aligned zspage */
    size_t m = n < a ? a : (n + a - 1) & ~(a - 1);
    return zs_alloc(t, m, hard);
}

static inline void *zs_realloc(struct rtm_zsheap *t, void *p, size_t n, bool hard)
{
    if (!p)
        return zs_alloc(t, n, hard);
    struct zs_obj o;
    int rc = find_obj(t, p, &o, hard);
    if (rc) {
        free_refused(t, p, rc, off_of(t, p), "zspage descriptor");
        return alloc_failed(t);
    }
    size_t old = t->cls[o.d->cls].size;
    if (n > RTM_ZSHEAP_MAX_REQUEST)
        return alloc_failed(t);
    if (class_of(n) == o.d->cls)
        return p;
    void *q = zs_take(t, n, hard);
    if (!q)
        return n <= old ? p : alloc_failed(t); /* shrinking: in place will do */
    size_t keep = n < old ? n : old;
    RTM_NOTE_BLOCK(&t->base, q, keep);
    memcpy(q, p, keep);
    if (zs_free(t, p, hard) != 0) { /* found above: only damage refuses it */
        zs_free(t, q, hard);
        return alloc_failed(t);
    }
    return q;
}

/*
 * Entry points: the level is fixed at create; RTM_HEAP_HARDEN_FULL adds its
 * periodic check.
 */
#define LEVEL_IS(t, l)                                           \
    __builtin_expect((t)->base.hardening == RTM_HEAP_HARDEN_##l, \
                     RTM_HEAP_HARDEN_##l == RTM_HEAP_HARDEN_O1)

static inline void *alloc_entry(struct rtm_zsheap *t, size_t n)
{
    if (LEVEL_IS(t, NONE))
        return zs_alloc(t, n, false);
    if (LEVEL_IS(t, FULL) && rtm__heap_periodic_check(&t->base))
        return alloc_failed(t);
    return zs_alloc(t, n, true);
}

static inline void *aligned_entry(struct rtm_zsheap *t, size_t a, size_t n)
{
    if (LEVEL_IS(t, NONE))
        return zs_aligned_alloc(t, a, n, false);
    if (LEVEL_IS(t, FULL) && rtm__heap_periodic_check(&t->base))
        return alloc_failed(t);
    return zs_aligned_alloc(t, a, n, true);
}

static inline void *realloc_entry(struct rtm_zsheap *t, void *p, size_t n)
{
    if (LEVEL_IS(t, NONE))
        return zs_realloc(t, p, n, false);
    if (LEVEL_IS(t, FULL) && rtm__heap_periodic_check(&t->base))
        return alloc_failed(t);
    return zs_realloc(t, p, n, true);
}

static inline int free_entry(struct rtm_zsheap *t, void *p)
{
    if (LEVEL_IS(t, NONE))
        return zs_free(t, p, false);
    if (LEVEL_IS(t, FULL) && rtm__heap_periodic_check(&t->base))
        return -EFAULT;
    return zs_free(t, p, true);
}

/* ---- regions ------------------------------------------------------------------ */

/* Lays out a region in [lo, hi) after its descriptor at d: descriptors,
 * then pages aligned to PAGE, then SLACK bytes at least (an overflow of up
 * to 16 bytes past the last page's last object stays in the region's
 * memory: the next region's descriptor may follow it). Returns the pages
 * (0: none fits), with the offsets filled in. */
static size_t region_layout(const struct rtm_zsheap *t, uintptr_t lo, uintptr_t hi, size_t *descs,
                            size_t *first)
{
    uintptr_t dl = (lo + 63) & ~(uintptr_t)63;
    if (dl < lo || dl >= hi)
        return 0;
    /* n descriptors and n pages: n * (PAGE + 64) bytes plus the trim */
    size_t n = (size_t)(hi - dl) / (PAGE + RTM_ZSHEAP_PAGE_DESC);
    for (; n > 0; n--) {
        uintptr_t f = (dl + n * RTM_ZSHEAP_PAGE_DESC + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
        if (f > dl && f < hi && (size_t)(hi - f) >= n * PAGE + SLACK)
            break;
    }
    if (n == 0)
        return 0;
    *descs = off_of(t, (void *)dl);
    *first =
        off_of(t, (void *)((dl + n * RTM_ZSHEAP_PAGE_DESC + PAGE - 1) & ~(uintptr_t)(PAGE - 1)));
    return n;
}

static int add_pool_entry(struct rtm_zsheap *t, void *mem, size_t size)
{
    if (!t)
        return -EINVAL;
    if (t->ext_get)
        return -ENOTSUP;
    uintptr_t at;
    int rc = rtm_kind_pool_room(t, &t->region0.link, mem, size, _Alignof(struct zs_region),
                                sizeof(struct zs_region), &at);
    if (rc)
        return rc;
    size_t descs = 0, first = 0;
    size_t n =
        region_layout(t, at + sizeof(struct zs_region), (uintptr_t)mem + size, &descs, &first);
    if (n == 0)
        return -ENOMEM;
    if (n > UINT32_MAX)
        return -E2BIG;
    struct zs_region *r = (struct zs_region *)at;
    /* memory the heap did not have: nothing to undo there */
    *r = (struct zs_region){
        .link = { .next = t->region0.link.next, .raw_start = off_of(t, mem), .raw_len = size },
        .descs = descs,
        .first = first,
        .pages = n,
    };
    RTM_SET(&t->base, t->region0.link.next, off_of(t, r));
    RTM_SET(&t->base, t->usable_bytes, t->usable_bytes + n * PAGE);
    RTM_SET(&t->base, t->overhead_bytes, t->overhead_bytes + size - n * PAGE);
    RTM_SET(&t->base, t->pool_count, t->pool_count + 1);
    return 0;
}

#if RTM_LOGGED

/* ---- the logged operations (store.h) ------------------------------------ */

#define T(h) ((struct rtm_zsheap *)(void *)(h))

static void *logged_alloc(struct rtm_heap *h, size_t n)
{
    return alloc_entry(T(h), n);
}
static void *logged_aligned(struct rtm_heap *h, size_t a, size_t n)
{
    return aligned_entry(T(h), a, n);
}
static void *logged_realloc(struct rtm_heap *h, void *p, size_t n)
{
    return realloc_entry(T(h), p, n);
}
static int logged_free(struct rtm_heap *h, void *p)
{
    return free_entry(T(h), p);
}
static int logged_add_pool(struct rtm_heap *h, void *m, size_t n)
{
    return add_pool_entry(T(h), m, n);
}
static size_t logged_taken_size(const struct rtm_heap *h, const void *p)
{
    const struct rtm_zsheap *t = (const struct rtm_zsheap *)(const void *)h;
    /* just taken: live, so found */
    size_t i;
    struct zs_region *r = region_of(t, off_of(t, p), &i);
    struct zs_desc *d = desc_at(t, desc_off(r, i));
    if (d->state == ZS_TAIL)
        d = desc_at(t, desc_off(r, i - d->pos));
    return t->cls[d->cls].size;
}

const struct rtm_heap_wops rtm__zsheap_logged_ops = {
    .alloc = logged_alloc,
    .aligned_alloc = logged_aligned,
    .realloc = logged_realloc,
    .free = logged_free,
    .add_pool = logged_add_pool,
    .taken_size = logged_taken_size,
};

#else /* the plain copy: create, the typed API, the read-only calls, the kind's entry */

struct rtm_zsheap *rtm_zsheap_create(void *mem, size_t size)
{
    return rtm_zsheap_create_ex(mem, size, NULL);
}

struct rtm_zsheap *rtm_zsheap_create_ex(void *mem, size_t size, const struct rtm_heap_config *cfg)
{
    if (!(cfg = rtm_kind_config(cfg)))
        return NULL;
    int err;
    uintptr_t ctl =
        rtm_kind_place(mem, size, _Alignof(struct rtm_zsheap), sizeof(struct rtm_zsheap), &err);
    if (!ctl) {
        errno = err;
        return NULL;
    }
    struct rtm_zsheap *t = (struct rtm_zsheap *)ctl;
    size_t descs = 0, first = 0;
    size_t n = region_layout(t, ctl + sizeof(*t), (uintptr_t)mem + size, &descs, &first);
    if (n == 0 || n > UINT32_MAX) {
        errno = n ? E2BIG : ENOMEM;
        return NULL;
    }
    memset(t, 0, sizeof(*t));
    rtm_kind_init(&t->base, RTM_KIND_ZSHEAP, cfg, mem);
    t->page_key = rtm__heap_new_key(t);
    for (unsigned c = 0; c < CLASSES; c++) {
        unsigned cap, k = class_pages(c, &cap);
        size_t s = class_size(c);
        t->cls[c] = (struct zs_class){ .recip = (uint32_t)((((uint64_t)1 << 32) + s - 1) / s),
                                       .size = (uint16_t)s,
                                       .cap = (uint16_t)cap,
                                       .pages = (uint8_t)k };
    }
    t->region0 = (struct zs_region){
        .link = { .raw_start = off_of(t, mem), .raw_len = size },
        .descs = descs,
        .first = first,
        .pages = n,
    };
    t->pool_count = 1;
    t->usable_bytes = n * PAGE;
    t->overhead_bytes = size - n * PAGE;
    t->base.magic = RTM_HEAP_MAGIC;
    return t;
}

struct rtm_zsheap *rtm_zsheap_create_on(void *mem, size_t size, const struct rtm_heap_config *cfg,
                                        const struct rtm_page_provider *pages)
{
    if (!pages || !pages->get || !pages->put || pages->page_size != PAGE || !pages->base) {
        errno = EINVAL;
        return NULL;
    }
    uintptr_t base = (uintptr_t)pages->base, end = base + pages->span;
    uintptr_t lo = (base + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
    if (end < base || lo < base || lo > end || (end - lo) / PAGE == 0) {
        errno = EINVAL;
        return NULL;
    }
    size_t n = (size_t)(end - lo) / PAGE;
    if (n > UINT32_MAX) {
        errno = E2BIG;
        return NULL;
    }
    if (!(cfg = rtm_kind_config(cfg)))
        return NULL;
    int err;
    uintptr_t ctl =
        rtm_kind_place(mem, size, _Alignof(struct rtm_zsheap), sizeof(struct rtm_zsheap), &err);
    if (!ctl) {
        errno = err;
        return NULL;
    }
    /* the descriptors after the control structure, in the same memory */
    uintptr_t dl = (ctl + sizeof(struct rtm_zsheap) + 63) & ~(uintptr_t)63;
    if ((uintptr_t)mem + size < dl || ((uintptr_t)mem + size - dl) / RTM_ZSHEAP_PAGE_DESC < n) {
        errno = ENOMEM;
        return NULL;
    }
    if (rtm_kind_overlap((size_t)(uintptr_t)mem, size, (size_t)lo, n * PAGE)) {
        errno = EINVAL; /* a page handed out there would overwrite the heap */
        return NULL;
    }
    struct rtm_zsheap *t = (struct rtm_zsheap *)ctl;
    memset(t, 0, sizeof(*t));
    rtm_kind_init(&t->base, RTM_KIND_ZSHEAP, cfg, mem);
    t->page_key = rtm__heap_new_key(t);
    for (unsigned c = 0; c < CLASSES; c++) {
        size_t s = class_size(c), cap = PAGE / s < MAX_OBJS ? PAGE / s : MAX_OBJS;
        t->cls[c] = (struct zs_class){ .recip = (uint32_t)((((uint64_t)1 << 32) + s - 1) / s),
                                       .size = (uint16_t)s,
                                       .cap = (uint16_t)cap,
                                       .pages = 1 };
    }
    memset((void *)dl, 0, n * RTM_ZSHEAP_PAGE_DESC); /* every page ZS_FREE: the provider's */
    t->region0 = (struct zs_region){
        .link = { .raw_start = off_of(t, mem), .raw_len = size },
        .descs = off_of(t, (void *)dl),
        .first = off_of(t, (void *)lo),
        .pages = n,
        .bump = n,
    };
    t->ext_get = pages->get;
    t->ext_put = pages->put;
    t->ext_ctx = pages->ctx;
    t->pool_count = 1;
    t->usable_bytes = n * PAGE;
    t->overhead_bytes = size;
    t->base.magic = RTM_HEAP_MAGIC;
    return t;
}

struct rtm_heap *rtm_zsheap_heap(struct rtm_zsheap *t)
{
    return t ? &t->base : NULL;
}

int rtm_zsheap_add_pool(struct rtm_zsheap *t, void *mem, size_t size)
{
    return add_pool_entry(t, mem, size);
}

void *rtm_zsheap_alloc(struct rtm_zsheap *t, size_t size)
{
    return alloc_entry(t, size);
}

void *rtm_zsheap_aligned_alloc(struct rtm_zsheap *t, size_t alignment, size_t size)
{
    return aligned_entry(t, alignment, size);
}

void *rtm_zsheap_realloc(struct rtm_zsheap *t, void *p, size_t size)
{
    return realloc_entry(t, p, size);
}

int rtm_zsheap_free(struct rtm_zsheap *t, void *p)
{
    return free_entry(t, p);
}

size_t rtm_zsheap_usable_size(const struct rtm_zsheap *t, const void *p)
{
    struct zs_obj o;
    if (!t || !p || find_obj(t, p, &o, t->base.hardening != RTM_HEAP_HARDEN_NONE) != 0)
        return 0;
    return t->cls[o.d->cls].size;
}

/* The largest request that fits, with all smaller ones: any while a page
 * is free (in a run, or never handed out: a zspage of one page holds any
 * object); else up to the first class with no zspage in its list. O(1). */
static size_t largest_free(const struct rtm_zsheap *t)
{
    /* (a provider may have no page left: only the zspages held count) */
    if (!t->ext_get && t->held_pages < t->usable_bytes / PAGE)
        return RTM_ZSHEAP_MAX_REQUEST;
    unsigned c = 0;
    for (unsigned w = 0; w < (CLASSES + 63) / 64; w++) {
        uint64_t m = ~t->partial_map[w];
        if (m) {
            c = 64 * w + (unsigned)__builtin_ctzll(m);
            break;
        }
    }
    return c == 0 ? 0 : class_size(c - 1);
}

int rtm_zsheap_stats(const struct rtm_zsheap *t, struct rtm_heap_stats *out)
{
    if (!t || !out || t->base.magic != RTM_HEAP_MAGIC)
        return -EINVAL;
    out->usable_bytes = t->usable_bytes;
    out->used_bytes = t->used_bytes;
    out->free_bytes = t->usable_bytes - t->used_bytes;
    out->peak_used_bytes = t->peak_used_bytes;
    out->largest_free_bytes = largest_free(t);
    out->live_blocks = t->live_blocks;
    out->overhead_bytes = t->overhead_bytes;
    out->pool_count = t->pool_count;
    out->failed_allocs = t->base.failed_allocs;
    out->corruptions = t->base.corruptions;
    return 0;
}

int rtm_zsheap_page_stats(const struct rtm_zsheap *t, struct rtm_zsheap_page_stats *out)
{
    if (!t || !out || t->base.magic != RTM_HEAP_MAGIC || t->base.kind != RTM_KIND_ZSHEAP)
        return -EINVAL;
    *out = (struct rtm_zsheap_page_stats){ .page_size = PAGE,
                                           .pages_held = t->held_pages,
                                           .peak_held = t->peak_held,
                                           .pages_max = t->usable_bytes / PAGE,
                                           .zspages = t->zspages,
                                           .made = t->made,
                                           .freed = t->freed,
                                           .max_request = RTM_ZSHEAP_MAX_REQUEST };
    return 0;
}

#define CHECK(cond)         \
    do {                    \
        if (!(cond))        \
            return -EFAULT; \
    } while (0)

/* One region's descriptors: zspages whole and consistent, runs in their
 * lists. Adds to the totals. */
static int check_region(const struct rtm_zsheap *t, const struct zs_region *r, size_t *used,
                        size_t *live, size_t *held, size_t *zspages, size_t *partial, size_t *runs)
{
    CHECK(r->bump <= r->pages);
    size_t run_pages = 0, run_count = 0;
    bool after_run = false;
    for (size_t i = 0; i < r->bump;) {
        size_t off = desc_off(r, i);
        const struct zs_desc *d = desc_at(t, off);
        if (d->state == ZS_HEAD) {
            unsigned k = d->pages;
            CHECK(head_ok(t, off, d) && d->cls < CLASSES && k >= 1 && k <= MAX_RUN);
            CHECK(!t->ext_get || k == 1);
            CHECK(i + k <= r->bump && d->page == r->first + (i << PAGE_SHIFT));
            CHECK(d->cap == cap_of(t, d->cls, k) && d->used >= 1 && d->used <= d->cap);
            CHECK(popcount_map(d) == d->cap - d->used);
            for (unsigned w = 0; w < MAX_OBJS / 64; w++) {
                unsigned lo = 64 * w, n = d->cap > lo ? d->cap - lo : 0;
                uint64_t valid = n >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << n) - 1;
                CHECK((d->map[w] & ~valid) == 0);
            }
            for (unsigned j = 1; j < k; j++) {
                const struct zs_desc *e = desc_at(t, off + ((size_t)j << DESC_SHIFT));
                CHECK(e->state == ZS_TAIL && e->pos == j);
            }
            *used += (size_t)d->used * t->cls[d->cls].size;
            *live += d->used;
            *held += k;
            *zspages += 1;
            *partial += d->used < d->cap;
            i += k;
        } else if (d->state == ZS_RUN) {
            /* whole, linked, never next to another run nor at the bump (it
             * would have joined it, or lowered the bump) */
            size_t len = d->page;
            CHECK(run_ok(t, r, off) && !after_run && i + len < r->bump);
            if (len > 1) {
                const struct zs_desc *e = desc_at(t, desc_off(r, i + len - 1));
                CHECK(e->state == ZS_RUN_END && e->page == off);
            }
            run_pages += len;
            run_count++;
            i += len;
            after_run = true;
            continue;
        } else {
            /* a page handed out is in a zspage or a run; on a provider, a
             * page the heap does not hold is free (its zspages a page each) */
            CHECK(t->ext_get && d->state == ZS_FREE);
            i++;
        }
        after_run = false;
    }
    /* every run in the list of its length, once */
    size_t listed = 0;
    for (unsigned l = 1; l <= MAX_RUN; l++) {
        size_t prev = 0;
        for (size_t off = r->runs[l]; off != 0; off = desc_at(t, off)->next) {
            CHECK(++listed <= run_count && in_region(r, off));
            const struct zs_desc *d = desc_at(t, off);
            CHECK(run_tag_ok(t, off, d) && run_list(d->page) == l && d->prev == prev);
            prev = off;
        }
    }
    CHECK(listed == run_count);
    *runs += run_pages;
    return 0;
}

int rtm_zsheap_check(const struct rtm_zsheap *t)
{
    if (!t || t->base.magic != RTM_HEAP_MAGIC || t->base.kind != RTM_KIND_ZSHEAP)
        return -EINVAL;
    size_t used = 0, live = 0, held = 0, zspages = 0, partial = 0, runs = 0, regions = 0;
    size_t pages = 0;
    for (const struct zs_region *r = &t->region0;; r = region_at(t, r->link.next)) {
        CHECK(++regions <= t->pool_count);
        int rc = check_region(t, r, &used, &live, &held, &zspages, &partial, &runs);
        if (rc)
            return rc;
        pages += r->pages;
        if (r->link.next == 0)
            break;
    }
    CHECK(regions == t->pool_count && pages * PAGE == t->usable_bytes);
    CHECK(used == t->used_bytes && live == t->live_blocks && held == t->held_pages);
    CHECK(zspages == t->zspages && t->made - t->freed == zspages);
    CHECK(t->peak_held >= held && t->peak_used_bytes >= used);
    /* every zspage with a free object in its class's list, in order */
    size_t listed = 0;
    for (unsigned c = 0; c < CLASSES; c++) {
        size_t prev = 0;
        bool on = (t->partial_map[c / 64] >> (c % 64)) & 1;
        CHECK(on == (t->partial[c] != 0));
        for (size_t off = t->partial[c]; off != 0; off = desc_at(t, off)->next) {
            CHECK(++listed <= partial && handed_out(t, off));
            const struct zs_desc *d = desc_at(t, off);
            CHECK(head_ok(t, off, d) && d->cls == c && d->used < d->cap && d->prev == prev);
            prev = off;
        }
    }
    CHECK(listed == partial);
    return 0;
}

/* ---- layout, for memory another process wrote -------------------------------- */

/* Whether a region whose descriptor lies at a placed offset holds together
 * inside [0, bytes): its descriptors after lo, its pages after them,
 * aligned, and the slack after them, inside the memory given for it; a
 * bump no past its pages. */
static int validate_region(const void *base, const struct rtm_pool_link *link, size_t lo,
                           size_t bytes, size_t *usable)
{
    const struct rtm_zsheap *t = base;
    const struct zs_region *r = (const struct zs_region *)(const void *)link;
    size_t n = r->pages, descs = r->descs, first = r->first;
    size_t bump = __atomic_load_n(&r->bump, __ATOMIC_RELAXED);
    CHECK(n > 0 && n <= UINT32_MAX && bump <= n);
    CHECK(descs >= lo && descs < bytes && (bytes - descs) / RTM_ZSHEAP_PAGE_DESC >= n);
    CHECK(((uintptr_t)t + descs) % 64 == 0 && first - descs >= n * RTM_ZSHEAP_PAGE_DESC);
    /* the pages and the slack after them (which an overflow may write) */
    CHECK(first < bytes && bytes - first >= SLACK && (bytes - first - SLACK) / PAGE >= n &&
          ((uintptr_t)t + first) % PAGE == 0);
    size_t raw = r->link.raw_start;
    CHECK(off_of(t, r) - raw < r->link.raw_len &&
          first + n * PAGE + SLACK - raw <= r->link.raw_len);
    *usable = n * PAGE;
    return 0;
}

/* The kind's validate op (kind.h): the control structure inside bytes, the
 * class table as create makes it, and every region as validate_region
 * says. The descriptors and lists change with every call: what reads them
 * reads only inside the regions validated here. O(regions + classes). */
static int zsheap_validate(const struct rtm_heap *h, size_t bytes)
{
    const struct rtm_zsheap *t = (const struct rtm_zsheap *)(const void *)h;
    CHECK((uintptr_t)t % _Alignof(struct rtm_zsheap) == 0 && bytes >= sizeof(*t));
    CHECK(t->base.kind == RTM_KIND_ZSHEAP && t->ext_get == NULL && t->ext_put == NULL);
    for (unsigned c = 0; c < CLASSES; c++) {
        unsigned cap, k = class_pages(c, &cap);
        size_t s = class_size(c);
        CHECK(t->cls[c].size == s && t->cls[c].cap == cap && t->cls[c].pages == k &&
              t->cls[c].recip == (uint32_t)((((uint64_t)1 << 32) + s - 1) / s));
    }
    return rtm_kind_validate_pools(t, bytes, sizeof(*t), &t->region0.link, t->pool_count,
                                   t->usable_bytes, t->overhead_bytes, sizeof(struct zs_region),
                                   _Alignof(struct zs_region), validate_region);
}

void rtm__zsheap_layout(struct rtm_heap *h, struct xv_layout *l)
{
    struct rtm_zsheap *t = (struct rtm_zsheap *)(void *)h;
    struct zs_region *r = &t->region0;
    *l = (struct xv_layout){ .usable = &t->usable_bytes,
                             .overhead = &t->overhead_bytes,
                             .pool_count = &t->pool_count,
                             .next = &r->link.next,
                             .raw_start = &r->link.raw_start,
                             .raw_len = &r->link.raw_len,
                             .first = &r->first,
                             .stack = &r->descs,
                             .pages = &r->pages,
                             .bump = &r->bump,
                             .used = &t->used_bytes,
                             .live = &t->live_blocks,
                             .region0 = off_of(t, &r->link),
                             .needed = r->first + r->pages * PAGE + SLACK,
                             .control_bytes = sizeof(*t),
                             .page_size = PAGE,
                             .span = PAGE };
}

/* ---- generic interface --------------------------------------------------- */

static struct rtm_heap *ops_create(void *mem, size_t size, const struct rtm_heap_config *cfg)
{
    return rtm_zsheap_heap(rtm_zsheap_create_ex(mem, size, cfg));
}

#define T(h)  ((struct rtm_zsheap *)(void *)(h))
#define CT(h) ((const struct rtm_zsheap *)(const void *)(h))

static void *ops_alloc(struct rtm_heap *h, size_t n)
{
    return alloc_entry(T(h), n);
}
static void *ops_aligned(struct rtm_heap *h, size_t a, size_t n)
{
    return aligned_entry(T(h), a, n);
}
static void *ops_realloc(struct rtm_heap *h, void *p, size_t n)
{
    return realloc_entry(T(h), p, n);
}
static int ops_free(struct rtm_heap *h, void *p)
{
    return free_entry(T(h), p);
}
static size_t ops_usable(const struct rtm_heap *h, const void *p)
{
    return rtm_zsheap_usable_size(CT(h), p);
}
static int ops_add_pool(struct rtm_heap *h, void *m, size_t n)
{
    return add_pool_entry(T(h), m, n);
}
static int ops_stats(const struct rtm_heap *h, struct rtm_heap_stats *o)
{
    return rtm_zsheap_stats(CT(h), o);
}
static int ops_check(const struct rtm_heap *h)
{
    return rtm_zsheap_check(CT(h));
}

/* Objects of n bytes a fresh heap holds: per region, floor(P / k) zspages
 * of the class's objects, and the rest of the pages in one shorter zspage
 * (alloc takes the longest run it can). */
static size_t ops_fill_count(const struct rtm_heap *h, size_t n)
{
    const struct rtm_zsheap *t = CT(h);
    if (n > RTM_ZSHEAP_MAX_REQUEST)
        return 0;
    unsigned c = class_of(n), k = t->cls[c].pages;
    size_t count = 0;
    for (const struct zs_region *r = &t->region0;; r = region_at(t, r->link.next)) {
        count += r->pages / k * t->cls[c].cap;
        if (r->pages % k)
            count += cap_of(t, c, (unsigned)(r->pages % k));
        if (r->link.next == 0)
            break;
    }
    return count;
}

static int ops_walk(const struct rtm_heap *h, int (*fn)(void *arg, void *block), void *arg)
{
    const struct rtm_zsheap *t = CT(h);
    for (const struct zs_region *r = &t->region0;; r = region_at(t, r->link.next)) {
        if (r->bump > r->pages)
            return -EFAULT;
        for (size_t i = 0; i < r->bump;) {
            const struct zs_desc *d = desc_at(t, desc_off(r, i));
            size_t len;
            if (d->state == ZS_HEAD) {
                len = d->pages;
                /* every object inside the zspage, the zspage inside the
                 * pages handed out, before any is reported */
                if (d->cls >= CLASSES || len < 1 || len > MAX_RUN || len > r->bump - i ||
                    d->cap != cap_of(t, d->cls, (unsigned)len) ||
                    d->page != r->first + (i << PAGE_SHIFT))
                    return -EFAULT;
                size_t s = t->cls[d->cls].size;
                for (unsigned slot = 0; slot < d->cap; slot++) {
                    if (d->map[slot / 64] & ((uint64_t)1 << (slot % 64)))
                        continue;
                    int rc = fn(arg, at_off(t, d->page + slot * s));
                    if (rc)
                        return rc;
                }
            } else if (d->state == ZS_RUN) {
                len = d->page;
            } else if (t->ext_get && d->state == ZS_FREE) {
                len = 1; /* a provider's page the heap does not hold */
            } else {
                return -EFAULT;
            }
            if (len < 1 || len > r->bump - i)
                return -EFAULT;
            i += len;
        }
        if (r->link.next == 0)
            break;
    }
    return 0;
}

/* Before a destroy: a heap on a provider gives every page it holds back
 * (its own regions go with its memory). O(pages). */
static void ops_destroy(struct rtm_heap *h)
{
    struct rtm_zsheap *t = T(h);
    if (!t->ext_get)
        return;
    struct zs_region *r = &t->region0;
    for (size_t i = 0; i < r->pages && t->held_pages > 0; i++) {
        size_t off = desc_off(r, i);
        struct zs_desc *d = desc_at(t, off);
        if (!head_ok(t, off, d) || d->page != r->first + (i << PAGE_SHIFT))
            continue; /* not held, or damaged: left out (it may be another's) */
        d->state = ZS_FREE;
        t->held_pages--;
        t->ext_put(t->ext_ctx, at_off(t, d->page));
    }
}

static size_t ops_held_bytes(const struct rtm_heap *h)
{
    /* without the lock: one word that changes, read whole */
    return __atomic_load_n(&CT(h)->held_pages, __ATOMIC_RELAXED) * PAGE;
}

/*
 * The pool bound (rtm_heap_pool_bound, heap.h): every zspage the heap holds
 * has a live object (an empty one goes back at once), and is at most k
 * pages, k the longest zspage of the classes from min_block's to
 * max_block's; so with at most L = floor((M - m) / m) objects live besides
 * the request, L * k + 1 pages leave a page free for it (a zspage of one
 * page holds any object). The region adds the control structure, a
 * descriptor per page and the first page's alignment.
 */
static size_t zsheap_pool_bound(const struct rtm_heap_limits *lim)
{
    if (lim->max_align > PAGE || lim->max_block > RTM_ZSHEAP_MAX_REQUEST) {
        errno = E2BIG;
        return 0;
    }
    /* rounded up to an alignment that divides the page: a page at most */
    size_t top = lim->max_block;
    if (lim->max_align > STEP)
        top = (top + lim->max_align - 1) & ~(lim->max_align - 1);
    unsigned kmax = 1;
    for (unsigned c = class_of(lim->min_block); c <= class_of(top); c++) {
        unsigned cap, k = class_pages(c, &cap);
        kmax = k > kmax ? k : kmax;
    }
    size_t pages =
        rtm_sat_add(rtm_sat_mul((lim->max_live - lim->min_block) / lim->min_block, kmax), 1);
    size_t region =
        rtm_sat_add(rtm_sat_mul(pages, PAGE + RTM_ZSHEAP_PAGE_DESC),
                    sizeof(struct rtm_zsheap) + _Alignof(struct rtm_zsheap) + 64 + PAGE + SLACK);
    if (pages > UINT32_MAX || region == SIZE_MAX) {
        errno = pages > UINT32_MAX ? E2BIG : EOVERFLOW;
        return 0;
    }
    return region;
}

const struct rtm_heap_ops rtm__zsheap_ops = {
    .name = "zsheap",
    .create = ops_create,
    .alloc = ops_alloc,
    .aligned_alloc = ops_aligned,
    .realloc = ops_realloc,
    .free = ops_free,
    .usable_size = ops_usable,
    .add_pool = ops_add_pool,
    .stats = ops_stats,
    .check = ops_check,
    .fill_count = ops_fill_count,
    .walk = ops_walk,
    .validate = zsheap_validate,
    .pool_bound = zsheap_pool_bound,
    .held_bytes = ops_held_bytes,
    .destroy = ops_destroy,
};

#endif /* RTM_LOGGED */
