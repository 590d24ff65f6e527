/*
 * rtmem: arenas, memory that stays put.
 *
 * An arena is one mapping of memory, taken from a source the caller names,
 * optionally prefaulted (every page present now, not at its first touch in
 * a control loop) and locked (never paged out), and then verified:
 * rtm_arena_open reads back what the kernel really gave and says it in a
 * report, because each step can quietly give less than asked. mlock can
 * succeed and lock nothing (a device mapping, or a sanitizer that turns it
 * into a no-op); a huge page can be asked and a base page used; a prefault
 * can leave the first write of each page of a disk file still to fault.
 * The report takes its figures from the kernel: the change of VmLck in
 * /proc/self/status, the page faults the calling thread took (getrusage),
 * and the mapping's own entry in /proc/self/smaps (KernelPageSize, Rss,
 * AnonHugePages, ShmemPmdMapped, FilePmdMapped, VmFlags).
 *
 * Sources (rtm_arena_config.source):
 *   RTM_ARENA_ANON       private anonymous memory; with page_bytes, huge
 *                        pages from the hugetlb pool (MAP_HUGETLB)
 *   RTM_ARENA_MEMFD      a memfd (MFD_HUGETLB with page_bytes): anonymous,
 *                        shared with the processes its descriptor reaches
 *   RTM_ARENA_POSIX_SHM  a POSIX shared memory object (shm_open, /dev/shm)
 *   RTM_ARENA_SYSV_SHM   a SysV segment (shmget; SHM_HUGETLB with page_bytes)
 *   RTM_ARENA_FILE       a regular file (on a hugetlbfs mount: its pages)
 *   RTM_ARENA_DEVICE     an existing device or kernel node at an offset:
 *                        memory kept from the kernel (mem=, a reserved-memory
 *                        node) mapped through /dev/mem or a driver's node,
 *                        /dev/uioN, /dev/zero, a sysfs resource file
 *
 * Sizes: size_bytes is rounded up to the page size in use (the base page
 * size, or the huge page size asked, or the block size of a hugetlbfs
 * mount); the arena's size_bytes and page_bytes say what was mapped. Offsets
 * must be multiples of that page size. A size whose rounding, or an offset
 * whose sum with the size, overflows is refused (-EOVERFLOW).
 *
 * Placement: the arena sits between two inaccessible guard pages, so that
 * a write just past either end faults instead of reaching a neighbouring
 * mapping, and the kernel cannot merge the arena with a neighbour (the
 * smaps figures are then the arena's alone). An arena of 2 MiB or more
 * starts on a 2 MiB boundary (a huge page one for huge pages), where
 * transparent huge pages can back it. An existing SysV segment is the
 * exception: it is attached where the kernel puts it, since only the kernel
 * knows how much it maps (a hugetlb segment is rounded up to its pages).
 * The address space is reserved first (PROT_NONE, with room to align) and
 * the arena mapped over it. Under mlockall(MCL_FUTURE) the kernel locks
 * every new mapping, the reservation too: it is unlocked at once, so that
 * an arena costs its size of RLIMIT_MEMLOCK and no more, and when the room
 * to align does not fit within the limit, an arena of base pages is placed
 * without it (not on a 2 MiB boundary; the message says so).
 *
 * Ownership: what rtm_arena_open creates (a POSIX shm object, a SysV
 * segment, a file) rtm_arena_close removes, in the process that opened it
 * only (a child that inherited the arena through fork unmaps it and removes
 * nothing). What it is told to use (RTM_ARENA_EXISTING, and every device) is
 * mapped and unmapped, never created, resized, truncated or removed. A name
 * or key that already exists is refused (-EEXIST) unless RTM_ARENA_EXISTING
 * says to use it. Close removes the object it created only while it is that
 * object: a shm name or file is removed if it still names the inode created
 * (st_dev, st_ino recorded at the open), not one someone else put under the
 * name since; a SysV segment if its id still names a segment of the same
 * key created by this process (shm_cpid). It closes the descriptor only
 * while it still refers to the object opened (not one the caller closed
 * and whose number now holds another descriptor: -EBADF, left open).
 *
 * Errors: every function returns a negative errno value (or NULL with errno
 * set) and never prints or aborts. rtm_arena_open also writes one sentence
 * into the arena's message naming what is missing (the privilege, the
 * resource, the limit and its value) and how to get it, for example
 *   "no 2 MiB huge pages reserved: write to /proc/sys/vm/nr_hugepages ..."
 *   "mlock refused: RLIMIT_MEMLOCK is 8 MiB, 64 MiB asked ..."
 * After a successful open the message is empty, or warns of what was not
 * obtained: a lock refused under RTM_ARENA_LOCK_TRY, or ignored, or taken
 * on fault with pages missing; a prefault skipped on device memory; THP
 * asked and none obtained; a placement off the 2 MiB boundary.
 *
 * Bounds: these are start-up calls. They make system calls, read /proc, and
 * prefault and lock take time proportional to the arena's size (every page
 * is faulted in and, for fresh memory, zeroed by the kernel). They call
 * neither malloc nor stdio (/proc is read with read(2) into a buffer on the
 * stack, of about 4 KiB), so a program whose malloc lives on an arena can
 * open and close others from it; only strerror, for a message, may load
 * the translations of a locale other than "C" once. Open arenas before the
 * control loop starts; only the memory, and heaps on it (rtm_arena_heap),
 * belong in the loop.
 *
 * Threads: the calls are thread-safe for different arenas. The fault counts
 * are the calling thread's own; VmLck belongs to the process, so another
 * thread locking or unlocking memory during an open shifts locked_bytes
 * (lock_state is read from the mapping's own flags and stays exact). An
 * open maps the arena over address space it reserved (MAP_FIXED); when
 * that mmap fails, the kernel may have unmapped the reserved range already
 * (older kernels do; newer ones put it back), and another thread's mmap
 * can take the hole before the open unmaps the range, which then unmaps
 * that thread's mapping too. Open arenas before starting threads that map
 * memory where that matters.
 */
