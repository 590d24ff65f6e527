/* Bench kit: reading a trace (trace.h). */
#include "common/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/child.h"

static const char *const op_names[RTM_TRACE_OPS] = {
    [RTM_TRACE_MALLOC] = "malloc",
    [RTM_TRACE_CALLOC] = "calloc",
    [RTM_TRACE_REALLOC] = "realloc",
    [RTM_TRACE_REALLOCARRAY] = "reallocarray",
    [RTM_TRACE_FREE] = "free",
    [RTM_TRACE_MEMALIGN] = "memalign",
    [RTM_TRACE_POSIX_MEMALIGN] = "posix_memalign",
    [RTM_TRACE_ALIGNED_ALLOC] = "aligned_alloc",
    [RTM_TRACE_VALLOC] = "valloc",
    [RTM_TRACE_PVALLOC] = "pvalloc",
    [RTM_TRACE_USABLE_SIZE] = "malloc_usable_size",
    [RTM_TRACE_MARK] = "mark",
};

const char *tk_trace_op_name(int op)
{
    return op > 0 && op < RTM_TRACE_OPS && op_names[op] ? op_names[op] : "?";
}

bool tk_trace_op_allocates(int op)
{
    return op != RTM_TRACE_FREE && op != RTM_TRACE_USABLE_SIZE && op != RTM_TRACE_MARK && op > 0 &&
           op < RTM_TRACE_OPS;
}

const char *tk_trace_ending_text(const struct tk_trace *t, char *buf, size_t size)
{
    char sig[64];
    switch (t->ending) {
    case TK_TRACE_EXITED:
        if (t->how >= 0)
            snprintf(buf, size, "exited, status %d", t->how);
        else
            snprintf(buf, size, "exited");
        break;
    case TK_TRACE_EXECED: snprintf(buf, size, "replaced by exec"); break;
    case TK_TRACE_SIGNALED:
        snprintf(buf, size, "cut by %s: whole up to there",
                 tk_signal_describe(t->how, sig, sizeof(sig)));
        break;
    case TK_TRACE_NO_END:
        snprintf(buf, size,
                 "cut: no end record (killed with SIGKILL, or crashed): whole up to its "
                 "last block");
        break;
    }
    return buf;
}

static int bad(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- decoding ------------------------------------------------------------------- */

struct cursor {
    const unsigned char *p, *end;
    bool failed;
};

static uint64_t get_u(struct cursor *c)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (c->p >= c->end) {
            c->failed = true;
            return 0;
        }
        unsigned char b = *c->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    c->failed = true; /* more than 64 bits */
    return 0;
}

static uint64_t get_p(struct cursor *c, uint64_t *prev)
{
    uint64_t z = get_u(c);
    uint64_t d = (z >> 1) ^ (uint64_t)-(int64_t)(z & 1); /* zigzag */
    *prev += d;
    return *prev;
}

static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

struct reading {
    struct tk_trace *t;
    size_t cap, cap_marks;
    uint64_t far_ticks, far_ns; /* the clock pair farthest from the start (ns since it) */
    char *why;
    size_t why_len;
};

static int grow(struct reading *r, size_t more)
{
    struct tk_trace *t = r->t;
    if (t->n + more <= r->cap)
        return 0;
    size_t cap = r->cap ? r->cap : 4096;
    while (cap < t->n + more)
        cap *= 2;
    struct tk_trace_event *ev = realloc(t->ev, cap * sizeof(*ev));
    if (!ev)
        return bad(r->why, r->why_len, "out of memory for %zu events", cap);
    t->ev = ev;
    r->cap = cap;
    return 0;
}

static int add_mark(struct reading *r, const unsigned char *name, size_t len, uint32_t *index)
{
    struct tk_trace *t = r->t;
    for (size_t i = 0; i < t->n_marks; i++)
        if (strlen(t->marks[i]) == len && memcmp(t->marks[i], name, len) == 0) {
            *index = (uint32_t)i;
            return 0;
        }
    if (t->n_marks == r->cap_marks) {
        size_t cap = r->cap_marks ? 2 * r->cap_marks : 16;
        void *m = realloc(t->marks, cap * sizeof(*t->marks));
        if (!m)
            return bad(r->why, r->why_len, "out of memory for phase names");
        t->marks = m;
        r->cap_marks = cap;
    }
    memcpy(t->marks[t->n_marks], name, len);
    t->marks[t->n_marks][len] = '\0';
    *index = (uint32_t)t->n_marks++;
    return 0;
}

