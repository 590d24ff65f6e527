/*
 * `rtmem wcet`: the counted run. The scenarios run again, in a child
 * process under valgrind's callgrind:
 *
 *   valgrind --tool=callgrind --vgdb=no --collect-atstart=no --toggle-collect=wcet_call
 *            --dump-after=wcet_call --combine-dumps=yes
 *            --cache-sim=yes --branch-sim=yes --D1=... --I1=... --LL=...
 *            rtmem wcet --kinds ... --harden ...   (RTMEM_WCET_CHILD=1)
 *
 * Only wcet_call, the timed call, is counted, and its counts are written
 * out after each call (one part of the output file per call), so each
 * call's instructions (Ir), branches (Bc + Bi) and data misses of the
 * simulated last-level cache (DLmr, DLmw) are known on their own. Before
 * each call the child walks an eviction buffer four times the simulated
 * last-level cache, so the simulated caches hold nothing of the heap; then
 * it touches again what the harness itself uses, the case's structure and
 * the stack below the caller (as warm as in the cold timings), and calls
 * wcet_call once on a case that does nothing (its dispatch warm; that call
 * is counted too, listed as "warm", and left out). Every line
 * of the heap the call touches then misses once: its last-level misses are
 * the distinct data lines it touches (each counted once, as read or as
 * written first), as long as they are far fewer than the simulated cache
 * holds (an operation that touches more, such as a first use of a large
 * page map, counts some twice). The code stays in the simulated L1i, as it
 * stays warm in the cold timings.
 *
 * The child writes a line per call ("call CASE KIND ID warm|check|rep|off
 * N": off, a glibc repetition its check found off the path) to
 * standard output, a file the parent reads to match the parts with the
 * cases, each by its index, kind and id. The noop case (a call that does
 * nothing) is counted too, and its figures (a handful of instructions,
 * and none or one line the warming missed) are subtracted from every
 * other case's: what is left is the operation's.
 *
 * The child runs the parent's own executable (/proc/PID/exe: the same
 * file even if it was rebuilt since), with no standard input, no core
 * file, and --vgdb=no (valgrind then makes no FIFOs for a debugger in
 * $TMPDIR, which a killed valgrind would leave behind). Its $TMPDIR is
 * the run's private directory: the files valgrind makes there for a moment
 * (the client's cmdline and auxv, unlinked once open) stay if it is killed
 * in between, and are removed with the directory. Valgrind
 * interprets the machine code, so the counts are those of the binary as
 * built (compiler, flags, hardening level), exactly, every run.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/child.h"
#include "common/cleanup.h"
#include "common/tool.h"
#include "common/describe.h"
#include "common/grind.h"
#include "wcet.h"

#define CHILD_ENV              "RTMEM_WCET_CHILD"
/* The simulated caches: lines of 64 bytes; the last level 1 MiB, 16-way,
 * large enough that the few hundred lines of an operation never conflict. */
#define SIM_D1                 "--D1=32768,8,64"
#define SIM_I1                 "--I1=32768,8,64"
#define SIM_LL                 "--LL=1048576,16,64"
#define SIM_LL_BYTES           ((size_t)1 << 20)
#define SIM_LINE               64u
#define EVICT_BYTES            (4 * SIM_LL_BYTES)
/* The child's time limit: it takes seconds with the default images, and
 * about a second more per MiB of a larger page-heap image. */
#define CHILD_TIMEOUT_S        120.0
#define CHILD_TIMEOUT_S_PER_MB 8.0

bool wcet_is_count_child(void)
{
    const char *v = getenv(CHILD_ENV);
    return v && strcmp(v, "1") == 0;
}

/* ---- the child ---- */

static volatile unsigned char *evict_buf;
/* Where the child writes its calls: standard output, moved aside. */
static FILE *calls;

/* Not inlined: the stack it touches lies where wcet_call's callees'
 * frames will. */
static __attribute__((noinline)) void warm_stack(void)
{
    volatile unsigned char frame[4096];
    for (size_t i = 0; i < sizeof(frame); i += SIM_LINE)
        frame[i] = 0;
}

static void say_call(size_t i, const struct wcet_case *c, const char *phase, unsigned r)
{
    fprintf(calls, "call %zu %s %s %s %u\n", i, c->kind, c->sc ? c->sc->id : "noop", phase, r);
}

