/*
 * Bench kit: allocators loaded at run time (alloc.h).
 *
 * Peers are other process allocators, loaded with dlopen(RTLD_LOCAL) so
 * that rtmem never links them and the process keeps glibc's malloc for
 * everything else; each is called only through entry points that dlsym
 * finds in its own library. Plugins are a user's bounded heaps, loaded the
 * same way through the table of rtmem/plugin.h, in the tools' children
 * only (alloc.h says how). Neither is ever unloaded:
 * allocators keep thread caches and destructors that do not survive
 * dlclose.
 */
#include "common/alloc.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rtmem/plugin.h"

#include "common/child.h"

#include <fcntl.h>

#if defined(__SANITIZE_ADDRESS__)
#define TK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TK_ASAN 1
#endif
#endif
#ifdef TK_ASAN
#include <sanitizer/lsan_interface.h>
#endif

/* Set in the environment of a process tk_reexec_static_tls started, to the
 * name of the peer it was started for. */
#define REEXEC_MARKER "RTMEM_STATIC_TLS_REEXEC"

static void set_why(char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_why(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
}

/* ---- peers ------------------------------------------------------------------ */

struct peer {
    const char *name;
    const char *soname;
    /* A peer built in the tree rather than installed: the path of its
     * library, found at load (rpmalloc); soname is then its file name. */
    bool (*locate)(char *path, size_t len);
    const char *malloc_sym, *free_sym, *usable_sym;
    const char *realloc_sym, *aligned_sym;
    bool usable_takes_const; /* mi_usable_size(const void *) */
    bool aligned_is_mi;      /* mi_malloc_aligned(size, alignment); else posix_memalign's form */
    void (*version)(void *dl, char *buf, size_t len);

    bool tried;
    int status; /* tk_alloc_peer's result, once tried */
    char why[TK_WHY_MAX];
    char describe[256];
    void *(*malloc_fn)(size_t);
    void (*free_fn)(void *);
    size_t (*usable_fn)(void *);
    size_t (*usable_const_fn)(const void *);
    void *(*realloc_fn)(void *, size_t);
    int (*memalign_fn)(void **, size_t, size_t);
    void *(*mi_aligned_fn)(size_t, size_t);
};

/* Calls through a pointer of the function's own type only: the three
 * usable-size calls differ in their parameter's constness. */
static void *peer_alloc(void *ctx, size_t size)
{
    const struct peer *p = ctx;
    return p->malloc_fn(size);
}

static int peer_free(void *ctx, void *block)
{
    const struct peer *p = ctx;
    p->free_fn(block);
    return 0;
}

static size_t peer_usable(void *ctx, const void *block)
{
    const struct peer *p = ctx;
    return p->usable_fn((void *)block);
}

static size_t peer_usable_const(void *ctx, const void *block)
{
    const struct peer *p = ctx;
    return p->usable_const_fn(block);
}

static void *peer_realloc(void *ctx, void *block, size_t size)
{
    const struct peer *p = ctx;
    return p->realloc_fn(block, size);
}

static void *peer_aligned(void *ctx, size_t alignment, size_t size)
{
    const struct peer *p = ctx;
    if (p->aligned_is_mi)
        return p->mi_aligned_fn(size, alignment);
    void *block = NULL;
    if (alignment < sizeof(void *))
        alignment = sizeof(void *);
    return p->memalign_fn(&block, alignment, size) == 0 ? block : NULL;
}

/* Versions, for the report; best effort (an empty string if unknown). */
static void jemalloc_version(void *dl, char *buf, size_t len)
{
    int (*mallctl)(const char *, void *, size_t *, void *, size_t) =
        (int (*)(const char *, void *, size_t *, void *, size_t))dlsym(dl, "mallctl");
    const char *v = NULL;
    size_t sz = sizeof(v);
    if (mallctl && mallctl("version", &v, &sz, NULL, 0) == 0 && v)
        snprintf(buf, len, " %.*s", (int)strcspn(v, "-"), v);
}

static void mimalloc_version(void *dl, char *buf, size_t len)
{
    int (*mi_version)(void) = (int (*)(void))dlsym(dl, "mi_version");
    if (mi_version) {
        int v = mi_version();
        snprintf(buf, len, " %d.%d.%d", v / 100, v / 10 % 10, v % 10);
    }
}

static void tcmalloc_version(void *dl, char *buf, size_t len)
{
    const char *(*tc_version)(int *, int *, const char **) =
        (const char *(*)(int *, int *, const char **))dlsym(dl, "tc_version");
    int major = 0, minor = 0;
    const char *patch = NULL;
    if (tc_version && tc_version(&major, &minor, &patch))
        snprintf(buf, len, " %d.%d%s", major, minor, patch ? patch : "");
}

static void rpmalloc_version(void *dl, char *buf, size_t len)
{
    const char *(*v)(void) = (const char *(*)(void))dlsym(dl, "rtm_rp_version");
    if (v)
        snprintf(buf, len, " (%s)", v());
}

/* rpmalloc's library: $RTMEM_RPMALLOC, else peers/ beside the directory of
 * this executable (a build tree's tools/rtmem finds build/peers/), where
 * scripts/build-rpmalloc.sh puts it. */
static bool rpmalloc_locate(char *path, size_t len)
{
    const char *env = getenv("RTMEM_RPMALLOC");
    if (env && *env) {
        /* a path, never a name for dlopen to look up elsewhere */
        int w = snprintf(path, len, "%s%s", strchr(env, '/') ? "" : "./", env);
        return w > 0 && (size_t)w < len;
    }
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return false;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return false;
    *slash = '\0';
    int w = snprintf(path, len, "%s/../peers/librtmem-rpmalloc.so", exe);
    return w > 0 && (size_t)w < len;
}

static struct peer peers[] = {
    { .name = "jemalloc",
      .soname = "libjemalloc.so.2",
      .malloc_sym = "malloc",
      .free_sym = "free",
      .usable_sym = "malloc_usable_size",
      .realloc_sym = "realloc",
      .aligned_sym = "posix_memalign",
      .version = jemalloc_version },
    { .name = "mimalloc",
      .soname = "libmimalloc.so.2",
      .malloc_sym = "mi_malloc",
      .free_sym = "mi_free",
      .usable_sym = "mi_usable_size",
      .realloc_sym = "mi_realloc",
      .aligned_sym = "mi_malloc_aligned",
      .usable_takes_const = true,
      .aligned_is_mi = true,
      .version = mimalloc_version },
    { .name = "tcmalloc",
      .soname = "libtcmalloc_minimal.so.4",
      .malloc_sym = "tc_malloc",
      .free_sym = "tc_free",
      .usable_sym = "tc_malloc_size",
      .realloc_sym = "tc_realloc",
      .aligned_sym = "tc_posix_memalign",
      .version = tcmalloc_version },
    { .name = "rpmalloc",
      .soname = "librtmem-rpmalloc.so",
      .locate = rpmalloc_locate,
      .malloc_sym = "rtm_rp_malloc",
      .free_sym = "rtm_rp_free",
      .usable_sym = "rtm_rp_usable_size",
      .realloc_sym = "rtm_rp_realloc",
      .aligned_sym = "rtm_rp_posix_memalign",
      .version = rpmalloc_version },
};

#define N_PEERS (sizeof(peers) / sizeof(peers[0]))

const char *const *tk_peer_names(void)
{
    static const char *const names[N_PEERS + 1] = { "jemalloc", "mimalloc", "tcmalloc", "rpmalloc",
                                                    NULL };
    return names;
}

bool tk_reexeced(void)
{
    const char *v = getenv(REEXEC_MARKER);
    return v && *v;
}

/* The address of sym in the library dl itself, or NULL (why set): a symbol
 * that resolves elsewhere (jemalloc's "malloc" to glibc's, say) would
 * silently measure another allocator. */
static void *own_symbol(void *dl, const struct link_map *lm, const char *sym, char *why, size_t len)
{
    void *f = dlsym(dl, sym);
    Dl_info di;
    if (!f) {
        set_why(why, len, "no symbol %s in %s", sym, lm->l_name);
        return NULL;
    }
    if (!dladdr(f, &di) || !di.dli_fname || strcmp(di.dli_fname, lm->l_name) != 0) {
        set_why(why, len, "%s resolves outside %s (in %s)", sym, lm->l_name,
                di.dli_fname ? di.dli_fname : "?");
        return NULL;
    }
    return f;
}

/* dlopen, with LeakSanitizer off while the library's constructors run:
 * tcmalloc registers itself with a `new` that it never deletes, which ASan's
 * operator new sees as a leak of ours. */
static void *open_library(const char *soname)
{
#ifdef TK_ASAN
    __lsan_disable();
#endif
    void *dl = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
#ifdef TK_ASAN
    __lsan_enable();
#endif
    return dl;
}

static int load_peer(struct peer *p)
{
    char path[4096];
    const char *lib = p->soname;
    if (p->locate) {
        if (!p->locate(path, sizeof(path)) || access(path, R_OK) != 0) {
            set_why(p->why, sizeof(p->why),
                    "not built (no %s: make bench builds it with cargo, "
                    "scripts/build-rpmalloc.sh; RTMEM_RPMALLOC names another)",
                    p->locate(path, sizeof(path)) ? path : p->soname);
            return -1;
        }
        lib = path;
    }
    dlerror();
    void *dl = open_library(lib);
    if (!dl) {
        const char *err = dlerror();
        err = err ? err : "dlopen failed";
        if (strstr(err, "No such file")) {
            if (p->locate) /* the file is there: one of its dependencies is not */
                set_why(p->why, sizeof(p->why), "%s", err);
            else
                set_why(p->why, sizeof(p->why), "not installed (no %s on the library path)",
                        p->soname);
            return -1;
        }
        set_why(p->why, sizeof(p->why), "%s", err);
        if (strstr(err, "static TLS") && !tk_reexeced())
            return TK_PEER_NEEDS_STATIC_TLS;
        return -1;
    }
    struct link_map *lm = NULL;
    if (dlinfo(dl, RTLD_DI_LINKMAP, &lm) != 0 || !lm) {
        set_why(p->why, sizeof(p->why), "dlinfo on %s failed", p->soname);
        return -1;
    }
    void *m = own_symbol(dl, lm, p->malloc_sym, p->why, sizeof(p->why));
    void *f = m ? own_symbol(dl, lm, p->free_sym, p->why, sizeof(p->why)) : NULL;
    void *u = f ? own_symbol(dl, lm, p->usable_sym, p->why, sizeof(p->why)) : NULL;
    void *ra = u ? own_symbol(dl, lm, p->realloc_sym, p->why, sizeof(p->why)) : NULL;
    void *al = ra ? own_symbol(dl, lm, p->aligned_sym, p->why, sizeof(p->why)) : NULL;
    if (!al)
        return -1;
    p->realloc_fn = (void *(*)(void *, size_t))ra;
    if (p->aligned_is_mi)
        p->mi_aligned_fn = (void *(*)(size_t, size_t))al;
    else
        p->memalign_fn = (int (*)(void **, size_t, size_t))al;
    p->malloc_fn = (void *(*)(size_t))m;
    p->free_fn = (void (*)(void *))f;
    if (p->usable_takes_const)
        p->usable_const_fn = (size_t (*)(const void *))u;
    else
        p->usable_fn = (size_t (*)(void *))u;
    char version[64] = "";
    p->version(dl, version, sizeof(version));
    const char *marker = getenv(REEXEC_MARKER);
    snprintf(p->describe, sizeof(p->describe),
             "process allocator: %s%s, %s dlopen'd (%s, %s, %s)%s", p->name, version, lm->l_name,
             p->malloc_sym, p->free_sym, p->usable_sym,
             marker && strcmp(marker, p->name) == 0
                 ? "; rtmem re-executed itself with more static TLS for it (GLIBC_TUNABLES "
                   "glibc.rtld.optional_static_tls)"
                 : "");
    return 0;
}

int tk_alloc_peer(struct tk_alloc *a, const char *name, char *why, size_t why_len)
{
    struct peer *p = NULL;
    for (size_t i = 0; i < N_PEERS && !p; i++)
        if (strcmp(peers[i].name, name) == 0)
            p = &peers[i];
    if (!p) {
        set_why(why, why_len, "no peer named %s", name);
        return -1;
    }
    if (!p->tried) {
        p->status = load_peer(p);
        p->tried = true;
    }
    if (p->status != 0) {
        set_why(why, why_len, "%s", p->why);
        return p->status;
    }
    memset(a, 0, sizeof(*a));
    snprintf(a->name, sizeof(a->name), "%s", p->name);
    a->from = TK_FROM_PEER;
    a->sort = TK_PROCESS;
    a->applies = 0;
    a->describe = p->describe;
    a->origin = "peer";
    a->usable_name = p->usable_sym;
    a->alloc = peer_alloc;
    a->free = peer_free;
    a->usable_size = p->usable_takes_const ? peer_usable_const : peer_usable;
    a->realloc = peer_realloc;
    a->aligned = peer_aligned;
    a->ctx = p;
    return 0;
}

void tk_reexec_static_tls(char **argv, const char *peer, char *why, size_t why_len)
{
    if (tk_reexeced()) {
        set_why(why, why_len, "already re-executed once with more static TLS");
        return;
    }
    static const char tunable[] = "glibc.rtld.optional_static_tls=";
    const char *old = getenv("GLIBC_TUNABLES");
    char value[1024];
    int n = old && *old
                ? snprintf(value, sizeof(value), "%s:%s%d", old, tunable, TK_STATIC_TLS_BYTES)
                : snprintf(value, sizeof(value), "%s%d", tunable, TK_STATIC_TLS_BYTES);
    if (n < 0 || (size_t)n >= sizeof(value)) {
        set_why(why, why_len, "GLIBC_TUNABLES is too long to add %s%d", tunable,
                TK_STATIC_TLS_BYTES);
        return;
    }
    char *saved = old ? strdup(old) : NULL;
    if (setenv("GLIBC_TUNABLES", value, 1) != 0 || setenv(REEXEC_MARKER, peer, 1) != 0) {
        set_why(why, why_len, "setenv: %s", strerror(errno));
    } else {
        fflush(NULL);
        execv("/proc/self/exe", argv);
        set_why(why, why_len, "re-executing with GLIBC_TUNABLES=%s failed: %s", value,
                strerror(errno));
    }
    /* Still here: the environment as it was. */
    if (saved)
        setenv("GLIBC_TUNABLES", saved, 1);
    else
        unsetenv("GLIBC_TUNABLES");
    unsetenv(REEXEC_MARKER);
    free(saved);
}

/* ---- plugins ------------------------------------------------------------------ */

static void *plugin_create(const void *arg, void *mem, size_t size)
{
    const struct rtm_heap_plugin *t = arg;
    return t->create(mem, size);
}

static bool is_power_of_two(size_t v)
{
    return v && (v & (v - 1)) == 0;
}

/* Letters, digits, '-', '_', '.': the name goes into --kinds lists and the
 * replay command. */
static bool name_ok(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len > RTM_HEAP_PLUGIN_NAME_MAX)
        return false;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '-' || *c == '_' || *c == '.'))
            return false;
    return true;
}

