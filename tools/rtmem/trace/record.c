/*
 * `rtmem trace -- PROGRAM`: runs the program with librtmem-trace preloaded
 * and moves what it wrote into place.
 *
 * The program writes into a directory of the run's own, made beside the
 * output (".rtmem-trace.XXXXXX"), one file per process image; once it has
 * ended, its own first image's file is renamed to the output (-o), any
 * other to "<output>.<pid>" (a child's, --children follow) or
 * "<output>.<pid>.<image>" (after an exec), and the directory is removed.
 * Nothing is written where a file exists that the run did not make but
 * the output itself (a result, replaced as every tool's is).
 *
 * While the program runs, rtmem trace waits for it and for the signals
 * that would end it: SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to rtmem trace alone
 * (kill) are passed on to the program; one from the terminal reaches the
 * program by itself (its process group), and rtmem trace waits for it to
 * end and keeps its trace, which says it was cut. --after sends the mark
 * signal at its time. A program still running when rtmem trace is killed
 * gets SIGTERM (PR_SET_PDEATHSIG), and its trace stays in the directory.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/launch.h"
#include "trace.h"

static const int signal_numbers[] = { SIGUSR2, SIGUSR1, 0 }; /* trace_signal_choices' */

/* The output's directory and its name, from path. */
static void split(const char *path, char *dir, size_t dir_size, const char **base)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(dir, dir_size, ".");
        *base = path;
    } else if (slash == path) {
        snprintf(dir, dir_size, "/");
        *base = slash + 1;
    } else {
        snprintf(dir, dir_size, "%.*s", (int)(slash - path), path);
        *base = slash + 1;
    }
}

/* The environment the recorder reads, in the program's process before
 * its exec (launch.h). */
static int set_env(void *arg, pid_t pid)
{
    const struct trace_run *r = arg;
    char p[32], sig[16];
    snprintf(p, sizeof(p), "%d", (int)pid);
    snprintf(sig, sizeof(sig), "%d", signal_numbers[r->o.mark_signal]);
    if (setenv("RTMEM_TRACE_DIR", r->dir, 1) != 0 || setenv("RTMEM_TRACE_PID", p, 1) != 0 ||
        setenv("RTMEM_TRACE_CHILDREN", trace_children_choices[r->o.children], 1) != 0 ||
        (signal_numbers[r->o.mark_signal] ? setenv("RTMEM_TRACE_MARK_SIGNAL", sig, 1)
                                          : unsetenv("RTMEM_TRACE_MARK_SIGNAL")) != 0)
        return -1;
    return 0;
}

/* Whether process pid catches signal sig (its SigCgt in /proc): the
 * recorder took it, or the program has a handler of its own. A signal it
 * does not catch would end it, or do nothing. */
static bool catches(pid_t pid, int sig)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    unsigned long long mask = 0;
    bool found = false;
    while (f && !found && fgets(line, sizeof(line), f))
        found = sscanf(line, "SigCgt: %llx", &mask) == 1;
    if (f)
        fclose(f);
    return found && sig > 0 && sig <= 64 && (mask >> (sig - 1)) & 1;
}

/* --after: the mark signal, only if the program catches it (one it does
 * not catch could end it). */
static void mark_after(void *arg, pid_t pid)
{
    struct trace_run *r = arg;
    int sig = signal_numbers[r->o.mark_signal];
    if (catches(pid, sig))
        kill(pid, sig);
    else
        r->mark_not_sent = true;
}

/* The program's own last image's file in the directory: the highest
 * generation of its pid. Into path; false if there is none. */
static bool last_image(const struct trace_run *r, char *path, size_t size)
{
    DIR *d = opendir(r->dir);
    long best = -1;
    for (struct dirent *e; d && (e = readdir(d));) {
        int p;
        unsigned g;
        int used = 0;
        if (sscanf(e->d_name, "%d.%u.trace%n", &p, &g, &used) == 2 && e->d_name[used] == '\0' &&
            p == (int)r->pid && (long)g > best)
            best = (long)g;
    }
    if (d)
        closedir(d);
    return best >= 0 &&
           snprintf(path, size, "%s/%d.%ld.trace", r->dir, (int)r->pid, best) < (int)size;
}

