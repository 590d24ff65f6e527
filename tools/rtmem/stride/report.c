/*
 * `rtmem stride`: the header (machine, timer, real-time setup, caches,
 * buffer, what is measured), the table's rows, the jumps of each pattern's
 * cost set against the caches, the JSON and the envelope's facts.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "common/opt.h"
#include "common/tool.h"
#include "stride.h"

/* ns per access with the decimals its size deserves, "-" for none. */
static const char *fmt_ns(char *buf, size_t size, double ns)
{
    return tk_fmt_double(buf, size, ns, ns < 10 ? 3 : ns < 100 ? 2 : 1);
}

/* (p90 - p10) / median in percent: the spread of a point's repetitions;
 * from ten of them on, the slowest (a stall of the machine) is left out. */
static double spread_pct(const struct stride_result *r)
{
    return r->median > 0 ? 100.0 * (r->p90 - r->p10) / r->median : NAN;
}

static double ratio_16_1(const struct stride_point *p)
{
    return p->r[PAT_STRIDE_1].median > 0 ? p->r[PAT_STRIDE_16].median / p->r[PAT_STRIDE_1].median
                                         : NAN;
}

/* A whole pass of stride 1 over one of stride 16, in time: 16 times the
 * accesses, each costing 1/ratio_16_1 as much. The published study's
 * ratio is of this kind (see --first-touch). */
static double pass_ratio_1_16(const struct stride_point *p)
{
    double r = ratio_16_1(p);
    return r > 0 ? STRIDE_WIDE_INTS / r : NAN;
}

static const char *thp_advice(const struct stride *st)
{
    return stride_thp_choices[st->o.thp];
}

/* The header's column of text, under "caches     : ". */
/* "label      : " and the text formatted as printf does, wrapped at 80
 * columns under TK_ITEM_COL. An empty label continues the previous item. */
static void print_caches(FILE *f, const struct stride *st)
{
    const struct tk_caches *c = &st->caches;
    char text[512];
    tk_item(f, "caches", "%s", tk_caches_describe(text, sizeof(text), c));
    fprintf(f, "%*scache line %u B", TK_ITEM_COL, "", c->line_bytes);
    if (c->line_assumed)
        fprintf(f, " ASSUMED (sysfs does not give it)\n");
    else
        fprintf(f, "; from %s/cpu%d/cache\n", c->dir, c->cpu);
}

static void print_buffer(FILE *f, const struct stride *st)
{
    const struct rtm_arena_report *r = &st->buf.report;
    char b[32], p[32], h[32];
    tk_item(f, "buffer",
            "%s, one mapping, prefaulted, %s; pages of %s, %s of it in transparent huge pages "
            "(system: %s, --thp %s)",
            tk_fmt_iec(b, sizeof(b), st->top_bytes),
            r->lock_state == RTM_ARENA_LOCKED ? "locked" : "NOT locked",
            tk_fmt_iec(p, sizeof(p), r->page_bytes), tk_fmt_iec(h, sizeof(h), r->anon_huge_bytes),
            st->thp_mode[0] ? st->thp_mode : "unknown", thp_advice(st));
    if (st->buf.message[0])
        tk_item(f, "", "%s", st->buf.message);
}

static void print_sizes(FILE *f, const struct stride *st)
{
    char a[32], b[32], how[64];
    const struct tk_sizes *s = &st->sizes;
    const struct tk_cache *llc = tk_caches_llc(&st->caches);
    if (st->o.sizes.n)
        snprintf(how, sizeof(how), " (--sizes)");
    else if (st->o.max_size)
        snprintf(how, sizeof(how), ", doubling (--max-size)");
    else if (llc)
        snprintf(how, sizeof(how), ", doubling, up to %u x %s", STRIDE_LLC_FACTOR, llc->name);
    else
        snprintf(how, sizeof(how), ", doubling (no cache known)");
    if (st->o.first_touch && !st->o.sizes.n)
        tk_item(f, "size", "%s, the largest of the default sizes%s",
                tk_fmt_iec(a, sizeof(a), s->bytes[0]), how);
    else
        tk_item(f, "sizes", "%zu, %s to %s%s", s->n, tk_fmt_iec(a, sizeof(a), s->bytes[0]),
                tk_fmt_iec(b, sizeof(b), s->bytes[s->n - 1]), how);
    if (st->sizes_capped)
        tk_item(f, "", "capped at %s: the larger ones do not fit in half of MemAvailable (%s)",
                tk_fmt_iec(a, sizeof(a), s->bytes[s->n - 1]),
                tk_fmt_iec(b, sizeof(b), st->mem_available));
}

