/*
 * `rtmem replay`: a trace turned into a replay program.
 *
 * The trace's events, in the process-wide order, become calls on block
 * ids: each block handed out gets the next id, and a free or realloc names
 * the id its address had then. What the program did that a replay must not
 * do is left out and counted: an allocation that failed (the program got
 * NULL), a free of a block the trace never saw handed out (one from before
 * the recorder, or from another allocator). A realloc's old block stops
 * being the program's at its seq0, before the call: a block another thread
 * was handed at that address in between (a race of the recording) then
 * takes the address, and the realloc still names its old id.
 *
 * With a phase, the program is the phase alone: first the blocks live when
 * it begins, made in id order (untimed: they are the state the phase finds),
 * then the phase's calls up to the next mark.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/u64map.h"
#include "replay.h"

struct builder {
    struct replay_program *p;
    size_t cap;
    uint64_t *id_size, *id_align; /* per id, as it was made */
    size_t id_cap;
    uint64_t live; /* bytes asked by live blocks */
    bool oom;
};

static bool push(struct builder *b, struct rop op)
{
    struct replay_program *p = b->p;
    if (p->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        struct rop *ops = realloc(p->ops, cap * sizeof(*ops));
        if (!ops) {
            b->oom = true;
            return false;
        }
        p->ops = ops;
        b->cap = cap;
    }
    p->ops[p->n++] = op;
    return true;
}

/* A new id for a block of size bytes. RO_NONE when out of memory. */
static uint32_t new_id(struct builder *b, uint64_t size, uint64_t align)
{
    struct replay_program *p = b->p;
    if (p->n_ids == b->id_cap) {
        size_t cap = b->id_cap ? b->id_cap * 2 : 4096;
        uint64_t *s = realloc(b->id_size, cap * sizeof(*s));
        if (s)
            b->id_size = s;
        uint64_t *a = s ? realloc(b->id_align, cap * sizeof(*a)) : NULL;
        if (a)
            b->id_align = a;
        if (!s || !a || cap >= RO_NONE) {
            b->oom = true;
            return RO_NONE;
        }
        b->id_cap = cap;
    }
    b->id_size[p->n_ids] = size;
    b->id_align[p->n_ids] = align;
    return p->n_ids++;
}

static void note_live(struct builder *b)
{
    if (b->live > b->p->peak_live) {
        b->p->peak_live = b->live;
        b->p->peak_op = b->p->n - 1;
    }
}

/* A block ends: its bytes leave the live count. */
static void ends(struct builder *b, uint32_t id)
{
    b->live -= b->id_size[id];
}

/* Block id ends at event e: a free in the program (emit). */
static void free_block(struct builder *b, const struct tk_trace_event *e, uint32_t id, bool emit)
{
    ends(b, id);
    if (emit && push(b, (struct rop){
                            .op = RO_FREE, .timed = 1, .tid = e->tid, .t_ns = e->t_ns, .id = id }))
        b->p->frees++;
}

/* The alignment an allocating event asks, 0 for none of its own. */
static uint64_t align_of(const struct tk_trace_event *e)
{
    switch (e->op) {
    case RTM_TRACE_MEMALIGN:
    case RTM_TRACE_POSIX_MEMALIGN:
    case RTM_TRACE_ALIGNED_ALLOC:
    case RTM_TRACE_VALLOC:
    case RTM_TRACE_PVALLOC: break;
    default: return 0;
    }
    /* glibc's memalign takes any alignment and rounds it up to a power of
     * two (of at least a pointer's size), as the replay must: an aligned
     * allocation elsewhere takes only those */
    uint64_t a = sizeof(void *);
    while (a < e->align && a < ((uint64_t)1 << 62))
        a <<= 1;
    return a;
}

/* One event into the program (emit) or only into the state (!emit). A
 * realloc's old block was taken out of addr at its seq0 (old: its id, or
 * TK_U64MAP_NONE). */
