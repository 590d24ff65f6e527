/*
 * `rtmem latency`: the periodic loop, its per-second lines (RTD), its
 * summary (RTS and what follows) and its JSON.
 *
 * Deadline k is start + k * period, start one period after the loop
 * begins; the run has duration / period deadlines. A wake-up for deadline
 * k read at time now is late by now - deadline; the deadlines it passed
 * (k+1 .. while <= now, within the run) are overruns: each is counted,
 * none has a sample, and the next sleep is to the first deadline still
 * ahead. So, for a run not stopped early, samples + overruns = deadlines.
 * A second's record holds the wake-ups whose deadline falls in it.
 */
#include <errno.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "common/opt.h"
#include "common/stop.h"
#include "latency.h"

static struct timespec ts_of(uint64_t ns)
{
    return (struct timespec){ .tv_sec = (time_t)(ns / NS_PER_S), .tv_nsec = (long)(ns % NS_PER_S) };
}

/* Sleeps until the CLOCK_MONOTONIC time ns. Returns 0 or an errno. */
static int sleep_until(uint64_t ns)
{
    struct timespec ts = ts_of(ns);
    int rc;
    do
        rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    while (rc == EINTR);
    return rc;
}

/* Closes second i with *sec; it starts the next second. */
static void close_second(struct lat *l, struct lat_second *sec, size_t i)
{
    lat_publish(l, i, sec);
    struct probe_second *c = &sec->probe;
    c->samples = c->sum_ns = c->max_ns = c->overruns = 0;
    c->min_ns = UINT64_MAX;
}

void lat_probe_loop(struct lat *l)
{
    const uint64_t period = l->o.period_ns, n = l->deadlines;
    struct lat_second sec = { .probe = { .min_ns = UINT64_MAX, .best_ns = UINT64_MAX } };
    struct probe_second *cur = &sec.probe;
    size_t second = 0;
    unsigned stalls_left = l->stall_periods ? LAT_TEST_STALLS : 0;
    uint64_t begin = lat_now_ns();
    uint64_t start = begin + period;
    uint64_t k = 0; /* the next deadline */
    while (k < n && !tk_stop_requested()) {
        uint64_t deadline = start + k * period;
        int rc = sleep_until(deadline);
        if (rc != 0) {
            l->loop_err = rc;
            break;
        }
        uint64_t now = lat_now_ns();
        uint64_t late = 0;
        if (now >= deadline)
            late = now - deadline;
        else
            l->early++;
        uint64_t missed = late / period;
        if (missed > n - k - 1)
            missed = n - k - 1; /* deadlines after the run's last are not its */

        size_t s = (size_t)((deadline - start) / NS_PER_S);
        while (second < s)
            close_second(l, &sec, second++);
        tk_samples_add(&l->samples, late);
        tk_hist_add(&l->hist, late);
        cur->samples++;
        cur->sum_ns += late;
        cur->min_ns = late < cur->min_ns ? late : cur->min_ns;
        cur->max_ns = late > cur->max_ns ? late : cur->max_ns;
        cur->best_ns = late < cur->best_ns ? late : cur->best_ns;
        cur->worst_ns = late > cur->worst_ns ? late : cur->worst_ns;
        cur->overruns += missed;
        cur->overruns_total += missed;
        k += 1 + missed;

        /* The test hook: asleep until half a period past the K-th deadline
         * after the next, which the next wake-up then counts as overruns. */
        if (stalls_left && l->samples.n % LAT_TEST_STALL_EVERY == 0) {
            stalls_left--;
            (void)sleep_until(start + (k + l->stall_periods) * period + period / 2);
        }
    }
    if (cur->samples || cur->overruns)
        close_second(l, &sec, second);
    l->overruns = cur->overruns_total;
    l->stopped = k < n && l->loop_err == 0;
    l->measured_ns = lat_now_ns() - begin;
}

const char *lat_fmt_us(char *buf, size_t size, uint64_t ns)
{
    return tk_fmt_double(buf, size, (double)ns / NS_PER_US, 3);
}

/* A figure in us, "-" if there is none (a second without a wake-up). */
static const char *us_or_dash(char *buf, size_t size, uint64_t ns, bool have)
{
    return have ? lat_fmt_us(buf, size, ns) : "-";
}

