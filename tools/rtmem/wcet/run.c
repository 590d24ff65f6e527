/*
 * `rtmem wcet`: the run. Setup makes the list of cases (the noop row, then
 * each kind's scenarios); the run takes the real-time setup, calibrates
 * the timer, then for each case builds the state, runs the operation once
 * and checks it, and times it warm and cold; then, out of the real-time
 * setup, the counted run (count.c). The counted run's child (under
 * valgrind) stops after setup: it only counts.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/child.h"
#include "common/result.h"
#include "common/tool.h"
#include "wcet.h"

#define TIMER_CALIBRATION_MS 50
/* The eviction walk under an emulator (wcet_run says why). */
#define EMULATED_EVICT_BYTES ((size_t)4 << 20)

static enum wcet_family family_of(const char *kind)
{
    if (strcmp(kind, "tlsf") == 0)
        return WCET_TLSF;
    if (strcmp(kind, "halffit") == 0)
        return WCET_HALFFIT;
    if (strcmp(kind, "xvheap") == 0)
        return WCET_XVHEAP;
    if (strcmp(kind, "zsheap") == 0)
        return WCET_ZSHEAP;
    if (strcmp(kind, "glibc") == 0)
        return WCET_GLIBC;
    if (strcmp(kind, "heapmem") == 0 || strcmp(kind, "xnheap") == 0)
        return WCET_PAGEHEAP;
    return WCET_PLUGIN;
}

/* Whether a plugin's name is already a kind's or another plugin's. */
static bool name_taken(const char *name, void *arg)
{
    const struct wcet *w = arg;
    for (size_t i = 0; wcet_kind_names[i]; i++)
        if (strcmp(wcet_kind_names[i], name) == 0)
            return true;
    for (size_t i = 0; i < w->n_plugins; i++)
        if (strcmp(w->plugins[i].name, name) == 0)
            return true;
    return strcmp(name, "noop") == 0;
}

/* --plugin: each loaded and checked (tk_plugin_load), its name a kind
 * after the others. 0, or -1 (reported). */
static int load_plugins(struct wcet *w, const struct tk_args *cli)
{
    for (size_t i = 0; i < w->o.n_plugins; i++) {
        char why[TK_WHY_MAX];
        if (tk_plugin_load(&w->plugins[w->n_plugins], w->o.plugin_paths[i], name_taken, w, why,
                           sizeof(why)) != 0) {
            tk_args_bad(cli, "--plugin %s: %s (rtmem/plugin.h describes the table)",
                        w->o.plugin_paths[i], why);
            return -1;
        }
        w->kinds[w->n_kinds++] = w->plugins[w->n_plugins++].name;
    }
    return 0;
}

/* The loaded plugin of that name. */
static struct tk_plugin *plugin_of(struct wcet *w, const char *name)
{
    for (size_t i = 0; i < w->n_plugins; i++)
        if (strcmp(w->plugins[i].name, name) == 0)
            return &w->plugins[i];
    return NULL;
}

static void add_kind(struct wcet *w, const char *name)
{
    for (size_t i = 0; wcet_kind_names[i]; i++)
        if (strcmp(wcet_kind_names[i], name) == 0)
            w->kinds[w->n_kinds++] = wcet_kind_names[i];
}

/* The kinds in the order --kinds names them (checked by cli.c); by
 * default all, glibc left out (and why) where its scenarios cannot run. */
static void pick_kinds(struct wcet *w)
{
    if (!w->o.kinds) {
        for (size_t i = 0; wcet_kind_names[i]; i++) {
            if (family_of(wcet_kind_names[i]) == WCET_GLIBC && wcet_glibc_n == 0) {
                w->glibc_skipped = true;
                snprintf(w->glibc_why, sizeof(w->glibc_why), "%s", wcet_no_glibc);
                continue;
            }
            w->kinds[w->n_kinds++] = wcet_kind_names[i];
        }
        return;
    }
    char name[32];
    const char *k = w->o.kinds;
    do {
        size_t len = strcspn(k, ",");
        snprintf(name, sizeof(name), "%.*s", (int)len, k);
        add_kind(w, name);
        k += len;
    } while (*k++ == ',');
}

static int add_case(struct wcet *w, const struct wcet_scenario *sc, const char *kind)
{
    if (w->n_cases == WCET_MAX_CASES)
        return -1;
    struct wcet_case *c = &w->cases[w->n_cases++];
    int rc = wcet_case_init(c, sc, kind, wcet_harden_levels[w->o.harden], (size_t)w->o.page_image);
    c->plugin = sc && sc->family == WCET_PLUGIN ? plugin_of(w, kind) : NULL;
    return rc;
}

