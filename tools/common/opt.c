/* Bench kit: options from a table (opt.h). */
#include "common/opt.h"

#include <errno.h>
#include <getopt.h>
#include <string.h>
#include <sys/random.h>

/* Help lines wrap at this width. */
#define HELP_WIDTH 80

static void *field_at(void *opts, const struct tk_opt *o)
{
    return (char *)opts + o->offset;
}

static uint64_t get_uint(const void *opts, const struct tk_opt *o)
{
    const char *f = (const char *)opts + o->offset;
    switch (o->size) {
    case 1: return *(const uint8_t *)f;
    case 2: return *(const uint16_t *)f;
    case 4: return *(const uint32_t *)f;
    case 8: return *(const uint64_t *)f;
    default: return 0;
    }
}

static void set_uint(void *opts, const struct tk_opt *o, uint64_t v)
{
    char *f = field_at(opts, o);
    switch (o->size) {
    case 1: *(uint8_t *)f = (uint8_t)v; break;
    case 2: *(uint16_t *)f = (uint16_t)v; break;
    case 4: *(uint32_t *)f = (uint32_t)v; break;
    case 8: *(uint64_t *)f = v; break;
    default: break;
    }
}

/* The largest value an unsigned field of that many bytes holds. */
static uint64_t field_max(size_t size)
{
    return size >= 8 ? UINT64_MAX : (UINT64_C(1) << (size * 8)) - 1;
}

bool tk_sizes_insert(struct tk_sizes *s, uint64_t v)
{
    size_t i = 0;
    while (i < s->n && s->bytes[i] < v)
        i++;
    if (i < s->n && s->bytes[i] == v)
        return true;
    if (s->n == TK_MAX_SIZES)
        return false;
    memmove(&s->bytes[i + 1], &s->bytes[i], (s->n - i) * sizeof(s->bytes[0]));
    s->bytes[i] = v;
    s->n++;
    return true;
}

/* B[,B...] of TK_OPT_SIZES into s. 0, or -1 (reported). */
static int apply_sizes(const struct tk_args *cli, const char *opt, const struct tk_opt *o,
                       const char *value, struct tk_sizes *s)
{
    const char *p = value;
    do {
        size_t len = strcspn(p, ",");
        char item[32];
        if (len == 0 || len >= sizeof(item))
            return tk_args_bad(cli, "%s: '%.*s' is not a byte count (e.g. %s)", opt, (int)len, p,
                               cli->bytes_example);
        memcpy(item, p, len);
        item[len] = '\0';
        uint64_t v;
        if (tk_args_bytes(cli, opt, item, o->lo ? o->lo : 1, o->hi, &v) != 0)
            return -1;
        if (o->lo > 1 && v % o->lo != 0) {
            char grain[24];
            tk_opt_fmt_bytes(grain, sizeof(grain), o->lo);
            return tk_args_bad(cli, "%s: '%s' is not a multiple of %s%s", opt, item, grain,
                               o->lo % 1024 ? " bytes" : "");
        }
        if (!tk_sizes_insert(s, v))
            return tk_args_bad(cli, "%s: at most %d sizes; '%s' is one more", opt, TK_MAX_SIZES,
                               item);
        p += len;
    } while (*p++ == ',');
    return 0;
}

/* N or "random" of TK_OPT_SEED. 0, or -1 (reported). */
static int apply_seed(const struct tk_args *cli, const char *opt, const char *value, uint64_t *out)
{
    if (strcmp(value, "random") != 0) {
        if (value[0] < '0' || value[0] > '9')
            return tk_args_bad(cli, "%s needs a whole number or 'random', not '%s'", opt, value);
        return tk_args_u64(cli, opt, value, 0, UINT64_MAX, out);
    }
    if (getrandom(out, sizeof(*out), 0) != (ssize_t)sizeof(*out)) {
        fprintf(stderr, "%s: %s random: getrandom: %s\n", cli->prog, opt, strerror(errno));
        return -1;
    }
    return 0;
}

