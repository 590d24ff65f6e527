/*
 * Bench kit: memory pressure and the other loads of `stress`, in worker
 * processes that never outlive the run.
 *
 * A load is a spec (struct tk_pressure_spec) of workers, each a process:
 *
 *   vm    repeatedly allocates `bytes`, writes one byte every `stride`
 *         bytes (the first of each stride), optionally holds the memory for
 *         `hang` (sleeping), and frees it; with `keep` it allocates once and
 *         writes the same bytes again, pass after pass. Allocation is by
 *         malloc, as stress does (glibc serves large blocks from fresh
 *         mappings, but after the first free raises its mmap threshold to
 *         the freed size, up to 32 MiB, 16 MiB on 32-bit systems: smaller
 *         blocks are then served again from the heap, their pages already
 *         present), or by
 *         mmap/munmap (`alloc mmap`: every round faults in fresh pages);
 *   spin  computes in a loop (stress -c);
 *   sync  calls sync() in a loop (stress -i);
 *   hdd   writes `hdd_bytes` to a file in `dir`, then truncates it and
 *         starts again (stress -d; the file is unlinked as soon as it is
 *         made, so it vanishes with the run, however the run ends).
 *
 * Safety, the reason this is a module and not a loop in each tool:
 *   - the workers form one process group of their own, registered with the
 *     kit's cleanup (cleanup.h): a fatal signal to the tool kills the group
 *     and reaps every worker;
 *   - each worker dies with the tool (PR_SET_PDEATHSIG, SIGKILL), so even a
 *     SIGKILL of the tool leaves none running;
 *   - each worker ends on its own at a deadline (tk_pressure_start's
 *     bound), and as soon as the tool stops renewing its lease (a tool
 *     that is stopped, Ctrl-Z, or hung leaves no load running for more
 *     than TK_PRESSURE_LEASE_NS);
 *   - tk_pressure_stop kills the group and reaps every worker; the disk
 *     writers' files are unlinked before any byte is written;
 *   - tk_pressure_check refuses, unless forced, memory above half of
 *     MemAvailable (or of what the cgroup's memory.max leaves) and disk
 *     writes above half of the free space (on a tmpfs, of the memory).
 *
 * Workers run under SCHED_OTHER whatever their parent runs, pinned to the
 * spec's CPUs when given, named rtmem-vm, rtmem-spin, rtmem-sync and
 * rtmem-hdd, first in line for the OOM killer (oom_score_adj 1000), with
 * nothing of the tool's open and standard input and output on /dev/null. They count what they do in memory shared with
 * the parent (struct tk_pressure_worker), so the load actually produced is
 * reported beside the figures it disturbed.
 *
 * Fork from a single-threaded process (tk_pressure_start before starting
 * threads): the workers allocate after the fork.
 */
#ifndef RTMEM_TOOLS_PRESSURE_H
#define RTMEM_TOOLS_PRESSURE_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "common/args.h"
#include "common/out.h"

/* Bounds of a spec. */
#define TK_PRESSURE_MAX_WORKERS 256u
#define TK_PRESSURE_MAX_BYTES   ((uint64_t)1 << 40)
/* What a run may take without force, as a share of MemAvailable and of the
 * free space of dir: 1 / TK_PRESSURE_SHARE_DIV. */
#define TK_PRESSURE_SHARE_DIV   2u

enum tk_pressure_alloc { TK_PRESSURE_MALLOC, TK_PRESSURE_MMAP };

enum tk_pressure_kind { TK_PW_VM, TK_PW_SPIN, TK_PW_SYNC, TK_PW_HDD, TK_PW_KINDS };

struct tk_pressure_spec {
    unsigned vm;      /* memory workers */
    uint64_t bytes;   /* each allocates this much */
    uint64_t stride;  /* and writes one byte every stride bytes */
    uint64_t hang_ns; /* holds it this long before freeing; 0: no hold */
    bool keep;        /* allocates once, writes it again and again */
    int alloc;        /* enum tk_pressure_alloc */
    unsigned spin;    /* CPU spinners */
    unsigned sync;    /* sync() callers */
    unsigned hdd;     /* disk writers */
    uint64_t hdd_bytes;
    const char *dir; /* where the disk writers write */
    bool cpus_given; /* else the workers run where the tool may */
    cpu_set_t cpus;
};