#ifndef RTMEM_ARENA_H
#define RTMEM_ARENA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rtmem/export.h"
#include "rtmem/heap.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sources (rtm_arena_config.source); see the top of this file. */
#define RTM_ARENA_ANON      0
#define RTM_ARENA_MEMFD     1
#define RTM_ARENA_POSIX_SHM 2
#define RTM_ARENA_SYSV_SHM  3
#define RTM_ARENA_FILE      4
#define RTM_ARENA_DEVICE    5

/* Huge page sizes for rtm_arena_config.page_bytes (x86-64; any size the
 * kernel lists under /sys/kernel/mm/hugepages is taken). */
#define RTM_ARENA_PAGE_2M ((size_t)2 << 20)
#define RTM_ARENA_PAGE_1G ((size_t)1 << 30)

/* Prefault (rtm_arena_config.prefault). Neither is needed for a locked
 * arena, which mlock faults in, except for the first write to a disk
 * file's page that only _TOUCH prevents.
 *   _POPULATE  private memory is faulted in for writing, shared memory
 *              for reading (MADV_POPULATE_WRITE, _READ), as MAP_POPULATE
 *              would, but a page that cannot be faulted in (past the end of
 *              what the object maps, a full filesystem) fails the open
 *              (EFAULT) instead of a SIGBUS at its first touch. Shared
 *              memory in RAM (memfd, shm) is then ready for writes too; a
 *              disk file's pages are not: the first write to each still
 *              faults, so that the filesystem can track dirty pages. The
 *              population runs after the THP advice, so that it can take
 *              huge pages.
 *   _TOUCH     every page is faulted in as if written (MADV_POPULATE_WRITE;
 *              before Linux 5.14, each page written with the value it holds,
 *              atomically), contents unchanged: no page of the arena faults
 *              afterwards, until writeback cleans a disk file's page (a
 *              shared disk file is written back: locked or not, its first
 *              write after each writeback faults; use memfd or shm for
 *              memory a loop writes). A read-only arena is read instead.
 * Before Linux 5.14 (no MADV_POPULATE_*), both map with MAP_POPULATE, which
 * ignores a page it cannot fault in, and the open then fails (EFAULT) if
 * smaps shows less than the whole arena present; with THP advice, or on a
 * SysV segment, each page is touched by hand instead, where such a page
 * raises SIGBUS in the open.
 * A mapping the kernel cannot prefault (VM_IO or VM_PFNMAP: device memory,
 * which its driver maps) is left as it is, and the message says so. */
