/*
 * `rtmem bw`: setup (the caches, glibc's thresholds, the sizes, checked
 * against MemAvailable), the run (real-time setup, source and destination,
 * timer, counters, the phases) and what the phases share: timing a copy
 * with its counters, checking it, opening an arena.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "bw.h"
#include "common/pressure.h"
#include "common/result.h"
#include "common/tool.h"

/* tk_timer_init's calibration window. */
#define TIMER_CALIBRATION_MS 50
/* The eviction buffer where no flush instruction exists: this many times
 * the last-level cache (BW_MIN_TOP if none is known). */
#define EVICT_LLC_FACTOR     2u

static bool insert_size(struct tk_sizes *s, uint64_t v)
{
    v = v / BW_GRAIN * BW_GRAIN;
    if (v < BW_GRAIN || v > BW_MAX_BYTES)
        return true;
    return tk_sizes_insert(s, v);
}

/* A threshold T and the size just below it. */
static void bracket(struct tk_sizes *s, uint64_t t)
{
    if (t >= 2 * BW_GRAIN) {
        insert_size(s, t / 8 * 7);
        insert_size(s, t);
    }
}

static void default_sizes(struct bw *b)
{
    struct tk_sizes *s = &b->sizes;
    s->n = 0;
    if (b->o.quick) {
        insert_size(s, 4 * BW_KIB);
        insert_size(s, 64 * BW_KIB);
        insert_size(s, BW_MIB);
        return;
    }
    const struct tk_cache *llc = tk_caches_llc(&b->caches);
    uint64_t top = BW_MIN_TOP;
    if (llc && BW_LLC_FACTOR * llc->bytes > top)
        top = BW_LLC_FACTOR * llc->bytes;
    if (BW_NT_FACTOR * b->glibc.non_temporal > top)
        top = BW_NT_FACTOR * b->glibc.non_temporal;
    for (uint64_t v = BW_START_BYTES; v < top; v *= 2)
        insert_size(s, v);
    insert_size(s, top);
    bracket(s, b->glibc.rep_movsb);
    bracket(s, b->glibc.movsb_stop);
    bracket(s, b->glibc.non_temporal);
}

/* Bytes of memory the run maps for a largest size of top: source and
 * destination (unless devices), and the prep phase's fresh destination. */
static uint64_t memory_needed(const struct bw *b, uint64_t top)
{
    uint64_t need = 0;
    if (b->o.src.kind != BW_KIND_DEVICE)
        need += top;
    if (b->o.dst.kind != BW_KIND_DEVICE)
        need += top;
    if (b->run_prep && b->o.dst.kind != BW_KIND_DEVICE)
        need += b->o.size;
    return need;
}

static bool fits(const struct bw *b, uint64_t top)
{
    return b->o.force || !b->mem_available ||
           memory_needed(b, top) <= b->mem_available / BW_MEM_SHARE;
}

static uint64_t largest(const struct bw *b)
{
    uint64_t top = 0;
    if (b->run_methods && b->sizes.n)
        top = b->sizes.bytes[b->sizes.n - 1];
    if ((b->run_prep || b->run_cache) && b->o.size > top)
        top = b->o.size;
    return top;
}

/* --dst names memory the user lets the run overwrite: a character device or
 * kernel node, never a regular file outside sysfs nor a block device. The
 * decision is taken on the opened file, not on the path's text, so
 * /sys/../file is refused. 0, or an exit status (reported). */
