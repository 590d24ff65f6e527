/*
 * Bench kit: the allocators under test (alloc.h).
 */
#include "common/alloc.h"
#include "common/out.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- rtmem kinds, through rtm_heap_* ------------------------------------- */

/* Thin wrappers: the harness calls every allocator as fn(ctx, ...), and a
 * call through a pointer of another type would be undefined. Each compiles
 * to a jump. */
static void *rtmk_create(const void *arg, void *mem, size_t size)
{
    return rtm_heap_create((const char *)arg, mem, size);
}

static void *rtmk_create_none(const void *arg, void *mem, size_t size)
{
    const struct rtm_heap_config cfg = { .hardening = RTM_HEAP_HARDEN_NONE };
    return rtm_heap_create_ex((const char *)arg, mem, size, &cfg);
}

static void rtmk_destroy(void *h)
{
    rtm_heap_destroy(h);
}

static void *rtmk_alloc(void *h, size_t size)
{
    return rtm_heap_alloc(h, size);
}

static int rtmk_free(void *h, void *p)
{
    return rtm_heap_free(h, p);
}

static size_t rtmk_usable_size(void *h, const void *p)
{
    return rtm_heap_usable_size(h, p);
}

static int rtmk_stats(void *h, struct rtm_heap_stats *out)
{
    return rtm_heap_stats(h, out);
}

static int rtmk_check(void *h)
{
    return rtm_heap_check(h);
}

static size_t rtmk_fill_count(void *h, size_t size)
{
    return rtm_heap_fill_count(h, size);
}

/* The calls through rtm_heap_*, on a heap made by create_fn. */
#define RTMEM_OPS(create_fn)             \
    {                                    \
        .create = create_fn,             \
        .destroy = rtmk_destroy,         \
        .alloc = rtmk_alloc,             \
        .free = rtmk_free,               \
        .usable_size = rtmk_usable_size, \
        .stats = rtmk_stats,             \
        .check = rtmk_check,             \
        .fill_count = rtmk_fill_count,   \
    }

static const struct tk_heap_ops rtmem_ops = RTMEM_OPS(rtmk_create);
/* The same calls on a heap created at hardening level none. */
static const struct tk_heap_ops rtmem_none_ops = RTMEM_OPS(rtmk_create_none);

static void set_bounded(struct tk_alloc *a, const struct tk_heap_ops *ops, const void *arg)
{
    a->sort = TK_HEAP;
    a->applies = TK_APPLY_FILL_TO_FAILURE | TK_APPLY_STATS | TK_APPLY_CHECK | TK_APPLY_FREE_STATUS |
                 TK_APPLY_BOUNDS | TK_APPLY_FILL_PROMISE;
    a->origin = "rtmem";
    a->align = RTM_HEAP_MIN_ALIGN;
    a->hops = ops;
    a->hops_arg = arg;
    a->alloc = ops->alloc;
    a->free = ops->free;
    a->usable_size = ops->usable_size;
}

void tk_alloc_rtmem(struct tk_alloc *a, const char *kind, int hardening)
{
    memset(a, 0, sizeof(*a));
    a->from = TK_FROM_RTMEM;
    a->kind = kind;
    a->hardening = hardening;
    if (hardening == RTM_HEAP_HARDEN_NONE) {
        snprintf(a->name, sizeof(a->name), "%s-none", kind);
        set_bounded(a, &rtmem_none_ops, kind);
        a->describe = "rtmem kind through rtm_heap_*, hardening level none";
    } else {
        snprintf(a->name, sizeof(a->name), "%s", kind);
        set_bounded(a, &rtmem_ops, kind);
        a->describe = "rtmem kind through rtm_heap_*";
    }
}

/* ---- TLSF and halffit through their typed APIs ---------------------------- */

static void *typed_create(const void *arg, void *mem, size_t size)
{
    (void)arg;
    return rtm_tlsf_create(mem, size);
}

static void typed_destroy(void *t)
{
    rtm_heap_destroy(rtm_tlsf_heap(t));
}

static void *typed_alloc(void *t, size_t size)
{
    return rtm_tlsf_alloc(t, size);
}

static int typed_free(void *t, void *p)
{
    return rtm_tlsf_free(t, p);
}

