#!/usr/bin/env python3
"""rtmem's heaps against the fastest TLSF and against their own unchecked
code, side by side in one `rtmem bench` run, repeated (make speed; not
part of make bench).

    python3 scripts/speed.py [--build DIR] [--runs N] [--plugin FILE.so]...
                             [--kinds LIST] [--out DIR] [--no-rlsf]

1. Builds peers/rlsf (rlsf 0.2.3, a TLSF in Rust from crates.io, behind
   rtmem's heap plugin ABI) with cargo into DIR/peers/rlsf, unless
   --no-rlsf or cargo is missing (it then says so and goes on without it).
2. Runs `rtmem bench --no-sweep --no-free-order --threads 0` --runs times
   (default 3): its main phase only, every allocator in each run, on
   bench's default rows (every rtmem kind and its unchecked "-none" row,
   tlsf(typed), halffit(typed), glibc, glibc-rt) or on --kinds, plus rlsf and every
   --plugin given (an allocator of your own, or a peer such as o1heap built
   as a plugin).
3. Prints, per allocator, its net time per alloc and per free (average
   minus the harness's floor), the median over the runs and their range;
   then, taken within each run, its ratio to rlsf's time and, for a kind,
   to its own "-none" row's: the median over the runs and their range.
4. Unless --no-count (or valgrind is missing), counts each allocator's
   calls one by one under valgrind's lackey, on the same workload
   (scripts/speed_calls.c, --count-ops steps, default 20000): the
   instructions of each alloc and free (average, p99, max) and the distinct
   64-byte data lines each touches (average, max; the stack's included),
   less what a call to an empty function costs between the same markers.
   These counts are exact, and the same on every run of one build (the
   address space laid out without randomisation, by setarch -R, and the
   driver's stack realigned to a page, so that its frames lie at the same
   place).

Writes DIR/speed.txt and DIR/speed.json (default results/), each a new file
renamed into place at the end; bench's JSON files go to a scratch
directory, removed on exit and on Ctrl-C.
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPS = ("alloc", "free")


def find_cargo():
    """cargo on PATH, or rustup's in ~/.cargo/bin; None when neither."""
    found = shutil.which("cargo")
    if found:
        return found
    home = os.path.expanduser("~/.cargo/bin/cargo")
    return home if os.access(home, os.X_OK) else None


def build_rlsf(build):
    """(path of rlsf's plugin, None), or (None, why it is left out)."""
    cargo = find_cargo()
    if not cargo:
        return None, "cargo not found (Debian's cargo package, or rustup): rlsf left out"
    target = os.path.abspath(os.path.join(build, "peers", "rlsf"))
    cmd = [cargo, "build", "--release", "--quiet", "--manifest-path",
           os.path.join(TOP, "peers", "rlsf", "Cargo.toml"), "--target-dir", target]
    env = dict(os.environ, PATH=os.path.dirname(cargo) + os.pathsep + os.environ.get("PATH", ""))
    print("building rlsf's plugin: " + " ".join(cmd), flush=True)
    rc = run_tracked(cmd, env=env).returncode
    so = os.path.join(target, "release", "librtmem_rlsf_plugin.so")
    if rc != 0 or not os.path.exists(so):
        return None, "cargo could not build peers/rlsf (exit status %d): rlsf left out" % rc
    return so, None


def spread(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}


def fmt(s, unit=""):
    if not s:
        return "-"
    return "%.2f%s (%.2f..%.2f)" % (s["median"], unit, s["min"], s["max"])


def summarise(runs):
    """Per allocator: net ns and the within-run ratios, over the runs."""
    names = [x["name"] for x in runs[0]["allocators"] if x["api"] != "floor"]
    net = []  # per run: {name: {op: ns}}
    for d in runs:
        net.append({x["name"]: {op: x[op]["avg_minus_floor_ns"] for op in OPS}
                    for x in d["allocators"] if x["api"] != "floor"})
    out = []
    for n in names:
        row = {"name": n, "api": next(x["api"] for x in runs[0]["allocators"] if x["name"] == n)}
        for op in OPS:
            row[op + "_ns"] = spread([r[n][op] for r in net if n in r])
            for ref, key in (("rlsf", "vs_rlsf"), (n + "-none", "vs_none")):
                ratios = [r[n][op] / r[ref][op] for r in net
                          if n in r and ref in r and r[ref][op] and r[n][op] is not None
                          and n != ref]
                row["%s_%s" % (op, key)] = spread(ratios)
        out.append(row)
    return out


