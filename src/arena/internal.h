/*
 * Internal: what the steps of an arena's open share. Not installed.
 *
 * rtm_arena_open (arena.c) runs: check the config and size the arena
 * (size.c), check the lock against RLIMIT_MEMLOCK (lock.c), obtain the
 * object from its source (anon.c, memfd.c, posix_shm.c, sysv_shm.c, file.c,
 * device.c), map it between guard pages (map.c), give the advice and
 * prefault (prefault.c), lock (lock.c), and read back what was obtained
 * (verify.c). Each step that fails writes the arena's message (message.c)
 * and returns a negative errno; arena.c then undoes the steps done.
 */
#ifndef RTMEM_SRC_ARENA_INTERNAL_H
#define RTMEM_SRC_ARENA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/types.h>

#include "rtmem/arena.h"

/* Linux 5.14; older headers lack them (and older kernels refuse them with
 * EINVAL). */
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* The open in progress: the config checked and sized, and what the source
 * decides about the mapping. */
struct rtm__arena_plan {
    const struct rtm_arena_config *cfg;
    size_t base_page; /* sysconf(_SC_PAGESIZE) */
    size_t page;      /* the page size in use: base_page or a huge page size */
    size_t size;      /* bytes to map, a multiple of page (0 until known) */
    off_t offset;     /* in the object */
    bool hugetlb;     /* pages from the hugetlb pool */
    bool shared;      /* MAP_SHARED (or a SysV segment) */
    bool writable;    /* PROT_WRITE */
    int map_flags;    /* mmap flags beyond MAP_SHARED/MAP_PRIVATE (MAP_ANONYMOUS, MAP_HUGETLB...) */
    uint64_t segment_bytes; /* an existing SysV segment's size (all of it is attached), else 0 */
    char what[320];         /* the object for messages: "anonymous memory", "file /x", ... */
};

/* ---- message.c: the arena's message ---------------------------------------- */