/* An initializer of the defaults, for a tool's constant defaults. */
#define TK_PRESSURE_SPEC_DEFAULTS     \
    { .vm = 2,                        \
      .bytes = (uint64_t)128 << 20,   \
      .stride = 4096,                 \
      .alloc = TK_PRESSURE_MALLOC,    \
      .hdd_bytes = (uint64_t)1 << 30, \
      .dir = "." }

/* The defaults: 2 vm workers of 128M at stride 4096 (the load of the study
 * rtmem reproduces), malloc, nothing else; hdd_bytes 1G in ".". */
void tk_pressure_defaults(struct tk_pressure_spec *s);
/* An empty spec with the same per-worker values (no worker of any kind). */
void tk_pressure_empty(struct tk_pressure_spec *s);

/* Workers of the spec, all kinds. */
unsigned tk_pressure_workers(const struct tk_pressure_spec *s);

/*
 * "vm=2,bytes=128M,stride=4096,hang=1s,keep,alloc=mmap,spin=4,sync=1,
 * hdd=1,hdd-bytes=256M,dir=/var/tmp" into *s (which holds its defaults),
 * for option opt (named in messages). Returns 0, or -1 (reported).
 */
int tk_pressure_parse(const struct tk_args *cli, const char *opt, const char *text,
                      struct tk_pressure_spec *s);

/* "0-3,6": CPUs this process may run on, into *set. Returns 0, or -1
 * (reported). */
int tk_pressure_parse_cpus(const struct tk_args *cli, const char *opt, const char *text,
                           cpu_set_t *set);

/* The combination checks: at least one worker, stride <= bytes, the total
 * bounded, dir a directory; then, unless force, the memory and disk
 * shares above. Returns 0, or -1 (reported as bad usage, naming the
 * figures and force_opt, the option that forces). */
int tk_pressure_check(const struct tk_args *cli, const struct tk_pressure_spec *s, bool force,
                      const char *force_opt);

/* MemAvailable of /proc/meminfo in bytes, or what this process's cgroup
 * (v2 memory.max less memory.current) still allows if less; 0 if unknown. */
uint64_t tk_pressure_mem_available(void);

/* One worker's counters, in memory shared with the parent. */
struct tk_pressure_worker {
    _Alignas(64) _Atomic uint64_t ops; /* vm: rounds (keep: passes); spin: 2^20 loops;
                                        * sync: calls; hdd: files filled */
    _Atomic uint64_t bytes;            /* vm: bytes written (one per stride); hdd: written */
    _Atomic uint64_t swept;            /* vm: the range the strides covered */
    _Atomic uint64_t read;             /* vm: bytes read back (one per stride) */
    _Atomic uint64_t minflt, majflt;   /* the worker's page faults so far */
    _Atomic uint64_t ended_ns;         /* when it ended by itself (CLOCK_MONOTONIC), or 0 */
    _Atomic int state;                 /* TK_PW_STARTING, ... */
    _Atomic int err;                   /* errno of a failure */
    int kind;                          /* enum tk_pressure_kind */
    pid_t pid;
};

enum {
    TK_PW_STARTING, /* forked, setting up */
    TK_PW_RUNNING,
    TK_PW_FAILED,   /* ended on an error (err) */
    TK_PW_DONE,     /* ended at its deadline, as asked */
    TK_PW_ORPHANED, /* ended because the tool stopped renewing its lease */
    TK_PW_CORRUPT,  /* vm: read back a byte other than the one it wrote */
};

/* The memory the tool and its workers share: the tool renews its lease at
 * least every second (tk_pressure_beat); a worker that finds it older than
 * TK_PRESSURE_LEASE_NS ends (the tool is stopped, hung or gone). */
#define TK_PRESSURE_LEASE_NS ((uint64_t)3000000000)
struct tk_pressure_shared {
    _Alignas(64) _Atomic uint64_t lease_ns;
    struct tk_pressure_worker w[];
};