static size_t typed_usable_size(void *t, const void *p)
{
    return rtm_tlsf_usable_size(t, p);
}

static int typed_stats(void *t, struct rtm_heap_stats *out)
{
    return rtm_tlsf_stats(t, out);
}

static int typed_check(void *t)
{
    return rtm_tlsf_check(t);
}

static size_t typed_fill_count(void *t, size_t size)
{
    return rtm_heap_fill_count(rtm_tlsf_heap(t), size);
}

static const struct tk_heap_ops typed_ops = {
    .create = typed_create,
    .destroy = typed_destroy,
    .alloc = typed_alloc,
    .free = typed_free,
    .usable_size = typed_usable_size,
    .stats = typed_stats,
    .check = typed_check,
    .fill_count = typed_fill_count,
};

static void *hf_create(const void *arg, void *mem, size_t size)
{
    (void)arg;
    return rtm_halffit_create(mem, size);
}

static void hf_destroy(void *h)
{
    rtm_heap_destroy(rtm_halffit_heap(h));
}

static void *hf_alloc(void *h, size_t size)
{
    return rtm_halffit_alloc(h, size);
}

static int hf_free(void *h, void *p)
{
    return rtm_halffit_free(h, p);
}

static size_t hf_usable_size(void *h, const void *p)
{
    return rtm_halffit_usable_size(h, p);
}

static int hf_stats(void *h, struct rtm_heap_stats *out)
{
    return rtm_halffit_stats(h, out);
}

static int hf_check(void *h)
{
    return rtm_halffit_check(h);
}

static size_t hf_fill_count(void *h, size_t size)
{
    return rtm_heap_fill_count(rtm_halffit_heap(h), size);
}

static const struct tk_heap_ops hf_typed_ops = {
    .create = hf_create,
    .destroy = hf_destroy,
    .alloc = hf_alloc,
    .free = hf_free,
    .usable_size = hf_usable_size,
    .stats = hf_stats,
    .check = hf_check,
    .fill_count = hf_fill_count,
};

/* A kind added here needs its ops above, its calls and heap in bench
 * (pass.c) and its "api" name in bench's JSON (aggregate.c). */
static const char *const typed_kinds[] = { "tlsf", "halffit", NULL };

const char *const *tk_typed_kinds(void)
{
    return typed_kinds;
}

void tk_alloc_typed(struct tk_alloc *a, const char *kind)
{
    bool tlsf = strcmp(kind, "tlsf") == 0;
    memset(a, 0, sizeof(*a));
    a->from = TK_FROM_TYPED;
    a->kind = tlsf ? "tlsf" : "halffit";
    a->hardening = RTM_HEAP_HARDEN_O1;
    snprintf(a->name, sizeof(a->name), "%s(typed)", a->kind);
    set_bounded(a, tlsf ? &typed_ops : &hf_typed_ops, NULL);
    a->describe = tlsf ? "TLSF through its typed API, rtm_tlsf_*"
                       : "halffit through its typed API, rtm_halffit_*";
}

/* ---- glibc ------------------------------------------------------------------ */

static void *glibc_alloc(void *ctx, size_t size)
{
    (void)ctx;
    return malloc(size);
}

static int glibc_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
    return 0;
}

static size_t glibc_usable_size(void *ctx, const void *p)
{
    (void)ctx;
    return malloc_usable_size((void *)p);
}

void tk_alloc_glibc(struct tk_alloc *a)
{
    memset(a, 0, sizeof(*a));
    a->from = TK_FROM_GLIBC;
    snprintf(a->name, sizeof(a->name), "glibc");
    a->sort = TK_PROCESS;
    a->applies = 0;
    a->describe = "process allocator: glibc malloc/free, defaults (no mallopt)";
    a->origin = "glibc";
    a->usable_name = "malloc_usable_size";
    a->alloc = glibc_alloc;
    a->free = glibc_free;
    a->usable_size = glibc_usable_size;
}

/* ---- glibc-rt ---------------------------------------------------------------------- */

#define GLIBC_RT_SETTINGS                                                               \
    "mallopt M_MMAP_MAX 0, M_TRIM_THRESHOLD -1, M_ARENA_MAX 1; reserve prefaulted and " \
    "locked"

