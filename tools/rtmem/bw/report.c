/*
 * `rtmem bw`: the header (machine, timer, real-time setup, caches, glibc's thresholds,
 * source and destination, counters, cache operations), the closing
 * summary, the JSON and the envelope's facts. Each phase prints and writes
 * its own table (methods.c, prep.c, caching.c).
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "bw.h"
#include "common/opt.h"
#include "common/tool.h"

/* MiB/s of a repetition of ticks. */
static void print_glibc(FILE *f, const struct bw *b)
{
    const struct bw_glibc *g = &b->glibc;
    char a[32], c[32], d[32];
    if (!g->read) {
        tk_item(f, "glibc", "%s%s%sno memcpy threshold known: %s", g->version[0] ? g->version : "",
                g->version[0] ? ": " : "", "", g->why);
        return;
    }
    const char *again = g->movsb_stop && g->movsb_stop < g->non_temporal
                            ? "vector copies again, then non-temporal stores"
                            : "non-temporal stores";
    tk_item(f, "glibc",
            "%s memcpy: vector copies below %s (x86_rep_movsb_threshold); rep movsb from there up "
            "to %s (%s); %s from %s (x86_non_temporal_threshold). Read from %s --list-tunables",
            g->version, tk_fmt_iec(a, sizeof(a), g->rep_movsb),
            g->movsb_stop ? tk_fmt_iec(c, sizeof(c), g->movsb_stop) : "unknown", g->stop_basis,
            again, tk_fmt_iec(d, sizeof(d), g->non_temporal), g->ldso);
}

static const char *lock_word(int state)
{
    switch (state) {
    case RTM_ARENA_LOCKED:
    case RTM_ARENA_LOCKED_HUGETLB: return "locked";
    case RTM_ARENA_LOCK_IGNORED: return "lock IGNORED (VmLck did not move)";
    case RTM_ARENA_LOCKED_ON_FAULT: return "locked on fault";
    default: return "NOT locked";
    }
}

static void print_end(FILE *f, const char *label, const struct bw_end *e, bool read_only)
{
    char sz[32];
    const struct rtm_arena_report *r = &e->a.report;
    if (e->place->path)
        tk_item(f, label, "%s at offset 0x%" PRIx64 ", %s, %s, %s; VmLck %+" PRId64 " kB",
                e->place->path, e->place->offset, tk_fmt_iec(sz, sizeof(sz), e->a.size_bytes),
                read_only ? "read-only" : "shared, written", lock_word(r->lock_state),
                r->locked_bytes / 1024);
    else
        tk_item(f, label, "%s, %s, prefaulted, %s", bw_kind_ids[e->place->kind],
                tk_fmt_iec(sz, sizeof(sz), e->a.size_bytes), lock_word(r->lock_state));
    if (e->a.message[0])
        tk_item(f, "", "%s", e->a.message);
}

static void print_counters(FILE *f, const struct bw *b)
{
    const struct tk_perf *p = &b->perf;
    if (p->any_hardware) {
        char text[256];
        size_t len = 0;
        for (int e = TK_PERF_CACHE_REFS; e <= TK_PERF_LLC_MISSES; e++)
            len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%s%s", len ? ", " : "",
                                    tk_perf_event_id((enum tk_perf_event)e),
                                    tk_perf_has(p, (enum tk_perf_event)e) ? "" : " (unavailable)");
        tk_item(f, "counters", "hardware, per copy: %s%s", text, p->grouped ? " (one group)" : "");
    } else {
        tk_item(f, "counters",
                "no hardware counters (%s): the figures go without them; page faults counted by "
                "getrusage%s",
                p->hardware_why,
                tk_perf_has(p, TK_PERF_MINOR_FAULTS) ? " and perf's software events" : "");
    }
}

static const char *not_real_time(const struct bw *b)
{
    if (!b->rt.affinity.granted)
        return "not pinned to one CPU";
    if (!b->rt.fifo.granted)
        return b->o.rt.no_rt ? "SCHED_OTHER (--no-rt)" : "SCHED_FIFO refused";
    return NULL;
}