/* How a worker ended, for one that ended before tk_pressure_stop. */
struct tk_pressure_end {
    size_t worker;
    int status;  /* of waitpid */
    double at_s; /* after the start */
};

#define TK_PRESSURE_MAX_ENDS 8

struct tk_pressure {
    struct tk_pressure_spec spec;
    size_t n;                      /* workers started */
    struct tk_pressure_shared *sh; /* the lease and n records */
    size_t sh_bytes;
    int *fds; /* per worker: a disk writer's file, else -1 */
    size_t n_fds;
    pid_t pgid;
    int slot; /* the group's cleanup registration, -1 none */
    bool *reaped;
    uint64_t start_ns, stop_ns; /* stop_ns 0 until stopped */
    /* Workers that ended before the stop: how many, the first few. */
    size_t n_ended;
    struct tk_pressure_end ended[TK_PRESSURE_MAX_ENDS];
};

/*
 * Starts the spec's workers; each ends on its own bound_ns after the start
 * at the latest. Returns 0, or -errno with the cause in why (the workers
 * already started are stopped). O(workers).
 */
int tk_pressure_start(struct tk_pressure *p, const struct tk_pressure_spec *s, uint64_t bound_ns,
                      char *why, size_t why_len);

/* Renews the lease (above): at least once a second while the load runs. */
void tk_pressure_beat(struct tk_pressure *p);

/* Waits, at most timeout_ns, until every worker runs (its setup done).
 * Returns true if all do (false at once if one ended). */
bool tk_pressure_wait_running(struct tk_pressure *p, uint64_t timeout_ns);

/* Reaps the workers that ended (without waiting): ended and n_ended.
 * Returns the number that ended so far. */
size_t tk_pressure_poll(struct tk_pressure *p);

/* Kills the group and reaps every worker; closes the files. The counters
 * stay readable (tk_pressure_totals) until tk_pressure_release. Idempotent. */
void tk_pressure_stop(struct tk_pressure *p);
/* Stops (if not yet) and frees what start took. Idempotent. */
void tk_pressure_release(struct tk_pressure *p);

/* What the workers did, summed per kind. */
struct tk_pressure_totals {
    uint64_t ops[TK_PW_KINDS], bytes[TK_PW_KINDS];
    uint64_t swept;          /* of the vm workers: the range their strides covered */
    uint64_t read;           /* of the vm workers: bytes read back */
    uint64_t minflt, majflt; /* of the vm workers */
    double seconds;          /* since the start */
};
void tk_pressure_totals(const struct tk_pressure *p, struct tk_pressure_totals *t);

/* "2 vm workers: 128M each, a byte every 4096 B, malloc'd and freed
 * (plain); ..." on f, each kind on its own line after indent. */
void tk_pressure_print_spec(FILE *f, const char *indent, const struct tk_pressure_spec *s);
/* The rates of t (per second) as one line after indent. */
void tk_pressure_print_rates(FILE *f, const char *indent, const struct tk_pressure_spec *s,
                             const struct tk_pressure_totals *t);
/* "worker 3 (vm) died of SIGKILL after 2.1 s: the OOM killer?" for each of
 * p's ended workers. */
void tk_pressure_print_ended(FILE *f, const char *indent, const struct tk_pressure *p);

/* The spec as a JSON object value; without shape, no bytes, stride, mode
 * or keep (a sweep's base load, whose runs each have their own). */
void tk_pressure_spec_json(struct tk_json *j, const struct tk_pressure_spec *s, bool shape);
/* The totals as a JSON object value, with the workers that ended early
 * (p may be NULL: none recorded). */
void tk_pressure_totals_json(struct tk_json *j, const struct tk_pressure_totals *t,
                             const struct tk_pressure *p);

/* The kernel's transparent huge page mode ("always", "madvise", "never")
 * into buf, "unknown" if unreadable: under "always" a stride of 4096 may
 * touch one 2 MiB page many times. Returns buf. */
const char *tk_pressure_thp(char *buf, size_t size);

#endif /* RTMEM_TOOLS_PRESSURE_H */
