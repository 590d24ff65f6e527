/*
 * `rtmem run`: the program run with librtmem-malloc preloaded
 * (common/launch.h), configured through its environment (preload/malloc.c
 * lists the variables), and the summaries it wrote read back.
 *
 * The library writes its summary as JSON (rtmem-malloc/1) at the
 * program's exit into a private directory of the run's own (mkdtemp under
 * $TMPDIR, or /tmp): "summary.json" for the program's own process,
 * "summary.json.<pid>" for each child it forked (each with its copy of the
 * heap). Once the program has ended they are read and the directory is
 * removed, also on a fatal signal (common/cleanup.h). A program that never
 * called the family through the library (linked statically, set-user-ID,
 * or LD_PRELOAD cleared) leaves none: the report says so.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "run.h"

const char *const run_op_names[RUN_OPS] = { "malloc", "calloc", "realloc", "aligned", "free" };

static const char *const huge_env[] = { "", "2M", "1G" };
static const int signal_numbers[] = { 0, SIGUSR1, SIGUSR2 };

/* The library's environment, in the program's process before its exec. */
static int set_env(void *arg, pid_t pid)
{
    const struct run *r = arg;
    char pool[32], p[32], sig[16], json[PATH_MAX + 16];
    snprintf(pool, sizeof(pool), "%llu", (unsigned long long)r->o.pool);
    snprintf(p, sizeof(p), "%d", (int)pid);
    snprintf(sig, sizeof(sig), "%d", signal_numbers[r->o.signal]);
    snprintf(json, sizeof(json), "%s/summary.json", r->dir);
    const char *set[][2] = {
        { "RTMEM_MALLOC_KIND", r->o.kind },
        { "RTMEM_MALLOC_POOL", pool },
        { "RTMEM_MALLOC_HUGE", huge_env[r->o.huge] },
        { "RTMEM_MALLOC_LOCK", run_lock_choices[r->o.lock] },
        { "RTMEM_MALLOC_HARDEN", run_harden_choices[r->o.harden] },
        { "RTMEM_MALLOC_ON_FULL", run_full_choices[r->o.on_full] },
        { "RTMEM_MALLOC_JSON", json },
        { "RTMEM_MALLOC_PID", p },
        { "RTMEM_MALLOC_TIME", r->o.no_time ? "0" : "1" },
        { "RTMEM_MALLOC_SIGNAL", r->o.signal ? sig : "" },
    };
    for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++)
        if (setenv(set[i][0], set[i][1], 1) != 0)
            return -1;
    /* the summary text is the tool's report; on a signal, the library's
     * own goes to standard error */
    return unsetenv("RTMEM_MALLOC_SUMMARY");
}

/* The run's directory (launch.h's prepare: the signals are blocked). */
static int make_dir(void *arg)
{
    struct run *r = arg;
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    if (snprintf(r->dir, sizeof(r->dir), "%s/rtmem-run.XXXXXX", tmp) >= (int)sizeof(r->dir) ||
        !mkdtemp(r->dir)) {
        fprintf(stderr, "%s: cannot make a directory in %s for the summaries: %s\n", r->prog, tmp,
                strerror(errno));
        r->dir[0] = '\0';
        return -1;
    }
    /* The library's files by an absolute path: a program that changes
     * its directory still writes them here (a relative TMPDIR). */
    char abs[PATH_MAX];
    if (r->dir[0] != '/' && realpath(r->dir, abs) && strlen(abs) < sizeof(r->dir))
        snprintf(r->dir, sizeof(r->dir), "%s", abs);
    tk_cleanup_add_scratch_dir(r->dir);
    return 0;
}

