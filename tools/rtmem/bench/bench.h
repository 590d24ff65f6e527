/*
 * `rtmem bench`: internal types shared by its files, which call each other
 * one way only, from the top of this list down (tests/tools/tool_layers.py):
 *   cli.c         the options table, the combination checks, bench_tool
 *   run.c         setup (the allocators), the measuring process under its
 *                 watchdog and the allocators it fails, the run's sequence
 *   report.c      the header, the report and the JSON: each phase's part, the
 *                 notes, bench's own members
 *   main_phase.c  the main phase: its run, aggregates, tables and JSON
 *   free_order.c  the free-order phase: the same
 *   sweep.c       the size sweep: the same
 *   threads.c     the threads phase (one heap shared by threads, under each
 *                 lock type; what the lock costs uncontended): the same
 *   work.c        workload generation, before any timing
 *   pass.c        the allocators' heaps and calls, the timing loops, a pass,
 *                 where a pass is (for the watchdog)
 *   floor.c       the floor's no-op calls, out of the timing loops' sight
 *   aggregate.c   aggregation over rounds and its JSON, shared by the phases
 *
 * The measuring runs in a child process under a watchdog (common/child.h),
 * since peers and plugins crash and hang: struct bench, and every result
 * array the child fills, live in memory shared with the parent; the heaps
 * and work buffers are the child's own. When the child dies in an
 * allocator (a signal, no progress within --timeout), that allocator is
 * failed and the run starts again without it.
 */
#ifndef RTMEM_TOOLS_BENCH_H
#define RTMEM_TOOLS_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/arena.h"
#include "common/child.h"
#include "common/describe.h"
#include "common/rt.h"
#include "common/samples.h"
#include "common/timer.h"
#include "common/alloc.h"
#include "common/kinds.h"
#include "common/out.h"
#include "common/tool.h"
#include "rtmem/rtmem.h"

#define BENCH_SCHEMA "rtmem-bench/2"

/* Limits on the options: they bound the work and the memory of a run. */
#define BENCH_MAX_OPS        10000000u
#define BENCH_MAX_ROUNDS     99u
#define BENCH_MAX_LIVE       1000000u
#define BENCH_MAX_SIZE_BYTES (1u << 30)
#define BENCH_MIN_HEAP_BYTES ((size_t)64 << 10)
#if SIZE_MAX > 0xffffffffu
#define BENCH_MAX_HEAP_BYTES ((size_t)1 << 40)
#else
#define BENCH_MAX_HEAP_BYTES ((size_t)1 << 31) /* half a 32-bit address space */
#endif

/* Sweep: buckets of 64 bytes from 0 to 10 KiB. */
#define SWEEP_BUCKET_BYTES  64u
#define SWEEP_BUCKETS       160u
/* The human sweep table shows every SWEEP_PRINT_EVERY-th bucket. */
#define SWEEP_PRINT_EVERY   8u
/* The sweep's wide ranges: 1 KiB each, from 1 byte to 8 KiB (past the
 * page), each run --wide-reps times with its own draws. */
#define WIDE_RANGE_BYTES    1024u
#define WIDE_RANGES         8u
#define BENCH_MAX_WIDE_REPS 1000u

/* The free-order phase's sizes and permutation come from the option seed xor
 * this, so they are not the main phase's draws. */
#define FILL_SEED_SALT 0x5851f42d4c957f2du

/* Rows the run can hold: the floor and the run's list of allocators. */
#define BENCH_MAX_ALLOCATORS    (1 + TK_MAX_ALLOCS)
/* --timeout: seconds the measuring process may go without progress. */
#define BENCH_DEFAULT_TIMEOUT_S 60u
#define BENCH_MAX_TIMEOUT_S     86400u

/* Threads phase: the lock types, in the order --locks names them: a
 * private heap with RTM_HEAP_LOCK_NONE, _PI or _ROBUST_SHARED, and a shared
 * heap (rtmem/shared.h: its robust lock in a POSIX shm segment); and the
 * most threads. */