def text(rows, runs, notes):
    lines = ["net time per call (average minus the floor, ns): the median of %d runs "
             "(their range);" % len(runs),
             "ratios taken within each run: to rlsf's time, and to the kind's own "
             "unchecked row (-none)", ""]
    head = "%-14s %-24s %-24s %-22s %-22s %-22s %-22s" % (
        "allocator", "alloc ns", "free ns", "alloc / rlsf", "free / rlsf",
        "alloc / -none", "free / -none")
    lines += [head, "-" * len(head)]
    for r in rows:
        lines.append("%-14s %-24s %-24s %-22s %-22s %-22s %-22s" % (
            r["name"], fmt(r["alloc_ns"]), fmt(r["free_ns"]), fmt(r["alloc_vs_rlsf"], "x"),
            fmt(r["free_vs_rlsf"], "x"), fmt(r["alloc_vs_none"], "x"),
            fmt(r["free_vs_none"], "x")))
    m = runs[0]["machine"]
    lines += ["", "machine: %s, %s CPUs, %s, %s" % (m.get("cpu_model"), m.get("cpus_online"),
                                                   m.get("kernel_release"), m.get("compiler"))]
    lines += ["command: " + " ".join(runs[0]["command_line"])]
    lines += ["note: " + n for n in notes]
    return "\n".join(lines) + "\n"


def write_new(path, data):
    tmp = path + ".tmp.%d" % os.getpid()
    with open(tmp, "w") as f:
        f.write(data)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="the build directory (default build)")
    ap.add_argument("--runs", type=int, default=3, help="bench runs (default 3)")
    ap.add_argument("--plugin", action="append", default=[], metavar="FILE.so",
                    help="also measure this heap plugin (repeatable)")
    ap.add_argument("--kinds", help="bench's --kinds for rtmem's rows (default: bench's)")
    ap.add_argument("--out", default="results", help="where speed.txt and speed.json go")
    ap.add_argument("--no-rlsf", action="store_true", help="do not build or run rlsf")
    ap.add_argument("--no-count", action="store_true", help="do not count under valgrind")
    ap.add_argument("--count-ops", type=int, default=20000, help="steps counted (default 20000)")
    a = ap.parse_args()
    if a.runs < 1:
        ap.error("--runs must be at least 1")
    rtmem = os.path.join(a.build, "tools", "rtmem")
    if not os.access(rtmem, os.X_OK):
        sys.exit("speed: %s not found: build first (make build)" % rtmem)
    for so in a.plugin:
        if not os.path.isfile(so):
            sys.exit("speed: no plugin at %s" % so)
    os.makedirs(a.out, exist_ok=True)

    scratch = tempfile.mkdtemp(prefix="rtmem-speed.")
    state = RUNNING

    def cleanup():
        c = state["child"]
        if c and c.returncode is None:
            end_child(c.pid)
            c.returncode = -signal.SIGTERM  # reaped: never signalled again
        state["child"] = None
        shutil.rmtree(scratch, ignore_errors=True)

    def on_signal(sig, _frame):
        cleanup()
        os._exit(128 + sig)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        notes, plugins = [], list(a.plugin)
        if not a.no_rlsf:
            so, why = build_rlsf(a.build)
            if so:
                plugins.insert(0, so)
            else:
                notes.append(why)
                print(why, flush=True)
        runs = []
        for i in range(a.runs):
            js = os.path.join(scratch, "bench%d.json" % i)
            cmd = [rtmem, "bench", "--no-sweep", "--no-free-order", "--threads", "0", "--json", js]
            for so in plugins:
                cmd += ["--plugin", so]
            if a.kinds:
                # the plugins' rows too: bench runs only the rows --kinds names
                cmd += ["--kinds", a.kinds + "".join("," + plugin_name(rtmem, so, scratch)
                                                     for so in plugins)]
            print("run %d of %d: %s" % (i + 1, a.runs, " ".join(cmd)), flush=True)
            rc = run_tracked(cmd, stdout=subprocess.DEVNULL).returncode
            if rc not in (0, 1):  # 1: a verdict bench prints; its figures stand
                sys.exit("speed: rtmem bench failed (exit status %d)" % rc)
            with open(js) as f:
                runs.append(json.load(f))
        rows = summarise(runs)
        counts = []
        if not a.no_count:
            if shutil.which("valgrind"):
                counts = count_all(a, rows, plugins, scratch)
            else:
                notes.append("valgrind not found: calls not counted")
        out = text(rows, runs, notes) + count_text(counts)
        sys.stdout.write("\n" + out)
        write_new(os.path.join(a.out, "speed.txt"), out)
        write_new(os.path.join(a.out, "speed.json"),
                  json.dumps({"schema": "rtmem-speed/1", "runs": len(runs), "notes": notes,
                              "command_line": runs[0]["command_line"],
                              "machine": runs[0]["machine"], "allocators": rows,
                              "counts": counts}, indent=1) + "\n")
        print("written: %s/speed.txt, %s/speed.json" % (a.out, a.out))
    finally:
        cleanup()


