/*
 * `rtmem wcet`: each heap kind's worst case, built on purpose and measured
 * three ways.
 *
 * A scenario is a heap state made on purpose so that one operation takes
 * the longest path a kind's code has for it (docs/wcet.md walks through
 * the code of each). For the rtmem kinds the state is built once in a heap
 * image (one buffer holding the control structure and the pool), checked
 * (the scenario's check: the state is what it claims, and the operation
 * took the path it claims), and saved; every repetition then restores the
 * image by a copy and runs the operation once. Heap metadata holds offsets,
 * never addresses, so the restored image is the same heap at the same
 * address, and every repetition runs exactly the same path. glibc keeps its
 * state in the process (its arena in libc's data, its chunks in the brk
 * heap): a glibc scenario is built again before each repetition and undone
 * after it.
 *
 * Each scenario is measured:
 *   1. warm: right after the restore (every line of the image just written
 *      by the copy: in the caches, L2 or closer for images that fit the
 *      L2), the code warm from the previous repetition;
 *   2. cold: after the restore, the image (glibc: the brk heap and libc's
 *      writable data) is flushed from every cache level (tk_cache_flush:
 *      clflushopt on x86-64, dc civac on arm64); the code and the stack stay
 *      warm, as in a control loop that wakes after a long idle period and
 *      whose own code is locked in;
 *   3. counted: instructions, branches and the distinct data cache lines
 *      the operation touches, deterministically, by re-running the
 *      scenarios under valgrind's callgrind with a simulated cache emptied
 *      before each operation (count.c); and, where the kernel offers the
 *      CPU's counters, the instructions and branches the CPU retired
 *      (hw.c). Less the same figures for a call that does nothing (the
 *      "noop" row), so that the harness's own call is not counted.
 *
 * Times are each repetition's timer reading (one start/end pair around the
 * call; the timer's overhead is in the header, not subtracted), summarised
 * as min, median, p99 and max. On a virtual machine the maximum is the
 * host's noise as often as the code's: the counted figures are the ones a
 * timing analysis can rest on.
 */
#ifndef RTMEM_TOOLS_WCET_H
#define RTMEM_TOOLS_WCET_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/cacheops.h"
#include "common/alloc.h"
#include "common/caches.h"
#include "common/describe.h"
#include "common/opt.h"
#include "common/out.h"
#include "common/rt.h"
#include "common/samples.h"
#include "common/timer.h"
#include "rtmem/plugin.h"
#include "rtmem/rtmem.h"

#define WCET_SCHEMA "rtmem-wcet/1"

/* A build whose sanitizer replaces malloc and maps shadow memory: glibc's
 * allocator is not the one malloc reaches, and valgrind cannot run it
 * (common/grind.h says so for the counted run). */
#ifdef TK_MALLOC_SANITIZED
#define WCET_SANITIZED 1
#endif

/* The families of scenarios, and the kinds --kinds takes. */
enum wcet_family {
    WCET_TLSF,
    WCET_HALFFIT,
    WCET_XVHEAP,   /* TLSF in pages: the paths that take and give back a page */
    WCET_ZSHEAP,   /* size classes in zspages: the paths that make and give back one */
    WCET_PAGEHEAP, /* heapmem and xnheap: one code, two trees */
    WCET_GLIBC,
    WCET_PLUGIN, /* a user's allocator (rtmem/plugin.h): black-box probes */
};

#define WCET_MAX_PLUGINS  TK_MAX_PLUGINS
#define WCET_MAX_KINDS    (7 + WCET_MAX_PLUGINS)
/* A plugin's image: the memory its heap is created in. */
#define WCET_PLUGIN_IMAGE ((size_t)256 << 10)
#define WCET_MAX_CASES    64
/* Blocks a glibc scenario keeps between its build and its undo. */
#define WCET_MAX_BLOCKS   256
#define WCET_MAX_NUMS     6

/* The heap images: TLSF's (its paths do not depend on the pool's size),
 * and the page heaps' by default (--page-image: a larger one makes deeper
 * trees), both small enough to stay in an L2 cache once restored. */
