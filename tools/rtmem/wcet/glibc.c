/*
 * `rtmem wcet`: glibc malloc's long paths, the ones a random workload
 * rarely meets and a real-time program must never meet in its loop:
 *
 *   malloc-consolidate  a request of the large-bin range (1024 bytes and
 *                       more) while fast-bin chunks wait: every one of them
 *                       is consolidated and sorted into the bins first, a
 *                       loop as long as the fast bins are (here 193
 *                       chunks, kept apart by live guards);
 *   free-trim           the free of the chunk below the top of the heap
 *                       that leaves the top above M_TRIM_THRESHOLD, while
 *                       fast-bin chunks wait: they are consolidated, then
 *                       sbrk gives memory back to the kernel (a system
 *                       call);
 *   malloc-mmap         a request above M_MMAP_THRESHOLD: a fresh mmap (a
 *                       system call; under the timed run's mlockall the
 *                       kernel populates and locks every page of it);
 *   free-munmap         its free: munmap.
 *
 * glibc's thresholds move with the program's history (a freed mmap chunk
 * raises the mmap threshold, and the trim threshold with it); the
 * scenarios pin both at their defaults (128 KiB) with mallopt, so that
 * every repetition meets the same path. glibc's state lives in the
 * process, so each repetition builds its state again and undoes it after,
 * and each repetition is checked (measure.c): glibc's history can make a
 * build miss its path, and a repetition that did is left out and counted.
 * The checks read glibc's own accounts (mallinfo2's fast-bin and mmap
 * chunk counts, the program break).
 */
#include <malloc.h>
#include <stdlib.h>
#include <unistd.h>

#include "wcet.h"

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33)) && \
    !defined(WCET_SANITIZED)

#define THRESHOLD_BYTES  (128 * 1024)
#define SMALL_REQ        24u  /* a 32-byte chunk: a fast bin */
#define FAST_CHUNKS      200u /* freed; the first 7 go to the thread's cache */
#define TRIM_FAST_CHUNKS 64u
#define LARGE_REQ        1100u /* the large-bin range */
#define TRIM_CHUNK_BYTES ((size_t)60 * 1024)
#define TRIM_CHUNKS      4u
#define MMAP_BYTES       ((size_t)1 << 20)

static void pin_thresholds(void)
{
    static bool done;
    if (!done) {
        mallopt(M_MMAP_THRESHOLD, THRESHOLD_BYTES);
        mallopt(M_TRIM_THRESHOLD, THRESHOLD_BYTES);
        done = true;
    }
}

static void undo_blocks(struct wcet_case *c)
{
    for (size_t i = 0; i < c->n_blocks; i++)
        free(c->blocks[i]);
    c->n_blocks = 0;
}

static void undo_all(struct wcet_case *c)
{
    undo_blocks(c);
    if (c->op != WCET_OP_FREE)
        free(c->ret);
    c->ret = NULL;
}

/* n chunks of SMALL_REQ, each followed by a guard kept in c->blocks (so
 * that no two merge), then the n freed: the first 7 to the thread's
 * cache, the rest to the fast bins. 0, or -1 (c->why; what was allocated
 * is in c->blocks or freed). */
static int fast_chunks(struct wcet_case *c, size_t n)
{
    void *victims[FAST_CHUNKS];
    size_t made = 0;
    int rc = 0;
    for (; made < n && c->n_blocks < WCET_MAX_BLOCKS; made++) {
        victims[made] = malloc(SMALL_REQ);
        c->blocks[c->n_blocks] = malloc(SMALL_REQ);
        if (!victims[made] || !c->blocks[c->n_blocks++]) {
            rc = wcet_fail(c, "build: malloc failed");
            made++;
            break;
        }
    }
    for (size_t i = 0; i < made; i++)
        free(victims[i]);
    return rc;
}

/* ---- malloc-consolidate ---- */

