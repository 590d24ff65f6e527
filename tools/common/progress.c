/*
 * Bench kit: the progress line (progress.h).
 */
#include "common/progress.h"

#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static struct {
    bool on;
    pthread_t thread;
    const char *tool;
    pthread_mutex_t lock; /* the phase's name: copied under it, read under it */
    pthread_cond_t wake;  /* stop's signal to the thread */
    bool stopping;
    char phase[80];
    uint64_t phase_start_ns;
    uint64_t total;
    double seconds;
    uint64_t done; /* atomic */
} P = { .lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER };

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* "41 s", "2 min 5 s". */
static void span(char *buf, size_t size, double s)
{
    if (s < 120)
        snprintf(buf, size, "%.0f s", s);
    else
        snprintf(buf, size, "%ld min %.0f s", (long)(s / 60), s - 60 * (double)(long)(s / 60));
}

static void draw(void)
{
    char phase[80], line[200], el[32], left[48] = "";
    pthread_mutex_lock(&P.lock);
    memcpy(phase, P.phase, sizeof(phase));
    uint64_t start = P.phase_start_ns, total = P.total;
    double seconds = P.seconds;
    pthread_mutex_unlock(&P.lock);
    uint64_t done = __atomic_load_n(&P.done, __ATOMIC_RELAXED);
    double elapsed = (double)(now_ns() - start) / 1e9;
    span(el, sizeof(el), elapsed);
    int n;
    if (seconds > 0) {
        double pct = elapsed >= seconds ? 100 : 100 * elapsed / seconds;
        if (elapsed < seconds) {
            char l[32];
            span(l, sizeof(l), seconds - elapsed);
            snprintf(left, sizeof(left), ", ~%s left", l);
        }
        n = snprintf(line, sizeof(line), "\r\033[K%s: %s %.0f%% (%s%s)", P.tool, phase, pct, el,
                     left);
    } else if (total > 0) {
        if (done > 0 && done < total) {
            char l[32];
            span(l, sizeof(l), elapsed * (double)(total - done) / (double)done);
            snprintf(left, sizeof(left), ", ~%s left", l);
        }
        n = snprintf(line, sizeof(line), "\r\033[K%s: %s (%llu of %llu), %s%s", P.tool, phase,
                     (unsigned long long)done, (unsigned long long)total, el, left);
    } else {
        n = snprintf(line, sizeof(line), "\r\033[K%s: %s, %s", P.tool, phase, el);
    }
    if (n > 0) {
        size_t len = (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
        ssize_t w = write(STDERR_FILENO, line, len);
        (void)w; /* a line that could not be drawn is no error of the run */
    }
}

static void *drawer(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&P.lock);
    while (!P.stopping) {
        pthread_mutex_unlock(&P.lock);
        draw();
        pthread_mutex_lock(&P.lock);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 250000000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        while (!P.stopping && pthread_cond_timedwait(&P.wake, &P.lock, &until) == 0)
            ;
    }
    pthread_mutex_unlock(&P.lock);
    return NULL;
}

/* Starts the drawing thread: SCHED_OTHER whatever the caller runs at, and
 * off the CPUs the caller is pinned to, where another CPU is left. */
static void start_thread(void)
{
    P.stopping = false;
    pthread_attr_t a;
    if (pthread_attr_init(&a) != 0)
        return;
    pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(&a, SCHED_OTHER);
    struct sched_param sp = { .sched_priority = 0 };
    pthread_attr_setschedparam(&a, &sp);
    cpu_set_t mine, all;
    if (sched_getaffinity(0, sizeof(mine), &mine) == 0) {
        CPU_ZERO(&all);
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        for (long c = 0; c < ncpu && c < CPU_SETSIZE; c++)
            if (!CPU_ISSET(c, &mine))
                CPU_SET(c, &all);
        if (CPU_COUNT(&all) > 0)
            pthread_attr_setaffinity_np(&a, sizeof(all), &all);
    }
    P.on = pthread_create(&P.thread, &a, drawer, NULL) == 0;
    pthread_attr_destroy(&a);
}

static void join_thread(void)
{
    pthread_mutex_lock(&P.lock);
    P.stopping = true;
    pthread_cond_signal(&P.wake);
    pthread_mutex_unlock(&P.lock);
    pthread_join(P.thread, NULL);
    P.on = false;
}

/* Around a fork the thread is joined, so that the process forks with the
 * threads it had without the line (the tools fork their load workers from
 * a single thread: pressure.h), and started again in the parent; the
 * child has no line. */
static bool was_on;
static void before_fork(void)
{
    was_on = P.on;
    if (was_on)
        join_thread();
}
static void after_fork_parent(void)
{
    if (was_on)
        start_thread();
}
static void after_fork_child(void)
{
    P.on = false;
    was_on = false;
}

void tk_progress_start(const char *tool, bool quiet)
{
    static bool registered;
    const char *env = getenv("RTMEM_PROGRESS");
    if (P.on || quiet || (env && strcmp(env, "0") == 0) || !isatty(STDERR_FILENO))
        return;
    /* Standard output on a terminal or into a pipe (tee) may reach the
     * same screen while the run goes: a line drawn there would be torn. */
    struct stat st;
    if (isatty(STDOUT_FILENO) ||
        (fstat(STDOUT_FILENO, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))))
        return;
    P.tool = tool;
    P.stopping = false;
    snprintf(P.phase, sizeof(P.phase), "running");
    P.phase_start_ns = now_ns();
    P.total = 0;
    P.seconds = 0;
    if (!registered && pthread_atfork(before_fork, after_fork_parent, after_fork_child) != 0)
        return;
    registered = true;
    start_thread();
}

void tk_progress_phase(const char *name, uint64_t total, double seconds)
{
    if (!P.on)
        return;
    pthread_mutex_lock(&P.lock);
    size_t n = strnlen(name, sizeof(P.phase) - 1); /* cut, never overrun */
    memcpy(P.phase, name, n);
    P.phase[n] = '\0';
    P.phase_start_ns = now_ns();
    P.total = total;
    P.seconds = seconds;
    __atomic_store_n(&P.done, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&P.lock);
}

void tk_progress_note(const char *prog, const char *fmt, ...)
{
    char note[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note, sizeof(note), fmt, ap);
    va_end(ap);
    if (P.on)
        tk_progress_phase(note, 0, 0);
    else
        fprintf(stderr, "%s: %s\n", prog, note);
}

void tk_progress_done(uint64_t done)
{
    if (P.on)
        __atomic_store_n(&P.done, done, __ATOMIC_RELAXED);
}

void tk_progress_stop(void)
{
    if (!P.on)
        return;
    join_thread();
    static const char clear[] = "\r\033[K";
    ssize_t w = write(STDERR_FILENO, clear, sizeof(clear) - 1);
    (void)w;
}
