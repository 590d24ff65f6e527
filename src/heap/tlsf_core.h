/*
 * TLSF: two-level segregated fit, O(1) alloc and free.
 *
 * Block layout (HW = 8 header bytes, W = sizeof(size_t), addresses grow to
 * the right):
 *
 *   used:  [ hdr | payload ...................................... ]
 *   free:  [ hdr | reach | next | prev | ...unused... | footer ]
 *            ^ block address b; payload at b + HW is 16-aligned
 *
 * hdr is 64 bits on every target (32-bit too, for the integrity tag's
 * bits): the block size (a multiple of GRANULE, header included), flags
 * and the tag. The links and the footer are words (W). "reach" is the
 * rest of the block's first granule, left unused: an overflow of up to
 * GRANULE bytes past the block before reaches the header and that, never
 * the links, so a link can be trusted once it links back (safe unlinking)
 * and only headers need keyed tags. The footer of a free block repeats its
 * size, so the block after it can find its start when merging backwards;
 * in a block of MIN_BLOCK bytes on 64-bit the footer's word is the prev
 * link, marked so that it reads as MIN_BLOCK (footer_size). next/prev are
 * offsets from the heap base (struct rtm_tlsf), as are all list heads and
 * pool descriptors. Offset arithmetic is modulo 2^N, so pools below the
 * heap base work too.
 *
 * Every pool ends with a sentinel: a header-only block marked used and fenced,
 * so the physical successor of a real block always exists; GRANULE bytes of
 * the pool's memory follow its header (an overflow of up to GRANULE bytes
 * past the last block stays in the pool).
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include "rtmem/tlsf.h"
#include "kind.h"
/* Every call writes at most 56 words, and its log holds 128 (undo.c). */
#define RTM_UNDO_FITS 1
#include "store.h"

/*
 * A kind built on this file defines, before including it:
 *  - TLSF_PAGED 1 for blocks inside pages taken from a provider: then it
 *    defines page_grow (called when no free block fits: the block of a
 *    page it added, unlinked, or 0), page_reused (with every block a search
 *    found) and page_release (with every block free has merged), all
 *    below;
 *  - TLSF_OTHER_POOLS(t): whether a position outside the first pool may
 *    still be one of the heap's (in_other_pool is asked then);
 *  - TLSF_EXTRA_FIELDS: fields at the end of the control structure.
 * The file names its control structure struct rtm_tlsf; such a kind
 * renames it with a macro.
 */
#ifndef TLSF_PAGED
#define TLSF_PAGED 0
#endif
#ifndef TLSF_OTHER_POOLS
#define TLSF_OTHER_POOLS(t) ((t)->several_pools)
#endif

/* A block header: 64 bits on 32-bit targets too, so that they keep tags. */
typedef uint64_t hword;

#define W            ((size_t)sizeof(size_t))
#define HW           ((size_t)sizeof(hword)) /* header bytes */
#define GRANULE      RTM_TLSF_GRANULE
#define MIN_BLOCK    RTM_TLSF_MIN_BLOCK
#define SL_LOG2      RTM_TLSF_SL_LOG2
#define SL_COUNT     RTM_TLSF_SL_COUNT
#define FL_COUNT     RTM_TLSF_FL_COUNT
#define GRANULE_LOG2 4
#define W_LOG2       (sizeof(size_t) == 8 ? 3 : 2)
/* Sizes below SMALL_LIMIT share first level 0, one class per granule. */
#define SMALL_LIMIT  (GRANULE << SL_LOG2)
#define FL_SHIFT     (GRANULE_LOG2 + SL_LOG2 - 1) /* log2(SMALL_LIMIT) - 1 */

#define F_FREE      ((hword)1) /* this block is free */
#define F_PREV_FREE ((hword)2) /* the physically previous block is free */
#define F_FENCE     ((hword)4) /* sentinel: never allocated, never freed */
/* A header a merge swallowed: it lies inside a larger free block now, and
 * keeps its old value (and tag, computed without this flag) so that a second
 * free of its pointer is told apart from damage. */
#define F_GONE      ((hword)8)
#define F_MASK      ((hword)GRANULE - 1)
/* A next link, stored at a header position, reads as "free" and "fence"
 * at once, which no header is: see NEXT_SET. */
#define F_LINK      (F_FREE | F_FENCE)

/*
 * Integrity tag: header bits TAG_SHIFT and up hold a keyed hash of the
 * block's offset and of everything below them (size and flags), written at
 * every hardening level but RTM_HEAP_HARDEN_NONE (where they are 0). Sizes
 * stop below 2^TAG_SHIFT (RTM_TLSF_MAX_BLOCK), so the tag costs no memory
 * on 64-bit; on 32-bit the header is 8 bytes for it (a word more than the
 * size needs). A header that changes is tagged again, F_PREV_FREE included
 * (set or cleared when the neighbour changes).
 */
#define TAG_SHIFT   40
#define SIZE_MASK   ((((hword)1) << TAG_SHIFT) - GRANULE)
#define TAG_MASK    (~((((hword)1) << TAG_SHIFT) - 1))
/* The header bits a tag covers. */
#define TAGGED_BITS (~TAG_MASK)
/* What find_free returns when the block it would take is damaged (no block
 * lies at offset 1: headers are 8 bytes below a 16-aligned payload). */
#define DAMAGED     ((size_t)1)

_Static_assert((GRANULE & (GRANULE - 1)) == 0, "granule is a power of two");
_Static_assert(((size_t)1 << GRANULE_LOG2) == GRANULE, "granule log2");
_Static_assert(GRANULE >= _Alignof(max_align_t), "payload alignment covers max_align_t");
_Static_assert(GRANULE > HW && GRANULE % HW == 0 && HW % W == 0,
               "header fits below an aligned payload");
_Static_assert(HW == RTM_TLSF_HEADER_BYTES, "the header's size is the one tlsf.h promises");
_Static_assert(MIN_BLOCK >= HW + 3 * W, "a free block holds header, two links and footer");
_Static_assert(MIN_BLOCK % GRANULE == 0, "minimum block is a whole number of granules");
_Static_assert(F_GONE < GRANULE, "flags fit in the bits the granule leaves free");
_Static_assert(RTM_TLSF_MAX_BLOCK <= SIZE_MASK, "every block size fits below the tag bits");
_Static_assert(SL_COUNT <= 32 && FL_COUNT <= 32, "bitmaps are 32 bits");
_Static_assert(FL_COUNT + FL_SHIFT + 1 <= sizeof(size_t) * CHAR_BIT,
               "a request rounded up to its class boundary still fits size_t");

/* Where a free block's links lie: past its first granule, which an overflow
 * of up to GRANULE bytes from the block before can reach. */
#define LINKS GRANULE

/* Offset of the list terminator: a dummy block inside the control structure
 * whose header reads as size 0, so list code writes to its links instead of
 * testing for the end. */
#define NIL             ((size_t)offsetof(struct rtm_tlsf, nil))
/* Offset of a block of size 0 linked to itself and in no list. Removing it
 * from "its list" changes nothing (its prev is no list head, so no class is
 * emptied), which lets free remove a neighbour without branching on whether
 * one is free. */
#define IDLE            ((size_t)offsetof(struct rtm_tlsf, idle))
/* Each list head slot doubles as the "next" link of a pseudo-node, so the
 * first block of a list has a real predecessor: unlinking a block is four
 * stores, with no test for "is it the head?" and no class computation. The
 * pseudo-node of flat class i sits LINKS bytes before heads[i]; its own
 * "prev" word is never written (only blocks after it get their prev set).
 * A head holds a next link's marked value (NEXT_SET): HEAD reads it. */
