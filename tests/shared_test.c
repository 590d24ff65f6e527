/*
 * Shared heaps (rtmem/shared.h), one section per CTest entry (ctest -R
 * shared):
 *   lifecycle  create, attach, detach, unlink, and the errno of each refusal;
 *              the mode as given whatever the umask, attach racing create
 *              (EBUSY, never EINVAL), who may attach (EPERM otherwise)
 *   exists     a name whose creator exited or was killed: EEXIST, and the
 *              heap still attaches
 *   address    a child that maps the segment elsewhere: addresses differ,
 *              offsets agree, each sees the other's data
 *   concurrent processes allocating, writing, verifying and freeing in one
 *              heap of every kind; rtm_heap_check passes afterwards
 *   creator    the creator dies (killed, and killed holding the heap's
 *              lock) while others stay attached: the heap lives on
 *   stale      objects that are no valid heap are refused and left as they
 *              were (byte for byte)
 *   catalog    publish, lookup, unpublish: bounds, errors, across processes
 *   crafted    segments whose headers hold and whose kind's layout does not
 *              (a heap at the very end, pools outside or in a cycle, garbage
 *              control words): every kind's refused (EINVAL), untouched
 *   threads    threads sharing one handle for heap and catalog calls while
 *              each attaches and detaches handles of its own (make
 *              test-tsan runs every section under ThreadSanitizer)
 *   huge       a heap of 2 MiB huge pages on hugetlbfs: create, attach from
 *              a child at another address, processes sharing it, the page
 *              size reported, one name space with /dev/shm (EEXIST both
 *              ways, attach and unlink wherever the name is), the errno of
 *              each refusal, no file or huge page left behind
 * Every shm object a section makes is named "/rtmem-shtest-<pid>-<n>" (and
 * a hugetlbfs file "rtmem-shtest-<pid>-<n>") and removed at the end (and at
 * exit, and on a fatal signal), on failure too; the section then checks
 * that /dev/shm and the hugetlbfs mount hold nothing of its own.
 *
 * The huge section must not depend on what other programs do with huge
 * pages meanwhile: the machine's pool counters (free_hugepages,
 * resv_hugepages) move under it whenever another program maps huge pages.
 * As root it therefore works on a hugetlbfs mount of its own, in a mount
 * namespace of its own (nothing outside the test sees it, and the 2 MiB
 * mounts it inherited are detached there, so that rtmem finds this one):
 * mounted with size= and min_size= of OWN_PAGES pages, the mount holds
 * its pages from the moment it is mounted (no other program can take
 * them), its statfs counts the pages this test's heaps hold, and a create
 * beyond it is refused as one beyond the pool would be. It reserves the
 * pages that mount needs by raising nr_hugepages, and takes back exactly
 * as many at the end, at exit and on a fatal signal (by what the pool holds
 * then: writing the old size back would undo what another process reserved
 * meanwhile). Without root it uses the first hugetlbfs mount of 2 MiB
 * pages it may write in, checks what its own files hold, and says that it
 * leaves out the checks of pages held, which would read counters other
 * programs change. Where it can have neither, it exits with 77 (CTest:
 * skipped) and says why.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <mntent.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "rtmem/rtmem.h"
#include "../src/heap/kind.h"
#include "../src/lock/lock.h"
#include "../src/shared/internal.h"
#include "heap_layout.h"

/* ---- names, and their removal whatever happens ------------------------------------- */

#define MAX_NAMES 64
static char names[MAX_NAMES][RTM_SHARED_NAME_MAX + 1];
static int name_count;
static int owner_pid;

static void remember_paths(void);

#define SKIP 77
#define MIB  ((size_t)1 << 20)
#define HUGE ((size_t)2 << 20)

/* The huge section's state, which the cleanup (at exit, on a signal) reads:
 * the hugetlbfs mount in use, the directory the test mounted it on (when
 * it did), and the huge pages it added to the 2 MiB pool. Its own mount
 * holds OWN_PAGES pages. */
static char huge_dir[256];
static char made_dir[256];
static uint64_t pages_added;
#define OWN_PAGES 4
#define POOL_DIR  "/sys/kernel/mm/hugepages/hugepages-2048kB"
static const char pool_path[] = POOL_DIR "/nr_hugepages";

/* A fresh heap name of this process, remembered for the cleanup. */
static const char *new_name(void)
{
    if (name_count == MAX_NAMES)
        abort();
    char *n = names[name_count++];
    snprintf(n, sizeof names[0], "shtest-%d-%d", (int)getpid(), name_count);
    remember_paths();
    return n;
}

/* A number from a /proc or /sys file, and one written to it: read(2) and
 * write(2) only, so that a signal handler may call them. */
static bool read_u64(const char *path, uint64_t *v)
{
    char buf[32];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0 || buf[0] < '0' || buf[0] > '9')
        return false;
    *v = 0;
    for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
        *v = *v * 10 + (uint64_t)(buf[i] - '0');
    return true;
}

static bool write_u64(const char *path, uint64_t v)
{
    char buf[24];
    size_t n = sizeof buf;
    do
        buf[--n] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool ok = write(fd, buf + n, sizeof buf - n) == (ssize_t)(sizeof buf - n);
    return close(fd) == 0 && ok;
}

/* Every signal held off while the pool and pages_added change together: a
 * signal's cleanup between the two would give back too few pages, or give
 * them back twice. (The cleanup itself runs with every signal blocked.) */
static void hold_signals(sigset_t *old)
{
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, old);
}

static void release_signals(const sigset_t *old)
{
    sigprocmask(SIG_SETMASK, old, NULL);
}

/* The pool's persistent pages: what nr_hugepages sets. (Reading it shows
 * surplus pages too: pages in use when the pool was shrunk, which go as
 * soon as they are freed, and which raising the pool takes back first.) */
static bool read_persistent(uint64_t *v)
{
    uint64_t nr, surplus;
    if (!read_u64(pool_path, &nr) || !read_u64(POOL_DIR "/surplus_hugepages", &surplus))
        return false;
    *v = nr > surplus ? nr - surplus : 0;
    return true;
}

/* Takes back the huge pages the test added, by what the pool holds now.
 * True if the pool shrank as asked (or nothing was added). */
static bool give_back_pages(void)
{
    sigset_t old;
    hold_signals(&old);
    uint64_t added = pages_added, now = 0;
    pages_added = 0;
    bool ok = added == 0;
    if (!ok && read_persistent(&now)) {
        uint64_t want = now > added ? now - added : 0;
        ok = write_u64(pool_path, want) && read_persistent(&now) && now == want;
    }
    release_signals(&old);
    return ok;
}

/* Unmounts and removes the directory the test mounted hugetlbfs on. */
static void unmount_dir(void)
{
    if (!made_dir[0])
        return;
    umount2(made_dir, MNT_DETACH);
    rmdir(made_dir);
    made_dir[0] = '\0';
}

/* A sanitizer's report that halts the process ends it in the runtime,
 * which runs no atexit function and raises no signal: it calls this
 * instead, when the program is built with a sanitizer (weak: NULL without
 * one; sanitizer/common_interface_defs.h declares it). */
void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

static void remove_all(void)
{
    if (getpid() != owner_pid)
        return; /* a child never removes what the test owns */
    for (int i = 0; i < name_count; i++)
        rtm_shared_unlink(names[i]); /* most are gone already: ENOENT */
    unmount_dir();                   /* first: the mount holds its pages until it goes */
    give_back_pages();
}

/* A section that hangs or is stopped (SIGALRM before ctest's timeout,
 * SIGTERM, SIGINT, SIGHUP, SIGPIPE from a reader that went away) removes
 * its objects too: unlink(2) of their files in /dev/shm and on the
 * hugetlbfs mount, which a signal handler may call, and no stdio; then it
 * unmounts and gives the huge pages back. */
static char paths[MAX_NAMES][sizeof "/dev/shm/rtmem-" + RTM_SHARED_NAME_MAX];
static char huge_paths[MAX_NAMES][sizeof huge_dir + sizeof "/rtmem-" + RTM_SHARED_NAME_MAX];

static void remove_on_signal(int sig)
{
    (void)sig;
    if (getpid() == owner_pid) {
        for (int i = 0; i < name_count; i++) {
            unlink(paths[i]);
            if (huge_paths[i][0])
                unlink(huge_paths[i]);
        }
        unmount_dir();
        give_back_pages();
    }
    _exit(3);
}

static void remember_paths(void)
{
    for (int i = 0; i < name_count; i++) {
        snprintf(paths[i], sizeof paths[i], "/dev/shm/rtmem-%.200s", names[i]);
        huge_paths[i][0] = '\0';
        if (huge_dir[0])
            snprintf(huge_paths[i], sizeof huge_paths[i], "%s/rtmem-%.200s", huge_dir, names[i]);
    }
}

/* Objects of this process left in dir. */
static int leftovers_in(const char *dir)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "rtmem-shtest-%d-", (int)getpid());
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
            fprintf(stderr, "left behind: %s/%s\n", dir, e->d_name);
            n++;
        }
    closedir(d);
    return n;
}

/* Objects of this process left in /dev/shm and on the hugetlbfs mount. */
static int leftovers(void)
{
    return leftovers_in("/dev/shm") + (huge_dir[0] ? leftovers_in(huge_dir) : 0);
}

static bool exists(const char *name)
{
    char path[128];
    snprintf(path, sizeof path, "/dev/shm/rtmem-%s", name);
    return access(path, F_OK) == 0;
}