/* Why the run is not real-time, NULL if it is. */
static const char *not_real_time(const struct stride *st)
{
    if (!st->rt.affinity.granted)
        return "not pinned to one CPU";
    if (!st->rt.fifo.granted)
        return st->o.rt.no_rt ? "SCHED_OTHER (--no-rt)" : "SCHED_FIFO refused";
    return NULL;
}

void stride_print_header(FILE *f, const struct stride *st)
{
    char t[24];
    fprintf(f, "rtmem stride: the cost of touching memory with a stride, per access\n");
    tk_machine_print(f, &st->mf);
    tk_timer_print(f, "timer: ", &st->timer, TK_DETAIL_BRIEF);
    tk_rt_print(f, &st->rt);
    print_caches(f, st);
    if (st->o.first_touch) {
        print_sizes(f, st);
        tk_item(f, "first touch",
                "the published program's form, per repetition (%u): a fresh mapping of the "
                "size, never touched (no prefault, no lock), walked by loop 1 (stride 1 int, "
                "read-modify-write: every first touch of a page faults it in), loop 2 (stride 16 "
                "ints, the pages now present), then loop 1 again (not in the published program: "
                "loop 1 without the faults), each timed whole",
                st->o.reps);
        if (not_real_time(st))
            tk_item(f, "NOT RT", "%s: other tasks may take the CPU during a loop",
                    not_real_time(st));
        fprintf(f, "\n");
        return;
    }
    print_buffer(f, st);
    print_sizes(f, st);
    tk_item(f, "patterns", "%s: read-modify-write of every int, in order",
            stride_pattern_names[PAT_STRIDE_1]);
    tk_item(f, "", "%s: the same, one int every 64 bytes", stride_pattern_names[PAT_STRIDE_16]);
    tk_item(f, "",
            "%s: a load per cache line (%u B), each the next line's address, in a random cyclic "
            "order (seed %" PRIu64 ")",
            stride_pattern_names[PAT_CHASE], st->caches.line_bytes, st->o.seed);
    tk_item(f, "repetitions",
            "%u per size and pattern, shared among %u round%s over the sizes, each after a "
            "warm-up and sized to last %s or more; the median ns per access, and the spread "
            "(p90 - p10) / median",
            st->o.reps, st->o.rounds, st->o.rounds == 1 ? "" : "s",
            tk_args_fmt_time(t, sizeof(t), st->o.rep_time_ns));
    if (not_real_time(st))
        tk_item(f, "NOT RT",
                "%s: other tasks may take the CPU during a repetition (the medians resist that, "
                "the spread shows it)",
                not_real_time(st));
    fprintf(f, "\n");
}

static void print_table_head(FILE *f)
{
    fprintf(f, "%10s  %-7s %18s %18s %18s %13s\n", "", "", "stride 1 int", "stride 16 ints",
            "random chase", "1 over 16");
    fprintf(f, "%10s  %-7s %10s %7s %10s %7s %10s %7s %6s %6s\n", "size", "fits", "ns", "spread",
            "ns", "spread", "ns", "spread", "16/1", "pass");
    fprintf(f, "%10s  %-7s %10s %7s %10s %7s %10s %7s %6s %6s\n", "----------", "-------",
            "----------", "-------", "----------", "-------", "----------", "-------", "------",
            "------");
}

static void print_row(FILE *f, const struct stride *st, size_t i)
{
    const struct stride_point *p = &st->points[i];
    char size[32], ns[N_PATTERNS][TK_FMT_MAX], sp[N_PATTERNS][TK_FMT_MAX], ratio[TK_FMT_MAX],
        pass[TK_FMT_MAX];
    for (int k = 0; k < N_PATTERNS; k++) {
        fmt_ns(ns[k], sizeof(ns[k]), p->r[k].median);
        char pct[TK_FMT_MAX];
        snprintf(sp[k], sizeof(sp[k]), "%s%%",
                 tk_fmt_double(pct, sizeof(pct), spread_pct(&p->r[k]), 0));
    }
    fprintf(f, "%10s  %-7s %10s %7s %10s %7s %10s %7s %6s %6s\n",
            tk_fmt_iec(size, sizeof(size), p->bytes), p->level, ns[0], sp[0], ns[1], sp[1], ns[2],
            sp[2], tk_fmt_double(ratio, sizeof(ratio), ratio_16_1(p), 2),
            tk_fmt_double(pass, sizeof(pass), pass_ratio_1_16(p), 2));
}

