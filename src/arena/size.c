/* Arenas: checking the config against its source, and sizing. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* The largest value of off_t. */
#define OFF_MAX ((uint64_t)((((uintmax_t)1 << (sizeof(off_t) * CHAR_BIT - 2)) - 1) * 2 + 1))

/* A created POSIX shm name ("/" and up to NAME_MAX bytes) and a created
 * file's last component are kept whole for the removal at close. */
_Static_assert(RTM_ARENA_NAME_BYTES >= NAME_MAX + 2, "a shm name and its NUL fit the arena's copy");

static const char *const source_names[] = { "anon",     "memfd", "posix_shm",
                                            "sysv_shm", "file",  "device" };

static bool is_power_of_two(size_t x)
{
    return x && (x & (x - 1)) == 0;
}

/* The flags each source takes. */
static unsigned flags_allowed(int source)
{
    switch (source) {
    case RTM_ARENA_POSIX_SHM:
    case RTM_ARENA_SYSV_SHM: return RTM_ARENA_EXISTING | RTM_ARENA_READ_ONLY;
    case RTM_ARENA_FILE:
    case RTM_ARENA_DEVICE: return RTM_ARENA_EXISTING | RTM_ARENA_READ_ONLY | RTM_ARENA_PRIVATE;
    default: return 0;
    }
}

static int check_name(struct rtm_arena *a, const struct rtm_arena_config *cfg)
{
    const char *n = cfg->name;
    switch (cfg->source) {
    case RTM_ARENA_POSIX_SHM:
        if (!n || n[0] != '/' || !n[1] || strchr(n + 1, '/'))
            return rtm__arena_fail(a, EINVAL,
                                   "a POSIX shm name is \"/name\": one slash, at the start "
                                   "(name given: %s%s%s)",
                                   n ? "\"" : "", n ? n : "none", n ? "\"" : "");
        if (strlen(n + 1) > NAME_MAX)
            return rtm__arena_fail(a, ENAMETOOLONG,
                                   "POSIX shm name longer than %d bytes after its slash", NAME_MAX);
        return 0;
    case RTM_ARENA_FILE:
    case RTM_ARENA_DEVICE:
        if (!n || !n[0])
            return rtm__arena_fail(a, EINVAL, "a %s arena needs a path in name",
                                   source_names[cfg->source]);
        return 0;
    case RTM_ARENA_MEMFD:
        /* memfd_create takes 249 bytes, "memfd:" then making 255. */
        if (n && strlen(n) > 249)
            return rtm__arena_fail(a, EINVAL, "a memfd name is at most 249 bytes");
        return 0;
    default: return 0;
    }
}

static int check_pages(struct rtm_arena *a, struct rtm__arena_plan *p)
{
    const struct rtm_arena_config *cfg = p->cfg;
    char b[32];
    p->page = p->base_page;
    if (cfg->page_bytes == 0 || cfg->page_bytes == p->base_page)
        return 0;
    if (!is_power_of_two(cfg->page_bytes) || cfg->page_bytes < p->base_page)
        return rtm__arena_fail(a, EINVAL,
                               "page_bytes %zu is not a page size: 0 (base pages of %s) or a "
                               "huge page size such as RTM_ARENA_PAGE_2M",
                               cfg->page_bytes, rtm__arena_bytes_text(p->base_page, b, sizeof b));
    switch (cfg->source) {
    case RTM_ARENA_ANON:
    case RTM_ARENA_MEMFD:
    case RTM_ARENA_SYSV_SHM: break;
    case RTM_ARENA_FILE: /* checked against the filesystem once the file is open */
        p->page = cfg->page_bytes;
        return 0;
    case RTM_ARENA_POSIX_SHM:
        return rtm__arena_fail(a, EINVAL,
                               "POSIX shm lives in /dev/shm (tmpfs), which has no huge pages: "
                               "use RTM_ARENA_MEMFD with page_bytes, or RTM_ARENA_FILE on a "
                               "hugetlbfs mount");
    default:
        return rtm__arena_fail(a, EINVAL,
                               "a device's page size is its driver's: page_bytes must be 0");
    }
    int rc = rtm__arena_huge_check(a, cfg->page_bytes);
    if (rc)
        return rc;
    p->page = cfg->page_bytes;
    p->hugetlb = true;
    if (cfg->thp != RTM_ARENA_THP_DEFAULT)
        return rtm__arena_fail(a, EINVAL,
                               "THP advice is for base pages; this arena asks for %s huge pages "
                               "from the hugetlb pool",
                               rtm__arena_bytes_text(p->page, b, sizeof b));
    return 0;
}

