/*
 * `rtmem replay FILE`: a trace `rtmem trace` recorded, replayed on every
 * heap kind (and glibc, the peers, a user's plugins): the smallest pool in
 * which it never fails, the
 * failures at a pool the user gives, time per call, fragmentation at the
 * peak, memory touched; then a verdict. Its manual is docs/replay.md.
 *
 *   program.c  the trace turned into a replay program: calls on block ids,
 *              in the process-wide order (one thread), a phase alone with
 *              the blocks live at its start made first
 *   engine.c   one replay of the program on one heap: failures, the heap's
 *              statistics at the peak, call times
 *   run.c      per allocator: the pool search, the timed replays, touched
 *              memory; a plugin's all in a child process of its own
 *   count.c    instructions per call, counted under valgrind's callgrind
 *   report.c   the tables, the verdict, the JSON
 */
#ifndef RTMEM_TOOLS_REPLAY_REPLAY_H
#define RTMEM_TOOLS_REPLAY_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <stdio.h>

#include "common/child.h"
#include "common/describe.h"
#include "common/kinds.h"
#include "common/rt.h"
#include "common/samples.h"
#include "common/timer.h"
#include "common/tool.h"
#include "common/trace.h"
#include "rtmem/rtmem.h"

#define REPLAY_SCHEMA   "rtmem-replay/1"
#define REPLAY_MAX_REPS 1000

struct replay_opts {
    const char *kinds;
    const char *phase;   /* --phase NAME: that phase alone; NULL: the whole trace */
    uint64_t pool;       /* --pool B: the failures at that pool; 0: none asked */
    uint64_t granule;    /* the pool search's resolution */
    uint64_t max_pool;   /* the search gives up beyond it */
    unsigned reps;       /* timed replays per allocator */
    unsigned margin_pct; /* the recommended pool: the smallest that fits, plus this */
    struct tk_rt_opts rt;
    bool quick;
    bool no_count;                            /* --no-count: no instruction counts under valgrind */
    const char *plugin_paths[TK_MAX_PLUGINS]; /* --plugin FILE.so */
    size_t n_plugins;
    unsigned timeout_s; /* a plugin's child: killed after this long without progress */
    const char *json_path;
};

/* ---- the program (program.c) ------------------------------------------------ */

enum replay_op {
    RO_ALLOC,   /* malloc, calloc, valloc, pvalloc: size */
    RO_ALIGNED, /* memalign, posix_memalign, aligned_alloc: align, size */
    RO_REALLOC, /* realloc, reallocarray: old (or RO_NONE), size */
    RO_FREE,    /* free: id; realloc(p, 0) that freed p */
};
#define RO_NONE UINT32_MAX

struct rop {
    uint8_t op;    /* enum replay_op */
    uint8_t timed; /* 0: made before the phase replayed (the blocks live at its start) */
    uint32_t id;   /* the block made, or freed */
    uint32_t old;  /* RO_REALLOC: the block given, or RO_NONE */
    uint32_t tid;  /* the thread that made the call, and when it returned */
    uint64_t t_ns; /* (an allocation) or was made (a free), in the trace */
    uint64_t size, align;
};

struct replay_program {
    struct rop *ops;
    size_t n;
    uint32_t n_ids;
    size_t preamble;          /* ops made before the phase (timed 0) */
    uint64_t peak_live;       /* bytes asked by live blocks at their most */
    size_t peak_op;           /* the op after which they are */
    uint64_t allocs, frees;   /* replayed (timed) ops of each side */
    uint64_t unknown_frees;   /* frees of blocks the trace never saw handed out: left out */
    uint64_t failed_in_trace; /* allocations that failed in the program: left out */
    uint64_t reused_live;     /* blocks handed out while the trace held them live */
    uint64_t largest, max_align;
    size_t threads; /* threads that allocate in the part replayed */
    double seconds; /* the part replayed, in the program's time */
};

/* The program of trace t: the whole trace (phase NULL), or the phase of
 * that name (its first one) up to the next mark. 0, or -1 with why. */
int replay_program_build(const struct tk_trace *t, const char *phase, struct replay_program *p,
                         char *why, size_t why_len);
void replay_program_free(struct replay_program *p);
/* The limits p stays within, for rtm_heap_pool_bound_ex: the bytes asked
 * by live blocks at their most, a realloc's old and new block both
 * counted (a request of 0 as 1); its smallest and largest requests; its
 * largest alignment (0: none above RTM_HEAP_MIN_ALIGN); no lock. All 0
 * when p allocates nothing. 0, or -1 when out of memory. */