void bw_print_header(FILE *f, const struct bw *b)
{
    char sz[32], t[24];
    fprintf(f, "rtmem bw: copy bandwidth, and what a copy's time is made of\n");
    tk_machine_print(f, &b->mf);
    tk_timer_print(f, "timer: ", &b->timer, TK_DETAIL_BRIEF);
    tk_rt_print(f, &b->rt);
    char caches[512];
    tk_item(f, "caches", "%s", tk_caches_describe(caches, sizeof(caches), &b->caches));
    print_glibc(f, b);
    print_end(f, "source", &b->src, b->o.src.kind == BW_KIND_DEVICE);
    print_end(f, "destination", &b->dst, false);
    print_counters(f, b);
    tk_item(f, "cache ops", "flush: %s (%zu B lines); non-temporal copy: %s",
            tk_flush_method_name(b->cops.method), b->cops.line_bytes,
            b->cops.nt_copy ? "SSE2 movntdq, then sfence" : "not available on this architecture");
    if (b->run_methods)
        tk_item(f, "methods",
                "%zu sizes, %s to %s; mcblock's block %s; %u repetitions, each at "
                "least %s",
                b->sizes.n, tk_fmt_iec(sz, sizeof(sz), b->sizes.bytes[0]),
                tk_fmt_iec(t, sizeof(t), b->sizes.bytes[b->sizes.n - 1]),
                tk_opt_fmt_bytes((char[32]){ 0 }, 32, b->o.block), b->o.reps,
                tk_args_fmt_time((char[24]){ 0 }, 24, b->o.rep_time_ns));
    if (not_real_time(b))
        tk_item(f, "NOT RT",
                "%s: other tasks may take the CPU during a repetition (the medians "
                "resist that, the spread shows it)",
                not_real_time(b));
    fprintf(f, "\n");
}

void bw_report(const struct tk_session *s, FILE *f)
{
    const struct bw *b = s->state;
    fprintf(f, "summary:\n");
    if (b->run_methods && b->sizes.n)
        bw_methods_print(f, b);
    if (b->run_prep) {
        const struct bw_prep_result *none = &b->prep[BW_PREP_NONE], *lock = &b->prep[BW_PREP_MLOCK];
        double n_ms = (none->prep_median_ns + none->copy.median_ns) / 1e6;
        double l_copy = lock->copy.median_ns / 1e6, l_prep = lock->prep_median_ns / 1e6;
        /* The claim holds only when the lock was taken (not refused nor
         * ignored). */
        bool locked = lock->lock_state == RTM_ARENA_LOCKED ||
                      lock->lock_state == RTM_ARENA_LOCKED_HUGETLB ||
                      lock->lock_state == RTM_ARENA_LOCKED_ON_FAULT;
        fprintf(f,
                "prep: the copy into a%s destination takes x%.2f the time of one into "
                "fresh pages; with its mlock, x%.2f%s\n",
                locked ? " locked" : "n mlock-refused (NOT locked)",
                none->copy.median_ns > 0 ? lock->copy.median_ns / none->copy.median_ns : 0,
                n_ms > 0 ? (l_copy + l_prep) / n_ms : 0,
                locked ? ": locking moves the page faults to start-up" : "");
    }
    for (size_t i = 0; b->run_cache && i < b->n_cache; i++) {
        const struct bw_stat *w = &b->cache[i][BW_CACHE_WARM], *fl = &b->cache[i][BW_CACHE_FLUSHED],
                             *nt = &b->cache[i][BW_CACHE_NT];
        char sz[32];
        fprintf(f, "cache, %s: flushed first x%.2f of warm, non-temporal x%.2f (MiB/s)\n",
                tk_fmt_iec(sz, sizeof(sz), b->cache_bytes[i]),
                fl->measured ? fl->median / w->median : 0,
                nt->measured ? nt->median / w->median : 0);
    }
    if (b->verified)
        fprintf(f, "every copy checked: the destination held the source's bytes\n");
    else
        fprintf(f, "FAILED: %s\n", b->mismatch);
}

static void place_json(struct tk_json *j, const char *key, const struct bw_end *e)
{
    const struct rtm_arena_report *r = &e->a.report;
    tk_json_key(j, key);
    tk_json_begin_object_compact(j);
    tk_json_kv_string(j, "source", bw_kind_ids[e->place->kind]);
    if (tk_json_key_or_null(j, "path", e->place->path != NULL))
        tk_json_string(j, e->place->path);
    tk_json_kv_uint(j, "offset", e->place->offset);
    tk_json_kv_uint(j, "bytes", e->a.size_bytes);
    tk_json_kv_uint(j, "page_bytes", r->page_bytes);
    tk_json_kv_string(j, "lock_state", bw_lock_name(r->lock_state));
    tk_json_kv_int(j, "locked_bytes", r->locked_bytes);
    tk_json_kv_uint(j, "minor_faults", r->minor_faults);
    tk_json_kv_string(j, "message", e->a.message);
    tk_json_end_object(j);
}