#define HEADS           ((size_t)offsetof(struct rtm_tlsf, heads))
#define PSEUDO(idx)     (HEADS + (size_t)(idx) * W - LINKS)
#define CLASS_COUNT     (FL_COUNT * SL_COUNT)
#define HEAD(t, fl, sl) ((t)->heads[fl][sl] - LINK_MARK)

struct tlsf_pool {
    struct rtm_pool_link link; /* first: the pool list links descriptors */
    size_t start;              /* offset of the first block header */
    size_t end;                /* offset of the sentinel header */
};

_Static_assert(offsetof(struct tlsf_pool, link) == 0, "a pool's offset is its link's");

/*
 * The fields every alloc and free reads come first after the common
 * header, so that a call touches as few cache lines of the control
 * structure as it can. On 64-bit with the structure on a line boundary:
 * the common header (base) fills the first line, which a typed call that
 * succeeds at the default or the unchecked level never reads; the bitmap
 * of levels, the hardening level and tag key, the counters, the first
 * pool's bounds and whether there are other pools fill the second; the
 * terminator and the idle block the third; the second-level words of the
 * small classes start the fourth. docs/speed.md ("Fewer lines of the
 * control structure") has the counts before and after this order.
 */
struct rtm_tlsf {
    struct rtm_heap base;
    uint32_t fl_bitmap;
    /* base.hardening and base.tag_key, copied at create (neither changes
     * after), and whether pool_count > 1, kept with it: every call reads
     * them here, beside the bitmap; validate checks that they agree. */
    uint32_t level;
    size_t used_bytes;
    size_t peak_used_bytes;
    size_t live_blocks;
    /* pool0.start and pool0.end, copied at create (neither changes after):
     * the one-compare tests of the first pool read them beside the
     * counters; validate checks that they agree. */
    size_t start0, end0;
    size_t several_pools;
    _Alignas(8) uint64_t key;
    /* terminator block: hdr, reach, next, prev */
    _Alignas(8) size_t nil[GRANULE / W + 2];
    /* self-linked block of size 0: "remove nothing" */
    _Alignas(8) size_t idle[GRANULE / W + 2];
    uint32_t sl_bitmap[32]; /* FL_COUNT used; 32 so that any index & 31 is in bounds */
    size_t usable_bytes;
    size_t overhead_bytes;
    size_t pool_count;
    struct tlsf_pool pool0; /* the pool in the creating memory; heads the list */
    size_t heads[FL_COUNT][SL_COUNT];
#ifdef TLSF_EXTRA_FIELDS
    TLSF_EXTRA_FIELDS /* a kind built on this file (xvheap.c) */
#endif
};

/* ---- small helpers --------------------------------------------------------- */

static inline unsigned fls_size(size_t x) /* index of the highest set bit; x != 0 */
{
    /* 63 ^ clz, not 63 - clz: the same for 0..63, and the compiler folds it
     * into a bare bsr, so offsets from the result fold into constants */
    return (unsigned)(sizeof(size_t) * CHAR_BIT - 1) ^ (unsigned)__builtin_clzl(x);
}

static inline unsigned ffs32(uint32_t x) /* index of the lowest set bit; x != 0 */
{
    return (unsigned)__builtin_ctz(x);
}

static inline unsigned fls32(uint32_t x)
{
    return 31u - (unsigned)__builtin_clz(x);
}

/* The address at offset off from the heap base. Offsets are modulo 2^N (a
 * pool may lie below the base), so the sum is formed on integers: as
 * pointer arithmetic it could wrap, which C leaves undefined. */
static inline char *at_off(const struct rtm_tlsf *t, size_t off)
{
    return (char *)((uintptr_t)t + off);
}

static inline size_t *blk(const struct rtm_tlsf *t, size_t off)
{
    return (size_t *)(void *)at_off(t, off);
}

/* The header at offset off. */
static inline hword *hdr_at(const struct rtm_tlsf *t, size_t off)
{
    return (hword *)(void *)at_off(t, off);
}

static inline size_t off_of(const struct rtm_tlsf *t, const void *p)
{
    return (size_t)((uintptr_t)p - (uintptr_t)t);
}

static inline size_t hdr_size(hword hdr)
{
    return (size_t)(hdr & SIZE_MASK);
}

/* Whether the heap writes and checks tags, links and neighbours. */
static inline bool hardened(const struct rtm_tlsf *t)
{
    return t->level != RTM_HEAP_HARDEN_NONE;
}

/* The copies of the level and the key (struct rtm_tlsf): made at create,
 * checked by validate and check. */
static inline void copies_make(struct rtm_tlsf *t)
{
    t->level = t->base.hardening;
    t->key = t->base.tag_key;
}

static inline bool copies_agree(const struct rtm_tlsf *t)
{
    return t->level == t->base.hardening && t->key == t->base.tag_key;
}

/* The keyed hash behind a header's tag (see TAG_SHIFT): one multiply by an
 * odd constant, whose top bits every lower bit of its operand moves. The
 * bits a tag covers lie in the operand's low TAG_SHIFT bits, so that a
 * change to any of them moves the tag in a way that depends on the key (a
 * bit placed high would flip a tag bit it alone decides); the offset, which
 * no overflow changes, is rotated over them, every bit kept. */
static inline uint64_t tag_hash(const struct rtm_tlsf *t, size_t b, hword v)
{
    uint64_t o = (uint64_t)b;
    o = (o << (64 - TAG_SHIFT)) | (o >> TAG_SHIFT);
    return (o ^ (v & TAGGED_BITS) ^ t->key) * 0xd6e8feb86659fd93ull;
}

/* The header for v (tag bits clear) at offset b: tagged when the heap is
 * hardened. */
static inline hword mk_hdr(const struct rtm_tlsf *t, size_t b, hword v, bool hard)
{
    return hard ? v | (tag_hash(t, b, v) >> TAG_SHIFT << TAG_SHIFT) : v;
}

static inline bool tag_ok(const struct rtm_tlsf *t, size_t b, hword hdr)
{
    return ((tag_hash(t, b, hdr) ^ hdr) >> TAG_SHIFT) == 0;
}

/*
 * Block fields, by offset: hdr at b, the links at b + LINKS and b + LINKS +
 * W. b + LINKS is a header position, so the next link is stored with
 * LINK_MARK (F_LINK) added: every word the allocator leaves at a header
 * position in free memory reads as a next link, a free header or a header a
 * merge swallowed (F_GONE), and freeing a stale pointer into free memory is
 * refused as not live, not taken for damage. The prev link is stored with
 * PREV_MARK added where it is the footer's word of a MIN_BLOCK block (64-bit),
 * so that footer_size tells it from a footer. Marks are added, not ORed: a
 * decoded link's address folds the mark into its displacement.
 */
#define LINK_MARK         ((size_t)F_LINK)
#define PREV_MARK         (LINKS + 2 * W == MIN_BLOCK ? (size_t)1 : (size_t)0)
#define HDR(t, b)         (*hdr_at((t), (b)))
#define NEXT(t, b)        (blk((t), (b) + LINKS)[0] - LINK_MARK)
#define NEXT_SET(t, b, v) RTM_SET(&(t)->base, blk((t), (b) + LINKS)[0], (v) + LINK_MARK)
#define PREV_GET(t, b)    (blk((t), (b) + LINKS)[1] - PREV_MARK)
#define PREV_SET(t, b, v) RTM_SET(&(t)->base, blk((t), (b) + LINKS)[1], (v) + PREV_MARK)

