/* Bench kit: what a run killed with SIGKILL left behind (leftovers.h). */
#include "common/leftovers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The start time of process pid (field 22 of /proc/<pid>/stat), or 0 when
 * there is no such process. */
static unsigned long long start_time(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    /* after the command's closing parenthesis: state is field 3 */
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    p++;
    for (int field = 3; field < 22 && p; field++)
        p = strchr(p + 1, ' ');
    return p ? strtoull(p + 1, NULL, 10) : 0;
}

int tk_leftover_stem(const char *prefix, char *buf, size_t size)
{
    long pid = (long)getpid();
    int n = snprintf(buf, size, "%s-%ld-%llu-", prefix, pid, start_time(pid));
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* The run an entry's name gives, if it has the form. */
static bool parse(const char *name, const char *prefix, long *pid, unsigned long long *start)
{
    size_t len = strlen(prefix);
    if (strncmp(name, prefix, len) != 0 || name[len] != '-')
        return false;
    char *end;
    errno = 0;
    long p = strtol(name + len + 1, &end, 10);
    if (errno || end == name + len + 1 || *end != '-' || p <= 0)
        return false;
    const char *s = end + 1;
    unsigned long long st = strtoull(s, &end, 10);
    if (errno || end == s || *end != '-')
        return false;
    *pid = p;
    *start = st;
    return true;
}

/* Removes the files of directory `name` in parent, then it. */
static int remove_dir(int parent, const char *name)
{
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            (void)unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
    return unlinkat(parent, name, AT_REMOVEDIR);
}

int tk_leftover_sweep(const char *prog, const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int removed = 0;
    uid_t me = geteuid();
    struct dirent *e;
    while ((e = readdir(d))) {
        long pid;
        unsigned long long start;
        struct stat st;
        if (!parse(e->d_name, prefix, &pid, &start) ||
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_uid != me)
            continue;
        unsigned long long now = start_time(pid);
        if (now != 0 && now == start)
            continue; /* its run lives */
        int rc = S_ISDIR(st.st_mode)   ? remove_dir(dirfd(d), e->d_name)
                 : S_ISREG(st.st_mode) ? unlinkat(dirfd(d), e->d_name, 0)
                                       : -1;
        if (rc == 0) {
            removed++;
            fprintf(stderr, "%s: removed %s/%s, left by run %ld, which ended without removing it\n",
                    prog, dir, e->d_name, pid);
        }
    }
    closedir(d);
    return removed;
}
