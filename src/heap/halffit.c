/*
 * halffit: power-of-two fragments in one free list per power of two, O(1)
 * alloc and free (rtmem/halffit.h has the contract and the bounds).
 *
 * Fragment layout (offset b from the heap base; addresses grow right):
 *
 *   used:  [ prev | hdr | payload ............................. ]
 *   free:  [ prev | hdr | next | prev link | ...unused........ ]
 *            b     b+8   b+16 (payload, 32-aligned)
 *
 * prev (64 bits) is the size of the fragment physically before this one,
 * always kept (a boundary tag read when merging backwards). hdr (64 bits)
 * is this fragment's size (a multiple of GRANULE, header included), flags
 * and the integrity tag. The links of a free fragment are words (W): next
 * and prev in its list, offsets from the heap base (struct rtm_halffit), as
 * are the list heads and pool descriptors. Offset arithmetic is modulo
 * 2^N, so pools below the heap base work too.
 *
 * Fragments lie a multiple of GRANULE from their pool's start, where a
 * header sits at an address of 16 modulo 32: every payload is 32-aligned. Each
 * pool is [descriptor][fence: a used 32-byte fragment][fragments][sentinel:
 * a used header of size 0]: every fragment has a fragment before and after
 * it.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include "rtmem/halffit.h"
#include "kind.h"
/* Every call writes at most 64 words (a realloc that moves, its copy's
 * notes included), and its log holds 128 (undo.c). */
#define RTM_UNDO_FITS 1
#include "store.h"

typedef uint64_t hword;

#define W            ((size_t)sizeof(size_t))
#define HDR_BYTES    RTM_HALFFIT_HEADER_BYTES
#define GRANULE      RTM_HALFFIT_GRANULE
#define GRANULE_LOG2 5u
#define MIN_FRAG     RTM_HALFFIT_MIN_FRAGMENT
#define MIN_LOG2     5u
#define BINS         RTM_HALFFIT_BIN_COUNT
#define W_LOG2       (sizeof(size_t) == 8 ? 3u : 2u)

#define F_FREE  ((hword)1) /* this fragment is free */
#define F_FENCE ((hword)4) /* a pool's fence or sentinel: never allocated, never freed */
/* A header a merge swallowed: it lies inside a larger free fragment now,
 * and keeps its old value and tag (computed without this flag), so that a
 * second free of its pointer is told apart from damage. */
#define F_GONE  ((hword)8)

/*
 * Integrity tag: hdr bits TAG_SHIFT and up (24 of them) hold a keyed hash
 * of the fragment's offset and of everything below them (size and flags),
 * written at every level but RTM_HEAP_HARDEN_NONE (where they are 0).
 * Sizes stay below 2^TAG_SHIFT (RTM_HALFFIT_MAX_POOL).
 */
#define TAG_SHIFT 40
#define SIZE_MASK ((((hword)1) << TAG_SHIFT) - GRANULE)
/* What take_head returns for a damaged fragment (no fragment lies at
 * offset 1: positions are multiples of 8). */
#define DAMAGED   ((size_t)1)

_Static_assert((GRANULE & (GRANULE - 1)) == 0, "granule is a power of two");
_Static_assert(((size_t)1 << GRANULE_LOG2) == GRANULE, "granule log2");
_Static_assert(MIN_FRAG == GRANULE && ((size_t)1 << MIN_LOG2) == MIN_FRAG,
               "the minimum fragment is one granule: any rest of a split can stand alone");
_Static_assert(GRANULE >= _Alignof(max_align_t), "payload alignment covers max_align_t");
_Static_assert(HDR_BYTES == 2 * sizeof(hword) && GRANULE % HDR_BYTES == 0,
               "a header is prev and hdr, and fits below an aligned payload");
_Static_assert(MIN_FRAG >= HDR_BYTES + 2 * sizeof(size_t), "a free fragment holds its two links");
_Static_assert(F_GONE < GRANULE, "flags fit in the bits the granule leaves free");
_Static_assert(RTM_HALFFIT_MAX_POOL <= SIZE_MASK, "every fragment size fits below the tag bits");
_Static_assert(RTM_HALFFIT_MAX_FRAGMENT <= RTM_HALFFIT_MAX_POOL &&
                   RTM_HALFFIT_MAX_FRAGMENT * 2 > RTM_HALFFIT_MAX_POOL,
               "the largest fragment is the largest power of two a pool holds");
_Static_assert((RTM_HALFFIT_MAX_FRAGMENT & (RTM_HALFFIT_MAX_FRAGMENT - 1)) == 0,
               "the largest fragment is a power of two");
_Static_assert(BINS == 64, "one 64-bit bitmap word");

struct hf_pool {
    struct rtm_pool_link link; /* first: the pool list links descriptors */
    size_t start;              /* offset of the first fragment (after the fence) */
    size_t end;                /* offset of the sentinel's header */
};

_Static_assert(offsetof(struct hf_pool, link) == 0, "a pool's offset is its link's");

/*
 * The control structure. The counters and the first pool's descriptor come
 * in the order tests/heap_layout.h finds them by (as TLSF's): used, peak,
 * live, usable, overhead, pool count, then the descriptor.
 */
struct rtm_halffit {
    struct rtm_heap base;
    uint64_t bitmap; /* bit k: list k is not empty */
    size_t used_bytes;
    size_t peak_used_bytes;
    size_t live_blocks;
    size_t usable_bytes;
    size_t overhead_bytes;
    size_t pool_count;
    struct hf_pool pool0; /* the pool in the creating memory; heads the list */
    /* list terminator: a node whose header reads as a fence of size 0 */
    hword nil[4];
    /* a fence's header in no pool: where frag_at places what is no fragment */
    hword nowhere[2];
    /* heads[k]: the first fragment of list k, or NIL. Each head slot is
     * also the next link of a pseudo-node (PSEUDO), so that unlinking never
     * asks "is it the head?". A pseudo-node's own prev link would be the
     * next slot: never written (only nodes a next link leads to get one). */
    size_t heads[BINS + 2];
};

_Static_assert(sizeof(struct rtm_halffit) + _Alignof(struct rtm_halffit) <=
                   RTM_HALFFIT_CONTROL_BYTES,
               "RTM_HALFFIT_CONTROL_BYTES covers the control structure");
_Static_assert(sizeof(struct hf_pool) + (GRANULE - 1) + GRANULE + HDR_BYTES + (GRANULE - 1) +
                       _Alignof(struct hf_pool) <=
                   RTM_HALFFIT_POOL_OVERHEAD_MAX,
               "RTM_HALFFIT_POOL_OVERHEAD_MAX covers descriptor, fence, sentinel and trims");

#define NIL         ((size_t)offsetof(struct rtm_halffit, nil))
#define NOWHERE     ((size_t)offsetof(struct rtm_halffit, nowhere))
#define HEADS       ((size_t)offsetof(struct rtm_halffit, heads))
#define PSEUDO(bin) (HEADS + (size_t)(bin) * W - HDR_BYTES)

/* ---- small helpers --------------------------------------------------------- */

static inline unsigned fls_size(size_t x) /* index of the highest set bit; x != 0 */
{
    return (unsigned)(sizeof(size_t) * CHAR_BIT - 1) ^ (unsigned)__builtin_clzl(x);
}

static inline unsigned fls64(uint64_t x)
{
    return 63u ^ (unsigned)__builtin_clzll(x);
}

/* The address at offset off from the heap base: formed on integers, since
 * offsets are modulo 2^N and pointer arithmetic that wraps is undefined. */
static inline char *at_off(const struct rtm_halffit *t, size_t off)
{
    return (char *)((uintptr_t)t + off);
}

