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

static const struct lat_opts defaults = {
    .period_ns = DEFAULT_PERIOD_NS,
    .duration_ns = DEFAULT_DURATION_NS,
    .rt = TK_RT_OPTS_DEFAULT,
    .thresholds = { .ns = { 10 * NS_PER_US, 50 * NS_PER_US, 100 * NS_PER_US, NS_PER_MS }, .n = 4 },
    .noise_threshold_ns = DEFAULT_NOISE_NS,
    .sizes = { .bytes = { 4 << 20, 8 << 20, 16 << 20, 32 << 20, 64 << 20, 128 << 20, 256 << 20,
                          512 << 20, 1 << 30 },
               .n = 9 },
    .strides = { .bytes = { 1, 16, 64, 256, 4096 }, .n = 5 },
    .modes = { .on = { true, true, true } },
};
/* Under --sweep --quick, the lists not given. */
static const struct tk_sizes quick_sizes = { .bytes = { 4 << 20, 32 << 20, 256 << 20 }, .n = 3 };
static const struct tk_sizes quick_strides = { .bytes = { 1, 4096 }, .n = 2 };
#define SWEEP_RUN_NS       ((uint64_t)4 * NS_PER_S)
#define SWEEP_QUICK_RUN_NS ((uint64_t)2 * NS_PER_S)
/* A sweep's hang mode holds the memory this long unless --pressure says. */
#define SWEEP_HANG_NS      ((uint64_t)NS_PER_S)

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
    { "period", TK_OPT_TIME, "T", "the wake-up period (default %D; bare number: us)", F(period_ns),
      .lo = LAT_MIN_PERIOD_NS, .hi = LAT_MAX_PERIOD_NS, .unit_ns = NS_PER_US },
    TK_OPT_KIT_DURATION(F(duration_ns), LAT_MIN_DURATION_NS, LAT_MAX_DURATION_NS, QUICK_DURATION_NS,
                        TK_OPTF_QUICK),
    TK_OPT_KIT_RT(struct lat_opts, rt),
    { "threshold", TK_OPT_CUSTOM, "T[,T...]", "count the wake-ups later than each T", F(thresholds),
      .parse = parse_thresholds },
    { "noise", TK_OPT_FLAG, NULL, "measure the machine's noise instead (spin on the clock)",
      F(noise) },
    { "noise-threshold", TK_OPT_TIME, "T", "--noise: the shortest gap recorded (default %D)",
      F(noise_threshold_ns), .lo = LAT_MIN_NOISE_NS, .hi = LAT_MAX_NOISE_NS, .unit_ns = NS_PER_US },
    { "pressure", TK_OPT_CUSTOM, "SPEC", "a load beside the run, e.g. vm=2,bytes=128M", F(pressure),
      .parse = parse_pressure },
    { "pressure-cpus", TK_OPT_CUSTOM, "LIST", "the load's CPUs (default: all but the measured)",
      F(pressure_cpus), .parse = parse_pressure_cpus },
    TK_OPT_KIT_FORCE(F(force)),
    { "default-system", TK_OPT_FLAG, NULL,
      "leave /dev/cpu_dma_latency as it is (default: held at 0)", F(default_system) },
    { "sweep", TK_OPT_FLAG, NULL, "the study: latency under every size x stride x mode", F(sweep) },
    TK_OPT_KIT_SIZES(F(sizes), 1, TK_PRESSURE_MAX_BYTES),
    { "strides", TK_OPT_SIZES, "B[,B...]", "--sweep: the vm workers' strides", F(strides), .lo = 1,
      .hi = TK_PRESSURE_MAX_BYTES },
    { "modes", TK_OPT_CUSTOM, "M[,M...]", "--sweep: of plain, keep, hang (default: all)", F(modes),
      .parse = parse_modes },
    TK_OPT_KIT_JSON(F(json_path)),
    TK_OPT_KIT_QUICK(F(quick)),
};

#undef F

/* What the table cannot check. 0, or -1 (reported). */
static int check(struct tk_session *s)
{
    struct lat_opts *o = s->opts;
    const struct tk_opt_parse *p = &s->parsed;
    size_t n = sizeof(options) / sizeof(options[0]);
    char a[24], b[24];
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
        if (o->quick && !tk_opt_given(options, n, p, "sizes"))
            o->sizes = quick_sizes;
        if (o->quick && !tk_opt_given(options, n, p, "strides"))
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
        base.bytes = o->sizes.bytes[0];
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
    .check = check,
    .setup = lat_setup,
    .run = lat_run,
    .report = lat_report,
    .facts = lat_facts,
    .json = lat_json,
    .teardown = lat_teardown,
};
