/*
 * `rtmem latency`: one measured run, as the latency run and each point of
 * a sweep make it: the measuring thread (the real-time setup, the loop of
 * its mode, the setup given back) while the main thread prints the
 * per-second lines, renews the load's lease and turns SIGINT and SIGTERM
 * into a stop; the load beside it; the summaries once the thread is joined.
 */
#include <errno.h>
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
#include "latency.h"

/* The workers get this long past the run to end by themselves. */
#define LOAD_GRACE_NS ((uint64_t)60 * NS_PER_S)
/* And this long to start. */
#define LOAD_START_NS ((uint64_t)2 * NS_PER_S)

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

/* The main thread while the measuring thread runs: once its setup is
 * done, the header, then each second as it is published, until it ends;
 * then joined. */
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