/* A call that does nothing, made (and counted, and left out: phase
 * "warm") before each counted call, so that the harness's own data is
 * warm: wcet_call's dispatch (a compiler may read a jump table for it). */
static struct wcet_case warm_case = { .kind = "noop", .op = WCET_OP_NOOP };

/* The simulated caches emptied of the heap, the harness's own lines
 * (the case i, the stack, wcet_call's dispatch) back in them. */
static void evict(size_t i, const struct wcet_case *c)
{
    for (size_t k = 0; k < EVICT_BYTES; k += SIM_LINE)
        evict_buf[k]++;
    const volatile unsigned char *b = (const volatile unsigned char *)c;
    for (size_t k = 0; k < sizeof(*c); k += SIM_LINE)
        (void)b[k];
    (void)b[sizeof(*c) - 1];
    warm_stack();
    wcet_call(&warm_case);
    say_call(i, c, "warm", 0);
}

/* Builds case i, runs and checks it (glibc: up to WCET_GLIBC_ATTEMPTS
 * times, as the timed run does): 0, or -1 (a "fail" line written). */
static int child_check(size_t i, struct wcet_case *c)
{
    int attempts = c->sc && c->sc->family == WCET_GLIBC ? WCET_GLIBC_ATTEMPTS : 1;
    int rc = -1;
    for (int a = 0; a < attempts && rc != 0; a++) {
        if (wcet_case_build(c) != 0)
            break;
        evict(i, c);
        wcet_call(c);
        say_call(i, c, "check", 0);
        rc = c->sc ? c->sc->check(c) : 0;
        wcet_case_finish(c);
    }
    if (rc != 0)
        fprintf(calls, "fail %zu %s\n", i, c->why);
    return rc;
}

int wcet_count_child(struct wcet *w)
{
    evict_buf = calloc(1, EVICT_BYTES);
    if (!evict_buf)
        return TK_EXIT_FAILED;
    /* The calls file is standard output: a plugin's prints go to the log. */
    calls = tk_stdout_aside();
    for (size_t i = 0; i < w->n_cases; i++) {
        struct wcet_case *c = &w->cases[i];
        if (wcet_case_open_plugin(c) != 0) {
            fprintf(calls, "fail %zu %s\n", i, c->why);
            continue;
        }
        if (child_check(i, c) != 0) {
            wcet_case_release(c);
            continue;
        }
        for (unsigned r = 0; r < WCET_COUNT_REPS; r++) {
            if (wcet_case_prepare(c) != 0) {
                fprintf(calls, "fail %zu %s\n", i, c->why);
                break;
            }
            evict(i, c);
            wcet_call(c);
            /* A glibc repetition off the path is listed, and left out. */
            say_call(i, c, wcet_case_on_path(c) ? "rep" : "off", r);
            wcet_case_finish(c);
        }
        wcet_case_release(c);
    }
    fflush(calls);
    return ferror(calls) ? TK_EXIT_FAILED : TK_EXIT_OK;
}

/* ---- the parent ---- */

/* valgrind on PATH into w->valgrind: true if found. */
/* valgrind's options for the counted run (the output file's is added). */
static const char *const vg_options[] = {
    "--tool=callgrind",
    "--collect-atstart=no",
    "--toggle-collect=wcet_call",
    "--dump-after=wcet_call",
    "--combine-dumps=yes",
    "--cache-sim=yes",
    "--branch-sim=yes",
    SIM_D1,
    SIM_I1,
    SIM_LL,
};
#define N_VG_OPTIONS (sizeof(vg_options) / sizeof(vg_options[0]))

/* One call's figures, from a part's totals in the order of its events. */
struct part {
    uint64_t ir, bc, bi, dlmr, dlmw;
};

enum { MAX_EVENTS = 16 };

static void part_from(const char events[][8], size_t n_events, const uint64_t *v, size_t n_v,
                      struct part *p)
{
    memset(p, 0, sizeof(*p));
    for (size_t i = 0; i < n_events && i < n_v; i++) {
        if (strcmp(events[i], "Ir") == 0)
            p->ir = v[i];
        else if (strcmp(events[i], "Bc") == 0)
            p->bc = v[i];
        else if (strcmp(events[i], "Bi") == 0)
            p->bi = v[i];
        else if (strcmp(events[i], "DLmr") == 0)
            p->dlmr = v[i];
        else if (strcmp(events[i], "DLmw") == 0)
            p->dlmw = v[i];
    }
}

