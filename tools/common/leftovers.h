/*
 * Bench kit: what a run killed with SIGKILL left behind, found and removed
 * by the next run.
 *
 * SIGKILL cannot be handled (cleanup.h): a run killed so leaves the shm
 * objects, files and directories it made. So a tool names each of them
 * "<prefix>-<pid>-<start>-<unique>": its process id and that process's
 * start time (field 22 of /proc/<pid>/stat, clock ticks since boot), which
 * together name one process for the life of the machine. A later run looks
 * in the places it uses for such names and removes those of a run that no
 * longer exists (no process of that id, or one that started at another
 * time), saying what it removed. It removes only what belongs to its own
 * effective user, never anything of a live run, never a name of another
 * form.
 */
#ifndef RTMEM_TOOLS_LEFTOVERS_H
#define RTMEM_TOOLS_LEFTOVERS_H

#include <stddef.h>

/* "<prefix>-<pid>-<start>-" for this process into buf (the caller appends
 * its unique part). 0, or -1 if it does not fit. */
int tk_leftover_stem(const char *prefix, char *buf, size_t size);

/* Removes from directory dir every entry "<prefix>-<pid>-<start>-..." of a
 * run that no longer exists and that belongs to this user: a file, or a
 * directory with the files in it (one level). Each removal is reported on
 * stderr as "<prog>: removed <path>, left by run <pid>, which ended without
 * removing it". Returns how many were removed; a directory that cannot be
 * read removes nothing. */
int tk_leftover_sweep(const char *prog, const char *dir, const char *prefix);

#endif /* RTMEM_TOOLS_LEFTOVERS_H */