enum bench_lock {
    BENCH_LOCK_NONE,
    BENCH_LOCK_PI,
    BENCH_LOCK_ROBUST,
    BENCH_LOCK_SHARED,
    BENCH_LOCKS
};
#define BENCH_MAX_THREADS     64
/* The shared row's target: a call on the shared heap (its lock and
 * whatever makes it recoverable included) at most this many times the
 * unlocked private heap's, judged on the median ratio over the rounds. */
#define BENCH_SHARED_TARGET   3.0
/* A test hook (docs/bench.md): RTMEM_BENCH_TEST_TARGET=X judges the shared
 * row against X instead (a positive number), so that a test can make the
 * target unmet, or met, whatever the machine. */
#define BENCH_TEST_TARGET_ENV "RTMEM_BENCH_TEST_TARGET"
/* The shared heaps' name: "bench-" and the pid of the process that runs
 * the measuring ones, so unique to the run (the object is "/rtmem-<name>"). */
#define BENCH_SHM_NAME_MAX    32

struct bench_opts {
    uint64_t ops; /* operations per pass (main phase) */
    unsigned rounds;
    uint32_t min_size_bytes;
    uint32_t max_size_bytes;
    uint32_t live_cap;
    size_t heap_bytes;
    uint64_t seed;
    uint64_t sweep_ops;   /* operations per bucket per allocator */
    unsigned wide_reps;   /* repetitions of the sweep's wide ranges; 0: none */
    uint32_t fill_blocks; /* blocks per fill (free-order phase) */
    struct tk_rt_opts rt; /* --cpu, --prio, --no-rt */
    bool quick;
    bool no_sweep;
    bool sweep_only;
    bool no_free_order;
    const char *kinds_arg; /* NULL: the defaults, every allocator but the peers */
    const char *json_path; /* NULL: no JSON */
    const char *plugin_paths[TK_MAX_PLUGINS]; /* --plugin, in order */
    size_t n_plugins;
    unsigned timeout_s;       /* without progress, the measuring process is killed; 0 never */
    unsigned threads;         /* threads phase: threads sharing the heap; 0: no threads phase */
    uint64_t thread_ops;      /* operations per thread per lock type */
    const char *locks_arg;    /* --locks as given; NULL: every lock type */
    unsigned locks;           /* bit t: lock type t runs (set by cli.c's check) */
    const char *threads_kind; /* the threads phase's heap kind */
    bool threads_only;
};

/* A workload: one uint32 per operation, generated before any timing. An
 * allocation holds its size; a free holds OP_FREE | index of the victim in
 * the slot array of live blocks (swap-remove). */
#define OP_FREE 0x80000000u

struct workload {
    uint32_t *ops;
    size_t n;
    size_t cap;
};

/* Free-order phase: the orders in which a fill is freed. */
enum fill_order {
    FILL_IN_ORDER, /* allocation order */
    FILL_SHUFFLED, /* one fixed random permutation */
    FILL_ORDERS,
};

/* The free-order phase's work: n allocations of sizes[i], then n frees of
 * blocks[order[o][i]]. Generated before any timing. */
struct fill_work {
    uint32_t *sizes;
    uint32_t *order[FILL_ORDERS]; /* [FILL_IN_ORDER] is the identity */
    void **blocks;                /* the i-th allocation of the current pass */
    size_t n;
    size_t cap;
};

/* The parts of a run, for naming where an allocator failed. */
enum bench_phase { PH_SETUP, PH_MAIN, PH_FREE_ORDER, PH_SWEEP, PH_WIDE };

/* What the measuring process is doing, written before each pass. */
struct bench_running {
    bool set;
    size_t al; /* index in struct bench.al */
    enum bench_phase phase;
    unsigned round; /* round, or sweep bucket; 0 in setup */
    bool warmup;
};

/* Threads phase, what the lock costs a call, uncontended, per lock type:
 * per round, an alloc or a free (half an alloc+free pair) on an unlocked
 * private heap and on a locked one (for shared, the shared heap), and one
 * lock+unlock of a bare mutex of the heap lock's type; then (parent)
 * medians over the rounds, with the spread of what the lock adds (locked -
 * unlocked), of its ratio to the bare pair, and of locked / unlocked. NaN
 * where not measured. */
