/*
 * `rtmem pressure`: the load of `stress --vm` (and -c, -i, -d) for a
 * bounded time, in worker processes that never outlive it (the bench kit's
 * common/pressure.h), with a line per second of what the workers really
 * did: rounds, bytes written, their page faults.
 */
#ifndef RTMEM_TOOLS_PRESSURE_TOOL_H
#define RTMEM_TOOLS_PRESSURE_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/describe.h"
#include "common/pressure.h"
#include "common/timer.h"

#define PR_SCHEMA "rtmem-pressure/1"

struct pr_opts {
    struct tk_pressure_spec spec;
    bool force;
    uint64_t duration_ns;
    const char *json_path;
    bool quick;
};

/* One second of the run: the counters at its end. */
struct pr_second {
    double t; /* seconds since the start */
    struct tk_pressure_totals at;
    size_t ended; /* workers ended early so far */
};

struct pr {
    struct pr_opts o;
    const char *prog;
    struct tk_machine mf;
    struct tk_timer clock; /* CLOCK_MONOTONIC, which times the seconds */
    struct tk_pressure p;
    bool started;
    struct pr_second *seconds;
    size_t n_seconds, cap;
    struct tk_pressure_totals total;
    bool stopped; /* by SIGINT or SIGTERM */
    const char *stop_name;
};

/* run.c */
struct tk_session;
struct tk_json;
struct tk_facts;
enum tk_run_end;
int pr_setup(struct tk_session *s);
enum tk_run_end pr_run(struct tk_session *s);
void pr_report(const struct tk_session *s, FILE *f);
void pr_json(const struct tk_session *s, struct tk_json *j);
void pr_facts(const struct tk_session *s, struct tk_facts *out);
void pr_teardown(struct tk_session *s);

#endif /* RTMEM_TOOLS_PRESSURE_TOOL_H */
