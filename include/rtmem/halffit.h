/*
 * rtmem halffit: a half-fit allocator (Ogasawara, 1995), the class of
 * o1heap: every block is a power-of-two fragment, and the free fragments
 * sit in one list per power of two, with one bitmap word of the lists that
 * are not empty.
 *
 * Allocation rounds the request plus its header up to a power of two
 * F = 2^k and takes the first fragment of the first non-empty list k or
 * above: every fragment there holds at least 2^k bytes, so nothing is
 * searched. The fragment's tail beyond F goes back to the list of its own
 * size. Free merges the fragment with both physical neighbours at once
 * (their sizes are in the headers: boundary tags) and puts the result at
 * the head of its list. No loop on the alloc or free paths: each runs a
 * short, fixed sequence of instructions.
 *
 * Layout (the same on 64-bit and 32-bit targets; every figure follows from
 * RTM_HALFFIT_* below):
 *  - Each fragment starts with a 16-byte header (RTM_HALFFIT_HEADER_BYTES):
 *    the size of the fragment before it, then its own size, flag bits and
 *    the integrity tag (Hardening, below). A live fragment carries nothing
 *    else.
 *  - A request of n bytes takes the fragment F(n) = max(32, 2^ceil(log2(n +
 *    16))) (rtm_halffit_fragment_size): usable size F(n) - 16, which is at
 *    least n and at most 2n + 16. The fragment is exactly F(n): nothing is
 *    ever absorbed.
 *  - Free fragments are multiples of RTM_HALFFIT_GRANULE (32) bytes, at
 *    least RTM_HALFFIT_MIN_FRAGMENT (32), and keep their two list links in
 *    their first payload bytes. Links and every other piece of metadata are
 *    offsets from the heap, never pointers: a heap whose pools all lie in
 *    one mapping works wherever that mapping is placed in each process.
 *  - Payloads are aligned to 32 bytes (more than alignof(max_align_t)).
 *  - Each pool starts with a used 32-byte fence and ends with a used
 *    16-byte sentinel header, so a fragment always has two neighbours and
 *    merging asks no "is there one?".
 *
 * Bounds:
 *  - alloc, aligned_alloc, free: O(1). free, realloc and usable_size of an
 *    address outside the first pool add O(number of pools) to find its pool.
 *  - realloc: O(1) when the fragment stays (same power of two) or grows into
 *    its free successor; O(1) + O(size) to copy when it moves.
 *  - stats: O(1). check: O(fragments + RTM_HALFFIT_BIN_COUNT).
 *  - create: O(RTM_HALFFIT_BIN_COUNT) to clear the lists.
 *  - Control structure: at most RTM_HALFFIT_CONTROL_BYTES (under 1 KiB) at
 *    the start of the memory given to create. Each pool added later spends
 *    at most RTM_HALFFIT_POOL_OVERHEAD_MAX bytes (descriptor, fence,
 *    sentinel, trims).
 *  - Largest fragment: RTM_HALFFIT_MAX_FRAGMENT (512 GiB on 64-bit, 1 GiB
 *    on 32-bit), so the largest request is RTM_HALFFIT_MAX_REQUEST; a pool
 *    holds at most RTM_HALFFIT_MAX_POOL bytes of fragments, and a larger
 *    one is refused with E2BIG (add it as several pools).
 *  - Fill guarantee: a fresh heap whose pools hold P_1, P_2... usable bytes
 *    (usable_bytes is their sum) holds exactly sum(floor(P_i / F)) blocks of
 *    any request whose fragment is F (rtm_heap_fill_count says so): after
 *    each allocation a pool keeps one free fragment, its rest.
 *  - largest_free_bytes in the statistics is exact: 2^k - 16 for the
 *    highest non-empty list k (every fragment there holds 2^k bytes, and a
 *    request of one byte more needs 2^(k+1)). It is at least half of the
 *    largest free fragment less 16: a fresh pool of P bytes serves at most
 *    2^floor(log2(P)) - 16 in one block.
 *  - Worst-case fragmentation (Robson's bound, rtm_heap_pool_bound_ex): see
 *    below.
 *  - Bad frees: foreign and misaligned addresses are always refused; a
 *    block freed twice is refused as long as its memory has not been handed
 *    out again (its header reads as free, or as a header a merge swallowed).
 *    A pointer into a live block's interior, 32-aligned, is refused only
 *    when the 16 bytes before it do not read as a live header (hardened:
 *    reported as damage, since they fail the tag): do not rely on it.
 *
 * Realloc keeps the fragment when the new size takes the same power of
 * two, and grows into a free successor when the two hold the new fragment
 * (else it moves). Going down a power of two or more it moves the block to
 * a fragment the lists choose (copying the new size), as an allocation and
 * a free would, and cuts the block in place only when no list holds one: a
 * block cut in place leaves a hole behind a small block where the lists
 * did not choose, and a program that shrank each large block so would pin
 * one hole per shrink, which Robson's bound below does not allow for.
 * realloc(p, 0) gives a minimum fragment; realloc(NULL, n) is alloc(n); a
 * failure leaves p as it was (rtmem/heap.h).
 *
 * Worst-case fragmentation (rtm_heap_pool_bound_ex, rtmem/heap.h). A
 * program whose live blocks never hold more than M requested bytes, each
 * request between m and n bytes, is never refused by a heap whose one pool
 * holds at least
 *
 *     H = M_f * (1 + log2(F(n) / F(m)))
 *
 * usable bytes, where M_f = floor(rho * M) is the most the live fragments
 * can take (rho: the largest F(r) / r for m <= r <= n, at r = m or at the
 * first request past m whose fragment doubles, F(m) - 15). This is Robson's
 * bound for allocators that hand out power-of-two blocks, M (1 + log2 n) in
 * units of the smallest block (J. M. Robson, "Worst case fragmentation of
 * first fit and best fit storage allocation strategies", Comput. J. 20(3),
 * 1977), in the form o1heap's README gives for half-fit, counted here in
 * fragments (header and rounding included, where o1heap counts requests
 * and doubles them). About 2 M (1 + log2(n / m)) for requests of a few
 * hundred bytes and more: it grows with log(n / m) where best fit's, and
 * TLSF's, grows with n / m. rtm_heap_pool_bound_ex adds the control
 * structure, fence, sentinel and alignment trims.
 * It is the figure the literature gives for this class of allocator, not
 * one proven here for this implementation's choices (the most recently
 * freed fragment of the lowest list that serves): Robson's own adversary,
 * and others (tests/halffit_test.c prints the pool each needs), stay
 * within it. Realloc keeps to it: its moves are an allocation and a free
 * (see "Realloc"). An alignment above 32 places a block inside a fragment
 * where the lists did not choose, and the gap left before it can pin a
 * hole as best fit's do: with max_align above 32 the bound is the larger
 * of H and the figure that holds for any placement,
 *     max over m <= r <= n of
 *     rho (M - r) + (floor((M - r) / m) + 1) (S(r) - 32),
 * S(r) = 2^ceil(log2(F(r) + max_align - 32)) the fragment an aligned
 * request searches for (at a failure free fragments never touch, so at
 * most one more than the live blocks lie between them, each smaller than
 * S(r)). Past RTM_HALFFIT_MAX_POOL - 4 KiB the bound is refused (E2BIG).
 *
 * Hardening (rtmem/heap.h, "Hardening"), every target:
 *  - The second word of every header holds a 24-bit tag in its top bits: a
 *    keyed hash (the key is drawn per heap at create) of the header's
 *    offset, size and flags, one multiply. Memory cost: none. A header
 *    changed by a write that does not know the key fails its tag with
 *    probability 1 - 2^-24. The tag is no cryptographic MAC.
 *  - At RTM_HEAP_HARDEN_O1 (the default) and FULL, before anything is
 *    written: free checks its fragment's tag; its successor's tag, and
 *    that the successor's first word names the fragment's size; that the
 *    fragment's own first word (the word an overflow reaches first) leads
 *    back, inside the pool, to a tagged header of that size; and, for each
 *    free neighbour it merges, that its list links lead to a list head,
 *    the list end or a fragment position in a pool, and link back
 *    (next(prev(x)) == x, prev(next(x)) == x: safe unlinking). Alloc
 *    checks that the fragment it takes off a list is an intact free
 *    fragment (tag, flags) large enough for the request, that it links
 *    back to its list head, and that its next link leads to the list end
 *    or to a fragment position that links back to it. Realloc checks what
 *    free would, and, growing into its successor, the header after that
 *    one. Tags are checked where an overflow reaches (headers); links lie
 *    out of its reach and are checked only for agreeing with each other.
 *    Each check is O(1) (a position in a pool other than the first costs
 *    O(pools) to place).
 *  - A header a merge swallows is marked, so that a second free of its
 *    pointer is refused as not live (-EINVAL).
 *  - What that detects: an overflow of 1 to 16 bytes past a block reaches
 *    only the next fragment's header (the list links of a free fragment lie
 *    after it), and is reported when either block is freed or reallocated,
 *    when the damaged free fragment is next taken by alloc, or when the
 *    fragment after it is freed. A free fragment's links damaged by a stray
 *    write (a use after free) are reported when it is unlinked, unless
 *    they lead to data that links back: then one link value is written
 *    into that data, and no fragment there is ever handed out (its header
 *    fails the tag when its list offers it, and that is reported).
 *  - What it does not detect: damage to a live block's payload, to a free
 *    fragment's interior beyond its links, a link rewritten to another
 *    intact free fragment whose links agree, or a header forged without the
 *    key (2^-24).
 *  - RTM_HEAP_HARDEN_NONE writes no tags and checks nothing but the flags
 *    and size of the fragment freed: an overflow into a header can make
 *    free write anywhere.
 */
