"""rtmem wcet: a short run's JSON has the envelope and every scenario of
every kind, built, checked and timed (the figures agree with one another:
min <= p50 <= p99 <= max, one sample per repetition); the page heaps'
trees are within their bounds, as deep as the scenarios say; each rtmem
scenario whose state is thrown away (the test hook RTMEM_WCET_SPOIL) fails
its check, so that no change to an allocator can silently turn a scenario
into an easy one; where valgrind is installed (and the build is not
sanitized), every scenario is counted, the counts agree with what the
scenarios do (a 4 KiB copy touches at least 128 lines, the page map's
first use writes its entries), and TLSF's instructions stay under the
ceilings docs/wcet.md states (x86-64, the default hardening); where the
kernel offers no CPU counters, the run says why (where it does, their
counts agree with valgrind's); glibc's checks fail where glibc cannot take
the path (GLIBC_TUNABLES); --plugin probes a plugin (the example TLSF
plugin and a bump allocator) and refuses a bad one; a valgrind that fails or writes nothing leaves
the run measured, not counted, saying why, and nothing behind; --count
valgrind without valgrind fails and --count auto says why it did not
count; a run whose scenario fails writes that into its result file; a run
that is interrupted (during the timed run or under valgrind) leaves an
existing result file as it was, and nothing behind (no temporary file or
directory, no valgrind); bad usage exits 2.

No assertion depends on how fast the machine is, but for the time the
interrupted runs are given to reach the phase they are interrupted in
(two minutes).

usage: test_wcet.py RTMEM_BINARY DOCS_WCET_MD TLSF_PLUGIN BUMP_PLUGIN [BAD_PLUGIN...]
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import select
import stat

from rtmemtest import (BITS, EMULATED, MACHINE, Checks, TempDir, become_subreaper, children_of,
                       envelope_ok, load_json, orphans, run)

rtmem, docs, tlsf_plugin, bump_plugin = sys.argv[1:5]
bad_plugins = sys.argv[5:]
checks = Checks("tools.wcet")
SANITIZED = bool(os.environ.get("RTMEM_SANITIZED"))
# Under qemu-user (a cross build's tests) valgrind, the host's, cannot run
# rtmem: nothing is counted, and the run says why.
GOOD = '{"a previous": "good result"}\n'
SCENARIOS = {
    "tlsf": ["alloc-search-split", "alloc-fallback", "free-merge-both", "free-merge-last-pool",
             "aligned-largest-gap", "realloc-move"],
    "heapmem": ["run-alloc-largest", "run-free-merge-both", "bucket-page-take",
                "bucket-page-give", "bucket-page-give-last-pool", "run-alloc-first-use"],
    "glibc": ["malloc-consolidate", "free-trim", "malloc-mmap", "free-munmap"],
}
SCENARIOS["xnheap"] = SCENARIOS["heapmem"]
REPS = 20


def ceilings():
    """TLSF's instruction ceilings, from the table in docs/wcet.md."""
    out = {}
    with open(docs) as f:
        text = f.read()
    block = text.split("<!-- tlsf-ceilings -->")[1].split("<!-- /tlsf-ceilings -->")[0]
    for m in re.finditer(r"^\| `([a-z-]+)` \| (\d+) \|", block, re.M):
        out[m.group(1)] = int(m.group(2))
    return out


def summary_ok(what, s, count=REPS):
    checks.ok(s["count"] == count, "%s: one sample per repetition" % what, s)
    checks.ok(0 <= s["min_ns"] <= s["p50_ns"] <= s["p99_ns"] <= s["max_ns"],
              "%s: min <= p50 <= p99 <= max" % what, s)