void tk_alloc_glibc_rt(struct tk_alloc *a)
{
    tk_alloc_glibc(a);
    snprintf(a->name, sizeof(a->name), "%s", TK_GLIBC_RT_NAME);
    a->describe = "process allocator: glibc malloc/free tuned for real time: " GLIBC_RT_SETTINGS
                  "; measured in a process of its own";
    a->own_process = true;
}

size_t tk_glibc_rt_reserve(size_t live_bytes, size_t live_blocks)
{
    /* glibc's chunk: the request and a size word, rounded up to two words
     * and at least four: less than the request and four words. */
    size_t per_block = 4 * sizeof(size_t);
    size_t r;
    if (__builtin_mul_overflow(live_blocks, per_block, &r) ||
        __builtin_add_overflow(r, live_bytes, &r) || __builtin_add_overflow(r, r / 4, &r) ||
        __builtin_add_overflow(r, (size_t)1 << 20, &r))
        return SIZE_MAX;
    return r;
}

/* glibc's heap (every arena's memory from brk or its heaps, not mmapped
 * chunks): with one arena and no mmap, all it has. */
static size_t glibc_heap_bytes(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    return mallinfo2().arena;
#elif defined(__GLIBC__)
    return (size_t)(unsigned)mallinfo().arena;
#else
    return 0;
#endif
}

int tk_glibc_rt_apply(struct tk_alloc *a, char *why, size_t why_len)
{
    /* What an earlier process's check found stays: the report gives the
     * most the heap grew in any of them. */
    struct tk_glibc_rt *g = &a->grt;
    g->applied = false;
    g->heap_bytes = 0;
    memset(g->why, 0, sizeof(g->why));
#ifdef TK_MALLOC_SANITIZED
    snprintf(g->why, sizeof(g->why), "this build's sanitizer replaces malloc");
#elif !defined(__GLIBC__)
    snprintf(g->why, sizeof(g->why), "the C library is not glibc");
#else
    if (mallopt(M_MMAP_MAX, 0) != 1 || mallopt(M_TRIM_THRESHOLD, -1) != 1 ||
        mallopt(M_ARENA_MAX, 1) != 1) {
        snprintf(g->why, sizeof(g->why), "mallopt refused a setting");
    } else {
        volatile unsigned char *p = a->reserve ? malloc(a->reserve) : NULL;
        if (a->reserve && !p) {
            snprintf(g->why, sizeof(g->why), "its reserve of %zu bytes: out of memory", a->reserve);
        } else {
            long page = sysconf(_SC_PAGESIZE);
            for (size_t i = 0; i < a->reserve; i += page > 0 ? (size_t)page : 4096)
                p[i] = 1;
            /* locked here, whatever the tool locks: glibc keeps it */
            g->locked = a->reserve && mlock((const void *)p, a->reserve) == 0;
            free((void *)p);
            g->heap_bytes = glibc_heap_bytes();
            g->applied = true;
        }
    }
#endif
    if (g->applied)
        return 0;
    snprintf(why, why_len, "%s: %s", a->name, g->why);
    return -1;
}

void tk_glibc_rt_check(struct tk_alloc *a)
{
    if (!a->own_process || !a->grt.applied)
        return;
    size_t now = glibc_heap_bytes();
    size_t grown = now > a->grt.heap_bytes ? now - a->grt.heap_bytes : 0;
    if (!a->grt.checked || grown > a->grt.grown_bytes)
        a->grt.grown_bytes = grown;
    a->grt.checked = true;
}

const char *tk_glibc_rt_outcome(const struct tk_alloc *a, char *buf, size_t size)
{
    char r[32], g[32];
    const struct tk_glibc_rt *t = &a->grt;
    tk_fmt_bytes_short(r, sizeof(r), a->reserve);
    const char *how = t->locked ? "prefaulted and locked" : "prefaulted, NOT locked";
    if (!t->applied)
        snprintf(buf, size, "%s reserved: not applied: %s", r, t->why[0] ? t->why : "not measured");
    else if (!t->checked)
        snprintf(buf, size, "%s reserved, %s", r, how);
    else if (t->grown_bytes == 0)
        snprintf(buf, size, "%s reserved, %s; it held: the heap never grew", r, how);
    else
        snprintf(buf, size, "%s reserved, %s; the heap grew %s past it", r, how,
                 tk_fmt_bytes_short(g, sizeof(g), t->grown_bytes));
    return buf;
}

