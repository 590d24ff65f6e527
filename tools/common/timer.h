/*
 * Bench kit: a calibrated cycle timer with a known overhead.
 *
 * Usage:
 *     struct tk_timer t;
 *     tk_timer_init(&t, 60);               // once, after pinning to a CPU
 *     uint64_t t0 = tk_timer_start();
 *     ... the code under test ...
 *     uint64_t t1 = tk_timer_end();
 *     double ns = tk_timer_ns(&t, t1 - t0);
 *
 * Source of ticks:
 *  - x86-64 with RDTSCP: the time-stamp counter. Start is "lfence; rdtsc"
 *    (earlier instructions finish before the read, so they are not counted);
 *    end is "rdtscp; lfence" (rdtscp waits for the code under test to finish,
 *    the lfence keeps later instructions from starting before the read). The
 *    tick length is calibrated against CLOCK_MONOTONIC_RAW. This is only
 *    meaningful on a CPU with an invariant TSC (constant_tsc and nonstop_tsc
 *    in /proc/cpuinfo); tk_timer_init reports whether it is.
 *  - arm64: the generic timer's virtual count, CNTVCT_EL0. Start is "isb;
 *    mrs" (earlier instructions complete before the read), end is "isb; mrs;
 *    isb" (the code under test completes first, later instructions start
 *    after). Its rate is CNTFRQ_EL0, fixed by the architecture (often 24 to
 *    62.5 MHz on boards: a tick of 16 to 42 ns, which the resolution
 *    measured shows).
 *  - Anywhere else (or an x86-64 CPU without RDTSCP): clock_gettime
 *    (CLOCK_MONOTONIC_RAW), one tick = 1 ns. Its resolution and cost are much
 *    coarser; the measured overhead tells by how much.
 *
 * Every reading of the timer costs something, and a start/end pair around
 * nothing does not read 0. tk_timer_init measures that cost (median and p99 of
 * back-to-back pairs); a benchmark should print it and, better, subtract a
 * floor measured with the same harness around an empty call.
 *
 * Tick differences are only meaningful between readings on the same CPU: pin
 * the thread (tools/common/rt.h) before calibrating and measuring.
 */
#ifndef RTMEM_TOOLS_TIMER_H
#define RTMEM_TOOLS_TIMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Set by tk_timer_init: true when the CPU's counter is read (the TSC on
 * x86-64, CNTVCT_EL0 on arm64). Read on every timer reading (a load and a
 * well-predicted branch, part of the measured overhead) so that a CPU
 * without RDTSCP falls back instead of faulting. */
extern bool tk_timer_use_counter;

struct tk_timer {
    /* "tsc (lfence;rdtsc .. rdtscp;lfence)", "cntvct_el0 (isb;mrs .. isb;mrs;isb)"
     * or "clock_gettime(CLOCK_MONOTONIC_RAW)". */
    const char *source;
    /* Nanoseconds per tick (1.0 for clock_gettime). */
    double ns_per_tick;
    /* The counter's rate in Hz: the TSC's implied by the calibration,
     * CNTFRQ_EL0 on arm64, 1e9 for clock_gettime. */
    double tick_hz;
    /* Length of the calibration window actually spent, in ns (0 without TSC). */
    double calibration_ns;
    /* The counter runs at a fixed rate: /proc/cpuinfo lists constant_tsc and
     * nonstop_tsc (an invariant TSC); always on arm64 (the architecture's). */
    bool tsc_invariant;
    /* Overhead of one start/end pair around nothing, over overhead_samples
     * back-to-back pairs: median, p99 and minimum, in ticks and in ns. */
    size_t overhead_samples;
    uint64_t overhead_p50_ticks;
    uint64_t overhead_p99_ticks;
    uint64_t overhead_min_ticks;
    double overhead_p50_ns;
    double overhead_p99_ns;
    double overhead_min_ns;
    /* Smallest non-zero step between two consecutive (unfenced) readings: the
     * grain of every measurement (a TSC may advance in steps of many ticks, as
     * AMD Zen's does; the run prints the grain it found). 0 if no step was
     * seen. */
    uint64_t resolution_ticks;
    double resolution_ns;
};

/* Number of back-to-back pairs tk_timer_init uses to measure the overhead. */
#define TK_TIMER_OVERHEAD_SAMPLES 20000u

/*
 * Chooses the tick source, calibrates it over about calibration_ms
 * milliseconds (clamped to 10..1000; 50..100 is plenty) and measures the
 * overhead. Spins for the whole calibration window: call it once, after
 * real-time setup and pinning. Returns 0, or a negative errno if
 * clock_gettime or an allocation failed (*t is then unusable).
 */
int tk_timer_init(struct tk_timer *t, unsigned calibration_ms);

/*
 * Describes a POSIX clock read with clock_gettime, for a tool that measures
 * with that clock rather than with tk_timer_start/end (rtmem latency sleeps
 * to CLOCK_MONOTONIC deadlines and reads the same clock on waking): source
 * is set to source, one tick is 1 ns, no calibration; the overhead is that
 * of TK_TIMER_OVERHEAD_SAMPLES back-to-back clock_gettime pairs, the
 * resolution the smallest step seen between consecutive readings. What
 * tk_timer_start and tk_timer_end read is unchanged. Takes a few
 * milliseconds. Returns 0, or a negative errno (clock_gettime or an
 * allocation failed; *t is then unusable).
 */
int tk_timer_init_clock(struct tk_timer *t, clockid_t clock, const char *source);

/* Nanoseconds of CLOCK_MONOTONIC now, the clock clock_nanosleep sleeps on
 * (TIMER_ABSTIME deadlines are in it). 0 if clock_gettime fails. */
static inline uint64_t tk_monotonic_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Nanoseconds of CLOCK_MONOTONIC_RAW now (the fallback source, also handy for
 * coarse wall-clock budgets). Returns 0 if clock_gettime fails. */
static inline uint64_t tk_clock_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC_RAW, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Reading at the start of a timed region. */
static inline uint64_t tk_timer_start(void)
{
#if defined(__x86_64__)
    if (tk_timer_use_counter) {
        uint32_t lo, hi;
        __asm__ __volatile__("lfence\n\trdtsc" : "=a"(lo), "=d"(hi) : : "memory");
        return ((uint64_t)hi << 32) | lo;
    }
#elif defined(__aarch64__)
    if (tk_timer_use_counter) {
        uint64_t v;
        __asm__ __volatile__("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
        return v;
    }
#endif
    return tk_clock_ns();
}

/* Reading at the end of a timed region. */
static inline uint64_t tk_timer_end(void)
{
#if defined(__x86_64__)
    if (tk_timer_use_counter) {
        uint32_t lo, hi;
        __asm__ __volatile__("rdtscp\n\tlfence" : "=a"(lo), "=d"(hi) : : "rcx", "memory");
        return ((uint64_t)hi << 32) | lo;
    }
#elif defined(__aarch64__)
    if (tk_timer_use_counter) {
        uint64_t v;
        __asm__ __volatile__("isb\n\tmrs %0, cntvct_el0\n\tisb" : "=r"(v) : : "memory");
        return v;
    }
#endif
    return tk_clock_ns();
}

/* Converts a tick count (a difference of readings) to nanoseconds. */
static inline double tk_timer_ns(const struct tk_timer *t, uint64_t ticks)
{
    return (double)ticks * t->ns_per_tick;
}

#endif /* RTMEM_TOOLS_TIMER_H */
