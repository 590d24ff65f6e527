/*
 * `rtmem shm`: the mechanisms, and a region of one as an rtm_arena. The
 * names a region creates are unpredictable (pid and 64 random bits) and
 * created exclusively by the arena (an existing name is refused, never
 * used), and registered with the kit's cleanup before they exist, so that
 * a fatal signal between the open and the close removes them.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/leftovers.h"
#include "common/cleanup.h"
#include "shm.h"

#define B RTM_ARENA_THP_DEFAULT
const struct shm_mech shm_mechs[SHM_MECHS] = {
    [MECH_FILE_DISK] = { "file-disk", "file mmap (MAP_SHARED) in --dir", RTM_ARENA_FILE, 0, B, true,
                         true, true },
    [MECH_FILE_TMPFS] = { "file-tmpfs", "file mmap in /dev/shm (tmpfs)", RTM_ARENA_FILE, 0, B, true,
                          true, true },
    [MECH_POSIX] = { "posix", "POSIX shm (shm_open)", RTM_ARENA_POSIX_SHM, 0, B, true, false,
                     true },
    [MECH_SYSV] = { "sysv", "SysV shm (shmget, IPC_PRIVATE)", RTM_ARENA_SYSV_SHM, 0, B, true, false,
                    true },
    [MECH_MEMFD] = { "memfd", "memfd_create", RTM_ARENA_MEMFD, 0, B, true, false, true },
    [MECH_ANON_SHARED] = { "anon-shared", "shared anonymous (/dev/zero, MAP_SHARED)",
                           RTM_ARENA_DEVICE, 0, B, true, false, true },
    [MECH_MEMFD_THP] = { "memfd-thp", "memfd with MADV_HUGEPAGE", RTM_ARENA_MEMFD, 0,
                         RTM_ARENA_THP_ON, true, false, true },
    [MECH_ANON_HUGE2M] = { "anon-huge2m", "MAP_HUGETLB 2 MiB (private)", RTM_ARENA_ANON,
                           RTM_ARENA_PAGE_2M, B, false, false, true },
    [MECH_ANON_HUGE1G] = { "anon-huge1g", "MAP_HUGETLB 1 GiB (private)", RTM_ARENA_ANON,
                           RTM_ARENA_PAGE_1G, B, false, false, true },
    [MECH_MEMFD_HUGE2M] = { "memfd-huge2m", "memfd MFD_HUGETLB 2 MiB", RTM_ARENA_MEMFD,
                            RTM_ARENA_PAGE_2M, B, true, false, true },
    [MECH_MEMFD_HUGE1G] = { "memfd-huge1g", "memfd MFD_HUGETLB 1 GiB", RTM_ARENA_MEMFD,
                            RTM_ARENA_PAGE_1G, B, true, false, true },
    [MECH_SYSV_HUGE2M] = { "sysv-huge2m", "SysV shm SHM_HUGETLB 2 MiB", RTM_ARENA_SYSV_SHM,
                           RTM_ARENA_PAGE_2M, B, true, false, true },
    [MECH_ANON_PRIVATE] = { "anon-private", "private anonymous, THP off (reference)",
                            RTM_ARENA_ANON, 0, RTM_ARENA_THP_OFF, false, false, true },
    [MECH_ANON_THP] = { "anon-thp", "private anonymous, MADV_HUGEPAGE (reference)", RTM_ARENA_ANON,
                        0, RTM_ARENA_THP_ON, false, false, true },
};
#undef B

/* Where tmpfs files go: the POSIX shm directory, tmpfs on Linux. */
#define TMPFS_DIR "/dev/shm"

int shm_mech_find(const char *name)
{
    for (int m = 0; m < SHM_MECHS; m++)
        if (strcmp(shm_mechs[m].name, name) == 0)
            return m;
    return -1;
}

/* "rtmem-shm-<pid>-<start>-<64 random bits>": a name no one guesses
 * before it exists, which tells the next run whether its own run still
 * lives (leftovers.h). */
static void unique_stem(char *buf, size_t size)
{
    char run[64];
    if (tk_leftover_stem("rtmem-shm", run, sizeof(run)) != 0)
        run[0] = '\0';
    uint64_t r = 0;
    if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        r = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15u ^ (uint64_t)ts.tv_sec;
    }
    snprintf(buf, size, "%s%016" PRIx64, run, r);
}

/* Registers the name the region is about to create (signals blocked by
 * the caller). 0, or -1 if the cleanup's table is full. */
static int register_name(struct shm_region *r, bool file)
{
    r->cleanup_file = file;
    r->cleanup_slot = file ? tk_cleanup_add_file(r->name) : tk_cleanup_add_shm(r->name);
    return r->cleanup_slot < 0 ? -1 : 0;
}

static void forget_name(struct shm_region *r)
{
    if (r->cleanup_slot < 0)
        return;
    if (r->cleanup_file)
        tk_cleanup_forget_file(r->cleanup_slot);
    else
        tk_cleanup_forget_shm(r->cleanup_slot);
    r->cleanup_slot = -1;
}

int shm_region_open(const struct shm *sh, enum shm_mech_id id, uint64_t bytes, struct shm_region *r,
                    char *why, size_t why_size)
{
    const struct shm_mech *m = &shm_mechs[id];
    memset(r, 0, sizeof(*r));
    r->cleanup_slot = -1;
    struct rtm_arena_config cfg = {
        .source = m->source,
        .size_bytes = (size_t)bytes,
        .page_bytes = m->page_bytes,
        .prefault = RTM_ARENA_PREFAULT_NONE,
        .lock = RTM_ARENA_LOCK_NONE,
        .thp = m->thp,
        .mode = 0600,
    };
    char stem[64];
    unique_stem(stem, sizeof(stem));
    bool file = false;
    switch (id) {
    case MECH_FILE_DISK:
        snprintf(r->name, sizeof(r->name), "%s/%s", sh->o.dir, stem);
        file = true;
        break;
    case MECH_FILE_TMPFS:
        snprintf(r->name, sizeof(r->name), "%s/%s", TMPFS_DIR, stem);
        file = true;
        break;
    case MECH_POSIX: snprintf(r->name, sizeof(r->name), "/%s", stem); break;
    case MECH_ANON_SHARED: cfg.name = "/dev/zero"; break;
    case MECH_MEMFD:
    case MECH_MEMFD_THP:
    case MECH_MEMFD_HUGE2M:
    case MECH_MEMFD_HUGE1G: cfg.name = "rtmem-shm"; break;
    default: break;
    }
    bool named = r->name[0] != '\0';
    if (named)
        cfg.name = r->name;
    sigset_t old;
    tk_cleanup_block(&old);
    if (named && register_name(r, file) != 0) {
        tk_cleanup_restore(&old);
        snprintf(why, why_size, "the cleanup's table is full: %s not created", r->name);
        r->name[0] = '\0';
        return -ENOSPC;
    }
    int rc = rtm_arena_open(&r->a, &cfg);
    if (rc != 0)
        forget_name(r);
    tk_cleanup_restore(&old);
    if (rc != 0) {
        snprintf(why, why_size, "%s", r->a.message[0] ? r->a.message : strerror(-rc));
        r->name[0] = '\0';
        return rc;
    }
    r->open = true;
    return 0;
}

int shm_region_close(struct shm_region *r)
{
    if (!r->open)
        return 0;
    sigset_t old;
    tk_cleanup_block(&old);
    int rc = rtm_arena_close(&r->a);
    forget_name(r);
    tk_cleanup_restore(&old);
    r->open = false;
    return rc;
}
