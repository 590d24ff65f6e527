/*
 * `rtmem bw`: copy bandwidth, and what a copy's time is made of.
 *
 * Three phases, each its own file (docs/bw.md gives the figures):
 *
 *   methods (methods.c)  mbw's three methods done right, and the one the
 *       Debian mbw calls MCBLOCK, at sizes around the caches and glibc's
 *       memcpy thresholds, the destination prefaulted, the cache warm:
 *         memcpy        one memcpy of the whole array;
 *         dumb          an element loop (8-byte words) that the compiler
 *                       cannot turn into a memcpy call (copy.c says how);
 *         mcblock       memcpy in blocks of --block bytes, advancing
 *                       through the whole array;
 *         mcblock-same  memcpy of the source's first block to each block
 *                       of the destination in turn: Debian mbw's MCBLOCK,
 *                       whose reads all hit one cached block.
 *   prep (prep.c)  a copy of --size bytes into a destination prepared four
 *       ways, a fresh destination every repetition, the preparation timed
 *       and its page faults counted apart from the copy's:
 *         none      nothing: each page faults at its first touch, inside
 *                   the copy;
 *         prefault  RTM_ARENA_PREFAULT_POPULATE (MADV_POPULATE_WRITE, as
 *                   MAP_POPULATE);
 *         mlock     RTM_ARENA_LOCK_TRY (mlock faults every page in), and
 *                   VmLck read back: the lock state, and how far VmLck
 *                   moved, every repetition;
 *         memset    the destination written with memset first.
 *   cache (caching.c)  a memcpy of --size bytes, and of a size whose
 *       source and destination fit the last-level cache together, with the
 *       cache warm, after cleaning source and destination from the caches
 *       (cacheops.h), and with non-temporal stores (x86-64).
 *
 * Every source and destination is an arena (rtm_arena_open): anonymous
 * memory by default, or a device or kernel node at an offset (--src,
 * --dst PATH[:OFFSET]), such as memory reserved from the kernel through
 * /dev/mem or a driver's node: the source mapped read-only, the
 * destination shared (the copy writes the device's memory, which the user
 * named). Hardware counters (perf.h) are read around every timed copy
 * where the kernel offers them.
 *
 * One thread measures, pinned to one CPU, under SCHED_FIFO unless --no-rt,
 * resting between repetitions (tk_rt_breather). No mlockall: it would lock
 * every destination at its mmap, and the prep phase measures exactly the
 * difference. The modes of a phase are interleaved, repetition by
 * repetition, so that a slowdown of the machine touches each alike.
 */
#ifndef RTMEM_TOOLS_BW_H
#define RTMEM_TOOLS_BW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/cacheops.h"
#include "common/caches.h"
#include "common/describe.h"
#include "common/opt.h"
#include "common/out.h"
#include "common/perf.h"
#include "common/rt.h"
#include "common/samples.h"
#include "common/timer.h"
#include "rtmem/arena.h"

#define BW_SCHEMA "rtmem-bw/1"

#define BW_KIB ((uint64_t)1 << 10)
#define BW_MIB ((uint64_t)1 << 20)
#define BW_GIB ((uint64_t)1 << 30)

/* Sizes: multiples of BW_GRAIN (a cache line everywhere rtmem runs, and a
 * word of the dumb loop), from BW_GRAIN to BW_MAX_BYTES. */
#define BW_GRAIN     64u
#define BW_MAX_BYTES (16 * BW_GIB)
#define BW_MAX_SIZES TK_MAX_SIZES
/* Source and destination may take at most MemAvailable / BW_MEM_SHARE,
 * unless --force. */
#define BW_MEM_SHARE 2

/* The default sizes of the methods phase: doubling from BW_START_BYTES up
 * to the largest of BW_MIN_TOP, BW_LLC_FACTOR times the last-level cache
 * and BW_NT_FACTOR times glibc's non-temporal threshold; with, for each
 * glibc threshold T, a size just below (T * 7 / 8) and T itself. */
#define BW_START_BYTES (1 * BW_KIB)
#define BW_MIN_TOP     (64 * BW_MIB)
#define BW_LLC_FACTOR  4u
#define BW_NT_FACTOR   2u

/* The methods, in the order of the report's columns and the JSON. */
enum bw_method {
    BW_MEMCPY,
    BW_DUMB,
    BW_MCBLOCK,
    BW_MCBLOCK_SAME,
    BW_N_METHODS,
};

/* Destination preparations (prep phase). */
enum bw_prep {
    BW_PREP_NONE,
    BW_PREP_PREFAULT,
    BW_PREP_MLOCK,
    BW_PREP_MEMSET,
    BW_N_PREPS,
};

/* Cache states (cache phase). */
enum bw_cache {
    BW_CACHE_WARM,
    BW_CACHE_FLUSHED,
    BW_CACHE_NT,
    BW_N_CACHES,
};