/* Sets or clears F_PREV_FREE in the header at b, tagging it again. */
static inline void set_prev_free(struct rtm_tlsf *t, size_t b, bool prev_free, bool hard)
{
    hword v = (HDR(t, b) & ~(TAG_MASK | F_PREV_FREE)) | (prev_free ? F_PREV_FREE : 0);
    RTM_SET(&t->base, HDR(t, b), mk_hdr(t, b, v, hard));
}

_Static_assert(LINKS == GRANULE && LINKS >= HW + W && LINKS + 2 * W <= MIN_BLOCK,
               "a free block's links lie past its first granule, inside a minimum block");
_Static_assert(LINKS + 2 * W == MIN_BLOCK || LINKS + 3 * W <= MIN_BLOCK,
               "the prev link is a minimum block's footer word (marked) or lies before it");
/* A next link holds a block's offset, the terminator's or the idle block's:
 * multiples of 8 from a heap base aligned to 8 at least, so the mark sits
 * in bits the value leaves clear (and a prev link's value is a multiple of
 * 4 at least: a pseudo-node's on 32-bit). */
_Static_assert(LINK_MARK < 8 && PREV_MARK < 4 && _Alignof(struct rtm_tlsf) >= 8,
               "marks sit in the bits a link's value leaves clear");

/* The size a free block's footer word w says: on 64-bit a minimum block's
 * footer word is its marked prev link. */
static inline size_t footer_size(size_t w)
{
    return PREV_MARK && (w & PREV_MARK) ? MIN_BLOCK : w;
}

/* The size of the free block that ends at b (its footer), given that one
 * does. */
static inline size_t prev_size(const struct rtm_tlsf *t, size_t b)
{
    return footer_size(*blk(t, b - W));
}

static inline void set_footer(struct rtm_tlsf *t, size_t b, size_t size)
{
    RTM_SET(&t->base, *blk(t, b + size - W), size);
}

static inline void *payload(const struct rtm_tlsf *t, size_t b)
{
    return at_off(t, b + HW);
}

/* Block size for a request, or 0 if the request is impossible. */
static inline size_t adjust_request(size_t size)
{
    if (size > RTM_TLSF_MAX_REQUEST)
        return 0;
    size_t s = (size + HW + GRANULE - 1) & ~(GRANULE - 1);
    return s < MIN_BLOCK ? MIN_BLOCK : s;
}

/*
 * The class a block of size s belongs to, branch-free. First level 0 holds
 * sizes below SMALL_LIMIT, level f > 0 holds [2^(f + FL_SHIFT), 2^(f +
 * FL_SHIFT + 1)); each level is cut in SL_COUNT classes. Levels 0 and 1 are
 * both one granule per class, so their classes hold a single size each.
 */
static inline unsigned class_fl(size_t s)
{
    return fls_size(s | (SMALL_LIMIT - 1)) - FL_SHIFT;
}

/* log2 of the width of s's class; level 0 has the width of level 1. */
static inline unsigned class_shift_fl(unsigned fl)
{
    return fl + FL_SHIFT - SL_LOG2 + (fl == 0);
}

static inline unsigned class_sl_fl(size_t s, unsigned fl)
{
    return (unsigned)(s >> class_shift_fl(fl)) & (SL_COUNT - 1);
}

static inline unsigned class_sl(size_t s)
{
    return class_sl_fl(s, class_fl(s));
}

/* Flat class index fl * SL_COUNT + sl of size s, branch-free: with L the
 * top bit of s (at least that of 2 * SMALL_LIMIT - 1, where levels 0 and 1
 * both have granule-wide classes), the SL_LOG2 + 1 bits of s from L down
 * are SL_COUNT + sl (or fl * SL_COUNT + sl below 2 * SMALL_LIMIT). */
static inline size_t class_index(size_t s)
{
    unsigned top = fls_size(s | (2 * SMALL_LIMIT - 1));
    return (s >> (top - SL_LOG2)) + ((size_t)(top - FL_SHIFT - 1) << SL_LOG2);
}

static inline size_t class_low(unsigned fl, unsigned sl)
{
    return fl == 0 ? (size_t)sl << GRANULE_LOG2
                   : ((size_t)(SL_COUNT + sl)) << (fl + FL_SHIFT - SL_LOG2);
}

/* ---- free lists -------------------------------------------------------------- */

/* Inserts b at the head of its class list. */
static inline void list_insert(struct rtm_tlsf *t, size_t b, size_t size)
{
    RTM_ASSERT(size >= MIN_BLOCK && size % GRANULE == 0 && size <= RTM_TLSF_MAX_BLOCK);
    size_t idx = class_index(size);
    unsigned fl = (unsigned)(idx >> SL_LOG2), sl = (unsigned)idx & (SL_COUNT - 1);
    size_t head = NEXT(t, PSEUDO(idx)); /* heads[fl][sl], through the base like all links */
    NEXT_SET(t, b, head);
    PREV_SET(t, b, PSEUDO(idx));
    PREV_SET(t, head, b); /* harmless write to the terminator when empty */
    NEXT_SET(t, PSEUDO(idx), b);
    RTM_SET(&t->base, t->fl_bitmap, t->fl_bitmap | 1u << fl);
    RTM_SET(&t->base, t->sl_bitmap[fl], t->sl_bitmap[fl] | 1u << sl);
}

/* Clears the bitmap bits of class (fl, sl) when empty is 1; no-op when 0. */
static inline void bitmap_clear_if(struct rtm_tlsf *t, uint32_t empty, unsigned fl, unsigned sl)
{
    RTM_SET(&t->base, t->sl_bitmap[fl], t->sl_bitmap[fl] & ~(empty << sl));
    RTM_SET(&t->base, t->fl_bitmap, t->fl_bitmap & ~((uint32_t)(t->sl_bitmap[fl] == 0) << fl));
}

/*
 * Unlinks b from its class list, branch-free. The list became empty iff b
 * was its only block: its predecessor is a pseudo-node and its successor the
 * terminator; the class is then read off the pseudo-node's offset. When the
 * list did not become empty, the bitmap word picked by the (meaningless)
 * index is rewritten unchanged, and its first-level bit recomputed, which
 * leaves it as it was: every first-level bit says whether its word is
 * non-zero.
 */
static inline __attribute__((always_inline)) void list_remove(struct rtm_tlsf *t, size_t b)
{
    size_t next = NEXT(t, b), prev = PREV_GET(t, b);
    NEXT_SET(t, prev, next);
    PREV_SET(t, next, prev);
    size_t idx = (prev - PSEUDO(0)) / W;
    uint32_t empty = (next == NIL) & (idx < CLASS_COUNT);
    unsigned fl = (unsigned)(idx / SL_COUNT) & 31u;
    uint32_t word = t->sl_bitmap[fl] & ~(empty << (idx % SL_COUNT));
    RTM_SET(&t->base, t->sl_bitmap[fl], word);
    RTM_SET(&t->base, t->fl_bitmap, t->fl_bitmap & ~((uint32_t)(word == 0) << fl));
}

/* ---- integrity checks (hardened heaps) ------------------------------------ */

static inline size_t rot_granules(size_t rel)
{
    return (rel >> GRANULE_LOG2) | (rel << (sizeof(size_t) * CHAR_BIT - GRANULE_LOG2));
}

static bool in_other_pool(const struct rtm_tlsf *t, size_t y);

/* Whether y is a header position of the first pool with room for a block
 * before its sentinel: one rotate and compare. */
