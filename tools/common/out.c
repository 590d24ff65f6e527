/* Bench kit: JSON writer and table helpers (out.h). */
#include "common/out.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "common/opt.h"

void tk_json_init(struct tk_json *j, FILE *f)
{
    memset(j, 0, sizeof(*j));
    j->f = f;
}

/* Starts a member or an item on a new line at the current depth; inside a
 * compact level, after a space (nothing before the first item). */
static void indent(struct tk_json *j, bool first)
{
    if (j->depth > 0 && j->compact[j->depth - 1]) {
        if (!first)
            fputc(' ', j->f);
        return;
    }
    fputc('\n', j->f);
    for (int i = 0; i < j->depth; i++)
        fputs("  ", j->f);
}

/* Everything a value needs before it: a comma and a new line inside an array,
 * nothing after a key. A value inside an object without a key is misuse. */
static void before_value(struct tk_json *j)
{
    if (j->after_key) {
        j->after_key = false;
        return;
    }
    if (j->depth == 0) {
        /* A document is one value. */
        if (j->top_values++ > 0)
            j->misuse = true;
        return;
    }
    int lvl = j->depth - 1;
    if (j->is_object[lvl])
        j->misuse = true;
    bool first = !j->has_items[lvl];
    if (!first)
        fputc(',', j->f);
    j->has_items[lvl] = true;
    indent(j, first);
}

static void begin(struct tk_json *j, bool object, bool compact)
{
    before_value(j);
    fputc(object ? '{' : '[', j->f);
    if (j->depth >= TK_JSON_MAX_DEPTH) {
        /* Too deep to track: the bracket is written but the level is not
         * (its end is then unbalanced); the misuse is what finish reports. */
        j->misuse = true;
        return;
    }
    j->is_object[j->depth] = object;
    j->has_items[j->depth] = false;
    /* Everything inside a compact level is compact too. */
    j->compact[j->depth] = compact || (j->depth > 0 && j->compact[j->depth - 1]);
    j->depth++;
}

static void end(struct tk_json *j, bool object)
{
    if (j->depth == 0 || j->is_object[j->depth - 1] != object || j->after_key) {
        j->misuse = true;
        return;
    }
    bool had_items = j->has_items[j->depth - 1];
    bool compact = j->compact[j->depth - 1];
    j->depth--;
    if (had_items && !compact)
        indent(j, false);
    fputc(object ? '}' : ']', j->f);
}

void tk_json_begin_object(struct tk_json *j)
{
    begin(j, true, false);
}
void tk_json_end_object(struct tk_json *j)
{
    end(j, true);
}
void tk_json_begin_array(struct tk_json *j)
{
    begin(j, false, false);
}
void tk_json_begin_array_compact(struct tk_json *j)
{
    begin(j, false, true);
}
void tk_json_begin_object_compact(struct tk_json *j)
{
    begin(j, true, true);
}
void tk_json_end_array(struct tk_json *j)
{
    end(j, false);
}