/* A child's verdict: its exit status, 0 when all went well. */
static int wait_child(pid_t pid)
{
    int st;
    if (waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static uint32_t attach_count(const struct rtm_shared *s)
{
    struct rtm_shared_info info;
    return rtm_shared_get_info(s, &info) == 0 ? info.attach_count : UINT32_MAX;
}

static void *base_of(const struct rtm_shared *s)
{
    struct rtm_shared_info info;
    return rtm_shared_get_info(s, &info) == 0 ? info.base : NULL;
}

/* ---- lifecycle ---------------------------------------------------------------------- */

/* Last in every section: what it made removed (as at exit), and nothing
 * of this process left in /dev/shm or on the hugetlbfs mount. */
static void section_cleanup(void)
{
    remove_all();
    CHECK_EQ(leftovers(), 0);
}
#define SECTION_CLEANUP(section)                                             \
    TEST_CASE_IN(section, "the " section " section leaves no object behind") \
    {                                                                        \
        section_cleanup();                                                   \
    }

TEST_CASE_IN("lifecycle", "create makes the heap asked for, and the name is then taken")
{
    const char *name = new_name();
    errno = 0;
    CHECK(rtm_shared_attach(name) == NULL && errno == ENOENT);
    struct rtm_shared *a = rtm_shared_create(name, "tlsf", 1 << 20);
    REQUIRE(a != NULL, );
    struct rtm_shared_info info;
    CHECK_EQ(rtm_shared_get_info(a, &info), 0);
    CHECK_EQ(info.size_bytes, 1 << 20);
    CHECK_EQ(info.attach_count, 1);
    CHECK_EQ(info.catalog_entries, RTM_SHARED_CATALOG_DEFAULT);
    CHECK_EQ(info.creator_pid, getpid());
    CHECK(strcmp(info.kind, "tlsf") == 0);
    CHECK(info.heap_offset >= sizeof(struct shared_header) + 32 * sizeof(struct shared_entry));
    struct rtm_heap *h = rtm_shared_heap(a);
    CHECK_EQ(rtm_heap_lock_type(h), RTM_HEAP_LOCK_ROBUST_SHARED);
    CHECK(strcmp(rtm_heap_kind(h), "tlsf") == 0);

    errno = 0;
    CHECK(rtm_shared_create(name, "tlsf", 1 << 20) == NULL && errno == EEXIST);
    errno = 0;
    CHECK(rtm_shared_create(name, "heapmem", 2 << 20) == NULL && errno == EEXIST);
    CHECK_EQ(rtm_shared_detach(a), 0);
    CHECK_EQ(rtm_shared_unlink(name), 0);
}

/* A second attachment in the same process: another mapping, same heap. */
TEST_CASE_IN("lifecycle", "a second attachment maps the same heap elsewhere, offsets agreeing")
{
    const char *name = new_name();
    struct rtm_shared *a = rtm_shared_create(name, "tlsf", 1 << 20);
    REQUIRE(a != NULL, );
    struct rtm_heap *h = rtm_shared_heap(a);
    struct rtm_shared *b = rtm_shared_attach(name);
    REQUIRE(b != NULL, );
    CHECK_EQ(attach_count(a), 2);
    CHECK(base_of(a) != base_of(b));
    char *p = rtm_heap_alloc(h, 100);
    REQUIRE(p != NULL, );
    strcpy(p, "written through a");
    uint64_t off = rtm_shared_to_offset(a, p);
    CHECK(off != 0);
    char *q = rtm_shared_from_offset(b, off);
    CHECK(q != NULL && q != p && strcmp(q, "written through a") == 0);
    CHECK_EQ(rtm_shared_to_offset(b, q), off);
    CHECK_EQ(rtm_heap_usable_size(rtm_shared_heap(b), q) >= 100, 1);
    CHECK_EQ(rtm_shared_publish(b, "greeting", q), 0);
    CHECK_EQ(rtm_shared_detach(b), 0);
    CHECK_EQ(attach_count(a), 1);
    CHECK_EQ(rtm_shared_detach(a), 0);
    CHECK_EQ(rtm_shared_detach(NULL), -EINVAL);
    CHECK_EQ(rtm_shared_unlink(name), 0);
}

TEST_CASE_IN("lifecycle", "offset 0 and offsets outside the segment stand for nothing")
{
    const char *name = new_name();
    struct rtm_shared *a = rtm_shared_create(name, "tlsf", 1 << 20);
    REQUIRE(a != NULL, );
    struct rtm_shared_info info;
    CHECK_EQ(rtm_shared_get_info(a, &info), 0);
    char *p = rtm_heap_alloc(rtm_shared_heap(a), 100);
    REQUIRE(p != NULL, );
    uint64_t off = rtm_shared_to_offset(a, p);
    CHECK_EQ(rtm_shared_to_offset(a, NULL), 0);
    CHECK_EQ(rtm_shared_to_offset(a, &info), 0);
    CHECK_EQ(rtm_shared_to_offset(NULL, p), 0);
    CHECK(rtm_shared_from_offset(a, 0) == NULL);
    CHECK(rtm_shared_from_offset(a, info.size_bytes) == NULL);
    CHECK(rtm_shared_from_offset(a, UINT64_MAX) == NULL);
    CHECK(rtm_shared_from_offset(NULL, off) == NULL);
    CHECK(rtm_shared_heap(NULL) == NULL);
    CHECK_EQ(rtm_shared_detach(a), 0);
    CHECK_EQ(rtm_shared_unlink(name), 0);
}

TEST_CASE_IN("lifecycle", "the heap outlives every attachment until its name goes")
{
    const char *name = new_name();
    struct rtm_shared *a = rtm_shared_create(name, "tlsf", 1 << 20);
    REQUIRE(a != NULL, );
    char *p = rtm_heap_alloc(rtm_shared_heap(a), 100);
    REQUIRE(p != NULL, );
    strcpy(p, "written through a");
    CHECK_EQ(rtm_shared_publish(a, "greeting", p), 0);
    CHECK_EQ(rtm_shared_detach(a), 0);
    CHECK(exists(name));
    struct rtm_shared *c = rtm_shared_attach(name);
    REQUIRE(c != NULL, );
    CHECK_EQ(attach_count(c), 1);
    char *g = rtm_shared_lookup(c, "greeting");
    CHECK(g != NULL && strcmp(g, "written through a") == 0);
    CHECK_EQ(rtm_heap_free(rtm_shared_heap(c), g), 0);
    CHECK_EQ(rtm_heap_check(rtm_shared_heap(c)), 0);
    CHECK_EQ(rtm_shared_detach(c), 0);
    CHECK_EQ(rtm_shared_unlink(name), 0);
}

TEST_CASE_IN("lifecycle", "unlink removes the name, and a mapping stays usable")
{
    const char *name = new_name();
    struct rtm_shared *c = rtm_shared_create(name, "tlsf", 1 << 20);
    REQUIRE(c != NULL, );
    CHECK_EQ(rtm_shared_unlink(name), 0);
    CHECK(!exists(name));
    errno = 0;
    CHECK(rtm_shared_attach(name) == NULL && errno == ENOENT);
    CHECK_EQ(rtm_shared_unlink(name), -ENOENT);
    void *r = rtm_heap_alloc(rtm_shared_heap(c), 64);
    CHECK(r != NULL);
    CHECK_EQ(rtm_heap_free(rtm_shared_heap(c), r), 0);
    CHECK_EQ(rtm_shared_detach(c), 0);
}

TEST_CASE_IN("lifecycle", "names too long, malformed or missing are refused")
{
    char longest[RTM_SHARED_NAME_MAX + 2];
    memset(longest, 'x', RTM_SHARED_NAME_MAX + 1);
    longest[RTM_SHARED_NAME_MAX + 1] = '\0';
    errno = 0;
    CHECK(rtm_shared_create(longest, "tlsf", 1 << 20) == NULL && errno == ENAMETOOLONG);
    errno = 0;
    CHECK(rtm_shared_attach(longest) == NULL && errno == ENAMETOOLONG);
    CHECK_EQ(rtm_shared_unlink(longest), -ENAMETOOLONG);
    const char *bad[] = { "", "a/b", "a b", "../x", "\xc3\xa9" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        errno = 0;
        CHECK(rtm_shared_create(bad[i], "tlsf", 1 << 20) == NULL && errno == EINVAL);
        errno = 0;
        CHECK(rtm_shared_attach(bad[i]) == NULL && errno == EINVAL);
        CHECK_EQ(rtm_shared_unlink(bad[i]), -EINVAL);
    }
    errno = 0;
    CHECK(rtm_shared_create(NULL, "tlsf", 1 << 20) == NULL && errno == EINVAL);
    errno = 0;
    CHECK(rtm_shared_attach(NULL) == NULL && errno == EINVAL);
}

TEST_CASE_IN("lifecycle", "refused creates leave no object behind")
{
    const char *n2 = new_name();
    errno = 0;
    CHECK(rtm_shared_create(n2, "no-such-kind", 1 << 20) == NULL && errno == ENOENT);
    errno = 0;
    CHECK(rtm_shared_create(n2, NULL, 1 << 20) == NULL && errno == EINVAL);
    errno = 0;
    CHECK(rtm_shared_create(n2, "tlsf", 0) == NULL && errno == ENOMEM);
    struct rtm_shared_config cfg = { .catalog_entries = RTM_SHARED_CATALOG_MAX + 1 };
    errno = 0;
    CHECK(rtm_shared_create_ex(n2, "tlsf", 1 << 20, &cfg) == NULL && errno == EINVAL);
    cfg.catalog_entries = RTM_SHARED_CATALOG_MAX; /* the catalog fills the segment */
    errno = 0;
    CHECK(rtm_shared_create_ex(n2, "tlsf", 4096, &cfg) == NULL && errno == ENOMEM);
    cfg = (struct rtm_shared_config){ .mode = 01777 };
    errno = 0;
    CHECK(rtm_shared_create_ex(n2, "tlsf", 1 << 20, &cfg) == NULL && errno == EINVAL);
    CHECK(!exists(n2));
}

/* The longest name; options; attach_ex refuses create-only fields. */
TEST_CASE_IN("lifecycle", "the longest name and the create options hold, attach_ex takes neither")
{
    char longest[RTM_SHARED_NAME_MAX + 2];
    memset(longest, 'x', RTM_SHARED_NAME_MAX + 1);
    memcpy(longest, "shtest-", 7);
    snprintf(longest + 7, sizeof longest - 7, "%d-", (int)getpid());
    longest[strlen(longest)] = 'x';
    longest[RTM_SHARED_NAME_MAX] = '\0';
    snprintf(names[name_count++], sizeof names[0], "%s", longest); /* for the cleanup */
    remember_paths();
    struct rtm_shared_config cfg = { .mode = 0640,
                                     .catalog_entries = 4,
                                     .prefault = RTM_ARENA_PREFAULT_TOUCH,
                                     .hardening = RTM_HEAP_HARDEN_FULL,
                                     .check_interval = 16 };
    struct rtm_shared *d = rtm_shared_create_ex(longest, "xnheap", 1 << 20, &cfg);
    REQUIRE(d != NULL, );
    char path[300];
    struct stat st;
    snprintf(path, sizeof path, "/dev/shm/rtmem-%s", longest);
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0640);
    CHECK_EQ(rtm_heap_hardening(rtm_shared_heap(d)), RTM_HEAP_HARDEN_FULL);
    struct rtm_shared_config only_map = { .lock = RTM_ARENA_LOCK_TRY };
    struct rtm_shared *e = rtm_shared_attach_ex(longest, &only_map);
    CHECK(e != NULL);
    if (e) {
        CHECK_EQ(attach_count(e), 2);
        CHECK_EQ(rtm_shared_detach(e), 0);
    }
    struct rtm_shared_config create_only = { .catalog_entries = 8 };
    errno = 0;
    CHECK(rtm_shared_attach_ex(longest, &create_only) == NULL && errno == EINVAL);
    CHECK_EQ(rtm_shared_detach(d), 0);
    CHECK_EQ(rtm_shared_unlink(longest), 0);
}

/* The mode a creator asks is the object's, whatever its umask: a group
 * member it admits with 0660 must not find 0640. */
TEST_CASE_IN("lifecycle", "the mode asked is the object's mode, whatever the umask")
{
    static const struct {
        unsigned mode, umask, want;
    } cases[] = { { 0660, 022, 0660 }, { 0666, 077, 0666 }, { 0, 0377, 0600 } };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *n = new_name();
        struct rtm_shared_config cfg = { .mode = cases[i].mode };
        mode_t old = umask((mode_t)cases[i].umask);
        struct rtm_shared *s = rtm_shared_create_ex(n, "tlsf", 1 << 20, &cfg);
        umask(old);
        REQUIRE(s != NULL, );
        char path[128];
        struct stat st;
        snprintf(path, sizeof path, "/dev/shm/rtmem-%s", n);
        CHECK(stat(path, &st) == 0);
        CHECK_EQ(st.st_mode & 0777, cases[i].want);
        CHECK_EQ(rtm_shared_detach(s), 0);
        CHECK_EQ(rtm_shared_unlink(n), 0);
    }
}

/* A heap being created is EBUSY to attach, never EINVAL ("not an rtmem
 * shared heap": a program may unlink on it). A child creates, detaches and
 * unlinks one name over and over while this process attaches it. */
TEST_CASE_IN("lifecycle", "attach during create and unlink churn: EBUSY or ENOENT, never EINVAL")
{
    const char *n = new_name();
    pid_t pid = fork();
    REQUIRE(pid >= 0, );
    if (pid == 0) {
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        do {
            struct rtm_shared *c = rtm_shared_create(n, "tlsf", 256 << 10);
            if (c) {
                rtm_shared_detach(c);
                rtm_shared_unlink(n);
            } else if (errno != EEXIST) {
                test_exit(1);
            }
            clock_gettime(CLOCK_MONOTONIC, &t);
        } while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 1500000000L);
        test_exit(0);
    }
    unsigned long ok = 0, busy = 0, gone = 0, invalid = 0, other = 0;
    int status;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        errno = 0;
        struct rtm_shared *a = rtm_shared_attach(n);
        if (a) {
            ok++;
            rtm_shared_detach(a);
        } else if (errno == EBUSY) {
            busy++;
        } else if (errno == ENOENT) {
            gone++;
        } else if (errno == EINVAL) {
            invalid++;
        } else {
            other++;
        }
    }
    printf("#   attach during churn: %lu attached, %lu EBUSY, %lu ENOENT, %lu EINVAL, %lu other\n",
           ok, busy, gone, invalid, other);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_EQ(invalid, 0);
    CHECK_EQ(other, 0);
    CHECK(ok > 0);
    rtm_shared_unlink(n);
}

/* The same race made certain: attach's test hook (src/shared/internal.h)
 * changes the object at the two points where a creator or an unlinker
 * running at that moment decides the answer. */
enum hook_change { HOOK_NONE, HOOK_REPLACE, HOOK_UNLINK, HOOK_SIZE, HOOK_PART_PAGE };
static int hook_where;
static enum hook_change hook_change;
static int hook_ran;

static void change_object(int where, const char *name)
{
    if (where != hook_where)
        return;
    hook_ran++;
    char shm[128];
    snprintf(shm, sizeof shm, "/rtmem-%s", name);
    switch (hook_change) {
    case HOOK_REPLACE: { /* unlinked and made again: another object */
        rtm_shared_unlink(name);
        struct rtm_shared *c = rtm_shared_create(name, "tlsf", 256 << 10);
        if (c)
            rtm_shared_detach(c);
        break;
    }
    case HOOK_UNLINK: rtm_shared_unlink(name); break;
    case HOOK_SIZE:
    case HOOK_PART_PAGE: {
        int fd = shm_open(shm, O_RDWR, 0);
        if (fd >= 0) {
            if (ftruncate(fd, hook_change == HOOK_SIZE ? 256 << 10 : 100) != 0)
                hook_ran = -1000;
            close(fd);
        }
        break;
    }
    case HOOK_NONE: break;
    }
}

static bool make_object(const char *name, size_t bytes, int fill);

TEST_CASE_IN("lifecycle", "attach at the instant a creator or an unlinker acts: exact errnos")
{
    static const struct {
        const char *what;
        bool empty; /* an empty object (a creator before sizing it), else a heap */
        int where;
        enum hook_change change;
        int want;
    } cases[] = {
        { "a heap replaced after its owner was looked at", false, RTM__ATTACH_LOOKED, HOOK_REPLACE,
          EBUSY },
        { "a heap unlinked after its owner was looked at", false, RTM__ATTACH_LOOKED, HOOK_UNLINK,
          ENOENT },
        { "an empty object sized by its creator after the open", true, RTM__ATTACH_SHORT, HOOK_SIZE,
          EBUSY },
        { "an empty object unlinked after the open", true, RTM__ATTACH_SHORT, HOOK_UNLINK, ENOENT },
        { "an empty object given a part of a page (no creator does)", true, RTM__ATTACH_SHORT,
          HOOK_PART_PAGE, EINVAL },
        { "an empty object left so", true, RTM__ATTACH_SHORT, HOOK_NONE, EBUSY },
    };
    rtm__shared_attach_hook = change_object;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        test_context = cases[i].what;
        const char *n = new_name();
        struct rtm_shared *c = NULL;
        if (cases[i].empty)
            CHECK(make_object(n, 0, 0));
        else
            CHECK((c = rtm_shared_create(n, "tlsf", 256 << 10)) != NULL);
        hook_where = cases[i].where;
        hook_change = cases[i].change;
        hook_ran = 0;
        errno = 0;
        struct rtm_shared *a = rtm_shared_attach(n);
        int err = errno;
        CHECK(a == NULL);
        CHECK_EQ(err, cases[i].want);
        CHECK_EQ(hook_ran, 1);
        if (a)
            rtm_shared_detach(a);
        if (c)
            rtm_shared_detach(c);
        rtm_shared_unlink(n);
    }
    rtm__shared_attach_hook = NULL;
    test_context = NULL;
}

