/*
 * Bench kit: a run of this program under valgrind (grind.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/child.h"
#include "common/cleanup.h"
#include "common/describe.h"
#include "common/grind.h"

/* A build whose sanitizer replaces malloc and maps shadow memory cannot
 * run under valgrind. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GRIND_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define GRIND_SANITIZED 1
#endif
#endif

static void version_of(struct tk_grind *g)
{
    g->version[0] = '\0';
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return;
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        if (dup2(fds[1], STDOUT_FILENO) >= 0 && null >= 0) {
            dup2(null, STDIN_FILENO);
            dup2(null, STDERR_FILENO);
            execl(g->valgrind, g->valgrind, "--version", (char *)NULL);
        }
        _exit(127);
    }
    close(fds[1]);
    if (pid > 0) {
        ssize_t n = read(fds[0], g->version, sizeof(g->version) - 1);
        g->version[n > 0 ? n : 0] = '\0';
        g->version[strcspn(g->version, "\n")] = '\0';
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    close(fds[0]);
}

int tk_grind_find(struct tk_grind *g, char *why, size_t why_len)
{
    memset(g, 0, sizeof(*g));
    g->dir_slot = g->slot[0] = g->slot[1] = g->slot[2] = -1;
#ifdef GRIND_SANITIZED
    snprintf(why, why_len, "this rtmem is built with a sanitizer, which cannot run under valgrind");
    return -1;
#endif
    /* valgrind runs programs of its own machine: under qemu-user the
     * valgrind found is the host's, and this program is not one of its */
    char emulated[96];
    tk_emulation_detect(emulated, sizeof(emulated));
    if (emulated[0]) {
        snprintf(why, why_len, "under an emulator (%.80s)", emulated);
        return -1;
    }
    if (!tk_on_path("valgrind", g->valgrind)) {
        snprintf(why, why_len,
                 "valgrind is not installed (scripts/ensure-deps.sh valgrind installs it)");
        return -1;
    }
    version_of(g);
    return 0;
}

static void set_names(struct tk_grind *g)
{
    snprintf(g->out, sizeof(g->out), "%s/valgrind.out", g->dir);
    snprintf(g->stdout_path, sizeof(g->stdout_path), "%s/stdout", g->dir);
    snprintf(g->log, sizeof(g->log), "%s/valgrind.log", g->dir);
}

void tk_grind_remove(struct tk_grind *g)
{
    if (!g->made)
        return;
    sigset_t old;
    tk_cleanup_block(&old);
    unlink(g->out);
    unlink(g->stdout_path);
    unlink(g->log);
    /* with whatever valgrind left in it (its TMPDIR) */
    (void)tk_cleanup_remove_scratch_dir(g->dir);
    for (int i = 0; i < 3; i++)
        if (g->slot[i] >= 0)
            tk_cleanup_forget_file(g->slot[i]);
    if (g->dir_slot >= 0)
        tk_cleanup_forget_dir(g->dir_slot);
    g->dir_slot = g->slot[0] = g->slot[1] = g->slot[2] = -1;
    g->made = false;
    tk_cleanup_restore(&old);
}

int tk_grind_files(struct tk_grind *g, const char *tool, char *why, size_t why_len)
{
    /* this process's executable as the kernel holds it: valgrind opens it
     * before this process can end */
    snprintf(g->exe, sizeof(g->exe), "/proc/%ld/exe", (long)getpid());
    if (access(g->exe, X_OK) != 0) {
        snprintf(why, why_len, "cannot find rtmem's own executable");
        return -1;
    }
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    if (snprintf(g->dir, sizeof(g->dir), "%s/rtmem-%s-XXXXXX", tmp, tool) >=
        (int)sizeof(g->dir) - 32) {
        snprintf(why, why_len, "TMPDIR is too long");
        return -1;
    }
    sigset_t old;
    tk_cleanup_install();
    tk_cleanup_block(&old);
    int err = mkdtemp(g->dir) ? 0 : errno;
    if (!err) {
        g->made = true;
        set_names(g); /* from the name mkdtemp made */
        g->dir_slot = tk_cleanup_add_scratch_dir(g->dir);
        g->slot[0] = tk_cleanup_add_file(g->out);
        g->slot[1] = tk_cleanup_add_file(g->stdout_path);
        g->slot[2] = tk_cleanup_add_file(g->log);
        if (g->dir_slot < 0 || g->slot[0] < 0 || g->slot[1] < 0 || g->slot[2] < 0) {
            tk_cleanup_restore(&old);
            tk_grind_remove(g);
            snprintf(why, why_len, "no room to register the counted run's files for removal");
            return -1;
        }
    }
    tk_cleanup_restore(&old);
    if (err) {
        snprintf(why, why_len, "cannot make a directory under %s: %s", tmp, strerror(err));
        return -1;
    }
    return 0;
}