#define WCET_TLSF_IMAGE     ((size_t)256 << 10)
#define WCET_PAGE_IMAGE     ((size_t)256 << 10)
#define WCET_PAGE_IMAGE_MIN ((size_t)256 << 10) /* room for 8 pools, one of them large */
#define WCET_PAGE_IMAGE_MAX ((size_t)1 << 30)
#define WCET_IMAGE_ALIGN    ((size_t)4096)

/* The scenarios of a heap of several pools: how many, and the size of all
 * but the one the scenario works in. */
#define WCET_POOLS      8u
#define WCET_SMALL_POOL ((size_t)16 << 10)

/* glibc's state is the process's history: a build may miss its path the
 * first time (its check says so), and is tried again from the state the
 * last attempt left, this many times in all (run.c, count.c). */
#define WCET_GLIBC_ATTEMPTS 3

/* The counted run (count.c): repetitions per scenario under valgrind. */
#define WCET_COUNT_REPS 3

enum wcet_op {
    WCET_OP_NOOP,
    WCET_OP_ALLOC,
    WCET_OP_ALIGNED,
    WCET_OP_REALLOC,
    WCET_OP_FREE,
};

struct wcet_case;

struct wcet_scenario {
    enum wcet_family family;
    const char *id;    /* "free-merge-both" */
    const char *op;    /* what the timed call is: "free" */
    const char *path;  /* the path it targets, in words */
    const char *bound; /* the header's bound for that path */
    /* Builds the state and sets the operation: 0, or -1 with c->why. The
     * rtmem kinds build once; glibc before each repetition. */
    int (*build)(struct wcet_case *c);
    /* After one run of the operation: the state is what the scenario
     * claims and the operation took that path. 0, or -1 with c->why.
     * Fills c->facts and c->nums. */
    int (*check)(struct wcet_case *c);
    /* glibc: gives back what the build and the operation left. */
    void (*undo)(struct wcet_case *c);
};

/* A named figure of a scenario's state, for the JSON ("tree_depth"). */
struct wcet_num {
    const char *name;
    double v;
};

/* One figure of the counted run: the max and min over its repetitions. */
struct wcet_counts {
    bool have;
    char why[160]; /* not counted though measured: what the counted run's child said */
    uint64_t ir, branches, lines_read, lines_written; /* max over the repetitions, less noop's */
    uint64_t ir_min;                                  /* the same for the smallest */
    unsigned reps;
};

/* The CPU's counters (hw.c): the largest over the repetitions, less the
 * noop row's. */
struct wcet_hw {
    bool have;
    uint64_t instructions, branches;
};

struct wcet_case {
    const struct wcet_scenario *sc; /* NULL: the noop row */
    const char
        *kind;     /* "tlsf", "heapmem", "xnheap", "halffit", "xvheap", "zsheap", "glibc", "noop" */
    int hardening; /* RTM_HEAP_HARDEN_* (rtmem kinds) */

    /* rtmem kinds: the heap image, and its copy taken after the build. */
    unsigned char *image, *saved;
    size_t image_bytes;
    struct rtm_heap *heap;

    /* A plugin's case: the plugin (NULL for the other kinds); its table,
     * set where it runs (wcet_case_open_plugin: the plugin's code runs in
     * children only), and the heap it made. */
    struct tk_plugin *plugin;
    const struct rtm_heap_plugin *plug;
    void *pheap;

    /* The operation: heap and plug NULL mean glibc's malloc family. */
    enum wcet_op op;
    size_t size, align;
    void *ptr;
    void *ret; /* what it returned */
    int rc;

    /* glibc: what the build allocated (undo frees what is not NULL). */
    void *blocks[WCET_MAX_BLOCKS];
    size_t n_blocks;
    /* A heap of several pools (the page heaps' scenarios): how many, and
     * the offset from the heap of the one the scenario works in (0: the
     * first). */
    unsigned pools;
    size_t pool;
    /* What the build arranged, for the check (scenario's own use). */
    uintptr_t expect[10];

    char facts[320]; /* the state found by the check, in words */
    struct wcet_num nums[WCET_MAX_NUMS];
    size_t n_nums;
    char why[256];

