/* Bench kit: one mapping's entry of smaps (smaps.h). */
#include "common/smaps.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A header line: "start-end perms offset dev inode [path]". Figure lines
 * start with a field name and a colon, never a hex range and a dash. */
static bool parse_header(const char *line, uint64_t *start, uint64_t *end, const char **path)
{
    int consumed = 0;
    if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %*s %*s %*s%n", start, end, &consumed) != 2 ||
        consumed == 0)
        return false;
    const char *p = line + consumed;
    while (*p == ' ' || *p == '\t')
        p++;
    *path = p;
    return true;
}

static bool is_header(const char *line)
{
    const char *dash = strchr(line, '-');
    const char *colon = strchr(line, ':');
    return dash && (!colon || dash < colon) &&
           strspn(line, "0123456789abcdef") == (size_t)(dash - line);
}

/* "Name:   123 kB" into *bytes when the line is that field. */
static void field(const char *line, const char *name, uint64_t *bytes)
{
    size_t n = strlen(name);
    uint64_t kb;
    if (strncmp(line, name, n) == 0 && line[n] == ':' && sscanf(line + n + 1, "%" SCNu64, &kb) == 1)
        *bytes += kb * 1024;
}

int tk_smaps_find(const char *path, const void *addr, struct tk_smaps_entry *e)
{
    memset(e, 0, sizeof(*e));
    FILE *f = fopen(path ? path : "/proc/self/smaps", "re");
    if (!f)
        return -errno;
    uint64_t a = (uint64_t)(uintptr_t)addr;
    /* Whole lines, however long a mapping's path: a header cut in two
     * would read its tail as a line of its own. */
    char *line = NULL;
    size_t cap = 0;
    bool in = false, found = false;
    int rc = 0;
    while (getline(&line, &cap, f) >= 0) {
        if (is_header(line)) {
            if (in)
                break;
            uint64_t s, t;
            const char *p;
            if (!parse_header(line, &s, &t, &p)) {
                rc = -EIO;
                break;
            }
            if (a >= s && a < t) {
                in = found = true;
                e->start = s;
                e->end = t;
                snprintf(e->path, sizeof(e->path), "%.*s", (int)strcspn(p, "\n"), p);
            }
            continue;
        }
        if (!in)
            continue;
        field(line, "Size", &e->size_bytes);
        field(line, "KernelPageSize", &e->kernel_page_bytes);
        field(line, "Rss", &e->rss_bytes);
        field(line, "AnonHugePages", &e->anon_huge_bytes);
        field(line, "ShmemPmdMapped", &e->shmem_pmd_bytes);
        field(line, "FilePmdMapped", &e->file_pmd_bytes);
        field(line, "Shared_Hugetlb", &e->hugetlb_bytes);
        field(line, "Private_Hugetlb", &e->hugetlb_bytes);
    }
    if (rc == 0 && ferror(f))
        rc = -EIO;
    free(line);
    fclose(f);
    if (rc == 0 && !found)
        rc = -ENOENT;
    return rc;
}
