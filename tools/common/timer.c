/* Bench kit: timer calibration and overhead measurement (timer.h). */
#include "common/timer.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/samples.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

bool tk_timer_use_counter;

#if defined(__x86_64__)
/* RDTSCP is CPUID leaf 0x80000001, EDX bit 27. */
static bool cpu_has_rdtscp(void)
{
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(0x80000001u, &eax, &ebx, &ecx, &edx))
        return false;
    return (edx >> 27) & 1u;
}

/* True if word appears in line as a whole, space-separated word. */
static bool has_word(const char *line, const char *word)
{
    size_t len = strlen(word);
    for (const char *p = strstr(line, word); p; p = strstr(p + 1, word)) {
        char before = p == line ? ' ' : p[-1];
        char after = p[len];
        if ((before == ' ' || before == '\t') && (after == ' ' || after == '\n' || after == '\0'))
            return true;
    }
    return false;
}

/* True if the first "flags" line of /proc/cpuinfo has every word in want. */
static bool cpuinfo_has_flags(const char *const *want, size_t n_want)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return false;
    char line[8192];
    bool all = false;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        all = true;
        for (size_t i = 0; i < n_want; i++)
            all = all && has_word(line, want[i]);
        break;
    }
    fclose(f);
    return all;
}

/*
 * One simultaneous reading of the TSC and CLOCK_MONOTONIC_RAW: the clock
 * read bracketed by two TSC reads, best (narrowest bracket) of a few tries,
 * TSC taken at the bracket's midpoint. Returns 0 or -errno.
 */
static int tsc_clock_pair(uint64_t *tsc, uint64_t *clock_ns)
{
    uint64_t best_width = UINT64_MAX;
    for (int i = 0; i < 16; i++) {
        struct timespec ts;
        uint64_t a = tk_timer_start();
        if (clock_gettime(CLOCK_MONOTONIC_RAW, &ts) != 0)
            return -errno;
        uint64_t b = tk_timer_end();
        if (b - a < best_width) {
            best_width = b - a;
            *tsc = a + (b - a) / 2;
            *clock_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        }
    }
    return 0;
}

static int calibrate_tsc(struct tk_timer *t, unsigned calibration_ms)
{
    uint64_t tsc0, ns0, tsc1, ns1;
    int rc = tsc_clock_pair(&tsc0, &ns0);
    if (rc)
        return rc;
    uint64_t until_ns = ns0 + (uint64_t)calibration_ms * 1000000u;
    /* Bounded: the clock is monotonic, so this ends after calibration_ms. */
    for (;;) {
        uint64_t now = tk_clock_ns();
        if (now == 0)
            return -errno;
        if (now >= until_ns)
            break;
    }
    rc = tsc_clock_pair(&tsc1, &ns1);
    if (rc)
        return rc;
    if (tsc1 <= tsc0 || ns1 <= ns0)
        return -EIO;
    t->calibration_ns = (double)(ns1 - ns0);
    t->ns_per_tick = t->calibration_ns / (double)(tsc1 - tsc0);
    t->tick_hz = 1e9 / t->ns_per_tick;
    return 0;
}
#endif

/* The overhead figures of t from a store of back-to-back pairs' ticks;
 * releases the store. */
static void overhead_from(struct tk_timer *t, struct tk_samples *s)
{
    t->overhead_samples = s->n;
    t->overhead_p50_ticks = tk_samples_percentile(s, 0.50);
    t->overhead_p99_ticks = tk_samples_percentile(s, 0.99);
    t->overhead_min_ticks = tk_samples_percentile(s, 0.0);
    t->overhead_p50_ns = tk_timer_ns(t, t->overhead_p50_ticks);
    t->overhead_p99_ns = tk_timer_ns(t, t->overhead_p99_ticks);
    t->overhead_min_ns = tk_timer_ns(t, t->overhead_min_ticks);
    tk_samples_destroy(s);
}

static int measure_overhead(struct tk_timer *t)
{
    struct tk_samples s;
    int rc = tk_samples_init(&s, TK_TIMER_OVERHEAD_SAMPLES);
    if (rc)
        return rc;
    for (unsigned i = 0; i < TK_TIMER_OVERHEAD_SAMPLES; i++) {
        uint64_t t0 = tk_timer_start();
        uint64_t t1 = tk_timer_end();
        tk_samples_add(&s, t1 - t0);
    }
    overhead_from(t, &s);
    return 0;
}

