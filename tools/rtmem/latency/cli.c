/*
 * `rtmem latency`: its options table, --help, the combinations of options
 * the table cannot check, and latency_tool, what the bench kit's driver
 * runs (common/tool.h).
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "common/pressure.h"

#include "../cmd.h"
#include "common/opt.h"
#include "common/tool.h"
#include "latency.h"

#define DEFAULT_PERIOD_NS   ((uint64_t)NS_PER_MS)
#define DEFAULT_DURATION_NS ((uint64_t)10 * NS_PER_S)
#define QUICK_DURATION_NS   ((uint64_t)2 * NS_PER_S)
#define DEFAULT_NOISE_NS    ((uint64_t)10 * NS_PER_US)
/* The longest --threshold: a latency beyond it is an overrun of any period. */
#define MAX_THRESHOLD_NS    ((uint64_t)3600 * NS_PER_S)

/* A number in a help line, spelled where the help is a literal. */
#define STR_(x) #x
#define STR(x)  STR_(x)

static const struct lat_opts defaults = {
    .period_ns = DEFAULT_PERIOD_NS,
    .duration_ns = DEFAULT_DURATION_NS,
    .cpu = -1,
    .priority = TK_RT_DEFAULT_PRIORITY,
    .thresholds = { .ns = { 10 * NS_PER_US, 50 * NS_PER_US, 100 * NS_PER_US, NS_PER_MS }, .n = 4 },
    .noise_threshold_ns = DEFAULT_NOISE_NS,
    .sizes = { .v = { 4 << 20, 8 << 20, 16 << 20, 32 << 20, 64 << 20, 128 << 20, 256 << 20,
                      512 << 20, 1 << 30 },
               .n = 9 },
    .strides = { .v = { 1, 16, 64, 256, 4096 }, .n = 5 },
    .modes = { .on = { true, true, true } },
};
#define DEFAULT_SIZES   "4M,8M,...,1G (doubling)"
#define DEFAULT_STRIDES "1,16,64,256,4096"
/* Under --sweep --quick, the lists not given. */
static const struct lat_list quick_sizes = { .v = { 4 << 20, 32 << 20, 256 << 20 }, .n = 3 };
static const struct lat_list quick_strides = { .v = { 1, 4096 }, .n = 2 };
#define SWEEP_RUN_NS       ((uint64_t)4 * NS_PER_S)
#define SWEEP_QUICK_RUN_NS ((uint64_t)2 * NS_PER_S)
/* A sweep's hang mode holds the memory this long unless --pressure says. */
#define SWEEP_HANG_NS      ((uint64_t)NS_PER_S)
#define DEFAULT_THRESHOLDS "10us,50us,100us,1ms"

/* Inserts x into v[0, *n), ascending, once. Returns false if it is full
 * (cap values) and x not in it. */
static bool sorted_insert(uint64_t *v, size_t *n, size_t cap, uint64_t x)
{
    size_t i = 0;
    while (i < *n && v[i] < x)
        i++;
    if (i < *n && v[i] == x)
        return true;
    if (*n == cap)
        return false;
    memmove(&v[i + 1], &v[i], (*n - i) * sizeof(v[0]));
    v[i] = x;
    (*n)++;
    return true;
}

/* --threshold T[,T...]: the first one given replaces the defaults, the
 * others add to it. 0, or -1 (reported). */
static int parse_thresholds(const struct tk_args *cli, const char *value, void *field)
{
    struct lat_thresholds *t = field;
    if (!t->given) {
        t->n = 0;
        t->given = true;
    }
    const char *p = value;
    do {
        size_t len = strcspn(p, ",");
        char item[32];
        if (len >= sizeof(item))
            return tk_args_bad(cli, "--threshold: '%.*s' is not a time (e.g. 50us, 1ms)", (int)len,
                               p);
        memcpy(item, p, len);
        item[len] = '\0';
        uint64_t v;
        if (tk_args_time_ns(cli, "--threshold", item, NS_PER_US, 1, MAX_THRESHOLD_NS, &v) != 0)
            return -1;
        if (!sorted_insert(t->ns, &t->n, LAT_MAX_THRESHOLDS, v))
            return tk_args_bad(cli, "--threshold: at most %d thresholds; '%s' is one more",
                               LAT_MAX_THRESHOLDS, item);
        p += len;
    } while (*p++ == ',');
    return 0;
}

