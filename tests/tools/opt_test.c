/*
 * The options table (tools/common/opt.h): every type parsed into its field,
 * every refusal reported in the tools' voice, --quick, and --help built
 * from the table.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "check.h"
#include "common/opt.h"

struct topts {
    uint64_t ops;
    uint32_t live;
    uint8_t tiny;
    size_t heap_bytes;
    bool flag;
    bool quick;
    const char *json_path;
    const char *name;
    const char *plugins[TK_MAX_PLUGINS];
    size_t n_plugins;
    int format;
    int cpu;
    int prio;
    int signed_value;
    uint64_t period_ns;
    uint64_t wait_ns;
    struct tk_sizes sizes;
    uint64_t seed;
    unsigned timeout_s;
};

static const char *const formats[] = { "ns", "smokey", NULL };

/* TK_OPT_CUSTOM: "-1" or a whole number below 100. */
static int parse_signed(const struct tk_args *cli, const char *value, void *field)
{
    if (strcmp(value, "-1") == 0) {
        *(int *)field = -1;
        return 0;
    }
    uint64_t v;
    if (tk_args_u64(cli, "--signed", value, 0, 99, &v) != 0)
        return -1;
    *(int *)field = (int)v;
    return 0;
}

static const struct tk_opt table[] = {
    { "ops", TK_OPT_UINT, "N", "operations per pass (default %D; --quick %Q)",
      TK_FIELD(struct topts, ops), .lo = 1, .hi = 1000000, .quick = 20, .flags = TK_OPTF_QUICK },
    { "live", TK_OPT_UINT, "N", "live blocks (default %D)", TK_FIELD(struct topts, live), .lo = 1,
      .hi = 5000, .quick = 7, .flags = TK_OPTF_QUICK },
    { "tiny", TK_OPT_UINT, "N", "a one-byte field", TK_FIELD(struct topts, tiny), .lo = 0,
      .hi = 1000 },
    { "heap-size", TK_OPT_BYTES, "B", "memory of each heap (default %D)",
      TK_FIELD(struct topts, heap_bytes), .lo = 4096, .hi = (uint64_t)1 << 40 },
    { "flag", TK_OPT_FLAG, NULL, "a flag", TK_FIELD(struct topts, flag) },
    TK_OPT_KIT_QUICK(TK_FIELD(struct topts, quick)),
    TK_OPT_KIT_JSON(TK_FIELD(struct topts, json_path)),
    { "name", TK_OPT_STRING, "S", "any text", TK_FIELD(struct topts, name) },
    TK_OPT_KIT_PLUGIN(struct topts, plugins, n_plugins),
    { "format", TK_OPT_CHOICE, "ns|smokey", "layout (default %D)", TK_FIELD(struct topts, format),
      .choices = formats },
    TK_OPT_KIT_CPU(TK_FIELD(struct topts, cpu)),
    TK_OPT_KIT_PRIO(TK_FIELD(struct topts, prio)),
    { "signed", TK_OPT_CUSTOM, "N",
      "-1 or 0..99, with 100%% of a long help line that must be "
      "wrapped at eighty columns under the help column, word by word, never cut inside a word",
      TK_FIELD(struct topts, signed_value), .parse = parse_signed },
    { "period", TK_OPT_TIME, "T", "period (default %D; --quick %Q)",
      TK_FIELD(struct topts, period_ns), .lo = 10000, .hi = 1000000000, .quick = 5000000,
      .flags = TK_OPTF_QUICK, .unit_ns = 1000 },
    { "wait", TK_OPT_TIME, "T", "a time, its unit required (default %D)",
      TK_FIELD(struct topts, wait_ns), .lo = 0, .hi = UINT64_MAX },
    TK_OPT_KIT_SIZES(TK_FIELD(struct topts, sizes), 1024, (uint64_t)1 << 30),
    TK_OPT_KIT_SEED(TK_FIELD(struct topts, seed)),
    TK_OPT_KIT_TIMEOUT(TK_FIELD(struct topts, timeout_s), 3600),
};

#define N_OPTS (sizeof(table) / sizeof(table[0]))

