/*
 * `rtmem trace`: records a program's malloc family, unmodified, and shows
 * what a trace holds.
 *
 *   rtmem trace [-o FILE] [options] -- PROGRAM [ARGS...]
 *       runs PROGRAM with librtmem-trace preloaded (preload/trace.c) and
 *       writes its trace to FILE (docs/trace-format.md); record.c
 *   rtmem trace --show FILE
 *       the trace's statistics: calls per phase, sizes, live bytes over
 *       time, threads, alignments; show.c
 * Its manual is docs/trace.md.
 */
#ifndef RTMEM_TOOLS_TRACE_TRACE_H
#define RTMEM_TOOLS_TRACE_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "common/describe.h"
#include "common/samples.h"
#include "common/tool.h"
#include "common/trace.h"

#define TRACE_SCHEMA "rtmem-trace/1"

struct trace_opts {
    const char *output; /* -o: the trace file */
    const char *show;   /* --show FILE */
    int children;       /* index into trace_children_choices */
    uint64_t after_ns;  /* --after: a phase marked this long after the start; 0: none */
    int mark_signal;    /* index into trace_signal_choices */
    const char *json_path;
};

extern const char *const trace_children_choices[]; /* "none", "follow" */
extern const char *const trace_signal_choices[];   /* "usr2", "usr1", "none" */

/* A file the run wrote: the program's, a child's, or another image's. */
#define TRACE_MAX_FILES 64
struct trace_file {
    char path[4096];
    pid_t pid;
    unsigned generation;
};

/* The statistics of one trace (show.c). */
#define TRACE_MAX_PHASES  32
#define TRACE_MAX_THREADS 32
#define TRACE_MAX_ALIGNS  16
#define TRACE_SERIES      500
struct trace_phase {
    char name[RTM_TRACE_MARK_MAX + 1];
    uint64_t start_ns, end_ns;
    uint64_t calls;  /* of the malloc family, marks left out */
    uint64_t allocs; /* calls that hand out a block */
    uint64_t frees;
    uint64_t start_live; /* bytes asked by live blocks when it began */
    uint64_t peak_live;  /* the most within it */
};
struct trace_stats {
    uint64_t calls, ops[RTM_TRACE_OPS];
    uint64_t failed;        /* allocations that returned no block */
    uint64_t unknown_frees; /* frees (and reallocs) of blocks the trace never saw handed out */
    uint64_t reused_live;   /* blocks handed out while the trace still held them live */
    struct tk_hist sizes;   /* requests, by powers of two (samples.h) */
    uint64_t largest;       /* the largest request */
    uint64_t peak_live, peak_blocks, peak_ns; /* bytes asked by live blocks at their most */
    uint64_t end_live, end_blocks;
    struct {
        uint64_t align, count;
    } aligns[TRACE_MAX_ALIGNS];
    size_t n_aligns;
    bool aligns_more; /* more distinct alignments than listed */
    struct {
        uint32_t tid;
        uint64_t calls;
    } threads[TRACE_MAX_THREADS];
    size_t n_threads; /* listed; threads_total counts them all */
    size_t threads_total;
    struct trace_phase phases[TRACE_MAX_PHASES];
    size_t n_phases;
    /* Live bytes over time: the most in each of TRACE_SERIES equal slices
     * of the run (UINT64_MAX: no call in it), for the report's plot. */
    uint64_t series[TRACE_SERIES];
    uint64_t marks_dropped; /* phases beyond TRACE_MAX_PHASES, merged into the last */
};

struct trace_run {
    struct trace_opts o;
    const char *prog;
    struct tk_machine mf;
    /* record */
    char lib[4096];        /* librtmem-trace.so */
    char dir[4096];        /* the private directory the program writes in */
    const char *abs_dir;   /* the output's directory, absolute (while recording) */
    pid_t pid;             /* the program's */
    int status;            /* its wait status, when status_known */
    bool status_known;     /* false: someone else reaped it */
    bool signaled_by_user; /* a SIGINT/SIGTERM/SIGHUP came while it ran */
    bool mark_not_sent;    /* --after's signal: the program did not catch it */
    struct trace_file files[TRACE_MAX_FILES];
    size_t n_files;
    size_t files_left; /* files found beyond TRACE_MAX_FILES, left in dir */
    /* the trace shown: the program's, or --show's */
    const char *shown_path;
    struct tk_trace t;
    bool have_trace;
    struct trace_stats st;
};

/* record.c */
enum tk_run_end trace_record(struct tk_session *s);
/* show.c */
void trace_stats(const struct tk_trace *t, struct trace_stats *st);
void trace_report(const struct tk_session *s, FILE *f);
void trace_json(const struct tk_session *s, struct tk_json *j);

#endif /* RTMEM_TOOLS_TRACE_TRACE_H */
