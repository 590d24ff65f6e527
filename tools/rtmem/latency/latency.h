/*
 * `rtmem latency`: how late a periodic real-time thread wakes up, and, with
 * --noise, how long the machine itself stops a thread that never sleeps.
 *
 * One measuring thread, created for each run (measure.c), takes the real-time
 * setup (rt.h: pinned, SCHED_FIFO, memory locked), prefaults its stack and
 * then measures in one of two loops:
 *
 *   probe.c  sleeps to absolute deadlines (clock_nanosleep, TIMER_ABSTIME,
 *            CLOCK_MONOTONIC) one period apart and records how late each
 *            wake-up is; a wake-up past whole periods counts them as
 *            overruns and sleeps to the next deadline still ahead;
 *   noise.c  reads CLOCK_MONOTONIC back to back and records every gap
 *            between two readings above a threshold.
 *
 * The measuring thread writes a record per second of the run; the main
 * thread, which never runs real-time, prints each as it is published
 * (lat_second.published), so that no write to the terminal happens in the
 * measuring thread. SIGINT and SIGTERM during the run only ask the loop to
 * stop: the run then ends as a complete one, with what it measured.
 *
 * Everything the loops write is allocated and touched before they start
 * (the sample store, the per-second records), so a loop takes no page
 * fault of its own making; the faults the thread takes anyway are counted
 * (getrusage(RUSAGE_THREAD)) and reported.
 *
 * The files call each other one way, from the top down
 * (tests/tools/test_layers.py): cli.c, run.c, report.c (the report and JSON
 * of the mode that ran), sweep.c, measure.c (one measured run), noise.c,
 * probe.c (its loop, and the per-second records both loops publish), then
 * the leaves header.c (what every mode prints around its lines) and cpu.c.
 */
#ifndef RTMEM_TOOLS_LATENCY_H
#define RTMEM_TOOLS_LATENCY_H

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "common/args.h"
#include "common/describe.h"
#include "common/opt.h"
#include "common/out.h"
#include "common/pressure.h"
#include "common/rt.h"
#include "common/samples.h"
#include "common/timer.h"

#define LAT_SCHEMA "rtmem-latency/1"

#define NS_PER_US 1000u
#define NS_PER_MS 1000000u
#define NS_PER_S  1000000000u

/* Ranges of the options (cli.c). */
#define LAT_MIN_PERIOD_NS   (10u * NS_PER_US)
#define LAT_MAX_PERIOD_NS   ((uint64_t)NS_PER_S)
#define LAT_MIN_DURATION_NS (100u * NS_PER_MS)
#define LAT_MAX_DURATION_NS ((uint64_t)86400 * NS_PER_S)
#define LAT_MIN_NOISE_NS    ((uint64_t)NS_PER_US)
#define LAT_MAX_NOISE_NS    ((uint64_t)NS_PER_MS) /* a stall (LAT_STALL_NS) is always a gap */
/* Every wake-up's latency is kept, in locked memory, for exact
 * percentiles: 8 bytes each, 128 MiB at this bound. */
#define LAT_MAX_WAKEUPS     ((uint64_t)1 << 24)
/* --threshold values at most. */
#define LAT_MAX_THRESHOLDS  16

/* A gap of the noise loop this long or longer is a stall of the machine:
 * no interrupt handler or kernel thread of a sane machine takes it. */
#define LAT_STALL_NS ((uint64_t)NS_PER_MS)

/* The test hook (docs/latency.md): RTMEM_LATENCY_TEST_STALL=K makes the
 * loop oversleep past K deadlines after each of these wake-ups. */
#define LAT_TEST_STALL_ENV   "RTMEM_LATENCY_TEST_STALL"
#define LAT_TEST_STALL_EVERY 100u
#define LAT_TEST_STALLS      3u
#define LAT_TEST_STALL_MAX   1000u

