/* Bench kit: the machine and the timer, printed and as JSON (describe.h). */
#include "common/describe.h"

#include <gnu/libc-version.h>
#include <stdbool.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#if defined(__clang__)
#define TK_STR_(x) #x
#define TK_STR(x)  TK_STR_(x)
#define TK_COMPILER \
    "clang " TK_STR(__clang_major__) "." TK_STR(__clang_minor__) "." TK_STR(__clang_patchlevel__)
#elif defined(__GNUC__)
#define TK_COMPILER "gcc " __VERSION__
#else
#define TK_COMPILER __VERSION__
#endif

/* The value of a "key : value" line of /proc/cpuinfo, trimmed, in place. */
static const char *cpuinfo_value(char *line)
{
    char *colon = strchr(line, ':');
    if (!colon)
        return NULL;
    colon++;
    colon += strspn(colon, " \t");
    colon[strcspn(colon, "\n")] = '\0';
    return colon;
}

/* x86 names the CPU in "model name"; arm64 has none, take "Hardware". */
static void read_cpu_model(char *buf, size_t size)
{
    snprintf(buf, size, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "model name", 10) != 0 && strncmp(line, "Hardware", 8) != 0)
            continue;
        const char *v = cpuinfo_value(line);
        if (v) {
            snprintf(buf, size, "%s", v);
            break;
        }
    }
    fclose(f);
}

/* The architecture this program was built for, as uname names it. */
#if defined(__x86_64__)
#define TK_BUILT_FOR "x86_64"
#elif defined(__aarch64__)
#define TK_BUILT_FOR "aarch64"
#elif defined(__arm__)
#define TK_BUILT_FOR "arm"
#elif defined(__i386__)
#define TK_BUILT_FOR "i686"
#else
#define TK_BUILT_FOR ""
#endif

/* User-mode emulation gives itself away in /proc/cpuinfo, which qemu-user
 * passes through from the host: an x86 CPU's lines (vendor_id, flags) under
 * an ARM program, or an ARM CPU's (CPU implementer, Features) under an x86
 * one. */
void tk_emulation_check(const char *cpuinfo, char *buf, size_t size)
{
    buf[0] = '\0';
    FILE *f = fopen(cpuinfo, "r");
    if (!f)
        return;
    bool x86 = false, arm = false;
    char line[512];
    while (fgets(line, sizeof(line), f)) {
        x86 = x86 || strncmp(line, "vendor_id", 9) == 0 || strncmp(line, "flags", 5) == 0;
        arm = arm || strncmp(line, "CPU implementer", 15) == 0 || strncmp(line, "Features", 8) == 0;
    }
    fclose(f);
#if defined(__x86_64__) || defined(__i386__)
    if (arm && !x86)
        snprintf(buf, size, "qemu-user: an %s program on an ARM CPU", TK_BUILT_FOR);
#elif defined(__aarch64__) || defined(__arm__)
    if (x86 && !arm)
        snprintf(buf, size, "qemu-user: an %s program on an x86 CPU", TK_BUILT_FOR);
#endif
}

/* The ELF machine this program was built for (e_machine). */
#if defined(__x86_64__)
#define TK_ELF_MACHINE 62 /* EM_X86_64 */
#elif defined(__aarch64__)
#define TK_ELF_MACHINE 183 /* EM_AARCH64 */
#elif defined(__arm__)
#define TK_ELF_MACHINE 40 /* EM_ARM */
#elif defined(__i386__)
#define TK_ELF_MACHINE 3 /* EM_386 */
#else
#define TK_ELF_MACHINE 0 /* unknown: never compared */
#endif

static const char *elf_machine_name(unsigned m)
{
    switch (m) {
    case 62: return "x86_64";
    case 183: return "aarch64";
    case 40: return "arm";
    case 3: return "i386";
    default: return "other";
    }
}

void tk_emulation_check_exe(const char *exe, char *buf, size_t size)
{
    buf[0] = '\0';
    unsigned char h[20];
    FILE *f = fopen(exe, "rb");
    if (!f)
        return;
    size_t n = fread(h, 1, sizeof(h), f);
    fclose(f);
    if (n != sizeof(h) || memcmp(h, "\177ELF", 4) != 0 || h[5] != 1 /* little-endian */)
        return;
    unsigned m = (unsigned)h[18] | (unsigned)h[19] << 8;
    if (TK_ELF_MACHINE == 0 || m == TK_ELF_MACHINE)
        return;
    char target[4096];
    ssize_t len = readlink(exe, target, sizeof(target) - 1); /* the emulator's path */
    if (len > 0)
        target[len] = '\0';
    else
        snprintf(target, sizeof(target), "%s", exe); /* not a link: the file itself */
    const char *base = strrchr(target, '/');
    base = base ? base + 1 : target;
    snprintf(buf, size, "user-mode emulation: an %s program run by %.32s (%s)", TK_BUILT_FOR,
             *base ? base : "an emulator", elf_machine_name(m));
}

