/*
 * `rtmem pressure`: the run. The workers start, then the main thread wakes
 * once a second, records what they did and prints it, until --duration,
 * SIGINT or SIGTERM, or a worker that ends early; then stops them (all
 * reaped) and reports.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/progress.h"
#include "common/opt.h"
#include "common/stop.h"
#include "common/timer.h"
#include "common/tool.h"
#include "pressure.h"

#define NS_PER_S       ((uint64_t)1000000000)
/* The workers end by themselves this long after --duration. */
#define BOUND_GRACE_NS (5 * NS_PER_S)

int pr_setup(struct tk_session *s)
{
    struct pr *r = calloc(1, sizeof(*r));
    if (!r) {
        fprintf(stderr, "%s: out of memory\n", s->cli.prog);
        return TK_EXIT_FAILED;
    }
    s->state = r;
    r->o = *(const struct pr_opts *)s->opts;
    r->prog = s->cli.prog;
    s->comment = "\n";
    r->cap = (size_t)(r->o.duration_ns / NS_PER_S) + 2;
    r->seconds = calloc(r->cap, sizeof(*r->seconds));
    if (!r->seconds) {
        fprintf(stderr, "%s: out of memory for the run's records\n", s->cli.prog);
        return TK_EXIT_FAILED;
    }
    tk_machine_collect(&r->mf);
    int rc = tk_timer_init_clock(&r->clock, CLOCK_MONOTONIC, "clock_gettime(CLOCK_MONOTONIC)");
    if (rc != 0) {
        fprintf(stderr, "%s: CLOCK_MONOTONIC cannot be read: %s\n", s->cli.prog, strerror(-rc));
        return TK_EXIT_FAILED;
    }
    return 0;
}

void pr_teardown(struct tk_session *s)
{
    struct pr *r = s->state;
    if (!r)
        return;
    tk_pressure_release(&r->p);
    free(r->seconds);
    free(r);
    s->state = NULL;
}

static const char *fmt_rate(char *buf, size_t size, uint64_t delta, double seconds, double scale,
                            int decimals)
{
    return tk_fmt_double(buf, size, seconds > 0 ? (double)delta / seconds * scale : 0, decimals);
}

static void print_head(FILE *f, const struct tk_pressure_spec *s)
{
    fprintf(f, "%6s", "time");
    if (s->vm)
        fprintf(f, " %10s %13s %12s", "vm rnd/s", "swept MiB/s", "faults/s");
    if (s->spin)
        fprintf(f, " %12s", "spin Mloop/s");
    if (s->sync)
        fprintf(f, " %9s", "syncs/s");
    if (s->hdd)
        fprintf(f, " %9s", "hdd MiB/s");
    fprintf(f, " %7s\n", "ended");
}

/* Second i's line: the rates since the line before. */
static void print_second(FILE *f, const struct pr *r, size_t i)
{
    const struct tk_pressure_spec *s = &r->o.spec;
    const struct pr_second *c = &r->seconds[i];
    static const struct pr_second zero;
    const struct pr_second *b = i ? &r->seconds[i - 1] : &zero;
    double dt = c->t - b->t;
    char x[TK_FMT_MAX], y[TK_FMT_MAX], z[TK_FMT_MAX], t[TK_FMT_MAX];
    fprintf(f, "%6s", tk_fmt_double(t, sizeof(t), c->t, 1));
    if (s->vm)
        fprintf(f, " %10s %13s %12s",
                fmt_rate(x, sizeof(x), c->at.ops[TK_PW_VM] - b->at.ops[TK_PW_VM], dt, 1, 1),
                fmt_rate(y, sizeof(y), c->at.swept - b->at.swept, dt, 1.0 / (1 << 20), 1),
                fmt_rate(z, sizeof(z), c->at.minflt + c->at.majflt - b->at.minflt - b->at.majflt,
                         dt, 1, 0));
    if (s->spin)
        fprintf(
            f, " %12s",
            fmt_rate(x, sizeof(x), c->at.ops[TK_PW_SPIN] - b->at.ops[TK_PW_SPIN], dt, 1.048576, 1));
    if (s->sync)
        fprintf(f, " %9s",
                fmt_rate(x, sizeof(x), c->at.ops[TK_PW_SYNC] - b->at.ops[TK_PW_SYNC], dt, 1, 1));
    if (s->hdd)
        fprintf(
            f, " %9s",
            fmt_rate(x, sizeof(x), c->at.bytes[TK_PW_HDD] - b->at.bytes[TK_PW_HDD], dt, 1e-6, 1));
    fprintf(f, " %7zu\n", c->ended);
    fflush(f);
}

static void print_header(FILE *f, const struct pr *r)
{
    char d[24];
    unsigned n = tk_pressure_workers(&r->o.spec);
    fprintf(f, "rtmem pressure: %u worker%s for %s\n", n, n == 1 ? "" : "s",
            tk_args_fmt_time(d, sizeof(d), r->o.duration_ns));
    tk_machine_print(f, &r->mf);
    tk_pressure_print_spec(f, "  ", &r->o.spec);
    uint64_t avail = tk_pressure_mem_available();
    if (r->o.spec.vm && avail) {
        char a[24], b[24];
        fprintf(f, "  memory: %s for the vm workers, %s available (MemAvailable, cgroup)%s\n",
                tk_opt_fmt_bytes(a, sizeof(a), (uint64_t)r->o.spec.vm * r->o.spec.bytes),
                tk_fmt_iec_approx(b, sizeof(b), avail), r->o.force ? " (--force)" : "");
    }
    fprintf(f, "\n");
}

