/* Arenas: reading back what the kernel gave (/proc/self/status, smaps,
 * getrusage), through lines.c: no stdio. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "internal.h"

#define CAP_IPC_LOCK_BIT 14 /* linux/capability.h */

bool rtm__arena_read_u64(const char *path, uint64_t *v)
{
    struct rtm__arena_lines l;
    if (!rtm__arena_lines_open(&l, path))
        return false;
    const char *line = rtm__arena_lines_next(&l);
    bool ok = line && sscanf(line, "%" SCNu64, v) == 1;
    rtm__arena_lines_close(&l);
    return ok;
}

void rtm__arena_read_status(struct rtm__arena_status *st)
{
    memset(st, 0, sizeof(*st));
    struct rtm__arena_lines l;
    if (!rtm__arena_lines_open(&l, "/proc/self/status"))
        return;
    bool have_lck = false, have_cap = false;
    uint64_t v;
    for (const char *line; (line = rtm__arena_lines_next(&l)) != NULL;) {
        if (sscanf(line, "VmLck: %" SCNu64, &v) == 1) {
            st->vmlck = v << 10;
            have_lck = true;
        } else if (sscanf(line, "CapEff: %" SCNx64, &v) == 1) {
            st->cap_ipc_lock = (v >> CAP_IPC_LOCK_BIT) & 1;
            have_cap = true;
        }
    }
    rtm__arena_lines_close(&l);
    st->ok = have_lck && have_cap;
}

static bool has_flag(const char *flags, const char *flag)
{
    for (const char *s = flags; (s = strstr(s, flag)) != NULL; s++) {
        bool start = s == flags || s[-1] == ' ';
        bool end = s[2] == ' ' || s[2] == '\n' || s[2] == '\0';
        if (start && end)
            return true;
    }
    return false;
}

/* Stores the kB figure of a "Name:   123 kB" line into the field it names. */
static void smaps_field(const char *line, struct rtm__arena_smaps *sm)
{
    static const struct {
        const char *name;
        size_t off;
        bool add;
    } fields[] = {
        { "Size:", offsetof(struct rtm__arena_smaps, size), false },
        { "KernelPageSize:", offsetof(struct rtm__arena_smaps, page), false },
        { "Rss:", offsetof(struct rtm__arena_smaps, rss), true },
        { "Shared_Hugetlb:", offsetof(struct rtm__arena_smaps, rss), true },
        { "Private_Hugetlb:", offsetof(struct rtm__arena_smaps, rss), true },
        { "AnonHugePages:", offsetof(struct rtm__arena_smaps, anon_huge), false },
        { "ShmemPmdMapped:", offsetof(struct rtm__arena_smaps, shmem_pmd), false },
        { "FilePmdMapped:", offsetof(struct rtm__arena_smaps, file_pmd), false },
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        size_t n = strlen(fields[i].name);
        if (strncmp(line, fields[i].name, n) != 0)
            continue;
        uint64_t kb;
        if (sscanf(line + n, "%" SCNu64, &kb) == 1) {
            uint64_t *dst = (uint64_t *)(void *)((char *)sm + fields[i].off);
            *dst = fields[i].add ? *dst + (kb << 10) : kb << 10;
        }
        return;
    }
}

void rtm__arena_read_smaps(const void *base, struct rtm__arena_smaps *sm)
{
    memset(sm, 0, sizeof(*sm));
    struct rtm__arena_lines l;
    if (!rtm__arena_lines_open(&l, "/proc/self/smaps"))
        return;
    bool in_entry = false;
    for (const char *line; (line = rtm__arena_lines_next(&l)) != NULL;) {
        uintptr_t start, end;
        /* An entry starts with "start-end perms ..."; its fields with a
         * capitalised name. */
        if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &start, &end) == 2 && line[0] != '\0' &&
            !(line[0] >= 'A' && line[0] <= 'Z')) {
            if (in_entry)
                break;
            in_entry = start == (uintptr_t)base;
            sm->found = in_entry;
            continue;
        }
        if (!in_entry)
            continue;
        if (strncmp(line, "VmFlags:", 8) == 0) {
            sm->locked = has_flag(line + 8, "lo");
            sm->lock_on_fault = has_flag(line + 8, "lf");
            sm->io_pfn = has_flag(line + 8, "io") || has_flag(line + 8, "pf");
            sm->hugetlb = has_flag(line + 8, "ht");
        } else {
            smaps_field(line, sm);
        }
    }
    rtm__arena_lines_close(&l);
}

void rtm__arena_faults(uint64_t *minor, uint64_t *major)
{
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0)
        memset(&ru, 0, sizeof ru);
    *minor = (uint64_t)ru.ru_minflt;
    *major = (uint64_t)ru.ru_majflt;
}