struct bench_lock_cost {
    double unlocked_ns[BENCH_MAX_ROUNDS];
    double locked_ns[BENCH_MAX_ROUNDS];
    double bare_ns[BENCH_MAX_ROUNDS];
    double unlocked, locked, bare;
    double added, added_min, added_max;
    double ratio, ratio_min, ratio_max;
    double over_unlocked, over_unlocked_min, over_unlocked_max;
};

/* Threads phase: one thread's latencies on the shared heap, in ns. */
struct bench_thread_row {
    int cpu;
    struct tk_summary alloc, free;
    uint64_t failed_allocs, skipped_frees, free_errors;
};

/* Threads phase: everything it measured (written by the measuring process
 * into struct bench, shared with the parent). */
struct bench_threads {
    bool ran;
    char error[160]; /* why it stopped early; "" when it did not */
    double seconds;
    unsigned n_threads;
    int cpus[BENCH_MAX_THREADS]; /* thread i runs on cpus[i] */
    bool fifo;                   /* the threads ran at SCHED_FIFO --prio */
    struct tk_arena mem;         /* the heaps' memory (the measuring process's) */
    struct bench_lock_cost cost[BENCH_LOCKS];
    struct bench_thread_row rows[BENCH_LOCKS][BENCH_MAX_THREADS];
    /* The shared heap's lock over the recorded run: calls, calls that
     * waited; heap checks failed (or blocks left) after a run. */
    uint64_t lock_calls[BENCH_LOCKS], lock_contended[BENCH_LOCKS];
    uint64_t check_failures[BENCH_LOCKS];
    /* Why a lock type's uncontended or contended part was skipped (its
     * heap could not be made: only shared's can be); "" when it ran. */
    char cost_skipped[BENCH_LOCKS][160];
    char contended_skipped[BENCH_LOCKS][160];
};

/* An allocator the measuring process died in. */
struct bench_failure {
    bool failed;
    bool timed_out; /* no progress: killed by the watchdog */
    int signal;     /* else the signal it died of; 0: it exited */
    struct bench_running where;
    char msg[256];
};

/* What one timed pass produced. Samples are in timer ticks. */
struct pass_out {
    struct tk_samples *alloc_ticks;
    struct tk_samples *free_ticks;
    uint64_t failed_allocs; /* NULL returns */
    uint64_t skipped_frees; /* frees of a failed (NULL) slot: not timed */
    uint64_t free_errors;   /* free returned an error (a heap bug) */
};

/* Aggregate of one op type of one allocator over the rounds. */
struct op_agg {
    size_t count_per_round; /* from the first round */
    uint64_t count_total;
    double avg_ns, avg_min_ns, avg_max_ns;     /* median, min, max of per-round means */
    double net_avg_ns, net_min_ns, net_max_ns; /* the same, each round minus its floor */
    double p50_ns, p99_ns, p999_ns, p9999_ns;  /* medians of per-round percentiles */
    double max_ns;                             /* worst over all rounds */
};

/* A row of the run: the floor, or an allocator of the run's list
 * (common/kinds.h), whose struct tk_alloc says where it comes from: an
 * rtmem kind at a hardening level ("<kind>-none" rows time
 * RTM_HEAP_HARDEN_NONE beside the default), TLSF or halffit through its typed API,
 * glibc, a peer or a plugin. The timed calls are bench's own (pass.c). */
struct allocator {
    bool floor;                /* the no-op row; def holds only its name */
    struct tk_alloc def;       /* what it is; def.name names the row */
    struct bench_failure fail; /* set: left out of the run */
    /* Heap memory (def.sort TK_HEAP: rtmem kinds, the typed rows, plugins);
     * not open for the others. */
    struct tk_arena mem;
    struct rtm_heap *heap;
    void *typed;             /* a typed row: its rtm_tlsf or rtm_halffit */
    void *loaded_heap;       /* a plugin: its heap */
    uint64_t check_failures; /* rtm_heap_check or leftover blocks after a pass */
    size_t largest_request;  /* a fresh rtmem heap's largest_free_bytes (0: unknown) */
    char scratch[64];        /* what the floor's "allocation" returns */

