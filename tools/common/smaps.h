/*
 * Bench kit: one mapping's entry of /proc/<pid>/smaps, by an address in it.
 *
 * The kernel writes, for each mapping, a header line ("start-end perms
 * offset dev inode path") and then one "Field: value kB" line per figure.
 * tk_smaps_find reads the entry whose range holds an address and keeps the
 * figures a tool needs to say which pages back the mapping: the page size
 * the kernel uses (KernelPageSize), what is present (Rss, and the hugetlb
 * pages, which Rss leaves out), and what transparent huge pages map
 * (AnonHugePages for private memory, ShmemPmdMapped for shmem: memfd, POSIX
 * and SysV shm, tmpfs files; FilePmdMapped for page-cache files).
 *
 * Bounds: reads the file line by line up to the entry (to write each entry
 * the kernel walks that mapping's page tables: O(pages mapped below the
 * address), under the process's mmap lock held for reading). Not for a
 * measured loop. Uses stdio and no memory of its own beyond the FILE.
 */
#ifndef RTMEM_TOOLS_SMAPS_H
#define RTMEM_TOOLS_SMAPS_H

#include <stdbool.h>
#include <stdint.h>

/* One entry, in bytes (smaps gives kB). A field the kernel does not write
 * (an older kernel has no FilePmdMapped) stays 0. */
struct tk_smaps_entry {
    uint64_t start, end;        /* the mapping's range [start, end) */
    uint64_t size_bytes;        /* Size */
    uint64_t kernel_page_bytes; /* KernelPageSize */
    uint64_t rss_bytes;         /* Rss: base pages and THP present */
    uint64_t anon_huge_bytes;   /* AnonHugePages */
    uint64_t shmem_pmd_bytes;   /* ShmemPmdMapped */
    uint64_t file_pmd_bytes;    /* FilePmdMapped */
    uint64_t hugetlb_bytes;     /* Shared_Hugetlb + Private_Hugetlb */
    char path[256];             /* what the header names ("" for anonymous memory), cut to fit */
};

/*
 * The entry holding addr in the smaps file at path (NULL: /proc/self/smaps)
 * into *e. Returns 0, -ENOENT when no entry holds addr, -EIO when the file
 * is malformed (a header without a range), or the negative errno of the
 * failed open or read.
 */
int tk_smaps_find(const char *path, const void *addr, struct tk_smaps_entry *e);

#endif /* RTMEM_TOOLS_SMAPS_H */