/* The events of one EVENTS block: 0, or -1 (why: where it does not hold). */
static int read_events(struct reading *r, const struct rtm_trace_block *b, const unsigned char *pl,
                       uint64_t at)
{
    if (grow(r, b->n_events) != 0)
        return -1;
    struct cursor c = { pl, pl + b->payload_bytes, false };
    uint64_t seq = 0, t_ns = 0, prev_p = 0;
    for (uint32_t k = 0; k < b->n_events; k++) {
        if (c.p >= c.end)
            return bad(r->why, r->why_len,
                       "corrupt: the block at byte %llu holds fewer events than its %u",
                       (unsigned long long)at, b->n_events);
        struct tk_trace_event e = { .tid = b->tid };
        e.op = *c.p++;
        seq += get_u(&c);
        t_ns += get_u(&c);
        e.seq = e.seq0 = seq;
        e.t_ns = t_ns;
        uint64_t n;
        switch (e.op) {
        case RTM_TRACE_MALLOC:
            e.size = get_u(&c);
            e.ret = get_p(&c, &prev_p);
            break;
        case RTM_TRACE_VALLOC:
        case RTM_TRACE_PVALLOC:
            e.size = get_u(&c);
            e.ret = get_p(&c, &prev_p);
            e.align = r->t->h.page_bytes;
            break;
        case RTM_TRACE_CALLOC:
            n = get_u(&c);
            e.size = mul_sat(n, get_u(&c));
            e.ret = get_p(&c, &prev_p);
            break;
        case RTM_TRACE_REALLOC:
        case RTM_TRACE_REALLOCARRAY:
            e.given = get_p(&c, &prev_p);
            n = e.op == RTM_TRACE_REALLOCARRAY ? get_u(&c) : 1;
            e.size = mul_sat(n, get_u(&c));
            e.ret = get_p(&c, &prev_p);
            e.seq0 = e.seq - get_u(&c);
            if (e.seq0 > e.seq)
                c.failed = true;
            break;
        case RTM_TRACE_FREE: e.given = get_p(&c, &prev_p); break;
        case RTM_TRACE_MEMALIGN:
        case RTM_TRACE_ALIGNED_ALLOC:
            e.align = get_u(&c);
            e.size = get_u(&c);
            e.ret = get_p(&c, &prev_p);
            break;
        case RTM_TRACE_POSIX_MEMALIGN:
            e.align = get_u(&c);
            e.size = get_u(&c);
            e.ret = get_p(&c, &prev_p);
            e.value = get_u(&c);
            break;
        case RTM_TRACE_USABLE_SIZE:
            e.given = get_p(&c, &prev_p);
            e.value = get_u(&c);
            break;
        case RTM_TRACE_MARK: {
            uint64_t len = get_u(&c);
            if (c.failed || len > RTM_TRACE_MARK_MAX || len > (uint64_t)(c.end - c.p)) {
                c.failed = true;
                break;
            }
            if (add_mark(r, c.p, (size_t)len, &e.mark) != 0)
                return -1;
            c.p += len;
            break;
        }
        default:
            return bad(r->why, r->why_len,
                       "corrupt: unknown operation %u in the block at byte %llu", e.op,
                       (unsigned long long)at);
        }
        if (c.failed)
            return bad(r->why, r->why_len,
                       "corrupt: an event of the block at byte %llu runs past it",
                       (unsigned long long)at);
        r->t->ev[r->t->n++] = e;
    }
    return 0; /* bytes past them: an event being written when the process ended */
}

/* Event times from the clock's ticks to ns since the start, at the rate
 * of the farthest pair of readings. */
static void to_ns(struct reading *r)
{
    struct tk_trace *t = r->t;
    if (t->h.clock == RTM_TRACE_CLOCK_NS)
        return;
    double rate = r->far_ticks ? (double)r->far_ns / (double)r->far_ticks : 0.0;
    t->ns_per_tick = rate;
    for (size_t i = 0; i < t->n; i++)
        t->ev[i].t_ns = (uint64_t)((double)t->ev[i].t_ns * rate);
}

