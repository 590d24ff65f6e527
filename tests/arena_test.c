/*
 * Arenas (rtmem/arena.h): every source this machine supports, with and
 * without prefault and lock, each report checked against /proc/self/status
 * and /proc/self/smaps as parsed here (not by the library's parser), the
 * failure messages, and heaps of every kind on every arena.
 *
 *   arena_test SECTION    (ctest -R arena runs them all)
 *
 * Each section runs in a child process, which dies with the wrapper
 * (PR_SET_PDEATHSIG). The parent (the wrapper) removes afterwards whatever
 * the test may have left, even when the child failed, crashed or was
 * interrupted: POSIX shm objects and SysV segments named for this run, and
 * its scratch directory; anything of the arenas' found there fails the test
 * (an arena removes what it creates). A section that reserves huge pages
 * (as root, the pages it needs) counts what it added, and the wrapper takes
 * back that many, no more: another process may have reserved pages since,
 * and writing the old pool size back would undo its reservation. No section
 * shrinks a pool: pages reserved are someone's (and 1 GiB pages may never be
 * found again). SIGINT, SIGTERM and SIGHUP are passed to the child, then the
 * cleanup runs. Sections that can do nothing here (no root to reserve huge
 * pages, no VM_PFNMAP node...) exit with 77, which CTest shows as skipped,
 * and say why.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../src/arena/internal.h" /* the line reader, tested on its own */
#include "check.h"
#include "rtmem/rtmem.h"

#define SKIP     77
#define KIB      ((size_t)1 << 10)
#define MIB      ((size_t)1 << 20)
#define GIB      ((size_t)1 << 30)
#define HUGE_DIR "/sys/kernel/mm/hugepages"

static struct {
    int run;                /* the wrapper's pid: names this run's objects */
    char dir[PATH_MAX / 2]; /* scratch directory, on the build tree's disk */
    size_t page;            /* base page size */
    bool root;              /* can reserve huge pages, mount, drop capabilities */
    bool mlock_works;       /* mlock really locks (a sanitizer may make it a no-op) */
    int child;              /* the section's process, for the wrapper */
    volatile sig_atomic_t signal;
    /* Huge pages the section added to the 2 MiB and 1 GiB pools (shared
     * with the wrapper, which takes them back). */
    uint64_t *pages_added;
} g;

/* ---- small helpers ------------------------------------------------------ */

/* "2 MiB", "1 GiB": a huge page size in words. */
static const char *page_name(size_t page)
{
    static char buf[32];
    if (page >= GIB)
        snprintf(buf, sizeof buf, "%zu GiB", page / GIB);
    else
        snprintf(buf, sizeof buf, "%zu MiB", page / MIB);
    return buf;
}

static void shm_name(char *buf, size_t size, int n)
{
    snprintf(buf, size, "/rtmem-arena-test-%d-%d", g.run, n);
}

static int sysv_key(int n)
{
    return (int)(0x52000000u | ((unsigned)g.run & 0xffffu) << 8 | (unsigned)n);
}

static void scratch_path(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", g.dir, name);
}

static bool contains(const char *s, const char *part)
{
    bool ok = s && strstr(s, part) != NULL;
    if (!ok)
        fprintf(stderr, "  message \"%s\"\n  lacks \"%s\"\n", s ? s : "(null)", part);
    return ok;
}

static uint64_t thread_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return (uint64_t)ru.ru_minflt + (uint64_t)ru.ru_majflt;
}

/* The whole of a /proc or /sys file, NUL-terminated (malloc'd). */
static char *slurp(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    return buf;
}

static bool read_num(const char *path, uint64_t *v)
{
    char *s = slurp(path);
    bool ok = s && sscanf(s, "%" SCNu64, v) == 1;
    free(s);
    return ok;
}

static bool write_num(const char *path, uint64_t v)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%" PRIu64 "\n", v);
    bool ok = write(fd, buf, (size_t)n) == n;
    close(fd);
    return ok;
}

/* VmLck of this process, kB, from /proc/self/status. */
static int64_t own_vmlck_kb(void)
{
    char *s = slurp("/proc/self/status");
    const char *l = s ? strstr(s, "\nVmLck:") : NULL;
    int64_t kb = l ? strtoll(l + 7, NULL, 10) : -1;
    free(s);
    return kb;
}

/* One entry of /proc/self/smaps, figures in bytes. */
struct entry {
    bool found;
    uintptr_t start, end;
    char perms[5];
    uint64_t kernel_page, rss, hugetlb, anon_huge, shmem_pmd, file_pmd;
    uint64_t dirty; /* Shared_Dirty + Private_Dirty */
    char flags[192];
};

static uint64_t kb_after(const char *line)
{
    return strtoull(strchr(line, ':') + 1, NULL, 10) * 1024;
}

/* The smaps entry that contains addr (or, with ends_at, the one that ends
 * there). */
static struct entry own_smaps(uintptr_t addr, bool ends_at)
{
    struct entry e = { 0 }, cur = { 0 };
    char *s = slurp("/proc/self/smaps");
    if (!s)
        return e;
    for (char *line = s, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        char *dash;
        uintptr_t start = (uintptr_t)strtoull(line, &dash, 16);
        if (*dash == '-' && dash > line) {
            if (cur.found)
                break;
            memset(&cur, 0, sizeof cur);
            cur.start = start;
            cur.end = (uintptr_t)strtoull(dash + 1, &dash, 16);
            memcpy(cur.perms, dash + 1, 4);
            cur.found = ends_at ? cur.end == addr : cur.start <= addr && addr < cur.end;
            continue;
        }
        if (!cur.found)
            continue;
        if (!strncmp(line, "KernelPageSize:", 15))
            cur.kernel_page = kb_after(line);
        else if (!strncmp(line, "Rss:", 4))
            cur.rss = kb_after(line);
        else if (!strncmp(line, "Shared_Hugetlb:", 15) || !strncmp(line, "Private_Hugetlb:", 16))
            cur.hugetlb += kb_after(line);
        else if (!strncmp(line, "Shared_Dirty:", 13) || !strncmp(line, "Private_Dirty:", 14))
            cur.dirty += kb_after(line);
        else if (!strncmp(line, "AnonHugePages:", 14))
            cur.anon_huge = kb_after(line);
        else if (!strncmp(line, "ShmemPmdMapped:", 15))
            cur.shmem_pmd = kb_after(line);
        else if (!strncmp(line, "FilePmdMapped:", 14))
            cur.file_pmd = kb_after(line);
        else if (!strncmp(line, "VmFlags:", 8))
            snprintf(cur.flags, sizeof cur.flags, "%s ", line + 8);
    }
    free(s);
    return cur.found ? cur : e;
}

static bool has_flag(const struct entry *e, const char *flag)
{
    char f[8];
    snprintf(f, sizeof f, " %s ", flag);
    return strstr(e->flags, f) != NULL;
}

/* ---- the checks every arena gets ---------------------------------------- */

struct expect {
    size_t page;    /* page size the arena must have (0: base) */
    bool disk_file; /* a shared mapping of a disk file: first writes fault */
    bool no_guards; /* an existing SysV segment: attached where the kernel puts it */
};

static bool hugetlb_expected(const struct expect *x)
{
    return x->page > g.page;
}

/* Fills a heap of every kind on the arena, checks it, empties it. */
static void heaps_on(struct rtm_arena *a)
{
    for (const char *const *k = rtm_heap_kinds(); *k; k++) {
        struct rtm_heap *h = rtm_arena_heap(a, *k, NULL);
        CHECK(h != NULL);
        if (!h)
            continue;
        size_t block = a->size_bytes / 512;
        block = block < 64 ? 64 : block > MIB ? MIB : block;
        struct rtm_heap_stats fresh; /* a page kind's largest request is a page's */
        if (rtm_heap_stats(h, &fresh) == 0 && block > fresh.largest_free_bytes)
            block = fresh.largest_free_bytes;
        size_t want = rtm_heap_fill_count(h, block), n = 0;
        unsigned char **p = malloc((want + 16) * sizeof *p);
        while (n < want + 16 && (p[n] = rtm_heap_alloc(h, block)) != NULL) {
            p[n][0] = p[n][block - 1] = (unsigned char)n;
            n++;
        }
        CHECK(want > 0 && n >= want);
        CHECK_EQ(rtm_heap_check(h), 0);
        for (size_t i = 0; i < n; i++) {
            CHECK(p[i][0] == (unsigned char)i && p[i][block - 1] == (unsigned char)i);
            CHECK_EQ(rtm_heap_free(h, p[i]), 0);
        }
        struct rtm_heap_stats st;
        CHECK_EQ(rtm_heap_stats(h, &st), 0);
        CHECK_EQ(st.used_bytes, 0);
        CHECK_EQ(rtm_heap_check(h), 0);
        rtm_heap_destroy(h);
        free(p);
    }
}

/* Writes a byte of every page; returns the page faults that took. Not
 * instrumented: a sanitizer's first look at the shadow of each 32 KiB
 * would fault too, and be counted as the arena's. */
__attribute__((no_sanitize_address)) static uint64_t write_every_page(void *base, size_t size)
{
    uint64_t f0 = thread_faults();
    for (size_t off = 0; off < size; off += g.page)
        ((volatile unsigned char *)base)[off] = 1;
    return thread_faults() - f0;
}

/* The report's geometry against smaps: where, how large, which pages, what
 * is resident; and a guard page on each side. Returns the smaps entry (not
 * found when it is missing: a failure). */
static struct entry report_geometry(const struct rtm_arena *a, const struct rtm_arena_config *cfg,
                                    const struct expect *x)
{
    const struct rtm_arena_report *r = &a->report;
    size_t page = x->page ? x->page : g.page;
    size_t want = cfg->size_bytes ? (cfg->size_bytes + page - 1) / page * page : a->size_bytes;
    uintptr_t base = (uintptr_t)a->base;
    CHECK(base != 0 && base % page == 0);
    CHECK_EQ(a->size_bytes, want);
    CHECK_EQ(a->page_bytes, page);
    CHECK_EQ(r->page_bytes_asked, page);
    CHECK_EQ(r->size_bytes, want);
    CHECK_EQ(r->asked_bytes, cfg->size_bytes);
    CHECK(r->verified);
    if (a->size_bytes >= 2 * MIB)
        CHECK(base % (2 * MIB) == 0);

    struct entry e = own_smaps(base, false);
    REQUIRE(e.found, e);
    CHECK_EQ(e.start, base);
    if (!x->no_guards)
        CHECK_EQ(e.end - e.start, a->size_bytes);
    CHECK_EQ(e.kernel_page, page);
    CHECK_EQ(r->page_bytes, e.kernel_page);
    CHECK_EQ(r->resident_bytes, e.rss + e.hugetlb);
    CHECK_EQ(r->anon_huge_bytes, e.anon_huge);
    CHECK_EQ(r->shmem_pmd_bytes, e.shmem_pmd);
    CHECK_EQ(r->file_pmd_bytes, e.file_pmd);

    /* Guard pages: one inaccessible page on each side. */
    if (!x->no_guards) {
        struct entry before = own_smaps(base, true), after = own_smaps(base + a->size_bytes, false);
        CHECK(before.found && before.end - before.start == g.page && !strcmp(before.perms, "---p"));
        CHECK(after.found && after.start == base + a->size_bytes &&
              after.end - after.start == g.page && !strcmp(after.perms, "---p"));
    }
    return e;
}

/* The lock, by VmLck (lck0 before the open, kB) and by the mapping's
 * flags (e). */
static void report_lock(const struct rtm_arena *a, const struct rtm_arena_config *cfg,
                        const struct expect *x, int64_t lck0, const struct entry *e)
{
    const struct rtm_arena_report *r = &a->report;
    int64_t delta_kb = own_vmlck_kb() - lck0;
    CHECK_EQ(r->locked_bytes, delta_kb * 1024);
    if (cfg->lock == RTM_ARENA_LOCK_NONE) {
        CHECK_EQ(r->lock_state, RTM_ARENA_UNLOCKED);
        CHECK_EQ(delta_kb, 0);
        CHECK(!has_flag(e, "lo"));
    } else if (hugetlb_expected(x)) {
        CHECK_EQ(r->lock_state, RTM_ARENA_LOCKED_HUGETLB);
        CHECK(has_flag(e, "ht") && !has_flag(e, "lo"));
        CHECK_EQ(delta_kb, 0);
    } else if (g.mlock_works) {
        CHECK_EQ(r->lock_state, RTM_ARENA_LOCKED);
        CHECK(has_flag(e, "lo"));
        CHECK_EQ(delta_kb * 1024, a->size_bytes);
    } else {
        CHECK_EQ(r->lock_state, RTM_ARENA_LOCK_IGNORED);
        CHECK_EQ(delta_kb, 0);
        CHECK(contains(a->message, "mlock was intercepted"));
    }
    CHECK_EQ(r->lock_errno, 0);
}

/* Whether every page is present from the open: prefaulted, or locked. */
static bool populated(const struct rtm_arena_config *cfg)
{
    return cfg->prefault != RTM_ARENA_PREFAULT_NONE ||
           (cfg->lock != RTM_ARENA_LOCK_NONE && g.mlock_works);
}

/* What is present, and the faults it took. (Under an emulator the
 * process's faults are the emulator's too: the fault counts are not
 * checked there.) */
