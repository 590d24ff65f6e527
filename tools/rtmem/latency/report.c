/*
 * `rtmem latency`: the report and JSON of the mode that ran, the JSON's
 * parameters, the envelope's facts.
 */
#include <signal.h>
#include <string.h>

#include "common/opt.h"
#include "common/tool.h"
#include "latency.h"

void lat_report(const struct tk_session *s, FILE *f)
{
    const struct lat *l = s->state;
    if (l->o.sweep)
        lat_sweep_report(l, f);
    else if (l->o.noise)
        lat_noise_report(l, f);
    else
        lat_probe_report(l, f);
}

void lat_facts(const struct tk_session *s, struct tk_facts *out)
{
    const struct lat *l = s->state;
    out->machine = &l->mf;
    out->timer = &l->clock;
    out->rt = &l->rt;
}

static void params_json(const struct lat *l, struct tk_json *j)
{
    tk_json_key(j, "params");
    tk_json_begin_object(j);
    if (tk_json_key_or_null(j, "period_ns", !l->o.noise))
        tk_json_uint(j, l->o.period_ns);
    tk_json_kv_uint(j, "duration_ns", l->o.duration_ns);
    tk_json_kv_int(j, "cpu", l->o.rt.cpu);
    tk_json_kv_int(j, "priority", l->o.rt.priority);
    tk_json_kv_bool(j, "no_rt", l->o.rt.no_rt);
    tk_json_kv_bool(j, "quick", l->o.quick);
    if (tk_json_key_or_null(j, "thresholds_ns", !l->o.noise)) {
        tk_json_begin_array_compact(j);
        for (size_t i = 0; i < l->o.thresholds.n; i++)
            tk_json_uint(j, l->o.thresholds.ns[i]);
        tk_json_end_array(j);
    }
    if (tk_json_key_or_null(j, "noise_threshold_ns", l->o.noise))
        tk_json_uint(j, l->o.noise_threshold_ns);
    if (tk_json_key_or_null(j, "test_stall_periods", l->stall_periods > 0))
        tk_json_uint(j, l->stall_periods);
    tk_json_end_object(j);
}

/* The idle-state limit over the run (docs/json.md). */
static void dma_json(const struct lat_dma *d, struct tk_json *j)
{
    tk_json_key(j, "cpu_dma_latency");
    tk_json_begin_object_compact(j);
    tk_json_kv_string(j, "file", d->path);
    tk_json_kv_bool(j, "hold_zero", d->hold);
    tk_json_kv_bool(j, "held", d->held);
    if (tk_json_key_or_null(j, "machine_us", d->machine_known))
        tk_json_int(j, d->machine_us);
    if (tk_json_key_or_null(j, "in_force_us", d->in_force_known))
        tk_json_int(j, d->in_force_us);
    if (tk_json_key_or_null(j, "error", d->err != 0))
        tk_json_string(j, strerror(d->err));
    tk_json_end_object(j);
}

/* The latency members, null in a noise run. */
static const char *const latency_members[] = { "summary", "deadlines", "early",     "dropped",
                                               "above",   "histogram", "per_second" };

void lat_json(const struct tk_session *s, struct tk_json *j)
{
    const struct lat *l = s->state;
    tk_json_kv_string(j, "mode", l->o.sweep ? "sweep" : l->o.noise ? "noise" : "latency");
    params_json(l, j);
    tk_json_kv_string(j, "clock", "CLOCK_MONOTONIC");
    tk_json_kv_int(j, "timer_slack_ns", l->timer_slack_ns);
    dma_json(&l->dma, j);
    tk_json_kv_bool(j, "real_time_granted", lat_real_time(l));
    if (tk_json_key_or_null(j, "cpu_isolated", l->rt.affinity.granted && l->cpu_isolated_known))
        tk_json_bool(j, l->cpu_isolated);
    tk_json_kv_bool(j, "virtual_machine", l->virtual_machine);
    if (tk_json_key_or_null(j, "rt_neighbours", l->rt.affinity.granted))
        tk_json_uint(j, l->rt_neighbours);
    if (tk_json_key_or_null(j, "stopped_by", l->stopped))
        tk_json_string(j, lat_stop_name(l));
    /* A sweep has these per run (sweep.runs). */
    bool one = !l->o.sweep;
    if (tk_json_key_or_null(j, "measured_ns", one))
        tk_json_uint(j, l->measured_ns);
    if (tk_json_key_or_null(j, "page_faults", one)) {
        tk_json_begin_object_compact(j);
        tk_json_kv_uint(j, "minor", l->minflt);
        tk_json_kv_uint(j, "major", l->majflt);
        tk_json_end_object(j);
    }
    if (tk_json_key_or_null(j, "steal_ms", one && l->steal_ms >= 0))
        tk_json_int(j, l->steal_ms);
    if (l->o.noise || l->o.sweep) {
        for (size_t i = 0; i < sizeof(latency_members) / sizeof(latency_members[0]); i++)
            tk_json_key_or_null(j, latency_members[i], false);
        if (l->o.noise)
            lat_noise_json(l, j);
        else
            tk_json_key_or_null(j, "noise", false);
    } else {
        lat_probe_json(l, j);
        tk_json_key_or_null(j, "noise", false);
    }
    if (tk_json_key_or_null(j, "pressure", l->load_on && !l->o.sweep)) {
        tk_json_begin_object(j);
        tk_json_key(j, "load");
        tk_pressure_spec_json(j, &l->load, true);
        tk_json_key(j, "totals");
        tk_pressure_totals_json(j, &l->load_totals, &l->pressure);
        tk_json_end_object(j);
    }
    if (tk_json_key_or_null(j, "sweep", l->o.sweep))
        lat_sweep_json(l, j);
}