static inline bool header_pos0(const struct rtm_tlsf *t, size_t y)
{
    size_t start = t->start0;
    return rot_granules(y - start) <= (t->end0 - start - MIN_BLOCK) >> GRANULE_LOG2;
}

/* Whether y is what a next link may hold: the terminator, the idle block
 * (whose links are its own) or a block's header position. Branch-free for
 * the first pool; another pool costs O(pools). The one branch is on the
 * number of pools, which changes only when a pool is added: with a branch
 * on the first pool's test instead (its result predicted true, the other
 * pools tried when false), every link to the list's end, the idle block or
 * a list head took it, and those come at random: that cost alloc 4 to 8%
 * of its time and free 10 to 13% (docs/speed.md). A kind whose
 * TLSF_OTHER_POOLS is always true (xvheap, whose blocks lie in pages, not
 * in a first pool) still branches on the fast test. */
static inline bool next_target_ok(const struct rtm_tlsf *t, size_t y)
{
    bool fast = (y == NIL) | (y == IDLE) | header_pos0(t, y);
    if (__builtin_expect(TLSF_OTHER_POOLS(t), 0))
        return fast || in_other_pool(t, y);
    return fast;
}

/* Whether y is what a prev link may hold: a list's pseudo-node, the idle
 * block or a block's header position. Branch-free for the first pool, as
 * next_target_ok. */
static inline bool prev_target_ok(const struct rtm_tlsf *t, size_t y)
{
    size_t rel = y - PSEUDO(0);
    size_t rot = (rel >> W_LOG2) | (rel << (sizeof(size_t) * CHAR_BIT - W_LOG2));
    bool fast = (rot < CLASS_COUNT) | (y == IDLE) | header_pos0(t, y);
    if (__builtin_expect(TLSF_OTHER_POOLS(t), 0))
        return fast || in_other_pool(t, y);
    return fast;
}

/* Whether a free block's intact header lies at y: a tagged free header,
 * not one a merge swallowed. */
static inline bool free_header_at(const struct rtm_tlsf *t, size_t y)
{
    hword hdr = HDR(t, y);
    bool tagged = tag_ok(t, y, hdr);
    return ((hdr & (F_LINK | F_GONE)) == F_FREE) & tagged;
}

/*
 * Whether free block x's list links are intact: each leads to what a link
 * may lead to (the list end, a list head, the idle block, or a header
 * position with room for a block) and links back to x (the terminator's
 * prev link is scratch: not compared). That is enough against an overflow,
 * which reaches a header and the unused rest of its granule, never the
 * links (LINKS), and whose damage to a header the tags find. Branch-free
 * but for the test of the result; a link that may not be followed is
 * replaced by x's own offset before anything is read there.
 */
static inline bool links_ok(const struct rtm_tlsf *t, size_t x)
{
    size_t next = NEXT(t, x), prev = PREV_GET(t, x);
    bool nok = next_target_ok(t, next), pok = prev_target_ok(t, prev);
    size_t ns = nok ? next : x, ps = pok ? prev : x;
    bool back = NEXT(t, ps) == x, fwd = (next == NIL) | (PREV_GET(t, ns) == x);
    return nok & pok & back & fwd;
}

/* Whether the block at the head of a list is an intact free block of at
 * least `need` bytes (a damaged header can claim a smaller one, and cutting a
 * request from it would run over its neighbour), and its next link leads to
 * the list end or to a block that links back to it. */
static inline bool head_ok(const struct rtm_tlsf *t, size_t b, size_t need)
{
    hword hdr = HDR(t, b);
    size_t next = NEXT(t, b);
    bool nok = next_target_ok(t, next);
    size_t ns = nok ? next : b;
    bool own = free_header_at(t, b), fwd = (next == NIL) | (PREV_GET(t, ns) == b);
    return own & (hdr_size(hdr) >= need) & nok & fwd;
}

/* Reports damage found by an allocation: out of line, cold. */
static __attribute__((noinline, cold)) size_t alloc_damaged(struct rtm_tlsf *t, size_t b,
                                                            const char *what)
{
    rtm__heap_corrupt(&t->base, NULL, at_off(t, b), what);
    return DAMAGED;
}

/* Removes and returns the head of list (fl, sl), which must not be empty and
 * whose blocks all hold at least `need` bytes; DAMAGED (nothing changed)
 * when hard and the head is not an intact free block that large. */
static inline size_t list_pop(struct rtm_tlsf *t, unsigned fl, unsigned sl, size_t need, bool hard)
{
    size_t b = HEAD(t, fl, sl);
    if (hard && __builtin_expect(!head_ok(t, b, need), 0))
        return alloc_damaged(t, b, "free block at a list head");
    size_t next = NEXT(t, b);
    NEXT_SET(t, PSEUDO(fl * SL_COUNT + sl), next);
    PREV_SET(t, next, PSEUDO(fl * SL_COUNT + sl));
    bitmap_clear_if(t, next == NIL, fl, sl);
    return b;
}

/*
 * Finds and unlinks a free block of at least s bytes, or returns 0 (DAMAGED
 * when hard and the block it would take is damaged).
 * Good fit: s is rounded up to the next class boundary, so that any block of
 * the class found is large enough. Only when that finds nothing, and s's own
 * class holds a single block, is that block tried: so a fresh heap's block can
 * be handed out whole, and which request succeeds depends only on the sizes
 * of the free blocks, never on the order of a list (largest_free_bytes is
 * exact and the same after a full drain as after create).
 */
static inline __attribute__((always_inline)) size_t find_free(struct rtm_tlsf *t, size_t s,
                                                              bool hard)
{
    /* s rounded up to its class's last size: a class of level f > 1 is
     * 2^(fls(s) - SL_LOG2) wide; below, classes are a granule wide and s a
     * multiple of it, and adding less than a granule keeps s in its class. */
    size_t r = s + (((size_t)1) << (fls_size(s | (SMALL_LIMIT - 1)) - SL_LOG2)) - 1;
    size_t ridx = class_index(r);
    if (__builtin_expect(ridx < CLASS_COUNT, 1)) {
        /* The first non-empty class at or above (rfl, rsl): in level rfl
         * itself, else in the next non-empty level; ORing bit 31 keeps
         * ctz defined and lands on an empty level when there is nothing
         * above. gcc compiles the choice to a branch; made with masks
         * instead, without one, it ran about 8% slower per alloc (rtmem
         * bench, alternating runs), so it stays a choice. */
        unsigned rfl = (unsigned)(ridx >> SL_LOG2), rsl = (unsigned)ridx & (SL_COUNT - 1);
        uint32_t here = t->sl_bitmap[rfl] & (~0u << rsl);
        uint32_t above = t->fl_bitmap & (0xfffffffeu << rfl);
        unsigned fl = here ? rfl : ffs32(above | 0x80000000u);
        uint32_t sl_map = here ? here : t->sl_bitmap[fl] & (above ? ~0u : 0u);
        if (__builtin_expect(sl_map != 0, 1))
            return list_pop(t, fl, ffs32(sl_map), s, hard);
    }
    unsigned sfl = class_fl(s), sl = class_sl_fl(s, sfl);
    size_t head = HEAD(t, sfl, sl);
    if (head != NIL && NEXT(t, head) == NIL && hdr_size(HDR(t, head)) >= s)
        return list_pop(t, sfl, sl, s, hard);
    return 0;
}

/* b is a free block of size bsize, unlinked; makes its first s bytes a used
 * block and returns the rest to the free lists when it can form a block. */
