/* Arenas: huge pages from the hugetlb pool, and why the pool refused them. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

#define HUGEPAGES_DIR "/sys/kernel/mm/hugepages"

static void pool_dir(size_t page_bytes, char *buf, size_t size)
{
    snprintf(buf, size, HUGEPAGES_DIR "/hugepages-%zukB", page_bytes >> 10);
}

int rtm__arena_huge_check(struct rtm_arena *a, size_t page_bytes)
{
    struct stat st;
    char dir[96], b[32];
    if (stat(HUGEPAGES_DIR, &st) != 0)
        return 0; /* no sysfs to ask: the mapping itself will tell */
    pool_dir(page_bytes, dir, sizeof dir);
    if (stat(dir, &st) != 0)
        return rtm__arena_fail(a, EOPNOTSUPP,
                               "this kernel has no %s huge pages (no %s): the CPU lacks them, or "
                               "the kernel was built without them",
                               rtm__arena_bytes_text(page_bytes, b, sizeof b), dir);
    return 0;
}

int rtm__arena_huge_bits(size_t page_bytes)
{
    int log2 = 0;
    while (((size_t)1 << log2) < page_bytes)
        log2++;
    return log2 << 26; /* MAP_HUGE_SHIFT, MFD_HUGE_SHIFT and SHM_HUGE_SHIFT */
}

/* Hugepagesize of /proc/meminfo (the size /proc/sys/vm/nr_hugepages
 * reserves), in bytes; 0 if unknown. */
static uint64_t default_huge_page(void)
{
    struct rtm__arena_lines l;
    if (!rtm__arena_lines_open(&l, "/proc/meminfo"))
        return 0;
    uint64_t kb = 0;
    for (const char *line; (line = rtm__arena_lines_next(&l)) != NULL;)
        if (sscanf(line, "Hugepagesize: %" SCNu64, &kb) == 1)
            break;
    rtm__arena_lines_close(&l);
    return kb << 10;
}

int rtm__arena_huge_fail(struct rtm_arena *a, const struct rtm__arena_plan *p, int err,
                         const char *call)
{
    char dir[96], path[128], file[192], b[32];
    pool_dir(p->page, dir, sizeof dir);
    const char *size = rtm__arena_bytes_text(p->page, b, sizeof b);
    uint64_t nr = 0, free_pages = 0, resv = 0, over = 0;
    snprintf(path, sizeof path, "%s/nr_hugepages", dir);
    bool known = rtm__arena_read_u64(path, &nr);
    snprintf(path, sizeof path, "%s/free_hugepages", dir);
    known = rtm__arena_read_u64(path, &free_pages) && known;
    snprintf(path, sizeof path, "%s/resv_hugepages", dir);
    known = rtm__arena_read_u64(path, &resv) && known;
    snprintf(path, sizeof path, "%s/nr_overcommit_hugepages", dir);
    (void)rtm__arena_read_u64(path, &over);
    if (p->page == default_huge_page())
        snprintf(file, sizeof file, "/proc/sys/vm/nr_hugepages (or %s/nr_hugepages)", dir);
    else
        snprintf(file, sizeof file, "%s/nr_hugepages", dir);
    uint64_t needed = p->size / p->page;
    uint64_t avail = free_pages > resv ? free_pages - resv : 0;
    const char *boot = p->page >= ((size_t)1 << 30)
                           ? "; pages this large are found most reliably at boot "
                             "(hugepagesz=1G hugepages=N on the kernel command line)"
                           : "";

    if ((err == ENOMEM || err == ENOSPC) && known) {
        if (nr == 0 && over == 0)
            return rtm__arena_fail(a, err,
                                   "no %s huge pages reserved: write to %s (%" PRIu64 " needed)%s",
                                   size, file, needed, boot);
        if (avail < needed)
            return rtm__arena_fail(a, err,
                                   "%" PRIu64 " %s huge pages needed, %" PRIu64
                                   " free (nr_hugepages %" PRIu64 ", %" PRIu64
                                   " of the free ones reserved by other mappings): raise %s%s",
                                   needed, size, avail, nr, resv, file, boot);
        return rtm__arena_fail(a, err,
                               "%s refused %" PRIu64 " %s huge pages (%s) although %" PRIu64
                               " are free: a cgroup's hugetlb limit may refuse them",
                               call, needed, size, strerror(err), avail);
    }
    return rtm__arena_fail(a, err, "%s of %" PRIu64 " %s huge pages failed: %s", call, needed, size,
                           strerror(err));
}