static const struct topts defaults = {
    .ops = 10,
    .live = 100,
    .heap_bytes = (size_t)64 << 10,
    .format = 0,
    .cpu = -1,
    .prio = 80,
    .period_ns = 1000000,
    .wait_ns = 1500000,
    .sizes = { .bytes = { 4096, 65536 }, .n = 2 },
    .seed = 42,
    .timeout_s = 60,
};

static const struct tk_args cli = { "rtmem t", "4096, 64K" };

static struct topts o;
static struct tk_opt_parse parsed;

/* Parses the words of line (split at spaces) after the subcommand name. */
static int parse(const char *line)
{
    static char buf[512];
    char *argv[32];
    int argc = 0;
    argv[argc++] = (char *)"t";
    snprintf(buf, sizeof(buf), "%s", line);
    for (char *w = strtok(buf, " "); w && argc < 31; w = strtok(NULL, " "))
        argv[argc++] = strcmp(w, "''") == 0 ? (char *)"" : w;
    argv[argc] = NULL;
    o = defaults;
    return tk_opt_parse(&cli, table, N_OPTS, argc, argv, &o, &parsed);
}

/* Parsing line fails, with a message holding want and the --help hint. */
static void refused(const char *line, const char *want)
{
    test_context = line;
    capture_begin();
    int rc = parse(line);
    const char *err = capture_end();
    CHECK(rc == -1);
    CHECK(strstr(err, want) != NULL);
    CHECK(strncmp(err, "rtmem t: ", 9) == 0);
    CHECK(strstr(err, "Try 'rtmem t --help'.\n") != NULL);
    if (!strstr(err, want))
        fprintf(stderr, "  wanted '%s' in: %s", want, err);
    test_context = NULL;
}

TEST_CASE("values")
{
    CHECK(parse("") == 0);
    CHECK_EQ(o.ops, 10);
    CHECK(!parsed.given[0] && !parsed.help);
    CHECK(parse("--ops 5 --live 4999 --tiny 255 --heap-size 64M --flag --json out.json") == 0);
    CHECK_EQ(o.ops, 5);
    CHECK_EQ(o.live, 4999);
    CHECK_EQ(o.tiny, 255);
    CHECK_EQ(o.heap_bytes, (size_t)64 << 20);
    CHECK(o.flag);
    CHECK(o.json_path && strcmp(o.json_path, "out.json") == 0);
    CHECK(tk_opt_given(table, N_OPTS, &parsed, "ops"));
    CHECK(tk_opt_given(table, N_OPTS, &parsed, "json"));
    CHECK(!tk_opt_given(table, N_OPTS, &parsed, "name"));
    CHECK(!tk_opt_given(table, N_OPTS, &parsed, "no-such-option"));
    /* A later value wins; --opt=value works too. */
    CHECK(parse("--ops 3 --ops=4") == 0);
    CHECK_EQ(o.ops, 4);
    CHECK(parse("--heap-size 4096 --heap-size 8KiB") == 0);
    CHECK_EQ(o.heap_bytes, 8192);
    CHECK(parse("--plugin a.so --plugin b.so") == 0);
    CHECK_EQ(o.n_plugins, 2);
    CHECK(strcmp(o.plugins[0], "a.so") == 0 && strcmp(o.plugins[1], "b.so") == 0);
    CHECK(parse("--format smokey --name ''") == 0);
    CHECK_EQ(o.format, 1);
    CHECK(o.name && o.name[0] == '\0');
    CHECK(parse("--prio 99 --signed -1") == 0);
    CHECK_EQ(o.prio, 99);
    CHECK(o.signed_value == -1);
    CHECK(parse("--signed 42 --cpu 0") == 0);
    CHECK_EQ(o.signed_value, 42);
    CHECK_EQ(o.cpu, 0);
    /* Times: a unit, or the option's own for a bare number. */
    CHECK(parse("--period 250us --wait 2s") == 0);
    CHECK_EQ(o.period_ns, 250000);
    CHECK_EQ(o.wait_ns, 2000000000);
    CHECK(parse("--period 250 --wait 0ns") == 0);
    CHECK_EQ(o.period_ns, 250000);
    CHECK_EQ(o.wait_ns, 0);
    CHECK(parse("--period 1s --wait 7ms") == 0);
    CHECK_EQ(o.period_ns, 1000000000);
    CHECK_EQ(o.wait_ns, 7000000);
    /* -h and --help stop the parse. */
    CHECK(parse("--ops 5 --help --ops 0") == 0);
    CHECK(parsed.help);
    CHECK(parse("-h") == 0);
    CHECK(parsed.help);
}

