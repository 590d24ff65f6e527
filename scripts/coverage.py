#!/usr/bin/env python3
"""Line coverage of the library (src/) from a build made with
-DRTMEM_COVERAGE=ON whose tests have run, and a floor it must not fall
below.

    scripts/coverage.py BUILD_DIR [--floor PCT] [--json FILE]

Reads every .gcda of the library's objects with gcov (--json-format), so
a source compiled into several objects (tlsf.c plain and logged) counts a
line as run when any of them ran it. Prints a table per file, then each
directory's total against its floor (scripts/coverage-floor: a directory
of src/ and the least percentage of its lines the tests must run; --floor
sets the one of src/); exits 1 when a directory is below its floor, 2 on
bad usage or when there is nothing to read.
"""
import argparse
import gzip
import io
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def gcda_files(build):
    out = []
    for dirpath, _, names in os.walk(build):
        if "rtmem_objects.dir" not in dirpath:
            continue
        out += [os.path.abspath(os.path.join(dirpath, n)) for n in names if n.endswith(".gcda")]
    return sorted(out)


def gcov_json(gcov, gcda):
    """gcov's JSON of one object's counts."""
    r = subprocess.run([gcov, "--json-format", "--stdout", gcda], capture_output=True,
                       cwd=os.path.dirname(gcda))
    if r.returncode != 0:
        raise SystemExit("coverage: %s %s: %s" % (gcov, gcda, r.stderr.decode(errors="replace")))
    data = r.stdout
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    # one JSON document per line (gcov prints one per object)
    return [json.loads(line) for line in io.StringIO(data.decode()) if line.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--floor", type=float, default=None, help="src/'s floor, in percent")
    ap.add_argument("--gcov", default=os.environ.get("GCOV", "gcov"))
    args = ap.parse_args()
    floors = {}
    with open(os.path.join(ROOT, "scripts", "coverage-floor")) as f:
        for line in f:
            words = line.split("#")[0].split()
            if len(words) == 2:
                floors[os.path.normpath(words[0])] = float(words[1])
    if args.floor is not None:
        floors["src"] = args.floor
    files = gcda_files(args.build)
    if not files:
        print("coverage: no .gcda under %s: build with -DRTMEM_COVERAGE=ON and run its tests"
              % args.build, file=sys.stderr)
        return 2
    lines = {}  # source -> {line: ran}
    for gcda in files:
        for doc in gcov_json(args.gcov, gcda):
            for f in doc.get("files", []):
                path = os.path.normpath(os.path.join(doc.get("current_working_directory", ""),
                                                     f["file"]))
                rel = os.path.relpath(path, ROOT)
                if not rel.startswith("src" + os.sep):
                    continue
                seen = lines.setdefault(rel, {})
                for ln in f["lines"]:
                    seen[ln["line_number"]] = seen.get(ln["line_number"], False) or ln["count"] > 0
    print("%-36s %7s %7s %7s" % ("line coverage of src/", "lines", "run", "%"))
    for rel in sorted(lines):
        v = lines[rel]
        print("%-36s %7d %7d %6.1f%%" % (rel, len(v), sum(v.values()),
                                         100.0 * sum(v.values()) / max(1, len(v))))
    below = []
    for d in sorted(floors):
        files = [v for rel, v in lines.items() if rel == d or rel.startswith(d + os.sep)]
        total = sum(len(v) for v in files)
        ran = sum(sum(v.values()) for v in files)
        pct = 100.0 * ran / max(1, total)
        print("%-36s %7d %7d %6.1f%%   floor %.1f%%" % (d + "/ in all", total, ran, pct, floors[d]))
        if pct < floors[d]:
            below.append("%s/: %.1f%% of its lines ran, below its floor of %.1f%%" % (d, pct,
                                                                                    floors[d]))
    for b in below:
        print("coverage: %s (scripts/coverage-floor): a change left code without a test" % b,
              file=sys.stderr)
    if below:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