/* A segment writable by every user is refused (EPERM), whoever made it so,
 * unless the attach trusts that (RTM_SHARED_TRUST_WORLD_WRITABLE). */
TEST_CASE_IN("lifecycle", "a world-writable segment is attached only when trusted so")
{
    const char *made = new_name(), *later = new_name();
    struct rtm_shared_config cfg = { .mode = 0666 };
    struct rtm_shared *a = rtm_shared_create_ex(made, "tlsf", 1 << 20, &cfg);
    struct rtm_shared *b = rtm_shared_create(later, "tlsf", 1 << 20);
    REQUIRE(a && b, );
    char path[128];
    snprintf(path, sizeof path, "/dev/shm/rtmem-%s", later);
    CHECK(chmod(path, 0666) == 0);
    struct rtm_shared_config trust = { .trust = RTM_SHARED_TRUST_WORLD_WRITABLE };
    for (int i = 0; i < 2; i++) {
        const char *n = i ? later : made;
        errno = 0;
        CHECK(rtm_shared_attach(n) == NULL && errno == EPERM);
        struct rtm_shared *x = rtm_shared_attach_ex(n, &trust);
        CHECK(x != NULL);
        if (x)
            rtm_shared_detach(x);
    }
    /* trust is attach's: create refuses it, attach refuses unknown flags */
    struct rtm_shared_config bad = { .trust = 4 };
    errno = 0;
    CHECK(rtm_shared_attach_ex(made, &bad) == NULL && errno == EINVAL);
    errno = 0;
    CHECK(rtm_shared_create_ex(new_name(), "tlsf", 1 << 20, &trust) == NULL && errno == EINVAL);
    bad = (struct rtm_shared_config){ .trusted_uid = 1000 };
    errno = 0;
    CHECK(rtm_shared_create_ex(new_name(), "tlsf", 1 << 20, &bad) == NULL && errno == EINVAL);
    rtm_shared_detach(a);
    rtm_shared_detach(b);
    rtm_shared_unlink(made);
    rtm_shared_unlink(later);
}

/* A user who creates the name first (nobody, 65534, here) must not get
 * root's attach into a segment that user controls: EPERM, unless root
 * names that user (trusted_uid) or trusts any owner. Needs root. */
TEST_CASE_IN("lifecycle", "a segment another user owns is refused unless that user is trusted")
{
    if (geteuid() != 0) {
        printf("#   skipped: needs root, to create a heap as another user\n");
        return;
    }
    const uid_t nobody = 65534;
    const char *n = new_name();
    pid_t pid = fork();
    REQUIRE(pid >= 0, );
    if (pid == 0) {
        if (setgid(nobody) != 0 || setuid(nobody) != 0)
            test_exit(1);
        struct rtm_shared *c = rtm_shared_create(n, "tlsf", 1 << 20);
        test_exit(c ? 0 : 2);
    }
    REQUIRE(wait_child(pid) == 0, );
    errno = 0;
    CHECK(rtm_shared_create(n, "tlsf", 1 << 20) == NULL && errno == EEXIST);
    errno = 0;
    CHECK(rtm_shared_attach(n) == NULL && errno == EPERM);
    struct rtm_shared_config named = { .trusted_uid = nobody };
    struct rtm_shared *x = rtm_shared_attach_ex(n, &named);
    CHECK(x != NULL);
    if (x)
        rtm_shared_detach(x);
    named.trusted_uid = nobody - 1;
    errno = 0;
    CHECK(rtm_shared_attach_ex(n, &named) == NULL && errno == EPERM);
    struct rtm_shared_config any = { .trust = RTM_SHARED_TRUST_ANY_OWNER };
    x = rtm_shared_attach_ex(n, &any);
    CHECK(x != NULL);
    if (x)
        rtm_shared_detach(x);
    CHECK_EQ(rtm_shared_unlink(n), 0);
}

/* The refusal comes before the mapping: a root attach that asks to
 * prefault and lock another user's segment touches none of its pages. */
TEST_CASE_IN("lifecycle", "an untrusted segment is refused before a page of it is touched")
{
    if (geteuid() != 0) {
        printf("#   skipped: needs root, to create a heap as another user\n");
        return;
    }
    const char *n = new_name();
    pid_t pid = fork();
    REQUIRE(pid >= 0, );
    if (pid == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0)
            test_exit(1);
        test_exit(rtm_shared_create(n, "tlsf", 64 << 20) ? 0 : 2);
    }
    REQUIRE(wait_child(pid) == 0, );
    char path[128];
    struct stat st;
    snprintf(path, sizeof path, "/dev/shm/rtmem-%s", n);
    REQUIRE(stat(path, &st) == 0, );
    long long before = (long long)st.st_blocks;
    struct rtm_shared_config cfg = { .prefault = RTM_ARENA_PREFAULT_TOUCH,
                                     .lock = RTM_ARENA_LOCK_TRY };
    errno = 0;
    CHECK(rtm_shared_attach_ex(n, &cfg) == NULL && errno == EPERM);
    CHECK(stat(path, &st) == 0);
    CHECK_EQ(st.st_blocks, before); /* not one more page of it allocated */
    CHECK_EQ(rtm_shared_unlink(n), 0);
}

/* A creator's object is made with its mode masked by the umask and given
 * its mode a moment later, before it is sized: in between, a user whom the
 * mode will admit gets no EACCES but EBUSY (retry), as for any empty
 * object. Once sized, a user the mode does not admit gets EACCES. */
TEST_CASE_IN("lifecycle", "an empty object this user may not open yet is busy, not refused")
{
    if (geteuid() != 0) {
        printf("#   skipped: needs root, to attach as another user\n");
        return;
    }
    const char *n = new_name();
    char path[128];
    snprintf(path, sizeof path, "/dev/shm/rtmem-%s", n);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0, );
    int seen[2] = { -1, -1 };
    for (int sized = 0; sized < 2; sized++) {
        if (sized)
            CHECK_EQ(ftruncate(fd, 1 << 20), 0);
        pid_t pid = fork();
        REQUIRE(pid >= 0, );
        if (pid == 0) {
            if (setgid(65534) != 0 || setuid(65534) != 0)
                test_exit(100);
            errno = 0;
            struct rtm_shared_config any = { .trust = RTM_SHARED_TRUST_ANY_OWNER };
            test_exit(rtm_shared_attach_ex(n, &any) == NULL ? errno : 101);
        }
        seen[sized] = wait_child(pid);
    }
    CHECK_EQ(seen[0], EBUSY);
    CHECK_EQ(seen[1], EACCES);
    close(fd);
    CHECK_EQ(rtm_shared_unlink(n), 0);
}

SECTION_CLEANUP("lifecycle")

/* ---- exists ------------------------------------------------------------------------- */

/* A child creates name, allocates and publishes one block, tells the parent
 * (one byte on the pipe) and then exits, or waits to be killed. */
static pid_t spawn_creator(const char *name, bool wait_for_kill, int *ready_fd)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        struct rtm_shared *s = rtm_shared_create(name, "heapmem", 1 << 20);
        if (!s)
            test_exit(1);
        char *p = rtm_heap_alloc(rtm_shared_heap(s), 32);
        if (!p)
            test_exit(2);
        strcpy(p, "from the creator");
        if (rtm_shared_publish(s, "data", p) != 0)
            test_exit(3);
        if (write(fds[1], "r", 1) != 1)
            test_exit(4);
        if (wait_for_kill)
            for (;;)
                pause();
        test_exit(0); /* no detach, no unlink */
    }
    close(fds[1]);
    *ready_fd = fds[0];
    return pid;
}

static bool wait_ready(int fd)
{
    char c;
    bool ok = read(fd, &c, 1) == 1;
    close(fd);
    return ok;
}

/* The heap a dead creator left: it attaches, holds its data, works. */
static void check_survivor(const char *name, uint32_t count_before)
{
    struct rtm_shared *s = rtm_shared_attach(name);
    REQUIRE(s != NULL, );
    CHECK_EQ(attach_count(s), count_before + 1);
    char *p = rtm_shared_lookup(s, "data");
    CHECK(p != NULL && strcmp(p, "from the creator") == 0);
    void *q = rtm_heap_alloc(rtm_shared_heap(s), 1000);
    CHECK(q != NULL);
    CHECK_EQ(rtm_heap_free(rtm_shared_heap(s), q), 0);
    CHECK_EQ(rtm_heap_check(rtm_shared_heap(s)), 0);
    CHECK_EQ(rtm_shared_detach(s), 0);
}

/* A creator that exits (or is killed) without detaching or unlinking: its
 * name stays taken, and the heap attaches. */
static void creator_gone(bool killed)
{
    const char *name = new_name();
    int ready;
    pid_t pid = spawn_creator(name, killed, &ready);
    REQUIRE(pid > 0, );
    CHECK(wait_ready(ready));
    if (killed)
        kill(pid, SIGKILL);
    CHECK_EQ(wait_child(pid), killed ? 128 + SIGKILL : 0);
    errno = 0;
    CHECK(rtm_shared_create(name, "heapmem", 1 << 20) == NULL && errno == EEXIST);
    errno = 0;
    CHECK(rtm_shared_create(name, "tlsf", 4 << 20) == NULL && errno == EEXIST);
    /* the dead creator never detached: it stays counted */
    check_survivor(name, 1);
    CHECK_EQ(rtm_shared_unlink(name), 0);
}

TEST_CASE_IN("exists", "a creator that exited leaves its name taken and its heap attachable")
{
    creator_gone(false);
}

TEST_CASE_IN("exists", "a creator that was killed leaves its name taken and its heap attachable")
{
    creator_gone(true);
}

SECTION_CLEANUP("exists")

/* ---- address ------------------------------------------------------------------------ */

/* What the child of the address section publishes. */
struct address_msg {
    void *base;
    uint64_t self_off;
    char text[16];
};

/* The child: maps the segment elsewhere than its parent did, finds the
 * parent's block by its offset, publishes one of its own. Its exit status. */