static void report_presence(const struct rtm_arena *a, const struct rtm_arena_config *cfg,
                            const struct expect *x)
{
    const struct rtm_arena_report *r = &a->report;
    size_t page = x->page ? x->page : g.page;
    uint64_t pages = a->size_bytes / page;
    bool count_faults = !test_emulated();
    if (populated(cfg)) {
        CHECK_EQ(r->resident_bytes, a->size_bytes);
        /* One fault per page, but where THP maps 2 MiB at once, and where
         * a file's read fault maps the cached pages around it too. */
        if (count_faults && cfg->thp == RTM_ARENA_THP_DEFAULT && !x->disk_file)
            CHECK(r->minor_faults + r->major_faults >= pages);
        else if (count_faults)
            CHECK(r->minor_faults + r->major_faults > 0);
    } else {
        CHECK_EQ(r->resident_bytes, 0);
        if (count_faults)
            CHECK(r->minor_faults + r->major_faults < 64);
    }
}

/* Memory that stays put: once prefaulted (or locked), writing every page
 * takes no fault, but for a disk file's first writes. */
static void report_quiet_writes(const struct rtm_arena *a, const struct rtm_arena_config *cfg,
                                const struct expect *x)
{
    size_t page = x->page ? x->page : g.page;
    bool quiet = cfg->prefault == RTM_ARENA_PREFAULT_TOUCH || (populated(cfg) && !x->disk_file);
    /* A disk file's page that writeback cleaned since the open faults at
     * its next write: those (clean now, by smaps) are allowed to. */
    uint64_t clean = 0;
    if (x->disk_file) {
        struct entry now = own_smaps((uintptr_t)a->base, false);
        clean = (a->size_bytes - (now.dirty < a->size_bytes ? now.dirty : a->size_bytes)) / page;
    }
    uint64_t faults = write_every_page(a->base, a->size_bytes);
    if (test_emulated())
        return;
    if (quiet && clean && faults)
        printf("  note: writeback cleaned %" PRIu64 " pages of the file before they were "
               "written: %" PRIu64 " faults\n",
               clean, faults);
    if (quiet)
        CHECK(faults <= (cfg->prefault == RTM_ARENA_PREFAULT_TOUCH ? clean : 0));
    else
        CHECK(faults > 0);
}

/* The report against smaps and VmLck as read here; lck0 is VmLck (kB)
 * before the open. */
static void check_report(const struct rtm_arena *a, const struct rtm_arena_config *cfg,
                         const struct expect *x, int64_t lck0)
{
    struct entry e = report_geometry(a, cfg, x);
    if (!e.found)
        return;
    report_lock(a, cfg, x, lck0, &e);
    report_presence(a, cfg, x);
    if (!(cfg->flags & RTM_ARENA_READ_ONLY))
        report_quiet_writes(a, cfg, x);
}

/* Opens, checks, fills heaps of every kind, closes; VmLck must come back.
 * Returns false when the open failed. */
static bool run_case(const char *label, const struct rtm_arena_config *cfg, const struct expect *x)
{
    const char *was = test_context;
    test_context = label;
    int64_t lck0 = own_vmlck_kb();
    struct rtm_arena a;
    int rc = rtm_arena_open(&a, cfg);
    CHECK_EQ(rc, 0);
    if (rc) {
        fprintf(stderr, "  %s: %s\n", label, a.message);
        test_context = was;
        return false;
    }
    check_report(&a, cfg, x, lck0);
    if (!(cfg->flags & RTM_ARENA_READ_ONLY))
        heaps_on(&a);
    CHECK_EQ(rtm_arena_close(&a), 0);
    CHECK(a.base == NULL);
    CHECK_EQ(own_vmlck_kb(), lck0);
    test_context = was;
    return true;
}

/* Every combination of prefault and lock (none or must) for one source. */
static void run_matrix(const char *name, struct rtm_arena_config cfg, const struct expect *x)
{
    static const char *const prefaults[] = { "none", "populate", "touch" };
    for (int pf = RTM_ARENA_PREFAULT_NONE; pf <= RTM_ARENA_PREFAULT_TOUCH; pf++) {
        for (int lk = RTM_ARENA_LOCK_NONE; lk <= RTM_ARENA_LOCK_MUST; lk += 2) {
            char label[160];
            snprintf(label, sizeof label, "%s, prefault %s, lock %s", name, prefaults[pf],
                     lk ? "must" : "none");
            cfg.prefault = pf;
            cfg.lock = lk;
            run_case(label, &cfg, x);
        }
    }
}

/* Open descriptors of this process (no descriptor or memory of its own
 * taken to count them). */
static int open_fds(void)
{
    int n = 0;
    for (int fd = 0; fd < 4096; fd++)
        n += fcntl(fd, F_GETFD) >= 0;
    return n;
}

/* Mappings of this process: lines of /proc/self/maps, read into the stack
 * (a malloc'd buffer could be a mapping of its own). */