static int by_seq(const void *a, const void *b)
{
    const struct tk_trace_event *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* A reading of the events' clock and CLOCK_MONOTONIC: kept if it is the
 * farthest from the start yet. */
static void pair(struct reading *r, uint64_t ticks, uint64_t ns)
{
    const struct rtm_trace_header *h = &r->t->h;
    if (ticks > h->start_ticks && ns > h->start_ns && ticks - h->start_ticks > r->far_ticks) {
        r->far_ticks = ticks - h->start_ticks;
        r->far_ns = ns - h->start_ns;
    }
}

static bool all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

/* The end block in the first page, if the image wrote one. */
static int read_end(struct reading *r, const unsigned char *m, size_t size)
{
    struct tk_trace *t = r->t;
    struct rtm_trace_block b;
    struct rtm_trace_end e;
    t->ending = TK_TRACE_NO_END;
    if (size < RTM_TRACE_END_AT + sizeof b + sizeof e)
        return 0;
    memcpy(&b, m + RTM_TRACE_END_AT, sizeof b);
    if (b.type == 0)
        return 0;
    if ((b.type != RTM_TRACE_END && b.type != RTM_TRACE_CUT) || b.payload_bytes != sizeof e)
        return bad(r->why, r->why_len, "corrupt: the end block (byte %d) is not one",
                   RTM_TRACE_END_AT);
    memcpy(&e, m + RTM_TRACE_END_AT + sizeof b, sizeof e);
    t->end_ns = e.end_ns;
    pair(r, e.end_ticks, t->h.start_ns + e.end_ns);
    t->unrecorded = e.unrecorded;
    t->chunks = e.chunks;
    t->how = e.how;
    t->ending = b.type == RTM_TRACE_CUT ? TK_TRACE_SIGNALED
                : e.how == -2           ? TK_TRACE_EXECED
                                        : TK_TRACE_EXITED;
    return 0;
}

/* The chunks, from the first page's end to the file's. */
static int read_chunks(struct reading *r, const unsigned char *m, size_t size)
{
    struct tk_trace *t = r->t;
    size_t chunk = t->h.chunk_bytes;
    for (size_t at = t->h.page_bytes; at < size; at += chunk) {
        struct rtm_trace_block b;
        size_t room = size - at < chunk ? size - at : chunk;
        if (room < sizeof b) {
            if (!all_zero(m + at, room))
                t->torn_bytes += room;
            break;
        }
        memcpy(&b, m + at, sizeof b);
        if (b.type == 0)
            continue; /* reserved by a process that died before it published its header */
        if (b.type != RTM_TRACE_EVENTS)
            return bad(r->why, r->why_len, "corrupt: a chunk of type %u at byte %zu", b.type, at);
        if (b.space_bytes != chunk - sizeof b || b.payload_bytes > b.space_bytes ||
            (uint64_t)b.n_events * 3 > b.payload_bytes) /* an event takes 3 bytes or more */
            return bad(r->why, r->why_len,
                       "corrupt: the chunk at byte %zu says it holds %u bytes in %u of room", at,
                       b.payload_bytes, b.space_bytes);
        if (room < chunk && b.payload_bytes > room - sizeof b) {
            t->torn_bytes += room; /* the file ends inside its events */
            break;
        }
        pair(r, b.ticks, b.ns);
        if (read_events(r, &b, m + at + sizeof b, at) != 0)
            return -1;
    }
    return 0;
}

int tk_trace_read(const char *path, struct tk_trace *t, char *why, size_t why_len)
{
    memset(t, 0, sizeof(*t));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return bad(why, why_len, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return bad(why, why_len, "%s is not a regular file", path);
    }
    size_t size = (size_t)st.st_size;
    t->file_bytes = size;
    if (size < sizeof t->h) {
        close(fd);
        return bad(why, why_len, "%s is not an rtmem trace: %zu bytes, shorter than a header", path,
                   size);
    }
    const unsigned char *m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return bad(why, why_len, "cannot map %s: %s", path, strerror(errno));
    memcpy(&t->h, m, sizeof t->h);
    int rc = 0;
    if (memcmp(t->h.magic, RTM_TRACE_MAGIC, sizeof t->h.magic) != 0)
        rc = bad(why, why_len, "%s is not an rtmem trace (no %s at its start)", path,
                 RTM_TRACE_MAGIC);
    else if (t->h.byte_order != RTM_TRACE_BYTE_ORDER)
        rc = bad(why, why_len, "%s was written on a machine of the other byte order: read it there",
                 path);
    else if (t->h.version != RTM_TRACE_VERSION)
        rc = bad(why, why_len,
                 "%s is an rtmem trace of format version %u, this rtmem reads version %u", path,
                 t->h.version, RTM_TRACE_VERSION);
    else if (t->h.header_bytes != sizeof t->h)
        rc = bad(why, why_len, "corrupt: %s has a header of %u bytes, not %zu", path,
                 t->h.header_bytes, sizeof t->h);
    else if (t->h.page_bytes < 4096 || t->h.page_bytes > (1u << 20) ||
             (t->h.page_bytes & (t->h.page_bytes - 1)) || !t->h.chunk_bytes ||
             t->h.chunk_bytes % t->h.page_bytes || t->h.chunk_bytes > (64u << 20))
        rc = bad(why, why_len, "corrupt: %s gives a page of %u bytes and chunks of %u", path,
                 t->h.page_bytes, t->h.chunk_bytes);
    else if (t->h.clock != RTM_TRACE_CLOCK_NS && t->h.clock != RTM_TRACE_CLOCK_COUNTER)
        rc = bad(why, why_len, "corrupt: %s gives an unknown clock (%u)", path, t->h.clock);
    if (rc == 0) {
        struct reading r = { .t = t, .why = why, .why_len = why_len };
        pair(&r, t->h.calib_ticks, t->h.calib_ns);
        rc = read_end(&r, m, size);
        if (rc == 0)
            rc = read_chunks(&r, m, size);
        if (rc == 0)
            to_ns(&r);
    }
    munmap((void *)(uintptr_t)m, size);
    if (rc != 0) {
        tk_trace_free(t);
        return -1;
    }
    /* The process-wide order; an event of a seq already seen (only in a
     * damaged file) kept once. */
    if (t->n)
        qsort(t->ev, t->n, sizeof(*t->ev), by_seq);
    size_t kept = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (kept > 0 && t->ev[kept - 1].seq == t->ev[i].seq) {
            t->duplicates++;
            continue;
        }
        t->ev[kept++] = t->ev[i];
    }
    t->n = kept;
    if (t->ending == TK_TRACE_NO_END)
        t->end_ns = t->n ? t->ev[t->n - 1].t_ns : 0;
    return 0;
}

