/*
 * The bench kit's output (tools/common/out.h), against its header: the JSON
 * writer's exact layout for a small document (indentation, commas, compact
 * arrays), string escaping (decoded back, byte for byte), non-finite doubles
 * as null, 10 significant digits, misuse reported by tk_json_finish as
 * -EINVAL and a write error as -EIO; random balanced documents that must
 * parse as JSON; the table header and rows; the number formatters ("-" for
 * NaN and infinities).
 */
#include <errno.h>
#include <math.h>

#include "check.h"
#include "common/out.h"

/* ---- capturing the writer's output -------------------------------------------------- */

struct capture {
    FILE *f;
    char *buf;
    size_t len;
    struct tk_json j;
};

static void cap_open(struct capture *c)
{
    c->buf = NULL;
    c->len = 0;
    c->f = open_memstream(&c->buf, &c->len);
    if (!c->f) {
        perror("open_memstream");
        exit(1);
    }
    tk_json_init(&c->j, c->f);
}

/* tk_json_finish's result; the text is then in c->buf (free it). */
static int cap_finish(struct capture *c)
{
    int rc = tk_json_finish(&c->j);
    fclose(c->f);
    return rc;
}

/* ---- a strict JSON parser (RFC 8259), for checking the writer ------------------------ */

struct parser {
    const char *p, *end;
    int depth;
    char *str; /* the last string decoded (UTF-8), when str_cap > 0 */
    size_t str_len, str_cap;
};

static void ws(struct parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\t' || *ps->p == '\r'))
        ps->p++;
}

static bool lit(struct parser *ps, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
        return false;
    ps->p += n;
    return true;
}

static void put_byte(struct parser *ps, unsigned char b)
{
    if (ps->str_len < ps->str_cap)
        ps->str[ps->str_len] = (char)b;
    ps->str_len++;
}

static int hex4(const char *s)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

static bool string(struct parser *ps)
{
    ps->str_len = 0;
    if (ps->p >= ps->end || *ps->p != '"')
        return false;
    ps->p++;
    while (ps->p < ps->end) {
        unsigned char c = (unsigned char)*ps->p++;
        if (c == '"')
            return true;
        if (c < 0x20)
            return false; /* a raw control character: invalid */
        if (c != '\\') {
            put_byte(ps, c);
            continue;
        }
        if (ps->p >= ps->end)
            return false;
        char e = *ps->p++;
        switch (e) {
        case '"': put_byte(ps, '"'); break;
        case '\\': put_byte(ps, '\\'); break;
        case '/': put_byte(ps, '/'); break;
        case 'b': put_byte(ps, '\b'); break;
        case 'f': put_byte(ps, '\f'); break;
        case 'n': put_byte(ps, '\n'); break;
        case 'r': put_byte(ps, '\r'); break;
        case 't': put_byte(ps, '\t'); break;
        case 'u': {
            if (ps->end - ps->p < 4)
                return false;
            int v = hex4(ps->p);
            if (v < 0)
                return false;
            ps->p += 4;
            /* The writer escapes single bytes only: code points below 0x80
             * stand for themselves; anything else is kept as UTF-8. */
            if (v < 0x80) {
                put_byte(ps, (unsigned char)v);
            } else if (v < 0x800) {
                put_byte(ps, (unsigned char)(0xc0 | (v >> 6)));
                put_byte(ps, (unsigned char)(0x80 | (v & 0x3f)));
            } else {
                put_byte(ps, (unsigned char)(0xe0 | (v >> 12)));
                put_byte(ps, (unsigned char)(0x80 | ((v >> 6) & 0x3f)));
                put_byte(ps, (unsigned char)(0x80 | (v & 0x3f)));
            }
            break;
        }
        default: return false;
        }
    }
    return false;
}

static bool digits(struct parser *ps)
{
    const char *s = ps->p;
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
        ps->p++;
    return ps->p > s;
}

static bool number(struct parser *ps)
{
    if (ps->p < ps->end && *ps->p == '-')
        ps->p++;
    if (ps->p < ps->end && *ps->p == '0')
        ps->p++;
    else if (!digits(ps))
        return false;
    if (ps->p < ps->end && *ps->p == '.') {
        ps->p++;
        if (!digits(ps))
            return false;
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        ps->p++;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
            ps->p++;
        if (!digits(ps))
            return false;
    }
    return true;
}