static int address_child(const char *name, void *parent_base, uint64_t mine_off)
{
    /* take address space first, so that this process maps the segment
     * elsewhere than its parent did (the parent's mapping is dropped) */
    munmap(parent_base, 1 << 20);
    void *filler = mmap(NULL, 64 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (filler == MAP_FAILED)
        return 10;
    struct rtm_shared *c = rtm_shared_attach(name);
    if (!c)
        return 11;
    if (base_of(c) == parent_base)
        return 12;
    char *p = rtm_shared_from_offset(c, mine_off);
    if (!p || strcmp(p, "parent's") != 0)
        return 13;
    struct address_msg *msg = rtm_heap_alloc(rtm_shared_heap(c), sizeof *msg);
    if (!msg)
        return 14;
    msg->base = base_of(c);
    msg->self_off = rtm_shared_to_offset(c, msg);
    strcpy(msg->text, "child's");
    if (rtm_shared_publish(c, "msg", msg) != 0)
        return 15;
    if (rtm_heap_check(rtm_shared_heap(c)) != 0)
        return 16;
    return rtm_shared_detach(c) == 0 ? 0 : 17;
}

TEST_CASE_IN("address",
             "a child maps the heap elsewhere: offsets agree, each sees the other's data")
{
    const char *name = new_name();
    struct rtm_shared *s = rtm_shared_create(name, "tlsf", 1 << 20);
    REQUIRE(s != NULL, );
    struct rtm_heap *h = rtm_shared_heap(s);
    char *mine = rtm_heap_alloc(h, 64);
    REQUIRE(mine != NULL, );
    strcpy(mine, "parent's");
    uint64_t mine_off = rtm_shared_to_offset(s, mine);
    void *parent_base = base_of(s);
    pid_t pid = fork();
    if (pid == 0)
        test_exit(address_child(name, parent_base, mine_off));
    REQUIRE(pid > 0, );
    CHECK_EQ(wait_child(pid), 0);
    struct address_msg *msg = rtm_shared_lookup(s, "msg");
    REQUIRE(msg != NULL, );
    CHECK(msg->base != parent_base);
    CHECK_EQ(rtm_shared_to_offset(s, msg), msg->self_off);
    CHECK(strcmp(msg->text, "child's") == 0);
    CHECK_EQ(rtm_heap_free(h, msg), 0);
    CHECK_EQ(rtm_heap_free(h, mine), 0);
    CHECK_EQ(rtm_heap_check(h), 0);
    CHECK_EQ(attach_count(s), 1);
    CHECK_EQ(rtm_shared_detach(s), 0);
    CHECK_EQ(rtm_shared_unlink(name), 0);
}

SECTION_CLEANUP("address")

/* ---- concurrent --------------------------------------------------------------------- */

#define WORKERS 4
#define LIVE    64

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static unsigned char pattern(uint64_t seed, size_t i)
{
    return (unsigned char)(seed * 31 + i * 7);
}

/* One worker: its own attachment, alloc / write / verify / free until
 * deadline; exits non-zero at the first thing wrong. */
static int worker(const char *name, uint64_t seed, uint64_t deadline)
{
    struct rtm_shared *s = rtm_shared_attach(name);
    if (!s)
        return 1;
    struct rtm_heap *h = rtm_shared_heap(s);
    struct {
        unsigned char *p;
        size_t size;
        uint64_t tag;
    } live[LIVE] = { { 0 } };
    uint64_t rng = seed, ops = 0;
    while (now_ns() < deadline || ops < 1000) {
        ops++;
        size_t i = rng_next(&rng) % LIVE;
        if (live[i].p) {
            for (size_t k = 0; k < live[i].size; k++)
                if (live[i].p[k] != pattern(live[i].tag, k))
                    return 2;
            if (rtm_heap_free(h, live[i].p) != 0)
                return 3;
            live[i].p = NULL;
            continue;
        }
        size_t size = (size_t)rng_range(&rng, 1, 2048);
        unsigned char *p = rtm_heap_alloc(h, size);
        if (!p)
            continue; /* full for now: others free */
        if (rtm_heap_usable_size(h, p) < size)
            return 4;
        uint64_t tag = rng_next(&rng);
        for (size_t k = 0; k < size; k++)
            p[k] = pattern(tag, k);
        live[i].p = p;
        live[i].size = size;
        live[i].tag = tag;
    }
    for (size_t i = 0; i < LIVE; i++) {
        if (!live[i].p)
            continue;
        for (size_t k = 0; k < live[i].size; k++)
            if (live[i].p[k] != pattern(live[i].tag, k))
                return 5;
        if (rtm_heap_free(h, live[i].p) != 0)
            return 6;
    }
    return rtm_shared_detach(s) == 0 ? 0 : 7;
}

static void concurrent_kind(const char *kind)
{
    const char *name = new_name();
    struct rtm_shared *s = rtm_shared_create(name, kind, 1 << 20);
    REQUIRE(s != NULL, );
    struct rtm_heap_stats before;
    CHECK_EQ(rtm_heap_stats(rtm_shared_heap(s), &before), 0);
    uint64_t deadline = now_ns() + 300000000u;
    pid_t pids[WORKERS];
    for (int w = 0; w < WORKERS; w++) {
        pids[w] = fork();
        if (pids[w] == 0)
            test_exit(worker(name, 0x5eed0000u + (uint64_t)w, deadline));
    }
    for (int w = 0; w < WORKERS; w++)
        CHECK_EQ(pids[w] > 0 ? wait_child(pids[w]) : -1, 0);
    struct rtm_heap *h = rtm_shared_heap(s);
    CHECK_EQ(rtm_heap_check(h), 0);
    struct rtm_heap_stats after;
    CHECK_EQ(rtm_heap_stats(h, &after), 0);
    CHECK_EQ(after.live_blocks, 0);
    CHECK_EQ(after.used_bytes, 0);
    CHECK_EQ(after.largest_free_bytes, before.largest_free_bytes);
    struct rtm_heap_lock_stats ls;
    CHECK_EQ(rtm_heap_lock_stats(h, &ls), 0);
    CHECK(ls.calls > 1000 * WORKERS);
    CHECK_EQ(ls.owner_deaths, 0);
    CHECK_EQ(attach_count(s), 1);
    CHECK_EQ(rtm_shared_detach(s), 0);
    CHECK_EQ(rtm_shared_unlink(name), 0);
}

TEST_CASE_IN("concurrent", "processes sharing a heap of every kind lose nothing, and it checks")
{
    for (const char *const *kind = rtm_heap_kinds(); *kind; kind++) {
        test_context = *kind;
        concurrent_kind(*kind);
    }
}

SECTION_CLEANUP("concurrent")

/* ---- creator ------------------------------------------------------------------------ */

TEST_CASE_IN("creator", "a creator killed while others are attached: they go on")
{
    const char *name = new_name();
    int ready;
    pid_t pid = spawn_creator(name, true, &ready);
    REQUIRE(pid > 0, );
    CHECK(wait_ready(ready));
    struct rtm_shared *s = rtm_shared_attach(name);
    REQUIRE(s != NULL, );
    CHECK_EQ(attach_count(s), 2);
    void *held = rtm_heap_alloc(rtm_shared_heap(s), 500);
    CHECK(held != NULL);
    kill(pid, SIGKILL);
    CHECK_EQ(wait_child(pid), 128 + SIGKILL);
    char *p = rtm_shared_lookup(s, "data");
    CHECK(p != NULL && strcmp(p, "from the creator") == 0);
    CHECK_EQ(rtm_heap_free(rtm_shared_heap(s), held), 0);
    CHECK_EQ(rtm_heap_check(rtm_shared_heap(s)), 0);
    check_survivor(name, 2);
    CHECK_EQ(rtm_shared_detach(s), 0);
    CHECK_EQ(rtm_shared_unlink(name), 0);
}

/* Killed holding the heap's lock, between operations: the next caller
 * checks the heap, finds it consistent and goes on (rtmem/lock.h). */
TEST_CASE_IN("creator", "a process killed holding the heap's lock: the next caller goes on")
{
    const char *name = new_name();
    struct rtm_shared *s = rtm_shared_create(name, "tlsf", 1 << 20);
    REQUIRE(s != NULL, );
    int fds[2];
    REQUIRE(pipe(fds) == 0, );
    pid_t pid = fork();
    if (pid == 0) {
        struct rtm_shared *c = rtm_shared_attach(name);
        if (!c || rtm__heap_lock_hold(rtm_shared_heap(c)) != 0)
            test_exit(1);
        if (write(fds[1], "h", 1) != 1)
            test_exit(2);
        for (;;)
            pause();
    }
    REQUIRE(pid > 0, );
    close(fds[1]);
    CHECK(wait_ready(fds[0]));
    kill(pid, SIGKILL);
    CHECK_EQ(wait_child(pid), 128 + SIGKILL);
    void *q = rtm_heap_alloc(rtm_shared_heap(s), 100);
    CHECK(q != NULL);
    struct rtm_heap_lock_stats ls;
    CHECK_EQ(rtm_heap_lock_stats(rtm_shared_heap(s), &ls), 0);
    CHECK_EQ(ls.owner_deaths, 1);
    CHECK_EQ(ls.recovered, 1);
    CHECK_EQ(rtm_heap_free(rtm_shared_heap(s), q), 0);
    CHECK_EQ(rtm_heap_check(rtm_shared_heap(s)), 0);
    CHECK_EQ(rtm_shared_detach(s), 0);
    CHECK_EQ(rtm_shared_unlink(name), 0);
}

/* A holder stopped (SIGSTOP) with the lock: a heap with a timeout makes
 * the next call give up after it (-ETIMEDOUT, never sooner), counted;
 * without one it would wait for ever. Resumed, the holder gives the lock
 * back and calls go on. */
TEST_CASE_IN("creator", "a stopped holder: a call with a timeout gives up, counted")
{
    const char *name = new_name();
    struct rtm_shared_config cfg = { .lock_timeout_us = 50000 };
    struct rtm_shared *s = rtm_shared_create_ex(name, "tlsf", 1 << 20, &cfg);
    REQUIRE(s != NULL, );
    struct rtm_heap *h = rtm_shared_heap(s);
    int fds[2], back[2];
    REQUIRE(pipe(fds) == 0 && pipe(back) == 0, );
    pid_t pid = fork();
    if (pid == 0) {
        struct rtm_shared *c = rtm_shared_attach(name);
        if (!c || rtm__heap_lock_hold(rtm_shared_heap(c)) != 0)
            test_exit(1);
        if (write(fds[1], "h", 1) != 1)
            test_exit(2);
        raise(SIGSTOP);
        char b;
        if (read(back[0], &b, 1) != 1) /* resumed: told when to give it back */
            test_exit(3);
        test_exit(rtm__heap_lock_release(rtm_shared_heap(c)) == 0 ? 0 : 4);
    }
    REQUIRE(pid > 0, );
    close(fds[1]);
    CHECK(wait_ready(fds[0]));
    int st;
    CHECK(waitpid(pid, &st, WUNTRACED) == pid && WIFSTOPPED(st));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    errno = 0;
    void *p = rtm_heap_alloc(h, 64);
    int err = errno;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (p) { /* it did not wait for the holder: the holder must not stay stopped */
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    REQUIRE(p == NULL, );
    long waited_us = (t1.tv_sec - t0.tv_sec) * 1000000L + (t1.tv_nsec - t0.tv_nsec) / 1000;
    CHECK(p == NULL && err == ETIMEDOUT);
    CHECK(waited_us >= 50000);
    CHECK_EQ(rtm_heap_check(h), -ETIMEDOUT);
    struct rtm_heap_lock_stats ls;
    CHECK_EQ(rtm_heap_lock_stats(h, &ls), 0);
    CHECK_EQ(ls.timeout_us, 50000);
    CHECK_EQ(ls.timeouts, 2);
    /* a longer bound, set on the live heap, for every process */
    CHECK_EQ(rtm_heap_set_lock_timeout(h, 5000000), 0);
    kill(pid, SIGCONT);
    CHECK(write(back[1], "g", 1) == 1);
    p = rtm_heap_alloc(h, 64); /* waits for the release, well within 5 s */
    CHECK(p != NULL);
    CHECK_EQ(wait_child(pid), 0);
    CHECK_EQ(rtm_heap_free(h, p), 0);
    CHECK_EQ(rtm_heap_lock_stats(h, &ls), 0);
    CHECK_EQ(ls.timeouts, 2);
    CHECK_EQ(rtm_heap_check(h), 0);
    close(back[0]);
    close(back[1]);
    close(fds[0]);
    CHECK_EQ(rtm_shared_detach(s), 0);
    CHECK_EQ(rtm_shared_unlink(name), 0);
}

SECTION_CLEANUP("creator")

/* ---- stale -------------------------------------------------------------------------- */

/* The object's bytes, to show a refusal left them alone. */
static size_t read_object(const char *name, unsigned char *buf, size_t cap)
{
    char shm[128];
    snprintf(shm, sizeof shm, "/rtmem-%s", name);
    int fd = shm_open(shm, O_RDONLY, 0);
    if (fd < 0)
        return (size_t)-1;
    ssize_t n = pread(fd, buf, cap, 0);
    close(fd);
    return n < 0 ? (size_t)-1 : (size_t)n;
}

/* Makes "/rtmem-<name>" by hand, bytes long, filled with fill. */
static bool make_object(const char *name, size_t bytes, int fill)
{
    char shm[128];
    snprintf(shm, sizeof shm, "/rtmem-%s", name);
    int fd = shm_open(shm, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        return false;
    bool ok = ftruncate(fd, (off_t)bytes) == 0;
    if (ok && fill && bytes) {
        unsigned char *m = mmap(NULL, bytes, PROT_WRITE, MAP_SHARED, fd, 0);
        ok = m != MAP_FAILED;
        if (ok) {
            memset(m, fill, bytes);
            munmap(m, bytes);
        }
    }
    close(fd);
    return ok;
}

#define STALE_BYTES (256 << 10)
static unsigned char before_bytes[STALE_BYTES], after_bytes[STALE_BYTES];

/* attach refuses name with want, and changes none of its bytes; create
 * refuses it with EEXIST. */
static void check_refused(const char *name, int want)
{
    size_t n = read_object(name, before_bytes, sizeof before_bytes);
    errno = 0;
    struct rtm_shared *s = rtm_shared_attach(name);
    CHECK(s == NULL);
    CHECK_EQ(errno, want);
    if (s)
        rtm_shared_detach(s);
    CHECK_EQ(read_object(name, after_bytes, sizeof after_bytes), n);
    CHECK(n != (size_t)-1 && memcmp(before_bytes, after_bytes, n) == 0);
    errno = 0;
    CHECK(rtm_shared_create(name, "tlsf", STALE_BYTES) == NULL && errno == EEXIST);
}

/* A valid heap whose header is then changed by edit. */
typedef void (*header_edit)(struct shared_header *hd);
static void edit_magic(struct shared_header *hd)
{
    hd->magic ^= 1;
}
static void edit_version(struct shared_header *hd)
{
    hd->version = RTM_SHARED_LAYOUT_VERSION + 1;
}
static void edit_initialising(struct shared_header *hd)
{
    hd->state = SHARED_INITIALISING;
}
static void edit_unwritten(struct shared_header *hd)
{
    hd->state = SHARED_INITIALISING;
    hd->magic = 0;
}
/* A creator stopped between writing the magic and the version. */
static void edit_half_written(struct shared_header *hd)
{
    hd->state = SHARED_INITIALISING;
    hd->version = 0;
}
static void edit_hardening(struct shared_header *hd)
{
    struct rtm_heap *h = (struct rtm_heap *)(void *)((char *)hd + hd->heap_offset);
    h->hardening = 77;
}
static void edit_state(struct shared_header *hd)
{
    hd->state = 12345;
}
static void edit_size(struct shared_header *hd)
{
    hd->size_bytes *= 2;
}
static void edit_heap_offset(struct shared_header *hd)
{
    hd->heap_offset += 64;
}
static void edit_kind(struct shared_header *hd)
{
    strcpy(hd->kind, "xnheap");
}
static void edit_heap_end(struct shared_header *hd)
{
    hd->heap_offset = hd->size_bytes - 8; /* no room for a heap's header */
}
/* A handler address written into the heap: attach must not trust it. */
static void edit_handler(struct shared_header *hd)
{
    struct rtm_heap *h = (struct rtm_heap *)(void *)((char *)hd + hd->heap_offset);
    h->on_corruption = (rtm_heap_corruption_fn)(uintptr_t)0x1234;
}
static void edit_lock_offset(struct shared_header *hd)
{
    struct rtm_heap *h = (struct rtm_heap *)(void *)((char *)hd + hd->heap_offset);
    h->lock_offset = (uint32_t)hd->heap_offset + 4096; /* before the segment */
}

TEST_CASE_IN("stale", "objects that are no heap are refused, left byte for byte")
{
    const char *name = new_name();
    test_context = "empty object";
    REQUIRE(make_object(name, 0, 0), );
    check_refused(name, EBUSY);
    CHECK_EQ(rtm_shared_unlink(name), 0);

    test_context = "shorter than a page";
    REQUIRE(make_object(name, 100, 0x5a), );
    check_refused(name, EINVAL);
    CHECK_EQ(rtm_shared_unlink(name), 0);

    test_context = "garbage";
    REQUIRE(make_object(name, STALE_BYTES, 0x5a), );
    check_refused(name, EINVAL);
    CHECK_EQ(rtm_shared_unlink(name), 0);

    test_context = "zeros";
    REQUIRE(make_object(name, STALE_BYTES, 0), );
    check_refused(name, EBUSY);
    CHECK_EQ(rtm_shared_unlink(name), 0);
}

TEST_CASE_IN("stale", "a heap whose header was changed is refused, left byte for byte")
{
    static const struct {
        const char *what;
        header_edit edit;
        int want;
    } cases[] = {
        { "bad magic", edit_magic, EINVAL },
        { "other version", edit_version, EPROTO },
        { "initialising", edit_initialising, EBUSY },
        { "header not written", edit_unwritten, EBUSY },
        { "header half written", edit_half_written, EBUSY },
        { "hardening level", edit_hardening, EINVAL },
        { "unknown state", edit_state, EINVAL },
        { "size", edit_size, EINVAL },
        { "heap offset", edit_heap_offset, EINVAL },
        { "kind", edit_kind, EINVAL },
        { "heap at the end", edit_heap_end, EINVAL },
        { "handler address", edit_handler, EINVAL },
        { "lock offset", edit_lock_offset, EINVAL },
    };
    const char *name = new_name();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        test_context = cases[i].what;
        struct rtm_shared *s = rtm_shared_create(name, "tlsf", STALE_BYTES);
        REQUIRE(s != NULL, );
        cases[i].edit((struct shared_header *)base_of(s));
        check_refused(name, cases[i].want);
        CHECK_EQ(rtm_shared_detach(s), 0);
        CHECK_EQ(rtm_shared_unlink(name), 0);
    }
}

SECTION_CLEANUP("stale")

/* ---- crafted ------------------------------------------------------------------------ */

/*
 * Segments whose header and heap header pass every check attach makes of
 * them, and whose kind's layout (src/heap/kind.h, validate) does not hold:
 * the first call would read outside the segment. Each edit gets the heap
 * (its header at this process's address), its layout fields and the bytes
 * from it to the end of the segment.
 */
typedef void (*layout_edit)(struct shared_header *hd, struct rtm_heap *h, struct heap_layout *l,
                            size_t bytes);

/* Moves the heap's first `len` bytes to `at` in the segment, its lock area
 * left where it is. */
static void move_heap(struct shared_header *hd, struct rtm_heap *h, size_t len, size_t at)
{
    size_t lock_area = hd->heap_offset - h->lock_offset;
    struct rtm_heap *moved = (struct rtm_heap *)(void *)((char *)hd + at);
    memmove(moved, h, len);
    moved->lock_offset = (uint32_t)(at - lock_area);
    hd->heap_offset = at;
}

static void craft_header_at_end(struct shared_header *hd, struct rtm_heap *h, struct heap_layout *l,
                                size_t bytes)
{
    (void)l, (void)bytes;
    move_heap(hd, h, sizeof *h, hd->size_bytes - sizeof *h);
}
static void craft_control_at_end(struct shared_header *hd, struct rtm_heap *h,
                                 struct heap_layout *l, size_t bytes)
{
    (void)bytes;
    move_heap(hd, h, l->control_bytes, (hd->size_bytes - l->control_bytes) & ~(size_t)63);
}
static void craft_next_past_end(struct shared_header *hd, struct rtm_heap *h, struct heap_layout *l,
                                size_t bytes)
{
    (void)hd, (void)h;
    *l->pool_count = 2;
    *l->next = bytes;
}
static void craft_next_on_header(struct shared_header *hd, struct rtm_heap *h,
                                 struct heap_layout *l, size_t bytes)
{
    (void)h, (void)bytes;
    *l->pool_count = 2;
    *l->next = (size_t)0 - hd->heap_offset; /* the segment's header: mapped, no pool */
}
static void craft_next_before_segment(struct shared_header *hd, struct rtm_heap *h,
                                      struct heap_layout *l, size_t bytes)
{
    (void)h, (void)bytes;
    *l->pool_count = 2;
    *l->next = (size_t)0 - hd->heap_offset - 4096;
}
static void craft_pools_cycle(struct shared_header *hd, struct rtm_heap *h, struct heap_layout *l,
                              size_t bytes)
{
    (void)hd, (void)h, (void)bytes;
    *l->pool_count = 2;
    *l->next = l->pool0;
}
static void craft_pools_cycle_uncounted(struct shared_header *hd, struct rtm_heap *h,
                                        struct heap_layout *l, size_t bytes)
{
    (void)hd, (void)h, (void)bytes;
    *l->pool_count = SIZE_MAX;
    *l->next = l->pool0;
}
/* The pool one granule or eight pages longer, counts agreeing: its end
 * (TLSF's sentinel, the page heaps' last pages) crosses the segment's. */
static void craft_pool_past_end(struct shared_header *hd, struct rtm_heap *h, struct heap_layout *l,
                                size_t bytes)
{
    (void)hd, (void)h, (void)bytes;
    if (l->xv.first) { /* xvheap, zsheap: eight pages more in the first region */
        *l->xv.pages += 8;
        *l->usable += 8 * l->xv.span;
        *l->overhead -= 8 * l->xv.span;
        return;
    }
    size_t grow = l->end ? RTM_TLSF_GRANULE : 8 * RTM_PAGEHEAP_PAGE_SIZE;
    if (l->end)
        *l->end += grow;
    else
        *l->npages += 8;
    *l->usable += grow;
    *l->overhead -= grow;
}
/* The first block, or the page map, in the segment's last bytes. */
static void craft_first_at_end(struct shared_header *hd, struct rtm_heap *h, struct heap_layout *l,
                               size_t bytes)
{
    (void)hd, (void)h;
    if (l->xv.first)
        *l->xv.first = (bytes - l->xv.page_size) & ~(l->xv.page_size - 1);
    else if (l->start)
        *l->start = bytes - RTM_TLSF_GRANULE - sizeof(size_t);
    else
        *l->map = bytes - RTM_PAGEHEAP_PAGEMAP_BYTES;
}
static void craft_pages_below(struct shared_header *hd, struct rtm_heap *h, struct heap_layout *l,
                              size_t bytes)
{
    (void)h, (void)bytes;
    size_t *at = l->xv.first ? l->xv.first : l->start ? l->start : l->pages;
    *at = (size_t)0 - hd->heap_offset; /* the segment's first byte */
}
static void craft_usable_huge(struct shared_header *hd, struct rtm_heap *h, struct heap_layout *l,
                              size_t bytes)
{
    (void)hd, (void)h, (void)bytes;
    *l->usable = SIZE_MAX;
}
static void craft_control_garbage(struct shared_header *hd, struct rtm_heap *h,
                                  struct heap_layout *l, size_t bytes)
{
    (void)hd, (void)bytes;
    memset(h + 1, 0x5a, l->control_bytes - sizeof *h);
}
static void craft_control_random(struct shared_header *hd, struct rtm_heap *h,
                                 struct heap_layout *l, size_t bytes)
{
    (void)hd, (void)bytes;
    uint64_t rng = 0xc0ffee;
    unsigned char *c = (unsigned char *)(h + 1);
    for (size_t i = 0; i < l->control_bytes - sizeof *h; i++)
        c[i] = (unsigned char)rng_next(&rng);
}

TEST_CASE_IN("crafted", "a segment whose kind's layout does not hold is refused untouched")
{
    static const struct {
        const char *what;
        layout_edit edit;
    } cases[] = {
        { "heap header at the very end", craft_header_at_end },
        { "control structure at the end", craft_control_at_end },
        { "pool descriptor past the end", craft_next_past_end },
        { "pool descriptor on the segment header", craft_next_on_header },
        { "pool descriptor before the segment", craft_next_before_segment },
        { "pool list cycles", craft_pools_cycle },
        { "pool list cycles, count no bound", craft_pools_cycle_uncounted },
        { "pool past the end, counts agreeing", craft_pool_past_end },
        { "first block or page map at the end", craft_first_at_end },
        { "blocks or pages below the heap", craft_pages_below },
        { "usable bytes huge", craft_usable_huge },
        { "control words 0x5a", craft_control_garbage },
        { "control words random", craft_control_random },
    };
    const char *name = new_name();
    for (const char *const *kind = rtm_heap_kinds(); *kind; kind++) {
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            static char context[128];
            snprintf(context, sizeof context, "%s: %s", *kind, cases[i].what);
            test_context = context;
            struct rtm_shared *s = rtm_shared_create(name, *kind, STALE_BYTES);
            REQUIRE(s != NULL, );
            struct rtm_heap *h = rtm_shared_heap(s);
            struct heap_layout l;
            CHECK(heap_layout_find(h, &l));
            struct shared_header *hd = base_of(s);
            size_t bytes = hd->size_bytes - hd->heap_offset;
            /* intact, it attaches */
            struct rtm_shared *a = rtm_shared_attach(name);
            CHECK(a != NULL);
            if (a)
                CHECK_EQ(rtm_shared_detach(a), 0);
            if (l.usable)
                cases[i].edit(hd, h, &l, bytes);
            check_refused(name, EINVAL);
            CHECK_EQ(rtm_shared_detach(s), 0);
            CHECK_EQ(rtm_shared_unlink(name), 0);
        }
    }
}

/* The mutex in a segment's lock area. */
static pthread_mutex_t *mutex_of(struct rtm_shared *s)
{
    struct rtm_heap *h = rtm_shared_heap(s);
    return &((struct rtm_lock *)(void *)((char *)h - h->lock_offset))->mutex;
}

/* A child attaches name and checks the heap, under a 5 s alarm (a mutex
 * held by a live thread makes a call wait). Its wait status: exit 0
 * checked clean, 10 attach refused with EINVAL, 11 refused otherwise, 12
 * the check failed; or the signal that ended it. */
static int attach_and_check_in_child(const char *name)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        alarm(5);
        errno = 0;
        struct rtm_shared *a = rtm_shared_attach(name);
        if (!a)
            _exit(errno == EINVAL ? 10 : 11);
        _exit(rtm_heap_check(rtm_shared_heap(a)) == 0 ? 0 : 12);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return status;
}

