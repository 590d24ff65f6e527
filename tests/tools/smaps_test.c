/*
 * The bench kit's smaps reader (tools/common/smaps.h), against its header
 * (the made-up addresses fit 32 bits, so that 32-bit builds read them too):
 * a made-up smaps file gives exactly the fields of the entry holding an
 * address (not its neighbours'), the hugetlb fields summed, a path kept;
 * an address in no entry is -ENOENT, a missing file its errno; and in this
 * process a private mapping of 4 pages, written, shows 4 KiB pages and
 * 16 KiB resident in /proc/self/smaps.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "common/smaps.h"

static const char made_up[] = "00400000-00401000 r-xp 00000000 08:01 123 /bin/true\n"
                              "Size:                  4 kB\n"
                              "KernelPageSize:        4 kB\n"
                              "Rss:                   4 kB\n"
                              "VmFlags: rd ex mr mw me\n"
                              "40000000-80000000 rw-s 00000000 00:01 77 /memfd:rtmem (deleted)\n"
                              "Size:            1048576 kB\n"
                              "KernelPageSize:     2048 kB\n"
                              "MMUPageSize:        2048 kB\n"
                              "Rss:                   0 kB\n"
                              "AnonHugePages:         0 kB\n"
                              "ShmemPmdMapped:        6 kB\n"
                              "FilePmdMapped:         7 kB\n"
                              "Shared_Hugetlb:   524288 kB\n"
                              "Private_Hugetlb:    2048 kB\n"
                              "VmFlags: rd wr sh mr mw me ms de ht\n"
                              "80000000-80200000 rw-p 00000000 00:00 0 \n"
                              "Size:               2048 kB\n"
                              "KernelPageSize:        4 kB\n"
                              "Rss:                2048 kB\n"
                              "AnonHugePages:      2048 kB\n";

/* The directory for made-up files: the argument, or this one. */
static const char *files_dir(void)
{
    return test_argc > 0 ? test_argv[0] : ".";
}

TEST_CASE("a made-up smaps gives exactly the fields of the entry holding an address")
{
    const char *dir = files_dir();
    char path[512];
    snprintf(path, sizeof(path), "%s/smaps", dir);
    FILE *f = fopen(path, "w");
    REQUIRE(f != NULL, );
    fputs(made_up, f);
    fclose(f);

    struct tk_smaps_entry e;
    CHECK_EQ(tk_smaps_find(path, (void *)(uintptr_t)0x40100000u, &e), 0);
    CHECK_EQ(e.start, 0x40000000u);
    CHECK_EQ(e.end, 0x80000000u);
    CHECK_EQ(e.size_bytes, 1048576ull * 1024);
    CHECK_EQ(e.kernel_page_bytes, 2048ull * 1024);
    CHECK_EQ(e.rss_bytes, 0);
    CHECK_EQ(e.shmem_pmd_bytes, 6 * 1024);
    CHECK_EQ(e.file_pmd_bytes, 7 * 1024);
    CHECK_EQ(e.hugetlb_bytes, (524288ull + 2048) * 1024);
    CHECK(strcmp(e.path, "/memfd:rtmem (deleted)") == 0);

    /* The last entry, and its first byte; the one before its end. */
    CHECK_EQ(tk_smaps_find(path, (void *)(uintptr_t)0x80000000u, &e), 0);
    CHECK_EQ(e.anon_huge_bytes, 2048 * 1024);
    CHECK_EQ(e.kernel_page_bytes, 4096);
    CHECK_EQ(e.hugetlb_bytes, 0);
    CHECK(strcmp(e.path, "") == 0);
    CHECK_EQ(tk_smaps_find(path, (void *)0x400fffull, &e), 0);
    CHECK_EQ(e.rss_bytes, 4096);
    CHECK_EQ(e.anon_huge_bytes, 0);

    /* End bounds are exclusive; nothing there. */
    CHECK_EQ(tk_smaps_find(path, (void *)0x401000ull, &e), -ENOENT);
    CHECK_EQ(tk_smaps_find(path, (void *)(uintptr_t)0x80200000u, &e), -ENOENT);
    unlink(path);
    CHECK_EQ(tk_smaps_find(path, (void *)0x400000ull, &e), -ENOENT); /* the file is gone */
}

TEST_CASE("a private mapping of this process shows its pages and what is resident")
{
    /* qemu-user passes smaps through for a 64-bit program on a 64-bit host
     * (the same addresses), but maps a 32-bit one at an offset into its
     * own address space: its smaps is not the program's. */
    const char *emu = test_emulated();
    if (emu && sizeof(void *) == 4) {
        printf("tools.smaps: this process's own mapping not checked under %s: a 32-bit "
               "program's addresses are not the host's\n",
               emu);
        return;
    }
    long page = sysconf(_SC_PAGESIZE);
    /* Guard pages on either side so that no neighbour merges with it. */
    char *m = mmap(NULL, (size_t)page * 6, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(m != MAP_FAILED, );
    char *p = mmap(m + page, (size_t)page * 4, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    REQUIRE(p != MAP_FAILED, );
    madvise(p, (size_t)page * 4, MADV_NOHUGEPAGE);
    for (int i = 0; i < 4; i++)
        p[i * page] = 1;
    struct tk_smaps_entry e;
    CHECK_EQ(tk_smaps_find(NULL, p + page, &e), 0);
    CHECK_EQ(e.start, (uintptr_t)p);
    CHECK_EQ(e.size_bytes, 4 * (uint64_t)page);
    CHECK_EQ(e.kernel_page_bytes, (uint64_t)page);
    CHECK_EQ(e.rss_bytes, 4 * (uint64_t)page);
    munmap(m, (size_t)page * 6);
    CHECK_EQ(tk_smaps_find(NULL, p, &e), -ENOENT);
}

/* A mapping whose path is longer than any fixed line buffer, and whose
 * tail looks like a header ("7f...-7f... "): read as one line. */
TEST_CASE("a path longer than any line buffer is read as one line")
{
    const char *dir = files_dir();
    char path[512];
    snprintf(path, sizeof(path), "%s/smaps-long", dir);
    FILE *f = fopen(path, "w");
    REQUIRE(f != NULL, );
    fputs("40000000-40200000 rw-s 00000000 00:01 7 /dev/shm/", f);
    for (int i = 0; i < 600; i++)
        fputc('d', f);
    fputs("40000000-40200000 x\nSize: 2048 kB\nKernelPageSize: 4 kB\nRss: 8 kB\n", f);
    fclose(f);
    struct tk_smaps_entry e;
    CHECK_EQ(tk_smaps_find(path, (void *)(uintptr_t)0x40001000u, &e), 0);
    CHECK_EQ(e.size_bytes, 2048 * 1024);
    CHECK_EQ(e.kernel_page_bytes, 4096);
    CHECK_EQ(e.rss_bytes, 8192);
    unlink(path);
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, "tools.smaps");
}