static int consolidate_build(struct wcet_case *c)
{
    pin_thresholds();
    if (fast_chunks(c, FAST_CHUNKS) != 0)
        return -1;
    c->expect[0] = (uintptr_t)mallinfo2().smblks;
    c->op = WCET_OP_ALLOC;
    c->size = LARGE_REQ;
    return 0;
}

static int consolidate_check(struct wcet_case *c)
{
    size_t before = (size_t)c->expect[0], after = mallinfo2().smblks;
    if (!c->ret)
        return wcet_fail(c, "malloc failed");
    if (before < FAST_CHUNKS / 2 || after != 0)
        return wcet_fail(c, "fast-bin chunks: %zu before, %zu after: no consolidation", before,
                         after);
    wcet_fact(c, "%zu fast-bin chunks consolidated and sorted before the request is served",
              before);
    wcet_num(c, "fast_chunks", (double)before);
    return 0;
}

/* ---- free-trim ---- */

/* glibc's chunk alignment: two size fields, but 16 on i386. */
#if defined(__i386__)
#define GLIBC_CHUNK_ALIGN ((size_t)16)
#else
#define GLIBC_CHUNK_ALIGN (2 * sizeof(size_t))
#endif
/* The chunk of a block of TRIM_CHUNK_BYTES: its size field and the block,
 * rounded to the chunk alignment (one chunk starts where the one before
 * it ends). */
#define TRIM_CHUNK_SPAN \
    ((TRIM_CHUNK_BYTES + sizeof(size_t) + GLIBC_CHUNK_ALIGN - 1) & ~(GLIBC_CHUNK_ALIGN - 1))
#define TRIM_TRIES 4u

/* Whether p's chunk ends where the top chunk starts (the main arena's top
 * ends at the program break; keepcost is its size). */
static bool below_top(const void *p)
{
    uintptr_t end = (uintptr_t)p - 2 * sizeof(size_t) + TRIM_CHUNK_SPAN;
    return end == (uintptr_t)sbrk(0) - mallinfo2().keepcost;
}

/* Guarded fast chunks first (below), then four chunks of 60 KiB in a row
 * right below the top; the first three freed (merged: one free chunk),
 * then the fast chunks (freed last: a free that merges 64 KiB or more
 * consolidates the fast bins first, and the timed free must be the one
 * that does). glibc's history can place the four elsewhere (a free chunk
 * left low in the heap): such a set is kept, filling that place, and
 * another one taken, a few times at most. */
static int trim_build(struct wcet_case *c)
{
    pin_thresholds();
    void *victims[TRIM_FAST_CHUNKS];
    for (size_t i = 0; i < TRIM_FAST_CHUNKS; i++) {
        victims[i] = malloc(SMALL_REQ);
        c->blocks[c->n_blocks++] = malloc(SMALL_REQ);
    }
    void *p[TRIM_CHUNKS] = { NULL };
    bool placed = false;
    for (unsigned t = 0; t < TRIM_TRIES && !placed; t++) {
        for (size_t i = 0; i < TRIM_CHUNKS; i++)
            p[i] = malloc(TRIM_CHUNK_BYTES);
        placed = p[TRIM_CHUNKS - 1] && below_top(p[TRIM_CHUNKS - 1]);
        for (size_t i = 0; placed && i + 1 < TRIM_CHUNKS; i++)
            placed = p[i] && (uintptr_t)p[i] + TRIM_CHUNK_SPAN == (uintptr_t)p[i + 1];
        for (size_t i = 0; !placed && i < TRIM_CHUNKS; i++)
            c->blocks[c->n_blocks++] = p[i]; /* kept until the undo */
    }
    if (placed)
        for (size_t i = 0; i + 1 < TRIM_CHUNKS; i++)
            free(p[i]);
    for (size_t i = 0; i < TRIM_FAST_CHUNKS; i++)
        free(victims[i]);
    if (!placed) {
        undo_blocks(c);
        return wcet_fail(c, "build: no four chunks in a row below the top");
    }
    c->op = WCET_OP_FREE;
    c->ptr = p[TRIM_CHUNKS - 1];
    c->expect[0] = (uintptr_t)sbrk(0);
    c->expect[1] = mallinfo2().smblks;
    return 0;
}