#define RTM_ARENA_PREFAULT_NONE     0
#define RTM_ARENA_PREFAULT_POPULATE 1
#define RTM_ARENA_PREFAULT_TOUCH    2

/* Lock (rtm_arena_config.lock): mlock of the whole arena, after the
 * prefault. A refused lock (beyond RLIMIT_MEMLOCK: ENOMEM; a limit of 0:
 * EPERM; only part of the range locked: EAGAIN) fails the open with _MUST;
 * with _TRY the open succeeds unlocked, and the report and the message say
 * why. A page that mlock cannot fault in (ENOMEM too: past the end of what
 * the object maps) is no refusal: it fails the open under _TRY as well,
 * since touching it would raise SIGBUS. Before mapping, the lock is checked
 * against RLIMIT_MEMLOCK as the kernel will check it (unless CapEff shows
 * CAP_IPC_LOCK), so that a lock bound to fail is refused before the arena
 * is faulted in; a CAP_IPC_LOCK held in a user namespace only does not
 * exempt, and its refusal comes from mlock, after the prefault. A lock that
 * mlock accepts but ignores (RTM_ARENA_LOCK_IGNORED) fails neither: it is
 * reported. */
#define RTM_ARENA_LOCK_NONE 0
#define RTM_ARENA_LOCK_TRY  1
#define RTM_ARENA_LOCK_MUST 2

/* Transparent huge page advice (rtm_arena_config.thp), for arenas of base
 * pages: madvise MADV_HUGEPAGE (_ON) or MADV_NOHUGEPAGE (_OFF), given
 * before the prefault. Whether huge pages follow depends on
 * /sys/kernel/mm/transparent_hugepage/enabled (private memory) and
 * shmem_enabled (memfd, shm, SysV); the report says what was obtained. */
#define RTM_ARENA_THP_DEFAULT 0
#define RTM_ARENA_THP_ON      1
#define RTM_ARENA_THP_OFF     2

/* Flags (rtm_arena_config.flags). */
/* Use an object that exists (POSIX_SHM, SYSV_SHM, FILE) instead of creating
 * one; it is never resized or removed. A DEVICE always exists. */
#define RTM_ARENA_EXISTING  0x1u
/* Map for reading only (PROT_READ; SHM_RDONLY). No heap can be created on
 * it. For FILE, DEVICE, POSIX_SHM and SYSV_SHM with RTM_ARENA_EXISTING. */
#define RTM_ARENA_READ_ONLY 0x2u
/* FILE, DEVICE: a private (copy-on-write) mapping: writes stay in this
 * process and never reach the file or device. */
#define RTM_ARENA_PRIVATE   0x4u

/* What to open. Zero-initialised it means private anonymous base pages,
 * no prefault, no lock, no advice, and size_bytes must be set. */
struct rtm_arena_config {
    int source;        /* RTM_ARENA_ANON, ... */
    size_t size_bytes; /* bytes wanted, rounded up to the page size in use. 0
                          with RTM_ARENA_EXISTING (or a DEVICE that is a file
                          with a size): all of the object from offset on */
    /* 0: base pages. Else a huge page size (RTM_ARENA_PAGE_2M, _1G) for
     * ANON, MEMFD and SYSV_SHM, taken from the hugetlb pool; for an existing
     * SysV segment, the page size it was created with. A FILE on a hugetlbfs
     * mount uses the mount's page size: 0 or that size. */
    size_t page_bytes;
    /* POSIX_SHM: "/name" (one slash, at the start); FILE, DEVICE: the path;
     * MEMFD: the name /proc/self/maps shows ("memfd:<name>"; NULL: "rtmem").
     * Copied during the open: it need not outlive the call. */
    const char *name;
    uint64_t offset; /* FILE, DEVICE: where the mapping starts in the object */
    int sysv_key;    /* SYSV_SHM: the key (key_t); 0 (IPC_PRIVATE) creates a
                        segment only a fork can share, removed at once from
                        the namespace so that it cannot outlive its users */
    unsigned mode;   /* permissions of a created shm object, segment or file:
                        0777 at most (no setuid, setgid, sticky); 0 means
                        0600. Applied as given: the process's umask takes
                        nothing from it */
    int prefault;    /* RTM_ARENA_PREFAULT_* */
    int lock;        /* RTM_ARENA_LOCK_* */
    int thp;         /* RTM_ARENA_THP_*; only for base pages */
    unsigned flags;  /* RTM_ARENA_EXISTING | RTM_ARENA_READ_ONLY | RTM_ARENA_PRIVATE */
};
typedef struct rtm_arena_config rtm_arena_config_t;