static int mappings(void)
{
    char buf[4096];
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC), n = 0;
    ssize_t got;
    while (fd >= 0 && (got = read(fd, buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < got; i++)
            n += buf[i] == '\n';
    if (fd >= 0)
        close(fd);
    return n;
}

/* An open that must fail with err and a message containing each part;
 * nothing may be left mapped, open or locked. */
static void expect_failure(const char *label, const struct rtm_arena_config *cfg, int err,
                           const char *part1, const char *part2)
{
    const char *was = test_context;
    test_context = label;
    int64_t lck0 = own_vmlck_kb();
    struct rtm_arena a;
    int fds = open_fds(), maps = mappings();
    int rc = rtm_arena_open(&a, cfg);
    CHECK_EQ(open_fds(), fds);
    CHECK_EQ(mappings(), maps);
    CHECK_EQ(-rc, err);
    CHECK(a.base == NULL && a.fd == -1 && a.shm_id == -1);
    CHECK(strlen(a.message) > 0 && strlen(a.message) < sizeof a.message);
    if (part1)
        CHECK(contains(a.message, part1));
    if (part2)
        CHECK(contains(a.message, part2));
    CHECK_EQ(own_vmlck_kb(), lck0);
    if (rc == 0)
        rtm_arena_close(&a);
    else
        CHECK_EQ(rtm_arena_close(&a), 0); /* a failed open leaves a closed arena */
    printf("  %s: %s\n", label, a.message);
    test_context = was;
}

/* ---- huge page pools ------------------------------------------------------ */

static void pool_file(char *buf, size_t size, size_t page, const char *name)
{
    snprintf(buf, size, HUGE_DIR "/hugepages-%zukB/%s", page >> 10, name);
}

static uint64_t pool_value(size_t page, const char *name)
{
    char path[128];
    uint64_t v = 0;
    pool_file(path, sizeof path, page, name);
    read_num(path, &v);
    return v;
}

/* The slot of g.pages_added for a pool. */
static uint64_t *pages_added(size_t page)
{
    return &g.pages_added[page == GIB ? 1 : 0];
}

/* Makes `need` pages of that size free: there already, or reserved (as
 * root) by raising nr_hugepages. What it added is counted, for the wrapper
 * to take back. Returns 0, or SKIP after saying why. */
static int reserve_huge(size_t page, uint64_t need)
{
    char path[128];
    pool_file(path, sizeof path, page, "nr_hugepages");
    if (access(path, F_OK) != 0) {
        printf("SKIP: this kernel has no %s huge pages (no %s)\n", page_name(page), path);
        return SKIP;
    }
    uint64_t free_now = pool_value(page, "free_hugepages"),
             resv = pool_value(page, "resv_hugepages");
    uint64_t avail = free_now > resv ? free_now - resv : 0;
    if (avail >= need)
        return 0;
    if (!g.root) {
        printf("SKIP: %" PRIu64 " free %s huge pages needed, %" PRIu64
               " free, and only root can reserve more (%s)\n",
               need, page_name(page), avail, path);
        return SKIP;
    }
    uint64_t nr = pool_value(page, "nr_hugepages");
    write_num(path, nr + (need - avail));
    uint64_t now = pool_value(page, "nr_hugepages");
    *pages_added(page) += now > nr ? now - nr : 0;
    free_now = pool_value(page, "free_hugepages");
    resv = pool_value(page, "resv_hugepages");
    avail = free_now > resv ? free_now - resv : 0;
    printf("reserved %s huge pages: nr_hugepages %" PRIu64 " -> %" PRIu64 " (%s)\n",
           page_name(page), nr, now, path);
    if (avail < need) {
        printf("SKIP: the kernel found %" PRIu64 " of the %" PRIu64
               " %s huge pages asked (memory too fragmented)\n",
               avail, need, page_name(page));
        return SKIP;
    }
    return 0;
}

/* ---- sections ------------------------------------------------------------- */

/* A section that cannot run here says why and exits 77 (SKIP): when a case
 * finds the section's means missing (skip_section), or when every case
 * that may skip did (cases_tried of them, cases_skipped). Read by
 * run_section, in the test process. */
static bool skip_section;
static int cases_tried, cases_skipped;

/* A case that may not run here: counted as tried, and as skipped (saying
 * why) when it cannot. */
static void case_tried(void)
{
    cases_tried++;
}

static void case_skipped(const char *why)
{
    printf("SKIP: %s\n", why);
    cases_skipped++;
}

/* Runs fn in a child process, which exits with its checks' verdict. */
static void in_child(void (*fn)(void))
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        fn();
        test_exit(test_checks_failed ? 1 : 0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void describe_says(const struct rtm_arena *a, const char *part)
{
    char text[1024];
    rtm_arena_describe(a, text, sizeof text);
    CHECK(contains(text, part));
}

/* ---- sources ---- */

/* 1 MiB - 100 bytes: the size is rounded up to the page. */
#define SOURCE_SIZE (MIB - 100)

TEST_CASE_IN("sources", "anonymous memory is what the report says, at every prefault and lock")
{
    run_matrix("anon", (struct rtm_arena_config){ .size_bytes = SOURCE_SIZE },
               &(struct expect){ 0 });
}

TEST_CASE_IN("sources", "a memfd is what the report says, at every prefault and lock")
{
    run_matrix("memfd",
               (struct rtm_arena_config){ .source = RTM_ARENA_MEMFD, .size_bytes = SOURCE_SIZE },
               &(struct expect){ 0 });
}

TEST_CASE_IN("sources", "POSIX shm is what the report says, at every prefault and lock")
{
    char name[64];
    shm_name(name, sizeof name, 1);
    run_matrix("posix_shm",
               (struct rtm_arena_config){
                   .source = RTM_ARENA_POSIX_SHM, .name = name, .size_bytes = SOURCE_SIZE },
               &(struct expect){ 0 });
}

TEST_CASE_IN("sources", "SysV shm, private and keyed, is what the report says, at every prefault "
                        "and lock")
{
    run_matrix("sysv_shm private",
               (struct rtm_arena_config){ .source = RTM_ARENA_SYSV_SHM, .size_bytes = SOURCE_SIZE },
               &(struct expect){ 0 });
    run_matrix("sysv_shm keyed",
               (struct rtm_arena_config){ .source = RTM_ARENA_SYSV_SHM,
                                          .sysv_key = sysv_key(1),
                                          .size_bytes = SOURCE_SIZE },
               &(struct expect){ 0 });
}

TEST_CASE_IN("sources", "a file on disk is what the report says, at every prefault and lock")
{
    char path[PATH_MAX];
    scratch_path(path, sizeof path, "file");
    run_matrix("file on disk",
               (struct rtm_arena_config){
                   .source = RTM_ARENA_FILE, .name = path, .size_bytes = SOURCE_SIZE },
               &(struct expect){ .disk_file = true });
}

TEST_CASE_IN("sources", "/dev/zero, shared and private at 1 MiB, is what the report says")
{
    run_matrix("device /dev/zero",
               (struct rtm_arena_config){
                   .source = RTM_ARENA_DEVICE, .name = "/dev/zero", .size_bytes = SOURCE_SIZE },
               &(struct expect){ 0 });
    run_matrix("device /dev/zero private at 1 MiB",
               (struct rtm_arena_config){ .source = RTM_ARENA_DEVICE,
                                          .name = "/dev/zero",
                                          .offset = MIB,
                                          .flags = RTM_ARENA_PRIVATE,
                                          .size_bytes = SOURCE_SIZE },
               &(struct expect){ 0 });
}

/* Lock tried rather than required: the same when it is granted. */
TEST_CASE_IN("sources", "a lock tried is a lock required when it is granted")
{
    run_case("anon, prefault touch, lock try",
             &(struct rtm_arena_config){ .size_bytes = SOURCE_SIZE,
                                         .prefault = RTM_ARENA_PREFAULT_TOUCH,
                                         .lock = RTM_ARENA_LOCK_TRY },
             &(struct expect){ 0 });
}

/* With mlockall(MCL_FUTURE) in force, every new mapping is locked and
 * faulted in, asked or not: the report says so. (In a child: the lock is
 * the whole process's.) */
static void mlockall_future(void)
{
    CHECK(mlockall(MCL_CURRENT | MCL_FUTURE) == 0);
    int64_t lck0 = own_vmlck_kb();
    struct rtm_arena m;
    CHECK_EQ(rtm_arena_open(&m, &(struct rtm_arena_config){ .size_bytes = MIB }), 0);
    CHECK_EQ(m.report.lock_state, RTM_ARENA_LOCKED);
    CHECK_EQ(m.report.resident_bytes, MIB);
    CHECK_EQ(m.report.locked_bytes, (own_vmlck_kb() - lck0) * 1024);
    CHECK_EQ(m.report.locked_bytes, MIB); /* the guard pages are not locked */
    struct entry e = own_smaps((uintptr_t)m.base, false);
    CHECK(has_flag(&e, "lo"));
    describe_says(&m, "lock none: locked,");
    rtm_arena_close(&m);
}

TEST_CASE_IN("sources", "under mlockall(MCL_FUTURE) an arena is locked and present, and says so")
{
    if (!g.mlock_works) {
        printf("SKIP: mlockall(MCL_FUTURE): mlock is a no-op in this process\n");
        return;
    }
    in_child(mlockall_future);
}

/* mlockall(MCL_FUTURE | MCL_ONFAULT): the mapping is marked locked (VmFlags
 * lo lf), but no page is present, and each faults at its first touch. */
static void mlockall_on_fault(void)
{
    CHECK(mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) == 0);
    struct rtm_arena m;
    CHECK_EQ(rtm_arena_open(&m, &(struct rtm_arena_config){ .size_bytes = MIB }), 0);
    CHECK_EQ(m.report.lock_state, RTM_ARENA_LOCKED_ON_FAULT);
    CHECK_EQ(m.report.resident_bytes, 0);
    CHECK(contains(m.message, "locked on fault"));
    describe_says(&m, "lock none: locked on fault");
    struct entry e = own_smaps((uintptr_t)m.base, false);
    CHECK(has_flag(&e, "lo") && has_flag(&e, "lf"));
    CHECK_EQ(write_every_page(m.base, m.size_bytes), MIB / g.page);
    rtm_arena_close(&m);
    /* Prefaulted: every page present, and locked. */
    CHECK_EQ(rtm_arena_open(&m, &(struct rtm_arena_config){ .size_bytes = MIB,
                                                            .prefault = RTM_ARENA_PREFAULT_TOUCH }),
             0);
    CHECK_EQ(m.report.lock_state, RTM_ARENA_LOCKED);
    CHECK_EQ(m.report.resident_bytes, MIB);
    CHECK_EQ(m.message[0], '\0');
    rtm_arena_close(&m);
    /* Locked here: mlock locks every page now (and clears lf). */
    CHECK_EQ(rtm_arena_open(
                 &m, &(struct rtm_arena_config){ .size_bytes = MIB, .lock = RTM_ARENA_LOCK_MUST }),
             0);
    CHECK_EQ(m.report.lock_state, RTM_ARENA_LOCKED);
    CHECK_EQ(m.report.resident_bytes, MIB);
    e = own_smaps((uintptr_t)m.base, false);
    CHECK(has_flag(&e, "lo") && !has_flag(&e, "lf"));
    CHECK_EQ(write_every_page(m.base, m.size_bytes), 0);
    rtm_arena_close(&m);
}

TEST_CASE_IN("sources", "under mlockall(MCL_ONFAULT) an arena is locked on fault, present once "
                        "prefaulted or locked")
{
    if (!g.mlock_works) {
        printf("SKIP: mlockall(MCL_FUTURE | MCL_ONFAULT): mlock is a no-op in this process\n");
        return;
    }
    in_child(mlockall_on_fault);
}

TEST_CASE_IN("sources", "a write just past either end hits a guard page")
{
    struct rtm_arena a;
    REQUIRE(rtm_arena_open(&a, &(struct rtm_arena_config){ .size_bytes = 64 * KIB }) == 0, );
    for (int side = 0; side < 2; side++) {
        pid_t pid = fork();
        if (pid == 0) {
            signal(SIGSEGV, SIG_DFL); /* the fault itself, not a sanitizer's report of it */
            volatile unsigned char *p = a.base;
            if (side == 0)
                p[-1] = 1;
            else
                p[a.size_bytes] = 1;
            test_exit(0);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
    }
    rtm_arena_close(&a);
}

/* ---- device ---- */

/* /dev/zero shared at an offset: the kernel backs it with a shm object of
 * the mapping's own length, so the pages past (length - offset) have
 * nothing behind them. A prefault finds that out instead of a SIGBUS in
 * the loop; so does a lock. */
static struct rtm_arena_config zero_past_end(int prefault, int lock)
{
    return (struct rtm_arena_config){ .source = RTM_ARENA_DEVICE,
                                      .name = "/dev/zero",
                                      .offset = MIB,
                                      .size_bytes = MIB,
                                      .prefault = prefault,
                                      .lock = lock };
}

TEST_CASE_IN("device", "/dev/zero shared past what backs it is refused by the prefault, not a "
                       "SIGBUS")
{
    struct rtm_arena_config past = zero_past_end(RTM_ARENA_PREFAULT_TOUCH, RTM_ARENA_LOCK_NONE);
    expect_failure("/dev/zero shared at 1 MiB, prefault", &past, EFAULT, "/dev/zero",
                   "past the end");
    past.prefault = RTM_ARENA_PREFAULT_POPULATE;
    expect_failure("/dev/zero shared at 1 MiB, populate", &past, EFAULT, "/dev/zero",
                   "past the end");
}

/* Tried, not required: memory that is not there is no refused lock. */
TEST_CASE_IN("device", "/dev/zero shared past what backs it is refused by a lock, required or "
                       "tried")
{
    if (!g.mlock_works) {
        printf("SKIP: /dev/zero shared at 1 MiB, lock: mlock is a no-op in this process\n");
        return;
    }
    struct rtm_arena_config past = zero_past_end(RTM_ARENA_PREFAULT_NONE, RTM_ARENA_LOCK_MUST);
    expect_failure("/dev/zero shared at 1 MiB, lock", &past, ENOMEM, "/dev/zero",
                   "could not fault in every page");
    past.lock = RTM_ARENA_LOCK_TRY;
    expect_failure("/dev/zero shared at 1 MiB, lock try", &past, ENOMEM, "/dev/zero",
                   "could not fault in every page");
}

/* The lock step alone, on a mapping of the test's own that outlives it:
 * /dev/zero shared at 1 MiB, whose pages cannot be faulted in. mlock marks
 * the mapping locked before it faults pages in; a failed mlock must not
 * leave it so (refused means unlocked). */
TEST_CASE_IN("device", "a failed mlock leaves the mapping unlocked")
{
    if (!g.mlock_works)
        return; /* said above */
    int fd = open("/dev/zero", O_RDWR | O_CLOEXEC);
    void *m = mmap(NULL, MIB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)MIB);
    REQUIRE(fd >= 0 && m != MAP_FAILED, );
    struct rtm_arena_config cfg = zero_past_end(RTM_ARENA_PREFAULT_NONE, RTM_ARENA_LOCK_MUST);
    struct rtm__arena_plan p = { .cfg = &cfg,
                                 .base_page = g.page,
                                 .page = g.page,
                                 .size = MIB,
                                 .shared = true,
                                 .writable = true };
    snprintf(p.what, sizeof p.what, "device /dev/zero");
    struct rtm_arena a;
    memset(&a, 0, sizeof a);
    a.base = m;
    int64_t lck0 = own_vmlck_kb();
    CHECK_EQ(rtm__arena_lock(&a, &p), -ENOMEM);
    struct entry e = own_smaps((uintptr_t)m, false);
    CHECK(e.found && !has_flag(&e, "lo"));
    CHECK_EQ(own_vmlck_kb(), lck0);
    munmap(m, MIB);
    close(fd);
}

TEST_CASE_IN("device", "an offset off the page, no size, and sizes or offsets that overflow are "
                       "refused")
{
    struct rtm_arena_config past = zero_past_end(RTM_ARENA_PREFAULT_NONE, RTM_ARENA_LOCK_NONE);
    past.offset = MIB + 100;
    expect_failure("/dev/zero, offset not a page multiple", &past, EINVAL, "offset",
                   "not a multiple of the page size");
    past.offset = 0;
    past.size_bytes = 0;
    expect_failure("/dev/zero without a size", &past, EINVAL, "/dev/zero", "size_bytes");
    past.size_bytes = SIZE_MAX - 10;
    expect_failure("a size that overflows", &past, EOVERFLOW, "overflows", NULL);
    past.size_bytes = MIB;
    past.offset = UINT64_MAX - 4095;
    expect_failure("an offset that overflows", &past, EOVERFLOW, "overflows", NULL);
}

TEST_CASE_IN("device", "a device that does not exist, or a directory, is refused")
{
    expect_failure("a device that does not exist",
                   &(struct rtm_arena_config){ .source = RTM_ARENA_DEVICE,
                                               .name = "/dev/rtmem-test-no-such-device",
                                               .size_bytes = MIB },
                   ENOENT, "no device /dev/rtmem-test-no-such-device", "driver");
    char dir[PATH_MAX];
    scratch_path(dir, sizeof dir, "");
    expect_failure(
        "a directory as a device",
        &(struct rtm_arena_config){ .source = RTM_ARENA_DEVICE, .name = dir, .size_bytes = MIB },
        EISDIR, "is a directory", NULL);
}

/* ---- pfnmap ---- */

/* A node whose mapping is VM_IO/VM_PFNMAP: mlock succeeds there and locks
 * nothing. /sys/kernel/btf/vmlinux is one anybody may map, read-only and
 * private, on kernels that let it be mapped (the section skips where it
 * cannot: pfnmap_setup); /dev/mem and UIO nodes are others, which this
 * test does not touch. */
static const char pfn_node[] = "/sys/kernel/btf/vmlinux";

static struct rtm_arena_config pfn_config(void)
{
    return (struct rtm_arena_config){ .source = RTM_ARENA_DEVICE,
                                      .name = pfn_node,
                                      .flags = RTM_ARENA_READ_ONLY | RTM_ARENA_PRIVATE,
                                      .size_bytes = 4 * KIB,
                                      .prefault = RTM_ARENA_PREFAULT_TOUCH,
                                      .lock = RTM_ARENA_LOCK_MUST };
}

/* Whether the node opens as an arena mapped VM_IO/VM_PFNMAP: 0, or SKIP
 * after saying why. */
static int pfnmap_setup(void)
{
    struct rtm_arena_config cfg = pfn_config();
    struct rtm_arena a;
    int rc = rtm_arena_open(&a, &cfg);
    struct entry e = rc == 0 ? own_smaps((uintptr_t)a.base, false) : (struct entry){ 0 };
    bool pfn = rc == 0 && (has_flag(&e, "pf") || has_flag(&e, "io"));
    if (!pfn)
        printf("SKIP: no VM_IO/VM_PFNMAP mapping to be had here: no /dev/mem or UIO device is "
               "used, and %s %s\n",
               pfn_node, rc ? a.message : "is not mapped as VM_PFNMAP by this kernel");
    if (rc == 0)
        rtm_arena_close(&a);
    return pfn ? 0 : SKIP;
}

TEST_CASE_IN("pfnmap", "mlock on a VM_PFNMAP node succeeds, locks nothing, and it is said")
{
    struct rtm_arena_config cfg = pfn_config();
    struct rtm_arena a;
    int64_t lck0 = own_vmlck_kb();
    REQUIRE(rtm_arena_open(&a, &cfg) == 0, );
    struct entry e = own_smaps((uintptr_t)a.base, false);
    printf("  %s: %s\n", pfn_node, a.message);
    CHECK_EQ(a.report.lock_state, RTM_ARENA_LOCK_IGNORED);
    CHECK_EQ(a.report.lock_errno, 0);
    CHECK_EQ(a.report.locked_bytes, 0);
    CHECK_EQ(own_vmlck_kb(), lck0);
    CHECK(!has_flag(&e, "lo"));
    CHECK_EQ(a.report.resident_bytes, e.rss);
    CHECK(contains(a.message, "mlock succeeded but locked nothing"));
    CHECK(contains(a.message, "VM_IO/VM_PFNMAP"));
    CHECK(contains(a.message, "prefault skipped"));
    /* Read-only: no heap. */
    errno = 0;
    CHECK(rtm_arena_heap(&a, "tlsf", NULL) == NULL && errno == EACCES);
    char text[1024];
    int n = rtm_arena_describe(&a, text, sizeof text);
    CHECK(n > 0 && (size_t)n < sizeof text && contains(text, "IGNORED"));
    CHECK_EQ(rtm_arena_close(&a), 0);
}

/* A file-like node has a size: an offset past it is refused. */
TEST_CASE_IN("pfnmap", "an offset past the node's end is refused")
{
    struct rtm_arena_config cfg = pfn_config();
    cfg.offset = (uint64_t)1 << 40;
    expect_failure("offset past the node's end", &cfg, ENXIO, "past the end", pfn_node);
}

/* ---- thp ---- */

static void thp_case(const char *label, struct rtm_arena_config cfg)
{
    const char *was = test_context;
    test_context = label;
    int64_t lck0 = own_vmlck_kb();
    struct rtm_arena a;
    REQUIRE(rtm_arena_open(&a, &cfg) == 0, );
    struct expect x = { 0 };
    check_report(&a, &cfg, &x, lck0);
    struct entry e = own_smaps((uintptr_t)a.base, false);
    size_t huge = a.report.anon_huge_bytes + a.report.shmem_pmd_bytes + a.report.file_pmd_bytes;
    if (cfg.thp == RTM_ARENA_THP_ON) {
        CHECK(has_flag(&e, "hg"));
        /* None obtained is said, and only then. */
        if (huge == 0)
            CHECK(contains(a.message, "THP asked, none obtained"));
        else
            CHECK(strstr(a.message, "THP") == NULL);
    } else {
        CHECK(has_flag(&e, "nh"));
        CHECK_EQ(huge, 0);
    }
    printf("  %s: %zu MiB of %zu MiB in transparent huge pages%s%s\n", label, huge / MIB,
           a.size_bytes / MIB, a.message[0] ? "; " : "", a.message);
    heaps_on(&a);
    CHECK_EQ(rtm_arena_close(&a), 0);
    test_context = was;
}

#define THP_SIZE (8 * MIB)

TEST_CASE_IN("thp", "THP on anonymous memory is had, or its absence said, at every prefault")
{
    int on = RTM_ARENA_THP_ON, touch = RTM_ARENA_PREFAULT_TOUCH;
    thp_case("anon, THP on, touch",
             (struct rtm_arena_config){ .size_bytes = THP_SIZE, .thp = on, .prefault = touch });
    thp_case("anon, THP on, populate",
             (struct rtm_arena_config){
                 .size_bytes = THP_SIZE, .thp = on, .prefault = RTM_ARENA_PREFAULT_POPULATE });
    thp_case("anon, THP on, lock", (struct rtm_arena_config){ .size_bytes = THP_SIZE,
                                                              .thp = on,
                                                              .prefault = touch,
                                                              .lock = RTM_ARENA_LOCK_MUST });
}

TEST_CASE_IN("thp", "THP off gives no huge page")
{
    thp_case("anon, THP off, touch",
             (struct rtm_arena_config){ .size_bytes = THP_SIZE,
                                        .thp = RTM_ARENA_THP_OFF,
                                        .prefault = RTM_ARENA_PREFAULT_TOUCH });
}

TEST_CASE_IN("thp", "THP on a memfd, POSIX shm and SysV shm is had, or its absence said")
{
    char name[64];
    shm_name(name, sizeof name, 2);
    int on = RTM_ARENA_THP_ON, touch = RTM_ARENA_PREFAULT_TOUCH;
    thp_case("memfd, THP on, touch",
             (struct rtm_arena_config){
                 .source = RTM_ARENA_MEMFD, .size_bytes = THP_SIZE, .thp = on, .prefault = touch });
    thp_case("posix_shm, THP on, touch", (struct rtm_arena_config){ .source = RTM_ARENA_POSIX_SHM,
                                                                    .name = name,
                                                                    .size_bytes = THP_SIZE,
                                                                    .thp = on,
                                                                    .prefault = touch });
    thp_case("sysv_shm, THP on, touch", (struct rtm_arena_config){ .source = RTM_ARENA_SYSV_SHM,
                                                                   .size_bytes = THP_SIZE,
                                                                   .thp = on,
                                                                   .prefault = touch });
}

/* THP advice is for base pages only. */
TEST_CASE_IN("thp", "THP advice on huge pages is refused")
{
    expect_failure("THP advice on huge pages",
                   &(struct rtm_arena_config){ .size_bytes = THP_SIZE,
                                               .page_bytes = RTM_ARENA_PAGE_2M,
                                               .thp = RTM_ARENA_THP_ON },
                   EINVAL, "THP advice is for base pages", NULL);
}

/* ---- ownership: what an arena creates, it removes (in its own process
 * only); what it is given, it leaves as it was ---- */

/* Closes the arena in a child process (which inherited it through fork):
 * true when the close succeeded there and still() holds afterwards. */
static bool child_close_leaves(struct rtm_arena *a, bool (*still)(const char *), const char *what)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        test_exit(rtm_arena_close(a) == 0 && still(what) ? 0 : 1);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static bool shm_exists(const char *name)
{
    int fd = shm_open(name, O_RDONLY, 0);
    if (fd >= 0)
        close(fd);
    return fd >= 0;
}

static bool file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static bool sysv_exists(const char *key_text)
{
    return shmget((int)strtol(key_text, NULL, 0), 0, 0) >= 0;
}

/* An object of the user's own at path (a POSIX shm name with shm), holding
 * "user"; returns its descriptor. */
static int user_object(const char *path, bool shm)
{
    int fd = shm ? shm_open(path, O_RDWR | O_CREAT | O_EXCL, 0600)
                 : open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    CHECK(fd >= 0 && write(fd, "user", 4) == 4);
    return fd;
}

/* POSIX shm: created, shared with a second arena, removed at close; the
 * user of an existing object, and a child that inherited the arena, remove
 * nothing. */
TEST_CASE_IN("ownership", "a POSIX shm object is removed at close, by no second arena nor child")
{
    char name[64];
    struct rtm_arena a, b;
    shm_name(name, sizeof name, 3);
    REQUIRE(rtm_arena_open(&a, &(struct rtm_arena_config){ .source = RTM_ARENA_POSIX_SHM,
                                                           .name = name,
                                                           .size_bytes = 3 * MIB }) == 0, );
    memset(a.base, 0x5a, a.size_bytes);
    CHECK_EQ(rtm_arena_open(&b, &(struct rtm_arena_config){ .source = RTM_ARENA_POSIX_SHM,
                                                            .name = name,
                                                            .flags = RTM_ARENA_EXISTING |
                                                                     RTM_ARENA_READ_ONLY }),
             0);
    CHECK_EQ(b.size_bytes, a.size_bytes); /* size 0: the whole object */
    CHECK(b.base && memcmp(a.base, b.base, b.size_bytes) == 0);
    errno = 0;
    CHECK(rtm_arena_heap(&b, "tlsf", NULL) == NULL && errno == EACCES);
    CHECK_EQ(rtm_arena_close(&b), 0);
    CHECK(shm_exists(name)); /* the user of an existing object removes nothing */
    CHECK(child_close_leaves(&a, shm_exists, name));
    CHECK(shm_exists(name));
    CHECK_EQ(rtm_arena_close(&a), 0);
    CHECK(shm_open(name, O_RDONLY, 0) < 0 && errno == ENOENT);
}

/* NAME_MAX bytes after the slash, and a file's last component of NAME_MAX
 * bytes; both removed at close. */
TEST_CASE_IN("ownership", "the longest names are taken, and removed at close")
{
    struct rtm_arena a;
    struct stat st;
    char longest[NAME_MAX + 2], path[PATH_MAX];
    shm_name(longest, sizeof longest, 5);
    size_t used = strlen(longest);
    memset(longest + used, 'n', sizeof longest - 1 - used);
    longest[sizeof longest - 1] = '\0';
    REQUIRE(rtm_arena_open(&a, &(struct rtm_arena_config){ .source = RTM_ARENA_POSIX_SHM,
                                                           .name = longest,
                                                           .size_bytes = 64 * KIB }) == 0, );
    CHECK_EQ(rtm_arena_close(&a), 0);
    CHECK(shm_open(longest, O_RDONLY, 0) < 0 && errno == ENOENT);
    scratch_path(path, sizeof path, "");
    used = strlen(path);
    memset(path + used, 'f', NAME_MAX);
    path[used + NAME_MAX] = '\0';
    REQUIRE(rtm_arena_open(&a, &(struct rtm_arena_config){ .source = RTM_ARENA_FILE,
                                                           .name = path,
                                                           .size_bytes = 64 * KIB }) == 0, );
    CHECK_EQ(rtm_arena_close(&a), 0);
    CHECK(stat(path, &st) != 0 && errno == ENOENT);
}

/* SysV, keyed: removed at close; private: gone from the namespace at once
 * (marked for removal), so it cannot outlive the process. */
TEST_CASE_IN("ownership", "a keyed SysV segment is removed at close, a private one at once")
{
    struct rtm_arena a, b;
    int key = sysv_key(3);
    REQUIRE(rtm_arena_open(&a, &(struct rtm_arena_config){ .source = RTM_ARENA_SYSV_SHM,
                                                           .sysv_key = key,
                                                           .size_bytes = MIB }) == 0, );
    CHECK(shmget(key, 0, 0) == a.shm_id);
    CHECK_EQ(rtm_arena_open(&b, &(struct rtm_arena_config){ .source = RTM_ARENA_SYSV_SHM,
                                                            .sysv_key = key,
                                                            .flags = RTM_ARENA_EXISTING }),
             0);
    CHECK_EQ(b.size_bytes, MIB);
    CHECK_EQ(rtm_arena_close(&b), 0);
    CHECK(shmget(key, 0, 0) == a.shm_id);
    CHECK_EQ(rtm_arena_close(&a), 0);
    CHECK(shmget(key, 0, 0) < 0 && errno == ENOENT);
    REQUIRE(rtm_arena_open(&a, &(struct rtm_arena_config){ .source = RTM_ARENA_SYSV_SHM,
                                                           .size_bytes = MIB }) == 0, );
    struct shmid_ds ds;
    CHECK(shmctl(a.shm_id, IPC_STAT, &ds) == 0 && (ds.shm_perm.mode & SHM_DEST));
    int id = a.shm_id;
    CHECK_EQ(rtm_arena_close(&a), 0);
    CHECK(shmctl(id, IPC_STAT, &ds) != 0);
}

/* The mode is applied as given: the umask (027 here) takes nothing from it. */
TEST_CASE_IN("ownership", "a file an arena created is made as asked, and removed at close")
{
    struct rtm_arena a;
    struct stat st;
    char path[PATH_MAX];
    scratch_path(path, sizeof path, "owned");
    mode_t old = umask(027);
    int rc = rtm_arena_open(
        &a, &(struct rtm_arena_config){
                .source = RTM_ARENA_FILE, .name = path, .mode = 0664, .size_bytes = MIB });
    umask(old);
    REQUIRE(rc == 0, );
    CHECK(stat(path, &st) == 0 && st.st_size == (off_t)MIB && (st.st_mode & 0777) == 0664);
    memset(a.base, 0x33, MIB);
    CHECK_EQ(rtm_arena_close(&a), 0);
    CHECK(stat(path, &st) != 0 && errno == ENOENT);
}

/* Renamed away and replaced by another file: neither is removed. */
TEST_CASE_IN("ownership", "a file renamed away and one put in its place are both left")
{
    struct rtm_arena a;
    struct stat st;
    char path[PATH_MAX], moved[PATH_MAX];
    scratch_path(path, sizeof path, "owned");
    scratch_path(moved, sizeof moved, "owned-moved");
    REQUIRE(rtm_arena_open(&a, &(struct rtm_arena_config){ .source = RTM_ARENA_FILE,
                                                           .name = path,
                                                           .size_bytes = MIB }) == 0, );
    CHECK(rename(path, moved) == 0);
    int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
    CHECK(fd >= 0 && write(fd, "user", 4) == 4);
    close(fd);
    CHECK_EQ(rtm_arena_close(&a), 0);
    CHECK(stat(path, &st) == 0 && st.st_size == 4);
    CHECK(stat(moved, &st) == 0);
    unlink(path);
    unlink(moved);
}

TEST_CASE_IN("ownership", "a memfd's descriptor is the arena's until close")
{
    struct rtm_arena a;
    struct stat st;
    REQUIRE(rtm_arena_open(&a, &(struct rtm_arena_config){ .source = RTM_ARENA_MEMFD,
                                                           .name = "arena-test",
                                                           .size_bytes = MIB }) == 0, );
    CHECK(fstat(a.fd, &st) == 0 && st.st_size == (off_t)MIB);
    int fd = a.fd;
    CHECK_EQ(rtm_arena_close(&a), 0);
    CHECK(fcntl(fd, F_GETFD) < 0 && errno == EBADF);
}

TEST_CASE_IN("ownership", "closing what is not open does nothing, and NULL is refused")
{
    struct rtm_arena zero;
    memset(&zero, 0, sizeof zero);
    CHECK_EQ(rtm_arena_close(&zero), 0);
    CHECK(fcntl(0, F_GETFD) >= 0 || errno != EBADF); /* fd 0 of a zeroed arena: untouched */
    CHECK_EQ(rtm_arena_close(&zero), 0);
    CHECK_EQ(rtm_arena_close(NULL), -EINVAL);
    errno = 0;
    CHECK(rtm_arena_heap(&zero, "tlsf", NULL) == NULL && errno == EINVAL);
    CHECK(rtm_arena_heap(NULL, "tlsf", NULL) == NULL);
}

TEST_CASE_IN("ownership", "describe keeps snprintf's contract, and a heap config passes through")
{
    struct rtm_arena a;
    REQUIRE(rtm_arena_open(&a, &(struct rtm_arena_config){ .size_bytes = MIB }) == 0, );
    char text[512], small[16];
    int n = rtm_arena_describe(&a, text, sizeof text);
    CHECK(n > 0 && (size_t)n == strlen(text) && contains(text, "anon: 1 MiB of 4 KiB pages"));
    CHECK_EQ(rtm_arena_describe(&a, NULL, 0), n);
    CHECK_EQ(rtm_arena_describe(&a, small, sizeof small), n);
    CHECK(strlen(small) == sizeof small - 1);
    CHECK_EQ(rtm_arena_describe(&a, NULL, 5), -EINVAL);
    CHECK_EQ(rtm_arena_describe(NULL, text, sizeof text), -EINVAL);
    struct rtm_heap_config hc = { .hardening = RTM_HEAP_HARDEN_NONE };
    struct rtm_heap *h = rtm_arena_heap(&a, "tlsf", &hc);
    CHECK(h && rtm_heap_hardening(h) == RTM_HEAP_HARDEN_NONE);
    rtm_heap_destroy(h);
    errno = 0;
    CHECK(rtm_arena_heap(&a, "no-such-kind", NULL) == NULL && errno == ENOENT);
    CHECK_EQ(rtm_arena_close(&a), 0);
    n = rtm_arena_describe(&a, text, sizeof text);
    CHECK(contains(text, "not open"));
}

/* The POSIX shm arena of the identity cases. */
static struct rtm_arena_config identity_shm(char *name, size_t size)
{
    shm_name(name, size, 6);
    return (struct rtm_arena_config){ .source = RTM_ARENA_POSIX_SHM,
                                      .name = name,
                                      .size_bytes = 64 * KIB };
}

/* A copy of an open arena is refused; the arena itself is intact. Opening
 * it again without closing it: refused, left open. */
TEST_CASE_IN("ownership", "a copy of an open arena is refused, and so is opening it again")
{
    char name[64];
    struct rtm_arena a, copy;
    struct rtm_arena_config shm = identity_shm(name, sizeof name);
    REQUIRE(rtm_arena_open(&a, &shm) == 0, );
    memcpy(&copy, &a, sizeof copy);
    CHECK_EQ(rtm_arena_close(&copy), -EINVAL);
    errno = 0;
    CHECK(rtm_arena_heap(&copy, "tlsf", NULL) == NULL && errno == EINVAL);
    char text[64];
    CHECK_EQ(rtm_arena_describe(&copy, text, sizeof text), -EINVAL);
    CHECK(shm_exists(name) && fcntl(a.fd, F_GETFD) >= 0);
    memset(a.base, 1, a.size_bytes);
    void *base = a.base;
    CHECK_EQ(rtm_arena_open(&a, &(struct rtm_arena_config){ .size_bytes = MIB }), -EBUSY);
    CHECK(a.base == base && shm_exists(name));
    CHECK_EQ(rtm_arena_close(&a), 0);
    CHECK(!shm_exists(name));
}

/* Removed and created again by someone else: the new object stays. */
TEST_CASE_IN("ownership", "a POSIX shm object someone else made again under the name stays")
{
    char name[64];
    struct rtm_arena a;
    struct rtm_arena_config shm = identity_shm(name, sizeof name);
    REQUIRE(rtm_arena_open(&a, &shm) == 0, );
    CHECK(shm_unlink(name) == 0);
    int ufd = user_object(name, true);
    CHECK_EQ(rtm_arena_close(&a), 0);
    CHECK(shm_exists(name) && fcntl(ufd, F_GETFD) >= 0);
    close(ufd);
    shm_unlink(name);
}

/* The arena's descriptor made to refer to the user's new object (dup2 over
 * it): neither the object nor the descriptor is the arena's to remove or
 * close. */
TEST_CASE_IN("ownership", "a POSIX shm descriptor replaced is not closed, nor its object removed")
{
    char name[64];
    struct rtm_arena a;
    struct rtm_arena_config shm = identity_shm(name, sizeof name);
    REQUIRE(rtm_arena_open(&a, &shm) == 0, );
    int afd = a.fd;
    CHECK(shm_unlink(name) == 0);
    int ufd = user_object(name, true);
    CHECK(dup2(ufd, afd) == afd);
    CHECK_EQ(rtm_arena_close(&a), -EBADF);
    CHECK(contains(a.message, "no longer refers to"));
    CHECK(a.base == NULL);
    CHECK(shm_exists(name) && fcntl(afd, F_GETFD) >= 0);
    close(afd);
    close(ufd);
    shm_unlink(name);
}

/* The file arena of the identity cases. */
static struct rtm_arena_config identity_file(char *path, size_t size)
{
    scratch_path(path, size, "identity");
    return (
        struct rtm_arena_config){ .source = RTM_ARENA_FILE, .name = path, .size_bytes = 64 * KIB };
}

TEST_CASE_IN("ownership", "a file descriptor replaced is not closed, nor its file removed")
{
    char path[PATH_MAX];
    struct rtm_arena a;
    struct stat st;
    struct rtm_arena_config file = identity_file(path, sizeof path);
    REQUIRE(rtm_arena_open(&a, &file) == 0, );
    int afd = a.fd;
    CHECK(unlink(path) == 0);
    int ufd = user_object(path, false);
    CHECK(dup2(ufd, afd) == afd);
    CHECK_EQ(rtm_arena_close(&a), -EBADF);
    CHECK(stat(path, &st) == 0 && st.st_size == 4 && fcntl(afd, F_GETFD) >= 0);
    close(afd);
    close(ufd);
    unlink(path);
}

/* A child that inherited the arena removes nothing: a file, a keyed SysV
 * segment (the POSIX shm case is above). */
TEST_CASE_IN("ownership", "a child that inherited a file or SysV arena removes nothing")
{
    char path[PATH_MAX], key_text[32];
    struct rtm_arena a;
    struct rtm_arena_config file = identity_file(path, sizeof path);
    REQUIRE(rtm_arena_open(&a, &file) == 0, );
    CHECK(child_close_leaves(&a, file_exists, path));
    CHECK(file_exists(path));
    CHECK_EQ(rtm_arena_close(&a), 0);
    CHECK(!file_exists(path));
    int key = sysv_key(6);
    snprintf(key_text, sizeof key_text, "%d", key);
    REQUIRE(rtm_arena_open(&a, &(struct rtm_arena_config){ .source = RTM_ARENA_SYSV_SHM,
                                                           .sysv_key = key,
                                                           .size_bytes = MIB }) == 0, );
    CHECK(child_close_leaves(&a, sysv_exists, key_text));
    CHECK(sysv_exists(key_text));
    CHECK_EQ(rtm_arena_close(&a), 0);
    CHECK(!sysv_exists(key_text));
}

/* ---- errors ---- */

TEST_CASE_IN("errors", "a configuration missing, unknown or out of range is refused")
{
    expect_failure("no config", NULL, EINVAL, "no config", NULL);
    CHECK_EQ(rtm_arena_open(NULL, &(struct rtm_arena_config){ .size_bytes = MIB }), -EINVAL);
    expect_failure("unknown source", &(struct rtm_arena_config){ .source = 99, .size_bytes = MIB },
                   EINVAL, "unknown source", NULL);
    expect_failure("unknown prefault", &(struct rtm_arena_config){ .prefault = 7, .size_bytes = 1 },
                   EINVAL, "unknown prefault", NULL);
    expect_failure("unknown flag", &(struct rtm_arena_config){ .flags = 0x100, .size_bytes = 1 },
                   EINVAL, "unknown flags", NULL);
    expect_failure("size 0", &(struct rtm_arena_config){ 0 }, EINVAL, "size_bytes is 0", NULL);
    expect_failure("size overflow", &(struct rtm_arena_config){ .size_bytes = SIZE_MAX }, EOVERFLOW,
                   "overflows", NULL);
    expect_failure("page size not a power of two",
                   &(struct rtm_arena_config){ .size_bytes = MIB, .page_bytes = 3000 }, EINVAL,
                   "not a page size", NULL);
    expect_failure("a huge page size the CPU lacks",
                   &(struct rtm_arena_config){ .size_bytes = MIB, .page_bytes = 4 * MIB },
                   EOPNOTSUPP, "no 4 MiB huge pages", HUGE_DIR "/hugepages-4096kB");
}

TEST_CASE_IN("errors", "options that do not apply to the source are refused")
{
    char name[64];
    shm_name(name, sizeof name, 4);
    expect_failure("huge pages on POSIX shm",
                   &(struct rtm_arena_config){ .source = RTM_ARENA_POSIX_SHM,
                                               .name = name,
                                               .size_bytes = MIB,
                                               .page_bytes = RTM_ARENA_PAGE_2M },
                   EINVAL, "RTM_ARENA_MEMFD", NULL);
    expect_failure("a private anonymous arena cannot be made PRIVATE again",
                   &(struct rtm_arena_config){ .size_bytes = MIB, .flags = RTM_ARENA_PRIVATE },
                   EINVAL, "do not apply to the anon source", NULL);
    expect_failure("an offset on anonymous memory",
                   &(struct rtm_arena_config){ .size_bytes = MIB, .offset = MIB }, EINVAL, "offset",
                   NULL);
    expect_failure("read-only and new",
                   &(struct rtm_arena_config){ .source = RTM_ARENA_POSIX_SHM,
                                               .name = name,
                                               .flags = RTM_ARENA_READ_ONLY,
                                               .size_bytes = MIB },
                   EINVAL, "RTM_ARENA_EXISTING", NULL);
    expect_failure(
        "SysV key 0 is nobody's",
        &(struct rtm_arena_config){ .source = RTM_ARENA_SYSV_SHM, .flags = RTM_ARENA_EXISTING },
        EINVAL, "IPC_PRIVATE", NULL);
}

TEST_CASE_IN("errors", "a shm name without one slash, or too long, and a setuid mode are refused")
{
    expect_failure("a shm name without its slash",
                   &(struct rtm_arena_config){
                       .source = RTM_ARENA_POSIX_SHM, .name = "noslash", .size_bytes = MIB },
                   EINVAL, "\"/name\"", NULL);
    expect_failure("a shm name with two slashes",
                   &(struct rtm_arena_config){
                       .source = RTM_ARENA_POSIX_SHM, .name = "/a/b", .size_bytes = MIB },
                   EINVAL, "\"/name\"", NULL);
    char too_long[NAME_MAX + 3] = "/";
    memset(too_long + 1, 'n', NAME_MAX + 1);
    expect_failure("a shm name above NAME_MAX",
                   &(struct rtm_arena_config){
                       .source = RTM_ARENA_POSIX_SHM, .name = too_long, .size_bytes = MIB },
                   ENAMETOOLONG, "longer than 255 bytes", NULL);
    /* Permission bits only: 04000 would be SHM_HUGETLB to shmget, and a
     * setuid file is no arena's business. */
    expect_failure("a mode with the setuid bit",
                   &(struct rtm_arena_config){
                       .source = RTM_ARENA_SYSV_SHM, .mode = 04600, .size_bytes = MIB },
                   EINVAL, "mode 04600", NULL);
}

/* A POSIX shm name that exists: refused, and the object is left as it
 * was; RTM_ARENA_EXISTING maps it. */
TEST_CASE_IN("errors", "an existing POSIX shm name is refused unless asked for, and left as it was")
{
    char name[64];
    struct rtm_arena a;
    shm_name(name, sizeof name, 4);
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    CHECK(fd >= 0 && ftruncate(fd, 64 * KIB) == 0 && write(fd, "user data", 9) == 9);
    struct rtm_arena_config shm = { .source = RTM_ARENA_POSIX_SHM,
                                    .name = name,
                                    .size_bytes = MIB };
    expect_failure("an existing POSIX shm name", &shm, EEXIST, name, "RTM_ARENA_EXISTING");
    struct stat st;
    CHECK(fstat(fd, &st) == 0 && st.st_size == (off_t)(64 * KIB));
    shm.flags = RTM_ARENA_EXISTING;
    expect_failure("an existing POSIX shm object, too small", &shm, ENXIO, "past the end",
                   "never extended");
    shm.size_bytes = 0;
    CHECK_EQ(rtm_arena_open(&a, &shm), 0);
    CHECK(a.base && memcmp(a.base, "user data", 9) == 0 && a.size_bytes == 64 * KIB);
    CHECK_EQ(rtm_arena_close(&a), 0);
    CHECK(fstat(fd, &st) == 0 && st.st_size == (off_t)(64 * KIB) && st.st_nlink == 1);
    close(fd);
    CHECK(shm_unlink(name) == 0); /* still there: the arena did not remove it */
    expect_failure("a POSIX shm object that does not exist", &shm, ENOENT, name, "create it first");
}

TEST_CASE_IN("errors", "an existing SysV key is refused unless asked for, and left as it was")
{
    int key = sysv_key(4);
    int id = shmget(key, 64 * KIB, IPC_CREAT | IPC_EXCL | 0600);
    CHECK(id >= 0);
    struct rtm_arena_config sysv = { .source = RTM_ARENA_SYSV_SHM,
                                     .sysv_key = key,
                                     .size_bytes = MIB };
    expect_failure("an existing SysV key", &sysv, EEXIST, "RTM_ARENA_EXISTING", "ipcrm -M");
    sysv.flags = RTM_ARENA_EXISTING;
    expect_failure("an existing SysV segment, too small", &sysv, ENXIO, "past the end", NULL);
    sysv.size_bytes = 0;
    sysv.prefault = RTM_ARENA_PREFAULT_TOUCH;
    sysv.lock = RTM_ARENA_LOCK_MUST;
    run_case("an existing SysV segment", &sysv, &(struct expect){ .no_guards = true });
    sysv.size_bytes = MIB;
    sysv.prefault = RTM_ARENA_PREFAULT_NONE;
    sysv.lock = RTM_ARENA_LOCK_NONE;
    CHECK(shmget(key, 0, 0) == id);
    shmctl(id, IPC_RMID, NULL);
    expect_failure("a SysV key that does not exist", &sysv, ENOENT, "no SysV segment of key", NULL);
}

/* A segment of base pages asked as one of huge pages: smaps tells. */
TEST_CASE_IN("errors", "an existing SysV segment asked with another page size is refused, and "
                       "stays")
{
    if (access(HUGE_DIR "/hugepages-2048kB", F_OK) != 0)
        return;
    int key = sysv_key(4);
    int id = shmget(key, 4 * MIB, IPC_CREAT | IPC_EXCL | 0600);
    CHECK(id >= 0);
    struct rtm_arena_config sysv = { .source = RTM_ARENA_SYSV_SHM,
                                     .sysv_key = key,
                                     .flags = RTM_ARENA_EXISTING,
                                     .page_bytes = RTM_ARENA_PAGE_2M };
    expect_failure("an existing SysV segment of another page size", &sysv, EINVAL,
                   "pages of 4 KiB (smaps KernelPageSize), not the 2 MiB asked", NULL);
    CHECK(shmget(key, 0, 0) == id); /* an existing segment stays */
    shmctl(id, IPC_RMID, NULL);
}

/* A file of the user's: 1 MiB, "keep" at its start; its config in *file
 * (RTM_ARENA_EXISTING, 1 MiB), its path in path. */
static void user_file(char *path, size_t size, struct rtm_arena_config *file)
{
    scratch_path(path, size, "user-file");
    int fd = open(path, O_CREAT | O_EXCL | O_RDWR, 0600);
    CHECK(fd >= 0 && ftruncate(fd, (off_t)MIB) == 0 && pwrite(fd, "keep", 4, 0) == 4);
    close(fd);
    *file = (struct rtm_arena_config){
        .source = RTM_ARENA_FILE, .name = path, .flags = RTM_ARENA_EXISTING, .size_bytes = MIB
    };
}

/* The user's file is whole: 1 MiB, "keep" at its start. */
static void user_file_kept(const char *path)
{
    struct stat st;
    char head[4] = { 0 };
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0 && pread(fd, head, 4, 0) == 4 && memcmp(head, "keep", 4) == 0);
    CHECK(fstat(fd, &st) == 0 && st.st_size == (off_t)MIB);
    close(fd);
}

