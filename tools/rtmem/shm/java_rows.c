/*
 * `rtmem shm --java`: the rows "java:disk" (a file in --dir) and
 * "java:tmpfs" (a file in /dev/shm), measured by the JVM that java.c runs
 * on the same phases as the C mechanisms. Each job runs in a directory
 * made for it (mkdtemp beside where the file goes), registered with the
 * kit's cleanup with the file, so that Ctrl-C, a timeout or a JVM that
 * dies leaves nothing behind.
 *
 * The Java rows do the writes and zeroings the first C row measured at
 * the same size did (its counts, cut by --budget), so that the figures
 * compare, and must leave the region as that row did (checksum); --writes
 * and --zeroings set the counts exactly. Without a C row at that size
 * (all skipped), the JVM does --writes (uncut) and zeroings for --budget.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/leftovers.h"
#include "common/cleanup.h"
#include "java.h"
#include "shm.h"

#define TMPFS_DIR            "/dev/shm"
/* A JVM that has not ended by then is killed: the start and the touch of
 * a region, ten times the budget, and JAVA_TIMEOUT_FACTOR times what the
 * C row took for the same writes and zeroings. */
#define JAVA_TIMEOUT_BASE_NS ((uint64_t)120 * NS_PER_S)
#define JAVA_TIMEOUT_FACTOR  20.0

/* The first C row measured at this size, or NULL. */
static const struct shm_row *c_row(const struct shm *sh, uint64_t bytes)
{
    for (size_t i = 0; i < sh->n_rows; i++) {
        const struct shm_row *r = &sh->rows[i];
        if (r->bytes == bytes && !r->skipped && strncmp(r->mech, "java:", 5) != 0)
            return r;
    }
    return NULL;
}

/* The counts of the C row c (or, without one, --writes and --zeroings, and
 * the budget for zeroings not given), unless given. */
static void c_counts(const struct shm *sh, const struct shm_row *c, uint64_t *writes,
                     uint64_t *zeroings)
{
    *writes = sh->o.writes;
    *zeroings = sh->zeroings_given ? sh->o.zeroings : 0;
    if (!c)
        return;
    if (!sh->writes_given)
        *writes = c->phase[SHM_PHASE_WRITES].ops;
    if (!sh->zeroings_given)
        *zeroings = c->phase[SHM_PHASE_ZEROINGS].ops;
}

static void skip(struct shm_row *row, const char *why)
{
    row->skipped = true;
    snprintf(row->why, sizeof(row->why), "%s", why);
}

/* The row, or NULL if the table is full (setup sized it for these rows:
 * cannot happen). */
