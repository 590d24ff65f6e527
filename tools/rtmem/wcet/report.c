/*
 * `rtmem wcet`: the header, the table per kind (each scenario's counted
 * figures, warm and cold times, the bound its header states, and under it
 * what its check found), the worst figure per kind, and the JSON.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "common/tool.h"
#include "wcet.h"

static const char *flush_method(const struct wcet *w)
{
    return w->cops_ok ? tk_flush_method_name(w->cops.method) : "none";
}

void wcet_print_header(FILE *f, const struct wcet *w)
{
    char a[32], b[32], l2[32];
    fprintf(f, "rtmem wcet: each heap kind's worst case, built on purpose\n");
    tk_machine_print(f, &w->mf);
    tk_timer_print(f, "timer: ", &w->timer, TK_DETAIL_BRIEF);
    tk_rt_print(f, &w->rt);
    const struct tk_cache *c2 = tk_caches_level(&w->caches, 2);
    tk_item(f, "images",
            "TLSF %s, page heaps %s (the L2 holds %s); restored by a copy before each "
            "operation",
            tk_fmt_iec(a, sizeof(a), WCET_TLSF_IMAGE), tk_fmt_iec(b, sizeof(b), w->o.page_image),
            c2 && c2->bytes ? tk_fmt_iec(l2, sizeof(l2), c2->bytes) : "unknown");
    char walk[48] = "";
    if (w->cops_ok && w->cops.method == TK_FLUSH_EVICT)
        snprintf(walk, sizeof(walk), " of %s%s", tk_fmt_iec(a, sizeof(a), w->cops.evict_bytes),
                 w->mf.emulation[0] ? ", kept small under the emulator" : "");
    tk_item(f, "cold",
            "the state's memory flushed from every cache level before each operation "
            "(%s%s); code and stack warm",
            flush_method(w), walk);
    tk_item(f, "hardening", "%s (rtm_heap_create_ex)", wcet_harden_choices[w->o.harden]);
    if (w->glibc_skipped)
        tk_item(f, "glibc", "left out: %s", w->glibc_why);
    tk_item(f, "repetitions", "%u warm and %u cold per scenario, in turn", w->o.reps, w->o.reps);
    fprintf(f, "\n");
}

static const struct tk_col cols[] = {
    { "scenario", 22, true }, { "op", 13, true },    { "instr", 7, false },
    { "branch", 6, false },   { "lines", 5, false }, { "warm p50", 8, false },
    { "p99", 7, false },      { "max", 8, false },   { "cold p50", 8, false },
    { "p99", 7, false },      { "max", 8, false },   { "bound", 14, true },
};
#define N_COLS (sizeof(cols) / sizeof(cols[0]))

static void print_case(FILE *f, const struct wcet *w, const struct wcet_case *c)
{
    char v[10][TK_FMT_MAX];
    const char *cell[N_COLS] = { c->sc ? c->sc->id : "noop", c->sc ? c->sc->op : "(nothing)" };
    const struct wcet_counts *ct = &c->counts;
    cell[2] = cell[3] = cell[4] = "-";
    if (w->counted && ct->have) {
        cell[2] = tk_fmt_uint(v[0], sizeof(v[0]), ct->ir);
        cell[3] = tk_fmt_uint(v[1], sizeof(v[1]), ct->branches);
        cell[4] = tk_fmt_uint(v[2], sizeof(v[2]), ct->lines_read + ct->lines_written);
    } else if (w->hw_counted && c->hw.have) {
        cell[2] = tk_fmt_uint(v[0], sizeof(v[0]), c->hw.instructions);
        cell[3] = tk_fmt_uint(v[1], sizeof(v[1]), c->hw.branches);
    }
    if (c->built) {
        cell[5] = tk_fmt_double(v[3], sizeof(v[3]), c->warm_s.p50, 0);
        cell[6] = tk_fmt_double(v[4], sizeof(v[4]), c->warm_s.p99, 0);
        cell[7] = tk_fmt_double(v[5], sizeof(v[5]), c->warm_s.max, 0);
        cell[8] = tk_fmt_double(v[6], sizeof(v[6]), c->cold_s.p50, 0);
        cell[9] = tk_fmt_double(v[7], sizeof(v[7]), c->cold_s.p99, 0);
        cell[10] = tk_fmt_double(v[8], sizeof(v[8]), c->cold_s.max, 0);
    } else {
        for (size_t i = 5; i <= 10; i++)
            cell[i] = "-";
    }
    cell[11] = c->sc ? c->sc->bound : "";
    tk_table_row(f, cols, N_COLS, cell);
    if (!c->built)
        fprintf(f, "    FAILED: %s\n", c->why);
    else if (c->facts[0])
        fprintf(f, "    %s\n", c->facts);
    if (c->built && w->counted && !ct->have && ct->why[0])
        fprintf(f, "    not counted: under valgrind, %s\n", ct->why);
    if (c->built && c->off_path)
        fprintf(f, "    %u repetitions off the path left out (%s)\n", c->off_path, c->off_path_why);
}

/* A path met once in a heap's life (the page map's first use), left out
 * of the worst per kind: a real-time program meets it at start-up. */