/* One that exists is refused unless asked for, never truncated or removed;
 * an offset or a size past its end is refused. */
TEST_CASE_IN("errors", "an existing file is refused unless asked for, and mapped within its length")
{
    char path[PATH_MAX];
    struct rtm_arena a;
    struct rtm_arena_config file;
    user_file(path, sizeof path, &file);
    file.flags = 0;
    expect_failure("an existing file", &file, EEXIST, path, "RTM_ARENA_EXISTING");
    file.flags = RTM_ARENA_EXISTING;
    file.offset = 2 * MIB;
    expect_failure("an offset past a file's end", &file, ENXIO, "past the end",
                   "which is 1 MiB long");
    file.offset = 512 * KIB;
    expect_failure("a size past a file's end", &file, ENXIO, "past the end", "never extended");
    file.offset = 4 * KIB;
    file.size_bytes = 0; /* the rest of it */
    CHECK_EQ(rtm_arena_open(&a, &file), 0);
    CHECK_EQ(a.size_bytes, MIB - 4 * KIB);
    CHECK_EQ(rtm_arena_close(&a), 0);
    file.offset = 100;
    expect_failure("a file offset that is not a page multiple", &file, EINVAL,
                   "not a multiple of the page size", NULL);
    user_file_kept(path);
    unlink(path);
}

