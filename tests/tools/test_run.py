"""rtmem run and librtmem-malloc: tests/tools/malloc_prog.c run on each
kind through the interposer (the malloc family's contract against a shadow
model, threads, fork, allocations before main and after it, the pool
exhausted: ENOMEM, or the C library's allocator as the fallback; _exit),
the same program linked with librtmem-malloc.a, the library's refusal of a
configuration it cannot use, and real programs (Debian's sqlite3, Python
and cmake, the C++ trace program) run to completion with their output
unchanged.

The build gives (tests/tools/CMakeLists.txt): --file malloc_prog=,
--file malloc_prog_static=, --file malloc_lib=, and --file trace_prog_cpp=
where a C++ compiler is found.
"""
import os
import re
import shutil
import subprocess
import sys

import pytest

from rtmemtest import EMULATED, KINDS as RTMEM_KINDS, explain, load_json, run, sqlite_workload

KINDS = list(RTMEM_KINDS)
GLIBC = ["glibc", "glibc-rt"]  # the C library's allocator, counted and timed the same way


def rtmem_run(rtmem, tmp_dir, *args, env=None, stdin=None):
    """rtmem run with --json: (its result, its document or None)."""
    js = os.path.join(tmp_dir, "run.json")
    if os.path.exists(js):
        os.unlink(js)
    cmd = [str(rtmem), "run", "--json", js] + [str(a) for a in args]
    r = subprocess.run(cmd, stdin=stdin if stdin is not None else subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                       timeout=600)
    return r, load_json(js)


def kind_args(kind):
    """--kind KIND, and for the page kinds, which serve no block above a
    page's (xvheap 4008 bytes, zsheap 4096), the fallback to the C library
    they need."""
    return ["--kind", kind] + (["--on-full", "fallback"] if kind in PAGE_KINDS else [])


PAGE_KINDS = ("xvheap", "zsheap")


def served(heap):
    """The allocations the heap itself made."""
    c = heap["calls"]
    return c["malloc"] + c["calloc"] + c["realloc"] + c["aligned"]


@pytest.mark.parametrize("kind", KINDS + GLIBC)
def test_the_malloc_contract_holds_through_the_interposer(rtmem, files, tmp_dir, kind):
    r, d = rtmem_run(rtmem, tmp_dir, *kind_args(kind), "--", files["malloc_prog"], "contract",
                     "20000", "7")
    assert r.returncode == 0, explain(r)
    m = re.search(r"^contract: (\d+) allocations \((\d+) aligned\), (\d+) reallocs, (\d+) frees",
                  r.stdout, re.M)
    assert m, explain(r)
    allocs, aligned, reallocs, frees = map(int, m.groups())
    h = d["heap"]
    assert d["passed"] is True and h["kind"] == kind, d
    # every call the program made went to the heap, and each is counted
    # (its own checks add a few: the bad arguments' and the C library's
    # own calls for stdio)
    # (a page kind's calls above a page's block went to the C library: counted apart)
    extra = h["fallbacks"] if kind in PAGE_KINDS else 0
    assert h["calls"]["aligned"] + extra >= aligned > 1000, h["calls"]
    assert h["calls"]["realloc"] + extra >= reallocs > 1000, h["calls"]
    assert h["calls"]["free"] + extra >= frees and served(h) + extra >= allocs + reallocs, \
        h["calls"]
    assert h["failed"] == 0 and h["refused_frees"] == 0, h
    assert h["fallbacks"] == 0 or kind in PAGE_KINDS, h  # its large blocks: the C library's
    assert h["before_ready"] == 0 and (h["foreign"] == 0 or kind in PAGE_KINDS), h
    assert set(h["worst_ns"]) == {"malloc", "calloc", "realloc", "aligned", "free"}
    assert all(h["worst_ns"][op] > 0 for op in ("malloc", "realloc", "aligned", "free")), h
    if kind in GLIBC:
        # glibc's own locks, none of the library's; its memory at the end
        g = h["glibc"]
        assert h["lock"]["calls"] == 0 and h["usable_bytes"] == 0, h
        if kind == "glibc-rt":
            # M_MMAP_MAX 0: nothing mmapped; the 64 MiB reserve is its heap
            assert "M_MMAP_MAX 0" in g["settings"] and g["mmapped_blocks"] == 0, g
            assert g["heap_bytes"] >= h["pool_bytes"] == 64 << 20, h
        else:
            assert g["settings"] == "defaults" and h["pool_bytes"] == 0, h
        return
    assert h["glibc"] is None
    assert h["lock"]["calls"] == sum(h["calls"].values()), h
    assert 0 < h["peak_used_bytes"] <= h["usable_bytes"] < h["pool_bytes"] == 64 << 20, h
    # the report, on standard error: the program's output stays its own
    assert "rtmem run:" not in r.stdout and "exited with status 0" in r.stderr, explain(r)


