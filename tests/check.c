#include "check.h"

#include <time.h>
#include <unistd.h>

unsigned long test_checks_failed;
unsigned long test_checks_passed;
const char *test_context;
int test_argc;
char **test_argv;

#ifdef RTMEM_COVERAGE
void __gcov_dump(void); /* libgcov's: the counts written now */
#endif

void test_exit(int status)
{
#ifdef RTMEM_COVERAGE
    __gcov_dump();
#endif
    _exit(status);
}

int test_summary(const char *name)
{
    printf("%s: %lu passed, %lu failed\n", name, test_checks_passed, test_checks_failed);
    return test_checks_failed ? 1 : 0;
}

/* The cases of a binary, as registered (constructors run in an order the
 * toolchain picks: test_main sorts them by their place in the source). */
#define MAX_CASES 512
struct test_case {
    const char *group, *title, *file;
    int line;
    void (*fn)(void);
};
static struct test_case cases[MAX_CASES];
static size_t n_cases;

void test_register(const char *group, const char *title, void (*fn)(void), const char *file,
                   int line)
{
    if (n_cases == MAX_CASES) {
        fprintf(stderr, "check.c: more than %d cases: raise MAX_CASES\n", MAX_CASES);
        abort();
    }
    cases[n_cases++] = (struct test_case){ group, title, file, line, fn };
}

static int by_place(const void *a, const void *b)
{
    const struct test_case *x = a, *y = b;
    int c = strcmp(x->file, y->file);
    return c ? c : (x->line > y->line) - (x->line < y->line);
}

static bool same(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

int test_main(int argc, char **argv, const char *name)
{
    /* A binary with groups takes the group first; the rest are the cases'. */
    bool grouped = false;
    for (size_t i = 0; i < n_cases; i++)
        grouped |= cases[i].group != NULL;
    const char *group = grouped && argc > 1 ? argv[1] : NULL;
    int skip = group ? 2 : 1;
    test_argc = argc > skip ? argc - skip : 0;
    test_argv = argv + (argc > skip ? skip : argc);
    const char *only = getenv("RTMEM_TEST_CASE");
    bool times = getenv("RTMEM_TEST_TIMES") != NULL;
    qsort(cases, n_cases, sizeof(cases[0]), by_place);
    size_t ran = 0, failed = 0;
    bool known = !group;
    for (size_t i = 0; i < n_cases; i++) {
        const struct test_case *c = &cases[i];
        known |= same(group, c->group);
        if ((group && !same(group, c->group)) || (only && !strstr(c->title, only)))
            continue;
        unsigned long before = test_checks_failed;
        test_context = c->title;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        c->fn();
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (times)
            printf("%8.3f s  %s\n",
                   (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
                   c->title);
        fflush(stdout);
        ran++;
        if (test_checks_failed != before) {
            failed++;
            fprintf(stderr, "%s:%d: FAILED: %s\n", c->file, c->line, c->title);
        }
    }
    if (!known) {
        fprintf(stderr, "%s: no group '%s'\n", name, group);
        return 2;
    }
    char label[128];
    snprintf(label, sizeof(label), "%s%s%s (%zu cases, %zu failed)", name, group ? " " : "",
             group ? group : "", ran, failed);
    return ran == 0 && !only ? (printf("%s: no case ran\n", label), 1) : test_summary(label);
}