void lat_probe_print_head(FILE *f, const struct lat *l)
{
    char period[24], duration[24];
    fprintf(f, "== %s period, %s, deadlines by clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)\n",
            tk_args_fmt_time(period, sizeof(period), l->o.period_ns),
            tk_args_fmt_time(duration, sizeof(duration), l->o.duration_ns));
    if (l->stall_periods)
        fprintf(f,
                "== test hook %s=%u: the loop oversleeps past %u deadlines, %u times, on purpose\n",
                LAT_TEST_STALL_ENV, l->stall_periods, l->stall_periods, LAT_TEST_STALLS);
    fprintf(f, "== all figures in microseconds\n");
    fprintf(f, "RTH|----lat min|----lat avg|----lat max|-overrun|---lat best|--lat worst\n");
}

void lat_probe_print_second(FILE *f, const struct lat *l, size_t i)
{
    const struct probe_second *c = &l->seconds[i].probe;
    char mn[TK_FMT_MAX], avg[TK_FMT_MAX], mx[TK_FMT_MAX], best[TK_FMT_MAX], worst[TK_FMT_MAX];
    bool have = c->samples > 0, ever = c->best_ns != UINT64_MAX;
    if (have)
        tk_fmt_double(avg, sizeof(avg), (double)c->sum_ns / (double)c->samples / NS_PER_US, 3);
    fprintf(f, "RTD|%11s|%11s|%11s|%8llu|%11s|%11s\n", us_or_dash(mn, sizeof(mn), c->min_ns, have),
            have ? avg : "-", us_or_dash(mx, sizeof(mx), c->max_ns, have),
            (unsigned long long)c->overruns_total, us_or_dash(best, sizeof(best), c->best_ns, ever),
            us_or_dash(worst, sizeof(worst), c->worst_ns, ever));
}

/* "hh:mm:ss" of ns, into buf. */
static const char *fmt_hms(char *buf, size_t size, uint64_t ns)
{
    uint64_t s = ns / NS_PER_S;
    snprintf(buf, size, "%02llu:%02llu:%02llu", (unsigned long long)(s / 3600),
             (unsigned long long)(s / 60 % 60), (unsigned long long)(s % 60));
    return buf;
}

static void print_rts(FILE *f, const struct lat *l)
{
    const struct tk_summary *m = &l->summary;
    char mn[TK_FMT_MAX], avg[TK_FMT_MAX], mx[TK_FMT_MAX], took[16], asked[16];
    fprintf(f, "---|-----------|-----------|-----------|--------|-----------------------\n");
    fprintf(f, "RTS|%11s|%11s|%11s|%8llu|    %s/%s\n",
            tk_fmt_double(mn, sizeof(mn), m->min / 1e3, 3),
            tk_fmt_double(avg, sizeof(avg), m->mean / 1e3, 3),
            tk_fmt_double(mx, sizeof(mx), m->max / 1e3, 3), (unsigned long long)l->overruns,
            fmt_hms(took, sizeof(took), l->measured_ns),
            fmt_hms(asked, sizeof(asked), l->o.duration_ns));
}

/* A line per threshold: "later than :  10us   9299 wake-ups (92.990%)". */
static void print_thresholds(FILE *f, const struct lat *l)
{
    for (size_t i = 0; i < l->o.thresholds.n; i++) {
        char t[24], pct[TK_FMT_MAX];
        double share =
            l->summary.count ? 100.0 * (double)l->above[i] / (double)l->summary.count : NAN;
        fprintf(f, "%s %7s %10llu wake-ups (%s%%)\n", i ? "            " : "later than :",
                tk_args_fmt_time(t, sizeof(t), l->o.thresholds.ns[i]),
                (unsigned long long)l->above[i], tk_fmt_double(pct, sizeof(pct), share, 3));
    }
}

/* The spread as a small table, in us. */
static void print_percentiles(FILE *f, const struct tk_summary *m)
{
    const double v[] = { m->p50, m->p99, m->p999, m->p9999, m->max };
    fprintf(f, "percentiles:        p50        p99      p99.9     p99.99        max\n");
    fprintf(f, "          us");
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        char buf[TK_FMT_MAX];
        fprintf(f, " %10s", tk_fmt_double(buf, sizeof(buf), v[i] / 1e3, 3));
    }
    fprintf(f, "\n");
}