static inline void take_block(struct rtm_tlsf *t, size_t b, size_t bsize, size_t s, bool hard)
{
    RTM_ASSERT(s >= MIN_BLOCK && s % GRANULE == 0 && bsize >= s && bsize % GRANULE == 0);
    size_t prev_flag = HDR(t, b) & F_PREV_FREE;
    size_t rest = bsize - s;
    if (rest >= MIN_BLOCK) {
        size_t r = b + s;
        RTM_SET(&t->base, HDR(t, r), mk_hdr(t, r, rest | F_FREE, hard));
        set_footer(t, r, rest);
        list_insert(t, r, rest);
        /* the block after r already knows its predecessor is free */
    } else {
        s = bsize;
        set_prev_free(t, b + s, false, hard);
    }
    RTM_SET(&t->base, HDR(t, b), mk_hdr(t, b, s | prev_flag, hard));
    RTM_SET(&t->base, t->used_bytes, t->used_bytes + s);
    RTM_SET(&t->base, t->live_blocks, t->live_blocks + 1);
    if (t->used_bytes > t->peak_used_bytes)
        RTM_SET(&t->base, t->peak_used_bytes, t->used_bytes);
}

/* ---- pools ----------------------------------------------------------------- */

static inline size_t align_up(uintptr_t x, size_t a)
{
    return (size_t)((x + (a - 1)) & ~(uintptr_t)(a - 1));
}

/* Lays out one block and a sentinel in [lo, hi) (absolute addresses). On
 * success fills start/end offsets and returns 0; the caller counts the
 * block area (d->end - d->start) where its statistics want it. */
static int pool_format(struct rtm_tlsf *t, uintptr_t lo, uintptr_t hi, struct tlsf_pool *d)
{
    /* first header so that its payload lands on a granule boundary */
    uintptr_t first = align_up(lo + HW, GRANULE) - HW;
    if (first < lo || first > hi || hi - first < MIN_BLOCK + GRANULE)
        return -ENOMEM;
    /* The sentinel's header and one more word stay inside the pool: an
     * overflow of up to GRANULE bytes past the last block reaches nothing
     * but the (tagged) sentinel and memory the pool owns, never the next
     * pool's descriptor or the control structure placed after it. */
    size_t span = (size_t)((hi - GRANULE - first) & ~(uintptr_t)(GRANULE - 1));
    if (span < MIN_BLOCK)
        return -ENOMEM;
    if (span > RTM_TLSF_MAX_BLOCK)
        return -E2BIG;
    bool hard = hardened(t);
    d->start = off_of(t, (void *)first);
    d->end = d->start + span;
    RTM_SET(&t->base, HDR(t, d->start), mk_hdr(t, d->start, span | F_FREE, hard));
    set_footer(t, d->start, span);
    RTM_SET(&t->base, HDR(t, d->end), mk_hdr(t, d->end, F_FENCE | F_PREV_FREE, hard));
    list_insert(t, d->start, span);
    return 0;
}

/* A header position inside a pool, with that pool's bounds. "None" is the
 * idle block, whose header reads as a fenced sentinel: is_live refuses it
 * without a test of its own. */
struct blk_pos {
    size_t b;
    size_t end;
    size_t start;
};

/* The pool whose block area holds block offset b, or NULL: each kind's own. */
static inline const struct tlsf_pool *pool_of(const struct rtm_tlsf *t, size_t b);
static struct blk_pos block_at_slow(const struct rtm_tlsf *t, const void *p);

/*
 * The header offset a payload p would have, if it is a header position of
 * some pool with room for a block before the pool's sentinel. The first
 * pool takes one test: headers lie at start + k * GRANULE, and rotating rel
 * right by the granule bits turns any other rel into a huge value; NULL
 * fails it too (its rel is minus the first payload's address).
 */
static inline struct blk_pos block_at(const struct rtm_tlsf *t, const void *p)
{
    size_t start = t->start0, end = t->end0;
    size_t rel = off_of(t, p) - HW - start;
    if (__builtin_expect(rot_granules(rel) > (end - start - MIN_BLOCK) >> GRANULE_LOG2, 0))
        return block_at_slow(t, p);
    return (struct blk_pos){ start + rel, end, start };
}

/*
 * Whether the position from block_at holds a live block: used, not a
 * sentinel, at least a minimum block and inside the pool (one unsigned
 * compare: a size below MIN_BLOCK wraps around), and its successor agrees
 * that it is used (a pointer into the middle of a block usually fails here).
 */
static inline bool is_live(const struct rtm_tlsf *t, struct blk_pos at)
{
    hword hdr = HDR(t, at.b);
    size_t size = hdr_size(hdr);
    if (hdr & (F_FREE | F_FENCE | F_GONE))
        return false;
    if (size - MIN_BLOCK > at.end - at.b - MIN_BLOCK)
        return false;
    return !(HDR(t, at.b + size) & F_PREV_FREE);
}

/*
 * What free makes of a block and its neighbours: everything it reads before
 * it writes. free_plan fills it and says whether the block may be freed;
 * free_commit then changes the heap. realloc plans a free before it moves a
 * block, so that a refusal leaves the heap as it was.
 */
struct free_plan {
    size_t b, size;   /* the block */
    hword hdr;        /* its header */
    size_t n;         /* its physical successor */
    hword nh;         /* and that one's header */
    size_t nmask;     /* all ones when the successor is free */
    size_t pmask;     /* all ones when the predecessor is free */
    size_t pb, psize; /* the predecessor (b and 0 when it is used) */
    size_t first;     /* the free neighbour removed without a branch, or IDLE */
};

/* Why free_plan refused p: 1 for NULL (nothing to free), -EINVAL for what is
 * no live block, -EFAULT (reported) for damage. Out of line and cold, so that the common
 * path shares no code with it. */
static __attribute__((noinline, cold)) int free_refused(struct rtm_tlsf *t, const void *p,
                                                        struct blk_pos at, bool hard)
{
    if (!p)
        return 1;
    if (!hard || at.b == IDLE)
        return -EINVAL;
    hword hdr = HDR(t, at.b);
    size_t size = hdr_size(hdr);
    /* A next link left in free memory (or in a payload that was free once)
     * holds a real link value; a damaged header does not (its tag bits make
     * it none). */
    if ((hdr & F_LINK) == F_LINK && next_target_ok(t, (size_t)hdr - LINK_MARK))
        return -EINVAL;
    /* a header a merge swallowed: F_GONE over its old, valid tag */
    if ((hdr & F_GONE) && tag_ok(t, at.b, hdr & ~F_GONE))
        return -EINVAL;
    if (!tag_ok(t, at.b, hdr)) {
        rtm__heap_corrupt(&t->base, p, at_off(t, at.b), "block header");
        return -EFAULT;
    }
    if (hdr & (F_FREE | F_FENCE | F_GONE))
        return -EINVAL; /* a free block (a double free) or a sentinel */
    size_t n = at.b + size;
    if (size - MIN_BLOCK > at.end - at.b - MIN_BLOCK || !tag_ok(t, n, HDR(t, n)) ||
        (HDR(t, n) & F_PREV_FREE)) {
        rtm__heap_corrupt(&t->base, p, at_off(t, n), "next block's header");
        return -EFAULT;
    }
    rtm__heap_corrupt(&t->base, p, at_off(t, at.b), "block and neighbours disagree");
    return -EFAULT;
}