/* What only the wait status tells, written into the program's last image's
 * trace: a CUT block with the signal that ended it (the recorder does not
 * catch signals), or the exit status an END block left unknown (a return
 * from main: glibc's own call to exit is not one the recorder sees). */
static void finish_trace(struct trace_run *r)
{
    char path[PATH_MAX + 64];
    if (!r->status_known || !last_image(r, path, sizeof(path)))
        return;
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    struct rtm_trace_header h;
    struct {
        struct rtm_trace_block b;
        struct rtm_trace_end e;
    } end;
    if (fd < 0)
        return;
    if (pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) &&
        pread(fd, &end, sizeof(end), RTM_TRACE_END_AT) == (ssize_t)sizeof(end) &&
        memcmp(h.magic, RTM_TRACE_MAGIC, sizeof(h.magic)) == 0) {
        bool write_it = false;
        if (end.b.type == 0 && WIFSIGNALED(r->status)) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            uint64_t ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
            memset(&end, 0, sizeof(end));
            end.b.type = RTM_TRACE_CUT;
            end.b.space_bytes = end.b.payload_bytes = sizeof(end.e);
            end.e.end_ns = ns > h.start_ns ? ns - h.start_ns : 0; /* when rtmem trace saw it */
            end.e.how = WTERMSIG(r->status);
            end.e.chunks = h.chunks_so_far; /* what the recorder kept in the header page */
            end.e.unrecorded = h.unrecorded_so_far;
            write_it = true;
        } else if (end.b.type == RTM_TRACE_END && end.e.how == -1 && WIFEXITED(r->status)) {
            end.e.how = WEXITSTATUS(r->status);
            write_it = true;
        }
        if (write_it && pwrite(fd, &end, sizeof(end), RTM_TRACE_END_AT) != (ssize_t)sizeof(end))
            fprintf(stderr, "%s: cannot write how the program ended into %s: %s\n", r->prog, path,
                    strerror(errno));
    }
    close(fd);
}

/* "<pid>.<generation>.trace": true, with its numbers. */
static bool trace_name(const char *name, pid_t *pid, unsigned *gen)
{
    int p;
    unsigned g;
    int used = 0;
    if (sscanf(name, "%d.%u.trace%n", &p, &g, &used) != 2 || name[used] != '\0' || p <= 0)
        return false;
    *pid = p;
    *gen = g;
    return true;
}

/* Renames from to to: the output itself replaced, as a result is; any other
 * name only if nothing has it (RENAME_NOREPLACE: no file the run did not
 * make is ever replaced, whoever makes one meanwhile). 0, or -1
 * (reported). */
static int move(const struct trace_run *r, const char *from, const char *to, bool no_replace)
{
    int rc =
        no_replace ? renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) : rename(from, to);
    if (rc != 0 && no_replace && (errno == EINVAL || errno == ENOSYS)) {
        /* a filesystem without RENAME_NOREPLACE: a link fails on a name taken */
        rc = link(from, to);
        if (rc == 0)
            unlink(from);
    }
    if (rc == 0)
        return 0;
    if (errno == EEXIST)
        fprintf(stderr, "%s: %s exists, not made by this run: %s left there\n", r->prog, to, from);
    else
        fprintf(stderr, "%s: cannot move %s to %s: %s\n", r->prog, from, to, strerror(errno));
    return -1;
}

/* Moves each file of the directory into place (see the top of this file),
 * the program's first image's to the output. 0, or -1 (reported). */
