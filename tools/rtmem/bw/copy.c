/*
 * `rtmem bw`: the copy methods.
 *
 * The dumb loop must stay a loop: gcc (loop distribution) and clang (loop
 * idiom recognition) turn `for (i...) d[i] = s[i];` into a call to memcpy,
 * which would make "dumb" a second memcpy row, as it may be in an mbw
 * built with -O2. An empty asm statement that clobbers memory, in the body,
 * stops both: the compiler must assume it reads and writes memory, so each
 * iteration's store happens before it and the next load after it, and the
 * loop can be neither replaced nor vectorised. What is timed is one 8-byte
 * load and one 8-byte store per element. tests/tools/test_bw.py proves it
 * on the built binary: `objdump -d --disassemble=bw_copy_dumb` shows no
 * call or jump to memcpy or memmove.
 *
 * The block methods put the same barrier after each block's memcpy, so
 * that mcblock-same's reads of one block cannot be merged.
 */
#include <stdint.h>
#include <string.h>

#include "bw.h"

#define BARRIER() __asm__ __volatile__("" ::: "memory")

__attribute__((noinline)) void bw_copy_dumb(void *dst, const void *src, size_t bytes)
{
    uint64_t *d = dst;
    const uint64_t *s = src;
    size_t n = bytes / sizeof(uint64_t);
    for (size_t i = 0; i < n; i++) {
        d[i] = s[i];
        BARRIER();
    }
}

/* memcpy in blocks, advancing through the array: each block's source and
 * destination are new. */
static void copy_blocks(char *d, const char *s, size_t bytes, size_t block)
{
    for (size_t at = 0; at < bytes; at += block) {
        size_t k = bytes - at < block ? bytes - at : block;
        memcpy(d + at, s + at, k);
        BARRIER();
    }
}

/* Debian mbw's MCBLOCK (mbw 1.2.2-1.1, as its disassembly shows:
 * docs/bw.md): as many memcpy calls as copy_blocks makes, each from the
 * first block of the source, which then stays in the L1 or L2 cache, to
 * the next block of the destination. Half the traffic of a copy. */
static void copy_same_block(char *d, const char *s, size_t bytes, size_t block)
{
    for (size_t at = 0; at < bytes; at += block) {
        size_t k = bytes - at < block ? bytes - at : block;
        memcpy(d + at, s, k);
        BARRIER();
    }
}

void bw_copy(enum bw_method m, void *dst, const void *src, size_t bytes, size_t block)
{
    switch (m) {
    case BW_MEMCPY: memcpy(dst, src, bytes); break;
    case BW_DUMB: bw_copy_dumb(dst, src, bytes); break;
    case BW_MCBLOCK: copy_blocks(dst, src, bytes, block); break;
    default: copy_same_block(dst, src, bytes, block); break;
    }
    BARRIER();
}
