/*
 * `rtmem shm`: the workloads of phase.h on one open region: the first
 * touch, the random writes (and the generator's own cost, timed apart),
 * the zeroings, the msync. The teardown is the region's close (run.c).
 *
 * Long phases run in slices (WRITE_SLICE writes, or one zeroing), each
 * timed on its own, so that a rest between slices (tk_rt_breather under
 * --fifo) is not counted, and the budget is checked between slices only.
 * The writes take at least MIN_WRITE_SLICES slices when there are that many
 * writes: the spread of their times (the interquartile range: a slice that
 * the machine stalled does not count) is part of the net figure's
 * precision.
 * Faults are the calling thread's (getrusage RUSAGE_THREAD), read before
 * and after the phase.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "common/rng.h"
#include "shm.h"

/* Writes between two looks at the clock: the budget overshoots by at most
 * one slice. */
#define WRITE_SLICE      ((uint64_t)1 << 20)
#define MIN_WRITE_SLICES 8
/* Draws per run of the generator alone (shm_rng_cost): as many as the
 * writes asked, within these. */
#define RNG_MIN_DRAWS    ((uint64_t)1 << 20)
#define RNG_MAX_DRAWS    ((uint64_t)1 << 24)

void shm_faults(uint64_t *minor, uint64_t *major)
{
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0) {
        *minor = *major = 0;
        return;
    }
    *minor = (uint64_t)ru.ru_minflt;
    *major = (uint64_t)ru.ru_majflt;
}

/* The phase's faults since minor0, major0. */
static void phase_faults(struct shm_phase *ph, uint64_t minor0, uint64_t major0)
{
    uint64_t minor, major;
    shm_faults(&minor, &major);
    ph->minor_faults = minor - minor0;
    ph->major_faults = major - major0;
}

/* The index and value of a draw z (phase.h): a multiply-shift, not a
 * modulo, so that the generator costs a few cycles and no division. */
static inline uint64_t draw_index(uint64_t z, uint64_t bytes)
{
    return ((z >> 32) * bytes) >> 32;
}

/* The published comparison's loop: libc's rand() (a lock and a state
 * update per call) and a division for the index; rand() gives 31 bits, so
 * regions above 2 GiB are refused with it (cli.c). Seeded by srand when a
 * phase starts (shm_seed). */
static void rand_write_loop(volatile uint8_t *p, uint64_t bytes, uint64_t count)
{
    for (uint64_t i = 0; i < count; i++) {
        uint64_t idx = (uint64_t)rand() % bytes;
        p[idx] = (uint8_t)idx;
    }
}

void shm_seed(const struct shm *sh, uint64_t *state)
{
    *state = sh->o.seed;
    srand((unsigned)sh->o.seed);
}

__attribute__((noinline)) void shm_write_loop(int gen, volatile uint8_t *p, uint64_t bytes,
                                              uint64_t count, uint64_t *state)
{
    if (gen == SHM_GEN_RAND) {
        rand_write_loop(p, bytes, count);
        return;
    }
    uint64_t s = *state;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t z = tk_rng_next(&s);
        p[draw_index(z, bytes)] = (uint8_t)(z & 0xff);
    }
    *state = s;
}

/* The same loop without the store: what the generator alone costs. */
__attribute__((noinline)) static uint64_t rng_loop(int gen, uint64_t bytes, uint64_t count,
                                                   uint64_t *state)
{
    /* bytes is opaque to the optimiser: with the constant the caller gives,
     * a division (rand's modulo) or a multiply (the index) would be folded
     * into a shift, and the cost timed would be less than the loop's. */
    __asm__("" : "+r"(bytes));
    uint64_t s = *state, sink = 0;
    if (gen == SHM_GEN_RAND) {
        for (uint64_t i = 0; i < count; i++) {
            uint64_t idx = (uint64_t)rand() % bytes;
            sink += idx ^ (idx & 0xff);
        }
        return sink;
    }
    for (uint64_t i = 0; i < count; i++) {
        uint64_t z = tk_rng_next(&s);
        sink += draw_index(z, bytes) ^ (z & 0xff);
    }
    *state = s;
    return sink;
}

void shm_rng_cost(struct shm *sh)
{
    uint64_t draws = sh->o.writes;
    draws = draws < RNG_MIN_DRAWS ? RNG_MIN_DRAWS : draws > RNG_MAX_DRAWS ? RNG_MAX_DRAWS : draws;
    double ns[SHM_RNG_TRIALS];
    volatile uint64_t sink = 0;
    uint64_t s;
    shm_seed(sh, &s);
    for (int i = 0; i < SHM_RNG_TRIALS; i++) {
        tk_rt_breather(&sh->rt);
        uint64_t t0 = tk_timer_start();
        sink += rng_loop(sh->o.generator, sh->sizes.bytes[0], draws, &s);
        ns[i] = tk_timer_ns(&sh->timer, tk_timer_end() - t0) / (double)draws;
        for (int k = i; k > 0 && ns[k] < ns[k - 1]; k--) { /* kept sorted */
            double t = ns[k];
            ns[k] = ns[k - 1];
            ns[k - 1] = t;
        }
    }
    (void)sink;
    sh->rng_ns_per_write = ns[SHM_RNG_TRIALS / 2];
    sh->rng_spread_ns = ns[SHM_RNG_TRIALS * 3 / 4] - ns[SHM_RNG_TRIALS / 4];
    sh->rng_draws = draws;
}

double shm_net_per_write(const struct shm_row *row)
{
    const struct shm_phase *ph = &row->phase[SHM_PHASE_WRITES];
    if (!ph->done || ph->ops == 0)
        return NAN;
    double write =
        isnan(row->slice_ns_per_write) ? ph->ns / (double)ph->ops : row->slice_ns_per_write;
    return write - row->rng_ns_per_write;
}

