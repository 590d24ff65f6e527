/*
 * `rtmem latency`: the run. Setup sizes and touches the result storage and
 * describes the clock; the run is a sweep (sweep.c), or one measured run
 * (measure.c) with its load beside it, then its summaries for the report.
 */
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "common/progress.h"
#include "common/cleanup.h"
#include "common/stop.h"
#include "common/timer.h"
#include "common/tool.h"
#include "latency.h"

/* The test hook's K from the environment; 0 when unset or not a number in
 * [1, LAT_TEST_STALL_MAX]. */
static unsigned test_stall_periods(void)
{
    const char *v = getenv(LAT_TEST_STALL_ENV);
    if (!v || !*v)
        return 0;
    char *end;
    unsigned long k = strtoul(v, &end, 10);
    return *end == '\0' && k >= 1 && k <= LAT_TEST_STALL_MAX ? (unsigned)k : 0;
}

/* Calloc'd and touched: the loop writes it without a page fault. */
static void *touched_array(size_t n, size_t size)
{
    volatile char *p = calloc(n, size);
    if (p)
        for (size_t i = 0; i < n * size; i += 4096)
            p[i] = 0;
    return (void *)p;
}

/* The workers' CPUs by default: those this process may use but the one
 * measured, when the measuring thread is pinned and another is left. */
static void load_cpus_default(struct lat *l)
{
    if (l->o.rt.no_rt && l->o.rt.cpu < 0) /* not pinned */
        return;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) != 0)
        return;
    int cpu = l->o.rt.cpu;
    for (int c = CPU_SETSIZE - 1; cpu < 0 && c >= 0; c--)
        if (CPU_ISSET(c, &set))
            cpu = c; /* the last allowed, as the real-time setup takes */
    if (cpu < 0)
        return;
    CPU_CLR(cpu, &set);
    if (CPU_COUNT(&set) == 0)
        return;
    l->load.cpus_given = true;
    l->load.cpus = set;
}

int lat_setup(struct tk_session *s)
{
    struct lat *l = calloc(1, sizeof(*l));
    if (!l) {
        fprintf(stderr, "%s: out of memory\n", s->cli.prog);
        return TK_EXIT_FAILED;
    }
    s->state = l;
    l->o = *(const struct lat_opts *)s->opts;
    l->prog = s->cli.prog;
    l->stall_periods = l->o.noise ? 0 : test_stall_periods();
    l->steal_ms = -1;
    l->dma.fd = -1;
    s->comment = "\n";

    /* One malloc arena: what the measuring thread's setup allocates (stdio
     * reading /proc) comes from the main one, not from a reservation of
     * its own that mlockall would lock too. */
    mallopt(M_ARENA_MAX, 1);

    /* A second that starts is a record: one more than whole seconds. */
    l->n_seconds_cap = (size_t)(l->o.duration_ns / NS_PER_S) + 2;
    l->seconds = touched_array(l->n_seconds_cap, sizeof(*l->seconds));
    if (l->seconds && !l->o.noise) {
        l->deadlines = l->o.duration_ns / l->o.period_ns;
        if (tk_samples_init(&l->samples, (size_t)l->deadlines) != 0) {
            free(l->seconds);
            l->seconds = NULL;
        }
    }
    if (!l->seconds) {
        fprintf(stderr, "%s: out of memory for the run's results\n", s->cli.prog);
        return TK_EXIT_FAILED;
    }
    if (l->o.pressure.given || l->o.sweep)
        l->load = l->o.pressure.spec; /* a sweep's base: cli.c filled it */
    else
        tk_pressure_defaults(&l->load);
    if (l->o.pressure_cpus.given) {
        l->load.cpus_given = true;
        l->load.cpus = l->o.pressure_cpus.set;
    } else {
        load_cpus_default(l);
    }
    if (l->o.sweep && lat_sweep_setup(l) != 0) {
        fprintf(stderr, "%s: out of memory for the sweep's results\n", s->cli.prog);
        return TK_EXIT_FAILED;
    }
    tk_machine_collect(&l->mf);
    l->virtual_machine = lat_virtual_machine();
    int rc = tk_timer_init_clock(&l->clock, CLOCK_MONOTONIC, "clock_gettime(CLOCK_MONOTONIC)");
    if (rc != 0) {
        fprintf(stderr, "%s: CLOCK_MONOTONIC cannot be read: %s\n", s->cli.prog, strerror(-rc));
        return TK_EXIT_FAILED;
    }
    return 0;
}

void lat_teardown(struct tk_session *s)
{
    struct lat *l = s->state;
    if (!l)
        return;
    tk_pressure_release(&l->pressure);
    lat_dma_release(&l->dma);
    tk_samples_destroy(&l->samples);
    free(l->seconds);
    free(l->runs);
    free(l);
    s->state = NULL;
}

/* One run, or the sweep's runs, with the load of --pressure. */
static enum tk_run_end run_all(struct lat *l)
{
    if (l->o.sweep)
        return lat_sweep(l);
    /* The load first: its workers are forked while this process has one
     * thread. */
    if (l->o.pressure.given) {
        char why[256];
        if (lat_load_start(l, &l->load, why, sizeof(why)) != 0) {
            fprintf(stderr, "%s: the load cannot start: %s\n", l->prog, why);
            return TK_RUN_ABORTED;
        }
    }
    tk_progress_phase(l->o.noise            ? "the machine's noise"
                      : l->o.pressure.given ? "wake-ups under the load"
                                            : "wake-ups",
                      0, (double)l->o.duration_ns / 1e9);
    int rc = lat_measure(l, false);
    if (l->load_on)
        lat_load_stop(l);
    if (rc != 0) {
        fprintf(stderr, "%s: cannot start the measuring thread: %s\n", l->prog, strerror(rc));
        return TK_RUN_ABORTED;
    }
    if (l->loop_err) {
        fprintf(stderr, "%s: the measuring loop failed: %s\n", l->prog, strerror(l->loop_err));
        return TK_RUN_ABORTED;
    }
    lat_summarize(l);
    /* The load did not run as asked: the figures are not what they claim. */
    return l->load_on && l->pressure.n_ended ? TK_RUN_FAILED : TK_RUN_PASSED;
}

enum tk_run_end lat_run(struct tk_session *s)
{
    struct lat *l = s->state;
    struct tk_stop_saved saved;
    tk_stop_catch(&saved);
    /* Held over every run, as cyclictest holds it over its own. */
    lat_dma_hold(&l->dma, !l->o.default_system);
    enum tk_run_end end = run_all(l);
    lat_dma_release(&l->dma);
    tk_stop_release(&saved);
    return end;
}
