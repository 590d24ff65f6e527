"""A failed or interrupted run never destroys anything: `--json PATH`
replaces PATH only with complete results, never removes or truncates a
file the tool did not create (a device, a FIFO, a previous good result),
and leaves no temporary file behind; a report that cannot be written fails
the run with its cause.

usage: test_result_files.py RTMEM_BINARY
"""
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time

from rtmemtest import Checks, TempDir, load_json, run

rtmem = sys.argv[1]
checks = Checks("tools.result_files")
# The shortest runs of each tool.
BENCH = ["bench", "--quick", "--no-rt", "--no-sweep", "--no-free-order", "--kinds", "tlsf,glibc"]
MEMCHECK = ["memcheck", "--quick", "--no-rt", "--kinds", "tlsf", "--phases", "pow2"]
GOOD = '{"a previous": "good result"}\n'


def read(path):
    with open(path) as f:
        return f.read()


with TempDir() as tmp:
    d = os.path.join(tmp, "d")
    os.mkdir(d)
    good = os.path.join(d, "good.json")
    expected = {"good.json"}

    def no_leftovers(what):
        left = set(os.listdir(d)) - expected
        checks.ok(not left, "%s: nothing left behind" % what, sorted(left))

    with open(good, "w") as f:
        f.write(GOOD)

    # A report that cannot be written fails the run, with its cause; the
    # previous results stay as they were.
    for tool in (BENCH, MEMCHECK):
        with open("/dev/full", "w") as full:
            r = run(rtmem, *tool, "--json", good, stdout=full)
        checks.ok(r.returncode == 1 and
                  "writing to standard output failed: No space left on device" in r.stderr,
                  "%s > /dev/full fails with its cause" % tool[0], r)
        checks.ok(read(good) == GOOD, "%s > /dev/full: the previous result is intact" % tool[0])
        no_leftovers("%s > /dev/full" % tool[0])
    with open("/dev/full", "w") as full:
        r = run(rtmem, "kinds", stdout=full)
    checks.ok(r.returncode == 1 and "No space left on device" in r.stderr,
              "rtmem kinds > /dev/full", r)

    # A device as the result file: written to, never removed. /dev/full
    # itself, and a device node of our own where we may make one (root).
    devices = ["/dev/full"]
    own = os.path.join(d, "full")
    try:
        os.mknod(own, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
        devices.append(own)
        expected.add("full")
    except OSError:
        print("test_result_files: cannot mknod (not root?): own device node not tested")
    for dev in devices:
        r = run(rtmem, *BENCH, "--json", dev)
        checks.ok(r.returncode == 1 and
                  ("writing '%s' failed: No space left on device" % dev) in r.stderr,
                  "bench --json %s fails with its cause" % dev, r)
        checks.ok(stat.S_ISCHR(os.stat(dev).st_mode), "bench --json %s: the device stays" % dev)
        r = run(rtmem, *MEMCHECK, "--json", dev)
        checks.ok(r.returncode == 1 and stat.S_ISCHR(os.stat(dev).st_mode),
                  "memcheck --json %s" % dev, r)
    no_leftovers("--json on a device")

    # A FIFO is written directly, and stays a FIFO.
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    expected.add("fifo")
    got = {}

    def reader():
        with open(fifo) as f:
            got["text"] = f.read()
    t = threading.Thread(target=reader)
    t.start()
    r = run(rtmem, *BENCH, "--json", fifo)
    t.join(timeout=60)
    checks.ok(r.returncode == 0 and stat.S_ISFIFO(os.stat(fifo).st_mode), "--json FIFO", r)
    try:
        checks.ok(json.loads(got.get("text", ""))["schema"] == "rtmem-bench/2",
                  "--json FIFO: the reader got the JSON")
    except ValueError as e:
        checks.ok(False, "--json FIFO: the reader got the JSON", e)

    # /dev/stdout: the JSON goes into the report's stream, after the report.
    r = run(rtmem, *BENCH, "--json", "/dev/stdout")
    checks.ok(r.returncode == 0 and '"schema": "rtmem-bench/2"' in r.stdout and
              r.stdout.index("floor (no-op call") < r.stdout.index('"schema"'),
              "--json /dev/stdout: the report, then the JSON", r)

    # A complete run replaces the file, keeping its mode; through a symbolic
    # link, the link's target is replaced and the link stays.
    os.chmod(good, 0o640)
    r = run(rtmem, *MEMCHECK, "--json", good)
    doc = load_json(good)
    checks.ok(r.returncode == 0 and doc and doc["passed"] is True,
              "a complete run replaces the result file", r)
    checks.ok(stat.S_IMODE(os.stat(good).st_mode) == 0o640, "the replaced file keeps its mode")
    with open(good, "w") as f:
        f.write(GOOD)
    real, link = os.path.join(d, "real.json"), os.path.join(d, "link.json")
    with open(real, "w") as f:
        f.write(GOOD)
    os.symlink("real.json", link)
    expected |= {"real.json", "link.json"}
    r = run(rtmem, *BENCH, "--json", link)
    checks.ok(r.returncode == 0 and os.path.islink(link) and
              '"schema": "rtmem-bench/2"' in read(real), "--json through a symbolic link", r)
    no_leftovers("complete runs")

    # Names that cannot be written: bad usage, found before the run.
    sub = os.path.join(d, "sub")
    os.mkdir(sub)
    expected.add("sub")
    for path in (sub, os.path.join(d, "nosuchdir", "x.json")):
        r = run(rtmem, *BENCH, "--json", path)
        checks.ok(r.returncode == 2 and ("cannot write '%s'" % path) in r.stderr and
                  r.stdout == "", "--json %s is bad usage, before the run" % path, r)
    checks.ok(os.path.isdir(sub) and not os.listdir(sub), "--json on a directory leaves it")

    # Interrupted (SIGINT, SIGTERM) during a run: the previous result is
    # intact, no temporary file is left, the tool dies of the signal.
    for sig in (signal.SIGINT, signal.SIGTERM):
        p = subprocess.Popen([rtmem, "memcheck", "--no-rt", "--kinds", "tlsf,glibc", "--json",
                              good], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        # Interrupt it once its temporary file exists (the run has started).
        deadline = time.time() + 10
        while time.time() < deadline and p.poll() is None:
            if any(n.startswith(".good.json.") for n in os.listdir(d)):
                break
            time.sleep(0.02)
        time.sleep(0.3)
        p.send_signal(sig)
        try:
            rc = p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = p.wait()
        name = signal.Signals(sig).name
        checks.ok(rc == -sig, "%s during memcheck: it dies of the signal" % name, rc)
        checks.ok(read(good) == GOOD, "%s during memcheck: the previous result is intact" % name)
        no_leftovers("%s during memcheck" % name)
checks.done()
