/*
 * `rtmem size`: the bound of each kind, the adversaries run against it,
 * the report and the JSON.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/progress.h"
#include "common/out.h"
#include "size.h"

/* Offsets of the heap's memory from a page boundary at which the bound is
 * tried: the bound holds for a region at any address. */
static const size_t offsets[] = { 0, 8, 24, 4040 };
#define N_OFFSETS (sizeof(offsets) / sizeof(offsets[0]))

static const int lock_types[] = { RTM_HEAP_LOCK_NONE, RTM_HEAP_LOCK_PI,
                                  RTM_HEAP_LOCK_ROBUST_SHARED };

/* One run of p on a heap of kind made on [mem, mem + bytes): the step of
 * the first failed allocation, or p->n when none failed; SIZE_MAX when the
 * heap could not be created. blocks holds p->n_ids entries. */
static size_t run_once(const struct size_state *st, const char *kind, void *mem, size_t bytes,
                       const struct adv_program *p, void **blocks)
{
    struct rtm_heap_config cfg = { .lock = lock_types[st->o.lock] };
    struct rtm_heap *h = rtm_heap_create_ex(kind, mem, bytes, &cfg);
    if (!h)
        return SIZE_MAX;
    memset(blocks, 0, p->n_ids * sizeof(*blocks));
    size_t failed = p->n;
    for (size_t i = 0; i < p->n && failed == p->n; i++) {
        const struct adv_step *s = &p->steps[i];
        void *q;
        switch (s->op) {
        case ADV_ALLOC: q = rtm_heap_alloc(h, s->size); break;
        case ADV_ALIGNED: q = rtm_heap_aligned_alloc(h, s->align, s->size); break;
        case ADV_REALLOC: q = rtm_heap_realloc(h, blocks[s->id], s->size); break;
        default:
            rtm_heap_free(h, blocks[s->id]);
            blocks[s->id] = NULL;
            continue;
        }
        if (q)
            blocks[s->id] = q;
        else
            failed = i;
    }
    if (failed == p->n && rtm_heap_check(h) != 0)
        failed = SIZE_MAX - 1; /* damaged: reported as a failure at the end */
    rtm_heap_destroy(h);
    return failed;
}

static bool fits(const struct size_state *st, const char *kind, void *mem, uint64_t bytes,
                 const struct adv_program *p, void **blocks)
{
    return run_once(st, kind, mem, (size_t)bytes, p, blocks) == p->n;
}

/* The smallest pool p needs, at the granule's resolution, in [granule, hi]
 * (hi fits). */
static void search(const struct size_state *st, const char *kind, void *mem, uint64_t hi,
                   const struct adv_program *p, void **blocks, struct size_adv_result *r)
{
    uint64_t gr = st->o.granule, lo = 0;
    hi = (hi + gr - 1) / gr * gr;
    while (hi - lo > gr) {
        uint64_t mid = lo + (hi - lo) / 2 / gr * gr;
        if (mid == lo)
            mid = lo + gr;
        if (fits(st, kind, mem, mid, p, blocks))
            hi = mid;
        else
            lo = mid;
    }
    r->searched = true;
    r->needed = hi;
    r->below = lo;
}

