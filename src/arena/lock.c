/* Arenas: the lock (mlock), checked before mapping and judged after. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "internal.h"

/* The rule mlock applies (mm/mlock.c): without CAP_IPC_LOCK, a limit of 0
 * refuses every lock (EPERM), and the pages locked already plus the new
 * ones must stay within RLIMIT_MEMLOCK (ENOMEM). Returns that errno, or 0
 * when the lock is within the rule (or the rule cannot be read). */
static int memlock_rule(const struct rtm__arena_plan *p, const struct rtm__arena_status *st,
                        struct rlimit *rl)
{
    if (!st->ok || st->cap_ipc_lock || getrlimit(RLIMIT_MEMLOCK, rl) != 0 ||
        rl->rlim_cur == RLIM_INFINITY)
        return 0;
    if (rl->rlim_cur == 0)
        return EPERM;
    uint64_t limit_pages = (uint64_t)rl->rlim_cur / p->base_page;
    uint64_t pages = st->vmlck / p->base_page + p->size / p->base_page;
    return pages > limit_pages ? ENOMEM : 0;
}

/* What the rule refused, and how to get it. cap_shown: CapEff shows
 * CAP_IPC_LOCK, which then does not exempt the process. */
static void memlock_text(char *buf, size_t size, const struct rtm__arena_plan *p, int err,
                         const struct rtm__arena_status *st, const struct rlimit *rl,
                         bool cap_shown)
{
    char b1[32], b2[32], b3[32];
    const char *how = "raise the limit (ulimit -l; memlock in /etc/security/limits.conf; "
                      "LimitMEMLOCK= for a systemd service) or grant CAP_IPC_LOCK";
    const char *cap = cap_shown ? "CAP_IPC_LOCK shows in CapEff but does not exempt the process "
                                  "(it is held in a user namespace only)"
                                : "the process lacks CAP_IPC_LOCK";
    if (err == EPERM)
        snprintf(buf, size, "mlock refused: RLIMIT_MEMLOCK is 0 and %s: %s", cap, how);
    else
        snprintf(buf, size,
                 "mlock refused: RLIMIT_MEMLOCK is %s, %s asked (%s locked already), and %s: %s",
                 rtm__arena_bytes_text((uint64_t)rl->rlim_cur, b1, sizeof b1),
                 rtm__arena_bytes_text(p->size, b2, sizeof b2),
                 rtm__arena_bytes_text(st->vmlck, b3, sizeof b3), cap, how);
}

/* Whether RLIMIT_MEMLOCK explains an mlock that failed with ENOMEM, which
 * is also what mlock says when a page could not be faulted in (past the end
 * of what the object maps): only the first is a refusal of the lock. */
static bool limit_explains(struct rtm_arena *a, const struct rtm__arena_plan *p,
                           const struct rtm__arena_status *st, struct rlimit *rl)
{
    if (getrlimit(RLIMIT_MEMLOCK, rl) != 0 || rl->rlim_cur == RLIM_INFINITY)
        return false;
    uint64_t limit_pages = (uint64_t)rl->rlim_cur / p->base_page;
    if (st->ok && st->vmlck / p->base_page + p->size / p->base_page <= limit_pages)
        return false;
    if (st->ok && !st->cap_ipc_lock)
        return true;
    /* Beyond the limit with CAP_IPC_LOCK in CapEff (a user namespace's,
     * which does not exempt), or VmLck unknown: the limit explains it if
     * every page can be faulted in, as mlock would fault it. */
    bool write = p->writable && !p->shared;
    if (madvise(a->base, p->size, write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ) == 0)
        return true;
    return errno == EINVAL; /* no MADV_POPULATE_* (before Linux 5.14): cannot tell */
}

/* A refusal: fails the open under _MUST, is recorded under _TRY. */
static int refuse(struct rtm_arena *a, const struct rtm__arena_plan *p, int err, const char *text)
{
    if (p->cfg->lock == RTM_ARENA_LOCK_MUST)
        return rtm__arena_fail(a, err, "%s", text);
    a->report.lock_errno = err;
    rtm__arena_warn(a, "%s", text);
    return 0;
}

int rtm__arena_lock_check(struct rtm_arena *a, const struct rtm__arena_plan *p, bool *skip)
{
    *skip = false;
    if (p->cfg->lock == RTM_ARENA_LOCK_NONE)
        return 0;
    struct rtm__arena_status st;
    struct rlimit rl;
    rtm__arena_read_status(&st);
    int err = memlock_rule(p, &st, &rl);
    if (!err)
        return 0;
    char text[RTM_ARENA_MESSAGE_BYTES];
    memlock_text(text, sizeof text, p, err, &st, &rl, false);
    *skip = true;
    return refuse(a, p, err, text);
}

