/*
 * The one allocator list (tools/common/kinds.h): what each tool's defaults
 * select, --kinds in the order given, aliases and duplicates,
 * refusals in the tools' voice, plugins, and entries that really drive
 * their allocator. Peers are left to the tool tests: loading jemalloc may
 * execute the process again.
 *
 * usage: kinds_test TLSF_PLUGIN.so BUMP_PLUGIN.so BAD_PLUGIN.so
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "check.h"
#include "common/kinds.h"
#include "rtmem/rtmem.h"

static const struct tk_args cli = { "rtmem t", "4096" };
static struct tk_kinds k;
static char *self_argv[] = { (char *)"t", NULL };

/* The memcheck and bench defaults, without peers. */
static const struct tk_kinds_spec listed = { TK_DEFAULT_KINDS | TK_DEFAULT_GLIBC |
                                             TK_DEFAULT_PLUGINS };
static const struct tk_kinds_spec canonical = { TK_DEFAULT_KINDS | TK_DEFAULT_NONE |
                                                TK_DEFAULT_TYPED | TK_DEFAULT_GLIBC |
                                                TK_DEFAULT_PLUGINS };

static int select_(const struct tk_kinds_spec *spec, const char *kinds, const char *const *plugins,
                   size_t n_plugins)
{
    return tk_kinds_select(&k, spec, &cli, kinds, plugins, n_plugins, 1, self_argv);
}

/* The selected names, comma-separated. */
static const char *names(void)
{
    static char buf[512];
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < k.n && len < sizeof(buf); i++) {
        int w = snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? "," : "", k.list[i].name);
        len += w > 0 ? (size_t)w : 0;
    }
    return buf;
}

static void check_names(const char *want)
{
    CHECK(strcmp(names(), want) == 0);
    if (strcmp(names(), want) != 0)
        fprintf(stderr, "  selected '%s', wanted '%s'\n", names(), want);
}

/* Every rtmem kind, and "<kind>-none" after each when with_none. */
static const char *all_kinds(bool with_none)
{
    static char buf[256];
    size_t len = 0;
    buf[0] = '\0';
    for (const char *const *kind = rtm_heap_kinds(); *kind; kind++) {
        int w = with_none ? snprintf(buf + len, sizeof(buf) - len, "%s%s,%s-none", len ? "," : "",
                                     *kind, *kind)
                          : snprintf(buf + len, sizeof(buf) - len, "%s%s", len ? "," : "", *kind);
        len += w > 0 ? (size_t)w : 0;
    }
    return buf;
}

TEST_CASE("the defaults select every kind, then glibc, in the list's order")
{
    char want[512];
    CHECK(select_(&listed, NULL, NULL, 0) == 0);
    snprintf(want, sizeof(want), "%s,glibc", all_kinds(false));
    check_names(want);
    CHECK(select_(&canonical, NULL, NULL, 0) == 0);
    snprintf(want, sizeof(want), "%s,tlsf(typed),halffit(typed),glibc", all_kinds(true));
    check_names(want);
    CHECK_EQ(k.n_skipped, 0);
}

TEST_CASE("--kinds sets the order and runs a name given twice once")
{
    CHECK(select_(&listed, "glibc,tlsf-typed,tlsf", NULL, 0) == 0);
    check_names("glibc,tlsf(typed),tlsf");
    /* Whatever a tool runs by default, --kinds sets the order. */
    CHECK(select_(&canonical, "glibc,tlsf-typed,tlsf", NULL, 0) == 0);
    check_names("glibc,tlsf(typed),tlsf");
    /* Named twice, by either name: runs once. */
    CHECK(select_(&listed, "tlsf,tlsf,tlsf-typed,tlsf(typed),heapmem-none", NULL, 0) == 0);
    check_names("tlsf,tlsf(typed),heapmem-none");
    CHECK(select_(&canonical, "tlsf(typed),tlsf-typed", NULL, 0) == 0);
    check_names("tlsf(typed)");
    CHECK(select_(&listed, "halffit-typed,tlsf-typed,halffit(typed),halffit", NULL, 0) == 0);
    check_names("halffit(typed),tlsf(typed),halffit");
}

