/*
 * The subcommands of `rtmem`. Each takes the arguments after `rtmem` (argv[0]
 * is the subcommand's name) and returns the process exit status:
 * 0 success, 1 run-time failure, 2 bad usage.
 */
#ifndef RTMEM_TOOLS_CMD_H
#define RTMEM_TOOLS_CMD_H

int rtm_cmd_bench(int argc, char **argv);
int rtm_cmd_memcheck(int argc, char **argv);

#endif /* RTMEM_TOOLS_CMD_H */
