/* The page region: a ready page provider over a fixed range (rtmem/pages.h). */
#include <errno.h>
#include <string.h>

#include "rtmem/arena.h"
#include "rtmem/pages.h"
#include "page_stack.h"

/* "RTMP": set by create. */
#define REGION_MAGIC 0x504d5452u

struct rtm_page_region {
    uint32_t magic;
    uint32_t shift; /* log2 of the page size */
    size_t first;   /* offset of page 0 from the region */
    struct page_stack s;
    size_t peak_out; /* highest pages_out seen */
    size_t gets, puts;
    /* uint32_t stack[pages], then uint64_t out[ceil(pages / 64)]: a bit per
     * page that is out, so that a bad put is refused */
    uint32_t stack[];
};

_Static_assert(sizeof(struct rtm_page_region) <= 64, "pages.h promises under 64 bytes of head");

/* The head and the stack, rounded up to 8: where the bitmap starts (the
 * head is 8-aligned; 36 bytes long on 32-bit). */
static size_t bits_at(size_t pages)
{
    return (sizeof(struct rtm_page_region) + pages * sizeof(uint32_t) + 7) & ~(size_t)7;
}

static size_t region_book(size_t pages)
{
    return bits_at(pages) + (pages + 63) / 64 * sizeof(uint64_t);
}

static uint64_t *out_bits(const struct rtm_page_region *r)
{
    return (uint64_t *)(void *)((char *)(uintptr_t)r + bits_at(r->s.pages));
}

struct rtm_page_region *rtm_page_region_create(void *mem, size_t size, size_t page_size)
{
    uintptr_t lo = ((uintptr_t)mem + 7) & ~(uintptr_t)7, hi = (uintptr_t)mem + size;
    if (!mem || hi < (uintptr_t)mem || page_size < RTM_PAGES_MIN_SIZE ||
        page_size > RTM_PAGES_MAX_SIZE || (page_size & (page_size - 1))) {
        errno = EINVAL;
        return NULL;
    }
    uintptr_t first = 0;
    size_t n = hi > lo ? page_layout(lo, hi, page_size, region_book, &first) : 0;
    if (n == 0) {
        errno = ENOMEM;
        return NULL;
    }
    if (n > UINT32_MAX) {
        errno = E2BIG;
        return NULL;
    }
    struct rtm_page_region *r = (struct rtm_page_region *)lo;
    *r = (struct rtm_page_region){ .shift = (uint32_t)__builtin_ctzl(page_size),
                                   .first = (size_t)(first - lo),
                                   .s = { .pages = n } };
    memset(out_bits(r), 0, (n + 63) / 64 * sizeof(uint64_t));
    r->magic = REGION_MAGIC;
    return r;
}

struct rtm_page_region *rtm_page_region_on_arena(struct rtm_arena *a, size_t page_size)
{
    if (!a || !a->base) {
        errno = EINVAL;
        return NULL;
    }
    return rtm_page_region_create(a->base, a->size_bytes, page_size);
}

static void *provider_get(void *ctx)
{
    return rtm_page_region_get(ctx);
}

static void provider_put(void *ctx, void *page)
{
    (void)rtm_page_region_put(ctx, page);
}

struct rtm_page_provider rtm_page_region_provider(struct rtm_page_region *r)
{
    if (!r || r->magic != REGION_MAGIC)
        return (struct rtm_page_provider){ 0 };
    return (struct rtm_page_provider){ .get = provider_get,
                                       .put = provider_put,
                                       .ctx = r,
                                       .page_size = (size_t)1 << r->shift,
                                       .base = (char *)r + r->first,
                                       .span = r->s.pages << r->shift };
}

void *rtm_page_region_get(struct rtm_page_region *r)
{
    if (!r || r->magic != REGION_MAGIC)
        return NULL;
    size_t i = page_stack_pop(NULL, &r->s, r->stack);
    if (i == SIZE_MAX)
        return NULL;
    out_bits(r)[i / 64] |= (uint64_t)1 << (i % 64);
    r->gets++;
    if (page_stack_out(&r->s) > r->peak_out)
        r->peak_out = page_stack_out(&r->s);
    return (char *)r + r->first + (i << r->shift);
}

int rtm_page_region_put(struct rtm_page_region *r, void *page)
{
    if (!r || r->magic != REGION_MAGIC || !page)
        return -EINVAL;
    size_t rel = (size_t)((uintptr_t)page - (uintptr_t)r - r->first);
    size_t i = rel >> r->shift;
    if ((rel & (((size_t)1 << r->shift) - 1)) || i >= r->s.pages)
        return -EINVAL;
    uint64_t *w = &out_bits(r)[i / 64], bit = (uint64_t)1 << (i % 64);
    if (!(*w & bit))
        return -EINVAL;
    *w &= ~bit;
    page_stack_push(NULL, &r->s, r->stack, i);
    r->puts++;
    return 0;
}

int rtm_page_region_stats(const struct rtm_page_region *r, struct rtm_page_region_stats *out)
{
    if (!r || !out || r->magic != REGION_MAGIC)
        return -EINVAL;
    *out = (struct rtm_page_region_stats){ .page_size = (size_t)1 << r->shift,
                                           .pages = r->s.pages,
                                           .pages_out = page_stack_out(&r->s),
                                           .peak_out = r->peak_out,
                                           .gets = r->gets,
                                           .puts = r->puts };
    return 0;
}