void tk_glibc_rt_json(struct tk_json *j, const struct tk_alloc *a)
{
    if (!tk_json_key_or_null(j, "glibc_rt", a && a->own_process))
        return;
    const struct tk_glibc_rt *t = &a->grt;
    tk_json_begin_object(j);
    tk_json_kv_string(j, "settings", GLIBC_RT_SETTINGS);
    tk_json_kv_uint(j, "reserve_bytes", a->reserve);
    tk_json_kv_bool(j, "applied", t->applied);
    tk_json_kv_bool(j, "locked", t->locked);
    if (tk_json_key_or_null(j, "why", !t->applied))
        tk_json_string(j, t->why[0] ? t->why : "not measured");
    tk_json_kv_uint(j, "heap_bytes", t->heap_bytes);
    if (tk_json_key_or_null(j, "grown_bytes", t->checked))
        tk_json_uint(j, t->grown_bytes);
    tk_json_end_object(j);
}

/* ---- heaps of usable size H ----------------------------------------------- */

/* usable_bytes and the rest of the statistics of a heap on the first m bytes
 * of the arena, or false if the kind refuses m. Leaves no heap behind. */
static bool probe_create(const struct tk_alloc *a, struct tk_arena *ar, size_t m,
                         struct rtm_heap_stats *st)
{
    void *h = a->hops->create(a->hops_arg, ar->mem, m);
    if (!h)
        return false;
    memset(st, 0, sizeof(*st)); /* a plugin may leave fields unwritten */
    int rc = a->hops->stats(h, st);
    a->hops->destroy(h);
    return rc == 0;
}

static size_t usable_at(const struct tk_alloc *a, struct tk_arena *ar, size_t m)
{
    struct rtm_heap_stats st;
    return probe_create(a, ar, m, &st) ? st.usable_bytes : 0;
}

/* Smallest M in the arena with usable_bytes(M) >= H. usable_bytes never
 * decreases as M grows, so: double until it is reached, then bisect. */
static int search_mem(const struct tk_alloc *a, struct tk_arena *ar, size_t h, size_t *m_out)
{
    size_t lo = 0, hi = h < ar->bytes ? h : ar->bytes; /* usable(0) < H */
    while (hi < ar->bytes && usable_at(a, ar, hi) < h) {
        lo = hi;
        hi = hi > ar->bytes / 2 ? ar->bytes : hi * 2;
    }
    if (usable_at(a, ar, hi) < h)
        return -ENOSPC;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (usable_at(a, ar, mid) >= h)
            hi = mid;
        else
            lo = mid;
    }
    *m_out = hi;
    return 0;
}

static void cache_size(struct tk_alloc *a, const struct tk_heap_info *info)
{
    if (a->n_cache < TK_SIZE_CACHE)
        a->cache[a->n_cache++] = *info;
}

/* A heap without statistics: H bytes of memory, if create takes them. */
static int size_by_memory(struct tk_alloc *a, struct tk_arena *ar, size_t h,
                          struct tk_heap_info *info)
{
    if (h > ar->bytes)
        return -ENOSPC;
    errno = 0;
    void *heap = a->hops->create(a->hops_arg, ar->mem, h);
    if (!heap)
        return -(errno ? errno : ENOMEM);
    a->hops->destroy(heap);
    info->mem_bytes = h;
    info->usable_bytes = h;
    info->exact = true;
    info->sized_by_memory = true;
    cache_size(a, info);
    return 0;
}

