/*
 * `rtmem bw`: where glibc's memcpy changes strategy, read at run time.
 *
 * On x86-64, glibc's memcpy (memmove-vec-unaligned-erms) copies with
 * vector loads and stores up to glibc.cpu.x86_rep_movsb_threshold, with
 * `rep movsb` from there up to a stop threshold, with vector loops again
 * beyond it, and with non-temporal stores (which bypass the caches) from
 * glibc.cpu.x86_non_temporal_threshold on. The tunables' values, after
 * GLIBC_TUNABLES and the CPU's own defaults, are what the dynamic loader
 * prints with --list-tunables (glibc 2.33 and later): the tool runs it as
 * a child process and reads its output. The stop of rep movsb is no
 * tunable: since glibc 2.33 it is the L2 size on AMD CPUs and the
 * non-temporal threshold elsewhere (sysdeps/x86/dl-cacheinfo.h), which
 * the report says is derived, not read.
 *
 * Elsewhere (other architectures, other C libraries) no threshold is
 * known, and the report says so.
 */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__GLIBC__)
#include <gnu/libc-version.h>
#endif
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "bw.h"
#include "common/cleanup.h"

extern char **environ;

/* The most of --list-tunables' output read: a few dozen lines. */
#define TUNABLES_MAX 16384

static int find_ldso(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct bw_glibc *g = data;
    const char *name = info->dlpi_name;
    const char *base = name ? strrchr(name, '/') : NULL;
    if (base && strncmp(base + 1, "ld-", 3) == 0 && strstr(base, ".so")) {
        snprintf(g->ldso, sizeof(g->ldso), "%s", name);
        return 1;
    }
    return 0;
}

/* The value of tunable name in text, 0 if absent. */
static uint64_t tunable(const char *text, const char *name)
{
    const char *p = strstr(text, name);
    if (!p)
        return 0;
    p += strlen(name);
    if (*p++ != ':')
        return 0;
    return strtoull(p, NULL, 0);
}

/* Runs `ldso --list-tunables` and reads its output into buf. 0, or -1 with
 * g->why. */
static int list_tunables(struct bw_glibc *g, char *buf, size_t size)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        snprintf(g->why, sizeof(g->why), "pipe: %s", strerror(errno));
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawnattr_init(&at);
    /* Its own process group, as the kit's cleanup kills children. */
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
    char *argv[] = { g->ldso, "--list-tunables", NULL };
    sigset_t old;
    tk_cleanup_block(&old);
    pid_t pid;
    int rc = posix_spawn(&pid, g->ldso, &fa, &at, argv, environ);
    int slot = rc == 0 ? tk_cleanup_add_child(pid) : -1;
    tk_cleanup_restore(&old);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        snprintf(g->why, sizeof(g->why), "cannot run %s: %s", g->ldso, strerror(rc));
        return -1;
    }
    size_t len = 0;
    for (;;) {
        ssize_t k = read(fds[0], buf + len, size - 1 - len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        len += (size_t)k;
        if (len == size - 1)
            break;
    }
    buf[len] = '\0';
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    tk_cleanup_forget_child(slot);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || len == 0) {
        snprintf(g->why, sizeof(g->why), "%s --list-tunables gave nothing (glibc before 2.33?)",
                 g->ldso);
        return -1;
    }
    return 0;
}

static bool amd_cpu(void)
{
#if defined(__x86_64__)
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d))
        return false;
    char v[13];
    memcpy(v, &b, 4);
    memcpy(v + 4, &d, 4);
    memcpy(v + 8, &c, 4);
    v[12] = '\0';
    return strcmp(v, "AuthenticAMD") == 0 || strcmp(v, "HygonGenuine") == 0;
#else
    return false;
#endif
}

void bw_glibc_read(struct bw_glibc *g, const struct tk_caches *c)
{
    memset(g, 0, sizeof(*g));
    g->stop_basis = "unknown";
#if defined(__GLIBC__)
    snprintf(g->version, sizeof(g->version), "%s", gnu_get_libc_version());
#else
    snprintf(g->why, sizeof(g->why), "not glibc: no memcpy thresholds known");
    return;
#endif
#if !defined(__x86_64__)
    snprintf(g->why, sizeof(g->why), "glibc's memcpy thresholds are tunables on x86-64 only");
    return;
#endif
    dl_iterate_phdr(find_ldso, g);
    if (!g->ldso[0]) {
        snprintf(g->why, sizeof(g->why), "the dynamic loader is not mapped (a static build)");
        return;
    }
    char *text = malloc(TUNABLES_MAX);
    if (!text) {
        snprintf(g->why, sizeof(g->why), "out of memory");
        return;
    }
    if (list_tunables(g, text, TUNABLES_MAX) == 0) {
        g->rep_movsb = tunable(text, "glibc.cpu.x86_rep_movsb_threshold");
        g->non_temporal = tunable(text, "glibc.cpu.x86_non_temporal_threshold");
        g->shared_cache = tunable(text, "glibc.cpu.x86_shared_cache_size");
        g->data_cache = tunable(text, "glibc.cpu.x86_data_cache_size");
        g->read = g->non_temporal > 0;
        if (!g->read)
            snprintf(g->why, sizeof(g->why), "%s --list-tunables lists no x86 threshold", g->ldso);
    }
    free(text);
    if (!g->read)
        return;
    const struct tk_cache *l2 = tk_caches_level(c, 2);
    if (amd_cpu() && l2 && l2->bytes) {
        g->movsb_stop = l2->bytes;
        g->stop_basis = "the L2 size, where glibc 2.33+ stops it on AMD: derived, not a tunable";
    } else if (!amd_cpu()) {
        g->movsb_stop = g->non_temporal;
        g->stop_basis =
            "the non-temporal threshold, where glibc 2.33+ stops it: derived, not a tunable";
    }
}
