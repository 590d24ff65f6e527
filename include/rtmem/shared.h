/*
 * rtmem: named heaps that several processes share.
 *
 * A shared heap is a named segment holding a header, a small catalog of
 * named objects and a heap of any kind rtm_heap_kinds() lists, locked
 * RTM_HEAP_LOCK_ROBUST_SHARED (rtmem/lock.h). One process creates it;
 * others attach to it by name. Each process maps it wherever its mapping
 * lands: the heap stores offsets, never addresses, so every rtm_heap_*
 * call (rtm_heap_check included) works on rtm_shared_heap() in every
 * process, and takes the heap's lock itself.
 * Pointers into the segment differ between processes: pass offsets
 * (rtm_shared_to_offset, rtm_shared_from_offset) or catalog names between
 * them, never addresses.
 *
 * Where it lives. A heap of base pages is a POSIX shared memory object
 * ("/rtmem-<name>", the file /dev/shm/rtmem-<name>). A heap of huge pages
 * (rtm_shared_config.page_bytes) is the file "rtmem-<name>" on a hugetlbfs
 * mount of that page size (the first in /proc/self/mounts, whose pagesize=
 * option gives its page size, that this process may create files in; the
 * usual mount is /dev/hugepages, of the default huge page size): a POSIX
 * shm object cannot take huge pages. Its size is rounded up to the huge
 * page size, and all its pages are reserved from the hugetlb pool when it
 * is created, touched or not (a pool too small fails the create with
 * ENOMEM, never a page fault with SIGBUS later): reserve them first, for
 * 2 MiB pages on x86-64 with
 *   echo N > /proc/sys/vm/nr_hugepages
 * (or /sys/kernel/mm/hugepages/hugepages-<size>kB/nr_hugepages for another
 * size), and mount hugetlbfs if no mount of that size exists
 * (mount -t hugetlbfs -o pagesize=2M none /dev/hugepages). They are never
 * swapped out, and go back to the pool when the name is unlinked and the
 * last process unmaps them.
 *
 * The names form one space: a name exists if either place holds it.
 * Create refuses with EEXIST a name that /dev/shm or any hugetlbfs mount
 * holds (two creates of one name in two places at the same time may both
 * fail so; one at most succeeds). Attach looks in /dev/shm first, then on
 * every hugetlbfs mount in /proc/self/mounts' order, and maps a heap of
 * huge pages with its mount's page size; unlink removes the name from
 * every place that holds it. A hugetlbfs mount this process cannot search
 * is not looked in. rtm_shared_get_info says the page size in use, as the
 * kernel reports it.
 *
 * Segment layout (layout version RTM_SHARED_LAYOUT_VERSION), from offset 0:
 *   the header (128 bytes): magic "rtmSHRD\0", layout version, state
 *     (initialising, then ready), total size in bytes, attach count, the
 *     catalog's entry count and offset, the heap's offset, the creator's pid,
 *     the kind's name;
 *   the catalog: catalog_entries entries of 48 bytes (a name and an offset);
 *   the heap: its lock area, its undo log, then the kind's heap, on the
 *     rest; every block ends with a 16-byte owner record (rtmem/lock.h).
 * Version 2 added the undo log and the owner records; version 3 TLSF's
 * 32-bit layout; version 4 the lock's timeout (rtmem/lock.h, "Bounded
 * waits"), which an older build would not keep; version 5 heapmem's and
 * xnheap's 12-byte page-map entries, halffit, and TLSF's control fields
 * reordered; version 6 TLSF's and xvheap's free-block links, moved past
 * an overflow's reach; version 7 TLSF's and xvheap's copies of the
 * hardening level, the tag key and "several pools" beside their bitmap: a
 * segment of another version is refused (EPROTO).
 * Offset 0 is the header: no block ever lies there, so 0 stands for "no
 * object" wherever an offset is given.
 *
 * Life cycle. rtm_shared_create makes the object (O_CREAT | O_EXCL: a name
 * that exists is refused with EEXIST, whether or not its creator still
 * runs, so live data is never wiped), writes the header, builds the heap
 * and publishes the state "ready" last (a release store). rtm_shared_attach
 * maps an existing object and checks its header before it trusts it; it
 * never writes to a segment it refuses and never reinitialises one. A
 * creator is one attached process like the others: its detach, exit or
 * death changes nothing for them. rtm_shared_detach unmaps this process's
 * view; the heap and its blocks live on. rtm_shared_unlink removes the name
 * (shm_unlink): no process can attach any more, a create under the name
 * makes a new heap, and the memory is given back when the last process
 * that maps it unmaps it (detach, exit or death): POSIX semantics, nothing
 * of rtmem's. A name nobody unlinks lasts until reboot (tmpfs; on
 * hugetlbfs, until the mount goes), even with no process attached, and a
 * heap of huge pages keeps its pages from the pool as long.
 *
 * What attach checks. The header (magic, version, state, size, offsets,
 * kind); the heap's own header (its kind, its hardening level, its robust
 * shared lock, its lock area inside the segment, no handler address); and
 * the kind's layout: its control structure and every pool descriptor lie
 * inside the segment, and so does every range they name (TLSF: a pool's
 * blocks and its sentinel; halffit: a pool's fence, fragments and
 * sentinel; heapmem and xnheap: a pool's page map and pages), aligned and
 * in order, their sizes adding up to the heap's counts,
 * the pool list ending after as many pools as the heap counts (a cycle is
 * refused). And the lock's mutex, before any call takes it: its type and
 * (with glibc) the kind its init gave, and no holder that cannot hold it:
 * a thread that is gone or exiting, a kernel thread (the kernel clears a
 * dead holder of a robust mutex; glibc aborts a process that waits on one
 * that names such a task): a mutex crafted before the attach is a refused attach, never an abort. A
 * call that later finds its lock held by a task that cannot hold it (gone,
 * exiting, a kernel thread) reports a corruption and fails
 * (-ENOTRECOVERABLE) instead of waiting; other damage written into the
 * mutex after the attach, by a process that may write the segment, can
 * still upset the C library's lock calls. O(pools), reading nothing
 * outside the segment, whatever it holds. A heap with a pool added outside
 * the segment (rtm_heap_add_pool of this process's own memory) is refused
 * too: other processes could not reach that pool. What attach does not
 * check is what every operation changes (free lists, trees, page maps,
 * block headers): a segment that rtmem wrote is consistent there (or its
 * lock says it is not, rtmem/lock.h), but one damaged there by something
 * else, or crafted, can still make an rtm_heap_* call fault.
 * rtm_heap_check is the exception: on a heap attach accepted it reads
 * nothing outside the segment, whatever those hold, and reports their
 * damage (-EFAULT); a process that cannot trust what it attached to calls
 * it first (a mutex held by a live thread that never gives it back still
 * makes it wait, as any call that takes the lock).
 * Share a heap only between processes you trust with its memory: each can
 * change it at any time. Every process
 * attached must run the same rtmem build: the layout version guards the
 * segment, and a heap's kind is recorded as an index into this library's
 * list of kinds.
 *
 * Who can attach what. The operating system decides who may open the
 * segment: its mode (rtm_shared_config.mode, 0600 by default, applied as
 * given) must let the process read and write it (EACCES otherwise). On top
 * of that, attach refuses (EPERM) a segment it should not trust, from the
 * object alone (fstat), before it maps, prefaults or locks it: one owned by
 * a user other than this process's effective user, root, or
 * rtm_shared_config.trusted_uid (a user who creates a name first,
 * another's attach would otherwise land in a segment that user controls);
 * and one writable by every user (o+w), whoever made it so. A heap meant
 * for several users is created by one of them (or root) with a group
 * mode, such as 0660, and the others attach with trusted_uid set to the
 * creator's uid. RTM_SHARED_TRUST_ANY_OWNER and
 * RTM_SHARED_TRUST_WORLD_WRITABLE lift either check, for a process that
 * trusts every user of the machine. Whoever may write the segment can
 * damage the heap, its lock included, at any time (attach's checks hold
 * for what the segment was when it attached: see "What attach checks"),
 * so admit only trusted users.
 *
 * Attach count. The header counts the processes attached (create and each
 * attach add one, each detach takes one away, atomically). A process that
 * dies or exits without detaching stays counted: the count says how many
 * attachments were not detached, not how many processes live.
 *
 * Crash safety. A process killed at any instruction while it holds the
 * heap's lock (inside an alloc, a free, a realloc) is handled as
 * rtmem/lock.h says ("Owner death"): the next caller rolls the dead call
 * back from the heap's undo log, so the heap is exactly as that call found
 * it, checks it and goes on. Every block records the process that
 * allocated it (16 bytes per block, rtmem/lock.h); blocks a dead process
 * had allocated stay allocated until a process reclaims them ("Owners").
 * A process killed during rtm_shared_create leaves a
 * segment in the state "initialising": attach refuses it (EBUSY) for ever;
 * unlink the name and create it again.
 *
 * Owners. Each block records the process that allocated it: its pid and
 * its start time, so that a pid the system hands to a new process is not
 * taken for the old one (all processes must share one pid namespace). A
 * child made by fork learns its own identity (pthread_atfork); one made by
 * a raw clone(2), which skips fork's handlers, records its parent's. A
 * realloc keeps the owner; rtm_shared_set_owner changes it, to another
 * running process or to the heap itself (pid 0: never reclaimed, for data
 * that outlives its creator). rtm_shared_orphans lists the blocks whose
 * owner no longer runs; rtm_shared_reclaim frees them. Neither ever
 * touches a block the catalog points into, a block the heap owns, or one
 * whose record its user overran (its last 16 bytes past the usable size:
 * no owner known). They go by owner alone: a block a live process still
 * uses, because it reached it from a published object (a queue's node) or
 * kept a dead process's realloc'd block, is reclaimed with its dead owner's
 * others. Give such blocks to the heap or to their user first
 * (rtm_shared_set_owner). They are maintenance calls, not for a control
 * loop: each walks every block (O(blocks)) with the heap's lock held,
 * twice, reads /proc between the walks with the lock given back, and
 * mallocs a set of the owners it met. Where /proc does not show a process
 * (not mounted, or mounted hidepid= and the process another user's), a pid
 * that kill(2) finds counts as running, reused or not.
 *
 * The catalog maps names (up to RTM_SHARED_CATALOG_NAME_MAX bytes) to
 * offsets of objects in the segment, so that processes find each other's
 * data: rtm_shared_publish, rtm_shared_lookup, rtm_shared_unpublish. Its
 * size is fixed at create (rtm_shared_config.catalog_entries). Its calls take
 * the heap's lock, so they wait for, and make wait, heap calls like any
 * other call (rtmem/lock.h). A process killed inside a catalog call leaves
 * it consistent by construction: an entry is in use only once its offset,
 * written last, is non-zero, and an unpublish clears the offset first.
 *
 * Handles. struct rtm_shared is this process's attachment: create and
 * attach allocate it with malloc, detach frees it. A child made by fork
 * inherits the mapping and may use its parent's handle (the heap's lock is
 * process-shared); its detach of that handle frees the copy and unmaps the
 * child's view without changing the attach count, which counts the parent's
 * attach only. A program whose children must be counted attaches in each.
 *
 * Bounds. Create, attach, detach and unlink are start-up calls: they make
 * system calls, read /proc/self/mounts (create and unlink always, attach
 * when /dev/shm does not hold the name), map memory, use malloc, and with
 * a prefault or a lock take time proportional to the size
 * (rtmem/arena.h). rtm_shared_heap, the offset conversions and
 * rtm_shared_get_info are O(1) and take no lock; the catalog calls are
 * O(catalog_entries) plus the heap's lock.
 *
 * Threads. Several threads may use one handle at once for heap and catalog
 * calls; detach must come after every other call on the handle.
 *
 * Errors: NULL with errno set, or a negative errno value; nothing prints or
 * aborts.
 */
