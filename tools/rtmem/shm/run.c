/*
 * `rtmem shm`: setup (the mechanisms and sizes chosen, checked against
 * the memory and the free space they would take) and the run: pinned (and
 * under SCHED_FIFO with --fifo), the timer and the generator's cost
 * calibrated once, then every size, every mechanism: a row of the five
 * phases (phase.h), or the --duration mode.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/progress.h"
#include "common/leftovers.h"
#include "common/cleanup.h"
#include "common/pressure.h"
#include "common/result.h"
#include "common/tool.h"
#include "java.h"
#include "shm.h"

#define TIMER_CALIBRATION_MS 50
#define TMPFS_DIR            "/dev/shm"
#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

/* The default sizes: the published comparison's two. */
static const uint64_t default_sizes[] = { 64 * KIB, GIB };
/* --quick without --sizes: small enough for a test, large enough for a
 * 2 MiB page. */
static const uint64_t quick_sizes[] = { 64 * KIB, 4 * MIB };
/* --duration without --sizes: the size whose writeback the study
 * questioned. */
static const uint64_t duration_size = GIB;

static bool selected(const struct shm *sh, int m)
{
    return (sh->mechs >> m) & 1u;
}

/* The filesystem type of path, as the report names it. */
static void fs_name(const char *path, char *buf, size_t size)
{
    struct statfs f;
    if (statfs(path, &f) != 0) {
        snprintf(buf, size, "unknown");
        return;
    }
    switch ((unsigned long)f.f_type) {
    case TMPFS_MAGIC: snprintf(buf, size, "tmpfs"); break;
    case 0xEF53: snprintf(buf, size, "ext2/3/4"); break;
    case 0x58465342: snprintf(buf, size, "xfs"); break;
    case 0x9123683E: snprintf(buf, size, "btrfs"); break;
    case 0x794c7630: snprintf(buf, size, "overlayfs"); break;
    default: snprintf(buf, size, "0x%lx", (unsigned long)f.f_type);
    }
}

static uint64_t free_bytes(const char *path)
{
    struct statvfs v;
    if (statvfs(path, &v) != 0)
        return 0;
    return (uint64_t)v.f_bavail * v.f_frsize;
}

static uint64_t read_sysctl(const char *path)
{
    FILE *f = fopen(path, "re");
    uint64_t v = 0;
    if (f) {
        if (fscanf(f, "%" SCNu64, &v) != 1)
            v = 0;
        fclose(f);
    }
    return v;
}

/* "[never]" of shmem_enabled: the word in brackets. */
static void bracketed(const char *path, char *buf, size_t size)
{
    snprintf(buf, size, "unknown");
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    char line[256];
    if (fgets(line, sizeof(line), f)) {
        char *a = strchr(line, '['), *b = a ? strchr(a, ']') : NULL;
        if (a && b)
            snprintf(buf, size, "%.*s", (int)(b - a - 1), a + 1);
    }
    fclose(f);
}

/* A region of bytes must fit in half of what holds it, unless --force.
 * 0, or -1 (reported as bad usage). */
static int check_room(struct tk_session *s, struct shm *sh, uint64_t bytes)
{
    char want[32], have[32];
    if (sh->o.force)
        return 0;
    if (sh->mem_available && bytes > sh->mem_available / SHM_MEM_SHARE)
        return tk_args_bad(&s->cli,
                           "a region of %s is more than half of MemAvailable (%s): give a "
                           "smaller --sizes, or --force",
                           tk_fmt_iec(want, sizeof(want), bytes),
                           tk_fmt_iec(have, sizeof(have), sh->mem_available));
    if (selected(sh, MECH_FILE_DISK)) {
        uint64_t f = free_bytes(sh->o.dir);
        if (bytes > f / SHM_MEM_SHARE)
            return tk_args_bad(&s->cli,
                               "a file of %s is more than half of the free space of --dir %s "
                               "(%s): give another --dir, a smaller --sizes, or --force",
                               tk_fmt_iec(want, sizeof(want), bytes), sh->o.dir,
                               tk_fmt_iec(have, sizeof(have), f));
    }
    if (selected(sh, MECH_FILE_TMPFS) || selected(sh, MECH_POSIX)) {
        uint64_t f = free_bytes(TMPFS_DIR);
        if (bytes > f / SHM_MEM_SHARE)
            return tk_args_bad(&s->cli,
                               "a region of %s is more than half of the free space of " TMPFS_DIR
                               " (%s): give a smaller --sizes, or --force",
                               tk_fmt_iec(want, sizeof(want), bytes),
                               tk_fmt_iec(have, sizeof(have), f));
    }
    return 0;
}

