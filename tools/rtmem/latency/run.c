/*
 * `rtmem latency`: the run. Setup sizes and touches the result storage and
 * describes the clock; the run starts the measuring thread, which takes
 * the real-time setup and measures, while the main thread prints the
 * per-second lines and turns SIGINT and SIGTERM into a stop; once the
 * thread is joined, the summaries for the report.
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

#include "common/cleanup.h"
#include "common/stop.h"
#include "common/timer.h"
#include "common/tool.h"
#include "latency.h"

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
    tk_samples_destroy(&l->samples);
    free(l->seconds);
    free(l->runs);
    free(l);
    s->state = NULL;
}

/* Touches a stack's worth of pages below the caller, so that the loop's
 * calls never fault one in (mlockall locks only what is mapped). */
static void __attribute__((noinline)) prefault_stack(void)
{
    volatile char pages[64 * 1024];
    for (size_t i = 0; i < sizeof(pages); i += 4096)
        pages[i] = 0;
}

static void thread_faults(uint64_t *minflt, uint64_t *majflt)
{
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) == 0) {
        *minflt = (uint64_t)ru.ru_minflt;
        *majflt = (uint64_t)ru.ru_majflt;
    }
}

/* The measuring thread: the setup, then waits for the main thread's go
 * (the header printed), measures, and gives the setup back. */
