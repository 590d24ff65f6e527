/*
 * `rtmem latency --sweep`: the study of latency under memory pressure.
 *
 * An idle baseline, then one run of --duration for each vm mode x stride x
 * allocation size (in that order: a curve of one mode and stride is a
 * stretch of runs), each with its own workers, started before the run and
 * reaped after it. A size whose workers would take more than the memory
 * share (common/pressure.h) is skipped with the reason, unless --force, as
 * is a stride larger than the size. Each run prints a row as it ends; the
 * report ends with the worst of each curve against the baseline.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/progress.h"
#include "common/opt.h"
#include "common/stop.h"
#include "common/tool.h"
#include "latency.h"

const char *const lat_mode_names[LAT_MODES] = { "plain", "keep", "hang" };

/* What a run costs beyond its duration (the workers started and reaped,
 * the measuring thread's setup): about a third of a second here. */
#define SWEEP_RUN_OVERHEAD_S 0.35

int lat_sweep_setup(struct lat *l)
{
    size_t modes = 0;
    for (int m = 0; m < LAT_MODES; m++)
        modes += l->o.modes.on[m];
    size_t n = 1 + modes * l->o.strides.n * l->o.sizes.n;
    l->runs = calloc(n, sizeof(*l->runs));
    if (!l->runs)
        return -1;
    struct lat_sweep_run *r = l->runs;
    r->idle = true;
    r++;
    for (int m = 0; m < LAT_MODES; m++)
        for (size_t st = 0; m < LAT_MODES && l->o.modes.on[m] && st < l->o.strides.n; st++)
            for (size_t sz = 0; sz < l->o.sizes.n; sz++, r++) {
                r->mode = m;
                r->stride = l->o.strides.bytes[st];
                r->bytes = l->o.sizes.bytes[sz];
            }
    l->n_runs = n;
    return 0;
}

/* The load of run r: the base (--pressure) with its size, stride, mode. */
static void load_of(const struct lat *l, const struct lat_sweep_run *r,
                    struct tk_pressure_spec *spec)
{
    *spec = l->load;
    spec->bytes = r->bytes;
    spec->stride = r->stride;
    spec->keep = r->mode == LAT_MODE_KEEP;
    if (r->mode != LAT_MODE_HANG)
        spec->hang_ns = 0;
}

/* Why run r cannot run here, into r->skipped; false if it can. */
static bool skip(const struct lat *l, struct lat_sweep_run *r, const struct tk_pressure_spec *spec)
{
    char a[24], b[24];
    if (r->stride > r->bytes) {
        snprintf(r->skipped, sizeof(r->skipped), "the stride is larger than the size");
        return true;
    }
    uint64_t total = (uint64_t)spec->vm * spec->bytes;
    uint64_t avail = tk_pressure_mem_available();
    if (!l->o.force && total > avail / TK_PRESSURE_SHARE_DIV) {
        snprintf(r->skipped, sizeof(r->skipped),
                 "%u worker%s of %s take%s more than half of the memory available (%s); --force "
                 "runs it",
                 spec->vm, spec->vm == 1 ? "" : "s", tk_opt_fmt_bytes(a, sizeof(a), spec->bytes),
                 spec->vm == 1 ? "s" : "", tk_fmt_iec_approx(b, sizeof(b), avail));
        return true;
    }
    return false;
}

static const char *mode_name(const struct lat_sweep_run *r)
{
    return r->idle ? "idle" : lat_mode_names[r->mode];
}

static void print_row_head(FILE *f)
{
    fprintf(f, "%-6s %7s %6s %8s %8s %9s %9s %9s %9s %11s\n", "mode", "stride", "size", "samples",
            "overruns", "p50 us", "p99 us", "p99.9 us", "max us", "vm faults/s");
}