def full_run(tmp):
    path = os.path.join(tmp, "wcet.json")
    args = ["--reps", str(REPS), "--json", path]
    r = run(rtmem, "wcet", *args)
    checks.ok(r.returncode == 0, "a default run passes", r)
    d = load_json(path)
    envelope_ok(checks, d, "wcet", "rtmem-wcet/1", args)
    if d is None:
        return None
    checks.ok(d["passed"] and d["failures"] == 0, "every scenario passed", d.get("failures"))
    got = {}
    for s in d["scenarios"]:
        got.setdefault(s["kind"], []).append(s["id"])
    want = dict(SCENARIOS, noop=["noop"])
    if d.get("glibc_left_out"):
        checks.ok(SANITIZED, "glibc is left out only where a sanitizer replaces malloc",
                  d["glibc_left_out"])
        del want["glibc"]
    checks.ok(got == want, "every kind's scenarios, in order", got)
    for s in d["scenarios"]:
        what = "%s %s" % (s["kind"], s["id"])
        if not checks.ok(s["passed"] and s["why"] is None, "%s: built and checked" % what, s):
            continue  # (a failed scenario has no timings to check)
        if s["kind"] == "glibc":
            # Repetitions glibc's history put off the path are left out.
            off = s["reps_off_path"]
            checks.ok(off <= REPS and s["warm"]["count"] + s["cold"]["count"] == 2 * REPS - off,
                      "%s: every repetition on the path sampled, the others counted" % what, s)
            checks.ok((off == 0) == (s["off_path_why"] is None), "%s: why off the path" % what, s)
            summary_ok(what + " warm", s["warm"], s["warm"]["count"])
            summary_ok(what + " cold", s["cold"], s["cold"]["count"])
            checks.ok(s["warm"]["count"] >= REPS // 4 and s["cold"]["count"] >= REPS // 4,
                      "%s: each half mostly on the path" % what, s)
        else:
            summary_ok(what + " warm", s["warm"])
            summary_ok(what + " cold", s["cold"])
        if s["kind"] != "noop":
            checks.ok(len(s["facts"]) > 20, "%s: says what it found" % what, s["facts"])
        if s["kind"] in ("tlsf", "heapmem", "xnheap"):
            checks.ok(s.get("image_bytes", 0) >= 256 * 1024, "%s: its image's size" % what, s)
        if s["kind"] in ("heapmem", "xnheap") and "free_runs" in s["state"]:
            st = s["state"]
            checks.ok(st["addr_tree_height"] <= st["height_bound"],
                      "%s: the tree within its bound" % what, st)
            checks.ok(st["free_runs"] > (80 if "pools" in st else 200),
                      "%s: a comb of free runs" % what, st)
            if "prev_addr_depth" in st:
                checks.ok(st["addr_tree_height"] - 1 <= st["prev_addr_depth"]
                          <= st["addr_tree_height"],
                          "%s: the run merged with is among the deepest" % what, st)
    for kind in ("heapmem", "xnheap"):
        first = [s for s in d["scenarios"] if s["kind"] == kind and s["id"] == "run-alloc-first-use"]
        checks.ok(first and first[0]["state"]["entries_written"] > 400,
                  "%s: the first use writes the page map" % kind, first)
    worst = {w["kind"]: w for w in d["worst"]}
    checks.ok(sorted(worst) == sorted(k for k in want if k != "noop"), "a worst entry per kind",
              worst)
    return d


def cpu_counters_ok(d):
    """The CPU's counters: where the kernel offers none (most virtual
    machines), the run says why; where it does, every scenario has them,
    near valgrind's count of the same binary."""
    cnt = d["counting"]
    pmu = any(os.path.exists("/sys/bus/event_source/devices/" + n)
              for n in ("cpu", "cpu_core", "armv8_pmuv3", "armv8_pmuv3_0"))
    if not cnt["cpu_counters"]:
        checks.ok(cnt["cpu_counters_why_not"] and "perf_event_open" in cnt["cpu_counters_why_not"],
                  "no CPU counters: the run says why", cnt)
        checks.ok(all(s["cpu_counted"] is None for s in d["scenarios"]),
                  "no CPU counters: no scenario has their figures", d["scenarios"][0])
        if pmu:
            print("tools.wcet: this machine lists a CPU PMU, and the counters did not open: %s"
                  % cnt["cpu_counters_why_not"])
        else:
            print("tools.wcet: no CPU PMU here: the CPU counters' figures not checked")
        return
    for s in d["scenarios"]:
        hw, vg = s["cpu_counted"], s["counted"]
        checks.ok(hw is not None, "%s %s: CPU counters" % (s["kind"], s["id"]), s)
        # libc's string routines differ: valgrind counts each iteration of
        # a rep stos or movs, and glibc picks its memcpy by the CPU it sees.
        if s["id"] in ("run-alloc-first-use", "realloc-move"):
            continue
        if hw and vg and s["kind"] in ("tlsf", "heapmem", "xnheap"):
            checks.ok(abs(hw["instructions"] - vg["instructions"]) <= 0.1 * vg["instructions"] + 20,
                      "%s %s: the CPU's count agrees with valgrind's" % (s["kind"], s["id"]),
                      (hw, vg))


