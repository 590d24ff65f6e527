/*
 * `rtmem memcheck`: its members of the JSON document (--json), after the
 * driver's envelope (common/tool.h: schema, tool, version, command line,
 * machine, timer, real-time setup, seed, seconds, passed): the run's
 * parameters, the arena, and per allocator what it is, its verdict, its
 * heap sizes and each phase's results (written by the phase's own file). A
 * figure that does not exist or does not apply is null.
 *
 * Schema rtmem-memcheck/2. /1 began with schema, rtmem_version (now the
 * envelope's version), passed, seed and seconds (the tests' time; the
 * envelope's covers the whole run), and had machine, timer and real_time
 * (machine and timer in brief) after params; the other members are as in /1.
 */
#include <math.h>
#include <signal.h>
#include <string.h>

#include "common/out.h"
#include "memcheck.h"

static void json_applies(struct tk_json *j, const struct tk_alloc *a)
{
    tk_json_key(j, "applies");
    tk_json_begin_object(j);
    tk_json_kv_bool(j, "fill_to_failure", a->applies & TK_APPLY_FILL_TO_FAILURE);
    tk_json_kv_bool(j, "stats", a->applies & TK_APPLY_STATS);
    tk_json_kv_bool(j, "integrity_check", a->applies & TK_APPLY_CHECK);
    tk_json_kv_bool(j, "free_status", a->applies & TK_APPLY_FREE_STATUS);
    tk_json_kv_bool(j, "bounds", a->applies & TK_APPLY_BOUNDS);
    tk_json_kv_bool(j, "fill_promise", a->applies & TK_APPLY_FILL_PROMISE);
    char ovh[96];
    if (a->sort == TK_PROCESS)
        snprintf(ovh, sizeof(ovh), "100 - 100 * requested / sum(%s)", a->usable_name);
    else if (!(a->applies & TK_APPLY_STATS))
        snprintf(ovh, sizeof(ovh), "100 - 100 * nrblocks * B / H, H the memory given to create");
    else
        snprintf(ovh, sizeof(ovh), "100 - 100 * nrblocks * B / H");
    tk_json_kv_string(j, "overhead_pct", ovh);
    tk_json_kv_string(j, "frag_probe",
                      a->sort == TK_HEAP ? "fits in the heap"
                                         : "fits inside the fill's address span");
    tk_json_end_object(j);
}

static const char *fail_kind_name(enum mc_fail_kind k)
{
    switch (k) {
    case MC_FAIL_CHECK: return "check";
    case MC_FAIL_CRASH: return "crash";
    case MC_FAIL_TIMEOUT: return "timeout";
    case MC_FAIL_ERROR: return "error";
    }
    return "?";
}