static void refused(const struct tk_kinds_spec *spec, const char *kinds, const char *want,
                    int status)
{
    const char *was = test_context;
    test_context = kinds;
    capture_begin();
    int rc = select_(spec, kinds, NULL, 0);
    const char *err = capture_end();
    CHECK_EQ(rc, status);
    CHECK(strstr(err, want) != NULL);
    if (!strstr(err, want))
        fprintf(stderr, "  wanted '%s' in: %s", want, err);
    CHECK(strstr(err, "Try 'rtmem t --help'.") != NULL);
    test_context = was;
}

TEST_CASE("unknown and empty names are refused in the tools' voice")
{
    refused(&listed, "foo", "rtmem t: --kinds: unknown allocator 'foo'; known: tlsf, tlsf-none, ",
            TK_EXIT_USAGE);
    refused(&canonical, "tlsf,foo", "(and plugins loaded with --plugin)", TK_EXIT_USAGE);
    refused(&listed, "tlsf,", "--kinds: empty name in 'tlsf,'", TK_EXIT_USAGE);
    refused(&listed, ",tlsf", "--kinds: empty name in ',tlsf'", TK_EXIT_USAGE);
    refused(&listed, "", "--kinds: empty name in ''", TK_EXIT_USAGE);
    refused(&listed, "tlsf,,glibc", "empty name", TK_EXIT_USAGE);
    /* Only tlsf and halffit have a typed row. */
    refused(&listed, "xvheap(typed)", "unknown allocator 'xvheap(typed)'", TK_EXIT_USAGE);
    refused(&listed, "halffit-typedx", "unknown allocator 'halffit-typedx'", TK_EXIT_USAGE);
    refused(&listed, "(typed)", "unknown allocator '(typed)'", TK_EXIT_USAGE);
    refused(&listed, "tlsf-0123456789012345678901234567890123456789012345678901234567890123456789",
            "unknown allocator 'tlsf-01234567890123456789", TK_EXIT_USAGE);
    refused(&listed, "TLSF", "unknown allocator 'TLSF'", TK_EXIT_USAGE);
    refused(&listed, "tlsf-", "unknown allocator 'tlsf-'", TK_EXIT_USAGE);
}

/* Nothing selected by default: a run-time failure, not bad usage. */
TEST_CASE("an empty default is a run-time failure")
{
    const struct tk_kinds_spec none = { 0 };
    capture_begin();
    int rc = select_(&none, NULL, NULL, 0);
    const char *err = capture_end();
    CHECK_EQ(rc, TK_EXIT_FAILED);
    CHECK(strstr(err, "rtmem t: no allocator left to run") != NULL);
}

TEST_CASE("the list of names is complete and truncated, never overrun")
{
    char buf[512];
    tk_kinds_names(buf, sizeof(buf));
    CHECK(strncmp(buf, "tlsf, tlsf-none, ", 17) == 0);
    CHECK(strstr(buf, "tlsf(typed) (or tlsf-typed), halffit(typed) (or halffit-typed), glibc") !=
          NULL);
    for (const char *const *p = tk_peer_names(); *p; p++)
        CHECK(strstr(buf, *p) != NULL);
    /* Truncated, never overrun. */
    char small[12];
    memset(small, 'x', sizeof(small));
    tk_kinds_names(small, 8);
    CHECK_EQ(strlen(small), 7);
    CHECK(small[8] == 'x');
    CHECK(tk_list_has("a,bc,d", "bc"));
    CHECK(!tk_list_has("a,bc,d", "b"));
    CHECK(!tk_list_has("", "a"));
    CHECK(tk_list_has("a", "a"));
}

