/*
 * `rtmem stride`: the cost of touching memory with a stride, per access,
 * from a buffer that fits the first-level data cache to one several times
 * the last-level cache.
 *
 * For each size, three patterns walk the first `bytes` of one buffer
 * (pattern.c says exactly what each loop does):
 *
 *   stride 1 int    read-modify-write of every 4-byte int, in order;
 *   stride 16 ints  the same, one int every 64 bytes (one per cache line
 *                   on most machines): the second curve of the study this
 *                   tool lets a user reproduce;
 *   random chase    one load per cache line, each loading the address of
 *                   the next line in a random cyclic order: dependent
 *                   loads the hardware prefetcher cannot predict, so each
 *                   costs the load-to-use latency of wherever it hits.
 *
 * A walk is endless: it wraps at the end of the size and goes on from where
 * the previous repetition stopped. A point (one size, one pattern) is a
 * warm-up (one pass, or at most twice the last-level cache's worth of the
 * walk), then repetitions of a fixed number of accesses, each timed as a
 * whole and sized from trials to last at least --rep-time: whole passes
 * over the size while a pass is shorter than that, a slice of the walk
 * otherwise. ns per access is a repetition's time over its accesses.
 *
 * The sizes are swept --rounds times, a point's repetitions shared among
 * the rounds (each round warms the point up again; the first sizes its
 * repetitions): a slowdown of the whole machine lasting a second or so
 * (another job, the host of a virtual machine) then touches only some of a
 * point's repetitions, not all of them. A point reports the median over
 * all its repetitions (nearest rank), p10, p90, min and max.
 *
 * One thread, the main one, measures: pinned to one CPU (the caches are
 * that CPU's, read from sysfs by common/caches.c), under SCHED_FIFO unless --no-rt
 * (unpinned then, unless --cpu is given),
 * resting between repetitions so that RT throttling never stops a timed
 * one (tk_rt_breather). The buffer is one mapping of the largest size
 * (rtm_arena: prefaulted, locked if permitted, verified), mapped after the
 * pinning so that its pages come from the measuring CPU's memory.
 *
 * A fatal signal (Ctrl-C) ends the run as in every tool: the kit's cleanup
 * removes the temporary result file and an existing one stays as it was;
 * no partial report (a default run is seconds long).
 */
#ifndef RTMEM_TOOLS_STRIDE_H
#define RTMEM_TOOLS_STRIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/caches.h"
#include "common/describe.h"
#include "common/opt.h"
#include "common/out.h"
#include "common/rt.h"
#include "common/samples.h"
#include "common/timer.h"
#include "rtmem/arena.h"

#define STRIDE_SCHEMA "rtmem-stride/1"

#define KIB ((uint64_t)1 << 10)
#define MIB ((uint64_t)1 << 20)
#define GIB ((uint64_t)1 << 30)

#define NS_PER_US 1000u
#define NS_PER_MS 1000000u

/* Sizes (--sizes, --max-size): multiples of STRIDE_SIZE_GRAIN, so that every
 * pattern divides them (4-byte ints, 64-byte strides, cache lines of up to
 * 1 KiB), from one grain to STRIDE_MAX_BYTES. */
#define STRIDE_SIZE_GRAIN KIB
#define STRIDE_MAX_BYTES  (4 * GIB)
#define STRIDE_MAX_SIZES  TK_MAX_SIZES
/* The buffer (and the chase's order, 4 bytes a line) may take at most
 * MemAvailable / STRIDE_MEM_SHARE. */
#define STRIDE_MEM_SHARE  2

/* The default sizes: from the smaller of STRIDE_START_BYTES and half the
 * L1d, doubling up to STRIDE_LLC_FACTOR times the last-level cache
 * (STRIDE_UNKNOWN_TOP if no cache is known), that top included. */
#define STRIDE_START_BYTES (4 * KIB)
#define STRIDE_LLC_FACTOR  4u
#define STRIDE_UNKNOWN_TOP (256 * MIB)

/* The study's stride, in ints. */
#define STRIDE_WIDE_INTS 16u

/* A jump of a pattern's cost (report.c): from one size to the next, the
 * cheapest cost at that size or any larger one rises by STRIDE_RISE or
 * more; consecutive rises are one jump, shown when its whole factor is
 * STRIDE_JUMP or more. The floor of later sizes, not each size's own cost,
 * so that one noisy size is no jump. */
#define STRIDE_RISE 1.25
#define STRIDE_JUMP 1.5

/* The patterns, in the order of the report's columns and the JSON. */
enum stride_pattern {
    PAT_STRIDE_1,
    PAT_STRIDE_16,
    PAT_CHASE,
    N_PATTERNS,
};

/* --thp: the transparent huge page advice given to the buffer. */
enum { THP_DEFAULT, THP_ON, THP_OFF };

struct stride_opts {
    struct tk_sizes sizes; /* --sizes; n 0: the default sizes */
    uint64_t max_size;     /* --max-size; 0: the default top */
    unsigned reps;
    unsigned rounds;
    uint64_t rep_time_ns;
    struct tk_rt_opts rt; /* --cpu, --prio, --no-rt */
    int thp;
    uint64_t seed;
    const char *json_path;
    bool quick;
    bool first_touch; /* --first-touch: the published program's form (run.c) */
};

