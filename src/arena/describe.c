/* Arenas: the report in words (rtm_arena_describe). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "internal.h"

static const char *name_of(int v, const char *const *names, int count)
{
    return v >= 0 && v < count ? names[v] : "?";
}

int rtm_arena_describe(const struct rtm_arena *a, char *buf, size_t size)
{
    static const char *const sources[] = { "anon",     "memfd", "posix_shm",
                                           "sysv_shm", "file",  "device" };
    static const char *const prefaults[] = { "none", "populate", "touch" };
    static const char *const locks[] = { "none", "try", "must" };
    static const char *const states[] = { "not locked", "locked", "hugetlb (never paged out)",
                                          "IGNORED (nothing locked)",
                                          "locked on fault (pages not present fault)" };
    static const char *const thps[] = { "default", "on", "off" };
    if (!a || (!buf && size) || (a->base && a->internal.self != a))
        return -EINVAL;
    const struct rtm_arena_report *r = &a->report;
    char b[7][32];
    if (!a->base)
        return snprintf(buf, size, "not open%s%s", a->message[0] ? ": " : "", a->message);
    /* The state whatever was asked: mlockall(MCL_FUTURE) locks unasked. */
    const char *lock_state = name_of(r->lock_state, states, 5);
    int n = snprintf(
        buf, size,
        "%s: %s of %s pages (%s asked), resident %s; prefault %s: %" PRIu64 " minor, %" PRIu64
        " major faults; lock %s: %s, VmLck %+" PRId64 " kB; THP %s: AnonHugePages %s, "
        "ShmemPmdMapped %s, FilePmdMapped %s%s%s%s",
        name_of(r->source, sources, 6), rtm__arena_bytes_text(r->size_bytes, b[0], 32),
        rtm__arena_bytes_text(r->page_bytes, b[1], 32),
        rtm__arena_bytes_text(r->page_bytes_asked, b[2], 32),
        rtm__arena_bytes_text(r->resident_bytes, b[3], 32), name_of(r->prefault, prefaults, 3),
        r->minor_faults, r->major_faults, name_of(r->lock, locks, 3), lock_state,
        r->locked_bytes / 1024, name_of(r->thp, thps, 3),
        rtm__arena_bytes_text(r->anon_huge_bytes, b[4], 32),
        rtm__arena_bytes_text(r->shmem_pmd_bytes, b[5], 32),
        rtm__arena_bytes_text(r->file_pmd_bytes, b[6], 32),
        r->verified ? "" : " (not verified against /proc)", a->message[0] ? "; " : "", a->message);
    return n;
}
