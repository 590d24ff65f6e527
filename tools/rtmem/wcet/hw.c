/*
 * `rtmem wcet`: the CPU's own counters, where the kernel offers them
 * (perf_event_open; most virtual machines have no PMU, and then the report
 * says so). Instructions and branches retired in user mode, counted in a
 * pass of their own after the timed repetitions (the ioctls that start and
 * stop the counters cost microseconds and would disturb the times): each
 * scenario WCET_HW_REPS times, restored and run once each, the counters
 * enabled just before the call and disabled just after. What the enabling
 * and disabling themselves retire in user mode is in every figure, the noop
 * row's too: its figures are subtracted from every other row's, as with
 * valgrind's. The largest over the repetitions is kept.
 *
 * Where valgrind counts too, both are reported: valgrind's from the
 * simulation, these from the silicon (the same binary: they should agree
 * to within the few instructions the counters' enabling leaves in).
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "wcet.h"

#define WCET_HW_REPS 20u

struct hw {
    int instr, branches; /* the group: instructions leads */
};

static int open_counter(uint64_t config, int group)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof(a));
    a.size = sizeof(a);
    a.type = PERF_TYPE_HARDWARE;
    a.config = config;
    a.disabled = group < 0;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    return (int)syscall(SYS_perf_event_open, &a, 0, -1, group, PERF_FLAG_FD_CLOEXEC);
}

static int hw_open(struct wcet *w, struct hw *h)
{
    h->instr = open_counter(PERF_COUNT_HW_INSTRUCTIONS, -1);
    if (h->instr < 0) {
        int err = errno;
        snprintf(w->hw_why, sizeof(w->hw_why), "perf_event_open(instructions): %s%s",
                 strerror(err),
                 err == ENOENT || err == ENODEV || err == EOPNOTSUPP
                     ? " (no CPU PMU: virtual machines often have none)"
                     : err == EACCES || err == EPERM ? " (perf_event_paranoid; root lifts it)"
                                                     : "");
        return -1;
    }
    h->branches = open_counter(PERF_COUNT_HW_BRANCH_INSTRUCTIONS, h->instr);
    if (h->branches < 0) {
        snprintf(w->hw_why, sizeof(w->hw_why), "perf_event_open(branches): %s", strerror(errno));
        close(h->instr);
        return -1;
    }
    return 0;
}

static void hw_close(struct hw *h)
{
    close(h->branches);
    close(h->instr);
}

static bool read_one(int fd, uint64_t *v)
{
    return read(fd, v, sizeof(*v)) == (ssize_t)sizeof(*v);
}

/* One counted call of c: 0, or -1 (a read failed). */
static int hw_call(const struct hw *h, struct wcet_case *c, uint64_t *instr, uint64_t *branches)
{
    ioctl(h->instr, PERF_EVENT_IOC_RESET, PERF_IOC_FLAG_GROUP);
    ioctl(h->instr, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
    wcet_call(c);
    ioctl(h->instr, PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP);
    return read_one(h->instr, instr) && read_one(h->branches, branches) ? 0 : -1;
}

int wcet_hw_count(struct wcet *w)
{
    struct hw h;
    if (hw_open(w, &h) != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < w->n_cases && rc == 0; i++) {
        struct wcet_case *c = &w->cases[i];
        c->hw.have = false;
        if (!c->built)
            continue;
        for (unsigned r = 0; r < WCET_HW_REPS; r++) {
            uint64_t in, br;
            if (wcet_case_prepare(c) != 0 || hw_call(&h, c, &in, &br) != 0) {
                snprintf(w->hw_why, sizeof(w->hw_why), "a counter could not be read");
                rc = -1;
                break;
            }
            wcet_case_finish(c);
            if (in > c->hw.instructions)
                c->hw.instructions = in;
            if (br > c->hw.branches)
                c->hw.branches = br;
        }
        c->hw.have = rc == 0;
    }
    hw_close(&h);
    if (rc != 0)
        return -1;
    /* Less the noop row's (the first case). */
    const struct wcet_case *noop = &w->cases[0];
    for (size_t i = 1; i < w->n_cases; i++) {
        struct wcet_case *c = &w->cases[i];
        c->hw.instructions -= c->hw.instructions > noop->hw.instructions ? noop->hw.instructions
                                                                          : c->hw.instructions;
        c->hw.branches -= c->hw.branches > noop->hw.branches ? noop->hw.branches : c->hw.branches;
    }
    w->hw_counted = true;
    return 0;
}
