/*
 * Bench kit: a tool's options as one table, which drives the parsing, the
 * messages for bad values and the options part of --help.
 *
 * Each entry names a long option, its type and range, the field of the
 * tool's options struct it sets, and its help line. The driver (tool.h)
 * starts from the tool's defaults, applies the options in the order given
 * (a later one wins; TK_OPT_FILES appends), then, under --quick, the quick
 * value of every option that has one and was not given.
 *
 *     struct my_opts { uint64_t ops; bool quick; const char *json_path; };
 *     static const struct tk_opt my_table[] = {
 *         {"ops", TK_OPT_UINT, "N", "operations per pass (default %D; --quick %Q)",
 *          TK_FIELD(struct my_opts, ops), .lo = 1, .hi = 1000000, .quick = 1000,
 *          .flags = TK_OPTF_QUICK},
 *         TK_OPT_KIT_QUICK(TK_FIELD(struct my_opts, quick)),
 *         TK_OPT_KIT_JSON(TK_FIELD(struct my_opts, json_path)),
 *     };
 *
 * In a help line, %D stands for the option's default (read from the
 * defaults: a byte count written as 64M when it is a whole number of K, M,
 * G or T, a time as 1ms), %Q for its --quick value, %% for %. --help is a
 * synopsis: each option on one line, "  --name ARG" and its help line, a
 * few words that the tool's manual (docs/<tool>.md) expands on.
 */
#ifndef RTMEM_TOOLS_OPT_H
#define RTMEM_TOOLS_OPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/args.h"

/* Options a table can hold. */
#define TK_MAX_OPTS 64

enum tk_opt_type {
    TK_OPT_FLAG,   /* no value: sets a bool field to true */
    TK_OPT_UINT,   /* a whole number in [lo, hi] into an unsigned field of 1, 2, 4 or 8 bytes */
    TK_OPT_BYTES,  /* a byte count (args.h suffixes) in [lo, hi] into an unsigned field */
    TK_OPT_FILE,   /* a non-empty name into a const char * field */
    TK_OPT_STRING, /* any value into a const char * field */
    TK_OPT_FILES,  /* a non-empty name appended to a const char *[hi] field; the
                      * count in the size_t field at count_offset; at most hi. Named
                      * in the singular: one too many is "--plugin: at most 4
                      * plugins; 'x' is one more" */
    TK_OPT_CHOICE, /* one of choices (NULL-terminated) into an int field, its index */
    TK_OPT_CPU,    /* a CPU this process may run on (tk_args_cpu) into an int field */
    TK_OPT_PRIO,   /* a SCHED_FIFO priority (tk_args_priority) into an int field */
    TK_OPT_TIME,   /* a time (tk_args_time_ns: "250us", "10s"; a bare number in units of
                    * unit_ns) in [lo, hi] nanoseconds into a uint64_t field, in ns;
                    * --help writes it as "1ms" */
    TK_OPT_SIZES,  /* byte counts B[,B...], repeatable, into a struct tk_sizes: ascending,
                    * each once; multiples of lo (0: any), at most hi, at most
                    * TK_MAX_SIZES; the first one given replaces the default list */
    TK_OPT_SEED,   /* a whole number, or "random" (drawn from the kernel), into a uint64_t */
    TK_OPT_CUSTOM, /* parse(cli, value, field) does it */
};

/* A list of byte counts (TK_OPT_SIZES), ascending, each once. */
#define TK_MAX_SIZES 64
struct tk_sizes {
    uint64_t bytes[TK_MAX_SIZES];
    size_t n;
};

/* Puts v into s in order, once. False if s is full and v not in it. O(n). */
bool tk_sizes_insert(struct tk_sizes *s, uint64_t v);

/* Bits of struct tk_opt.flags. */
enum {
    TK_OPTF_QUICK = 1u << 0,        /* has a --quick value, .quick */
    TK_OPTF_QUICK_SWITCH = 1u << 1, /* this flag is --quick itself */
    TK_OPTF_KIT = 1u << 2,          /* one of the options below that every tool shares */
};

/*
 * The options several tools take, each with one meaning everywhere, defined
 * here once: name, type, value name and help line (docs/tools.md, "Options
 * every tool shares", is their manual). A tool's table takes them through
 * these macros and gives only its field (TK_FIELD), and where they have one
 * its range and --quick value; tk_opt_check refuses a table that spells one
 * of these names itself. --help adds the default (and the --quick value) to
 * the kit's line, from the tool's defaults; a list of sizes shows none.
 *   --cpu, --prio, --no-rt  the real-time setup (rt.h, struct tk_rt_opts)
 *   --json FILE             the result file (result.h)
 *   --quick                 a short run: every option's --quick value
 *   --duration T            how long the run measures; a bare number is seconds
 *   --sizes B[,B...]        the sizes measured instead of the tool's own
 *   --seed N|random         the seed of the run's random draws
 *   --kinds a,b,...         the allocators, in that order (kinds.h)
 *   --plugin FILE.so        a heap plugin, repeatable (alloc.h)
 *   --timeout SECONDS       a measuring child without progress this long is killed
 *   --force                 past the checks that keep a run within the machine's memory
 */