#ifndef RTMEM_SHARED_H
#define RTMEM_SHARED_H

#include <stddef.h>
#include <stdint.h>

#include "rtmem/export.h"
#include "rtmem/heap.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The layout version this library writes and attaches to (the history is
 * under "Segment layout" above); a segment of another version is refused
 * with EPROTO. */
#define RTM_SHARED_LAYOUT_VERSION   7u
/* Longest heap name, in bytes (letters, digits, '-', '_', '.'). */
#define RTM_SHARED_NAME_MAX         200
/* Longest catalog name, in bytes (any bytes but NUL). */
#define RTM_SHARED_CATALOG_NAME_MAX 31
/* Catalog entries when the config says 0, and the most a config may ask. */
#define RTM_SHARED_CATALOG_DEFAULT  32u
#define RTM_SHARED_CATALOG_MAX      4096u

/* One process's attachment to a named shared heap. Opaque. */
struct rtm_shared;
typedef struct rtm_shared rtm_shared_t;

/* Options of rtm_shared_create_ex and rtm_shared_attach_ex. Zero-initialised
 * it means the defaults of rtm_shared_create: mode 0600, 32 catalog entries,
 * RTM_HEAP_HARDEN_O1, base pages, no prefault, no lock, no THP advice. */
struct rtm_shared_config {
    /* Create only: permissions of the shm object or hugetlbfs file (0777 at
     * most; 0: 0600), applied as given (the umask takes nothing from them).
     * A process attaches only if they let it read and write. */
    unsigned mode;
    /* Create only: catalog entries (0: RTM_SHARED_CATALOG_DEFAULT; at most
     * RTM_SHARED_CATALOG_MAX). */
    uint32_t catalog_entries;
    /* Create only: the heap's hardening (RTM_HEAP_HARDEN_*; 0 is _O1) and
     * its check_interval (rtmem/heap.h). */
    int hardening;
    uint32_t check_interval;
    /* Create only: 0 for base pages (a POSIX shm object in /dev/shm; the
     * base page size means the same), or a huge page size
     * (RTM_ARENA_PAGE_2M, RTM_ARENA_PAGE_1G: a power of two the kernel lists
     * under /sys/kernel/mm/hugepages): the segment is then the file
     * "rtmem-<name>" on the first hugetlbfs mount of that page size in
     * /proc/self/mounts that this process may create files in, its pages
     * reserved from the hugetlb pool when it is created (see the top). An
     * attach takes the page size from the file's mount. */
    size_t page_bytes;
    /* Both: this process's mapping, as rtmem/arena.h describes them:
     * RTM_ARENA_PREFAULT_*, RTM_ARENA_LOCK_*, RTM_ARENA_THP_* (THP advice
     * is for heaps of base pages: on one of huge pages it is EINVAL). */
    int prefault;
    int lock;
    int thp;
    /* Attach only: whom this process trusts with the segment (see "Who can
     * attach what"): RTM_SHARED_TRUST_* flags (0: its own effective user
     * and root own it, and only a creator made it world-writable), and one
     * more owner it accepts (0: none more). */
    unsigned trust;
    uint32_t trusted_uid;
    /* Create only: the heap's bound on a wait for its lock, in microseconds
     * (0: no bound): a call that waits longer for a holder (one stopped,
     * or gone wrong) gives up with -ETIMEDOUT (rtmem/lock.h, "Bounded
     * waits"). It is the heap's, for every process attached;
     * rtm_heap_set_lock_timeout changes it. */
    uint32_t lock_timeout_us;
};
typedef struct rtm_shared_config rtm_shared_config_t;