TEST_CASE("refusals")
{
    refused("--ops 0", "--ops: '0' is out of range [1, 1000000]");
    refused("--ops -1", "--ops needs a whole number in [1, 1000000], not '-1'");
    refused("--ops 12x", "--ops: '12x' is not a whole number");
    refused("--ops 99999999999999999999999", "is out of range");
    /* The range is clamped to what the field holds. */
    refused("--tiny 256", "--tiny: '256' is out of range [0, 255]");
    refused("--heap-size 1X", "--heap-size: '1X' is not a byte count (e.g. 4096, 64K)");
    /* the range is the field's: a 32-bit size_t stops it at 4 GiB - 1 */
    refused("--heap-size 1K", SIZE_MAX > 0xffffffffu
                                  ? "--heap-size: '1K' is out of range [4096, 1099511627776] bytes"
                                  : "--heap-size: '1K' is out of range [4096, 4294967295] bytes");
    refused("--json ''", "--json needs a file name");
    refused("--plugin a --plugin b --plugin c --plugin d --plugin e",
            "--plugin: at most 4 plugins; 'e' is one more");
    refused("--format xml", "--format: 'xml' is not one of ns, smokey");
    refused("--prio 0", "--prio: '0' is out of range [1, 99]");
    refused("--cpu 100000", "--cpu");
    refused("--signed -2", "--signed needs a whole number");
    refused("--period 9us", "--period: '9us' is out of range [10us, 1s]");
    refused("--period 5", "--period: '5' (5us) is out of range [10us, 1s]");
    refused("--period 2s", "--period: '2s' is out of range [10us, 1s]");
    refused("--period 1h", "--period: '1h' is not a time (a whole number and ns, us, ms or s");
    refused("--period 1.5ms", "--period: '1.5ms' is not a time");
    refused("--period -1ms", "--period needs a time (e.g. 250us, 1ms, 10s), not '-1ms'");
    refused("--wait 5", "--wait: '5' is not a time");
    refused("--wait 99999999999999999999s", "--wait: '99999999999999999999s' is out of range");
    refused("--wait 18446744073709552s", "is out of range [0ns, ");
    refused("--nosuch", "unknown option '--nosuch'");
    refused("-x", "unknown option '-x'");
    refused("--ops", "option '--ops' needs a value");
    refused("--flag=1", "--flag=1");
    refused("operand", "unexpected argument 'operand'");
    refused("--ops 5 operand", "unexpected argument 'operand'");
}

/* The kit's shared types: lists of sizes and seeds. */
TEST_CASE("sizes and seed")
{
    CHECK(parse("") == 0);
    CHECK_EQ(o.sizes.n, 2); /* the default list, untouched */
    CHECK(parse("--sizes 8K,1K --sizes 1K,2K") == 0);
    CHECK_EQ(o.sizes.n, 3); /* the first replaced the default, the next added */
    CHECK_EQ(o.sizes.bytes[0], 1024);
    CHECK_EQ(o.sizes.bytes[1], 2048);
    CHECK_EQ(o.sizes.bytes[2], 8192);
    CHECK(tk_opt_given(table, N_OPTS, &parsed, "sizes"));
    refused("--sizes 1500", "--sizes: '1500' is not a multiple of 1K");
    refused("--sizes 2G", "--sizes: '2G' is out of range");
    refused("--sizes 4K,,8K", "--sizes: '' is not a byte count (e.g. 4096, 64K)");
    char line[1024] = "--sizes 1K";
    for (int i = 2; i <= TK_MAX_SIZES + 1; i++)
        snprintf(line + strlen(line), sizeof(line) - strlen(line), ",%dK", i);
    refused(line, "--sizes: at most 64 sizes; '65K' is one more");

    struct tk_sizes l = { .n = 0 };
    CHECK(tk_sizes_insert(&l, 30) && tk_sizes_insert(&l, 10) && tk_sizes_insert(&l, 20));
    CHECK(tk_sizes_insert(&l, 20));
    CHECK(l.n == 3 && l.bytes[0] == 10 && l.bytes[1] == 20 && l.bytes[2] == 30);

    CHECK(parse("--seed 5") == 0);
    CHECK_EQ(o.seed, 5);
    CHECK(parse("--seed random") == 0);
    uint64_t first = o.seed;
    CHECK(parse("--seed random") == 0);
    CHECK(o.seed != first); /* two draws of 64 bits: equal once in 2^64 */
    refused("--seed randomly", "--seed needs a whole number or 'random', not 'randomly'");
    refused("--seed 5x", "--seed: '5x' is not a whole number");
}