/* What the trial load saw of a plugin, in memory the child shares. */
enum {
    CALL_CREATE = 1u << 0,
    CALL_DESTROY = 1u << 1,
    CALL_ALLOC = 1u << 2,
    CALL_FREE = 1u << 3,
    CALL_USABLE = 1u << 4,
    CALL_STATS = 1u << 5,
    CALL_CHECK = 1u << 6,
    CALL_ALIGNED = 1u << 7,
    CALL_REALLOC = 1u << 8,
};

struct plugin_seen {
    int loaded; /* 1 loaded, 2 dlopen refused it (dlerr) */
    bool has_table;
    uint32_t abi_version;
    bool has_name;
    char name[RTM_HEAP_PLUGIN_NAME_MAX + 2]; /* one more: too long is seen */
    char description[sizeof(((struct tk_plugin *)0)->description)];
    size_t alignment;
    unsigned calls; /* CALL_* of the table's non-NULL calls */
    char dlerr[TK_WHY_MAX];
};

_Static_assert(sizeof(((struct tk_plugin *)0)->name) == RTM_HEAP_PLUGIN_NAME_MAX + 1,
               "struct tk_plugin holds a plugin's longest name");

static unsigned calls_of(const struct rtm_heap_plugin *t)
{
    return (t->create ? CALL_CREATE : 0u) | (t->destroy ? CALL_DESTROY : 0u) |
           (t->alloc ? CALL_ALLOC : 0u) | (t->free ? CALL_FREE : 0u) |
           (t->usable_size ? CALL_USABLE : 0u) | (t->stats ? CALL_STATS : 0u) |
           (t->check ? CALL_CHECK : 0u) | (t->aligned_alloc ? CALL_ALIGNED : 0u) |
           (t->realloc ? CALL_REALLOC : 0u);
}