#ifndef RTMEM_HALFFIT_H
#define RTMEM_HALFFIT_H

#include <stddef.h>
#include <stdint.h>

#include "rtmem/heap.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RTM_HALFFIT_HEADER_BYTES ((size_t)16)
/* Free fragments, pools and payload alignment are multiples of it. */
#define RTM_HALFFIT_GRANULE      ((size_t)32)
#define RTM_HALFFIT_MIN_FRAGMENT ((size_t)32)
/* Lists, one per power of two; those of fragments that exist are 5 to 39. */
#define RTM_HALFFIT_BIN_COUNT    64u
/* Bytes of fragments one pool holds at most. */
#define RTM_HALFFIT_MAX_POOL \
    ((((size_t)1) << (sizeof(size_t) == 8 ? 40 : 31)) - RTM_HALFFIT_GRANULE)
/* Largest fragment: the largest power of two a pool holds. */
#define RTM_HALFFIT_MAX_FRAGMENT      (((size_t)1) << (sizeof(size_t) == 8 ? 39 : 30))
/* Largest request that can ever succeed. */
#define RTM_HALFFIT_MAX_REQUEST       (RTM_HALFFIT_MAX_FRAGMENT - RTM_HALFFIT_HEADER_BYTES)
/* Upper bound of the control structure, alignment trim of mem included. */
#define RTM_HALFFIT_CONTROL_BYTES     ((size_t)1024)
/* Upper bound of what an added pool spends on bookkeeping. */
#define RTM_HALFFIT_POOL_OVERHEAD_MAX ((size_t)160)