TEST_CASE("quick")
{
    CHECK(parse("--quick") == 0);
    CHECK_EQ(o.ops, 20);
    CHECK_EQ(o.period_ns, 5000000);
    CHECK_EQ(o.live, 7);
    CHECK(parse("--quick --ops 7") == 0);
    CHECK_EQ(o.ops, 7);
    CHECK_EQ(o.live, 7);
    /* Given before --quick counts as given too. */
    CHECK(parse("--ops 9 --quick") == 0);
    CHECK_EQ(o.ops, 9);
    /* Given at its default value still counts as given. */
    CHECK(parse("--quick --live 100") == 0);
    CHECK_EQ(o.live, 100);
    CHECK(parse("--ops 9") == 0);
    CHECK_EQ(o.live, 100);
}

/* The column at which needle starts in its line of text, or 999. */
static size_t column_of(const char *text, const char *needle)
{
    const char *at = strstr(text, needle);
    if (!at)
        return 999;
    const char *line = at;
    while (line > text && line[-1] != '\n')
        line--;
    return (size_t)(at - line);
}

TEST_CASE("help")
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    REQUIRE(f != NULL, );
    tk_opt_help(f, table, N_OPTS, &defaults);
    fclose(f);
    CHECK(strstr(text, "  --ops N ") == text);
    CHECK(strstr(text, "operations per pass (default 10; --quick 20)\n") != NULL);
    CHECK(strstr(text, "memory of each heap (default 64K)\n") != NULL);
    CHECK(strstr(text, "layout (default ns)\n") != NULL);
    CHECK(strstr(text, "SCHED_FIFO priority, 1..99 (default 80)\n") != NULL);
    CHECK(strstr(text, "period (default 1ms; --quick 5ms)\n") != NULL);
    CHECK(strstr(text, "a time, its unit required (default 1500us)\n") != NULL);
    CHECK(strstr(text, "  --flag ") != NULL);
    CHECK(strstr(text, "  --plugin FILE.so ") != NULL);
    CHECK(strstr(text, "with 100% of a long help line") != NULL);
    CHECK(strstr(text, "  -h, --help") != NULL);
    /* The kit's options: its words, then the tool's default. */
    CHECK(strstr(text, "  --cpu N ") != NULL);
    CHECK(strstr(text, TK_HELP_CPU " (default: the last allowed)\n") != NULL);
    CHECK(strstr(text, TK_HELP_SEED " (default 42)\n") != NULL);
    CHECK(strstr(text, "kill a child stuck this long (0: never; default 60)\n") != NULL);
    CHECK(strstr(text, TK_HELP_SIZES "\n") != NULL);
    CHECK(strstr(text, TK_HELP_JSON "\n") != NULL);
    /* Every line within 80 columns; help texts start in one column, at
     * least 20, continuation lines too; the long line wrapped between words. */
    size_t lines = 0;
    for (const char *line = text; *line; lines++) {
        size_t n = strcspn(line, "\n");
        CHECK(n <= 80);
        line += n + (line[n] == '\n');
    }
    CHECK(lines >= N_OPTS + 2);
    size_t c = column_of(text, "operations per pass");
    CHECK(c >= 20);
    CHECK_EQ(column_of(text, "a flag"), c);
    CHECK_EQ(column_of(text, "also run a heap plugin"), c);
    CHECK_EQ(column_of(text, "this text"), c);
    CHECK_EQ(column_of(text, "-1 or 0..99"), c);
    const char *cont = strstr(text, "-1 or 0..99");
    REQUIRE(cont != NULL, );
    cont = strchr(cont, '\n') + 1; /* the continuation line */
    CHECK(strspn(cont, " ") == c);
    CHECK(strstr(text, "word by word, never cut inside a word") != NULL ||
          strstr(text, "never cut inside a word") != NULL);
    free(text);
}

