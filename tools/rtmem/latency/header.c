/*
 * `rtmem latency`: what every mode prints around its own lines: the header
 * (machine, clock, real-time setup, the load), whether the run was
 * real-time, what the load did, the page faults and steal time, a stop.
 */
#include <signal.h>
#include <string.h>

#include "common/opt.h"
#include "latency.h"

bool lat_real_time(const struct lat *l)
{
    return l->rt.fifo.granted && l->rt.lock.granted;
}

/* Why a step of the setup is not in force, for the plain statement. */
static const char *why_not(const struct lat *l, const struct tk_rt_step *s)
{
    if (!s->requested)
        return l->o.rt.no_rt ? "--no-rt" : "not requested";
    return s->err ? strerror(s->err) : "not in force when read back";
}

void lat_print_setup_verdict(FILE *f, const struct lat *l)
{
    const struct tk_rt_state *rt = &l->rt;
    if (lat_real_time(l)) {
        fprintf(f, "real-time  : SCHED_FIFO %d on cpu %d, memory locked (VmLck %ld kB)\n",
                rt->priority_now, rt->cpu_now, rt->vmlck_kb);
        return;
    }
    char text[512];
    size_t len = 0;
    len += (size_t)snprintf(text, sizeof(text), "NOT REAL-TIME: this run has");
    if (!rt->fifo.granted && len < sizeof(text))
        len += (size_t)snprintf(text + len, sizeof(text) - len,
                                " no real-time priority (SCHED_FIFO: %s; it runs %s)",
                                why_not(l, &rt->fifo), tk_rt_policy_name(rt->policy));
    if (!rt->fifo.granted && !rt->lock.granted && len < sizeof(text))
        len += (size_t)snprintf(text + len, sizeof(text) - len, " and");
    if (!rt->lock.granted && len < sizeof(text))
        len += (size_t)snprintf(text + len, sizeof(text) - len, " no locked memory (mlockall: %s)",
                                why_not(l, &rt->lock));
    if (len < sizeof(text))
        snprintf(text + len, sizeof(text) - len,
                 ". It still measures, but the figures include ordinary scheduling delays%s. %s",
                 rt->lock.granted ? "" : " and page faults",
                 l->o.rt.no_rt
                     ? "Leave out --no-rt (and run as root) for real-time figures."
                     : "Run as root (or with CAP_SYS_NICE and CAP_IPC_LOCK) for real-time "
                       "figures.");
    tk_opt_wrap(f, text, 0, 2);
}

void lat_print_header(FILE *f, const struct lat *l)
{
    fprintf(f, "rtmem latency: %s\n",
            l->o.noise ? "machine noise, a thread spinning on the clock"
                       : "wake-up latency of a periodic thread");
    tk_machine_print(f, &l->mf);
    tk_timer_print(f, "clock: ", &l->clock, TK_DETAIL_BRIEF);
    tk_rt_print(f, &l->rt);
    fprintf(f, "  timer slack  : %ld ns (PR_SET_TIMERSLACK)\n", l->timer_slack_ns);
    lat_print_dma(f, l);
    if (l->rt.affinity.granted && l->cpu_isolated_known)
        fprintf(f, "  isolation    : cpu %d is %s\n", l->rt.cpu_now,
                l->cpu_isolated ? "isolated (isolcpus)"
                                : "not isolated: other tasks and interrupts may run on it");
    if (l->rt.affinity.granted && l->rt_neighbours) {
        char text[320];
        snprintf(text, sizeof(text),
                 "NOTE: %zu other real-time task%s may run on cpu %d (%s%s): one of the same "
                 "priority makes the measuring thread wait, unseen by any count of this run",
                 l->rt_neighbours, l->rt_neighbours == 1 ? "" : "s", l->rt.cpu_now, l->rt_neighbour,
                 l->rt_neighbours > 1 ? ", ..." : "");
        fputs("  ", f);
        tk_opt_wrap(f, text, 2, 8);
    }
    if (l->virtual_machine)
        fprintf(f, "  machine      : a virtual machine (hypervisor flag in /proc/cpuinfo)\n");
    if (l->o.pressure.given && !l->o.sweep) {
        fprintf(f, "pressure   : beside the run, started before it and stopped after it:\n");
        tk_pressure_print_spec(f, "  ", &l->load);
    }
    if ((l->o.pressure.given || l->o.sweep) && l->rt.affinity.granted &&
        (!l->load.cpus_given || CPU_ISSET(l->rt.req.cpu, &l->load.cpus)))
        fprintf(f, "  NOTE: the load's workers may run on cpu %d, the one measured%s\n",
                l->rt.req.cpu,
                l->o.pressure_cpus.given ? " (--pressure-cpus)" : ": it is the only one allowed");
    lat_print_setup_verdict(f, l);
    fprintf(f, "\n");
}

