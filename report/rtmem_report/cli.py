"""rtmem report RESULTS_DIR [-o REPORT_DIR]: its options and exit status
(0 made, 1 a result file malformed or the report not written, 2 bad
usage), as every rtmem command's."""

import argparse
import os
import signal
import sys
import time
import traceback

HELP = """\
Draws everything rtmem measured into one page: reads the result files the
tools wrote with --json in RESULTS_DIR (every *.json whose schema is
rtmem-<tool>/<N>: memcheck, bench, wcet, latency, pressure, stride, bw,
shm) and writes PNG plots and index.html into REPORT_DIR, each section with
the command that reproduces it. The page needs no network: open
REPORT_DIR/index.html in a browser, with the PNG files beside it.

A tool without a result file, or whose file has another version of its
schema, is left out with a note; a file that is not valid JSON, or misses a
member its schema requires, is named in an error and nothing is written.
The directory is written safely: its files appear only when the whole
report is made, rtmem report replaces only the files it wrote there before
(listed in REPORT_DIR/.rtmem-report), and it refuses a directory holding a
file of the same name that it did not write.

The plots use matplotlib, pinned in report/requirements.txt: `make bench`
and `make test` install it into the project's .venv/, which rtmem report
uses in the tree it was built in. An installed rtmem report runs python3
on PATH (the system's matplotlib: Debian's python3-matplotlib draws it
too). RTMEM_PYTHON names another Python either way. docs/report.md
describes every plot.
"""

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class Parser(argparse.ArgumentParser):
    def error(self, message):
        sys.stderr.write("%s: %s\n(rtmem report --help describes the options)\n"
                         % (self.prog, message))
        sys.exit(EXIT_USAGE)


def parse(argv):
    p = Parser(prog="rtmem report", usage="rtmem report RESULTS_DIR [-o REPORT_DIR] [--quiet]",
               description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", metavar="RESULTS_DIR",
                   help="the directory of result files (the tools' --json output)")
    p.add_argument("-o", "--output", metavar="REPORT_DIR",
                   help="where to write index.html and the plots (default: RESULTS_DIR/report)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="print only errors (default: a line per section and where the page is)")
    return p.parse_args(argv)


class Interrupted(Exception):
    """SIGINT or SIGTERM: the run ends early, its status 128 + the signal."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _interrupted(signum, frame):
    from . import output  # no matplotlib: always importable

    if output.held():  # a file being made and recorded: the signal waits
        output.defer(signum)
        return
    raise Interrupted(signum)


# Signals that came after the report's own handling of them: recorded by
# the handler _main leaves in place as it ends, and what the exit says.
_late = []


def _record(signum, frame):
    _late.append(signum)


def main(argv=None):
    """The report, and its exit status: an interrupt that arrives at any
    moment before the process ends, its last instructions included, ends it
    as interrupted (128 + the signal), never as a success."""
    try:
        status = _main(argv)
    except Interrupted as e:  # in _main's cleanup, before it recorded instead
        status = 128 + e.signum
    if _late and status < 128:
        if status == EXIT_OK:
            sys.stderr.write("rtmem report: interrupted by %s as it ended; the report was "
                             "already complete\n" % signal.Signals(_late[0]).name)
        status = 128 + _late[0]
    # Ended here, at once: nothing after this can run a handler and lose a
    # signal's verdict.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def _main(argv=None):
    signal.signal(signal.SIGINT, _interrupted)
    signal.signal(signal.SIGTERM, _interrupted)
    prog = "rtmem report"
    out = None
    try:
        args = parse(sys.argv[1:] if argv is None else argv)
        if not os.path.isdir(args.results):
            sys.stderr.write("%s: %s is not a directory\n" % (prog, args.results))
            return EXIT_USAGE
        out_dir = args.output or os.path.join(args.results, "report")
        try:
            from . import plot  # noqa: F401  (matplotlib, before anything is written)
        except ImportError as e:
            if os.environ.get("RTMEM_REPORT_INSTALLED") == "1":
                advice = ("install matplotlib for this Python with the system's package "
                          "manager (Debian, Ubuntu: apt install python3-matplotlib; Fedora: dnf "
                          "install python3-matplotlib), or set RTMEM_PYTHON to a Python that "
                          "has it (a virtual environment's bin/python)")
            else:
                advice = ("`scripts/ensure-deps.sh report` installs matplotlib into the "
                          "project's .venv/ (make bench does); or set RTMEM_PYTHON to a Python "
                          "that has it")
            sys.stderr.write("%s: cannot draw: %s (with %s)\n  %s\n"
                             % (prog, e, sys.executable, advice))
            return EXIT_FAILED
        from . import build, doc, output
        from .sections import SECTIONS

        def log(line):
            if not args.quiet:
                print(line, flush=True)

        start = time.monotonic()
        try:
            out = output.Output(out_dir, [m.ANCHOR for m in SECTIONS])
            out.open()
            n = build.build(args.results, out, log)
            out.commit()
        except doc.Malformed as e:
            sys.stderr.write("%s: malformed result file: %s\n" % (prog, e))
            return EXIT_FAILED
        except output.OutputError as e:
            sys.stderr.write("%s: %s\n" % (prog, e))
            return EXIT_FAILED
        except OSError as e:
            sys.stderr.write("%s: writing the report failed: %s\n" % (prog, e))
            return EXIT_FAILED
        log("%d section(s), %.1f s: %s" % (n, time.monotonic() - start,
                                           os.path.join(out_dir, "index.html")))
        return EXIT_OK
    except Interrupted as e:
        sys.stderr.write("%s: interrupted by %s; %s\n" % (
            prog, signal.Signals(e.signum).name,
            "nothing written" if out is None else "%s left as it was" % out.dir))
        return 128 + e.signum
    except Exception:
        # A bug: its traceback for the report of it, and nothing left behind.
        traceback.print_exc()
        sys.stderr.write("%s: internal error (the traceback above); nothing written\n" % prog)
        return EXIT_FAILED
    finally:
        # From here on a signal is recorded for main to see: the handler
        # can no longer end the run at a random instruction.
        signal.signal(signal.SIGINT, _record)
        signal.signal(signal.SIGTERM, _record)
        if os.environ.get("RTMEM_REPORT_TEST_LATE_SIGNAL") == "1":  # tests: a signal at the end
            os.kill(os.getpid(), signal.SIGTERM)
        if out is not None:
            out.abandon()
