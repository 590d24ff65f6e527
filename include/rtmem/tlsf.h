/*
 * rtmem TLSF: two-level segregated fit (Masmano, Ripoll, Crespo, Real, 2004).
 *
 * O(1) allocation and free: sizes map to a (first level, second level) class
 * with a few bit operations, a free block of a large-enough class is found with
 * two find-first-set instructions on bitmaps, and a freed block is merged at
 * once with both physical neighbours. No loop on the alloc or free paths
 * depends on the heap's size or state.
 *
 * Layout (the same on 64-bit and 32-bit targets; every figure follows from
 * RTM_TLSF_* below):
 *  - Each block starts with an 8-byte header: its size, flag bits (free,
 *    previous block free) and the integrity tag (Hardening, below). A used
 *    block carries nothing else, so the overhead of a live block is
 *    RTM_TLSF_HEADER_BYTES (8) plus rounding. On 32-bit the header is a
 *    word more than the size needs: the room for the tag.
 *  - Block sizes (header included) are multiples of RTM_TLSF_GRANULE (16) and
 *    at least RTM_TLSF_MIN_BLOCK (32). A request of n bytes costs
 *    max(32, round_up(n + 8, 16)) bytes (rtm_tlsf_block_cost), plus 16 when
 *    the rest of the free block it is cut from would be too small to stand
 *    alone and is handed out with it. Usable size is the block minus 8: at
 *    least n, and at most n + 39 (n + 23 when nothing was absorbed).
 *  - Payloads are aligned to 16 (alignof(max_align_t) on x86-64, arm64 and
 *    i686; more than the 8 armv7 needs).
 *  - Free blocks keep their list links and a boundary-tag footer inside their
 *    own (free) memory: words of the target's size (4 bytes on 32-bit). The
 *    links lie 16 bytes from the block's start, past the header and the
 *    rest of its first granule, which nothing reads: an overflow of up to
 *    16 bytes from the block before reaches the header only.
 *    Links are offsets from the heap base, never pointers: a TLSF heap whose
 *    pools all lie in one mapping works wherever that mapping is placed in
 *    each process.
 *  - Classes: sizes below 512 bytes have one exact class per 16 bytes; above,
 *    each power of two is split in RTM_TLSF_SL_COUNT (32) classes, so the
 *    good-fit rounding wastes at most 1/32 of a block in the search (the block
 *    handed out is then split to the request, so this is not kept as waste).
 *  - Each pool ends with a permanently used sentinel header, so merging never
 *    asks "is there a next block?".
 *
 * Bounds:
 *  - alloc, aligned_alloc, free: O(1). free, realloc and usable_size of an
 *    address outside the first pool add O(number of pools) to find its pool.
 *  - realloc: O(1) in place; O(1) + O(size) to copy when it must move.
 *  - stats: O(1). check: O(blocks + RTM_TLSF_FL_COUNT * RTM_TLSF_SL_COUNT).
 *  - create: O(RTM_TLSF_FL_COUNT * RTM_TLSF_SL_COUNT) to clear the lists.
 *  - Control structure: RTM_TLSF_CONTROL_BYTES (about 8.5 KiB on 64-bit, 3.4 KiB on
 *    32-bit) at the
 *    start of the memory given to create. Each pool added later spends
 *    RTM_TLSF_POOL_OVERHEAD_MAX bytes at most (descriptor, sentinel, trim).
 *  - Largest block: RTM_TLSF_MAX_BLOCK (1 TiB - 16 on 64-bit, 2 GiB - 16 on
 *    32-bit); a pool whose blocks would exceed it is refused with E2BIG (add
 *    it as several pools). Offsets are modulo 2^32 on 32-bit: pools anywhere
 *    in the address space work.
 *  - Fill guarantee: a fresh heap with one pool of usable_bytes U holds
 *    exactly floor(U / cost(n)) blocks of n bytes, cost(n) as above. With k
 *    pools, sum(floor(U_i / cost)) for requests that cost up to 1024 bytes
 *    (classes one granule wide), and at most k fewer above (each pool's last
 *    remainder may share a class with another and not be found).
 *  - largest_free_bytes in the statistics is exact: the largest request that
 *    would succeed now (and every smaller one succeeds too). On a damaged
 *    heap it is 0 when the block it would describe fails its checks.
 *  - Bad frees: foreign and misaligned addresses are always refused. A block
 *    freed twice is refused as long as its memory has not been handed out
 *    again (every word TLSF leaves at a header position in free memory reads
 *    as free). A pointer into a live block's interior is refused only when
 *    the word before it does not look like a block header: do not rely on it.
 *
 * Hardening (rtmem/heap.h, "Hardening"), every target:
 *  - Every header carries a 24-bit tag in its top bits: a keyed hash (the key
 *    is drawn per heap at create) of the header's offset, size and flags.
 *    Memory cost: none beyond the 8-byte header. A header changed by a write that does not know the
 *    key (an overflow, a stray pointer) fails its tag with probability
 *    1 - 2^-24. The tag is no cryptographic MAC: a program that reads a
 *    header can compute valid tags for values near it.
 *  - At RTM_HEAP_HARDEN_O1 (the default) and FULL, before anything is
 *    written: free checks its block's tag and its successor's, that a free
 *    predecessor's size (its footer) leads back to a tagged free header of
 *    that size inside the pool, and that the list links of each free neighbour
 *    it unlinks lead where a link may lead (a block's position in a pool, a
 *    list head, the list end) and link back (safe unlinking); alloc checks
 *    the tag of the block it takes off a list, that it is free and large
 *    enough for the request, and that its next link leads to the list end
 *    or to a block that links back to it; realloc checks what free would,
 *    and the header after a successor it grows into. Each check is O(1) (a
 *    link into a pool other than the first costs O(pools) to place). A
 *    header a merge swallows is marked, so that no check takes it for a
 *    block's. Tags are checked where an overflow reaches (headers); links
 *    lie out of its reach, and are checked only for agreeing with each
 *    other.
 *  - Each pool keeps GRANULE bytes from its sentinel's header on (the
 *    header and a word more): 16 bytes past the last block of a pool stay
 *    inside it, never reaching the pool or control structure the caller
 *    placed next.
 *  - What that detects: an overflow of any length from a block into the
 *    next block's header (reported when either block is freed or
 *    reallocated, or when the damaged free block is next taken by alloc).
 *    An overflow of up to 16 bytes changes no link. Damaged links of a free
 *    block (a use after free, a stray write) are refused when they do not
 *    link back; a forged pair that does (a link to program data that holds
 *    the link back) can make an unlink or alloc write one link value into
 *    that data, but no block there is ever handed out (its header fails
 *    the tag when a list offers it, and that damage is reported). A
 *    damaged footer is found when its block is merged (the header it leads
 *    to must be a free one of that size). A live
 *    block's damaged header is reported when it or the block before it is
 *    freed. Two damaged headers are refused without being counted
 *    (-EINVAL, as a stale pointer or a double free would be): one that
 *    reads as a free block's next link (free and fence bits both set, and
 *    a value a next link may hold), and one that differs from a valid
 *    header only by the swallowed mark; the block before either still
 *    reports the damage.
 *  - A free block's next link overwritten with the list end cuts its list
 *    short: the blocks after it are no longer handed out (a leak, never an
 *    overlap). The free of a neighbour of one of them reports the damage
 *    and is refused; those blocks, and that neighbour, stay leaked.
 *  - What it does not detect: damage to a live block's payload (the user's
 *    data: TLSF keeps nothing there), to a free block's interior beyond its
 *    links, or damage that rewrites a header or link with exactly the value
 *    TLSF would have written (a tag forged without the key: 2^-24).
 *  - Cost: docs/hardening.md has it, measured with rtmem bench.
 *  - RTM_HEAP_HARDEN_NONE writes no tags and checks nothing: an overflow
 *    into a header can make free write anywhere in the address space.
 *  - A free block's next link lies at a header position and is marked
 *    (free and fence bits), so that a stale pointer whose header position
 *    holds one (memory that was free once) is refused quietly (-EINVAL).
 *    Other stale pointers into memory that was free read what it held as
 *    a header and are refused, with -EINVAL or, where those bytes look
 *    like a damaged header, as damage (-EFAULT, reported). Either way
 *    nothing is written.
 */
