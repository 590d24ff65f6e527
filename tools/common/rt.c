/* Bench kit: real-time setup, verification and report (rt.h). */
#include "common/rt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "common/timer.h"

const char *tk_rt_policy_name(int policy)
{
    switch (policy) {
    case SCHED_OTHER: return "SCHED_OTHER";
    case SCHED_FIFO: return "SCHED_FIFO";
    case SCHED_RR: return "SCHED_RR";
#ifdef SCHED_BATCH
    case SCHED_BATCH: return "SCHED_BATCH";
#endif
#ifdef SCHED_IDLE
    case SCHED_IDLE: return "SCHED_IDLE";
#endif
    default: return "unknown";
    }
}

/* Reads one long from a one-line file; -1 and *ok = false if it cannot. */
static long read_long_file(const char *path, bool *ok)
{
    FILE *f = fopen(path, "r");
    long v = -1;
    if (!f || fscanf(f, "%ld", &v) != 1) {
        *ok = false;
        v = -1;
    }
    if (f)
        fclose(f);
    return v;
}

/* VmLck of this process in kB, or -1. */
static long read_vmlck_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long kb = -1;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "VmLck:", 6) == 0) {
            char *end;
            long v = strtol(line + 6, &end, 10);
            if (end != line + 6)
                kb = v;
            break;
        }
    }
    fclose(f);
    return kb;
}

static int highest_cpu(const cpu_set_t *set)
{
    for (int c = CPU_SETSIZE - 1; c >= 0; c--)
        if (CPU_ISSET(c, set))
            return c;
    return -1;
}

static void step_result(struct tk_rt_step *s, int rc)
{
    s->granted = rc == 0;
    s->err = rc == 0 ? 0 : errno;
}

