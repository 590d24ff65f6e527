/*
 * The bench kit's scratch directories (tools/common/cleanup.h), against its
 * header, in a directory given on the command line:
 *   - tk_cleanup_remove_scratch_dir unlinks every entry, more than one
 *     getdents buffer holds, and removes the directory;
 *   - an entry that is a directory stays, and so does the directory
 *     (ENOTEMPTY), with the files gone;
 *   - a symbolic link to a directory is refused, and what it points to is
 *     left alone;
 *   - on SIGINT, a child that registered a scratch directory and a plain
 *     one dies of the signal with the scratch directory gone, files and
 *     all, and the plain one, which holds a file it did not register,
 *     still there with that file (rmdir only).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "common/cleanup.h"

static char base[3072];

static void path_of(char *out, size_t size, const char *dir, const char *name)
{
    int n = snprintf(out, size, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= size)
        abort(); /* the test's own paths: never this long */
}

/* n files in dir, with names long enough that they span several
 * getdents buffers. */
static int fill(const char *dir, int n)
{
    for (int i = 0; i < n; i++) {
        char p[4096];
        int w = snprintf(p, sizeof(p), "%s/valgrind_proc_%d_cmdline_a-rather-long-name-%04d", dir,
                         i, i);
        if (w < 0 || (size_t)w >= sizeof(p))
            return -1;
        int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
        if (fd < 0)
            return -1;
        close(fd);
    }
    return 0;
}

static bool exists(const char *p)
{
    struct stat st;
    return lstat(p, &st) == 0;
}

/* Removes what a case left on purpose, under base (deepest first). */
static void tidy(const char *const *left, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char p[4096];
        path_of(p, sizeof(p), base, left[i]);
        CHECK_EQ(remove(p), 0);
    }
}

TEST_CASE("a scratch directory of more files than a getdents buffer holds is removed")
{
    char d[4096];
    path_of(d, sizeof(d), base, "many");
    REQUIRE(mkdir(d, 0700) == 0, );
    REQUIRE(fill(d, 400) == 0, );
    CHECK_EQ(tk_cleanup_remove_scratch_dir(d), 0);
    CHECK(!exists(d));
}

TEST_CASE("a scratch directory holding a directory stays, its files gone")
{
    char d[4096], sub[4096], f[4096];
    path_of(d, sizeof(d), base, "nested");
    path_of(sub, sizeof(sub), d, "sub");
    path_of(f, sizeof(f), d, "file");
    REQUIRE(mkdir(d, 0700) == 0 && mkdir(sub, 0700) == 0 && fill(d, 3) == 0, );
    REQUIRE(fill(sub, 1) == 0, );
    int fd = open(f, O_WRONLY | O_CREAT | O_EXCL, 0600);
    REQUIRE(fd >= 0, );
    close(fd);
    errno = 0;
    CHECK_EQ(tk_cleanup_remove_scratch_dir(d), -1);
    CHECK(errno == ENOTEMPTY || errno == EEXIST);
    CHECK(exists(d) && exists(sub));
    CHECK(!exists(f));
    char inner[4096];
    path_of(inner, sizeof(inner), sub, "valgrind_proc_0_cmdline_a-rather-long-name-0000");
    CHECK(exists(inner)); /* no recursion */
    static const char *const left[] = {
        "nested/sub/valgrind_proc_0_cmdline_a-rather-long-name-0000",
        "nested/sub",
        "nested",
    };
    tidy(left, sizeof(left) / sizeof(left[0]));
}

TEST_CASE("a symbolic link to a directory is refused, and what it points to left alone")
{
    char target[4096], link[4096], f[4096];
    path_of(target, sizeof(target), base, "target");
    path_of(link, sizeof(link), base, "link");
    path_of(f, sizeof(f), target, "valgrind_proc_0_cmdline_a-rather-long-name-0000");
    REQUIRE(mkdir(target, 0700) == 0 && fill(target, 1) == 0, );
    REQUIRE(symlink(target, link) == 0, );
    CHECK_EQ(tk_cleanup_remove_scratch_dir(link), -1);
    CHECK(exists(link) && exists(target) && exists(f));
    static const char *const left[] = {
        "target/valgrind_proc_0_cmdline_a-rather-long-name-0000",
        "target",
        "link",
    };
    tidy(left, sizeof(left) / sizeof(left[0]));
}

TEST_CASE("on SIGINT the scratch directory goes, and a plain one keeps a file it did not register")
{
    char scratch[4096], plain[4096], foreign[4096];
    path_of(scratch, sizeof(scratch), base, "sig-scratch");
    path_of(plain, sizeof(plain), base, "sig-plain");
    path_of(foreign, sizeof(foreign), plain, "not-registered");
    REQUIRE(mkdir(scratch, 0700) == 0 && mkdir(plain, 0700) == 0, );
    pid_t pid = fork();
    REQUIRE(pid >= 0, );
    if (pid == 0) {
        /* Another program's files in the scratch directory, and a file
         * no one registered in the plain one. */
        /* (A shell that starts this test in the background ignores
         * SIGINT for it, and the cleanup leaves an ignored signal alone.) */
        signal(SIGINT, SIG_DFL);
        tk_cleanup_install();
        if (tk_cleanup_add_scratch_dir(scratch) < 0 || tk_cleanup_add_dir(plain) < 0 ||
            fill(scratch, 150) != 0)
            test_exit(2);
        int fd = open(foreign, O_WRONLY | O_CREAT | O_EXCL, 0600);
        if (fd < 0)
            test_exit(2);
        close(fd);
        raise(SIGINT);
        test_exit(3); /* not reached: the handler raises it again */
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid, );
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT);
    CHECK(!exists(scratch));
    CHECK(exists(plain) && exists(foreign));
    static const char *const left[] = { "sig-plain/not-registered", "sig-plain" };
    tidy(left, sizeof(left) / sizeof(left[0]));
}

/* Last: each case removed what it left on purpose. */
TEST_CASE("the cases leave their directory empty")
{
    CHECK_EQ(rmdir(base), 0);
}

/* The cases' directory, made under the one given. */
int main(int argc, char **argv)
{
    REQUIRE(argc == 2, 1);
    snprintf(base, sizeof(base), "%s/cleanup_test.XXXXXX", argv[1]);
    REQUIRE(mkdtemp(base) != NULL, 1);
    return test_main(argc, argv, "tools.cleanup");
}