#ifndef RTMEM_TLSF_H
#define RTMEM_TLSF_H

#include <stddef.h>
#include <stdint.h>

#include "rtmem/heap.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RTM_TLSF_HEADER_BYTES ((size_t)8)
#define RTM_TLSF_GRANULE      ((size_t)16)
#define RTM_TLSF_MIN_BLOCK    ((size_t)32)
#define RTM_TLSF_SL_LOG2      5
#define RTM_TLSF_SL_COUNT     (1u << RTM_TLSF_SL_LOG2)
/* First-level classes: sizes below 2^(FL_COUNT + 8) bytes. */
#define RTM_TLSF_FL_COUNT     (sizeof(size_t) == 8 ? 32u : 23u)
#define RTM_TLSF_MAX_BLOCK    ((((size_t)1) << (RTM_TLSF_FL_COUNT + 8)) - RTM_TLSF_GRANULE)
/* Largest request that can ever succeed. */
#define RTM_TLSF_MAX_REQUEST  (RTM_TLSF_MAX_BLOCK - RTM_TLSF_HEADER_BYTES)
/* Upper bound of the control structure, alignment trim of mem included. */
#define RTM_TLSF_CONTROL_BYTES \
    ((size_t)(RTM_TLSF_FL_COUNT * RTM_TLSF_SL_COUNT * sizeof(size_t) + 512))
