/*
 * Internal: the undo log of a heap that must survive its lock holder's death
 * (robust shared heaps, rtmem/lock.h). It lies in the heap's memory, right
 * after the lock area, so that every process mapping the heap finds it.
 *
 * While a call holds the lock, every metadata word the kind writes is first
 * recorded here with its old value (store.h: the kinds' code is compiled a
 * second time with RTM_LOGGED set, which turns each RTM_SET into "record,
 * then store"). The call ends by emptying the log (rtm_undo_commit), before
 * it gives the lock back. A process killed at any instruction in between
 * leaves a log that names every word it changed since the call began; the
 * next process to take the lock (EOWNERDEAD) writes the old values back,
 * last first (rtm__undo_rollback), which returns the heap to the state it
 * had before the call, exactly. Words a call writes that are not metadata
 * are not recorded, by design: the payload memcpy of a moving realloc goes
 * to a block that the roll back frees again, and the page map entries a page
 * heap initialises lazily lie below a mark the roll back restores, where
 * nothing reads them.
 *
 * Order. An entry is complete before the count that makes it part of the
 * log, and the count is raised before the word it protects is written: so a
 * death between any two instructions leaves either an entry not yet
 * counted (its word not yet written) or a counted entry (its word written or
 * not: writing the old value back is right either way). A SIGKILL stops a
 * thread between two instructions and never loses a store it made, so only
 * the compiler's order matters here. Empty asm statements chain the three
 * stores: the count's new value comes out of one that reads the entry, and
 * the word's address out of one that reads the count (RTM_UNDO_BEFORE_STORE),
 * so neither store can move above what it depends on. For gcc these are
 * no barrier for the rest of memory: it keeps the count in a register from
 * one note to the next (clang treats each as a barrier for all of it). A
 * block's words noted before data goes in are followed by a compiler
 * barrier. The recovering process reads the log after taking the lock,
 * which orders it after every store of the dead holder.
 *
 * Bounds. An entry holds where the word is, as a distance from the log (so
 * that the log means the same at every address), its width (1, 2, 4 or 8
 * bytes) and its old value: 16 bytes. The capacity is fixed at create, for
 * the most words one call of the kind can write in a heap of that size
 * (rtm__undo_capacity); a call that would need more (none should) sets
 * `overflow`, and a death during such a call is left to the heap's full
 * check, as for a heap without a log.
 */
#ifndef RTMEM_SRC_HEAP_UNDO_H
#define RTMEM_SRC_HEAP_UNDO_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Pools a robust heap takes after create (rtm_heap_add_pool: -ENOSPC past
 * them). */
#define RTM_UNDO_POOLS 8u

struct rtm_undo_entry {
    uint64_t where; /* distance from the log << 2 | log2(width) */
    uint64_t old;   /* the word's value before the call, in its low bytes */
};

struct rtm_undo {
    uint32_t count;    /* entries of the call in progress: 0 between calls */
    uint32_t capacity; /* entries room was made for */
    uint32_t overflow; /* the call in progress outgrew the log */
    uint32_t peak;     /* most entries a call has used */
    uint64_t span;     /* bytes from the log to the end of the heap's memory */
    uint64_t rollbacks;
    uint64_t overflows;
    uint32_t pools; /* pools added after create (rtm_heap_add_pool) */
    uint32_t reserved0;
    uint64_t reserved[2];
    /* The memory of each added pool, as a distance from the log (modulo
     * 2^64: a pool may lie below it) and a length: a roll back writes
     * there too, and nowhere else outside [log, log + span). */
    struct {
        uint64_t at, len;
    } pool[RTM_UNDO_POOLS];
    struct rtm_undo_entry entry[];
};

_Static_assert(sizeof(struct rtm_undo) == 64 + 16 * RTM_UNDO_POOLS, "the header's size");

/* Bytes a log of n entries takes. */
static inline size_t rtm_undo_bytes(uint32_t n)
{
    return sizeof(struct rtm_undo) + (size_t)n * sizeof(struct rtm_undo_entry);
}

/* rtm_undo_note for a kind that has proved its calls fit the capacity it
 * gets (TLSF: see rtm__undo_capacity): no test of room but in a debug
 * build. */