/* Each entry drives its allocator: a heap in a buffer, a block, its free. */
TEST_CASE("each entry drives its allocator")
{
    static unsigned char mem[1 << 20] __attribute__((aligned(64)));
    CHECK(select_(&canonical, NULL, NULL, 0) == 0);
    for (size_t i = 0; i < k.n; i++) {
        struct tk_alloc *a = &k.list[i];
        test_context = a->name;
        CHECK(a->alloc && a->free && a->usable_size);
        if (strcmp(a->name, "glibc") == 0) {
            CHECK(a->from == TK_FROM_GLIBC && a->sort == TK_PROCESS);
            void *p = a->alloc(a->ctx, 100);
            CHECK(p && a->usable_size(a->ctx, p) >= 100);
            CHECK(a->free(a->ctx, p) == 0);
            continue;
        }
        CHECK(a->sort == TK_HEAP && a->hops && a->hops->create);
        bool typed = strstr(a->name, "(typed)") != NULL;
        bool none = strstr(a->name, "-none") != NULL;
        CHECK(a->from == (typed ? TK_FROM_TYPED : TK_FROM_RTMEM));
        CHECK(a->hardening == (none ? RTM_HEAP_HARDEN_NONE : RTM_HEAP_HARDEN_O1));
        CHECK(a->kind && strncmp(a->name, a->kind, strlen(a->kind)) == 0);
        void *h = a->hops->create(a->hops_arg, mem, sizeof(mem));
        REQUIRE(h != NULL, );
        void *p = a->alloc(h, 1000);
        CHECK(p != NULL);
        CHECK(a->usable_size(h, p) >= 1000);
        struct rtm_heap_stats st;
        CHECK(a->hops->stats(h, &st) == 0);
        CHECK_EQ(st.live_blocks, 1);
        CHECK(a->hops->check(h) == 0);
        CHECK(a->hops->fill_count(h, 64) > 0);
        CHECK(a->free(h, p) == 0);
        CHECK(a->hops->stats(h, &st) == 0);
        CHECK_EQ(st.live_blocks, 0);
        /* The level and the kind the row promises, as the heap reports them
         * (a typed row's handle is its kind's own). */
        struct rtm_heap *as_heap = !typed                         ? h
                                   : strcmp(a->kind, "tlsf") == 0 ? rtm_tlsf_heap(h)
                                                                  : rtm_halffit_heap(h);
        CHECK(rtm_heap_hardening(as_heap) == (none ? RTM_HEAP_HARDEN_NONE : RTM_HEAP_HARDEN_O1));
        CHECK(strcmp(rtm_heap_kind(as_heap), a->kind) == 0);
        a->hops->destroy(h);
    }
}

/* The plugins are the arguments: TLSF_PLUGIN.so BUMP_PLUGIN.so BAD_PLUGIN.so
 * (main has checked that there are three). */
TEST_CASE("plugins run after the kinds and --kinds knows them once loaded")
{
    const char *both[] = { test_argv[0], test_argv[1] };
    char want[512];
    CHECK(select_(&listed, NULL, both, 2) == 0);
    snprintf(want, sizeof(want), "%s,glibc,tlsf-plugin,bump", all_kinds(false));
    check_names(want);
    CHECK(k.list[k.n - 1].from == TK_FROM_PLUGIN);
    CHECK(select_(&listed, "bump,tlsf", both, 2) == 0);
    check_names("bump,tlsf");
    /* A plugin's name is known to --kinds once it is loaded, not before. */
    refused(&listed, "bump", "unknown allocator 'bump'", TK_EXIT_USAGE);
    capture_begin();
    int rc = select_(&listed, "nosuch", both, 2);
    const char *err = capture_end();
    CHECK_EQ(rc, TK_EXIT_USAGE);
    CHECK(strstr(err, ", tlsf-plugin, bump\n") != NULL);
}

TEST_CASE("a plugin refused, missing or loaded twice is bad usage")
{
    const char *bump_plugin = test_argv[1];
    const char *bad[] = { test_argv[2] };
    capture_begin();
    int rc = select_(&listed, NULL, bad, 1);
    const char *err = capture_end();
    CHECK_EQ(rc, TK_EXIT_USAGE);
    CHECK(strstr(err, "rtmem t: --plugin ") != NULL && strstr(err, "<rtmem/plugin.h>") != NULL);
    const char *missing[] = { "/nonexistent/plugin.so" };
    capture_begin();
    rc = select_(&listed, NULL, missing, 1);
    err = capture_end();
    CHECK_EQ(rc, TK_EXIT_USAGE);
    CHECK(strstr(err, "--plugin /nonexistent/plugin.so: ") != NULL);
    /* The same plugin twice: its name is taken the second time. */
    const char *twice[] = { bump_plugin, bump_plugin };
    capture_begin();
    rc = select_(&listed, NULL, twice, 2);
    err = capture_end();
    CHECK_EQ(rc, TK_EXIT_USAGE);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: kinds_test TLSF_PLUGIN.so BUMP_PLUGIN.so BAD_PLUGIN.so\n");
        return 2;
    }
    return test_main(argc, argv, "tools.kinds");
}