# The child running now (cargo, bench, cc, nm, or valgrind counting), ended
# on exit and on a signal.
RUNNING = {"child": None}
STOPS = {signal.SIGINT, signal.SIGTERM}


def start(cmd, **kw):
    """Popen(cmd), recorded as RUNNING's child before a signal can act:
    SIGINT and SIGTERM wait until it is (the child unblocks them)."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
    try:
        RUNNING["child"] = subprocess.Popen(
            cmd, preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS), **kw)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
    return RUNNING["child"]


def run_tracked(cmd, check=False, **kw):
    """subprocess.run(cmd) through start(): a signal ends the child too."""
    p = start(cmd, **kw)
    out, err = p.communicate()
    RUNNING["child"] = None
    if check and p.returncode != 0:
        raise subprocess.CalledProcessError(p.returncode, cmd, out, err)
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def end_child(pid):
    """Ends child pid and reaps it. With os.waitpid, not Popen's wait: a
    signal handler runs this while the main thread may be inside the child's
    Popen.wait, which holds a lock that another Popen.wait would wait for
    forever. valgrind blocked writing its trace to a pipe no longer read may
    not act on SIGTERM: SIGKILL after a grace period."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:
                return
        except ChildProcessError:
            return  # reaped already
        time.sleep(0.02)
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def symbols(exe):
    """{name: (address, size)} of exe's defined functions (nm -S)."""
    out = run_tracked(["nm", "-S", exe], check=True, stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE, text=True).stdout
    syms = {}
    for line in out.splitlines():
        w = line.split()
        if len(w) == 4 and w[2] in "Tt":
            syms[w[3]] = (int(w[0], 16), int(w[1], 16))
    return syms


