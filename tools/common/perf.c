/*
 * Bench kit: the calling thread's performance counters (perf.h).
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/perf.h"

#define PARANOID_FILE "/proc/sys/kernel/perf_event_paranoid"
#define PMU_DIR       "/sys/bus/event_source/devices"

/* The read format: value, time enabled, time running (to scale a
 * multiplexed counter). */
struct reading {
    uint64_t value, enabled, running;
};

static const char *const ids[TK_PERF_N_EVENTS] = {
    [TK_PERF_CACHE_REFS] = "cache_references", [TK_PERF_CACHE_MISSES] = "cache_misses",
    [TK_PERF_LLC_LOADS] = "llc_loads",         [TK_PERF_LLC_MISSES] = "llc_load_misses",
    [TK_PERF_MINOR_FAULTS] = "minor_faults",   [TK_PERF_MAJOR_FAULTS] = "major_faults",
};

const char *tk_perf_event_id(enum tk_perf_event e)
{
    return e < TK_PERF_N_EVENTS ? ids[e] : "unknown";
}

static void attr_of(enum tk_perf_event e, struct perf_event_attr *a)
{
    memset(a, 0, sizeof(*a));
    a->size = sizeof(*a);
    a->disabled = 1;
    a->read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    switch (e) {
    case TK_PERF_CACHE_REFS:
        a->type = PERF_TYPE_HARDWARE;
        a->config = PERF_COUNT_HW_CACHE_REFERENCES;
        break;
    case TK_PERF_CACHE_MISSES:
        a->type = PERF_TYPE_HARDWARE;
        a->config = PERF_COUNT_HW_CACHE_MISSES;
        break;
    case TK_PERF_LLC_LOADS:
    case TK_PERF_LLC_MISSES:
        a->type = PERF_TYPE_HW_CACHE;
        a->config = PERF_COUNT_HW_CACHE_LL | (PERF_COUNT_HW_CACHE_OP_READ << 8) |
                    ((uint64_t)(e == TK_PERF_LLC_LOADS ? PERF_COUNT_HW_CACHE_RESULT_ACCESS
                                                       : PERF_COUNT_HW_CACHE_RESULT_MISS)
                     << 16);
        break;
    case TK_PERF_MINOR_FAULTS:
        a->type = PERF_TYPE_SOFTWARE;
        a->config = PERF_COUNT_SW_PAGE_FAULTS_MIN;
        break;
    default:
        a->type = PERF_TYPE_SOFTWARE;
        a->config = PERF_COUNT_SW_PAGE_FAULTS_MAJ;
        break;
    }
}

static int perf_open(struct perf_event_attr *a, int group_fd)
{
    return (int)syscall(SYS_perf_event_open, a, 0 /* this thread */, -1 /* any CPU */, group_fd,
                        PERF_FLAG_FD_CLOEXEC);
}

static int read_paranoid(void)
{
    FILE *f = fopen(PARANOID_FILE, "r");
    int v = -99;
    if (f) {
        if (fscanf(f, "%d", &v) != 1)
            v = -99;
        fclose(f);
    }
    return v;
}

static bool exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* A CPU PMU: "cpu" on x86 (and "cpu_core" on hybrid ones), "armv8_*" or
 * "armv7_*" on ARM. */
static bool has_cpu_pmu(void)
{
    static const char *const names[] = { "cpu",
                                         "cpu_core",
                                         "armv8_pmuv3",
                                         "armv8_pmuv3_0",
                                         "armv8_cortex_a53",
                                         "armv8_cortex_a72",
                                         "armv7_cortex_a9",
                                         "armv7_cortex_a15" };
    char path[128];
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", PMU_DIR, names[i]);
        if (exists(path))
            return true;
    }
    return false;
}

static void say_why(struct tk_perf *p, struct tk_perf_counter *c, int err)
{
    const char *hint = "";
    if (err == EACCES || err == EPERM)
        hint = p->paranoid > 2 ? " (perf_event_paranoid > 2: only CAP_PERFMON may count)"
                               : " (perf_event_paranoid; CAP_PERFMON or root lifts it)";
    else if (c->hardware && !p->cpu_pmu)
        hint = " (no CPU PMU: " PMU_DIR " lists no cpu; virtual machines often have none)";
    else if (err == ENOENT || err == EOPNOTSUPP || err == ENODEV)
        hint = " (this CPU or kernel has no such event)";
    else if (err == ENOSYS)
        hint = " (kernel built without perf events)";
    snprintf(c->why, sizeof(c->why), "perf_event_open: %s%s", strerror(err), hint);
}