static int apply(const struct tk_args *cli, const struct tk_opt *o, const char *value, void *opts)
{
    char opt[80];
    snprintf(opt, sizeof(opt), "--%s", o->name);
    uint64_t v = 0;
    uint64_t hi = o->hi < field_max(o->size) ? o->hi : field_max(o->size);
    switch (o->type) {
    case TK_OPT_FLAG: *(bool *)field_at(opts, o) = true; return 0;
    case TK_OPT_UINT:
        if (tk_args_u64(cli, opt, value, o->lo, hi, &v) != 0)
            return -1;
        set_uint(opts, o, v);
        return 0;
    case TK_OPT_BYTES:
        if (tk_args_bytes(cli, opt, value, o->lo, hi, &v) != 0)
            return -1;
        set_uint(opts, o, v);
        return 0;
    case TK_OPT_TIME:
        if (tk_args_time_ns(cli, opt, value, o->unit_ns, o->lo, hi, &v) != 0)
            return -1;
        set_uint(opts, o, v);
        return 0;
    case TK_OPT_FILE: return tk_args_file(cli, opt, value, (const char **)field_at(opts, o));
    case TK_OPT_STRING: *(const char **)field_at(opts, o) = value; return 0;
    case TK_OPT_FILES: {
        size_t *count = (size_t *)((char *)opts + o->count_offset);
        const char **list = field_at(opts, o);
        const char *name;
        if (tk_args_file(cli, opt, value, &name) != 0)
            return -1;
        if (*count >= o->hi)
            return tk_args_bad(cli, "%s: at most %llu %ss; '%s' is one more", opt,
                               (unsigned long long)o->hi, o->name, value);
        list[(*count)++] = name;
        return 0;
    }
    case TK_OPT_CHOICE:
        for (int i = 0; o->choices[i]; i++)
            if (strcmp(value, o->choices[i]) == 0) {
                *(int *)field_at(opts, o) = i;
                return 0;
            }
        {
            char list[160] = "";
            size_t len = 0;
            for (int i = 0; o->choices[i] && len < sizeof(list); i++) {
                int w =
                    snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "", o->choices[i]);
                len += w > 0 ? (size_t)w : 0;
            }
            return tk_args_bad(cli, "%s: '%s' is not one of %s", opt, value, list);
        }
    case TK_OPT_SIZES: return apply_sizes(cli, opt, o, value, field_at(opts, o));
    case TK_OPT_SEED: return apply_seed(cli, opt, value, field_at(opts, o));
    case TK_OPT_CPU: return tk_args_cpu(cli, opt, value, (int *)field_at(opts, o));
    case TK_OPT_PRIO: return tk_args_priority(cli, opt, value, (int *)field_at(opts, o));
    case TK_OPT_CUSTOM: return o->parse(cli, value, field_at(opts, o));
    }
    return -1;
}

int tk_opt_parse(const struct tk_args *cli, const struct tk_opt *table, size_t n, int argc,
                 char **argv, void *opts, struct tk_opt_parse *p)
{
    return tk_opt_parse_operands(cli, table, n, argc, argv, opts, p, NULL);
}

