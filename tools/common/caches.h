/*
 * Bench kit: the caches of one CPU, as the kernel lists them in
 * /sys/devices/system/cpu/cpuN/cache/indexI/ (level, type, size,
 * coherency_line_size, shared_cpu_list).
 *
 * A file that is missing or does not parse leaves its figure unknown; a
 * machine without these files (some ARM boards, some containers) has no
 * known cache, and a tool's report says so. Used by rtmem stride (where a
 * walk's cost jumps) and rtmem bw (the sizes a copy is measured at).
 */
#ifndef RTMEM_TOOLS_CACHES_H
#define RTMEM_TOOLS_CACHES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The cache line assumed when sysfs does not give one. */
#define TK_CACHE_DEFAULT_LINE 64u

/* The test hook (docs/stride.md, docs/bw.md): the directory read instead of
 * /sys/devices/system/cpu, for a machine without (or with made-up) sysfs
 * cache files. Named for the tool that introduced it. */
#define TK_CACHES_SYSFS_ENV     "RTMEM_STRIDE_SYSFS"
#define TK_CACHES_SYSFS_DEFAULT "/sys/devices/system/cpu"

/* The caches of one CPU, as sysfs lists them: at most this many. */
#define TK_CACHES_MAX 8

struct tk_cache {
    unsigned level;      /* 1, 2, 3... */
    char type[16];       /* "Data", "Instruction", "Unified" */
    uint64_t bytes;      /* 0: unknown */
    unsigned line_bytes; /* coherency_line_size, 0: unknown */
    char shared[64];     /* shared_cpu_list, "" if unknown */
    char name[8];        /* "L1d", "L1i", "L2": how a report names it */
};

struct tk_caches {
    int cpu;       /* whose caches */
    char dir[256]; /* the directory read (TK_CACHES_SYSFS_ENV or the default) */
    bool read;     /* some cache was found */
    size_t n;      /* caches[0 .. n), by level, then Data, Instruction, Unified */
    struct tk_cache caches[TK_CACHES_MAX];
    unsigned line_bytes; /* L1d's line (else the first known), else
                          * TK_CACHE_DEFAULT_LINE: a power of two from a
                          * pointer's size to 1 KiB */
    bool line_assumed;   /* line_bytes is TK_CACHE_DEFAULT_LINE, not read */
};

/* The caches of cpu from sysfs (the hook's directory, or the default).
 * Never fails: what cannot be read is unknown. O(TK_CACHES_MAX) file reads. */
void tk_caches_read(struct tk_caches *c, int cpu);
/* Is c a data or unified cache of known size (one a size can fit in)? */
bool tk_cache_sized_data(const struct tk_cache *c);
/* The largest data or unified cache, NULL if none is known. */
const struct tk_cache *tk_caches_llc(const struct tk_caches *c);
/* The L1 data cache, NULL if unknown. */
const struct tk_cache *tk_caches_l1d(const struct tk_caches *c);
/* The data or unified cache of that level, NULL if unknown. */
const struct tk_cache *tk_caches_level(const struct tk_caches *c, unsigned level);
/* The caches in a line of text: "cpu 1: L1d 32 KiB, L1i 32 KiB, L2 512 KiB,
 * L3 32 MiB (shared by cpus 0-1)", or "cpu 1: UNKNOWN: no cache is listed
 * in DIR/cpu1/cache". Into buf; returns buf. */
const char *tk_caches_describe(char *buf, size_t size, const struct tk_caches *c);
/* The name of the smallest data or unified cache bytes fits in, "memory"
 * beyond the largest, "unknown" without caches. */
const char *tk_caches_level_of(const struct tk_caches *c, uint64_t bytes);

#endif /* RTMEM_TOOLS_CACHES_H */