static bool once(const struct wcet_case *c)
{
    return strstr(c->sc->bound, "once") != NULL;
}

/* The case of kind k whose figure is largest, paths met once left out. */
static const struct wcet_case *worst(const struct wcet *w, const char *kind,
                                     double (*figure)(const struct wcet_case *))
{
    const struct wcet_case *best = NULL;
    for (size_t i = 0; i < w->n_cases; i++) {
        const struct wcet_case *c = &w->cases[i];
        if (!c->sc || !c->built || strcmp(c->kind, kind) != 0 || isnan(figure(c)) || once(c))
            continue;
        if (!best || figure(c) > figure(best))
            best = c;
    }
    return best;
}

static double fig_ir(const struct wcet_case *c)
{
    return c->counts.have ? (double)c->counts.ir : NAN;
}

static double fig_lines(const struct wcet_case *c)
{
    return c->counts.have ? (double)(c->counts.lines_read + c->counts.lines_written) : NAN;
}

static double fig_cold_p99(const struct wcet_case *c)
{
    return c->cold_s.p99;
}

static double fig_cold_max(const struct wcet_case *c)
{
    return c->cold_s.max;
}

static double fig_warm_p99(const struct wcet_case *c)
{
    return c->warm_s.p99;
}

static void print_worst(FILE *f, const struct wcet *w)
{
    fprintf(f, "== the worst per kind (paths met once in a heap's life left out) ==\n");
    for (size_t k = 0; k < w->n_kinds; k++) {
        const char *kind = w->kinds[k];
        const struct wcet_case *ir = worst(w, kind, fig_ir), *ln = worst(w, kind, fig_lines);
        const struct wcet_case *wp = worst(w, kind, fig_warm_p99);
        const struct wcet_case *cp = worst(w, kind, fig_cold_p99);
        const struct wcet_case *cm = worst(w, kind, fig_cold_max);
        fprintf(f, "%-8s", kind);
        if (ir && ln)
            fprintf(f, " %" PRIu64 " instructions (%s), %.0f data lines (%s);", ir->counts.ir,
                    ir->sc->id, fig_lines(ln), ln->sc->id);
        if (wp && cp && cm)
            fprintf(f, " p99 %.0f ns warm (%s), %.0f ns cold (%s); cold max %.0f ns (%s)",
                    wp->warm_s.p99, wp->sc->id, cp->cold_s.p99, cp->sc->id, cm->cold_s.max,
                    cm->sc->id);
        fprintf(f, "\n");
    }
}

