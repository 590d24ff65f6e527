/*
 * The tool driver (tools/common/tool.h) with a tool made for the test: the
 * steps in order, the exit statuses, --help, the JSON envelope, and result
 * files written only for a verdict and never damaged otherwise.
 *
 * usage: tool_test DIR   (an empty directory for its result files)
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture.h"
#include "check.h"
#include "common/tool.h"

struct fake_opts {
    const char *json_path;
    int end;     /* --end passed|failed|aborted */
    bool refuse; /* --refuse: the combination check says no */
    bool setup_fails;
    uint64_t seed;
    struct tk_rt_opts rt;
};

/* What the steps saw, in order: "c" check, "s" setup, "r" run, "p" report,
 * "j" JSON, "t" teardown. */
static char trace[16];

static void step(char c)
{
    size_t n = strlen(trace);
    if (n + 1 < sizeof(trace))
        trace[n] = c, trace[n + 1] = '\0';
}

static void notes(FILE *f)
{
    fprintf(f, "\nnames known at run time\n");
}

static int check(struct tk_session *s)
{
    step('c');
    const struct fake_opts *o = s->opts;
    return o->refuse ? tk_args_bad(&s->cli, "--refuse: refused") : 0;
}

static int state_value = 42;

static int setup(struct tk_session *s)
{
    step('s');
    const struct fake_opts *o = s->opts;
    if (o->setup_fails) {
        fprintf(stderr, "%s: setup failed\n", s->cli.prog);
        return TK_EXIT_FAILED;
    }
    s->state = &state_value;
    return 0;
}

static enum tk_run_end run(struct tk_session *s)
{
    step('r');
    const struct fake_opts *o = s->opts;
    printf("header\n");
    return (enum tk_run_end)o->end;
}

static void report(const struct tk_session *s, FILE *f)
{
    step('p');
    fprintf(f, "report of state %d\n", *(const int *)s->state);
}

static struct tk_machine machine;

static void facts(const struct tk_session *s, struct tk_facts *out)
{
    const struct fake_opts *o = s->opts;
    out->machine = &machine;
    out->has_seed = true;
    out->seed = o->seed;
}

static void json(const struct tk_session *s, struct tk_json *j)
{
    step('j');
    tk_json_kv_int(j, "state", *(const int *)s->state);
}

static void teardown(struct tk_session *s)
{
    (void)s;
    step('t');
}

static const char *const ends[] = { "passed", "failed", "aborted", NULL };

static const struct tk_opt fake_opts_table[] = {
    TK_OPT_KIT_JSON(TK_FIELD(struct fake_opts, json_path)),
    { "end", TK_OPT_CHOICE, "E", "how the run ends (default %D)", TK_FIELD(struct fake_opts, end),
      .choices = ends },
    { "refuse", TK_OPT_FLAG, NULL, "the check refuses", TK_FIELD(struct fake_opts, refuse) },
    { "setup-fails", TK_OPT_FLAG, NULL, "setup fails", TK_FIELD(struct fake_opts, setup_fails) },
    TK_OPT_KIT_SEED(TK_FIELD(struct fake_opts, seed)),
    TK_OPT_KIT_RT(struct fake_opts, rt),
};

static const struct fake_opts fake_defaults = { .end = TK_RUN_PASSED,
                                                .seed = 7,
                                                .rt = TK_RT_OPTS_DEFAULT };

static const struct tk_tool fake = {
    .name = "fake",
    .summary = "a tool for the test",
    .schema = "rtmem-fake/1",
    .bytes_example = "4096",
    .opts = fake_opts_table,
    .n_opts = sizeof(fake_opts_table) / sizeof(fake_opts_table[0]),
    .opts_size = sizeof(struct fake_opts),
    .defaults = &fake_defaults,
    .json_path_offset = offsetof(struct fake_opts, json_path),
    .help_notes = notes,
    .check = check,
    .setup = setup,
    .run = run,
    .report = report,
    .facts = facts,
    .json = json,
    .teardown = teardown,
};