struct rtm_halffit;
typedef struct rtm_halffit rtm_halffit_t;

/* Creates a halffit heap in [mem, mem + size); see rtm_heap_create for the
 * errors (ENOMEM below a control structure and one minimum fragment, E2BIG
 * above RTM_HALFFIT_MAX_POOL bytes of fragments). The result is also a
 * struct rtm_heap (rtm_halffit_heap). O(RTM_HALFFIT_BIN_COUNT). */
RTM_API struct rtm_halffit *rtm_halffit_create(void *mem, size_t size);
/* The same with options (rtm_heap_create_ex); cfg NULL means defaults. A
 * lock is refused (EINVAL): the typed API never locks (rtmem/lock.h); a
 * locked halffit heap is made with rtm_heap_create_ex and used through
 * rtm_heap_*. O(RTM_HALFFIT_BIN_COUNT). */
RTM_API struct rtm_halffit *rtm_halffit_create_ex(void *mem, size_t size,
                                                  const struct rtm_heap_config *cfg);
/* The same heap seen through the generic interface (NULL for NULL). O(1). */
RTM_API struct rtm_heap *rtm_halffit_heap(struct rtm_halffit *h);

/* Typed entry points: the contracts of rtm_heap_* in rtmem/heap.h, without
 * the dispatch. h must come from rtm_halffit_create (not checked on the
 * hot paths). */