TEST_CASE_IN("errors", "a file mapped private is never written, and read-only maps its pages")
{
    char path[PATH_MAX];
    struct rtm_arena a;
    struct rtm_arena_config file;
    user_file(path, sizeof path, &file);
    file.size_bytes = 0; /* the whole file */
    file.flags |= RTM_ARENA_PRIVATE;
    CHECK_EQ(rtm_arena_open(&a, &file), 0);
    CHECK(a.base && memcmp(a.base, "keep", 4) == 0);
    memcpy(a.base, "lost", 4); /* private: never reaches the file */
    CHECK_EQ(rtm_arena_close(&a), 0);
    user_file_kept(path);
    /* Read-only, prefaulted and locked: the file's pages, mapped. */
    file.flags = RTM_ARENA_EXISTING | RTM_ARENA_READ_ONLY;
    file.prefault = RTM_ARENA_PREFAULT_TOUCH;
    file.lock = RTM_ARENA_LOCK_MUST;
    run_case("an existing file, read-only", &file, &(struct expect){ .disk_file = true });
    user_file_kept(path);
    unlink(path);
}

TEST_CASE_IN("errors", "a file missing, in no directory, a directory or a device is refused")
{
    char path[PATH_MAX], dir[PATH_MAX];
    scratch_path(path, sizeof path, "user-file");
    struct rtm_arena_config file = {
        .source = RTM_ARENA_FILE, .name = path, .flags = RTM_ARENA_EXISTING, .offset = 100
    };
    expect_failure("a file that does not exist", &file, ENOENT, path, "create it first");
    file.flags = 0;
    file.offset = 0;
    file.size_bytes = MIB;
    scratch_path(path, sizeof path, "no-such-dir/file");
    expect_failure("a file in a directory that does not exist", &file, ENOENT,
                   "its directory does not exist", NULL);
    scratch_path(dir, sizeof dir, "");
    file.name = dir;
    file.flags = RTM_ARENA_EXISTING;
    expect_failure("a directory as a file", &file, EISDIR, "is a directory", NULL);
    file.name = "/dev/zero";
    expect_failure("a device as a file", &file, EINVAL, "RTM_ARENA_DEVICE", NULL);
}