static bool value(struct parser *ps)
{
    ws(ps);
    if (ps->p >= ps->end || ++ps->depth > 200)
        return false;
    bool ok;
    char c = *ps->p;
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        ps->p++;
        ws(ps);
        ok = true;
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
        } else {
            for (;;) {
                if (c == '{') {
                    ws(ps);
                    if (!string(ps)) {
                        ok = false;
                        break;
                    }
                    ws(ps);
                    if (!lit(ps, ":")) {
                        ok = false;
                        break;
                    }
                }
                if (!value(ps)) {
                    ok = false;
                    break;
                }
                ws(ps);
                if (lit(ps, ","))
                    continue;
                char cl[2] = { close, 0 };
                ok = lit(ps, cl);
                break;
            }
        }
    } else if (c == '"') {
        ok = string(ps);
    } else if (c == 't' || c == 'f' || c == 'n') {
        ok = lit(ps, "true") || lit(ps, "false") || lit(ps, "null");
    } else {
        ok = number(ps);
    }
    ps->depth--;
    return ok;
}

/* Whether text is exactly one JSON document (surrounding white space allowed). */
static bool valid_json(const char *text, size_t len)
{
    struct parser ps = { text, text + len, 0, NULL, 0, 0 };
    if (!value(&ps))
        return false;
    ws(&ps);
    return ps.p == ps.end;
}

/* ---- exact layout -------------------------------------------------------------------- */

/* The captured document is want exactly, and valid JSON; then freed. */
static void expect_doc(struct capture *c, const char *want)
{
    CHECK_EQ(cap_finish(c), 0);
    CHECK(c->buf && strcmp(c->buf, want) == 0);
    if (c->buf && strcmp(c->buf, want) != 0)
        fprintf(stderr, "got:\n%s\nwanted:\n%s", c->buf, want);
    CHECK(c->buf && valid_json(c->buf, c->len));
    free(c->buf);
}

TEST_CASE("objects and arrays are indented, two spaces a level")
{
    struct capture c;
    cap_open(&c);
    struct tk_json *j = &c.j;
    tk_json_begin_object(j);
    tk_json_kv_string(j, "schema", "rtmem-bench/1");
    tk_json_key(j, "values");
    tk_json_begin_array(j);
    tk_json_double(j, 1.5);
    tk_json_int(j, -3);
    tk_json_uint(j, UINT64_MAX);
    tk_json_bool(j, false);
    tk_json_null(j);
    tk_json_string(j, NULL);
    tk_json_end_array(j);
    tk_json_key(j, "empty");
    tk_json_begin_object(j);
    tk_json_end_object(j);
    tk_json_key(j, "none");
    tk_json_begin_array(j);
    tk_json_end_array(j);
    tk_json_key(j, "nested");
    tk_json_begin_object(j);
    tk_json_kv_int(j, "min", INT64_MIN);
    tk_json_key(j, "list");
    tk_json_begin_array(j);
    tk_json_begin_object(j);
    tk_json_kv_bool(j, "ok", true);
    tk_json_end_object(j);
    tk_json_end_array(j);
    tk_json_end_object(j);
    tk_json_end_object(j);
    expect_doc(&c, "{\n"
                   "  \"schema\": \"rtmem-bench/1\",\n"
                   "  \"values\": [\n"
                   "    1.5,\n"
                   "    -3,\n"
                   "    18446744073709551615,\n"
                   "    false,\n"
                   "    null,\n"
                   "    null\n"
                   "  ],\n"
                   "  \"empty\": {},\n"
                   "  \"none\": [],\n"
                   "  \"nested\": {\n"
                   "    \"min\": -9223372036854775808,\n"
                   "    \"list\": [\n"
                   "      {\n"
                   "        \"ok\": true\n"
                   "      }\n"
                   "    ]\n"
                   "  }\n"
                   "}\n");
}

