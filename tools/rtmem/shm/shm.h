/*
 * `rtmem shm`: shared-memory mechanisms compared on the same workloads
 * (phase.h): create and first touch, random one-byte writes, full
 * zeroings, msync, teardown; each timed, with the page faults the writing
 * thread took and the page sizes the kernel really used.
 *
 * A mechanism (mech.c) is one way of getting a region two processes can
 * share: a file on a disk (--dir) or on tmpfs, a POSIX shm object, a SysV
 * segment, a memfd, shared anonymous memory (/dev/zero mapped shared), and
 * their huge-page forms; plus two private references (anon-private,
 * anon-thp) that tell page-size and sharing effects apart. Every region is
 * an rtm_arena (include/rtmem/arena.h): no mapping code of its own here.
 * A mechanism that cannot be had here (no huge pages reserved, no 1 GiB
 * pages, no tmpfs) is a skipped row that says why and what would enable
 * it.
 *
 * A row (struct shm_row) is one mechanism at one size. Its name is a
 * string, so that a row can come from elsewhere with the same phases: the
 * Java runner (java.h) adds "java:disk" and "java:tmpfs".
 *
 * With --processes 2 (reader.c) a second process attaches the region after
 * the writes (by name where the mechanism has one, else the mapping it
 * inherits through fork), touches every page (its own first-touch cost and
 * faults) and checks that it reads what the writer wrote.
 *
 * With --duration (duration.c) the writes go on for that long and each
 * second's rate and faults are printed: a disk file's writeback shows.
 *
 * Everything the run creates (files, shm names) is registered with the
 * kit's cleanup before it exists, so that Ctrl-C and SIGTERM remove it;
 * SysV segments are created IPC_PRIVATE and removed from the namespace at
 * once (the arena does it), so that none outlives the run whatever ends it.
 *
 * The files call each other one way, from the top down
 * (tests/tools/test_layers.py): cli.c (the options table, shm_tool), run.c
 * (setup, the rows), report.c, the phases and modes (duration.c,
 * java_rows.c, reader.c, workload.c), then the leaves: mech.c (the
 * mechanisms) and rows.c (the table of rows).
 */
#ifndef RTMEM_TOOLS_SHM_H
#define RTMEM_TOOLS_SHM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/describe.h"
#include "common/opt.h"
#include "common/out.h"
#include "common/rt.h"
#include "common/samples.h"
#include "common/smaps.h"
#include "common/timer.h"
#include "phase.h"
#include "rtmem/arena.h"

#define SHM_SCHEMA "rtmem-shm/2"

#define KIB       ((uint64_t)1 << 10)
#define MIB       ((uint64_t)1 << 20)
#define GIB       ((uint64_t)1 << 30)
#define NS_PER_MS 1000000u
#define NS_PER_S  1000000000u

/* Region sizes: multiples of 4 KiB up to 4 GiB (the generator's index is
 * ((z >> 32) * bytes) >> 32: exact up to 2^32 bytes). */
#define SHM_SIZE_GRAIN    (4 * KIB)
#define SHM_MAX_BYTES     (4 * GIB)
/* A region may take at most MemAvailable / SHM_MEM_SHARE, and a file at
 * most the free space of its filesystem / SHM_MEM_SHARE, unless --force. */
#define SHM_MEM_SHARE     2
/* --dir: room for the names made in it (rtmem-shm-PID-RANDOM). */
#define SHM_MAX_DIR_BYTES 400

/* The mechanisms, in the order of the report. */
enum shm_mech_id {
    MECH_FILE_DISK,
    MECH_FILE_TMPFS,
    MECH_POSIX,
    MECH_SYSV,
    MECH_MEMFD,
    MECH_ANON_SHARED,
    MECH_MEMFD_THP,
    MECH_ANON_HUGE2M,
    MECH_ANON_HUGE1G,
    MECH_MEMFD_HUGE2M,
    MECH_MEMFD_HUGE1G,
    MECH_SYSV_HUGE2M,
    MECH_ANON_PRIVATE,
    MECH_ANON_THP,
    SHM_MECHS
};