/* What the lock came to (rtm_arena_report.lock_state). */
/* Not locked: not asked, or refused under RTM_ARENA_LOCK_TRY (lock_errno
 * says why). */
#define RTM_ARENA_UNLOCKED        0
/* The kernel marked the mapping locked (VM_LOCKED in smaps) and every page
 * is present: this open's mlock did it, or an mlockall(MCL_FUTURE) in force
 * did, asked here or not. VmLck grew by size_bytes (the guard pages are
 * never locked). */
#define RTM_ARENA_LOCKED          1
/* Huge pages from the hugetlb pool: mlock succeeded, but the kernel neither
 * marks nor counts hugetlb mappings as locked (VmLck does not grow); their
 * pages are never paged out anyway, and mlock faulted them in. */
#define RTM_ARENA_LOCKED_HUGETLB  2
/* mlock returned success and locked nothing: the mapping is VM_IO or
 * VM_PFNMAP (device memory, which the kernel does not lock: whether its
 * pages can move is up to the driver; memory reserved from the kernel never
 * moves), or mlock was intercepted (sanitizer runtimes make it a no-op).
 * The message says which. */
#define RTM_ARENA_LOCK_IGNORED    3
/* Locked on fault (VM_LOCKED and VM_LOCKONFAULT: VmFlags lo lf), with pages
 * missing: mlockall(MCL_FUTURE | MCL_ONFAULT) is in force and no lock or
 * prefault was asked here. The pages present (resident_bytes) stay; each
 * other page faults at its first touch, and stays from then on. VmLck grew
 * as for RTM_ARENA_LOCKED. The message warns of it; _TOUCH or a lock asked
 * here faults every page in now (RTM_ARENA_LOCKED). */
#define RTM_ARENA_LOCKED_ON_FAULT 4

/* What rtm_arena_open obtained, read back from the kernel. */
struct rtm_arena_report {
    int source, prefault, lock, thp; /* as asked */
    /* size_bytes as asked, and as mapped (rounded up to page_bytes_asked). */
    size_t asked_bytes;
    size_t size_bytes;
    /* The page size sizes were rounded to (base or huge page size), and the
     * one the kernel uses for the mapping (smaps KernelPageSize). */
    size_t page_bytes_asked;
    size_t page_bytes;
    /* Bytes of the arena present in this process's page tables after the
     * open (smaps Rss, plus Shared_ and Private_Hugetlb for huge pages):
     * size_bytes after a prefault or a lock; not counted: device memory
     * (VM_PFNMAP), and the shared zero page that reading fresh private
     * memory maps (a read-only private /dev/zero arena shows 0). */
    size_t resident_bytes;
    int lock_state; /* RTM_ARENA_UNLOCKED, _LOCKED, _LOCKED_HUGETLB, _LOCK_IGNORED,
                       _LOCKED_ON_FAULT: whatever was asked (mlockall in force) */
    int lock_errno; /* errno of a lock refused under RTM_ARENA_LOCK_TRY (ENOMEM:
                       RLIMIT_MEMLOCK, EPERM, EAGAIN), else 0 */
    /* VmLck after the open minus VmLck before, in bytes: size_bytes when
     * RTM_ARENA_LOCKED or _LOCKED_ON_FAULT, 0 otherwise. Signed: another
     * thread's mlock or munlock during the open moves it. */
    int64_t locked_bytes;
    /* Page faults the calling thread took during the open (getrusage
     * RUSAGE_THREAD): mapping, prefault and lock. About one per page faulted
     * in (one per huge page, transparent or not); major ones read a file. */
    uint64_t minor_faults;
    uint64_t major_faults;
    /* Bytes of the arena mapped by transparent huge pages (smaps):
     * AnonHugePages (private memory), ShmemPmdMapped (memfd, shm, SysV),
     * FilePmdMapped (files). */
    size_t anon_huge_bytes;
    size_t shmem_pmd_bytes;
    size_t file_pmd_bytes;
    /* true when /proc/self/status and the arena's smaps entry were read,
     * and that entry is all of the mapping (its Size: size_bytes, or all of
     * an existing SysV segment). Without /proc the figures above that come
     * from it are 0 and lock_state trusts mlock's return value. */
    bool verified;
};
typedef struct rtm_arena_report rtm_arena_report_t;