static char out_text[16384], err_text[16384];

/* Runs the fake tool on the words of line; its stdout and stderr into
 * out_text and err_text. Returns its exit status. */
static int fake_main(const char *line)
{
    static char buf[1024];
    char *argv[32];
    int argc = 0;
    argv[argc++] = (char *)"fake";
    snprintf(buf, sizeof(buf), "%s", line);
    for (char *w = strtok(buf, " "); w && argc < 31; w = strtok(NULL, " "))
        argv[argc++] = w;
    argv[argc] = NULL;
    trace[0] = '\0';
    FILE *err = tmpfile();
    int saved = dup(STDERR_FILENO);
    fflush(stderr);
    dup2(fileno(err), STDERR_FILENO);
    capture_fd_begin(STDOUT_FILENO);
    int status = tk_tool_main(&fake, argc, argv);
    snprintf(out_text, sizeof(out_text), "%s", capture_fd_end());
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(err);
    size_t n = fread(err_text, 1, sizeof(err_text) - 1, err);
    err_text[n] = '\0';
    fclose(err);
    return status;
}

static const char *dir;

static char *slurp(const char *path)
{
    static char buf[16384];
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static bool has(const char *text, const char *want)
{
    bool ok = text && strstr(text, want) != NULL;
    if (!ok)
        fprintf(stderr, "  wanted '%s' in: %s\n", want, text ? text : "(nothing)");
    return ok;
}

/* No temporary result file left in dir. */
static bool no_leftovers(void)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "ls -A '%s' | grep -q '^\\.'", dir);
    return system(cmd) != 0;
}

TEST_CASE("--help prints the synopsis, the options, the notes and the manual")
{
    CHECK_EQ(fake_main("--help"), TK_EXIT_OK);
    CHECK(has(out_text, "usage: rtmem fake [options]\na tool for the test.\n"));
    CHECK(has(out_text, "\noptions:\n  --json FILE "));
    CHECK(has(out_text, "how the run ends (default passed)\n"));
    CHECK(has(out_text, "the seed of random draws (default 7)\n"));
    CHECK(has(out_text, "the CPU to pin to (default: the last allowed)\n"));
    CHECK(has(out_text, "\nnames known at run time\n"));
    CHECK(has(out_text, "\nexit status: 0 passed, 1 a check or the run failed, 2 bad usage\n"));
    CHECK(has(out_text, "\nmanual: "));
    CHECK(has(out_text, "/fake.md\n"));
    CHECK(strcmp(trace, "") == 0);
}

TEST_CASE("--no-rt with --prio is bad usage, with --seed random it is not")
{
    CHECK_EQ(fake_main("--no-rt --prio 50"), TK_EXIT_USAGE);
    CHECK(has(err_text, "rtmem fake: --no-rt runs under SCHED_OTHER: --prio would not be used\n"));
    CHECK(strcmp(trace, "") == 0);
    CHECK_EQ(fake_main("--seed random --no-rt"), TK_EXIT_OK);
}

TEST_CASE("an unknown option or choice is bad usage before any step")
{
    CHECK_EQ(fake_main("--nosuch"), TK_EXIT_USAGE);
    CHECK(has(err_text, "rtmem fake: unknown option '--nosuch'\nTry 'rtmem fake --help'.\n"));
    CHECK(strcmp(trace, "") == 0);
    CHECK(out_text[0] == '\0');
    CHECK_EQ(fake_main("--end sideways"), TK_EXIT_USAGE);
    CHECK(has(err_text, "--end: 'sideways' is not one of passed, failed, aborted"));
}

TEST_CASE("a check that refuses is bad usage, and no step follows it")
{
    CHECK_EQ(fake_main("--refuse"), TK_EXIT_USAGE);
    CHECK(has(err_text, "rtmem fake: --refuse: refused"));
    CHECK(strcmp(trace, "c") == 0);
}

TEST_CASE("a setup that fails goes to the teardown and fails the run")
{
    CHECK_EQ(fake_main("--setup-fails"), TK_EXIT_FAILED);
    CHECK(has(err_text, "rtmem fake: setup failed"));
    CHECK(strcmp(trace, "cst") == 0);
}