/* Copies what the table says into *s (no pointer of the child's kept). */
static void see_table(const struct rtm_heap_plugin *t, struct plugin_seen *s)
{
    s->has_table = true;
    s->abi_version = t->abi_version;
    if (t->abi_version != RTM_HEAP_PLUGIN_ABI_VERSION)
        return; /* the rest of another ABI's table is not this one's */
    s->has_name = t->name != NULL;
    if (t->name)
        snprintf(s->name, sizeof(s->name), "%s", t->name);
    if (t->description)
        snprintf(s->description, sizeof(s->description), "%s", t->description);
    s->alignment = t->alignment;
    s->calls = calls_of(t);
}

/* The table's rules (rtmem/plugin.h). Returns 0 or -1 with why set. */
static int validate(const struct plugin_seen *t, bool (*taken)(const char *, void *), void *arg,
                    char *why, size_t len)
{
    if (!t->has_table) {
        set_why(why, len, "no symbol '%s' (the table rtmem/plugin.h describes)",
                RTM_HEAP_PLUGIN_SYMBOL);
        return -1;
    }
    if (t->abi_version != RTM_HEAP_PLUGIN_ABI_VERSION) {
        set_why(why, len,
                "ABI version %u, this rtmem takes %u (rebuild the plugin against "
                "this rtmem/plugin.h)",
                t->abi_version, RTM_HEAP_PLUGIN_ABI_VERSION);
        return -1;
    }
    if (!t->has_name || !name_ok(t->name)) {
        set_why(why, len, "bad name: 1 to %d letters, digits, '-', '_' or '.' needed",
                RTM_HEAP_PLUGIN_NAME_MAX);
        return -1;
    }
    if (taken(t->name, arg)) {
        set_why(why, len, "the name '%s' is already taken", t->name);
        return -1;
    }
    static const struct {
        const char *what;
        unsigned call;
    } mandatory[] = {
        { "create", CALL_CREATE }, { "destroy", CALL_DESTROY },    { "alloc", CALL_ALLOC },
        { "free", CALL_FREE },     { "usable_size", CALL_USABLE },
    };
    for (size_t i = 0; i < sizeof(mandatory) / sizeof(mandatory[0]); i++)
        if (!(t->calls & mandatory[i].call)) {
            set_why(why, len, "'%s': mandatory call %s is NULL", t->name, mandatory[i].what);
            return -1;
        }
    if (t->alignment && !is_power_of_two(t->alignment)) {
        set_why(why, len, "'%s': alignment %zu is not a power of two", t->name, t->alignment);
        return -1;
    }
    return 0;
}