int shm_setup(struct tk_session *s)
{
    struct shm *sh = calloc(1, sizeof(*sh));
    if (!sh) {
        fprintf(stderr, "%s: out of memory\n", s->cli.prog);
        return TK_EXIT_FAILED;
    }
    s->state = sh;
    s->comment = "\n";
    /* Before any name is created: a fatal signal removes them (mech.c). */
    tk_cleanup_install();
    sh->o = *(const struct shm_opts *)s->opts;
    sh->prog = s->cli.prog;
    sh->writes_given = tk_opt_given(s->tool->opts, s->tool->n_opts, &s->parsed, "writes");
    sh->zeroings_given = sh->o.zeroings > 0;
    if (sh->o.duration_ns)
        sh->mechs = sh->o.mechs ? sh->o.mechs : (1u << MECH_FILE_DISK) | (1u << MECH_FILE_TMPFS);
    else if (sh->o.mechs)
        sh->mechs = sh->o.mechs;
    else
        for (int m = 0; m < SHM_MECHS; m++)
            sh->mechs |= shm_mechs[m].in_default ? 1u << m : 0;

    if (sh->o.sizes.n) {
        sh->sizes = sh->o.sizes;
    } else if (sh->o.duration_ns) {
        sh->sizes.bytes[sh->sizes.n++] = duration_size;
    } else {
        const uint64_t *d = sh->o.quick ? quick_sizes : default_sizes;
        for (size_t i = 0; i < 2; i++)
            sh->sizes.bytes[sh->sizes.n++] = d[i];
    }

    struct stat st;
    if (stat(sh->o.dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        tk_args_bad(&s->cli, "--dir: '%s' is not a directory", sh->o.dir);
        return TK_EXIT_USAGE;
    }
    if (strlen(sh->o.dir) > SHM_MAX_DIR_BYTES) {
        tk_args_bad(&s->cli, "--dir: a path of at most %d bytes, please", SHM_MAX_DIR_BYTES);
        return TK_EXIT_USAGE;
    }
    if ((selected(sh, MECH_FILE_DISK) || sh->o.java) && access(sh->o.dir, W_OK | X_OK) != 0) {
        tk_args_bad(&s->cli, "--dir: cannot create files in '%s': %s", sh->o.dir, strerror(errno));
        return TK_EXIT_USAGE;
    }
    fs_name(sh->o.dir, sh->dir_fs, sizeof(sh->dir_fs));
    /* What runs killed with SIGKILL left in the places this run uses
     * (leftovers.h): removed, and said, before anything is measured. */
    tk_leftover_sweep(s->cli.prog, "/dev/shm", "rtmem-shm");
    tk_leftover_sweep(s->cli.prog, sh->o.dir, "rtmem-shm");
    tk_leftover_sweep(s->cli.prog, sh->o.dir, "rtmem-shm-java");
    tk_leftover_sweep(s->cli.prog, "/dev/shm", "rtmem-shm-java");
    const char *tmp = getenv("TMPDIR");
    tk_leftover_sweep(s->cli.prog, tmp && *tmp ? tmp : "/tmp", "rtmem-java");
    sh->mem_available = tk_pressure_mem_available();
    for (size_t i = 0; i < sh->sizes.n; i++)
        if (check_room(s, sh, sh->sizes.bytes[i]) != 0)
            return TK_EXIT_USAGE;
    tk_pressure_thp(sh->thp_mode, sizeof(sh->thp_mode));
    bracketed("/sys/kernel/mm/transparent_hugepage/shmem_enabled", sh->shmem_thp_mode,
              sizeof(sh->shmem_thp_mode));
    sh->dirty_writeback_cs = read_sysctl("/proc/sys/vm/dirty_writeback_centisecs");
    sh->dirty_expire_cs = read_sysctl("/proc/sys/vm/dirty_expire_centisecs");

    unsigned n = 0;
    for (int m = 0; m < SHM_MECHS; m++)
        n += selected(sh, m);
    size_t rows = (size_t)n * sh->sizes.n;
    if (sh->o.duration_ns) {
        sh->durs = calloc(rows, sizeof(*sh->durs));
    } else {
        sh->rows_capacity = rows + SHM_EXTRA_ROWS * sh->sizes.n;
        sh->rows = calloc(sh->rows_capacity, sizeof(*sh->rows));
    }
    if ((!sh->durs && !sh->rows) || tk_samples_init(&sh->slices, SHM_MAX_SLICES) != 0) {
        fprintf(stderr, "%s: out of memory for the results\n", s->cli.prog);
        return TK_EXIT_FAILED;
    }
    if (sh->o.java)
        sh->java_ok = shm_java_available(sh->java_why, sizeof(sh->java_why));
    tk_machine_collect(&sh->mf);
    return 0;
}

void shm_teardown(struct tk_session *s)
{
    struct shm *sh = s->state;
    if (!sh)
        return;
    for (size_t i = 0; i < sh->n_durs; i++)
        free(sh->durs[i].ticks);
    free(sh->durs);
    free(sh->rows);
    tk_samples_destroy(&sh->slices);
    free(sh);
    s->state = NULL;
}

/* One mechanism at one size: the five phases, and the reader. */
static void measure_row(struct shm *sh, enum shm_mech_id m, uint64_t bytes, struct shm_row *row)
{
    memset(row, 0, sizeof(*row));
    snprintf(row->mech, sizeof(row->mech), "%s", shm_mechs[m].name);
    row->bytes = bytes;
    struct shm_region r;
    uint64_t minor0, major0;
    shm_faults(&minor0, &major0);
    uint64_t t0 = tk_clock_ns();
    if (shm_region_open(sh, m, bytes, &r, row->why, sizeof(row->why)) != 0) {
        row->skipped = true;
        return;
    }
    snprintf(row->note, sizeof(row->note), "%s", r.a.message);
    shm_touch(sh, row, &r, t0, minor0, major0);
    const struct tk_smaps_entry *e = &row->pages.smaps;
    /* A region below a huge page cannot have one: no note. */
    if (shm_mechs[m].thp == RTM_ARENA_THP_ON && row->pages.read && !row->note[0] &&
        row->mapped_bytes >= RTM_ARENA_PAGE_2M &&
        e->anon_huge_bytes + e->shmem_pmd_bytes + e->file_pmd_bytes == 0)
        snprintf(row->note, sizeof(row->note),
                 "MADV_HUGEPAGE given and no transparent huge page obtained after the touch "
                 "(THP %s, shmem THP %s)",
                 sh->thp_mode, sh->shmem_thp_mode);
    shm_writes(sh, row, &r);
    row->checksum = shm_checksum(r.a.base, r.a.size_bytes);
    if (sh->o.processes > 1) {
        shm_read_in_child(sh, row, &r, m);
        if (shm_mechs[m].shared && !(row->reader.done && row->reader.matched)) {
            row->failed = true;
            snprintf(row->why, sizeof(row->why), "second process: %.600s", row->reader.why);
        }
    }
    shm_zeroings(sh, row, &r);
    if (shm_mechs[m].file)
        shm_sync(sh, row, &r);
    struct shm_phase *td = &row->phase[SHM_PHASE_TEARDOWN];
    shm_faults(&minor0, &major0);
    t0 = tk_clock_ns();
    int rc = shm_region_close(&r);
    td->ns = (double)(tk_clock_ns() - t0);
    uint64_t minor, major;
    shm_faults(&minor, &major);
    td->minor_faults = minor - minor0;
    td->major_faults = major - major0;
    td->ops = 1;
    td->done = true;
    if (rc != 0 && !row->failed) {
        row->failed = true;
        snprintf(row->why, sizeof(row->why), "teardown: %.511s", r.a.message);
    }
}

enum tk_run_end shm_run(struct tk_session *s)
{
    struct shm *sh = s->state;
    struct tk_rt_request req = {
        .pin = true,
        .cpu = sh->o.cpu,
        .fifo = sh->o.fifo,
        .priority = sh->o.priority,
        .lock = false, /* mlockall would lock and fault in every region at its mmap */
    };
    struct tk_rt_state rt;
    tk_rt_setup(&req, &rt);
    sh->rt = rt;
    enum tk_run_end end = TK_RUN_ABORTED;
    int rc = tk_timer_init(&sh->timer, TIMER_CALIBRATION_MS);
    if (rc != 0) {
        fprintf(stderr, "%s: the timer cannot be calibrated: %s\n", sh->prog, strerror(-rc));
        goto out;
    }
    sh->timer_ok = true;
    shm_rng_cost(sh);
    shm_print_header(stdout, sh);
    if (tk_stdout_check(sh->prog) != 0)
        goto out;
    bool failed = false;
    uint64_t start = tk_clock_ns();
    size_t regions = 0, done = 0;
    for (int m = 0; m < SHM_MECHS; m++)
        regions += selected(sh, m) ? sh->sizes.n : 0;
    tk_progress_phase("regions", regions, 0);
    for (size_t i = 0; i < sh->sizes.n; i++) {
        for (int m = 0; m < SHM_MECHS; m++) {
            if (!selected(sh, m))
                continue;
            tk_progress_done(done++);
            if (sh->o.duration_ns) {
                shm_duration_run(sh, m, sh->sizes.bytes[i], &sh->durs[sh->n_durs++]);
                continue;
            }
            struct shm_row *row = &sh->rows[sh->n_rows++]; /* setup sized the table */
            measure_row(sh, m, sh->sizes.bytes[i], row);
            failed |= row->failed;
            shm_print_progress(row, start);
        }
        if (!sh->o.java || sh->o.duration_ns)
            continue;
        size_t first = sh->n_rows;
        shm_java_rows(sh, sh->sizes.bytes[i], start);
        for (size_t k = first; k < sh->n_rows; k++)
            failed |= sh->rows[k].failed;
    }
    end = failed ? TK_RUN_FAILED : TK_RUN_PASSED;
out:
    tk_rt_refresh(&sh->rt);
    rt = sh->rt;
    tk_rt_undo(&rt);
    return end;
}