/* The parts valgrind wrote after each call, in order: how many (up to
 * max), or -1 if the file cannot be read. */
static long read_parts(const char *path, struct part *parts, size_t max)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[1024];
    char events[MAX_EVENTS][8];
    size_t n_events = 0, n = 0;
    bool after_call = false;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "desc: Trigger:", 14) == 0) {
            after_call = strstr(line, "--dump-after") != NULL;
        } else if (strncmp(line, "events:", 7) == 0) {
            n_events = 0;
            for (char *tok = strtok(line + 7, " \n"); tok && n_events < MAX_EVENTS;
                 tok = strtok(NULL, " \n"))
                snprintf(events[n_events++], sizeof(events[0]), "%s", tok);
        } else if (strncmp(line, "totals:", 7) == 0 && after_call) {
            uint64_t v[MAX_EVENTS] = { 0 };
            size_t n_v = 0;
            for (char *tok = strtok(line + 7, " \n"); tok && n_v < MAX_EVENTS;
                 tok = strtok(NULL, " \n"))
                v[n_v++] = strtoull(tok, NULL, 10);
            if (n < max)
                part_from(events, n_events, v, n_v, &parts[n]);
            n++;
        }
    }
    fclose(f);
    return (long)n;
}

static uint64_t less(uint64_t a, uint64_t b)
{
    return a > b ? a - b : 0;
}

/* The calls file against the parts: each rep's figures into its case. */
static int match(struct wcet *w, const char *calls_path, const struct part *parts, long n_parts)
{
    FILE *f = fopen(calls_path, "r");
    if (!f) {
        snprintf(w->count_why, sizeof(w->count_why), "the child's list of calls is missing");
        return -1;
    }
    struct part noop = { 0 };
    bool have_noop = false;
    struct part per[WCET_MAX_CASES][WCET_COUNT_REPS];
    unsigned reps[WCET_MAX_CASES] = { 0 };
    char line[512];
    long k = 0;
    while (fgets(line, sizeof(line), f)) {
        size_t idx;
        char kind[16], id[40], phase[8];
        unsigned r;
        size_t fidx;
        int at_why = 0;
        if (sscanf(line, "fail %zu %n", &fidx, &at_why) == 1 && at_why > 0) {
            /* The child's build or check failed: its reason, for the case. */
            if (fidx < w->n_cases)
                snprintf(w->cases[fidx].counts.why, sizeof(w->cases[fidx].counts.why), "%.*s",
                         (int)strcspn(line + at_why, "\n"), line + at_why);
            continue;
        }
        if (sscanf(line, "call %zu %15s %39s %7s %u", &idx, kind, id, phase, &r) != 5 ||
            idx >= w->n_cases || strcmp(kind, w->cases[idx].kind) != 0 ||
            strcmp(id, w->cases[idx].sc ? w->cases[idx].sc->id : "noop") != 0) {
            fclose(f);
            snprintf(w->count_why, sizeof(w->count_why),
                     "the child's list of calls does not match the scenarios");
            return -1;
        }
        long at = k++;
        if (at >= n_parts || strcmp(phase, "rep") != 0 || reps[idx] >= WCET_COUNT_REPS)
            continue;
        per[idx][reps[idx]++] = parts[at];
        if (!w->cases[idx].sc && !have_noop) {
            noop = parts[at];
            have_noop = true;
        }
    }
    fclose(f);
    if (k != n_parts || !have_noop) {
        snprintf(w->count_why, sizeof(w->count_why),
                 "valgrind's %ld counts do not match the child's %ld calls", n_parts, k);
        return -1;
    }
    for (size_t i = 0; i < w->n_cases; i++) {
        struct wcet_case *c = &w->cases[i];
        struct wcet_counts *ct = &c->counts;
        char why[sizeof(ct->why)];
        memcpy(why, ct->why, sizeof(why));
        memset(ct, 0, sizeof(*ct));
        memcpy(ct->why, why, sizeof(why));
        for (unsigned r = 0; r < reps[i]; r++) {
            const struct part *p = &per[i][r];
            uint64_t ir = c->sc ? less(p->ir, noop.ir) : p->ir;
            uint64_t br = c->sc ? less(p->bc + p->bi, noop.bc + noop.bi) : p->bc + p->bi;
            /* The harness's lines were warmed before the call; what of
             * them a compiler's code still misses, the noop's, is
             * subtracted. */
            uint64_t lr = c->sc ? less(p->dlmr, noop.dlmr) : p->dlmr;
            uint64_t lw = c->sc ? less(p->dlmw, noop.dlmw) : p->dlmw;
            if (r == 0 || ir < ct->ir_min)
                ct->ir_min = ir;
            if (ir > ct->ir)
                ct->ir = ir;
            if (br > ct->branches)
                ct->branches = br;
            if (lr + lw > ct->lines_read + ct->lines_written) {
                ct->lines_read = lr;
                ct->lines_written = lw;
            }
        }
        ct->reps = reps[i];
        ct->have = reps[i] > 0;
    }
    return 0;
}