struct shm_mech {
    const char *name;  /* CLI value and JSON key: "file-disk" */
    const char *what;  /* for the report: "file mmap in --dir (a disk)" */
    int source;        /* RTM_ARENA_* */
    size_t page_bytes; /* 0, RTM_ARENA_PAGE_2M, _1G */
    int thp;           /* RTM_ARENA_THP_* */
    bool shared;       /* another process can map the same pages */
    bool file;         /* msync has something to write (a file) */
    bool in_default;   /* run without --mechanisms */
};

extern const struct shm_mech shm_mechs[SHM_MECHS];

/* What the second process (--processes 2) found. */
struct shm_reader {
    bool done;       /* it ran and reported */
    bool by_name;    /* it opened the object by name, not the inherited mapping */
    bool matched;    /* it read exactly what the writer wrote */
    uint64_t pages;  /* pages it touched */
    double touch_ns; /* its first touch of every page */
    uint64_t minor_faults, major_faults;
    uint64_t checksum;                      /* of what it read */
    char why[RTM_ARENA_MESSAGE_BYTES + 96]; /* why it did not run, or how it ended badly */
};

/* The page sizes the kernel used, from smaps after the first touch. */
struct shm_pages {
    bool read; /* smaps had the entry */
    struct tk_smaps_entry smaps;
};

/* One mechanism at one size. */
struct shm_row {
    char mech[32]; /* shm_mechs[].name, or "java:disk" ("java:disk:loop": a fill not longs) */
    char zero_method[16]; /* Java rows: the zeroings' fill (java.h); "" for C rows */
    uint64_t bytes;       /* as asked */
    bool skipped;         /* not measured: why says so */
    bool failed;          /* measured, and a check failed (why) */
    char why[RTM_ARENA_MESSAGE_BYTES + 256];
    char note[RTM_ARENA_MESSAGE_BYTES]; /* what the arena did not obtain ("THP asked...") */
    struct shm_phase phase[SHM_PHASES];
    uint64_t mapped_bytes; /* arena size_bytes (rounded to its pages) */
    uint64_t page_bytes;   /* arena page size asked */
    struct shm_pages pages;
    /* The writes phase's ns is the loop's whole time, the generator
     * included (what the published comparison timed). The store's own
     * cost, the net (shm_net_per_write), is a write less a draw of the
     * generator alone, known to within shm_net_precision (NAN: not
     * known): how much the generator's runs and the writes' slices vary. */
    double rng_ns_per_write;   /* the generator alone, per draw (C rows: median run) */
    double rng_spread_ns;      /* its runs' spread, per draw (shm_rng_cost; Java: java.h) */
    double slice_ns_per_write; /* the writes' median slice, per write (NAN: < 4 slices) */
    double writes_spread_ns;   /* the writes' slices' interquartile range, per write */
    bool writes_capped;        /* the budget stopped the writes before --writes */
    uint64_t checksum;         /* of the region after the writes */
    struct shm_reader reader;
};

/* One second of --duration. */
struct shm_tick {
    double t_s;    /* end of the second, from the start of the writes */
    double span_s; /* its length (a second and at most one slice) */
    uint64_t writes;
    uint64_t minor_faults, major_faults;
    uint64_t dirty_kb, writeback_kb; /* /proc/meminfo at the end of the second */
};

#define SHM_MAX_TICKS 3600u

struct shm_duration {
    char mech[32];
    uint64_t bytes;
    bool skipped;
    char why[RTM_ARENA_MESSAGE_BYTES + 128];
    size_t n;
    struct shm_tick *ticks; /* SHM_MAX_TICKS */
};

/* --generator: phase.h's splitmix64 with a multiply-shift index, or the
 * published comparison's rand() % bytes. */