/* rtm_shared_config.trust: attach a segment whatever user owns it; attach
 * one writable by every user although its creator did not make it so. */
#define RTM_SHARED_TRUST_ANY_OWNER      1u
#define RTM_SHARED_TRUST_WORLD_WRITABLE 2u

/* What a shared heap's header says (rtm_shared_get_info). */
struct rtm_shared_info {
    size_t size_bytes;        /* the whole segment, header included */
    size_t page_bytes;        /* the page size this process maps it with: smaps'
                                 KernelPageSize (4 KiB, 2 MiB, 1 GiB), read when it
                                 attached (without /proc: the size it asked) */
    uint64_t heap_offset;     /* where the heap starts in the segment */
    uint32_t attach_count;    /* attachments not detached (see the top) */
    uint32_t catalog_entries; /* fixed at create */
    int creator_pid;          /* the process that created it (it may be gone) */
    const char *kind;         /* the heap's kind: rtm_heap_kind's (static) string */
    void *base;               /* where this process maps the segment */
};
typedef struct rtm_shared_info rtm_shared_info_t;

/*
 * Creates the shared heap `name` of the given kind, of size bytes in all
 * (rounded up to the page size in use, base or huge; header, catalog and
 * the heap's own overhead come out of it), and attaches this process to
 * it. Returns the handle, or NULL with errno set, and then leaves no
 * object behind (no shm object, no hugetlbfs file, no huge page taken):
 *   EINVAL       name, kind NULL; a name empty or with a byte other than a
 *                letter, digit, '-', '_', '.'; a bad config field (the
 *                attach-only trust and trusted_uid included); a
 *                page_bytes that is no power of two above the base page
 *                size; THP advice with huge pages
 *   ENAMETOOLONG a name longer than RTM_SHARED_NAME_MAX
 *   EEXIST       the name exists, in /dev/shm or on a hugetlbfs mount
 *                (whether its creator lives or not)
 *   ENOENT       no heap kind of that name
 *   ENOMEM       size too small for header, catalog and one block; memory
 *                exhausted; a lock refused (rtmem/arena.h); with huge
 *                pages, fewer free in the pool than the size needs (or
 *                a hugetlbfs size= limit, a cgroup's hugetlb limit)
 *   ENOSPC       /dev/shm has less room than size
 *   EOPNOTSUPP   page_bytes is a huge page size this kernel does not have
 *   ENODEV       no hugetlbfs is mounted with pages of page_bytes
 *   EACCES, EROFS  hugetlbfs mounts of that page size exist, and this
 *                process may create files in none (the first one's refusal)
 *   and the errors of rtm_arena_open and rtm_heap_create_ex.
 * A start-up call: O(size) with a prefault or a lock, plus the kind's create.
 */
