/*
 * glibc-rt (tools/common/alloc.h): the allocator entry, and its settings
 * and reserve really in force in the process that binds it. mallopt is
 * process-wide, so each case that binds runs in a child of its own, as the
 * tools measure glibc-rt.
 */
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "common/alloc.h"
#include "common/kinds.h"

#define RESERVE ((size_t)8 << 20)

#ifndef TK_MALLOC_SANITIZED
/* glibc's memory: the heap's bytes, and the chunks it mmapped. */
static size_t heap_bytes(void)
{
    return mallinfo2().arena;
}
static size_t mmapped_chunks(void)
{
    return mallinfo2().hblks;
}
#endif

TEST_CASE("the entry: a process allocator measured in a process of its own")
{
    struct tk_alloc a;
    tk_alloc_glibc_rt(&a);
    CHECK(strcmp(a.name, "glibc-rt") == 0);
    CHECK(a.own_process);
    CHECK(a.from == TK_FROM_GLIBC);
    CHECK(a.sort == TK_PROCESS);
    CHECK(a.alloc && a.free && a.usable_size);
    CHECK(strstr(a.describe, "M_MMAP_MAX 0") != NULL);
    struct tk_alloc g;
    tk_alloc_glibc(&g);
    CHECK(!g.own_process);
    /* The reserve: every block's header, a quarter more, 1 MiB; saturated. */
    CHECK_EQ(tk_glibc_rt_reserve(0, 0), (size_t)1 << 20);
    size_t r = tk_glibc_rt_reserve(1000, 10);
    CHECK(r >= 1000 + 10 * 2 * sizeof(size_t) + ((size_t)1 << 20));
    CHECK(r <= 2 * (1000 + 10 * 4 * sizeof(size_t)) + ((size_t)1 << 20));
    CHECK_EQ(tk_glibc_rt_reserve(SIZE_MAX / 2, SIZE_MAX / 8), SIZE_MAX);
}

/* In a child: binds glibc-rt and checks what glibc then does. Returns the
 * child's failures (its exit status). */
static int bound_child(void)
{
    int failures = 0;
#define EXPECT(c)                                                           \
    do {                                                                    \
        if (!(c)) {                                                         \
            fprintf(stderr, "glibc_rt_test child: %d: %s\n", __LINE__, #c); \
            failures++;                                                     \
        }                                                                   \
    } while (0)
    struct tk_alloc a;
    tk_alloc_glibc_rt(&a);
    a.reserve = RESERVE;
    char why[TK_WHY_MAX] = "";
    int rc = tk_alloc_bind(&a, why, sizeof(why));
#ifdef TK_MALLOC_SANITIZED
    EXPECT(rc == -1 && strstr(why, "sanitizer") != NULL && !a.grt.applied);
    return failures;
#else
    EXPECT(rc == 0 && a.grt.applied);
    /* The reserve is glibc's heap now, kept after its free. */
    EXPECT(a.grt.heap_bytes >= RESERVE);
    EXPECT(heap_bytes() == a.grt.heap_bytes);
    /* A block far above glibc's default mmap threshold (128 KiB) comes from
     * the heap (M_MMAP_MAX 0), and its free gives nothing back
     * (M_TRIM_THRESHOLD -1). */
    size_t before = mmapped_chunks();
    volatile char *big = malloc(RESERVE / 2);
    EXPECT(big != NULL);
    if (big)
        big[0] = 1;
    EXPECT(mmapped_chunks() == before && mmapped_chunks() == 0);
    EXPECT(heap_bytes() == a.grt.heap_bytes); /* inside the reserve */
    free((void *)big);
    EXPECT(heap_bytes() == a.grt.heap_bytes);
    char line[192];
    /* locked where the process may: what the outcome says either way */
    EXPECT(strstr(tk_glibc_rt_outcome(&a, line, sizeof(line)),
                  a.grt.locked ? "prefaulted and locked" : "NOT locked") != NULL);
    tk_glibc_rt_check(&a);
    EXPECT(a.grt.checked && a.grt.grown_bytes == 0);
    EXPECT(strstr(tk_glibc_rt_outcome(&a, line, sizeof(line)), "it held") != NULL);
    /* Past the reserve: the heap grows, and the check says by how much;
     * a later check that finds less keeps the most. */
    void *more = malloc(2 * RESERVE);
    EXPECT(more != NULL);
    tk_glibc_rt_check(&a);
    EXPECT(a.grt.grown_bytes >= RESERVE);
    EXPECT(strstr(tk_glibc_rt_outcome(&a, line, sizeof(line)), "grew") != NULL);
    size_t most = a.grt.grown_bytes;
    free(more);
    tk_glibc_rt_check(&a);
    EXPECT(a.grt.grown_bytes == most);
    return failures;
#endif
#undef EXPECT
}

TEST_CASE("bound, the settings and the reserve are in force in that process")
{
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        _exit(bound_child());
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK_EQ(WEXITSTATUS(status), 0);
    /* This process kept glibc's defaults: a large block is mmapped. */
#ifndef TK_MALLOC_SANITIZED
    size_t before = mmapped_chunks();
    void *big = malloc(RESERVE / 2);
    CHECK(big != NULL);
    CHECK_EQ(mmapped_chunks(), before + 1);
    free(big);
#endif
}

TEST_CASE("the lists: after glibc by default; skipped where a sanitizer has malloc")
{
    static const struct tk_args cli = { "rtmem t", "4096" };
    static struct tk_kinds k;
    static char *argv[] = { (char *)"t", NULL };
    const struct tk_kinds_spec spec = { TK_DEFAULT_GLIBC | TK_DEFAULT_GLIBC_RT };
    CHECK(tk_kinds_select(&k, &spec, &cli, NULL, NULL, 0, 1, argv) == 0);
#ifdef TK_MALLOC_SANITIZED
    CHECK_EQ(k.n, 1);
    CHECK_EQ(k.n_skipped, 1);
    CHECK(strcmp(k.skipped[0].name, "glibc-rt") == 0);
    CHECK(strstr(k.skipped[0].why, "sanitizer") != NULL);
#else
    CHECK_EQ(k.n, 2);
    CHECK(strcmp(k.list[0].name, "glibc") == 0 && !k.list[0].own_process);
    CHECK(strcmp(k.list[1].name, "glibc-rt") == 0 && k.list[1].own_process);
    /* Named: in the order given. */
    CHECK(tk_kinds_select(&k, &spec, &cli, "glibc-rt,tlsf", NULL, 0, 1, argv) == 0);
    CHECK_EQ(k.n, 2);
    CHECK(strcmp(k.list[0].name, "glibc-rt") == 0);
#endif
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, "tools.glibc_rt");
}