static const struct shm_row *measure(struct shm *sh, const char *name, const char *dir,
                                     uint64_t bytes, const char *method)
{
    struct shm_row *row = shm_row_add(sh);
    if (!row)
        return NULL;
    if (strcmp(method, SHM_JAVA_ZERO_DEFAULT) == 0)
        snprintf(row->mech, sizeof(row->mech), "%s", name);
    else
        snprintf(row->mech, sizeof(row->mech), "%s:%s", name, method);
    snprintf(row->zero_method, sizeof(row->zero_method), "%s", method);
    row->bytes = bytes;
    row->mapped_bytes = bytes;
    snprintf(row->reader.why, sizeof(row->reader.why), "a JVM's region: no second process");
    if (!sh->java_ok) {
        skip(row, sh->java_why);
        return row;
    }
    if (bytes > SHM_JAVA_MAX_BYTES) {
        skip(row, "above the 2 GiB - 1 that one MappedByteBuffer maps");
        return row;
    }
    char tmp[PATH_MAX], file[PATH_MAX + 32], run[64];
    if (tk_leftover_stem("rtmem-shm-java", run, sizeof(run)) != 0 ||
        snprintf(tmp, sizeof(tmp), "%s/%sXXXXXX", dir, run) >= (int)sizeof(tmp)) {
        skip(row, "the directory's path is too long");
        return row;
    }
    /* Signals held while the directory is made and registered: a Ctrl-C
     * cannot fall between the two. */
    sigset_t old;
    tk_cleanup_block(&old);
    int dir_slot = -1;
    bool made = mkdtemp(tmp) != NULL;
    int err = errno;
    if (made)
        dir_slot = tk_cleanup_add_dir(tmp);
    tk_cleanup_restore(&old);
    if (!made) {
        snprintf(row->why, sizeof(row->why), "cannot make a directory in %.300s: %s", dir,
                 strerror(err));
        row->failed = true;
        return row;
    }
    snprintf(file, sizeof(file), "%s/region", tmp);
    int file_slot = tk_cleanup_add_file(file);

    const struct shm_row *c = c_row(sh, bytes);
    struct shm_java_job job = {
        .path = file,
        .bytes = bytes,
        .zero_budget_ns = sh->o.budget_ns,
        .seed = sh->o.seed,
        .timeout_ns = JAVA_TIMEOUT_BASE_NS + 10 * sh->o.budget_ns,
        .zero_method = method,
    };
    c_counts(sh, c, &job.writes, &job.zeroings);
    /* The byte loop is some twenty times slower than a bulk fill: as many
     * as fit in the budget, unless --zeroings (its time limit then allows
     * for that: JAVA_TIMEOUT_FACTOR more again). */
    if (strcmp(method, "loop") == 0 && !sh->zeroings_given)
        job.zeroings = 0;
    /* Counts given, or large: the C row's time for them, many times over. */
    if (c)
        job.timeout_ns += (uint64_t)(JAVA_TIMEOUT_FACTOR * (c->phase[SHM_PHASE_WRITES].ns +
                                                            c->phase[SHM_PHASE_ZEROINGS].ns));
    if (c && strcmp(method, "loop") == 0)
        job.timeout_ns +=
            (uint64_t)(JAVA_TIMEOUT_FACTOR * JAVA_TIMEOUT_FACTOR * c->phase[SHM_PHASE_ZEROINGS].ns);
    row->writes_capped = !sh->writes_given && job.writes < sh->o.writes;
    struct shm_java_result r;
    int rc = shm_java_run(&job, &r, row->why, sizeof(row->why));
    if (unlink(file) != 0 && errno != ENOENT && rc == 0) {
        rc = -errno;
        snprintf(row->why, sizeof(row->why), "cannot remove %.300s: %s", file, strerror(errno));
    }
    tk_cleanup_forget_file(file_slot);
    if (rmdir(tmp) != 0 && rc == 0) {
        rc = -errno;
        snprintf(row->why, sizeof(row->why), "cannot remove %.300s: %s", tmp, strerror(errno));
    }
    tk_cleanup_forget_dir(dir_slot);
    if (rc != 0) {
        row->failed = true;
        return row;
    }
    memcpy(row->phase, r.phase, sizeof(row->phase));
    row->rng_ns_per_write = r.rng_ns_per_write;
    row->rng_spread_ns = r.rng_spread_ns;
    row->slice_ns_per_write = row->writes_spread_ns = NAN; /* one timed loop */
    row->checksum = r.checksum;
    /* The same seed, generator and writes on a region of the same size
     * leave the same bytes: Java did the work C did. */
    if (c && c->mapped_bytes == bytes && c->phase[SHM_PHASE_WRITES].ops == job.writes &&
        c->checksum != r.checksum) {
        row->failed = true;
        snprintf(row->why, sizeof(row->why),
                 "the region after the JVM's writes differs from the C row %s's (checksum "
                 "%016" PRIx64 " against %016" PRIx64 ")",
                 c->mech, r.checksum, c->checksum);
        return row;
    }
    uint64_t jit_ms = 0, gcs = 0;
    for (int p = 0; p < SHM_PHASES; p++)
        jit_ms += r.jit_ms[p], gcs += r.gcs[p];
    snprintf(sh->java_runtime, sizeof(sh->java_runtime), "%s", r.runtime);
    if (jit_ms || gcs)
        snprintf(row->note, sizeof(row->note),
                 "%" PRIu64 " ms of JIT compiling and %" PRIu64
                 " garbage collections fell inside the timed phases, and are in their times",
                 jit_ms, gcs);
    return row;
}

void shm_java_rows(struct shm *sh, uint64_t bytes, uint64_t start_ns)
{
    unsigned fills = sh->o.java_zero ? sh->o.java_zero : 1u << SHM_JAVA_ZERO_LONGS;
    for (int m = 0; m < SHM_JAVA_ZERO_N; m++) {
        if (!(fills & (1u << m)))
            continue;
        const char *method = shm_java_zero_methods[m];
        const struct shm_row *row = measure(sh, "java:disk", sh->o.dir, bytes, method);
        if (row)
            shm_print_progress(row, start_ns);
        row = measure(sh, "java:tmpfs", TMPFS_DIR, bytes, method);
        if (row)
            shm_print_progress(row, start_ns);
    }
}