static inline size_t off_of(const struct rtm_halffit *t, const void *p)
{
    return (size_t)((uintptr_t)p - (uintptr_t)t);
}

static inline hword *word_at(const struct rtm_halffit *t, size_t off)
{
    return (hword *)(void *)at_off(t, off);
}

static inline size_t *link_at(const struct rtm_halffit *t, size_t off)
{
    return (size_t *)(void *)at_off(t, off);
}

/* A fragment's fields, by offset. */
#define PREV(t, b)  (word_at((t), (b))[0])
#define HDR(t, b)   (word_at((t), (b))[1])
#define NEXT(t, b)  (link_at((t), (b) + HDR_BYTES)[0])
#define PLINK(t, b) (link_at((t), (b) + HDR_BYTES)[1])

static inline size_t hdr_size(hword hdr)
{
    return (size_t)(hdr & SIZE_MASK);
}

static inline void *payload(const struct rtm_halffit *t, size_t b)
{
    return at_off(t, b + HDR_BYTES);
}

/* Whether the heap writes and checks tags and links. */
static inline bool hardened(const struct rtm_halffit *t)
{
    return t->base.hardening != RTM_HEAP_HARDEN_NONE;
}

/* The keyed hash of a header at offset b holding v, in its top 24 bits
 * (the rest is noise): one multiply by an odd constant, whose top bits
 * every lower bit of its operand moves. The bits a tag covers lie in the
 * operand's low TAG_SHIFT bits, so that a change to any of them moves the
 * tag in a way that depends on the key (a bit placed high would flip a
 * tag bit it alone decides); the offset, which no overflow changes, is
 * rotated over them, every bit kept. */
static inline uint64_t hdr_hash(const struct rtm_halffit *t, size_t b, hword v)
{
    uint64_t o = (uint64_t)b;
    o = (o << (64 - TAG_SHIFT)) | (o >> TAG_SHIFT);
    hword covered = v & ((((hword)1) << TAG_SHIFT) - 1);
    return (o ^ covered ^ t->base.tag_key) * 0x9fb21c651e98df25ull;
}

/* The header for v (no tag bits set) at offset b: tagged when hardened. */
static inline hword mk_hdr(const struct rtm_halffit *t, size_t b, hword v, bool hard)
{
    return hard ? v | (hdr_hash(t, b, v) >> TAG_SHIFT << TAG_SHIFT) : v;
}

static inline bool tag_ok(const struct rtm_halffit *t, size_t b, hword hdr)
{
    return ((hdr_hash(t, b, hdr) ^ hdr) >> TAG_SHIFT) == 0;
}

/* The power-of-two class k of a request: its fragment is 2^k =
 * max(MIN_FRAG, 2^ceil(log2(size + HDR_BYTES))). size <= MAX_REQUEST. */
static inline unsigned class_of(size_t size)
{
    return fls_size((size + HDR_BYTES - 1) | (MIN_FRAG - 1)) + 1;
}

/* The list of a free fragment of size s: floor(log2(s)). */
static inline unsigned bin_of(size_t s)
{
    return fls_size(s);
}

/* ---- free lists -------------------------------------------------------------- */

/* Inserts free fragment b of size s at the head of its list. */
static inline void list_insert(struct rtm_halffit *t, size_t b, size_t s)
{
    RTM_ASSERT(s >= MIN_FRAG && s % GRANULE == 0 && s <= RTM_HALFFIT_MAX_POOL);
    unsigned bin = bin_of(s);
    size_t head = t->heads[bin];
    RTM_SET(&t->base, NEXT(t, b), head);
    RTM_SET(&t->base, PLINK(t, b), PSEUDO(bin));
    RTM_SET(&t->base, PLINK(t, head), b); /* a harmless write to the terminator when empty */
    RTM_SET(&t->base, t->heads[bin], b);
    RTM_SET(&t->base, t->bitmap, t->bitmap | (uint64_t)1 << bin);
}

/* Unlinks b from its list, branch-free: the list became empty iff b's
 * predecessor is a pseudo-node and its successor the terminator; its list
 * is then read off the pseudo-node's offset. */
static inline __attribute__((always_inline)) void list_remove(struct rtm_halffit *t, size_t b)
{
    size_t next = NEXT(t, b), prev = PLINK(t, b);
    RTM_SET(&t->base, NEXT(t, prev), next);
    RTM_SET(&t->base, PLINK(t, next), prev);
    size_t bin = (prev - PSEUDO(0)) >> W_LOG2;
    uint64_t empty = (uint64_t)((next == NIL) & (bin < BINS));
    RTM_SET(&t->base, t->bitmap, t->bitmap & ~(empty << (bin & (BINS - 1))));
}

/* ---- positions and pools ------------------------------------------------------ */

static inline size_t rot_granules(size_t rel)
{
    return (rel >> GRANULE_LOG2) | (rel << (sizeof(size_t) * CHAR_BIT - GRANULE_LOG2));
}

static inline const struct hf_pool *pool_at(const struct rtm_halffit *t, size_t off)
{
    return (const struct hf_pool *)(const void *)at_off(t, off);
}

/* The pool whose fragments hold offset b, or NULL. O(1) for the first
 * pool, O(pools) otherwise. */
static inline const struct hf_pool *pool_of(const struct rtm_halffit *t, size_t b)
{
    const struct hf_pool *d = &t->pool0;
    if (__builtin_expect(b - d->start < d->end - d->start, 1))
        return d;
    for (size_t n = d->link.next; n != 0; n = d->link.next) {
        d = pool_at(t, n);
        if (b - d->start < d->end - d->start)
            return d;
    }
    return NULL;
}

/* Whether y is a fragment position of the first pool with room for a
 * minimum fragment before its sentinel: one rotate and compare. */
static inline bool pos0(const struct rtm_halffit *t, size_t y)
{
    size_t start = t->pool0.start;
    return rot_granules(y - start) <= (t->pool0.end - start - MIN_FRAG) >> GRANULE_LOG2;
}

/* A fragment position of a pool other than the first: O(pools). */
static __attribute__((noinline)) bool pos_other(const struct rtm_halffit *t, size_t y)
{
    const struct hf_pool *d = pool_of(t, y);
    return d && ((y - d->start) & (GRANULE - 1)) == 0 && d->end - y >= MIN_FRAG;
}

/* Whether y is a list's pseudo-node. */
static inline bool is_pseudo(size_t y)
{
    size_t rel = y - PSEUDO(0);
    return ((rel >> W_LOG2) | (rel << (sizeof(size_t) * CHAR_BIT - W_LOG2))) < BINS;
}

/* Whether y is what a next link may hold: the terminator or a fragment
 * position; whether y is what a prev link may hold: a pseudo-node or a
 * fragment position. Each is branch-free for the first pool; another pool
 * costs O(pools). The one branch is on the number of pools, which changes
 * only when a pool is added: with a branch on the first pool's test
 * instead (its result predicted true, the other pools tried when false),
 * every link to the list's end or a list head took it, and those come at
 * random: that cost alloc 12 to 17% of its time and free 4 to 7%
 * (docs/speed.md). */
static inline bool next_target_ok(const struct rtm_halffit *t, size_t y)
{
    bool fast = (y == NIL) | pos0(t, y);
    if (__builtin_expect(t->pool_count > 1, 0))
        return fast || pos_other(t, y);
    return fast;
}

static inline bool prev_target_ok(const struct rtm_halffit *t, size_t y)
{
    bool pseudo = is_pseudo(y), pos = pos0(t, y);
    bool fast = pseudo | pos;
    if (__builtin_expect(t->pool_count > 1, 0))
        return fast || pos_other(t, y);
    return fast;
}

/* ---- integrity checks (hardened heaps) ------------------------------------ */

