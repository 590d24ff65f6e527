/*
 * The `rtmem` command: dispatches to its tools (cmd.h), each run by the
 * bench kit's driver, to `rtmem report` (report/launch.c: the report is
 * drawn in Python) and to `rtmem kinds`.
 *   rtmem <tool> [options], rtmem report, rtmem kinds, rtmem --help, --version
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "report/report.h"
#include "common/result.h"
#include "common/tool.h"
#include "rtmem/rtmem.h"

static const struct tk_tool *const tools[] = {
    &bench_tool, &memcheck_tool, &wcet_tool,  &latency_tool, &pressure_tool, &stride_tool,
    &bw_tool,    &shm_tool,      &trace_tool, &replay_tool,  &size_tool,     &run_tool,
};

#define N_TOOLS (sizeof(tools) / sizeof(tools[0]))

static void usage(FILE *f)
{
    fprintf(f, "usage: rtmem <command> [options]\n       rtmem --help | --version\n\ncommands:\n");
    for (size_t i = 0; i < N_TOOLS; i++)
        fprintf(f, "  %-9s %s\n", tools[i]->name, tools[i]->summary);
    fprintf(f, "  %-9s %s\n", "report", "plots and one HTML page from the tools' result files");
    fprintf(f, "  %-9s %s\n", "kinds", "list the heap kinds built into librtmem");
    fprintf(f, "\n'rtmem <command> --help' describes a command's options.\n");
}

static int cmd_kinds(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: rtmem kinds\n\nLists the heap kinds built into librtmem, one per line "
               "(names for rtm_heap_create).\n");
        return TK_EXIT_OK;
    }
    if (argc > 1) {
        fprintf(stderr, "rtmem kinds: unexpected argument '%s'\n", argv[1]);
        return TK_EXIT_USAGE;
    }
    for (const char *const *k = rtm_heap_kinds(); *k; k++)
        printf("%s\n", *k);
    return TK_EXIT_OK;
}

/* The command's exit status, before standard output is checked; *prog
 * names it in later messages. */
static int run_command(int argc, char **argv, char *prog, size_t prog_size)
{
    if (argc < 2) {
        usage(stderr);
        return TK_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return TK_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
        printf("rtmem %s\n", RTMEM_VERSION_STRING);
        return TK_EXIT_OK;
    }
    snprintf(prog, prog_size, "rtmem %s", cmd);
    for (size_t i = 0; i < N_TOOLS; i++)
        if (strcmp(cmd, tools[i]->name) == 0)
            return tk_tool_main(tools[i], argc - 1, argv + 1);
    if (strcmp(cmd, "kinds") == 0)
        return cmd_kinds(argc - 1, argv + 1);
    if (strcmp(cmd, "report") == 0)
        return report_main(argc - 1, argv + 1);
    snprintf(prog, prog_size, "rtmem");
    fprintf(stderr, "rtmem: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return TK_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    char prog[64] = "rtmem";
    int status = run_command(argc, argv, prog, sizeof(prog));
    /* Whatever was printed must have reached standard output: a full disk
     * or a closed file fails the command, with the cause. */
    if (tk_stdout_check(prog) != 0 && status == 0)
        status = TK_EXIT_FAILED;
    if (fclose(stdout) != 0 && status == 0) {
        fprintf(stderr, "%s: closing standard output failed: %s\n", prog, strerror(errno));
        status = TK_EXIT_FAILED;
    }
    return status;
}
