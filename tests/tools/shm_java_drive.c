/*
 * Runs one rtmem shm --java job several times and prints each phase's
 * median, minimum and maximum: the figures of docs/shm-java.md, until
 * `rtmem shm --java` prints them itself. Not a test.
 *
 * usage: shm_java_drive DIR BYTES WRITES ZEROINGS [METHOD [RUNS]]
 *   DIR       where the job's file goes (a directory of yours; the file is
 *             DIR/rtmem-shm-java-drive, which must not exist)
 *   METHOD    the zeroings' fill (java.h); RUNS: 5 if absent
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rtmem/shm/java.h"

#define MAX_RUNS 50

static const char *const names[SHM_PHASES] = { "touch", "writes", "zeroings", "sync", "teardown" };

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static uint64_t number(const char *s, const char *what)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end) {
        fprintf(stderr, "shm_java_drive: %s '%s' is not a number\n", what, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc < 5 || argc > 7) {
        fprintf(stderr, "usage: shm_java_drive DIR BYTES WRITES ZEROINGS [METHOD [RUNS]]\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof(path), "%s/rtmem-shm-java-drive", argv[1]);
    struct shm_java_job job = {
        .path = path,
        .bytes = number(argv[2], "BYTES"),
        .writes = number(argv[3], "WRITES"),
        .zeroings = number(argv[4], "ZEROINGS"),
        .seed = 1,
        .timeout_ns = 3600 * 1000000000ull,
        .zero_method = argc > 5 ? argv[5] : NULL,
    };
    unsigned runs = argc > 6 ? (unsigned)number(argv[6], "RUNS") : 5;
    if (runs < 1 || runs > MAX_RUNS) {
        fprintf(stderr, "shm_java_drive: RUNS: 1 to %d\n", MAX_RUNS);
        return 2;
    }
    char why[512];
    static double ns[SHM_PHASES][MAX_RUNS], rng[MAX_RUNS];
    static uint64_t minflt[SHM_PHASES][MAX_RUNS], majflt[SHM_PHASES][MAX_RUNS];
    uint64_t jit = 0, gcs = 0;
    struct shm_java_result r;
    for (unsigned k = 0; k < runs; k++) {
        if (shm_java_run(&job, &r, why, sizeof(why)) != 0) {
            fprintf(stderr, "shm_java_drive: %s\n", why);
            return 1;
        }
        for (int i = 0; i < SHM_PHASES; i++) {
            ns[i][k] = r.phase[i].ns;
            minflt[i][k] = r.phase[i].minor_faults;
            majflt[i][k] = r.phase[i].major_faults;
            jit += r.jit_ms[i];
            gcs += r.gcs[i];
        }
        rng[k] = r.rng_ns_per_write;
    }
    qsort(rng, runs, sizeof(double), cmp_double);
    printf("%s, %s bytes, %s writes, %llu zeroings (%s), %u runs; generator %.2f ns/write "
           "(median); compile time in phases %llu ms, collections %llu (all runs)\n",
           r.runtime, argv[2], argv[3], (unsigned long long)r.phase[SHM_PHASE_ZEROINGS].ops,
           r.zero_method, runs, rng[runs / 2], (unsigned long long)jit, (unsigned long long)gcs);
    printf("%-9s %14s %14s %14s %14s %10s %8s\n", "phase", "median s", "min s", "max s",
           "median ns/op", "minflt", "majflt");
    /* Faults: the last run's (they hardly vary from run to run). */
    for (int i = 0; i < SHM_PHASES; i++) {
        qsort(ns[i], runs, sizeof(double), cmp_double);
        double med = ns[i][runs / 2];
        printf("%-9s %14.6f %14.6f %14.6f %14.2f %10llu %8llu\n", names[i], med / 1e9,
               ns[i][0] / 1e9, ns[i][runs - 1] / 1e9, med / (double)r.phase[i].ops,
               (unsigned long long)minflt[i][runs - 1], (unsigned long long)majflt[i][runs - 1]);
    }
    return 0;
}