/* Whether an intact free fragment's header lies at y: tagged, free, not
 * one a merge swallowed. Only the tag tells a free fragment from program
 * data that looks like one. */
static inline bool free_header_at(const struct rtm_halffit *t, size_t y)
{
    hword hdr = HDR(t, y);
    bool tagged = tag_ok(t, y, hdr);
    return ((hdr & (F_FREE | F_FENCE | F_GONE)) == F_FREE) & tagged;
}

/* Whether free fragment x's list links are sound: each leads where a link
 * may (next: the terminator or a fragment position; prev: a pseudo-node or
 * a fragment position) and links back to x (safe unlinking). The links lie
 * past the header, beyond the reach of an overflow from the fragment
 * before (which the header's tag catches), so only a stray write can
 * change them, and a fragment a list hands out must pass its own tag
 * (head_ok). A link that may not be followed is replaced by x before
 * anything is read there. */
static __attribute__((noinline)) bool links_ok(const struct rtm_halffit *t, size_t x)
{
    size_t next = NEXT(t, x), prev = PLINK(t, x);
    bool nok = next_target_ok(t, next), pok = prev_target_ok(t, prev);
    size_t ns = nok ? next : x, ps = pok ? prev : x;
    bool back = NEXT(t, ps) == x, fwd = (next == NIL) | (PLINK(t, ns) == x);
    return nok & pok & back & fwd;
}

/* Whether the head b of list bin is an intact free fragment of at least
 * need bytes that links back to the list, whose next link leads to the
 * list's end or to a fragment position that links back to b. */
static inline bool head_ok(const struct rtm_halffit *t, size_t b, unsigned bin, size_t need)
{
    hword hdr = HDR(t, b);
    size_t next = NEXT(t, b);
    bool nok = next_target_ok(t, next);
    size_t ns = nok ? next : b;
    bool own = free_header_at(t, b);
    bool fwd = (next == NIL) | (PLINK(t, ns) == b), back = PLINK(t, b) == PSEUDO(bin);
    return own & (hdr_size(hdr) >= need) & back & nok & fwd;
}

/* Reports damage found by an allocation: out of line, cold. */
static __attribute__((noinline, cold)) size_t alloc_damaged(struct rtm_halffit *t, size_t b,
                                                            const char *what)
{
    rtm__heap_corrupt(&t->base, NULL, at_off(t, b), what);
    return DAMAGED;
}

/*
 * Unlinks and returns the head of the first non-empty list at or above
 * bin, whose fragments all hold at least need bytes; 0 when there is none,
 * DAMAGED (nothing changed, reported) when hard and the head is not intact.
 */
static inline __attribute__((always_inline)) size_t take_head(struct rtm_halffit *t, unsigned bin,
                                                              size_t need, bool hard)
{
    uint64_t lists = t->bitmap & (~(uint64_t)0 << bin);
    if (__builtin_expect(lists == 0, 0))
        return 0;
    unsigned k = (unsigned)__builtin_ctzll(lists);
    size_t b = t->heads[k];
    if (hard && __builtin_expect(!head_ok(t, b, k, need), 0))
        return alloc_damaged(t, b, "free fragment at a list head");
    size_t next = NEXT(t, b);
    RTM_SET(&t->base, t->heads[k], next);
    RTM_SET(&t->base, PLINK(t, next), PSEUDO(k));
    RTM_SET(&t->base, t->bitmap, t->bitmap & ~((uint64_t)(next == NIL) << k));
    return b;
}

/* b is a free fragment of s bytes, unlinked, whose successor's prev says
 * s: makes its first f bytes a used fragment and gives the rest, if any,
 * back to its list (a multiple of GRANULE: it stands alone). */
static inline __attribute__((always_inline)) void take_fragment(struct rtm_halffit *t, size_t b,
                                                                size_t s, size_t f, bool hard)
{
    RTM_ASSERT(f >= MIN_FRAG && (f & (f - 1)) == 0 && s >= f && s % GRANULE == 0);
    size_t rest = s - f;
    if (rest) {
        size_t r = b + f;
        RTM_SET(&t->base, PREV(t, r), (hword)f);
        RTM_SET(&t->base, HDR(t, r), mk_hdr(t, r, rest | F_FREE, hard));
        RTM_SET(&t->base, PREV(t, b + s), (hword)rest);
        list_insert(t, r, rest);
    }
    RTM_SET(&t->base, HDR(t, b), mk_hdr(t, b, f, hard));
    RTM_SET(&t->base, t->used_bytes, t->used_bytes + f);
    RTM_SET(&t->base, t->live_blocks, t->live_blocks + 1);
    if (t->used_bytes > t->peak_used_bytes)
        RTM_SET(&t->base, t->peak_used_bytes, t->used_bytes);
}

/* ---- pools ----------------------------------------------------------------- */

static inline uintptr_t align_up(uintptr_t x, size_t a)
{
    return (x + (a - 1)) & ~(uintptr_t)(a - 1);
}

/* Lays out a pool in [lo, hi) (absolute addresses): the fence, one free
 * fragment and the sentinel. Fills d's start and end; 0, -ENOMEM or -E2BIG. */
static int pool_format(struct rtm_halffit *t, uintptr_t lo, uintptr_t hi, struct hf_pool *d)
{
    /* the fence's header at 16 modulo 32, so that payloads are 32-aligned */
    uintptr_t fence = align_up(lo + HDR_BYTES, GRANULE) - HDR_BYTES;
    uintptr_t first = fence + GRANULE;
    if (fence < lo || first < fence || first > hi || hi - first < MIN_FRAG + HDR_BYTES)
        return -ENOMEM;
    /* The sentinel's header is the pool's last 16 bytes at most: an
     * overflow of up to 16 bytes past the last fragment reaches nothing but
     * the (tagged) sentinel, never the memory placed after the pool. */
    size_t span = (size_t)((hi - HDR_BYTES - first) & ~(uintptr_t)(GRANULE - 1));
    if (span > RTM_HALFFIT_MAX_POOL)
        return -E2BIG;
    bool hard = hardened(t);
    size_t f = off_of(t, (void *)fence);
    d->start = f + GRANULE;
    d->end = d->start + span;
    RTM_SET(&t->base, PREV(t, f), (hword)0);
    RTM_SET(&t->base, HDR(t, f), mk_hdr(t, f, GRANULE | F_FENCE, hard));
    RTM_SET(&t->base, PREV(t, d->start), (hword)GRANULE);
    RTM_SET(&t->base, HDR(t, d->start), mk_hdr(t, d->start, span | F_FREE, hard));
    RTM_SET(&t->base, PREV(t, d->end), (hword)span);
    RTM_SET(&t->base, HDR(t, d->end), mk_hdr(t, d->end, F_FENCE, hard));
    list_insert(t, d->start, span);
    RTM_SET(&t->base, t->usable_bytes, t->usable_bytes + span);
    RTM_SET(&t->base, t->pool_count, t->pool_count + 1);
    return 0;
}

/* A fragment position and the pool it lies in (two words: returned in
 * registers). "None" is NOWHERE, whose header reads as a fence: is_live
 * refuses it. */
struct frag_pos {
    size_t b;
    const struct hf_pool *d;
};

/* frag_at for what the first pool's one-compare test let through: NULL,
 * misaligned pointers, other pools (O(pools)) and foreign addresses. */
static __attribute__((noinline)) struct frag_pos frag_at_slow(const struct rtm_halffit *t,
                                                              const void *p)
{
    struct frag_pos none = { NOWHERE, &t->pool0 };
    if ((uintptr_t)p & (GRANULE - 1))
        return none;
    size_t b = off_of(t, p) - HDR_BYTES;
    const struct hf_pool *d = pool_of(t, b);
    if (!d || ((b - d->start) & (GRANULE - 1)) != 0 || d->end - b < MIN_FRAG)
        return none;
    return (struct frag_pos){ b, d };
}

