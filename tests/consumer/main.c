/* A program using an installed rtmem: one heap, one block. */
#include <stdio.h>
#include <string.h>

#include <rtmem/rtmem.h>

static unsigned char mem[64 * 1024];

int main(void)
{
    struct rtm_heap *h = rtm_heap_create(rtm_heap_kinds()[0], mem, sizeof(mem));
    char *p = h ? rtm_heap_alloc(h, 32) : NULL;
    if (!p)
        return 1;
    strcpy(p, "rtmem " RTMEM_VERSION_STRING);
    printf("consumer: %s\n", p);
    int rc = rtm_heap_free(h, p) || rtm_heap_check(h);
    return rc;
}