/* One point: one size, one pattern. Times in ns per access. */
struct stride_result {
    struct tk_samples ticks; /* each repetition's, timer ticks */
    uint64_t accesses;       /* per repetition, 0 until the first round sizes them */
    unsigned reps;           /* repetitions timed */
    double median, min, max;
    double p10, p90;       /* nearest rank, as the median */
    double rep_ns_min;     /* the shortest repetition, in ns */
    uint64_t minor_faults; /* page faults during its timed repetitions */
};

struct stride_point {
    uint64_t bytes;
    const char *level; /* the smallest data cache it fits in, "memory", or "unknown" */
    struct stride_result r[N_PATTERNS];
};

/* --first-touch: per repetition, a fresh buffer of the size, walked as the
 * published program walks it. Its loops, in its order: loop 1, stride 1
 * int, over pages never touched (each first touch faults a page in); loop
 * 2, stride 16 ints, over the same pages, now present; then, not in the
 * published program, loop 1 again, the pages present: what loop 1 costs
 * without the faults. ns are each loop's whole time. */
enum { FT_LOOP1_FIRST, FT_LOOP2, FT_LOOP1_AGAIN, FT_LOOPS };
struct stride_first {
    uint64_t bytes;
    struct tk_samples ns[FT_LOOPS]; /* each repetition's, in ns */
    uint64_t faults[FT_LOOPS];      /* minor faults, all repetitions */
    double median[FT_LOOPS], p10[FT_LOOPS], p90[FT_LOOPS];
    bool failed; /* a fresh buffer could not be mapped */
};

/* A jump of a pattern's cost (STRIDE_RISE, STRIDE_JUMP), for the report. */
struct stride_jump {
    size_t from, to;       /* points: the last size before the rise, the first after */
    double from_ns, to_ns; /* the floors at those sizes */
};

struct stride {
    struct stride_opts o;
    const char *prog;
    struct tk_machine mf;
    struct tk_caches caches;
    int cpu;                /* the CPU measured */
    struct tk_sizes sizes;  /* measured, ascending */
    bool sizes_capped;      /* the default top was lowered to fit memory */
    uint64_t mem_available; /* bytes, 0 unknown */
    uint64_t top_bytes;     /* the largest size: the buffer's */
    char thp_mode[32];      /* /sys/kernel/mm/transparent_hugepage/enabled, "" unknown */

    /* Set up by the run. */
    struct tk_rt_state rt;
    struct tk_timer timer;
    bool timer_ok;
    struct rtm_arena buf;
    bool buf_open;
    uint32_t *order; /* the chase's line order, room for the largest size */
    uint64_t rng;

    /* Results. */
    struct stride_first first[STRIDE_MAX_SIZES]; /* --first-touch: per size, n_points */
    struct stride_point points[STRIDE_MAX_SIZES];
    size_t n_points;
    uint64_t checksum; /* of every walk's end: kept so that none is elided */
    double rep_ns_min; /* the shortest repetition of the run */
};

/* The files call each other one way, from the top down
 * (tests/tools/test_layers.py): cli.c (the options table, stride_tool),
 * run.c (setup, the sweep), report.c (the report and the JSON), pattern.c
 * (the leaf: the loops, their names). */

/* pattern.c: the measured loops, the chase's layout, their names. */
extern const char *const stride_pattern_names[N_PATTERNS]; /* "stride 1 int (4 B)" */
extern const char *const stride_pattern_ids[N_PATTERNS];   /* JSON: "stride_1" */
extern const char *const stride_thp_choices[];
/* count read-modify-writes of ints[at * stride], ints[(at + 1) * stride],
 * ..., access per_pass - 1 followed by access 0. Returns the next access. */
size_t stride_rmw_walk(volatile uint32_t *ints, size_t per_pass, size_t stride, size_t at,
                       uint64_t count);
/* count dependent loads from p, each the address of the next line.
 * Returns where it stopped. */
void *stride_chase_walk(void *p, uint64_t count);
/* Links the first lines lines of base (line_bytes apart) into one cycle in
 * a random order (order: room for lines indices), each line's first word
 * the address of the next. Rests on rt between slices. */
void stride_chase_build(char *base, size_t line_bytes, size_t lines, uint32_t *order, uint64_t *rng,
                        struct tk_rt_state *rt);

/* run.c: the driver's phases. */
struct tk_session;
enum tk_run_end;
int stride_setup(struct tk_session *s);
enum tk_run_end stride_run(struct tk_session *s);
void stride_teardown(struct tk_session *s);

/* report.c */
void stride_print_header(FILE *f, const struct stride *st);
void stride_report(const struct tk_session *s, FILE *f);
void stride_json(const struct tk_session *s, struct tk_json *j);
struct tk_facts;
void stride_facts(const struct tk_session *s, struct tk_facts *out);

#endif /* RTMEM_TOOLS_STRIDE_H */