/* The jumps of pattern pat's cost into out (room for n_points); returns how
 * many. */
static size_t stride_jumps(const struct stride *st, enum stride_pattern pat,
                           struct stride_jump *out)
{
    size_t n = st->n_points, found = 0;
    double floor[STRIDE_MAX_SIZES];
    for (size_t i = n; i-- > 0;) {
        double m = st->points[i].r[pat].p10;
        floor[i] = i + 1 < n && floor[i + 1] < m ? floor[i + 1] : m;
    }
    size_t i = 1;
    while (i < n) {
        if (!(floor[i] >= floor[i - 1] * STRIDE_RISE)) {
            i++;
            continue;
        }
        size_t from = i - 1;
        while (i + 1 < n && floor[i + 1] >= floor[i] * STRIDE_RISE)
            i++;
        if (floor[i] >= floor[from] * STRIDE_JUMP)
            out[found++] = (struct stride_jump){
                .from = from, .to = i, .from_ns = floor[from], .to_ns = floor[i]
            };
        i++;
    }
    return found;
}

/* Is cache c one a jump from `from` to `to` bytes passes: from fits in
 * it, to does not? */
static bool passes(const struct tk_cache *c, uint64_t from, uint64_t to)
{
    return tk_cache_sized_data(c) && from <= c->bytes && to > c->bytes;
}

/* Where a jump lies against the caches, into buf: the caches it passes,
 * else the cache its larger size fits in (at its very size: "reaching"),
 * else beyond the last one. */
static const char *jump_place(char *buf, size_t size, const struct stride *st,
                              const struct stride_jump *jp)
{
    char b[32];
    uint64_t from = st->points[jp->from].bytes, to = st->points[jp->to].bytes;
    const struct tk_cache *llc = tk_caches_llc(&st->caches);
    if (!llc) {
        snprintf(buf, size, "no cache size known");
        return buf;
    }
    size_t n = 0, len = 0;
    for (size_t i = 0; i < st->caches.n; i++)
        n += passes(&st->caches.caches[i], from, to);
    for (size_t i = 0, k = 0; i < st->caches.n && len < size; i++) {
        const struct tk_cache *c = &st->caches.caches[i];
        if (!passes(c, from, to))
            continue;
        k++;
        int w = snprintf(buf + len, size - len, "%s%s (%s)",
                         k == 1   ? "past "
                         : k == n ? " and "
                                  : ", ",
                         c->name, tk_fmt_iec(b, sizeof(b), c->bytes));
        len += w > 0 ? (size_t)w : 0;
    }
    if (n)
        return buf;
    for (size_t i = 0; i < st->caches.n; i++) {
        const struct tk_cache *c = &st->caches.caches[i];
        if (tk_cache_sized_data(c) && to <= c->bytes) {
            snprintf(buf, size, "%s %s (%s)", to == c->bytes ? "reaching" : "within", c->name,
                     tk_fmt_iec(b, sizeof(b), c->bytes));
            return buf;
        }
    }
    snprintf(buf, size, "beyond %s (%s)", llc->name, tk_fmt_iec(b, sizeof(b), llc->bytes));
    return buf;
}