/* The fragment position a payload p would have, if it is one in some pool
 * with room for a fragment before the pool's sentinel. The first pool takes
 * one test: rotating rel right by the granule bits turns any misaligned rel
 * into a huge value, and NULL fails it too. */
static inline struct frag_pos frag_at(const struct rtm_halffit *t, const void *p)
{
    size_t start = t->pool0.start, end = t->pool0.end;
    size_t rel = off_of(t, p) - HDR_BYTES - start;
    if (__builtin_expect(rot_granules(rel) > (end - start - MIN_FRAG) >> GRANULE_LOG2, 0))
        return frag_at_slow(t, p);
    return (struct frag_pos){ start + rel, &t->pool0 };
}

/* Whether the header at a position holds a live fragment: used, not a
 * fence or a swallowed header, a power of two inside the pool (one
 * unsigned compare: a size below MIN_FRAG wraps around). */
static inline bool is_live(struct frag_pos at, hword hdr)
{
    size_t size = hdr_size(hdr);
    return !(hdr & (F_FREE | F_FENCE | F_GONE)) & ((size & (size - 1)) == 0) &
           (size - MIN_FRAG <= at.d->end - at.b - MIN_FRAG);
}

/*
 * What free makes of a fragment and its neighbours: everything it reads
 * before it writes. free_plan fills it and says whether the fragment may
 * be freed; free_commit changes the heap. realloc plans a free before it
 * changes anything, so that a refusal leaves the heap as it was.
 */
struct free_plan {
    size_t b, size; /* the fragment */
    hword hdr;
    size_t n;     /* its successor */
    hword nh;     /* and that one's header */
    size_t pb;    /* its predecessor */
    size_t psize; /* and that one's size */
    bool nfree, pfree;
};

/* Why free refused p: 1 for NULL (nothing to free), -EINVAL for what is no
 * live block, -EFAULT (reported) for damage. Out of line and cold. */
static __attribute__((noinline, cold)) int free_refused(struct rtm_halffit *t, const void *p,
                                                        struct frag_pos at, bool hard)
{
    if (!p)
        return 1;
    if (!hard || at.b == NOWHERE)
        return -EINVAL;
    hword hdr = HDR(t, at.b);
    /* a header a merge swallowed: the mark over its old, valid tag */
    if ((hdr & F_GONE) && tag_ok(t, at.b, hdr & ~F_GONE))
        return -EINVAL;
    if (!tag_ok(t, at.b, hdr)) {
        rtm__heap_corrupt(&t->base, p, at_off(t, at.b), "fragment header");
        return -EFAULT;
    }
    if (hdr & (F_FREE | F_FENCE | F_GONE))
        return -EINVAL; /* a free fragment (a double free) or a fence */
    rtm__heap_corrupt(&t->base, p, at_off(t, at.b), "fragment size");
    return -EFAULT;
}

/* Reports damage found by a free or a realloc (which then refuses with
 * -EFAULT): out of line, cold. */
static __attribute__((noinline, cold)) void free_damaged(struct rtm_halffit *t, const void *p,
                                                         size_t where, const char *what)
{
    rtm__heap_corrupt(&t->base, p, at_off(t, where), what);
}

/*
 * Hardened, before anything is written: the fragment's tag, its
 * successor's tag and prev word (the fragment's size), and the fragment's
 * own prev word: a multiple of the granule that stays inside the pool (the
 * fence, at start - GRANULE, is the lowest) and leads to a tagged header of
 * that size, not swallowed. An impossible size reads the fragment's own
 * header instead, which fails the size compare: nothing outside the pool
 * is read. Branch-free but for the test of the result.
 */
static inline bool frag_ok(const struct rtm_halffit *t, const struct free_plan *f, size_t start)
{
    bool own = tag_ok(t, f->b, f->hdr), next = tag_ok(t, f->n, f->nh);
    bool tie = PREV(t, f->n) == f->size;
    bool in = ((f->psize & (GRANULE - 1)) == 0) & (f->psize - GRANULE <= f->b - start);
    size_t pq = in ? f->pb : f->b;
    hword ph = HDR(t, pq);
    bool ptag = tag_ok(t, pq, ph);
    bool prev = in & ptag & (hdr_size(ph) == f->psize) & !(ph & F_GONE);
    return own & next & tie & prev;
}

/* Reports what frag_ok refused for the fragment at b: read again here,
 * out of line and cold, so that the plan stays in registers. */
static __attribute__((noinline, cold)) void frag_damaged(struct rtm_halffit *t, const void *p,
                                                         size_t b)
{
    hword hdr = HDR(t, b);
    size_t n = b + hdr_size(hdr);
    if (!tag_ok(t, b, hdr))
        free_damaged(t, p, b, "fragment header");
    else if (!tag_ok(t, n, HDR(t, n)) || PREV(t, n) != hdr_size(hdr))
        free_damaged(t, p, n, "next fragment's header");
    else
        free_damaged(t, p, b, "previous fragment's size");
}

/*
 * Plans the free of p: 0 when it may go ahead, 1 for NULL, else the
 * negative errno free returns. Hardened, frag_ok and the links of every
 * free neighbour are verified first: O(1), O(pools) for a position in
 * another pool than the first.
 */
static inline __attribute__((always_inline)) int free_plan(struct rtm_halffit *t, const void *p,
                                                           struct free_plan *f, bool hard)
{
    struct frag_pos at = frag_at(t, p);
    f->hdr = HDR(t, at.b);
    if (__builtin_expect(!is_live(at, f->hdr), 0)) {
        int rc = free_refused(t, p, at, hard);
        if (rc == 0)
            __builtin_unreachable(); /* free_refused never answers 0 */
        return rc;
    }
    f->b = at.b;
    f->size = hdr_size(f->hdr);
    f->n = f->b + f->size;
    f->nh = HDR(t, f->n);
    f->psize = (size_t)PREV(t, f->b);
    f->pb = f->b - f->psize;
    if (hard && __builtin_expect(!frag_ok(t, f, at.d->start), 0)) {
        frag_damaged(t, p, f->b);
        return -EFAULT;
    }
    f->nfree = (f->nh & F_FREE) != 0;
    f->pfree = (HDR(t, f->pb) & F_FREE) != 0;
    if (hard) {
        if (f->nfree && __builtin_expect(!links_ok(t, f->n), 0)) {
            free_damaged(t, p, f->n, "free-list links of the next fragment");
            return -EFAULT;
        }
        if (f->pfree && __builtin_expect(!links_ok(t, f->pb), 0)) {
            free_damaged(t, p, f->pb, "free-list links of the previous fragment");
            return -EFAULT;
        }
    }
    return 0;
}

/* Gives fragment b of size bytes, free now, its header, boundary tag and
 * list. */
static inline __attribute__((always_inline)) void put_free(struct rtm_halffit *t, size_t b,
                                                           size_t size, bool hard)
{
    RTM_SET(&t->base, HDR(t, b), mk_hdr(t, b, size | F_FREE, hard));
    RTM_SET(&t->base, PREV(t, b + size), (hword)size);
    list_insert(t, b, size);
}

/* The free of live fragment b (verified by free_plan) when a neighbour is
 * free: out of line (most frees find none: the lists hand out the
 * fragments freed last, between live ones), its fields read again here, so
 * that the common path keeps few registers and spills nothing. The headers
 * a merge swallows are marked (this fragment's, when it joins its
 * predecessor; the successor's, hardened: unhardened, a free header refuses
 * a second free as well): a second free of either pointer is refused. */