#define TK_HELP_CPU      "the CPU to pin to"
#define TK_HELP_PRIO     "its SCHED_FIFO priority, 1..99"
#define TK_HELP_NO_RT    "SCHED_OTHER, unpinned unless --cpu is given"
#define TK_HELP_JSON     "also write the results as JSON to FILE"
#define TK_HELP_QUICK    "a short run, for smoke tests"
#define TK_HELP_DURATION "how long it measures"
#define TK_HELP_SIZES    "the sizes to measure instead of the defaults"
#define TK_HELP_SEED     "the seed of random draws"
#define TK_HELP_KINDS    "the allocators, in this order (names below)"
#define TK_HELP_PLUGIN   "also run a heap plugin (repeatable)"
#define TK_HELP_TIMEOUT  "kill a child stuck this long (0: never)"
#define TK_HELP_FORCE    "run past half of the free memory or disk"

#define TK_OPT_KIT_CPU(field) { "cpu", TK_OPT_CPU, "N", TK_HELP_CPU, field, .flags = TK_OPTF_KIT }
#define TK_OPT_KIT_PRIO(field) \
    { "prio", TK_OPT_PRIO, "N", TK_HELP_PRIO, field, .flags = TK_OPTF_KIT }
#define TK_OPT_KIT_NO_RT(field) \
    { "no-rt", TK_OPT_FLAG, NULL, TK_HELP_NO_RT, field, .flags = TK_OPTF_KIT }
/* --cpu, --prio and --no-rt on a struct tk_rt_opts member (rt.h). */
#define TK_OPT_KIT_RT(type, member)                                                               \
    TK_OPT_KIT_CPU(TK_FIELD(type, member.cpu)), TK_OPT_KIT_PRIO(TK_FIELD(type, member.priority)), \
        TK_OPT_KIT_NO_RT(TK_FIELD(type, member.no_rt))
#define TK_OPT_KIT_JSON(field) \
    { "json", TK_OPT_FILE, "FILE", TK_HELP_JSON, field, .flags = TK_OPTF_KIT }
#define TK_OPT_KIT_QUICK(field)                                                 \
    {                                                                           \
        "quick",       TK_OPT_FLAG, NULL,                                       \
        TK_HELP_QUICK, field,       .flags = TK_OPTF_KIT | TK_OPTF_QUICK_SWITCH \
    }
/* flags: TK_OPTF_QUICK with a quick value, else 0. */
#define TK_OPT_KIT_DURATION(field, lo_, hi_, quick_, flags_) \
    { "duration",                                            \
      TK_OPT_TIME,                                           \
      "T",                                                   \
      TK_HELP_DURATION,                                      \
      field,                                                 \
      .lo = (lo_),                                           \
      .hi = (hi_),                                           \
      .quick = (quick_),                                     \
      .flags = TK_OPTF_KIT | (flags_),                       \
      .unit_ns = 1000000000u }
/* granule: the sizes are multiples of it (0: any); max: the largest. */
#define TK_OPT_KIT_SIZES(field, granule, max)               \
    { "sizes", TK_OPT_SIZES,    "B[,B...]",  TK_HELP_SIZES, \
      field,   .lo = (granule), .hi = (max), .flags = TK_OPTF_KIT }
#define TK_OPT_KIT_SEED(field) \
    { "seed", TK_OPT_SEED, "N|random", TK_HELP_SEED, field, .flags = TK_OPTF_KIT }
#define TK_OPT_KIT_KINDS(field) \
    { "kinds", TK_OPT_STRING, "a,b,...", TK_HELP_KINDS, field, .flags = TK_OPTF_KIT }
/* list: a const char *[TK_MAX_PLUGINS] member, count its size_t count. */
#define TK_OPT_KIT_PLUGIN(type, list, count) \
    { "plugin",                              \
      TK_OPT_FILES,                          \
      "FILE.so",                             \
      TK_HELP_PLUGIN,                        \
      TK_FIELD(type, list),                  \
      .hi = TK_MAX_PLUGINS,                  \
      .count_offset = offsetof(type, count), \
      .flags = TK_OPTF_KIT }
