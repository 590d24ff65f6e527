/*
 * `rtmem shm --java`: the same workloads (phase.h) run by a Java program
 * through FileChannel.map's MappedByteBuffer, in a JVM that java.c starts
 * as a child process (reaped on every path, Ctrl-C included), compiled
 * from the source kept in tools/rtmem/shm/java/.
 *
 * The source (RtmemShm.java) is built into the program as text, so an
 * installed rtmem needs no file beside it, and javac compiles it at run
 * time, once per process: into a private directory (mkdtemp under $TMPDIR,
 * else /tmp) that is removed at once, its class kept in memory and written
 * to each run's own private directory, which the run removes. javac and
 * java are looked for in $JAVA_HOME/bin, then on PATH, on every call (a JDK
 * installed later is found). The JVM runs with a bounded heap (64 MiB,
 * touched at start so that its faults fall outside the phases), the serial
 * collector, no perf data file, its crash log in the private directory;
 * the program warms its loops up before timing anything (RtmemShm.java
 * says how) and reports the compile time that still fell in each phase.
 *
 * Every file and directory made, and the JVM, are registered with
 * tools/common/cleanup.h while they exist: a fatal signal leaves nothing.
 * Not thread-safe (the class is cached in a static buffer).
 */
#ifndef RTMEM_TOOLS_SHM_JAVA_H
#define RTMEM_TOOLS_SHM_JAVA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "phase.h"

struct shm_java_job {
    /* The file to create, size, map and remove: a path that does not exist
     * yet, in a directory the caller made and removes (the caller also
     * removes the file if the JVM dies before it does). */
    const char *path;
    uint64_t bytes;          /* region size: at most what one MappedByteBuffer maps */
    uint64_t writes;         /* random one-byte writes */
    uint64_t zeroings;       /* full zeroings; 0: as many as fit in zero_budget_ns, at least 3 */
    uint64_t zero_budget_ns; /* for zeroings 0 */
    uint64_t seed;           /* splitmix64's seed, as in C */
    uint64_t timeout_ns;     /* the JVM is killed after this; 0: 10 minutes */
    /* The bulk fill of the zeroings (SHM_JAVA_ZERO_METHODS); NULL: the
     * default, SHM_JAVA_ZERO_DEFAULT (docs/shm-java.md says why). */
    const char *zero_method;
};

/* The zeroings' fills RtmemShm.java offers. bytes: put(int, byte[]) from a
 * zeroed 64 KiB array, chunk by chunk; direct: the same from a zeroed
 * direct buffer; longs: putLong(int, 0) on every 8 bytes; unsafe:
 * sun.misc.Unsafe.setMemory on the mapping (no public API: a reference);
 * loop: put((byte) 0) on every byte from position 0, one at a time (the
 * relative put), the published comparison's Java zeroing. */
#define SHM_JAVA_ZERO_METHODS "bytes", "direct", "longs", "unsafe", "loop"
#define SHM_JAVA_ZERO_N       5
#define SHM_JAVA_ZERO_LONGS   2 /* the default's index */
#define SHM_JAVA_ZERO_DEFAULT "longs"
extern const char *const shm_java_zero_methods[SHM_JAVA_ZERO_N];

/* Largest region: one MappedByteBuffer holds at most Integer.MAX_VALUE
 * bytes. */
#define SHM_JAVA_MAX_BYTES 2147483647u

struct shm_java_result {
    /* Every phase done when shm_java_run returns 0. ops: pages touched
     * (bytes / page size, rounded up), job->writes, the zeroings made,
     * 1, 1. Faults: the whole JVM's (its compiler and collector threads
     * too), from /proc/self/stat around the phase. writes' ns is the
     * loop's whole time, the generator included. */
    struct shm_phase phase[SHM_PHASES];
    /* The generator alone, per draw: the fastest of its three runs, and
     * the slowest less the fastest (three runs have no interquartile
     * range; the net write's precision: shm.h). */
    double rng_ns_per_write;
    double rng_spread_ns;
    char runtime[128];    /* the JVM, e.g. "OpenJDK 64-Bit Server VM 17.0.15" */
    char zero_method[16]; /* the fill the zeroings used */
    /* Compile time (whole ms) and collections that fell inside each phase:
     * 0 and 0 when the warm-up did its job. */
    uint64_t jit_ms[SHM_PHASES];
    uint64_t gcs[SHM_PHASES];
    /* The region after the writes (shm_java_checksum's function): a C run
     * of the same job (touch, then writes, same seed) gives the same. */
    uint64_t checksum;
};

/* Whether a JDK can run the workloads here (java and javac found, the
 * source compiled); if not, why in why[size] ("no javac on PATH: install
 * openjdk-17-jdk-headless"). */
bool shm_java_available(char *why, size_t size);

/* Runs the job in a JVM. Returns 0 with *r filled, or a negative errno with
 * the cause in why[size] (the JVM failed, was killed at the timeout, or its
 * output could not be read). */
int shm_java_run(const struct shm_java_job *job, struct shm_java_result *r, char *why, size_t size);

/* Parses the JVM's output (RtmemShm.java's protocol) into *r, for a job of
 * `writes` writes: strict, every line in its place; 0, or -EPROTO with the
 * first bad line named in why. (shm_java_run's parser, for the tests.) */
int shm_java_parse(const char *text, uint64_t writes, struct shm_java_result *r, char *why,
                   size_t size);

/* FNV-1a's step over bytes[size] as 64-bit little-endian words (a tail of
 * fewer than 8 bytes byte by byte): the checksum RtmemShm.java reports,
 * for a C region to compare with. O(size). */
uint64_t shm_java_checksum(const uint8_t *bytes, size_t size);

#endif /* RTMEM_TOOLS_SHM_JAVA_H */
