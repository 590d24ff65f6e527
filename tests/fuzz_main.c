/*
 * Replays the fuzz target deterministically: every file named on the command
 * line (a directory: every file under it, in name order, README files
 * aside), then N inputs generated from a seed (default 2000 from a fixed
 * seed).
 *   fuzz_heap [--seed N] [--count N] [FILE|DIR...]
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

/* Replays path, or every file under it if it is a directory. Returns the
 * number of files replayed, or -1. */
static int replay_path(const char *path)
{
    struct stat st;
    if (stat(path, &st)) {
        perror(path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode))
        return replay_file(path) ? -1 : 1;
    struct dirent **names;
    int n = scandir(path, &names, NULL, alphasort);
    if (n < 0) {
        perror(path);
        return -1;
    }
    int files = 0;
    for (int i = 0; i < n; i++) {
        const char *name = names[i]->d_name;
        if (files >= 0 && name[0] != '.' && strncmp(name, "README", 6) != 0) {
            size_t len = strlen(path) + strlen(name) + 2;
            char *sub = malloc(len);
            if (!sub)
                abort();
            snprintf(sub, len, "%s/%s", path, name);
            int k = replay_path(sub);
            files = k < 0 ? -1 : files + k;
            free(sub);
        }
        free(names[i]);
    }
    free(names);
    return files;
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
            int k = replay_path(argv[i]);
            if (k < 0)
                return 2;
            files += k;
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
