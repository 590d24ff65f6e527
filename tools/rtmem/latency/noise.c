/*
 * `rtmem latency --noise`: the spinning loop, its per-second lines (NTD),
 * its summary and its JSON.
 *
 * The loop reads CLOCK_MONOTONIC back to back for the duration. The time
 * between two readings is the reading's own cost (tens of ns) unless the
 * CPU went elsewhere in between; a gap above the threshold is recorded
 * (counted, summed, its maximum and its log2 bucket kept). Every
 * LAT_NOISE_SLICE_NS the loop looks at the stop flag and, under a
 * real-time policy, rests when RT throttling would otherwise stop it
 * (tk_rt_breather): a rest is not measured, and the time spun is reported
 * beside the time rested.
 */
#include <math.h>
#include <sched.h>
#include <sys/resource.h>

#include "common/opt.h"
#include "common/stop.h"
#include "latency.h"

/* How often the loop looks up from spinning: the stop flag, the rests. */
#define LAT_NOISE_SLICE_NS (10u * NS_PER_MS)

/* A rest from spinning, unmeasured: the one RT throttling calls for
 * (tk_rt_breather), or, where throttling is off or unknown and would never
 * stop a real-time thread, one of the tool's own (LAT_NOISE_REST_NS every
 * LAT_NOISE_BUSY_NS), so that the CPU's kernel threads still run. */
#define LAT_NOISE_BUSY_NS (500u * NS_PER_MS)
#define LAT_NOISE_REST_NS (100u * NS_PER_MS)

static bool noise_rest(struct tk_rt_state *rt)
{
    if (tk_rt_breather(rt))
        return true;
    if (rt->policy != SCHED_FIFO && rt->policy != SCHED_RR)
        return false;
    if (!rt->throttle_unknown && rt->rt_runtime_us >= 0 && rt->rt_period_us > 0 &&
        rt->rt_runtime_us < rt->rt_period_us)
        return false; /* throttling is on: the breather's rests are the ones */
    if (tk_clock_ns() - rt->busy_since_ns < LAT_NOISE_BUSY_NS)
        return false;
    struct timespec ts = { 0, (long)LAT_NOISE_REST_NS };
    (void)nanosleep(&ts, NULL);
    rt->busy_since_ns = tk_clock_ns();
    rt->rests++;
    return true;
}

/* Closes second i with *sec; it starts the next second. */
static void close_second(struct lat *l, struct lat_second *sec, size_t i)
{
    lat_publish(l, i, sec);
    struct noise_second *c = &sec->noise;
    c->spun_ns = c->gaps = c->noise_ns = c->max_gap_ns = 0;
}

void lat_noise_loop(struct lat *l, struct tk_rt_state *rt)
{
    const uint64_t threshold = l->o.noise_threshold_ns;
    struct noise_result *r = &l->noise;
    struct lat_second sec = { .noise = { 0 } };
    struct noise_second *cur = &sec.noise;
    size_t second = 0;
    uint64_t begin = lat_now_ns();
    uint64_t end = begin + l->o.duration_ns;
    uint64_t second_end = begin + NS_PER_S, slice_end = begin + LAT_NOISE_SLICE_NS;
    uint64_t prev = begin;
    /* The throttle's count starts with the spinning. */
    rt->busy_since_ns = tk_clock_ns();
    struct rusage ru0, ru1;
    bool ru = getrusage(RUSAGE_THREAD, &ru0) == 0;
    for (;;) {
        uint64_t t = lat_now_ns();
        uint64_t gap = t - prev;
        prev = t;
        r->reads++;
        cur->spun_ns += gap;
        if (gap > threshold) {
            r->gaps++;
            r->noise_ns += gap;
            r->max_gap_ns = gap > r->max_gap_ns ? gap : r->max_gap_ns;
            r->stalls += gap >= LAT_STALL_NS;
            tk_hist_add(&r->hist, gap);
            cur->gaps++;
            cur->gaps_total++;
            cur->noise_ns += gap;
            cur->max_gap_ns = gap > cur->max_gap_ns ? gap : cur->max_gap_ns;
            cur->worst_ns = gap > cur->worst_ns ? gap : cur->worst_ns;
        }
        if (t >= end)
            break;
        while (t >= second_end) {
            close_second(l, &sec, second++);
            second_end += NS_PER_S;
        }
        if (t < slice_end)
            continue;
        if (tk_stop_requested())
            break;
        if (noise_rest(rt)) {
            prev = lat_now_ns();
            r->rested_ns += prev - t;
        }
        slice_end = prev + LAT_NOISE_SLICE_NS;
    }
    if (ru && getrusage(RUSAGE_THREAD, &ru1) == 0)
        r->preempted = (uint64_t)(ru1.ru_nivcsw - ru0.ru_nivcsw);
    if (cur->spun_ns || cur->gaps)
        close_second(l, &sec, second);
    l->measured_ns = prev - begin;
    r->spun_ns = l->measured_ns - r->rested_ns;
    l->stopped = prev < end;
}