void wcet_report(const struct tk_session *s, FILE *f)
{
    const struct wcet *w = s->state;
    fprintf(f, "\ninstr, branch: instructions and branches of the operation, less the noop "
               "row's; lines:\nthe distinct data cache lines (64 B) it touches. Times in ns, "
               "the timer's overhead included.\n");
    if (w->counted)
        fprintf(f, "counted: %s, %u runs of each scenario (the largest shown), %.1f s\n",
                w->valgrind_ver, WCET_COUNT_REPS, w->count_seconds);
    else
        fprintf(f, "not counted under valgrind: %s\n", w->count_why);
    if (w->hw_counted)
        fprintf(f,
                "CPU counters: instructions and branches retired in user mode, less the "
                "noop row's, in the JSON%s\n",
                w->counted ? "" : " and in the table");
    else
        fprintf(f, "no CPU counters: %s\n", w->hw_why);
    const char *last = NULL;
    for (size_t i = 0; i < w->n_cases; i++) {
        const struct wcet_case *c = &w->cases[i];
        if (!last || strcmp(last, c->kind) != 0) {
            fprintf(f, "\n== %s ==\n", c->kind);
            tk_table_header(f, cols, N_COLS);
            last = c->kind;
        }
        print_case(f, w, c);
    }
    fprintf(f, "\n");
    print_worst(f, w);
    if (w->failures)
        fprintf(f, "\n%zu scenario%s FAILED (above)\n", w->failures, w->failures == 1 ? "" : "s");
}

void wcet_facts(const struct tk_session *s, struct tk_facts *out)
{
    const struct wcet *w = s->state;
    *out = (struct tk_facts){
        .machine = &w->mf,
        .timer = w->timer_ok ? &w->timer : NULL,
        .rt = &w->rt,
    };
}

static void case_json(struct tk_json *j, const struct wcet *w, const struct wcet_case *c)
{
    tk_json_begin_object(j);
    tk_json_kv_string(j, "kind", c->kind);
    tk_json_kv_string(j, "id", c->sc ? c->sc->id : "noop");
    tk_json_kv_string(j, "op", c->sc ? c->sc->op : "nothing");
    tk_json_kv_string(j, "path", c->sc ? c->sc->path : "the harness's call alone");
    tk_json_kv_string(j, "bound", c->sc ? c->sc->bound : "");
    tk_json_kv_bool(j, "passed", c->built);
    if (tk_json_key_or_null(j, "why", !c->built))
        tk_json_string(j, c->why);
    tk_json_kv_string(j, "facts", c->facts);
    tk_json_key(j, "state");
    tk_json_begin_object(j);
    for (size_t i = 0; i < c->n_nums; i++)
        tk_json_kv_double(j, c->nums[i].name, c->nums[i].v);
    tk_json_end_object(j);
    if (c->image_bytes)
        tk_json_kv_uint(j, "image_bytes", c->image_bytes);
    if (c->built) {
        tk_summary_json(j, "warm", "mean_ns", &c->warm_s);
        tk_summary_json(j, "cold", "mean_ns", &c->cold_s);
    }
    if (tk_json_key_or_null(j, "counted_why_not", c->counts.why[0] != '\0'))
        tk_json_string(j, c->counts.why);
    if (c->sc && c->sc->family == WCET_GLIBC) { /* repetitions off the path, left out */
        tk_json_kv_uint(j, "reps_off_path", c->off_path);
        if (tk_json_key_or_null(j, "off_path_why", c->off_path > 0))
            tk_json_string(j, c->off_path_why);
    }
    if (tk_json_key_or_null(j, "counted", w->counted && c->counts.have)) {
        const struct wcet_counts *ct = &c->counts;
        tk_json_begin_object(j);
        tk_json_kv_uint(j, "instructions", ct->ir);
        tk_json_kv_uint(j, "instructions_min", ct->ir_min);
        tk_json_kv_uint(j, "branches", ct->branches);
        tk_json_kv_uint(j, "data_lines", ct->lines_read + ct->lines_written);
        tk_json_kv_uint(j, "data_lines_read_first", ct->lines_read);
        tk_json_kv_uint(j, "data_lines_written_first", ct->lines_written);
        tk_json_kv_uint(j, "runs", ct->reps);
        tk_json_end_object(j);
    }
    if (tk_json_key_or_null(j, "cpu_counted", w->hw_counted && c->hw.have)) {
        tk_json_begin_object(j);
        tk_json_kv_uint(j, "instructions", c->hw.instructions);
        tk_json_kv_uint(j, "branch_instructions", c->hw.branches);
        tk_json_end_object(j);
    }
    tk_json_end_object(j);
}