static void json_target(struct tk_json *j, const struct mc_target *t, bool rows)
{
    const struct tk_alloc *a = &t->a;
    tk_json_begin_object(j);
    tk_json_kv_string(j, "name", a->name);
    tk_json_kv_string(j, "sort", a->sort == TK_HEAP ? "heap" : "process");
    tk_json_kv_string(j, "origin", a->origin);
    tk_json_kv_string(j, "describe", a->describe);
    tk_glibc_rt_json(j, a);
    json_applies(j, a);
    tk_json_kv_bool(j, "passed", !t->fail.failed);
    if (tk_json_key_or_null(j, "failure", t->fail.failed)) {
        tk_json_begin_object(j);
        tk_json_kv_string(j, "phase", mc_phase_name(t->fail.phase));
        tk_json_kv_string(j, "kind", fail_kind_name(t->fail.kind));
        char sig[16] = "";
        if (t->fail.kind == MC_FAIL_CRASH && sigabbrev_np(t->fail.signal))
            snprintf(sig, sizeof(sig), "SIG%s", sigabbrev_np(t->fail.signal));
        tk_json_kv_string(j, "signal", sig[0] ? sig : NULL);
        tk_json_kv_string(j, "message", t->fail.msg);
        tk_json_end_object(j);
    }
    tk_json_key(j, "heap_sizes");
    tk_json_begin_array(j);
    for (size_t k = 0; k < a->n_cache; k++) {
        const struct tk_heap_info *h = &a->cache[k];
        tk_json_begin_object(j);
        tk_json_kv_uint(j, "asked_bytes", h->asked_bytes);
        tk_json_kv_uint(j, "usable_bytes", h->usable_bytes);
        tk_json_kv_uint(j, "mem_bytes", h->mem_bytes);
        tk_json_kv_uint(j, "overhead_bytes", h->overhead_bytes);
        tk_json_kv_bool(j, "exact", h->exact);
        tk_json_kv_bool(j, "sized_by_memory", h->sized_by_memory);
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
    for (int ph = MC_PH_POW2; ph <= MC_PH_RANDOM; ph++)
        mc_seq_json(j, &t->seq[ph], (enum mc_phase)ph, rows);
    mc_pattern_json(j, t);
    mc_churn_json(j, &t->churn, a->applies & TK_APPLY_STATS);
    tk_json_end_object(j);
}

static void json_params(struct tk_json *j, const struct memcheck *m)
{
    const struct mc_opts *o = m->o;
    tk_json_key(j, "params");
    tk_json_begin_object(j);
    tk_json_kv_uint(j, "seq_heap_size", o->seq_heap_bytes);
    tk_json_kv_uint(j, "seq_min_heap_size", MC_SEQ_MIN_HEAP);
    tk_json_kv_uint(j, "random_alloc_rounds", o->random_rounds);
    tk_json_kv_uint(j, "pattern_heap_size", o->pattern_heap_bytes);
    tk_json_kv_uint(j, "pattern_check_rounds", o->pattern_rounds);
    tk_json_kv_int(j, "max_results", o->max_results);
    tk_json_kv_uint(j, "churn_ops", o->churn_ops);
    tk_json_kv_uint(j, "churn_heap_size", o->churn_heap_bytes);
    tk_json_kv_uint(j, "churn_fill_pct", o->churn_fill_pct);
    tk_json_kv_uint(j, "churn_max_size", o->churn_max_bytes);
    tk_json_kv_uint(j, "churn_sample_every", o->churn_sample_every);
    tk_json_kv_bool(j, "compat", o->compat);
    tk_json_kv_bool(j, "subtract_timer_overhead", o->subtract_overhead);
    tk_json_kv_double(j, "subtracted_ns", tk_timer_ns(&m->timer, m->sub_ticks));
    tk_json_kv_bool(j, "quick", o->quick);
    tk_json_kv_bool(j, "json_rows", !o->no_json_rows);
    tk_json_kv_uint(j, "timeout_s", o->timeout_s);
    tk_json_kv_bool(j, "no_rt", o->rt.no_rt);
    tk_json_key(j, "phases");
    tk_json_begin_array_compact(j);
    for (int ph = 0; ph < MC_PHASES; ph++)
        if (o->phases & (1u << ph))
            tk_json_string(j, mc_phase_name((enum mc_phase)ph));
    tk_json_end_array(j);
    tk_json_end_object(j);
}

/* memcheck's members, after the driver's envelope (common/tool.h). */
void mc_json(const struct tk_session *s, struct tk_json *j)
{
    const struct memcheck *m = s->state;
    json_params(j, m);
    /* The test processes' arena (the latest one's record). */
    const struct tk_arena *ar = &m->sh->arena;
    tk_json_key(j, "arena");
    tk_json_begin_object(j);
    tk_json_kv_uint(j, "bytes", ar->bytes);
    tk_json_kv_bool(j, "locked", ar->locked);
    tk_json_kv_string(j, "lock_error", ar->locked ? NULL : strerror(ar->lock_err));
    tk_json_end_object(j);
    tk_json_key(j, "row_columns");
    mc_seq_json_columns(j);
    tk_json_key(j, "allocators");
    tk_json_begin_array(j);
    for (size_t i = 0; i < m->n_t; i++)
        json_target(j, &m->t[i], !m->o->no_json_rows);
    tk_json_end_array(j);
    /* Allocators asked for (or run by default) that did not load. */
    tk_kinds_json_skipped(j, &m->kinds);
    tk_json_kv_bool(j, "static_tls_reexec", tk_reexeced());
}
