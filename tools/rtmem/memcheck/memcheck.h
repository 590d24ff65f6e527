/*
 * `rtmem memcheck`: internal types shared by its files, which call each
 * other one way only, from the top of this list down
 * (tests/tools/test_layers.py):
 *   cli.c            options, the tool (struct tk_tool memcheck_tool)
 *   run.c            the run's sequence, on the bench kit's driver
 *   child.c          each allocator's work in a process of its own
 *   report_text.c    the text report: header, summary, failures
 *   report_smokey.c  smokey's layout (--format smokey)
 *   report_json.c    memcheck's members of the JSON document
 *   seq.c            the pow2 and random phases: run, tables, JSON
 *   pattern.c        the pattern phase: run, text, JSON
 *   churn.c          the churn phase: run, table, JSON
 *   test.c           what the tests of every phase share
 *   fmt.c            the names and formats every file shares
 * The allocators under test are common/alloc.h's, selected by common/kinds.h.
 */
#ifndef RTMEM_TOOLS_MEMCHECK_H
#define RTMEM_TOOLS_MEMCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "common/arena.h"
#include "common/child.h"
#include "common/describe.h"
#include "common/kinds.h"
#include "common/out.h"
#include "common/rt.h"
#include "common/samples.h"
#include "common/timer.h"
#include "common/tool.h"
#include "common/alloc.h"
#include "rtmem/rtmem.h"

/* The JSON's layout: the driver's envelope (common/tool.h), then
 * memcheck's members (report_json.c). */
#define MC_SCHEMA "rtmem-memcheck/2"

/* Smokey's sequence: heap sizes from 8 KiB, doubling, below seq_heap_size;
 * power-of-two block sizes from 16 below H / 2. */
#define MC_SEQ_MIN_HEAP   ((size_t)8192)
#define MC_POW2_MIN_BLOCK ((size_t)16)

/* Limits on the options: they bound the work and the memory of a run (about
 * 32 bytes per byte of the largest heap: room for a fill of 1-byte blocks,
 * their timings and sizes). */
#define MC_MAX_HEAP_BYTES    ((size_t)32 << 20)
#define MC_MAX_ROUNDS        1000000u
#define MC_MAX_CHURN_OPS     4000000u
#define MC_MAX_HEAP_SIZES    32
/* Room for every allocator a run can select (common/kinds.h). */
#define MC_MAX_TARGETS       TK_MAX_ALLOCS
/* --timeout: seconds a test process may go without progress. */
#define MC_DEFAULT_TIMEOUT_S 60u
#define MC_MAX_TIMEOUT_S     86400u

enum mc_phase {
    MC_PH_POW2,    /* power-of-two block sizes */
    MC_PH_RANDOM,  /* random block sizes */
    MC_PH_PATTERN, /* pattern checks, functional only */
    MC_PH_CHURN,   /* interleaved alloc/free at a steady fill level */
    MC_PHASES,
};

enum mc_format { MC_FORMAT_NS, MC_FORMAT_SMOKEY };

/* Row flags, as smokey's FLAGS column. */
#define MC_F_SHUFFLE 1u
#define MC_F_HOT     2u

/* The options (cli.c's table sets them). */
struct mc_opts {
    size_t seq_heap_bytes;     /* seq_heap_size */
    uint32_t random_rounds;    /* random_alloc_rounds */
    size_t pattern_heap_bytes; /* pattern_heap_size */
    uint32_t pattern_rounds;   /* pattern_check_rounds */
    int max_results;           /* rows per sorted table; -1 all by heap size, 0 none */
    uint64_t churn_ops;
    size_t churn_heap_bytes;
    unsigned churn_fill_pct;     /* steady fill, % of the heap in requested bytes */
    size_t churn_max_bytes;      /* largest churn request */
    uint64_t churn_sample_every; /* ops between fragmentation samples; 0: ops / 100 */
    uint64_t seed;
    struct tk_rt_opts rt; /* --cpu, --prio, --no-rt */
    bool compat;
    bool subtract_overhead;
    bool true_overhead;
    bool progress;
    bool quick;
    bool no_json_rows;     /* the JSON without per-test rows */
    unsigned timeout_s;    /* without progress, a test process is killed; 0: never */
    int format;            /* enum mc_format */
    unsigned phases;       /* 1 << enum mc_phase */
    bool no_churn;         /* --no-churn: phases lose churn once parsed */
    const char *kinds_arg; /* NULL: every allocator */
    const char *json_path;
    const char *plugin_paths[TK_MAX_PLUGINS]; /* --plugin, in order */
    size_t n_plugins;
};

