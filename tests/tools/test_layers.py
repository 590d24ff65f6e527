"""Data flows one way in every tool folder, and in the kit.

A tool's files call each other from the top down: cli.c (its options and
struct tk_tool) above run.c (the driver), above the phases and the report,
above the leaf files of the tool's small helpers. These cases read the
symbols each object file defines and uses (nm) and hold every folder to
that: its files form no cycle, nothing calls into cli.c, and only cli.c
calls into run.c. The kit (tools/common) forms no cycle either.
"""
import collections
import os
import re
import subprocess

import pytest

TOOLS = ["bench", "memcheck", "wcet", "latency", "pressure", "stride", "bw", "shm"]


def folder_of(obj):
    """("bench", "cli") for .../rtmem.dir/rtmem/bench/cli.c.o; ("common",
    "opt") for the kit's .../common/opt.c.o."""
    m = re.search(r"/(?:rtmem/)?([a-z_]+)/([a-z_]+)\.c\.o(?:bj)?$", obj)
    return (m.group(1), m.group(2)) if m else (None, None)


def symbols(nm, obj):
    """(defined, used) global names of obj."""
    out = subprocess.run([nm, obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBRCVW":
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
    return defined, used


def calls(nm, objects, folder):
    """{file: {file it calls: [symbols]}} among the files of folder."""
    files = {}
    for obj in objects:
        f, name = folder_of(obj)
        if f == folder:
            files[name] = symbols(nm, obj)
    assert files, "no object files of %s among --objects" % folder
    owner = {s: name for name, (defined, _) in files.items() for s in defined}
    edges = collections.defaultdict(lambda: collections.defaultdict(list))
    for name, (_, used) in files.items():
        for s in sorted(used):
            if s in owner and owner[s] != name:
                edges[name][owner[s]].append(s)
    return files, edges


def cycle(files, edges):
    """A cycle of calls among files, as a list of names, or None."""
    state = {}

    def visit(v, path):
        state[v] = 1
        for w in edges[v]:
            if state.get(w) == 1:
                return path[path.index(w):] + [w]
            if w not in state:
                found = visit(w, path + [w])
                if found:
                    return found
        state[v] = 2
        return None

    for v in sorted(files):
        if v not in state:
            found = visit(v, [v])
            if found:
                return found
    return None


def describe(edges, path):
    return "; ".join("%s -> %s (%s)" % (a, b, ", ".join(edges[a][b][:3]))
                     for a, b in zip(path, path[1:]))


@pytest.mark.parametrize("folder", TOOLS + ["common"])
def test_no_cycle(nm, objects, folder):
    files, edges = calls(nm, objects, folder)
    path = cycle(files, edges)
    assert path is None, "%s calls in a circle: %s" % (folder, describe(edges, path))


@pytest.mark.parametrize("tool", TOOLS)
def test_cli_and_run_at_the_top(nm, objects, tool):
    files, edges = calls(nm, objects, tool)
    assert "cli" in files and "run" in files, sorted(files)
    upward = ["%s -> %s (%s)" % (a, b, ", ".join(s)) for a in edges for b, s in edges[a].items()
              if b == "cli" or (b == "run" and a != "cli")]
    assert upward == [], "calls up into cli.c or run.c: " + "; ".join(upward)


def test_the_check_sees_a_cycle():
    """The cycle finder itself, on a made-up graph."""
    edges = collections.defaultdict(dict, {"a": {"b": ["f"]}, "b": {"c": ["g"]},
                                           "c": {"a": ["h"]}})
    assert cycle({"a": 0, "b": 0, "c": 0}, edges) == ["a", "b", "c", "a"]
    edges["c"] = {}
    assert cycle({"a": 0, "b": 0, "c": 0}, edges) is None