def counted_ok(d):
    """The counts, where valgrind counted them."""
    cnt = d["counting"]
    if SANITIZED:
        # ASan and TSan builds refuse to run under valgrind (and say so);
        # the counts of any sanitized build are the sanitizer's as much as
        # the heap's.
        print("tools.wcet: counts not checked (sanitized build): %s" % cnt["why_not"])
        return
    if EMULATED:
        checks.ok(not cnt["counted"] and "under an emulator" in cnt["why_not"],
                  "under an emulator the run does not count, and says why", cnt)
        print("tools.wcet: SKIPPED the counts and TLSF's ceilings: under %s" % EMULATED)
        return
    if not shutil.which("valgrind"):
        checks.ok(not cnt["counted"] and "valgrind" in cnt["why_not"],
                  "without valgrind the run says why it did not count", cnt)
        print("tools.wcet: SKIPPED the counts and TLSF's ceilings: valgrind is not installed")
        return
    checks.ok(cnt["counted"] and cnt["why_not"] is None, "valgrind counted", cnt)
    by = {(s["kind"], s["id"]): s["counted"] for s in d["scenarios"]}
    noop = by[("noop", "noop")]
    checks.ok(noop and noop["instructions"] < 50 and noop["runs"] == 3,
              "the noop call is a handful of instructions", noop)
    checks.ok(noop and noop["data_lines"] <= 2,
              "the harness's own lines are warm before each counted call", noop)
    for key, ct in by.items():
        if not checks.ok(ct is not None, "%s %s: counted" % key, ct):
            continue
        checks.ok(ct["instructions"] >= ct["instructions_min"] > 0 or key[0] == "noop",
                  "%s %s: instructions counted" % key, ct)
        checks.ok(ct["data_lines"] == ct["data_lines_read_first"] + ct["data_lines_written_first"],
                  "%s %s: lines read first and written first add up" % key, ct)
        if key[0] in ("tlsf", "heapmem", "xnheap"):
            checks.ok(ct["instructions"] == ct["instructions_min"],
                      "%s %s: the restored state runs the same instructions each time" % key, ct)
    move = by[("tlsf", "realloc-move")]
    checks.ok(move and move["data_lines"] >= 128,
              "a 4 KiB copy touches at least 128 lines (64 read, 64 written)", move)
    for kind in ("heapmem", "xnheap"):
        first = by[(kind, "run-alloc-first-use")]
        entries = [s for s in d["scenarios"] if s["kind"] == kind
                   and s["id"] == "run-alloc-first-use"][0]["state"]["entries_written"]
        entry_bytes = 24 if BITS == 64 else 16  # a page-map entry (README)
        checks.ok(first and first["data_lines_written_first"] >= entries * entry_bytes // 64,
                  "%s: the first use writes every line of the page map it initialises" % kind,
                  (first, entries))
    cons = by[("glibc", "malloc-consolidate")]
    checks.ok(cons and cons["instructions"] > 10 * by[("tlsf", "alloc-search-split")]["instructions"],
              "glibc's consolidation runs far more instructions than TLSF's alloc", cons)
    if MACHINE != "x86_64":
        print("tools.wcet: TLSF's ceilings are for x86-64; not checked on %s" % MACHINE)
        return
    ceil = ceilings()
    checks.ok(sorted(ceil) == sorted(SCENARIOS["tlsf"]), "docs/wcet.md: a ceiling per TLSF scenario",
              ceil)
    for sid, limit in ceil.items():
        ct = by.get(("tlsf", sid))
        checks.ok(ct and ct["instructions"] <= limit,
                  "TLSF %s: at most %d instructions (docs/wcet.md)" % (sid, limit), ct)


