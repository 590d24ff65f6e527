/*
 * Bench kit: the caches of one CPU from sysfs (caches.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/caches.h"
#include "common/out.h"

/* Directories index0, index1, ... looked at: more than any CPU has. */
#define MAX_INDEX 16
/* The longest line taken from sysfs. */
#define MAX_LINE  1024u

/* The first line of dir/name into buf, without its newline; false if it
 * cannot be read. */
static bool read_line(const char *dir, const char *name, char *buf, size_t size)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool ok = fgets(buf, (int)size, f) != NULL;
    fclose(f);
    if (ok)
        buf[strcspn(buf, "\n")] = '\0';
    return ok;
}

/* "32K", "1M", "512": bytes, 0 if it does not parse. */
static uint64_t parse_size(const char *s)
{
    static const char suffixes[] = "KMG";
    if (*s < '0' || *s > '9')
        return 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    const char *u = *end ? strchr(suffixes, *end) : NULL;
    unsigned shift = u ? 10u * (unsigned)(u - suffixes + 1) : 0;
    if (u)
        end++;
    if (*end != '\0' || v > (UINT64_MAX >> shift))
        return 0;
    return (uint64_t)v << shift;
}

static unsigned parse_uint(const char *s)
{
    if (*s < '0' || *s > '9')
        return 0;
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    return *end == '\0' && v <= 1u << 20 ? (unsigned)v : 0;
}

static int type_rank(const char *type)
{
    if (strcmp(type, "Data") == 0)
        return 0;
    if (strcmp(type, "Instruction") == 0)
        return 1;
    return 2;
}

static bool holds_data(const struct tk_cache *c)
{
    return strcmp(c->type, "Instruction") != 0;
}

bool tk_cache_sized_data(const struct tk_cache *c)
{
    return holds_data(c) && c->bytes > 0;
}

/* One indexI directory into *c; false if it has no level. */
static bool read_index(const char *dir, struct tk_cache *c)
{
    char v[128];
    memset(c, 0, sizeof(*c));
    if (!read_line(dir, "level", v, sizeof(v)) || (c->level = parse_uint(v)) == 0)
        return false;
    if (!read_line(dir, "type", c->type, sizeof(c->type)))
        snprintf(c->type, sizeof(c->type), "Unknown");
    if (read_line(dir, "size", v, sizeof(v)))
        c->bytes = parse_size(v);
    if (read_line(dir, "coherency_line_size", v, sizeof(v)))
        c->line_bytes = parse_uint(v);
    if (!read_line(dir, "shared_cpu_list", c->shared, sizeof(c->shared)))
        c->shared[0] = '\0';
    const char *suffix = strcmp(c->type, "Data") == 0          ? "d"
                         : strcmp(c->type, "Instruction") == 0 ? "i"
                                                               : "";
    snprintf(c->name, sizeof(c->name), "L%u%s", c->level, suffix);
    return true;
}

static int compare_caches(const void *a, const void *b)
{
    const struct tk_cache *x = a, *y = b;
    if (x->level != y->level)
        return x->level < y->level ? -1 : 1;
    return type_rank(x->type) - type_rank(y->type);
}

void tk_caches_read(struct tk_caches *c, int cpu)
{
    memset(c, 0, sizeof(*c));
    c->cpu = cpu;
    const char *root = getenv(TK_CACHES_SYSFS_ENV);
    snprintf(c->dir, sizeof(c->dir), "%s", root && *root ? root : TK_CACHES_SYSFS_DEFAULT);
    for (int i = 0; i < MAX_INDEX && c->n < TK_CACHES_MAX; i++) {
        char dir[400];
        snprintf(dir, sizeof(dir), "%s/cpu%d/cache/index%d", c->dir, cpu, i);
        if (read_index(dir, &c->caches[c->n]))
            c->n++;
    }
    qsort(c->caches, c->n, sizeof(c->caches[0]), compare_caches);
    c->read = c->n > 0;

    const struct tk_cache *l1d = tk_caches_l1d(c);
    c->line_bytes = l1d ? l1d->line_bytes : 0;
    for (size_t i = 0; i < c->n && !c->line_bytes; i++)
        if (holds_data(&c->caches[i]))
            c->line_bytes = c->caches[i].line_bytes;
    /* A line a walk can use: a power of two from a pointer to MAX_LINE. */
    unsigned l = c->line_bytes;
    if (l < sizeof(void *) || l > MAX_LINE || (l & (l - 1)) != 0) {
        c->line_bytes = TK_CACHE_DEFAULT_LINE;
        c->line_assumed = true;
    }
}

const struct tk_cache *tk_caches_llc(const struct tk_caches *c)
{
    const struct tk_cache *llc = NULL;
    for (size_t i = 0; i < c->n; i++)
        if (tk_cache_sized_data(&c->caches[i]) && (!llc || c->caches[i].bytes >= llc->bytes))
            llc = &c->caches[i];
    return llc;
}

const struct tk_cache *tk_caches_l1d(const struct tk_caches *c)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->caches[i].level == 1 && holds_data(&c->caches[i]))
            return &c->caches[i];
    return NULL;
}

const char *tk_caches_level_of(const struct tk_caches *c, uint64_t bytes)
{
    bool any = false;
    for (size_t i = 0; i < c->n; i++) {
        const struct tk_cache *k = &c->caches[i];
        if (!tk_cache_sized_data(k))
            continue;
        any = true;
        if (bytes <= k->bytes)
            return k->name;
    }
    return any ? "memory" : "unknown";
}

const struct tk_cache *tk_caches_level(const struct tk_caches *c, unsigned level)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->caches[i].level == level && holds_data(&c->caches[i]))
            return &c->caches[i];
    return NULL;
}

const char *tk_caches_describe(char *buf, size_t size, const struct tk_caches *c)
{
    char b[32];
    size_t len = (size_t)snprintf(buf, size, "cpu %d: ", c->cpu);
    if (!c->read && len < size)
        len += (size_t)snprintf(buf + len, size - len,
                                "UNKNOWN: no cache is listed in %s/cpu%d/cache", c->dir, c->cpu);
    for (size_t i = 0; i < c->n && len < size; i++) {
        const struct tk_cache *k = &c->caches[i];
        len += (size_t)snprintf(buf + len, size - len, "%s%s %s", i ? ", " : "", k->name,
                                k->bytes ? tk_fmt_iec(b, sizeof(b), k->bytes) : "(size unknown)");
        /* A cache shared with other CPUs is shared with their work too. */
        if (k->shared[0] && strpbrk(k->shared, ",-") && len < size)
            len += (size_t)snprintf(buf + len, size - len, " (shared by cpus %s)", k->shared);
    }
    return buf;
}