int replay_program_limits(const struct replay_program *p, struct rtm_heap_limits *l);
/* The most blocks p holds live at once (its preamble's included). O(n). */
size_t replay_peak_blocks(const struct replay_program *p);

/* ---- one replay (engine.c) --------------------------------------------------- */

/* What one replay found. */
struct replay_outcome {
    uint64_t failures;      /* allocations that returned NULL */
    uint64_t refused_frees; /* frees of live blocks the heap refused (not counted ones) */
    uint64_t max_ticks;     /* the longest timed call of this replay */
    size_t first_failure;   /* the op, if any */
    bool have_peak;         /* stats at the peak (an rtmem heap) */
    struct rtm_heap_stats at_peak;
    uint64_t counted_allocs, counted_frees; /* calls a counted replay made */
};

/* How to replay: on an rtmem heap (heap not NULL), a plugin's heap (plug
 * not NULL) or through a process allocator's malloc family; stop at the
 * first failure, or go on; time each timed call into allocs/frees (ticks;
 * NULL: no timing). */
struct replay_how {
    struct rtm_heap *heap;
    const struct rtm_heap_plugin *plug; /* a plugin's table, in the process that opened it */
    void *pheap;                        /* plug: the heap its create returned */
    size_t plug_align;                  /* plug: what its alloc aligns to */
    const struct tk_alloc *peer;        /* neither: a peer's entry points, or glibc's (NULL) */
    bool stop_at_failure;
    bool counted;      /* the timed calls through the counted ones (count.c) */
    bool noop;         /* the floor: every call a no-op (a function that returns) */
    uint64_t *refused; /* set by replay_once: frees the heap refused, counted there */
    struct tk_samples *allocs, *frees;
};

/* Of p's timed calls, those that start while a call of another thread is
 * in progress, each call taking alloc_ns (an allocation: it ends at its
 * time in the trace) or free_ns (a free: it starts there). O(n log n);
 * UINT64_MAX when out of memory. */
uint64_t replay_contended(const struct replay_program *p, double alloc_ns, double free_ns);

/* The counted calls (count.c): each makes the one call its name says, as
 * how says (a heap, a peer, glibc). */
void *rtmem_replay_count_alloc(const struct replay_how *how, size_t size);
void *rtmem_replay_count_aligned(const struct replay_how *how, size_t align, size_t size);
void *rtmem_replay_count_realloc(const struct replay_how *how, void *old, size_t size);
void rtmem_replay_count_free(const struct replay_how *how, void *p);

/* One replay of p; blocks has p->n_ids entries (left all NULL: every
 * block is freed or the heap dropped by the caller). */
void replay_once(const struct replay_program *p, const struct replay_how *how, void **blocks,
                 struct replay_outcome *out);

/* ---- per allocator (run.c) ----------------------------------------------------- */

struct replay_target {
    char name[48];
    bool noop;                   /* the floor (struct replay's), not an allocator */
    const char *kind;            /* an rtmem kind, or NULL */
    struct tk_plugin *plugin;    /* a user's plugin (a bounded heap, as a kind), or NULL */
    const struct tk_alloc *peer; /* a peer (jemalloc, ...), or NULL; all three NULL: glibc */
    /* glibc-rt: its allocator, whose settings are the process's: it is
     * replayed in a child process of its own, which applies them
     * (tk_alloc_bind) and hands back what came of its reserve (grt). */
    struct tk_alloc *own;
    struct tk_glibc_rt grt;
    int hardening;
    bool replayed;
    bool failed;              /* tried and failed (why_not says how); the run fails */
    char why_not[TK_WHY_MAX]; /* not replayed: why */
    char note[160];           /* how it was replayed, where that differs (a plugin's realloc) */
    /* the search (bounded heaps: rtmem kinds, plugins) */
    bool fits;            /* a pool up to max_pool fits */
    bool too_large;       /* the kind serves none of the program's largest or most aligned
                           * requests, at any pool size: no search (xvheap: above a page) */
    uint64_t min_pool;    /* the smallest that fits (granule resolution) */
    uint64_t below_fails; /* min_pool - granule: checked to fail */
    unsigned tries;       /* replays the search made */
    /* at --pool */
    bool pool_created;
    uint64_t pool_failures;
    /* timed, at the recommended pool (rtmem) or in glibc */
    uint64_t timed_pool;
    uint64_t timed_failures;
    struct tk_summary alloc_ns, free_ns; /* net of the timer's overhead */
    double worst_ns; /* each timed replay's longest call, the median over them, net */
    bool have_peak;
    struct rtm_heap_stats at_peak;
    double fragmentation; /* 1 - largest free / free, at the peak */
    uint64_t touched;     /* bytes of the pool's pages the replay touched */
    /* rtm_heap_pool_bound_ex for the program's limits (replay.limits):
     * enough for every sequence within them; 0 when the kind has none
     * (bound_why says why) */
    uint64_t bound;
    char bound_why[64];
    /* instructions per call, counted by callgrind (count.c): averages
     * over the replayed calls of each side */
    bool counted;
    double instr_alloc, instr_free;
    uint64_t counted_allocs, counted_frees;
    char count_why[160]; /* not counted: why (when the others were) */
    /* a locked heap, when threads allocate */
    bool locked_timed;
    struct tk_summary locked_alloc_ns, locked_free_ns;
    double locked_worst_ns;
    /* With threads: the calls that would have found a lock held, by the
     * trace's timing and this allocator's average calls (run.c). */
    uint64_t contended;
};

