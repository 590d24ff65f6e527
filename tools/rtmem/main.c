/*
 * The `rtmem` command: dispatches to its subcommands.
 *   rtmem bench ...   alloc/free latency of every heap kind vs glibc
 *   rtmem memcheck .. the heap test harness (Xenomai smokey's memory tests)
 *   rtmem kinds       the heap kinds built into the library
 *   rtmem --help, rtmem --version
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "common/result.h"
#include "common/tool.h"
#include "rtmem/rtmem.h"

static int cmd_kinds(int argc, char **argv);
static int cmd_memcheck(int argc, char **argv);

struct subcommand {
    const char *name;
    const char *prog;   /* starts its messages */
    int (*run)(int argc, char **argv);
    const char *summary;
};

static const struct subcommand subcommands[] = {
    {"bench", "rtmem bench", rtm_cmd_bench, "alloc/free latency of every heap kind, side by side with glibc"},
    {"memcheck", "rtmem memcheck", cmd_memcheck, "heap test harness: smokey's memory test sequence and metrics"},
    {"kinds", "rtmem kinds", cmd_kinds, "list the heap kinds built into librtmem"},
};

#define N_SUBCOMMANDS (sizeof(subcommands) / sizeof(subcommands[0]))

static void usage(FILE *f)
{
    fprintf(f, "usage: rtmem <command> [options]\n       rtmem --help | --version\n\ncommands:\n");
    for (size_t i = 0; i < N_SUBCOMMANDS; i++)
        fprintf(f, "  %-9s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(f, "\n'rtmem <command> --help' describes a command's options.\n");
}

static int cmd_memcheck(int argc, char **argv)
{
    return tk_tool_main(&memcheck_tool, argc, argv);
}

static int cmd_kinds(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: rtmem kinds\n\nLists the heap kinds built into librtmem, one per line "
               "(names for rtm_heap_create).\n");
        return 0;
    }
    if (argc > 1) {
        fprintf(stderr, "rtmem kinds: unexpected argument '%s'\n", argv[1]);
        return 2;
    }
    for (const char *const *k = rtm_heap_kinds(); *k; k++)
        printf("%s\n", *k);
    return 0;
}

/* The command's exit status, before standard output is checked. */
static int run_command(int argc, char **argv, const char **prog)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
        printf("rtmem %s\n", RTMEM_VERSION_STRING);
        return 0;
    }
    for (size_t i = 0; i < N_SUBCOMMANDS; i++)
        if (strcmp(cmd, subcommands[i].name) == 0) {
            *prog = subcommands[i].prog;
            return subcommands[i].run(argc - 1, argv + 1);
        }
    fprintf(stderr, "rtmem: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return 2;
}

int main(int argc, char **argv)
{
    const char *prog = "rtmem";
    int status = run_command(argc, argv, &prog);
    /* Whatever was printed must have reached standard output: a full disk
     * or a closed file fails the command, with the cause. */
    if (tk_stdout_check(prog) != 0 && status == 0)
        status = 1;
    if (fclose(stdout) != 0 && status == 0) {
        fprintf(stderr, "%s: closing standard output failed: %s\n", prog, strerror(errno));
        status = 1;
    }
    return status;
}
