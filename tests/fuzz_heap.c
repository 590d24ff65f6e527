/*
 * Fuzz target: the input is a program of heap operations, run through the
 * shadow model (tests/model.c) on a small heap of a kind and hardening level
 * the first byte picks.
 * Any model check that fails aborts, so the fuzzer reports it as a crash.
 *
 * Built two ways: with clang's -fsanitize=fuzzer as a libFuzzer binary
 * (fuzz_heap_libfuzzer, when RTMEM_FUZZ=ON), and linked with fuzz_main.c as a
 * deterministic replay of generated and given inputs, run by CTest.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "model.h"
#include "rtmem/heap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ARENA_BYTES (256u << 10)

static unsigned char *arena(void)
{
    static unsigned char *mem;
    if (!mem) {
        void *p =
            mmap(NULL, ARENA_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            abort();
        mem = p;
    }
    return mem;
}

static size_t take(const uint8_t **d, size_t *n, size_t bytes)
{
    size_t v = 0;
    for (size_t i = 0; i < bytes && *n; i++, (*d)++, (*n)--)
        v |= (size_t)**d << (8 * i);
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t nkinds = 0;
    const char *const *kinds = rtm_heap_kinds();
    while (kinds[nkinds])
        nkinds++;
    const char *kind = kinds[data[0] % nkinds];
    /* the same byte picks the hardening level: every level must keep the
     * model's contract on clean programs (FULL checks every few operations) */
    struct rtm_heap_config cfg = { .hardening = (int)((data[0] / nkinds) % 3),
                                   .check_interval = 1u + data[0] % 7u };
    /* 12 KiB to 76 KiB: above every kind's control structure */
    size_t heap_bytes = 12288 + (size_t)data[1] * 256;
    data += 2;
    size -= 2;

    unsigned char *mem = arena();
    memset(mem, 0xa5, ARENA_BYTES);
    unsigned long failed_before = test_checks_failed;
    struct rtm_heap *h = rtm_heap_create_ex(kind, mem + 160u * 1024, heap_bytes, &cfg);
    if (!h)
        return 0;
    struct model m;
    model_init(&m, h, mem, ARENA_BYTES, heap_bytes);
    uint64_t rng = 1;
    size_t next_pool = 0; /* pools go below the heap, 16 KiB apart */
    while (size && test_checks_failed == failed_before) {
        unsigned op = (unsigned)take(&data, &size, 1);
        size_t arg = take(&data, &size, 2);
        switch (op % 8) {
        case 0:
        case 1:
        case 2: model_alloc(&m, arg); break;
        case 3: model_aligned_alloc(&m, (size_t)1 << (op >> 4) % 13, arg % 4096); break;
        case 4: model_calloc(&m, arg & 31, arg >> 5); break;
        case 5:
            if (m.n)
                model_realloc(&m, (op >> 3) % m.n, arg);
            break;
        case 6:
            if (m.n)
                model_free(&m, arg % m.n);
            break;
        default:
            if ((op >> 3) % 4 == 0 && next_pool < 6) {
                size_t len = 512 + arg % (15u << 10);
                if (rtm_heap_add_pool(h, mem + next_pool * 16384 + (op >> 5), len) == 0)
                    model_pool_added(&m, len);
                next_pool++;
            } else if ((op >> 3) % 4 == 1) {
                rng = arg;
                model_bad_frees(&m, &rng);
            } else {
                model_checkpoint(&m);
            }
            break;
        }
    }
    if (test_checks_failed == failed_before) {
        model_checkpoint(&m);
        model_drain(&m, &rng);
    }
    model_fini(&m);
    if (test_checks_failed != failed_before)
        abort();
    return 0;
}