/* Whether the predecessor that the plan merges with is a free block ending
 * at b: its size (the footer) fits between the pool's start and b, and the
 * header it leads to is a tagged free header of that size, its other flags
 * clear. (F_PREV_FREE itself is covered by b's tag.) The tag is what the
 * merge would otherwise erase: an overflow that changed only the tag bits
 * of that header (or a footer forged to lead into program data that reads
 * as a free header) is reported, not written over. Reads nothing outside
 * the pool.
 * Branch-free, without a test of "is there a predecessor?" (a free
 * predecessor is common and comes at random, so that branch would often be
 * mispredicted: docs/tlsf.md has the counts): with none, psize is 0, the
 * header read is b's own, already verified, and it is compared with itself. */
static inline bool prev_ok(const struct rtm_tlsf *t, const struct free_plan *f, size_t pool_start)
{
    const hword fields = SIZE_MASK | F_MASK;
    bool in = ((f->psize & (GRANULE - 1)) == 0) & (f->psize <= f->b - pool_start);
    size_t pq = in ? f->pb : f->b;
    hword ph = HDR(t, pq);
    hword pmask = (hword)(int64_t)(intptr_t)f->pmask; /* sign-extended: as wide as a header */
    hword want = ((f->psize | F_FREE) & pmask) | (f->hdr & fields & ~pmask);
    bool tagged = tag_ok(t, pq, ph);
    return in & ((ph & fields) == want) & tagged;
}

static __attribute__((noinline, cold)) int free_damaged(struct rtm_tlsf *t, const void *p,
                                                        size_t where, const char *what)
{
    rtm__heap_corrupt(&t->base, p, at_off(t, where), what);
    return -EFAULT;
}

/*
 * Plans the free of p: 0 when it may go ahead, 1 for NULL, else the negative
 * errno free returns.
 * Hardened, the block's and its successor's tags, the free predecessor and
 * the links of every free neighbour are verified first: O(1), O(pools) for
 * a link into another pool than the first.
 */
static inline __attribute__((always_inline)) int free_plan(struct rtm_tlsf *t, const void *p,
                                                           struct free_plan *f, bool hard)
{
    struct blk_pos at = block_at(t, p);
    if (__builtin_expect(!is_live(t, at), 0)) {
        int rc = free_refused(t, p, at, hard);
        if (rc == 0)
            __builtin_unreachable(); /* free_refused never answers 0 */
        return rc;
    }
    f->b = at.b;
    f->hdr = HDR(t, f->b); /* the loads is_live made: no store in between */
    f->size = hdr_size(f->hdr);
    f->n = f->b + f->size;
    f->nh = HDR(t, f->n);
    /* All-ones masks for "next is free" and "prev is free". The word before
     * b is always readable: a footer, a used block's payload, or the pool
     * descriptor; it counts only when prev is free. */
    f->nmask = (size_t)0 - (size_t)(f->nh & F_FREE);
    f->pmask = (size_t)0 - (size_t)((f->hdr & F_PREV_FREE) >> 1);
    /* read here, not in a helper: tests/tsan.supp names this function */
    f->psize = footer_size(*blk(t, f->b - W)) & f->pmask;
    f->pb = f->b - f->psize;
    size_t first = IDLE ^ ((f->pb ^ IDLE) & f->pmask);
    f->first = first ^ ((f->n ^ first) & f->nmask);
    if (hard) {
        bool own = tag_ok(t, f->b, f->hdr), next = tag_ok(t, f->n, f->nh);
        if (__builtin_expect(!(own & next), 0))
            return free_damaged(t, p, own ? f->n : f->b, "block header or next block's header");
        if (__builtin_expect(!prev_ok(t, f, at.start), 0))
            return free_damaged(t, p, f->b - W, "previous free block");
        if (__builtin_expect(!links_ok(t, f->first), 0))
            return free_damaged(t, p, f->first, "free-list links of a neighbour");
        if (__builtin_expect(f->nmask & f->pmask, 0) && !links_ok(t, f->pb))
            return free_damaged(t, p, f->pb, "free-list links of a neighbour");
    }
    return 0;
}

/*
 * Why free has this shape: its time follows the instructions it runs, plus
 * a penalty per mispredicted branch and a front-end redirect per taken
 * branch. A free neighbour is common and comes at random, two are rare
 * (docs/tlsf.md has the counts and the timings): so the first free
 * neighbour (next, else prev, else idle) is removed branch-free, only the
 * rare second one takes a branch, and the common path runs straight to its
 * return. The hardened checks are branch-free too, each test of a result
 * predicted "intact".
 */
#if TLSF_PAGED
static size_t page_grow(struct rtm_tlsf *t, size_t s, bool hard);
static void page_reused(struct rtm_tlsf *t, size_t b);
static void page_release(struct rtm_tlsf *t, size_t b, size_t size, bool hard);
#endif

static inline __attribute__((always_inline)) void free_commit(struct rtm_tlsf *t,
                                                              const struct free_plan *f, bool hard)
{
    RTM_ASSERT(t->used_bytes >= f->size && t->live_blocks > 0);
    RTM_SET(&t->base, t->used_bytes, t->used_bytes - f->size);
    RTM_SET(&t->base, t->live_blocks, t->live_blocks - 1);
    /* Mark the headers a merge swallows (this block's, when it joins its
     * predecessor; the successor's, when that is free): a second free of
     * either pointer is then refused as a double free, and no check takes
     * such a header for a block. A used successor's header is written back
     * unchanged: one store either way, no branch. */
    RTM_SET(&t->base, HDR(t, f->b), f->hdr | F_GONE);
    if (hard) /* unhardened, nothing reads the mark: a successor stays as it was */
        RTM_SET(&t->base, HDR(t, f->n), f->nh | (F_GONE & f->nmask));
    list_remove(t, f->first);
    if (__builtin_expect(f->nmask & f->pmask, 0))
        list_remove(t, f->pb);
    size_t size = f->size + (hdr_size(f->nh) & f->nmask) + f->psize;
    size_t b = f->pb;
    /* The merged block's predecessor is used: free blocks never touch. */
    RTM_SET(&t->base, HDR(t, b), mk_hdr(t, b, size | F_FREE, hard));
    set_footer(t, b, size);
    set_prev_free(t, b + size, true, hard);
    list_insert(t, b, size);
#if TLSF_PAGED
    page_release(t, b, size, hard);
#endif
}

static inline __attribute__((always_inline)) int tlsf_free(struct rtm_tlsf *t, void *p, bool hard)
{
    struct free_plan f;
    int rc = free_plan(t, p, &f, hard);
    if (__builtin_expect(rc != 0, 0))
        return rc < 0 ? rc : 0;
    free_commit(t, &f, hard);
    return 0;
}

/* Offset of the live block whose payload is p, or 0 if p is not one (nor,
 * hard, a block with an intact header). */
static inline size_t live_block(const struct rtm_tlsf *t, const void *p, bool hard)
{
    struct blk_pos at = block_at(t, p);
    if (!is_live(t, at) || (hard && !tag_ok(t, at.b, HDR(t, at.b))))
        return 0;
    return at.b;
}

/* ---- alloc, free, realloc: each body once, instantiated per level --------- */

/* find_free, and when nothing fits, a page heap's fresh page: its one block,
 * unlinked (0 when the request does not fit a page or no page is left). */
static inline __attribute__((always_inline)) size_t find_or_grow(struct rtm_tlsf *t, size_t s,
                                                                 bool hard)
{
    size_t b = find_free(t, s, hard);
#if TLSF_PAGED
    if (__builtin_expect(b == 0, 0))
        b = page_grow(t, s, hard);
    else if (b > DAMAGED)
        page_reused(t, b); /* an empty page the heap kept, in use again */
#endif
    return b;
}

