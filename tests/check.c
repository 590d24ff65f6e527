#include "check.h"

unsigned long test_checks_failed;
unsigned long test_checks_passed;
const char *test_context;

int test_summary(const char *name)
{
    printf("%s: %lu passed, %lu failed\n", name, test_checks_passed, test_checks_failed);
    return test_checks_failed ? 1 : 0;
}