/* One test of a sequential phase, as smokey's runstats plus rtmem's extras.
 * Times in ns (NaN when there is nothing to show); percentages. */
struct mc_row {
    size_t heap_bytes;  /* usable size of the heap tested (H) */
    size_t block_bytes; /* B */
    size_t nrblocks;
    size_t user_bytes;   /* nrblocks * B */
    size_t maximum_free; /* bytes freed when fragmentation was probed */
    size_t largest_free; /* largest probe that fit then */
    unsigned flags;      /* MC_F_* */
    double avg_alloc_ns, avg_free_ns;
    double p99_alloc_ns, p99_free_ns;
    double max_alloc_ns, max_free_ns;
    double fail_alloc_ns;     /* the failing final allocation */
    double overhead_pct;      /* OVRH% */
    double true_overhead_pct; /* counting metadata outside H */
    double frag_pct;          /* FRAG% */
};

/* Overall lines of one phase of one allocator (smokey's dump_stats, plus
 * rtmem's extras). Averages are over rows; NaN figures are left out. */
struct mc_overall {
    size_t tests;
    double worst_alloc_ns, worst_free_ns;
    double avg_max_alloc_ns, avg_max_free_ns;
    double avg_alloc_ns, avg_free_ns;
    double avg_overhead_pct, avg_frag_pct;
    double avg_p99_alloc_ns, avg_p99_free_ns;
    double worst_fail_alloc_ns, avg_fail_alloc_ns;
    double avg_true_overhead_pct;
};

struct mc_seq {
    struct mc_row *rows;
    size_t n, cap;
    double seconds;
    long minor_faults; /* its test process's during the phase; -1 unknown */
    bool ran;
    struct mc_overall all;
};

struct mc_pattern {
    size_t tests, blocks;
    uint64_t bytes_verified;
    double seconds;
    bool ran;
};

struct mc_frag_sample {
    uint64_t op;          /* steady-state operations done */
    size_t free_bytes;    /* heap free bytes (budget left for TK_PROCESS) */
    size_t largest_bytes; /* largest request that fit (probe) */
    double frag_pct;
};

/* Memory held against used over the churn (rtm_heap_held_bytes): samples
 * spread over its growth (the ramp), steady state and drain. */
#define MC_HELD_SAMPLES 240
enum mc_held_stage { MC_HELD_GROWTH, MC_HELD_STEADY, MC_HELD_SHRINK };

struct mc_held_sample {
    uint64_t op;       /* operations done since the heap was made, the drain's included */
    uint32_t stage;    /* enum mc_held_stage */
    size_t used_bytes; /* the heap's used_bytes: live blocks with their headers */
    size_t held_bytes; /* what the heap holds (tk_alloc_held) */
};

struct mc_churn {
    bool ran;
    double seconds;
    size_t heap_bytes;    /* usable */
    uint64_t ramp_allocs; /* untimed fill up to the steady level */
    uint64_t ops, allocs, frees, failed_allocs, skipped_frees;
    double failed_max_ns;
    struct tk_summary alloc, free;
    struct mc_frag_sample *samples;
    size_t n_samples, cap_samples;
    size_t n_held; /* 0: the allocator holds no heap of its own to sample */
    struct mc_held_sample held[MC_HELD_SAMPLES];
};

enum mc_fail_kind {
    MC_FAIL_CHECK,   /* a functional check failed */
    MC_FAIL_CRASH,   /* the allocator's test process died of a signal */
    MC_FAIL_TIMEOUT, /* it made no progress within --timeout: killed */
    MC_FAIL_ERROR,   /* the harness could not run it (its process's setup failed) */
};

struct mc_failure {
    bool failed;
    enum mc_fail_kind kind;
    enum mc_phase phase;
    int signal; /* MC_FAIL_CRASH: the signal */
    char msg[768];
};

/* The test a test process is in, written before the test starts, so that
 * the parent can name it if the process dies there. */
struct mc_running {
    bool set;    /* a test (or the sizing) has started */
    bool sizing; /* sizing the heaps, before any test */
    enum mc_phase phase;
    size_t index; /* the test's number in its phase */
    size_t heap, block;
    unsigned flags; /* MC_F_* */
};

/* One allocator under test and everything it produced. Targets live in
 * memory shared with the test processes (struct mc_shared), which write
 * their results there as they go. */