static __attribute__((noinline)) void free_merge(struct rtm_halffit *t, size_t b, bool hard)
{
    hword hdr = HDR(t, b);
    size_t size = hdr_size(hdr), n = b + size, psize = (size_t)PREV(t, b), pb = b - psize;
    hword nh = HDR(t, n);
    if (nh & F_FREE) {
        list_remove(t, n);
        if (hard)
            RTM_SET(&t->base, HDR(t, n), nh | F_GONE);
        size += hdr_size(nh);
    }
    if (HDR(t, pb) & F_FREE) {
        list_remove(t, pb);
        RTM_SET(&t->base, HDR(t, b), hdr | F_GONE);
        b = pb;
        size += psize;
    }
    put_free(t, b, size, hard);
}

static inline __attribute__((always_inline)) void free_commit(struct rtm_halffit *t,
                                                              const struct free_plan *f, bool hard)
{
    RTM_ASSERT(t->used_bytes >= f->size && t->live_blocks > 0);
    RTM_SET(&t->base, t->used_bytes, t->used_bytes - f->size);
    RTM_SET(&t->base, t->live_blocks, t->live_blocks - 1);
    if (__builtin_expect(f->nfree | f->pfree, 0))
        free_merge(t, f->b, hard);
    else
        put_free(t, f->b, f->size, hard);
}

static inline __attribute__((always_inline)) int hf_free(struct rtm_halffit *t, void *p, bool hard)
{
    struct free_plan f;
    int rc = free_plan(t, p, &f, hard);
    if (__builtin_expect(rc != 0, 0))
        return rc < 0 ? rc : 0;
    free_commit(t, &f, hard);
    return 0;
}

/* Offset of the live fragment whose payload is p, or 0 if p is none (nor,
 * hard, one with an intact header). */
static inline size_t live_fragment(const struct rtm_halffit *t, const void *p, bool hard)
{
    struct frag_pos at = frag_at(t, p);
    hword hdr = HDR(t, at.b);
    if (!is_live(at, hdr) || (hard && !tag_ok(t, at.b, hdr)))
        return 0;
    return at.b;
}

/* ---- public API ---------------------------------------------------------- */

#if !RTM_LOGGED /* the logged copy (halffit_logged.c) has the operations that change a heap only */
struct rtm_halffit *rtm_halffit_create(void *mem, size_t size)
{
    return rtm_halffit_create_ex(mem, size, NULL);
}

struct rtm_halffit *rtm_halffit_create_ex(void *mem, size_t size, const struct rtm_heap_config *cfg)
{
    if (!(cfg = rtm_kind_config(cfg)))
        return NULL;
    int err;
    uintptr_t ctl =
        rtm_kind_place(mem, size, _Alignof(struct rtm_halffit), sizeof(struct rtm_halffit), &err);
    if (!ctl) {
        errno = err;
        return NULL;
    }
    struct rtm_halffit *t = (struct rtm_halffit *)ctl;
    memset(t, 0, sizeof(*t));
    rtm_kind_init(&t->base, RTM_KIND_HALFFIT, cfg, mem);
    HDR(t, NIL) = F_FENCE;
    NEXT(t, NIL) = NIL;
    PLINK(t, NIL) = NIL;
    HDR(t, NOWHERE) = F_FENCE;
    for (unsigned k = 0; k < BINS; k++)
        t->heads[k] = NIL;
    t->pool0.link.raw_start = off_of(t, mem);
    t->pool0.link.raw_len = size;
    int rc = pool_format(t, ctl + sizeof(*t), (uintptr_t)mem + size, &t->pool0);
    if (rc) {
        errno = -rc;
        return NULL;
    }
    t->overhead_bytes = size - t->usable_bytes;
    t->base.magic = RTM_HEAP_MAGIC;
    return t;
}

struct rtm_heap *rtm_halffit_heap(struct rtm_halffit *h)
{
    return h ? &h->base : NULL;
}

size_t rtm_halffit_fragment_size(size_t size)
{
    return size > RTM_HALFFIT_MAX_REQUEST ? 0 : (size_t)1 << class_of(size);
}
#endif /* !RTM_LOGGED */

static int add_pool_entry(struct rtm_halffit *t, void *mem, size_t size)
{
    if (!t)
        return -EINVAL;
    uintptr_t dp;
    int rc = rtm_kind_pool_room(t, &t->pool0.link, mem, size, _Alignof(struct hf_pool),
                                sizeof(struct hf_pool), &dp);
    if (rc)
        return rc;
    struct hf_pool *d = (struct hf_pool *)dp;
    struct hf_pool nd = {
        .link = { .next = t->pool0.link.next, .raw_start = off_of(t, mem), .raw_len = size },
    };
    size_t usable_before = t->usable_bytes;
    rc = pool_format(t, dp + sizeof(*d), (uintptr_t)mem + size, &nd);
    if (rc)
        return rc;
    *d = nd; /* memory the heap did not have: nothing to undo there */
    RTM_SET(&t->base, t->pool0.link.next, off_of(t, d));
    RTM_SET(&t->base, t->overhead_bytes,
            t->overhead_bytes + size - (t->usable_bytes - usable_before));
    return 0;
}

/* ---- alloc, free, realloc: each body once, instantiated per level --------- */

static __attribute__((noinline, cold)) void *alloc_failed(struct rtm_halffit *t)
{
    RTM_SET(&t->base, t->base.failed_allocs, t->base.failed_allocs + 1);
    return NULL;
}

static inline __attribute__((always_inline)) void *hf_alloc(struct rtm_halffit *t, size_t size,
                                                            bool hard)
{
    if (__builtin_expect(size > RTM_HALFFIT_MAX_REQUEST, 0))
        return alloc_failed(t);
    unsigned k = class_of(size);
    size_t f = (size_t)1 << k;
    size_t b = take_head(t, k, f, hard);
    if (__builtin_expect(b <= DAMAGED, 0))
        return alloc_failed(t);
    take_fragment(t, b, hdr_size(HDR(t, b)), f, hard);
    return payload(t, b);
}

static inline void *hf_aligned_alloc(struct rtm_halffit *t, size_t alignment, size_t size,
                                     bool hard)
{
    if (alignment == 0 || (alignment & (alignment - 1)))
        return alloc_failed(t);
    if (alignment <= GRANULE)
        return hf_alloc(t, size, hard);
    if (size > RTM_HALFFIT_MAX_REQUEST || alignment > RTM_HALFFIT_MAX_FRAGMENT)
        return alloc_failed(t);
    size_t f = (size_t)1 << class_of(size);
    /* Room for the worst gap before an aligned payload: payloads are
     * GRANULE-aligned, so the gap is a multiple of it below alignment. */
    size_t need = f + alignment - GRANULE;
    if (need > RTM_HALFFIT_MAX_FRAGMENT)
        return alloc_failed(t);
    size_t b = take_head(t, fls_size(need - 1) + 1, need, hard);
    if (b <= DAMAGED)
        return alloc_failed(t);
    size_t s = hdr_size(HDR(t, b));
    uintptr_t p = (uintptr_t)payload(t, b);
    size_t gap = (size_t)(align_up(p, alignment) - p);
    if (gap != 0) {
        /* The gap becomes a free fragment of its own; its predecessor is
         * used (free fragments never touch), so nothing merges. */
        RTM_SET(&t->base, HDR(t, b), mk_hdr(t, b, gap | F_FREE, hard));
        list_insert(t, b, gap);
        b += gap;
        s -= gap;
        RTM_SET(&t->base, PREV(t, b), (hword)gap);
        RTM_SET(&t->base, PREV(t, b + s), (hword)s);
    }
    take_fragment(t, b, s, f, hard);
    return payload(t, b);
}