static void print_jumps(FILE *f, const struct stride *st, enum stride_pattern pat)
{
    struct stride_jump jumps[STRIDE_MAX_SIZES];
    size_t n = stride_jumps(st, pat, jumps);
    fprintf(f, "  %s:\n", stride_pattern_names[pat]);
    if (n == 0) {
        double lo = INFINITY, hi = 0;
        for (size_t i = 0; i < st->n_points; i++) {
            double m = st->points[i].r[pat].p10;
            lo = m < lo ? m : lo;
            hi = m > hi ? m : hi;
        }
        char a[TK_FMT_MAX], b[TK_FMT_MAX];
        fprintf(f, "    no jump: p10 from %s to %s ns per access over the sizes measured\n",
                fmt_ns(a, sizeof(a), lo), fmt_ns(b, sizeof(b), hi));
        return;
    }
    for (size_t k = 0; k < n; k++) {
        const struct stride_jump *jp = &jumps[k];
        char x[TK_FMT_MAX], a[32], an[TK_FMT_MAX], b[32], bn[TK_FMT_MAX], where[160];
        fprintf(f, "    x%s from %s (%s ns) to %s (%s ns), %s\n",
                tk_fmt_double(x, sizeof(x), jp->to_ns / jp->from_ns, 1),
                tk_fmt_iec(a, sizeof(a), st->points[jp->from].bytes),
                fmt_ns(an, sizeof(an), jp->from_ns),
                tk_fmt_iec(b, sizeof(b), st->points[jp->to].bytes),
                fmt_ns(bn, sizeof(bn), jp->to_ns), jump_place(where, sizeof(where), st, jp));
    }
}

static uint64_t faults_timed(const struct stride *st)
{
    uint64_t n = 0;
    for (size_t i = 0; i < st->n_points; i++)
        for (int k = 0; k < N_PATTERNS; k++)
            n += st->points[i].r[k].minor_faults;
    return n;
}

static const char *const ft_names[FT_LOOPS] = {
    [FT_LOOP1_FIRST] = "loop 1, stride 1 int, first touch",
    [FT_LOOP2] = "loop 2, stride 16 ints",
    [FT_LOOP1_AGAIN] = "loop 1 again, pages present",
};
static const char *const ft_ids[FT_LOOPS] = {
    [FT_LOOP1_FIRST] = "loop1_first_touch",
    [FT_LOOP2] = "loop2",
    [FT_LOOP1_AGAIN] = "loop1_again",
};

static double ft_ratio(const struct stride_first *ft, int a, int b)
{
    return ft->median[b] > 0 ? ft->median[a] / ft->median[b] : NAN;
}

static void first_touch_report(const struct stride *st, FILE *f)
{
    char a[TK_FMT_MAX], b[TK_FMT_MAX], c[TK_FMT_MAX], size[32];
    for (size_t i = 0; i < st->n_points; i++) {
        const struct stride_first *ft = &st->first[i];
        fprintf(f, "%s, %u repetitions: each loop's whole time\n",
                tk_fmt_iec(size, sizeof(size), ft->bytes), st->o.reps);
        fprintf(f, "  %-36s %12s %12s %12s %14s\n", "loop", "median ms", "p10 ms", "p90 ms",
                "page faults");
        for (int k = 0; k < FT_LOOPS; k++)
            fprintf(f, "  %-36s %12s %12s %12s %14" PRIu64 "\n", ft_names[k],
                    tk_fmt_double(a, sizeof(a), ft->median[k] / 1e6, 3),
                    tk_fmt_double(b, sizeof(b), ft->p10[k] / 1e6, 3),
                    tk_fmt_double(c, sizeof(c), ft->p90[k] / 1e6, 3),
                    ft->faults[k] / (st->o.reps ? st->o.reps : 1));
        fprintf(f, "  (page faults: per repetition)\n");
        tk_item(f, "loop 1 / 2", "%s: the published program's ratio, loop 1's first touch included",
                tk_fmt_double(a, sizeof(a), ft_ratio(ft, FT_LOOP1_FIRST, FT_LOOP2), 2));
        tk_item(f, "again / 2", "%s: the same without the faults, a pass over a pass",
                tk_fmt_double(a, sizeof(a), ft_ratio(ft, FT_LOOP1_AGAIN, FT_LOOP2), 2));
        tk_item(f, "per access",
                "%s: stride 16 over stride 1 per access (%u x loop 2 / loop 1 again), what "
                "the sweep's 16/1 column gives",
                tk_fmt_double(a, sizeof(a),
                              STRIDE_WIDE_INTS * ft_ratio(ft, FT_LOOP2, FT_LOOP1_AGAIN), 2),
                STRIDE_WIDE_INTS);
        fprintf(f, "\n");
    }
    if (not_real_time(st))
        tk_item(f, "NOT RT", "%s: the figures may include other tasks' time", not_real_time(st));
}

