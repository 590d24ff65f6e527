/*
 * rtmem report: runs the report package (report/rtmem_report) with the
 * arguments after `rtmem report` (launch.c). Returns only on failure: the
 * exit status to give.
 */
#ifndef RTMEM_TOOLS_REPORT_H
#define RTMEM_TOOLS_REPORT_H

int report_main(int argc, char **argv);

#endif /* RTMEM_TOOLS_REPORT_H */