RTM_API struct rtm_shared *rtm_shared_create(const char *name, const char *kind, size_t size);

/* rtm_shared_create with options (cfg NULL: the defaults). */
RTM_API struct rtm_shared *rtm_shared_create_ex(const char *name, const char *kind, size_t size,
                                                const struct rtm_shared_config *cfg);

/*
 * Attaches this process to the existing shared heap `name`, mapped wherever
 * the kernel places it: the POSIX shm object if /dev/shm holds the name,
 * else the first hugetlbfs file of that name (mapped with its mount's page
 * size; it takes no further page from the pool). Returns the handle, or
 * NULL with errno set; a segment refused is left untouched (not written,
 * not removed):
 *   EINVAL       a bad name or config field (as create; THP advice for a
 *                heap of huge pages); or the object is no
 *                rtmem shared heap: wrong magic, size other than its header
 *                says, offsets or kind that do not hold together, a heap
 *                whose control structure or pools do not lie inside the
 *                segment (see "What attach checks" above)
 *   ENAMETOOLONG a name longer than RTM_SHARED_NAME_MAX
 *   ENOENT       no such name, in /dev/shm or on a hugetlbfs mount
 *   EPROTO       an rtmem shared heap of another layout version
 *   EBUSY        a heap still being created (empty object, even one whose
 *                mode does not admit this process yet, sized while
 *                attach looked, header not yet or only partly written, state
 *                "initialising"): always EBUSY, never EINVAL, so that a
 *                program that unlinks what is no heap never removes one
 *                being made; retry. One whose creator died during create
 *                stays so: unlink it
 *   EACCES       the object's permissions refuse read and write (an
 *                object with a size: an empty one is EBUSY)
 *   EPERM        a segment this process does not trust (see "Who can
 *                attach what"): owned by another user, or writable by every
 *                user without its creator having made it so
 *   and the errors of rtm_arena_open.
 * A start-up call (as create).
 */