static void write_escaped(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                fprintf(f, "\\u%04x", (unsigned)*p);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

void tk_json_key(struct tk_json *j, const char *key)
{
    if (j->depth == 0 || !j->is_object[j->depth - 1] || j->after_key) {
        j->misuse = true;
        return;
    }
    int lvl = j->depth - 1;
    if (j->has_items[lvl])
        fputc(',', j->f);
    bool first = !j->has_items[lvl];
    j->has_items[lvl] = true;
    indent(j, first);
    write_escaped(j->f, key ? key : "");
    fputs(": ", j->f);
    j->after_key = true;
}

bool tk_json_key_or_null(struct tk_json *j, const char *key, bool present)
{
    tk_json_key(j, key);
    if (!present)
        tk_json_null(j);
    return present;
}

void tk_json_string(struct tk_json *j, const char *s)
{
    before_value(j);
    if (s)
        write_escaped(j->f, s);
    else
        fputs("null", j->f);
}

void tk_json_int(struct tk_json *j, int64_t v)
{
    before_value(j);
    fprintf(j->f, "%" PRId64, v);
}

void tk_json_uint(struct tk_json *j, uint64_t v)
{
    before_value(j);
    fprintf(j->f, "%" PRIu64, v);
}

void tk_json_double(struct tk_json *j, double v)
{
    before_value(j);
    if (isfinite(v))
        fprintf(j->f, "%.10g", v);
    else
        fputs("null", j->f);
}

void tk_json_bool(struct tk_json *j, bool v)
{
    before_value(j);
    fputs(v ? "true" : "false", j->f);
}

void tk_json_null(struct tk_json *j)
{
    before_value(j);
    fputs("null", j->f);
}

void tk_json_kv_string(struct tk_json *j, const char *key, const char *s)
{
    tk_json_key(j, key);
    tk_json_string(j, s);
}

void tk_json_kv_int(struct tk_json *j, const char *key, int64_t v)
{
    tk_json_key(j, key);
    tk_json_int(j, v);
}

void tk_json_kv_uint(struct tk_json *j, const char *key, uint64_t v)
{
    tk_json_key(j, key);
    tk_json_uint(j, v);
}

void tk_json_kv_double(struct tk_json *j, const char *key, double v)
{
    tk_json_key(j, key);
    tk_json_double(j, v);
}

void tk_json_kv_bool(struct tk_json *j, const char *key, bool v)
{
    tk_json_key(j, key);
    tk_json_bool(j, v);
}

int tk_json_finish(struct tk_json *j)
{
    fputc('\n', j->f);
    if (fflush(j->f) != 0 || ferror(j->f))
        return -EIO;
    if (j->misuse || j->depth != 0 || j->after_key || j->top_values != 1)
        return -EINVAL;
    return 0;
}

static void print_cell(FILE *f, const struct tk_col *c, const char *text)
{
    fprintf(f, c->left ? " %-*s" : " %*s", c->width, text ? text : "");
}

void tk_table_header(FILE *f, const struct tk_col *cols, size_t n_cols)
{
    int total = 0;
    fputc(' ', f);
    for (size_t i = 0; i < n_cols; i++) {
        print_cell(f, &cols[i], cols[i].title);
        total += cols[i].width + 1;
    }
    fputs("\n  ", f);
    for (int i = 1; i < total; i++)
        fputc('-', f);
    fputc('\n', f);
}

void tk_table_row(FILE *f, const struct tk_col *cols, size_t n_cols, const char *const *cells)
{
    fputc(' ', f);
    for (size_t i = 0; i < n_cols; i++)
        print_cell(f, &cols[i], cells[i]);
    fputc('\n', f);
}

/* A figure that does not fit buf is written as "#", never shortened into
 * another number. */
static const char *fitted(char *buf, size_t size, int written)
{
    if (size > 0 && (written < 0 || (size_t)written >= size))
        snprintf(buf, size, "#");
    return buf;
}

const char *tk_fmt_double(char *buf, size_t size, double v, int decimals)
{
    if (!isfinite(v))
        return fitted(buf, size, snprintf(buf, size, "-"));
    return fitted(buf, size, snprintf(buf, size, "%.*f", decimals, v));
}

const char *tk_fmt_uint(char *buf, size_t size, uint64_t v)
{
    return fitted(buf, size, snprintf(buf, size, "%" PRIu64, v));
}

const char *tk_fmt_shell_word(char *buf, size_t size, const char *s)
{
    static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                "_./,:=+-@%";
    if (*s && strspn(s, plain) == strlen(s))
        return fitted(buf, size, snprintf(buf, size, "%s", s));
    size_t len = 0;
    bool fits = size > 2;
    if (fits)
        buf[len++] = '\'';
    for (const char *p = s; *p && fits; p++) {
        const char *put = *p == '\'' ? "'\\''" : NULL;
        size_t n = put ? strlen(put) : 1;
        if (len + n + 2 > size) {
            fits = false;
            break;
        }
        if (put)
            memcpy(buf + len, put, n);
        else
            buf[len] = *p;
        len += n;
    }
    if (!fits)
        return fitted(buf, size, -1);
    buf[len++] = '\'';
    buf[len] = '\0';
    return buf;
}

const char *tk_fmt_ratio(char *buf, size_t size, double v)
{
    if (!isfinite(v))
        return fitted(buf, size, snprintf(buf, size, "-"));
    return fitted(buf, size, snprintf(buf, size, "%.2fx", v));
}

const char *tk_fmt_iec(char *buf, size_t size, uint64_t bytes)
{
    static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    unsigned u = 0;
    while (u + 1 < sizeof(units) / sizeof(units[0]) && bytes && bytes % 1024 == 0) {
        bytes /= 1024;
        u++;
    }
    snprintf(buf, size, "%" PRIu64 " %s", bytes, units[u]);
    return buf;
}

const char *tk_fmt_iec_approx(char *buf, size_t size, uint64_t bytes)
{
    if (bytes >= (uint64_t)1 << 30)
        snprintf(buf, size, "%.1f GiB", (double)bytes / (double)(1u << 30));
    else
        snprintf(buf, size, "%.1f MiB", (double)bytes / (double)(1u << 20));
    return buf;
}

const char *tk_fmt_bytes_short(char *buf, size_t size, uint64_t bytes)
{
    double v = (double)bytes;
    if (bytes < 1024)
        snprintf(buf, size, "%" PRIu64 " B", bytes);
    else if (bytes < ((uint64_t)1 << 20))
        snprintf(buf, size, "%.*f KiB", v < 10240 ? 2 : 1, v / 1024);
    else if (bytes < ((uint64_t)1 << 30))
        snprintf(buf, size, "%.2f MiB", v / (1 << 20));
    else
        snprintf(buf, size, "%.2f GiB", v / (1 << 30));
    return buf;
}

void tk_item(FILE *f, const char *label, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    fprintf(f, "%-*s%s", TK_ITEM_COL - 2, label, label[0] ? ": " : "  ");
    tk_opt_wrap(f, text, TK_ITEM_COL, TK_ITEM_COL);
}