/* A thread id that named a process now gone (reaped). */
static pid_t gone_tid(void)
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    waitpid(pid, NULL, 0);
    return pid;
}

#define LOCK_OWNER_DIED 0x40000000u

/* A kernel thread's id (PF_KTHREAD in /proc/<pid>/stat's flags), or -1. */
static pid_t kernel_thread(void)
{
    for (pid_t pid = 2; pid < 200; pid++) {
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        const char *p = strrchr(buf, ')');
        for (int field = 2; field < 9 && p; field++)
            p = strchr(p + 1, ' ');
        if (p && (strtoul(p + 1, NULL, 10) & 0x00200000UL))
            return pid;
    }
    return -1;
}

/* glibc aborts a process that waits on a robust mutex whose word names a
 * thread that is gone, or whose kind says it is not robust while its word
 * says its holder died: attach refuses both (EINVAL), untouched. */
TEST_CASE_IN("crafted", "a crafted lock is a refused attach, never an abort")
{
#if defined(__GLIBC__)
    const char *name = new_name();
    pid_t kthread = kernel_thread();
    for (int c = 0; c < 6; c++) {
        static char context[64];
        snprintf(context, sizeof context, "crafted lock, case %d", c);
        test_context = context;
        struct rtm_shared *s = rtm_shared_create(name, "tlsf", STALE_BYTES);
        REQUIRE(s != NULL, );
        pthread_mutex_t *m = mutex_of(s);
        pid_t zombie = -1;
        if (c == 0) {
            m->__data.__lock = (int)gone_tid(); /* held by a thread that is gone */
        } else if (c == 1) {
            m->__data.__kind &= ~16; /* PTHREAD_MUTEX_ROBUST_NORMAL_NP */
            m->__data.__lock = (int)LOCK_OWNER_DIED;
        } else if (c == 2) {
            m->__data.__kind = 0x7fffffff; /* no kind glibc makes */
        } else if (c == 3 || c == 4) {
            zombie = fork(); /* exited, not reaped: kill() still finds it */
            if (zombie == 0)
                _exit(0);
            usleep(50000);
            m->__data.__lock = (int)((unsigned)zombie | (c == 4 ? LOCK_OWNER_DIED : 0u));
        } else {
            if (kthread <= 0) {
                printf("#   no kernel thread found: that case skipped\n");
                CHECK_EQ(rtm_shared_detach(s), 0);
                CHECK_EQ(rtm_shared_unlink(name), 0);
                continue;
            }
            m->__data.__lock = (int)kthread; /* a kernel thread: the kernel says EPERM */
        }
        int st = attach_and_check_in_child(name);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 10);
        check_refused(name, EINVAL);
        if (zombie > 0)
            waitpid(zombie, NULL, 0);
        CHECK_EQ(rtm_shared_detach(s), 0);
        CHECK_EQ(rtm_shared_unlink(name), 0);
    }
    test_context = NULL;