int wcet_setup(struct tk_session *s)
{
    struct wcet *w = calloc(1, sizeof(*w));
    if (!w) {
        fprintf(stderr, "%s: out of memory\n", s->cli.prog);
        return TK_EXIT_FAILED;
    }
    s->state = w;
    w->o = *(const struct wcet_opts *)s->opts;
    w->prog = s->cli.prog;
    s->comment = "\n";
    w->child = wcet_is_count_child();
    w->hw_fd[0] = w->hw_fd[1] = -1;
    pick_kinds(w);
    if (load_plugins(w, &s->cli) != 0)
        return TK_EXIT_USAGE;
    if (!w->child)
        w->cpu = tk_rt_pinned_cpu(w->o.rt.cpu);
    int rc = add_case(w, NULL, "noop");
    for (size_t k = 0; k < w->n_kinds && rc == 0; k++) {
        const struct wcet_scenario *list = wcet_tlsf_scenarios;
        size_t n = wcet_tlsf_n;
        switch (family_of(w->kinds[k])) {
        case WCET_TLSF: break;
        case WCET_HALFFIT:
            list = wcet_halffit_scenarios;
            n = wcet_halffit_n;
            break;
        case WCET_XVHEAP:
            list = wcet_xvheap_scenarios;
            n = wcet_xvheap_n;
            break;
        case WCET_ZSHEAP:
            list = wcet_zsheap_scenarios;
            n = wcet_zsheap_n;
            break;
        case WCET_PAGEHEAP:
            list = wcet_pageheap_scenarios;
            n = wcet_pageheap_n;
            break;
        case WCET_GLIBC:
            list = wcet_glibc_scenarios;
            n = wcet_glibc_n;
            break;
        case WCET_PLUGIN:
            list = wcet_plugin_scenarios;
            n = wcet_plugin_n;
            break;
        }
        for (size_t i = 0; i < n && rc == 0; i++)
            rc = add_case(w, &list[i], w->kinds[k]);
    }
    if (rc != 0) {
        fprintf(stderr, "%s: out of memory for the heap images\n", s->cli.prog);
        return TK_EXIT_FAILED;
    }
    if (w->child) {
        /* The counted run's child: count, and stop here. */
        int status = wcet_count_child(w);
        fflush(stdout);
        _exit(status);
    }
    tk_caches_read(&w->caches, w->cpu);
    tk_machine_collect(&w->mf);
    return 0;
}

void wcet_teardown(struct tk_session *s)
{
    struct wcet *w = s->state;
    if (!w)
        return;
    for (size_t i = 0; i < w->n_cases; i++)
        wcet_case_destroy(&w->cases[i]);
    if (w->cops_ok)
        tk_cacheops_destroy(&w->cops);
    w->hw_counted = false;
    wcet_hw_finish(w);
    free(w);
    s->state = NULL;
}

/* Builds c, runs its operation once and checks it: 0, or -1 (c->why). */
static int build_and_check(struct wcet_case *c)
{
    int attempts = c->sc && c->sc->family == WCET_GLIBC ? WCET_GLIBC_ATTEMPTS : 1;
    int rc = -1;
    for (int i = 0; i < attempts && rc != 0; i++) {
        c->facts[0] = '\0';
        c->n_nums = 0;
        if (wcet_case_build(c) != 0) {
            wcet_case_finish(c); /* glibc: what the build made before it failed */
            return -1;
        }
        wcet_call(c);
        c->first_ret = c->ret;
        rc = c->sc ? c->sc->check(c) : 0;
        wcet_case_finish(c);
    }
    if (rc == 0)
        c->built = true;
    return rc;
}

/* A plugin's case, run in a child process (child.h) so that a plugin that
 * crashes, hangs, exits or forks cannot take the run with it: what the
 * child hands back, in memory both share. */
struct plugin_out {
    bool done, ok, built, path_changed;
    unsigned off_path;
    char why[256], facts[320], off_path_why[256];
    struct wcet_num nums[WCET_MAX_NUMS];
    size_t n_nums;
    struct tk_summary warm_s, cold_s;
};

struct plugin_job {
    struct wcet *w;
    struct wcet_case *c;
    struct plugin_out *out;
};

static int plugin_case_child(void *arg)
{
    struct plugin_job *j = arg;
    struct wcet_case *c = j->c;
    struct plugin_out *o = j->out;
    o->ok = wcet_case_open_plugin(c) == 0 && build_and_check(c) == 0 && wcet_measure(j->w, c) == 0;
    o->built = c->built;
    o->path_changed = c->path_changed;
    o->off_path = c->off_path;
    memcpy(o->why, c->why, sizeof(o->why));
    memcpy(o->facts, c->facts, sizeof(o->facts));
    memcpy(o->off_path_why, c->off_path_why, sizeof(o->off_path_why));
    memcpy(o->nums, c->nums, sizeof(o->nums));
    o->n_nums = c->n_nums;
    o->warm_s = c->warm_s;
    o->cold_s = c->cold_s;
    o->done = true; /* its last act: an exit before it is a failure */
    return 0;
}

/* Builds, checks and times a plugin's case in a child under the watchdog
 * (--timeout): 0, or -1 (c->why). Its instructions and branches are not
 * counted by the CPU's counters, which count this process. */