/* The cache phase measures at most this many sizes; the smaller fits the
 * last-level cache: its source and destination take half of it. */
#define BW_MAX_CACHE_POINTS 2
#define BW_CACHE_LLC_SHARE  4u

/* --only: the phases run. */
enum { BW_ONLY_ALL, BW_ONLY_METHODS, BW_ONLY_PREP, BW_ONLY_CACHE };

/* --src, --dst: what the memory is. */
enum bw_kind {
    BW_KIND_ANON,    /* private anonymous memory (the default) */
    BW_KIND_MEMFD,   /* a memfd: shared memory in RAM */
    BW_KIND_HUGETLB, /* anonymous 2 MiB huge pages from the hugetlb pool */
    BW_KIND_DEVICE,  /* a device or kernel node at an offset */
};

struct bw_place {
    int kind;         /* enum bw_kind */
    const char *path; /* BW_KIND_DEVICE's, else NULL */
    uint64_t offset;
};

struct bw_opts {
    struct tk_sizes sizes; /* --sizes; n 0: the default sizes */
    uint64_t size;         /* --size: the prep and cache phases' */
    uint64_t block;        /* --block: mcblock's */
    unsigned reps;
    uint64_t rep_time_ns;
    int only;
    struct bw_place src, dst;
    struct tk_rt_opts rt; /* --cpu, --prio, --no-rt */
    bool force;
    bool no_group;
    const char *json_path;
    bool quick;
};

/* glibc's memcpy strategy thresholds (glibc.c). */
struct bw_glibc {
    char version[32];       /* gnu_get_libc_version(), "" if not glibc */
    char ldso[256];         /* the dynamic loader asked, "" if none found */
    bool read;              /* --list-tunables answered */
    char why[400];          /* not read: why */
    uint64_t rep_movsb;     /* glibc.cpu.x86_rep_movsb_threshold, 0 unknown */
    uint64_t non_temporal;  /* glibc.cpu.x86_non_temporal_threshold, 0 unknown */
    uint64_t shared_cache;  /* glibc.cpu.x86_shared_cache_size */
    uint64_t data_cache;    /* glibc.cpu.x86_data_cache_size */
    uint64_t movsb_stop;    /* where rep movsb stops (not a tunable), 0 unknown */
    const char *stop_basis; /* how movsb_stop was found */
};

/* One measured configuration: its repetitions and counters. */
struct bw_stat {
    struct tk_samples ticks;             /* each repetition's, timer ticks */
    uint64_t bytes;                      /* copied by one copy */
    uint64_t copies;                     /* per repetition */
    uint64_t minor_faults, major_faults; /* during the timed copies (getrusage) */
    uint64_t counters[TK_PERF_N_EVENTS]; /* during the timed copies (perf) */
    bool measured;
    /* Summary (bw_stat_summarize): MiB/s; avg is mbw's: the bytes of every
     * repetition over their whole time. min is the slowest repetition's. */
    double avg, min, max, median, p10, p90;
    double median_ns; /* one copy, the median repetition's */
};

/* The prep phase's record of one preparation. */
struct bw_prep_result {
    struct bw_stat copy;             /* the copy */
    struct tk_samples prep_ns;       /* each repetition's preparation, ns */
    uint64_t prep_minor, prep_major; /* page faults during preparation (getrusage) */
    int lock_state;                  /* RTM_ARENA_*, the last repetition's */
    int lock_errno;
    int64_t locked_min, locked_max; /* VmLck delta over the repetitions, bytes */
    size_t mapped_bytes;            /* the arena as mapped (page-rounded): what a lock adds */
    uint64_t resident_min;          /* bytes present after preparation, least */
    char message[RTM_ARENA_MESSAGE_BYTES]; /* the arena's, first repetition */
    double prep_median_ns, prep_p10_ns, prep_p90_ns;
};

/* A mapped source or destination. */
struct bw_end {
    struct rtm_arena a;
    bool open;
    const struct bw_place *place;
};

struct bw {
    struct bw_opts o;
    const char *prog;
    struct tk_machine mf;
    struct tk_caches caches;
    struct bw_glibc glibc;
    int cpu;
    struct tk_sizes sizes; /* the methods phase's */
    bool run_methods, run_prep, run_cache;
    uint64_t top_bytes;     /* the largest size any phase copies */
    uint64_t mem_available; /* bytes, 0 unknown */

    /* Set up by the run. */
    struct tk_rt_state rt;
    struct tk_timer timer;
    bool timer_ok;
    struct tk_perf perf;
    bool perf_open;
    struct tk_cacheops cops;
    struct bw_end src, dst;

