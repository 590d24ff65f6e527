/* Shared heaps: the catalog of named objects, under the heap's lock. */
#include <errno.h>
#include <string.h>

#include "internal.h"
#include "../lock/lock.h"

/* A catalog name's length, or 0 for a NULL, empty or too long one. */
static size_t name_length(const char *name)
{
    if (!name)
        return 0;
    size_t n = strnlen(name, RTM_SHARED_CATALOG_NAME_MAX + 1);
    return n <= RTM_SHARED_CATALOG_NAME_MAX ? n : 0;
}

/* The entry in use under name, or NULL. With the lock held. */
static struct shared_entry *find(struct rtm_shared *s, const char *name)
{
    for (uint32_t i = 0; i < s->header->catalog_entries; i++) {
        struct shared_entry *e = &s->catalog[i];
        if (e->offset && strncmp(e->name, name, sizeof e->name) == 0)
            return e;
    }
    return NULL;
}

static struct shared_entry *find_free(struct rtm_shared *s)
{
    for (uint32_t i = 0; i < s->header->catalog_entries; i++)
        if (!s->catalog[i].offset)
            return &s->catalog[i];
    return NULL;
}

/* With the lock held: 0 or a negative errno. */
static int publish(struct rtm_shared *s, const char *name, size_t n, uint64_t off)
{
    if (find(s, name))
        return -EEXIST;
    struct shared_entry *e = find_free(s);
    if (!e)
        return -ENOSPC;
    memset(e->name, 0, sizeof e->name);
    memcpy(e->name, name, n);
    /* the name first, the offset that marks the entry in use last */
    __atomic_store_n(&e->offset, off, __ATOMIC_RELEASE);
    return 0;
}

int rtm_shared_publish(struct rtm_shared *s, const char *name, const void *p)
{
    size_t n = name_length(name);
    uint64_t off = rtm_shared_to_offset(s, p);
    if (!n || !off)
        return -EINVAL;
    int rc = rtm__heap_lock_hold(s->heap);
    if (rc)
        return rc;
    rc = publish(s, name, n, off);
    rtm__heap_lock_release(s->heap);
    return rc;
}

void *rtm_shared_lookup(struct rtm_shared *s, const char *name)
{
    if (!s || !name_length(name)) {
        errno = EINVAL;
        return NULL;
    }
    int rc = rtm__heap_lock_hold(s->heap);
    if (rc) {
        errno = -rc;
        return NULL;
    }
    struct shared_entry *e = find(s, name);
    uint64_t off = e ? e->offset : 0;
    rtm__heap_lock_release(s->heap);
    if (!off) {
        errno = ENOENT;
        return NULL;
    }
    void *p = rtm_shared_from_offset(s, off);
    if (!p)
        errno = EFAULT; /* an entry past the segment: not rtmem's writing */
    return p;
}

int rtm_shared_unpublish(struct rtm_shared *s, const char *name)
{
    if (!s || !name_length(name))
        return -EINVAL;
    int rc = rtm__heap_lock_hold(s->heap);
    if (rc)
        return rc;
    struct shared_entry *e = find(s, name);
    if (e)
        __atomic_store_n(&e->offset, 0, __ATOMIC_RELEASE); /* free before anything else */
    rtm__heap_lock_release(s->heap);
    return e ? 0 : -ENOENT;
}
