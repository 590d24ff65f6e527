/*
 * Captures what a call writes to standard error or standard output, for
 * tests of messages and reports.
 *
 *     capture_begin();                    // standard error
 *     rc = call_that_complains();
 *     const char *err = capture_end();    // valid until the next capture
 *
 * capture_fd_begin(STDOUT_FILENO) / capture_fd_end() do the same for
 * another stream (one capture at a time).
 */
#ifndef RTMEM_TESTS_TOOLS_CAPTURE_H
#define RTMEM_TESTS_TOOLS_CAPTURE_H

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int capture_fd = -1;
static int capture_saved_fd = -1;
static FILE *capture_file;
static char capture_text[16384];

static inline void capture_fd_begin(int fd)
{
    fflush(stdout);
    fflush(stderr);
    capture_fd = fd;
    capture_file = tmpfile();
    capture_saved_fd = dup(fd);
    if (capture_file)
        dup2(fileno(capture_file), fd);
}

static inline const char *capture_fd_end(void)
{
    fflush(stdout);
    fflush(stderr);
    dup2(capture_saved_fd, capture_fd);
    close(capture_saved_fd);
    capture_text[0] = '\0';
    if (capture_file) {
        rewind(capture_file);
        size_t n = fread(capture_text, 1, sizeof(capture_text) - 1, capture_file);
        capture_text[n] = '\0';
        fclose(capture_file);
        capture_file = NULL;
    }
    return capture_text;
}

static inline void capture_begin(void)
{
    capture_fd_begin(STDERR_FILENO);
}

static inline const char *capture_end(void)
{
    return capture_fd_end();
}

#endif /* RTMEM_TESTS_TOOLS_CAPTURE_H */