/* Nanoseconds of clock now, or 0 if it cannot be read. */
static uint64_t clock_read_ns(clockid_t clock)
{
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* measure_resolution's clock for the timer's own counter. */
#define OWN_COUNTER ((clockid_t) - 1)

/* The cheapest reading of the counter (no fences), so that the step
 * between two readings shows the counter's grain, not the reading's cost:
 * the timer's own (OWN_COUNTER) or clock_gettime(clock). */
static uint64_t unfenced_read(clockid_t clock)
{
    if (clock != OWN_COUNTER)
        return clock_read_ns(clock);
#if defined(__x86_64__)
    if (tk_timer_use_counter) {
        uint32_t lo, hi;
        __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
        return ((uint64_t)hi << 32) | lo;
    }
#elif defined(__aarch64__)
    if (tk_timer_use_counter) {
        uint64_t v;
        __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
        return v;
    }
#endif
    return tk_clock_ns();
}

/* Smallest step between consecutive readings, over a bounded number of
 * readings (the counter may be stuck only if it is broken). */
static void measure_resolution(struct tk_timer *t, clockid_t clock)
{
    uint64_t best = UINT64_MAX;
    unsigned steps = 0;
    uint64_t prev = unfenced_read(clock);
    for (unsigned i = 0; i < 1000000u && steps < 2000u; i++) {
        uint64_t now = unfenced_read(clock);
        if (now != prev) {
            if (now > prev && now - prev < best)
                best = now - prev;
            steps++;
            prev = now;
        }
    }
    t->resolution_ticks = best == UINT64_MAX ? 0 : best;
    t->resolution_ns = tk_timer_ns(t, t->resolution_ticks);
}

int tk_timer_init(struct tk_timer *t, unsigned calibration_ms)
{
    memset(t, 0, sizeof(*t));
    if (calibration_ms < 10)
        calibration_ms = 10;
    if (calibration_ms > 1000)
        calibration_ms = 1000;
    if (tk_clock_ns() == 0)
        return -errno;

    tk_timer_use_counter = false;
    t->source = "clock_gettime(CLOCK_MONOTONIC_RAW)";
    t->ns_per_tick = 1.0;
    t->tick_hz = 1e9;
#if defined(__x86_64__)
    static const char *const invariant_flags[] = { "constant_tsc", "nonstop_tsc" };
    t->tsc_invariant = cpuinfo_has_flags(invariant_flags, 2);
    if (cpu_has_rdtscp()) {
        tk_timer_use_counter = true;
        int rc = calibrate_tsc(t, calibration_ms);
        if (rc == 0) {
            t->source = "tsc (lfence;rdtsc .. rdtscp;lfence)";
        } else {
            /* Fall back rather than give up: the clock still works. */
            tk_timer_use_counter = false;
            t->ns_per_tick = 1.0;
            t->tick_hz = 1e9;
            t->calibration_ns = 0;
        }
    }
#elif defined(__aarch64__)
    /* The generic timer's rate is the architecture's, not a calibration's. */
    uint64_t freq;
    __asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(freq));
    if (freq != 0) {
        tk_timer_use_counter = true;
        t->source = "cntvct_el0 (isb;mrs .. isb;mrs;isb)";
        t->tick_hz = (double)freq;
        t->ns_per_tick = 1e9 / (double)freq;
        t->tsc_invariant = true;
    }
#endif
    measure_resolution(t, OWN_COUNTER);
    return measure_overhead(t);
}

int tk_timer_init_clock(struct tk_timer *t, clockid_t clock, const char *source)
{
    memset(t, 0, sizeof(*t));
    t->source = source;
    t->ns_per_tick = 1.0;
    t->tick_hz = 1e9;
    if (clock_read_ns(clock) == 0)
        return -errno;
    measure_resolution(t, clock);
    struct tk_samples s;
    int rc = tk_samples_init(&s, TK_TIMER_OVERHEAD_SAMPLES);
    if (rc)
        return rc;
    for (unsigned i = 0; i < TK_TIMER_OVERHEAD_SAMPLES; i++) {
        uint64_t t0 = clock_read_ns(clock);
        uint64_t t1 = clock_read_ns(clock);
        tk_samples_add(&s, t1 - t0);
    }
    overhead_from(t, &s);
    return 0;
}