bool shm_net_inconsistent(const struct shm_row *row)
{
    double net = shm_net_per_write(row), p = shm_net_precision(row);
    return !isnan(net) && !isnan(p) && net < -p;
}

double shm_net_precision(const struct shm_row *row)
{
    return row->rng_spread_ns + row->writes_spread_ns;
}

void shm_touch(struct shm *sh, struct shm_row *row, struct shm_region *r, uint64_t t_open_ns,
               uint64_t minor0, uint64_t major0)
{
    (void)sh;
    volatile uint8_t *p = r->a.base;
    size_t step = r->a.page_bytes;
    for (size_t off = 0; off < r->a.size_bytes; off += step)
        p[off] = 1;
    struct shm_phase *ph = &row->phase[SHM_PHASE_TOUCH];
    ph->ns = (double)(tk_clock_ns() - t_open_ns);
    phase_faults(ph, minor0, major0);
    ph->ops = r->a.size_bytes / step;
    ph->done = true;
    row->mapped_bytes = r->a.size_bytes;
    row->page_bytes = r->a.page_bytes;
    row->pages.read = tk_smaps_find(NULL, r->a.base, &row->pages.smaps) == 0;
}

void shm_writes(struct shm *sh, struct shm_row *row, struct shm_region *r)
{
    struct shm_phase *ph = &row->phase[SHM_PHASE_WRITES];
    uint64_t s, done = 0, ticks = 0, minor0, major0;
    uint64_t slice = (sh->o.writes + MIN_WRITE_SLICES - 1) / MIN_WRITE_SLICES;
    slice = slice < WRITE_SLICE ? slice : WRITE_SLICE;
    tk_samples_reset(&sh->slices); /* ticks of each whole slice */
    shm_seed(sh, &s);
    uint64_t start = tk_clock_ns();
    shm_faults(&minor0, &major0);
    while (done < sh->o.writes) {
        if (!sh->writes_given && done > 0 && tk_clock_ns() - start >= sh->o.budget_ns) {
            row->writes_capped = true;
            break;
        }
        uint64_t k = sh->o.writes - done < slice ? sh->o.writes - done : slice;
        tk_rt_breather(&sh->rt);
        uint64_t t0 = tk_timer_start();
        shm_write_loop(sh->o.generator, r->a.base, row->bytes, k, &s);
        uint64_t t = tk_timer_end() - t0;
        ticks += t;
        done += k;
        if (k == slice)
            tk_samples_add(&sh->slices, t);
    }
    phase_faults(ph, minor0, major0);
    row->rng_ns_per_write = sh->rng_ns_per_write;
    row->rng_spread_ns = sh->rng_spread_ns;
    row->slice_ns_per_write = row->writes_spread_ns = NAN;
    if (sh->slices.n >= 4) {
        uint64_t q1 = tk_samples_percentile(&sh->slices, 0.25);
        uint64_t q2 = tk_samples_percentile(&sh->slices, 0.5);
        uint64_t q3 = tk_samples_percentile(&sh->slices, 0.75);
        row->slice_ns_per_write = tk_timer_ns(&sh->timer, q2) / (double)slice;
        row->writes_spread_ns = tk_timer_ns(&sh->timer, q3 - q1) / (double)slice;
    }
    ph->ns = tk_timer_ns(&sh->timer, ticks);
    ph->ops = done;
    ph->done = true;
}

void shm_zeroings(struct shm *sh, struct shm_row *row, struct shm_region *r)
{
    struct shm_phase *ph = &row->phase[SHM_PHASE_ZEROINGS];
    uint64_t want = sh->zeroings_given ? sh->o.zeroings : UINT64_MAX;
    uint64_t done = 0, ticks = 0, minor0, major0;
    uint64_t start = tk_clock_ns();
    shm_faults(&minor0, &major0);
    while (done < want) {
        if (!sh->zeroings_given && done >= SHM_MIN_ZEROINGS &&
            tk_clock_ns() - start >= sh->o.budget_ns)
            break;
        if ((done & 63) == 0)
            tk_rt_breather(&sh->rt);
        uint64_t t0 = tk_timer_start();
        memset(r->a.base, 0, r->a.size_bytes);
        __asm__ __volatile__("" : : "r"(r->a.base) : "memory");
        ticks += tk_timer_end() - t0;
        done++;
    }
    phase_faults(ph, minor0, major0);
    ph->ns = tk_timer_ns(&sh->timer, ticks);
    ph->ops = done;
    ph->done = true;
}

void shm_sync(struct shm *sh, struct shm_row *row, struct shm_region *r)
{
    (void)sh;
    struct shm_phase *ph = &row->phase[SHM_PHASE_SYNC];
    uint64_t minor0, major0;
    shm_faults(&minor0, &major0);
    uint64_t t0 = tk_clock_ns();
    int rc = msync(r->a.base, r->a.size_bytes, MS_SYNC);
    ph->ns = (double)(tk_clock_ns() - t0);
    phase_faults(ph, minor0, major0);
    ph->ops = 1;
    ph->done = rc == 0;
}

uint64_t shm_checksum(const void *p, uint64_t bytes)
{
    const uint64_t *w = p;
    uint64_t h = 0xcbf29ce484222325u;
    for (uint64_t i = 0; i < bytes / sizeof(*w); i++)
        h = (h ^ w[i]) * 0x100000001b3u;
    return h;
}

const char *const shm_generator_choices[] = { "splitmix", "rand", NULL };