static inline __attribute__((always_inline)) void *tlsf_alloc(struct rtm_tlsf *t, size_t size,
                                                              bool hard)
{
    size_t s = adjust_request(size);
    size_t b;
    if (__builtin_expect(s == 0, 0) ||
        __builtin_expect((b = find_or_grow(t, s, hard)) <= DAMAGED, 0)) {
        RTM_SET(&t->base, t->base.failed_allocs, t->base.failed_allocs + 1);
        return NULL;
    }
    take_block(t, b, hdr_size(HDR(t, b)), s, hard);
    return payload(t, b);
}

static inline void *tlsf_aligned_alloc(struct rtm_tlsf *t, size_t alignment, size_t size, bool hard)
{
    if (alignment == 0 || (alignment & (alignment - 1))) {
        RTM_SET(&t->base, t->base.failed_allocs, t->base.failed_allocs + 1);
        return NULL;
    }
    if (alignment <= GRANULE)
        return tlsf_alloc(t, size, hard);
    size_t s = adjust_request(size);
    /* Room for the worst front gap: up to alignment - GRANULE, or, when the
     * gap would be too small to stand as a free block, one alignment more. */
    size_t slack = alignment + MIN_BLOCK - GRANULE;
    size_t b;
    if (s == 0 || alignment > RTM_TLSF_MAX_BLOCK || s > RTM_TLSF_MAX_BLOCK - slack ||
        (b = find_or_grow(t, s + slack, hard)) <= DAMAGED) {
        RTM_SET(&t->base, t->base.failed_allocs, t->base.failed_allocs + 1);
        return NULL;
    }
    size_t bsize = hdr_size(HDR(t, b));
    uintptr_t p = (uintptr_t)payload(t, b);
    size_t gap = align_up(p, alignment) - (size_t)p;
    if (gap != 0 && gap < MIN_BLOCK)
        gap += alignment;
    if (gap != 0) {
        /* The front gap becomes a free block of its own; its predecessor is
         * used (free blocks never touch), so no merge is needed. */
        size_t prev_flag = HDR(t, b) & F_PREV_FREE;
        RTM_SET(&t->base, HDR(t, b), mk_hdr(t, b, gap | F_FREE | prev_flag, hard));
        set_footer(t, b, gap);
        list_insert(t, b, gap);
        b += gap;
        bsize -= gap;
        RTM_SET(&t->base, HDR(t, b), mk_hdr(t, b, bsize | F_FREE | F_PREV_FREE, hard));
    }
    take_block(t, b, bsize, s, hard);
    return payload(t, b);
}

/* Gives the tail of live block b beyond s bytes back to the free lists, if it
 * can form a block (merging it with a free successor, whose header and links
 * the caller has verified when hard). */
static inline void shrink_block(struct rtm_tlsf *t, size_t b, size_t s, bool hard)
{
    hword hdr = HDR(t, b);
    size_t size = hdr_size(hdr);
    size_t n = b + size;
    size_t tail = size - s;
    if (tail == 0)
        return;
    hword nh = HDR(t, n);
    if (nh & F_FREE) {
        size_t ns = hdr_size(nh);
        list_remove(t, n);
        RTM_SET(&t->base, HDR(t, n), nh | F_GONE);
        tail += ns;
    } else if (tail < MIN_BLOCK) {
        return;
    }
    size_t r = b + s;
    RTM_SET(&t->base, HDR(t, b), mk_hdr(t, b, s | (hdr & F_PREV_FREE), hard));
    RTM_SET(&t->base, HDR(t, r), mk_hdr(t, r, tail | F_FREE, hard));
    set_footer(t, r, tail);
    set_prev_free(t, r + tail, true, hard);
    list_insert(t, r, tail);
    RTM_SET(&t->base, t->used_bytes, t->used_bytes - (size - s));
}

static __attribute__((noinline, cold)) void *realloc_refused(struct rtm_tlsf *t)
{
    RTM_SET(&t->base, t->base.failed_allocs, t->base.failed_allocs + 1);
    return NULL;
}

/*
 * Hardened, everything realloc will trust is verified before it writes: the
 * block and its neighbours as free verifies them (free_plan), and, when it
 * grows into its free successor, the header after that one.
 */
static inline void *tlsf_realloc(struct rtm_tlsf *t, void *p, size_t size, bool hard)
{
    if (!p)
        return tlsf_alloc(t, size, hard);
    struct free_plan f;
    size_t s = adjust_request(size);
    if (free_plan(t, p, &f, hard) != 0 || s == 0)
        return realloc_refused(t);
    size_t b = f.b, cur = f.size;
    if (s <= cur) {
        shrink_block(t, b, s, hard);
        return p;
    }
    if ((f.nh & F_FREE) && cur + hdr_size(f.nh) >= s) {
        size_t ns = hdr_size(f.nh), joined = cur + ns;
        if (hard) {
            hword after = HDR(t, b + joined); /* used: free blocks never touch */
            if ((after & F_FREE) || !tag_ok(t, b + joined, after)) {
                free_damaged(t, p, b + joined, "header after the next free block");
                return realloc_refused(t);
            }
        }
        list_remove(t, f.n);
        RTM_SET(&t->base, HDR(t, f.n), f.nh | F_GONE);
        RTM_SET(&t->base, HDR(t, b), mk_hdr(t, b, joined | (f.hdr & F_PREV_FREE), hard));
        set_prev_free(t, b + joined, false, hard);
        RTM_SET(&t->base, t->used_bytes, t->used_bytes + ns);
        shrink_block(t, b, s, hard); /* gives the surplus back before the peak is taken */
        if (t->used_bytes > t->peak_used_bytes)
            RTM_SET(&t->base, t->peak_used_bytes, t->used_bytes);
        return p;
    }
    void *q = tlsf_alloc(t, size, hard);
    if (!q)
        return NULL;
    RTM_NOTE_BLOCK(&t->base, q, cur - HW);
    memcpy(q, p, cur - HW);
    tlsf_free(t, p, hard); /* planned above: nothing it trusts has changed but by this heap */
    return q;
}

/*
 * Entry points: the level is fixed at create, so each call takes one
 * predictable branch to the body instantiated for it. The default level
 * comes first; RTM_HEAP_HARDEN_FULL adds its periodic check out of line.
 */