void lat_noise_print_head(FILE *f, const struct lat *l)
{
    char thr[24], duration[24];
    fprintf(f, "== noise: %s of CLOCK_MONOTONIC read back to back, every gap above %s recorded\n",
            tk_args_fmt_time(duration, sizeof(duration), l->o.duration_ns),
            tk_args_fmt_time(thr, sizeof(thr), l->o.noise_threshold_ns));
    fprintf(f, "== all figures in microseconds\n");
    fprintf(f, "NTH|-----gaps|-------noise|--max gap|-spun ms|-gaps total|--gap worst\n");
}

void lat_noise_print_second(FILE *f, const struct lat *l, size_t i)
{
    const struct noise_second *c = &l->seconds[i].noise;
    char noise[TK_FMT_MAX], mx[TK_FMT_MAX], spun[TK_FMT_MAX], worst[TK_FMT_MAX];
    fprintf(f, "NTD|%9llu|%12s|%9s|%8s|%11llu|%11s\n", (unsigned long long)c->gaps,
            lat_fmt_us(noise, sizeof(noise), c->noise_ns),
            c->gaps ? lat_fmt_us(mx, sizeof(mx), c->max_gap_ns) : "-",
            tk_fmt_double(spun, sizeof(spun), (double)c->spun_ns / NS_PER_MS, 0),
            (unsigned long long)c->gaps_total,
            c->gaps_total ? lat_fmt_us(worst, sizeof(worst), c->worst_ns) : "-");
}

/* Is what the loop found the machine's own stalls? Only a real-time
 * thread that no other task preempted can tell: otherwise its gaps include
 * the tasks run in its place. */
static bool machine_stalls(const struct lat *l)
{
    return l->noise.stalls > 0 && l->rt.fifo.granted && l->noise.preempted == 0;
}