/* --pressure SPEC: the first starts from no worker, later ones add. */
static int parse_pressure(const struct tk_args *cli, const char *value, void *field)
{
    struct lat_load *load = field;
    if (!load->given) {
        tk_pressure_empty(&load->spec);
        load->given = true;
    }
    return tk_pressure_parse(cli, "--pressure", value, &load->spec);
}

static int parse_pressure_cpus(const struct tk_args *cli, const char *value, void *field)
{
    struct lat_cpus *c = field;
    c->given = true;
    return tk_pressure_parse_cpus(cli, "--pressure-cpus", value, &c->set);
}

/* Byte counts B[,B...] into a list, ascending, once each. */
static int parse_list(const struct tk_args *cli, const char *opt, const char *value,
                      struct lat_list *list)
{
    if (!list->given) {
        list->n = 0;
        list->given = true;
    }
    const char *p = value;
    do {
        size_t len = strcspn(p, ",");
        char item[32];
        if (len == 0 || len >= sizeof(item))
            return tk_args_bad(cli, "%s: '%s' is not a list of byte counts (e.g. 4M,64M)", opt,
                               value);
        memcpy(item, p, len);
        item[len] = '\0';
        uint64_t v;
        if (tk_args_bytes(cli, opt, item, 1, TK_PRESSURE_MAX_BYTES, &v) != 0)
            return -1;
        if (!sorted_insert(list->v, &list->n, LAT_MAX_LIST, v))
            return tk_args_bad(cli, "%s: at most %d values; '%s' is one more", opt, LAT_MAX_LIST,
                               item);
        p += len;
    } while (*p++ == ',');
    return 0;
}

static int parse_sizes(const struct tk_args *cli, const char *value, void *field)
{
    return parse_list(cli, "--sizes", value, field);
}

static int parse_strides(const struct tk_args *cli, const char *value, void *field)
{
    return parse_list(cli, "--strides", value, field);
}

static int parse_modes(const struct tk_args *cli, const char *value, void *field)
{
    struct lat_modes *m = field;
    if (!m->given) {
        memset(m->on, 0, sizeof(m->on));
        m->given = true;
    }
    const char *p = value;
    do {
        size_t len = strcspn(p, ",");
        int k = 0;
        while (k < LAT_MODES &&
               !(strlen(lat_mode_names[k]) == len && strncmp(p, lat_mode_names[k], len) == 0))
            k++;
        if (k == LAT_MODES)
            return tk_args_bad(cli, "--modes: '%.*s' is not plain, keep or hang", (int)len, p);
        m->on[k] = true;
        p += len;
    } while (*p++ == ',');
    return 0;
}

#define F(field) TK_FIELD(struct lat_opts, field)

