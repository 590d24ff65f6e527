/*
 * Bench kit: output. A small streaming JSON writer and helpers for aligned
 * human-readable tables.
 *
 * JSON writer
 * -----------
 * Writes pretty-printed (2-space indented) JSON to a FILE* as it goes; no
 * document is built in memory. The writer places commas, colons and
 * indentation itself, escapes strings (quotes, backslash, newline, carriage
 * return and tab as \" \\ \n \r \t, other control characters as \uXXXX;
 * other bytes, UTF-8 included, pass through) and writes a non-finite double
 * (NaN, +-inf) as null, so the output is always valid JSON provided the calls
 * are balanced and write one value. Misuse (a value where a key is needed,
 * unbalanced ends, nesting deeper than TK_JSON_MAX_DEPTH, no value or a
 * second one at the top) is recorded, not acted upon: tk_json_finish
 * reports it.
 *
 *     struct tk_json j;
 *     tk_json_init(&j, f);
 *     tk_json_begin_object(&j);
 *     tk_json_kv_string(&j, "schema", "rtmem-bench/2");
 *     tk_json_key(&j, "values");
 *     tk_json_begin_array(&j);
 *     tk_json_double(&j, 1.5);
 *     tk_json_end_array(&j);
 *     tk_json_end_object(&j);
 *     if (tk_json_finish(&j) != 0) ...   // write error or misuse
 *
 * Every result file starts with a "schema" member naming the tool and the
 * version of its layout ("rtmem-bench/2"); a change that removes or renames a
 * member bumps the version.
 *
 * Tables
 * ------
 * A table is an array of columns (title, width, alignment). tk_table_header
 * prints the titles and a rule, tk_table_row one row of preformatted cells;
 * tk_fmt_* format numbers into caller buffers ("-" for NaN).
 */
#ifndef RTMEM_TOOLS_OUT_H
#define RTMEM_TOOLS_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TK_JSON_MAX_DEPTH 32

struct tk_json {
    FILE *f;
    int depth;                         /* open containers */
    bool is_object[TK_JSON_MAX_DEPTH]; /* container kind per level */
    bool has_items[TK_JSON_MAX_DEPTH]; /* level already holds a member */
    bool compact[TK_JSON_MAX_DEPTH];   /* level written on one line */
    bool after_key;                    /* a key was written, its value is due */
    unsigned top_values;               /* values written at the top: a document is one */
    bool misuse;                       /* calls were not balanced/well placed */
};

void tk_json_init(struct tk_json *j, FILE *f);

void tk_json_begin_object(struct tk_json *j);
void tk_json_end_object(struct tk_json *j);
void tk_json_begin_array(struct tk_json *j);
void tk_json_end_array(struct tk_json *j);
/* An array written on one line ("[1, 2, 3]"), and everything nested in it:
 * for tables of many short rows. Ended with tk_json_end_array. */
void tk_json_begin_array_compact(struct tk_json *j);
/* The same for an object ({"a": 1, "b": 2} on one line): a row of named
 * figures. Ended with tk_json_end_object. */
void tk_json_begin_object_compact(struct tk_json *j);

/* Member name inside an object; the next call writes its value. */
void tk_json_key(struct tk_json *j, const char *key);
/* Member name for a value a run may not have (a phase it skipped): writes
 * key, and null as its value when present is false. Returns present: true
 * when the next call is to write the value.
 *     if (!tk_json_key_or_null(j, "sweep", ran_sweep))
 *         return; */
bool tk_json_key_or_null(struct tk_json *j, const char *key, bool present);

/* Values (inside an array, after a key, or as the whole document). A NULL
 * string is written as null. */
void tk_json_string(struct tk_json *j, const char *s);
void tk_json_int(struct tk_json *j, int64_t v);
void tk_json_uint(struct tk_json *j, uint64_t v);
void tk_json_double(struct tk_json *j, double v); /* 10 significant digits */
void tk_json_bool(struct tk_json *j, bool v);
void tk_json_null(struct tk_json *j);

/* key + value in one call. */
void tk_json_kv_string(struct tk_json *j, const char *key, const char *s);
void tk_json_kv_int(struct tk_json *j, const char *key, int64_t v);
void tk_json_kv_uint(struct tk_json *j, const char *key, uint64_t v);
void tk_json_kv_double(struct tk_json *j, const char *key, double v);
void tk_json_kv_bool(struct tk_json *j, const char *key, bool v);

/* Ends the document with a newline and flushes. Returns 0, -EINVAL if the
 * calls were unbalanced or misplaced, -EIO if writing failed. Does not close
 * the file. */
int tk_json_finish(struct tk_json *j);

struct tk_col {
    const char *title;
    int width; /* characters; cells wider than this push the row */
    bool left; /* left-aligned (names); numbers are right-aligned */
};

/* Prints "  title title ..." and a rule of dashes under it. */
void tk_table_header(FILE *f, const struct tk_col *cols, size_t n_cols);
/* Prints one row; cells[i] NULL prints as empty. */
void tk_table_row(FILE *f, const struct tk_col *cols, size_t n_cols, const char *const *cells);

/* Number formatting into buf. A buffer of TK_FMT_MAX bytes holds every
 * uint64_t, and every double below 1e20 with up to 6 decimals; a figure
 * that does not fit buf is written as "#", never cut into another number.
 * NaN and infinities print as "-", so a missing figure never looks
 * measured. */
#define TK_FMT_MAX 32
const char *tk_fmt_double(char *buf, size_t size, double v, int decimals);
const char *tk_fmt_uint(char *buf, size_t size, uint64_t v);
/* A byte count in the largest binary unit that divides it: "64 KiB",
 * "1 GiB", "4160 B". */
const char *tk_fmt_iec(char *buf, size_t size, uint64_t bytes);
/* s as one word of a POSIX shell command, for the commands a report prints
 * (replay lines): as it is when it holds only letters, digits and
 * _ . / , : = + - @ %; else in single quotes ('\'' for a quote inside).
 * A word that does not fit buf is written as "#". Returns buf. */
const char *tk_fmt_shell_word(char *buf, size_t size, const char *s);

/* Ratio as "1.23x". */
const char *tk_fmt_ratio(char *buf, size_t size, double v);

/* A byte count rounded to one decimal, in GiB from 1 GiB on, else MiB:
 * "1.5 GiB", "0.3 MiB"; for amounts of memory, where tk_fmt_iec is exact. */
const char *tk_fmt_iec_approx(char *buf, size_t size, uint64_t bytes);

/* A byte count in the unit that shows it best: "812 B", "3.4 KiB",
 * "12.50 MiB", "1.25 GiB" (bytes below 1 KiB exact; three significant
 * digits or more above). */
const char *tk_fmt_bytes_short(char *buf, size_t size, uint64_t bytes);

/* One item of a report's header: "label      : text", the text wrapped at
 * 80 columns under column TK_ITEM_COL (an empty label continues the item
 * above). */
#define TK_ITEM_COL 13
void tk_item(FILE *f, const char *label, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* RTMEM_TOOLS_OUT_H */