static void event(struct builder *b, struct tk_u64map *addr, const struct tk_trace_event *e,
                  bool emit, uint64_t old)
{
    struct replay_program *p = b->p;
    uint64_t replaced;
    switch (e->op) {
    case RTM_TRACE_FREE: {
        uint64_t id = tk_u64map_take(addr, e->given);
        if (id == TK_U64MAP_NONE) {
            p->unknown_frees += emit && e->given;
            return;
        }
        free_block(b, e, (uint32_t)id, emit);
        return;
    }
    case RTM_TRACE_REALLOC:
    case RTM_TRACE_REALLOCARRAY: {
        if (e->given && old == TK_U64MAP_NONE)
            p->unknown_frees += emit; /* the old block from before: a malloc now */
        if (!e->ret) {
            if (e->size == 0 && old != TK_U64MAP_NONE) { /* realloc(p, 0) freed p */
                free_block(b, e, (uint32_t)old, emit);
                return;
            }
            p->failed_in_trace += emit;
            if (old != TK_U64MAP_NONE && !tk_u64map_put(addr, e->given, old, &replaced))
                b->oom = true; /* a failed realloc keeps its block */
            return;
        }
        uint32_t id = new_id(b, e->size, 0);
        if (id == RO_NONE)
            return;
        if (!tk_u64map_put(addr, e->ret, id, &replaced)) {
            b->oom = true;
            return;
        }
        if (replaced != TK_U64MAP_NONE)
            p->reused_live += emit; /* its old id stays live: never freed in the replay */
        if (old != TK_U64MAP_NONE)
            ends(b, (uint32_t)old);
        b->live += e->size;
        if (emit && push(b, (struct rop){ .op = RO_REALLOC,
                                          .timed = 1,
                                          .tid = e->tid,
                                          .t_ns = e->t_ns,
                                          .id = id,
                                          .old = old == TK_U64MAP_NONE ? RO_NONE : (uint32_t)old,
                                          .size = e->size })) {
            p->allocs++;
            note_live(b);
        }
        return;
    }
    default: break;
    }
    if (!tk_trace_op_allocates(e->op))
        return;
    if (!e->ret) {
        p->failed_in_trace += emit;
        return;
    }
    uint64_t align = align_of(e), size = e->size;
    if (e->op == RTM_TRACE_PVALLOC && align) /* pvalloc: whole pages */
        size = (size + align - 1) / align * align;
    uint32_t id = new_id(b, size, align);
    if (id == RO_NONE)
        return;
    if (!tk_u64map_put(addr, e->ret, id, &replaced)) {
        b->oom = true;
        return;
    }
    if (replaced != TK_U64MAP_NONE)
        p->reused_live += emit; /* its old id stays live: never freed in the replay */
    b->live += size;
    if (emit && push(b, (struct rop){ .op = align ? RO_ALIGNED : RO_ALLOC,
                                      .timed = 1,
                                      .tid = e->tid,
                                      .t_ns = e->t_ns,
                                      .id = id,
                                      .size = size,
                                      .align = align })) {
        p->allocs++;
        note_live(b);
    }
}

/* Event i, after the old blocks of the reallocs whose seq0 comes before
 * it are taken out of addr (kept in taken until their realloc comes). */
static void step(struct builder *b, struct tk_u64map *addr, struct tk_u64map *taken,
                 const struct tk_trace *t, const size_t *order, size_t n_order, size_t *next,
                 size_t i, bool emit)
{
    const struct tk_trace_event *e = &t->ev[i];
    uint64_t replaced;
    while (*next < n_order && t->ev[order[*next]].seq0 < e->seq) {
        size_t j = order[(*next)++];
        uint64_t id = tk_u64map_take(addr, t->ev[j].given);
        if (id != TK_U64MAP_NONE && !tk_u64map_put(taken, (uint64_t)j + 2, id, &replaced))
            b->oom = true;
    }
    uint64_t old = TK_U64MAP_NONE;
    if ((e->op == RTM_TRACE_REALLOC || e->op == RTM_TRACE_REALLOCARRAY) && e->given)
        old = tk_u64map_take(taken, (uint64_t)i + 2);
    event(b, addr, e, emit, old);
}

/* The preamble of a phase: the blocks live at its start, in id order. */
struct live_list {
    uint32_t *ids;
    size_t n;
};

static void collect(uint64_t key, uint64_t value, void *arg)
{
    (void)key;
    struct live_list *l = arg;
    l->ids[l->n++] = (uint32_t)value;
}

