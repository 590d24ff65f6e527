"""The tools survive allocators that fail: a plugin that dereferences NULL
in alloc and one whose free never returns each fail with the phase, test
and signal (or the timeout) named and a replay command; the rows they
finished and every other allocator's results are kept in the report and
the JSON; the run exits 1; no process is left behind, also when the run
itself is interrupted. An allocator whose malloc_usable_size lies (injected
with LD_PRELOAD) fails memcheck the same way.

usage: test_failures.py RTMEM_BINARY CRASH_PLUGIN HANG_PLUGIN TLSF_PLUGIN [FAULT_LIBRARY]
"""
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

from rtmemtest import Checks, TempDir, load_json, run

rtmem, crash, hang, tlsf_plugin = sys.argv[1:5]
fault_lib = sys.argv[5] if len(sys.argv) > 5 else None
checks = Checks("tools.failures")

# Every process of a run carries this in its environment, so the test can
# find the ones left behind (and only them: other tests run in parallel).
mark_name, mark_value = "RTMEM_HARNESS_TEST", "%d.%d" % (os.getpid(), time.time_ns())
env = {mark_name: mark_value}
# In a sanitizer build, a plugin's SIGSEGV must stay a SIGSEGV (the
# sanitizers' runtimes catch it otherwise, and exit with status 1).
for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):
    env[var] = (os.environ[var] + ":" if os.environ.get(var) else "") + "handle_segv=0"


def leftovers():
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/environ" % pid, "rb") as f:
                if ("%s=%s" % (mark_name, mark_value)).encode() in f.read().split(b"\0"):
                    found.append(int(pid))
        except OSError:
            continue
    return found


def children(parent):
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/stat" % pid) as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == parent:
                    found.append(int(pid))
        except OSError:
            continue
    return found