    /* Main phase, per round: [0] alloc, [1] free. */
    struct tk_summary *rounds[2];
    uint64_t failed_allocs; /* over the recorded rounds */
    uint64_t skipped_frees;
    uint64_t free_errors;
    struct op_agg agg[2];
    /* Against glibc: alloc, free avg-floor; alloc, free p99. NaN for the
     * floor, glibc itself, or without glibc. */
    double vs_glibc[4];

    /* Free-order phase. fill_alloc: every fill, [order * rounds + round];
     * fill_free[order]: per round. */
    struct tk_summary *fill_alloc;
    struct tk_summary *fill_free[FILL_ORDERS];
    uint64_t fill_failed_allocs; /* over the recorded fills */
    uint64_t fill_skipped_frees;
    struct op_agg fill_alloc_agg; /* over every fill: its "rounds" are the fills */
    struct op_agg fill_free_agg[FILL_ORDERS];
    double shuffled_over_in_order[2]; /* free avg-floor, p99; NaN for the floor */

    /* Sweep, per bucket. */
    double *sweep_alloc_ns;
    double *sweep_free_ns;
    uint64_t *sweep_failed;
    double sweep_net_mean_ns; /* alloc+free minus the floor, mean over buckets */

    /* Wide ranges: each repetition's mean alloc+free pair (range r,
     * repetition k at r * wide_reps + k), and the failures per range. */
    double *wide_pair_ns;
    uint64_t *wide_failed;
};

struct bench {
    struct bench_opts o;
    double target;         /* BENCH_SHARED_TARGET, or the test hook's */
    bool target_given;     /* by the test hook */
    const char *prog;      /* "rtmem bench": starts the driver's messages */
    struct tk_rt_state rt; /* the measuring process's real-time setup */
    struct tk_timer timer;
    struct tk_machine mf;
    struct allocator al[BENCH_MAX_ALLOCATORS];
    size_t n_al; /* al[0] is always the floor */
    struct workload w;
    struct fill_work fw;
    void **slots; /* live blocks during a pass */
    uint32_t slots_cap;
    struct tk_samples alloc_s, free_s;
    bool ran_main, ran_free_order, ran_sweep, ran_wide;
    double sweep_floor_ns; /* alloc+free of the floor, mean over buckets */
    double main_seconds, free_order_seconds, sweep_seconds, wide_seconds;
    size_t fill_n, fill_runs; /* the free-order fill: blocks, page runs among them */

    /* The allocators --kinds selects (al[1..] are copies), the plugins
     * loaded, the peers skipped; the measuring process's watchdog. */
    struct tk_kinds kinds;
    char skipped[512]; /* peers named but not loaded, and why */
    tk_child_mark beat;
    struct bench_running now;
    /* Allocators the measuring process died in, set aside from al[] once
     * it completes, so that every table shows only the ones measured. */
    struct allocator gone[BENCH_MAX_ALLOCATORS];
    size_t n_gone;
    bool header_done; /* printed by the first measuring process */
    /* How the measuring process says it ended, in this shared memory, not
     * in its exit status (a plugin may call exit with any status):
     * BENCH_OUTCOME_*, reset before each attempt. */
    int outcome;
    int watch_priority;
    struct bench_threads th;
    /* The threads phase's shared heaps' name (BENCH_SHM_NAME_MAX), set by
     * the parent before the first measuring process; "" without them. */
    char shm_name[BENCH_SHM_NAME_MAX];
    /* The current measuring process's share of al[]: 0, the floor and
     * every allocator but those measured alone; else the index of the one
     * allocator it measures alone (own_process: glibc-rt, whose mallopt
     * would change glibc's figures), after the others' process. */
    size_t alone;
};

/* Index of the k-th allocator to run in a round: forward in even rounds,
 * backward in odd ones, so no allocator always runs right after another. */
static inline size_t bench_order_index(size_t k, size_t n, unsigned round)
{
    return round % 2 == 0 ? k : n - 1 - k;
}