/* One mutation of the table must make tk_opt_check refuse it, naming the
 * option and the problem. */
static void refuse_table(const char *name, void (*mutate)(struct tk_opt *t, struct topts *d),
                         const char *want)
{
    static struct tk_opt t[N_OPTS];
    struct topts d = defaults;
    char why[160] = "";
    memcpy(t, table, sizeof(table));
    mutate(t, &d);
    test_context = name;
    CHECK(tk_opt_check(t, N_OPTS, &d, why, sizeof(why)) == -1);
    CHECK(strstr(why, want) != NULL);
    if (!strstr(why, want))
        fprintf(stderr, "  wanted '%s', got '%s'\n", want, why);
    test_context = NULL;
}

static void m_flag_size(struct tk_opt *t, struct topts *d)
{
    (void)d;
    t[4].size = sizeof(int); /* --flag */
}
static void m_files_capacity(struct tk_opt *t, struct topts *d)
{
    (void)d;
    t[8].hi = TK_MAX_PLUGINS + 1; /* --plugin: beyond its array */
}
static void m_quick_range(struct tk_opt *t, struct topts *d)
{
    (void)d;
    t[0].quick = 2000000; /* --ops: above hi */
}
static void m_quick_field(struct tk_opt *t, struct topts *d)
{
    (void)d;
    t[2].quick = 300; /* --tiny: a one-byte field */
    t[2].flags = TK_OPTF_QUICK;
}
static void m_quick_on_choice(struct tk_opt *t, struct topts *d)
{
    (void)d;
    t[9].quick = 1; /* --format */
    t[9].flags = TK_OPTF_QUICK;
}
static void m_q_without_quick(struct tk_opt *t, struct topts *d)
{
    (void)d;
    t[1].help = "live blocks (default %D; --quick %Q)";
    t[1].flags = 0; /* --live */
}
static void m_d_on_string(struct tk_opt *t, struct topts *d)
{
    (void)d;
    t[7].help = "any text (default %D)"; /* --name */
}
static void m_bad_choice_default(struct tk_opt *t, struct topts *d)
{
    (void)t;
    d->format = 2;
}
static void m_no_parser(struct tk_opt *t, struct topts *d)
{
    (void)d;
    t[12].parse = NULL; /* --signed */
}
static void m_twice(struct tk_opt *t, struct topts *d)
{
    (void)d;
    t[1].name = "ops";
}
static void m_help_name(struct tk_opt *t, struct topts *d)
{
    (void)d;
    t[1].name = "help";
}
static void m_empty_range(struct tk_opt *t, struct topts *d)
{
    (void)d;
    t[0].lo = 10;
    t[0].hi = 5;
}
static void m_flag_with_value(struct tk_opt *t, struct topts *d)
{
    (void)d;
    t[4].arg = "X";
}

static void m_time_field(struct tk_opt *t, struct topts *d)
{
    (void)d;
    t[2].type = TK_OPT_TIME; /* --tiny: a one-byte field */
    t[2].arg = "T";
}
static void m_kit_own_words(struct tk_opt *t, struct topts *d)
{
    (void)d;
    t[10].help = "CPU to pin to"; /* --cpu, in a tool's own words */
    t[10].flags = 0;
}
static void m_kit_other_type(struct tk_opt *t, struct topts *d)
{
    (void)d;
    t[6].type = TK_OPT_STRING; /* --json, parsed otherwise */
}
static void m_kit_flag_unknown(struct tk_opt *t, struct topts *d)
{
    (void)d;
    t[7].flags = TK_OPTF_KIT; /* --name is no kit option */
}
static void m_sizes_field(struct tk_opt *t, struct topts *d)
{
    (void)d;
    t[15].size = sizeof(uint64_t); /* --sizes: a struct tk_sizes */
}

