/*
 * `rtmem latency`: what the kernel says about the measured CPU: its steal
 * time (/proc/stat), whether it is isolated (isolcpus), whether other
 * real-time tasks may run on it, and whether the machine is a virtual one, read before and after the loops,
 * never in them; and the CPU's idle-state limit (/dev/cpu_dma_latency),
 * held for the run.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "latency.h"

long lat_steal_ms(int cpu)
{
    char want[16];
    if (cpu >= 0)
        snprintf(want, sizeof(want), "cpu%d ", cpu);
    else
        snprintf(want, sizeof(want), "cpu ");
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return -1;
    char line[512];
    long ms = -1;
    long hz = sysconf(_SC_CLK_TCK);
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, want, strlen(want)) != 0)
            continue;
        /* user nice system idle iowait irq softirq steal, in clock ticks */
        unsigned long long v[8];
        if (hz > 0 && sscanf(line + strlen(want), "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
                             &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8)
            ms = (long)(v[7] * 1000u / (unsigned long long)hz);
        break;
    }
    fclose(f);
    return ms;
}

/* Is cpu in the list text ("1-3,6"), as the kernel writes CPU lists? */
static bool in_cpu_list(const char *text, int cpu)
{
    const char *p = text;
    while (*p >= '0' && *p <= '9') {
        char *end;
        long lo = strtol(p, &end, 10), hi = lo;
        if (*end == '-')
            hi = strtol(end + 1, &end, 10);
        if (cpu >= lo && cpu <= hi)
            return true;
        if (*end != ',')
            break;
        p = end + 1;
    }
    return false;
}

bool lat_cpu_isolated(int cpu, bool *known)
{
    *known = false;
    FILE *f = fopen("/sys/devices/system/cpu/isolated", "r");
    if (!f)
        return false;
    char line[1024] = "";
    /* An empty file (no CPU isolated) reads as no line. */
    if (!fgets(line, sizeof(line), f))
        line[0] = '\0';
    *known = !ferror(f);
    fclose(f);
    return *known && in_cpu_list(line, cpu);
}

bool lat_virtual_machine(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return false;
    char line[8192];
    bool vm = false;
    while (!vm && fgets(line, sizeof(line), f))
        if (strncmp(line, "flags", 5) == 0)
            vm = strstr(line, " hypervisor") != NULL;
    fclose(f);
    return vm;
}

/* Cpus_allowed_list of /proc/PID/task/TID/status holds cpu? */
static bool allowed_on(const char *dir, int cpu)
{
    char path[352], line[512];
    snprintf(path, sizeof(path), "%s/status", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool on = false;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "Cpus_allowed_list:", 18) != 0)
            continue;
        for (char *p = line + 18; *p && *p != '\n';) {
            char *end;
            long lo = strtol(p, &end, 10), hi = lo;
            if (end == p)
                break;
            if (*end == '-')
                hi = strtol(end + 1, &end, 10);
            on |= cpu >= lo && cpu <= hi;
            p = *end == ',' ? end + 1 : end;
        }
        break;
    }
    fclose(f);
    return on;
}

size_t lat_rt_neighbours(int cpu, pid_t self, char *first, size_t first_len)
{
    /* A task of the same real-time priority makes the measuring thread
     * wait without preempting it: no count of the run can show it. */
    size_t n = 0;
    first[0] = '\0';
    DIR *procs = opendir("/proc");
    if (!procs)
        return 0;
    struct dirent *pe;
    while ((pe = readdir(procs))) {
        char *end;
        long pid = strtol(pe->d_name, &end, 10);
        if (*end || pid <= 0 || pid == self)
            continue;
        char tdir[64];
        snprintf(tdir, sizeof(tdir), "/proc/%ld/task", pid);
        DIR *tasks = opendir(tdir);
        if (!tasks)
            continue;
        struct dirent *te;
        while ((te = readdir(tasks))) {
            if (te->d_name[0] == '.')
                continue;
            char dir[320], path[352], stat[1024];
            snprintf(dir, sizeof(dir), "%s/%s", tdir, te->d_name);
            snprintf(path, sizeof(path), "%s/stat", dir);
            FILE *f = fopen(path, "r");
            if (!f)
                continue;
            size_t len = fread(stat, 1, sizeof(stat) - 1, f);
            fclose(f);
            stat[len] = '\0';
            char *close = strrchr(stat, ')'), *open = strchr(stat, '(');
            if (!close || !open)
                continue;
            /* After the name: state (field 3) ... flags (9) ... rt_priority
             * (40), policy (41). */
            unsigned long long v[40] = { 0 };
            char *p = close + 2;
            size_t k = 0;
            for (; k < 40 && *p; k++) {
                while (*p == ' ')
                    p++;
                if (k == 0) { /* the state, a letter */
                    p++;
                    continue;
                }
                v[k] = strtoull(p, &p, 10);
            }
            bool kthread = v[6] & 0x00200000u; /* PF_KTHREAD */
            unsigned long long prio = v[37], policy = v[38];
            if (kthread || k < 39 || (policy != 1 && policy != 2) || !allowed_on(dir, cpu))
                continue;
            if (n++ == 0)
                snprintf(first, first_len, "pid %ld %.*s %s %llu", pid, (int)(close - open + 1),
                         open, policy == 1 ? "SCHED_FIFO" : "SCHED_RR", prio);
        }
        closedir(tasks);
    }
    closedir(procs);
    return n;
}

/* One value of the file: a 32-bit integer in microseconds, as the kernel
 * reads and writes it. false if it cannot be read. */
static bool dma_read(int fd, int32_t *us)
{
    return pread(fd, us, sizeof(*us), 0) == (ssize_t)sizeof(*us);
}

void lat_dma_hold(struct lat_dma *d, bool hold)
{
    const char *path = getenv(LAT_DMA_FILE_ENV);
    d->path = path && *path ? path : LAT_DMA_FILE;
    d->fd = -1;
    d->hold = hold;
    d->held = false;
    d->err = 0;
    d->machine_known = d->in_force_known = false;
    int fd = open(d->path, (hold ? O_RDWR : O_RDONLY) | O_CLOEXEC);
    if (fd < 0) {
        d->err = errno;
        return;
    }
    d->machine_known = dma_read(fd, &d->machine_us);
    if (!hold) {
        close(fd);
        return;
    }
    /* The request lasts as long as the file stays open: the kernel drops
     * it when the descriptor is closed, at lat_dma_release or at exit. */
    int32_t zero = 0;
    errno = 0;
    if (write(fd, &zero, sizeof(zero)) != (ssize_t)sizeof(zero)) {
        d->err = errno ? errno : EIO;
        close(fd);
        return;
    }
    d->fd = fd;
    /* Verified, not assumed: the target in force is the least of every
     * request, which must be ours now. */
    d->in_force_known = dma_read(fd, &d->in_force_us);
    d->held = d->in_force_known && d->in_force_us == 0;
}

void lat_dma_release(struct lat_dma *d)
{
    if (d->fd >= 0)
        close(d->fd);
    d->fd = -1;
}