static int move_files(struct trace_run *r)
{
    DIR *d = opendir(r->dir);
    if (!d) {
        fprintf(stderr, "%s: cannot read %s: %s\n", r->prog, r->dir, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (struct dirent *e; (e = readdir(d));) {
        pid_t pid;
        unsigned gen;
        if (!trace_name(e->d_name, &pid, &gen))
            continue;
        if (r->n_files == TRACE_MAX_FILES) {
            r->files_left++;
            continue;
        }
        struct trace_file *f = &r->files[r->n_files];
        int n = pid == r->pid && gen == 0 ? snprintf(f->path, sizeof(f->path), "%s", r->o.output)
                : gen == 0
                    ? snprintf(f->path, sizeof(f->path), "%s.%d", r->o.output, (int)pid)
                    : snprintf(f->path, sizeof(f->path), "%s.%d.%u", r->o.output, (int)pid, gen);
        char from[PATH_MAX + 300];
        snprintf(from, sizeof(from), "%s/%s", r->dir, e->d_name);
        bool main_file = pid == r->pid && gen == 0;
        if (n < 0 || (size_t)n >= sizeof(f->path)) {
            fprintf(stderr, "%s: %s: the name for it is too long; left in %s\n", r->prog, e->d_name,
                    r->dir);
            rc = -1;
        } else if (move(r, from, f->path, !main_file) != 0) {
            rc = -1;
        } else {
            f->pid = pid;
            f->generation = gen;
            r->n_files++;
        }
    }
    closedir(d);
    if (rc == 0 && r->files_left == 0 && rmdir(r->dir) != 0)
        fprintf(stderr, "%s: cannot remove %s: %s\n", r->prog, r->dir, strerror(errno));
    return rc;
}

/* The output's first file, if the program's first image wrote one. */
static const struct trace_file *main_file(const struct trace_run *r)
{
    for (size_t i = 0; i < r->n_files; i++)
        if (r->files[i].pid == r->pid && r->files[i].generation == 0)
            return &r->files[i];
    return NULL;
}

/* The run's own directory beside the output (launch.h's prepare). */
static int make_dir(void *arg)
{
    struct trace_run *r = arg;
    if (snprintf(r->dir, sizeof(r->dir), "%s/.rtmem-trace.XXXXXX",
                 strcmp(r->abs_dir, "/") == 0 ? "" : r->abs_dir) >= (int)sizeof(r->dir) ||
        !mkdtemp(r->dir)) {
        fprintf(stderr, "%s: cannot make a directory in %s for the trace: %s\n", r->prog,
                r->abs_dir, strerror(errno));
        r->dir[0] = '\0';
        return -1;
    }
    return 0;
}

enum tk_run_end trace_record(struct tk_session *s)
{
    struct trace_run *r = s->state;
    char out_dir[PATH_MAX], abs_dir[PATH_MAX];
    const char *base;
    split(r->o.output, out_dir, sizeof(out_dir), &base);
    /* An absolute path: the program may change its directory before an
     * image or a child of it opens its file. */
    if (!realpath(out_dir, abs_dir)) {
        fprintf(stderr, "%s: %s: %s\n", r->prog, out_dir, strerror(errno));
        return TK_RUN_ABORTED;
    }
    /* The signals that would end the program are blocked from before the
     * directory is made (launch.h): none can leave it behind. */
    r->abs_dir = abs_dir;
    struct tk_launch l = {
        .prog = r->prog,
        .lib = r->lib,
        .argv = s->cmd_argv,
        .prepare = make_dir,
        .set_env = set_env,
        .at = r->o.after_ns && signal_numbers[r->o.mark_signal] ? mark_after : NULL,
        .at_ns = r->o.after_ns,
        .arg = r,
    };
    if (tk_launch_run(&l) != 0) {
        if (r->dir[0])
            rmdir(r->dir);
        return TK_RUN_ABORTED;
    }
    r->pid = l.pid;
    r->status = l.status;
    r->status_known = l.status_known;
    r->signaled_by_user = l.signaled_by_user;
    finish_trace(r);
    if (move_files(r) != 0)
        return TK_RUN_ABORTED;
    const struct trace_file *mf = main_file(r);
    if (!mf) {
        if (WIFEXITED(r->status) &&
            (WEXITSTATUS(r->status) == 126 || WEXITSTATUS(r->status) == 127))
            fprintf(stderr, "%s: the program did not start: no trace\n", r->prog);
        else
            fprintf(stderr,
                    "%s: %s wrote no trace: it is not dynamically linked against the C "
                    "library, it cleared LD_PRELOAD, or it is set-user-ID (the loader then "
                    "ignores %s)\n",
                    r->prog, s->cmd_argv[0], r->lib);
        return TK_RUN_ABORTED;
    }
    char why[512];
    r->shown_path = mf->path;
    if (tk_trace_read(mf->path, &r->t, why, sizeof(why)) != 0) {
        fprintf(stderr, "%s: %s\n", r->prog, why);
        return TK_RUN_FAILED;
    }
    r->have_trace = true;
    trace_stats(&r->t, &r->st);
    return TK_RUN_PASSED;
}
