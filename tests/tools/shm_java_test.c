/*
 * rtmem shm --java's runner (tools/rtmem/shm/java.h) with the JDK here: a
 * small job's phases, counts and region (checked against the same
 * workload in C), the zeroing methods, refusals, the timeout, a fatal
 * signal in the middle, its protocol parser on bad output, and a PATH
 * without javac. Every run must leave nothing in the private TMPDIR the
 * test gives it.
 *
 * Exit status 77 (skipped) when no javac is installed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "rtmem/shm/java.h"

#define SKIP       77
#define JOB_BYTES  65536u
#define JOB_WRITES 100000u
#define JOB_SEED   0x5eedu

static char dir[64];      /* the test's own directory */
static char tmp_dir[128]; /* TMPDIR for the runner: dir/tmp */
static char why[512];
static bool with_javac; /* main found one: the runner's cases run */

static bool has_javac(void)
{
    const char *home = getenv("JAVA_HOME");
    char p[4096];
    if (home && *home) {
        snprintf(p, sizeof(p), "%s/bin/javac", home);
        if (access(p, X_OK) == 0)
            return true;
    }
    const char *path = getenv("PATH");
    while (path && *path) {
        const char *end = strchr(path, ':');
        size_t len = end ? (size_t)(end - path) : strlen(path);
        snprintf(p, sizeof(p), "%.*s/javac", (int)len, path);
        if (len && access(p, X_OK) == 0)
            return true;
        path = end ? end + 1 : NULL;
    }
    return false;
}

