"""rtmem size: the bound of every kind against the adversaries built to
break it, for several limits (tiny blocks, a one-byte minimum, blocks up
to the live limit, aligned requests, locked heaps): none may make an
allocation fail at the bound (the run fails if one does, and so does this
test), each needs a pool no larger than the bound, and one granule below
that pool it fails (so it did press the heap). The figure matches the
library call's, and the report says it; usage.
"""
import ctypes
import os

import pytest

from rtmemtest import EMULATED, ENVELOPE, KINDS as RTMEM_KINDS, explain, load_json, run

KINDS = list(RTMEM_KINDS)
ADVERSARIES = ["holes", "comb", "buckets", "random"]

LIMITS = [
    # max-live, max-block, other options
    ("4K", "1K", []),
    ("64K", "256", []),
    ("64K", "256", ["--min-block", "16"]),
    ("64K", "4K", ["--min-block", "16"]),
    ("32K", "32K", ["--min-block", "64"]),
    ("16K", "9000", ["--min-block", "300", "--max-align", "4096"]),
    ("16K", "2K", ["--min-block", "32", "--lock", "pi"]),
    ("16K", "2K", ["--min-block", "32", "--max-align", "256", "--lock", "robust"]),
]


def size(rtmem, tmp_dir, *args):
    js = os.path.join(tmp_dir, "size.json")
    if os.path.exists(js):
        os.unlink(js)
    r = run(rtmem, "size", "--json", js, *args)
    return r, load_json(js)


@pytest.mark.parametrize("live,block,more", LIMITS,
                         ids=["-".join([l, b] + m) for l, b, m in LIMITS])
def test_no_adversary_exceeds_the_bound(rtmem, tmp_dir, live, block, more):
    args = ["--max-live", live, "--max-block", block] + more + ["--adversaries"]
    r, d = size(rtmem, tmp_dir, *args)
    assert r.returncode == 0, explain(r)
    # the envelope, with no timer (size times nothing)
    assert list(d)[:len(ENVELOPE)] == ENVELOPE, list(d)
    assert (d["schema"], d["tool"]) == ("rtmem-size/1", "size")
    assert d["command_line"] == ["rtmem", "size", "--json", os.path.join(tmp_dir, "size.json")] + args
    assert d["timer"] is None and d["seed"] == 1
    assert d["passed"] is True
    assert [k["kind"] for k in d["kinds"]] == KINDS
    for k in d["kinds"]:
        if k["kind"] in ("xvheap", "zsheap") and k["bound"] is None:
            # blocks live in 4 KiB pages: larger requests have no bound
            assert d["limits"]["max_block"] + d["limits"]["max_align"] > 4000, k
            assert k["why"] == "no bound: the kind serves no request or pool this large", k
            continue
        assert k["bound"] > 0, k
        assert [a["name"] for a in k["adversaries"]] == ADVERSARIES, k
        for a in k["adversaries"]:
            what = (k["kind"], a["name"], a)
            assert a["held_at_bound"] is True, what
            assert a["peak_live"] <= d["limits"]["max_live"], what
            assert a["steps"] > 0, what
            assert 0 < a["needed"] <= k["bound"], what
            # one granule less fails: the adversary pressed the heap
            assert a["below_failed"] == a["needed"] - d["granule"], what
        assert k["worst_found"] == max(a["needed"] for a in k["adversaries"])
    assert "EXCEEDED at" not in r.stdout and "FAILED" not in r.stdout


@pytest.mark.skipif(bool(EMULATED) or os.environ.get("RTMEM_SANITIZED") == "1",
                    reason="the target's or a sanitized library does not load in this Python")
def test_the_figure_is_the_library_call(rtmem, tmp_dir, files):
    lib = ctypes.CDLL(files["librtmem"])

    class Limits(ctypes.Structure):
        _fields_ = [("max_live", ctypes.c_size_t), ("max_block", ctypes.c_size_t),
                    ("min_block", ctypes.c_size_t), ("max_align", ctypes.c_size_t),
                    ("lock", ctypes.c_int)]

    lib.rtm_heap_pool_bound_ex.restype = ctypes.c_size_t
    lib.rtm_heap_pool_bound_ex.argtypes = [ctypes.c_char_p, ctypes.POINTER(Limits)]
    r, d = size(rtmem, tmp_dir, "--max-live", "1M", "--max-block", "64K", "--min-block", "48",
                "--max-align", "128", "--lock", "pi")
    assert r.returncode == 0, explain(r)
    lim = Limits(1 << 20, 64 << 10, 48, 128, 1)
    for k in d["kinds"]:
        assert (k["bound"] or 0) == lib.rtm_heap_pool_bound_ex(k["kind"].encode(),
                                                               ctypes.byref(lim)), k
        assert k["adversaries"] == [] and k["worst_found"] is None
    assert d["limits"] == {"max_live": 1 << 20, "max_block": 64 << 10, "min_block": 48,
                           "max_align": 128, "lock": "pi"}
    for k in KINDS:
        assert k in r.stdout
    assert "never fails an allocation" in r.stdout


def test_limits_beyond_the_address_space_say_so(rtmem, tmp_dir):
    r, d = size(rtmem, tmp_dir, "--max-live", "1T", "--max-block", "1T")
    assert r.returncode == 0, explain(r)
    for k in d["kinds"]:
        assert k["bound"] is None and k["why"].startswith("no bound"), k


def test_other_allocators_have_no_bound(rtmem, tmp_dir):
    r, d = size(rtmem, tmp_dir, "--max-live", "64K", "--max-block", "1K",
                "--kinds", "tlsf-none,glibc,tlsf")
    assert r.returncode == 0, explain(r)
    got = {k["kind"]: k for k in d["kinds"]}
    assert list(got) == ["tlsf", "glibc"], list(got)  # a hardening variant is its kind
    assert got["glibc"]["bound"] is None and "not an rtmem heap" in got["glibc"]["why"]


@pytest.mark.parametrize("args,says", [
    ([], "--max-live and --max-block are required"),
    (["--max-live", "4K"], "--max-live and --max-block are required"),
    (["--max-live", "4K", "--max-block", "1K", "--min-block", "2K"], "--min-block is more"),
    (["--max-live", "4K", "--max-block", "8K", "--min-block", "6K"], "--min-block is more"),
    (["--max-live", "4K", "--max-block", "1K", "--max-align", "48"], "power of two"),
    (["--max-live", "4K", "--max-block", "1K", "--lock", "spin"], "--lock"),
    (["--max-live", "0", "--max-block", "1K"], "--max-live"),
    (["--max-live", "4K", "--max-block", "1K", "--kinds", "nope"], "nope"),
])
def test_usage(rtmem, args, says):
    r = run(rtmem, "size", *args)
    assert r.returncode == 2, explain(r)
    assert says in r.stderr, r.stderr
    assert r.stdout == ""