struct mc_target {
    struct tk_alloc a;
    tk_child_mark beat; /* the test process's latest progress */
    /* Set by the test process as its last act, in this shared memory: a
     * process that ends without it did not finish its job, whatever its
     * exit status (a plugin may call exit with any). */
    bool job_done;
    struct mc_running now;
    struct mc_seq seq[2]; /* [MC_PH_POW2], [MC_PH_RANDOM] */
    struct mc_pattern pattern;
    struct mc_churn churn;
    struct mc_failure fail;
    time_t started, finished; /* for smokey's "started/finished at" */
};

struct mc_progress {
    bool on;
    uint64_t last_ns;
    size_t done, total;
};

/* What the test processes report to the parent, in shared memory. */
struct mc_shared {
    struct tk_rt_state rt; /* the real-time setup the latest one had */
    bool have_rt;
    struct tk_arena arena; /* its arena (the address is its own) */
    unsigned rests;        /* throttle rests of them all */
    struct mc_target t[MC_MAX_TARGETS];
};

/* One run: the driver's session state (struct tk_session.state). */
struct memcheck {
    bool quiet;              /* --quiet: no progress line */
    const struct mc_opts *o; /* the session's, parsed */
    /* The parent's own setup (for the timer calibration, then undone); in
     * a test process, its real-time setup. */
    struct tk_rt_state rt;
    struct tk_timer timer;
    struct tk_machine mf;
    struct tk_arena arena; /* a test process's own */
    size_t arena_bytes;    /* the size of every test process's arena */
    int watch_priority;    /* the watchdog's SCHED_FIFO priority; 0 none */
    struct mc_shared *sh;
    struct mc_target *t; /* sh->t */
    size_t n_t;
    /* The allocators selected, the plugins they point into and those
     * skipped: as long as the run. */
    struct tk_kinds kinds;
    size_t heap_sizes[MC_MAX_HEAP_SIZES]; /* the H of the sequential phases */
    size_t n_heap_sizes;

    /* Work buffers of a test process, allocated and touched in it before
     * any timing. */
    void **blocks;
    uint32_t *sizes; /* per-block sizes (pattern), live sizes (churn) */
    uint32_t *order; /* free order (pattern) */
    size_t blocks_cap;
    uint32_t *churn_ops; /* the churn workload */
    size_t churn_cap;
    struct tk_samples alloc_s, free_s;

    uint64_t sub_ticks; /* subtracted from each sample (--subtract-timer-overhead) */
    struct mc_progress progress;
    double seconds;
};

/* What runs now in a test process: the phase, the test's number in it, its
 * heap, block and flags, for failure messages. */
struct mc_test {
    enum mc_phase phase;
    size_t index;
    size_t heap, block;
    unsigned flags;
};

/* Fragmentation probe of one test (smokey's find_largest_free), and the
 * address span a process allocator's probes must fall in. */
struct mc_probe {
    bool done;
    size_t user_bytes;   /* requested bytes of the fill */
    size_t maximum_free; /* bytes freed when probed */
    size_t largest_free; /* largest probe that fit */
    bool use_span;       /* TK_PROCESS: a probe fits only inside [lo, hi) */
    uintptr_t lo, hi;
    bool free_refused;
};

static inline bool mc_is_process(const struct mc_target *t)
{
    return t->a.sort == TK_PROCESS;
}

/* ---- the driver's steps (run.c, report_text.c, report_json.c) ----------------------- */

/* struct tk_tool's steps (common/tool.h); cli.c's memcheck_tool lists them. */
int mc_setup(struct tk_session *s);
enum tk_run_end mc_run(struct tk_session *s);
void mc_report(const struct tk_session *s, FILE *f);
void mc_facts(const struct tk_session *s, struct tk_facts *out);
void mc_json(const struct tk_session *s, struct tk_json *j);
void mc_teardown(struct tk_session *s);

/* ---- test.c: what the phases' tests share ------------------------------------------ */

/* Salts separating the phases' random streams. */
extern const uint64_t mc_phase_salt[MC_PHASES];
/* Records the test about to run in t (for the parent, should the process
 * die in it) and marks progress for the watchdog. */