/* The kernel's limit on how long the CPUs may take to leave an idle state
 * (PM QoS), in us. cyclictest writes 0 to it for its run by default, which
 * keeps the CPUs out of deep idle states; so does rtmem latency, unless
 * --default-system. LAT_DMA_FILE_ENV names another file (a test hook). */
#define LAT_DMA_FILE     "/dev/cpu_dma_latency"
#define LAT_DMA_FILE_ENV "RTMEM_LATENCY_DMA_FILE"

struct lat_dma {
    const char *path;
    int fd;    /* open while held, -1 otherwise */
    bool hold; /* asked to hold it at 0 (no --default-system) */
    bool held; /* 0 written and read back in force */
    int err;   /* errno of the open or write that failed, 0 if none */
    bool machine_known, in_force_known;
    int32_t machine_us;  /* before the run: the machine's own setting */
    int32_t in_force_us; /* read back once 0 was written */
};

struct lat_thresholds {
    uint64_t ns[LAT_MAX_THRESHOLDS]; /* ascending, no repeats */
    size_t n;
    bool given; /* set by the first --threshold: it replaces the defaults */
};

/* --pressure SPEC: the load beside the run (common/pressure.h). */
struct lat_load {
    bool given;
    struct tk_pressure_spec spec;
};

/* --pressure-cpus LIST. */
struct lat_cpus {
    bool given;
    cpu_set_t set;
};

/* --modes: the vm workers' modes of a sweep. */
enum { LAT_MODE_PLAIN, LAT_MODE_KEEP, LAT_MODE_HANG, LAT_MODES };
struct lat_modes {
    bool on[LAT_MODES];
    bool given;
};

struct lat_opts {
    uint64_t period_ns;
    uint64_t duration_ns;
    struct tk_rt_opts rt; /* --cpu, --prio, --no-rt */
    struct lat_thresholds thresholds;
    bool noise;
    uint64_t noise_threshold_ns;
    const char *json_path;
    bool quick;
    struct lat_load pressure;
    struct lat_cpus pressure_cpus;
    bool force;
    bool default_system; /* leave /dev/cpu_dma_latency alone */
    bool sweep;
    struct tk_sizes sizes, strides; /* --sweep's */
    struct lat_modes modes;
};

/* One run of a sweep: its load, and what it measured. */
struct lat_sweep_run {
    bool idle; /* the baseline: no load */
    int mode;  /* LAT_MODE_* */
    uint64_t bytes, stride;
    char skipped[160]; /* why it did not run; "" if it ran */
    struct tk_summary summary;
    uint64_t deadlines, overruns;
    uint64_t minflt, majflt; /* the measuring thread's */
    long steal_ms;
    bool stopped;
    struct tk_pressure_totals load;
    size_t ended; /* workers that ended early */
    char ended_how[160];
};

/* One second of a latency run: the wake-ups whose deadline fell in it. */
struct probe_second {
    uint64_t samples;
    uint64_t min_ns, max_ns, sum_ns; /* min and max meaningless without samples */
    uint64_t overruns;               /* deadlines missed by this second's wake-ups */
    uint64_t overruns_total;         /* so far, this second's included */
    uint64_t best_ns, worst_ns;      /* lowest and highest latency so far */
};

/* One second of a noise run. */
struct noise_second {
    uint64_t spun_ns;    /* time measured (spinning) in this second */
    uint64_t gaps;       /* gaps above the threshold */
    uint64_t noise_ns;   /* their total */
    uint64_t max_gap_ns; /* the longest, 0 if none */
    uint64_t gaps_total; /* so far */
    uint64_t worst_ns;   /* longest gap so far */
};

/* One second of a run, as its mode records it. */
struct lat_second {
    union {
        struct probe_second probe;
        struct noise_second noise;
    };
};

