/*
 * `rtmem shm --java`: the same workloads (phase.h) run by a Java program
 * through FileChannel.map's MappedByteBuffer, in a JVM that java.c starts
 * as a child process (reaped on every path, Ctrl-C included), compiled
 * from the source kept in tools/rtmem/shm/java/.
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
    uint64_t timeout_ns;     /* the JVM is killed after this */
};

struct shm_java_result {
    struct shm_phase phase[SHM_PHASES];
    double rng_ns_per_write; /* the generator's own cost, subtracted */
    char runtime[128];       /* the JVM, e.g. "OpenJDK 64-Bit Server VM 17.0.15" */
};

/* Whether a JDK can run the workloads here (java and javac found, the
 * source compiled); if not, why in why[size] ("no javac on PATH: install
 * openjdk-17-jdk-headless"). */
bool shm_java_available(char *why, size_t size);

/* Runs the job in a JVM. Returns 0 with *r filled, or a negative errno with
 * the cause in why[size] (the JVM failed, was killed at the timeout, or its
 * output could not be read). */
int shm_java_run(const struct shm_java_job *job, struct shm_java_result *r, char *why, size_t size);

#endif /* RTMEM_TOOLS_SHM_JAVA_H */