static inline void rtm_undo_note_fits(struct rtm_undo *u, const void *p, size_t width)
{
    uint32_t n = u->count;
#if defined(RTM_DEBUG) && RTM_DEBUG
    if (n >= u->capacity)
        __builtin_trap();
#endif
    struct rtm_undo_entry *e = &u->entry[n];
    uint64_t lg = width == 8 ? 3 : width == 4 ? 2 : width == 2 ? 1 : 0;
    uint64_t old = 0;
    memcpy(&old, p, width);
    e->where = (uint64_t)((uintptr_t)p - (uintptr_t)u) << 2 | lg;
    e->old = old;
    /* The entry, then the count: the new count passes through an empty asm
     * that reads the entry, so the entry's stores come first. The count is
     * a plain store, so that gcc keeps its value in a register for the next
     * note instead of loading it back (after a volatile store it loads it
     * back, and every note waits for the last one's store to reach its
     * load). clang loads it back still: docs/bench.md says why. */
    uint32_t next = n + 1;
    __asm__ volatile("" : "+r"(next) : "m"(*e));
    u->count = next;
}

/* After a note, before the store it protects: the count the note raised
 * (or the overflow flag rtm_undo_note set instead) is in memory before the
 * store to *p: an empty asm reads both and hands p back, so the store
 * cannot move above it. Every RTM_SET does this (store.h); a caller of
 * rtm_undo_note that writes otherwise must place a compiler barrier. */
#define RTM_UNDO_BEFORE_STORE(u, p) \
    __asm__ volatile("" : "+r"(p) : "m"((u)->count), "m"((u)->overflow))

/* Records the old value of the width bytes at p (1, 2, 4 or 8, naturally
 * aligned) as the call's next entry. O(1), no branch taken but when full. */
static inline void rtm_undo_note(struct rtm_undo *u, const void *p, size_t width)
{
    if (__builtin_expect(u->count >= u->capacity, 0)) {
        u->overflow = 1;
        return;
    }
    rtm_undo_note_fits(u, p, width);
}

/*
 * The most metadata a free block keeps at its start: a page heap's run
 * descriptor (128 bytes; TLSF's links take 16). A call that writes data
 * into a block it has just taken (an owner record, realloc's copy) records
 * that much of it first (rtm_undo_note_block): rolled back, the block is
 * free again, and its links must be as they were.
 */
#define RTM_UNDO_BLOCK_BYTES 128u

/* Before bytes of data go to p in such a block: records its first
 * min(bytes, RTM_UNDO_BLOCK_BYTES) bytes and the word holding its last byte
 * (where a free TLSF block keeps its footer), in 8-byte words from p
 * rounded down to 8 (a kind may place data only 4-aligned on 32-bit; the
 * bytes before it are the same block's, freed again by a roll back). */
static inline void rtm_undo_note_block(struct rtm_undo *u, void *p, size_t bytes)
{
    char *w = (char *)((uintptr_t)p & ~(uintptr_t)7);
    size_t n = ((size_t)((char *)p - w) + bytes + 7) & ~(size_t)7;
    size_t head = n < RTM_UNDO_BLOCK_BYTES ? n : RTM_UNDO_BLOCK_BYTES;
    for (size_t i = 0; i < head; i += 8)
        rtm_undo_note(u, w + i, 8);
    if (n > head)
        rtm_undo_note(u, w + n - 8, 8);
    __atomic_signal_fence(__ATOMIC_SEQ_CST); /* the notes, then the data */
}

/* The call completed: its entries no longer count. O(1). */
static inline void rtm_undo_commit(struct rtm_undo *u)
{
    uint32_t n = u->count;
    __atomic_signal_fence(__ATOMIC_SEQ_CST); /* every store of the call, then the count */
    __atomic_store_n(&u->count, 0, __ATOMIC_RELAXED);
    if (__builtin_expect(n > u->peak, 0))
        u->peak = n;
    if (__builtin_expect(u->overflow, 0)) {
        u->overflow = 0;
        u->overflows++;
    }
}

/*
 * After the holder died: writes back the old value of every entry, last
 * first, then empties the log. room is the bytes from the log to the heap
 * (the most a log there can take); fixed, that the heap takes no added pool
 * (a shared heap: a log that names one is damaged). Returns 0 (nothing to undo, or undone),
 * 1 when the call overflowed the log (the caller must decide from the
 * heap's full check), -1 when the log itself is damaged (a capacity past
 * room, a count past the capacity, an entry outside the heap's memory and
 * its added pools, on the heap's header but for failed_allocs, or
 * misaligned): nothing is written then. Idempotent: a
 * process killed while rolling back leaves the log for the next one to
 * roll back again. O(entries x added pools).
 */
int rtm__undo_rollback(struct rtm_undo *u, size_t room, int fixed);

/* Whether the log names only memory it may: its header and capacity fit in
 * room, its span and added pools hold together. For attach. O(1). */
int rtm__undo_valid(const struct rtm_undo *u, size_t room);

/* Entries the log of a heap of the given kind in `bytes` of memory needs. */
uint32_t rtm__undo_capacity(uint32_t kind, size_t bytes);

#endif /* RTMEM_SRC_HEAP_UNDO_H */