/* Writes the message (printf format) and returns -err. */
int rtm__arena_fail(struct rtm_arena *a, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Appends a warning to the message ("; " between two). */
void rtm__arena_warn(struct rtm_arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* "64 MiB", "4 KiB", "1 GiB", or "12345 bytes" when not a whole KiB. */
const char *rtm__arena_bytes_text(uint64_t bytes, char *buf, size_t size);

/* ---- size.c: checking the config and sizing ------------------------------- */

/* Checks every field of cfg against the source, resolves the page size and
 * rounds the size (0 stays 0: the source takes the object's size). */
int rtm__arena_plan_init(struct rtm_arena *a, struct rtm__arena_plan *p,
                         const struct rtm_arena_config *cfg);
/* Rounds cfg->size_bytes up to p->page into p->size (again, when a source
 * learns the page size, as a file on hugetlbfs does); refuses overflows. */
int rtm__arena_round(struct rtm_arena *a, struct rtm__arena_plan *p);
/* Sets p->size from the object's size when none was asked, and refuses
 * (-ENXIO) an offset + size past object_bytes. */
int rtm__arena_fit(struct rtm_arena *a, struct rtm__arena_plan *p, uint64_t object_bytes);

/* ---- hugepages.c: the hugetlb pool ----------------------------------------- */

/* 0 if the kernel has huge pages of that size, else -EOPNOTSUPP (message). */
int rtm__arena_huge_check(struct rtm_arena *a, size_t page_bytes);
/* The MAP_HUGE_* / MFD_HUGE_* / SHM_HUGE_* encoding of a size (log2 << 26). */
int rtm__arena_huge_bits(size_t page_bytes);
/* Explains a refusal of huge pages (err: ENOMEM, EPERM...) with the state of
 * the pool: how many are reserved and free, and the file that reserves more.
 * Returns -err. */
int rtm__arena_huge_fail(struct rtm_arena *a, const struct rtm__arena_plan *p, int err,
                         const char *call);

/* ---- hugetlbfs mounts (hugepages.c; shared heaps use them too) ---------------- */

/* Room for a mount's directory: NAME_MAX-long file names must fit under it
 * within PATH_MAX (4096). */
#define RTM__ARENA_MOUNT_BYTES 3584

/* Called for each hugetlbfs mount with its directory and page size; a
 * non-zero return stops the walk and is returned by it. */
typedef int (*rtm__arena_mount_fn)(const char *dir, size_t page_bytes, void *arg);
/* Walks the hugetlbfs mounts of /proc/self/mounts in its order (this
 * process's mount namespace), each with the page size of its pagesize=
 * option (the default huge page size, Hugepagesize of /proc/meminfo,
 * without one). Returns 0 or what fn returned; 0 without /proc. */
int rtm__arena_hugetlbfs_each(rtm__arena_mount_fn fn, void *arg);
/* Writes into dir the first hugetlbfs mount of page_bytes pages in which
 * this process may create files (faccessat W_OK | X_OK, effective ids).
 * Returns 0; -EOPNOTSUPP when the kernel has no huge pages of that size;
 * -ENODEV when none is mounted; or the refusal of the first mount of that
 * size (-EACCES, -EROFS, -ENAMETOOLONG for a directory longer than size). */
int rtm__arena_hugetlbfs_dir(size_t page_bytes, char *dir, size_t size);

/* ---- the sources: obtain the object (fd, segment) and set the plan -------- */

int rtm__arena_anon_obtain(struct rtm_arena *a, struct rtm__arena_plan *p);
int rtm__arena_memfd_obtain(struct rtm_arena *a, struct rtm__arena_plan *p);
int rtm__arena_posix_shm_obtain(struct rtm_arena *a, struct rtm__arena_plan *p);
int rtm__arena_sysv_shm_obtain(struct rtm_arena *a, struct rtm__arena_plan *p);
int rtm__arena_file_obtain(struct rtm_arena *a, struct rtm__arena_plan *p);
int rtm__arena_device_obtain(struct rtm_arena *a, struct rtm__arena_plan *p);
/* Attaches the segment at `at` (reserved by map.c), or where the kernel
 * puts it (NULL). */
int rtm__arena_sysv_shm_attach(struct rtm_arena *a, const struct rtm__arena_plan *p, void *at);
/* Records what a->fd refers to (st_dev, st_ino), as soon as it is open:
 * close acts on the descriptor and on a created name only while they still
 * refer to it. On failure closes a->fd and returns -errno (message). */
int rtm__arena_note_object(struct rtm_arena *a, const struct rtm__arena_plan *p);
/* Gives the object it just created the mode the config asks (0: 0600), as
 * given: the umask the creating call applied is undone. Returns 0 or
 * -errno (message written). */
int rtm__arena_apply_mode(struct rtm_arena *a, const struct rtm__arena_plan *p);
/* Removes what the open created (shm name, segment, file), in the creating
 * process only. Returns 0 or -errno (message written). */
int rtm__arena_posix_shm_remove(struct rtm_arena *a);
int rtm__arena_sysv_shm_remove(struct rtm_arena *a);
int rtm__arena_file_remove(struct rtm_arena *a);
/* Refuses (-ENOSPC) an object whose filesystem (tmpfs, disk) has less room
 * than the arena: pages past the room would fault with SIGBUS. */
int rtm__arena_space_check(struct rtm_arena *a, const struct rtm__arena_plan *p);
/* Explains a failed open(2)/shm_open of the object (ENOENT, EEXIST,
 * EACCES...). Returns -err. */
int rtm__arena_open_fail(struct rtm_arena *a, const struct rtm__arena_plan *p, int err);

/* ---- map.c: placing the mapping -------------------------------------------- */

/* Maps the object (a->fd, anonymous memory, a SysV segment) at a fresh
 * address between two guard pages; an existing SysV segment is attached
 * where the kernel puts it. */
int rtm__arena_map(struct rtm_arena *a, const struct rtm__arena_plan *p);
/* Unmaps whatever rtm__arena_map mapped. Returns 0 or -errno. */
int rtm__arena_unmap(struct rtm_arena *a);

/* ---- prefault.c ------------------------------------------------------------- */

/* Gives the THP advice. */
int rtm__arena_advise(struct rtm_arena *a, const struct rtm__arena_plan *p);
/* Faults every page in as cfg->prefault says (MADV_POPULATE_READ/_WRITE),
 * and refuses (-EFAULT) a page that cannot be faulted in. After
 * rtm__arena_map passed MAP_POPULATE, checks that every page is present. */
int rtm__arena_prefault(struct rtm_arena *a, const struct rtm__arena_plan *p);
/* Warns when THP was asked and no huge page backs the faulted-in arena. */
struct rtm__arena_smaps;
void rtm__arena_thp_judge(struct rtm_arena *a, const struct rtm__arena_plan *p,
                          const struct rtm__arena_smaps *sm);
/* Whether rtm__arena_map passes MAP_POPULATE: a prefault without THP
 * advice on a kernel without MADV_POPULATE_READ (before Linux 5.14). */
bool rtm__arena_map_populates(const struct rtm__arena_plan *p);

/* ---- lock.c ------------------------------------------------------------------ */

/* Before mapping: refuses (MUST) or marks refused (TRY) a lock that
 * RLIMIT_MEMLOCK will refuse. *skip is set when mlock must not be tried. */
int rtm__arena_lock_check(struct rtm_arena *a, const struct rtm__arena_plan *p, bool *skip);
/* mlock of the arena. A refusal of the lock (RLIMIT_MEMLOCK, EPERM, EAGAIN)
 * fails (MUST) or is recorded (TRY); a page that could not be faulted in
 * fails the open either way. */
int rtm__arena_lock(struct rtm_arena *a, const struct rtm__arena_plan *p);
/* After verification: sets lock_state from the mapping's flags, and warns
 * when mlock succeeded and locked nothing. */
void rtm__arena_lock_judge(struct rtm_arena *a, const struct rtm__arena_plan *p,
                           const struct rtm__arena_smaps *sm);

/* ---- lines.c: /proc and /sys files, without stdio --------------------------- */

/* A file read line by line into buf (on the caller's stack): no malloc. */
struct rtm__arena_lines {
    int fd;
    size_t len, pos; /* bytes in buf; where the next line starts */
    bool skip;       /* the rest of a line too long for buf is skipped */
    bool eof;
    char buf[4096];
};

bool rtm__arena_lines_open(struct rtm__arena_lines *l, const char *path);
/* The next line, NUL-terminated, without its newline: valid until the next
 * call. A line longer than the buffer gives its start. NULL at the end. */
char *rtm__arena_lines_next(struct rtm__arena_lines *l);
void rtm__arena_lines_close(struct rtm__arena_lines *l);

/* ---- verify.c: reading back ------------------------------------------------- */

/* What /proc/self/status says. */
struct rtm__arena_status {
    bool ok;           /* both lines read */
    uint64_t vmlck;    /* VmLck, bytes */
    bool cap_ipc_lock; /* CAP_IPC_LOCK in CapEff */
};
/* What the arena's entry in /proc/self/smaps says. */
struct rtm__arena_smaps {
    bool found;    /* an entry starts at the arena's base */
    uint64_t size; /* Size */
    uint64_t page; /* KernelPageSize */
    uint64_t rss;  /* Rss + Shared_Hugetlb + Private_Hugetlb */
    uint64_t anon_huge, shmem_pmd, file_pmd;
    bool locked;        /* VmFlags lo */
    bool lock_on_fault; /* VmFlags lf: locked as pages fault in */
    bool io_pfn;        /* VmFlags io or pf */
    bool hugetlb;       /* VmFlags ht */
};

void rtm__arena_read_status(struct rtm__arena_status *st);
void rtm__arena_read_smaps(const void *base, struct rtm__arena_smaps *sm);
/* Reads one unsigned number from a file (/proc, /sys). */
bool rtm__arena_read_u64(const char *path, uint64_t *v);
/* Minor and major faults of the calling thread so far. */
void rtm__arena_faults(uint64_t *minor, uint64_t *major);

#endif /* RTMEM_SRC_ARENA_INTERNAL_H */
