/*
 * Bench kit: where a long run is, on one line of standard error that
 * updates in place: the tool, its phase, how far through it and the time
 * left where that is known ("rtmem shm: 1G memfd (5 of 12), 41 s, ~52 s
 * left"). Only when standard error is a terminal and standard output is
 * not (a file: the report comes at the end, as make bench has it), and
 * neither --quiet nor RTMEM_PROGRESS=0 says no. Standard output on a
 * terminal or into a pipe shows the run's own lines, which the line would
 * tear; a file or a pipe on standard error gets nothing.
 *
 * A thread of its own draws the line, four times a second, at SCHED_OTHER
 * and off the CPUs the run was pinned to when it started (unless those are
 * all there are); the tool's own threads only store numbers (relaxed
 * atomics): no measuring thread writes to a terminal or waits for one.
 * The driver (tool.c) starts it before a tool's run and stops it, the line
 * cleared, before the report is written. Every call is a no-op when the
 * line is off.
 */
#ifndef RTMEM_TOOLS_PROGRESS_H
#define RTMEM_TOOLS_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

/* Starts the line for tool ("rtmem shm") when the above allows it. Its
 * phase is "running" until the tool names one. */
void tk_progress_start(const char *tool, bool quiet);

/* A new phase: its name (copied; cut at 79 bytes) and what "done" counts up to: a number of steps (set
 * with tk_progress_done), or, with seconds > 0, a known duration that the
 * line follows by itself. total 0 and seconds 0: only the elapsed time. */
void tk_progress_phase(const char *name, uint64_t total, double seconds);

/* A note on what the run is doing ("replaying on tlsf"): on a terminal
 * with the line on, the line's phase; otherwise a line "PROG: note" on
 * standard error, as a tool printed it before there was a line. */
void tk_progress_note(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Steps of the current phase done so far. */
void tk_progress_done(uint64_t done);

/* Stops the thread and clears the line. */
void tk_progress_stop(void);

#endif