int tk_opt_parse_operands(const struct tk_args *cli, const struct tk_opt *table, size_t n, int argc,
                          char **argv, void *opts, struct tk_opt_parse *p, int *first_operand)
{
    /* getopt_long's table: entry i has the code 256 + i; -h and --help 'h',
     * --quiet 255, no letter's (every tool's, as --help is). */
    struct option longopts[TK_MAX_OPTS + 3];
    memset(p, 0, sizeof(*p));
    if (n > TK_MAX_OPTS)
        return tk_args_bad(cli, "internal error: %zu options, at most %d", n, TK_MAX_OPTS);
    for (size_t i = 0; i < n; i++)
        longopts[i] =
            (struct option){ table[i].name,
                             table[i].type == TK_OPT_FLAG ? no_argument : required_argument, NULL,
                             256 + (int)i };
    longopts[n] = (struct option){ "help", no_argument, NULL, 'h' };
    longopts[n + 1] = (struct option){ "quiet", no_argument, NULL, 255 };
    longopts[n + 2] = (struct option){ NULL, 0, NULL, 0 };
    /* The short forms: ":h" and each letter (with ':' when it takes a value). */
    char shortopts[2 * TK_MAX_OPTS + 3] = ":h";
    size_t ns = 2;
    for (size_t i = 0; i < n; i++)
        if (table[i].letter) {
            shortopts[ns++] = table[i].letter;
            if (table[i].type != TK_OPT_FLAG)
                shortopts[ns++] = ':';
        }
    shortopts[ns] = '\0';

    tk_args_begin();
    int c;
    while ((c = tk_args_next_operands(cli, argc, argv, shortopts, longopts,
                                      first_operand != NULL)) > 0) {
        if (c == 'h') {
            p->help = true;
            return 0;
        }
        if (c == 255) {
            p->quiet = true;
            continue;
        }
        for (size_t i = 0; i < n && c < 256; i++)
            if (table[i].letter && c == table[i].letter)
                c = 256 + (int)i;
        size_t i = (size_t)c - 256;
        if (c < 256 || i >= n)
            return -1;
        /* A list's first value replaces its default; later ones add to it. */
        if (table[i].type == TK_OPT_SIZES && !p->given[i])
            ((struct tk_sizes *)field_at(opts, &table[i]))->n = 0;
        p->given[i] = true;
        if (apply(cli, &table[i], optarg, opts) != 0)
            return -1;
    }
    if (c < 0)
        return -1;
    if (first_operand)
        *first_operand = optind;

    bool quick = false;
    for (size_t i = 0; i < n; i++)
        if ((table[i].flags & TK_OPTF_QUICK_SWITCH) && *(bool *)field_at(opts, &table[i]))
            quick = true;
    if (quick)
        for (size_t i = 0; i < n; i++)
            if ((table[i].flags & TK_OPTF_QUICK) && !p->given[i])
                set_uint(opts, &table[i], table[i].quick);
    return 0;
}

bool tk_opt_given(const struct tk_opt *table, size_t n, const struct tk_opt_parse *p,
                  const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(table[i].name, name) == 0)
            return p->given[i];
    return false;
}

const char *tk_opt_fmt_bytes(char *buf, size_t size, uint64_t bytes)
{
    static const char units[] = "KMGT";
    int u = -1;
    uint64_t v = bytes;
    while (u < 3 && v >= 1024 && v % 1024 == 0) {
        v /= 1024;
        u++;
    }
    if (u < 0)
        snprintf(buf, size, "%llu", (unsigned long long)bytes);
    else
        snprintf(buf, size, "%llu%c", (unsigned long long)v, units[u]);
    return buf;
}

/* Options whose field is an int (a signed value, or an index). */
static bool int_field(const struct tk_opt *o)
{
    return o->type == TK_OPT_CHOICE || o->type == TK_OPT_CPU || o->type == TK_OPT_PRIO ||
           (o->type == TK_OPT_CUSTOM && o->size == sizeof(int));
}

/* The option's value in opts, an int field's as its (signed) int. */
static int64_t get_value(const void *opts, const struct tk_opt *o)
{
    if (int_field(o))
        return *(const int *)((const char *)opts + o->offset);
    return (int64_t)get_uint(opts, o);
}

/* The option's value v as --help writes it. */
static const char *fmt_value(char *buf, size_t size, const struct tk_opt *o, int64_t v)
{
    switch (o->type) {
    case TK_OPT_BYTES: return tk_opt_fmt_bytes(buf, size, (uint64_t)v);
    case TK_OPT_TIME:
        if (v == 0 && o->lo > 0) /* out of range: the option is off by default */
            return "none";
        return tk_args_fmt_time(buf, size, (uint64_t)v);
    case TK_OPT_CPU:
        if (v < 0)
            return "the last allowed";
        snprintf(buf, size, "%lld", (long long)v);
        return buf;
    case TK_OPT_CHOICE:
        snprintf(buf, size, "%s", o->choices[v]); /* v checked by tk_opt_check */
        return buf;
    default:
        if (int_field(o))
            snprintf(buf, size, "%lld", (long long)v);
        else
            snprintf(buf, size, "%llu", (unsigned long long)(uint64_t)v);
        return buf;
    }
}