/* How long a plugin's constructors may take in the trial load. */
#define PROBE_TIMEOUT_S 30.0

struct probe {
    const char *path;
    struct plugin_seen *seen; /* shared with the child */
};

/* The trial load, in a child whose standard output and error go nowhere:
 * what the table says, into p->seen. */
static int probe_child(void *arg)
{
    struct probe *p = arg;
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
    }
    dlerror();
    void *dl = open_library(p->path);
    if (!dl) {
        const char *err = dlerror();
        snprintf(p->seen->dlerr, sizeof(p->seen->dlerr), "%s", err ? err : "dlopen failed");
        p->seen->loaded = 2;
        return 0;
    }
    const struct rtm_heap_plugin *t = dlsym(dl, RTM_HEAP_PLUGIN_SYMBOL);
    if (t)
        see_table(t, p->seen);
    p->seen->loaded = 1;
    return 0;
}

/* Loads the plugin once in a child (child.h), into *seen: a constructor
 * that ends the process (exit, with any status; a crash) or never returns
 * refuses the plugin, instead of ending or hanging the tool. 0, or -1
 * (why). */
static int probe_load(const char *path, struct plugin_seen *seen, char *why, size_t why_len)
{
    struct plugin_seen *shared = tk_shared_alloc(sizeof(*shared));
    if (!shared) {
        set_why(why, why_len, "out of memory for its trial load");
        return -1;
    }
    struct probe p = { path, shared };
    const struct tk_child_opts co = { .timeout_s = PROBE_TIMEOUT_S };
    struct tk_child_result r;
    tk_child_run(probe_child, &p, NULL, &co, &r);
    *seen = *shared;
    tk_shared_free(shared, sizeof(*shared));
    char sig[64];
    if (r.end == TK_CHILD_KILLED)
        set_why(why, why_len, "loading it killed the process (%s): its constructors crash",
                tk_signal_describe(r.code, sig, sizeof(sig)));
    else if (r.end == TK_CHILD_TIMED_OUT)
        set_why(why, why_len, "loading it did not end in %.0f s: its constructors hang",
                PROBE_TIMEOUT_S);
    else if (r.end == TK_CHILD_NOT_STARTED)
        set_why(why, why_len, "cannot start its trial load: %s", strerror(r.code));
    else if (seen->loaded == 0)
        set_why(why, why_len,
                "loading it ended the process (exit status %d): its constructors "
                "exit",
                r.code);
    else if (seen->loaded == 2)
        set_why(why, why_len, "cannot load: %s", seen->dlerr);
    else
        return 0;
    return -1;
}

