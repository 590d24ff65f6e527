/* Arenas: transparent huge page advice, and the prefault. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

/* Whether the kernel has MADV_POPULATE_READ/_WRITE (Linux 5.14): an unknown
 * advice is refused (EINVAL) before the range is looked at, and an empty
 * range is then accepted. */
static bool have_madv_populate(void)
{
    return madvise(NULL, 0, MADV_POPULATE_READ) == 0;
}

bool rtm__arena_map_populates(const struct rtm__arena_plan *p)
{
    /* MAP_POPULATE ignores a page it cannot fault in: only where the
     * kernel has nothing better, and then the residency is checked. With
     * THP advice the population must follow the advice: not at mmap. */
    return p->cfg->prefault != RTM_ARENA_PREFAULT_NONE && p->cfg->thp == RTM_ARENA_THP_DEFAULT &&
           p->cfg->source != RTM_ARENA_SYSV_SHM && !have_madv_populate();
}

int rtm__arena_advise(struct rtm_arena *a, const struct rtm__arena_plan *p)
{
    if (p->cfg->thp == RTM_ARENA_THP_DEFAULT)
        return 0;
    int advice = p->cfg->thp == RTM_ARENA_THP_ON ? MADV_HUGEPAGE : MADV_NOHUGEPAGE;
    if (madvise(a->base, p->size, advice) != 0)
        return rtm__arena_fail(a, errno,
                               "madvise(%s) of %s refused (%s): the kernel has no transparent "
                               "huge pages (CONFIG_TRANSPARENT_HUGEPAGE), or not for this "
                               "mapping",
                               advice == MADV_HUGEPAGE ? "MADV_HUGEPAGE" : "MADV_NOHUGEPAGE",
                               p->what, strerror(errno));
    return 0;
}

/* Before Linux 5.14: each page read, or written with the value it holds by
 * an atomic compare-and-swap (which needs write access, as a store does,
 * and cannot undo a concurrent writer's store). */
static void prefault_by_hand(struct rtm_arena *a, const struct rtm__arena_plan *p, bool write)
{
    volatile unsigned char *c = a->base;
    for (size_t off = 0; off < p->size; off += p->base_page) {
        unsigned char v = c[off];
        if (write)
            while (!__atomic_compare_exchange_n(&c[off], &v, v, false, __ATOMIC_RELAXED,
                                                __ATOMIC_RELAXED))
                ;
    }
}

/* After MAP_POPULATE (kernels before 5.14), which ignores the pages it
 * could not fault in: every page must be present (smaps Rss), but where
 * reading private memory maps the shared zero page, which Rss does not
 * count. */
static int check_populated(struct rtm_arena *a, const struct rtm__arena_plan *p)
{
    struct rtm__arena_smaps sm;
    char b1[32], b2[32];
    rtm__arena_read_smaps(a->base, &sm);
    if (!sm.found || (!p->writable && !p->shared))
        return 0;
    if (sm.io_pfn) {
        rtm__arena_warn(a,
                        "prefault skipped: %s is a VM_IO/VM_PFNMAP mapping, which the kernel "
                        "cannot prefault and its driver maps itself",
                        p->what);
        return 0;
    }
    if (sm.rss >= p->size)
        return 0;
    return rtm__arena_fail(a, EFAULT,
                           "prefault of %s of %s left %s present (MAP_POPULATE: a page could not "
                           "be faulted in): part of the range lies past the end of what it maps, "
                           "or its filesystem (tmpfs, disk) is full",
                           rtm__arena_bytes_text(p->size, b1, sizeof b1), p->what,
                           rtm__arena_bytes_text(sm.rss, b2, sizeof b2));
}

int rtm__arena_prefault(struct rtm_arena *a, const struct rtm__arena_plan *p)
{
    int how = p->cfg->prefault;
    if (how == RTM_ARENA_PREFAULT_NONE)
        return 0;
    /* _POPULATE as MAP_POPULATE does it: writes for private memory only. */
    bool write = p->writable && (how == RTM_ARENA_PREFAULT_TOUCH || !p->shared);
    if (rtm__arena_map_populates(p)) {
        int rc = check_populated(a, p);
        if (!rc && write && p->shared)
            prefault_by_hand(a, p, true);
        return rc;
    }
    if (madvise(a->base, p->size, write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ) == 0)
        return 0;
    int err = errno;
    char b[32];
    const char *size = rtm__arena_bytes_text(p->size, b, sizeof b);
    switch (err) {
    case EINVAL: {
        struct rtm__arena_smaps sm;
        rtm__arena_read_smaps(a->base, &sm);
        if (sm.io_pfn) {
            rtm__arena_warn(a,
                            "prefault skipped: %s is a VM_IO/VM_PFNMAP mapping, which the kernel "
                            "cannot prefault and its driver maps itself",
                            p->what);
            return 0;
        }
        /* Before Linux 5.14, with THP advice or a SysV segment: by hand. */
        prefault_by_hand(a, p, write);
        return 0;
    }
    case EFAULT:
        return rtm__arena_fail(a, err,
                               "prefault of %s of %s failed (EFAULT: a page could not be faulted "
                               "in): part of the range lies past the end of what it maps, or its "
                               "filesystem (tmpfs, disk) is full, or its huge page pool is empty",
                               size, p->what);
    case ENOMEM:
        return rtm__arena_fail(a, err, "prefault of %s of %s: out of memory", size, p->what);
    default:
        return rtm__arena_fail(a, err, "prefault of %s of %s failed: %s", size, p->what,
                               strerror(err));
    }
}

/* The bracketed choice of a THP setting file ("always [madvise] never"). */
static void thp_setting(const char *file, char *buf, size_t size)
{
    char path[96];
    struct rtm__arena_lines l;
    snprintf(path, sizeof path, "/sys/kernel/mm/transparent_hugepage/%s", file);
    snprintf(buf, size, "unknown");
    if (!rtm__arena_lines_open(&l, path))
        return;
    const char *line = rtm__arena_lines_next(&l);
    const char *left = line ? strchr(line, '[') : NULL, *right = left ? strchr(left, ']') : NULL;
    if (left && right)
        snprintf(buf, size, "%.*s", (int)(right - left - 1), left + 1);
    rtm__arena_lines_close(&l);
}

void rtm__arena_thp_judge(struct rtm_arena *a, const struct rtm__arena_plan *p,
                          const struct rtm__arena_smaps *sm)
{
    if (p->cfg->thp != RTM_ARENA_THP_ON || !sm->found || sm->rss == 0 || p->size < (2u << 20))
        return;
    if (sm->anon_huge + sm->shmem_pmd + sm->file_pmd > 0)
        return;
    int source = p->cfg->source;
    if (source == RTM_ARENA_FILE || source == RTM_ARENA_DEVICE) {
        rtm__arena_warn(a,
                        "THP asked, none obtained: whether %s can take huge pages is up to "
                        "its filesystem or driver",
                        p->what);
        return;
    }
    char setting[32];
    const char *file = p->shared ? "shmem_enabled" : "enabled";
    thp_setting(file, setting, sizeof setting);
    rtm__arena_warn(a, "THP asked, none obtained: /sys/kernel/mm/transparent_hugepage/%s is [%s]%s",
                    file, setting,
                    p->shared ? " (shared memory takes huge pages with advise, within_size or "
                                "always)"
                              : " (or no free 2 MiB of memory could be assembled)");
}