#else
    printf("#   skipped: the mutex's fields are glibc's\n");
#endif
}

/* A robust lock whose holder is found gone after attach (damaged while
 * attached): the call reports a corruption and fails, it does not wait. */
TEST_CASE_IN("crafted", "a lock damaged after attach: the call fails and counts a corruption")
{
#if defined(__GLIBC__)
    const char *name = new_name();
    struct rtm_shared *s = rtm_shared_create(name, "tlsf", STALE_BYTES);
    REQUIRE(s != NULL, );
    struct rtm_heap *h = rtm_shared_heap(s);
    pthread_mutex_t *m = mutex_of(s);
    m->__data.__lock = (int)gone_tid();
    uint64_t before = h->corruptions; /* before the child can count one */
    pid_t pid = fork();
    REQUIRE(pid >= 0, );
    if (pid == 0) {
        alarm(5);
        errno = 0;
        void *p = rtm_heap_alloc(h, 64);
        _exit(p == NULL && errno == ENOTRECOVERABLE ? 0 : 1);
    }
    int st;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_EQ(h->corruptions, before + 1); /* counted in the heap, which every process sees */
    m->__data.__lock = 0;
    CHECK_EQ(rtm_shared_detach(s), 0);
    CHECK_EQ(rtm_shared_unlink(name), 0);
#else
    printf("#   skipped: the mutex's fields are glibc's\n");
#endif
}

/* Random bytes in the mutex, 300 times: each attach is refused or checks,
 * or waits (a live thread named: the alarm ends it); no child dies of
 * anything else. */
TEST_CASE_IN("crafted", "a mutex of random bytes never aborts a process that attaches")
{
    const char *name = new_name();
    struct rtm_shared *s = rtm_shared_create(name, "tlsf", STALE_BYTES);
    REQUIRE(s != NULL, );
    pthread_mutex_t *m = mutex_of(s), saved = *m;
    uint64_t x = 0x9e3779b97f4a7c15u;
    unsigned refused = 0, attached = 0, waited = 0, died = 0;
    for (int i = 0; i < 300; i++) {
        unsigned char *b = (unsigned char *)m;
        /* all bytes, or one word, random */
        size_t from = i % 2 ? 0 : (size_t)(i / 2 % (sizeof *m / 4)) * 4;
        size_t to = i % 2 ? sizeof *m : from + 4;
        for (size_t k = from; k < to; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            b[k] = (unsigned char)x;
        }
        int st = attach_and_check_in_child(name);
        if (WIFEXITED(st) && (WEXITSTATUS(st) == 10 || WEXITSTATUS(st) == 11))
            refused++;
        else if (WIFEXITED(st))
            attached++;
        else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
            waited++;
        else
            died++;
        *m = saved;
    }
    printf("#   random mutexes: %u refused, %u attached, %u waited, %u died\n", refused, attached,
           waited, died);
    CHECK_EQ(died, 0);
    CHECK(refused > 0);
    CHECK_EQ(rtm_shared_detach(s), 0);
    CHECK_EQ(rtm_shared_unlink(name), 0);
}

SECTION_CLEANUP("crafted")

/* ---- catalog ------------------------------------------------------------------------ */

/* A heap whose catalog has 4 entries, and 5 objects in it holding 0 to 4. */
static struct rtm_shared *catalog_heap(const char *name, int **obj)
{
    struct rtm_shared_config cfg = { .catalog_entries = 4 };
    struct rtm_shared *s = rtm_shared_create_ex(name, "tlsf", 1 << 20, &cfg);
    REQUIRE(s != NULL, NULL);
    for (int i = 0; i < 5; i++) {
        obj[i] = rtm_heap_alloc(rtm_shared_heap(s), sizeof(int));
        REQUIRE(obj[i] != NULL, NULL);
        *obj[i] = i;
    }
    return s;
}

/* A name of RTM_SHARED_CATALOG_NAME_MAX + 1 bytes, one too many. */
static void too_long(char *longest, size_t size)
{
    memset(longest, 'n', size - 1);
    longest[size - 1] = '\0';
}

TEST_CASE_IN("catalog", "publish refuses bad names and objects, and a full catalog")
{
    const char *name = new_name();
    int *obj[5];
    struct rtm_shared *s = catalog_heap(name, obj);
    if (!s)
        return;
    struct rtm_shared_config cfg = { 0 };
    char longest[RTM_SHARED_CATALOG_NAME_MAX + 2];
    too_long(longest, sizeof longest);
    CHECK_EQ(rtm_shared_publish(s, longest, obj[0]), -EINVAL);
    CHECK_EQ(rtm_shared_publish(s, "", obj[0]), -EINVAL);
    CHECK_EQ(rtm_shared_publish(s, NULL, obj[0]), -EINVAL);
    CHECK_EQ(rtm_shared_publish(NULL, "x", obj[0]), -EINVAL);
    CHECK_EQ(rtm_shared_publish(s, "x", &cfg), -EINVAL); /* outside the segment */
    CHECK_EQ(rtm_shared_publish(s, "x", NULL), -EINVAL);
    longest[RTM_SHARED_CATALOG_NAME_MAX] = '\0'; /* 31 bytes: taken */
    CHECK_EQ(rtm_shared_publish(s, longest, obj[0]), 0);
    CHECK_EQ(rtm_shared_publish(s, longest, obj[1]), -EEXIST);
    CHECK_EQ(rtm_shared_publish(s, "one", obj[1]), 0);
    CHECK_EQ(rtm_shared_publish(s, "two", obj[2]), 0);
    CHECK_EQ(rtm_shared_publish(s, "three", obj[3]), 0);
    CHECK_EQ(rtm_shared_publish(s, "four", obj[4]), -ENOSPC);
    CHECK_EQ(rtm_shared_detach(s), 0);
    CHECK_EQ(rtm_shared_unlink(name), 0);
}

TEST_CASE_IN("catalog", "lookup and unpublish find what is published, and freed entries are reused")
{
    const char *name = new_name();
    int *obj[5];
    struct rtm_shared *s = catalog_heap(name, obj);
    if (!s)
        return;
    char longest[RTM_SHARED_CATALOG_NAME_MAX + 2];
    too_long(longest, sizeof longest);
    longest[RTM_SHARED_CATALOG_NAME_MAX] = '\0';
    CHECK_EQ(rtm_shared_publish(s, longest, obj[0]), 0);
    CHECK_EQ(rtm_shared_publish(s, "one", obj[1]), 0);
    CHECK_EQ(rtm_shared_publish(s, "two", obj[2]), 0);
    CHECK_EQ(rtm_shared_publish(s, "three", obj[3]), 0);
    CHECK(rtm_shared_lookup(s, longest) == obj[0]);
    CHECK(rtm_shared_lookup(s, "two") == obj[2]);
    errno = 0;
    CHECK(rtm_shared_lookup(s, "four") == NULL && errno == ENOENT);
    errno = 0;
    CHECK(rtm_shared_lookup(s, "") == NULL && errno == EINVAL);
    errno = 0;
    CHECK(rtm_shared_lookup(NULL, "one") == NULL && errno == EINVAL);
    CHECK_EQ(rtm_shared_unpublish(s, "four"), -ENOENT);
    CHECK_EQ(rtm_shared_unpublish(s, "two"), 0);
    CHECK_EQ(rtm_shared_unpublish(s, "two"), -ENOENT);
    errno = 0;
    CHECK(rtm_shared_lookup(s, "two") == NULL && errno == ENOENT);
    CHECK_EQ(rtm_shared_publish(s, "four", obj[4]), 0); /* the freed entry */
    /* A freed entry reused by a shorter name holds that name alone. */
    CHECK_EQ(rtm_shared_unpublish(s, longest), 0);
    CHECK_EQ(rtm_shared_publish(s, "ab", obj[0]), 0);
    CHECK(rtm_shared_lookup(s, "ab") == obj[0]);
    errno = 0;
    CHECK(rtm_shared_lookup(s, longest) == NULL && errno == ENOENT);
    CHECK_EQ(rtm_shared_unpublish(s, "ab"), 0);
    CHECK_EQ(rtm_shared_publish(s, longest, obj[0]), 0);
    CHECK_EQ(rtm_shared_detach(s), 0);
    CHECK_EQ(rtm_shared_unlink(name), 0);
}

/* The lock's errors come back: here from the thread that holds it. */
TEST_CASE_IN("catalog", "the catalog's calls give the lock's errors back")
{
    const char *name = new_name();
    int *obj[5];
    struct rtm_shared *s = catalog_heap(name, obj);
    if (!s)
        return;
    struct rtm_heap *h = rtm_shared_heap(s);
    CHECK_EQ(rtm_shared_publish(s, "four", obj[4]), 0);
    CHECK_EQ(rtm__heap_lock_hold(h), 0);
    CHECK_EQ(rtm_shared_publish(s, "held", obj[0]), -EDEADLK);
    errno = 0;
    CHECK(rtm_shared_lookup(s, "four") == NULL && errno == EDEADLK);
    CHECK_EQ(rtm_shared_unpublish(s, "four"), -EDEADLK);
    CHECK_EQ(rtm__heap_lock_release(h), 0);
    CHECK(rtm_shared_lookup(s, "four") == obj[4]);
    /* Offset 0 is the header: the segment's first byte is no object. */
    CHECK_EQ(rtm_shared_to_offset(s, base_of(s)), 0);
    CHECK_EQ(rtm_shared_to_offset(s, (char *)base_of(s) + 1), 1);
    CHECK_EQ(rtm_shared_detach(s), 0);
    CHECK_EQ(rtm_shared_unlink(name), 0);
}

/* The child of the catalog section: finds, changes and publishes. */
static int catalog_child(const char *name)
{
    struct rtm_shared *c = rtm_shared_attach(name);
    if (!c)
        return 1;
    int *four = rtm_shared_lookup(c, "four");
    if (!four || *four != 4)
        return 2;
    *four = 40;
    if (rtm_shared_unpublish(c, "one") != 0)
        return 3;
    int *mine = rtm_heap_alloc(rtm_shared_heap(c), sizeof(int));
    if (!mine)
        return 4;
    *mine = 77;
    if (rtm_shared_publish(c, "child", mine) != 0)
        return 5;
    return rtm_shared_detach(c) == 0 ? 0 : 6;
}

TEST_CASE_IN("catalog", "a child finds, changes, unpublishes and publishes across processes")
{
    const char *name = new_name();
    int *obj[5];
    struct rtm_shared *s = catalog_heap(name, obj);
    if (!s)
        return;
    struct rtm_heap *h = rtm_shared_heap(s);
    CHECK_EQ(rtm_shared_publish(s, "one", obj[1]), 0);
    CHECK_EQ(rtm_shared_publish(s, "four", obj[4]), 0);
    pid_t pid = fork();
    if (pid == 0)
        test_exit(catalog_child(name));
    REQUIRE(pid > 0, );
    CHECK_EQ(wait_child(pid), 0);
    CHECK_EQ(*obj[4], 40);
    errno = 0;
    CHECK(rtm_shared_lookup(s, "one") == NULL && errno == ENOENT);
    int *child = rtm_shared_lookup(s, "child");
    CHECK(child != NULL && *child == 77);
    if (child)
        CHECK_EQ(rtm_heap_free(h, child), 0);
    for (int i = 0; i < 5; i++)
        CHECK_EQ(rtm_heap_free(h, obj[i]), 0);
    CHECK_EQ(rtm_heap_check(h), 0);
    CHECK_EQ(rtm_shared_detach(s), 0);
    CHECK_EQ(rtm_shared_unlink(name), 0);
}

/* A child that detaches the handle it inherited unmaps its own view only:
 * the parent's attachment still counts, and its view still works. */
TEST_CASE_IN("catalog", "a child detaching its inherited handle leaves the parent's attached")
{
    const char *name = new_name();
    int *obj[5];
    struct rtm_shared *s = catalog_heap(name, obj);
    if (!s)
        return;
    struct rtm_shared_info before, after;
    CHECK_EQ(rtm_shared_get_info(s, &before), 0);
    pid_t pid = fork();
    if (pid == 0)
        test_exit(rtm_shared_detach(s) == 0 ? 0 : 1);
    REQUIRE(pid > 0, );
    CHECK_EQ(wait_child(pid), 0);
    CHECK_EQ(rtm_shared_get_info(s, &after), 0);
    CHECK_EQ(after.attach_count, before.attach_count);
    CHECK_EQ(rtm_heap_check(rtm_shared_heap(s)), 0);
    CHECK_EQ(rtm_shared_detach(s), 0);
    CHECK_EQ(rtm_shared_unlink(name), 0);
}