/* Bytes of rtm_arena_private.name: NAME_MAX (255) + 2, so that the longest
 * POSIX shm name taken ("/" and 255 bytes) fits with its NUL. */
#define RTM_ARENA_NAME_BYTES 257

/* rtmem's own bookkeeping inside struct rtm_arena: do not use. */
struct rtm_arena_private {
    const struct rtm_arena *self; /* where the open filled it: a copy is refused */
    void *map_start;              /* the mapping with its guard pages */
    size_t map_bytes;
    /* The object fd referred to at the open (st_dev, st_ino): close closes
     * fd, and removes a created name, only while they still refer to it. */
    uint64_t object_dev, object_ino;
    int dir_fd;                      /* FILE created: its directory (O_PATH), else -1 */
    int creator_pid;                 /* the process that created the object, 0 if none */
    int sysv_key;                    /* SYSV_SHM: the key of a segment created */
    unsigned char owned;             /* the object was created by this arena */
    unsigned char read_only;         /* mapped without PROT_WRITE */
    unsigned char attached;          /* a SysV segment is attached at base */
    char name[RTM_ARENA_NAME_BYTES]; /* created POSIX shm name, or created file's last component */
};

/* Size of rtm_arena.message, terminating NUL included. */
#define RTM_ARENA_MESSAGE_BYTES 512

/* An arena. The caller owns the structure (any storage); rtm_arena_open
 * fills it. Read the members, never write them. Do not copy or move an
 * open arena: it knows its own address, and the calls refuse a copy
 * (-EINVAL), which would otherwise unmap, close and remove a second time
 * what the first close already gave back and others may have reused. */
struct rtm_arena {
    void *base;        /* first byte of the memory; NULL when not open */
    size_t size_bytes; /* bytes from base: a multiple of page_bytes */
    size_t page_bytes; /* the page size in use, as asked (report.page_bytes:
                          as smaps shows it) */
    /* The object's descriptor (MEMFD, POSIX_SHM, FILE, DEVICE), open until
     * rtm_arena_close: e.g. to pass a memfd to another process. -1 for ANON
     * and SYSV_SHM. */
    int fd;
    int shm_id; /* SYSV_SHM: the segment's id; -1 otherwise */
    struct rtm_arena_report report;
    /* Why the open failed, or what it did not obtain; "" otherwise. */
    char message[RTM_ARENA_MESSAGE_BYTES];
    struct rtm_arena_private internal;
};
typedef struct rtm_arena rtm_arena_t;