static void do_affinity(struct tk_rt_state *st)
{
    st->affinity.requested = true;
    if (st->req.cpu < 0)
        st->req.cpu = st->have_old_mask ? highest_cpu(&st->old_mask) : -1;
    if (st->req.cpu < 0 || st->req.cpu >= CPU_SETSIZE) {
        st->affinity.err = EINVAL;
        return;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(st->req.cpu, &set);
    step_result(&st->affinity, sched_setaffinity(0, sizeof(set), &set));
}

static void do_fifo(struct tk_rt_state *st)
{
    st->fifo.requested = true;
    int lo = sched_get_priority_min(SCHED_FIFO), hi = sched_get_priority_max(SCHED_FIFO);
    if (lo < 0 || hi < 0 || st->req.priority < lo || st->req.priority > hi) {
        st->fifo.err = EINVAL;
        return;
    }
    struct sched_param sp = { .sched_priority = st->req.priority };
    step_result(&st->fifo, sched_setscheduler(0, SCHED_FIFO, &sp));
}

static void do_lock(struct tk_rt_state *st)
{
    st->lock.requested = true;
    step_result(&st->lock, mlockall(MCL_CURRENT | MCL_FUTURE));
}

/* mlockall can return 0 without locking anything (sanitizer runtimes
 * intercept it as a no-op): believe VmLck, not the return value. */
static void verify_lock(struct tk_rt_state *st)
{
    if (st->lock.granted && st->vmlck_kb == 0)
        st->lock.granted = false;
}

bool tk_rt_lock_memory(struct tk_rt_state *st)
{
    st->req.lock = true;
    do_lock(st);
    tk_rt_refresh(st);
    verify_lock(st);
    return st->lock.granted;
}

void tk_rt_refresh(struct tk_rt_state *st)
{
    st->cpu_now = sched_getcpu();
    cpu_set_t set;
    CPU_ZERO(&set);
    st->cpus_allowed = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : -1;
    st->policy = sched_getscheduler(0);
    struct sched_param sp;
    st->priority_now = sched_getparam(0, &sp) == 0 ? sp.sched_priority : -1;
    st->vmlck_kb = read_vmlck_kb();
}

struct tk_rt_request tk_rt_request_of(const struct tk_rt_opts *o, bool lock)
{
    return (struct tk_rt_request){
        .pin = !o->no_rt || o->cpu >= 0,
        .cpu = o->cpu,
        .fifo = !o->no_rt,
        .priority = o->priority,
        .lock = lock,
    };
}

int tk_rt_setup(const struct tk_rt_request *req, struct tk_rt_state *st)
{
    memset(st, 0, sizeof(*st));
    st->req = *req;

    CPU_ZERO(&st->old_mask);
    st->have_old_mask = sched_getaffinity(0, sizeof(st->old_mask), &st->old_mask) == 0;
    st->old_policy = sched_getscheduler(0);
    st->have_old_sched = st->old_policy >= 0 && sched_getparam(0, &st->old_param) == 0;

    if (req->pin)
        do_affinity(st);
    if (req->lock)
        do_lock(st);
    if (req->fifo)
        do_fifo(st);

    tk_rt_refresh(st);
    /* Verify what the calls claimed. */
    if (st->affinity.granted && st->cpus_allowed != 1)
        st->affinity.granted = false;
    if (st->fifo.granted && (st->policy != SCHED_FIFO || st->priority_now != req->priority))
        st->fifo.granted = false;
    verify_lock(st);

    bool ok = true;
    st->rt_runtime_us = read_long_file("/proc/sys/kernel/sched_rt_runtime_us", &ok);
    st->rt_period_us = read_long_file("/proc/sys/kernel/sched_rt_period_us", &ok);
    st->throttle_unknown = !ok;
    st->busy_since_ns = tk_clock_ns();

    return (st->affinity.requested && !st->affinity.granted) +
           (st->lock.requested && !st->lock.granted) + (st->fifo.requested && !st->fifo.granted);
}

void tk_rt_undo(struct tk_rt_state *st)
{
    if (st->fifo.granted && st->have_old_sched)
        (void)sched_setscheduler(0, st->old_policy, &st->old_param);
    if (st->affinity.granted && st->have_old_mask)
        (void)sched_setaffinity(0, sizeof(st->old_mask), &st->old_mask);
    if (st->lock.granted)
        (void)munlockall();
    st->fifo.granted = st->affinity.granted = st->lock.granted = false;
    tk_rt_refresh(st);
}

bool tk_rt_breather(struct tk_rt_state *st)
{
    if (st->policy != SCHED_FIFO && st->policy != SCHED_RR)
        return false;
    if (st->throttle_unknown || st->rt_runtime_us < 0 || st->rt_period_us <= 0 ||
        st->rt_runtime_us >= st->rt_period_us)
        return false;
    uint64_t now = tk_clock_ns();
    /* Run at most half the runtime between rests, and rest twice the time the
     * throttle would take away: no period can then exceed its runtime. */
    if (now - st->busy_since_ns < (uint64_t)st->rt_runtime_us * 500u)
        return false;
    uint64_t rest_ns = (uint64_t)(st->rt_period_us - st->rt_runtime_us) * 2000u;
    struct timespec ts = { .tv_sec = (time_t)(rest_ns / 1000000000u),
                           .tv_nsec = (long)(rest_ns % 1000000000u) };
    /* An interrupted sleep is still a rest; no need to resume it. */
    (void)nanosleep(&ts, NULL);
    st->busy_since_ns = tk_clock_ns();
    st->rests++;
    return true;
}

static void print_refusal(FILE *f, const char *what, const struct tk_rt_step *s)
{
    if (s->requested && !s->granted)
        fprintf(f, "  not permitted: %s: %s\n", what,
                s->err ? strerror(s->err) : "the call succeeded, yet not in force when read back");
}

void tk_rt_print(FILE *f, const struct tk_rt_state *st)
{
    char what[96];
    fprintf(f, "real-time setup (requested -> in force):\n");
    if (st->affinity.requested)
        fprintf(f, "  cpu affinity : cpu %d -> %s; running on cpu %d, %d cpu(s) allowed\n",
                st->req.cpu, st->affinity.granted ? "pinned" : "NOT pinned", st->cpu_now,
                st->cpus_allowed);
    else
        fprintf(f, "  cpu affinity : not requested; running on cpu %d, %d cpu(s) allowed\n",
                st->cpu_now, st->cpus_allowed);
    if (st->fifo.requested)
        fprintf(f, "  scheduling   : SCHED_FIFO %d -> %s %d\n", st->req.priority,
                tk_rt_policy_name(st->policy), st->priority_now);
    else
        fprintf(f, "  scheduling   : not requested; %s %d\n", tk_rt_policy_name(st->policy),
                st->priority_now);
    fprintf(f, "  memory lock  : %s -> %s; VmLck %ld kB\n",
            st->lock.requested ? "mlockall(MCL_CURRENT|MCL_FUTURE)" : "not requested",
            st->lock.granted ? "locked" : "NOT locked", st->vmlck_kb);
    if (st->throttle_unknown)
        fprintf(f, "  rt throttling: unknown (sched_rt_*_us unreadable)\n");
    else
        fprintf(f, "  rt throttling: sched_rt_runtime_us %ld of sched_rt_period_us %ld\n",
                st->rt_runtime_us, st->rt_period_us);
    snprintf(what, sizeof(what), "pin to cpu %d (sched_setaffinity)", st->req.cpu);
    print_refusal(f, what, &st->affinity);
    print_refusal(f, "mlockall(MCL_CURRENT|MCL_FUTURE)", &st->lock);
    snprintf(what, sizeof(what), "SCHED_FIFO priority %d (sched_setscheduler)", st->req.priority);
    print_refusal(f, what, &st->fifo);
}

static void step_json(struct tk_json *j, const char *key, const struct tk_rt_step *s)
{
    tk_json_key(j, key);
    tk_json_begin_object(j);
    tk_json_kv_bool(j, "requested", s->requested);
    tk_json_kv_bool(j, "granted", s->granted);
    if (s->requested && !s->granted)
        tk_json_kv_string(
            j, "error", s->err ? strerror(s->err) : "call succeeded, not in force when read back");
    else
        tk_json_kv_string(j, "error", NULL);
    tk_json_end_object(j);
}

void tk_rt_json(struct tk_json *j, const struct tk_rt_state *st)
{
    tk_json_begin_object(j);
    tk_json_kv_int(j, "cpu_requested", st->affinity.requested ? st->req.cpu : -1);
    step_json(j, "affinity", &st->affinity);
    tk_json_kv_int(j, "cpu_now", st->cpu_now);
    tk_json_kv_int(j, "cpus_allowed", st->cpus_allowed);
    tk_json_kv_int(j, "priority_requested", st->fifo.requested ? st->req.priority : -1);
    step_json(j, "fifo", &st->fifo);
    tk_json_kv_string(j, "policy", tk_rt_policy_name(st->policy));
    tk_json_kv_int(j, "priority", st->priority_now);
    step_json(j, "mlockall", &st->lock);
    tk_json_kv_int(j, "vmlck_kb", st->vmlck_kb);
    tk_json_kv_int(j, "sched_rt_runtime_us", st->rt_runtime_us);
    tk_json_kv_int(j, "sched_rt_period_us", st->rt_period_us);
    tk_json_kv_uint(j, "throttle_rests", st->rests);
    tk_json_end_object(j);
}

int tk_rt_pinned_cpu(int asked)
{
    if (asked >= 0)
        return asked;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        for (int c = CPU_SETSIZE - 1; c >= 0; c--)
            if (CPU_ISSET(c, &set))
                return c;
    int c = sched_getcpu();
    return c >= 0 ? c : 0;
}