static void print_row(FILE *f, const struct lat_sweep_run *r)
{
    char st[24], sz[24], c[5][TK_FMT_MAX], fl[TK_FMT_MAX];
    fprintf(f, "%-6s %7s %6s ", mode_name(r),
            r->idle ? "-" : tk_opt_fmt_bytes(st, sizeof(st), r->stride),
            r->idle ? "-" : tk_opt_fmt_bytes(sz, sizeof(sz), r->bytes));
    if (r->skipped[0]) {
        fprintf(f, "skipped: %s\n", r->skipped);
        return;
    }
    const double v[] = { r->summary.p50, r->summary.p99, r->summary.p999, r->summary.max };
    for (size_t i = 0; i < 4; i++)
        tk_fmt_double(c[i], sizeof(c[i]), v[i] / 1e3, 1);
    double secs = r->load.seconds;
    if (r->idle || secs <= 0)
        snprintf(fl, sizeof(fl), "-");
    else
        tk_fmt_double(fl, sizeof(fl), (double)(r->load.minflt + r->load.majflt) / secs, 0);
    fprintf(f, "%8llu %8llu %9s %9s %9s %9s %11s%s\n", (unsigned long long)r->summary.count,
            (unsigned long long)r->overruns, c[0], c[1], c[2], c[3], fl,
            r->ended     ? "  WORKER ENDED EARLY"
            : r->stopped ? "  (stopped)"
                         : "");
}

/* Runs r: its workers, the measuring thread, the record. 0, or -1 if the
 * sweep cannot go on (reported). */
static int run_one(struct lat *l, struct lat_sweep_run *r, bool first)
{
    struct tk_pressure_spec spec;
    if (!r->idle) {
        load_of(l, r, &spec);
        if (skip(l, r, &spec))
            return 0;
        char why[sizeof(r->skipped) - 32];
        if (lat_load_start(l, &spec, why, sizeof(why)) != 0) {
            snprintf(r->skipped, sizeof(r->skipped), "the load did not start: %s", why);
            snprintf(r->ended_how, sizeof(r->ended_how), "%s", why);
            r->ended = 1;
            return 0;
        }
    }
    int rc = lat_measure(l, true);
    if (l->load_on) {
        lat_load_stop(l);
        r->load = l->load_totals;
        r->ended = l->pressure.n_ended;
        if (r->ended) {
            FILE *m = fmemopen(r->ended_how, sizeof(r->ended_how), "w");
            if (m) {
                tk_pressure_print_ended(m, "", &l->pressure);
                fclose(m);
            }
            r->ended_how[strcspn(r->ended_how, "\n")] = '\0';
        }
        tk_pressure_release(&l->pressure);
        l->load_on = false;
    }
    if (rc != 0) {
        fprintf(stderr, "%s: cannot start the measuring thread: %s\n", l->prog, strerror(rc));
        return -1;
    }
    if (l->loop_err) {
        fprintf(stderr, "%s: the measuring loop failed: %s\n", l->prog, strerror(l->loop_err));
        return -1;
    }
    lat_summarize(l);
    r->summary = l->summary;
    r->deadlines = l->deadlines;
    r->overruns = l->overruns;
    r->minflt = l->minflt;
    r->majflt = l->majflt;
    r->steal_ms = l->steal_ms;
    r->stopped = l->stopped;
    if (first) {
        lat_print_header(stdout, l);
        print_row_head(stdout);
    }
    return 0;
}

static void print_sweep_head(FILE *f, const struct lat *l)
{
    char d[24], p[24], h[24];
    size_t runs = l->n_runs - 1;
    fprintf(f,
            "rtmem latency --sweep: %zu run%s of %s at a %s period after an idle baseline,\n"
            "each with:\n",
            runs, runs == 1 ? "" : "s", tk_args_fmt_time(d, sizeof(d), l->o.duration_ns),
            tk_args_fmt_time(p, sizeof(p), l->o.period_ns));
    fprintf(f,
            "  %u vm worker%s, %s, at each size, stride and mode below\n"
            "  (plain frees, keep writes again, hang holds %s before the free)\n",
            l->load.vm, l->load.vm == 1 ? "" : "s",
            l->load.alloc == TK_PRESSURE_MMAP ? "mmap'd" : "malloc'd",
            tk_args_fmt_time(h, sizeof(h), l->load.hang_ns));
    /* The other workers, and where they all run. */
    struct tk_pressure_spec others = l->load;
    others.vm = 0;
    tk_pressure_print_spec(f, "  ", &others);
    char total[TK_FMT_MAX];
    fprintf(f, "  about %s s in all\n\n",
            tk_fmt_double(
                total, sizeof(total),
                ((double)l->o.duration_ns / 1e9 + SWEEP_RUN_OVERHEAD_S) * (double)l->n_runs, 0));
    fflush(f);
}