/* Opens event e into c (leader: a group's fd, or -1). */
static void open_one(struct tk_perf *p, enum tk_perf_event e, int leader)
{
    struct tk_perf_counter *c = &p->ev[e];
    struct perf_event_attr a;
    attr_of(e, &a);
    /* A group member counts while its leader does: enabled with it. */
    a.disabled = leader < 0;
    c->hardware = a.type != PERF_TYPE_SOFTWARE;
    c->fd = perf_open(&a, leader);
    if (c->fd < 0 && (errno == EACCES || errno == EPERM)) {
        a.exclude_kernel = 1;
        a.exclude_hv = 1;
        c->fd = perf_open(&a, leader);
        c->user_only = c->fd >= 0;
    }
    if (c->fd < 0)
        say_why(p, c, errno);
}

void tk_perf_open(struct tk_perf *p, bool group)
{
    memset(p, 0, sizeof(*p));
    p->leader = -1;
    for (int e = 0; e < TK_PERF_N_EVENTS; e++)
        p->ev[e].fd = -1;
    p->paranoid = read_paranoid();
    p->cpu_pmu = has_cpu_pmu();
    int leader = -1;
    for (int e = TK_PERF_CACHE_REFS; e <= TK_PERF_LLC_MISSES; e++) {
        open_one(p, (enum tk_perf_event)e, group ? leader : -1);
        if (group && p->ev[e].fd < 0 && leader >= 0) {
            /* Not in the group (too few counters): alone, said. */
            open_one(p, (enum tk_perf_event)e, -1);
            if (p->ev[e].fd >= 0)
                snprintf(p->ev[e].why, sizeof(p->ev[e].why),
                         "not in the group (too few counters?): counted alone");
        } else if (group && leader < 0 && p->ev[e].fd >= 0) {
            leader = p->ev[e].fd;
        }
        if (p->ev[e].fd >= 0)
            p->any_hardware = true;
        else if (!p->hardware_why[0])
            snprintf(p->hardware_why, sizeof(p->hardware_why), "%s", p->ev[e].why);
    }
    p->grouped = group && leader >= 0;
    p->leader = leader;
    for (int e = TK_PERF_CACHE_REFS; e <= TK_PERF_LLC_MISSES; e++)
        p->ev[e].in_group = p->grouped && p->ev[e].fd >= 0 && !p->ev[e].why[0];
    open_one(p, TK_PERF_MINOR_FAULTS, -1);
    open_one(p, TK_PERF_MAJOR_FAULTS, -1);
}

void tk_perf_close(struct tk_perf *p)
{
    /* Members before the leader: the leader's close would orphan them. */
    for (int e = TK_PERF_N_EVENTS - 1; e >= 0; e--)
        if (p->ev[e].fd >= 0) {
            close(p->ev[e].fd);
            p->ev[e].fd = -1;
        }
}

static bool read_counter(int fd, struct reading *r)
{
    return read(fd, r, sizeof(*r)) == (ssize_t)sizeof(*r);
}

/* The group as one (its members count over the same instants), then the
 * counters alone. */
static void control(struct tk_perf *p, unsigned long op)
{
    if (p->grouped)
        ioctl(p->leader, op, PERF_IOC_FLAG_GROUP);
    for (int e = 0; e < TK_PERF_N_EVENTS; e++)
        if (p->ev[e].fd >= 0 && !p->ev[e].in_group)
            ioctl(p->ev[e].fd, op, 0);
}

void tk_perf_start(struct tk_perf *p)
{
    control(p, PERF_EVENT_IOC_RESET);
    control(p, PERF_EVENT_IOC_ENABLE);
}

void tk_perf_stop(struct tk_perf *p)
{
    control(p, PERF_EVENT_IOC_DISABLE);
    for (int e = 0; e < TK_PERF_N_EVENTS; e++) {
        struct tk_perf_counter *c = &p->ev[e];
        if (c->fd < 0)
            continue;
        struct reading r;
        c->delta = 0;
        if (!read_counter(c->fd, &r))
            continue;
        uint64_t v = r.value;
        uint64_t enabled = r.enabled - c->enabled_prev, running = r.running - c->running_prev;
        c->enabled_prev = r.enabled;
        c->running_prev = r.running;
        if (running > 0 && running < enabled) {
            v = (uint64_t)((double)v * (double)enabled / (double)running);
            c->multiplexed = true;
        }
        c->delta = v;
        c->total += v;
    }
}
