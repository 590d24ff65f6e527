/*
 * Bench kit: the calling thread's performance counters (perf_event_open),
 * for figures a tool reports beside its times.
 *
 *     struct tk_perf p;
 *     tk_perf_open(&p, true);         // after pinning; never fails
 *     tk_perf_start(&p);
 *     ... the code measured ...
 *     tk_perf_stop(&p);               // p.ev[i].delta: counted in between
 *
 * The events (enum tk_perf_event): hardware cache references and misses
 * (PERF_COUNT_HW_CACHE_REFERENCES, _MISSES: the last-level cache on most
 * CPUs), last-level cache loads and load misses (PERF_TYPE_HW_CACHE, LL,
 * READ, ACCESS and MISS), and the software page-fault counts, minor and
 * major. Each counts the calling thread only, on any CPU, user and kernel
 * (so a copy's page faults are counted with it); where the paranoid level
 * forbids counting the kernel, an event is retried user-only and says so.
 *
 * Hardware events exist only where the kernel offers a CPU PMU: most
 * virtual machines have none (/sys/bus/event_source/devices lists no
 * "cpu"), and perf_event_paranoid may forbid them. An event that cannot be
 * opened is unavailable, with the reason in words (errno, the paranoid
 * level, the missing PMU) for the tool to say once: never an error.
 *
 * Group: with group true the hardware events are opened as one group (the
 * first available the leader), so that they count over exactly the same
 * instants, or not at all when the PMU has too few counters (they are then
 * opened one by one instead, and the reason says so). The software events
 * are always opened alone. A counter that the kernel multiplexed (ran part
 * of the time) is scaled by time enabled / time running, and flagged.
 *
 * Bounds: open is a start-up call (a few system calls per event); start
 * is two ioctls for the group and two per counter outside it, stop one
 * ioctl for the group and one per counter outside it, then one read(2)
 * per counter.
 */
#ifndef RTMEM_TOOLS_PERF_H
#define RTMEM_TOOLS_PERF_H

#include <stdbool.h>
#include <stdint.h>

enum tk_perf_event {
    TK_PERF_CACHE_REFS,   /* hardware: cache references */
    TK_PERF_CACHE_MISSES, /* hardware: cache misses */
    TK_PERF_LLC_LOADS,    /* hardware cache event: LLC read accesses */
    TK_PERF_LLC_MISSES,   /* hardware cache event: LLC read misses */
    TK_PERF_MINOR_FAULTS, /* software: page faults without I/O */
    TK_PERF_MAJOR_FAULTS, /* software: page faults that read a file */
    TK_PERF_N_EVENTS,
};

struct tk_perf_counter {
    int fd;           /* -1: unavailable */
    bool hardware;    /* a PMU event */
    bool user_only;   /* the kernel is not counted (paranoid level) */
    bool multiplexed; /* some stop found it ran only part of the time */
    bool in_group;    /* started and stopped with the group's leader */
    uint64_t delta;   /* counted between the last start and stop (scaled) */
    uint64_t total;   /* sum of the deltas since open */
    /* Time enabled and running at the last stop: PERF_EVENT_IOC_RESET resets
     * the count, not these, so a stretch is scaled by their deltas. */
    uint64_t enabled_prev, running_prev;
    char why[160]; /* unavailable: why, in words */
};

struct tk_perf {
    struct tk_perf_counter ev[TK_PERF_N_EVENTS];
    bool any_hardware;      /* some hardware event is counting */
    bool grouped;           /* the hardware events form one group */
    int leader;             /* the group leader's fd, -1 without a group */
    int paranoid;           /* /proc/sys/kernel/perf_event_paranoid, -99 unknown */
    bool cpu_pmu;           /* /sys/bus/event_source/devices/cpu (or armv8_*) exists */
    char hardware_why[200]; /* no hardware event: why (the first event's reason) */
};

/* Opens every event for the calling thread (see the top of this file).
 * Never fails: an event that cannot be opened is unavailable, with why. */
void tk_perf_open(struct tk_perf *p, bool group);

/* Closes every counter. */
void tk_perf_close(struct tk_perf *p);

/* Starts a measured stretch: each counter's value now. */
void tk_perf_start(struct tk_perf *p);

/* Ends it: each available counter's delta since tk_perf_start, added to its
 * total. */
void tk_perf_stop(struct tk_perf *p);

/* "cache_references", "cache_misses", "llc_loads", "llc_load_misses",
 * "minor_faults", "major_faults": the JSON's names. */
const char *tk_perf_event_id(enum tk_perf_event e);

/* Is event e counting? */
static inline bool tk_perf_has(const struct tk_perf *p, enum tk_perf_event e)
{
    return p->ev[e].fd >= 0;
}

#endif /* RTMEM_TOOLS_PERF_H */