static void *measure(void *arg)
{
    struct lat *l = arg;
    struct tk_rt_request req = tk_rt_request_of(&l->o.rt, false); /* locked below */
    struct tk_rt_state rt;
    tk_rt_setup(&req, &rt);
    tk_rt_lock_memory(&rt);
    /* A SCHED_OTHER thread's timers are late by up to its timer slack
     * (50 us by default), which would be measured as latency. */
    (void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    l->timer_slack_ns = prctl(PR_GET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL);
    prefault_stack();
    tk_rt_refresh(&rt);
    l->rt = rt;
    int cpu = rt.affinity.granted ? rt.req.cpu : -1;
    l->cpu_isolated = cpu >= 0 && lat_cpu_isolated(cpu, &l->cpu_isolated_known);
    if (cpu >= 0)
        l->rt_neighbours =
            lat_rt_neighbours(cpu, getpid(), l->rt_neighbour, sizeof(l->rt_neighbour));
    long steal0 = lat_steal_ms(cpu);
    uint64_t minflt0 = 0, majflt0 = 0, minflt1 = 0, majflt1 = 0;

    sem_post(&l->ready);
    while (sem_wait(&l->go) != 0 && errno == EINTR)
        ;
    thread_faults(&minflt0, &majflt0);
    if (l->o.noise)
        lat_noise_loop(l, &rt);
    else
        lat_probe_loop(l);
    thread_faults(&minflt1, &majflt1);
    long steal1 = lat_steal_ms(cpu);
    l->minflt = minflt1 - minflt0;
    l->majflt = majflt1 - majflt0;
    l->steal_ms = steal0 >= 0 && steal1 >= steal0 ? steal1 - steal0 : -1;
    l->rt.rests = rt.rests;
    tk_rt_undo(&rt);
    atomic_store(&l->done, true);
    sem_post(&l->tick);
    return NULL;
}

/* Prints the per-second records published since *printed. */
static void print_published(const struct lat *l, size_t *printed)
{
    size_t n = atomic_load_explicit(&l->published, memory_order_acquire);
    for (; *printed < n; (*printed)++) {
        if (l->o.noise)
            lat_noise_print_second(stdout, l, *printed);
        else
            lat_probe_print_second(stdout, l, *printed);
    }
    fflush(stdout);
}

/* The figures the report and the JSON show, once the thread is joined. */
void lat_summarize(struct lat *l)
{
    if (l->o.noise)
        return;
    tk_samples_summarize(&l->samples, 1.0, &l->summary);
    for (size_t i = 0; i < l->o.thresholds.n; i++)
        l->above[i] = tk_samples_count_above(&l->samples, l->o.thresholds.ns[i]);
}

/* The main thread while the measuring thread runs: once its setup is
 * done, the header, then each second as it is published, until it ends;
 * then joined. */
/* The main thread away from the measured CPU when there is another: the
 * measuring thread wakes it every second, and its writes to the terminal
 * would otherwise run where the measuring is. */
static void step_aside(const struct lat *l)
{
    if (!l->rt.affinity.granted)
        return;
    cpu_set_t set;
    if (pthread_getaffinity_np(pthread_self(), sizeof(set), &set) != 0)
        return;
    CPU_CLR(l->rt.req.cpu, &set);
    if (CPU_COUNT(&set) > 0)
        (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* Waits on sem for at most half a second; then renews the load's lease
 * and looks at its workers. Returns true if sem was taken. */
static bool wait_tending(struct lat *l, sem_t *sem)
{
    /* On CLOCK_MONOTONIC: a wall clock set back would not stretch it. */
    uint64_t until = tk_monotonic_ns() + NS_PER_S / 2;
    struct timespec ts = { .tv_sec = (time_t)(until / NS_PER_S),
                           .tv_nsec = (long)(until % NS_PER_S) };
    bool taken = sem_clockwait(sem, CLOCK_MONOTONIC, &ts) == 0;
    if (l->load_on) {
        tk_pressure_beat(&l->pressure);
        (void)tk_pressure_poll(&l->pressure);
    }
    return taken;
}

static void follow(struct lat *l, bool quiet)
{
    /* The measuring thread's setup (mlockall of every sample's room) may
     * take seconds: the load's lease is renewed meanwhile. */
    while (!wait_tending(l, &l->ready))
        ;
    step_aside(l);
    if (!quiet) {
        lat_print_header(stdout, l);
        if (l->o.noise)
            lat_noise_print_head(stdout, l);
        else
            lat_probe_print_head(stdout, l);
        fflush(stdout);
    }
    sem_post(&l->go);

    size_t printed = 0;
    while (!atomic_load(&l->done)) {
        /* Woken by each second's record, a signal (EINTR) or, at the
         * latest, half a second on: the load's lease is renewed and its
         * workers looked at whatever the measuring thread does. */
        (void)wait_tending(l, &l->tick);
        if (!quiet)
            print_published(l, &printed);
    }
    pthread_join(l->thread, NULL);
    if (!quiet)
        print_published(l, &printed);
    l->stop_signal = tk_stop_signal();
}

/* What a run records, forgotten before the next one. */
static void reset_run(struct lat *l)
{
    tk_samples_reset(&l->samples);
    memset(&l->hist, 0, sizeof(l->hist));
    memset(&l->noise, 0, sizeof(l->noise));
    l->overruns = l->early = l->measured_ns = l->minflt = l->majflt = 0;
    l->steal_ms = -1;
    l->loop_err = 0;
    l->stopped = false;
    atomic_store(&l->published, 0);
    atomic_store(&l->done, false);
}

int lat_measure(struct lat *l, bool quiet)
{
    reset_run(l);
    /* The main thread steps aside from the measured CPU during the run
     * (follow): given back after it, so that the next run (a sweep's)
     * starts from the same CPUs, and its workers too. */
    cpu_set_t mine;
    bool have_mine = pthread_getaffinity_np(pthread_self(), sizeof(mine), &mine) == 0;
    sem_init(&l->ready, 0, 0);
    sem_init(&l->go, 0, 0);
    sem_init(&l->tick, 0, 0);

    /* The measuring thread: a small stack (mlockall locks all of it), and
     * none of the signals the main thread handles. */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    sigset_t mask;
    tk_cleanup_block(&mask);
    int rc = pthread_create(&l->thread, &attr, measure, l);
    tk_cleanup_restore(&mask);
    pthread_attr_destroy(&attr);
    if (rc == 0)
        follow(l, quiet);
    if (have_mine)
        (void)pthread_setaffinity_np(pthread_self(), sizeof(mine), &mine);
    sem_destroy(&l->ready);
    sem_destroy(&l->go);
    sem_destroy(&l->tick);
    return rc;
}

/* The workers get this long past the run to end by themselves. */
#define LOAD_GRACE_NS ((uint64_t)60 * NS_PER_S)
/* And this long to start. */
#define LOAD_START_NS ((uint64_t)2 * NS_PER_S)

int lat_load_start(struct lat *l, const struct tk_pressure_spec *spec, char *why, size_t why_len)
{
    if (why_len)
        why[0] = '\0';
    int rc = tk_pressure_start(&l->pressure, spec, l->o.duration_ns + LOAD_GRACE_NS, why, why_len);
    if (rc != 0)
        return -1;
    if (tk_pressure_wait_running(&l->pressure, LOAD_START_NS)) {
        l->load_on = true;
        return 0;
    }
    /* A worker that failed in its setup (a CPU refused) or died already:
     * no run under a load that is not there. */
    tk_pressure_stop(&l->pressure);
    FILE *m = fmemopen(why, why_len, "w");
    if (m) {
        if (l->pressure.n_ended)
            tk_pressure_print_ended(m, "", &l->pressure);
        else
            fprintf(m, "the workers did not start within %llu s",
                    (unsigned long long)(LOAD_START_NS / NS_PER_S));
        fclose(m);
    }
    why[strcspn(why, "\n")] = '\0';
    tk_pressure_release(&l->pressure);
    return -1;
}

void lat_load_stop(struct lat *l)
{
    tk_pressure_stop(&l->pressure);
    tk_pressure_totals(&l->pressure, &l->load_totals);
}

enum tk_run_end lat_run(struct tk_session *s)
{
    struct lat *l = s->state;
    struct tk_stop_saved saved;
    tk_stop_catch(&saved);
    if (l->o.sweep) {
        enum tk_run_end end = lat_sweep(l);
        tk_stop_release(&saved);
        return end;
    }
    /* The load first: its workers are forked while this process has one
     * thread. */
    if (l->o.pressure.given) {
        char why[256];
        if (lat_load_start(l, &l->load, why, sizeof(why)) != 0) {
            tk_stop_release(&saved);
            fprintf(stderr, "%s: the load cannot start: %s\n", l->prog, why);
            return TK_RUN_ABORTED;
        }
    }
    int rc = lat_measure(l, false);
    if (l->load_on)
        lat_load_stop(l);
    tk_stop_release(&saved);
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