static int check_dst(struct tk_session *s, const struct bw *b)
{
    if (!b->o.dst.path)
        return 0;
    int fd = open(b->o.dst.path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return 0; /* the arena layer reports the open error */
    struct stat sb = { 0 };
    struct statfs fs;
    bool regular = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
    bool block = S_ISBLK(sb.st_mode);
    bool sysfs = fstatfs(fd, &fs) == 0 && fs.f_type == SYSFS_MAGIC;
    close(fd);
    if (block) {
        tk_args_bad(&s->cli,
                    "--dst: '%s' is a block device: rtmem does not overwrite disks (name a "
                    "character device or kernel node)",
                    b->o.dst.path);
        return TK_EXIT_USAGE;
    }
    if (regular && !sysfs) {
        tk_args_bad(&s->cli,
                    "--dst: '%s' is a regular file: rtmem does not overwrite files it did not "
                    "create (name a device or kernel node)",
                    b->o.dst.path);
        return TK_EXIT_USAGE;
    }
    return 0;
}

int bw_setup(struct tk_session *s)
{
    struct bw *b = calloc(1, sizeof(*b));
    if (!b) {
        fprintf(stderr, "%s: out of memory\n", s->cli.prog);
        return TK_EXIT_FAILED;
    }
    s->state = b;
    b->o = *(const struct bw_opts *)s->opts;
    b->prog = s->cli.prog;
    b->verified = true;
    b->corrupt = getenv("RTMEM_BW_CORRUPT") != NULL;
    s->comment = "\n";
    b->run_methods = b->o.only == BW_ONLY_ALL || b->o.only == BW_ONLY_METHODS;
    b->run_prep = b->o.only == BW_ONLY_ALL || b->o.only == BW_ONLY_PREP;
    b->run_cache = b->o.only == BW_ONLY_ALL || b->o.only == BW_ONLY_CACHE;
    int rc = check_dst(s, b);
    if (rc)
        return rc;
    b->cpu = tk_rt_pinned_cpu(b->o.rt.cpu);
    tk_caches_read(&b->caches, b->cpu);
    bw_glibc_read(&b->glibc, &b->caches);
    b->mem_available = tk_pressure_mem_available();

    bool given = b->o.sizes.n > 0;
    if (given)
        b->sizes = b->o.sizes;
    else if (b->run_methods)
        default_sizes(b);
    /* The largest size must fit: one the user named is refused, the default
     * sizes stop below. */
    while (!fits(b, largest(b))) {
        uint64_t top = largest(b);
        bool methods_top =
            b->run_methods && b->sizes.n > 1 && b->sizes.bytes[b->sizes.n - 1] == top;
        if (given || !methods_top) {
            char sz[32], need[32], have[32];
            tk_args_bad(&s->cli,
                        "copying %s needs %s of memory (source and destination): more than "
                        "half of MemAvailable (%s); --force allows it",
                        tk_fmt_iec(sz, sizeof(sz), top),
                        tk_fmt_iec(need, sizeof(need), memory_needed(b, top)),
                        tk_fmt_iec(have, sizeof(have), b->mem_available));
            return TK_EXIT_USAGE;
        }
        b->sizes.n--;
    }
    b->top_bytes = largest(b);
    unsigned reps = b->o.reps;
    for (size_t i = 0; b->run_methods && i < b->sizes.n; i++)
        for (int m = 0; m < BW_N_METHODS; m++)
            if (bw_stat_init(&b->methods[i][m], reps, b->sizes.bytes[i]) != 0)
                goto oom;
    for (int p = 0; b->run_prep && p < BW_N_PREPS; p++)
        if (bw_stat_init(&b->prep[p].copy, reps, b->o.size) != 0 ||
            tk_samples_init(&b->prep[p].prep_ns, reps) != 0)
            goto oom;
    if (b->run_cache) {
        const struct tk_cache *llc = tk_caches_llc(&b->caches);
        uint64_t fit = llc ? llc->bytes / BW_CACHE_LLC_SHARE / BW_GRAIN * BW_GRAIN : 0;
        if (fit >= BW_GRAIN && fit < b->o.size)
            b->cache_bytes[b->n_cache++] = fit;
        b->cache_bytes[b->n_cache++] = b->o.size;
    }
    for (size_t i = 0; i < b->n_cache; i++)
        for (int c = 0; c < BW_N_CACHES; c++)
            if (bw_stat_init(&b->cache[i][c], reps, b->cache_bytes[i]) != 0)
                goto oom;
    tk_machine_collect(&b->mf);
    return 0;
oom:
    fprintf(stderr, "%s: out of memory for the run's results\n", s->cli.prog);
    return TK_EXIT_FAILED;
}

void bw_teardown(struct tk_session *s)
{
    struct bw *b = s->state;
    if (!b)
        return;
    if (b->src.open)
        rtm_arena_close(&b->src.a);
    if (b->dst.open)
        rtm_arena_close(&b->dst.a);
    if (b->perf_open)
        tk_perf_close(&b->perf);
    tk_cacheops_destroy(&b->cops);
    for (size_t i = 0; i < BW_MAX_SIZES; i++)
        for (int m = 0; m < BW_N_METHODS; m++)
            bw_stat_destroy(&b->methods[i][m]);
    for (int p = 0; p < BW_N_PREPS; p++) {
        bw_stat_destroy(&b->prep[p].copy);
        tk_samples_destroy(&b->prep[p].prep_ns);
    }
    for (size_t i = 0; i < BW_MAX_CACHE_POINTS; i++)
        for (int c = 0; c < BW_N_CACHES; c++)
            bw_stat_destroy(&b->cache[i][c]);
    free(b);
    s->state = NULL;
}

/* A pattern no page of zeroes or of one byte repeated matches, so that a
 * copy that skipped or repeated a part is found. */
static void fill_source(char *p, size_t bytes)
{
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (size_t i = 0; i + sizeof(x) <= bytes; i += sizeof(x)) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(p + i, &x, sizeof(x));
    }
}

