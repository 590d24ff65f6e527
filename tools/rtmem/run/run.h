/*
 * `rtmem run [options] -- PROGRAM [ARGS...]`: a program, unmodified, with
 * its malloc family served by an rtmem heap (librtmem-malloc, preloaded),
 * and what the heap saw: calls, peak use against the pool, failures,
 * fallbacks, the lock's contention, the worst call. --kind glibc and
 * glibc-rt measure the C library's allocator the same way. Its manual is
 * docs/run.md.
 *
 *   cli.c      options, --help, the set-up
 *   run.c      the program run (common/launch.h) with the library's
 *              environment; the library's summaries read back
 *   report.c   the report (on standard error: the program's standard
 *              output stays its own) and the JSON
 */
#ifndef RTMEM_TOOLS_RUN_RUN_H
#define RTMEM_TOOLS_RUN_RUN_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/describe.h"
#include "common/launch.h"
#include "common/tool.h"

#define RUN_SCHEMA       "rtmem-run/1"
#define RUN_MAX_CHILDREN 16 /* forked children's summaries kept */

extern const char *const run_huge_choices[],
    *const run_lock_choices[], *const run_harden_choices[], *const run_full_choices[],
                                                                *const run_signal_choices[];

struct run_opts {
    const char *kind;
    uint64_t pool;
    int huge;    /* run_huge_choices: no, 2M, 1G */
    int lock;    /* run_lock_choices: try, must, no */
    int harden;  /* run_harden_choices: o1, none, full */
    int on_full; /* run_full_choices: fail, fallback */
    int signal;  /* run_signal_choices: none, usr1, usr2 */
    bool no_time;
    const char *json_path;
};

enum { RUN_OPS = 5 }; /* malloc, calloc, realloc, aligned, free: the library's order */

/* One process's summary, as librtmem-malloc wrote it (rtmem-malloc/1). */
struct run_summary {
    long pid;
    char kind[32], locked[64], hardening[8], when_full[16];
    uint64_t pool_bytes, huge_page_bytes;
    uint64_t calls[RUN_OPS];
    uint64_t foreign, before_ready;
    uint64_t usable_bytes, peak_used_bytes, live_blocks;
    uint64_t failed, fallbacks, fallback_bytes, refused_frees;
    uint64_t lock_calls, contended;
    /* glibc and glibc-rt: the C library's allocator measured, and its
     * memory at the end (mallinfo2; not known when the summary was written
     * in a signal handler) */
    bool glibc, glibc_memory_known;
    uint64_t glibc_heap_bytes, glibc_mmapped_bytes, glibc_mmapped_blocks;
    bool timed;
    double worst_ns[RUN_OPS];
};

struct run {
    struct run_opts o;
    const char *prog;
    struct tk_machine mf;
    char lib[PATH_MAX]; /* librtmem-malloc.so */
    char dir[PATH_MAX]; /* the run's private directory: the summaries */
    struct tk_launch l;
    bool have_main; /* the program's own summary was read */
    struct run_summary main;
    struct run_summary children[RUN_MAX_CHILDREN];
    size_t n_children, children_left; /* read; found beyond RUN_MAX_CHILDREN */
    char why_none[256];               /* no summary: why */
};

extern const char *const run_op_names[RUN_OPS];

enum tk_run_end run_run(struct tk_session *s);
/* Reads the summary file path into *out: 0, or -1 when it is not one. */
int run_read_summary(const char *path, struct run_summary *out);
void run_report(const struct tk_session *s, FILE *f);
void run_json(const struct tk_session *s, struct tk_json *j);

#endif /* RTMEM_TOOLS_RUN_RUN_H */