static void run_kind(struct size_state *st, struct size_kind *k)
{
    /* the bound's pool at the largest offset, and no more: the search maps
     * nothing else (only what the heaps touch is ever backed) */
    size_t span = k->bound + offsets[N_OFFSETS - 1];
    void *mem = span < k->bound ? MAP_FAILED
                                : mmap(NULL, span, PROT_READ | PROT_WRITE,
                                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) {
        k->map_failed = true;
        snprintf(k->why, sizeof(k->why), "adversaries not run: %zu bytes could not be mapped (%s)",
                 span, strerror(errno));
        return;
    }
    for (unsigned a = 0; a < ADV_COUNT; a++) {
        struct size_adv_result *r = &k->adv[a];
        struct adv_program p;
        if (adv_build(a, k->name, &st->lim, st->o.seed, &p) != 0) {
            snprintf(k->why, sizeof(k->why), "out of memory building the adversaries");
            break;
        }
        r->steps = p.n;
        r->peak_live = p.peak_live;
        void **blocks = calloc(p.n_ids ? p.n_ids : 1, sizeof(*blocks));
        if (!blocks) {
            adv_free(&p);
            snprintf(k->why, sizeof(k->why), "out of memory for the adversaries");
            break;
        }
        r->held = true;
        for (size_t o = 0; o < N_OFFSETS && r->held; o++) {
            size_t at = run_once(st, k->name, (char *)mem + offsets[o], k->bound, &p, blocks);
            if (at != p.n) {
                r->held = false;
                r->fails_at = at;
                st->exceeded = true;
            }
        }
        if (r->held) {
            search(st, k->name, mem, k->bound, &p, blocks, r);
            if (r->needed > k->worst)
                k->worst = r->needed;
        }
        free(blocks);
        adv_free(&p);
    }
    munmap(mem, span);
}

enum tk_run_end size_run(struct tk_session *s)
{
    struct size_state *st = s->state;
    for (size_t i = 0; i < st->n_k; i++) {
        struct size_kind *k = &st->k[i];
        if (k->why[0]) /* not an rtmem kind: no bound */
            continue;
        errno = 0;
        k->bound = rtm_heap_pool_bound_ex(k->name, &st->lim);
        if (!k->bound) {
            snprintf(k->why, sizeof(k->why), "%s",
                     errno == EOVERFLOW ? "no bound: the figure exceeds the address space"
                     : errno == E2BIG   ? "no bound: the kind serves no request or pool this large"
                                        : strerror(errno));
            continue;
        }
        if (st->o.adversaries) {
            char phase[48];
            snprintf(phase, sizeof(phase), "%s's adversaries", k->name);
            tk_progress_phase(phase, 0, 0); /* (on a terminal: progress.h) */
            run_kind(st, k);
        }
    }
    return st->exceeded ? TK_RUN_FAILED : TK_RUN_PASSED;
}

/* ---- the report --------------------------------------------------------------- */

static const char *ratio(char *buf, size_t size, double v)
{
    snprintf(buf, size, v >= 100 ? "%.0fx" : v >= 10 ? "%.1fx" : "%.2fx", v);
    return buf;
}

void size_report(const struct tk_session *s, FILE *f)
{
    const struct size_state *st = s->state;
    const struct rtm_heap_limits *l = &st->lim;
    char a[32], b[32], c[32], d[32];
    fprintf(f, "limits: at most %s live (requested), blocks of %s to %s",
            tk_fmt_iec(a, sizeof(a), l->max_live),
            tk_fmt_iec(b, sizeof(b), l->min_block ? l->min_block : 1),
            tk_fmt_iec(c, sizeof(c), l->max_block));
    if (l->max_align > RTM_HEAP_MIN_ALIGN)
        fprintf(f, ", aligned up to %llu", (unsigned long long)l->max_align);
    fprintf(f, ", %s\n\n",
            st->o.lock ? (st->o.lock == 1 ? "a priority-inheritance lock" : "a robust shared lock")
                       : "no lock");
    fprintf(f, "%-10s %14s %10s", "kind", "pool bound", "x live");
    if (st->o.adversaries)
        fprintf(f, " %12s %10s  %s", "worst found", "bound/it", "adversaries (pool each needed)");
    fputc('\n', f);
    for (size_t i = 0; i < st->n_k; i++) {
        const struct size_kind *k = &st->k[i];
        if (!k->bound) {
            fprintf(f, "%-10s %s\n", k->name, k->why);
            continue;
        }
        fprintf(f, "%-10s %14s %10s", k->name, tk_fmt_iec_approx(a, sizeof(a), k->bound),
                ratio(b, sizeof(b), (double)k->bound / (double)l->max_live));
        if (st->o.adversaries && k->worst) {
            fprintf(f, " %12s %10s ", tk_fmt_iec_approx(c, sizeof(c), k->worst),
                    ratio(d, sizeof(d), (double)k->bound / (double)k->worst));
            for (unsigned j = 0; j < ADV_COUNT; j++) {
                const struct size_adv_result *r = &k->adv[j];
                if (!r->held)
                    fprintf(f, " %s: EXCEEDED at step %llu", adv_names[j],
                            (unsigned long long)r->fails_at);
                else if (r->searched)
                    fprintf(f, " %s %s", adv_names[j], tk_fmt_bytes_short(a, sizeof(a), r->needed));
            }
        } else if (st->o.adversaries) {
            fprintf(f, " %s", k->why[0] ? k->why : "");
            for (unsigned j = 0; j < ADV_COUNT; j++)
                if (!k->adv[j].held && k->adv[j].steps)
                    fprintf(f, " %s: EXCEEDED at step %llu", adv_names[j],
                            (unsigned long long)k->adv[j].fails_at);
        }
        fputc('\n', f);
    }
    fprintf(f, "\nThe bound: a heap created on a region of that size never fails an allocation "
               "within the limits, whatever the order (rtm_heap_pool_bound_ex, docs/size.md).\n");
    if (st->exceeded)
        fprintf(f, "FAILED: an adversary made an allocation fail within the limits on a pool of "
                   "the bound (EXCEEDED above): the bound is wrong; please report it.\n");
    if (st->o.adversaries)
        fprintf(f,
                "Adversaries: each ran on the bound's pool at %zu addresses without a failure "
                "(else EXCEEDED, and the run fails); 'worst found' is the smallest pool the "
                "hardest of them needed (%llu-byte resolution): the bound is proven, the "
                "worst found is measured.\n",
                N_OFFSETS, (unsigned long long)st->o.granule);
}

