/* Bench kit: the allocators a run measures, selected by --kinds (kinds.h). */
#include "common/kinds.h"

#include <stdio.h>
#include <string.h>

#include "rtmem/rtmem.h"

bool tk_list_has(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, name, n) == 0)
            return true;
        p += len + (p[len] == ',');
    }
    return false;
}

/* Is name "<kind>-none" for kind? */
static bool is_none_name(const char *name, const char *kind)
{
    size_t n = strlen(kind);
    return strncmp(name, kind, n) == 0 && strcmp(name + n, "-none") == 0;
}

static bool is_peer(const char *name)
{
    for (const char *const *p = tk_peer_names(); *p; p++)
        if (strcmp(name, *p) == 0)
            return true;
    return false;
}

/* The kind of tk_typed_kinds() that name means as "<kind>(typed)" or its
 * alias "<kind>-typed", or NULL. */
static const char *typed_kind(const char *name)
{
    for (const char *const *k = tk_typed_kinds(); *k; k++) {
        size_t n = strlen(*k);
        if (strncmp(name, *k, n) == 0 &&
            (strcmp(name + n, "(typed)") == 0 || strcmp(name + n, "-typed") == 0))
            return *k;
    }
    return NULL;
}

/* A name that means an allocator whatever the plugins: a kind, a
 * "<kind>-none", "<kind>(typed)" or its alias, glibc, a peer. */
static bool builtin_name(const char *name)
{
    for (const char *const *k = rtm_heap_kinds(); *k; k++)
        if (strcmp(name, *k) == 0 || is_none_name(name, *k))
            return true;
    return typed_kind(name) || strcmp(name, "glibc") == 0 || strcmp(name, TK_GLIBC_RT_NAME) == 0 ||
           is_peer(name);
}

static struct tk_plugin *find_plugin(const struct tk_kinds *k, const char *name)
{
    for (size_t i = 0; i < k->n_plugins; i++)
        if (strcmp(name, k->plugins[i].name) == 0)
            return (struct tk_plugin *)&k->plugins[i];
    return NULL;
}

/* A plugin's name must not shadow another allocator (nor "floor", the
 * bench's no-op row). */
static bool name_taken(const char *name, void *arg)
{
    const struct tk_kinds *k = arg;
    return builtin_name(name) || strcmp(name, "floor") == 0 || find_plugin(k, name) != NULL;
}

const char *tk_kinds_names(char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
#define ADD(...)                                                                    \
    do {                                                                            \
        int n_ = snprintf(buf + len, size - len, __VA_ARGS__);                      \
        len = n_ < 0 ? len : len + (size_t)n_ < size ? len + (size_t)n_ : size - 1; \
    } while (0)
    for (const char *const *k = rtm_heap_kinds(); *k; k++)
        ADD("%s, %s-none, ", *k, *k);
    for (const char *const *k = tk_typed_kinds(); *k; k++)
        ADD("%s(typed) (or %s-typed), ", *k, *k);
    ADD("glibc, %s", TK_GLIBC_RT_NAME);
    for (const char *const *p = tk_peer_names(); *p; p++)
        ADD(", %s", *p);
#undef ADD
    return buf;
}

void tk_kinds_help(FILE *f, const char *when_not_given)
{
    char names[512], text[800];
    snprintf(text, sizeof(text), "--kinds names: %s, the plugins' names (%s)",
             tk_kinds_names(names, sizeof(names)), when_not_given);
    fputc('\n', f);
    tk_opt_wrap(f, text, 0, 2);
}

static void unknown_name(const struct tk_kinds *k, const struct tk_args *cli, const char *name)
{
    char names[512];
    fprintf(stderr, "%s: --kinds: unknown allocator '%s'; known: %s", cli->prog, name,
            tk_kinds_names(names, sizeof(names)));
    for (size_t i = 0; i < k->n_plugins; i++)
        fprintf(stderr, ", %s", k->plugins[i].name);
    fprintf(stderr, "%s\nTry '%s --help'.\n",
            k->n_plugins ? "" : " (and plugins loaded with --plugin)", cli->prog);
}