/* Source and destination: the largest size, prefaulted, locked if
 * permitted. 0, or -1 (reported). */
static int open_ends(struct bw *b)
{
    struct {
        struct bw_end *e;
        const struct bw_place *pl;
        const char *what;
        bool ro;
    } ends[] = { { &b->src, &b->o.src, "source", b->o.src.kind == BW_KIND_DEVICE },
                 { &b->dst, &b->o.dst, "destination", false } };
    for (size_t i = 0; i < 2; i++) {
        int rc = bw_open_end(&ends[i].e->a, ends[i].pl, b->top_bytes, ends[i].ro,
                             RTM_ARENA_PREFAULT_TOUCH, RTM_ARENA_LOCK_TRY);
        if (rc != 0) {
            fprintf(stderr, "%s: cannot map the %s%s%s: %s\n", b->prog, ends[i].what,
                    ends[i].pl->path ? " " : "", ends[i].pl->path ? ends[i].pl->path : "",
                    ends[i].e->a.message[0] ? ends[i].e->a.message : strerror(-rc));
            return -1;
        }
        ends[i].e->open = true;
        ends[i].e->place = ends[i].pl;
    }
    if (b->o.src.kind != BW_KIND_DEVICE)
        fill_source(b->src.a.base, b->top_bytes);
    return 0;
}

enum tk_run_end bw_run(struct tk_session *s)
{
    struct bw *b = s->state;
    struct tk_rt_request req = tk_rt_request_of(&b->o.rt, false); /* never mlockall: bw.h */
    req.cpu = b->cpu; /* resolved in the setup: the caches read are this CPU's */
    tk_rt_setup(&req, &b->rt);
    enum tk_run_end end = TK_RUN_ABORTED;
    const struct tk_cache *llc = tk_caches_llc(&b->caches);
    size_t evict = (size_t)(EVICT_LLC_FACTOR * (llc ? llc->bytes : BW_MIN_TOP));
    if (tk_cacheops_init(&b->cops, evict) != 0)
        fprintf(stderr,
                "%s: no memory for the eviction buffer: the cache phase cannot clean "
                "the caches\n",
                b->prog);
    if (open_ends(b) != 0)
        goto out;
    int rc = tk_timer_init(&b->timer, TIMER_CALIBRATION_MS);
    if (rc != 0) {
        fprintf(stderr, "%s: the timer cannot be calibrated: %s\n", b->prog, strerror(-rc));
        goto out;
    }
    b->timer_ok = true;
    tk_perf_open(&b->perf, !b->o.no_group);
    b->perf_open = true;
    bw_print_header(stdout, b);
    if (tk_stdout_check(b->prog) != 0)
        goto out;
    if ((b->run_methods && bw_methods_run(b) != 0) || (b->run_prep && bw_prep_run(b) != 0) ||
        (b->run_cache && bw_cache_run(b) != 0))
        goto out;
    end = b->verified ? TK_RUN_PASSED : TK_RUN_FAILED;
out:
    tk_rt_refresh(&b->rt);
    struct tk_rt_state rt = b->rt;
    tk_rt_undo(&rt);
    return end;
}