static int trim_check(struct wcet_case *c)
{
    uintptr_t before = c->expect[0], after = (uintptr_t)sbrk(0);
    size_t fast = (size_t)c->expect[1], fast_after = mallinfo2().smblks;
    if (after >= before)
        return wcet_fail(c, "the program break did not move down: no trim");
    if (fast == 0 || fast_after != 0)
        return wcet_fail(c, "fast-bin chunks: %zu before, %zu after: no consolidation", fast,
                         fast_after);
    wcet_fact(c,
              "%zu fast-bin chunks consolidated, the top merged and trimmed: the program break "
              "lowered by %zu KiB",
              fast, (size_t)(before - after) >> 10);
    wcet_num(c, "fast_chunks", (double)fast);
    wcet_num(c, "trimmed_bytes", (double)(before - after));
    return 0;
}

/* ---- malloc-mmap, free-munmap ---- */

/* glibc's count of mmap chunks now. */
static size_t mmap_chunks(void)
{
    return mallinfo2().hblks;
}

static int mmap_build(struct wcet_case *c)
{
    pin_thresholds();
    c->op = WCET_OP_ALLOC;
    c->size = MMAP_BYTES;
    c->expect[0] = mmap_chunks();
    return 0;
}

static int mmap_check(struct wcet_case *c)
{
    if (!c->ret || mmap_chunks() != c->expect[0] + 1)
        return wcet_fail(c, "the block is not an mmap chunk");
    wcet_fact(c, "a %zu KiB block mapped by mmap (populated and locked under mlockall)",
              MMAP_BYTES >> 10);
    return 0;
}

static int munmap_build(struct wcet_case *c)
{
    pin_thresholds();
    size_t before = mmap_chunks();
    void *p = malloc(MMAP_BYTES);
    c->expect[0] = mmap_chunks();
    if (!p || c->expect[0] != before + 1) {
        free(p);
        return wcet_fail(c, "build: the block is not an mmap chunk");
    }
    c->op = WCET_OP_FREE;
    c->ptr = p;
    return 0;
}

static int munmap_check(struct wcet_case *c)
{
    if (mmap_chunks() != c->expect[0] - 1)
        return wcet_fail(c, "the free did not unmap the chunk");
    wcet_fact(c, "a %zu KiB mmap chunk given back by munmap", MMAP_BYTES >> 10);
    return 0;
}

const struct wcet_scenario wcet_glibc_scenarios[] = {
    { WCET_GLIBC, "malloc-consolidate", "malloc",
      "large-bin request with fast-bin chunks waiting: all consolidated and sorted first",
      "O(fast-bin chunks)", consolidate_build, consolidate_check, undo_all },
    { WCET_GLIBC, "free-trim", "free",
      "free below the top, fast-bin chunks waiting: all consolidated, the top left above "
      "M_TRIM_THRESHOLD, sbrk down",
      "system call", trim_build, trim_check, undo_all },
    { WCET_GLIBC, "malloc-mmap", "malloc", "request above M_MMAP_THRESHOLD: a fresh mmap",
      "system call", mmap_build, mmap_check, undo_all },
    { WCET_GLIBC, "free-munmap", "free", "free of an mmap chunk: munmap", "system call",
      munmap_build, munmap_check, undo_all },
};
const size_t wcet_glibc_n = sizeof(wcet_glibc_scenarios) / sizeof(wcet_glibc_scenarios[0]);

#else /* not glibc 2.33 or later, or a sanitizer's malloc: no scenario (run.c says so) */

const struct wcet_scenario wcet_glibc_scenarios[1];
const size_t wcet_glibc_n = 0;

#endif