const char *tk_grind_out_option(const struct tk_grind *g, char *buf, size_t size)
{
    snprintf(buf, size, "--callgrind-out-file=%s", g->out);
    return buf;
}

void tk_grind_log_tail(const struct tk_grind *g, char *buf, size_t size)
{
    buf[0] = '\0';
    FILE *l = fopen(g->log, "r");
    if (!l)
        return;
    char line[256];
    bool debuginfo = false;
    while (fgets(line, sizeof(line), l)) {
        line[strcspn(line, "\n")] = '\0';
        /* valgrind's own lines open with "==PID== " */
        char *text = line;
        if (text[0] == '=' && text[1] == '=' && strstr(text + 2, "== "))
            text = strstr(text + 2, "== ") + 3;
        text += strspn(text, " ");
        if (!text[0] || debuginfo)
            continue;
        snprintf(buf, size, "%s", text);
        /* a debug-information reader that gives up says why first */
        debuginfo = strstr(text, "debuginfo") != NULL;
    }
    fclose(l);
    if (debuginfo && strlen(buf) + 60 < size)
        strcat(buf, " (a valgrind older than the compiler that built rtmem?)");
}

#define MAX_ARGS 64

struct exec_args {
    const struct tk_grind *g;
    const char *const *vg_args, *const *args;
    const char *env, *value;
};

/* In the forked child: standard output and error to their files, then
 * valgrind. Returns only if that fails. */
static int exec_valgrind(void *arg)
{
    const struct exec_args *a = arg;
    const struct tk_grind *g = a->g;
    int out = open(g->stdout_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int log = open(g->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (out < 0 || log < 0 || in < 0 || dup2(out, STDOUT_FILENO) < 0 ||
        dup2(log, STDERR_FILENO) < 0 || dup2(in, STDIN_FILENO) < 0)
        return 126;
    /* no vgcore file in the user's directory if the client crashes */
    struct rlimit no_core = { 0, 0 };
    (void)setrlimit(RLIMIT_CORE, &no_core);
    const char *argv[MAX_ARGS + 1];
    size_t n = 0;
    argv[n++] = g->valgrind;
    argv[n++] = "--vgdb=no";
    for (size_t i = 0; a->vg_args[i] && n < MAX_ARGS - 1; i++)
        argv[n++] = a->vg_args[i];
    argv[n++] = g->exe;
    for (size_t i = 0; a->args[i] && n < MAX_ARGS; i++)
        argv[n++] = a->args[i];
    argv[n] = NULL;
    /* valgrind's own temporary files (the client's cmdline and auxv) in the
     * private directory: made before valgrind unlinks them, they stay if it
     * is killed in between, and go with the directory */
    if ((a->env && setenv(a->env, a->value, 1) != 0) || setenv("TMPDIR", g->dir, 1) != 0)
        return 126;
    execv(g->valgrind, (char *const *)(uintptr_t)argv);
    return 127;
}

int tk_grind_run(struct tk_grind *g, const char *const *vg_args, const char *const *args,
                 const char *env, const char *value, double timeout_s, char *why, size_t why_len)
{
    struct exec_args a = { g, vg_args, args, env, value };
    struct tk_child_opts co = { .timeout_s = timeout_s };
    struct tk_child_result r;
    tk_child_run(exec_valgrind, &a, NULL, &co, &r);
    g->seconds = r.seconds;
    if (r.end == TK_CHILD_EXITED && r.code == 0)
        return 0;
    char sig[64], tail[256];
    if (r.end == TK_CHILD_KILLED)
        snprintf(why, why_len, "valgrind died of %s", tk_signal_describe(r.code, sig, sizeof(sig)));
    else if (r.end == TK_CHILD_TIMED_OUT)
        snprintf(why, why_len, "valgrind took more than %.0f s", timeout_s);
    else if (r.end == TK_CHILD_NOT_STARTED)
        snprintf(why, why_len, "cannot fork: %s", strerror(r.code));
    else if (r.code >= 126)
        snprintf(why, why_len, "%.500s could not be started", g->valgrind);
    else {
        tk_grind_log_tail(g, tail, sizeof(tail));
        snprintf(why, why_len, "valgrind exited with status %d: %s", r.code,
                 tail[0] ? tail : "(no message)");
    }
    return -1;
}

int tk_grind_totals(const char *path, const char *event, uint64_t *out)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[1024];
    int index = -1, found = -1;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "events:", 7) == 0) {
            index = -1;
            int i = 0;
            for (char *tok = strtok(line + 7, " \n"); tok; tok = strtok(NULL, " \n"), i++)
                if (strcmp(tok, event) == 0)
                    index = i;
        } else if (strncmp(line, "totals:", 7) == 0 && index >= 0) {
            int i = 0;
            for (char *tok = strtok(line + 7, " \n"); tok; tok = strtok(NULL, " \n"), i++)
                if (i == index) {
                    *out = strtoull(tok, NULL, 10);
                    found = 0;
                }
        }
    }
    fclose(f);
    return found;
}
