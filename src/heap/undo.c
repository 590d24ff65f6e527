/* The undo log of robust heaps: roll back and sizing (undo.h). */
#include "undo.h"

#include <stddef.h>

#include "kind.h"

/* An entry's distance from the log, kept in the entry's top 62 bits: signed
 * on 64-bit (an added pool may lie below the log), modulo 2^32 on 32-bit
 * (stored zero-extended, as the pools' places are). */
static inline uint64_t entry_dist(uint64_t where)
{
    return (uint64_t)((int64_t)where >> 2);
}

int rtm__undo_valid(const struct rtm_undo *u, size_t room)
{
    if (room < sizeof(*u) || u->capacity > (room - sizeof(*u)) / sizeof(u->entry[0]) ||
        u->count > u->capacity || u->span < room || u->pools > RTM_UNDO_POOLS)
        return 0;
    for (uint32_t i = 0; i < u->pools; i++)
        if (u->pool[i].len == 0 || u->pool[i].at + u->pool[i].len - 1 < u->pool[i].at)
            return 0; /* empty, or wrapping around */
    return 1;
}

/* Whether the width bytes at distance dist from the log are memory a roll
 * back may write: the heap's memory past the log, up to the end of what
 * create was given, but for the heap's common header (at room), whose only
 * field a call changes is failed_allocs (a crafted log must not write a
 * handler address, a kind or a key there); the log's table of added pools;
 * an added pool (none in a fixed heap: a shared one). */
static int in_heap(const struct rtm_undo *u, size_t room, int fixed, uint64_t dist, uint64_t width)
{
    if (dist > UINTPTR_MAX)
        return 0; /* no address of this process (a 32-bit one) lies there */
    if (dist >= rtm_undo_bytes(u->capacity) && dist <= u->span && u->span - dist >= width) {
        uint64_t hdr = sizeof(struct rtm_heap), rel = dist - room;
        if (rel >= hdr && rel + width - 1 >= hdr) /* wholly outside the header */
            return 1;
        return rel == offsetof(struct rtm_heap, failed_allocs) &&
               width == sizeof(((struct rtm_heap *)0)->failed_allocs);
    }
    if (fixed)
        return 0;
    /* the log's own table of added pools (rtm_heap_add_pool names a pool) */
    if (dist >= offsetof(struct rtm_undo, pools) && dist <= offsetof(struct rtm_undo, entry) &&
        offsetof(struct rtm_undo, entry) - dist >= width)
        return 1;
    for (uint32_t i = 0; i < u->pools; i++) {
        uint64_t rel = dist - u->pool[i].at; /* modulo 2^64, as the distances */
        if (rel < u->pool[i].len && u->pool[i].len - rel >= width)
            return 1;
    }
    return 0;
}

int rtm__undo_rollback(struct rtm_undo *u, size_t room, int fixed)
{
    uint32_t n = __atomic_load_n(&u->count, __ATOMIC_RELAXED);
    if (n == 0) {
        u->overflow = 0; /* a death inside a commit, after its count */
        return 0;
    }
    if (!rtm__undo_valid(u, room) || (fixed && u->pools != 0))
        return -1;
    if (u->overflow) {
        u->count = 0;
        u->overflow = 0;
        u->overflows++;
        return 1;
    }
    /* Every entry first: a damaged log writes nothing. */
    for (uint32_t i = 0; i < n; i++) {
        uint64_t where = u->entry[i].where, width = (uint64_t)1 << (where & 3);
        uint64_t dist = entry_dist(where);
        if (!in_heap(u, room, fixed, dist, width) || ((uintptr_t)u + dist) % width != 0)
            return -1;
    }
    for (uint32_t i = n; i-- > 0;) {
        const struct rtm_undo_entry *e = &u->entry[i];
        /* in the heap (checked above): the distance fits uintptr_t */
        memcpy((void *)((uintptr_t)u + (uintptr_t)entry_dist(e->where)), &e->old,
               (size_t)1 << (e->where & 3));
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST); /* the words, then the count */
    __atomic_store_n(&u->count, 0, __ATOMIC_RELAXED);
    u->rollbacks++;
    return 0;
}

/* Levels a balanced tree of at most n nodes can have (red-black: 2 log2(n + 1),
 * which covers AVL too), plus one. */
static uint32_t tree_levels(size_t n)
{
    uint32_t lg = 0;
    while (n) {
        lg++;
        n >>= 1;
    }
    return 2 * lg + 1;
}

/*
 * The capacity is sized for the most words a call can write, with a wide
 * margin over the most ever seen (tests/undo_test.c prints it):
 *  - TLSF: a constant. The longest call is a realloc that moves: an
 *    allocation (about 18 words), its copy's first 128 bytes and last word
 *    (17), the free of the old block (at most 21), and the owner record
 *    (2): under 60; 128 entries. Seen: 56.
 *  - halffit: a constant too. The longest call is again a realloc that
 *    moves: an allocation (at most 16 words), its copy's notes (17), the
 *    free of the old fragment (at most 17) and the owner record (3): under
 *    60; 128 entries.
 *  - xvheap: TLSF's calls, plus a page taken (its descriptor, pool and
 *    list links: under 25 words) or given back (under 15): a moving
 *    realloc that does both stays under 100; 192 entries.
 *  - zsheap: a zspage made (a run cut: under 45 words with its list
 *    link) and an object taken (under 10); a free that gives a zspage
 *    back (under 25); a moving realloc does all three and its copy's
 *    notes (17): under 100; 192 entries.
 *  - heapmem, xnheap: a call updates the two trees of free runs a few
 *    times (a moving realloc: at most 5 removals and 4 insertions), each
 *    a few words per level it climbs, plus a bounded rest. 128 entries and
 *    32 per level of the deeper tree (red-black: 2 log2(runs + 1)) cover
 *    the calls seen six times over (a 16 MiB heap: 184 seen, 1120 room).
 *    An AVL removal may rotate at every level, and five of them at every
 *    level in one call would need more: a call that outgrows the log is
 *    counted (overflows) and finishes, and a death during it is left to
 *    the full check (rtmem/lock.h). None has been seen.
 */
uint32_t rtm__undo_capacity(uint32_t kind, size_t bytes)
{
    if (kind == RTM_KIND_TLSF || kind == RTM_KIND_HALFFIT)
        return 128;
    if (kind == RTM_KIND_XVHEAP || kind == RTM_KIND_ZSHEAP)
        return 192;
    /* Page heaps: free runs are at most one per two pages (512 bytes). */
    return 128 + 32 * tree_levels(bytes / 1024 + 1);
}