/* Every item of --kinds names an allocator. 0, or -1 (reported). */
static int check_names(const struct tk_kinds *k, const struct tk_args *cli, const char *list)
{
    for (const char *p = list;;) {
        size_t len = strcspn(p, ",");
        char item[64];
        if (len == 0)
            return tk_args_bad(cli, "--kinds: empty name in '%s'", list);
        snprintf(item, sizeof(item), "%.*s", (int)len, p);
        if (len >= sizeof(item) || (!builtin_name(item) && !find_plugin(k, item))) {
            unknown_name(k, cli, item);
            return -1;
        }
        if (p[len] == '\0')
            return 0;
        p += len + 1;
    }
}

static void skip(struct tk_kinds *k, const struct tk_args *cli, const char *name, const char *why,
                 bool named)
{
    if (k->n_skipped < TK_MAX_SKIPPED) {
        struct tk_skipped *s = &k->skipped[k->n_skipped++];
        snprintf(s->name, sizeof(s->name), "%s", name);
        snprintf(s->why, sizeof(s->why), "%s", why);
    }
    if (named)
        fprintf(stderr, "%s: %s skipped: %s\n", cli->prog, name, why);
}

/* Loads the peers the run wants; one that does not load is skipped. Does
 * not return if the process executes itself again for one. */
static void load_peers(struct tk_kinds *k, const struct tk_args *cli, const char *kinds_arg,
                       bool by_default, int argc, char **argv)
{
    for (const char *const *p = tk_peer_names(); *p; p++) {
        if (kinds_arg ? !tk_list_has(kinds_arg, *p) : !by_default)
            continue;
        struct tk_alloc a;
        char why[TK_WHY_MAX], how[TK_WHY_MAX];
        int rc = tk_alloc_peer(&a, *p, why, sizeof(why));
        if (rc == TK_PEER_NEEDS_STATIC_TLS) {
            tk_reexec_command(argc, argv, *p, how, sizeof(how));
            size_t n = strlen(why);
            if (n + 3 < sizeof(why)) /* as much of it as fits */
                snprintf(why + n, sizeof(why) - n, "; %.*s", (int)(sizeof(why) - n - 3), how);
        }
        if (rc != 0)
            skip(k, cli, *p, why, kinds_arg != NULL);
    }
}

static int load_plugins(struct tk_kinds *k, const struct tk_args *cli, const char *const *paths,
                        size_t n)
{
    for (size_t i = 0; i < n && i < TK_MAX_PLUGINS; i++) {
        char why[TK_WHY_MAX];
        if (tk_plugin_load(&k->plugins[k->n_plugins], paths[i], name_taken, k, why, sizeof(why)) !=
            0) {
            fprintf(stderr,
                    "%s: --plugin %s: %s\nTry '%s --help'; the table is described in "
                    "<rtmem/plugin.h>.\n",
                    cli->prog, paths[i], why, cli->prog);
            return -1;
        }
        k->n_plugins++;
    }
    return 0;
}

static bool listed(const struct tk_kinds *k, const char *name)
{
    for (size_t i = 0; i < k->n; i++)
        if (strcmp(k->list[i].name, name) == 0)
            return true;
    return false;
}

/* Appends the allocator name means (a name check_names accepted), unless
 * it is already in the list or is a peer that did not load. */
static void add(struct tk_kinds *k, const char *name)
{
    const char *typed = typed_kind(name);
    char canonical[48];
    if (typed) {
        snprintf(canonical, sizeof(canonical), "%s(typed)", typed);
        name = canonical;
    }
    if (listed(k, name))
        return;
    if (k->n == TK_MAX_ALLOCS) {
        if (k->n_skipped < TK_MAX_SKIPPED) {
            struct tk_skipped *s = &k->skipped[k->n_skipped++];
            snprintf(s->name, sizeof(s->name), "%s", name);
            snprintf(s->why, sizeof(s->why), "at most %d allocators in one run", TK_MAX_ALLOCS);
        }
        return;
    }
    struct tk_alloc *a = &k->list[k->n];
    for (const char *const *kind = rtm_heap_kinds(); *kind; kind++) {
        if (strcmp(name, *kind) == 0 || is_none_name(name, *kind)) {
            tk_alloc_rtmem(a, *kind,
                           strcmp(name, *kind) == 0 ? RTM_HEAP_HARDEN_O1 : RTM_HEAP_HARDEN_NONE);
            k->n++;
            return;
        }
    }
    if (typed) {
        tk_alloc_typed(a, typed);
    } else if (strcmp(name, "glibc") == 0) {
        tk_alloc_glibc(a);
    } else if (strcmp(name, TK_GLIBC_RT_NAME) == 0) {
#ifdef TK_NO_GLIBC_RT
        return; /* skipped, and said so, by tk_kinds_select */
#else
        tk_alloc_glibc_rt(a);
#endif
    } else if (is_peer(name)) {
        char why[TK_WHY_MAX];
        if (tk_alloc_peer(a, name, why, sizeof(why)) != 0)
            return; /* skipped, and said so, by load_peers */
    } else {
        struct tk_plugin *pl = find_plugin(k, name);
        if (!pl)
            return;
        tk_alloc_plugin(a, pl);
    }
    k->n++;
}