static __attribute__((noinline, cold)) void *realloc_refused(struct rtm_halffit *t)
{
    return alloc_failed(t);
}

/* Grows live fragment b (the plan's) into its free successor, whose header
 * and links the plan verified: the fragment becomes f bytes, the rest of
 * the two a free fragment. */
static void grow_in_place(struct rtm_halffit *t, const struct free_plan *pl, size_t f, bool hard)
{
    size_t b = pl->b, joined = pl->size + hdr_size(pl->nh);
    list_remove(t, pl->n);
    RTM_SET(&t->base, HDR(t, pl->n), pl->nh | F_GONE);
    size_t rest = joined - f;
    if (rest) {
        size_t r = b + f;
        RTM_SET(&t->base, PREV(t, r), (hword)f);
        RTM_SET(&t->base, HDR(t, r), mk_hdr(t, r, rest | F_FREE, hard));
        list_insert(t, r, rest);
    }
    RTM_SET(&t->base, PREV(t, b + joined), (hword)(rest ? rest : f));
    RTM_SET(&t->base, HDR(t, b), mk_hdr(t, b, f, hard));
    RTM_SET(&t->base, t->used_bytes, t->used_bytes + f - pl->size);
    if (t->used_bytes > t->peak_used_bytes)
        RTM_SET(&t->base, t->peak_used_bytes, t->used_bytes);
}

/* Splits live fragment b (the plan's) down to f bytes in place, the rest
 * (merged with a free successor) given back: only when no list holds a
 * fragment to move it to. */
static void shrink_in_place(struct rtm_halffit *t, const struct free_plan *pl, size_t f, bool hard)
{
    size_t b = pl->b, rest = pl->size - f;
    if (pl->nfree) {
        list_remove(t, pl->n);
        RTM_SET(&t->base, HDR(t, pl->n), pl->nh | F_GONE);
        rest += hdr_size(pl->nh);
    }
    size_t r = b + f;
    RTM_SET(&t->base, HDR(t, b), mk_hdr(t, b, f, hard));
    RTM_SET(&t->base, PREV(t, r), (hword)f);
    RTM_SET(&t->base, HDR(t, r), mk_hdr(t, r, rest | F_FREE, hard));
    RTM_SET(&t->base, PREV(t, r + rest), (hword)rest);
    list_insert(t, r, rest);
    RTM_SET(&t->base, t->used_bytes, t->used_bytes - (pl->size - f));
}

/*
 * Hardened, everything realloc will trust is verified before it writes:
 * the fragment and its neighbours as free verifies them (free_plan) and,
 * growing into its free successor, the header after that one.
 */
static inline void *hf_realloc(struct rtm_halffit *t, void *p, size_t size, bool hard)
{
    if (!p)
        return hf_alloc(t, size, hard);
    struct free_plan pl;
    if (free_plan(t, p, &pl, hard) != 0 || size > RTM_HALFFIT_MAX_REQUEST)
        return realloc_refused(t);
    unsigned k = class_of(size);
    size_t f = (size_t)1 << k;
    if (f == pl.size)
        return p;
    if (f > pl.size && pl.nfree && pl.size + hdr_size(pl.nh) >= f) {
        if (hard) {
            size_t after = pl.n + hdr_size(pl.nh);
            hword ah = HDR(t, after); /* used: free fragments never touch */
            if ((ah & F_FREE) || !tag_ok(t, after, ah) || PREV(t, after) != hdr_size(pl.nh)) {
                free_damaged(t, p, after, "header after the next free fragment");
                return realloc_refused(t);
            }
        }
        grow_in_place(t, &pl, f, hard);
        return p;
    }
    /* Moving: to a fragment the lists choose. */
    size_t b = take_head(t, k, f, hard);
    if (b == 0 && f < pl.size) {
        shrink_in_place(t, &pl, f, hard);
        return p;
    }
    if (b <= DAMAGED)
        return realloc_refused(t);
    take_fragment(t, b, hdr_size(HDR(t, b)), f, hard);
    void *q = payload(t, b);
    size_t keep = (f < pl.size ? f : pl.size) - HDR_BYTES;
    RTM_NOTE_BLOCK(&t->base, q, keep);
    memcpy(q, p, keep);
    hf_free(t, p, hard); /* planned above: nothing it trusts has changed but by this heap */
    return q;
}

/*
 * Entry points: the level is fixed at create, so each call takes one
 * predictable branch to the body compiled for it, a function of its own
 * (a jump, not a call): each level's body saves only the registers it
 * uses. The default level comes first; RTM_HEAP_HARDEN_FULL adds its
 * periodic check.
 */
#define LEVEL_IS(t, l)                                           \
    __builtin_expect((t)->base.hardening == RTM_HEAP_HARDEN_##l, \
                     RTM_HEAP_HARDEN_##l == RTM_HEAP_HARDEN_O1)

static __attribute__((noinline)) void *alloc_o1(struct rtm_halffit *t, size_t size)
{
    return hf_alloc(t, size, true);
}

static __attribute__((noinline)) void *alloc_none(struct rtm_halffit *t, size_t size)
{
    return hf_alloc(t, size, false);
}

static __attribute__((noinline)) void *alloc_full(struct rtm_halffit *t, size_t size)
{
    if (rtm__heap_periodic_check(&t->base))
        return alloc_failed(t);
    return hf_alloc(t, size, true);
}

static inline __attribute__((always_inline)) void *alloc_entry(struct rtm_halffit *t, size_t size)
{
    if (LEVEL_IS(t, O1))
        return alloc_o1(t, size);
    if (LEVEL_IS(t, NONE))
        return alloc_none(t, size);
    return alloc_full(t, size);
}

static inline void *aligned_entry(struct rtm_halffit *t, size_t alignment, size_t size)
{
    if (LEVEL_IS(t, NONE))
        return hf_aligned_alloc(t, alignment, size, false);
    if (LEVEL_IS(t, FULL) && rtm__heap_periodic_check(&t->base))
        return alloc_failed(t);
    return hf_aligned_alloc(t, alignment, size, true);
}

static inline void *realloc_entry(struct rtm_halffit *t, void *p, size_t size)
{
    if (LEVEL_IS(t, NONE))
        return hf_realloc(t, p, size, false);
    if (LEVEL_IS(t, FULL) && rtm__heap_periodic_check(&t->base))
        return alloc_failed(t);
    return hf_realloc(t, p, size, true);
}

static __attribute__((noinline)) int free_o1(struct rtm_halffit *t, void *p)
{
    return hf_free(t, p, true);
}

static __attribute__((noinline)) int free_none(struct rtm_halffit *t, void *p)
{
    return hf_free(t, p, false);
}

static __attribute__((noinline)) int free_full(struct rtm_halffit *t, void *p)
{
    if (rtm__heap_periodic_check(&t->base))
        return -EFAULT;
    return hf_free(t, p, true);
}

static inline __attribute__((always_inline)) int free_entry(struct rtm_halffit *t, void *p)
{
    if (LEVEL_IS(t, O1))
        return free_o1(t, p);
    if (LEVEL_IS(t, NONE))
        return free_none(t, p);
    return free_full(t, p);
}

#if RTM_LOGGED

/* ---- the logged operations (store.h) ------------------------------------ */

#define T(h) ((struct rtm_halffit *)(void *)(h))

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
    const struct rtm_halffit *t = (const struct rtm_halffit *)(const void *)h;
    return hdr_size(HDR(t, off_of(t, p) - HDR_BYTES)) - HDR_BYTES;
}

const struct rtm_heap_wops rtm__halffit_logged_ops = {
    .alloc = logged_alloc,
    .aligned_alloc = logged_aligned,
    .realloc = logged_realloc,
    .free = logged_free,
    .add_pool = logged_add_pool,
    .taken_size = logged_taken_size,
};