def test_threads_share_the_locked_heap(rtmem, files, tmp_dir):
    r, d = rtmem_run(rtmem, tmp_dir, "--", files["malloc_prog"], "threads", "4", "20000")
    assert r.returncode == 0, explain(r)
    assert "threads: 4 threads, 20000 calls each: all kept" in r.stdout
    h = d["heap"]
    assert h["calls"]["malloc"] + h["calls"]["free"] >= 4 * 20000, h["calls"]
    assert h["lock"]["contended"] <= h["lock"]["calls"], h["lock"]


def test_a_forked_child_has_a_consistent_heap_and_its_own_summary(rtmem, files, tmp_dir):
    """A thread allocates and frees without pause while the parent forks 20
    times: each child (its lock made anew, whoever held it in the parent)
    checks the parent's blocks, allocates, and writes its own summary."""
    r, d = rtmem_run(rtmem, tmp_dir, "--", files["malloc_prog"], "fork")
    assert r.returncode == 0, explain(r)
    assert "fork: 20 children checked the parent's blocks" in r.stdout, explain(r)
    kids = d["children"]
    assert len(kids) + d["children_not_listed"] == 20, (len(kids), d["children_not_listed"])
    # each child's own calls: its 1000 and a few of its exit's, not the parent's
    assert all(1000 <= k["calls"]["malloc"] < 1100 and k["failed"] == 0 for k in kids), kids
    assert len({k["pid"] for k in kids}) == len(kids) and d["heap"]["pid"] not in \
        {k["pid"] for k in kids}
    assert "forked processes used their own copy of the heap" in r.stderr, explain(r)
    # fork carries no memory lock: a child's copy of a locked pool says so
    if d["heap"]["locked"] == "locked":
        assert {k["locked"] for k in kids} == {"NOT locked (a forked copy)"}, kids


@pytest.mark.parametrize("kind", KINDS)
def test_a_realloc_of_an_address_that_is_no_block_is_refused(rtmem, files, tmp_dir, kind):
    r, d = rtmem_run(rtmem, tmp_dir, *kind_args(kind), "--", files["malloc_prog"], "bad-realloc")
    assert "bad-realloc: refused, EINVAL" in r.stdout, explain(r)
    # counted as a refused free, and the run marked failed for it
    assert d["heap"]["refused_frees"] == 1 and d["passed"] is False, d["heap"]


def test_a_forked_childs_summary_after_a_signal_is_its_last(rtmem, tmp_dir):
    """--signal usr1 in a forked child: its summary on the signal, then at
    its exit; rtmem run reads the one written last (the child replaces
    the file it made itself)."""
    if EMULATED:
        pytest.skip("the host's Python: the emulated target's library cannot be loaded into it")
    script = ("import os, signal\n"
              "pid = os.fork()\n"
              "if pid == 0:\n"
              "    os.kill(os.getpid(), signal.SIGUSR1)\n"
              "    x = [bytes(2000 + i) for i in range(3000)]\n"
              "    os._exit(0)\n"
              "os.waitpid(pid, 0)\n")
    r, d = rtmem_run(rtmem, tmp_dir, "--signal", "usr1", "--", python(), "-c", script)
    assert r.returncode == 0, explain(r)
    kids = d["children"]
    assert len(kids) == 1, kids
    assert kids[0]["calls"]["calloc"] >= 3000, kids[0]["calls"]  # made after the signal


