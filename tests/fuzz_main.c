/*
 * Replays the fuzz target deterministically: every file named on the command
 * line, then N inputs generated from a seed (default 2000 from a fixed seed).
 *   fuzz_heap [--seed N] [--count N] [FILE...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    static uint8_t buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    return 0;
}

int main(int argc, char **argv)
{
    uint64_t seed = 0xf022;
    unsigned long count = 2000;
    int files = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            seed = strtoull(argv[++i], NULL, 0);
        } else if (!strcmp(argv[i], "--count") && i + 1 < argc) {
            count = strtoul(argv[++i], NULL, 0);
        } else {
            if (replay_file(argv[i]))
                return 2;
            files++;
        }
    }
    printf("fuzz_heap: seed %#llx, %lu generated inputs, %d files\n", (unsigned long long)seed,
           count, files);
    uint64_t rng = seed;
    static uint8_t buf[4096];
    for (unsigned long k = 0; k < count; k++) {
        size_t n = 2 + (size_t)(rng_next(&rng) % (sizeof(buf) - 2));
        for (size_t i = 0; i < n; i++)
            buf[i] = (uint8_t)rng_next(&rng);
        /* Bias towards allocation-heavy programs with small sizes now and then. */
        if (k % 3 == 0)
            for (size_t i = 2; i + 2 < n; i += 3)
                buf[i + 2] &= 0x03;
        LLVMFuzzerTestOneInput(buf, n); /* aborts on a failed check */
        test_checks_passed++;
    }
    return test_summary("fuzz_heap");
}