void tk_emulation_detect(char *buf, size_t size)
{
    tk_emulation_check("/proc/cpuinfo", buf, size);
    if (!buf[0])
        tk_emulation_check_exe("/proc/thread-self/exe", buf, size);
}

void tk_machine_collect(struct tk_machine *mf)
{
    memset(mf, 0, sizeof(*mf));
    read_cpu_model(mf->cpu_model, sizeof(mf->cpu_model));
    struct utsname u;
    if (uname(&u) == 0) {
        snprintf(mf->sysname, sizeof(mf->sysname), "%s", u.sysname);
        snprintf(mf->release, sizeof(mf->release), "%s", u.release);
        snprintf(mf->version, sizeof(mf->version), "%s", u.version);
        snprintf(mf->machine, sizeof(mf->machine), "%s", u.machine);
    }
    mf->cpus_online = sysconf(_SC_NPROCESSORS_ONLN);
    mf->libc_version = gnu_get_libc_version();
    tk_emulation_detect(mf->emulation, sizeof(mf->emulation));
}

void tk_machine_print(FILE *f, const struct tk_machine *mf)
{
    fprintf(f, "machine: %s | %s %s %s | %ld CPUs online | glibc %s\n", mf->cpu_model, mf->sysname,
            mf->release, mf->machine, mf->cpus_online, mf->libc_version);
    if (mf->emulation[0])
        fprintf(f,
                "EMULATED (%s): every time below is the emulator's, not this program's; "
                "read this run for behaviour only\n",
                mf->emulation);
}

void tk_machine_json(struct tk_json *j, const struct tk_machine *mf, enum tk_detail d)
{
    bool full = d == TK_DETAIL_FULL;
    tk_json_begin_object(j);
    tk_json_kv_string(j, "cpu_model", mf->cpu_model);
    tk_json_kv_int(j, "cpus_online", mf->cpus_online);
    tk_json_kv_string(j, "sysname", mf->sysname);
    tk_json_kv_string(j, "kernel_release", mf->release);
    if (full)
        tk_json_kv_string(j, "kernel_version", mf->version);
    tk_json_kv_string(j, "arch", mf->machine);
    tk_json_kv_string(j, "libc", mf->libc_version);
    if (full)
        tk_json_kv_string(j, "compiler", TK_COMPILER);
    tk_json_kv_string(j, "emulation", mf->emulation[0] ? mf->emulation : NULL);
    tk_json_end_object(j);
}

void tk_timer_print(FILE *f, const char *label, const struct tk_timer *t, enum tk_detail d)
{
    bool full = d == TK_DETAIL_FULL;
    fprintf(f, "%s%s", label, t->source);
    /* by the timer's own source: a clock_gettime timer may be described while
     * the counter serves the tool's other timer */
    if (strncmp(t->source, "tsc", 3) == 0) {
        fprintf(f, ", %.4f GHz", t->tick_hz / 1e9);
        if (full)
            fprintf(f, " calibrated over %.0f ms against CLOCK_MONOTONIC_RAW",
                    t->calibration_ns / 1e6);
        fprintf(f, ", invariant TSC: %s", t->tsc_invariant ? "yes" : "NO");
    } else if (strncmp(t->source, "cntvct", 6) == 0) { /* arm64's generic timer */
        fprintf(f, ", %.4g MHz (cntfrq_el0)", t->tick_hz / 1e6);
    }
    fprintf(f, "\ntimer overhead: start/end pair around nothing");
    if (full)
        fprintf(f, ", %zu pairs", t->overhead_samples);
    fprintf(f, ": p50 %.1f ns, p99 %.1f ns, min %.1f ns; resolution %.1f ns", t->overhead_p50_ns,
            t->overhead_p99_ns, t->overhead_min_ns, t->resolution_ns);
    if (full)
        fprintf(f, " (%llu ticks)", (unsigned long long)t->resolution_ticks);
    fputc('\n', f);
}

void tk_timer_json(struct tk_json *j, const struct tk_timer *t, enum tk_detail d)
{
    bool full = d == TK_DETAIL_FULL;
    tk_json_begin_object(j);
    tk_json_kv_string(j, "source", t->source);
    tk_json_kv_double(j, "ns_per_tick", t->ns_per_tick);
    if (full) {
        tk_json_kv_double(j, "tick_hz", t->tick_hz);
        tk_json_kv_double(j, "calibration_ns", t->calibration_ns);
    }
    tk_json_kv_bool(j, "tsc_invariant", t->tsc_invariant);
    if (full)
        tk_json_kv_uint(j, "overhead_samples", t->overhead_samples);
    tk_json_kv_double(j, "overhead_p50_ns", t->overhead_p50_ns);
    tk_json_kv_double(j, "overhead_p99_ns", t->overhead_p99_ns);
    tk_json_kv_double(j, "overhead_min_ns", t->overhead_min_ns);
    if (full)
        tk_json_kv_uint(j, "resolution_ticks", t->resolution_ticks);
    tk_json_kv_double(j, "resolution_ns", t->resolution_ns);
    tk_json_end_object(j);
}