void stride_report(const struct tk_session *s, FILE *f)
{
    const struct stride *st = s->state;
    char a[TK_FMT_MAX], b[TK_FMT_MAX], c[TK_FMT_MAX];
    if (st->o.first_touch) {
        fprintf(f, "\n");
        first_touch_report(st, f);
        return;
    }
    fprintf(f, "\n");
    print_table_head(f);
    for (size_t i = 0; i < st->n_points; i++)
        print_row(f, st, i);
    fprintf(f,
            "\nwhere each pattern's cost per access jumps, x%.1f or more (a size's figure: the "
            "lowest\np10 of it and of every larger size, so that one slow size is no jump):\n",
            STRIDE_JUMP);
    if (st->n_points < 2)
        fprintf(f, "  one size: no jump to find\n");
    else
        for (int p = 0; p < N_PATTERNS; p++)
            print_jumps(f, st, (enum stride_pattern)p);
    fprintf(f, "\n");
    tk_item(f, "timer",
            "a reading pair costs %s ns (p50), %s%% of the shortest repetition (%s ms): not "
            "subtracted",
            tk_fmt_double(a, sizeof(a), st->timer.overhead_p50_ns, 1),
            tk_fmt_double(b, sizeof(b), 100.0 * st->timer.overhead_p50_ns / st->rep_ns_min, 4),
            tk_fmt_double(c, sizeof(c), st->rep_ns_min / 1e6, 3));
    tk_item(f, "page faults", "%" PRIu64 " during the timed repetitions", faults_timed(st));
    if (not_real_time(st))
        tk_item(f, "NOT RT", "%s: the figures may include other tasks' time", not_real_time(st));
}

void stride_facts(const struct tk_session *s, struct tk_facts *out)
{
    const struct stride *st = s->state;
    *out = (struct tk_facts){
        .machine = &st->mf,
        .timer = st->timer_ok ? &st->timer : NULL,
        .rt = &st->rt,
        .has_seed = true,
        .seed = st->o.seed,
    };
}

static void params_json(const struct stride *st, struct tk_json *j)
{
    tk_json_key(j, "params");
    tk_json_begin_object(j);
    if (tk_json_key_or_null(j, "sizes", st->o.sizes.n > 0)) {
        tk_json_begin_array_compact(j);
        for (size_t i = 0; i < st->o.sizes.n; i++)
            tk_json_uint(j, st->o.sizes.bytes[i]);
        tk_json_end_array(j);
    }
    if (tk_json_key_or_null(j, "max_size_bytes", st->o.max_size > 0))
        tk_json_uint(j, st->o.max_size);
    tk_json_kv_uint(j, "reps", st->o.reps);
    tk_json_kv_uint(j, "rounds", st->o.rounds);
    tk_json_kv_uint(j, "rep_time_ns", st->o.rep_time_ns);
    tk_json_kv_int(j, "cpu", st->o.rt.cpu);
    tk_json_kv_int(j, "priority", st->o.rt.priority);
    tk_json_kv_bool(j, "no_rt", st->o.rt.no_rt);
    tk_json_kv_string(j, "thp", thp_advice(st));
    tk_json_kv_uint(j, "seed", st->o.seed);
    tk_json_kv_bool(j, "quick", st->o.quick);
    tk_json_end_object(j);
}