    /* Results. */
    bool built;        /* the build and the check passed */
    void *first_ret;   /* every repetition must return the same */
    bool path_changed; /* ... or the case is a failure */
    /* glibc: repetitions whose check found them off the scenario's path
     * (left out of the samples), and the last one's why. */
    unsigned off_path;
    char off_path_why[256];
    struct tk_samples warm, cold; /* timer ticks */
    struct tk_summary warm_s, cold_s;
    struct wcet_counts counts;
    struct wcet_hw hw;
};

struct wcet_opts {
    const char *kinds; /* --kinds: comma list; NULL all */
    unsigned reps;
    uint64_t page_image;                      /* --page-image: bytes */
    int count;                                /* --count: WCET_COUNT_* */
    int harden;                               /* --harden: index into wcet_harden_choices */
    struct tk_rt_opts rt;                     /* --cpu, --prio, --no-rt */
    const char *plugin_paths[TK_MAX_PLUGINS]; /* --plugin, in order */
    size_t n_plugins;
    unsigned timeout_s; /* --timeout: a plugin's case in its child, at most this long */
    const char *json_path;
    bool quick;
};

enum { WCET_COUNT_AUTO, WCET_COUNT_VALGRIND, WCET_COUNT_NONE };

struct wcet {
    struct wcet_opts o;
    const char *prog;
    struct tk_machine mf;
    struct tk_caches caches;
    int cpu;
    const char *kinds[WCET_MAX_KINDS];
    size_t n_kinds;
    struct tk_plugin plugins[WCET_MAX_PLUGINS];
    size_t n_plugins;
    bool child;         /* the counted run's child, under valgrind (count.c) */
    bool glibc_skipped; /* left out of the default kinds: glibc_why */
    char glibc_why[128];

    struct tk_rt_state rt;
    struct tk_timer timer;
    bool timer_ok;
    struct tk_cacheops cops;
    bool cops_ok;

    struct wcet_case cases[WCET_MAX_CASES];
    size_t n_cases;

    /* The counted run. */
    bool counted;            /* the figures are in */
    char count_why[640];     /* not counted: why */
    char valgrind[PATH_MAX]; /* its path */
    char valgrind_ver[64];   /* "valgrind-3.19.0" */
    double count_seconds;
    bool hw_counted;  /* the CPU's counters counted (hw.c) */
    char hw_why[256]; /* not: why */
    int hw_fd[2];     /* instructions (the group's leader), branches; -1 closed */
    size_t failures;  /* scenarios whose build, check or path failed */
};

/* The files call each other one way, from the top down
 * (tests/tools/test_layers.py): cli.c (the options table, wcet_tool),
 * run.c (setup, the run), report.c, then the ways to measure (measure.c,
 * count.c, hw.c), the families of scenarios (tlsf.c, pageheap.c, glibc.c,
 * plugin.c) and scenarios.c, the leaf every other file uses. */

/* scenarios.c: the names the options take. */
extern const char *const wcet_kind_names[];     /* NULL-terminated */
extern const char *const wcet_harden_choices[]; /* "o1", "none", "full" */
extern const int wcet_harden_levels[];          /* RTM_HEAP_HARDEN_* of each */
extern const char *const wcet_count_choices[];
extern const char wcet_no_glibc[]; /* why glibc's scenarios cannot run, if they cannot */

/* The scenarios of each family (tlsf.c, pageheap.c, glibc.c, plugin.c). */
extern const struct wcet_scenario wcet_tlsf_scenarios[];
extern const size_t wcet_tlsf_n;
extern const struct wcet_scenario wcet_halffit_scenarios[];
extern const size_t wcet_halffit_n;
extern const struct wcet_scenario wcet_xvheap_scenarios[];
extern const size_t wcet_xvheap_n;
extern const struct wcet_scenario wcet_zsheap_scenarios[];
extern const size_t wcet_zsheap_n;
extern const struct wcet_scenario wcet_pageheap_scenarios[];
extern const size_t wcet_pageheap_n;
extern const struct wcet_scenario wcet_glibc_scenarios[];
extern const size_t wcet_glibc_n;
extern const struct wcet_scenario wcet_plugin_scenarios[];
extern const size_t wcet_plugin_n;

/* scenarios.c: the timed call, and what every family shares. */
/* The timed call: the operation c holds, once. Not inlined: the counted
 * run (count.c) counts exactly this function. */
void wcet_call(struct wcet_case *c);
/* Sets up c for scenario sc of kind (the image is made by its build):
 * 0, or -1. */