/* A peer or a plugin, driven through its struct tk_alloc's calls? */
static inline bool bench_loaded(const struct allocator *a)
{
    return !a->floor && (a->def.from == TK_FROM_PEER || a->def.from == TK_FROM_PLUGIN);
}

/* glibc's malloc/free at its defaults (not glibc-rt)? */
static inline bool bench_glibc(const struct allocator *a)
{
    return !a->floor && a->def.from == TK_FROM_GLIBC && !a->def.own_process;
}

/* Is al[i] in the current measuring process's share (b->alone)? */
static inline bool bench_in_share(const struct bench *b, size_t i)
{
    return b->alone ? i == b->alone : !b->al[i].def.own_process;
}

/* Is al[i] left out of the current measuring process: the run died in it,
 * or another process measures it? */
static inline bool bench_left_out(const struct bench *b, size_t i)
{
    return b->al[i].fail.failed || !bench_in_share(b, i);
}

/* run.c: the driver's setup, run and teardown (common/tool.h). setup
 * selects the allocators into the state, shared with the measuring
 * process; run measures, sets aside the allocators that failed and computes
 * every aggregate, so that the report and the JSON only read. */
int bench_setup(struct tk_session *s);
enum tk_run_end bench_run(struct tk_session *s);
void bench_teardown(struct tk_session *s);

/* work.c */
int bench_workload_init(struct workload *w, size_t cap);
void bench_workload_generate(struct workload *w, size_t n_ops, uint32_t min_bytes,
                             uint32_t max_bytes, uint32_t live_cap, uint64_t seed);
int bench_fill_work_init(struct fill_work *fw, size_t cap);
/* n sizes uniform in [min_bytes, max_bytes] and a random permutation of 0..n-1. */
void bench_fill_work_generate(struct fill_work *fw, size_t n, uint32_t min_bytes,
                              uint32_t max_bytes, uint64_t seed);

/* pass.c */
/* Maps, prefaults and locks memory and creates the heap; 0 or -errno (the
 * message goes to stderr). Nothing for an allocator without a heap. */
int bench_allocator_open(struct allocator *a, size_t heap_bytes);
/* One timed pass of b->w on a; then frees what is left (untimed) and checks
 * the heap. out's sample stores are reset first. */
void bench_run_pass(struct bench *b, struct allocator *a, struct pass_out *out);
/* One pass of the free-order phase: a fresh heap on a's memory (rtmem kinds;
 * untimed), the fill of b->fw with each allocation timed, then every block
 * freed in the given order with each free timed, and the heap checked.
 * Returns 0, or -errno if the heap could not be created again (reported). */
int bench_run_fill_pass(struct bench *b, struct allocator *a, enum fill_order order,
                        struct pass_out *out);
/* Before a pass: which allocator and where, for the parent to name should
 * the process die in it, and progress for the watchdog. */
void bench_mark_pass(struct bench *b, size_t al, enum bench_phase phase, unsigned round,
                     bool warmup);
/* "main phase, round 2" for where; into buf. */
const char *bench_where(const struct bench_running *where, char *buf, size_t size);

/* floor.c: the floor's no-op calls (the first returns ctx). */
void *bench_noop_alloc(void *ctx, size_t size);
void bench_noop_free(void *ctx, void *p);

/* The phases: each runs in the measuring process (bench_run_*), then, in
 * the parent once every attempt is done, computes its aggregates
 * (bench_aggregate_*); its table and its JSON read only those. */
/* main_phase.c */
void bench_run_main(struct bench *b);
void bench_aggregate_main(struct bench *b);
void bench_print_main(FILE *f, const struct bench *b);
/* The "allocators" rows and "ratios_vs_glibc". */
void bench_json_allocators(struct tk_json *j, const struct bench *b);
void bench_json_ratios(struct tk_json *j, const struct bench *b);
/* free_order.c: run returns 0, or -1 if a heap could not be created again
 * (reported). */
