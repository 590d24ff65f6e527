"""rtmem's figures: every figure README.md and docs/*.md quote from a run,
regenerated from runs so that the pages cannot drift from what the tools
measure.

    python3 scripts/figures run [--runs N] [--out DIR]
    python3 scripts/figures collect [--runs N] [--out DIR]
    python3 scripts/figures update [--dry-run] [--root DIR] RUN_DIR...
    python3 scripts/figures check [--root DIR]
    python3 scripts/figures list [--root DIR]

collect makes N runs (default 3) in a new directory (default
results/figures-<date>-<time>): each run is `make bench` into DIR/run-K,
then the studies the pages quote that make bench does not make (rtmem
latency --default-system, rtmem stride --first-touch) into the same
directory (each its JSON and its printed report, .txt), and a stamp
(date, commit). Interrupted or failed, it removes
the run it was making and keeps the runs already complete.

update reads runs (a collect directory, its run-K directories, or any make
bench results directory, each one run) and replaces the text of every
figure marker in the pages with what its rule makes from them: a figure
shown over several runs becomes their range or their median with the
range. It prints each change; the prose around a changed figure is the
author's to reread. The pages are written through a temporary file each,
renamed into place. A figure whose source is in none of the runs is left
as it was and listed.

run is collect, then update from what it collected.

check lists markers without a rule, rules without a marker and markers
that do not pair up (tests/tools/test_figures.py runs it).

Exit status: 0 done; 1 a figure could not be made (update: listed) or a
marker problem (check), or a run failed (collect); 2 bad usage; 130
interrupted.
"""
import argparse
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import engine  # noqa: E402
import rules  # noqa: E402,F401  (registers every rule)


def run_dirs(paths):
    """The run directories PATHS name: a directory with run-K
    subdirectories stands for those, in order."""
    out = []
    for p in paths:
        if not os.path.isdir(p):
            raise SystemExit(f"figures: {p}: not a directory")
        subs = sorted((d for d in os.listdir(p) if d.startswith("run-")
                       and os.path.isdir(os.path.join(p, d))),
                      key=lambda d: int(d[4:]) if d[4:].isdigit() else 0)
        out += [os.path.join(p, d) for d in subs] if subs else [p]
    return out


def write_safely(path, text):
    d = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=".figures-", dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def cmd_check(args):
    problems = engine.lint(args.root)
    for page, line, why in problems:
        print(f"{page}:{line}: {why}" if line else f"{page}: {why}")
    n = sum(len(engine.markers(open(p, encoding="utf-8").read()))
            for p in engine.pages(args.root))
    print(f"figures: {n} markers, {len(engine.RULES)} rules, {len(problems)} problems")
    return 1 if problems else 0


def cmd_list(args):
    for page in engine.pages(args.root):
        text = open(page, encoding="utf-8").read()
        for m in engine.markers(text):
            line = text.count("\n", 0, m.start()) + 1
            r = engine.RULES.get(m.group(1))
            src = ", ".join(r.sources) if r else "NO RULE"
            print(f"{os.path.relpath(page, args.root)}:{line}: {m.group(1)} [{src}]")
    return 0


def cmd_update(args):
    problems = [p for p in engine.lint(args.root) if p[1]]
    if problems:
        for page, line, why in problems:
            print(f"{page}:{line}: {why}", file=sys.stderr)
        print("figures: the markers have problems (figures check); nothing written",
              file=sys.stderr)
        return 1
    runs = engine.Runs(run_dirs(args.runs))
    made, failed = engine.render(runs)
    total = 0
    for page in engine.pages(args.root):
        with open(page, encoding="utf-8") as f:
            text = f.read()
        new, changes = engine.substitute(text, made)
        rel = os.path.relpath(page, args.root)
        for name, old, nw in changes:
            if "\n" in old or "\n" in nw:
                print(f"{rel}: {name}: table changed")
            else:
                print(f"{rel}: {name}: {old} -> {nw}")
        total += len(changes)
        if changes and not args.dry_run:
            write_safely(page, new)
    for name, why in sorted(failed.items()):
        print(f"figures: {name} not refreshed: {why}")
    verb = "would change" if args.dry_run else "changed"
    print(f"figures: {len(runs.dirs)} run(s); {len(made)} rules made, {total} figures {verb}, "
          f"{len(failed)} not refreshed")
    return 1 if failed else 0


