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
import tempfile

import pytest


def pytest_addoption(parser):
    parser.addoption("--rtmem", help="the rtmem binary under test")
    parser.addoption("--nm", default="nm", help="the nm of the build's toolchain")
    parser.addoption("--objects", default="",
                     help="object files of the rtmem command and the kit, ';'-separated")


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


@pytest.fixture
def tmp_dir():
    """A private directory, removed with everything in it after the test
    (pytest's own tmp_path keeps its last runs' directories)."""
    path = tempfile.mkdtemp(prefix="rtmem-test-")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