def spoiled(tmp):
    """Each rtmem scenario, its state thrown away, fails its check."""
    for kind in ("tlsf", "heapmem", "xnheap"):
        for sid in SCENARIOS[kind]:
            r = run(rtmem, "wcet", "--kinds", kind, "--reps", "2", "--count", "none",
                    env={"RTMEM_WCET_SPOIL": sid})
            failed = [l for l in r.stdout.splitlines() if "FAILED:" in l and sid in l]
            checks.ok(r.returncode == 1 and len(failed) == 1,
                      "%s %s spoiled: its check fails, the run fails" % (kind, sid), r)
            others = [l for l in r.stdout.splitlines() if l.strip().endswith("measured")]
            checks.ok(len(others) == len(SCENARIOS[kind]),
                      "%s %s spoiled: the others are still measured" % (kind, sid), r)


def glibc_off_path():
    """glibc's checks fail when glibc cannot take the path: no fast bins
    (mxfast=0) for the consolidations, no mmap (mmap_max=0) for the mapped
    blocks."""
    if SANITIZED:
        print("tools.wcet: glibc's checks not tried (a sanitizer's malloc)")
        return
    for tunable, failing in [("glibc.malloc.mxfast=0", {"malloc-consolidate", "free-trim"}),
                             ("glibc.malloc.mmap_max=0", {"malloc-mmap", "free-munmap"})]:
        r = run(rtmem, "wcet", "--kinds", "glibc", "--reps", "2", "--count", "none",
                env={"GLIBC_TUNABLES": tunable})
        failed = {l.split()[1] for l in r.stdout.splitlines()
                  if l.startswith("  glibc") and "FAILED:" in l}
        checks.ok(r.returncode == 1 and failed == failing,
                  "GLIBC_TUNABLES=%s: exactly %s fail their checks" % (tunable, sorted(failing)),
                  r)


def fake_valgrind(tmp):
    """A valgrind that fails, or writes nothing: the run still passes with
    its timings, says why nothing was counted, and leaves nothing behind."""
    # ("litters": one that leaves a file in its $TMPDIR, as a real valgrind
    # killed between making and unlinking its own does.)
    for name, body in [("fails", 'echo "fake valgrind: cannot run" >&2; exit 1'),
                       ("silent", "exit 0"),
                       ("litters", 'touch "$TMPDIR/valgrind_proc_$$_cmdline_x"; '
                                   'echo "fake valgrind: cannot run" >&2; exit 1')]:
        bindir = os.path.join(tmp, "bin-" + name)
        work = os.path.join(tmp, "tmp-" + name)
        os.mkdir(bindir)
        os.mkdir(work)
        fake = os.path.join(bindir, "valgrind")
        with open(fake, "w") as f:
            f.write('#!/bin/sh\n[ "$1" = --version ] && { echo valgrind-fake; exit 0; }\n%s\n'
                    % body)
        os.chmod(fake, stat.S_IRWXU)
        path = os.path.join(tmp, "fake.json")
        r = run(os.path.abspath(rtmem), "wcet", "--kinds", "tlsf", "--reps", "2", "--json", path,
                env={"PATH": bindir + ":/usr/bin:/bin", "TMPDIR": work})
        d = load_json(path)
        why = d["counting"]["why_not"] if d else None
        want = "no counts" if name == "silent" else "cannot run"
        # An address or thread sanitizer's build never starts valgrind (and
        # says so); an UndefinedBehaviorSanitizer one does.
        checks.ok(r.returncode == 0 and d and not d["counting"]["counted"] and why
                  and (want in why or (SANITIZED and "sanitizer" in why)
                       or (EMULATED and "under an emulator" in why)),
                  "a valgrind that %s: measured, not counted, and why" % name, (r, why))
        checks.ok(os.listdir(work) == [], "a valgrind that %s leaves nothing in TMPDIR" % name,
                  os.listdir(work))
        os.unlink(path)