int tk_alloc_size(struct tk_alloc *a, struct tk_arena *ar, size_t heap_bytes,
                  struct tk_heap_info *info)
{
    memset(info, 0, sizeof(*info));
    info->asked_bytes = heap_bytes;
    if (a->sort == TK_PROCESS) {
        info->usable_bytes = heap_bytes;
        info->exact = true;
        return 0;
    }
    for (size_t i = 0; i < a->n_cache; i++)
        if (a->cache[i].asked_bytes == heap_bytes) {
            *info = a->cache[i];
            return 0;
        }
    if (!(a->applies & TK_APPLY_STATS))
        return size_by_memory(a, ar, heap_bytes, info);
    size_t m;
    int rc = search_mem(a, ar, heap_bytes, &m);
    if (rc != 0)
        return rc;
    struct rtm_heap_stats st;
    errno = 0;
    if (!probe_create(a, ar, m, &st))
        return -(errno ? errno : EINVAL);
    info->mem_bytes = m;
    info->usable_bytes = st.usable_bytes;
    info->overhead_bytes = st.overhead_bytes;
    info->largest_free_bytes = st.largest_free_bytes;
    info->exact = st.usable_bytes == heap_bytes;
    cache_size(a, info);
    return 0;
}

int tk_alloc_create(struct tk_alloc *a, struct tk_arena *ar, size_t heap_bytes)
{
    int rc = tk_alloc_size(a, ar, heap_bytes, &a->cur);
    if (rc != 0)
        return rc;
    a->live = true;
    if (a->sort == TK_PROCESS)
        return 0;
    a->arena = ar;
    errno = 0;
    a->ctx = a->hops->create(a->hops_arg, ar->mem, a->cur.mem_bytes);
    if (!a->ctx) {
        a->live = false;
        return -(errno ? errno : EINVAL);
    }
    return 0;
}

void tk_alloc_warm(struct tk_alloc *a, size_t size)
{
    if (a->sort != TK_PROCESS)
        return;
    void *p = a->alloc(a->ctx, size);
    if (p)
        a->free(a->ctx, p);
}

void tk_alloc_destroy(struct tk_alloc *a)
{
    if (a->sort == TK_HEAP && a->ctx)
        a->hops->destroy(a->ctx);
    if (a->sort == TK_HEAP)
        a->ctx = NULL;
    a->live = false;
}

int tk_alloc_stats(const struct tk_alloc *a, struct rtm_heap_stats *out)
{
    if (!(a->applies & TK_APPLY_STATS) || !a->live)
        return -ENOTSUP;
    memset(out, 0, sizeof(*out)); /* a plugin may leave fields unwritten */
    return a->hops->stats(a->ctx, out);
}

bool tk_alloc_held(const struct tk_alloc *a, size_t *out)
{
    if (!a->live || a->sort != TK_HEAP)
        return false;
    if (a->from == TK_FROM_RTMEM) {
        *out = rtm_heap_held_bytes(a->ctx);
        return true;
    }
    struct rtm_heap_stats st;
    if (tk_alloc_stats(a, &st) != 0)
        return false;
    *out = st.usable_bytes + st.overhead_bytes;
    return true;
}

int tk_alloc_check(const struct tk_alloc *a)
{
    if (!(a->applies & TK_APPLY_CHECK) || !a->hops->check || !a->live)
        return -ENOTSUP;
    return a->hops->check(a->ctx) == 0 ? 0 : -EFAULT;
}

size_t tk_alloc_fill_count(const struct tk_alloc *a, size_t size)
{
    if (!(a->applies & TK_APPLY_FILL_PROMISE) || !a->hops->fill_count || !a->live)
        return 0;
    return a->hops->fill_count(a->ctx, size);
}

bool tk_alloc_block_ok(const struct tk_alloc *a, const void *p, size_t size)
{
    if (!(a->applies & TK_APPLY_BOUNDS))
        return true;
    uintptr_t lo = (uintptr_t)a->arena->mem, hi = lo + a->cur.mem_bytes, at = (uintptr_t)p;
    return at >= lo && at <= hi && size <= hi - at && at % a->align == 0;
}

const char *tk_alloc_replay_words(const struct tk_alloc *a, char *buf, size_t size)
{
    char name[2 * sizeof(a->name)], plugin[1024] = "";
    tk_fmt_shell_word(name, sizeof(name), a->name);
    if (a->plugin_path)
        tk_fmt_shell_word(plugin, sizeof(plugin), a->plugin_path);
    snprintf(buf, size, "%s%s --kinds %s", a->plugin_path ? " --plugin " : "", plugin, name);
    return buf;
}