#else /* the plain copy: the typed API, the read-only calls, the kind's entry */

int rtm_halffit_add_pool(struct rtm_halffit *h, void *mem, size_t size)
{
    return add_pool_entry(h, mem, size);
}

void *rtm_halffit_alloc(struct rtm_halffit *h, size_t size)
{
    return alloc_entry(h, size);
}

void *rtm_halffit_aligned_alloc(struct rtm_halffit *h, size_t alignment, size_t size)
{
    return aligned_entry(h, alignment, size);
}

void *rtm_halffit_realloc(struct rtm_halffit *h, void *p, size_t size)
{
    return realloc_entry(h, p, size);
}

int rtm_halffit_free(struct rtm_halffit *h, void *p)
{
    return free_entry(h, p);
}

size_t rtm_halffit_usable_size(const struct rtm_halffit *h, const void *p)
{
    if (!h || !p)
        return 0;
    size_t b = live_fragment(h, p, hardened(h));
    return b ? hdr_size(HDR(h, b)) - HDR_BYTES : 0;
}

/* The largest request alloc would satisfy now: 2^k - 16 for the highest
 * non-empty list k; 0 when (hardened) its head is damaged, as alloc would
 * refuse it. */
static size_t largest_request(const struct rtm_halffit *t)
{
    if (!t->bitmap)
        return 0;
    unsigned k = fls64(t->bitmap);
    size_t f = (size_t)1 << k;
    if (hardened(t) && !head_ok(t, t->heads[k], k, f))
        return 0;
    return f - HDR_BYTES;
}

int rtm_halffit_stats(const struct rtm_halffit *h, struct rtm_heap_stats *out)
{
    if (!h || !out || h->base.magic != RTM_HEAP_MAGIC)
        return -EINVAL;
    out->usable_bytes = h->usable_bytes;
    out->used_bytes = h->used_bytes;
    out->free_bytes = h->usable_bytes - h->used_bytes;
    out->peak_used_bytes = h->peak_used_bytes;
    out->largest_free_bytes = largest_request(h);
    out->live_blocks = h->live_blocks;
    out->overhead_bytes = h->overhead_bytes;
    out->pool_count = h->pool_count;
    out->failed_allocs = h->base.failed_allocs;
    out->corruptions = h->base.corruptions;
    return 0;
}

/* ---- consistency walk ------------------------------------------------------ */

#define CHECK(cond)         \
    do {                    \
        if (!(cond))        \
            return -EFAULT; \
    } while (0)

/* Order-independent signature of a set of fragment offsets: the free
 * fragments of the physical walk and those of the lists must be one set. */
static inline uint64_t sig_of(size_t b)
{
    uint64_t z = (uint64_t)b * 0x9e3779b97f4a7c15ull;
    return (z ^ (z >> 29)) * 0xbf58476d1ce4e5b9ull;
}

/* The tallies of a walk over the pools. */
struct tally {
    size_t used, live, free_bytes, free_frags;
    uint64_t sig;
};

/* One pool, fence to sentinel: tags, sizes, boundary tags, flags. */
static int check_pool(const struct rtm_halffit *t, const struct hf_pool *d, struct tally *c)
{
    bool hard = hardened(t);
    CHECK(d->end > d->start && d->start - d->link.raw_start < d->link.raw_len &&
          d->end - d->start < d->link.raw_len && d->end - d->link.raw_start < d->link.raw_len);
    CHECK((d->end - d->start) % GRANULE == 0 && d->end - d->start <= RTM_HALFFIT_MAX_POOL);
    size_t fence = d->start - GRANULE;
    CHECK(d->start - d->link.raw_start >= GRANULE);
    hword fh = HDR(t, fence);
    CHECK(fh == mk_hdr(t, fence, GRANULE | F_FENCE, hard) && PREV(t, fence) == 0);
    size_t b = d->start, prev = GRANULE;
    bool prev_free = false;
    while (b != d->end) {
        CHECK(d->end - b >= MIN_FRAG);
        hword hdr = HDR(t, b);
        size_t size = hdr_size(hdr);
        CHECK(!hard || tag_ok(t, b, hdr));
        CHECK((hdr & SIZE_MASK) == size && !(hdr & (F_FENCE | F_GONE)));
        CHECK(size >= MIN_FRAG && size <= d->end - b && PREV(t, b) == prev);
        if (hdr & F_FREE) {
            CHECK(!prev_free); /* coalescing is complete */
            c->free_bytes += size;
            c->free_frags++;
            c->sig += sig_of(b);
        } else {
            CHECK((size & (size - 1)) == 0);
            c->used += size;
            c->live++;
        }
        prev_free = (hdr & F_FREE) != 0;
        prev = size;
        b += size;
    }
    hword sh = HDR(t, d->end);
    CHECK(sh == mk_hdr(t, d->end, F_FENCE, hard) && PREV(t, d->end) == prev);
    return 0;
}

int rtm_halffit_check(const struct rtm_halffit *h)
{
    if (!h || h->base.magic != RTM_HEAP_MAGIC || h->base.kind != RTM_KIND_HALFFIT)
        return -EINVAL;
    const struct rtm_halffit *t = h;
    struct tally c = { 0 };
    size_t pools = 0;
    for (const struct hf_pool *d = &t->pool0;; d = pool_at(t, d->link.next)) {
        CHECK(++pools <= t->pool_count);
        int rc = check_pool(t, d, &c);
        if (rc)
            return rc;
        if (d->link.next == 0)
            break;
    }
    CHECK(pools == t->pool_count);
    CHECK(c.used == t->used_bytes && c.live == t->live_blocks);
    CHECK(c.used + c.free_bytes == t->usable_bytes);
    CHECK(t->peak_used_bytes >= t->used_bytes && t->peak_used_bytes <= t->usable_bytes);

    size_t listed = 0;
    uint64_t list_sig = 0;
    for (unsigned k = 0; k < BINS; k++) {
        size_t b = t->heads[k];
        CHECK(((t->bitmap >> k) & 1u) == (b != NIL));
        size_t prev = PSEUDO(k);
        while (b != NIL) {
            CHECK(++listed <= c.free_frags); /* also bounds a cyclic list */
            const struct hf_pool *d = pool_of(t, b);
            /* a fragment position, before its words are read */
            CHECK(d && ((b - d->start) & (GRANULE - 1)) == 0 && d->end - b >= MIN_FRAG);
            hword hdr = HDR(t, b);
            size_t size = hdr_size(hdr);
            CHECK((hdr & (F_FREE | F_FENCE | F_GONE)) == F_FREE && size <= d->end - b);
            CHECK(size >= MIN_FRAG && bin_of(size) == k);
            CHECK(PLINK(t, b) == prev);
            list_sig += sig_of(b);
            prev = b;
            b = NEXT(t, b);
        }
    }
    CHECK(listed == c.free_frags && list_sig == c.sig); /* the lists hold the free fragments */
    return 0;
}

/* ---- layout, for memory another process wrote -------------------------------- */

/*
 * Whether the pool whose descriptor d lies at a placed offset holds
 * together inside [0, bytes): its fence at or after lo (the end of the
 * structure that holds d), fragment positions that give 32-aligned
 * payloads, the sentinel's header inside bytes; the memory given for the
 * pool covers d and all of that. Its fragments' size goes to *span. Reads
 * d only. Bounds by subtraction: nothing overflows.
 */
