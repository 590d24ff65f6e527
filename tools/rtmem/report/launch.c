/*
 * rtmem report: the plots and the page are drawn in Python (matplotlib), by
 * the package report/rtmem_report. This command finds that package and a
 * Python to run it with, and execs it in its own place: the same process,
 * so Ctrl-C, the exit status and the output are the report's own.
 *
 * The package: installed beside the binary (<bin>/../share/rtmem/report),
 * else the source tree the binary was built from. Python: $RTMEM_PYTHON
 * if set; else, installed, python3 on PATH (the system's, with its
 * python3-matplotlib: an installed rtmem never runs the .venv of the tree
 * it was built from, which may be gone or another version); else the
 * project's virtual environment (.venv/, made by scripts/ensure-deps.sh
 * report), else python3 on PATH. RTMEM_REPORT_INSTALLED=1 in the report's
 * environment says which case it is, for its advice when matplotlib is
 * missing.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/args.h"
#include "common/tool.h"
#include "report.h"

#ifndef RTMEM_REPORT_SOURCE_DIR
#error "RTMEM_REPORT_SOURCE_DIR must name the source tree's report/ (tools/CMakeLists.txt)"
#endif
#ifndef RTMEM_REPORT_VENV_PYTHON
#error "RTMEM_REPORT_VENV_PYTHON must name the project's .venv/bin/python"
#endif

int report_main(int argc, char **argv)
{
    char script[PATH_MAX + 64];
    bool installed = tk_share_path(script, sizeof(script), "rtmem/report/run.py") == 0 &&
                     access(script, R_OK) == 0;
    if (!installed) {
        int len = snprintf(script, sizeof(script), "%s/run.py", RTMEM_REPORT_SOURCE_DIR);
        if (len < 0 || (size_t)len >= sizeof(script) || access(script, R_OK) != 0) {
            fprintf(stderr,
                    "rtmem report: its Python package is missing: neither beside this binary "
                    "(../share/rtmem/report) nor in %s\n",
                    RTMEM_REPORT_SOURCE_DIR);
            return TK_EXIT_FAILED;
        }
    }
    const char *python = getenv("RTMEM_PYTHON");
    if (python && !*python)
        python = NULL;
    if (!python && !installed && access(RTMEM_REPORT_VENV_PYTHON, X_OK) == 0)
        python = RTMEM_REPORT_VENV_PYTHON;
    if (!python)
        python = "python3";
    if (setenv("RTMEM_REPORT_INSTALLED", installed ? "1" : "0", 1) != 0) {
        fprintf(stderr, "rtmem report: cannot set its environment: %s\n", strerror(errno));
        return TK_EXIT_FAILED;
    }

    /* python run.py <the arguments after `rtmem report`> */
    char **args = calloc((size_t)argc + 2, sizeof(*args));
    if (!args) {
        fprintf(stderr, "rtmem report: out of memory\n");
        return TK_EXIT_FAILED;
    }
    args[0] = (char *)python;
    args[1] = script;
    for (int i = 1; i < argc; i++)
        args[i + 1] = argv[i];
    fflush(stdout);
    execvp(python, args);
    if (installed)
        fprintf(stderr,
                "rtmem report: cannot run %s: %s (install Python 3 and matplotlib with the "
                "system's package manager, e.g. apt install python3-matplotlib, or set "
                "RTMEM_PYTHON to a Python that has matplotlib)\n",
                python, strerror(errno));
    else
        fprintf(stderr,
                "rtmem report: cannot run %s: %s (install Python 3, run "
                "scripts/ensure-deps.sh report, or set RTMEM_PYTHON)\n",
                python, strerror(errno));
    free(args);
    return TK_EXIT_FAILED;
}