/* The reader of /proc files (no stdio): short lines, a line longer than
 * its buffer (its start, the rest skipped), a last line without newline. */
TEST_CASE_IN("errors", "the line reader cuts a long line, and takes a last line without newline")
{
    char path[PATH_MAX];
    scratch_path(path, sizeof path, "lines");
    struct rtm__arena_lines l;
    size_t cut = sizeof l.buf - 1, longest = 3 * sizeof l.buf;
    char *text = malloc(longest + 64);
    int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
    size_t n = (size_t)sprintf(text, "first\n");
    memset(text + n, 'x', longest);
    n += longest;
    n += (size_t)sprintf(text + n, "\n\nafter\nlast");
    CHECK(fd >= 0 && write(fd, text, n) == (ssize_t)n);
    close(fd);
    free(text);
    REQUIRE(rtm__arena_lines_open(&l, path), );
    const char *line = rtm__arena_lines_next(&l);
    CHECK(line && !strcmp(line, "first"));
    line = rtm__arena_lines_next(&l);
    CHECK(line && strlen(line) == cut && strspn(line, "x") == cut);
    line = rtm__arena_lines_next(&l);
    CHECK(line && !strcmp(line, ""));
    line = rtm__arena_lines_next(&l);
    CHECK(line && !strcmp(line, "after"));
    line = rtm__arena_lines_next(&l);
    CHECK(line && !strcmp(line, "last"));
    CHECK(rtm__arena_lines_next(&l) == NULL);
    CHECK(rtm__arena_lines_next(&l) == NULL);
    rtm__arena_lines_close(&l);
    CHECK(!rtm__arena_lines_open(&l, "/proc/self/no-such-file"));
    unlink(path);
}

/* ---- memlock ---- */

static bool has_cap_ipc_lock(void)
{
    char *s = slurp("/proc/self/status");
    const char *l = s ? strstr(s, "\nCapEff:") : NULL;
    bool has = l && ((strtoull(l + 8, NULL, 16) >> CAP_IPC_LOCK) & 1);
    free(s);
    return has;
}

/* RLIMIT_MEMLOCK below the lock, in a child without CAP_IPC_LOCK. */
static bool drop_cap_ipc_lock(void)
{
    struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct data[2];
    if (syscall(SYS_capget, &hdr, data) != 0)
        return false;
    /* CAP_IPC_LOCK (14) is in the first word. */
    data[0].effective &= ~(1u << CAP_IPC_LOCK);
    data[0].permitted &= ~(1u << CAP_IPC_LOCK);
    data[0].inheritable &= ~(1u << CAP_IPC_LOCK);
    return syscall(SYS_capset, &hdr, data) == 0 && !has_cap_ipc_lock();
}

/* A child's start: without CAP_IPC_LOCK, RLIMIT_MEMLOCK 8 MiB (exits
 * SKIP when it cannot be had). */
static void memlock_limited(void)
{
    struct rlimit rl = { 8 * MIB, 8 * MIB };
    if (!drop_cap_ipc_lock() || setrlimit(RLIMIT_MEMLOCK, &rl) != 0) {
        printf("could not drop CAP_IPC_LOCK and lower RLIMIT_MEMLOCK\n");
        test_exit(SKIP);
    }
}

/* 64 MiB, prefaulted, to lock under a limit of 8. */
#define BEYOND_TEXT "RLIMIT_MEMLOCK is 8 MiB, 64 MiB asked"
static const struct rtm_arena_config beyond = { .size_bytes = 64 * MIB,
                                                .prefault = RTM_ARENA_PREFAULT_TOUCH,
                                                .lock = RTM_ARENA_LOCK_MUST };

/* Refused before 64 MiB are faulted in; refused after the object was
 * created: it is removed. */
static void memlock_refused(void)
{
    memlock_limited();
    uint64_t f0 = thread_faults();
    expect_failure("lock must, beyond the limit", &beyond, ENOMEM, BEYOND_TEXT, "CAP_IPC_LOCK");
    CHECK(thread_faults() - f0 < 1024);
    char name[64];
    shm_name(name, sizeof name, 8);
    struct rtm_arena_config created = beyond;
    created.source = RTM_ARENA_POSIX_SHM;
    created.name = name;
    expect_failure("lock must, beyond the limit, posix_shm", &created, ENOMEM, BEYOND_TEXT, NULL);
    CHECK(shm_open(name, O_RDONLY, 0) < 0 && errno == ENOENT);
    created.source = RTM_ARENA_SYSV_SHM;
    created.name = NULL;
    created.sysv_key = sysv_key(8);
    expect_failure("lock must, beyond the limit, keyed sysv_shm", &created, ENOMEM, BEYOND_TEXT,
                   NULL);
    CHECK(shmget(created.sysv_key, 0, 0) < 0 && errno == ENOENT);
    test_exit(test_summary("arena.memlock (child)"));
}

/* Tried: the arena is there, prefaulted, unlocked, and says why. */
static void memlock_tried(void)
{
    memlock_limited();
    struct rtm_arena_config cfg = beyond;
    cfg.lock = RTM_ARENA_LOCK_TRY;
    struct rtm_arena a;
    CHECK_EQ(rtm_arena_open(&a, &cfg), 0);
    CHECK_EQ(a.report.lock_state, RTM_ARENA_UNLOCKED);
    CHECK_EQ(a.report.lock_errno, ENOMEM);
    CHECK_EQ(a.report.locked_bytes, 0);
    CHECK_EQ(a.report.resident_bytes, 64 * MIB);
    CHECK(contains(a.message, BEYOND_TEXT));
    printf("  lock try: %s\n", a.message);
    CHECK_EQ(rtm_arena_close(&a), 0);
    test_exit(test_summary("arena.memlock (child)"));
}

/* Within the limit; then one more that the locked one leaves no room
 * for. */
static void memlock_within(void)
{
    memlock_limited();
    struct rtm_arena_config cfg = beyond;
    cfg.size_bytes = 6 * MIB;
    struct rtm_arena a;
    CHECK_EQ(rtm_arena_open(&a, &cfg), 0);
    CHECK_EQ(a.report.lock_state, g.mlock_works ? RTM_ARENA_LOCKED : RTM_ARENA_LOCK_IGNORED);
    cfg.size_bytes = 4 * MIB;
    if (g.mlock_works)
        expect_failure("lock must, beyond what is left", &cfg, ENOMEM,
                       "RLIMIT_MEMLOCK is 8 MiB, 4 MiB asked (6 MiB locked already)", NULL);
    CHECK_EQ(rtm_arena_close(&a), 0);
    test_exit(test_summary("arena.memlock (child)"));
}

static void memlock_zero(void)
{
    memlock_limited();
    struct rlimit rl = { 0, 0 };
    CHECK(setrlimit(RLIMIT_MEMLOCK, &rl) == 0);
    struct rtm_arena_config cfg = beyond;
    cfg.size_bytes = MIB;
    expect_failure("lock must, limit 0", &cfg, EPERM, "RLIMIT_MEMLOCK is 0", "CAP_IPC_LOCK");
    cfg.lock = RTM_ARENA_LOCK_NONE;
    run_case("no lock asked, limit 0", &cfg, &(struct expect){ 0 });
    test_exit(test_summary("arena.memlock (child)"));
}

/* Runs child() in a child process, which ends with test_exit: a case that
 * may skip (when the child exits SKIP, saying why). */
static void memlock_in_child(void (*child)(void), const char *why)
{
    case_tried();
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        child();
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == SKIP) {
        case_skipped(why);
        return;
    }
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

#define MEMLOCK_WHY "the test needs a process without CAP_IPC_LOCK and a lower RLIMIT_MEMLOCK"

TEST_CASE_IN("memlock", "a lock required beyond RLIMIT_MEMLOCK is refused before the prefault, "
                        "what it made removed")
{
    memlock_in_child(memlock_refused, MEMLOCK_WHY);
}

TEST_CASE_IN("memlock", "a lock tried beyond RLIMIT_MEMLOCK leaves the arena unlocked, saying why")
{
    memlock_in_child(memlock_tried, MEMLOCK_WHY);
}

TEST_CASE_IN("memlock", "a lock within RLIMIT_MEMLOCK is taken, one beyond what is left refused")
{
    memlock_in_child(memlock_within, MEMLOCK_WHY);
}

TEST_CASE_IN("memlock", "with RLIMIT_MEMLOCK 0 a lock is refused, and no lock asked works")
{
    memlock_in_child(memlock_zero, MEMLOCK_WHY);
}

/* CAP_IPC_LOCK in a user namespace of its own: CapEff shows it, but it does
 * not exempt the process from RLIMIT_MEMLOCK (the kernel asks for it in the
 * initial namespace). The check before mapping lets the lock through, and
 * mlock refuses it (ENOMEM) after the prefault: still a refusal of the
 * lock, which _TRY records and _MUST fails on, unlike memory that is not
 * there. */