static int plugin_case(struct wcet *w, struct wcet_case *c)
{
    struct plugin_out *o = tk_shared_alloc(sizeof(*o));
    if (!o)
        return wcet_fail(c, "out of memory to hand a plugin's results back");
    struct plugin_job j = { w, c, o };
    /* Standard output aside: what a plugin prints goes to standard error,
     * never into the report. */
    const struct tk_child_opts co = { .timeout_s = w->o.timeout_s, .stdout_aside = true };
    struct tk_child_result r;
    tk_child_run(plugin_case_child, &j, NULL, &co, &r);
    int rc = -1;
    char sig[64];
    if (r.end == TK_CHILD_KILLED)
        wcet_fail(c, "crashed: killed by %s", tk_signal_describe(r.code, sig, sizeof(sig)));
    else if (r.end == TK_CHILD_TIMED_OUT)
        wcet_fail(c, "hung: not done in %u s (--timeout), killed with SIGKILL", w->o.timeout_s);
    else if (r.end == TK_CHILD_NOT_STARTED)
        wcet_fail(c, "cannot start its process: %s", strerror(r.code));
    else if (!o->done)
        wcet_fail(c, "its process exited (status %d) without its results", r.code);
    else {
        c->built = o->built;
        c->path_changed = o->path_changed;
        c->off_path = o->off_path;
        memcpy(c->why, o->why, sizeof(c->why));
        memcpy(c->facts, o->facts, sizeof(c->facts));
        memcpy(c->off_path_why, o->off_path_why, sizeof(c->off_path_why));
        memcpy(c->nums, o->nums, sizeof(c->nums));
        c->n_nums = o->n_nums;
        c->warm_s = o->warm_s;
        c->cold_s = o->cold_s;
        rc = o->ok ? 0 : -1;
    }
    tk_shared_free(o, sizeof(*o));
    return rc;
}

static void print_progress(const struct wcet_case *c, bool ok)
{
    if (ok)
        printf("  %-8s %-22s measured\n", c->kind, c->sc ? c->sc->id : "noop");
    else
        printf("  %-8s %-22s FAILED: %s\n", c->kind, c->sc ? c->sc->id : "noop", c->why);
    fflush(stdout);
}

enum tk_run_end wcet_run(struct tk_session *s)
{
    struct wcet *w = s->state;
    struct tk_rt_request req = tk_rt_request_of(&w->o.rt, true);
    req.cpu = w->cpu; /* resolved in the setup, the caches' CPU */
    struct tk_rt_state rt;
    tk_rt_setup(&req, &rt);
    w->rt = rt;
    enum tk_run_end end = TK_RUN_ABORTED;
    const struct tk_cache *llc = tk_caches_llc(&w->caches);
    size_t evict = llc ? 2 * llc->bytes : (size_t)64 << 20;
    /* Under an emulator every time is the emulator's, and the cache it
     * reports is the host's (hundreds of MiB on a server): a walk of that
     * before each cold repetition would make a run last hours, for
     * nothing. The header says how large the walk was. */
    if (w->mf.emulation[0] && evict > EMULATED_EVICT_BYTES)
        evict = EMULATED_EVICT_BYTES;
    if (tk_cacheops_init(&w->cops, evict) == 0)
        w->cops_ok = true;
    int rc = tk_timer_init(&w->timer, TIMER_CALIBRATION_MS);
    if (rc != 0) {
        fprintf(stderr, "%s: the timer cannot be calibrated: %s\n", w->prog, strerror(-rc));
        goto out;
    }
    w->timer_ok = true;
    wcet_print_header(stdout, w);
    if (tk_stdout_check(w->prog) != 0)
        goto out;
    if (w->o.count != WCET_COUNT_NONE)
        (void)wcet_hw_start(w); /* hw_why says why not */
    for (size_t i = 0; i < w->n_cases; i++) {
        struct wcet_case *c = &w->cases[i];
        bool ok =
            c->plugin ? plugin_case(w, c) == 0 : build_and_check(c) == 0 && wcet_measure(w, c) == 0;
        if (!ok) {
            c->built = false;
            w->failures++;
        }
        if (!c->plugin)
            wcet_hw_count(w, c);
        wcet_case_release(c);
        print_progress(c, ok);
    }
    wcet_hw_finish(w);
    end = TK_RUN_PASSED;
out:
    tk_rt_refresh(&w->rt);
    /* Given back on a copy: the report shows what the run had. The counted
     * run's child must not inherit SCHED_FIFO. */
    rt = w->rt;
    tk_rt_undo(&rt);
    if (end != TK_RUN_PASSED)
        return end;
    if (w->o.count != WCET_COUNT_NONE && wcet_count(w) != 0 && w->o.count == WCET_COUNT_VALGRIND) {
        fprintf(stderr, "%s: --count valgrind: nothing counted: %s\n", w->prog, w->count_why);
        return TK_RUN_FAILED;
    }
    if (w->o.count == WCET_COUNT_NONE) {
        snprintf(w->count_why, sizeof(w->count_why), "not asked for (--count none)");
        snprintf(w->hw_why, sizeof(w->hw_why), "not asked for (--count none)");
    }
    return w->failures ? TK_RUN_FAILED : TK_RUN_PASSED;
}