def test_a_summary_to_a_device_is_written_not_replaced(files, tmp_dir):
    """RTMEM_MALLOC_SUMMARY naming a device (here through a link to
    /dev/null): written to, never replaced by a file."""
    link = os.path.join(tmp_dir, "to-null")
    os.symlink("/dev/null", link)
    env = dict(os.environ, LD_PRELOAD=files["malloc_lib"], RTMEM_MALLOC_SUMMARY=link,
               RTMEM_MALLOC_JSON=link)
    r = subprocess.run([files["malloc_prog"], "quick-exit", "0"], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    assert r.returncode == 0, explain(r)
    assert os.path.islink(link) and os.readlink(link) == "/dev/null"
    assert sorted(os.listdir(tmp_dir)) == ["to-null"], os.listdir(tmp_dir)


def test_a_relative_tmpdir_and_a_program_that_changes_directory(rtmem, files, tmp_dir):
    """TMPDIR relative, and the program changes its directory before it
    allocates: its summary still reaches rtmem run."""
    os.mkdir(os.path.join(tmp_dir, "t"))
    js = os.path.join(tmp_dir, "run.json")
    r = subprocess.run([str(rtmem), "run", "--json", js, "--", "/bin/sh", "-c",
                        'cd / && exec "$0" quick-exit 0', files["malloc_prog"]],
                       cwd=tmp_dir, env=dict(os.environ, TMPDIR="t"), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60)
    assert r.returncode == 0, explain(r)
    d = load_json(js)
    assert d["heap"] is not None and d["heap"]["calls"]["malloc"] >= 10, d
    assert os.listdir(os.path.join(tmp_dir, "t")) == []  # its directory removed


def test_a_vfork_child_that_exits_writes_no_summary(rtmem, files, tmp_dir):
    """A vfork child shares its parent's memory and counters, and no fork
    handler runs in it: its _exit writes nothing, and only the parent's
    summary is read."""
    r, d = rtmem_run(rtmem, tmp_dir, "--", files["malloc_prog"], "vfork")
    assert r.returncode == 0 and "vfork: 3 children ended" in r.stdout, explain(r)
    assert d["children"] == [] and d["children_not_listed"] == 0, d["children"]
    assert d["heap"]["calls"]["malloc"] >= 10, d["heap"]


def test_a_derived_summary_name_never_replaces_a_file(files, tmp_dir):
    """A process other than RTMEM_MALLOC_PID's writes FILE.<pid>: a file
    already there stays as it was, and the summary takes FILE.<pid>.1."""
    path = os.path.join(tmp_dir, "s.txt")
    env = dict(os.environ, LD_PRELOAD=files["malloc_lib"], RTMEM_MALLOC_SUMMARY=path,
               RTMEM_MALLOC_PID="1", P=files["malloc_prog"], F=path)
    # the shell makes FILE.<its pid>, then becomes the program: the same pid
    r = subprocess.run(["/bin/sh", "-c", 'echo mine > "$F.$$"; LD_PRELOAD="$L" exec "$P" '
                        'quick-exit 0'], env=dict(env, L=files["malloc_lib"], LD_PRELOAD=""),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    assert r.returncode == 0, explain(r)
    made = sorted(n for n in os.listdir(tmp_dir) if n.startswith("s.txt."))
    pid = [n.split(".")[2] for n in made if n.count(".") == 3 and n.endswith(".1")]
    assert len(pid) == 1, made
    with open(path + "." + pid[0]) as f:
        assert f.read() == "mine\n"  # left as it was
    with open(path + "." + pid[0] + ".1") as f:
        assert "librtmem-malloc (pid %s)" % pid[0] in f.read()
    assert not [n for n in made if ".tmp." in n], made


def test_allocations_before_main_and_after_it(rtmem, files, tmp_dir):
    r, d = rtmem_run(rtmem, tmp_dir, "--", files["malloc_prog"], "lifetime")
    assert r.returncode == 0, explain(r)
    assert 'lifetime: main sees "made before main"' in r.stdout, explain(r)
    assert "lifetime: made before main, freed after main" in r.stdout, explain(r)
    assert d["heap"]["failed"] == 0 and d["heap"]["foreign"] == 0, d["heap"]


def test_an_exhausted_pool_fails_with_enomem(rtmem, files, tmp_dir):
    """A 1 MiB pool filled with 1000-byte blocks: the failing malloc gives
    NULL and ENOMEM, close to pool / size blocks fit, and once they are
    freed one fits again; the summary counts the failure."""
    r, d = rtmem_run(rtmem, tmp_dir, "--pool", "1M", "--", files["malloc_prog"], "exhaust",
                     "1000")
    assert r.returncode == 0, explain(r)
    n = int(re.search(r"^exhaust: (\d+) blocks", r.stdout, re.M).group(1))
    assert 0.8 * (1 << 20) / 1000 < n < (1 << 20) / 1000, n
    h = d["heap"]
    assert h["failed"] >= 1 and h["fallbacks"] == 0 and d["passed"] is False, h
    assert re.search(r"failed +[1-9]\d* allocations", r.stderr), explain(r)


def test_the_fallback_serves_what_the_pool_cannot(rtmem, files, tmp_dir):
    """4 MiB asked of a 1 MiB pool: with --on-full fallback every block is
    served (the rest by the C library), counted, and freed where it
    belongs; without it, the program sees the failure."""
    r, d = rtmem_run(rtmem, tmp_dir, "--pool", "1M", "--on-full", "fallback", "--",
                     files["malloc_prog"], "over", "4096", "1000")
    assert r.returncode == 0, explain(r)
    assert "over: 1000 blocks of 4096 bytes, all served and kept" in r.stdout
    h = d["heap"]
    assert h["fallbacks"] > 700 and h["fallback_bytes"] >= 700 * 4096, h
    assert h["failed"] == 0 and h["foreign"] >= h["fallbacks"], h
    assert h["when_full"] == "fallback"
    r, d = rtmem_run(rtmem, tmp_dir, "--pool", "1M", "--", files["malloc_prog"], "over", "4096",
                     "1000")
    assert r.returncode == 1 and "FAIL: block" in r.stdout, explain(r)
    assert d["heap"]["failed"] >= 1 and d["heap"]["fallbacks"] == 0, d["heap"]


def test_exit_status_and_underscore_exit(rtmem, files, tmp_dir):
    """The program's exit status is rtmem run's; _exit still writes the
    summary (the library interposes it)."""
    r, d = rtmem_run(rtmem, tmp_dir, "--", files["malloc_prog"], "quick-exit", "3")
    assert r.returncode == 3, explain(r)
    assert d["program"]["exit_status"] == 3 and d["heap"]["calls"]["malloc"] >= 10, d


def test_a_program_that_cannot_run(rtmem, tmp_dir):
    r, d = rtmem_run(rtmem, tmp_dir, "--", os.path.join(tmp_dir, "no-such-program"))
    assert r.returncode == 127, explain(r)
    assert "cannot run" in r.stderr and d["heap"] is None, explain(r)


@pytest.mark.parametrize("args,message", [
    ([], "no program to run"),
    (["--kind", "nosuch", "--", "true"], "no such heap kind"),
    (["--pool", "1K", "--", "true"], "--pool"),
    (["--lock", "maybe", "--", "true"], "--lock"),
    (["--kind", "glibc", "--pool", "1M", "--", "true"], "glibc at its defaults has no pool"),
    (["--kind", "glibc", "--lock", "must", "--", "true"], "--lock"),
    (["--kind", "glibc-rt", "--huge", "2M", "--", "true"], "--huge is for rtmem's heap kinds"),
    (["--kind", "glibc-rt", "--harden", "none", "--", "true"], "--harden is for rtmem's"),
    (["--kind", "glibc-rt", "--on-full", "fallback", "--", "true"], "--on-full is for rtmem's"),
    (["--kind", "xvheap", "--", "true"], "add --on-full fallback"),
    (["--kind", "zsheap", "--", "true"], "--kind zsheap serves blocks of at most 4096 bytes"),
])
def test_usage(rtmem, args, message):
    r = run(rtmem, "run", *args)
    assert r.returncode == 2 and message in r.stderr, explain(r)


def test_the_library_refuses_what_it_cannot_use(files, tmp_dir):
    """Preloaded by hand with a value it cannot use, or a pool it cannot
    have: the program ends at its first call, exit status 127, the
    variable named; nothing runs on a pool other than the one asked."""
    for var, value in [("RTMEM_MALLOC_POOL", "lots"), ("RTMEM_MALLOC_KIND", "nosuch"),
                       ("RTMEM_MALLOC_ON_FULL", "pray"), ("RTMEM_MALLOC_POOL", "1T"),
                       ("RTMEM_MALLOC_HUGE", "2M glibc")]:
        extra = {var: value}
        if value == "2M glibc":  # huge pages are a heap's, not glibc's
            extra = {"RTMEM_MALLOC_HUGE": "2M", "RTMEM_MALLOC_KIND": "glibc-rt"}
        env = dict(os.environ, LD_PRELOAD=files["malloc_lib"], **extra)
        r = subprocess.run([files["malloc_prog"], "contract", "10", "1"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        assert r.returncode == 127, (var, value, explain(r))
        assert "librtmem-malloc:" in r.stderr and r.stdout == "", (var, value, explain(r))
        if value != "1T":
            assert var in r.stderr, explain(r)
        if value == "2M glibc":
            assert "not for glibc-rt" in r.stderr, explain(r)


def test_the_static_archive_serves_a_linked_program(files, tmp_dir):
    """malloc_prog linked with librtmem-malloc.a, run directly (no
    preload): the heap serves its calls, configured by the same
    environment."""
    js = os.path.join(tmp_dir, "static.json")
    env = dict(os.environ, RTMEM_MALLOC_JSON=js, RTMEM_MALLOC_KIND="heapmem",
               RTMEM_MALLOC_POOL="16M")
    env.pop("LD_PRELOAD", None)
    r = subprocess.run([files["malloc_prog_static"], "contract", "5000", "3"], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    assert r.returncode == 0 and "all kept" in r.stdout, explain(r)
    d = load_json(js)
    assert d["schema"] == "rtmem-malloc/1" and d["kind"] == "heapmem", d
    assert d["pool_bytes"] == 16 << 20 and d["calls"]["aligned"] > 100 and d["failed"] == 0, d


def test_the_summary_on_a_signal(rtmem, tmp_dir):
    """--signal usr1: the program that receives it writes the summary so
    far on standard error, and goes on."""
    if EMULATED:
        pytest.skip("the host's Python: the emulated target's library cannot be loaded into it")
    script = ("import os, signal\nx = [str(i) * 10 for i in range(1000)]\n"
              "os.kill(os.getpid(), signal.SIGUSR1)\nprint('still here', len(x))\n")
    r, d = rtmem_run(rtmem, tmp_dir, "--signal", "usr1", "--", python(), "-c", script)
    assert r.returncode == 0 and "still here 1000" in r.stdout, explain(r)
    assert re.search(r"^librtmem-malloc \(pid \d+\): tlsf", r.stderr, re.M), explain(r)


def python():
    """Debian's python3 when it is there, else the one running the tests
    (its binary, not a shim that starts others)."""
    return "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else \
        os.path.realpath(sys.executable)



PY = """\
import json, collections
d = {str(i): [j * 0.5 for j in range(i % 50)] for i in range(3000)}
s = json.dumps(d, sort_keys=True)
c = collections.Counter(s)
print(len(s), sorted(c.items())[:5], sum(len(v) for v in json.loads(s).values()))
"""


def real_programs(files):
    out = []
    if shutil.which("sqlite3"):
        out.append(("sqlite3", [shutil.which("sqlite3"), ":memory:"], sqlite_workload(5000)))
    out.append(("python", [python(), "-c", PY], None))
    if "trace_prog_cpp" in files:
        out.append(("c++", [files["trace_prog_cpp"]], None))
    return out


CMAKE = """\
set(items "")
foreach(i RANGE 1 3000)
  math(EXPR j "(${i} * 7919) % 3001")
  list(APPEND items "item-${j}")
endforeach()
list(SORT items)
list(REMOVE_DUPLICATES items)
list(LENGTH items n)
string(REGEX REPLACE "item-([0-9]+)" "\\1" nums "${items}")
string(SHA256 h "${nums}")
file(WRITE "${OUT}" "${n} ${h}\n")
"""


@pytest.mark.parametrize("kind", KINDS)
def test_a_debian_cpp_program_runs_with_its_output_unchanged(rtmem, tmp_dir, kind):
    """Debian's cmake (C++, libstdc++) running a script of list, string
    and regex work, some 200,000 allocations: its output file is the same
    on every kind as without rtmem."""
    if EMULATED:
        pytest.skip("the host's cmake: the emulated target's library cannot be loaded into it")
    cmake = shutil.which("cmake")
    assert cmake, "no cmake on PATH: the build itself needs it"
    script = os.path.join(tmp_dir, "work.cmake")
    with open(script, "w") as f:
        f.write(CMAKE)
    outs = []
    for under in (False, True):
        out = os.path.join(tmp_dir, "out-%d.txt" % under)
        js = os.path.join(tmp_dir, "cmake.json")
        cmd = [cmake, "-DOUT=" + out, "-P", script]
        if under:
            cmd = [str(rtmem), "run", *kind_args(kind), "--json", js, "--"] + cmd
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=300)
        assert r.returncode == 0, explain(r)
        with open(out) as f:
            outs.append(f.read())
    assert outs[0] == outs[1] and outs[0].startswith("3000 "), outs
    h = load_json(js)["heap"]
    assert served(h) > 100000 and h["failed"] == 0 and h["refused_frees"] == 0, h


@pytest.mark.parametrize("kind", KINDS + GLIBC)
def test_real_programs_run_to_completion_with_their_output_unchanged(rtmem, files, tmp_dir,
                                                                      kind):
    if EMULATED:
        pytest.skip("the host's programs: the emulated target's library cannot be loaded into "
                    "them")
    assert shutil.which("sqlite3"), "no sqlite3 on PATH: scripts/ensure-deps.sh installs it"
    for name, cmd, stdin in real_programs(files):
        direct = subprocess.run(cmd, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, timeout=300)
        js = os.path.join(tmp_dir, "real.json")
        ran = subprocess.run([str(rtmem), "run", *kind_args(kind), "--json", js, "--"] + cmd,
                             input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, timeout=300)
        assert ran.returncode == direct.returncode == 0, (name, explain(ran))
        assert ran.stdout == direct.stdout and ran.stdout, (name, ran.stdout[:300],
                                                            direct.stdout[:300])
        h = load_json(js)["heap"]
        assert served(h) > 1000 and h["failed"] == 0 and h["refused_frees"] == 0, (name, h)