static void caches_json(const struct stride *st, struct tk_json *j)
{
    const struct tk_caches *c = &st->caches;
    tk_json_kv_int(j, "cpu", st->cpu);
    tk_json_kv_string(j, "caches_dir", c->dir);
    tk_json_key(j, "caches");
    tk_json_begin_array(j);
    for (size_t i = 0; i < c->n; i++) {
        const struct tk_cache *k = &c->caches[i];
        tk_json_begin_object_compact(j);
        tk_json_kv_uint(j, "level", k->level);
        tk_json_kv_string(j, "type", k->type);
        tk_json_kv_string(j, "name", k->name);
        if (tk_json_key_or_null(j, "bytes", k->bytes > 0))
            tk_json_uint(j, k->bytes);
        if (tk_json_key_or_null(j, "line_bytes", k->line_bytes > 0))
            tk_json_uint(j, k->line_bytes);
        if (tk_json_key_or_null(j, "shared_cpu_list", k->shared[0] != '\0'))
            tk_json_string(j, k->shared);
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
    tk_json_kv_uint(j, "line_bytes", c->line_bytes);
    tk_json_kv_bool(j, "line_bytes_assumed", c->line_assumed);
}

static void buffer_json(const struct stride *st, struct tk_json *j)
{
    const struct rtm_arena_report *r = &st->buf.report;
    tk_json_key(j, "buffer");
    tk_json_begin_object(j);
    tk_json_kv_uint(j, "bytes", st->top_bytes);
    tk_json_kv_uint(j, "page_bytes", r->page_bytes);
    tk_json_kv_uint(j, "anon_huge_bytes", r->anon_huge_bytes);
    tk_json_kv_uint(j, "resident_bytes", r->resident_bytes);
    if (tk_json_key_or_null(j, "thp_system", st->thp_mode[0] != '\0'))
        tk_json_string(j, st->thp_mode);
    tk_json_kv_string(j, "thp_advice", thp_advice(st));
    tk_json_kv_bool(j, "locked", r->lock_state == RTM_ARENA_LOCKED);
    if (tk_json_key_or_null(j, "lock_error", r->lock_errno != 0))
        tk_json_string(j, strerror(r->lock_errno));
    if (tk_json_key_or_null(j, "message", st->buf.message[0] != '\0'))
        tk_json_string(j, st->buf.message);
    tk_json_end_object(j);
    if (tk_json_key_or_null(j, "mem_available_bytes", st->mem_available > 0))
        tk_json_uint(j, st->mem_available);
    tk_json_kv_bool(j, "sizes_capped", st->sizes_capped);
}

static void patterns_json(const struct stride *st, struct tk_json *j)
{
    static const char *const access[N_PATTERNS] = { "read-modify-write", "read-modify-write",
                                                    "load" };
    const uint64_t stride_bytes[N_PATTERNS] = { sizeof(uint32_t),
                                                STRIDE_WIDE_INTS * sizeof(uint32_t),
                                                st->caches.line_bytes };
    static const char *const order[N_PATTERNS] = { "sequential", "sequential", "random cycle" };
    tk_json_key(j, "patterns");
    tk_json_begin_array(j);
    for (int p = 0; p < N_PATTERNS; p++) {
        tk_json_begin_object_compact(j);
        tk_json_kv_string(j, "id", stride_pattern_ids[p]);
        tk_json_kv_string(j, "name", stride_pattern_names[p]);
        tk_json_kv_string(j, "access", access[p]);
        tk_json_kv_uint(j, "stride_bytes", stride_bytes[p]);
        tk_json_kv_string(j, "order", order[p]);
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
}

static void result_json(struct tk_json *j, const char *key, const struct stride_result *r,
                        uint64_t per_pass)
{
    tk_json_key(j, key);
    tk_json_begin_object_compact(j);
    tk_json_kv_double(j, "median_ns_per_access", r->median);
    tk_json_kv_double(j, "min_ns_per_access", r->min);
    tk_json_kv_double(j, "max_ns_per_access", r->max);
    tk_json_kv_double(j, "p10_ns_per_access", r->p10);
    tk_json_kv_double(j, "p90_ns_per_access", r->p90);
    tk_json_kv_uint(j, "reps", r->reps);
    tk_json_kv_uint(j, "accesses", r->accesses);
    tk_json_kv_double(j, "passes", (double)r->accesses / (double)per_pass);
    tk_json_kv_double(j, "rep_ns_min", r->rep_ns_min);
    tk_json_kv_uint(j, "minor_faults", r->minor_faults);
    tk_json_end_object(j);
}

static void points_json(const struct stride *st, struct tk_json *j)
{
    tk_json_key(j, "points");
    tk_json_begin_array(j);
    /* --first-touch measures no point: its figures are first_touch's. */
    for (size_t i = 0; !st->o.first_touch && i < st->n_points; i++) {
        const struct stride_point *p = &st->points[i];
        const uint64_t per_pass[N_PATTERNS] = { p->bytes / sizeof(uint32_t),
                                                p->bytes / (STRIDE_WIDE_INTS * sizeof(uint32_t)),
                                                p->bytes / st->caches.line_bytes };
        tk_json_begin_object(j);
        tk_json_kv_uint(j, "bytes", p->bytes);
        tk_json_kv_string(j, "level", p->level);
        for (int k = 0; k < N_PATTERNS; k++)
            result_json(j, stride_pattern_ids[k], &p->r[k], per_pass[k]);
        tk_json_kv_double(j, "ratio_16_over_1", ratio_16_1(p));
        tk_json_kv_double(j, "pass_ratio_1_over_16", pass_ratio_1_16(p));
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
}

static void jumps_json(const struct stride *st, struct tk_json *j)
{
    tk_json_key(j, "jumps");
    tk_json_begin_object(j);
    for (int p = 0; p < N_PATTERNS; p++) {
        struct stride_jump jumps[STRIDE_MAX_SIZES];
        size_t n = st->o.first_touch ? 0 : stride_jumps(st, (enum stride_pattern)p, jumps);
        tk_json_key(j, stride_pattern_ids[p]);
        tk_json_begin_array(j);
        for (size_t k = 0; k < n; k++) {
            const struct stride_jump *jp = &jumps[k];
            uint64_t from = st->points[jp->from].bytes, to = st->points[jp->to].bytes;
            tk_json_begin_object_compact(j);
            tk_json_kv_uint(j, "from_bytes", from);
            tk_json_kv_uint(j, "to_bytes", to);
            tk_json_kv_double(j, "from_ns", jp->from_ns);
            tk_json_kv_double(j, "to_ns", jp->to_ns);
            tk_json_kv_double(j, "factor", jp->to_ns / jp->from_ns);
            tk_json_key(j, "past");
            tk_json_begin_array(j);
            for (size_t i = 0; i < st->caches.n; i++)
                if (passes(&st->caches.caches[i], from, to))
                    tk_json_string(j, st->caches.caches[i].name);
            tk_json_end_array(j);
            tk_json_kv_string(j, "to_level", st->points[jp->to].level);
            tk_json_end_object(j);
        }
        tk_json_end_array(j);
    }
    tk_json_end_object(j);
}

static void first_touch_json(const struct stride *st, struct tk_json *j)
{
    if (!tk_json_key_or_null(j, "first_touch", st->o.first_touch))
        return;
    tk_json_begin_array(j);
    for (size_t i = 0; i < st->n_points; i++) {
        const struct stride_first *ft = &st->first[i];
        tk_json_begin_object(j);
        tk_json_kv_uint(j, "bytes", ft->bytes);
        tk_json_kv_uint(j, "reps", st->o.reps);
        for (int k = 0; k < FT_LOOPS; k++) {
            tk_json_key(j, ft_ids[k]);
            tk_json_begin_object_compact(j);
            tk_json_kv_double(j, "median_ns", ft->median[k]);
            tk_json_kv_double(j, "p10_ns", ft->p10[k]);
            tk_json_kv_double(j, "p90_ns", ft->p90[k]);
            tk_json_kv_uint(j, "minor_faults", ft->faults[k]);
            tk_json_end_object(j);
        }
        tk_json_kv_double(j, "ratio_loop1_over_loop2", ft_ratio(ft, FT_LOOP1_FIRST, FT_LOOP2));
        tk_json_kv_double(j, "ratio_again_over_loop2", ft_ratio(ft, FT_LOOP1_AGAIN, FT_LOOP2));
        tk_json_kv_double(j, "ratio_16_over_1_per_access",
                          STRIDE_WIDE_INTS * ft_ratio(ft, FT_LOOP2, FT_LOOP1_AGAIN));
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
}

void stride_json(const struct tk_session *s, struct tk_json *j)
{
    const struct stride *st = s->state;
    first_touch_json(st, j);
    params_json(st, j);
    caches_json(st, j);
    buffer_json(st, j);
    patterns_json(st, j);
    tk_json_kv_bool(j, "real_time_granted", not_real_time(st) == NULL);
    points_json(st, j);
    jumps_json(st, j);
    tk_json_kv_double(j, "rep_ns_min", st->rep_ns_min);
    tk_json_kv_uint(j, "minor_faults_timed", faults_timed(st));
    tk_json_kv_uint(j, "checksum", st->checksum);
}
