/*
 * Bench kit: command-line parsing for the rtmem subcommands, with one voice
 * for every complaint.
 *
 * A subcommand describes itself once (struct tk_args) and parses with
 * getopt_long through tk_args_next; each option's value goes through one of
 * the value parsers below. Every refusal is reported on stderr as
 *
 *     <prog>: <what is wrong>
 *     Try '<prog> --help'.
 *
 * and returned as -1, so the caller only has to exit with its usage status.
 *
 *     static const struct tk_args args = {"rtmem bench", "4096, 64K, 64M"};
 *     tk_args_begin();
 *     int c;
 *     while ((c = tk_args_next(&args, argc, argv, long_opts)) > 0)
 *         ... c == 'h': print the help; else apply option c, value optarg ...
 *     if (c < 0) ... bad usage (reported) ...
 *
 * Numbers are decimal digits only: no sign, no space, no base prefix, so
 * "-1" and " 5" are refused rather than wrapped or skipped. Byte counts take
 * a binary K, M, G or T suffix (1K = 1024), optionally followed by "B" or "iB";
 * a bare number may end in "B". Times are a whole number and a unit, ns, us,
 * ms or s ("250us", "10s"); a bare number is in the unit the option states.
 */
#ifndef RTMEM_TOOLS_ARGS_H
#define RTMEM_TOOLS_ARGS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The exit status of every rtmem command. */
enum {
    TK_EXIT_OK = 0,     /* the run completed and every check passed */
    TK_EXIT_FAILED = 1, /* a functional failure or a run-time error */
    TK_EXIT_USAGE = 2,  /* bad usage: nothing was run */
};

struct tk_args {
    const char *prog;          /* "rtmem bench": starts every message */
    const char *bytes_example; /* "4096, 64K, 64M": examples in byte-count messages */
};

/* Reports bad usage: "<prog>: " and fmt formatted as printf does, then the
 * --help hint, on stderr. Always returns -1. */
int tk_args_bad(const struct tk_args *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Starts a parse at argv[1] with getopt's own messages off (tk_args_next
 * names the subcommand in its own). Call once before the first
 * tk_args_next of a parse. */
void tk_args_begin(void);

/*
 * Next option of argv, by getopt_long with the short option -h and the long
 * options given (the table must hold required_argument/no_argument entries
 * whose codes are 'h' or above 255). Returns the option's code ('h' for -h
 * or an entry with that code), its value in optarg; 0 when the options are
 * done; -1 after reporting an unknown option, a missing value, or an operand
 * (the subcommands take none).
 */
int tk_args_next(const struct tk_args *a, int argc, char **argv, const struct option *longopts);
/* tk_args_next with getopt's short options as given (starting with ':'
 * and holding 'h'). */
int tk_args_next_short(const struct tk_args *a, int argc, char **argv, const char *shortopts,
                       const struct option *longopts);
/* tk_args_next_short that, with operands, leaves the arguments that are
 * no option (getopt moves them to the end: argv[optind..argc)) to the
 * caller instead of refusing them. */
int tk_args_next_operands(const struct tk_args *a, int argc, char **argv, const char *shortopts,
                          const struct option *longopts, bool operands);

/* A whole number s for option opt (named in messages, e.g. "--ops") within
 * [lo, hi] into *out. Returns 0, or -1 (reported; *out untouched). */
int tk_args_u64(const struct tk_args *a, const char *opt, const char *s, uint64_t lo, uint64_t hi,
                uint64_t *out);

/* A byte count s (suffixes as above) within [lo, hi] bytes into *out.
 * Returns 0, or -1 (reported; *out untouched). */
int tk_args_bytes(const struct tk_args *a, const char *opt, const char *s, uint64_t lo, uint64_t hi,
                  uint64_t *out);

/* A time s (a whole number and a unit: ns, us, ms or s) within [lo_ns,
 * hi_ns] nanoseconds into *out_ns. A bare number is in units of unit_ns
 * (1000 for microseconds, 1000000000 for seconds); unit_ns 0 refuses it
 * (the unit is then required). Returns 0, or -1 (reported, the range in
 * the same units as --help writes them; *out_ns untouched). */
int tk_args_time_ns(const struct tk_args *a, const char *opt, const char *s, uint64_t unit_ns,
                    uint64_t lo_ns, uint64_t hi_ns, uint64_t *out_ns);

/* A time in nanoseconds as the options write it: in the largest of s, ms,
 * us and ns that divides it ("1ms", "1500us", "10s", "0ns"). Into buf (>=
 * 24 bytes); returns buf. */
const char *tk_args_fmt_time(char *buf, size_t size, uint64_t ns);

/* A file name s for opt: anything but NULL or empty, into *out. Returns 0, or
 * -1 (reported). */
int tk_args_file(const struct tk_args *a, const char *opt, const char *s, const char **out);

/* --cpu N: a CPU this process may run on (in its affinity mask, so one
 * that exists and is online), for tk_rt_request.cpu. Returns 0, or -1
 * (reported, with the CPUs it may use). */
int tk_args_cpu(const struct tk_args *a, const char *opt, const char *s, int *out);

/* --prio N: a SCHED_FIFO priority, 1..99, for tk_rt_request.priority.
 * Returns 0, or -1 (reported). */
int tk_args_priority(const struct tk_args *a, const char *opt, const char *s, int *out);

#endif /* RTMEM_TOOLS_ARGS_H */
