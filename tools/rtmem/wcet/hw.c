/*
 * `rtmem wcet`: the CPU's own counters, where the kernel offers them
 * (perf_event_open; most virtual machines have no PMU, and then the report
 * says so). Instructions and branch instructions (every branch: jumps,
 * calls and returns too, where valgrind's branches are the conditional and
 * indirect ones) retired in user mode, counted apart from the timed
 * repetitions (the ioctls that start and stop the counters cost
 * microseconds and would disturb the times): each
 * scenario WCET_HW_REPS times, right after its timed repetitions, restored
 * (glibc: built, and checked after the call; one off the path is left out)
 * and run once each, the counters enabled just before the call and
 * disabled just after. What the enabling
 * and disabling themselves retire in user mode is in every figure, the noop
 * row's too: its figures are subtracted from every other row's, as with
 * valgrind's. The largest over the repetitions is kept.
 *
 * Where valgrind counts too, both are reported: valgrind's from the
 * simulation, these from the silicon. They agree on code of the binary's
 * own; not on libc's string routines: valgrind counts each iteration of
 * a rep movs or rep stos, the CPU one instruction, and glibc picks its
 * memcpy by the CPU it sees (valgrind's virtual one differs).
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "wcet.h"

#define WCET_HW_REPS 20u

/* value, time enabled, time running: a counter that never ran on the PMU
 * (too few counters) reads 0 and is refused, not taken for 0. */
struct reading {
    uint64_t value, enabled, running;
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
    a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    return (int)syscall(SYS_perf_event_open, &a, 0, -1, group, PERF_FLAG_FD_CLOEXEC);
}

int wcet_hw_start(struct wcet *w)
{
    w->hw_fd[0] = w->hw_fd[1] = -1;
    w->hw_fd[0] = open_counter(PERF_COUNT_HW_INSTRUCTIONS, -1);
    if (w->hw_fd[0] < 0) {
        int err = errno;
        snprintf(w->hw_why, sizeof(w->hw_why), "perf_event_open(instructions): %s%s", strerror(err),
                 err == ENOENT || err == ENODEV || err == EOPNOTSUPP
                     ? " (no CPU PMU: virtual machines often have none)"
                 : err == EACCES || err == EPERM ? " (perf_event_paranoid; root lifts it)"
                                                 : "");
        return -1;
    }
    w->hw_fd[1] = open_counter(PERF_COUNT_HW_BRANCH_INSTRUCTIONS, w->hw_fd[0]);
    if (w->hw_fd[1] < 0) {
        snprintf(w->hw_why, sizeof(w->hw_why), "perf_event_open(branches): %s", strerror(errno));
        close(w->hw_fd[0]);
        w->hw_fd[0] = -1;
        return -1;
    }
    w->hw_counted = true; /* until a case fails */
    return 0;
}

static bool read_counter(int fd, struct reading *r)
{
    return read(fd, r, sizeof(*r)) == (ssize_t)sizeof(*r);
}

/* The count between two readings, if the counter ran the whole time
 * (a reset zeroes the count, not the times: their differences say). */
static bool delta(const struct reading *a, const struct reading *b, uint64_t *v)
{
    uint64_t ran = b->running - a->running, on = b->enabled - a->enabled;
    if (ran == 0 || ran != on)
        return false;
    *v = b->value - a->value;
    return true;
}

/* One counted call of c: 0, or -1 with w->hw_why. */
static int hw_call(struct wcet *w, struct wcet_case *c, uint64_t *instr, uint64_t *branches)
{
    int lead = w->hw_fd[0];
    struct reading i0, b0, i1, b1;
    if (!read_counter(lead, &i0) || !read_counter(w->hw_fd[1], &b0) ||
        ioctl(lead, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP) != 0) {
        snprintf(w->hw_why, sizeof(w->hw_why),
                 "perf_event_open: the counters could not be "
                 "started: %s",
                 strerror(errno));
        return -1;
    }
    wcet_call(c);
    (void)ioctl(lead, PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP);
    if (!read_counter(lead, &i1) || !read_counter(w->hw_fd[1], &b1) || !delta(&i0, &i1, instr) ||
        !delta(&b0, &b1, branches)) {
        snprintf(w->hw_why, sizeof(w->hw_why),
                 "perf_event_open: a counter did not run through the whole call (too few "
                 "counters?)");
        return -1;
    }
    return 0;
}

void wcet_hw_count(struct wcet *w, struct wcet_case *c)
{
    c->hw = (struct wcet_hw){ 0 };
    if (!w->hw_counted || !c->built)
        return;
    for (unsigned r = 0; r < WCET_HW_REPS; r++) {
        uint64_t in, br;
        if (wcet_case_prepare(c) != 0) {
            wcet_case_finish(c); /* glibc's build failed this time: not counted */
            return;
        }
        int rc = hw_call(w, c, &in, &br);
        bool on_path = rc == 0 && wcet_case_on_path(c);
        wcet_case_finish(c);
        if (rc != 0) {
            w->hw_counted = false;
            return;
        }
        if (!on_path)
            continue; /* glibc off its path: left out */
        c->hw.have = true;
        if (in > c->hw.instructions)
            c->hw.instructions = in;
        if (br > c->hw.branches)
            c->hw.branches = br;
    }
}

void wcet_hw_finish(struct wcet *w)
{
    for (int i = 1; i >= 0; i--)
        if (w->hw_fd[i] >= 0) {
            close(w->hw_fd[i]);
            w->hw_fd[i] = -1;
        }
    if (!w->hw_counted)
        return;
    /* Less the noop row's (the first case). */
    const struct wcet_case *noop = &w->cases[0];
    for (size_t i = 1; i < w->n_cases; i++) {
        struct wcet_hw *h = &w->cases[i].hw;
        h->instructions -=
            h->instructions > noop->hw.instructions ? noop->hw.instructions : h->instructions;
        h->branches -= h->branches > noop->hw.branches ? noop->hw.branches : h->branches;
    }
}