with TempDir() as tmp:
    # memcheck: the broken plugins fail, named, with a replay command.
    path = os.path.join(tmp, "m.json")
    r = run(rtmem, "memcheck", "--quick", "--no-rt", "--plugin", crash, "--plugin", hang,
            "--kinds", "tlsf,crash,hang,glibc", "--timeout", "1", "--json", path, env=env)
    checks.ok(r.returncode == 1, "memcheck with broken plugins exits 1", r)
    checks.ok(not leftovers(), "memcheck: no test process left", leftovers())
    checks.ok(re.search(r"^FAILED: crash: pow2 phase, test #[0-9]+: heap [0-9]+ B, block [0-9]+ B: "
                        r"crashed: killed by SIGSEGV \(Segmentation fault\)$", r.stdout, re.M),
              "memcheck: the crash named", r)
    checks.ok(re.search(r"^FAILED: hang: pow2 phase, test #[0-9]+: heap [0-9]+ B, block 1024 B: "
                        r"hung: no progress for 1 s", r.stdout, re.M), "memcheck: the hang named", r)
    for name in ("crash", "hang"):
        checks.ok(re.search(r"^  replay: rtmem memcheck --plugin [^ ]*%s_plugin.so --kinds %s "
                            r"--phases pow2 .*--timeout 1$" % (name, name), r.stdout, re.M),
                  "memcheck: %s: replay command" % name, r)
        checks.ok("FAILED: %s: " % name in r.stderr, "memcheck: %s: failure on stderr" % name, r)
    checks.ok(re.search(r"^== summary", r.stdout, re.M) and
              re.search(r"^  pow2   glibc ", r.stdout, re.M),
              "memcheck: the report has the other allocators' summary", r)
    d = load_json(path)
    if checks.ok(d is not None, "memcheck: results written despite the failures"):
        checks.ok(d["passed"] is False, "memcheck JSON: not passed")
        a = {x["name"]: x for x in d["allocators"]}
        for n in ("tlsf", "glibc"):
            checks.ok(a[n]["passed"] and a[n]["failure"] is None and a[n]["pow2"]["rows"] and
                      a[n]["random"]["rows"] and a[n]["churn"]["ops"] > 0,
                      "memcheck JSON: %s ran every phase" % n)
        for n, kind, sig in (("crash", "crash", "SIGSEGV"), ("hang", "timeout", None)):
            f = a[n]["failure"]
            ok = not a[n]["passed"] and f and f["phase"] == "pow2" and f["kind"] == kind and \
                f["signal"] == sig
            checks.ok(ok, "memcheck JSON: %s failure recorded" % n, f)
            if ok:
                test = int(re.search(r"test #(\d+)", f["message"]).group(1))
                checks.ok(test > 0 and len(a[n]["pow2"]["rows"]) == test and
                          a[n]["random"] is None and a[n]["churn"] is None,
                          "memcheck JSON: %s kept the rows it finished, ran nothing after" % n)

    # Interrupted while a test process spins: it is killed and reaped, the
    # previous result file stays, the run dies of the signal.
    keep = os.path.join(tmp, "keep.json")
    with open(keep, "w") as f:
        f.write("previous\n")
    p = subprocess.Popen([rtmem, "memcheck", "--quick", "--no-rt", "--plugin", hang, "--kinds",
                          "hang", "--phases", "pow2", "--json", keep],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, env=dict(os.environ, **env))
    deadline = time.time() + 10
    while time.time() < deadline and not children(p.pid):
        time.sleep(0.05)
    time.sleep(0.5)
    spinning = children(p.pid)
    p.send_signal(signal.SIGINT)
    try:
        rc = p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = p.wait()
    checks.ok(spinning, "SIGINT: a test process was running")
    checks.ok(rc == -signal.SIGINT, "SIGINT: memcheck dies of the signal", rc)
    checks.ok(not any(os.path.exists("/proc/%d" % c) for c in spinning) and not leftovers(),
              "SIGINT: the test process is killed and reaped", leftovers())
    with open(keep) as f:
        checks.ok(f.read() == "previous\n", "SIGINT: the previous result file is intact")
    checks.ok(not [n for n in os.listdir(tmp) if n.startswith(".keep")],
              "SIGINT: no temporary file left", os.listdir(tmp))

    # bench: the broken plugins are left out, named, with a replay command;
    # the run measures everything else, a working plugin included.
    path = os.path.join(tmp, "b.json")
    r = run(rtmem, "bench", "--quick", "--no-rt", "--no-sweep", "--plugin", crash, "--plugin", hang,
            "--plugin", tlsf_plugin, "--kinds", "tlsf,glibc,crash,hang,tlsf-plugin", "--timeout",
            "1", "--json", path, env=env)
    checks.ok(r.returncode == 1, "bench with broken plugins exits 1", r)
    checks.ok(not leftovers(), "bench: no process left", leftovers())
    checks.ok(re.search(r"^FAILED: crash: main phase, .*: crashed: killed by SIGSEGV "
                        r"\(Segmentation fault\)", r.stdout, re.M), "bench: the crash named", r)
    checks.ok(re.search(r"^FAILED: hang: main phase, .*: hung: no progress for 1 s", r.stdout,
                        re.M), "bench: the hang named", r)
    for name in ("crash", "hang"):
        checks.ok(re.search(r"^  replay: rtmem bench --plugin [^ ]*%s_plugin.so --kinds %s "
                            r".*--timeout 1$" % (name, name), r.stdout, re.M),
                  "bench: %s: replay command" % name, r)
    d = load_json(path)
    if checks.ok(d is not None, "bench: results written despite the failures"):
        names = [a["name"] for a in d["allocators"]]
        checks.ok(names == ["floor", "tlsf", "glibc", "tlsf-plugin"] and
                  all(a["alloc"]["count_total"] > 0 for a in d["allocators"]),
                  "bench JSON: the others measured", names)
        checks.ok([x["name"] for x in d["ratios_vs_glibc"]] == ["tlsf", "tlsf-plugin"],
                  "bench JSON: ratios for the others")
        failed = {f["name"]: f for f in d["failed_allocators"]}
        checks.ok(failed.get("crash", {}).get("kind") == "crash" and
                  failed["crash"]["signal"] == "SIGSEGV" and
                  failed.get("hang", {}).get("kind") == "timeout" and
                  failed["hang"]["api"] == "plugin", "bench JSON: the failures recorded", failed)
        checks.ok(d["passed"] is False, "bench JSON: not passed")

    # A replay command runs as printed, through a shell, and fails the same
    # way: here with a plugin in a directory whose name a shell would split.
    spaced = os.path.join(tmp, "a dir")
    os.mkdir(spaced)
    plugin = os.path.join(spaced, "libcrash_plugin.so")
    shutil.copy(crash, plugin)
    for tool in ("memcheck", "bench"):
        r = run(rtmem, tool, "--quick", "--no-rt", "--plugin", plugin, "--kinds", "crash,tlsf",
                *(["--phases", "pow2"] if tool == "memcheck" else ["--no-sweep"]), env=env)
        m = re.search(r"^  replay: (rtmem .*)$", r.stdout, re.M)
        if not checks.ok(r.returncode == 1 and m, "%s: a replay command for the crash" % tool, r):
            continue
        words = shlex.split(m.group(1))
        checks.ok(plugin in words and words[words.index("--kinds") + 1] == "crash",
                  "%s: the replay command's words, as a shell splits them" % tool, words)
        again = run(rtmem, *words[1:], env=env)
        checks.ok(again.returncode == 1 and "FAILED: crash: " in again.stdout and
                  "killed by SIGSEGV" in again.stdout,
                  "%s: the replay command reproduces the crash" % tool, again)

    # A functional failure: glibc's malloc_usable_size lies. The run exits
    # 1, names the allocator, the check and a replay command, writes results
    # that say so, and still runs and passes tlsf. (Not with sanitizers:
    # their runtime must come first in the process.)
    if fault_lib:
        path = os.path.join(tmp, "f.json")
        r = run(rtmem, "memcheck", "--quick", "--no-rt", "--kinds", "tlsf,glibc", "--json", path,
                env={"LD_PRELOAD": fault_lib})
        checks.ok(r.returncode == 1, "a lying malloc_usable_size fails memcheck", r)
        checks.ok(re.search(r"^FAILED: glibc: pow2 phase, test #0: .*usable size 0 of block #0 is "
                            r"below its request of 16 B", r.stdout, re.M), "its message", r)
        checks.ok("replay: rtmem memcheck --kinds glibc --phases pow2 --seed " in r.stdout,
                  "its replay command", r)
        d = load_json(path)
        if checks.ok(d is not None, "results written for the failed run"):
            a = {x["name"]: x for x in d["allocators"]}
            checks.ok(d["passed"] is False and a["tlsf"]["passed"] and
                      a["tlsf"]["churn"] is not None and not a["glibc"]["passed"] and
                      a["glibc"]["failure"]["phase"] == "pow2" and a["glibc"]["random"] is None,
                      "JSON records the failure, tlsf still ran")
checks.done()