#define TK_OPT_KIT_TIMEOUT(field, max)                      \
    { "timeout", TK_OPT_UINT, "SECONDS",   TK_HELP_TIMEOUT, \
      field,     .lo = 0,     .hi = (max), .flags = TK_OPTF_KIT }
#define TK_OPT_KIT_FORCE(field) \
    { "force", TK_OPT_FLAG, NULL, TK_HELP_FORCE, field, .flags = TK_OPTF_KIT }

/* Plugins a tool loads at most (--plugin; kinds.h loads them). */
#define TK_MAX_PLUGINS 4

struct tk_opt {
    const char *name; /* "ops", for --ops */
    enum tk_opt_type type;
    const char *arg;            /* the value's name in --help ("N", "B", "FILE"); NULL for flags */
    const char *help;           /* %D default, %Q quick value, '\n' a new line */
    size_t offset, size;        /* the field in the options struct (TK_FIELD) */
    uint64_t lo, hi;            /* range (TK_OPT_UINT, _BYTES, _TIME); TK_OPT_FILES: capacity */
    uint64_t quick;             /* the value under --quick (TK_OPTF_QUICK) */
    unsigned flags;             /* TK_OPTF_* */
    size_t count_offset;        /* TK_OPT_FILES: the size_t count field */
    const char *const *choices; /* TK_OPT_CHOICE */
    /* TK_OPT_CUSTOM: value into field (reported on failure: 0 or -1). */
    int (*parse)(const struct tk_args *cli, const char *value, void *field);
    uint64_t unit_ns; /* TK_OPT_TIME: the unit of a bare number (1000: us); 0: none */
    char letter;      /* a short form ('o' for -o), or 0 */
};

#define TK_FIELD(type, field) .offset = offsetof(type, field), .size = sizeof(((type *)0)->field)

/* What a parse found. */
struct tk_opt_parse {
    bool given[TK_MAX_OPTS]; /* per table entry: given on the command line */
    bool help;               /* -h or --help: the rest was not parsed */
    bool quiet;              /* --quiet: no progress line (progress.h) */
};

/*
 * Parses argv[1..] (argv[0] the subcommand's name) into opts, which the
 * caller set to the defaults: every entry of table applied in order, then
 * the quick values if the TK_OPTF_QUICK_SWITCH flag is set. Operands are
 * refused. Returns 0 (p->help set if -h or --help came first), or -1 after
 * reporting the first bad option (cli.h's voice; opts then partly set).
 * O(argc * n).
 */
int tk_opt_parse(const struct tk_args *cli, const struct tk_opt *table, size_t n, int argc,
                 char **argv, void *opts, struct tk_opt_parse *p);
/* tk_opt_parse that takes operands: the arguments that are no option, which
 * it moves to argv[*first_operand..argc). */
int tk_opt_parse_operands(const struct tk_args *cli, const struct tk_opt *table, size_t n, int argc,
                          char **argv, void *opts, struct tk_opt_parse *p, int *first_operand);

/*
 * Checks a table against its defaults, as the driver does before every
 * parse: names (unique, not "help"), each field's size for its type, ranges,
 * a list's capacity within its array, choices and parsers present, a
 * default choice among the choices, --quick values only on whole numbers
 * and within the option's range, %D only where there is a number to show
 * and %Q only where there is a --quick value. Returns 0, or -1 with the
 * first problem in why ("--name: what"). O(n^2) in the table's length.
 */
int tk_opt_check(const struct tk_opt *table, size_t n, const void *defaults, char *why,
                 size_t why_len);

/* Was the option of that name given? False for a name not in the table. */
bool tk_opt_given(const struct tk_opt *table, size_t n, const struct tk_opt_parse *p,
                  const char *name);

/* The options part of --help: one entry per option in table order and
 * "  -h, --help  this text", with %D and %Q filled from defaults. */
void tk_opt_help(FILE *f, const struct tk_opt *table, size_t n, const void *defaults);

/* Text as --help writes a help line: word by word from column col (where
 * the caller left the line), wrapped at 80 columns under column indent,
 * a '\n' starting a new line there; then a newline. For help text made at
 * run time, such as the names --kinds takes (kinds.h). */
void tk_opt_wrap(FILE *f, const char *text, size_t col, size_t indent);

/* A byte count as --help writes it: "64M" for a whole number of K, M, G
 * or T, else the number. Into buf (>= 24 bytes); returns buf. */
const char *tk_opt_fmt_bytes(char *buf, size_t size, uint64_t bytes);

#endif /* RTMEM_TOOLS_OPT_H */
