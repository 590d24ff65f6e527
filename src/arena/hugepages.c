/* Arenas: huge pages from the hugetlb pool, why the pool refused them, and
 * the hugetlbfs mounts that hold files of huge pages. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* ---- hugetlbfs mounts --------------------------------------------------------- */

/* Copies a field of /proc/self/mounts, n bytes at in, into out, decoding
 * the octal escapes the kernel writes for a space, tab, newline and
 * backslash (\040...). False if it does not fit. */
static bool mount_field(const char *in, size_t n, char *out, size_t size)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++, o++) {
        if (o + 1 >= size)
            return false;
        char c = in[i];
        if (c == '\\' && i + 3 < n && in[i + 1] >= '0' && in[i + 1] <= '3' && in[i + 2] >= '0' &&
            in[i + 2] <= '7' && in[i + 3] >= '0' && in[i + 3] <= '7') {
            c = (char)((in[i + 1] - '0') << 6 | (in[i + 2] - '0') << 3 | (in[i + 3] - '0'));
            i += 3;
        }
        out[o] = c;
    }
    out[o] = '\0';
    return true;
}

/* The pagesize= option of a hugetlbfs mount's options (which the kernel
 * writes as "2M", "1024M"; a K, M or G suffix, or none, is read), in
 * bytes; 0 without one. */
static uint64_t option_page(const char *opts, size_t n)
{
    static const char key[] = "pagesize=";
    for (size_t i = 0; i + sizeof key - 1 < n; i++) {
        if ((i > 0 && opts[i - 1] != ',') || strncmp(opts + i, key, sizeof key - 1) != 0)
            continue;
        uint64_t v = 0;
        size_t j = i + sizeof key - 1;
        for (; j < n && opts[j] >= '0' && opts[j] <= '9'; j++)
            if ((v = v * 10 + (uint64_t)(opts[j] - '0')) > (UINT64_C(1) << 40))
                return 0; /* no page is that large */
        char unit = j < n ? opts[j] : ',';
        unsigned shift = unit == 'K' || unit == 'k'   ? 10
                         : unit == 'M' || unit == 'm' ? 20
                         : unit == 'G' || unit == 'g' ? 30
                                                      : 0;
        return v <= (UINT64_MAX >> shift) ? v << shift : 0;
    }
    return 0;
}

int rtm__arena_hugetlbfs_each(rtm__arena_mount_fn fn, void *arg)
{
    struct rtm__arena_lines l;
    if (!rtm__arena_lines_open(&l, "/proc/self/mounts"))
        return 0;      /* no /proc: no mount known */
    uint64_t dflt = 0; /* the default page size, read at the first mount without pagesize= */
    int rc = 0;
    for (const char *line; rc == 0 && (line = rtm__arena_lines_next(&l)) != NULL;) {
        /* "source dir type options 0 0", fields separated by one space */
        const char *f[4];
        size_t len[4];
        const char *c = line;
        int k = 0;
        for (; k < 4 && *c; k++) {
            f[k] = c;
            while (*c && *c != ' ')
                c++;
            len[k] = (size_t)(c - f[k]);
            while (*c == ' ')
                c++;
        }
        if (k < 4 || len[2] != 9 || strncmp(f[2], "hugetlbfs", 9) != 0)
            continue;
        char dir[RTM__ARENA_MOUNT_BYTES];
        if (!mount_field(f[1], len[1], dir, sizeof dir))
            continue; /* a path longer than any file under it could be named */
        uint64_t page = option_page(f[3], len[3]);
        if (page == 0)
            page = dflt ? dflt : (dflt = default_huge_page());
        if (page != 0 && page <= SIZE_MAX)
            rc = fn(dir, (size_t)page, arg);
    }
    rtm__arena_lines_close(&l);
    return rc;
}

/* rtm__arena_hugetlbfs_dir's search: the first mount of the page size
 * this process may create files in. */
struct dir_search {
    size_t page;
    char *dir;
    size_t size;
    int err; /* why the first mount of that size was refused */
};

static int take_dir(const char *dir, size_t page_bytes, void *arg)
{
    struct dir_search *d = arg;
    if (page_bytes != d->page)
        return 0;
    size_t n = strlen(dir);
    int err = n >= d->size                                             ? ENAMETOOLONG
              : faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) != 0 ? errno
                                                                       : 0;
    if (err) {
        if (!d->err)
            d->err = err;
        return 0;
    }
    memcpy(d->dir, dir, n + 1);
    return 1;
}

int rtm__arena_hugetlbfs_dir(size_t page_bytes, char *dir, size_t size)
{
    struct stat st;
    char pool[96];
    pool_dir(page_bytes, pool, sizeof pool);
    if (stat(HUGEPAGES_DIR, &st) == 0 && stat(pool, &st) != 0)
        return -EOPNOTSUPP;
    struct dir_search d = { .page = page_bytes, .dir = dir, .size = size };
    if (rtm__arena_hugetlbfs_each(take_dir, &d))
        return 0;
    return -(d.err ? d.err : ENODEV);
}
