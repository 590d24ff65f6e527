/*
 * The subcommands of `rtmem`. Each takes the arguments after `rtmem` (argv[0]
 * is the subcommand's name) and returns the process exit status:
 * 0 success, 1 run-time failure, 2 bad usage.
 */
#ifndef RTMEM_TOOLS_CMD_H
#define RTMEM_TOOLS_CMD_H

int rtm_cmd_bench(int argc, char **argv);

/* The subcommands on the bench kit's driver (common/tool.h): run with
 * tk_tool_main. */
struct tk_tool;
extern const struct tk_tool memcheck_tool;

#endif /* RTMEM_TOOLS_CMD_H */