enum { SHM_GEN_SPLITMIX, SHM_GEN_RAND };
extern const char *const shm_generator_choices[];

struct shm_opts {
    unsigned mechs;        /* bit per enum shm_mech_id; 0: the default set */
    struct tk_sizes sizes; /* n 0: the default sizes */
    uint64_t writes;
    uint64_t zeroings;  /* 0: as many as fit in budget_ns, at least SHM_MIN_ZEROINGS */
    uint64_t budget_ns; /* per phase, for default writes and zeroings */
    const char *dir;
    unsigned processes;
    uint64_t duration_ns;
    int cpu;   /* --cpu: -1, the highest-numbered allowed */
    bool fifo; /* --fifo: SCHED_FIFO at --prio, else SCHED_OTHER */
    int priority;
    uint64_t seed;
    int generator;
    bool force;
    bool java; /* --java: java:disk and java:tmpfs rows (java.h) */
    /* --java-zero: bit per fill of SHM_JAVA_ZERO_METHODS (java.h), each
     * its own pair of rows; 0: the default, longs alone. */
    unsigned java_zero;
    const char *json_path;
    bool quick;
};

#define SHM_MIN_ZEROINGS 3u
/* Per size: java:disk and java:tmpfs for each of the Java fills. */
#define SHM_EXTRA_ROWS   (2u * 5u)

struct shm {
    struct shm_opts o;
    const char *prog;
    struct tk_machine mf;
    unsigned mechs;        /* selected */
    struct tk_sizes sizes; /* measured, ascending */
    bool writes_given, zeroings_given;
    uint64_t mem_available;
    char thp_mode[32], shmem_thp_mode[32];
    char dir_fs[32]; /* "ext4", "tmpfs", ... of --dir */
    uint64_t dirty_writeback_cs, dirty_expire_cs;

    struct tk_rt_state rt;
    struct tk_timer timer;
    bool timer_ok;
    /* The generator alone, timed SHM_RNG_TRIALS times before the rows
     * (shm_rng_cost): the median run per draw, and the runs' spread. */
    double rng_ns_per_write;
    double rng_spread_ns;
    uint64_t rng_draws; /* per run */
    /* The ticks of each whole slice of a row's writes (workload.c), for
     * their spread: allocated once (shm_setup), reset per row. */
    struct tk_samples slices; /* SHM_MAX_SLICES: the spread of the first ones */
    bool java_ok;             /* --java and a JDK found (java_why: why not) */
    char java_why[512];
    char java_runtime[128]; /* the JVM that measured the java rows */

    /* In the order measured: room for every selected mechanism and
     * SHM_EXTRA_ROWS more per size (java:disk, java:tmpfs: java.h), so
     * that rows from elsewhere join the same table and JSON. */
    struct shm_row *rows;
    size_t n_rows, rows_capacity;
    struct shm_duration *durs;
    size_t n_durs;
};

/* rows.c: the next free row, zeroed, for a row made elsewhere (the Java
 * runner's: name it "java:disk", fill its phases); NULL when the table is
 * full (SHM_EXTRA_ROWS per size beyond the mechanisms). */
struct shm_row *shm_row_add(struct shm *sh);

/* java_rows.c: with --java, the rows java:disk and java:tmpfs at size
 * bytes, measured in a JVM (java.h), or skipped with sh->java_why. */
void shm_java_rows(struct shm *sh, uint64_t bytes, uint64_t start_ns);
/* rows.c: a row's line as the run goes (start_ns: the run's start). */
void shm_print_progress(const struct shm_row *row, uint64_t start_ns);

/* mech.c: a mechanism's region. */
struct shm_region {
    struct rtm_arena a;
    bool open;
    char name[RTM_ARENA_NAME_BYTES + 256]; /* the file path or "/shm" name created, "" */
    int cleanup_slot;                      /* tk_cleanup_* slot, -1 */
    bool cleanup_file;                     /* the slot is a file's (else a shm name's) */
};
/* Mechanism m by name; -1 if none. */
int shm_mech_find(const char *name);
/* Opens a region of m of bytes into *r, no prefault; registered for the
 * cleanup before it exists. 0, or a negative errno with why (the arena's
 * message and, for huge pages, what would enable them). */