void lat_noise_report(const struct lat *l, FILE *f)
{
    const struct noise_result *r = &l->noise;
    char a[TK_FMT_MAX], b[TK_FMT_MAX], c[TK_FMT_MAX], thr[24];
    fprintf(f, "---|---------|------------|---------|--------|-----------|-----------\n");
    fprintf(f, "NTS|%9llu|%12s|%9s|%8s|\n", (unsigned long long)r->gaps,
            lat_fmt_us(a, sizeof(a), r->noise_ns),
            r->gaps ? lat_fmt_us(b, sizeof(b), r->max_gap_ns) : "-",
            tk_fmt_double(c, sizeof(c), (double)r->spun_ns / NS_PER_MS, 0));
    fprintf(f, "\n");
    lat_print_stopped(f, l);
    fprintf(f, "measured   : %s s spinning (%llu clock readings), %s s resting from it\n",
            tk_fmt_double(a, sizeof(a), (double)r->spun_ns / 1e9, 3), (unsigned long long)r->reads,
            tk_fmt_double(b, sizeof(b), (double)r->rested_ns / 1e9, 3));
    char text[640];
    snprintf(text, sizeof(text),
             "%llu above %s, %s us in all (%s%% of the time), "
             "longest %s us",
             (unsigned long long)r->gaps,
             tk_args_fmt_time(thr, sizeof(thr), l->o.noise_threshold_ns),
             lat_fmt_us(a, sizeof(a), r->noise_ns),
             tk_fmt_double(b, sizeof(b),
                           r->spun_ns ? 100.0 * (double)r->noise_ns / (double)r->spun_ns : NAN, 4),
             r->gaps ? lat_fmt_us(c, sizeof(c), r->max_gap_ns) : "-");
    /* Wrapped under itself: the wrap would collapse the label's spaces. */
    fprintf(f, "gaps       : ");
    tk_opt_wrap(f, text, 13, 13);
    fprintf(f, "stalls     : %llu (gaps of %s or more)\n", (unsigned long long)r->stalls,
            tk_args_fmt_time(thr, sizeof(thr), LAT_STALL_NS));
    fprintf(f, "preempted  : %llu (involuntary context switches of the spinning thread)\n",
            (unsigned long long)r->preempted);
    fprintf(f, "histogram  : gaps in us, buckets [2^(b-1), 2^b) ns\n");
    tk_hist_print(f, &r->hist, 1e-3, 3, "us");
    lat_print_faults(f, l);
    lat_print_setup_verdict(f, l);
    if (machine_stalls(l)) {
        snprintf(text, sizeof(text),
                 "THE MACHINE ITSELF STALLS: a SCHED_FIFO thread spinning on cpu %d lost its CPU "
                 "for up to %s ms at once. Interrupts and kernel threads take microseconds; "
                 "stalls of milliseconds come from under the kernel (virtual-machine exits, "
                 "SMIs, firmware)%s. Whatever the workload, expect latencies of that order.",
                 l->rt.cpu_now, tk_fmt_double(a, sizeof(a), (double)r->max_gap_ns / 1e6, 3),
                 l->virtual_machine ? ": this is a virtual machine" : "");
        tk_opt_wrap(f, text, 0, 0);
    } else if (l->rt.fifo.granted && r->stalls > 0) { /* and preempted */
        snprintf(text, sizeof(text),
                 "%llu gaps of %s or more, but the spinning thread was also preempted %llu "
                 "times (a task of higher priority, or RT throttling, took its CPU): those "
                 "gaps may be that task's, and stalls of the machine cannot be told from "
                 "them. Run again with that task stopped.",
                 (unsigned long long)r->stalls, tk_args_fmt_time(thr, sizeof(thr), LAT_STALL_NS),
                 (unsigned long long)r->preempted);
        tk_opt_wrap(f, text, 0, 0);
    } else if (!l->rt.fifo.granted)
        fprintf(f, "Without SCHED_FIFO the gaps include the other tasks the CPU ran: machine\n"
                   "stalls cannot be told from them.\n");
    else
        fprintf(f,
                "No gap of %s or more: what is above is interrupts and kernel work on this\n"
                "CPU, or short stalls of the machine.\n",
                tk_args_fmt_time(thr, sizeof(thr), LAT_STALL_NS));
}

void lat_noise_json(const struct lat *l, struct tk_json *j)
{
    const struct noise_result *r = &l->noise;
    tk_json_key(j, "noise");
    tk_json_begin_object(j);
    tk_json_kv_uint(j, "threshold_ns", l->o.noise_threshold_ns);
    tk_json_kv_uint(j, "spun_ns", r->spun_ns);
    tk_json_kv_uint(j, "rested_ns", r->rested_ns);
    tk_json_kv_uint(j, "reads", r->reads);
    tk_json_kv_uint(j, "gaps", r->gaps);
    tk_json_kv_uint(j, "total_ns", r->noise_ns);
    if (tk_json_key_or_null(j, "max_ns", r->gaps > 0))
        tk_json_uint(j, r->max_gap_ns);
    tk_json_kv_uint(j, "stall_threshold_ns", LAT_STALL_NS);
    tk_json_kv_uint(j, "stalls", r->stalls);
    tk_json_kv_uint(j, "preempted", r->preempted);
    tk_json_kv_bool(j, "machine_stalls", machine_stalls(l));
    tk_json_key(j, "histogram");
    tk_hist_json(j, &r->hist, "ns");
    tk_json_key(j, "per_second");
    tk_json_begin_array(j);
    size_t n = atomic_load_explicit(&l->published, memory_order_acquire);
    for (size_t i = 0; i < n; i++) {
        const struct noise_second *c = &l->seconds[i].noise;
        tk_json_begin_object_compact(j);
        tk_json_kv_uint(j, "second", i + 1);
        tk_json_kv_uint(j, "spun_ns", c->spun_ns);
        tk_json_kv_uint(j, "gaps", c->gaps);
        tk_json_kv_uint(j, "total_ns", c->noise_ns);
        if (tk_json_key_or_null(j, "max_ns", c->gaps > 0))
            tk_json_uint(j, c->max_gap_ns);
        tk_json_kv_uint(j, "gaps_total", c->gaps_total);
        if (tk_json_key_or_null(j, "worst_ns", c->gaps_total > 0))
            tk_json_uint(j, c->worst_ns);
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
    tk_json_end_object(j);
}