#define LEVEL_IS(t, l) \
    __builtin_expect((t)->level == RTM_HEAP_HARDEN_##l, RTM_HEAP_HARDEN_##l == RTM_HEAP_HARDEN_O1)

static __attribute__((noinline)) void *alloc_full(struct rtm_tlsf *t, size_t size)
{
    if (rtm__heap_periodic_check(&t->base))
        return realloc_refused(t);
    return tlsf_alloc(t, size, true);
}

static inline void *alloc_entry(struct rtm_tlsf *t, size_t size)
{
    if (LEVEL_IS(t, O1))
        return tlsf_alloc(t, size, true);
    if (LEVEL_IS(t, NONE))
        return tlsf_alloc(t, size, false);
    return alloc_full(t, size);
}

static inline void *aligned_entry(struct rtm_tlsf *t, size_t alignment, size_t size)
{
    if (LEVEL_IS(t, NONE))
        return tlsf_aligned_alloc(t, alignment, size, false);
    if (LEVEL_IS(t, FULL) && rtm__heap_periodic_check(&t->base))
        return realloc_refused(t);
    return tlsf_aligned_alloc(t, alignment, size, true);
}

static inline void *realloc_entry(struct rtm_tlsf *t, void *p, size_t size)
{
    if (LEVEL_IS(t, NONE))
        return tlsf_realloc(t, p, size, false);
    if (LEVEL_IS(t, FULL) && rtm__heap_periodic_check(&t->base))
        return realloc_refused(t);
    return tlsf_realloc(t, p, size, true);
}

static __attribute__((noinline)) int free_full(struct rtm_tlsf *t, void *p)
{
    if (rtm__heap_periodic_check(&t->base))
        return -EFAULT;
    return tlsf_free(t, p, true);
}

/* The generic interface's free holds the same body rather than jumping to
 * rtm_tlsf_free (a taken branch less on the common path). */
static inline __attribute__((always_inline)) int free_entry(struct rtm_tlsf *t, void *p)
{
    if (LEVEL_IS(t, O1))
        return tlsf_free(t, p, true);
    if (LEVEL_IS(t, NONE))
        return tlsf_free(t, p, false);
    return free_full(t, p);
}

/* ---- pools: what every kind on this file shares --------------------------- */

/* A header position of a pool other than the first (pool_of places it). */
static __attribute__((noinline)) bool in_other_pool(const struct rtm_tlsf *t, size_t y)
{
    const struct tlsf_pool *d = pool_of(t, y);
    return d && ((y - d->start) & (GRANULE - 1)) == 0 && d->end - y >= MIN_BLOCK;
}

/* block_at for what the first pool's one-compare test let through: NULL,
 * misaligned pointers, other pools (O(pools)) and foreign addresses. */
static __attribute__((noinline)) struct blk_pos block_at_slow(const struct rtm_tlsf *t,
                                                              const void *p)
{
    struct blk_pos none = { IDLE, IDLE + MIN_BLOCK, IDLE };
    if ((uintptr_t)p & (GRANULE - 1))
        return none;
    size_t b = off_of(t, p) - HW;
    const struct tlsf_pool *d = pool_of(t, b);
    if (!d || d->end - b < MIN_BLOCK)
        return none;
    return (struct blk_pos){ b, d->end, d->start };
}

#if !RTM_LOGGED

/* Largest request that alloc would satisfy now (see find_free): the whole
 * block when the highest non-empty class holds one, else the class's lower
 * bound, which good fit guarantees. */
static size_t largest_request(const struct rtm_tlsf *t)
{
    if (!t->fl_bitmap)
        return 0;
    unsigned fl = fls32(t->fl_bitmap);
    if (!t->sl_bitmap[fl])
        return 0; /* bitmaps that disagree: only damage does that */
    unsigned sl = fls32(t->sl_bitmap[fl]);
    size_t head = HEAD(t, fl, sl);
    if (hardened(t) && !free_header_at(t, head))
        return 0; /* damaged: alloc would refuse it, so promise nothing */
    size_t size = NEXT(t, head) == NIL ? hdr_size(HDR(t, head)) : class_low(fl, sl);
    return size - HW;
}

/* ---- consistency walk ------------------------------------------------------ */

#define CHECK(cond)         \
    do {                    \
        if (!(cond))        \
            return -EFAULT; \
    } while (0)

/* Order-independent signature of a set of block offsets: the free blocks
 * met in the physical walk and those met in the lists must be the same set. */
static inline uint64_t sig_of(size_t b)
{
    uint64_t z = (uint64_t)b * 0x9e3779b97f4a7c15ull;
    return (z ^ (z >> 29)) * 0xbf58476d1ce4e5b9ull;
}

static int check_pool(const struct rtm_tlsf *t, const struct tlsf_pool *d, size_t *used,
                      size_t *live, size_t *free_bytes, size_t *free_blocks, uint64_t *sig)
{
    CHECK(d->start - d->link.raw_start < d->link.raw_len && d->end - d->start < d->link.raw_len);
    CHECK(d->end > d->start && (d->end - d->start) % GRANULE == 0);
    size_t b = d->start;
    bool prev_free = false;
    while (b != d->end) {
        CHECK(d->end - b >= MIN_BLOCK);
        hword hdr = HDR(t, b);
        size_t size = hdr_size(hdr);
        CHECK(!(hdr & F_FENCE));
        CHECK(!hardened(t) || tag_ok(t, b, hdr));
        /* (the size field whole: on 32-bit its bits past size_t's too) */
        CHECK((hdr & SIZE_MASK) == size && size >= MIN_BLOCK && size <= d->end - b);
        CHECK(((hdr & F_PREV_FREE) != 0) == prev_free);
        if (hdr & F_FREE) {
            CHECK(!prev_free); /* coalescing is complete */
            CHECK(prev_size(t, b + size) == size);
            *free_bytes += size;
            ++*free_blocks;
            *sig += sig_of(b);
        } else {
            *used += size;
            ++*live;
        }
        prev_free = (hdr & F_FREE) != 0;
        b += size;
    }
    hword sh = HDR(t, d->end);
    CHECK(hdr_size(sh) == 0 && (sh & F_FENCE) && !(sh & F_FREE));
    CHECK(!hardened(t) || tag_ok(t, d->end, sh));
    CHECK(((sh & F_PREV_FREE) != 0) == prev_free);
    return 0;
}

/* The free lists and bitmaps against the free blocks a walk of every pool
 * found (free_blocks, and the signature of their offsets): each list holds
 * blocks of its class only, linked both ways, and the lists together hold
 * exactly the free blocks. O(free blocks + classes). */
static int check_lists(const struct rtm_tlsf *t, size_t free_blocks, uint64_t walk_sig)
{
    uint64_t list_sig = 0;
    size_t listed = 0;
    for (unsigned fl = 0; fl < FL_COUNT; fl++) {
        CHECK(((t->fl_bitmap >> fl) & 1u) == (t->sl_bitmap[fl] != 0));
        for (unsigned sl = 0; sl < SL_COUNT; sl++) {
            size_t b = HEAD(t, fl, sl);
            CHECK(((t->sl_bitmap[fl] >> sl) & 1u) == (b != NIL));
            size_t prev = PSEUDO(fl * SL_COUNT + sl);
            while (b != NIL) {
                CHECK(++listed <= free_blocks); /* also bounds a cyclic list */
                const struct tlsf_pool *d = pool_of(t, b);
                /* a header position with room for a block, before its words are read */
                CHECK(d && ((b - d->start) & (GRANULE - 1)) == 0 && d->end - b >= MIN_BLOCK);
                hword hdr = HDR(t, b);
                size_t size = hdr_size(hdr);
                CHECK((hdr & F_FREE) && size <= d->end - b);
                CHECK(class_fl(size) == fl && class_sl(size) == sl);
                CHECK(size >= class_low(fl, sl));
                CHECK(PREV_GET(t, b) == prev);
                list_sig += sig_of(b);
                prev = b;
                b = NEXT(t, b);
            }
        }
    }
    CHECK(listed == free_blocks && list_sig == walk_sig); /* the lists hold the real free blocks */
    return 0;
}

/* Calls fn with each live block of pool d (ops_walk, kind.h): its result
 * when not 0, -EFAULT for a size that leaves the pool. O(blocks). */
static int walk_pool(const struct rtm_tlsf *t, const struct tlsf_pool *d,
                     int (*fn)(void *arg, void *block), void *arg)
{
    for (size_t b = d->start; b != d->end;) {
        hword hdr = HDR(t, b);
        size_t size = hdr_size(hdr);
        if (size < MIN_BLOCK || size > d->end - b)
            return -EFAULT;
        if (!(hdr & F_FREE)) {
            int rc = fn(arg, payload(t, b));
            if (rc)
                return rc;
        }
        b += size;
    }
    return 0;
}

#endif /* !RTM_LOGGED */
