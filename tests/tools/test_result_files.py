"""A failed or interrupted run never destroys anything: `--json PATH`
replaces PATH only with complete results, never removes or truncates a
file the tool did not create (a device, a FIFO, a previous good result),
and leaves no temporary file behind; a report that cannot be written fails
the run with its cause.
"""
import json
import os
import signal
import stat
import subprocess
import threading
import time

import pytest

from rtmemtest import assert_kept, explain, left_in, load_json, previous_result, run

# The shortest runs of each tool.
# (The shortest runs that write a result: no sweep, no free order, no threads.)
BENCH = ["bench", "--quick", "--no-rt", "--no-sweep", "--no-free-order", "--threads", "0", "--kinds",
         "tlsf,glibc"]
MEMCHECK = ["memcheck", "--quick", "--no-rt", "--kinds", "tlsf", "--phases", "pow2"]
TOOLS = {"bench": BENCH, "memcheck": MEMCHECK}


def read(path):
    with open(path) as f:
        return f.read()


@pytest.fixture
def good(tmp_dir):
    """A previous good result, tmp_dir/good.json."""
    path = os.path.join(tmp_dir, "good.json")
    previous_result(path)
    return path


@pytest.mark.parametrize("tool", TOOLS)
def test_a_report_that_cannot_be_written_fails_the_run_and_keeps_the_results(rtmem, tmp_dir,
                                                                              good, tool):
    with open("/dev/full", "w") as full:
        r = run(rtmem, *TOOLS[tool], "--json", good, stdout=full)
    assert r.returncode == 1, explain(r)
    assert "writing to standard output failed: No space left on device" in r.stderr, explain(r)
    assert_kept(good)
    assert not left_in(tmp_dir, ["good.json"])


def test_rtmem_kinds_fails_when_its_output_cannot_be_written(rtmem):
    with open("/dev/full", "w") as full:
        r = run(rtmem, "kinds", stdout=full)
    assert r.returncode == 1 and "No space left on device" in r.stderr, explain(r)