/* What the noise loop found over the run. */
struct noise_result {
    uint64_t spun_ns;   /* time measured: the run minus the rests */
    uint64_t rested_ns; /* rests that keep real-time throttling off */
    uint64_t reads;     /* clock readings */
    uint64_t gaps, noise_ns, max_gap_ns;
    uint64_t stalls; /* gaps of LAT_STALL_NS or more */
    /* involuntary context switches of the spinning thread: another task
     * took its CPU (a higher priority, RT throttling), which a stall of
     * the machine under the kernel (a VM exit, an SMI) never shows as */
    uint64_t preempted;
    struct tk_hist hist;
};

struct lat {
    struct lat_opts o;
    const char *prog;
    struct tk_machine mf;
    struct tk_timer clock;  /* CLOCK_MONOTONIC: its cost and grain */
    unsigned stall_periods; /* the test hook's K, 0 when off */

    /* Set up by the measuring thread before it measures: the real-time
     * setup in force then (tk_rt_undo gives it back after the loop, on a
     * copy), the timer slack it runs with. */
    struct tk_rt_state rt;
    long timer_slack_ns;
    bool cpu_isolated_known, cpu_isolated;
    bool virtual_machine; /* /proc/cpuinfo has the hypervisor flag */
    struct lat_dma dma;   /* held by lat_run around every mode's runs */
    size_t rt_neighbours; /* other real-time tasks that may run on the CPU */
    char rt_neighbour[96];

    /* Results. */
    struct tk_samples samples; /* latency: every wake-up's latency in ns */
    struct tk_hist hist;
    uint64_t deadlines; /* of the run: duration / period */
    uint64_t overruns;
    uint64_t early; /* wake-ups read before their deadline (recorded as 0) */
    struct noise_result noise;
    uint64_t measured_ns; /* from the loop's start to its end */
    uint64_t minflt, majflt;
    long steal_ms; /* steal time of the CPU over the loop, -1 unknown */
    int loop_err;  /* errno of a failed clock call, which ended the loop */
    bool stopped;  /* the loop ended early, on SIGINT or SIGTERM */
    int stop_signal;

    /* Per-second records, written by the measuring thread, published one
     * by one (release), printed by the main thread (acquire). */
    size_t n_seconds_cap;
    struct lat_second *seconds;
    atomic_size_t published;

    /* The measuring thread and the main thread. */
    pthread_t thread;
    sem_t ready, go, tick;
    atomic_bool done;

    /* The load beside the run (--pressure, or each run of --sweep). */
    struct tk_pressure_spec load;
    bool load_on; /* workers started for the run in progress or just ended */
    struct tk_pressure pressure;
    struct tk_pressure_totals load_totals;

    /* --sweep: its runs, the baseline first (sweep.c). */
    struct lat_sweep_run *runs;
    size_t n_runs;
    size_t runs_done;

    /* Computed once the thread is joined (measure.c), for the report. */
    struct tk_summary summary;
    uint64_t above[LAT_MAX_THRESHOLDS];
};

/* run.c: the driver's phases. */
struct tk_session;
enum tk_run_end;
int lat_setup(struct tk_session *s);
enum tk_run_end lat_run(struct tk_session *s);
void lat_teardown(struct tk_session *s);

/* measure.c: one measured run, the thread started and joined; quiet: no
 * header, no per-second lines. 0, or the errno of pthread_create. */
int lat_measure(struct lat *l, bool quiet);
/* measure.c: the workers of spec started for the run beside the measuring
 * thread (single-threaded: before lat_measure), every one running; set
 * l->load_on then. 0, or -1 with the cause in why (nothing left running). */
int lat_load_start(struct lat *l, const struct tk_pressure_spec *spec, char *why, size_t why_len);
/* measure.c: the workers stopped and reaped, their totals in l->load_totals. */
void lat_load_stop(struct lat *l);
/* measure.c: the summaries of a run once its thread is joined. */
void lat_summarize(struct lat *l);