/* The summaries in the directory: the program's, and its children's. */
static void read_summaries(struct run *r)
{
    char path[PATH_MAX + 300];
    snprintf(path, sizeof(path), "%s/summary.json", r->dir);
    r->have_main = run_read_summary(path, &r->main) == 0;
    DIR *d = opendir(r->dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        char *end;
        if (strncmp(e->d_name, "summary.json.", 13) != 0)
            continue;
        long pid = strtol(e->d_name + 13, &end, 10);
        if (*end || pid <= 0)
            continue;
        if (r->n_children == RUN_MAX_CHILDREN) {
            r->children_left++;
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", r->dir, e->d_name);
        if (run_read_summary(path, &r->children[r->n_children]) == 0)
            r->n_children++;
    }
    if (d)
        closedir(d);
}

enum tk_run_end run_run(struct tk_session *s)
{
    struct run *r = s->state;
    tk_cleanup_install();
    r->l = (struct tk_launch){
        .prog = r->prog,
        .lib = r->lib,
        .argv = s->cmd_argv,
        .prepare = make_dir,
        .set_env = set_env,
        .arg = r,
    };
    if (tk_launch_run(&r->l) != 0) {
        if (r->dir[0])
            tk_cleanup_remove_scratch_dir(r->dir);
        return TK_RUN_ABORTED;
    }
    read_summaries(r);
    if (tk_cleanup_remove_scratch_dir(r->dir) != 0)
        fprintf(stderr, "%s: cannot remove %s: %s\n", r->prog, r->dir, strerror(errno));
    s->exit_status = tk_launch_exit_status(&r->l);
    const struct tk_launch *l = &r->l;
    if (!r->have_main) {
        if (l->status_known && WIFEXITED(l->status) && WEXITSTATUS(l->status) == 127)
            snprintf(r->why_none, sizeof(r->why_none),
                     "the program did not start, or the heap could not be set up (the message "
                     "above says which)");
        else
            snprintf(r->why_none, sizeof(r->why_none),
                     "the program made no call through librtmem-malloc: it is not dynamically "
                     "linked against the C library, it cleared LD_PRELOAD, or it is set-user-ID "
                     "(the loader then ignores the library)");
        if (s->exit_status == 0)
            s->exit_status = 1; /* it ran, but not on the heap asked */
        return TK_RUN_FAILED;
    }
    bool clean = r->main.failed == 0 && r->main.refused_frees == 0;
    for (size_t i = 0; i < r->n_children; i++)
        clean = clean && r->children[i].failed == 0 && r->children[i].refused_frees == 0;
    return clean && s->exit_status == 0 ? TK_RUN_PASSED : TK_RUN_FAILED;
}

/* ---- the library's JSON ---------------------------------------------------------- */

/* After "key": in text (from), or NULL. */
static const char *after_key(const char *from, const char *key)
{
    char k[64];
    snprintf(k, sizeof(k), "\"%s\": ", key);
    const char *p = from ? strstr(from, k) : NULL;
    return p ? p + strlen(k) : NULL;
}

static bool num(const char *from, const char *key, uint64_t *v)
{
    const char *p = after_key(from, key);
    char *end;
    if (!p)
        return false;
    errno = 0;
    *v = strtoull(p, &end, 10);
    return end != p && errno == 0;
}

static bool str(const char *from, const char *key, char *buf, size_t size)
{
    const char *p = after_key(from, key);
    if (!p || *p != '"')
        return false;
    const char *q = strchr(p + 1, '"');
    if (!q || (size_t)(q - p - 1) >= size)
        return false;
    snprintf(buf, size, "%.*s", (int)(q - p - 1), p + 1);
    return true;
}

int run_read_summary(const char *path, struct run_summary *out)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char text[4096];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    memset(out, 0, sizeof(*out));
    char schema[32];
    uint64_t pid = 0;
    if (!str(text, "schema", schema, sizeof(schema)) || strcmp(schema, "rtmem-malloc/1") != 0 ||
        !num(text, "pid", &pid) || !str(text, "kind", out->kind, sizeof(out->kind)) ||
        !str(text, "locked", out->locked, sizeof(out->locked)) ||
        !str(text, "hardening", out->hardening, sizeof(out->hardening)) ||
        !str(text, "when_full", out->when_full, sizeof(out->when_full)) ||
        !num(text, "pool_bytes", &out->pool_bytes) ||
        !num(text, "huge_page_bytes", &out->huge_page_bytes))
        return -1;
    out->pid = (long)pid;
    const char *calls = after_key(text, "calls");
    for (int i = 0; i < RUN_OPS; i++)
        if (!num(calls, run_op_names[i], &out->calls[i]))
            return -1;
    const char *lock = after_key(text, "lock");
    if (!num(text, "foreign", &out->foreign) || !num(text, "before_ready", &out->before_ready) ||
        !num(text, "usable_bytes", &out->usable_bytes) ||
        !num(text, "peak_used_bytes", &out->peak_used_bytes) ||
        !num(text, "live_blocks", &out->live_blocks) || !num(text, "failed", &out->failed) ||
        !num(text, "fallbacks", &out->fallbacks) ||
        !num(text, "fallback_bytes", &out->fallback_bytes) ||
        !num(text, "refused_frees", &out->refused_frees) || !num(lock, "calls", &out->lock_calls) ||
        !num(lock, "contended", &out->contended))
        return -1;
    const char *g = after_key(text, "glibc");
    out->glibc = g && *g == '{';
    if (out->glibc)
        out->glibc_memory_known = num(g, "heap_bytes", &out->glibc_heap_bytes) &&
                                  num(g, "mmapped_bytes", &out->glibc_mmapped_bytes) &&
                                  num(g, "mmapped_blocks", &out->glibc_mmapped_blocks);
    const char *worst = after_key(text, "worst_ns");
    out->timed = worst && *worst == '{';
    for (int i = 0; out->timed && i < RUN_OPS; i++) {
        uint64_t w;
        if (!num(worst, run_op_names[i], &w))
            return -1;
        out->worst_ns[i] = (double)w;
    }
    return 0;
}