static const struct tk_opt options[] = {
    { "period", TK_OPT_TIME, "T", "the wake-up period (default %D; a bare number is in us)",
      F(period_ns), .lo = LAT_MIN_PERIOD_NS, .hi = LAT_MAX_PERIOD_NS, .unit_ns = NS_PER_US },
    { "duration", TK_OPT_TIME, "T",
      "how long the run measures (default %D; --quick %Q; a bare number is in seconds)",
      F(duration_ns), .lo = LAT_MIN_DURATION_NS, .hi = LAT_MAX_DURATION_NS,
      .quick = QUICK_DURATION_NS, .flags = TK_OPTF_QUICK, .unit_ns = NS_PER_S },
    { "cpu", TK_OPT_CPU, "N",
      "the CPU the measuring thread is pinned to (default: the last allowed)", F(cpu) },
    { "prio", TK_OPT_PRIO, "N", "its SCHED_FIFO priority, 1..99 (default %D)", F(priority) },
    { "no-rt", TK_OPT_FLAG, NULL, "no CPU pinning, no SCHED_FIFO (mlockall is still tried)",
      F(no_rt) },
    { "threshold", TK_OPT_CUSTOM, "T[,T...]",
      "count the wake-ups later than each T (repeatable, up to " STR(
          LAT_MAX_THRESHOLDS) "; default " DEFAULT_THRESHOLDS "; a bare number is in us)",
      F(thresholds), .parse = parse_thresholds },
    { "noise", TK_OPT_FLAG, NULL,
      "measure the machine's noise instead: spin on the clock on the CPU, recording every gap "
      "above --noise-threshold",
      F(noise) },
    { "noise-threshold", TK_OPT_TIME, "T",
      "with --noise: the shortest gap recorded, at most 1ms, so that every stall is (default "
      "%D; a bare number is in us)",
      F(noise_threshold_ns), .lo = LAT_MIN_NOISE_NS, .hi = LAT_MAX_NOISE_NS, .unit_ns = NS_PER_US },
    { "pressure", TK_OPT_CUSTOM, "SPEC",
      "run a load beside the measuring thread, started before the run and stopped (every "
      "worker reaped) after it: SPEC is name=value items, as rtmem pressure's options: vm=N, "
      "bytes=B, stride=B, hang=T, keep, alloc=malloc|mmap, spin=N, sync=N, hdd=N, hdd-bytes=B, "
      "dir=DIR (last); e.g. vm=2,bytes=128M,stride=4096 (bytes 128M and stride 4096 unless "
      "given, no worker of a kind not named)",
      F(pressure), .parse = parse_pressure },
    { "pressure-cpus", TK_OPT_CUSTOM, "LIST",
      "the CPUs the load's workers run on, e.g. 0-2 (default: every CPU allowed but the one "
      "measured)",
      F(pressure_cpus), .parse = parse_pressure_cpus },
    { "force", TK_OPT_FLAG, NULL,
      "run a load above half of MemAvailable (or of the free space of its dir)", F(force) },
    { "sweep", TK_OPT_FLAG, NULL,
      "the study of latency under memory pressure: one run of --duration (default under "
      "--sweep 4s, --quick 2s) per vm mode x stride x size, 2 vm workers "
      "(or --pressure's count, with its other workers; the size, stride and mode are the "
      "sweep's), after an idle baseline; the default takes about 10 minutes, --quick "
      "about 30 seconds",
      F(sweep) },
    { "sizes", TK_OPT_CUSTOM, "B[,B...]",
      "--sweep: the vm workers' allocation sizes (default " DEFAULT_SIZES "; --quick 4M,32M,256M)",
      F(sizes), .parse = parse_sizes },
    { "strides", TK_OPT_CUSTOM, "B[,B...]",
      "--sweep: their strides (default " DEFAULT_STRIDES "; --quick 1,4096)", F(strides),
      .parse = parse_strides },
    { "modes", TK_OPT_CUSTOM, "M[,M...]",
      "--sweep: plain (allocate, write, free), keep (allocate once, write again and again), "
      "hang (allocate, write, hold for hang=T of --pressure, 1s by default, free); default "
      "all three, --quick plain,keep",
      F(modes), .parse = parse_modes },
    { "json", TK_OPT_FILE, "FILE",
      "also write the results as JSON (schema " LAT_SCHEMA "): to a new file beside FILE, "
      "renamed over it only when the run completes (a run ended by SIGINT or SIGTERM "
      "completes; so does one whose load failed, with \"passed\": false); a run that "
      "cannot complete (an error, a fatal signal) leaves FILE as it was. A FIFO or device "
      "(/dev/stdout, /dev/null) is written directly",
      F(json_path) },
    { "quick", TK_OPT_FLAG, NULL, "a short run for smoke tests (--duration reduced)", F(quick),
      .flags = TK_OPTF_QUICK_SWITCH },
};

#undef F