@pytest.fixture(params=["/dev/full", "own node"])
def device(request, tmp_dir):
    """A device as the result file: /dev/full itself, and a node of our own
    (/dev/full's numbers) where we may make one (root)."""
    if request.param == "/dev/full":
        return request.param
    own = os.path.join(tmp_dir, "full")
    try:
        os.mknod(own, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    except OSError as e:
        pytest.skip("cannot mknod (not root?): %s" % e)
    return own


def temporaries_beside(path):
    """Files next to path other than it: temporaries the tool left."""
    directory, name = os.path.split(path)
    return [n for n in os.listdir(directory) if n.startswith("." + name)] \
        if directory == "/dev" else left_in(directory, [name])


def test_bench_json_on_a_device_fails_with_its_cause_and_the_device_stays(rtmem, device):
    r = run(rtmem, *BENCH, "--json", device)
    assert r.returncode == 1, explain(r)
    assert ("writing '%s' failed: No space left on device" % device) in r.stderr, explain(r)
    assert stat.S_ISCHR(os.stat(device).st_mode), "%s is no longer a device" % device
    assert not temporaries_beside(device)


def test_memcheck_json_on_a_device_fails_and_the_device_stays(rtmem, device):
    r = run(rtmem, *MEMCHECK, "--json", device)
    assert r.returncode == 1, explain(r)
    assert stat.S_ISCHR(os.stat(device).st_mode), "%s is no longer a device" % device
    assert not temporaries_beside(device)


def test_a_fifo_is_written_directly_and_stays_a_fifo(rtmem, tmp_dir):
    fifo = os.path.join(tmp_dir, "fifo")
    os.mkfifo(fifo)
    got = {}

    def reader():
        with open(fifo) as f:
            got["text"] = f.read()
    t = threading.Thread(target=reader, daemon=True)
    t.start()
    r = run(rtmem, *BENCH, "--json", fifo)
    if t.is_alive():  # the tool never opened it: let the reader see the end
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
    t.join(timeout=60)
    assert r.returncode == 0, explain(r)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO was replaced"
    try:
        schema = json.loads(got.get("text", ""))["schema"]
    except ValueError as e:
        pytest.fail("the reader did not get JSON: %s: %r" % (e, got.get("text", "")[:200]))
    assert schema == "rtmem-bench/2"
    assert not left_in(tmp_dir, ["fifo"])


def test_a_fifo_with_no_reader_is_waited_for_saying_so(rtmem, tmp_dir):
    fifo = os.path.join(tmp_dir, "fifo")
    os.mkfifo(fifo)
    p = subprocess.Popen([rtmem, *BENCH, "--json", fifo], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    try:
        line = p.stderr.readline()  # said before the open blocks
        assert "is a FIFO with no reader yet: waiting for one" in line, line
        assert p.poll() is None, "the tool did not wait"
        with open(fifo) as f:
            text = f.read()
        assert p.wait(timeout=120) == 0, p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert json.loads(text)["schema"] == "rtmem-bench/2"
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_waiting_for_a_fifo_reader_ends_on_sigint_leaving_it(rtmem, tmp_dir):
    fifo = os.path.join(tmp_dir, "fifo")
    os.mkfifo(fifo)
    p = subprocess.Popen([rtmem, *BENCH, "--json", fifo], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    assert "waiting for one" in p.stderr.readline()
    p.send_signal(signal.SIGINT)
    assert p.wait(timeout=60) == -signal.SIGINT
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and not left_in(tmp_dir, ["fifo"])


def test_json_to_dev_stdout_comes_after_the_report(rtmem):
    r = run(rtmem, *BENCH, "--json", "/dev/stdout")
    assert r.returncode == 0 and '"schema": "rtmem-bench/2"' in r.stdout, explain(r)
    assert r.stdout.index("floor (no-op call") < r.stdout.index('"schema"'), r.stdout


def test_a_complete_run_replaces_the_result_file_keeping_its_mode(rtmem, tmp_dir, good):
    os.chmod(good, 0o640)
    r = run(rtmem, *MEMCHECK, "--json", good)
    doc = load_json(good)
    assert r.returncode == 0 and doc and doc["passed"] is True, explain(r)
    assert stat.S_IMODE(os.stat(good).st_mode) == 0o640, oct(os.stat(good).st_mode)
    assert not left_in(tmp_dir, ["good.json"])


def test_through_a_symbolic_link_the_target_is_replaced_and_the_link_stays(rtmem, tmp_dir):
    real, link = os.path.join(tmp_dir, "real.json"), os.path.join(tmp_dir, "link.json")
    previous_result(real)
    os.symlink("real.json", link)
    r = run(rtmem, *BENCH, "--json", link)
    assert r.returncode == 0, explain(r)
    assert os.path.islink(link), "the link was replaced"
    assert '"schema": "rtmem-bench/2"' in read(real), read(real)
    assert not left_in(tmp_dir, ["real.json", "link.json"])


@pytest.mark.parametrize("owner", ["another user", "me", "the directory's owner"])
@pytest.mark.parametrize("component", ["the file", "a directory on the way"])
def test_a_link_another_user_planted_in_a_shared_directory_is_not_followed(rtmem, tmp_dir, owner,
                                                                            component):
    # As fs.protected_symlinks would, whatever the machine's setting: in a
    # sticky, world-writable directory a link is followed only when it is
    # this user's or the directory's owner's.
    if os.geteuid() != 0:
        pytest.skip("needs root: to give a link and a directory to other users")
    nobody, other = 65534, 65533
    shared = os.path.join(tmp_dir, "shared")
    os.mkdir(shared)
    os.chmod(shared, 0o1777)
    os.chown(shared, other, other)
    victim_dir = os.path.join(tmp_dir, "victim")
    os.mkdir(victim_dir)
    victim = os.path.join(victim_dir, "victim.json")
    previous_result(victim)
    if component == "the file":
        link = target = os.path.join(shared, "result.json")
        os.symlink(victim, link)
    else:
        link = os.path.join(shared, "dir")
        os.symlink(victim_dir, link)
        target = os.path.join(link, "victim.json")
    uid = {"another user": nobody, "me": 0, "the directory's owner": other}[owner]
    os.lchown(link, uid, uid)
    r = run(rtmem, *BENCH, "--json", target)
    if owner == "another user":
        assert r.returncode == 2 and "symbolic link in the shared directory" in r.stderr, \
            explain(r)
        assert_kept(victim)
    else:
        assert r.returncode == 0, explain(r)
        assert '"schema": "rtmem-bench/2"' in read(victim)
    assert os.path.islink(link)
    assert not left_in(victim_dir, ["victim.json"])


@pytest.mark.parametrize("where", ["a directory", "in a missing directory"])
def test_a_name_that_cannot_be_written_is_bad_usage_before_the_run(rtmem, tmp_dir, where):
    sub = os.path.join(tmp_dir, "sub")
    os.mkdir(sub)
    path = sub if where == "a directory" else os.path.join(tmp_dir, "nosuchdir", "x.json")
    r = run(rtmem, *BENCH, "--json", path)
    assert r.returncode == 2 and ("cannot write '%s'" % path) in r.stderr, explain(r)
    assert r.stdout == ""
    assert os.path.isdir(sub) and not os.listdir(sub), "the directory was changed"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupted_memcheck_dies_of_the_signal_and_keeps_the_results(rtmem, tmp_dir, good,
                                                                        sig):
    p = subprocess.Popen([rtmem, "memcheck", "--no-rt", "--kinds", "tlsf,glibc", "--json",
                          good], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    # Interrupt it once its temporary file exists (the run has started).
    deadline = time.time() + 10
    while time.time() < deadline and p.poll() is None:
        if any(n.startswith(".good.json.") for n in os.listdir(tmp_dir)):
            break
        time.sleep(0.02)
    time.sleep(0.3)
    p.send_signal(sig)
    try:
        rc = p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = p.wait()
    assert rc == -sig, "exit status %s" % rc
    assert_kept(good)
    assert not left_in(tmp_dir, ["good.json"])
