/*
 * The bench kit's cache operations (tools/common/cacheops.h), against its
 * header: the flush method is the one the CPU offers (on x86-64 and i686,
 * clflushopt exactly when /proc/cpuinfo lists it, else clflush; on arm64
 * dc civac), with a power-of-two line; a flush leaves every byte as it was,
 * for ranges of any start and length (none, one byte, across lines and
 * pages); the non-temporal copy copies exactly the bytes asked, for every
 * alignment of source and destination, short and long, touching nothing
 * beyond the destination, or says -ENOTSUP where it is not available; the
 * method names are distinct.
 *
 * Whether a flush really evicts cannot be seen from user space without a
 * timing or a hardware counter: rtmem bw's cache phase shows it, with its
 * counters where the machine has them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/cacheops.h"

#define GUARD 64

#if defined(__x86_64__) || defined(__i386__)
static bool cpuinfo_has(const char *flag)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return false;
    char line[8192];
    bool found = false;
    while (!found && fgets(line, sizeof(line), f))
        if (strncmp(line, "flags", 5) == 0) {
            char *tok = strtok(strchr(line, ':') + 1, " \n");
            for (; tok && !found; tok = strtok(NULL, " \n"))
                found = strcmp(tok, flag) == 0;
            break;
        }
    fclose(f);
    return found;
}
#endif

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 131u + seed * 7u + (i >> 8));
}

/* The kit's operations, set up as rtmem bw sets them up (an eviction buffer
 * of 1 MiB); tk_cacheops_destroy after. */
static bool cacheops_init(struct tk_cacheops *c)
{
    REQUIRE(tk_cacheops_init(c, 1u << 20) == 0, false);
    return true;
}

static void method(const struct tk_cacheops *c)
{
    size_t l = c->line_bytes;
    CHECK(l >= 16 && l <= 1024 && (l & (l - 1)) == 0);
#if defined(__x86_64__)
    CHECK_EQ(c->method, cpuinfo_has("clflushopt") ? TK_FLUSH_CLFLUSHOPT : TK_FLUSH_CLFLUSH);
    CHECK(c->nt_copy);
#elif defined(__i386__)
    /* clflush with SSE2's mfence, as on x86-64; no non-temporal copy */
    if (cpuinfo_has("clflush") && cpuinfo_has("sse2"))
        CHECK_EQ(c->method, cpuinfo_has("clflushopt") ? TK_FLUSH_CLFLUSHOPT : TK_FLUSH_CLFLUSH);
    else
        CHECK(c->method == TK_FLUSH_EVICT || c->method == TK_FLUSH_NONE);
    CHECK(!c->nt_copy);
#elif defined(__aarch64__)
    CHECK_EQ(c->method, TK_FLUSH_DC_CIVAC);
    CHECK(!c->nt_copy);
#else
    CHECK(c->method == TK_FLUSH_EVICT || c->method == TK_FLUSH_NONE);
#endif
}

TEST_CASE("the flush method is the one the CPU offers, its line a power of two")
{
    struct tk_cacheops c;
    if (!cacheops_init(&c))
        return;
    method(&c);
    tk_cacheops_destroy(&c);
}

TEST_CASE("the method names are distinct")
{
    const char *names[] = { tk_flush_method_name(TK_FLUSH_CLFLUSHOPT),
                            tk_flush_method_name(TK_FLUSH_CLFLUSH),
                            tk_flush_method_name(TK_FLUSH_DC_CIVAC),
                            tk_flush_method_name(TK_FLUSH_EVICT),
                            tk_flush_method_name(TK_FLUSH_NONE) };
    for (int i = 0; i < 5; i++)
        for (int k = i + 1; k < 5; k++)
            CHECK(strcmp(names[i], names[k]) != 0);
}

static void flush_keeps(const struct tk_cacheops *c)
{
    size_t n = 3 * 4096 + 200;
    unsigned char *p = malloc(n), *copy = malloc(n);
    CHECK(p && copy);
    if (!p || !copy)
        goto out;
    fill(p, n, 1);
    memcpy(copy, p, n);
    const size_t starts[] = { 0, 1, 63, 64, 65, 4095, 4096 };
    const size_t lens[] = { 0, 1, 2, 63, 64, 65, 4096, 2 * 4096 + 7 };
    for (size_t s = 0; s < sizeof(starts) / sizeof(starts[0]); s++)
        for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
            tk_cache_flush(c, p + starts[s], lens[k]);
            CHECK(memcmp(p, copy, n) == 0);
        }
out:
    free(p);
    free(copy);
}

TEST_CASE("a flush leaves every byte as it was, for any start and length")
{
    struct tk_cacheops c;
    if (!cacheops_init(&c))
        return;
    flush_keeps(&c);
    tk_cacheops_destroy(&c);
}

static void copy_nt(const struct tk_cacheops *c)
{
    size_t big = (1u << 20) + 13;
    unsigned char *src = malloc(big + 64), *dst = malloc(big + 64 + 2 * GUARD),
                  *want = malloc(big + 64 + 2 * GUARD);
    CHECK(src && dst && want);
    if (!src || !dst || !want)
        goto out;
    fill(src, big + 64, 2);
    if (!c->nt_copy) {
        CHECK_EQ(tk_copy_nt(c, dst, src, 64), -ENOTSUP);
        goto out;
    }
    for (size_t so = 0; so < 18; so++)
        for (size_t dof = 0; dof < 18; dof++)
            for (size_t n = 0; n <= 200; n += (n < 40 ? 1 : 17)) {
                memset(dst, 0xee, n + dof + 2 * GUARD);
                memcpy(want, dst, n + dof + 2 * GUARD);
                memcpy(want + GUARD + dof, src + so, n);
                CHECK_EQ(tk_copy_nt(c, dst + GUARD + dof, src + so, n), 0);
                CHECK(memcmp(dst, want, n + dof + 2 * GUARD) == 0);
            }
    for (size_t dof = 0; dof < 3; dof++) {
        memset(dst, 0xee, big + 2 * GUARD + dof);
        CHECK_EQ(tk_copy_nt(c, dst + GUARD + dof, src + 5, big), 0);
        CHECK(memcmp(dst + GUARD + dof, src + 5, big) == 0);
        CHECK(dst[GUARD + dof - 1] == 0xee && dst[GUARD + dof + big] == 0xee);
    }
out:
    free(src);
    free(dst);
    free(want);
}

TEST_CASE("the non-temporal copy copies exactly the bytes asked, or says -ENOTSUP")
{
    struct tk_cacheops c;
    if (!cacheops_init(&c))
        return;
    copy_nt(&c);
    tk_cacheops_destroy(&c);
}

TEST_CASE("destroy lets the eviction buffer go")
{
    struct tk_cacheops c;
    if (!cacheops_init(&c))
        return;
    tk_cacheops_destroy(&c);
    CHECK(c.evict == NULL);
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, "tools.cacheops");
}