static void help_intro(FILE *f)
{
    fputs("usage: rtmem latency [--pressure SPEC] [options]\n"
          "       rtmem latency --sweep [--sizes B,..] [--strides B,..] [options]\n"
          "       rtmem latency --noise [options]\n"
          "\n"
          "How late a periodic real-time thread wakes up. A measuring thread, pinned to\n"
          "one CPU under SCHED_FIFO with all memory locked (mlockall) and its stack\n"
          "prefaulted, sleeps to absolute deadlines one period apart\n"
          "(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)) and records, on each\n"
          "wake-up, how long after its deadline it runs. A wake-up later than whole\n"
          "periods counts each deadline it passed as an overrun, none silently dropped,\n"
          "and sleeps to the next deadline still ahead.\n"
          "\n"
          "As Xenomai's latency does, it prints a line per second (RTD: min, avg and\n"
          "max of that second, overruns so far, best and worst so far) and a summary\n"
          "(RTS); then percentiles (p50, p99, p99.9, p99.99), the wake-ups later than\n"
          "each --threshold, a histogram of log2 buckets, the page faults the measuring\n"
          "thread took, the steal time of its CPU, and the real-time setup it was\n"
          "really granted (policy, priority, CPU, VmLck, RT throttling).\n"
          "\n"
          "--noise measures the machine instead of the scheduler: the thread, under the\n"
          "same setup, reads the clock back to back for --duration and records every\n"
          "gap between two readings longer than --noise-threshold (count, total,\n"
          "longest, histogram, per second). Nothing in the thread sleeps, so a gap is\n"
          "time the CPU spent elsewhere: interrupts, higher-priority kernel threads, or\n"
          "the machine itself (virtual-machine exits, SMIs, firmware). Gaps of a\n"
          "millisecond or more are the machine's: the summary says so. Under SCHED_FIFO\n"
          "the spin rests about 0.1 s every 0.5 s, unmeasured, so that RT throttling\n"
          "never stops it (and, where throttling is off, so that the CPU's kernel\n"
          "threads still run). --noise runs on its own, not beside a latency run: a\n"
          "spinning real-time thread on another CPU would take that CPU from the rest\n"
          "of the system and change the latencies measured; run one after the other on\n"
          "the same CPU.\n",
          f);
}

static void help_notes(FILE *f)
{
    fputs("Times take a unit: ns, us, ms or s (250us, 10s). Every run is bounded by\n"
          "--duration; SIGINT (Ctrl-C) or SIGTERM ends it sooner, as a complete run: the\n"
          "summary is printed, --json written, and the exit status is 0.\n"
          "\n"
          "Requires root (or CAP_SYS_NICE and CAP_IPC_LOCK) for SCHED_FIFO and locked\n"
          "memory. Without them it says plainly that it runs without real-time priority\n"
          "or locked memory, and still measures: the figures then include ordinary\n"
          "scheduling delays.\n"
          "\n"
          "Under a load: --pressure starts rtmem pressure's workers (docs/pressure.md)\n"
          "before the run, on every CPU but the one measured, and reaps them after it;\n"
          "the report adds what they did (rounds, page faults), and a worker that ends\n"
          "early (the OOM killer) fails the run. --sweep is the study of latency under\n"
          "memory pressure: an idle baseline, then one run of --duration per mode x\n"
          "stride x size (--modes, --strides, --sizes), a row each, and the worst of\n"
          "each curve at the end; a size above half of MemAvailable is skipped (with\n"
          "the reason) unless --force.\n"
          "\n"
          "Exit status: 0 the run completed (or was ended by SIGINT or SIGTERM), 1 a\n"
          "run-time failure (the clock failed, a load's worker ended early, the report\n"
          "or --json could not be written), 2 bad usage.\n",
          f);
}