/* Does an option of this type carry a number %D or %Q can show? A custom
 * option's field is taken for an int when it has an int's size, else for
 * a uint64_t when it has that size; anything else shows no number. */
static bool has_number(const struct tk_opt *o)
{
    return o->type != TK_OPT_FLAG && o->type != TK_OPT_FILE && o->type != TK_OPT_STRING &&
           o->type != TK_OPT_FILES && o->type != TK_OPT_SIZES &&
           (o->type != TK_OPT_CUSTOM || int_field(o) || o->size == sizeof(uint64_t));
}

static int table_bad(char *why, size_t len, const struct tk_opt *o, const char *what)
{
    snprintf(why, len, "--%s: %s", o->name, what);
    return -1;
}

/* The options every tool shares, as opt.h's macros make them (fields and
 * ranges are the tool's). */
static const struct tk_opt kit_opts[] = {
    TK_OPT_KIT_CPU(.offset = 0),
    TK_OPT_KIT_PRIO(.offset = 0),
    TK_OPT_KIT_NO_RT(.offset = 0),
    TK_OPT_KIT_JSON(.offset = 0),
    TK_OPT_KIT_QUICK(.offset = 0),
    TK_OPT_KIT_DURATION(.offset = 0, 0, 0, 0, 0),
    TK_OPT_KIT_SIZES(.offset = 0, 0, 0),
    TK_OPT_KIT_SEED(.offset = 0),
    TK_OPT_KIT_KINDS(.offset = 0),
    { "plugin", TK_OPT_FILES, "FILE.so", TK_HELP_PLUGIN, .flags = TK_OPTF_KIT },
    TK_OPT_KIT_TIMEOUT(.offset = 0, 0),
    TK_OPT_KIT_FORCE(.offset = 0),
};

/* The kit's definition of a shared option, or NULL when name is none. */
static const struct tk_opt *tk_opt_kit(const char *name)
{
    for (size_t i = 0; i < sizeof(kit_opts) / sizeof(kit_opts[0]); i++)
        if (strcmp(kit_opts[i].name, name) == 0)
            return &kit_opts[i];
    return NULL;
}