int shm_region_open(const struct shm *sh, enum shm_mech_id m, uint64_t bytes, struct shm_region *r,
                    char *why, size_t why_size);
/* Closes it and forgets its cleanup entry. Returns rtm_arena_close's. */
int shm_region_close(struct shm_region *r);

/* workload.c: the phases, each on an open region. */
void shm_faults(uint64_t *minor, uint64_t *major);
/* The generator alone (the loop of the writes without the store),
 * SHM_RNG_TRIALS runs of as many draws as the writes asked (at least
 * 2^20, at most 2^24): sets sh->rng_ns_per_write (the median run, per
 * draw), rng_spread_ns (the 4th fastest run less the 2nd: the
 * interquartile range of five, which one run slowed by the machine does
 * not widen) and rng_draws. */
#define SHM_RNG_TRIALS 5
/* Slices of writes whose times are kept, per row. */
#define SHM_MAX_SLICES 4096
void shm_rng_cost(struct shm *sh);
/* The store's own cost per write: the writes' median slice per write (the
 * whole time per write where there are fewer than 4 slices: the Java
 * rows) less the generator's rng_ns_per_write; NAN when the row has no
 * writes. It is not clamped: within shm_net_precision of 0 it is not
 * resolved, and below minus it the generator alone costs more than in the
 * writes' loop (the CPU overlaps a store with the next draw): no
 * measurement of the store (shm_net_inconsistent). */
double shm_net_per_write(const struct shm_row *row);
bool shm_net_inconsistent(const struct shm_row *row);
/* How precise that is, per write: rng_spread_ns + writes_spread_ns (NAN
 * when either is not known: fewer than 4 slices of writes, or the Java
 * rows', timed in one loop). */
double shm_net_precision(const struct shm_row *row);
void shm_touch(struct shm *sh, struct shm_row *row, struct shm_region *r, uint64_t t_open_ns,
               uint64_t minor0, uint64_t major0);
void shm_writes(struct shm *sh, struct shm_row *row, struct shm_region *r);
void shm_zeroings(struct shm *sh, struct shm_row *row, struct shm_region *r);
void shm_sync(struct shm *sh, struct shm_row *row, struct shm_region *r);
uint64_t shm_checksum(const void *p, uint64_t bytes);
/* The generator's state for a phase: *state from the seed (and srand's). */
void shm_seed(const struct shm *sh, uint64_t *state);
/* count random writes of generator gen (SHM_GEN_*) at *state into
 * p[0, bytes). */
void shm_write_loop(int gen, volatile uint8_t *p, uint64_t bytes, uint64_t count, uint64_t *state);

/* reader.c: --processes 2. */
void shm_read_in_child(struct shm *sh, struct shm_row *row, struct shm_region *r,
                       enum shm_mech_id m);

/* duration.c: --duration. */
void shm_duration_run(struct shm *sh, enum shm_mech_id m, uint64_t bytes, struct shm_duration *d);

/* run.c */
struct tk_session;
enum tk_run_end;
int shm_setup(struct tk_session *s);
enum tk_run_end shm_run(struct tk_session *s);
void shm_teardown(struct tk_session *s);

/* report.c */
void shm_print_header(FILE *f, const struct shm *sh);
void shm_print_row(FILE *f, const struct shm *sh, const struct shm_row *row);
void shm_report(const struct tk_session *s, FILE *f);
void shm_json(const struct tk_session *s, struct tk_json *j);
struct tk_facts;
void shm_facts(const struct tk_session *s, struct tk_facts *out);

#endif /* RTMEM_TOOLS_SHM_H */
