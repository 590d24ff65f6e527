/*
 * A tiny test kit: named cases, and checks inside them.
 *
 *     TEST_CASE("free merges both neighbours")
 *     {
 *         ...
 *         CHECK_EQ(stats.free_blocks, 1);
 *     }
 *
 *     int main(int argc, char **argv) { return test_main(argc, argv, "tlsf"); }
 *
 * A case is a function, registered before main runs; test_main runs every
 * case of the file in the order they are written, each with its title as
 * the context of its checks, and prints "N passed, N failed" (the exit
 * code follows). TEST_CASE_IN(group, title) puts a case in a group, and
 * test_main runs only the group named by its first argument when there is
 * one (a CTest entry per group: "arena_test ownership"). RTMEM_TEST_CASE in
 * the environment runs only the cases whose title holds it, for a
 * debugging session; RTMEM_TEST_TIMES prints each case's time.
 *
 * CHECK records a failure with its location and the case's title and goes
 * on; REQUIRE returns from the case (or the helper it is in). A binary
 * without cases ends with test_summary() instead.
 */
#ifndef RTMEM_TESTS_CHECK_H
#define RTMEM_TESTS_CHECK_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h" /* tools/common: the bench kit's generator */

extern unsigned long test_checks_failed;
extern unsigned long test_checks_passed;
extern const char *test_context; /* printed with each failure, e.g. the kind */

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (cond) {                                                                   \
            test_checks_passed++;                                                     \
        } else {                                                                      \
            test_checks_failed++;                                                     \
            if (test_checks_failed <= 50)                                             \
                fprintf(stderr, "%s:%d: [%s] check failed: %s\n", __FILE__, __LINE__, \
                        test_context ? test_context : "-", #cond);                    \
        }                                                                             \
    } while (0)

#define CHECK_EQ(a, b)                                                                           \
    do {                                                                                         \
        uintmax_t a_ = (uintmax_t)(a), b_ = (uintmax_t)(b);                                      \
        if (a_ == b_) {                                                                          \
            test_checks_passed++;                                                                \
        } else {                                                                                 \
            test_checks_failed++;                                                                \
            if (test_checks_failed <= 50)                                                        \
                fprintf(stderr, "%s:%d: [%s] %s == %s failed: %ju != %ju\n", __FILE__, __LINE__, \
                        test_context ? test_context : "-", #a, #b, a_, b_);                      \
        }                                                                                        \
    } while (0)

/* Stops the current function (returning ret) when cond fails. */
#define REQUIRE(cond, ret)                     \
    do {                                       \
        unsigned long f_ = test_checks_failed; \
        CHECK(cond);                           \
        if (test_checks_failed != f_)          \
            return ret;                        \
    } while (0)

/* splitmix64, the bench kit's: the same sequence on every machine, and the
 * same one the tests have always drawn. */
static inline uint64_t rng_next(uint64_t *s)
{
    return tk_rng_next(s);
}

/* Uniform in [lo, hi], taken by modulo (not tk_rng_below) so that every
 * recorded seed replays the sequence it always did. */
static inline uint64_t rng_range(uint64_t *s, uint64_t lo, uint64_t hi)
{
    return lo + rng_next(s) % (hi - lo + 1);
}

int test_summary(const char *name);

/* What a test's child process ends with instead of _exit: the same (no
 * atexit handler, no stdio flush), except that a coverage build
 * (-DRTMEM_COVERAGE=ON) writes the lines the child ran first. Not for a
 * signal handler. */
void test_exit(int status) __attribute__((noreturn));

/* Named cases (above). test_register is TEST_CASE's, at start-up. */
void test_register(const char *group, const char *title, void (*fn)(void), const char *file,
                   int line);
int test_main(int argc, char **argv, const char *name);
/* The arguments test_main got after the group (a case that needs a path). */
extern int test_argc;
extern char **test_argv;

#define TEST_CAT_(a, b) a##b
#define TEST_CAT(a, b)  TEST_CAT_(a, b)
#define TEST_CASE_IN_(group, title, fn)                                    \
    static void fn(void);                                                  \
    __attribute__((constructor)) static void TEST_CAT(fn, _register)(void) \
    {                                                                      \
        test_register(group, title, fn, __FILE__, __LINE__);               \
    }                                                                      \
    static void fn(void)
#define TEST_CASE_IN(group, title) TEST_CASE_IN_(group, title, TEST_CAT(test_case_, __LINE__))
#define TEST_CASE(title)           TEST_CASE_IN(NULL, title)

/* The emulator a cross build's tests run under ("qemu-user"), or NULL
 * natively: CTest sets RTMEM_TEST_EMULATED on every test of a build with
 * an emulator (tests/CMakeLists.txt). Timings and the kernel's view of the
 * process (its mappings, residency, faults, robust futexes) are then the
 * emulator's: a test checks behaviour only there. */
static inline const char *test_emulated(void)
{
    const char *e = getenv("RTMEM_TEST_EMULATED");
    return e && *e ? e : NULL;
}

/* Says that name is skipped under the emulator, and why, and gives the
 * exit status CTest counts as skipped (77, SKIP_RETURN_CODE). */
static inline int test_skip_emulated(const char *name, const char *why)
{
    printf("%s: SKIPPED under %s: %s\n", name, test_emulated(), why);
    return 77;
}

#endif