/* dlopen with the plugin's constructors' standard output sent to standard
 * error: what a plugin prints never lands in a tool's report. */
static void *open_quietly(const char *path)
{
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    if (saved >= 0)
        dup2(STDERR_FILENO, STDOUT_FILENO);
    void *dl = open_library(path);
    if (saved >= 0) {
        fflush(stdout);
        dup2(saved, STDOUT_FILENO);
        close(saved);
    }
    return dl;
}

int tk_plugin_load(struct tk_plugin *pl, const char *path,
                   bool (*taken)(const char *name, void *arg), void *arg, char *why, size_t why_len)
{
    memset(pl, 0, sizeof(*pl));
    if (strlen(path) + 3 > sizeof(pl->path)) {
        set_why(why, why_len, "a path of at most %zu characters, please", sizeof(pl->path) - 3);
        return -1;
    }
    /* dlopen searches the library path for a name without '/': a file in
     * the current directory is what the user means. */
    if (!strchr(path, '/') && access(path, F_OK) == 0)
        snprintf(pl->path, sizeof(pl->path), "./%s", path);
    else
        snprintf(pl->path, sizeof(pl->path), "%s", path);
    struct plugin_seen seen;
    if (probe_load(pl->path, &seen, why, why_len) != 0 ||
        validate(&seen, taken, arg, why, why_len) != 0)
        return -1;
    snprintf(pl->name, sizeof(pl->name), "%s", seen.name);
    snprintf(pl->description, sizeof(pl->description), "%s", seen.description);
    pl->alignment = seen.alignment;
    pl->has_stats = seen.calls & CALL_STATS;
    pl->has_check = seen.calls & CALL_CHECK;
    pl->has_aligned = seen.calls & CALL_ALIGNED;
    pl->has_realloc = seen.calls & CALL_REALLOC;
    snprintf(pl->describe, sizeof(pl->describe), "plugin %s%s%s%s%s", pl->path,
             pl->description[0] ? ": " : "", pl->description,
             pl->has_stats ? ""
                           : " [no stats: H is the memory given to create; used-bytes, "
                             "coalescing, largest_free and TOVRH% not checked]",
             pl->has_check ? "" : " [no integrity check]");
    return 0;
}

