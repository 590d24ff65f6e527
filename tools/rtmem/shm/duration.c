/*
 * `rtmem shm --duration T`: the writes go on for T on one region, and each
 * second prints how many were done, the faults the writer took in that
 * second, and the system's Dirty and Writeback (/proc/meminfo). A shared
 * disk file is written back by the flusher threads every
 * dirty_writeback_centisecs, for pages dirty longer than
 * dirty_expire_centisecs; each page written back is clean and
 * write-protected again, so the next write to it faults (and may wait for
 * the write to finish): the faults come in bursts and the rate dips. A
 * tmpfs file, POSIX shm or memfd has no backing store to write to: no
 * bursts.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shm.h"

/* Writes per slice, between two looks at the clock. */
#define TICK_SLICE ((uint64_t)1 << 16)

/* Dirty and Writeback of /proc/meminfo, in kB (0 if unreadable). */
static void meminfo_dirty(uint64_t *dirty_kb, uint64_t *writeback_kb)
{
    *dirty_kb = *writeback_kb = 0;
    FILE *f = fopen("/proc/meminfo", "re");
    if (!f)
        return;
    char line[128];
    while (fgets(line, sizeof(line), f)) {
        uint64_t v;
        if (sscanf(line, "Dirty: %" SCNu64, &v) == 1)
            *dirty_kb = v;
        else if (sscanf(line, "Writeback: %" SCNu64, &v) == 1)
            *writeback_kb = v;
    }
    fclose(f);
}

void shm_duration_run(struct shm *sh, enum shm_mech_id m, uint64_t bytes, struct shm_duration *d)
{
    memset(d, 0, sizeof(*d));
    snprintf(d->mech, sizeof(d->mech), "%s", shm_mechs[m].name);
    d->bytes = bytes;
    d->ticks = calloc(SHM_MAX_TICKS, sizeof(*d->ticks));
    if (!d->ticks) {
        d->skipped = true;
        snprintf(d->why, sizeof(d->why), "out of memory for the per-second record");
        return;
    }
    struct shm_region r;
    if (shm_region_open(sh, m, bytes, &r, d->why, sizeof(d->why)) != 0) {
        d->skipped = true;
        printf("%-12s %s: skipped: %s\n", d->mech, "", d->why);
        return;
    }
    volatile uint8_t *p = r.a.base;
    for (size_t off = 0; off < r.a.size_bytes; off += r.a.page_bytes)
        p[off] = 1;
    char b[32];
    printf("\n%s, %s: writes per second, the writer's page faults, and the system's Dirty "
           "and Writeback\n",
           d->mech, tk_fmt_iec(b, sizeof(b), bytes));
    printf("  %6s %12s %10s %8s %10s %10s\n", "second", "writes/s", "minor", "major", "Dirty kB",
           "Wback kB");
    uint64_t s, start = tk_clock_ns(), tick_start = start;
    shm_seed(sh, &s);
    uint64_t minor0, major0, writes = 0;
    shm_faults(&minor0, &major0);
    while (d->n < SHM_MAX_TICKS) {
        shm_write_loop(sh->o.generator, r.a.base, bytes, TICK_SLICE, &s);
        writes += TICK_SLICE;
        uint64_t now = tk_clock_ns();
        if (now - tick_start < NS_PER_S)
            continue;
        tk_rt_breather(&sh->rt);
        struct shm_tick *t = &d->ticks[d->n++];
        double secs = (double)(now - tick_start) / 1e9;
        uint64_t minor, major;
        shm_faults(&minor, &major);
        t->t_s = (double)(now - start) / 1e9;
        t->span_s = secs;
        t->writes = writes;
        t->minor_faults = minor - minor0;
        t->major_faults = major - major0;
        meminfo_dirty(&t->dirty_kb, &t->writeback_kb);
        printf("  %6.0f %12.0f %10" PRIu64 " %8" PRIu64 " %10" PRIu64 " %10" PRIu64 "\n", t->t_s,
               (double)writes / secs, t->minor_faults, t->major_faults, t->dirty_kb,
               t->writeback_kb);
        fflush(stdout);
        writes = 0;
        minor0 = minor;
        major0 = major;
        tick_start = tk_clock_ns();
        if (now - start >= sh->o.duration_ns)
            break;
    }
    shm_region_close(&r);
}
