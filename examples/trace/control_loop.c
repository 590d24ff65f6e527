/*
 * A control loop to trace: what `make bench` records with `rtmem trace` and
 * replays with `rtmem replay` (docs/trace.md, docs/replay.md), and a model
 * of the programs those tools are for.
 *
 * Start-up allocates freely: a configuration table, a history ring per
 * sensor, a list of actuators. Then the loop (phase "loop", marked with
 * rtmem/trace.h's rtm_trace_phase, which costs nothing when the program is
 * not traced) runs CYCLES cycles of PERIOD_US: each receives a message of 64
 * to 1500 bytes and queues it (at most IN_FLIGHT in flight, the oldest
 * freed), and every tenth cycle grows its log with realloc. The sizes come
 * from a fixed seed: every run makes the same calls.
 *
 * It measures itself, as a real loop would: each cycle's work (from its
 * wake-up to its sleep: the allocations, the copy and the frees) and how
 * late it woke, and prints the worst and the mean of each at the end: run
 * it under `rtmem run --kind K` for each allocator to see what the loop
 * itself sees (docs/run.md).
 *
 *   control_loop [CYCLES]     (default 300, at 1 ms each)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rtmem/trace.h>

#define SENSORS   8
#define HISTORY   512
#define IN_FLIGHT 32
#define PERIOD_US 1000

struct actuator {
    struct actuator *next;
    char name[24];
    double gain;
};

static uint32_t seed = 12345;

static uint32_t next_random(void)
{
    seed = seed * 1664525u + 1013904223u;
    return seed >> 8;
}

static int64_t ns_between(const struct timespec *a, const struct timespec *b)
{
    return (int64_t)(b->tv_sec - a->tv_sec) * 1000000000 + (b->tv_nsec - a->tv_nsec);
}

static void sleep_until(struct timespec *t)
{
    t->tv_nsec += PERIOD_US * 1000L;
    if (t->tv_nsec >= 1000000000L) {
        t->tv_nsec -= 1000000000L;
        t->tv_sec++;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, t, NULL) != 0)
        ;
}

int main(int argc, char **argv)
{
    long cycles = argc > 1 ? atol(argv[1]) : 300;
    if (cycles <= 0) {
        fprintf(stderr, "usage: control_loop [CYCLES]\n");
        return 2;
    }
    /* start-up */
    double *config = calloc(4096, sizeof(double));
    double *history[SENSORS];
    for (int s = 0; s < SENSORS; s++)
        history[s] = malloc(HISTORY * sizeof(double) * (size_t)(s + 1));
    struct actuator *actuators = NULL;
    for (int a = 0; a < 16; a++) {
        struct actuator *n = malloc(sizeof(*n));
        if (!n)
            return 1;
        snprintf(n->name, sizeof(n->name), "axis-%d", a);
        n->gain = 1.0 + a;
        n->next = actuators;
        actuators = n;
    }
    char *log = malloc(256);
    size_t log_size = 256, log_used = 0;
    if (!config || !log)
        return 1;

    /* the loop */
    rtm_trace_phase("loop");
    char *queue[IN_FLIGHT] = { 0 };
    unsigned head = 0;
    struct timespec t, woke, done;
    int64_t work_max = 0, work_sum = 0, late_max = 0, late_sum = 0;
    clock_gettime(CLOCK_MONOTONIC, &t);
    woke = t;
    for (long c = 0; c < cycles; c++) {
        size_t len = 64 + next_random() % (1500 - 64);
        char *msg = malloc(len);
        if (!msg)
            return 1;
        memset(msg, (int)(c & 0xff), len);
        free(queue[head]); /* the oldest in flight */
        queue[head] = msg;
        head = (head + 1) % IN_FLIGHT;
        if (c % 10 == 0) {
            log_used += 128;
            if (log_used > log_size) {
                char *grown = realloc(log, log_size * 2);
                if (!grown)
                    return 1;
                log = grown;
                log_size *= 2;
            }
        }
        clock_gettime(CLOCK_MONOTONIC, &done);
        int64_t work = ns_between(&woke, &done);
        work_sum += work;
        work_max = work > work_max ? work : work_max;
        sleep_until(&t);
        clock_gettime(CLOCK_MONOTONIC, &woke);
        int64_t late = ns_between(&t, &woke);
        late_sum += late;
        late_max = late > late_max ? late : late_max;
    }

    for (unsigned i = 0; i < IN_FLIGHT; i++)
        free(queue[i]);
    free(log);
    while (actuators) {
        struct actuator *n = actuators->next;
        free(actuators);
        actuators = n;
    }
    for (int s = 0; s < SENSORS; s++)
        free(history[s]);
    free(config);
    printf("control_loop: %ld cycles; a cycle's work: max %lld ns, mean %lld ns; woke late: "
           "max %lld ns, mean %lld ns\n",
           cycles, (long long)work_max, (long long)(work_sum / cycles), (long long)late_max,
           (long long)(late_sum / cycles));
    return 0;
}