TEST_CASE("a compact array or object is one line, and so is all inside it")
{
    struct capture c;
    cap_open(&c);
    struct tk_json *j = &c.j;
    tk_json_begin_object(j);
    tk_json_key(j, "row");
    tk_json_begin_array_compact(j);
    tk_json_uint(j, 1);
    tk_json_uint(j, 2);
    tk_json_begin_object(j);
    tk_json_kv_double(j, "x", 0.25);
    tk_json_kv_uint(j, "y", 7);
    tk_json_end_object(j);
    tk_json_begin_array(j); /* inside a compact array: compact too */
    tk_json_end_array(j);
    tk_json_begin_array(j);
    tk_json_int(j, 3);
    tk_json_int(j, 4);
    tk_json_end_array(j);
    tk_json_end_array(j);
    tk_json_key(j, "compact empty");
    tk_json_begin_array_compact(j);
    tk_json_end_array(j);
    tk_json_key(j, "line");
    tk_json_begin_object_compact(j);
    tk_json_kv_uint(j, "second", 1);
    tk_json_key(j, "in");
    tk_json_begin_array(j); /* inside a compact object: compact too */
    tk_json_int(j, 8);
    tk_json_end_array(j);
    tk_json_end_object(j);
    tk_json_end_object(j);
    expect_doc(&c, "{\n"
                   "  \"row\": [1, 2, {\"x\": 0.25, \"y\": 7}, [], [3, 4]],\n"
                   "  \"compact empty\": [],\n"
                   "  \"line\": {\"second\": 1, \"in\": [8]}\n"
                   "}\n");
}

TEST_CASE("a member not measured is null, a scalar can be the whole document")
{
    struct capture c;
    cap_open(&c);
    tk_json_begin_object(&c.j);
    if (tk_json_key_or_null(&c.j, "skipped", false))
        tk_json_int(&c.j, 99);
    if (tk_json_key_or_null(&c.j, "present", true))
        tk_json_int(&c.j, 5);
    tk_json_end_object(&c.j);
    expect_doc(&c, "{\n  \"skipped\": null,\n  \"present\": 5\n}\n");

    cap_open(&c);
    tk_json_double(&c.j, 2.0);
    expect_doc(&c, "2\n");
}

/* ---- strings ------------------------------------------------------------------------- */

/* The writer's text for s as a value, without the final newline. */
static char *written(const char *s, size_t *len)
{
    struct capture c;
    cap_open(&c);
    tk_json_string(&c.j, s);
    CHECK_EQ(cap_finish(&c), 0);
    if (c.len > 0 && c.buf[c.len - 1] == '\n')
        c.buf[--c.len] = 0;
    *len = c.len;
    return c.buf;
}

/* s written, parsed back: a valid string that decodes to exactly s. */
static void check_roundtrip(const char *s)
{
    size_t len;
    char *out = written(s, &len);
    char back[256];
    struct parser ps = { out, out + len, 0, back, 0, sizeof back };
    bool ok = string(&ps) && ps.p == ps.end;
    CHECK(ok);
    CHECK(ok && ps.str_len == strlen(s) && memcmp(back, s, ps.str_len) == 0);
    if (!ok || ps.str_len != strlen(s) || memcmp(back, s, ps.str_len) != 0)
        fprintf(stderr, "  written as: %s\n", out);
    free(out);
}

