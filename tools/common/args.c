/* Bench kit: command-line parsing (args.h). */
#include "common/args.h"

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tk_args_bad(const struct tk_args *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", a->prog);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nTry '%s --help'.\n", a->prog);
    va_end(ap);
    return -1;
}

void tk_args_begin(void)
{
    opterr = 0;
    /* 0, not 1: glibc then also forgets where it was inside a group of
     * short options, which a parse that stopped early leaves behind. */
    optind = 0;
}

int tk_args_next(const struct tk_args *a, int argc, char **argv, const struct option *longopts)
{
    return tk_args_next_short(a, argc, argv, ":h", longopts);
}

int tk_args_next_short(const struct tk_args *a, int argc, char **argv, const char *shortopts,
                       const struct option *longopts)
{
    return tk_args_next_operands(a, argc, argv, shortopts, longopts, false);
}

int tk_args_next_operands(const struct tk_args *a, int argc, char **argv, const char *shortopts,
                          const struct option *longopts, bool operands)
{
    int c = getopt_long(argc, argv, shortopts, longopts, NULL);
    if (c == -1) {
        if (optind < argc && !operands)
            return tk_args_bad(a, "unexpected argument '%s'", argv[optind]);
        return 0;
    }
    if (c == '?') {
        if (optopt && optopt < 256) {
            char opt[3] = { '-', (char)optopt, 0 };
            return tk_args_bad(a, "unknown option '%s'", opt);
        }
        return tk_args_bad(a, "unknown option '%s'", argv[optind - 1]);
    }
    if (c == ':')
        return tk_args_bad(a, "option '%s' needs a value", argv[optind - 1]);
    return c;
}

/* The value s for messages: "" for NULL. */
static const char *shown(const char *s)
{
    return s ? s : "";
}

static bool starts_with_digit(const char *s)
{
    return s && *s >= '0' && *s <= '9';
}

int tk_args_u64(const struct tk_args *a, const char *opt, const char *s, uint64_t lo, uint64_t hi,
                uint64_t *out)
{
    if (!starts_with_digit(s))
        return tk_args_bad(a, "%s needs a whole number in [%llu, %llu], not '%s'", opt,
                           (unsigned long long)lo, (unsigned long long)hi, shown(s));
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end != '\0')
        return tk_args_bad(a, "%s: '%s' is not a whole number", opt, s);
    if (errno == ERANGE || v < lo || v > hi)
        return tk_args_bad(a, "%s: '%s' is out of range [%llu, %llu]", opt, s,
                           (unsigned long long)lo, (unsigned long long)hi);
    *out = v;
    return 0;
}

/* The binary shift of a K, M, G or T suffix at *end (advancing past it), or 0. */
static unsigned suffix_shift(char **end)
{
    switch (**end) {
    case 'k':
    case 'K': (*end)++; return 10;
    case 'm':
    case 'M': (*end)++; return 20;
    case 'g':
    case 'G': (*end)++; return 30;
    case 't':
    case 'T': (*end)++; return 40;
    default: return 0;
    }
}

int tk_args_bytes(const struct tk_args *a, const char *opt, const char *s, uint64_t lo, uint64_t hi,
                  uint64_t *out)
{
    if (!starts_with_digit(s))
        return tk_args_bad(a, "%s needs a byte count (e.g. %s), not '%s'", opt, a->bytes_example,
                           shown(s));
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    unsigned shift = suffix_shift(&end);
    if (shift && (strcmp(end, "iB") == 0 || strcmp(end, "B") == 0))
        end += strlen(end);
    else if (!shift && strcmp(end, "B") == 0)
        end++;
    if (*end != '\0')
        return tk_args_bad(a, "%s: '%s' is not a byte count (e.g. %s)", opt, s, a->bytes_example);
    if (errno == ERANGE || (shift && v > (UINT64_MAX >> shift)) || (v << shift) < lo ||
        (v << shift) > hi)
        return tk_args_bad(a, "%s: '%s' is out of range [%llu, %llu] bytes", opt, s,
                           (unsigned long long)lo, (unsigned long long)hi);
    *out = (uint64_t)v << shift;
    return 0;
}

/* Nanoseconds per unit of the suffix at s ("ns", "us", "ms", "s"), or 0. */
static uint64_t time_unit_ns(const char *s)
{
    static const struct {
        const char *name;
        uint64_t ns;
    } units[] = { { "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 } };
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (strcmp(s, units[i].name) == 0)
            return units[i].ns;
    return 0;
}

const char *tk_args_fmt_time(char *buf, size_t size, uint64_t ns)
{
    static const struct {
        const char *name;
        uint64_t ns;
    } units[] = { { "s", 1000000000 }, { "ms", 1000000 }, { "us", 1000 } };
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (ns != 0 && ns % units[i].ns == 0) {
            snprintf(buf, size, "%llu%s", (unsigned long long)(ns / units[i].ns), units[i].name);
            return buf;
        }
    snprintf(buf, size, "%lluns", (unsigned long long)ns);
    return buf;
}

int tk_args_time_ns(const struct tk_args *a, const char *opt, const char *s, uint64_t unit_ns,
                    uint64_t lo_ns, uint64_t hi_ns, uint64_t *out_ns)
{
    if (!starts_with_digit(s))
        return tk_args_bad(a, "%s needs a time (e.g. 250us, 1ms, 10s), not '%s'", opt, shown(s));
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    uint64_t unit = *end ? time_unit_ns(end) : unit_ns;
    if (unit == 0)
        return tk_args_bad(a,
                           "%s: '%s' is not a time (a whole number and ns, us, ms or s: "
                           "250us, 1ms, 10s)",
                           opt, s);
    if (errno == ERANGE || v > UINT64_MAX / unit || v * unit < lo_ns || v * unit > hi_ns) {
        /* A bare number is shown with the unit it was taken in. */
        char lo[24], hi[24], as[40] = "";
        if (!*end && errno != ERANGE && v <= UINT64_MAX / unit)
            snprintf(as, sizeof(as), " (%s)", tk_args_fmt_time(lo, sizeof(lo), v * unit));
        return tk_args_bad(a, "%s: '%s'%s is out of range [%s, %s]", opt, s, as,
                           tk_args_fmt_time(lo, sizeof(lo), lo_ns),
                           tk_args_fmt_time(hi, sizeof(hi), hi_ns));
    }
    *out_ns = (uint64_t)v * unit;
    return 0;
}

int tk_args_file(const struct tk_args *a, const char *opt, const char *s, const char **out)
{
    if (!s || !*s)
        return tk_args_bad(a, "%s needs a file name", opt);
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

int tk_args_cpu(const struct tk_args *a, const char *opt, const char *s, int *out)
{
    uint64_t v = 0;
    if (tk_args_u64(a, opt, s, 0, CPU_SETSIZE - 1, &v) != 0)
        return -1;
    /* Pinning to a CPU that does not exist, or that this process may not
     * use, would only fail later and leave the run unpinned. */
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0 && !CPU_ISSET((int)v, &allowed)) {
        char cpus[128];
        format_cpus(&allowed, cpus, sizeof(cpus));
        return tk_args_bad(a, "%s %s: no such CPU for this process (allowed: %s)", opt, s, cpus);
    }
    *out = (int)v;
    return 0;
}

int tk_args_priority(const struct tk_args *a, const char *opt, const char *s, int *out)
{
    uint64_t v = 0;
    if (tk_args_u64(a, opt, s, 1, 99, &v) != 0)
        return -1;
    *out = (int)v;
    return 0;
}