def git_commit(root):
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + ("+changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


class Interrupted(Exception):
    pass


def run_child(argv, log):
    """Runs ARGV in its own process group, its output to LOG and the
    terminal; on SIGINT/SIGTERM the whole group is ended and reaped."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    got = []

    def stop(sig, _frame):
        got.append(sig)
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    old = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        for line in iter(proc.stdout.readline, b""):
            log.write(line)
            sys.stdout.buffer.write(line)
            sys.stdout.flush()
        status = proc.wait()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    if got:
        raise Interrupted()
    return status


def cmd_collect(args):
    """Returns (status, out_dir)."""
    out = args.out or os.path.join(
        args.root, "results", "figures-" + datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
    if os.path.exists(out) and os.listdir(out):
        print(f"figures: {out} exists and is not empty: give a new --out", file=sys.stderr)
        return 2, None
    made_out = not os.path.exists(out)
    os.makedirs(out, exist_ok=True)
    rtmem = os.path.join(args.root, args.build, "tools", "rtmem")
    bench = os.environ.get("RTMEM_FIGURES_BENCH")  # tests: a stand-in for make bench
    done = []
    for k in range(1, args.runs + 1):
        d = os.path.join(out, f"run-{k}")
        os.makedirs(d)
        started = datetime.datetime.now(datetime.timezone.utc)
        print(f"figures: run {k} of {args.runs} into {d}", flush=True)
        try:
            with open(os.path.join(d, "figures.log"), "wb") as log:
                argv = (["sh", "-c", bench, "figures-bench", d] if bench else
                        ["make", "-C", args.root, "--no-print-directory", "bench",
                         f"BUILD={args.build}", f"RESULTS={d}"])
                status = run_child(argv, log)
                # make bench fails after its report when bench's verdict is a
                # failure (a target not met): its files are whole, and kept.
                missing = [engine.SOURCES[s][0] for s in engine.SOURCES
                           if s not in engine.STUDIES
                           and not os.path.exists(os.path.join(d, engine.SOURCES[s][0]))]
                if missing:
                    raise RuntimeError(f"make bench exited {status} without "
                                       f"{', '.join(missing)}")
                for study, argv in engine.STUDIES.items():
                    path = os.path.join(d, engine.SOURCES[study][0])
                    argv = [a.format(rtmem=rtmem, out=path) for a in argv]
                    if bench:
                        argv = ["sh", "-c", bench, "figures-study", path]
                    # its report beside its JSON, as make bench keeps the tools'
                    with open(path[:-len(".json")] + ".txt", "wb") as report:
                        st = run_child(argv, report)
                    if st != 0 or not os.path.exists(path):
                        raise RuntimeError(f"{' '.join(argv)} exited {st}")
            stamp = {"date": started.strftime("%Y-%m-%d"), "started": started.isoformat(),
                     "commit": git_commit(args.root), "bench_status": status}
            with open(os.path.join(d, engine.RUN_STAMP), "w", encoding="utf-8") as f:
                json.dump(stamp, f, indent=1)
            done.append(d)
        except (Interrupted, RuntimeError, OSError) as e:
            shutil.rmtree(d, ignore_errors=True)
            if not done and made_out:
                shutil.rmtree(out, ignore_errors=True)
            why = "interrupted" if isinstance(e, Interrupted) else str(e)
            print(f"figures: run {k} {why}; removed it", file=sys.stderr)
            if done:
                print(f"figures: the runs complete are kept: {', '.join(done)}", file=sys.stderr)
            return (130 if isinstance(e, Interrupted) else 1), None
    print(f"figures: {args.runs} run(s) in {out}")
    return 0, out


def main(argv=None):
    p = argparse.ArgumentParser(prog="figures", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", default=engine.ROOT, help="the tree whose pages are kept (default: this one)")
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("check", help="markers without a rule, rules without a marker")
    sub.add_parser("list", help="every marker, its page and line, and its sources")
    u = sub.add_parser("update", help="regenerate the pages' figures from runs")
    u.add_argument("--dry-run", action="store_true", help="print the changes, write nothing")
    u.add_argument("runs", nargs="+", help="run directories (or a collect directory)")
    for name in ("collect", "run"):
        c = sub.add_parser(name, help="make runs (make bench and the studies)"
                           + (", then update" if name == "run" else ""))
        c.add_argument("--runs", type=int, default=3, help="how many runs (default 3)")
        c.add_argument("--out", help="a new directory for them (default results/figures-<time>)")
        c.add_argument("--build", default="build", help="the build directory (default build)")
        if name == "run":
            c.add_argument("--dry-run", action="store_true", help="print the changes, write nothing")
    args = p.parse_args(argv)
    if getattr(args, "runs", None) is not None and isinstance(args.runs, int) and not 1 <= args.runs <= 20:
        p.error("--runs: 1 to 20")
    if args.cmd == "check":
        return cmd_check(args)
    if args.cmd == "list":
        return cmd_list(args)
    if args.cmd == "update":
        return cmd_update(args)
    status, out = cmd_collect(args)
    if args.cmd == "collect" or status != 0:
        return status
    args.runs = [out]
    return cmd_update(args)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