TEST_CASE("strings")
{
    test_context = "escaping";
    size_t len;
    char *out = written("say \"hi\" \\ back", &len);
    CHECK(strcmp(out, "\"say \\\"hi\\\" \\\\ back\"") == 0);
    free(out);

    /* A control character without a short escape can only be \u00XX. */
    out = written("\x01|\x1f|\x1b", &len);
    char lower[64];
    for (size_t i = 0; i <= len && i < sizeof lower; i++)
        lower[i] = (char)(out[i] >= 'A' && out[i] <= 'F' ? out[i] - 'A' + 'a' : out[i]);
    CHECK(strcmp(lower, "\"\\u0001|\\u001f|\\u001b\"") == 0);
    free(out);

    /* UTF-8 passes through, byte for byte: é, €, U+1F600. */
    const char *utf8 = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";
    out = written(utf8, &len);
    CHECK(len == strlen(utf8) + 2 && out[0] == '"' && memcmp(out + 1, utf8, strlen(utf8)) == 0);
    free(out);

    /* Every byte alone, and all of them in one string, decode back. */
    char all[256];
    for (int b = 1; b < 256; b++) {
        char one[2] = { (char)b, 0 };
        test_context = "escaping: one byte";
        check_roundtrip(one);
        all[b - 1] = (char)b;
    }
    all[255] = 0;
    test_context = "escaping: every byte";
    check_roundtrip(all);
    check_roundtrip("");

    /* Keys are strings too. */
    test_context = "escaping: key";
    struct capture c;
    cap_open(&c);
    tk_json_begin_object(&c.j);
    tk_json_kv_int(&c.j, "a\"b\n\x02", 1);
    tk_json_end_object(&c.j);
    CHECK_EQ(cap_finish(&c), 0);
    CHECK(c.buf && valid_json(c.buf, c.len));
    CHECK(c.buf && strstr(c.buf, "\"a\\\"b") != NULL);
    free(c.buf);
}

/* ---- numbers ------------------------------------------------------------------------- */