    /* Results. */
    struct bw_stat methods[BW_MAX_SIZES][BW_N_METHODS];
    struct bw_prep_result prep[BW_N_PREPS];
    /* The cache phase's sizes: one whose source and destination fit the
     * last-level cache together (BW_CACHE_LLC_SHARE of it), when smaller
     * than --size, then --size. */
    uint64_t cache_bytes[BW_MAX_CACHE_POINTS];
    size_t n_cache;
    struct bw_stat cache[BW_MAX_CACHE_POINTS][BW_N_CACHES];
    bool verified; /* every checked copy's destination matched its source */
    bool corrupt;  /* test hook RTMEM_BW_CORRUPT: spoil one byte before each check */
    char mismatch[160];
    uint64_t checksum;
};

/* The files call each other one way, from the top down
 * (tests/tools/test_layers.py): cli.c (the options table, bw_tool), run.c
 * (setup, the phases in turn), report.c (the header, the report, the JSON),
 * the phases (methods.c, prep.c, caching.c), then the leaves: glibc.c,
 * copy.c and measure.c. */

/* run.c: the driver's phases. */
struct tk_session;
enum tk_run_end;
int bw_setup(struct tk_session *s);
enum tk_run_end bw_run(struct tk_session *s);
void bw_teardown(struct tk_session *s);

/* report.c */
void bw_print_header(FILE *f, const struct bw *b);
void bw_report(const struct tk_session *s, FILE *f);
void bw_json(const struct tk_session *s, struct tk_json *j);
struct tk_facts;
void bw_facts(const struct tk_session *s, struct tk_facts *out);

/* The phases: each its run, its text (bw_*_print, static where only the
 * phase prints it), its JSON. */
int bw_methods_run(struct bw *b);
void bw_methods_print(FILE *f, const struct bw *b);
void bw_methods_json(struct tk_json *j, const struct bw *b);
int bw_prep_run(struct bw *b);
void bw_prep_json(struct tk_json *j, const struct bw *b);
int bw_cache_run(struct bw *b);
void bw_cache_json(struct tk_json *j, const struct bw *b);

/* copy.c: the methods. Each copies bytes (a multiple of BW_GRAIN) from src
 * to dst, block bytes at a time where it has blocks. */
void bw_copy(enum bw_method m, void *dst, const void *src, size_t bytes, size_t block);
/* The dumb loop alone: what the objdump check looks at (docs/bw.md). */
void bw_copy_dumb(void *dst, const void *src, size_t bytes);

/* glibc.c: the thresholds, from the dynamic loader's --list-tunables
 * (a child process, reaped), and where rep movsb stops. */
void bw_glibc_read(struct bw_glibc *g, const struct tk_caches *c);

/* measure.c: what the phases and the report share. */
extern const char *const bw_kind_ids[];               /* "anon", "memfd", ... */
extern const char *const bw_method_ids[BW_N_METHODS]; /* "memcpy", ... */
extern const char *const bw_prep_ids[BW_N_PREPS];     /* "none", ... */
extern const char *const bw_cache_ids[BW_N_CACHES];   /* "warm", ... */
/* Page faults of this thread so far (getrusage RUSAGE_THREAD). */
void bw_faults(uint64_t *minor, uint64_t *major);
/* One timed stretch of copies into st (perf counters and faults around it). */
void bw_time_begin(struct bw *b, uint64_t *f0min, uint64_t *f0maj);
void bw_time_end(struct bw *b, struct bw_stat *st, uint64_t ticks, uint64_t f0min, uint64_t f0maj);
/* Checks that dst holds src's bytes; records the first mismatch. */
void bw_verify(struct bw *b, const char *what, void *dst, const void *src, size_t bytes);
/* Fills dst with the complement of src's bytes, so a copy that does not
 * happen fails its check even when the destination already held them. */
void bw_spoil(void *dst, const void *src, size_t bytes);
/* Opens a destination or source arena of bytes as place says, prefault and
 * lock as given. 0, or a negative errno (message in a->message). */
int bw_open_end(struct rtm_arena *a, const struct bw_place *place, uint64_t bytes, bool read_only,
                int prefault, int lock);
/* A measured configuration's figures. */
int bw_stat_init(struct bw_stat *st, unsigned reps, uint64_t bytes);
void bw_stat_destroy(struct bw_stat *st);
void bw_stat_summarize(const struct bw *b, struct bw_stat *st);
void bw_stat_json(struct tk_json *j, const struct bw *b, const struct bw_stat *st);
/* An arena's lock state in words: "locked", "IGNORED", "not locked"... */
const char *bw_lock_name(int state);
/* "12345.6" MiB/s, "-" when not measured */
const char *bw_fmt_mibs(char *buf, size_t size, double v);
/* (p90 - p10) / median of MiB/s, in percent */
double bw_spread_pct(const struct bw_stat *st);
/* A counter per copy, as a text cell ("-" unavailable). */
const char *bw_fmt_counter(char *buf, size_t size, const struct bw *b, const struct bw_stat *st,
                           enum tk_perf_event e);

#endif /* RTMEM_TOOLS_BW_H */