void lat_print_dma(FILE *f, const struct lat *l)
{
    const struct lat_dma *d = &l->dma;
    char was[48] = "unknown";
    if (d->machine_known)
        snprintf(was, sizeof(was), "%ld us", (long)d->machine_us);
    char text[400];
    if (d->held)
        snprintf(text, sizeof(text),
                 "%s held at 0 us for the run, as cyclictest does: no CPU enters an idle state "
                 "slower to leave (the machine's setting: %s; --default-system keeps it)",
                 d->path, was);
    else if (!d->hold)
        snprintf(text, sizeof(text),
                 "%s left at the machine's setting, %s (--default-system): a wake-up from a "
                 "deep idle state adds its exit time, which cyclictest's default run does not",
                 d->path, was);
    else if (d->err)
        snprintf(text, sizeof(text),
                 "%s NOT held at 0: %s; the run keeps the machine's setting (%s), and a wake-up "
                 "from a deep idle state adds its exit time",
                 d->path, strerror(d->err), was);
    else if (d->in_force_known)
        snprintf(text, sizeof(text),
                 "%s NOT held at 0: 0 written but %ld us read back; the run keeps that setting",
                 d->path, (long)d->in_force_us);
    else
        snprintf(text, sizeof(text),
                 "%s NOT held at 0: 0 written but the limit in force could not be read back",
                 d->path);
    fputs("  idle states  : ", f);
    tk_opt_wrap(f, text, 17, 17);
}

void lat_print_load(FILE *f, const struct lat *l)
{
    if (!l->load_on)
        return;
    char t[TK_FMT_MAX];
    fprintf(f, "pressure   : over %s s, every worker reaped:\n",
            tk_fmt_double(t, sizeof(t), l->load_totals.seconds, 1));
    tk_pressure_print_rates(f, "  ", &l->load, &l->load_totals);
    tk_pressure_print_ended(f, "  ", &l->pressure);
    if (l->pressure.n_ended)
        fprintf(f, "  The load did not run as asked: the run fails.\n");
}

void lat_print_faults(FILE *f, const struct lat *l)
{
    fprintf(f, "page faults: minor %llu, major %llu (the measuring thread, during the run)\n",
            (unsigned long long)l->minflt, (unsigned long long)l->majflt);
    if (l->steal_ms < 0)
        fprintf(f, "steal time : unknown (/proc/stat)\n");
    else if (l->rt.affinity.granted)
        fprintf(
            f,
            "steal time : %ld ms on cpu %d during the run (time the hypervisor gave elsewhere)\n",
            l->steal_ms, l->rt.cpu_now);
    else
        fprintf(f, "steal time : %ld ms over all CPUs during the run (not pinned)\n", l->steal_ms);
}

const char *lat_stop_name(const struct lat *l)
{
    return l->stop_signal == SIGTERM ? "SIGTERM" : "SIGINT";
}

void lat_print_stopped(FILE *f, const struct lat *l)
{
    char s[TK_FMT_MAX];
    if (l->stopped)
        fprintf(f, "stopped by %s after %s s, as a complete run: its figures follow\n",
                lat_stop_name(l), tk_fmt_double(s, sizeof(s), (double)l->measured_ns / 1e9, 3));
}