/* Entries in a directory, . and .. aside. */
static int entries(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static void job_init(struct shm_java_job *j, const char *path)
{
    memset(j, 0, sizeof(*j));
    j->path = path;
    j->bytes = JOB_BYTES;
    j->writes = JOB_WRITES;
    j->zeroings = 3;
    j->seed = JOB_SEED;
    j->timeout_ns = 120 * 1000000000ull;
}

/* The region after touch and writes, as phase.h defines them, in C. */
static uint64_t expected_checksum(uint64_t bytes, uint64_t writes, uint64_t seed)
{
    uint8_t *b = calloc(bytes, 1);
    if (!b)
        return 0;
    long page = sysconf(_SC_PAGESIZE);
    for (uint64_t i = 0; i < bytes; i += (uint64_t)page)
        b[i] = 1;
    uint64_t s = seed;
    for (uint64_t i = 0; i < writes; i++) {
        uint64_t z = tk_rng_next(&s);
        b[((z >> 32) * bytes) >> 32] = (uint8_t)z;
    }
    uint64_t sum = shm_java_checksum(b, bytes);
    free(b);
    return sum;
}

/* Whether the runner finds the JDK (asked once; the case below checks it):
 * the cases that start a JVM run only then. */
static bool jvm_ready(void)
{
    static int ready = -1;
    if (ready < 0) {
        ready = shm_java_available(why, sizeof(why));
        if (!ready)
            fprintf(stderr, "shm_java_available: %s\n", why);
    }
    return ready;
}

TEST_CASE("the JDK here is available, and leaves nothing in TMPDIR")
{
    if (!with_javac)
        return;
    CHECK(jvm_ready());
    CHECK_EQ(entries(tmp_dir), 0);
}

TEST_CASE("a small job's phases and counts are right, its region the same workload's in C")
{
    if (!with_javac || !jvm_ready())
        return;
    char path[128];
    snprintf(path, sizeof(path), "%s/region", dir);
    struct shm_java_job j;
    job_init(&j, path);
    struct shm_java_result r;
    int rc = shm_java_run(&j, &r, why, sizeof(why));
    if (rc)
        fprintf(stderr, "shm_java_run: %s\n", why);
    REQUIRE(rc == 0, );
    long page = sysconf(_SC_PAGESIZE);
    uint64_t want[SHM_PHASES] = { JOB_BYTES / (uint64_t)page, JOB_WRITES, 3, 1, 1 };
    for (int i = 0; i < SHM_PHASES; i++) {
        CHECK(r.phase[i].done);
        CHECK_EQ(r.phase[i].ops, want[i]);
        CHECK(r.phase[i].ns > 0); /* writes: the loop's whole time */
    }
    CHECK(r.rng_ns_per_write > 0);
    CHECK(r.rng_spread_ns >= 0);
    /* Every page touched took a fault, at least (the JVM's own too). */
    CHECK(r.phase[SHM_PHASE_TOUCH].minor_faults + r.phase[SHM_PHASE_TOUCH].major_faults >=
          want[SHM_PHASE_TOUCH]);
    CHECK(r.rng_ns_per_write > 0);
    CHECK(strlen(r.runtime) > 0);
    CHECK(strcmp(r.zero_method, SHM_JAVA_ZERO_DEFAULT) == 0);
    /* Java drew the same indexes and values as C. */
    CHECK_EQ(r.checksum, expected_checksum(JOB_BYTES, JOB_WRITES, JOB_SEED));
    CHECK(!exists(path));
    CHECK_EQ(entries(tmp_dir), 0);
}

/* Each bulk fill zeroes the region (the JVM says so, or the run fails),
 * with a budget instead of a count. */
TEST_CASE("each bulk fill method zeroes the region within a budget")
{
    if (!with_javac || !jvm_ready())
        return;
    static const char *const methods[] = { SHM_JAVA_ZERO_METHODS };
    char path[128];
    snprintf(path, sizeof(path), "%s/region", dir);
    uint64_t sum = expected_checksum(JOB_BYTES, 1000, 7);
    for (size_t m = 0; m < sizeof(methods) / sizeof(methods[0]); m++) {
        test_context = methods[m];
        struct shm_java_job j;
        job_init(&j, path);
        j.writes = 1000;
        j.seed = 7;
        j.zeroings = 0;
        j.zero_budget_ns = 1000000;
        j.zero_method = methods[m];
        struct shm_java_result r;
        int rc = shm_java_run(&j, &r, why, sizeof(why));
        if (rc)
            fprintf(stderr, "shm_java_run: %s\n", why);
        CHECK(rc == 0);
        CHECK(strcmp(r.zero_method, methods[m]) == 0);
        CHECK(r.phase[SHM_PHASE_ZEROINGS].ops >= 3);
        CHECK_EQ(r.checksum, sum);
        CHECK(!exists(path));
        CHECK_EQ(entries(tmp_dir), 0);
    }
}

/* Bad jobs are refused before a JVM starts; a file that is there stays. */
TEST_CASE("bad jobs are refused before a JVM starts, and a file that is there stays")
{
    if (!with_javac || !jvm_ready())
        return;
    char path[128];
    snprintf(path, sizeof(path), "%s/someone-elses", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    REQUIRE(fd >= 0, );
    CHECK(write(fd, "keep", 4) == 4);
    close(fd);
    struct shm_java_job j;
    struct shm_java_result r;
    job_init(&j, path);
    CHECK(shm_java_run(&j, &r, why, sizeof(why)) == -EEXIST);
    CHECK(strstr(why, "exists already") != NULL);
    struct stat st;
    CHECK(stat(path, &st) == 0 && st.st_size == 4);
    unlink(path);

    snprintf(path, sizeof(path), "%s/region", dir);
    job_init(&j, path);
    j.zero_method = "memset";
    CHECK(shm_java_run(&j, &r, why, sizeof(why)) == -EINVAL);
    CHECK(strstr(why, "memset") != NULL);
    job_init(&j, path);
    j.bytes = (uint64_t)SHM_JAVA_MAX_BYTES + 1;
    CHECK(shm_java_run(&j, &r, why, sizeof(why)) == -EINVAL);
    CHECK(strstr(why, "MappedByteBuffer") != NULL);
    CHECK(!exists(path));
    CHECK_EQ(entries(tmp_dir), 0);
}

/* A JVM past its timeout is killed and reaped; its file removed. */
TEST_CASE("a JVM past its timeout is killed and reaped, its file removed")
{
    if (!with_javac || !jvm_ready())
        return;
    char path[128];
    snprintf(path, sizeof(path), "%s/region", dir);
    struct shm_java_job j;
    job_init(&j, path);
    j.writes = (uint64_t)1 << 50;
    j.timeout_ns = 3000000000ull;
    struct shm_java_result r;
    CHECK(shm_java_run(&j, &r, why, sizeof(why)) == -ETIMEDOUT);
    CHECK(strstr(why, "timeout") != NULL);
    CHECK(!r.phase[SHM_PHASE_TOUCH].done);
    CHECK(waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD);
    CHECK(!exists(path));
    CHECK_EQ(entries(tmp_dir), 0);
}

/* Processes other than this one with `s` in their command line, each sent
 * sig (0: none, only counted). */
static int processes_with(const char *s, int sig)
{
    int n = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9' || atoi(e->d_name) == getpid())
            continue;
        char p[300], cmd[4096];
        snprintf(p, sizeof(p), "/proc/%s/cmdline", e->d_name);
        int fd = open(p, O_RDONLY);
        if (fd < 0)
            continue;
        ssize_t len = read(fd, cmd, sizeof(cmd) - 1);
        close(fd);
        for (ssize_t i = 0; i < len; i++)
            if (cmd[i] == '\0')
                cmd[i] = ' ';
        cmd[len > 0 ? len : 0] = '\0';
        if (strstr(cmd, s) && kill(atoi(e->d_name), sig) == 0)
            n++;
    }
    if (d)
        closedir(d);
    return n;
}

/* The runner in a process of its own (this program again, exec'd: a fresh
 * cleanup.h, whose handler acts only in the process that installed it),
 * zeroing the region until killed. */
static int signal_child(const char *path)
{
    struct shm_java_job j;
    struct shm_java_result r;
    job_init(&j, path);
    j.writes = 1000;
    j.zeroings = (uint64_t)1 << 50;
    int rc = shm_java_run(&j, &r, why, sizeof(why));
    fprintf(stderr, "signal child: shm_java_run returned %d: %s\n", rc, why);
    return 3;
}

/* SIGTERM while the JVM zeroes the region: the runner's process dies of
 * it, and the JVM, its file and the private directory are gone. */
TEST_CASE("SIGTERM mid-run kills the runner, and the JVM, its file and directory go")
{
    if (!with_javac || !jvm_ready())
        return;
    char path[128];
    snprintf(path, sizeof(path), "%s/region", dir);
    pid_t pid = fork();
    REQUIRE(pid >= 0, );
    if (pid == 0) {
        execl("/proc/self/exe", "shm_java_test", "--signal-child", path, (char *)NULL);
        test_exit(4);
    }
    /* The JVM has made the file: it is in its phases. */
    for (int i = 0; i < 3000 && !exists(path); i++)
        nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
    CHECK(exists(path));
    CHECK(processes_with(tmp_dir, 0) == 1);
    kill(pid, SIGTERM);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    CHECK(!exists(path));
    CHECK_EQ(entries(tmp_dir), 0);
    CHECK_EQ(processes_with(tmp_dir, 0), 0);
}

static const char good[] = "rtmem-shm-java 2\n"
                           "runtime Some VM 17.0.1\n"
                           "zero-method longs\n"
                           "rng ops=10 ns=100 max=130 sink=1\n"
                           "checksum 42\n"
                           "zeroed 1\n"
                           "phase touch ops=16 ns=1000 minflt=16 majflt=0 jit-ms=0 gcs=0\n"
                           "phase writes ops=10 ns=300 minflt=0 majflt=0 jit-ms=0 gcs=0\n"
                           "phase zeroings ops=3 ns=500 minflt=0 majflt=0 jit-ms=1 gcs=0\n"
                           "phase sync ops=1 ns=50 minflt=0 majflt=0 jit-ms=0 gcs=0\n"
                           "phase teardown ops=1 ns=70 minflt=0 majflt=0 jit-ms=0 gcs=2\n"
                           "end\n";

/* good with its first `from` replaced by `to`; the bad line's number. */
static void expect_bad(const char *from, const char *to, int line)
{
    char text[2048], want[32];
    const char *at = strstr(good, from);
    REQUIRE(at != NULL, );
    snprintf(text, sizeof(text), "%.*s%s%s", (int)(at - good), good, to, at + strlen(from));
    struct shm_java_result r;
    CHECK(shm_java_parse(text, 10, &r, why, sizeof(why)) == -EPROTO);
    snprintf(want, sizeof(want), "line %d", line);
    CHECK(strstr(why, want) != NULL);
    if (!strstr(why, want))
        fprintf(stderr, "  for '%s': %s\n", to, why);
}

TEST_CASE("the protocol parser reads every field of good output")
{
    struct shm_java_result r;
    REQUIRE(shm_java_parse(good, 10, &r, why, sizeof(why)) == 0, );
    CHECK(strcmp(r.runtime, "Some VM 17.0.1") == 0);
    CHECK(strcmp(r.zero_method, "longs") == 0);
    CHECK(r.rng_ns_per_write == 10.0);
    CHECK(r.rng_spread_ns == 3.0);
    CHECK(r.phase[SHM_PHASE_WRITES].ns == 300.0); /* whole: the generator not subtracted */
    CHECK_EQ(r.checksum, 42);
    CHECK_EQ(r.phase[SHM_PHASE_TOUCH].minor_faults, 16);
    CHECK_EQ(r.jit_ms[SHM_PHASE_ZEROINGS], 1);
    CHECK_EQ(r.gcs[SHM_PHASE_TEARDOWN], 2);
    for (int i = 0; i < SHM_PHASES; i++)
        CHECK(r.phase[i].done);
}

TEST_CASE("the protocol parser refuses bad output, naming its line")
{
    expect_bad("rtmem-shm-java 2", "rtmem-shm-java 1", 1);
    expect_bad("zero-method longs", "zero-method memset", 3);
    expect_bad("rng ops=10", "rng ops=11", 4);
    expect_bad("max=130", "max=90", 4); /* the slowest faster than the fastest */
    expect_bad(" max=130", "", 4);
    expect_bad("checksum 42", "checksum 42x", 5);
    expect_bad("checksum 42", "checksum 99999999999999999999", 5);
    expect_bad("zeroed 1", "zeroed 0", 6);
    expect_bad("phase touch ops=16 ns=1000", "phase touch ops=16 ns=-1000", 7);
    expect_bad("phase writes", "phase zeroings", 8);
    expect_bad("gcs=0\nphase sync", "gcs=0 extra=1\nphase sync", 9);
    expect_bad("end\n", "end\nmore\n", 13);
    expect_bad("end\n", "end", 12);
    expect_bad("end\n", "", 12);
    expect_bad("phase sync ops=1 ns=50 minflt=0 majflt=0", "phase sync ops=1 ns=50 majflt=0", 10);
}

/* Without javac on PATH (and no JAVA_HOME) the runner says what is
 * missing and how to get it. */
TEST_CASE("without javac on PATH the runner says what is missing and how to get it")
{
    if (!with_javac)
        return;
    char *path = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
    char *home = getenv("JAVA_HOME") ? strdup(getenv("JAVA_HOME")) : NULL;
    setenv("PATH", dir, 1);
    unsetenv("JAVA_HOME");
    CHECK(!shm_java_available(why, sizeof(why)));
    CHECK(strstr(why, "no javac") != NULL);
    CHECK(strstr(why, "openjdk-17-jdk-headless") != NULL);
    char region[128];
    snprintf(region, sizeof(region), "%s/region", dir);
    struct shm_java_job j;
    struct shm_java_result r;
    job_init(&j, region);
    CHECK(shm_java_run(&j, &r, why, sizeof(why)) == -ENOENT);
    CHECK(strstr(why, "no javac") != NULL);
    if (path)
        setenv("PATH", path, 1);
    if (home)
        setenv("JAVA_HOME", home, 1);
    free(path);
    free(home);
}

/* Last: none should be left; any that is (a check above failed) is killed.
 * The test's directories go. */
TEST_CASE("no JVM is left running, and nothing on disk")
{
    if (!with_javac)
        return;
    CHECK_EQ(processes_with(tmp_dir, SIGKILL), 0);
    rmdir(tmp_dir);
    CHECK(rmdir(dir) == 0);
}

/* The test's directory and the runner's TMPDIR in it, for the cases that
 * need javac; without one, the parser's cases alone, and the status says
 * skipped. */
int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--signal-child") == 0)
        return signal_child(argv[2]);
    with_javac = has_javac();
    if (!with_javac) {
        printf("tools.shm_java: skipped, no javac in $JAVA_HOME/bin or on PATH "
               "(scripts/ensure-deps.sh java installs one)\n");
        int rc = test_main(argc, argv, "tools.shm_java");
        return rc ? rc : SKIP;
    }
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof(dir), "%s/shm-java-test-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(tmp_dir, sizeof(tmp_dir), "%s/tmp", dir);
    if (mkdir(tmp_dir, 0700) != 0) {
        perror(tmp_dir);
        return 1;
    }
    setenv("TMPDIR", tmp_dir, 1);
    int rc = test_main(argc, argv, "tools.shm_java");
    rmdir(tmp_dir); /* when the last case did not run (RTMEM_TEST_CASE) */
    rmdir(dir);
    return rc;
}