/* Upper bound of what an added pool spends on bookkeeping. */
#define RTM_TLSF_POOL_OVERHEAD_MAX ((size_t)96)

struct rtm_tlsf;
typedef struct rtm_tlsf rtm_tlsf_t;

/* Creates a TLSF heap in [mem, mem + size); see rtm_heap_create for errors.
 * The result is also a struct rtm_heap (rtm_tlsf_heap). */
RTM_API struct rtm_tlsf *rtm_tlsf_create(void *mem, size_t size);
/* The same with options (rtm_heap_create_ex); cfg NULL means defaults. A
 * lock is refused (EINVAL): the typed API never locks (rtmem/lock.h); a
 * locked TLSF heap is made with rtm_heap_create_ex and used through
 * rtm_heap_*. */
RTM_API struct rtm_tlsf *rtm_tlsf_create_ex(void *mem, size_t size,
                                            const struct rtm_heap_config *cfg);
/* The same heap seen through the generic interface. O(1). */
RTM_API struct rtm_heap *rtm_tlsf_heap(struct rtm_tlsf *t);

/* Typed entry points: same contracts as rtm_heap_* in rtmem/heap.h, without
 * the dispatch. t must come from rtm_tlsf_create (not checked on the hot
 * paths). */
RTM_API int rtm_tlsf_add_pool(struct rtm_tlsf *t, void *mem, size_t size);
RTM_API void *rtm_tlsf_alloc(struct rtm_tlsf *t, size_t size);
RTM_API void *rtm_tlsf_aligned_alloc(struct rtm_tlsf *t, size_t alignment, size_t size);
RTM_API void *rtm_tlsf_realloc(struct rtm_tlsf *t, void *p, size_t size);
RTM_API int rtm_tlsf_free(struct rtm_tlsf *t, void *p);
RTM_API size_t rtm_tlsf_usable_size(const struct rtm_tlsf *t, const void *p);
RTM_API int rtm_tlsf_stats(const struct rtm_tlsf *t, struct rtm_heap_stats *out);
RTM_API int rtm_tlsf_check(const struct rtm_tlsf *t);
/* Bytes of heap one request of size bytes takes (header and rounding
 * included), or 0 if the request is impossible. O(1). */
RTM_API size_t rtm_tlsf_block_cost(size_t size);

#ifdef __cplusplus
}
#endif

#endif /* RTMEM_TLSF_H */