/* A tool's default list, in the canonical order: each kind then
 * "<kind>-none", the "<kind>(typed)" rows, glibc, the peers, the plugins; by_default
 * (TK_DEFAULT_*) says which are in. */
static void add_defaults(struct tk_kinds *k, unsigned by_default)
{
    char name[64];
    for (const char *const *kind = rtm_heap_kinds(); *kind; kind++) {
        if (by_default & TK_DEFAULT_KINDS)
            add(k, *kind);
        snprintf(name, sizeof(name), "%s-none", *kind);
        if (by_default & TK_DEFAULT_NONE)
            add(k, name);
    }
    for (const char *const *t = tk_typed_kinds(); *t; t++) {
        snprintf(name, sizeof(name), "%s(typed)", *t);
        if (by_default & TK_DEFAULT_TYPED)
            add(k, name);
    }
    if (by_default & TK_DEFAULT_GLIBC)
        add(k, "glibc");
    if (by_default & TK_DEFAULT_GLIBC_RT)
        add(k, TK_GLIBC_RT_NAME);
    for (const char *const *p = tk_peer_names(); *p; p++)
        if (by_default & TK_DEFAULT_PEERS)
            add(k, *p);
    for (size_t i = 0; i < k->n_plugins; i++)
        if (by_default & TK_DEFAULT_PLUGINS)
            add(k, k->plugins[i].name);
}

/* The items of --kinds in their order (names already checked). */
static void add_listed(struct tk_kinds *k, const char *list)
{
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        char item[64];
        snprintf(item, sizeof(item), "%.*s", (int)len, p);
        add(k, item);
        p += len + (p[len] == ',');
    }
}

void tk_kinds_json_skipped(struct tk_json *j, const struct tk_kinds *k)
{
    tk_json_key(j, "skipped");
    tk_json_begin_array(j);
    for (size_t i = 0; i < k->n_skipped; i++) {
        tk_json_begin_object(j);
        tk_json_kv_string(j, "name", k->skipped[i].name);
        tk_json_kv_string(j, "reason", k->skipped[i].why);
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
}

int tk_kinds_select(struct tk_kinds *k, const struct tk_kinds_spec *spec, const struct tk_args *cli,
                    const char *kinds_arg, const char *const *plugin_paths, size_t n_plugins,
                    int argc, char **argv)
{
    memset(k, 0, sizeof(*k));
    /* Peers first: loading jemalloc may execute the process again, and
     * nothing else should have happened yet. */
    load_peers(k, cli, kinds_arg, (spec->by_default & TK_DEFAULT_PEERS) != 0, argc, argv);
    if (load_plugins(k, cli, plugin_paths, n_plugins) != 0)
        return TK_EXIT_USAGE;
    if (kinds_arg && check_names(k, cli, kinds_arg) != 0)
        return TK_EXIT_USAGE;
#ifdef TK_NO_GLIBC_RT
    if (kinds_arg ? tk_list_has(kinds_arg, TK_GLIBC_RT_NAME)
                  : (spec->by_default & TK_DEFAULT_GLIBC_RT) != 0)
        skip(k, cli, TK_GLIBC_RT_NAME, TK_NO_GLIBC_RT, kinds_arg != NULL);
#endif
    if (kinds_arg)
        add_listed(k, kinds_arg);
    else
        add_defaults(k, spec->by_default);
    if (k->n == 0) {
        fprintf(stderr, "%s: no allocator left to run\n", cli->prog);
        return TK_EXIT_FAILED;
    }
    return 0;
}