int bench_run_free_order(struct bench *b);
void bench_aggregate_free_order(struct bench *b);
void bench_print_free_order(FILE *f, const struct bench *b);
void bench_json_free_order(struct tk_json *j, const struct bench *b);
/* sweep.c */
void bench_run_sweep(struct bench *b);
void bench_aggregate_sweep(struct bench *b);
void bench_print_sweep(FILE *f, const struct bench *b);
void bench_json_sweep(struct tk_json *j, const struct bench *b);
/* A pass's mean call in ns (NaN for no sample); an array of doubles as a
 * JSON member (NaN as null). Shared by the sweep and its wide ranges. */
double bench_mean_ns(const struct bench *b, const struct tk_samples *s);
void bench_json_doubles(struct tk_json *j, const char *key, const double *v, size_t n);
/* wide.c: the sweep's wide ranges, repeated */
void bench_run_wide(struct bench *b);
void bench_print_wide(FILE *f, const struct bench *b);
void bench_json_wide(struct tk_json *j, const struct bench *b);

/* threads.c. bench_parse_locks: --locks (NULL: all) into a bit per lock
 * type; 0, or -1 (reported). bench_threads_open: the phase's memory and
 * buffers, before memory is locked; 0, or -1 (reported).
 * bench_shared_begin (parent, before the first measuring process): names
 * the phase's shared heaps and has a fatal signal remove that name;
 * bench_shared_remove (parent, after each measuring process, however it
 * ended): removes the name if a measuring process died between making a
 * shared heap and unlinking it; bench_shared_end: forgets the name. */
extern const char *const bench_lock_names[BENCH_LOCKS];
int bench_parse_locks(const struct tk_args *cli, const char *arg, unsigned *locks);
int bench_threads_open(struct bench *b);
void bench_shared_begin(struct bench *b);
void bench_shared_remove(const struct bench *b);
void bench_shared_end(void);
void bench_run_threads(struct bench *b);
void bench_aggregate_threads(struct bench *b);
/* The shared heap's cost target (BENCH_SHARED_TARGET) measured and not met:
 * the run then fails. */
bool bench_target_unmet(const struct bench *b);
void bench_print_threads(FILE *f, const struct bench *b);
void bench_json_threads(struct tk_json *j, const struct bench *b);

/* aggregate.c */
/* Median, min and max of the finite values of v[0..n) (n <= FILL_ORDERS *
 * BENCH_MAX_ROUNDS); NaN if none. */
void bench_median_min_max(const double *v, size_t n, double *med, double *lo, double *hi);
/* Aggregate of n per-pass summaries rs (n <= FILL_ORDERS * BENCH_MAX_ROUNDS);
 * fl holds the floor's summaries of the same passes, NULL when rs is the
 * floor's own. */
void bench_aggregate_series(const struct tk_summary *rs, const struct tk_summary *fl, unsigned n,
                            struct op_agg *g);
/* The floor's matching series, or NULL for the floor itself. */
const struct tk_summary *bench_floor_of(const struct allocator *a,
                                        const struct tk_summary *floor_series);
/* num / den; NaN unless both are finite and den is positive. */
double bench_ratio(double num, double den);
/* Shared by the phases' JSON: per-pass summaries rs[0..n) as an array
 * (fl: the floor's, NULL for the floor); an aggregate's figures as members
 * of the open object; the API an allocator is driven through. */
void bench_json_series(struct tk_json *j, const char *key, const struct tk_summary *rs,
                       const struct tk_summary *fl, unsigned n);
void bench_json_agg_members(struct tk_json *j, const struct op_agg *g, const char *count_key);
const char *bench_api_name(const struct allocator *a);

/* report.c */
/* Printed by the measuring process before it measures. */
void bench_print_header(FILE *f, const struct bench *b);
/* The driver's report, facts and JSON (common/tool.h). The report after the
 * header: every phase's tables, then the notes (failures and warnings of
 * every phase, rests, final VmLck). The JSON: bench's members after the
 * envelope. */
void bench_report(const struct tk_session *s, FILE *f);
void bench_facts(const struct tk_session *s, struct tk_facts *out);
void bench_json(const struct tk_session *s, struct tk_json *j);

#endif /* RTMEM_TOOLS_BENCH_H */