int wcet_case_init(struct wcet_case *c, const struct wcet_scenario *sc, const char *kind,
                   int hardening, size_t page_image_bytes);
void wcet_case_destroy(struct wcet_case *c);
/* Whether c is an rtmem kind's, whose state is a heap image saved after
 * its build and restored before each repetition (glibc and plugins are
 * built again instead). */
bool wcet_restored(const struct wcet_case *c);
/* Whether the repetition just run took the scenario's path: always for the
 * rtmem kinds (their image is restored exactly); for glibc, its check run
 * again (the first run's facts kept; c->off_path_why says why not). */
bool wcet_case_on_path(struct wcet_case *c);
/* Gives back the case's image (made by its build); its results stay. */
void wcet_case_release(struct wcet_case *c);
/* Builds the state (rtmem: once, then saves the image): 0 or -1 (c->why). */
int wcet_case_build(struct wcet_case *c);
/* Before a repetition: restore the image (rtmem) or build again (glibc).
 * 0 or -1 (c->why). */
int wcet_case_prepare(struct wcet_case *c);
/* After a repetition: glibc's undo. */
void wcet_case_finish(struct wcet_case *c);
/* plugin.c: loads a plugin case's plugin into this process (a child's:
 * tk_plugin_open) and sets c->plug; nothing for the other kinds. 0, or -1
 * (c->why). */
int wcet_case_open_plugin(struct wcet_case *c);
/* The failure of a scenario, printf-style, into c->why: returns -1. */
int wcet_fail(struct wcet_case *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * The heap of the page kinds' scenarios (xvheap, zsheap): its creating
 * region and WCET_POOLS - 2 more of WCET_SMALL_POOL bytes, and the
 * scenario's region (the first added: the one its walks find last) of the
 * rest of the image. Requests of filler bytes take every page of the
 * others, one each; the first that lands in the scenario's region is freed
 * again, so that region is untouched. c->expect[7] and [8] hold its
 * bounds. 0, or -1 (c->why).
 */
int wcet_regions_build(struct wcet_case *c, size_t filler);
/* Whether p lies in the scenario's region of wcet_regions_build. */
bool wcet_in_last_region(const struct wcet_case *c, const void *p);
/* rtm_heap_check of c's heap after the operation: 0, or -1 (c->why). */
int wcet_heap_ok(struct wcet_case *c);
/* Appends to c->facts, printf-style. */
void wcet_fact(struct wcet_case *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void wcet_num(struct wcet_case *c, const char *name, double v);

/* measure.c: the timed repetitions of one case, warm and cold. 0, or -1
 * when a repetition failed (c->why). */
int wcet_measure(struct wcet *w, struct wcet_case *c);

/* count.c */
/* Whether this process is the counted run's child (set before setup). */
bool wcet_is_count_child(void);
/* The child's work: every case built, checked and run WCET_COUNT_REPS
 * times after a simulated-cache eviction; a line per call on stdout.
 * Returns the exit status. */
int wcet_count_child(struct wcet *w);
/* The parent's: runs the child under valgrind and reads its figures into
 * the cases. 0, or -1 with w->count_why (not an error of the run: the
 * report says why nothing was counted). */
int wcet_count(struct wcet *w);

/* hw.c: the CPU's instruction and branch counters around each scenario's
 * call, where perf_event_open offers them. start opens them (0, or -1 with
 * w->hw_why); count runs a built case (noop first); finish subtracts the
 * noop row's figures and closes them. */
int wcet_hw_start(struct wcet *w);
void wcet_hw_count(struct wcet *w, struct wcet_case *c);
void wcet_hw_finish(struct wcet *w);

/* run.c */
struct tk_session;
enum tk_run_end;
int wcet_setup(struct tk_session *s);
enum tk_run_end wcet_run(struct tk_session *s);
void wcet_teardown(struct tk_session *s);

/* report.c */
void wcet_print_header(FILE *f, const struct wcet *w);
void wcet_report(const struct tk_session *s, FILE *f);
void wcet_json(const struct tk_session *s, struct tk_json *j);
struct tk_facts;
void wcet_facts(const struct tk_session *s, struct tk_facts *out);

#endif /* RTMEM_TOOLS_WCET_H */