/* Adds [mem, mem + size) as one more pool: 0, -EINVAL (NULL, wrap-around,
 * overlap with a pool of h), -ENOMEM (no room for one minimum fragment),
 * -E2BIG (more than RTM_HALFFIT_MAX_POOL bytes of fragments). O(pools). */
RTM_API int rtm_halffit_add_pool(struct rtm_halffit *h, void *mem, size_t size);
/* A block of at least size bytes, 32-aligned; NULL when no list holds a
 * fragment of F(size) bytes, size is above RTM_HALFFIT_MAX_REQUEST, or
 * (hardened) the fragment it would take is damaged. O(1). */
RTM_API void *rtm_halffit_alloc(struct rtm_halffit *h, size_t size);
/* The same aligned to alignment (a power of two; NULL for 0, another
 * value, or one above RTM_HALFFIT_MAX_FRAGMENT). Up to 32 it is alloc; above,
 * the fragment taken holds F(size) + alignment - 32 bytes, and the gap
 * before the aligned block stays free. O(1). */
RTM_API void *rtm_halffit_aligned_alloc(struct rtm_halffit *h, size_t alignment, size_t size);
/* rtm_heap_realloc (see "Realloc" above): O(1) in place, O(1) + O(size)
 * when the block moves. */
RTM_API void *rtm_halffit_realloc(struct rtm_halffit *h, void *p, size_t size);
/* Frees p: 0, -EINVAL (no live block: foreign, misaligned, freed already),
 * -EFAULT (a hardening check failed: nothing written, the corruption
 * counted and reported). free(NULL) is 0. O(1), O(pools) outside the
 * first pool. */
RTM_API int rtm_halffit_free(struct rtm_halffit *h, void *p);
/* F(n) - 16 for a live block allocated for n bytes; 0 for NULL, a foreign
 * or misaligned address, or a free block. O(1), O(pools) outside the first
 * pool. */
RTM_API size_t rtm_halffit_usable_size(const struct rtm_halffit *h, const void *p);
/* The statistics of rtmem/heap.h: 0, or -EINVAL for NULL or a destroyed
 * heap. O(1). */
RTM_API int rtm_halffit_stats(const struct rtm_halffit *h, struct rtm_heap_stats *out);
/* Walks every pool and every list: 0, -EINVAL (no halffit heap), or
 * -EFAULT at the first thing that does not hold (a tag, a size, a boundary
 * tag, two free neighbours, a list or bitmap that disagrees with the
 * fragments). Reads nothing outside the pools and the control structure.
 * O(fragments + RTM_HALFFIT_BIN_COUNT). */
RTM_API int rtm_halffit_check(const struct rtm_halffit *h);
/* F(size): the bytes of heap one request of size bytes takes, header
 * included, or 0 above RTM_HALFFIT_MAX_REQUEST. O(1). */
RTM_API size_t rtm_halffit_fragment_size(size_t size);

#ifdef __cplusplus
}
#endif

#endif /* RTMEM_HALFFIT_H */