enum tk_run_end lat_sweep(struct lat *l)
{
    print_sweep_head(stdout, l);
    bool failed = false;
    tk_progress_phase("sweep runs", l->n_runs, 0);
    for (size_t i = 0; i < l->n_runs && !tk_stop_requested(); i++) {
        struct lat_sweep_run *r = &l->runs[i];
        tk_progress_done(i);
        if (run_one(l, r, i == 0) != 0)
            return TK_RUN_ABORTED;
        l->runs_done = i + 1;
        print_row(stdout, r);
        fflush(stdout);
        failed |= r->ended > 0;
    }
    l->stopped = tk_stop_requested();
    l->stop_signal = tk_stop_signal();
    return failed ? TK_RUN_FAILED : TK_RUN_PASSED;
}

void lat_sweep_report(const struct lat *l, FILE *f)
{
    fprintf(f, "\n");
    if (l->stopped)
        fprintf(f,
                "stopped by %s after %zu of %zu runs (the baseline included): the runs done "
                "follow\n",
                lat_stop_name(l), l->runs_done, l->n_runs);
    if (l->runs_done == 0)
        return;
    const struct lat_sweep_run *idle = &l->runs[0];
    char a[TK_FMT_MAX], b[TK_FMT_MAX], c[TK_FMT_MAX], d[TK_FMT_MAX], st[24], sz[24], sz2[24];
    fprintf(f, "the worst of each curve, against the idle baseline (p99.9 %s us, max %s us):\n",
            tk_fmt_double(a, sizeof(a), idle->summary.p999 / 1e3, 1),
            tk_fmt_double(b, sizeof(b), idle->summary.max / 1e3, 1));
    fprintf(f, "%-6s %7s %20s %20s\n", "mode", "stride", "worst p99.9 us", "worst max us");
    for (size_t i = 1; i < l->runs_done;) {
        const struct lat_sweep_run *first = &l->runs[i];
        const struct lat_sweep_run *w999 = NULL, *wmax = NULL;
        size_t j = i;
        for (; j < l->runs_done && l->runs[j].mode == first->mode &&
               l->runs[j].stride == first->stride;
             j++) {
            const struct lat_sweep_run *r = &l->runs[j];
            if (r->skipped[0])
                continue;
            if (!w999 || r->summary.p999 > w999->summary.p999)
                w999 = r;
            if (!wmax || r->summary.max > wmax->summary.max)
                wmax = r;
        }
        if (w999 && wmax) {
            snprintf(c, sizeof(c), "%.1f at %s", w999->summary.p999 / 1e3,
                     tk_opt_fmt_bytes(sz, sizeof(sz), w999->bytes));
            snprintf(d, sizeof(d), "%.1f at %s", wmax->summary.max / 1e3,
                     tk_opt_fmt_bytes(sz2, sizeof(sz2), wmax->bytes));
            fprintf(f, "%-6s %7s %20s %20s\n", lat_mode_names[first->mode],
                    tk_opt_fmt_bytes(st, sizeof(st), first->stride), c, d);
        } else {
            fprintf(f, "%-6s %7s %20s %20s\n", lat_mode_names[first->mode],
                    tk_opt_fmt_bytes(st, sizeof(st), first->stride), "skipped", "skipped");
        }
        i = j;
    }
    for (size_t i = 0; i < l->runs_done; i++)
        if (l->runs[i].ended)
            fprintf(f, "%s %s %s: %s\n", lat_mode_names[l->runs[i].mode],
                    tk_opt_fmt_bytes(st, sizeof(st), l->runs[i].stride),
                    tk_opt_fmt_bytes(sz, sizeof(sz), l->runs[i].bytes), l->runs[i].ended_how);
    lat_print_setup_verdict(f, l);
}