/*
 * Opens the arena cfg describes into *a (any contents, but not an open
 * arena: -EBUSY): obtains the object, maps it, gives the THP advice,
 * prefaults, locks, and verifies (struct rtm_arena_report).
 * Returns 0, or a negative errno with a->message naming the cause; on
 * failure nothing it created is left behind, and a->base is NULL.
 *   EBUSY      *a is open (close it first); it is left as it was, message
 *              included
 *   EINVAL     a or cfg NULL; an unknown source, prefault, lock, thp or
 *              flag; size_bytes 0 where a size is needed; a page size the
 *              source cannot take or that is not a power of two; a missing
 *              or malformed name; an offset that is not a multiple of the
 *              page size; a flag the source does not take; THP advice on
 *              huge pages; a FILE that is not a regular file; a mode
 *              above 0777; an existing SysV segment whose pages (smaps
 *              KernelPageSize) are not page_bytes' size
 *   EOVERFLOW  the size rounded up, or offset + size, overflows
 *   ENAMETOOLONG  a shm name or a path's last component above NAME_MAX
 *   EEXIST     the shm name, SysV key or file exists (RTM_ARENA_EXISTING
 *              uses it)
 *   ENOENT     with RTM_ARENA_EXISTING, or for a DEVICE: no such object;
 *              a new FILE whose directory does not exist
 *   EISDIR     a FILE or DEVICE path that names a directory
 *   ENXIO      offset + size lies past the end of an existing object (file,
 *              device, shm object, segment), which is never extended; or
 *              a driver refused the offset or size
 *   ENOSPC     the filesystem of a new shm object or file has less room
 *              than the arena (its pages would fault with SIGBUS)
 *   ENOMEM     no huge pages free in the pool (the message names the file
 *              that reserves them); a lock beyond RLIMIT_MEMLOCK under
 *              RTM_ARENA_LOCK_MUST; a page mlock could not fault in (under
 *              _TRY too); memory exhausted
 *   EAGAIN     mlock locked only part of the arena (memory short), under
 *              RTM_ARENA_LOCK_MUST; or mlockall(MCL_FUTURE) is in force
 *              and the arena (which the kernel then locks at mmap) does
 *              not fit within RLIMIT_MEMLOCK (the message gives VmLck and
 *              the limit)
 *   EPERM, EACCES  a privilege the call needs (the message names it:
 *              CAP_IPC_LOCK, hugetlb_shm_group, the object's permissions)
 *   EOPNOTSUPP a huge page size this kernel or CPU does not have
 *   EFAULT     the prefault reached a page that cannot be faulted in: past
 *              the end of what the object maps, or its filesystem (tmpfs,
 *              disk) is full
 *   and the errno of any other failed call, named in the message.
 * Time: with a prefault or a lock, O(size_bytes / page size): every page is
 * faulted in (fresh memory zeroed by the kernel). Otherwise a fixed number
 * of system calls. Either way it reads /proc/self/smaps up to the arena's
 * entry (twice when a lock or a prefault has to be explained), and to
 * write each entry listed before it the kernel walks that mapping's page
 * tables: O(pages the process maps below the arena's address), with the
 * process's mmap lock held for reading, so that meanwhile other threads'
 * mmap, munmap and mprotect wait (their page faults mostly do not). A
 * start-up call.
 */
RTM_API int rtm_arena_open(struct rtm_arena *a, const struct rtm_arena_config *cfg);

/*
 * Unmaps the arena (and its locks), closes its descriptor and removes the
 * object it created (in the process that created it). Heaps on it must be
 * destroyed first: their memory is gone. An arena that is not open (base
 * NULL, e.g. zero-initialised or closed) is left as it is and gives 0.
 * Returns 0, or the negative errno of a step that failed (a->message says
 * which; the other steps are still done, and the arena is closed):
 *   EINVAL     a NULL, or a copy of an open arena (nothing done)
 *   EBADF      a->fd no longer refers to the object opened (the caller
 *              closed it, or put another descriptor under its number): it
 *              is left open, the rest is done
 *   and the errno of a failed munmap, shmdt, shm_unlink, shmctl, unlink or
 *   close.
 * Time: O(resident pages) for the kernel to free them. A start-up call.
 */
RTM_API int rtm_arena_close(struct rtm_arena *a);

/*
 * Creates a heap of the named kind (rtm_heap_kinds()) on the whole arena:
 * rtm_heap_create_ex(kind, a->base, a->size_bytes, cfg); cfg NULL means the
 * defaults. Returns the heap (at a->base), or NULL with errno set: EINVAL
 * for a NULL or closed arena or a copy of an open one, EACCES for a
 * read-only one, else as
 * rtm_heap_create_ex. Destroy the heap before closing the arena.
 * Time: the kind's create bound.
 */
RTM_API struct rtm_heap *rtm_arena_heap(struct rtm_arena *a, const char *kind,
                                        const struct rtm_heap_config *cfg);

/*
 * Writes a short human account of the report into buf (always
 * NUL-terminated when size > 0), e.g.
 *   "anon: 64 MiB of 4 KiB pages (4 KiB asked), resident 64 MiB;
 *    prefault touch: 16384 minor, 0 major faults; lock must: locked,
 *    VmLck +65536 kB; THP default: AnonHugePages 0, ShmemPmdMapped 0,
 *    FilePmdMapped 0"
 * (on one line), followed by "; " and the message if there is one, or
 * "not open: " and the message of a failed open. Returns the
 * length of the whole text (as snprintf: at least size means it was cut),
 * or -EINVAL for a NULL arena, a copy of an open one, or a NULL buf with a
 * size. O(1).
 */
RTM_API int rtm_arena_describe(const struct rtm_arena *a, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* RTMEM_ARENA_H */