def plugins(tmp):
    """--plugin: the example TLSF plugin and a bump allocator get the three
    probes, each built, checked against the plugin contract and measured,
    saying what happened (TLSF merges the last 8 blocks and serves the
    request there; a bump allocator reuses nothing); a plugin whose table
    breaks a rule, or whose name is taken, is bad usage."""
    path = os.path.join(tmp, "plugins.json")
    r = run(rtmem, "wcet", "--kinds", "tlsf", "--plugin", tlsf_plugin, "--plugin", bump_plugin,
            "--reps", "5", "--count", "none", "--json", path)
    d = load_json(path)
    checks.ok(r.returncode == 0 and d and d["passed"], "two plugins probed", r)
    if not d:
        return
    probes = ["alloc-fail-fragmented", "alloc-last-hole", "free-merge-both"]
    for kind in ("tlsf-plugin", "bump"):
        got = [s for s in d["scenarios"] if s["kind"] == kind]
        checks.ok([s["id"] for s in got] == probes and all(s["passed"] for s in got),
                  "%s: the three probes, measured" % kind, got)
        served = {s["id"]: s["state"].get("served") for s in got}
        want = {"alloc-fail-fragmented": 0, "alloc-last-hole": 1 if kind == "tlsf-plugin" else 0,
                "free-merge-both": None}
        checks.ok(served == want, "%s: what each probe's request got" % kind, served)
    checks.ok(d["params"]["kinds"] == ["tlsf", "tlsf-plugin", "bump"],
              "the plugins are kinds after the others", d["params"]["kinds"])
    os.unlink(path)
    for bad in bad_plugins + [tlsf_plugin + "-missing"]:
        r = run(rtmem, "wcet", "--kinds", "tlsf", "--plugin", bad, "--reps", "2")
        checks.ok(r.returncode == 2 and "--plugin" in r.stderr,
                  "a plugin that cannot be used is bad usage (%s)" % os.path.basename(bad), r)
    r = run(rtmem, "wcet", "--kinds", "tlsf", "--plugin", tlsf_plugin, "--plugin", tlsf_plugin,
            "--reps", "2")
    checks.ok(r.returncode == 2, "a plugin's name taken twice is bad usage", r)


def failed_file(tmp):
    """A run whose scenario fails its check reaches a verdict: its result
    file says which scenario failed, and why."""
    path = os.path.join(tmp, "failed.json")
    with open(path, "w") as f:
        f.write(GOOD)
    r = run(rtmem, "wcet", "--kinds", "tlsf", "--reps", "2", "--count", "none", "--json", path,
            env={"RTMEM_WCET_SPOIL": "free-merge-both"})
    checks.ok(r.returncode == 1, "a spoiled run fails", r)
    d = load_json(path)
    bad = [s for s in d["scenarios"] if not s["passed"]] if d else []
    checks.ok(d and not d["passed"] and d["failures"] == 1 and len(bad) == 1
              and bad[0]["id"] == "free-merge-both" and bad[0]["why"]
              and "warm" not in bad[0],
              "a failed run's file names the scenario that failed, and why", d)
    checks.ok(sorted(os.listdir(tmp)) == ["failed.json", "wcet.json"],
              "a failed run leaves no temporary file", os.listdir(tmp))
    os.unlink(path)


def no_valgrind(tmp):
    """Without valgrind on PATH: auto says why, --count valgrind fails."""
    path = os.path.join(tmp, "nv.json")
    env = {"PATH": "/nonexistent"}
    r = run(os.path.abspath(rtmem), "wcet", "--kinds", "tlsf", "--reps", "2", "--json", path, env=env)
    d = load_json(path)
    checks.ok(r.returncode == 0 and d and not d["counting"]["counted"]
              and ("not installed" in d["counting"]["why_not"] or SANITIZED or EMULATED),
              "--count auto without valgrind: measured, not counted, and why", r)
    r = run(os.path.abspath(rtmem), "wcet", "--kinds", "tlsf", "--reps", "2", "--count",
            "valgrind", env=env)
    checks.ok(r.returncode == 1 and "nothing counted" in r.stderr,
              "--count valgrind without valgrind fails, saying why", r)
    os.unlink(path)


