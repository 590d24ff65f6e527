/*
 * Bench kit: reading a trace that `rtmem trace` recorded (the format:
 * preload/trace_format.h, docs/trace-format.md).
 *
 *     struct tk_trace t;
 *     char why[256];
 *     if (tk_trace_read(path, &t, why, sizeof(why)) != 0) { report why; }
 *     for (size_t i = 0; i < t.n; i++) ... t.ev[i] (in the process-wide order) ...
 *     tk_trace_free(&t);
 *
 * The whole trace is held in memory: TK_TRACE_EVENT_BYTES per event. A
 * file that is not a trace, of another version or byte order, or whose
 * blocks do not hold together is refused with why; one that ends inside a
 * chunk or without its end record is read up to there, and says so
 * (tk_trace.ending, tk_trace.torn_bytes).
 */
#ifndef RTMEM_TOOLS_TRACE_H
#define RTMEM_TOOLS_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../preload/trace_format.h"

/* One call, as recorded. */
struct tk_trace_event {
    uint64_t seq;   /* its place in the process-wide order */
    uint64_t seq0;  /* realloc: when its old block stopped being the caller's; else seq */
    uint64_t t_ns;  /* since the trace's start */
    uint64_t given; /* free, realloc, usable_size: the pointer given */
    uint64_t ret;   /* the pointer returned (0: none, or the call failed) */
    uint64_t size;  /* bytes asked (calloc, reallocarray: nmemb * size, UINT64_MAX on overflow) */
    uint64_t align; /* memalign, posix_memalign, aligned_alloc; valloc, pvalloc: the page */
    uint64_t value; /* usable_size: its result; posix_memalign: its return value */
    uint32_t tid;
    uint32_t mark; /* MARK: index into tk_trace.marks */
    uint8_t op;    /* enum rtm_trace_op */
};
#define TK_TRACE_EVENT_BYTES sizeof(struct tk_trace_event)

/* How the recorded process image ended. */
enum tk_trace_ending {
    TK_TRACE_EXITED,   /* END: exit or _exit (how: the status, or -1) */
    TK_TRACE_EXECED,   /* END, how -2: replaced by exec */
    TK_TRACE_SIGNALED, /* CUT: a signal (how) ended it; whole up to there */
    TK_TRACE_NO_END,   /* no end record: killed (SIGKILL), or a crash */
};

struct tk_trace {
    struct rtm_trace_header h;
    struct tk_trace_event *ev; /* in seq order */
    size_t n;
    char (*marks)[RTM_TRACE_MARK_MAX + 1]; /* the phases' names, MARK events index them */
    size_t n_marks;
    enum tk_trace_ending ending;
    int how;             /* the exit status (-1 unknown), or the signal */
    uint64_t end_ns;     /* the end record's; else the last event's time */
    uint64_t unrecorded; /* calls the recorder could not record (the end record's) */
    uint64_t chunks;     /* chunks the image reserved (the end record's) */
    uint64_t torn_bytes; /* bytes of a chunk cut short at the file's end, not read */
    uint64_t duplicates; /* events of one seq twice (a corrupt file), kept once */
    uint64_t file_bytes;
    double ns_per_tick; /* the clock's rate, when it is the CPU's counter; 0 for ns */
};

/* Reads the trace at path into *t: 0, or -1 with why set (nothing to
 * free then). O(events log events). */
int tk_trace_read(const char *path, struct tk_trace *t, char *why, size_t why_len);
void tk_trace_free(struct tk_trace *t);

/* "malloc", "posix_memalign", ... for an op; "?" for another value. */
const char *tk_trace_op_name(int op);

/* Whether an op allocates a block (its ret is a new block when not 0). */
bool tk_trace_op_allocates(int op);

/* The reallocs of t that give a block, as indices into t->ev, in the
 * order of their seq0: when each one's old block stopped being the
 * program's. A reader that follows addresses (the live blocks, the
 * replay's ids) takes the old block's address out at that point, not at
 * the realloc's seq: another thread may be handed that address in
 * between. Into *order (malloc'd; NULL when there is none) and *n: 0, or
 * -1 when out of memory. O(reallocs log reallocs). */
int tk_trace_realloc_order(const struct tk_trace *t, size_t **order, size_t *n);

/* A one-line description of how t ended, into buf: "exit status 0", "cut by
 * SIGINT", ... Returns buf. */
const char *tk_trace_ending_text(const struct tk_trace *t, char *buf, size_t size);

#endif /* RTMEM_TOOLS_TRACE_H */