/* sweep.c: the runs of --sweep, and their report and JSON. */
int lat_sweep_setup(struct lat *l);
enum tk_run_end lat_sweep(struct lat *l);
void lat_sweep_report(const struct lat *l, FILE *f);
void lat_sweep_json(const struct lat *l, struct tk_json *j);
extern const char *const lat_mode_names[LAT_MODES];

/* probe.c: the periodic loop, its per-second line, its report and JSON. */
/* Nanoseconds of CLOCK_MONOTONIC, the clock the loops sleep and read. */
uint64_t lat_now_ns(void);
/* The measuring thread: second i's record written and published, the
 * main thread woken to print it (either loop). */
void lat_publish(struct lat *l, size_t i, const struct lat_second *rec);
void lat_probe_loop(struct lat *l);
void lat_probe_print_head(FILE *f, const struct lat *l);
void lat_probe_print_second(FILE *f, const struct lat *l, size_t i);
void lat_probe_report(const struct lat *l, FILE *f);
void lat_probe_json(const struct lat *l, struct tk_json *j);
/* The summary object of the JSON, exactly its nine fields (docs/json.md),
 * a value after a key; compact: on one line. */
void lat_summary_json(struct tk_json *j, const struct tk_summary *m, uint64_t overruns,
                      bool compact);

/* noise.c: the same for the noise loop. The loop rests on rt (tk_rt_breather). */
void lat_noise_loop(struct lat *l, struct tk_rt_state *rt);
void lat_noise_print_head(FILE *f, const struct lat *l);
void lat_noise_print_second(FILE *f, const struct lat *l, size_t i);
void lat_noise_report(const struct lat *l, FILE *f);
void lat_noise_json(const struct lat *l, struct tk_json *j);

/* header.c: what every mode prints around its own lines. */
void lat_print_header(FILE *f, const struct lat *l);
void lat_print_setup_verdict(FILE *f, const struct lat *l);
void lat_print_faults(FILE *f, const struct lat *l);
void lat_print_stopped(FILE *f, const struct lat *l);
void lat_print_load(FILE *f, const struct lat *l);
const char *lat_stop_name(const struct lat *l);
bool lat_real_time(const struct lat *l);

/* report.c: the report and JSON of the mode that ran, the envelope's facts. */
void lat_report(const struct tk_session *s, FILE *f);
void lat_json(const struct tk_session *s, struct tk_json *j);
struct tk_facts;
void lat_facts(const struct tk_session *s, struct tk_facts *out);

/* cpu.c: facts about the measured CPU. */
/* Steal time of cpu (its line of /proc/stat; -1: the "cpu" total) in ms,
 * or -1 if unreadable. */
long lat_steal_ms(int cpu);
/* Is cpu in /sys/devices/system/cpu/isolated? false with *known false if
 * that cannot be read. */
bool lat_cpu_isolated(int cpu, bool *known);
/* User-space tasks (threads) other than those of process self under
 * SCHED_FIFO or SCHED_RR that may run on cpu, from /proc; the first one
 * described in first ("pid 1234 (rtmem) SCHED_FIFO 80"). */
size_t lat_rt_neighbours(int cpu, pid_t self, char *first, size_t first_len);
/* Does /proc/cpuinfo list the hypervisor flag (a virtual machine)? */
bool lat_virtual_machine(void);
/* The machine's setting of the idle-state limit read, and, if hold, 0
 * written and kept in force until lat_dma_release; what failed in d->err.
 * Never fails the run: a machine without the file, or a user who may not
 * write it, measures with the machine's setting, reported as such. */
void lat_dma_hold(struct lat_dma *d, bool hold);
void lat_dma_release(struct lat_dma *d);
/* header.c: the idle-state limit of the run, one line of the header. */
void lat_print_dma(FILE *f, const struct lat *l);

/* probe.c: microseconds for the text, with 3 decimals, into buf (TK_FMT_MAX). */
const char *lat_fmt_us(char *buf, size_t size, uint64_t ns);

#endif /* RTMEM_TOOLS_LATENCY_H */