void mc_mark_test(struct mc_target *t, const struct mc_test *c);
/* The seed of a test's own stream (its shuffles). */
uint64_t mc_test_seed(uint64_t seed, enum mc_phase phase, size_t index);
/* A block size for a random-size test on a heap of h bytes. */
size_t mc_draw_block(const struct memcheck *m, uint64_t *rng, size_t h);
/* Records t's first functional failure, where c says. Returns -1. */
int mc_failf(struct mc_target *t, const struct mc_test *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Progress on stderr (when on): a phase of total units, done so far. */
void mc_progress_begin(struct memcheck *m, size_t total);
void mc_progress_step(struct memcheck *m, const struct mc_target *t, enum mc_phase ph, size_t done);
void mc_progress_end(const struct memcheck *m);
/* Does a block of size bytes fit now (inside pr's span for a process
 * allocator)? Untimed; the block is freed again. */
bool mc_probe_fits(struct tk_alloc *a, size_t size, struct mc_probe *pr);
/* A fresh heap of usable size c->heap, checked; 0 or -1 (failure recorded). */
int mc_create_heap(struct memcheck *m, struct mc_target *t, const struct mc_test *c);
/* After every block is freed: nothing used, coalescing complete, heap
 * consistent. 0 or -1 (failure recorded). */
int mc_check_empty(struct mc_target *t, const struct mc_test *c);

/* ---- the phases: each its run, its text and its JSON ------------------------------- */

/* The runs return 0, or -1 after a functional failure, which is recorded in
 * t->fail (the target then runs no further phase). */

/* seq.c: the power-of-two and random phases. */
int mc_run_seq(struct memcheck *m, struct mc_target *t, enum mc_phase phase);
/* Number of tests a sequential phase runs (for progress and storage). */
size_t mc_seq_tests(const struct memcheck *m, enum mc_phase phase);
/* The overall lines of every sequential phase, from its rows. */
void mc_compute_overall(struct memcheck *m);
/* Smokey's title of a sequential phase. */
const char *mc_seq_title(enum mc_phase phase);

/* The orders the sorted tables use. */
enum mc_sort_key { MC_BY_ALLOC, MC_BY_FREE, MC_BY_OVERHEAD, MC_BY_FRAG, MC_BY_HEAP, MC_SORT_KEYS };
struct mc_keyed {
    double key;
    size_t idx;
};
const char *mc_sort_name(enum mc_sort_key k);
/* Indexes of sq's rows sorted by k (caller frees), or NULL. */
struct mc_keyed *mc_sorted_rows(const struct memcheck *m, const struct mc_target *t,
                                const struct mc_seq *sq, enum mc_sort_key k);
/* What the columns of the tables mean, once before them. */
void mc_seq_print_legend(FILE *f, const struct memcheck *m);
/* A sequential phase of t: its sorted tables and overall lines. */
void mc_seq_print(FILE *f, const struct memcheck *m, const struct mc_target *t, enum mc_phase ph);
/* The names of a row's columns, an array. */
void mc_seq_json_columns(struct tk_json *j);
/* A sequential phase as the member named for it (null if it did not run). */
void mc_seq_json(struct tk_json *j, const struct mc_seq *sq, enum mc_phase ph, bool rows);

/* pattern.c */
int mc_run_pattern(struct memcheck *m, struct mc_target *t);
void mc_pattern_print(FILE *f, const struct mc_target *t);
void mc_pattern_json(struct tk_json *j, const struct mc_target *t);

/* churn.c */
int mc_run_churn(struct memcheck *m, struct mc_target *t);
/* Churn workload length for the options (ramp included), for storage. */
size_t mc_churn_capacity(const struct memcheck *m);
/* Every allocator's churn phase, one table. */
void mc_churn_print(FILE *f, const struct memcheck *m);
void mc_churn_json(struct tk_json *j, const struct mc_churn *ch, bool frag_applies);

/* ---- child.c: test processes ------------------------------------------------------- */

/* Each runs in a test process under the watchdog and records a crash, a
 * timeout or a failed setup in t->fail. Returns 0, or -1 if t failed (it
 * then runs no further phase). */
int mc_child_size(struct memcheck *m, struct mc_target *t, const size_t *heaps, size_t n);
int mc_child_phase(struct memcheck *m, struct mc_target *t, enum mc_phase phase);

/* ---- the reports: they read the results, never change them ------------------------- */

/* report_text.c */
/* The header as is, or as '#' lines before smokey's layout. */
void mc_print_preamble(FILE *f, const struct memcheck *m);

/* report_smokey.c */
void mc_print_smokey(FILE *f, const struct memcheck *m);

/* ---- fmt.c: the names and formats every file shares (the leaf) ------------------- */

/* The names of the phases: "pow2", "random", "pattern", "churn". */
const char *mc_phase_name(enum mc_phase phase);
/* Width of the allocator-name column: the longest name, at least 9. */
int mc_name_width(const struct memcheck *m);
/* A byte count as smokey's tables print it: "64k", or the number. */
const char *mc_fmt_size(char *buf, size_t size, size_t bytes);
/* v rounded to grain, so that 10 significant digits do not print noise. */
void mc_json_num(struct tk_json *j, double v, double grain);

#endif /* RTMEM_TOOLS_MEMCHECK_H */
