/* Arenas: the message that says what failed or was not obtained. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

int rtm__arena_fail(struct rtm_arena *a, int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->message, sizeof(a->message), fmt, ap);
    va_end(ap);
    return -err;
}

void rtm__arena_warn(struct rtm_arena *a, const char *fmt, ...)
{
    size_t used = strlen(a->message);
    if (used + 3 >= sizeof(a->message))
        return;
    if (used) {
        memcpy(a->message + used, "; ", 3);
        used += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->message + used, sizeof(a->message) - used, fmt, ap);
    va_end(ap);
}

const char *rtm__arena_bytes_text(uint64_t bytes, char *buf, size_t size)
{
    static const char *const units[] = { "GiB", "MiB", "KiB" };
    static const unsigned shifts[] = { 30, 20, 10 };
    if (bytes == 0)
        return "0";
    for (int i = 0; i < 3; i++) {
        uint64_t unit = (uint64_t)1 << shifts[i];
        if (bytes >= unit && bytes % unit == 0) {
            snprintf(buf, size, "%" PRIu64 " %s", bytes / unit, units[i]);
            return buf;
        }
    }
    snprintf(buf, size, "%" PRIu64 " bytes", bytes);
    return buf;
}

int rtm__arena_open_fail(struct rtm_arena *a, const struct rtm__arena_plan *p, int err)
{
    const struct rtm_arena_config *cfg = p->cfg;
    bool existing = (cfg->flags & RTM_ARENA_EXISTING) || cfg->source == RTM_ARENA_DEVICE;
    switch (err) {
    case ENOENT:
        if (cfg->source == RTM_ARENA_DEVICE)
            return rtm__arena_fail(a, err,
                                   "no %s: is the driver that creates it loaded (for UIO: "
                                   "/sys/class/uio), or the memory reserved at boot?",
                                   p->what);
        if (existing)
            return rtm__arena_fail(a, err, "no %s to use (RTM_ARENA_EXISTING): create it first",
                                   p->what);
        return rtm__arena_fail(a, err, "cannot create %s: its directory does not exist", p->what);
    case EEXIST:
        if (cfg->source == RTM_ARENA_POSIX_SHM)
            return rtm__arena_fail(a, err,
                                   "%s exists: set RTM_ARENA_EXISTING to use it (it is then "
                                   "never resized or removed), or remove it (rm /dev/shm%s)",
                                   p->what, cfg->name);
        return rtm__arena_fail(a, err,
                               "%s exists: set RTM_ARENA_EXISTING to use it (it is then never "
                               "resized, truncated or removed), or choose another name",
                               p->what);
    case EACCES:
    case EPERM:
        return rtm__arena_fail(a, err, "no permission to %s %s (%s)%s",
                               existing ? "open" : "create", p->what, strerror(err),
                               cfg->source == RTM_ARENA_DEVICE
                                   ? ": device nodes need root, their group, or a capability "
                                     "(/dev/mem: CAP_SYS_RAWIO)"
                                   : "");
    case ENXIO:
    case ENODEV:
        return rtm__arena_fail(a, err,
                               "%s exists but no driver answers it (%s): the kernel lacks its "
                               "driver (for /dev/mem: CONFIG_DEVMEM)",
                               p->what, strerror(err));
    case EISDIR: return rtm__arena_fail(a, err, "%s is a directory", p->what);
    case EROFS: return rtm__arena_fail(a, err, "%s is on a read-only filesystem", p->what);
    default: return rtm__arena_fail(a, err, "opening %s failed: %s", p->what, strerror(err));
    }
}