static int by_id(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The blocks live at the phase's start: those at an address, and those a
 * realloc in flight across the mark has taken out already (its seq0 before
 * the mark, its seq after). */
static bool preamble(struct builder *b, struct tk_u64map *addr, struct tk_u64map *taken)
{
    struct live_list l = { malloc((addr->n + taken->n + 1) * sizeof(uint32_t)), 0 };
    if (!l.ids)
        return false;
    tk_u64map_each(addr, collect, &l);
    tk_u64map_each(taken, collect, &l);
    qsort(l.ids, l.n, sizeof(*l.ids), by_id);
    b->live = 0; /* counted again as they are made */
    for (size_t i = 0; i < l.n && !b->oom; i++) {
        uint32_t id = l.ids[i];
        uint64_t align = b->id_align[id];
        b->live += b->id_size[id];
        push(b, (struct rop){ .op = align ? RO_ALIGNED : RO_ALLOC,
                              .timed = 0,
                              .id = id,
                              .size = b->id_size[id],
                              .align = align });
        note_live(b);
    }
    free(l.ids);
    b->p->preamble = b->p->n;
    return !b->oom;
}

/* Threads that allocate or free among events [from, to): each one needs
 * the heap, and a lock when there are two. */
static size_t allocating_threads(const struct tk_trace *t, size_t from, size_t to)
{
    uint32_t seen[64];
    size_t n = 0;
    for (size_t i = from; i < to; i++) {
        if (!tk_trace_op_allocates(t->ev[i].op) && t->ev[i].op != RTM_TRACE_FREE)
            continue;
        bool known = false;
        for (size_t k = 0; k < n && !known; k++)
            known = seen[k] == t->ev[i].tid;
        if (!known && n < sizeof(seen) / sizeof(seen[0]))
            seen[n++] = t->ev[i].tid;
    }
    return n;
}

int replay_program_build(const struct tk_trace *t, const char *phase, struct replay_program *p,
                         char *why, size_t why_len)
{
    memset(p, 0, sizeof(*p));
    struct builder b = { .p = p };
    struct tk_u64map addr = { 0 }, taken = { 0 }; /* taken: a realloc's index + 2 -> old id */
    size_t *order = NULL, n_order = 0, next = 0;
    if (tk_trace_realloc_order(t, &order, &n_order) != 0)
        b.oom = true;
    size_t from = 0, to = t->n;
    if (phase) {
        from = t->n;
        for (size_t i = 0; i < t->n && from == t->n; i++)
            if (t->ev[i].op == RTM_TRACE_MARK && strcmp(t->marks[t->ev[i].mark], phase) == 0)
                from = i;
        if (from == t->n) {
            snprintf(why, why_len, "no phase named '%s' in the trace", phase);
            free(order);
            return -1;
        }
        for (size_t i = from + 1; i < t->n && to == t->n; i++)
            if (t->ev[i].op == RTM_TRACE_MARK)
                to = i;
        for (size_t i = 0; i < from && !b.oom; i++)
            step(&b, &addr, &taken, t, order, n_order, &next, i, false);
        b.p->peak_live = 0;
        if (!b.oom)
            preamble(&b, &addr, &taken);
    }
    for (size_t i = from; i < to && !b.oom; i++)
        step(&b, &addr, &taken, t, order, n_order, &next, i, true);
    uint64_t start_ns = from < t->n ? t->ev[from].t_ns : 0;
    uint64_t end_ns = to < t->n ? t->ev[to].t_ns : t->end_ns;
    p->seconds = end_ns > start_ns ? (double)(end_ns - start_ns) / 1e9 : 0.0;
    p->threads = allocating_threads(t, from, to);
    for (size_t i = 0; i < p->n; i++) {
        if (p->ops[i].size > p->largest && p->ops[i].op != RO_FREE)
            p->largest = p->ops[i].size;
        if (p->ops[i].align > p->max_align)
            p->max_align = p->ops[i].align;
    }
    tk_u64map_free(&addr);
    tk_u64map_free(&taken);
    free(order);
    free(b.id_size);
    free(b.id_align);
    if (b.oom) {
        replay_program_free(p);
        snprintf(why, why_len, "out of memory for the replay program");
        return -1;
    }
    return 0;
}

int replay_program_limits(const struct replay_program *p, struct rtm_heap_limits *l)
{
    memset(l, 0, sizeof(*l));
    uint64_t *size_of = calloc(p->n_ids ? p->n_ids : 1, sizeof(*size_of));
    if (!size_of)
        return -1;
    uint64_t live = 0, most = 0, smallest = UINT64_MAX, largest = 0, align = 0;
    for (size_t i = 0; i < p->n; i++) {
        const struct rop *op = &p->ops[i];
        if (op->op == RO_FREE) {
            live -= size_of[op->id];
            size_of[op->id] = 0;
            continue;
        }
        uint64_t size = op->size ? op->size : 1; /* a request of 0 counts as 1 */
        if (live + size > most)                  /* a realloc's old block still counted */
            most = live + size;
        if (op->op == RO_REALLOC && op->old != RO_NONE) {
            live -= size_of[op->old];
            size_of[op->old] = 0;
        }
        live += size;
        size_of[op->id] = size;
        smallest = size < smallest ? size : smallest;
        largest = size > largest ? size : largest;
        if (op->op == RO_ALIGNED && op->align > align)
            align = op->align;
    }
    free(size_of);
    if (most > SIZE_MAX || largest == 0)
        return most > SIZE_MAX ? -1 : 0;
    l->max_live = (size_t)most;
    l->max_block = (size_t)largest;
    l->min_block = (size_t)smallest;
    l->max_align = align > RTM_HEAP_MIN_ALIGN && align <= SIZE_MAX ? (size_t)align : 0;
    return 0;
}

void replay_program_free(struct replay_program *p)
{
    free(p->ops);
    p->ops = NULL;
    p->n = 0;
}

/* ---- the run's other process images ------------------------------------------------ */

/* Whether s is ".<digits>" or ".<digits>.<digits>" (a child's or an exec's
 * suffix), and nothing more. */
static bool image_suffix(const char *s)
{
    for (int part = 0; part < 2; part++) {
        if (*s++ != '.' || !isdigit((unsigned char)*s))
            return false;
        while (isdigit((unsigned char)*s))
            s++;
        if (!*s)
            return true;
    }
    return false;
}

/* dir/name into out (dir "/" or "." as they are). */
static void join(char *out, size_t size, const char *dir, const char *name)
{
    size_t n = strlen(dir);
    snprintf(out, size, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name);
}

static bool regular(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* A regular file that starts as a trace does. */
static bool a_trace(const char *path)
{
    if (!regular(path))
        return false;
    FILE *f = fopen(path, "rb");
    char magic[8];
    bool yes = f && fread(magic, 1, sizeof(magic), f) == sizeof(magic) &&
               memcmp(magic, RTM_TRACE_MAGIC, sizeof(magic)) == 0;
    if (f)
        fclose(f);
    return yes;
}

void replay_find_others(struct replay *r, const char *path)
{
    r->n_others = 0;
    r->other[0] = '\0';
    char dir[PATH_MAX], base[NAME_MAX + 1], full[PATH_MAX + NAME_MAX + 2];
    const char *slash = strrchr(path, '/');
    const char *mine = slash ? slash + 1 : path;
    size_t dlen = slash ? (size_t)(slash - path) : 0;
    if (dlen >= sizeof(dir) || strlen(mine) >= sizeof(base))
        return;
    if (!slash)
        snprintf(dir, sizeof(dir), ".");
    else if (dlen == 0)
        snprintf(dir, sizeof(dir), "/");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)dlen, path);
    snprintf(base, sizeof(base), "%s", mine);
    /* A child's or an exec's own trace: its run's base is the first
     * image's file, when it is there. */
    for (char *dot = strchr(base, '.'); dot; dot = strchr(dot + 1, '.'))
        if (image_suffix(dot)) {
            char c = *dot;
            *dot = '\0';
            join(full, sizeof(full), dir, base);
            if (!a_trace(full))
                *dot = c;
            break;
        }
    size_t blen = strlen(base);
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, mine) == 0 || strncmp(e->d_name, base, blen) != 0 ||
            (e->d_name[blen] && !image_suffix(e->d_name + blen)))
            continue;
        join(full, sizeof(full), dir, e->d_name);
        if (a_trace(full) && r->n_others++ == 0)
            snprintf(r->other, sizeof(r->other), "%s", full);
    }
    closedir(d);
}

size_t replay_peak_blocks(const struct replay_program *p)
{
    size_t live = 0, peak = 0;
    for (size_t i = 0; i < p->n; i++) {
        const struct rop *op = &p->ops[i];
        if (op->op == RO_FREE)
            live -= live > 0;
        else if (op->op != RO_REALLOC || op->old == RO_NONE)
            live++;
        if (live > peak)
            peak = live;
    }
    return peak;
}