int tk_plugin_open(struct tk_plugin *pl, char *why, size_t why_len)
{
    long me = (long)getpid();
    if (pl->opened_in == me)
        return 0;
    dlerror();
    void *dl = open_quietly(pl->path);
    if (!dl) {
        const char *err = dlerror();
        set_why(why, why_len, "cannot load: %s", err ? err : "dlopen failed");
        return -1;
    }
    const struct rtm_heap_plugin *t = dlsym(dl, RTM_HEAP_PLUGIN_SYMBOL);
    struct plugin_seen now = { 0 };
    if (t)
        see_table(t, &now);
    /* The file may have been replaced since the trial load. */
    if (!t || now.abi_version != RTM_HEAP_PLUGIN_ABI_VERSION || !now.has_name ||
        strcmp(now.name, pl->name) != 0 || now.alignment != pl->alignment ||
        (now.calls & (CALL_CREATE | CALL_DESTROY | CALL_ALLOC | CALL_FREE | CALL_USABLE)) !=
            (CALL_CREATE | CALL_DESTROY | CALL_ALLOC | CALL_FREE | CALL_USABLE) ||
        ((now.calls & CALL_STATS) != 0) != pl->has_stats ||
        ((now.calls & CALL_CHECK) != 0) != pl->has_check ||
        ((now.calls & CALL_ALIGNED) != 0) != pl->has_aligned ||
        ((now.calls & CALL_REALLOC) != 0) != pl->has_realloc) {
        set_why(why, why_len, "%s changed after it was first loaded: its table differs", pl->path);
        return -1;
    }
    pl->table = t;
    pl->hops = (struct tk_heap_ops){
        .create = plugin_create,
        .destroy = t->destroy,
        .alloc = t->alloc,
        .free = t->free,
        .usable_size = t->usable_size,
        .stats = t->stats,
        .check = t->check,
        .fill_count = NULL,
    };
    pl->opened_in = me;
    return 0;
}