/* What the table cannot check. 0, or -1 (reported). */
static int check(struct tk_session *s)
{
    struct lat_opts *o = s->opts;
    const struct tk_opt_parse *p = &s->parsed;
    size_t n = sizeof(options) / sizeof(options[0]);
    char a[24], b[24];
    if (o->no_rt && (tk_opt_given(options, n, p, "cpu") || tk_opt_given(options, n, p, "prio")))
        return tk_args_bad(&s->cli, "--no-rt runs unpinned under SCHED_OTHER: --cpu and --prio "
                                    "would not be used");
    bool any_sweep_opt = tk_opt_given(options, n, p, "sizes") ||
                         tk_opt_given(options, n, p, "strides") ||
                         tk_opt_given(options, n, p, "modes");
    if (any_sweep_opt && !o->sweep)
        return tk_args_bad(&s->cli, "--sizes, --strides and --modes need --sweep");
    if (tk_opt_given(options, n, p, "pressure-cpus") && !o->pressure.given && !o->sweep)
        return tk_args_bad(&s->cli, "--pressure-cpus needs --pressure or --sweep");
    if (o->force && !o->pressure.given && !o->sweep)
        return tk_args_bad(&s->cli, "--force needs --pressure or --sweep");
    if (o->noise && (o->pressure.given || o->sweep))
        return tk_args_bad(&s->cli, "--noise runs on its own: --pressure and --sweep are the "
                                    "latency run's");
    if (o->sweep) {
        if (!tk_opt_given(options, n, p, "duration"))
            o->duration_ns = o->quick ? SWEEP_QUICK_RUN_NS : SWEEP_RUN_NS;
        if (o->quick && !o->sizes.given)
            o->sizes = quick_sizes;
        if (o->quick && !o->strides.given)
            o->strides = quick_strides;
        if (o->quick && !o->modes.given)
            o->modes.on[LAT_MODE_HANG] = false;
        if (!o->pressure.given) {
            tk_pressure_defaults(&o->pressure.spec);
        } else if (o->pressure.spec.vm == 0) {
            return tk_args_bad(&s->cli, "--sweep varies the vm workers: --pressure needs vm=N");
        }
        if (o->pressure.spec.hang_ns == 0)
            o->pressure.spec.hang_ns = SWEEP_HANG_NS;
        /* The base load's other workers, the dir, the totals, checked as a
         * single run's would be, with the smallest size and the smallest
         * stride; the memory share of each size is checked as it runs. */
        struct tk_pressure_spec base = o->pressure.spec;
        base.bytes = o->sizes.v[0];
        base.stride = 1;
        if (tk_pressure_check(&s->cli, &base, o->force, "--force") != 0)
            return -1;
        /* Each size, stride and mode is checked as it runs (the memory
         * share, stride <= size), and skipped with the reason. */
    } else if (o->pressure.given) {
        if (tk_pressure_check(&s->cli, &o->pressure.spec, o->force, "--force") != 0)
            return -1;
    }
    if (o->noise) {
        if (tk_opt_given(options, n, p, "period"))
            return tk_args_bad(&s->cli, "--period is the latency run's; --noise does not sleep");
        if (tk_opt_given(options, n, p, "threshold"))
            return tk_args_bad(&s->cli, "--threshold is the latency run's; --noise records the "
                                        "gaps above --noise-threshold");
        return 0;
    }
    if (tk_opt_given(options, n, p, "noise-threshold"))
        return tk_args_bad(&s->cli, "--noise-threshold needs --noise");
    if (o->duration_ns < o->period_ns)
        return tk_args_bad(&s->cli, "--duration (%s) is shorter than --period (%s)",
                           tk_args_fmt_time(a, sizeof(a), o->duration_ns),
                           tk_args_fmt_time(b, sizeof(b), o->period_ns));
    if (o->duration_ns / o->period_ns > LAT_MAX_WAKEUPS)
        return tk_args_bad(&s->cli,
                           "--duration %s at --period %s is %llu wake-ups; at most %llu (each "
                           "latency is kept in locked memory for exact percentiles): shorten "
                           "--duration or lengthen --period",
                           tk_args_fmt_time(a, sizeof(a), o->duration_ns),
                           tk_args_fmt_time(b, sizeof(b), o->period_ns),
                           (unsigned long long)(o->duration_ns / o->period_ns),
                           (unsigned long long)LAT_MAX_WAKEUPS);
    return 0;
}

const struct tk_tool latency_tool = {
    .name = "latency",
    .summary = "how late a periodic SCHED_FIFO thread wakes up; --noise: machine stalls",
    .schema = LAT_SCHEMA,
    .bytes_example = "4096, 64K, 64M",
    .opts = options,
    .n_opts = sizeof(options) / sizeof(options[0]),
    .opts_size = sizeof(struct lat_opts),
    .defaults = &defaults,
    .json_path_offset = offsetof(struct lat_opts, json_path),
    .help_intro = help_intro,
    .help_notes = help_notes,
    .check = check,
    .setup = lat_setup,
    .run = lat_run,
    .report = lat_report,
    .facts = lat_facts,
    .json = lat_json,
    .teardown = lat_teardown,
};