SECTION_CLEANUP("catalog")

/* ---- threads ---------------------------------------------------------------------- */

#define THREADS 4

struct thread_arg {
    const char *name;
    struct rtm_shared *shared; /* the handle every thread uses */
    int index;
    int result; /* 0 when all went well */
};

/* One thread: blocks allocated, published, looked up, checked, unpublished
 * and freed through the one handle, while it attaches and detaches
 * handles of its own and reads the header (rtmem/shared.h: "Threads"). */
static void *thread_main(void *p)
{
    struct thread_arg *t = p;
    struct rtm_shared *s = t->shared;
    struct rtm_heap *h = rtm_shared_heap(s);
    char entry[16];
    snprintf(entry, sizeof entry, "thread-%d", t->index);
    for (int i = 0; i < 2000 && !t->result; i++) {
        if (i % 250 == 0) {
            struct rtm_shared *own = rtm_shared_attach(t->name);
            struct rtm_shared_info info;
            if (!own || rtm_shared_get_info(own, &info) != 0 || info.attach_count < 2 ||
                info.attach_count > 1 + THREADS || rtm_shared_detach(own) != 0)
                t->result = 1;
        }
        size_t size = 16 + (size_t)(i * 37 + t->index) % 300;
        unsigned char *b = rtm_heap_alloc(h, size);
        if (!b)
            continue; /* full for now: the others free */
        memset(b, t->index, size);
        if (rtm_shared_publish(s, entry, b) != 0) {
            t->result = 2;
            break;
        }
        unsigned char *found = rtm_shared_lookup(s, entry);
        if (found != b)
            t->result = 3;
        for (size_t k = 0; found && k < size; k++)
            if (found[k] != (unsigned char)t->index)
                t->result = 4;
        if (rtm_shared_unpublish(s, entry) != 0 || rtm_heap_free(h, b) != 0)
            t->result = 5;
    }
    return NULL;
}