TEST_CASE("check")
{
    char why[160] = "";
    CHECK(tk_opt_check(table, N_OPTS, &defaults, why, sizeof(why)) == 0);
    CHECK(why[0] == '\0');
    refuse_table("flag size", m_flag_size, "--flag: a flag's field is a bool");
    refuse_table("files capacity", m_files_capacity, "--plugin: its capacity");
    refuse_table("quick range", m_quick_range, "--ops: a --quick value is a number within");
    refuse_table("quick field", m_quick_field, "--tiny: a --quick value");
    refuse_table("quick choice", m_quick_on_choice, "--format: a --quick value");
    refuse_table("%Q", m_q_without_quick, "--live: %Q in its help, but no --quick value");
    refuse_table("%D", m_d_on_string, "--name: %D in its help, but no number to show");
    refuse_table("choice default", m_bad_choice_default, "--format: its default is not one of");
    refuse_table("parser", m_no_parser, "--signed: a custom option needs its parser");
    refuse_table("twice", m_twice, "--ops: named twice");
    refuse_table("help", m_help_name, "the driver's own");
    refuse_table("range", m_empty_range, "--ops: its range is empty");
    refuse_table("flag value", m_flag_with_value, "--flag: a flag has no value name");
    refuse_table("time field", m_time_field, "--tiny: a time's field is a uint64_t");
    refuse_table("kit, own words", m_kit_own_words, "--cpu: an option every tool shares");
    refuse_table("kit, other type", m_kit_other_type, "--json: an option every tool shares");
    refuse_table("kit flag, unknown", m_kit_flag_unknown, "--name: an option every tool shares");
    refuse_table("sizes field", m_sizes_field, "--sizes: a list of sizes is a struct tk_sizes");
}

/* %D shows an int field's default as a signed number. */
TEST_CASE("signed default")
{
    static struct tk_opt t[N_OPTS];
    struct topts d = defaults;
    memcpy(t, table, sizeof(table));
    t[12].help = "-1 or 0..99 (default %D)";
    d.signed_value = -1;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    REQUIRE(f != NULL, );
    tk_opt_help(f, t, N_OPTS, &d);
    fclose(f);
    CHECK(strstr(text, "-1 or 0..99 (default -1)\n") != NULL);
    free(text);
}

TEST_CASE("fmt time")
{
    char buf[32];
    CHECK(strcmp(tk_args_fmt_time(buf, sizeof(buf), 0), "0ns") == 0);
    CHECK(strcmp(tk_args_fmt_time(buf, sizeof(buf), 999), "999ns") == 0);
    CHECK(strcmp(tk_args_fmt_time(buf, sizeof(buf), 1000), "1us") == 0);
    CHECK(strcmp(tk_args_fmt_time(buf, sizeof(buf), 1500000), "1500us") == 0);
    CHECK(strcmp(tk_args_fmt_time(buf, sizeof(buf), 10000000000u), "10s") == 0);
    CHECK(strcmp(tk_args_fmt_time(buf, sizeof(buf), 86400000000000u), "86400s") == 0);
}

TEST_CASE("fmt bytes")
{
    char buf[32];
    CHECK(strcmp(tk_opt_fmt_bytes(buf, sizeof(buf), 0), "0") == 0);
    CHECK(strcmp(tk_opt_fmt_bytes(buf, sizeof(buf), 1000), "1000") == 0);
    CHECK(strcmp(tk_opt_fmt_bytes(buf, sizeof(buf), 1536), "1536") == 0);
    CHECK(strcmp(tk_opt_fmt_bytes(buf, sizeof(buf), 4096), "4K") == 0);
    CHECK(strcmp(tk_opt_fmt_bytes(buf, sizeof(buf), (uint64_t)2 << 20), "2M") == 0);
    CHECK(strcmp(tk_opt_fmt_bytes(buf, sizeof(buf), (uint64_t)3 << 30), "3G") == 0);
    CHECK(strcmp(tk_opt_fmt_bytes(buf, sizeof(buf), (uint64_t)1 << 40), "1T") == 0);
    CHECK(strcmp(tk_opt_fmt_bytes(buf, sizeof(buf), (uint64_t)1 << 50), "1024T") == 0);
    CHECK(strcmp(tk_opt_fmt_bytes(buf, sizeof(buf), ((uint64_t)1 << 20) + 1024), "1025K") == 0);
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, "tools.opt");
}