void tk_alloc_plugin(struct tk_alloc *a, struct tk_plugin *pl)
{
    memset(a, 0, sizeof(*a));
    snprintf(a->name, sizeof(a->name), "%s", pl->name);
    a->from = TK_FROM_PLUGIN;
    a->sort = TK_HEAP;
    a->applies = TK_APPLY_FILL_TO_FAILURE | TK_APPLY_FREE_STATUS | TK_APPLY_BOUNDS |
                 (pl->has_stats ? TK_APPLY_STATS : 0u) | (pl->has_check ? TK_APPLY_CHECK : 0u);
    a->describe = pl->describe;
    a->origin = "plugin";
    a->plugin_path = pl->path;
    a->plugin = pl;
    a->align = pl->alignment ? pl->alignment : RTM_HEAP_MIN_ALIGN;
}

int tk_alloc_bind(struct tk_alloc *a, char *why, size_t why_len)
{
    if (a->own_process && a->from == TK_FROM_GLIBC)
        return tk_glibc_rt_apply(a, why, why_len);
    if (a->from != TK_FROM_PLUGIN)
        return 0;
    struct tk_plugin *pl = a->plugin;
    if (tk_plugin_open(pl, why, why_len) != 0)
        return -1;
    const struct rtm_heap_plugin *t = pl->table;
    a->hops = &pl->hops;
    a->hops_arg = t;
    /* The plugin's own calls, timed directly. */
    a->alloc = t->alloc;
    a->free = t->free;
    a->usable_size = t->usable_size;
    return 0;
}

void tk_reexec_command(int argc, char **argv, const char *peer, char *why, size_t why_len)
{
    char **args = calloc((size_t)argc + 2, sizeof(*args));
    if (!args) {
        set_why(why, why_len, "out of memory");
        return;
    }
    static char prog[] = "rtmem";
    args[0] = prog;
    for (int i = 0; i < argc; i++)
        args[i + 1] = argv[i];
    tk_reexec_static_tls(args, peer, why, why_len);
    free(args);
}