/* "valgrind-3.19.0" into w->valgrind_ver, from valgrind --version run
 * directly (no shell). */
int wcet_count(struct wcet *w)
{
    struct tk_grind g;
    if (tk_grind_find(&g, w->count_why, sizeof(w->count_why)) != 0)
        return -1;
    snprintf(w->valgrind, sizeof(w->valgrind), "%s", g.valgrind);
    snprintf(w->valgrind_ver, sizeof(w->valgrind_ver), "%s", g.version);
    if (tk_grind_files(&g, "wcet", w->count_why, sizeof(w->count_why)) != 0)
        return -1;
    char out_opt[PATH_MAX + 32], kinds[128] = "", image[32];
    const char *vg[N_VG_OPTIONS + 2];
    for (size_t i = 0; i < N_VG_OPTIONS; i++)
        vg[i] = vg_options[i];
    vg[N_VG_OPTIONS] = tk_grind_out_option(&g, out_opt, sizeof(out_opt));
    vg[N_VG_OPTIONS + 1] = NULL;
    for (size_t i = 0; i < w->n_kinds - w->n_plugins; i++) { /* the plugins come last */
        strncat(kinds, i ? "," : "", sizeof(kinds) - strlen(kinds) - 1);
        strncat(kinds, w->kinds[i], sizeof(kinds) - strlen(kinds) - 1);
    }
    snprintf(image, sizeof(image), "%llu", (unsigned long long)w->o.page_image);
    const char *args[16 + 2 * WCET_MAX_PLUGINS] = {
        "wcet",         "--kinds", kinds,    "--harden", wcet_harden_choices[w->o.harden],
        "--page-image", image,     "--reps", "1",
    };
    size_t n = 0;
    while (args[n])
        n++;
    for (size_t i = 0; i < w->n_plugins; i++) {
        args[n++] = "--plugin";
        args[n++] = w->plugins[i].path;
    }
    args[n] = NULL;
    double limit_s = CHILD_TIMEOUT_S + CHILD_TIMEOUT_S_PER_MB * (double)(w->o.page_image >> 20);
    printf("counting under %s (callgrind, simulated caches)...\n", w->valgrind_ver);
    fflush(stdout);
    int rc =
        tk_grind_run(&g, vg, args, CHILD_ENV, "1", limit_s, w->count_why, sizeof(w->count_why));
    w->count_seconds = g.seconds;
    if (rc != 0)
        goto out;
    rc = -1;
    size_t max = 2 * w->n_cases * (WCET_COUNT_REPS + 1); /* each counted call and its warm one */
    struct part *parts = calloc(max, sizeof(*parts));
    if (!parts) {
        snprintf(w->count_why, sizeof(w->count_why), "out of memory");
        goto out;
    }
    long np = read_parts(g.out, parts, max);
    if (np < 0)
        snprintf(w->count_why, sizeof(w->count_why), "valgrind wrote no counts");
    else if ((size_t)np > max)
        snprintf(w->count_why, sizeof(w->count_why), "valgrind wrote more counts than calls");
    else
        rc = match(w, g.stdout_path, parts, np);
    free(parts);
out:
    tk_grind_remove(&g);
    w->counted = rc == 0;
    return rc;
}