int rtm__arena_plan_init(struct rtm_arena *a, struct rtm__arena_plan *p,
                         const struct rtm_arena_config *cfg)
{
    memset(p, 0, sizeof(*p));
    p->cfg = cfg;
    long ps = sysconf(_SC_PAGESIZE);
    p->base_page = ps > 0 ? (size_t)ps : 4096;

    if (cfg->source < RTM_ARENA_ANON || cfg->source > RTM_ARENA_DEVICE)
        return rtm__arena_fail(a, EINVAL, "unknown source %d", cfg->source);
    const char *src = source_names[cfg->source];
    if (cfg->prefault < RTM_ARENA_PREFAULT_NONE || cfg->prefault > RTM_ARENA_PREFAULT_TOUCH)
        return rtm__arena_fail(a, EINVAL, "unknown prefault %d", cfg->prefault);
    if (cfg->lock < RTM_ARENA_LOCK_NONE || cfg->lock > RTM_ARENA_LOCK_MUST)
        return rtm__arena_fail(a, EINVAL, "unknown lock %d", cfg->lock);
    if (cfg->thp < RTM_ARENA_THP_DEFAULT || cfg->thp > RTM_ARENA_THP_OFF)
        return rtm__arena_fail(a, EINVAL, "unknown thp %d", cfg->thp);
    unsigned known = RTM_ARENA_EXISTING | RTM_ARENA_READ_ONLY | RTM_ARENA_PRIVATE;
    if (cfg->flags & ~known)
        return rtm__arena_fail(a, EINVAL, "unknown flags 0x%x", cfg->flags & ~known);
    if (cfg->flags & ~flags_allowed(cfg->source))
        return rtm__arena_fail(a, EINVAL, "flags 0x%x do not apply to the %s source",
                               cfg->flags & ~flags_allowed(cfg->source), src);
    bool existing = (cfg->flags & RTM_ARENA_EXISTING) || cfg->source == RTM_ARENA_DEVICE;
    if ((cfg->flags & RTM_ARENA_READ_ONLY) && !existing)
        return rtm__arena_fail(a, EINVAL,
                               "RTM_ARENA_READ_ONLY needs RTM_ARENA_EXISTING: a %s arena "
                               "created read-only could only ever hold zeros",
                               src);
    /* Permission bits only: shmget takes its flags in the same word (04000
     * is SHM_HUGETLB), and a created file has no use for setuid or sticky. */
    if (cfg->mode > 0777)
        return rtm__arena_fail(a, EINVAL, "mode 0%o is not made of permission bits (0777 at most)",
                               cfg->mode);
    if (cfg->offset && cfg->source != RTM_ARENA_FILE && cfg->source != RTM_ARENA_DEVICE)
        return rtm__arena_fail(a, EINVAL,
                               "an offset applies to files and devices, not to a %s "
                               "arena",
                               src);
    if (cfg->source == RTM_ARENA_SYSV_SHM && existing && cfg->sysv_key == 0)
        return rtm__arena_fail(a, EINVAL,
                               "an existing SysV segment is found by its key, and key 0 "
                               "(IPC_PRIVATE) names none");
    int rc = check_name(a, cfg);
    if (!rc)
        rc = check_pages(a, p);
    if (rc)
        return rc;

    p->writable = !(cfg->flags & RTM_ARENA_READ_ONLY);
    p->shared = !(cfg->flags & RTM_ARENA_PRIVATE) && cfg->source != RTM_ARENA_ANON;
    if (cfg->size_bytes == 0 && !existing)
        return rtm__arena_fail(a, EINVAL, "size_bytes is 0: a new %s arena needs a size", src);
    if (cfg->offset && !existing)
        return rtm__arena_fail(a, EINVAL,
                               "an offset applies to an existing file (a new one "
                               "starts at 0)");
    return rtm__arena_round(a, p);
}

int rtm__arena_round(struct rtm_arena *a, struct rtm__arena_plan *p)
{
    const struct rtm_arena_config *cfg = p->cfg;
    p->size = 0;
    if (cfg->size_bytes == 0)
        return 0; /* the object's size, once known (rtm__arena_fit) */
    if (cfg->size_bytes > SIZE_MAX - (p->page - 1))
        return rtm__arena_fail(a, EOVERFLOW,
                               "size_bytes %zu overflows when rounded up to the page size",
                               cfg->size_bytes);
    p->size = (cfg->size_bytes + p->page - 1) / p->page * p->page;
    if (cfg->offset > OFF_MAX || (uint64_t)p->size > OFF_MAX - cfg->offset)
        return rtm__arena_fail(a, EOVERFLOW, "offset %" PRIu64 " + size %zu overflows", cfg->offset,
                               p->size);
    p->offset = (off_t)cfg->offset;
    return 0;
}

int rtm__arena_fit(struct rtm_arena *a, struct rtm__arena_plan *p, uint64_t object_bytes)
{
    const struct rtm_arena_config *cfg = p->cfg;
    char b1[32], b2[32];
    if (cfg->offset % p->page)
        return rtm__arena_fail(a, EINVAL,
                               "offset %" PRIu64 " of %s is not a multiple of the "
                               "page size (%s)",
                               cfg->offset, p->what, rtm__arena_bytes_text(p->page, b1, sizeof b1));
    if (cfg->offset > OFF_MAX)
        return rtm__arena_fail(a, EOVERFLOW, "offset %" PRIu64 " overflows", cfg->offset);
    p->offset = (off_t)cfg->offset;
    if (cfg->offset >= object_bytes)
        return rtm__arena_fail(
            a, ENXIO, "offset %" PRIu64 " lies past the end of %s, which is %s long", cfg->offset,
            p->what, rtm__arena_bytes_text(object_bytes, b1, sizeof b1));
    uint64_t room = object_bytes - cfg->offset;
    if (p->size == 0) {
        /* The whole object from offset on, in whole pages: a partial last
         * page would be backed by nothing past the object's end. */
        uint64_t whole = room / p->page * p->page;
        if (whole == 0)
            return rtm__arena_fail(
                a, ENXIO, "%s holds less than one page (%s) after offset %" PRIu64, p->what,
                rtm__arena_bytes_text(p->page, b1, sizeof b1), cfg->offset);
        if (whole > SIZE_MAX)
            return rtm__arena_fail(a, EOVERFLOW, "%s is larger than the address space", p->what);
        p->size = (size_t)whole;
        return 0;
    }
    if ((uint64_t)p->size > room)
        return rtm__arena_fail(a, ENXIO,
                               "offset %" PRIu64 " + size %s lies past the end of %s, which is "
                               "%s long (an existing object is never extended)",
                               cfg->offset, rtm__arena_bytes_text(p->size, b1, sizeof b1), p->what,
                               rtm__arena_bytes_text(object_bytes, b2, sizeof b2));
    return 0;
}
