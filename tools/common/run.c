/* Bench kit: the start and the end of a measured run (run.h). */
#include "common/run.h"

#include <errno.h>
#include <string.h>

int tk_run_setup(const struct tk_run_opts *o, struct tk_rt_state *rt, struct tk_timer *t,
                 struct tk_machine *mf)
{
    /* Memory is locked by the tool, once mapped (rt.h). */
    struct tk_rt_request req = tk_rt_request_of(&o->rt, false);
    tk_rt_setup(&req, rt);
    int rc = tk_timer_init(t, o->calibration_ms);
    if (rc != 0) {
        fprintf(stderr, "%s: timer setup failed: %s\n", o->prog, strerror(-rc));
        return rc;
    }
    tk_machine_collect(mf);
    return 0;
}