int rtm__arena_lock(struct rtm_arena *a, const struct rtm__arena_plan *p)
{
    if (p->cfg->lock == RTM_ARENA_LOCK_NONE)
        return 0;
    if (mlock(a->base, p->size) == 0)
        return 0;
    int err = errno;
    /* A lock that failed while faulting pages in leaves the range marked
     * locked: undo it, so that refused means unlocked. */
    munlock(a->base, p->size);
    char text[RTM_ARENA_MESSAGE_BYTES], b[32];
    const char *size = rtm__arena_bytes_text(p->size, b, sizeof b);
    struct rtm__arena_status st;
    struct rlimit rl;
    rtm__arena_read_status(&st);
    switch (err) {
    case ENOMEM:
        if (limit_explains(a, p, &st, &rl)) {
            /* Another thread locked memory since the check, or the check
             * trusted a capability that does not exempt. */
            memlock_text(text, sizeof text, p, err, &st, &rl, st.ok && st.cap_ipc_lock);
            return refuse(a, p, err, text);
        }
        /* Memory that is not there: no lock refused, whatever was asked. */
        return rtm__arena_fail(a, err,
                               "mlock of %s of %s could not fault in every page (ENOMEM): part "
                               "of the range lies past the end of what it maps, or its "
                               "filesystem (tmpfs, disk) is full",
                               size, p->what);
    case EPERM:
        if (memlock_rule(p, &st, &rl) == EPERM)
            memlock_text(text, sizeof text, p, err, &st, &rl, false);
        else
            snprintf(text, sizeof text, "mlock of %s of %s refused (EPERM)", size, p->what);
        return refuse(a, p, err, text);
    case EAGAIN:
        snprintf(text, sizeof text,
                 "mlock of %s of %s locked only part of it (EAGAIN): memory is short", size,
                 p->what);
        return refuse(a, p, err, text);
    default:
        return rtm__arena_fail(a, err, "mlock of %s of %s failed: %s", size, p->what,
                               strerror(err));
    }
}

void rtm__arena_lock_judge(struct rtm_arena *a, const struct rtm__arena_plan *p,
                           const struct rtm__arena_smaps *sm)
{
    struct rtm_arena_report *r = &a->report;
    bool asked = p->cfg->lock != RTM_ARENA_LOCK_NONE;
    bool mlock_ok = asked && r->lock_errno == 0;
    /* The mapping's own flag first: set by this mlock, or by an
     * mlockall(MCL_FUTURE) in force whatever was asked here; with
     * MCL_ONFAULT, a page is locked only once faulted in. */
    if (sm->found && sm->locked && sm->lock_on_fault && sm->rss < p->size) {
        char b1[32], b2[32];
        r->lock_state = RTM_ARENA_LOCKED_ON_FAULT;
        rtm__arena_warn(a,
                        "locked on fault (mlockall(MCL_FUTURE | MCL_ONFAULT) in force): %s of "
                        "%s present, and each other page faults at its first touch; prefault "
                        "(RTM_ARENA_PREFAULT_TOUCH) or lock (RTM_ARENA_LOCK_MUST) to have them "
                        "all now",
                        rtm__arena_bytes_text(sm->rss, b1, sizeof b1),
                        rtm__arena_bytes_text(p->size, b2, sizeof b2));
        return;
    }
    if (sm->found ? sm->locked : mlock_ok) {
        r->lock_state = RTM_ARENA_LOCKED;
        return;
    }
    r->lock_state = RTM_ARENA_UNLOCKED;
    if (!mlock_ok)
        return;
    if (sm->hugetlb) {
        r->lock_state = RTM_ARENA_LOCKED_HUGETLB;
        return;
    }
    r->lock_state = RTM_ARENA_LOCK_IGNORED;
    if (sm->io_pfn)
        rtm__arena_warn(a,
                        "mlock succeeded but locked nothing (VmLck +0): %s is a VM_IO/VM_PFNMAP "
                        "mapping, which the kernel does not lock; whether its pages can move "
                        "is up to its driver (memory reserved from the kernel never moves)",
                        p->what);
    else
        rtm__arena_warn(a, "mlock succeeded but locked nothing (VmLck +0, no VM_LOCKED on the "
                           "mapping): mlock was intercepted, as sanitizer runtimes (ASan, TSan) "
                           "make it a no-op; the arena is NOT locked");
}