static void run_json(struct tk_json *j, const struct lat_sweep_run *r)
{
    bool ran = !r->skipped[0];
    tk_json_begin_object(j);
    tk_json_kv_string(j, "mode", mode_name(r));
    if (tk_json_key_or_null(j, "bytes", !r->idle))
        tk_json_uint(j, r->bytes);
    if (tk_json_key_or_null(j, "stride", !r->idle))
        tk_json_uint(j, r->stride);
    if (tk_json_key_or_null(j, "skipped", !ran))
        tk_json_string(j, r->skipped);
    if (tk_json_key_or_null(j, "summary", ran))
        lat_summary_json(j, &r->summary, r->overruns, true);
    if (tk_json_key_or_null(j, "deadlines", ran))
        tk_json_uint(j, r->deadlines);
    if (tk_json_key_or_null(j, "stopped", ran))
        tk_json_bool(j, r->stopped);
    if (tk_json_key_or_null(j, "page_faults", ran)) {
        tk_json_begin_object_compact(j);
        tk_json_kv_uint(j, "minor", r->minflt);
        tk_json_kv_uint(j, "major", r->majflt);
        tk_json_end_object(j);
    }
    if (tk_json_key_or_null(j, "steal_ms", ran && r->steal_ms >= 0))
        tk_json_int(j, r->steal_ms);
    if (tk_json_key_or_null(j, "load", (ran && !r->idle) || r->ended)) {
        tk_json_begin_object_compact(j);
        tk_json_kv_double(j, "seconds", r->load.seconds);
        tk_json_kv_uint(j, "vm_rounds", r->load.ops[TK_PW_VM]);
        tk_json_kv_uint(j, "vm_bytes_written", r->load.bytes[TK_PW_VM]);
        tk_json_kv_uint(j, "vm_minor_faults", r->load.minflt);
        tk_json_kv_uint(j, "vm_major_faults", r->load.majflt);
        tk_json_kv_uint(j, "ended_early_count", r->ended);
        if (tk_json_key_or_null(j, "ended_how", r->ended > 0))
            tk_json_string(j, r->ended_how);
        tk_json_end_object(j);
    }
    tk_json_end_object(j);
}

void lat_sweep_json(const struct lat *l, struct tk_json *j)
{
    tk_json_begin_object(j);
    tk_json_kv_uint(j, "run_ns", l->o.duration_ns);
    tk_json_key(j, "sizes");
    tk_json_begin_array_compact(j);
    for (size_t i = 0; i < l->o.sizes.n; i++)
        tk_json_uint(j, l->o.sizes.bytes[i]);
    tk_json_end_array(j);
    tk_json_key(j, "strides");
    tk_json_begin_array_compact(j);
    for (size_t i = 0; i < l->o.strides.n; i++)
        tk_json_uint(j, l->o.strides.bytes[i]);
    tk_json_end_array(j);
    tk_json_key(j, "modes");
    tk_json_begin_array_compact(j);
    for (int m = 0; m < LAT_MODES; m++)
        if (l->o.modes.on[m])
            tk_json_string(j, lat_mode_names[m]);
    tk_json_end_array(j);
    /* The base load: each run's own size, stride and mode are its own. */
    struct tk_pressure_spec base = l->load;
    base.hang_ns = 0;
    tk_json_key(j, "load");
    tk_pressure_spec_json(j, &base, false);
    tk_json_kv_uint(j, "hang_ns", l->load.hang_ns);
    tk_json_kv_uint(j, "runs_planned", l->n_runs);
    tk_json_kv_uint(j, "runs_done", l->runs_done);
    if (tk_json_key_or_null(j, "baseline", l->runs_done > 0))
        run_json(j, &l->runs[0]);
    tk_json_key(j, "runs");
    tk_json_begin_array(j);
    for (size_t i = 1; i < l->runs_done; i++)
        run_json(j, &l->runs[i]);
    tk_json_end_array(j);
    tk_json_end_object(j);
}