static void worst_json(struct tk_json *j, const char *key, const struct wcet_case *c,
                       double (*figure)(const struct wcet_case *))
{
    if (!tk_json_key_or_null(j, key, c != NULL))
        return;
    tk_json_begin_object(j);
    tk_json_kv_double(j, "value", figure(c));
    tk_json_kv_string(j, "scenario", c->sc->id);
    tk_json_end_object(j);
}

void wcet_json(const struct tk_session *s, struct tk_json *j)
{
    const struct wcet *w = s->state;
    tk_json_key(j, "params");
    tk_json_begin_object(j);
    tk_json_key(j, "kinds");
    tk_json_begin_array_compact(j);
    for (size_t k = 0; k < w->n_kinds; k++)
        tk_json_string(j, w->kinds[k]);
    tk_json_end_array(j);
    tk_json_kv_uint(j, "reps", w->o.reps);
    tk_json_kv_string(j, "harden", wcet_harden_choices[w->o.harden]);
    tk_json_kv_uint(j, "tlsf_image_bytes", WCET_TLSF_IMAGE);
    tk_json_kv_uint(j, "page_image_bytes", w->o.page_image);
    tk_json_kv_string(j, "count", wcet_count_choices[w->o.count]);
    tk_json_end_object(j);
    if (tk_json_key_or_null(j, "glibc_left_out", w->glibc_skipped))
        tk_json_string(j, w->glibc_why);

    tk_json_key(j, "cold_flush");
    tk_json_begin_object(j);
    tk_json_kv_string(j, "method", flush_method(w));
    tk_json_kv_uint(j, "line_bytes", w->cops_ok ? w->cops.line_bytes : 0);
    tk_json_kv_uint(j, "walk_bytes",
                    w->cops_ok && w->cops.method == TK_FLUSH_EVICT ? w->cops.evict_bytes : 0);
    tk_json_end_object(j);

    tk_json_key(j, "counting");
    tk_json_begin_object(j);
    tk_json_kv_bool(j, "counted", w->counted);
    if (tk_json_key_or_null(j, "why_not", !w->counted))
        tk_json_string(j, w->count_why);
    if (tk_json_key_or_null(j, "valgrind", w->valgrind_ver[0] != '\0'))
        tk_json_string(j, w->valgrind_ver);
    tk_json_kv_string(j, "simulated_d1", "32768,8,64");
    tk_json_kv_string(j, "simulated_ll", "1048576,16,64");
    tk_json_kv_uint(j, "runs_per_scenario", WCET_COUNT_REPS);
    tk_json_kv_double(j, "seconds", w->count_seconds);
    tk_json_kv_bool(j, "cpu_counters", w->hw_counted);
    if (tk_json_key_or_null(j, "cpu_counters_why_not", !w->hw_counted))
        tk_json_string(j, w->hw_why);
    tk_json_end_object(j);

    tk_json_key(j, "scenarios");
    tk_json_begin_array(j);
    for (size_t i = 0; i < w->n_cases; i++)
        case_json(j, w, &w->cases[i]);
    tk_json_end_array(j);

    tk_json_key(j, "worst");
    tk_json_begin_array(j);
    for (size_t k = 0; k < w->n_kinds; k++) {
        const char *kind = w->kinds[k];
        tk_json_begin_object(j);
        tk_json_kv_string(j, "kind", kind);
        worst_json(j, "instructions", worst(w, kind, fig_ir), fig_ir);
        worst_json(j, "data_lines", worst(w, kind, fig_lines), fig_lines);
        worst_json(j, "warm_p99_ns", worst(w, kind, fig_warm_p99), fig_warm_p99);
        worst_json(j, "cold_p99_ns", worst(w, kind, fig_cold_p99), fig_cold_p99);
        worst_json(j, "cold_max_ns", worst(w, kind, fig_cold_max), fig_cold_max);
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
    tk_json_kv_uint(j, "failures", w->failures);
}