void lat_probe_report(const struct lat *l, FILE *f)
{
    const struct tk_summary *m = &l->summary;
    char a[TK_FMT_MAX];
    print_rts(f, l);
    fprintf(f, "\n");
    lat_print_stopped(f, l);
    fprintf(f, "deadlines  : %llu%s: %llu wake-ups, %llu overruns (passed without a wake-up)\n",
            (unsigned long long)l->deadlines, l->stopped ? " planned" : "",
            (unsigned long long)m->count, (unsigned long long)l->overruns);
    if (l->early)
        fprintf(f,
                "early      : %llu wake-ups read the clock before their deadline (recorded "
                "as 0)\n",
                (unsigned long long)l->early);
    print_percentiles(f, m);
    print_thresholds(f, l);
    fprintf(f, "histogram  : latency in us, buckets [2^(b-1), 2^b) ns\n");
    tk_hist_print(f, &l->hist, 1e-3, 3, "us");
    lat_print_faults(f, l);
    lat_print_load(f, l);
    lat_print_setup_verdict(f, l);
    if (lat_real_time(l) && m->count && m->max >= (double)LAT_STALL_NS) {
        char text[256];
        snprintf(text, sizeof(text),
                 "Worst case %s ms: to see whether the machine itself stalls (a VM exit, an "
                 "SMI), run 'rtmem latency --noise' on the same CPU.",
                 tk_fmt_double(a, sizeof(a), m->max / 1e6, 3));
        tk_opt_wrap(f, text, 0, 0);
    }
}

void lat_summary_json(struct tk_json *j, const struct tk_summary *m, uint64_t overruns,
                      bool compact)
{
    if (compact)
        tk_json_begin_object_compact(j);
    else
        tk_json_begin_object(j);
    tk_json_kv_uint(j, "samples", m->count);
    tk_json_kv_uint(j, "overruns", overruns);
    tk_json_kv_double(j, "min_ns", m->min);
    tk_json_kv_double(j, "avg_ns", m->mean);
    tk_json_kv_double(j, "p50_ns", m->p50);
    tk_json_kv_double(j, "p99_ns", m->p99);
    tk_json_kv_double(j, "p999_ns", m->p999);
    tk_json_kv_double(j, "p9999_ns", m->p9999);
    tk_json_kv_double(j, "max_ns", m->max);
    tk_json_end_object(j);
}

void lat_probe_json(const struct lat *l, struct tk_json *j)
{
    tk_json_key(j, "summary");
    lat_summary_json(j, &l->summary, l->overruns, false);

    tk_json_kv_uint(j, "deadlines", l->deadlines);
    tk_json_kv_uint(j, "early", l->early);
    tk_json_kv_uint(j, "dropped", l->samples.dropped);
    tk_json_key(j, "above");
    tk_json_begin_array(j);
    for (size_t i = 0; i < l->o.thresholds.n; i++) {
        tk_json_begin_object_compact(j);
        tk_json_kv_uint(j, "threshold_ns", l->o.thresholds.ns[i]);
        tk_json_kv_uint(j, "count", l->above[i]);
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
    tk_json_key(j, "histogram");
    tk_hist_json(j, &l->hist, "ns");

    tk_json_key(j, "per_second");
    tk_json_begin_array(j);
    size_t n = atomic_load_explicit(&l->published, memory_order_acquire);
    for (size_t i = 0; i < n; i++) {
        const struct probe_second *c = &l->seconds[i].probe;
        bool have = c->samples > 0, ever = c->best_ns != UINT64_MAX;
        tk_json_begin_object_compact(j);
        tk_json_kv_uint(j, "second", i + 1);
        tk_json_kv_uint(j, "samples", c->samples);
        if (tk_json_key_or_null(j, "min_ns", have))
            tk_json_uint(j, c->min_ns);
        tk_json_kv_double(j, "avg_ns", have ? (double)c->sum_ns / (double)c->samples : NAN);
        if (tk_json_key_or_null(j, "max_ns", have))
            tk_json_uint(j, c->max_ns);
        tk_json_kv_uint(j, "overruns", c->overruns);
        tk_json_kv_uint(j, "overruns_total", c->overruns_total);
        if (tk_json_key_or_null(j, "best_ns", ever))
            tk_json_uint(j, c->best_ns);
        if (tk_json_key_or_null(j, "worst_ns", ever))
            tk_json_uint(j, c->worst_ns);
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
}

uint64_t lat_now_ns(void)
{
    return tk_monotonic_ns();
}

void lat_publish(struct lat *l, size_t i, const struct lat_second *rec)
{
    /* Always true: the records were sized for every second the duration
     * can start (lat_setup). */
    if (i < l->n_seconds_cap) {
        l->seconds[i] = *rec;
        atomic_store_explicit(&l->published, i + 1, memory_order_release);
        sem_post(&l->tick);
        /* The lease too, from here as well: the main thread may be blocked
         * writing to a paused terminal. One store a second. */
        if (l->load_on)
            tk_pressure_beat(&l->pressure);
    }
}
