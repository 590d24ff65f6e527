/*
 * `rtmem memcheck`: the names and number formats every file shares: the
 * phases' names, a heap or block size as smokey writes it, the width of
 * the allocator column, a JSON number rounded to its grain.
 */
#include <math.h>
#include <string.h>

#include "memcheck.h"

static const char *const phase_names[MC_PHASES] = { "pow2", "random", "pattern", "churn" };

const char *mc_phase_name(enum mc_phase phase)
{
    return phase < MC_PHASES ? phase_names[phase] : "?";
}

int mc_name_width(const struct memcheck *m)
{
    size_t w = 9;
    for (size_t i = 0; i < m->n_t; i++)
        if (strlen(m->t[i].a.name) > w)
            w = strlen(m->t[i].a.name);
    return (int)w;
}

const char *mc_fmt_size(char *buf, size_t size, size_t bytes)
{
    if (bytes >= 1024 && bytes % 1024 == 0)
        snprintf(buf, size, "%zuk", bytes / 1024);
    else
        snprintf(buf, size, "%zu", bytes);
    return buf;
}

/* Times are rounded to 0.1 ns (the timer's grain is several ns),
 * percentages to 0.001. */
void mc_json_num(struct tk_json *j, double v, double grain)
{
    tk_json_double(j, isfinite(v) ? round(v / grain) * grain : v);
}
