/*
 * `rtmem shm --processes 2`: a second process reads what the writer wrote.
 *
 * It is a child (tk_child_run: its own process group, under a watchdog,
 * killed and reaped on every path, Ctrl-C included). Where the mechanism
 * has a name (a file, a POSIX shm object) it opens the object by that name
 * as a new arena (RTM_ARENA_EXISTING, read-only): a mapping of its own,
 * the way an unrelated process would attach. Otherwise (memfd, SysV
 * IPC_PRIVATE, /dev/zero, whose objects only a descriptor, an id or a fork
 * reach) it reads the mapping it inherited: the kernel does not copy a
 * shared mapping's page table entries at fork, so its first touch faults
 * as an attach would. It touches every page once (read), timed, with its
 * own faults, then checks that the whole region sums to what the writer's
 * did. Private mechanisms are not shared: no reader.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/child.h"
#include "shm.h"

/* No progress for this long: the reader is killed. Its work is one pass
 * and a checksum over at most 4 GiB. */
#define READER_TIMEOUT_S 120.0

/* The test hook (docs/shm.md): "pause" makes the reader wait, once
 * attached, until it is killed; "crash" makes it die of SIGSEGV there. */
#define READER_HOOK_ENV "RTMEM_SHM_TEST_READER"

static void test_hook(void)
{
    const char *hook = getenv(READER_HOOK_ENV);
    if (!hook)
        return;
    if (strcmp(hook, "crash") == 0)
        raise(SIGSEGV);
    if (strcmp(hook, "pause") == 0)
        for (;;)
            pause();
}

/* In memory shared with the child. */
struct reader_shared {
    tk_child_mark mark;
    struct shm_reader out;
};

struct reader_job {
    struct reader_shared *sh;
    const struct shm_row *row;
    struct shm_region *r;
    enum shm_mech_id m;
};

static int reader_main(void *arg)
{
    struct reader_job *job = arg;
    struct shm_reader *out = &job->sh->out;
    struct rtm_arena own;
    memset(&own, 0, sizeof(own));
    const void *base = job->r->a.base;
    size_t bytes = job->r->a.size_bytes, step = job->r->a.page_bytes;
    uint64_t minor0, major0;
    shm_faults(&minor0, &major0);
    uint64_t t0 = tk_clock_ns();
    if (job->r->name[0]) {
        struct rtm_arena_config cfg = {
            .source = shm_mechs[job->m].source,
            .size_bytes = bytes,
            .name = job->r->name,
            .flags = RTM_ARENA_EXISTING | RTM_ARENA_READ_ONLY,
        };
        int rc = rtm_arena_open(&own, &cfg);
        if (rc != 0) {
            snprintf(out->why, sizeof(out->why), "cannot attach by name: %.500s",
                     own.message[0] ? own.message : strerror(-rc));
            return 1;
        }
        base = own.base;
        out->by_name = true;
    }
    test_hook();
    const volatile uint8_t *p = base;
    uint64_t sum = 0;
    for (size_t off = 0; off < bytes; off += step)
        sum += p[off];
    out->touch_ns = (double)(tk_clock_ns() - t0);
    shm_faults(&out->minor_faults, &out->major_faults);
    out->minor_faults -= minor0;
    out->major_faults -= major0;
    out->pages = bytes / step;
    tk_child_beat(&job->sh->mark);
    volatile uint64_t sink = sum; /* the touch's loads are kept */
    (void)sink;
    out->checksum = shm_checksum(base, bytes);
    out->matched = out->checksum == job->row->checksum;
    out->done = true;
    if (own.base)
        rtm_arena_close(&own);
    return out->matched ? 0 : 1;
}

void shm_read_in_child(struct shm *sh, struct shm_row *row, struct shm_region *r,
                       enum shm_mech_id m)
{
    struct shm_reader *out = &row->reader;
    memset(out, 0, sizeof(*out));
    (void)sh;
    if (!shm_mechs[m].shared) {
        snprintf(out->why, sizeof(out->why), "a private mapping: no other process sees it");
        return;
    }
    struct reader_shared *shared = tk_shared_alloc(sizeof(*shared));
    if (!shared) {
        snprintf(out->why, sizeof(out->why), "no memory to share with the reader");
        return;
    }
    struct reader_job job = { shared, row, r, m };
    struct tk_child_opts o = { .timeout_s = READER_TIMEOUT_S };
    struct tk_child_result res;
    tk_child_run(reader_main, &job, &shared->mark, &o, &res);
    *out = shared->out;
    char sig[64];
    switch (res.end) {
    case TK_CHILD_EXITED:
        if (!out->done && !out->why[0])
            snprintf(out->why, sizeof(out->why), "the reader exited (%d) without a result",
                     res.code);
        else if (out->done && !out->matched)
            snprintf(out->why, sizeof(out->why),
                     "the reader read other contents than the writer wrote");
        break;
    case TK_CHILD_KILLED:
        snprintf(out->why, sizeof(out->why), "the reader died of %s",
                 tk_signal_describe(res.code, sig, sizeof(sig)));
        out->done = false;
        break;
    case TK_CHILD_TIMED_OUT:
        snprintf(out->why, sizeof(out->why), "the reader made no progress for %.0f s: killed",
                 READER_TIMEOUT_S);
        out->done = false;
        break;
    case TK_CHILD_NOT_STARTED:
        snprintf(out->why, sizeof(out->why), "fork failed: %s", strerror(res.code));
        break;
    }
    tk_shared_free(shared, sizeof(*shared));
}
