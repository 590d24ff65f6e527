/* Bench kit: command-line parsing (args.h). */
#include "common/args.h"

#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tk_args_bad(const struct tk_args *a, const char *fmt, const char *arg)
{
    fprintf(stderr, "%s: ", a->prog);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry '%s --help'.\n", a->prog);
    return -1;
}

void tk_args_begin(void)
{
    opterr = 0;
    optind = 1;
}

int tk_args_next(const struct tk_args *a, int argc, char **argv, const struct option *longopts)
{
    int c = getopt_long(argc, argv, ":h", longopts, NULL);
    if (c == -1) {
        if (optind < argc)
            return tk_args_bad(a, "unexpected argument '%s'", argv[optind]);
        return 0;
    }
    if (c == '?') {
        if (optopt && optopt < 256) {
            char opt[3] = {'-', (char)optopt, 0};
            return tk_args_bad(a, "unknown option '%s'", opt);
        }
        return tk_args_bad(a, "unknown option '%s'", argv[optind - 1]);
    }
    if (c == ':')
        return tk_args_bad(a, "option '%s' needs a value", argv[optind - 1]);
    return c;
}

/* Reports msg (the option already named in it) with its one %s filled by
 * the value s, "" for NULL. Returns -1. */
static int bad_value(const struct tk_args *a, const char *msg, const char *s)
{
    return tk_args_bad(a, msg, s ? s : "");
}

static bool starts_with_digit(const char *s)
{
    return s && *s >= '0' && *s <= '9';
}

int tk_args_u64(const struct tk_args *a, const char *opt, const char *s, uint64_t lo,
                uint64_t hi, uint64_t *out)
{
    char msg[160];
    if (!starts_with_digit(s)) {
        snprintf(msg, sizeof(msg), "%s needs a whole number in [%llu, %llu], not '%%s'", opt,
                 (unsigned long long)lo, (unsigned long long)hi);
        return bad_value(a, msg, s);
    }
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end != '\0') {
        snprintf(msg, sizeof(msg), "%s: '%%s' is not a whole number", opt);
        return bad_value(a, msg, s);
    }
    if (errno == ERANGE || v < lo || v > hi) {
        snprintf(msg, sizeof(msg), "%s: '%%s' is out of range [%llu, %llu]", opt,
                 (unsigned long long)lo, (unsigned long long)hi);
        return bad_value(a, msg, s);
    }
    *out = v;
    return 0;
}

/* The binary shift of a K, M, G or T suffix at *end (advancing past it), or 0. */
static unsigned suffix_shift(char **end)
{
    switch (**end) {
    case 'k': case 'K': (*end)++; return 10;
    case 'm': case 'M': (*end)++; return 20;
    case 'g': case 'G': (*end)++; return 30;
    case 't': case 'T': (*end)++; return 40;
    default: return 0;
    }
}

int tk_args_bytes(const struct tk_args *a, const char *opt, const char *s, uint64_t lo,
                  uint64_t hi, uint64_t *out)
{
    char msg[160];
    if (!starts_with_digit(s)) {
        snprintf(msg, sizeof(msg), "%s needs a byte count (e.g. %s), not '%%s'", opt,
                 a->bytes_example);
        return bad_value(a, msg, s);
    }
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    unsigned shift = suffix_shift(&end);
    if (shift && (strcmp(end, "iB") == 0 || strcmp(end, "B") == 0))
        end += strlen(end);
    else if (!shift && strcmp(end, "B") == 0)
        end++;
    if (*end != '\0') {
        snprintf(msg, sizeof(msg), "%s: '%%s' is not a byte count (e.g. %s)", opt,
                 a->bytes_example);
        return bad_value(a, msg, s);
    }
    if (errno == ERANGE || (shift && v > (UINT64_MAX >> shift)) || (v << shift) < lo ||
        (v << shift) > hi) {
        snprintf(msg, sizeof(msg), "%s: '%%s' is out of range [%llu, %llu] bytes", opt,
                 (unsigned long long)lo, (unsigned long long)hi);
        return bad_value(a, msg, s);
    }
    *out = (uint64_t)v << shift;
    return 0;
}

int tk_args_file(const struct tk_args *a, const char *opt, const char *s, const char **out)
{
    if (!s || !*s) {
        char msg[96];
        snprintf(msg, sizeof(msg), "%s needs a file name%%s", opt);
        return tk_args_bad(a, msg, "");
    }
    *out = s;
    return 0;
}

/* The CPUs of set as "0-3,6", into buf. */
static void format_cpus(const cpu_set_t *set, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int c = 0; c < CPU_SETSIZE && len < size; c++) {
        if (!CPU_ISSET(c, set) || (c > 0 && CPU_ISSET(c - 1, set)))
            continue;
        int last = c;
        while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, set))
            last++;
        int n = last == c ? snprintf(buf + len, size - len, "%s%d", len ? "," : "", c)
                          : snprintf(buf + len, size - len, "%s%d-%d", len ? "," : "", c, last);
        len += n > 0 ? (size_t)n : 0;
    }
}

int tk_args_cpu(const struct tk_args *a, const char *s, int *out)
{
    uint64_t v;
    if (tk_args_u64(a, "--cpu", s, 0, CPU_SETSIZE - 1, &v) != 0)
        return -1;
    /* Pinning to a CPU that does not exist, or that this process may not
     * use, would only fail later and leave the run unpinned. */
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0 && !CPU_ISSET((int)v, &allowed)) {
        char cpus[128], msg[224];
        format_cpus(&allowed, cpus, sizeof(cpus));
        snprintf(msg, sizeof(msg), "--cpu %%s: no such CPU for this process (allowed: %s)",
                 cpus);
        return bad_value(a, msg, s);
    }
    *out = (int)v;
    return 0;
}

int tk_args_priority(const struct tk_args *a, const char *s, int *out)
{
    uint64_t v;
    if (tk_args_u64(a, "--prio", s, 1, 99, &v) != 0)
        return -1;
    *out = (int)v;
    return 0;
}
