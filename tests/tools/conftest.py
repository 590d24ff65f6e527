"""Fixtures of the rtmem command's tests (pytest): the binary under test,
the source tree, and a private temporary directory removed afterwards.

    def test_help(rtmem):
        r = run(rtmem, "bench", "--help")
        assert r.returncode == 0, r

CTest runs each file as `python3 -m pytest FILE --rtmem BINARY`
(tests/tools/CMakeLists.txt).
"""
import os
import shutil
import sys
import tempfile

import pytest

# rtmemtest.py refuses to be imported outside pytest (a test file run as a
# script would define its cases and pass without running one).
sys.rtmem_under_pytest = True


def pytest_addoption(parser):
    parser.addoption("--rtmem", help="the rtmem binary under test")
    parser.addoption("--nm", default="nm", help="the nm of the build's toolchain")
    parser.addoption("--objects", default="",
                     help="object files of the rtmem command and the kit, ';'-separated")
    parser.addoption("--file", action="append", default=[], metavar="NAME=PATH",
                     help="a file the build made for the tests (a plugin, a library)")
    parser.addoption("--bad-plugin", action="append", default=[], metavar="PATH",
                     help="a plugin the tools must refuse")


def option(request, name):
    value = request.config.getoption(name)
    if not value:
        pytest.fail("this test needs --%s (tests/tools/CMakeLists.txt gives it)" % name)
    return value


@pytest.fixture(scope="session")
def rtmem(request):
    """The rtmem binary under test, as an absolute path."""
    return os.path.abspath(option(request, "rtmem"))


@pytest.fixture(scope="session")
def nm(request):
    return request.config.getoption("nm")


@pytest.fixture(scope="session")
def objects(request):
    """The object files of the rtmem command and of the kit."""
    return [o for o in option(request, "objects").split(";") if o]


@pytest.fixture(scope="session")
def source_dir():
    """The source tree: two levels above this file."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="session")
def files(request):
    """{NAME: PATH} of the --file NAME=PATH options: the plugins and
    libraries tests/tools/CMakeLists.txt builds for a test file."""
    out = {}
    for item in request.config.getoption("file"):
        name, _, path = item.partition("=")
        out[name] = path
    return out


@pytest.fixture(scope="session")
def bad_plugins(request):
    return list(request.config.getoption("bad_plugin"))


def pytest_generate_tests(metafunc):
    """A case taking `bad_plugin` runs once per --bad-plugin PATH, named for
    its file (none given: the case is skipped, pytest says why)."""
    if "bad_plugin" in metafunc.fixturenames:
        paths = metafunc.config.getoption("bad_plugin")
        metafunc.parametrize("bad_plugin", paths, ids=[os.path.basename(p) for p in paths])


@pytest.fixture(scope="module")
def module_dir():
    """A private directory shared by one file's cases (a run they all read),
    removed after the last."""
    path = tempfile.mkdtemp(prefix="rtmem-test-")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def subreaper():
    """This test process made a child subreaper (PR_SET_CHILD_SUBREAPER),
    for one file's cases: a worker that outlives the tool that started it
    becomes the test's child, and rtmemtest.orphans() finds it. Any left at
    the file's end are killed and reaped."""
    import signal
    from rtmemtest import become_subreaper, children_of, orphans
    assert become_subreaper(), "this test cannot be a child subreaper (prctl refused)"
    yield
    for pid in children_of(os.getpid()):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    orphans()


@pytest.fixture
def tmp_dir():
    """A private directory, removed with everything in it after the test
    (pytest's own tmp_path keeps its last runs' directories)."""
    path = tempfile.mkdtemp(prefix="rtmem-test-")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
