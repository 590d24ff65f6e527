/*
 * Bench kit: SIGINT and SIGTERM as a request to end a run early, as a
 * complete one.
 *
 * A tool that measures for a given time (latency, pressure) takes Ctrl-C
 * as "enough": the run stops where it is, and its report and result file
 * are written with what it measured. tk_stop_catch installs the kit's
 * cleanup (cleanup.h), then puts this handler in its place for SIGINT and
 * SIGTERM for the length of the run; the other fatal signals still clean
 * up and die, and tk_stop_release gives SIGINT and SIGTERM back to it. A
 * signal ignored when the tool started (nohup, a background job) stays
 * ignored.
 */
#ifndef RTMEM_TOOLS_STOP_H
#define RTMEM_TOOLS_STOP_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>

/* The handlers in force before tk_stop_catch. */
struct tk_stop_saved {
    struct sigaction old[2];
};

/* From now on SIGINT and SIGTERM set the request (tk_stop_requested). */
void tk_stop_catch(struct tk_stop_saved *saved);
/* The handlers of before back in place; the request stays as it is. */
void tk_stop_release(const struct tk_stop_saved *saved);

/* Set by the handler; read it through tk_stop_requested. */
extern atomic_bool tk_stop_flag;

/* Was a stop asked for since tk_stop_catch? One relaxed load: cheap in a
 * measuring loop. Async-signal-safe. */
static inline bool tk_stop_requested(void)
{
    return atomic_load_explicit(&tk_stop_flag, memory_order_relaxed);
}
/* The signal that asked (SIGINT or SIGTERM), 0 if none. */
int tk_stop_signal(void);
/* "SIGINT" or "SIGTERM" for tk_stop_signal(), "" if none. */
const char *tk_stop_name(void);

#endif /* RTMEM_TOOLS_STOP_H */