def count_calls(exe, args, ops):
    """Per op: instructions and data lines of each call, from lackey."""
    syms = symbols(exe)
    begin, bsize = syms["speed_mark_begin"]
    end = syms["speed_mark_end"][0]
    fstart, fsize = syms["speed_free"]
    cmd = ["valgrind", "--tool=lackey", "--trace-mem=yes", exe] + args + [str(ops)]
    # The stack's place decides how many of its lines a call touches: with
    # the address space laid out the same each time, the counts are too.
    if shutil.which("setarch"):
        cmd = ["setarch", os.uname().machine, "-R"] + cmd
    proc = start(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                 bufsize=1 << 20, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    calls = {"alloc": [], "free": []}
    state, is_free, ins, lines, last = 0, False, 0, set(), 0
    calib = None
    said = ""
    for line in proc.stderr:
        c = line[0]
        if line.startswith("speed_calls: "):
            said = line[len("speed_calls: "):].strip()
            continue
        if c == "I":
            a = int(line[3:line.index(",")], 16)
            if state == 2:  # inside the first marker, until it returns
                if begin <= a < begin + bsize:
                    continue
                state, ins, lines = 1, 0, set()
            if a == begin:
                state, is_free = 2, fstart <= last < fstart + fsize
                continue
            last = a
            if state == 1:
                if a == end:
                    state = 0
                    if calib is None or calib[2] < 3:
                        n = 0 if calib is None else calib[2]
                        calib = (ins, len(lines), n + 1)
                        continue
                    calls["free" if is_free else "alloc"].append((ins - calib[0],
                                                                  len(lines) - calib[1]))
                    continue
                ins += 1
        elif c == " " and state == 1:
            a = int(line[3:line.index(",")], 16)
            lines.add(a >> 6)
    rc = proc.wait()
    RUNNING["child"] = None
    if rc != 0:
        raise CountFailed("%s exited with status %d%s" % (" ".join(cmd), rc,
                                                          ": " + said if said else ""), said)
    out = {}
    for op, xs in calls.items():
        if not xs:
            continue
        ins_sorted = sorted(i for i, _ in xs)
        out[op] = {"calls": len(xs),
                   "instructions_avg": sum(ins_sorted) / len(xs),
                   "instructions_p99": ins_sorted[min(len(xs) - 1, int(0.99 * len(xs)))],
                   "instructions_max": ins_sorted[-1],
                   "lines_avg": sum(l for _, l in xs) / len(xs),
                   "lines_max": max(l for _, l in xs)}
    return out


class CountFailed(RuntimeError):
    def __init__(self, msg, said):
        super().__init__(msg)
        self.said = said


def count_all(a, rows, plugins, scratch):
    """Counts of every rtmem kind (both levels) and every plugin."""
    exe = os.path.join(scratch, "speed_calls")
    lib = os.path.join(a.build, "librtmem.a")
    cc = ["cc", "-std=c11", "-O2", "-no-pie", "-I", os.path.join(TOP, "include"), "-o", exe,
          os.path.join(TOP, "scripts", "speed_calls.c"), lib, "-ldl", "-lpthread"]
    run_tracked(cc, check=True)
    targets = []
    for r in rows:
        if r["api"] == "rtm_heap":
            name = r["name"]
            targets.append((name, [name[:-5], "none"] if name.endswith("-none") else [name]))
        elif r["api"] in ("rtm_tlsf_typed", "rtm_halffit_typed"):
            targets.append((r["name"], [r["name"]]))
    for so, name in zip(plugins, [r["name"] for r in rows if r["api"] == "plugin"]):
        targets.append((name, [os.path.abspath(so)]))
    out = []
    for name, args in targets:
        print("counting %s under valgrind (lackey, %d steps)" % (name, a.count_ops), flush=True)
        try:
            out.append({"name": name, **count_calls(exe, args, a.count_ops)})
        except CountFailed as e:
            # A kind whose largest request is below the workload's (xvheap:
            # a page less its headers) cannot run it: said, not counted.
            if e.said != "an alloc failed":
                raise
            print("  %s: not counted: %s (the workload's requests reach 4096 bytes)"
                  % (name, e.said), flush=True)
            out.append({"name": name, "skipped": e.said + " (requests reach 4096 bytes)"})
    return out


def count_text(counts):
    if not counts:
        return ""
    lines = ["", "per call, counted under valgrind (lackey): instructions avg / p99 / max; "
             "distinct data lines avg / max", ""]
    head = "%-14s %-20s %-12s %-20s %-12s" % ("allocator", "alloc instr", "alloc lines",
                                               "free instr", "free lines")
    lines += [head, "-" * len(head)]
    for c in counts:
        if c.get("skipped"):
            lines.append("%-14s not counted: %s" % (c["name"], c["skipped"]))
            continue

        def f(op):
            x = c.get(op)
            if not x:
                return "-", "-"
            return ("%.1f / %d / %d" % (x["instructions_avg"], x["instructions_p99"],
                                        x["instructions_max"]),
                    "%.1f / %d" % (x["lines_avg"], x["lines_max"]))
        ai, al = f("alloc")
        fi, fl = f("free")
        lines.append("%-14s %-20s %-12s %-20s %-12s" % (c["name"], ai, al, fi, fl))
    return "\n".join(lines) + "\n"


def plugin_name(rtmem, so, scratch):
    """The name a plugin gives itself: from a tiny bench run's JSON."""
    js = os.path.join(scratch, "probe.json")
    r = run_tracked([rtmem, "bench", "--quick", "--no-sweep", "--no-free-order", "--threads",
                     "0", "--no-rt", "--ops", "100", "--rounds", "1", "--plugin", so, "--json",
                     js], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0 or not os.path.exists(js):
        sys.exit("speed: rtmem bench refused the plugin %s: %s" % (so, r.stderr.strip()[-300:]))
    with open(js) as f:
        names = [x["name"] for x in json.load(f)["allocators"] if x["api"] == "plugin"]
    os.unlink(js)
    return names[-1]


if __name__ == "__main__":
    main()