TEST_CASE_IN("threads", "threads sharing one handle, each attaching its own, lose nothing")
{
    const char *name = new_name();
    struct rtm_shared *s = rtm_shared_create(name, "tlsf", 1 << 20);
    REQUIRE(s != NULL, );
    pthread_t tid[THREADS];
    struct thread_arg args[THREADS];
    for (int i = 0; i < THREADS; i++) {
        args[i] = (struct thread_arg){ .name = name, .shared = s, .index = i + 1 };
        CHECK_EQ(pthread_create(&tid[i], NULL, thread_main, &args[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        CHECK_EQ(pthread_join(tid[i], NULL), 0);
        CHECK_EQ(args[i].result, 0); /* the thread's verdict */
    }
    struct rtm_heap_stats st;
    CHECK_EQ(rtm_heap_check(rtm_shared_heap(s)), 0);
    CHECK_EQ(rtm_heap_stats(rtm_shared_heap(s), &st), 0);
    CHECK_EQ(st.live_blocks, 0);
    CHECK_EQ(attach_count(s), 1);
    errno = 0;
    CHECK(rtm_shared_lookup(s, "thread-1") == NULL && errno == ENOENT);
    CHECK_EQ(rtm_shared_detach(s), 0);
    CHECK_EQ(rtm_shared_unlink(name), 0);
}

SECTION_CLEANUP("threads")

/* ---- huge ---------------------------------------------------------------------------- */

static uint64_t pool_value(const char *file)
{
    char path[128];
    uint64_t v = 0;
    snprintf(path, sizeof path, POOL_DIR "/%s", file);
    read_u64(path, &v);
    return v;
}

/* 2 MiB pages of the machine's pool free for a new mapping: free ones not
 * reserved already (other programs change it: setup only). */
static uint64_t pages_available(void)
{
    uint64_t free_now = pool_value("free_hugepages"), resv = pool_value("resv_hugepages");
    return free_now > resv ? free_now - resv : 0;
}

/* Whether huge_dir is the test's own size-limited mount, whose counts no
 * other program changes; and the pages its files hold (reserved by a
 * mapping or faulted in), by its statfs. */
static bool own_mount;

static uint64_t pages_held(void)
{
    struct statfs fs;
    if (statfs(huge_dir, &fs) != 0 || fs.f_blocks < fs.f_bfree)
        return UINT64_MAX;
    return (uint64_t)(fs.f_blocks - fs.f_bfree);
}

/* A check of the pages the mount holds: on the test's own mount only. */
#define CHECK_HELD(expected)                  \
    do {                                      \
        if (own_mount)                        \
            CHECK_EQ(pages_held(), expected); \
    } while (0)

/* The pages of 2 MiB that the file of heap `name` holds (faulted in). */
static uint64_t file_pages(const char *name)
{
    char path[sizeof huge_dir + 256];
    struct stat st;
    snprintf(path, sizeof path, "%s/rtmem-%s", huge_dir, name);
    return stat(path, &st) == 0 ? (uint64_t)st.st_blocks * 512 / HUGE : UINT64_MAX;
}

/* The default huge page size (Hugepagesize of /proc/meminfo), 0 if none. */
static size_t default_huge_page(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    size_t kb = 0;
    char line[128];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Hugepagesize: %zu", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb << 10;
}

/* The page size of a hugetlbfs mount, by its pagesize= option ("2M",
 * "1024M", as the kernel writes it). */
static size_t mount_page(const struct mntent *m)
{
    const char *o = hasmntopt(m, "pagesize");
    if (!o)
        return default_huge_page();
    char *end;
    unsigned long long v = strtoull(o + sizeof "pagesize", &end, 10);
    int shift = *end == 'K' || *end == 'k'   ? 10
                : *end == 'M' || *end == 'm' ? 20
                : *end == 'G' || *end == 'g' ? 30
                                             : 0;
    return (size_t)(v << shift);
}

/* The first hugetlbfs mount of `page` pages (writable ones only when
 * writable), read here with getmntent: into dir, true if one is found. */
static bool find_mount(size_t page, bool writable, char *dir, size_t size)
{
    FILE *f = setmntent("/proc/self/mounts", "r");
    bool found = false;
    for (struct mntent *m; f && !found && (m = getmntent(f));) {
        if (strcmp(m->mnt_type, "hugetlbfs") != 0 || mount_page(m) != page)
            continue;
        if (writable && access(m->mnt_dir, W_OK | X_OK) != 0)
            continue;
        found = snprintf(dir, size, "%s", m->mnt_dir) < (int)size;
    }
    if (f)
        endmntent(f);
    return found;
}

/* Detaches, in the test's own mount namespace, every hugetlbfs mount of
 * 2 MiB pages it inherited: rtmem then finds the test's own. */
static void detach_inherited(void)
{
    char dir[256];
    while (find_mount(HUGE, false, dir, sizeof dir))
        if (umount2(dir, MNT_DETACH) != 0)
            break; /* and rtmem may find that one first: the checks below say so */
}

/* The hugetlbfs mount of 2 MiB pages to use: as root, one of the test's
 * own (see the top of this file); without root, the first writable one
 * there is. False, after saying why, if neither can be had. */
static bool take_mount(void)
{
    if (geteuid() != 0) {
        if (find_mount(HUGE, true, huge_dir, sizeof huge_dir)) {
            printf("using the hugetlbfs mount %s; without root, the checks of the pages a heap "
                   "holds are left out (they would read counters other programs change)\n",
                   huge_dir);
            return true;
        }
        printf("SKIP: no hugetlbfs mount of 2 MiB pages to write in, and mounting one needs "
               "root (mount -t hugetlbfs -o pagesize=2M none /dev/hugepages)\n");
        return false;
    }
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        printf("SKIP: no mount namespace of the test's own to mount hugetlbfs in: %s\n",
               strerror(errno));
        return false;
    }
    detach_inherited();
    char cwd[128];
    if (!getcwd(cwd, sizeof cwd) ||
        snprintf(made_dir, sizeof made_dir, "%s/shared_test.huge.XXXXXX", cwd) >=
            (int)sizeof made_dir ||
        !mkdtemp(made_dir)) {
        printf("SKIP: no directory to mount hugetlbfs on (%s)\n", strerror(errno));
        made_dir[0] = '\0';
        return false;
    }
    char opts[96];
    snprintf(opts, sizeof opts, "pagesize=2M,size=%zu,min_size=%zu", OWN_PAGES * HUGE,
             OWN_PAGES * HUGE);
    if (mount("none", made_dir, "hugetlbfs", 0, opts) != 0) {
        /* ENOMEM: another program took the pages take_pages found free */
        printf("SKIP: hugetlbfs cannot be mounted (%s): %s\n", opts, strerror(errno));
        rmdir(made_dir);
        made_dir[0] = '\0';
        return false;
    }
    snprintf(huge_dir, sizeof huge_dir, "%s", made_dir);
    char first[256];
    own_mount = find_mount(HUGE, true, first, sizeof first) && strcmp(first, huge_dir) == 0;
    printf("mounted hugetlbfs (%s) on %s, in the test's own mount namespace%s\n", opts, huge_dir,
           own_mount ? "" : "; FAIL: rtmem would find an inherited mount first");
    return own_mount;
}

/* Makes `need` 2 MiB pages available: there already, or reserved as root
 * by raising nr_hugepages (what was added is counted, for the cleanup to
 * take back). False, after saying why, if they cannot be had. */
static bool take_pages(uint64_t need)
{
    if (access(pool_path, F_OK) != 0) {
        printf("SKIP: this kernel has no 2 MiB huge pages (no %s)\n", pool_path);
        return false;
    }
    uint64_t avail = pages_available();
    if (avail >= need)
        return true;
    if (geteuid() != 0) {
        printf("SKIP: %" PRIu64 " free 2 MiB huge pages needed, %" PRIu64
               " free, and only root can reserve more (echo N > /proc/sys/vm/nr_hugepages)\n",
               need, avail);
        return false;
    }
    sigset_t old;
    hold_signals(&old);
    uint64_t nr = 0, now = 0;
    read_persistent(&nr);
    write_u64(pool_path, nr + (need - avail));
    read_persistent(&now);
    pages_added = now > nr ? now - nr : 0;
    release_signals(&old);
    printf("reserved 2 MiB huge pages: nr_hugepages %" PRIu64 " -> %" PRIu64 "\n", nr, now);
    if (pages_available() < need) {
        printf("SKIP: the kernel found %" PRIu64 " of the %" PRIu64
               " free 2 MiB huge pages needed (memory too fragmented)\n",
               pages_available(), need);
        return false;
    }
    return true;
}

static bool huge_file_exists(const char *name)
{
    char path[sizeof huge_dir + 256];
    snprintf(path, sizeof path, "%s/rtmem-%s", huge_dir, name);
    return access(path, F_OK) == 0;
}

static size_t page_of(const struct rtm_shared *s)
{
    struct rtm_shared_info info;
    return rtm_shared_get_info(s, &info) == 0 ? info.page_bytes : 0;
}

/* The child of the huge section: maps the heap anew at another address,
 * checks the parent's block, and publishes one of its own. */
static int huge_child(const char *name, void *parent_base, size_t size, uint64_t off)
{
    /* the inherited view goes, and address space is taken first, so that
     * this process's own mapping lies elsewhere */
    munmap(parent_base, size);
    void *filler = mmap(NULL, 64 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (filler == MAP_FAILED)
        return 10;
    struct rtm_shared *c = rtm_shared_attach(name);
    if (!c)
        return 11;
    if (base_of(c) == parent_base || page_of(c) != HUGE || (uintptr_t)base_of(c) % HUGE)
        return 12;
    unsigned char *p = rtm_shared_from_offset(c, off);
    for (size_t k = 0; p && k < 3000; k++)
        if (p[k] != pattern(1, k))
            return 13;
    unsigned char *q = rtm_heap_alloc(rtm_shared_heap(c), 5000);
    if (!p || !q)
        return 14;
    for (size_t k = 0; k < 5000; k++)
        q[k] = pattern(2, k);
    if (rtm_shared_publish(c, "child", q) != 0 || rtm_heap_check(rtm_shared_heap(c)) != 0)
        return 15;
    return rtm_shared_detach(c) == 0 ? 0 : 16;
}

static const struct rtm_shared_config huge = { .page_bytes = HUGE };

/* The section's pages and mount (heap A takes 2, and the workers' room;
 * the ENOMEM case asks one page more than the mount has free): false,
 * after saying why, when they cannot be had. As root the pages come first,
 * for the mount to hold them. */
static bool huge_setup(void)
{
    if (geteuid() == 0 ? !take_pages(OWN_PAGES) || !take_mount()
                       : !take_mount() || !take_pages(OWN_PAGES))
        return false;
    remember_paths(); /* the hugetlbfs paths too, for a signal's cleanup */
    return true;
}

/* Heap A: TLSF in 3 MiB and a byte of 2 MiB pages, prefaulted. */
static struct rtm_shared *create_a(const char *a_name)
{
    struct rtm_shared_config cfg = huge;
    cfg.prefault = RTM_ARENA_PREFAULT_TOUCH;
    return rtm_shared_create_ex(a_name, "tlsf", 3 * MIB + 1, &cfg);
}

/* A heap done with: its name unlinked, its view detached. */
static void drop(struct rtm_shared *s, const char *name)
{
    CHECK_EQ(rtm_shared_unlink(name), 0);
    CHECK_EQ(rtm_shared_detach(s), 0);
}

TEST_CASE_IN("huge", "a heap of huge pages takes whole pages, aligned, on hugetlbfs alone")
{
    CHECK_HELD(0);
    const char *a_name = new_name();
    struct rtm_shared *a = create_a(a_name);
    REQUIRE(a != NULL, );
    struct rtm_shared_info info;
    CHECK_EQ(rtm_shared_get_info(a, &info), 0);
    CHECK_EQ(info.size_bytes, 4 * MIB); /* rounded up to the huge page size */
    CHECK_EQ(info.page_bytes, HUGE);
    CHECK_EQ((uintptr_t)info.base % HUGE, 0);
    CHECK_HELD(2);
    CHECK_EQ(file_pages(a_name), 2); /* prefaulted */
    CHECK(huge_file_exists(a_name));
    CHECK(!exists(a_name)); /* not in /dev/shm */
    char path[sizeof huge_dir + 256];
    struct stat st;
    snprintf(path, sizeof path, "%s/rtmem-%s", huge_dir, a_name);
    CHECK(stat(path, &st) == 0 && st.st_size == (off_t)(4 * MIB) && (st.st_mode & 0777) == 0600);
    drop(a, a_name);
}

TEST_CASE_IN("huge", "a child maps the huge heap elsewhere, and processes share it")
{
    const char *a_name = new_name();
    struct rtm_shared *a = create_a(a_name);
    REQUIRE(a != NULL, );
    struct rtm_shared_info info;
    CHECK_EQ(rtm_shared_get_info(a, &info), 0);
    struct rtm_heap *h = rtm_shared_heap(a);
    unsigned char *mine = rtm_heap_alloc(h, 3000);
    REQUIRE(mine != NULL, );
    for (size_t k = 0; k < 3000; k++)
        mine[k] = pattern(1, k);
    uint64_t mine_off = rtm_shared_to_offset(a, mine);
    pid_t pid = fork();
    if (pid == 0)
        test_exit(huge_child(a_name, info.base, info.size_bytes, mine_off));
    REQUIRE(pid > 0, );
    CHECK_EQ(wait_child(pid), 0);
    unsigned char *theirs = rtm_shared_lookup(a, "child");
    bool intact = theirs != NULL;
    for (size_t k = 0; intact && k < 5000; k++)
        intact = theirs[k] == pattern(2, k);
    CHECK(intact);
    CHECK_EQ(attach_count(a), 1);
    /* two processes allocating, writing, verifying and freeing in it */
    uint64_t deadline = now_ns() + 100000000u;
    pid_t pids[2];
    for (int w = 0; w < 2; w++) {
        pids[w] = fork();
        if (pids[w] == 0)
            test_exit(worker(a_name, 0x96e0000u + (uint64_t)w, deadline));
    }
    for (int w = 0; w < 2; w++)
        CHECK_EQ(pids[w] > 0 ? wait_child(pids[w]) : -1, 0);
    if (theirs)
        CHECK_EQ(rtm_heap_free(h, theirs), 0);
    CHECK_EQ(rtm_heap_free(h, mine), 0);
    CHECK_EQ(rtm_heap_check(h), 0);
    CHECK_HELD(2); /* attaching took no page */
    CHECK_EQ(file_pages(a_name), 2);
    drop(a, a_name);
}

TEST_CASE_IN("huge", "a name is taken on hugetlbfs and in /dev/shm alike (EEXIST both ways)")
{
    const char *a_name = new_name();
    struct rtm_shared *a = create_a(a_name);
    REQUIRE(a != NULL, );
    errno = 0;
    CHECK(rtm_shared_create(a_name, "tlsf", 1 << 20) == NULL && errno == EEXIST);
    CHECK(!exists(a_name));
    errno = 0;
    CHECK(rtm_shared_create_ex(a_name, "tlsf", 2 * MIB, &huge) == NULL && errno == EEXIST);
    const char *b_name = new_name();
    struct rtm_shared *b = rtm_shared_create(b_name, "heapmem", 1 << 20);
    REQUIRE(b != NULL, );
    CHECK_EQ(page_of(b), (size_t)sysconf(_SC_PAGESIZE));
    errno = 0;
    CHECK(rtm_shared_create_ex(b_name, "tlsf", 2 * MIB, &huge) == NULL && errno == EEXIST);
    CHECK(!huge_file_exists(b_name));
    CHECK_HELD(2);
    struct rtm_shared *b2 = rtm_shared_attach(b_name);
    CHECK(b2 != NULL && page_of(b2) == (size_t)sysconf(_SC_PAGESIZE));
    if (b2)
        CHECK_EQ(rtm_shared_detach(b2), 0);
    drop(b, b_name);
    drop(a, a_name);
}

/* In both places (made by hand on hugetlbfs): attach takes /dev/shm's,
 * unlink removes both. */
TEST_CASE_IN("huge", "a name in both places: attach takes /dev/shm's, unlink removes both")
{
    const char *b_name = new_name();
    struct rtm_shared *b = rtm_shared_create(b_name, "heapmem", 1 << 20);
    REQUIRE(b != NULL, );
    int fd = -1;
    char path[sizeof huge_dir + 256];
    snprintf(path, sizeof path, "%s/rtmem-%s", huge_dir, b_name);
    CHECK((fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600)) >= 0);
    if (fd >= 0)
        close(fd);
    struct rtm_shared *b2 = rtm_shared_attach(b_name);
    CHECK(b2 != NULL && page_of(b2) == (size_t)sysconf(_SC_PAGESIZE));
    if (b2)
        CHECK_EQ(rtm_shared_detach(b2), 0);
    CHECK_EQ(rtm_shared_unlink(b_name), 0);
    CHECK(!exists(b_name) && !huge_file_exists(b_name));
    CHECK_EQ(rtm_shared_unlink(b_name), -ENOENT);
    CHECK_EQ(rtm_shared_detach(b), 0);
}

/* An empty hugetlbfs file: a creator between creating and sizing it. */
TEST_CASE_IN("huge", "an empty hugetlbfs file is busy to attach and taken to create")
{
    const char *e_name = new_name();
    int fd = -1;
    char path[sizeof huge_dir + 256];
    snprintf(path, sizeof path, "%s/rtmem-%s", huge_dir, e_name);
    CHECK((fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600)) >= 0);
    if (fd >= 0)
        close(fd);
    errno = 0;
    CHECK(rtm_shared_attach(e_name) == NULL && errno == EBUSY);
    errno = 0;
    CHECK(rtm_shared_create(e_name, "tlsf", 1 << 20) == NULL && errno == EEXIST);
    CHECK(!exists(e_name));
    CHECK_EQ(rtm_shared_unlink(e_name), 0);
    CHECK(!huge_file_exists(e_name));
}

/* Page sizes of 1 GiB and 4 MiB: refused as this machine has them. */
static void other_page_sizes_refused(const char *c_name)
{
    struct rtm_shared_config cfg = { .page_bytes = 4 * MIB };
    if (access("/sys/kernel/mm/hugepages/hugepages-4096kB", F_OK) != 0) {
        errno = 0;
        CHECK(rtm_shared_create_ex(c_name, "tlsf", 4 * MIB, &cfg) == NULL && errno == EOPNOTSUPP);
    }
    char gib_dir[256];
    bool gib_pages = access("/sys/kernel/mm/hugepages/hugepages-1048576kB", F_OK) == 0;
    if (!gib_pages || !find_mount((size_t)1 << 30, false, gib_dir, sizeof gib_dir)) {
        cfg.page_bytes = (size_t)1 << 30;
        errno = 0;
        CHECK(rtm_shared_create_ex(c_name, "tlsf", 1 << 20, &cfg) == NULL &&
              errno == (gib_pages ? ENODEV : EOPNOTSUPP));
    }
}

TEST_CASE_IN("huge", "each refusal of a huge heap has its errno and takes no page")
{
    const char *a_name = new_name();
    struct rtm_shared *a = create_a(a_name);
    REQUIRE(a != NULL, );
    const char *c_name = new_name();
    if (own_mount) { /* one page more than the mount has free: the pool's refusal */
        errno = 0;
        CHECK(rtm_shared_create_ex(c_name, "tlsf", (OWN_PAGES - 2 + 1) * HUGE, &huge) == NULL &&
              errno == ENOMEM);
    }
    struct rtm_shared_config cfg = huge;
    cfg.thp = RTM_ARENA_THP_ON;
    errno = 0;
    CHECK(rtm_shared_create_ex(c_name, "tlsf", HUGE, &cfg) == NULL && errno == EINVAL);
    cfg = (struct rtm_shared_config){ .page_bytes = 3 * MIB };
    errno = 0;
    CHECK(rtm_shared_create_ex(c_name, "tlsf", HUGE, &cfg) == NULL && errno == EINVAL);
    cfg.page_bytes = 1024;
    errno = 0;
    CHECK(rtm_shared_create_ex(c_name, "tlsf", HUGE, &cfg) == NULL && errno == EINVAL);
    other_page_sizes_refused(c_name);
    cfg = (struct rtm_shared_config){ .page_bytes = HUGE };
    errno = 0;
    CHECK(rtm_shared_attach_ex(a_name, &cfg) == NULL && errno == EINVAL); /* create only */
    cfg = (struct rtm_shared_config){ .thp = RTM_ARENA_THP_ON };
    errno = 0;
    CHECK(rtm_shared_attach_ex(a_name, &cfg) == NULL && errno == EINVAL);
    CHECK(!exists(c_name) && !huge_file_exists(c_name));
    CHECK_HELD(2);
    drop(a, a_name);
    CHECK_HELD(0);
}

TEST_CASE_IN("huge", "unlinked, a huge heap's view lives on, and its pages go with it")
{
    const char *a_name = new_name();
    struct rtm_shared *a = create_a(a_name);
    REQUIRE(a != NULL, );
    struct rtm_heap *h = rtm_shared_heap(a);
    CHECK_EQ(rtm_shared_unlink(a_name), 0);
    CHECK(!huge_file_exists(a_name));
    CHECK_HELD(2); /* the view holds them */
    errno = 0;
    CHECK(rtm_shared_attach(a_name) == NULL && errno == ENOENT);
    CHECK_EQ(rtm_shared_unlink(a_name), -ENOENT);
    void *r = rtm_heap_alloc(h, 100000); /* this view lives on */
    CHECK(r != NULL);
    CHECK_EQ(rtm_heap_free(h, r), 0);
    CHECK_EQ(rtm_shared_detach(a), 0);
    CHECK_HELD(0); /* the last view gone, the pages are back */
}

TEST_CASE_IN("huge", "the huge pages reserved go back, exactly, and no file is left")
{
    CHECK_EQ(leftovers(), 0);
    CHECK_HELD(0);
    unmount_dir();            /* the mount's own reservation goes with it */
    CHECK(give_back_pages()); /* the pool shrank by what the test added */
}

SECTION_CLEANUP("huge")

static const char *const sections[] = { "lifecycle", "exists",  "address", "concurrent", "creator",
                                        "stale",     "catalog", "crafted", "threads",    "huge" };

/* The section is the group; main arranges the cleanup (at exit, on a fatal
 * signal), skips what an emulator cannot run, and takes huge's mount and
 * pages first (exit 77 without them). */
int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    bool known = false;
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
        known |= strcmp(what, sections[i]) == 0;
    if (!known) {
        fprintf(stderr, "usage: shared_test lifecycle | exists | address | concurrent | creator | "
                        "stale | catalog | crafted | threads | huge\n");
        return 2;
    }
    owner_pid = (int)getpid();
    atexit(remove_all);
    if (__sanitizer_set_death_callback)
        __sanitizer_set_death_callback(remove_all);
    /* A section that crashes (a fault, RTM_ASSERT's trap, an abort) or that
     * a sanitizer halts removes its objects as one that is stopped does. */
    static const int fatal[] = { SIGALRM, SIGTERM, SIGINT,  SIGHUP, SIGPIPE,
                                 SIGSEGV, SIGBUS,  SIGABRT, SIGILL, SIGFPE };
    struct sigaction sa = { .sa_handler = remove_on_signal };
    sigfillset(&sa.sa_mask); /* the cleanup runs once, whole */
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
        sigaction(fatal[i], &sa, NULL);
    alarm(50); /* CTest's timeout for these is 60 s */
    if (test_emulated() && sizeof(void *) == 4 && strcmp(what, "huge") == 0)
        return test_skip_emulated(
            "shared.huge", "qemu-user maps a 32-bit program at an offset into its own address "
                           "space, where a huge page's alignment cannot be had");
    if (test_emulated() && strcmp(what, "creator") == 0)
        return test_skip_emulated(
            "shared.creator",
            "the creator's death is recovered through the kernel's robust futex list, which "
            "qemu-user does not implement: this needs a real kernel (a board, or qemu-system)");
    if (strcmp(what, "huge") == 0 && !huge_setup()) {
        remove_all();
        return leftovers() ? 1 : SKIP;
    }
    return test_main(argc, argv, "shared_test");
}
