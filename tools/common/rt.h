/*
 * Bench kit: real-time setup that asks, verifies and reports.
 *
 * tk_rt_setup tries each requested step in turn:
 *   1. pin the calling thread to one CPU (sched_setaffinity);
 *   2. lock all memory, present and future (mlockall(MCL_CURRENT|MCL_FUTURE));
 *   3. switch to SCHED_FIFO at the requested priority (sched_setscheduler).
 * Step 2 can also be done later, on its own, with tk_rt_lock_memory: do that
 * after mapping the large buffers a tool needs. Once MCL_FUTURE is in force
 * every new mapping is locked at once and counts against RLIMIT_MEMLOCK, so an
 * unprivileged process that locked early (while small) then fails its big
 * mmaps; locking late makes the lock itself fail instead (reported), and the
 * run goes on unlocked.
 * A refused step (EPERM when not privileged, EINVAL for a CPU outside the
 * allowed set, ENOMEM for a lock beyond RLIMIT_MEMLOCK...) is recorded with its
 * errno and the next step is still tried: the setup never fails, it degrades
 * and says so. Afterwards it reads back what is really in force: the policy and
 * priority (sched_getscheduler, sched_getparam), the CPU the thread runs on and
 * the size of its allowed set, VmLck from /proc/self/status, and the kernel's
 * real-time throttling settings. Print that record (tk_rt_print) and write it
 * to the results (tk_rt_json) so that every figure can be judged against what
 * the run actually had.
 *
 * Real-time throttling: with the kernel's default sched_rt_runtime_us (950000
 * of every 1000000 us), a SCHED_FIFO task that never sleeps is stopped for
 * the rest of the period once it has run 0.95 s, which a benchmark then
 * records as one enormous latency. tk_rt_breather, called between measured
 * passes (never inside one), sleeps briefly when the task has been running
 * long enough to risk that, so the throttle never engages.
 *
 * tk_rt_undo restores the previous policy and priority, the previous
 * affinity mask, and unlocks memory if this setup locked it.
 */
#ifndef RTMEM_TOOLS_RT_H
#define RTMEM_TOOLS_RT_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/out.h"

struct tk_rt_request {
    bool pin;     /* pin to one CPU */
    int cpu;      /* that CPU; -1 = the highest-numbered CPU currently allowed */
    bool fifo;    /* switch to SCHED_FIFO */
    int priority; /* SCHED_FIFO priority (1..99 on Linux) */
    bool lock;    /* mlockall(MCL_CURRENT | MCL_FUTURE) */
};

/* Defaults used by the tools: pin to the last CPU, SCHED_FIFO 80, lock. */
#define TK_RT_DEFAULT_PRIORITY 80

/* --cpu, --prio and --no-rt, as every tool takes them (opt.h's
 * TK_OPT_KIT_RT; docs/tools.md): pinned to cpu (-1, not given: the
 * highest-numbered allowed CPU) under SCHED_FIFO at priority; with no_rt,
 * SCHED_OTHER, and pinned only if cpu was given. */
struct tk_rt_opts {
    int cpu;
    int priority;
    bool no_rt;
};
#define TK_RT_OPTS_DEFAULT { .cpu = -1, .priority = TK_RT_DEFAULT_PRIORITY, .no_rt = false }

/* The setup those options ask for, memory locked at once if lock. */
struct tk_rt_request tk_rt_request_of(const struct tk_rt_opts *o, bool lock);

/* Outcome of one step. */
struct tk_rt_step {
    bool requested;
    bool granted; /* the call succeeded (and, where it can be, was verified) */
    int err;      /* errno of the refusal, 0 if granted or not requested */
};

struct tk_rt_state {
    struct tk_rt_request req; /* as given, cpu resolved from -1 */
    struct tk_rt_step affinity, lock, fifo;

    /* Read back after the setup. */
    int cpu_now;           /* sched_getcpu(), -1 if unknown */
    int cpus_allowed;      /* CPUs in the affinity mask now */
    int policy;            /* sched_getscheduler(0), -1 if unknown */
    int priority_now;      /* sched_getparam(0), -1 if unknown */
    long vmlck_kb;         /* VmLck from /proc/self/status, -1 if unreadable */
    long rt_runtime_us;    /* /proc/sys/kernel/sched_rt_runtime_us (-1: no throttle) */
    long rt_period_us;     /* /proc/sys/kernel/sched_rt_period_us, -1 if unreadable */
    bool throttle_unknown; /* the two files above could not be read */

    /* Breather bookkeeping (tk_rt_breather). */
    uint64_t busy_since_ns;
    unsigned rests;

    /* Saved for tk_rt_undo. */
    bool have_old_mask;
    cpu_set_t old_mask;
    bool have_old_sched;
    int old_policy;
    struct sched_param old_param;
};

/* Performs the requested steps and reads back the result into *st. Never
 * fails; returns the number of requested steps that were refused. */
int tk_rt_setup(const struct tk_rt_request *req, struct tk_rt_state *st);

/* Step 2 alone (mlockall(MCL_CURRENT | MCL_FUTURE)), recorded in st->lock
 * and followed by tk_rt_refresh. For a state set up with req.lock false.
 * Returns true if memory is now locked. */
bool tk_rt_lock_memory(struct tk_rt_state *st);

/* Re-reads what is in force (policy, priority, CPU, VmLck) into *st; e.g.
 * after allocating and locking more memory, to report the final VmLck. */
void tk_rt_refresh(struct tk_rt_state *st);

/* Back to how the thread was before tk_rt_setup: previous policy and
 * priority, previous affinity, memory unlocked if the setup locked it.
 * Best effort; errors are ignored (there is nothing left to degrade to). */
void tk_rt_undo(struct tk_rt_state *st);

/* Sleeps just long enough to keep real-time throttling from engaging, if the
 * thread runs under a real-time policy with throttling on and has run for more
 * than half the allowed runtime since the last rest. Call it between measured
 * passes only. Returns true if it slept. */
bool tk_rt_breather(struct tk_rt_state *st);

/* "SCHED_OTHER", "SCHED_FIFO", ... or "unknown". */
const char *tk_rt_policy_name(int policy);

/* The CPU tk_rt_setup pins to for --cpu asked (-1: none given): asked,
 * else the highest-numbered allowed, else the one this thread runs on;
 * for a tool that must know it before the setup (its caches, its memory's
 * node). */
int tk_rt_pinned_cpu(int asked);

/* Human report: one line per step (requested -> granted) and a
 * "not permitted: ..." line for each refusal. */
void tk_rt_print(FILE *f, const struct tk_rt_state *st);

/* The same record as one JSON object value (call after a key or in an array). */
void tk_rt_json(struct tk_json *j, const struct tk_rt_state *st);

#endif /* RTMEM_TOOLS_RT_H */
