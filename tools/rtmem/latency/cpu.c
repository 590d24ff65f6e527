/*
 * `rtmem latency`: what the kernel says about the measured CPU: its steal
 * time (/proc/stat), whether it is isolated (isolcpus), and whether the
 * machine is a virtual one. Read before and after the loops, never in them.
 */
#include <stdbool.h>
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