def interrupted(tmp):
    """SIGINT in the timed run and under valgrind: the file as it was, no
    temporary directory, no valgrind left."""
    phases = [("timed", "measured", ["--reps", "3000"])]
    if shutil.which("valgrind") and not SANITIZED and not EMULATED:
        # every kind: some seconds under valgrind, for the signal to land in
        phases.append(("counted", "counting under",
                       ["--kinds", "tlsf,heapmem,xnheap,glibc", "--reps", "200"]))
    for name, marker, args in phases:
        work = os.path.join(tmp, "int-" + name)
        os.mkdir(work)
        path = os.path.join(work, "r.json")
        env = dict(os.environ, TMPDIR=work)
        # A run that ends before the signal is sent (a loaded machine can
        # keep this test from reading its output in time) proves nothing:
        # tried again, a few times.
        for attempt in range(3):
            with open(path, "w") as f:
                f.write(GOOD)
            p = subprocess.Popen([rtmem, "wcet"] + args + ["--json", path],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=env)
            seen = False
            deadline = time.time() + 120
            while not seen and time.time() < deadline:
                ready, _, _ = select.select([p.stdout], [], [], deadline - time.time())
                if not ready:
                    break
                line = p.stdout.readline()
                if not line:
                    break
                seen = marker in line
            if name == "counted":
                # valgrind started: the tool's child
                end = time.time() + 30
                while not children_of(p.pid) and p.poll() is None and time.time() < end:
                    time.sleep(0.02)
                seen = seen and bool(children_of(p.pid))
            p.send_signal(signal.SIGINT)
            p.communicate(timeout=120)
            if p.returncode != 0:
                break
            print("tools.wcet: the %s run ended before the signal; again" % name)
        checks.ok(seen and p.returncode == -signal.SIGINT,
                  "SIGINT during the %s run ends it with the signal" % name, p.returncode)
        checks.ok(open(path).read() == GOOD, "SIGINT (%s): the result file as it was" % name)
        checks.ok(os.listdir(work) == ["r.json"],
                  "SIGINT (%s): no temporary file or directory left" % name, os.listdir(work))
        time.sleep(0.5)
        left = orphans()
        checks.ok(left == [], "SIGINT (%s): no process of the run left (valgrind reaped)" % name,
                  left)


def usage():
    for args, what in [
        (["--kinds", "nope"], "an unknown kind"),
        (["--kinds", "tlsf,tlsf"], "a kind named twice"),
        (["--kinds", ""], "an empty kind"),
        (["--page-image", "65537"], "a page image that is not a multiple of 4K"),
        (["--page-image", "128K"], "a page image below 256K"),
        (["--reps", "0"], "no repetition"),
        (["--no-rt", "--prio", "10"], "--prio with --no-rt"),
        (["--count", "maybe"], "an unknown --count"),
        (["extra"], "an operand"),
    ]:
        r = run(rtmem, "wcet", *args)
        checks.ok(r.returncode == 2 and "rtmem wcet" in r.stderr, "bad usage: %s" % what, r)
    r = run(rtmem, "wcet", "--help")
    checks.ok(r.returncode == 0 and "--count" in r.stdout and "valgrind" in r.stdout,
              "--help describes the options", r)


become_subreaper()
with TempDir() as tmp:
    d = full_run(tmp)
    if d:
        counted_ok(d)
        cpu_counters_ok(d)
    spoiled(tmp)
    failed_file(tmp)
    plugins(tmp)
    glibc_off_path()
    fake_valgrind(tmp)
    no_valgrind(tmp)
    interrupted(tmp)
    usage()
checks.done()