/* The result file of the runs below, in the directory given. */
static const char *result_path(void)
{
    static char path[512];
    snprintf(path, sizeof(path), "%s/r.json", dir);
    return path;
}

TEST_CASE("a passed run reports and writes the JSON envelope")
{
    const char *path = result_path();
    char line[700];
    snprintf(line, sizeof(line), "--seed 99 --json %s", path);
    CHECK_EQ(fake_main(line), TK_EXIT_OK);
    CHECK(strcmp(trace, "csrpjt") == 0);
    CHECK(has(out_text, "header\nreport of state 42\nresults written to "));
    const char *j = slurp(path);
    CHECK(has(j, "{\n  \"schema\": \"rtmem-fake/1\",\n  \"tool\": \"fake\",\n  \"version\": \""));
    char cl[700];
    snprintf(cl, sizeof(cl),
             "\"command_line\": [\"rtmem\", \"fake\", \"--seed\", \"99\", "
             "\"--json\", \"%s\"]",
             path);
    CHECK(has(j, cl));
    CHECK(has(j, "\"machine\": {"));
    CHECK(has(j, "\"timer\": null"));
    CHECK(has(j, "\"real_time\": null"));
    CHECK(has(j, "\"seed\": 99,"));
    CHECK(has(j, "\"seconds\": "));
    CHECK(has(j, "\"passed\": true,\n  \"state\": 42\n}\n"));
    CHECK(no_leftovers());
}

TEST_CASE("a failed run reports and writes its verdict")
{
    const char *path = result_path();
    char line[700];
    snprintf(line, sizeof(line), "--end failed --json %s", path);
    CHECK_EQ(fake_main(line), TK_EXIT_FAILED);
    CHECK(strcmp(trace, "csrpjt") == 0);
    CHECK(has(out_text, "report of state 42"));
    const char *j = slurp(path);
    CHECK(has(j, "\"passed\": false"));
    CHECK(has(j, "\"seed\": 7,"));
}

/* No verdict: no report, and the previous results stay as they were (and
 * are removed after). */
TEST_CASE("an aborted run reports nothing and leaves the previous results as they were")
{
    const char *path = result_path();
    char line[700];
    write_file(path, "previous results\n");
    snprintf(line, sizeof(line), "--end aborted --json %s", path);
    CHECK_EQ(fake_main(line), TK_EXIT_FAILED);
    CHECK(strcmp(trace, "csrt") == 0);
    CHECK(strcmp(out_text, "header\n") == 0);
    const char *j = slurp(path);
    CHECK(j && strcmp(j, "previous results\n") == 0);
    CHECK(no_leftovers());
    CHECK(unlink(path) == 0);
}

/* A result file that cannot be written: bad usage, found before the run. */
TEST_CASE("a result file that cannot be written is bad usage before the run")
{
    char line[700];
    snprintf(line, sizeof(line), "--json %s/no/such/dir/r.json", dir);
    CHECK_EQ(fake_main(line), TK_EXIT_USAGE);
    CHECK(strcmp(trace, "cst") == 0);
    CHECK(has(err_text, "rtmem fake: cannot write '"));
}

TEST_CASE("without --json no file is written, and the report is the same")
{
    const char *path = result_path();
    unlink(path); /* whatever a case before left there */
    CHECK_EQ(fake_main(""), TK_EXIT_OK);
    CHECK(strcmp(trace, "csrpt") == 0);
    CHECK(strcmp(out_text, "header\nreport of state 42\n") == 0);
    CHECK(access(path, F_OK) != 0);
}

/* The directory (made here when missing) and the machine the JSON names,
 * for every case. */
int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: tool_test DIR\n");
        return 2;
    }
    dir = argv[1];
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        perror(dir);
        return 2;
    }
    snprintf(machine.cpu_model, sizeof(machine.cpu_model), "test CPU");
    return test_main(argc, argv, "tools.tool");
}