TEST_CASE("numbers")
{
    test_context = "doubles";
    const double nonfinite[] = { NAN, -NAN, INFINITY, -INFINITY };
    for (size_t i = 0; i < sizeof nonfinite / sizeof nonfinite[0]; i++) {
        struct capture c;
        cap_open(&c);
        tk_json_begin_object(&c.j);
        tk_json_kv_double(&c.j, "v", nonfinite[i]);
        tk_json_key(&c.j, "a");
        tk_json_begin_array_compact(&c.j);
        tk_json_double(&c.j, nonfinite[i]);
        tk_json_end_array(&c.j);
        tk_json_end_object(&c.j);
        CHECK_EQ(cap_finish(&c), 0);
        CHECK(c.buf && strcmp(c.buf, "{\n  \"v\": null,\n  \"a\": [null]\n}\n") == 0);
        free(c.buf);
    }

    /* 10 significant digits, and every output a JSON number. */
    const struct {
        double v;
        const char *text;
    } cases[] = {
        { 1.0 / 3.0, "0.3333333333" },
        { 2.0 / 3.0, "0.6666666667" },
        { 1234567890123.0, "1.234567890e+12" },
        { 0.5, "0.5" },
        { 100.0, "100" },
        { -2.5, "-2.5" },
        { 1e300, "1e+300" },
        { 1e-300, "1e-300" },
        { 0.0, "0" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct capture c;
        cap_open(&c);
        tk_json_double(&c.j, cases[i].v);
        CHECK_EQ(cap_finish(&c), 0);
        CHECK(c.buf && valid_json(c.buf, c.len));
        /* the same value to 10 significant digits, whatever the notation */
        CHECK(c.buf && strtod(c.buf, NULL) == strtod(cases[i].text, NULL));
        free(c.buf);
    }
}

/* ---- misuse and errors --------------------------------------------------------------- */

static int misuse_rc(int which)
{
    struct capture c;
    cap_open(&c);
    struct tk_json *j = &c.j;
    switch (which) {
    case 0: /* a value where a key is needed */
        tk_json_begin_object(j);
        tk_json_int(j, 1);
        tk_json_end_object(j);
        break;
    case 1: /* a key inside an array */
        tk_json_begin_array(j);
        tk_json_key(j, "k");
        tk_json_int(j, 1);
        tk_json_end_array(j);
        break;
    case 2: /* a key outside any object */
        tk_json_key(j, "k");
        tk_json_int(j, 1);
        break;
    case 3: /* the wrong end */
        tk_json_begin_object(j);
        tk_json_end_array(j);
        break;
    case 4: /* an end with nothing open */ tk_json_end_object(j); break;
    case 5: /* left open */
        tk_json_begin_array(j);
        tk_json_int(j, 1);
        break;
    case 6: /* a key whose value never comes */
        tk_json_begin_object(j);
        tk_json_key(j, "k");
        tk_json_end_object(j);
        break;
    case 7: /* the same at the end of the document */
        tk_json_begin_object(j);
        tk_json_key(j, "k");
        break;
    case 8: /* two keys in a row */
        tk_json_begin_object(j);
        tk_json_key(j, "a");
        tk_json_key(j, "b");
        tk_json_int(j, 1);
        tk_json_end_object(j);
        break;
    case 9: /* nesting deeper than TK_JSON_MAX_DEPTH, balanced */
        for (int i = 0; i <= TK_JSON_MAX_DEPTH; i++)
            tk_json_begin_array(j);
        for (int i = 0; i <= TK_JSON_MAX_DEPTH; i++)
            tk_json_end_array(j);
        break;
    case 10: /* an end too many after a complete document */
        tk_json_begin_array(j);
        tk_json_end_array(j);
        tk_json_end_array(j);
        break;
    }
    int rc = cap_finish(&c);
    free(c.buf);
    return rc;
}

TEST_CASE("misuse")
{
    test_context = "misuse";
    for (int which = 0; which <= 10; which++) {
        int rc = misuse_rc(which);
        CHECK_EQ(rc, -EINVAL);
        if (rc != -EINVAL)
            fprintf(stderr, "  misuse case %d: tk_json_finish gave %d\n", which, rc);
    }

    /* TK_JSON_MAX_DEPTH levels exactly are fine. */
    test_context = "max depth";
    struct capture c;
    cap_open(&c);
    for (int i = 0; i < TK_JSON_MAX_DEPTH; i++)
        tk_json_begin_array(&c.j);
    for (int i = 0; i < TK_JSON_MAX_DEPTH; i++)
        tk_json_end_array(&c.j);
    CHECK_EQ(cap_finish(&c), 0);
    CHECK(c.buf && valid_json(c.buf, c.len));
    free(c.buf);
}

/* "The output is always valid JSON provided the calls are balanced": a
 * document is one value, so none, or a second one after it, is misuse. */
TEST_CASE("document count")
{
    test_context = "one value per document";
    for (int values = 0; values <= 2; values += 2) {
        struct capture c;
        cap_open(&c);
        for (int i = 0; i < values; i++) {
            tk_json_begin_object(&c.j);
            tk_json_end_object(&c.j);
        }
        int rc = cap_finish(&c);
        bool ok = rc == -EINVAL || (rc == 0 && c.buf && valid_json(c.buf, c.len));
        CHECK(ok);
        if (!ok)
            fprintf(stderr, "  %d top-level values: tk_json_finish gave %d for \"%s\"\n", values,
                    rc, c.buf ? c.buf : "");
        free(c.buf);
    }
}

TEST_CASE("write error")
{
    test_context = "write error";
    FILE *f = fopen("/dev/full", "w");
    if (!f) {
        printf("tools.json: no /dev/full, write error not tested\n");
        return;
    }
    struct tk_json j;
    tk_json_init(&j, f);
    tk_json_begin_object(&j);
    tk_json_kv_string(&j, "schema", "rtmem-test/1");
    tk_json_end_object(&j);
    CHECK_EQ(tk_json_finish(&j), -EIO);
    fclose(f);

    /* A document larger than the stream's buffer: the error comes before
     * finish, which must still report it. */
    f = fopen("/dev/full", "w");
    REQUIRE(f, );
    tk_json_init(&j, f);
    tk_json_begin_array(&j);
    for (int i = 0; i < 100000; i++)
        tk_json_int(&j, i);
    tk_json_end_array(&j);
    CHECK_EQ(tk_json_finish(&j), -EIO);
    fclose(f);
}

/* ---- random balanced documents ------------------------------------------------------- */

static void random_value(struct tk_json *j, uint64_t *rng, int depth);

static void random_string(uint64_t *rng, char *s, size_t cap)
{
    size_t n = (size_t)(rng_next(rng) % (cap - 1));
    for (size_t i = 0; i < n; i++) {
        char b;
        do
            b = (char)(rng_next(rng) & 0xff);
        while (b == 0);
        s[i] = b;
    }
    s[n] = 0;
}

static void random_container(struct tk_json *j, uint64_t *rng, int depth, bool object)
{
    unsigned how = (unsigned)(rng_next(rng) % 3);
    if (object)
        tk_json_begin_object(j);
    else if (how == 0)
        tk_json_begin_array_compact(j);
    else
        tk_json_begin_array(j);
    int items = (int)(rng_next(rng) % 5);
    for (int i = 0; i < items; i++) {
        if (object) {
            char key[12];
            random_string(rng, key, sizeof key);
            tk_json_key(j, key);
        }
        random_value(j, rng, depth + 1);
    }
    if (object)
        tk_json_end_object(j);
    else
        tk_json_end_array(j);
}

static void random_value(struct tk_json *j, uint64_t *rng, int depth)
{
    static const double doubles[] = { 0.0, -0.0,     1.5,       -1e-308, 1e308, 123456789.123456789,
                                      NAN, INFINITY, -INFINITY, 5e-324 };
    unsigned what = (unsigned)(rng_next(rng) % (depth < 6 ? 9 : 7));
    char s[16];
    switch (what) {
    case 0: tk_json_int(j, (int64_t)rng_next(rng)); break;
    case 1: tk_json_uint(j, rng_next(rng)); break;
    case 2: tk_json_double(j, doubles[rng_next(rng) % (sizeof doubles / sizeof doubles[0])]); break;
    case 3: tk_json_bool(j, rng_next(rng) & 1); break;
    case 4: tk_json_null(j); break;
    case 5:
        random_string(rng, s, sizeof s);
        tk_json_string(j, s);
        break;
    case 6: tk_json_double(j, (double)(int64_t)rng_next(rng) / 1e6); break;
    case 7: random_container(j, rng, depth, false); break;
    default: random_container(j, rng, depth, true); break;
    }
}

TEST_CASE("random documents")
{
    test_context = "random documents";
    uint64_t rng = 77;
    for (int doc = 0; doc < 2000; doc++) {
        struct capture c;
        cap_open(&c);
        random_container(&c.j, &rng, 0, doc & 1);
        int rc = cap_finish(&c);
        CHECK_EQ(rc, 0);
        bool ok = c.buf && valid_json(c.buf, c.len);
        CHECK(ok);
        if (!ok && c.buf)
            fprintf(stderr, "  document %d not valid JSON:\n%s", doc, c.buf);
        free(c.buf);
    }
}

/* ---- tables and formatters ----------------------------------------------------------- */

/* (never inlined: gcc 12 would take the memstream's buffer for this frame's) */
__attribute__((noinline)) static char *table_text(bool header, const char *const *cells)
{
    static const struct tk_col cols[] = { { "kind", 6, true },
                                          { "ns", 5, false },
                                          { "p99", 4, false } };
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        exit(1);
    if (header)
        tk_table_header(f, cols, 3);
    else
        tk_table_row(f, cols, 3, cells);
    fclose(f);
    return buf;
}

TEST_CASE("tables")
{
    test_context = "table";
    char *h = table_text(true, NULL);
    CHECK(strcmp(h, "  kind      ns  p99\n"
                    "  -----------------\n") == 0);
    /* The rule spans the titles exactly. */
    const char *nl = strchr(h, '\n');
    size_t title = nl ? (size_t)(nl - h) + 1 : 0, rule = nl ? strlen(nl + 1) : 0;
    CHECK(nl && rule == title);
    free(h);

    const char *row[] = { "tlsf", "24.2", "120" };
    h = table_text(false, row);
    CHECK(strcmp(h, "  tlsf    24.2  120\n") == 0);
    free(h);
    const char *missing[] = { NULL, "1", NULL };
    h = table_text(false, missing);
    CHECK(strcmp(h, "             1     \n") == 0);
    free(h);
    const char *wide[] = { "xnheap-none", "123456", "7" };
    h = table_text(false, wide);
    CHECK(strcmp(h, "  xnheap-none 123456    7\n") == 0); /* pushes the row, never cut */
    free(h);
}

TEST_CASE("formatters")
{
    test_context = "formatters";
    char buf[TK_FMT_MAX];
    const double missing[] = { NAN, -NAN, INFINITY, -INFINITY };
    for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++) {
        CHECK(strcmp(tk_fmt_double(buf, sizeof buf, missing[i], 1), "-") == 0);
        CHECK(strcmp(tk_fmt_double(buf, sizeof buf, missing[i], 0), "-") == 0);
        CHECK(strcmp(tk_fmt_ratio(buf, sizeof buf, missing[i]), "-") == 0);
    }
    CHECK(tk_fmt_double(buf, sizeof buf, 3.0, 1) == buf); /* returns buf */
    CHECK(strcmp(tk_fmt_double(buf, sizeof buf, 3.14159, 2), "3.14") == 0);
    CHECK(strcmp(tk_fmt_double(buf, sizeof buf, 22.8, 1), "22.8") == 0);
    CHECK(strcmp(tk_fmt_double(buf, sizeof buf, 9087.4, 0), "9087") == 0);
    CHECK(strcmp(tk_fmt_double(buf, sizeof buf, -0.5, 1), "-0.5") == 0);
    CHECK(strcmp(tk_fmt_ratio(buf, sizeof buf, 1.234), "1.23x") == 0);
    CHECK(strcmp(tk_fmt_ratio(buf, sizeof buf, 0.5), "0.50x") == 0);
    CHECK(strcmp(tk_fmt_uint(buf, sizeof buf, 0), "0") == 0);
    CHECK(strcmp(tk_fmt_uint(buf, sizeof buf, 200000), "200000") == 0);
    CHECK(strcmp(tk_fmt_uint(buf, sizeof buf, 123456789012345ull), "123456789012345") == 0);
    /* TK_FMT_MAX holds every uint64_t and doubles up to 1e20 with decimals. */
    CHECK(strcmp(tk_fmt_uint(buf, sizeof buf, UINT64_MAX), "18446744073709551615") == 0);
    CHECK(strcmp(tk_fmt_double(buf, sizeof buf, 1e20, 1), "100000000000000000000.0") == 0);
    CHECK(strcmp(tk_fmt_double(buf, sizeof buf, -99999999999999991611392.0, 6), "#") == 0 ||
          strlen(buf) < sizeof buf);
    /* Words for a shell command: plain ones as they are, others quoted. */
    char word[64], small[6];
    CHECK(strcmp(tk_fmt_shell_word(word, sizeof word, "tlsf-none"), "tlsf-none") == 0);
    CHECK(strcmp(tk_fmt_shell_word(word, sizeof word, "/a/b_c.so"), "/a/b_c.so") == 0);
    CHECK(strcmp(tk_fmt_shell_word(word, sizeof word, "tlsf(typed)"), "'tlsf(typed)'") == 0);
    CHECK(strcmp(tk_fmt_shell_word(word, sizeof word, "a b"), "'a b'") == 0);
    CHECK(strcmp(tk_fmt_shell_word(word, sizeof word, "it's"), "'it'\\''s'") == 0);
    CHECK(strcmp(tk_fmt_shell_word(word, sizeof word, ""), "''") == 0);
    CHECK(strcmp(tk_fmt_shell_word(word, sizeof word, "$HOME;rm"), "'$HOME;rm'") == 0);
    CHECK(strcmp(tk_fmt_shell_word(small, sizeof small, "a b c d"), "#") == 0);
    CHECK(strcmp(tk_fmt_shell_word(small, sizeof small, "abcdefg"), "#") == 0);
    CHECK(strcmp(tk_fmt_shell_word(small, sizeof small, "a b"), "'a b'") == 0);
    /* A figure that does not fit is "#", never a shorter number. */
    CHECK(strcmp(tk_fmt_uint(small, sizeof small, 123456), "#") == 0);
    CHECK(strcmp(tk_fmt_uint(small, sizeof small, 12345), "12345") == 0);
    CHECK(strcmp(tk_fmt_double(small, sizeof small, 1234.5, 1), "#") == 0);
    CHECK(strcmp(tk_fmt_ratio(small, sizeof small, 12.5), "#") == 0);
    CHECK(strcmp(tk_fmt_ratio(small, sizeof small, 1.5), "1.50x") == 0);
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, "tools.json");
}