struct replay {
    struct replay_opts o;
    tk_child_mark *beat; /* in a plugin's child: its progress marks; NULL elsewhere */
    int watch_priority;  /* SCHED_FIFO priority the parent waits for a child at; 0: none */
    const char *prog;
    struct tk_machine mf;
    struct tk_timer timer;
    bool timer_ok;
    struct tk_rt_state rt;
    bool rt_done;
    struct tk_kinds kinds;
    struct tk_trace t;
    struct replay_program p;
    struct rtm_heap_limits limits; /* the program's (replay_program_limits) */
    struct replay_target targets[TK_MAX_ALLOCS];
    size_t n_targets;
    /* The noise floor: the program replayed with every call a no-op, timed
     * as the allocators are (run.c); floor.replayed when it was. */
    struct replay_target floor;
    size_t page;
    /* The run's other process images beside the trace (rtmem trace
     * --children follow: FILE.<pid>, FILE.<pid>.<exec>): how many, and the
     * first one's path (replay_find_others). */
    size_t n_others;
    char other[PATH_MAX + NAME_MAX + 2];
    /* the instruction counts (count.c) */
    char valgrind_version[64]; /* "" when none counted */
    char count_why[640];       /* none counted: why */
};

enum tk_run_end replay_run(struct tk_session *s);

/* The other process images of the run that recorded path, in its
 * directory: traces named as rtmem trace names a followed child's or an
 * exec's image (BASE.<pid>, BASE.<pid>.<n>), BASE being path without such
 * a suffix when that trace exists. Into r->n_others and r->other. O(files
 * in the directory). */
void replay_find_others(struct replay *r, const char *path);

/* A bounded heap: an rtmem kind or a plugin (a pool is searched for it). */
static inline bool replay_bounded(const struct replay_target *x)
{
    return x->kind || x->plugin;
}

/* Opens x's heap on [mem, mem + bytes) into how (an rtmem kind at lock,
 * a plugin's through its create); nothing for a process allocator. false
 * when the heap is refused. x's plugin must be open in this process. */
bool replay_heap_open(const struct replay_target *x, void *mem, size_t bytes, int lock,
                      struct replay_how *how);
void replay_heap_close(struct replay_how *how);

/* ---- instruction counts (count.c) ------------------------------------------- */

/* Whether this process is a counted replay's child, and that child's work:
 * one replay of the program on the one target (--kinds) under valgrind,
 * its calls through the counted ones; prints "calls A F" and returns the
 * exit status. */
bool replay_is_count_child(void);
int replay_count_child(struct replay *r);
/* The parent's: per replayed target, two counted replays (allocations,
 * then frees) under callgrind. Fills the targets' counts, or count_why. */
void replay_count(struct tk_session *s);

/* ---- report.c ------------------------------------------------------------------ */

void replay_report(const struct tk_session *s, FILE *f);
void replay_json(const struct tk_session *s, struct tk_json *j);
/* The recommended pool for a target that fits: its smallest plus the
 * margin, rounded up to the page. */
uint64_t replay_recommended_pool(const struct replay *r, const struct replay_target *x);

#endif /* RTMEM_TOOLS_REPLAY_REPLAY_H */