static const struct tk_trace *sorting; /* by_seq0's trace */

static int by_seq0(const void *a, const void *b)
{
    uint64_t x = sorting->ev[*(const size_t *)a].seq0, y = sorting->ev[*(const size_t *)b].seq0;
    return x < y ? -1 : x > y;
}

int tk_trace_realloc_order(const struct tk_trace *t, size_t **order, size_t *n)
{
    *order = NULL;
    *n = 0;
    size_t count = 0;
    for (size_t i = 0; i < t->n; i++)
        count += (t->ev[i].op == RTM_TRACE_REALLOC || t->ev[i].op == RTM_TRACE_REALLOCARRAY) &&
                 t->ev[i].given;
    if (!count)
        return 0;
    size_t *o = malloc(count * sizeof(*o));
    if (!o)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < t->n; i++)
        if ((t->ev[i].op == RTM_TRACE_REALLOC || t->ev[i].op == RTM_TRACE_REALLOCARRAY) &&
            t->ev[i].given)
            o[k++] = i;
    sorting = t;
    qsort(o, count, sizeof(*o), by_seq0);
    *order = o;
    *n = count;
    return 0;
}

void tk_trace_free(struct tk_trace *t)
{
    free(t->ev);
    free(t->marks);
    t->ev = NULL;
    t->marks = NULL;
    t->n = t->n_marks = 0;
}
