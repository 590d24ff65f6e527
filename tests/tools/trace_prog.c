/*
 * A program for tests/tools/test_trace.py to trace: each mode makes a known
 * sequence of malloc-family calls inside a phase it marks, so that the test
 * can check the trace against it, then ends as the mode says.
 *   basic    every call of the family once (and a block of KEPT bytes left
 *            live), then phase "loop": LOOP mallocs
 *            of 1..LOOP bytes, all live at once, then freed: the phase's
 *            peak is LOOP*(LOOP+1)/2 bytes
 *   threads  THREADS threads, each in phase "loop" (marked once, first):
 *            PER_THREAD mallocs and frees of 64 bytes
 *   threads-term  threads' work as threads, unmarked, then raises SIGTERM
 *   fork     phase "loop" in the parent and in the child it forks, which
 *            allocates LOOP blocks and exits; the parent waits for it
 *   exec     phase "loop", then execs itself in mode basic
 *   term     phase "loop", then raises SIGTERM
 *   kill     phase "loop", then raises SIGKILL
 *   quick-exit  phase "loop", then _exit(3)
 *   sleep    phase "loop", then SLEEPS rounds of a malloc/free and 10 ms
 *            of sleep (for --after and the mark signal)
 *   idle     phase "loop", then phase "idle", in which it sleeps 50 ms and
 *            allocates nothing
 *   nothing  returns at once: no call of the family at all
 * Built by the test with the system's compiler (never a sanitizer's: the
 * recorder is preloaded, and a sanitizer's runtime must come first).
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rtmem/trace.h>

#define LOOP       200
#define THREADS    4
#define PER_THREAD 1000
#define SLEEPS     40

static void *volatile keep; /* the compiler must not drop a call */
static void *volatile kept; /* basic's block that outlives the loop */
#define KEPT 1000

static void loop(void)
{
    rtm_trace_phase("loop");
    void *b[LOOP];
    for (int i = 0; i < LOOP; i++)
        keep = b[i] = malloc((size_t)i + 1);
    for (int i = 0; i < LOOP; i++)
        free(b[i]);
}

/* Each block kept in a volatile before it is freed: no call is elided. */
static void every_call(void)
{
    void *p = malloc(10);
    p = realloc(p, 100);
    p = reallocarray(p, 10, 20);
    keep = p;
    free(p);
    free(keep = calloc(3, 7));
    free(keep = memalign(64, 100));
    void *q = NULL;
    if (posix_memalign(&q, 128, 300) == 0)
        free(keep = q);
    free(keep = aligned_alloc(256, 512));
    free(keep = valloc(1000));
    free(keep = pvalloc(1000));
    keep = p = malloc(33);
    keep = (void *)(size_t)malloc_usable_size(p);
    free(p);
    kept = malloc(KEPT); /* live through the loop */
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < PER_THREAD; i++) {
        void *p = malloc(64);
        keep = p;
        free(p);
    }
    return NULL;
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "basic";
    if (strcmp(mode, "basic") == 0) {
        every_call();
        loop();
    } else if (strcmp(mode, "threads") == 0) {
        rtm_trace_phase("loop");
        pthread_t t[THREADS];
        for (int i = 0; i < THREADS; i++)
            if (pthread_create(&t[i], NULL, worker, NULL) != 0)
                return 1;
        for (int i = 0; i < THREADS; i++)
            pthread_join(t[i], NULL);
    } else if (strcmp(mode, "threads-term") == 0) {
        pthread_t t[THREADS];
        for (int i = 0; i < THREADS; i++)
            if (pthread_create(&t[i], NULL, worker, NULL) != 0)
                return 1;
        for (int i = 0; i < THREADS; i++)
            pthread_join(t[i], NULL);
        raise(SIGTERM);
    } else if (strcmp(mode, "fork") == 0) {
        loop();
        pid_t pid = fork();
        if (pid == 0) {
            loop();
            exit(0);
        }
        int st;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            return 1;
    } else if (strcmp(mode, "exec") == 0) {
        loop();
        char *args[] = { argv[0], "basic", NULL };
        execv(argv[0], args); /* the test runs it by its full path */
        return 1;
    } else if (strcmp(mode, "term") == 0) {
        loop();
        raise(SIGTERM);
    } else if (strcmp(mode, "kill") == 0) {
        loop();
        raise(SIGKILL);
    } else if (strcmp(mode, "quick-exit") == 0) {
        loop();
        _exit(3);
    } else if (strcmp(mode, "sleep") == 0) {
        loop();
        for (int i = 0; i < SLEEPS; i++) {
            free(keep = malloc(100));
            sleep_ms(10);
        }
    } else if (strcmp(mode, "nothing") == 0) {
        return 0;
    } else if (strcmp(mode, "idle") == 0) {
        loop();
        rtm_trace_phase("idle");
        sleep_ms(50);
    } else {
        fprintf(stderr, "trace_prog: unknown mode %s\n", mode);
        return 2;
    }
    return 0;
}