static bool same_text(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* An entry named as a kit option must be the kit's: same type, value name
 * and help; only those carry TK_OPTF_KIT. */
static bool kit_entry_ok(const struct tk_opt *o)
{
    const struct tk_opt *k = tk_opt_kit(o->name);
    if (!k)
        return !(o->flags & TK_OPTF_KIT);
    return (o->flags & TK_OPTF_KIT) && o->type == k->type && same_text(o->arg, k->arg) &&
           same_text(o->help, k->help);
}

int tk_opt_check(const struct tk_opt *table, size_t n, const void *defaults, char *why,
                 size_t why_len)
{
    if (n > TK_MAX_OPTS) {
        snprintf(why, why_len, "%zu options, at most %d", n, TK_MAX_OPTS);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const struct tk_opt *o = &table[i];
        bool uint_type =
            o->type == TK_OPT_UINT || o->type == TK_OPT_BYTES || o->type == TK_OPT_TIME;
        if (!o->name || !o->name[0] || strcmp(o->name, "help") == 0)
            return table_bad(why, why_len, o, "no name, or the driver's own");
        for (size_t k = 0; k < i; k++)
            if (strcmp(table[k].name, o->name) == 0 || (o->letter && table[k].letter == o->letter))
                return table_bad(why, why_len, o, "named twice");
        if (o->letter && (o->letter == 'h' || !((o->letter >= 'a' && o->letter <= 'z') ||
                                                (o->letter >= 'A' && o->letter <= 'Z'))))
            return table_bad(why, why_len, o, "a short form is a letter other than h");
        if ((o->type == TK_OPT_FLAG) != (o->arg == NULL))
            return table_bad(why, why_len, o, "a flag has no value name, every other option one");
        if (!kit_entry_ok(o))
            return table_bad(why, why_len, o,
                             "an option every tool shares: take it from the kit (opt.h's "
                             "TK_OPT_KIT_*), as it is");
        if (o->type == TK_OPT_FLAG && o->size != sizeof(bool))
            return table_bad(why, why_len, o, "a flag's field is a bool");
        if ((o->type == TK_OPT_FILE || o->type == TK_OPT_STRING) && o->size != sizeof(char *))
            return table_bad(why, why_len, o, "its field is a const char *");
        if (int_field(o) && o->type != TK_OPT_CUSTOM && o->size != sizeof(int))
            return table_bad(why, why_len, o, "its field is an int");
        if (uint_type && o->size != 1 && o->size != 2 && o->size != 4 && o->size != 8)
            return table_bad(why, why_len, o, "its field is an unsigned integer");
        if ((o->type == TK_OPT_TIME || o->type == TK_OPT_SEED) && o->size != sizeof(uint64_t))
            return table_bad(why, why_len, o, "a time's field is a uint64_t (nanoseconds)");
        if (uint_type && o->lo > o->hi)
            return table_bad(why, why_len, o, "its range is empty");
        if (o->type == TK_OPT_SIZES && (o->size != sizeof(struct tk_sizes) || o->lo > o->hi))
            return table_bad(why, why_len, o, "a list of sizes is a struct tk_sizes, lo <= hi");
        if (o->type == TK_OPT_FILES && (o->hi == 0 || o->hi > o->size / sizeof(char *)))
            return table_bad(why, why_len, o, "its capacity (hi) is not its array's length");
        if (o->type == TK_OPT_CHOICE && (!o->choices || !o->choices[0]))
            return table_bad(why, why_len, o, "a choice needs its choices");
        if (o->type == TK_OPT_CUSTOM && !o->parse)
            return table_bad(why, why_len, o, "a custom option needs its parser");
        if (o->type == TK_OPT_CHOICE) {
            int64_t v = get_value(defaults, o);
            int64_t count = 0;
            while (o->choices[count])
                count++;
            if (v < 0 || v >= count)
                return table_bad(why, why_len, o, "its default is not one of its choices");
        }
        if ((o->flags & TK_OPTF_QUICK) &&
            (!uint_type || o->quick < o->lo || o->quick > o->hi ||
             o->quick > (o->size >= 8 ? UINT64_MAX : (UINT64_C(1) << (o->size * 8)) - 1)))
            return table_bad(why, why_len, o,
                             "a --quick value is a number within the option's range");
        if ((o->flags & TK_OPTF_QUICK_SWITCH) && o->type != TK_OPT_FLAG)
            return table_bad(why, why_len, o, "--quick itself is a flag");
        const char *help = o->help ? o->help : "";
        if (strstr(help, "%D") && !has_number(o))
            return table_bad(why, why_len, o, "%D in its help, but no number to show");
        if (strstr(help, "%Q") && !(o->flags & TK_OPTF_QUICK))
            return table_bad(why, why_len, o, "%Q in its help, but no --quick value");
    }
    return 0;
}

/* Appends text to buf[0, len) (of size bytes), cut where it is full;
 * returns the new length. */
static size_t put_text(char *buf, size_t size, size_t len, const char *text)
{
    int w = snprintf(buf + len, size - len, "%s", text);
    return w < 0 ? len : len + (size_t)w < size ? len + (size_t)w : size - 1;
}

/* The help line of o with %D, %Q and %% filled, into buf; a kit option's
 * with its default and --quick value after it. */
static void expand(char *buf, size_t size, const struct tk_opt *o, const void *defaults)
{
    size_t len = 0;
    for (const char *s = o->help ? o->help : ""; *s && len + 1 < size; s++) {
        char val[48];
        const char *put = NULL;
        if (s[0] == '%' && s[1] == 'D')
            put = fmt_value(val, sizeof(val), o, get_value(defaults, o));
        else if (s[0] == '%' && s[1] == 'Q')
            put = fmt_value(val, sizeof(val), o, (int64_t)o->quick);
        else if (s[0] == '%' && s[1] == '%')
            put = "%";
        if (!put) {
            buf[len++] = *s;
            continue;
        }
        len = put_text(buf, size, len, put);
        s++;
    }
    buf[len] = '\0';
    if (!(o->flags & TK_OPTF_KIT))
        return;
    /* A kit option's line, then the tool's default and --quick value,
     * inside its closing parenthesis if it ends with one: "(default 80)",
     * "(0: never; default 60)", "(default: the last allowed)". */
    if (!has_number(o))
        return;
    char val[48], quick[48];
    const char *def = fmt_value(val, sizeof(val), o, get_value(defaults, o));
    bool inside = len > 0 && buf[len - 1] == ')';
    if (inside)
        len--;
    len = put_text(buf, size, len, inside ? "; default" : " (default");
    len = put_text(buf, size, len, def[0] >= '0' && def[0] <= '9' ? " " : ": ");
    len = put_text(buf, size, len, def);
    if (o->flags & TK_OPTF_QUICK) {
        len = put_text(buf, size, len, "; --quick ");
        len = put_text(buf, size, len, fmt_value(quick, sizeof(quick), o, (int64_t)o->quick));
    }
    len = put_text(buf, size, len, ")");
}

/* Prints text word by word from column col, wrapping under column indent. */
static void wrap(FILE *f, const char *text, size_t col, size_t indent)
{
    bool line_start = true;
    for (const char *p = text; *p;) {
        if (*p == '\n') {
            fprintf(f, "\n%*s", (int)indent, "");
            col = indent;
            line_start = true;
            p++;
            continue;
        }
        if (*p == ' ') {
            p++;
            continue;
        }
        size_t len = strcspn(p, " \n");
        if (!line_start && col + 1 + len > HELP_WIDTH) {
            fprintf(f, "\n%*s", (int)indent, "");
            col = indent;
            line_start = true;
        }
        if (!line_start) {
            fputc(' ', f);
            col++;
        }
        fprintf(f, "%.*s", (int)len, p);
        col += len;
        line_start = false;
        p += len;
    }
    fputc('\n', f);
}

void tk_opt_wrap(FILE *f, const char *text, size_t col, size_t indent)
{
    wrap(f, text, col, indent);
}

void tk_opt_help(FILE *f, const struct tk_opt *table, size_t n, const void *defaults)
{
    /* The help column: past the longest "  --name ARG", at least 20. */
    size_t indent = 20;
    for (size_t i = 0; i < n; i++) {
        size_t w = 4 + (table[i].letter ? 4 : 0) + strlen(table[i].name) +
                   (table[i].arg ? 1 + strlen(table[i].arg) : 0) + 2;
        if (w > indent)
            indent = w;
    }
    for (size_t i = 0; i < n; i++) {
        char head[96], text[1024];
        char letter[8] = "";
        if (table[i].letter)
            snprintf(letter, sizeof(letter), "-%c, ", table[i].letter);
        int w = snprintf(head, sizeof(head), "  %s--%s%s%s", letter, table[i].name,
                         table[i].arg ? " " : "", table[i].arg ? table[i].arg : "");
        fprintf(f, "%-*s", (int)indent, head);
        expand(text, sizeof(text), &table[i], defaults);
        wrap(f, text, w > 0 && (size_t)w > indent ? (size_t)w : indent, indent);
    }
    fprintf(f, "%-*s", (int)indent, "  --quiet");
    wrap(f, "no progress line on a terminal's standard error", indent, indent);
    fprintf(f, "%-*s", (int)indent, "  -h, --help");
    wrap(f, "this text", indent, indent);
}