static int validate_pool(const void *base, const struct rtm_pool_link *link, size_t lo,
                         size_t bytes, size_t *span)
{
    const struct rtm_halffit *t = base;
    const struct hf_pool *d = (const struct hf_pool *)(const void *)link;
    size_t start = d->start, end = d->end;
    CHECK(start >= lo && start - lo >= GRANULE && start < end && end < bytes &&
          bytes - end >= HDR_BYTES);
    CHECK(((uintptr_t)t + start + HDR_BYTES) % GRANULE == 0 && (end - start) % GRANULE == 0);
    CHECK(end - start >= MIN_FRAG && end - start <= RTM_HALFFIT_MAX_POOL);
    /* descriptor, fence, fragments and sentinel, in that order in the raw
     * memory (whose start may lie below the heap base: modulo 2^N) */
    size_t raw = d->link.raw_start;
    CHECK(off_of(t, d) - raw <= end + HDR_BYTES - raw && end + HDR_BYTES - raw <= d->link.raw_len);
    *span = end - start;
    return 0;
}

/*
 * The kind's validate op (kind.h): the control structure inside bytes, and
 * every pool as validate_pool says; pool_count descriptors, whose fragments
 * add up to usable_bytes and whose memory to usable_bytes + overhead_bytes.
 * Each pool holds at least MIN_FRAG usable bytes, so the walk ends after
 * min(pool_count, bytes / MIN_FRAG) + 1 descriptors, a cyclic list
 * included. O(pools).
 */
static int hf_validate(const struct rtm_heap *h, size_t bytes)
{
    const struct rtm_halffit *t = (const struct rtm_halffit *)(const void *)h;
    CHECK((uintptr_t)t % _Alignof(struct rtm_halffit) == 0 && bytes >= sizeof(*t));
    CHECK(t->base.kind == RTM_KIND_HALFFIT);
    return rtm_kind_validate_pools(t, bytes, sizeof(*t), &t->pool0.link, t->pool_count,
                                   t->usable_bytes, t->overhead_bytes, sizeof(struct hf_pool),
                                   _Alignof(struct hf_pool), validate_pool);
}

/* ---- generic interface --------------------------------------------------- */

static struct rtm_heap *ops_create(void *mem, size_t size, const struct rtm_heap_config *cfg)
{
    return rtm_halffit_heap(rtm_halffit_create_ex(mem, size, cfg));
}

#define T(h)  ((struct rtm_halffit *)(void *)(h))
#define CT(h) ((const struct rtm_halffit *)(const void *)(h))

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
    return rtm_halffit_usable_size(CT(h), p);
}
static int ops_add_pool(struct rtm_heap *h, void *m, size_t n)
{
    return add_pool_entry(T(h), m, n);
}
static int ops_stats(const struct rtm_heap *h, struct rtm_heap_stats *o)
{
    return rtm_halffit_stats(CT(h), o);
}
static int ops_check(const struct rtm_heap *h)
{
    return rtm_halffit_check(CT(h));
}

/* Exact (rtmem/halffit.h, "Fill guarantee"): a fresh pool keeps one free
 * fragment, its rest, and gives a fragment of f while the rest holds it. */
static size_t ops_fill_count(const struct rtm_heap *h, size_t n)
{
    const struct rtm_halffit *t = CT(h);
    size_t f = rtm_halffit_fragment_size(n), count = 0;
    if (f == 0)
        return 0;
    for (const struct hf_pool *d = &t->pool0;; d = pool_at(t, d->link.next)) {
        count += (d->end - d->start) / f;
        if (d->link.next == 0)
            return count;
    }
}

static int ops_walk(const struct rtm_heap *h, int (*fn)(void *arg, void *block), void *arg)
{
    const struct rtm_halffit *t = CT(h);
    size_t pools = 0;
    for (const struct hf_pool *d = &t->pool0;; d = pool_at(t, d->link.next)) {
        if (++pools > t->pool_count || d->end - d->start >= d->link.raw_len)
            return -EFAULT;
        for (size_t b = d->start; b != d->end;) {
            hword hdr = HDR(t, b);
            size_t size = hdr_size(hdr);
            if (size < MIN_FRAG || size > d->end - b)
                return -EFAULT;
            if (!(hdr & F_FREE)) {
                int rc = fn(arg, payload(t, b));
                if (rc)
                    return rc;
            }
            b += size;
        }
        if (d->link.next == 0)
            return 0;
    }
}

/* ---- pool bound (rtm_heap_pool_bound: heap.h, rtmem/halffit.h) ------------- */

/* Products of the bound are formed wider than size_t: on 64-bit, M times a
 * fragment size can pass 2^64 before the division that brings it back. */
#if SIZE_MAX > 0xffffffffu
__extension__ typedef unsigned __int128 wide;
#else
typedef uint64_t wide;
#endif

static size_t frag_of(size_t r)
{
    return (size_t)1 << class_of(r);
}

/*
 * The figure of rtmem/halffit.h, "Worst-case fragmentation": the usable
 * bytes a pool needs, or 0 when the limits are beyond any pool (errno
 * E2BIG) or the figure beyond a size_t (EOVERFLOW).
 */
static size_t hf_pool_bound(const struct rtm_heap_limits *lim)
{
    size_t M = lim->max_live, n = lim->max_block, m = lim->min_block;
    size_t a = lim->max_align > GRANULE ? lim->max_align : 0;
    if (n > RTM_HALFFIT_MAX_REQUEST || a > RTM_HALFFIT_MAX_FRAGMENT ||
        (a && frag_of(n) + a - GRANULE > RTM_HALFFIT_MAX_FRAGMENT)) {
        errno = E2BIG;
        return 0;
    }
    /* rho = F(c) / c, the most fragment bytes per requested byte: at m, or
     * at the first request past m whose fragment doubles (F(m) - 15), whose
     * ratio 2 F(m) / (F(m) - 15) is the larger iff 2 m + 15 > F(m) */
    size_t fm = frag_of(m), c = m;
    if (2 * (wide)m + 15 > fm && fm - 15 <= n)
        c = fm - 15;
    wide fc = frag_of(c);
    wide mf = (wide)M * fc / c; /* M_f: the live fragments' bytes at most */
    unsigned classes = class_of(n) - class_of(m);
    wide worst = mf * (1 + classes);
    if (a) {
        /* any placement: at a failure of r, at most L + 1 free fragments,
         * each below S(r); the smallest r of each class of S maximises */
        for (unsigned k = class_of(m); k <= class_of(n); k++) {
            size_t r = k == MIN_LOG2 ? m : ((size_t)1 << (k - 1)) - HDR_BYTES + 1;
            if (r < m)
                r = m;
            size_t fr = (size_t)1 << k;
            size_t s = (size_t)1 << (fls_size(fr + a - GRANULE - 1) + 1);
            wide live = M - r;
            wide x = live * fc / c + (live / m + 1) * (s - GRANULE);
            if (x > worst)
                worst = x;
        }
    }
    /* whole granules, and one more: a failure needs usable <= worst */
    wide usable = (worst / GRANULE + 1) * GRANULE;
    /* A region this large, or a little larger (alignment trims, a lock's
     * rounding), must still make a pool create accepts. */
    if (usable > RTM_HALFFIT_MAX_POOL - 4096) {
        errno = usable > SIZE_MAX / 2 ? EOVERFLOW : E2BIG;
        return 0;
    }
    /* create: the control structure at its alignment, the fence's
     * alignment and itself, the sentinel, the span's rounding */
    return (size_t)usable + sizeof(struct rtm_halffit) + _Alignof(struct rtm_halffit) - 1 +
           (GRANULE - 1) + GRANULE + HDR_BYTES + (GRANULE - 1);
}

const struct rtm_heap_ops rtm__halffit_ops = {
    .name = "halffit",
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
    .validate = hf_validate,
    .pool_bound = hf_pool_bound,
};

#endif /* RTM_LOGGED */
