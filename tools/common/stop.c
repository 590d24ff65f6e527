/* Bench kit: SIGINT and SIGTERM as a request to end a run early (stop.h). */
#include "common/stop.h"

#include <string.h>

#include "common/cleanup.h"

static const int stop_signals[] = { SIGINT, SIGTERM };
#define N_STOP (sizeof(stop_signals) / sizeof(stop_signals[0]))

atomic_bool tk_stop_flag;
static volatile sig_atomic_t requested_by;

static void on_stop(int sig)
{
    requested_by = sig;
    atomic_store(&tk_stop_flag, true);
}

void tk_stop_catch(struct tk_stop_saved *saved)
{
    /* The kit's cleanup in place first: installed later (by a result file,
     * a child, a load), it would take SIGINT and SIGTERM from this one. */
    tk_cleanup_install();
    atomic_store(&tk_stop_flag, false);
    requested_by = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < N_STOP; i++) {
        sigaction(stop_signals[i], NULL, &saved->old[i]);
        if (saved->old[i].sa_handler != SIG_IGN)
            sigaction(stop_signals[i], &sa, NULL);
    }
}

void tk_stop_release(const struct tk_stop_saved *saved)
{
    for (size_t i = 0; i < N_STOP; i++)
        sigaction(stop_signals[i], &saved->old[i], NULL);
}

int tk_stop_signal(void)
{
    return requested_by;
}

const char *tk_stop_name(void)
{
    return requested_by == SIGTERM ? "SIGTERM" : requested_by == SIGINT ? "SIGINT" : "";
}
