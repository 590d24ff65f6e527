/*
 * Bench kit: the list of allocators a run measures, and the one --kinds
 * parser every tool uses.
 *
 * The names a user can give, in the canonical order:
 *   - every rtmem kind (rtm_heap_kinds()), each followed by "<kind>-none",
 *     the same kind created at hardening level none;
 *   - "tlsf(typed)" and "halffit(typed)" (aliases "tlsf-typed",
 *     "halffit-typed"): the kind through its typed API, rtm_<kind>_*
 *     (tk_typed_kinds());
 *   - "glibc", then "glibc-rt" (glibc tuned for real time, common/alloc.h;
 *     skipped in a build whose sanitizer replaces malloc);
 *   - the peers, tk_peer_names() (loaded with dlopen, skipped with the
 *     reason when they do not load);
 *   - the plugins loaded with --plugin, by the name in their table.
 * A tool says which of these it runs without --kinds (TK_DEFAULT_*) and
 * that --kinds names the allocators to run, in its order.
 *
 *     struct tk_kinds k;   // lives as long as the run: entries point into it
 *     int rc = tk_kinds_select(&k, &spec, &cli, o->kinds_arg, o->plugin_paths,
 *                              o->n_plugins, argc, argv);
 *     if (rc != 0) return rc;   // TK_EXIT_USAGE or TK_EXIT_FAILED, reported
 *     for (size_t i = 0; i < k.n; i++) ... k.list[i] ...
 */
#ifndef RTMEM_TOOLS_KINDS_H
#define RTMEM_TOOLS_KINDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/alloc.h"
#include "common/args.h"
#include "common/opt.h"
#include "common/out.h"

/* Allocators a run can hold, skipped ones it records (and TK_MAX_PLUGINS,
 * opt.h, plugins it can load). */
#define TK_MAX_ALLOCS  24
#define TK_MAX_SKIPPED 8

/* What a tool runs when --kinds is not given (struct tk_kinds_spec). */
enum {
    TK_DEFAULT_KINDS = 1u << 0, /* every rtmem kind */
    TK_DEFAULT_NONE = 1u << 1,  /* every "<kind>-none" */
    TK_DEFAULT_TYPED = 1u << 2, /* tlsf(typed), halffit(typed) */
    TK_DEFAULT_GLIBC = 1u << 3,
    TK_DEFAULT_PEERS = 1u << 4, /* those that load; the others skipped */
    TK_DEFAULT_PLUGINS = 1u << 5,
    TK_DEFAULT_GLIBC_RT = 1u << 6,
};

/* What a tool runs without --kinds; with it, the allocators named, in the
 * order named, in every tool. */
struct tk_kinds_spec {
    unsigned by_default; /* TK_DEFAULT_* */
};

/* An allocator named or run by default that did not load, and why. */
struct tk_skipped {
    char name[48];
    char why[TK_WHY_MAX];
};

struct tk_kinds {
    struct tk_alloc list[TK_MAX_ALLOCS]; /* what the run measures, in order */
    size_t n;
    struct tk_plugin plugins[TK_MAX_PLUGINS];
    size_t n_plugins;
    struct tk_skipped skipped[TK_MAX_SKIPPED];
    size_t n_skipped;
};

/*
 * Loads the peers the run wants (a peer that needs more static TLS makes
 * the process execute itself again, as tk_reexec_command: argc, argv are the
 * subcommand's; this happens before anything else of the run), then every
 * plugin of plugin_paths, then sets up k->list from kinds_arg (NULL: the
 * spec's defaults). A name given twice runs once. Reports on stderr, with
 * cli's name: an unknown or empty name (with the names known), a plugin
 * refused (its path and why); a peer named but not loaded is skipped,
 * recorded in k->skipped and said on stderr. Returns 0; TK_EXIT_USAGE
 * for bad usage; TK_EXIT_FAILED if no allocator is left to run.
 */
int tk_kinds_select(struct tk_kinds *k, const struct tk_kinds_spec *spec, const struct tk_args *cli,
                    const char *kinds_arg, const char *const *plugin_paths, size_t n_plugins,
                    int argc, char **argv);

/* The names --kinds takes before any plugin is loaded, for --help:
 * "tlsf, tlsf-none, heapmem, ..., tlsf(typed) (or tlsf-typed), halffit(typed)
 * (or halffit-typed), glibc, glibc-rt,
 * jemalloc, ...", into buf (truncated to size). Returns buf. */
const char *tk_kinds_names(char *buf, size_t size);

/* --help's note of the names --kinds takes (tk_kinds_names) and, in
 * parentheses, when_not_given ("default: all but the peers"). */
void tk_kinds_help(FILE *f, const char *when_not_given);

/* The allocators skipped, as the member "skipped" of an open object: an
 * array of {"name", "reason"}, the same in every tool's JSON. */
void tk_kinds_json_skipped(struct tk_json *j, const struct tk_kinds *k);

/* Is name (an item of a comma-separated list) in list? */
bool tk_list_has(const char *list, const char *name);

#endif /* RTMEM_TOOLS_KINDS_H */
