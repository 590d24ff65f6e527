/*
 * Bench kit: what a run had to work with, for the report's header and the
 * results file: the machine (CPU model, kernel, libc, compiler) and the
 * timer (source, calibration, overhead, resolution). The real-time setup
 * has its own printer and JSON (tk_rt_print, tk_rt_json in rt.h).
 *
 * Two levels of detail: TK_DETAIL_FULL writes everything, TK_DETAIL_BRIEF
 * a subset (each function says which), so that a tool's report header
 * stays short where it must (memcheck's). Result files always carry the
 * full record, in the envelope every tool writes (tool.h).
 */
#ifndef RTMEM_TOOLS_DESCRIBE_H
#define RTMEM_TOOLS_DESCRIBE_H

#include <stdio.h>

#include "common/out.h"
#include "common/timer.h"

enum tk_detail {
    TK_DETAIL_BRIEF,
    TK_DETAIL_FULL,
};

/* Facts about the machine, read once per run. Strings are "" (cpu_model
 * "unknown") when they cannot be read; nothing here fails. */
struct tk_machine {
    char cpu_model[128]; /* /proc/cpuinfo "model name" (x86) or "Hardware" (arm64) */
    char sysname[65];    /* uname(2) */
    char release[65];
    char version[129];
    char machine[65];
    long cpus_online;         /* sysconf(_SC_NPROCESSORS_ONLN), -1 if unknown */
    const char *libc_version; /* gnu_get_libc_version(), static storage */
    /* "" natively; under user-mode emulation (qemu-user) what gave it away
     * (tk_emulation_detect), e.g. "qemu-user: an aarch64 program on an x86
     * CPU". Every timing of such a run measures the emulator. Full-system
     * emulation is not seen. */
    char emulation[96];
};

/* Whether the cpuinfo file (/proc/cpuinfo) shows this program emulated: a
 * CPU of another architecture than the one it was built for (x86 lines,
 * vendor_id or flags, under an ARM build; ARM lines, CPU implementer or
 * Features, under an x86 build; a file with both or neither is taken as
 * native). Writes what gave it away to buf, or "" (also when the file
 * cannot be read). */
void tk_emulation_check(const char *cpuinfo, char *buf, size_t size);

/* Whether the executable at exe (/proc/thread-self/exe: the kernel's link
 * to what this thread runs, which qemu-user does not rewrite as it does
 * /proc/self/exe) is an ELF file for another machine than the one this
 * program was built for: the emulator running it. Writes what gave it
 * away to buf, or "" (also when exe cannot be read or is no ELF file). */
void tk_emulation_check_exe(const char *exe, char *buf, size_t size);

/* Both checks on this process: /proc/cpuinfo (qemu-user before 8.1 passes
 * the host's through), then /proc/thread-self/exe. */
void tk_emulation_detect(char *buf, size_t size);

/* Fills *mf. Reads /proc/cpuinfo and calls uname: not for a timed region. */
void tk_machine_collect(struct tk_machine *mf);

/* One line: "machine: <cpu> | <sysname> <release> <arch> | <n> CPUs online |
 * glibc <version>"; under emulation a second: "EMULATED (<how>): ...". */
void tk_machine_print(FILE *f, const struct tk_machine *mf);

/* The machine as one JSON object value (call after a key): cpu_model,
 * cpus_online, sysname, kernel_release, arch, libc; TK_DETAIL_FULL adds
 * kernel_version (after kernel_release) and the compiler the tool was built
 * with; last, emulation (the string above, null natively). */
void tk_machine_json(struct tk_json *j, const struct tk_machine *mf, enum tk_detail d);

/* Two lines: "<label><source>" with, on the TSC, its frequency and whether
 * it is invariant (TK_DETAIL_FULL: and the calibration window), then
 * "timer overhead: ..." with p50, p99, min and the resolution in ns
 * (TK_DETAIL_FULL: and the number of pairs measured and the resolution in
 * ticks). label is printed as is, e.g. "timer: ". */
void tk_timer_print(FILE *f, const char *label, const struct tk_timer *t, enum tk_detail d);

/* The timer as one JSON object value (call after a key): source,
 * ns_per_tick, tsc_invariant, overhead_p50_ns, overhead_p99_ns,
 * overhead_min_ns, resolution_ns; TK_DETAIL_FULL adds tick_hz,
 * calibration_ns, overhead_samples and resolution_ticks, each next to its
 * kin. */
void tk_timer_json(struct tk_json *j, const struct tk_timer *t, enum tk_detail d);

#endif /* RTMEM_TOOLS_DESCRIBE_H */
