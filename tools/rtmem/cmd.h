/*
 * The tools of `rtmem`, each a folder tools/rtmem/<tool>/ run by the bench
 * kit's driver (common/tool.h): main.c lists them, in the order `rtmem
 * --help` shows them. A new tool adds its line here and in main.c.
 */
#ifndef RTMEM_TOOLS_CMD_H
#define RTMEM_TOOLS_CMD_H

struct tk_tool;

extern const struct tk_tool bench_tool;    /* bench/cli.c */
extern const struct tk_tool memcheck_tool; /* memcheck/cli.c */
extern const struct tk_tool latency_tool;  /* latency/cli.c */
extern const struct tk_tool pressure_tool; /* pressure/cli.c */
extern const struct tk_tool stride_tool;   /* stride/cli.c */
extern const struct tk_tool bw_tool;       /* bw/cli.c */
extern const struct tk_tool shm_tool;      /* shm/cli.c */
extern const struct tk_tool wcet_tool;     /* wcet/cli.c */
extern const struct tk_tool trace_tool;    /* trace/cli.c */
extern const struct tk_tool replay_tool;   /* replay/cli.c */
extern const struct tk_tool size_tool;     /* size/cli.c */
extern const struct tk_tool run_tool;      /* run/cli.c */

#endif /* RTMEM_TOOLS_CMD_H */