static void glibc_json(struct tk_json *j, const struct bw *b)
{
    const struct bw_glibc *g = &b->glibc;
    tk_json_key(j, "glibc");
    tk_json_begin_object_compact(j);
    tk_json_kv_string(j, "version", g->version);
    tk_json_kv_bool(j, "read", g->read);
    tk_json_kv_string(j, "why", g->why);
    tk_json_kv_string(j, "ldso", g->ldso);
    tk_json_kv_uint(j, "rep_movsb_threshold", g->rep_movsb);
    tk_json_kv_uint(j, "rep_movsb_stop", g->movsb_stop);
    tk_json_kv_string(j, "rep_movsb_stop_basis", g->stop_basis);
    tk_json_kv_uint(j, "non_temporal_threshold", g->non_temporal);
    tk_json_kv_uint(j, "shared_cache_size", g->shared_cache);
    tk_json_kv_uint(j, "data_cache_size", g->data_cache);
    tk_json_end_object(j);
}

static void perf_json(struct tk_json *j, const struct bw *b)
{
    const struct tk_perf *p = &b->perf;
    tk_json_key(j, "counters");
    tk_json_begin_object(j);
    tk_json_kv_bool(j, "hardware", p->any_hardware);
    tk_json_kv_string(j, "hardware_why", p->any_hardware ? "" : p->hardware_why);
    tk_json_kv_bool(j, "grouped", p->grouped);
    tk_json_kv_int(j, "perf_event_paranoid", p->paranoid);
    tk_json_kv_bool(j, "cpu_pmu", p->cpu_pmu);
    tk_json_key(j, "events");
    tk_json_begin_object(j);
    for (int e = 0; e < TK_PERF_N_EVENTS; e++) {
        tk_json_key(j, tk_perf_event_id((enum tk_perf_event)e));
        tk_json_begin_object_compact(j);
        tk_json_kv_bool(j, "available", tk_perf_has(p, (enum tk_perf_event)e));
        tk_json_kv_bool(j, "user_only", p->ev[e].user_only);
        tk_json_kv_bool(j, "multiplexed", p->ev[e].multiplexed);
        tk_json_kv_string(j, "why", p->ev[e].why);
        tk_json_end_object(j);
    }
    tk_json_end_object(j);
    tk_json_end_object(j);
}

void bw_json(const struct tk_session *s, struct tk_json *j)
{
    const struct bw *b = s->state;
    tk_json_key(j, "params");
    tk_json_begin_object_compact(j);
    tk_json_kv_uint(j, "size", b->o.size);
    tk_json_kv_uint(j, "block", b->o.block);
    tk_json_kv_uint(j, "reps", b->o.reps);
    tk_json_kv_uint(j, "rep_time_ns", b->o.rep_time_ns);
    tk_json_kv_bool(j, "quick", b->o.quick);
    tk_json_end_object(j);
    tk_json_key(j, "caches");
    tk_json_begin_array(j);
    for (size_t i = 0; i < b->caches.n; i++) {
        const struct tk_cache *c = &b->caches.caches[i];
        tk_json_begin_object_compact(j);
        tk_json_kv_string(j, "name", c->name);
        tk_json_kv_uint(j, "level", c->level);
        tk_json_kv_string(j, "type", c->type);
        tk_json_kv_uint(j, "bytes", c->bytes);
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
    glibc_json(j, b);
    place_json(j, "src", &b->src);
    place_json(j, "dst", &b->dst);
    perf_json(j, b);
    tk_json_kv_bool(j, "real_time_granted", not_real_time(b) == NULL);
    if (b->run_methods)
        bw_methods_json(j, b);
    else
        tk_json_key_or_null(j, "methods", false);
    if (b->run_prep)
        bw_prep_json(j, b);
    else
        tk_json_key_or_null(j, "prep", false);
    if (b->run_cache)
        bw_cache_json(j, b);
    else
        tk_json_key_or_null(j, "cache", false);
    tk_json_kv_bool(j, "verified", b->verified);
    tk_json_kv_string(j, "mismatch", b->mismatch);
    tk_json_kv_uint(j, "checksum", b->checksum);
}

void bw_facts(const struct tk_session *s, struct tk_facts *out)
{
    const struct bw *b = s->state;
    out->machine = &b->mf;
    out->timer = b->timer_ok ? &b->timer : NULL;
    out->rt = &b->rt;
    out->has_seed = false;
}
