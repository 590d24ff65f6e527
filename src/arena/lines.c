/* Arenas: /proc and /sys files read line by line with read(2) into a
 * buffer on the caller's stack. Not stdio: its FILE and buffer come from
 * malloc, which a program may have put on an arena, and an open must not
 * call back into an allocator that may be the one asking for memory. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

bool rtm__arena_lines_open(struct rtm__arena_lines *l, const char *path)
{
    l->len = l->pos = 0;
    l->skip = l->eof = false;
    do
        l->fd = open(path, O_RDONLY | O_CLOEXEC);
    while (l->fd < 0 && errno == EINTR);
    return l->fd >= 0;
}

void rtm__arena_lines_close(struct rtm__arena_lines *l)
{
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
}

/* Appends what read gives to the buffer (which keeps one byte for a NUL);
 * false at the end of the file or on an error. */
static bool fill(struct rtm__arena_lines *l)
{
    if (l->pos > 0) {
        memmove(l->buf, l->buf + l->pos, l->len - l->pos);
        l->len -= l->pos;
        l->pos = 0;
    }
    ssize_t n;
    do
        n = read(l->fd, l->buf + l->len, sizeof l->buf - 1 - l->len);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        return false;
    l->len += (size_t)n;
    return true;
}

char *rtm__arena_lines_next(struct rtm__arena_lines *l)
{
    while (!l->eof) {
        char *start = l->buf + l->pos;
        char *nl = memchr(start, '\n', l->len - l->pos);
        if (nl) {
            *nl = '\0';
            l->pos = (size_t)(nl + 1 - l->buf);
            if (l->skip) { /* the rest of a line already given, cut */
                l->skip = false;
                continue;
            }
            return start;
        }
        if (l->pos == 0 && l->len == sizeof l->buf - 1) {
            /* A line longer than the buffer: its start, the rest skipped. */
            bool skipping = l->skip;
            l->buf[l->len] = '\0';
            l->len = 0;
            l->skip = true;
            if (!skipping)
                return l->buf;
            continue;
        }
        if (!fill(l)) {
            l->eof = true;
            if (l->len == l->pos || l->skip)
                return NULL;
            l->buf[l->len] = '\0'; /* a last line without its newline */
            start = l->buf + l->pos;
            l->pos = l->len;
            return start;
        }
    }
    return NULL;
}