enum tk_run_end pr_run(struct tk_session *s)
{
    struct pr *r = s->state;
    struct tk_stop_saved saved;
    tk_stop_catch(&saved);
    char why[256];
    print_header(stdout, r);
    fflush(stdout);
    int rc =
        tk_pressure_start(&r->p, &r->o.spec, r->o.duration_ns + BOUND_GRACE_NS, why, sizeof(why));
    if (rc != 0) {
        tk_stop_release(&saved);
        fprintf(stderr, "%s: %s\n", r->prog, why);
        return TK_RUN_ABORTED;
    }
    r->started = true;
    print_head(stdout, &r->o.spec);
    tk_progress_phase("the load", 0, (double)r->o.duration_ns / 1e9);
    uint64_t start = r->p.start_ns, end = start + r->o.duration_ns;
    for (size_t i = 0; i < r->cap; i++) {
        uint64_t next = start + (uint64_t)(i + 1) * NS_PER_S;
        if (next > end)
            next = end;
        struct timespec ts = { .tv_sec = (time_t)(next / NS_PER_S),
                               .tv_nsec = (long)(next % NS_PER_S) };
        /* A signal (EINTR) ends the wait early: the second is recorded as
         * far as it got. */
        (void)clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        tk_pressure_beat(&r->p);
        struct pr_second *c = &r->seconds[r->n_seconds++];
        tk_pressure_totals(&r->p, &c->at);
        c->t = c->at.seconds;
        c->ended = tk_pressure_poll(&r->p);
        print_second(stdout, r, r->n_seconds - 1);
        if (tk_stop_requested() || c->ended > 0 || tk_monotonic_ns() >= end)
            break;
    }
    tk_pressure_stop(&r->p);
    tk_stop_release(&saved);
    tk_pressure_totals(&r->p, &r->total);
    r->stopped = tk_stop_requested();
    r->stop_name = tk_stop_name();
    return r->p.n_ended ? TK_RUN_FAILED : TK_RUN_PASSED;
}

void pr_report(const struct tk_session *s, FILE *f)
{
    const struct pr *r = s->state;
    char t[TK_FMT_MAX];
    fprintf(f, "\n");
    if (r->stopped)
        fprintf(f, "stopped by %s after %s s, as a complete run\n", r->stop_name,
                tk_fmt_double(t, sizeof(t), r->total.seconds, 1));
    fprintf(f, "over %s s, every worker reaped:\n",
            tk_fmt_double(t, sizeof(t), r->total.seconds, 1));
    tk_pressure_print_rates(f, "  ", &r->o.spec, &r->total);
    tk_pressure_print_ended(f, "  ", &r->p);
}

void pr_facts(const struct tk_session *s, struct tk_facts *out)
{
    const struct pr *r = s->state;
    out->machine = &r->mf;
    out->timer = &r->clock;
}

void pr_json(const struct tk_session *s, struct tk_json *j)
{
    const struct pr *r = s->state;
    tk_json_key(j, "params");
    tk_json_begin_object(j);
    tk_json_kv_uint(j, "duration_ns", r->o.duration_ns);
    tk_json_kv_bool(j, "force", r->o.force);
    tk_json_kv_bool(j, "quick", r->o.quick);
    tk_json_end_object(j);
    tk_json_key(j, "load");
    tk_pressure_spec_json(j, &r->o.spec, true);
    if (tk_json_key_or_null(j, "stopped_by", r->stopped))
        tk_json_string(j, r->stop_name);
    tk_json_key(j, "totals");
    tk_pressure_totals_json(j, &r->total, &r->p);
    /* What the workers did in each second (the last may be shorter). */
    tk_json_key(j, "per_second");
    tk_json_begin_array(j);
    for (size_t i = 0; i < r->n_seconds; i++) {
        const struct pr_second *c = &r->seconds[i];
        static const struct pr_second zero;
        const struct pr_second *b = i ? &r->seconds[i - 1] : &zero;
        tk_json_begin_object_compact(j);
        tk_json_kv_double(j, "t_s", c->t);
        tk_json_kv_double(j, "dt_s", c->t - b->t);
        tk_json_kv_uint(j, "vm_rounds", c->at.ops[TK_PW_VM] - b->at.ops[TK_PW_VM]);
        tk_json_kv_uint(j, "vm_bytes_written", c->at.bytes[TK_PW_VM] - b->at.bytes[TK_PW_VM]);
        tk_json_kv_uint(j, "vm_bytes_swept", c->at.swept - b->at.swept);
        tk_json_kv_uint(j, "vm_faults", c->at.minflt + c->at.majflt - b->at.minflt - b->at.majflt);
        tk_json_kv_uint(j, "spin_loops", (c->at.ops[TK_PW_SPIN] - b->at.ops[TK_PW_SPIN]) << 20);
        tk_json_kv_uint(j, "sync_calls", c->at.ops[TK_PW_SYNC] - b->at.ops[TK_PW_SYNC]);
        tk_json_kv_uint(j, "hdd_bytes_written", c->at.bytes[TK_PW_HDD] - b->at.bytes[TK_PW_HDD]);
        tk_json_kv_uint(j, "workers_ended", c->ended);
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
}