static void memlock_userns_child(void)
{
    struct rlimit rl = { 8 * MIB, 8 * MIB };
    if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0 || unshare(CLONE_NEWUSER) != 0 || !has_cap_ipc_lock()) {
        printf("SKIP: no user namespace with CAP_IPC_LOCK to be had: %s\n", strerror(errno));
        test_exit(SKIP);
    }
    struct rtm_arena_config cfg = { .size_bytes = 16 * MIB, .lock = RTM_ARENA_LOCK_TRY };
    const char *text = "RLIMIT_MEMLOCK is 8 MiB, 16 MiB asked";
    test_context = "lock try, capability of a user namespace";
    int64_t lck0 = own_vmlck_kb();
    struct rtm_arena a;
    CHECK_EQ(rtm_arena_open(&a, &cfg), 0);
    CHECK_EQ(a.report.lock_state, RTM_ARENA_UNLOCKED);
    CHECK_EQ(a.report.lock_errno, ENOMEM);
    CHECK(contains(a.message, text));
    CHECK(contains(a.message, "user namespace"));
    /* Refused means unlocked: no VM_LOCKED left on the mapping. */
    struct entry e = own_smaps((uintptr_t)a.base, false);
    CHECK(e.found && !has_flag(&e, "lo"));
    CHECK_EQ(own_vmlck_kb(), lck0);
    printf("  lock try in a user namespace: %s\n", a.message);
    CHECK_EQ(rtm_arena_close(&a), 0);
    cfg.lock = RTM_ARENA_LOCK_MUST;
    expect_failure("lock must, capability of a user namespace", &cfg, ENOMEM, text,
                   "user namespace");
    test_exit(test_summary("arena.memlock (user namespace)"));
}

TEST_CASE_IN("memlock", "CAP_IPC_LOCK of a user namespace is no exemption: the lock is refused")
{
    if (!g.mlock_works) {
        case_tried();
        case_skipped("lock refused after the check: mlock is a no-op here");
        return;
    }
    memlock_in_child(memlock_userns_child, "lock refused after the check: no user namespace");
}

/* Sets RLIMIT_MEMLOCK (below its hard limit) to what is locked now and
 * room_bytes more. */
static bool memlock_room(size_t room_bytes)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0)
        return false;
    rlim_t want = (rlim_t)own_vmlck_kb() * KIB + room_bytes;
    if (rl.rlim_max != RLIM_INFINITY && want > rl.rlim_max)
        return false;
    rl.rlim_cur = want;
    return setrlimit(RLIMIT_MEMLOCK, &rl) == 0;
}

/* Under mlockall(MCL_FUTURE) every mapping is locked and counted against
 * RLIMIT_MEMLOCK, the address space an open reserves (PROT_NONE, with
 * room to align the arena) as well: an arena must cost its size, and no
 * more, to open. */
static void memlock_future_child(void)
{
    if (!drop_cap_ipc_lock() || mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
        printf("could not drop CAP_IPC_LOCK and lock all\n");
        test_exit(SKIP);
    }
    struct rtm_arena a;
    /* Room for 1 MiB and a quarter: the arena fits; the reservation and the
     * arena together would not. */
    test_context = "mlockall(MCL_FUTURE), 1 MiB";
    if (!memlock_room(MIB + MIB / 4) || !memlock_room(3 * MIB + MIB / 4)) {
        printf("RLIMIT_MEMLOCK's hard limit leaves no room for the test\n");
        test_exit(SKIP);
    }
    memlock_room(MIB + MIB / 4);
    int64_t lck0 = own_vmlck_kb();
    CHECK_EQ(rtm_arena_open(&a, &(struct rtm_arena_config){ .size_bytes = MIB }), 0);
    CHECK_EQ(a.report.lock_state, RTM_ARENA_LOCKED);
    CHECK_EQ(a.report.resident_bytes, MIB);
    CHECK_EQ((own_vmlck_kb() - lck0) * 1024, MIB);
    printf("  %s: %s\n", test_context, a.message);
    rtm_arena_close(&a);
    /* Room for 3 MiB and a quarter: the 2 MiB alignment's slack does not
     * fit beside the arena, which is placed without it, and says so. */
    test_context = "mlockall(MCL_FUTURE), 3 MiB";
    CHECK(memlock_room(3 * MIB + MIB / 4));
    lck0 = own_vmlck_kb();
    CHECK_EQ(rtm_arena_open(&a, &(struct rtm_arena_config){ .size_bytes = 3 * MIB }), 0);
    CHECK_EQ(a.report.lock_state, RTM_ARENA_LOCKED);
    CHECK_EQ((own_vmlck_kb() - lck0) * 1024, 3 * MIB);
    if ((uintptr_t)a.base % (2 * MIB))
        CHECK(contains(a.message, "not on a 2 MiB boundary"));
    printf("  %s: %s\n", test_context, a.message);
    rtm_arena_close(&a);
    /* Beyond the limit: refused, the figures named. */
    test_context = "mlockall(MCL_FUTURE), 8 MiB";
    expect_failure("mlockall(MCL_FUTURE), beyond the limit",
                   &(struct rtm_arena_config){ .size_bytes = 8 * MIB }, EAGAIN, "MCL_FUTURE",
                   "8 MiB");
    test_exit(test_summary("arena.memlock (mlockall)"));
}

TEST_CASE_IN("memlock", "under mlockall(MCL_FUTURE) an arena costs its size against the limit, no "
                        "more")
{
    if (!g.mlock_works) {
        case_tried();
        case_skipped("mlockall(MCL_FUTURE) and a limit: mlock is a no-op here");
        return;
    }
    memlock_in_child(memlock_future_child,
                     "mlockall(MCL_FUTURE) and a limit: CAP_IPC_LOCK cannot be dropped");
}

/* ---- huge_missing: huge pages asked with none free. Only where the pool
 * is empty, or its pages are all taken: a pool is never shrunk to provoke
 * the refusal (its pages are someone's), and that case is skipped, saying
 * so. ---- */

static void huge_missing(size_t page)
{
    case_tried();
    char path[128];
    uint64_t dflt = 0;
    char *mi = slurp("/proc/meminfo");
    const char *l = mi ? strstr(mi, "Hugepagesize:") : NULL;
    if (l)
        dflt = strtoull(l + 13, NULL, 10) * 1024;
    free(mi);
    char why[256];
    pool_file(path, sizeof path, page, "nr_hugepages");
    if (access(path, F_OK) != 0) {
        snprintf(why, sizeof why, "no %s huge pages in this kernel", page_name(page));
        case_skipped(why);
        return;
    }
    uint64_t nr = pool_value(page, "nr_hugepages"),
             over = pool_value(page, "nr_overcommit_hugepages"),
             free_now = pool_value(page, "free_hugepages"),
             resv = pool_value(page, "resv_hugepages");
    uint64_t avail = free_now > resv ? free_now - resv : 0;
    char expect[256];
    if (nr == 0 && over == 0) {
        snprintf(expect, sizeof expect, "no %s huge pages reserved: write to %s", page_name(page),
                 page == dflt ? "/proc/sys/vm/nr_hugepages" : path);
    } else if (over == 0 && avail < 2) {
        snprintf(expect, sizeof expect, "huge pages needed, %" PRIu64 " free", avail);
    } else {
        snprintf(why, sizeof why,
                 "%s huge pages are reserved (nr_hugepages %" PRIu64
                 ", nr_overcommit_hugepages %" PRIu64 ", %" PRIu64
                 " free): their refusal is not tested, since emptying the pool would take "
                 "pages others reserved",
                 page_name(page), nr, over, avail);
        case_skipped(why);
        return;
    }
    struct rtm_arena_config cfg = { .size_bytes = 2 * page, .page_bytes = page };
    expect_failure("anon huge pages, none free", &cfg, ENOMEM, expect, NULL);
    cfg.source = RTM_ARENA_MEMFD;
    expect_failure("memfd huge pages, none free", &cfg, ENOMEM, expect, NULL);
    /* SHM_HUGETLB asks for a privilege first. */
    cfg.source = RTM_ARENA_SYSV_SHM;
    if (has_cap_ipc_lock())
        expect_failure("SysV huge pages, none free", &cfg, ENOMEM, expect, NULL);
    else
        expect_failure("SysV huge pages, no privilege", &cfg, EPERM,
                       "SHM_HUGETLB needs CAP_IPC_LOCK", "hugetlb_shm_group");
}

TEST_CASE_IN("huge_missing", "2 MiB pages asked with none free are refused, saying how to get them")
{
    huge_missing(2 * MIB);
}

TEST_CASE_IN("huge_missing", "1 GiB pages asked with none free are refused, saying how to get them")
{
    huge_missing(GIB);
}

/* ---- huge_2m, huge_1g: arenas of huge pages (the pages reserved first:
 * huge_setup) ---- */

/* The size of the arenas of page-sized pages: 4 MiB - 1 of 2 MiB pages,
 * one 1 GiB page. */
static size_t huge_size(size_t page)
{
    return page == GIB ? GIB : 4 * MIB - 1;
}

/* 1 GiB pages are zeroed when faulted in: one prefaulted, locked arena of
 * each source, not every combination. */
static void huge_anon(size_t page)
{
    struct expect x = { .page = page };
    struct rtm_arena_config cfg = { .size_bytes = huge_size(page), .page_bytes = page };
    char label[64];
    snprintf(label, sizeof label, "anon %s", page_name(page));
    if (page == GIB) {
        cfg.prefault = RTM_ARENA_PREFAULT_TOUCH;
        cfg.lock = RTM_ARENA_LOCK_MUST;
        run_case(label, &cfg, &x);
    } else {
        run_matrix(label, cfg, &x);
    }
}

static void huge_memfd_sysv(size_t page)
{
    struct expect x = { .page = page };
    struct rtm_arena_config cfg = { .source = RTM_ARENA_MEMFD,
                                    .size_bytes = huge_size(page),
                                    .page_bytes = page };
    if (page == GIB) {
        cfg.prefault = RTM_ARENA_PREFAULT_TOUCH;
        cfg.lock = RTM_ARENA_LOCK_MUST;
    }
    char label[64];
    snprintf(label, sizeof label, "memfd %s", page_name(page));
    run_case(label, &cfg, &x);
    if (page != GIB) {
        cfg.prefault = RTM_ARENA_PREFAULT_POPULATE;
        cfg.lock = RTM_ARENA_LOCK_NONE;
        run_case(label, &cfg, &x);
    }
    snprintf(label, sizeof label, "sysv_shm %s", page_name(page));
    cfg.source = RTM_ARENA_SYSV_SHM;
    cfg.prefault = RTM_ARENA_PREFAULT_TOUCH;
    cfg.lock = RTM_ARENA_LOCK_MUST;
    run_case(label, &cfg, &x);
}

/* More than the pool holds: the message says how many are free. */
static void huge_too_many(size_t page)
{
    struct rtm_arena_config cfg = {
        .size_bytes = (size_t)(pool_value(page, "nr_hugepages") + 1) * page,
        .page_bytes = page,
        .prefault = RTM_ARENA_PREFAULT_TOUCH,
        .lock = RTM_ARENA_LOCK_MUST,
    };
    expect_failure("more huge pages than reserved", &cfg, ENOMEM, "huge pages needed",
                   "nr_hugepages");
}

TEST_CASE_IN("huge_2m", "anonymous 2 MiB pages are what the report says, at every prefault and "
                        "lock")
{
    huge_anon(2 * MIB);
}

TEST_CASE_IN("huge_2m", "a memfd and SysV shm of 2 MiB pages are what the report says")
{
    huge_memfd_sysv(2 * MIB);
}

/* An existing segment of huge pages: page_bytes must say so. */
TEST_CASE_IN("huge_2m", "an existing hugetlb segment is mapped when asked with its page size only")
{
    if (!has_cap_ipc_lock())
        return; /* SHM_HUGETLB needs it */
    int key = sysv_key(7);
    int id = shmget(key, 3 * MIB, IPC_CREAT | IPC_EXCL | SHM_HUGETLB | 0600);
    CHECK(id >= 0);
    struct rtm_arena_config seg = { .source = RTM_ARENA_SYSV_SHM,
                                    .sysv_key = key,
                                    .flags = RTM_ARENA_EXISTING };
    expect_failure("an existing hugetlb segment asked as base pages", &seg, EINVAL,
                   "pages of 2 MiB (smaps KernelPageSize), not the 4 KiB asked", NULL);
    seg.page_bytes = 2 * MIB;
    seg.prefault = RTM_ARENA_PREFAULT_TOUCH;
    run_case("an existing hugetlb segment", &seg,
             &(struct expect){ .page = 2 * MIB, .no_guards = true });
    CHECK(shmget(key, 0, 0) == id);
    shmctl(id, IPC_RMID, NULL);
}

TEST_CASE_IN("huge_2m", "more 2 MiB pages than reserved are refused, saying how many are free")
{
    huge_too_many(2 * MIB);
}

TEST_CASE_IN("huge_1g", "an anonymous 1 GiB page is what the report says, prefaulted and locked")
{
    huge_anon(GIB);
}

TEST_CASE_IN("huge_1g", "a memfd and SysV shm of a 1 GiB page are what the report says")
{
    huge_memfd_sysv(GIB);
}

TEST_CASE_IN("huge_1g", "more 1 GiB pages than reserved are refused, saying how many are free")
{
    huge_too_many(GIB);
}