RTM_API struct rtm_shared *rtm_shared_attach(const char *name);

/* rtm_shared_attach with the mapping options of cfg (prefault, lock, thp)
 * and whom it trusts (trust, trusted_uid); the create-only fields,
 * page_bytes included, must be 0, and trust hold no unknown flag (EINVAL).
 * cfg NULL: the defaults. */
RTM_API struct rtm_shared *rtm_shared_attach_ex(const char *name,
                                                const struct rtm_shared_config *cfg);

/* The heap, at this process's address: use it with every rtm_heap_* call
 * (never rtm_heap_destroy: the heap belongs to every process attached;
 * rtm_heap_add_pool refuses with -ENOTSUP: the segment is all its memory).
 * NULL for a NULL handle. O(1). */
RTM_API struct rtm_heap *rtm_shared_heap(struct rtm_shared *s);

/*
 * Detaches: takes this attachment off the count, unmaps this process's view
 * and frees the handle (s is invalid afterwards, whatever the result). The
 * heap, its blocks and the name live on. Pointers into the segment are
 * invalid in this process afterwards. Returns 0, -EINVAL for NULL, or the
 * error of unmapping (rtm_arena_close). A start-up call.
 */
RTM_API int rtm_shared_detach(struct rtm_shared *s);

/*
 * Removes the name from every place that holds it (/dev/shm and each
 * hugetlbfs mount): no process can attach any more. The memory (and a
 * heap's huge pages) lives until the last process that maps it detaches,
 * exits or dies. Works on a segment attach refuses (a stale or damaged one)
 * too: it is how such a name is cleared. Returns 0, or -EINVAL /
 * -ENAMETOOLONG for a bad name, -ENOENT for a name that no place holds, or
 * the first refusal of a place that holds it (-EACCES, or the other errors
 * of shm_unlink and unlink; the other places are cleared still).
 */
RTM_API int rtm_shared_unlink(const char *name);

