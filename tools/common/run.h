/*
 * Bench kit: the start and the end of a measured run, as every rtmem tool
 * does them.
 *
 * tk_run_setup asks for the real-time setup (rt.h), calibrates the timer on
 * the CPU that gives (timer.h) and reads the machine facts (describe.h).
 * Memory is not locked there: a tool maps its large buffers first and then
 * calls tk_rt_lock_memory (rt.h says why).
 *
 * A result file is opened before the run (a name that cannot be written is
 * bad usage, found before minutes of measuring) and completed or abandoned
 * after it (result.h). Every failure is reported on stderr, prefixed with
 * the tool's name.
 */
#ifndef RTMEM_TOOLS_RUN_H
#define RTMEM_TOOLS_RUN_H

#include <stdbool.h>
#include <stdio.h>

#include "common/describe.h"
#include "common/rt.h"
#include "common/timer.h"

struct tk_run_opts {
    const char *prog;        /* "rtmem bench": starts every message */
    struct tk_rt_opts rt;    /* --cpu, --prio, --no-rt */
    unsigned calibration_ms; /* tk_timer_init's calibration window */
};

/* Real-time setup (tk_rt_request_of(&o->rt); no memory lock),
 * timer calibration, machine facts, into *rt, *t and *mf. Spins for the
 * calibration window. Returns 0, or the negative errno of a failed timer
 * calibration, reported as "<prog>: timer setup failed: <reason>" (*t is
 * then unusable). *rt is set up either way: undo it with tk_rt_undo. */
int tk_run_setup(const struct tk_run_opts *o, struct tk_rt_state *rt, struct tk_timer *t,
                 struct tk_machine *mf);

#endif /* RTMEM_TOOLS_RUN_H */