/* ---- mounts: a file on hugetlbfs, and a tmpfs too small for its arena,
 * mounted in a mount namespace of this process alone (mounts_setup), gone
 * when it exits ---- */

static int mounts_setup(void)
{
    if (!g.root) {
        printf("SKIP: mounting hugetlbfs and tmpfs for the test needs root\n");
        return SKIP;
    }
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        printf("SKIP: no mount namespace of the test's own: %s\n", strerror(errno));
        return SKIP;
    }
    return 0;
}

TEST_CASE_IN("mounts", "a file larger than its tmpfs is refused before a SIGBUS, and not left")
{
    char small[PATH_MAX], path[PATH_MAX];
    scratch_path(small, sizeof small, "tmpfs");
    mkdir(small, 0700);
    CHECK(mount("none", small, "tmpfs", 0, "size=1m") == 0);
    scratch_path(path, sizeof path, "tmpfs/file");
    expect_failure(
        "a file larger than its tmpfs",
        &(struct rtm_arena_config){ .source = RTM_ARENA_FILE, .name = path, .size_bytes = 4 * MIB },
        ENOSPC, "has 1 MiB free, 4 MiB asked", "SIGBUS");
    CHECK(access(path, F_OK) != 0); /* the refused file is not left behind */
}

/* Without the pages the section skips; without the mount it says so. */
TEST_CASE_IN("mounts", "a file on hugetlbfs has its mount's page size, and is not left")
{
    if (reserve_huge(2 * MIB, 4) != 0) {
        skip_section = true;
        return;
    }
    char huge[PATH_MAX], path[PATH_MAX];
    scratch_path(huge, sizeof huge, "hugetlbfs");
    mkdir(huge, 0700);
    if (mount("none", huge, "hugetlbfs", 0, "pagesize=2M") != 0) {
        printf("SKIP: hugetlbfs cannot be mounted: %s\n", strerror(errno));
        return;
    }
    scratch_path(path, sizeof path, "hugetlbfs/file");
    struct rtm_arena_config cfg = { .source = RTM_ARENA_FILE,
                                    .name = path,
                                    .size_bytes = 3 * MIB, /* rounded to 4 MiB */
                                    .prefault = RTM_ARENA_PREFAULT_TOUCH,
                                    .lock = RTM_ARENA_LOCK_MUST };
    run_case("file on hugetlbfs", &cfg, &(struct expect){ .page = 2 * MIB });
    CHECK(access(path, F_OK) != 0);
    cfg.page_bytes = RTM_ARENA_PAGE_1G;
    expect_failure("file on hugetlbfs, another page size", &cfg, EINVAL,
                   "hugetlbfs mount of 2 MiB pages", NULL);
    CHECK(access(path, F_OK) != 0);
}

/* ---- shmlba: SysV segments attach where shmat takes them: on SHMLBA
 * (four pages on 32-bit ARM, which refuses any other address with EINVAL;
 * one page elsewhere). Only the arena's own word on the mapping: this
 * section runs under emulation too. ---- */

/* Private and keyed, small and past 2 MiB, each attached on that boundary,
 * written and read back whole. */
static void shmlba_one(bool keyed, size_t i, size_t size)
{
    struct rtm_arena a;
    int rc = rtm_arena_open(
        &a, &(struct rtm_arena_config){ .source = RTM_ARENA_SYSV_SHM,
                                        .sysv_key = keyed ? sysv_key(40 + (int)i) : 0,
                                        .size_bytes = size });
    if (rc != 0)
        printf("  %s %zu bytes: %s\n", keyed ? "keyed" : "private", size, a.message);
    CHECK_EQ(rc, 0);
    if (rc != 0)
        return;
    CHECK_EQ((uintptr_t)a.base % (uintptr_t)SHMLBA, 0);
    CHECK(a.size_bytes >= size);
    unsigned char *m = a.base;
    for (size_t off = 0; off < a.size_bytes; off += g.page)
        m[off] = (unsigned char)(off / g.page * 7 + 1);
    size_t wrong = 0;
    for (size_t off = 0; off < a.size_bytes; off += g.page)
        wrong += m[off] != (unsigned char)(off / g.page * 7 + 1);
    CHECK_EQ(wrong, 0);
    CHECK_EQ(rtm_arena_close(&a), 0);
}

TEST_CASE_IN("shmlba",
             "SysV segments, private and keyed, attach on SHMLBA and hold what is written")
{
    static const size_t sizes[] = { 4096, MIB, 3 * MIB };
    for (int keyed = 0; keyed < 2; keyed++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            test_context = keyed ? "keyed" : "private";
            shmlba_one(keyed, i, sizes[i]);
        }
}

/* ---- the wrapper ------------------------------------------------------------ */

static const char *const sections[] = { "sources",   "device",  "pfnmap",  "thp",
                                        "ownership", "errors",  "memlock", "huge_missing",
                                        "huge_2m",   "huge_1g", "mounts",  "shmlba" };

/* What a section needs before its cases run: 0, or SKIP after saying why
 * (huge pages reserved as root, a VM_PFNMAP node, a mount namespace). */
static int section_setup(const char *section)
{
    if (!strcmp(section, "pfnmap"))
        return pfnmap_setup();
    if (!strcmp(section, "huge_2m"))
        return reserve_huge(2 * MIB, 4);
    if (!strcmp(section, "huge_1g"))
        return reserve_huge(GIB, 1);
    if (!strcmp(section, "mounts"))
        return mounts_setup();
    return 0;
}

/* The section's cases (the group argv[1]), in the test process: its exit
 * status, SKIP when it could not run here and nothing failed. */
static int run_section(int argc, char **argv)
{
    int rc = section_setup(argv[1]);
    if (rc)
        return rc;
    rc = test_main(argc, argv, "arena_test");
    bool all_skipped = cases_tried > 0 && cases_skipped == cases_tried;
    return rc == 0 && (skip_section || all_skipped) ? SKIP : rc;
}

/* Whether mlock really locks in this process (a sanitizer runtime makes it
 * a no-op that returns 0). */
static bool probe_mlock(void)
{
    void *p = mmap(NULL, g.page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int64_t before = own_vmlck_kb();
    bool works = p != MAP_FAILED && mlock(p, g.page) == 0 && own_vmlck_kb() > before;
    if (p != MAP_FAILED)
        munmap(p, g.page);
    return works;
}

/* Takes back the pages the section added to a pool (by what the pool holds
 * now: writing the old size back would undo what another process reserved
 * meanwhile). False if the pool did not shrink as asked. */
static bool pool_give_back(size_t page)
{
    uint64_t added = *pages_added(page);
    if (added == 0)
        return true;
    char path[128];
    pool_file(path, sizeof path, page, "nr_hugepages");
    uint64_t now = pool_value(page, "nr_hugepages");
    uint64_t want = now > added ? now - added : 0;
    write_num(path, want);
    uint64_t after = pool_value(page, "nr_hugepages");
    printf("arena_test: %s: %" PRIu64 " -> %" PRIu64 " (taking back the %" PRIu64
           " the test added)%s\n",
           path, now, after, added, after == want ? "" : ": did not take");
    return after == want;
}

/* Scratch files left behind (directories are the test's own: mount
 * points). */
static int leftovers_in_dir;

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)ftw;
    if (flag == FTW_F || flag == FTW_SL || flag == FTW_SLN || flag == FTW_NS) {
        printf("arena_test: removing %s left behind (%lld bytes)\n", path, (long long)st->st_size);
        leftovers_in_dir++;
    }
    return remove(path);
}

/* Removes whatever this run's section may have left; returns how many
 * objects that was. */
static int clean_up(void)
{
    int left = 0;
    char prefix[64];
    int n = snprintf(prefix, sizeof prefix, "rtmem-arena-test-%d-", g.run);
    DIR *d = opendir("/dev/shm");
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        if (strncmp(e->d_name, prefix, (size_t)n) == 0) {
            char name[300];
            snprintf(name, sizeof name, "/%s", e->d_name);
            printf("arena_test: removing POSIX shm object %s left behind\n", name);
            shm_unlink(name);
            left++;
        }
    }
    if (d)
        closedir(d);
    for (int i = 0; i < 256; i++) {
        int id = shmget(sysv_key(i), 0, 0);
        struct shmid_ds ds;
        if (id >= 0 && shmctl(id, IPC_STAT, &ds) == 0 && ds.shm_cpid == g.child) {
            printf("arena_test: removing SysV segment 0x%x left behind\n", sysv_key(i));
            shmctl(id, IPC_RMID, NULL);
            left++;
        }
    }
    leftovers_in_dir = 0;
    nftw(g.dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return left + leftovers_in_dir;
}

static void pass_signal(int sig)
{
    g.signal = sig;
    if (g.child > 0)
        kill(g.child, sig);
}

/* Under qemu-user: the exit status of a section skipped there (its
 * reason said), or 0. */
static int emulated_skip(const char *section)
{
    if (!test_emulated())
        return 0;
    /* These sections check what the kernel reports of the mapping:
     * residency, page faults, smaps flags, the lock, the mapping count and
     * placement. Under qemu-user the process's memory is the emulator's
     * (its own mappings and faults mixed in, smaps made up): skipped. */
    static const char *const kernel_view[] = { "sources", "device",  "pfnmap", "thp",
                                               "memlock", "huge_2m", "huge_1g" };
    for (size_t i = 0; i < sizeof kernel_view / sizeof kernel_view[0]; i++)
        if (!strcmp(section, kernel_view[i]))
            return test_skip_emulated(
                "arena_test",
                "this section checks the kernel's view of the mapping (residency, page faults, "
                "smaps flags, the lock), which under qemu-user is the emulator's");
    /* The others check every mapping against /proc/self/maps and smaps,
     * which qemu-user passes through for a 64-bit program on a 64-bit host
     * (the same addresses), but not for a 32-bit one, which it maps at an
     * offset into its own address space. */
    if (sizeof(void *) == 4 && strcmp(section, "shmlba") != 0)
        return test_skip_emulated("arena_test",
                                  "qemu-user maps a 32-bit program at an offset into its own "
                                  "address space: /proc's addresses are not the program's");
    return 0;
}

/* The run's state (g): its pid, the page size, root, whether mlock works,
 * the scratch directory, the page shared with the test process. False
 * after saying why when it cannot be had. */
static bool wrapper_setup(const char *section)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    g.run = (int)getpid();
    g.page = (size_t)sysconf(_SC_PAGESIZE);
    g.root = geteuid() == 0;
    g.mlock_works = probe_mlock();
    if (!g.mlock_works)
        printf("note: mlock is a no-op in this process (a sanitizer runtime intercepts it): "
               "locks are expected to be reported as ignored\n");
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd) ||
        snprintf(g.dir, sizeof g.dir, "%s/arena_test.%s.XXXXXX", cwd, section) >=
            (int)sizeof g.dir ||
        !mkdtemp(g.dir)) {
        perror("arena_test: scratch directory");
        return false;
    }
    g.pages_added = mmap(NULL, g.page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g.pages_added == MAP_FAILED) {
        perror("arena_test: shared page");
        return false;
    }
    return true;
}

/* After the test process: whatever it left removed, the pages it added
 * taken back, a signal passed on; the section's exit status. */
static int wrapper_finish(const char *section, int status)
{
    int left = clean_up();
    bool restored = true;
    for (int i = 0; i < 2; i++) /* both, whatever the first does */
        restored = pool_give_back(i ? GIB : 2 * MIB) && restored;
    if (g.signal) {
        printf("arena_test: interrupted (signal %d); cleaned up\n", g.signal);
        signal(g.signal, SIG_DFL);
        raise(g.signal);
    }
    if (g.child < 0 || !WIFEXITED(status)) {
        printf("arena_test %s: the test process %s\n", section,
               g.child < 0 ? "could not start" : strsignal(WTERMSIG(status)));
        return 1;
    }
    if (left) {
        printf("arena_test %s: FAILED: %d object(s) left behind (above)\n", section, left);
        return 1;
    }
    if (!restored)
        return 1;
    return WEXITSTATUS(status);
}

/* The wrapper: the section's cases run in a test process of their own
 * (run_section), and the wrapper cleans up after it. */
int main(int argc, char **argv)
{
    bool known = false;
    for (size_t i = 0; argc == 2 && i < sizeof sections / sizeof sections[0]; i++)
        known |= !strcmp(argv[1], sections[i]);
    if (!known) {
        fprintf(stderr, "usage: arena_test SECTION (sources, device, pfnmap, thp, ownership, "
                        "errors, memlock, huge_missing, huge_2m, huge_1g, mounts, shmlba)\n");
        return 2;
    }
    int skip = emulated_skip(argv[1]);
    if (skip)
        return skip;
    if (!wrapper_setup(argv[1]))
        return 1;
    struct sigaction sa = { .sa_handler = pass_signal };
    sigemptyset(&sa.sa_mask);
    int sigs[] = { SIGINT, SIGTERM, SIGHUP };
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &sa, NULL);
    fflush(NULL);
    g.child = fork();
    if (g.child == 0) {
        /* Dies with the wrapper, which alone cleans up. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != g.run)
            test_exit(1);
        for (int i = 0; i < 3; i++)
            signal(sigs[i], SIG_DFL);
        fflush(NULL);
        test_exit(run_section(argc, argv));
    }
    int status = 0;
    while (g.child > 0 && waitpid(g.child, &status, 0) < 0 && errno == EINTR)
        ;
    return wrapper_finish(argv[1], status);
}