/* The offset of p in the segment, the same in every process; 0 for NULL, a
 * NULL handle or an address outside the segment. Offset 0 is the segment's
 * header, never an object: the segment's first byte also gives 0. O(1). */
RTM_API uint64_t rtm_shared_to_offset(const struct rtm_shared *s, const void *p);

/* The address in this process of the offset off; NULL for 0, a NULL handle
 * or an offset outside the segment. Only the first byte is checked: an
 * object of n bytes there fits when off + n <= rtm_shared_info.size_bytes.
 * O(1). */
RTM_API void *rtm_shared_from_offset(const struct rtm_shared *s, uint64_t off);

/* Copies what the header says into *out. Returns 0 or -EINVAL (NULL
 * arguments). O(1), no lock: the attach count is read atomically. */
RTM_API int rtm_shared_get_info(const struct rtm_shared *s, struct rtm_shared_info *out);

/*
 * Publishes p (an address in the segment, typically a block of the heap)
 * under name in the catalog. Returns 0, or
 *   -EINVAL   NULL arguments; a name empty or longer than
 *             RTM_SHARED_CATALOG_NAME_MAX; p outside the segment
 *   -EEXIST   the name is published already (unpublish it first)
 *   -ENOSPC   every entry is in use
 *   and the heap lock's errors (rtmem/lock.h: -ENOTRECOVERABLE, -EDEADLK,
 *   -ETIMEDOUT).
 * O(catalog_entries) with the heap's lock held.
 */
RTM_API int rtm_shared_publish(struct rtm_shared *s, const char *name, const void *p);

/* The address in this process of the object published under name, or NULL
 * with errno set: ENOENT (not published), EINVAL (NULL arguments, a bad
 * name), EFAULT (an entry that points past the segment: damaged), or the
 * lock's errors. O(catalog_entries) with the lock held. */
RTM_API void *rtm_shared_lookup(struct rtm_shared *s, const char *name);

/* Removes name from the catalog (the object itself is not freed). Returns
 * 0, -ENOENT (not published), -EINVAL, or the lock's errors.
 * O(catalog_entries) with the lock held. */
RTM_API int rtm_shared_unpublish(struct rtm_shared *s, const char *name);

/* A block whose owner no longer runs (rtm_shared_orphans). */
struct rtm_shared_orphan {
    uint64_t offset; /* the block, as rtm_shared_to_offset gives it */
    size_t bytes;    /* its usable size */
    int pid;         /* the process that allocated it, gone */
};
typedef struct rtm_shared_orphan rtm_shared_orphan_t;

/*
 * Lists the blocks whose owner no longer runs, skipping those the catalog
 * points into: fills out[0 .. max) and returns how many there are (which
 * may be more than max; out may be NULL when max is 0), or a negative
 * errno (-EINVAL, -ENOMEM, the lock's errors). O(blocks), with the lock
 * held twice ("Owners" above).
 */
RTM_API long rtm_shared_orphans(struct rtm_shared *s, struct rtm_shared_orphan *out, size_t max);

/*
 * Frees the blocks of process pid, which must be gone (-EBUSY while it
 * runs and owns a block), or, for pid 0, of every process that is gone;
 * skips blocks the catalog points into. A pid the system has given to a
 * new process that owns blocks too answers -EBUSY: reclaim with pid 0
 * then, which tells the two apart by start time. Returns how many it freed
 * (0: none), or a negative errno (-EINVAL for a NULL handle or a negative
 * pid, -ENOMEM, the lock's errors; a lock error after some blocks were
 * freed ends the call, which returns their count). O(blocks) per 256
 * blocks freed, the lock held for each walk ("Owners" above).
 */
RTM_API long rtm_shared_reclaim(struct rtm_shared *s, int pid);

/*
 * Makes pid the owner of block p: a running process (-ESRCH otherwise),
 * or 0 for the heap itself (a block no reclaim ever frees). Returns 0,
 * -EINVAL (NULL handle, negative pid, p no block of the heap), or the
 * lock's errors. O(1) with the lock held (a /proc read for another pid).
 */
RTM_API int rtm_shared_set_owner(struct rtm_shared *s, void *p, int pid);

/* The owner of block p: its pid, 0 for the heap, -EBADMSG for a record its
 * user overran (no owner known), -EINVAL for NULL or no block, or the
 * lock's errors. O(1) with the lock held. */
RTM_API int rtm_shared_owner(struct rtm_shared *s, const void *p);

#ifdef __cplusplus
}
#endif

#endif /* RTMEM_SHARED_H */