void size_json(const struct tk_session *s, struct tk_json *j)
{
    const struct size_state *st = s->state;
    const struct rtm_heap_limits *l = &st->lim;
    tk_json_key(j, "limits");
    tk_json_begin_object(j);
    tk_json_kv_uint(j, "max_live", l->max_live);
    tk_json_kv_uint(j, "max_block", l->max_block);
    tk_json_kv_uint(j, "min_block", l->min_block ? l->min_block : 1);
    tk_json_kv_uint(j, "max_align", l->max_align);
    tk_json_kv_string(j, "lock", size_lock_names[st->o.lock]);
    tk_json_end_object(j);
    tk_json_kv_bool(j, "adversaries_run", st->o.adversaries);
    tk_json_kv_uint(j, "granule", st->o.granule);
    tk_json_key(j, "kinds");
    tk_json_begin_array(j);
    for (size_t i = 0; i < st->n_k; i++) {
        const struct size_kind *k = &st->k[i];
        tk_json_begin_object(j);
        tk_json_kv_string(j, "kind", k->name);
        if (tk_json_key_or_null(j, "bound", k->bound != 0))
            tk_json_uint(j, k->bound);
        if (tk_json_key_or_null(j, "why", k->why[0] != 0))
            tk_json_string(j, k->why);
        if (tk_json_key_or_null(j, "worst_found", k->worst != 0))
            tk_json_uint(j, k->worst);
        tk_json_key(j, "adversaries");
        tk_json_begin_array(j);
        for (unsigned a = 0; st->o.adversaries && k->bound && !k->map_failed && a < ADV_COUNT;
             a++) {
            const struct size_adv_result *r = &k->adv[a];
            tk_json_begin_object_compact(j);
            tk_json_kv_string(j, "name", adv_names[a]);
            tk_json_kv_uint(j, "steps", r->steps);
            tk_json_kv_uint(j, "peak_live", r->peak_live);
            tk_json_kv_bool(j, "held_at_bound", r->held);
            if (tk_json_key_or_null(j, "fails_at", !r->held))
                tk_json_uint(j, r->fails_at);
            if (tk_json_key_or_null(j, "needed", r->searched))
                tk_json_uint(j, r->needed);
            if (tk_json_key_or_null(j, "below_failed", r->searched && r->below))
                tk_json_uint(j, r->below);
            tk_json_end_object(j);
        }
        tk_json_end_array(j);
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
}
