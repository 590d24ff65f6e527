"""Each tool is described once, and its descriptions stay in step.

docs/<tool>.md is a tool's manual; `rtmem <tool> --help` is a synopsis
(each option on one line, and where the manual is); the README says what
each tool is for and links the manual. The options every tool shares are
the kit's (tools/common/opt.h), worded once. These cases hold them together:
the options of --help and of the manual are the same set, the shared ones
carry the kit's words, the README's map of docs/ lists every page and only
pages that exist.
"""
import os
import re
import shutil
import subprocess

import pytest

from rtmemtest import run

# The tools on the kit's driver, as `rtmem --help` lists them; `report` and
# `kinds` are commands of their own.
TOOLS = ["bench", "memcheck", "wcet", "latency", "pressure", "stride", "bw", "shm", "trace",
         "replay", "size", "run"]
# What a tool that runs a command shows after "[options]" in its usage line.
COMMAND_USAGE = {"trace": " -- PROGRAM [ARGS...]  |  rtmem trace --show FILE", "replay": " FILE",
                 "run": " -- PROGRAM [ARGS...]"}
OTHER_COMMANDS = ["report", "kinds"]


def kit_words(source_dir):
    """{option name: its help words} of the shared options, read from opt.h."""
    with open(os.path.join(source_dir, "tools", "common", "opt.h")) as f:
        text = f.read()
    words = dict(re.findall(r'#define TK_HELP_([A-Z_]+)\s+"([^"]*)"', text))
    return {name.lower().replace("_", "-"): w for name, w in words.items()}


def help_options(rtmem, tool):
    """{option name: its help line} of `rtmem TOOL --help`, and the text."""
    r = run(rtmem, tool, "--help")
    assert r.returncode == 0, r
    lines = r.stdout.splitlines()
    start = lines.index("options:") + 1
    end = lines.index("", start)
    options = {}
    for line in lines[start:end]:
        m = re.match(r"  (?:-[a-zA-Z], )?--([a-z0-9-]+)(?: \S+)?\s+(.*)$", line)
        assert m, "an option's help runs onto a second line: %r" % line
        options[m.group(1)] = m.group(2)
    del options["help"]
    # every tool's, as --help is: tools.md describes it once
    assert options.pop("quiet") == "no progress line on a terminal's standard error", tool
    return options, r.stdout


def manual_options(source_dir, tool):
    """The options the manual's Options table has a row for, in order."""
    with open(os.path.join(source_dir, "docs", tool + ".md")) as f:
        text = f.read()
    m = re.search(r"^## Options\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert m, "docs/%s.md has no '## Options' section" % tool
    return re.findall(r"^\| `--([a-z0-9-]+)", m.group(1), re.M), text


def test_rtmem_lists_every_tool(rtmem):
    r = run(rtmem, "--help")
    assert r.returncode == 0, r
    listed = re.findall(r"^  ([a-z]+) ", r.stdout, re.M)
    assert listed == TOOLS + OTHER_COMMANDS


@pytest.mark.parametrize("tool", TOOLS)
def test_help_is_a_synopsis(rtmem, source_dir, tool):
    options, text = help_options(rtmem, tool)
    lines = text.splitlines()
    assert lines[0] == "usage: rtmem %s [options]%s" % (tool, COMMAND_USAGE.get(tool, ""))
    assert all(len(line) <= 80 for line in lines), [l for l in lines if len(l) > 80]
    assert len(lines) <= len(options) + 16, "more than a synopsis:\n" + text
    manual = lines[-1]
    assert manual.startswith("manual: ")
    path = manual[len("manual: "):]
    # In a build tree the manual is the source tree's page.
    assert os.path.samefile(path, os.path.join(source_dir, "docs", tool + ".md"))


def man_page(rtmem, name):
    """The man page the build made (tools/man/NAME.1, beside the binary),
    as groff renders it: (its text, groff's warnings)."""
    if not shutil.which("groff"):
        pytest.skip("groff is not installed")
    page = os.path.join(os.path.dirname(str(rtmem)), "man", name + ".1")
    assert os.path.exists(page), "no man page %s (scripts/manpage.py makes it)" % page
    r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-P-cbou", page], capture_output=True,
                       text=True, env=dict(os.environ, MANWIDTH="80"))
    assert r.returncode == 0, r.stderr
    return r.stdout, r.stderr


@pytest.mark.parametrize("tool", TOOLS + ["report"])
def test_each_tool_has_a_man_page_with_every_option(rtmem, tool):
    text, warnings = man_page(rtmem, "rtmem-" + tool)
    assert warnings == "", warnings
    assert re.search(r"^NAME\n\s+rtmem-%s\s+-\s+\S" % tool, text, re.M), text[:300]
    if tool != "report":  # (report's options are its own: rtmem report --help)
        assert re.search(r"^OPTIONS$", text, re.M), "no OPTIONS section"
        options, _ = help_options(rtmem, tool)
        flat = re.sub(r"\s+", " ", text)  # an option may be cut at a line's end: join
        missing = [o for o in options if "--" + o not in flat]
        assert missing == [], "options of --help not in the man page: %s" % missing


def test_rtmem_has_a_man_page_that_lists_the_tools(rtmem):
    text, warnings = man_page(rtmem, "rtmem")
    assert warnings == "", warnings
    for tool in TOOLS:
        assert "rtmem " + tool in text and "rtmem-%s(1)" % tool in text, tool


@pytest.mark.parametrize("tool", TOOLS)
def test_help_and_manual_have_the_same_options(rtmem, source_dir, tool):
    in_help, _ = help_options(rtmem, tool)
    in_manual, _ = manual_options(source_dir, tool)
    assert len(in_manual) == len(set(in_manual)), "an option with two rows: %s" % in_manual
    assert set(in_help) - set(in_manual) == set(), "in --help, not in docs/%s.md" % tool
    assert set(in_manual) - set(in_help) == set(), "in docs/%s.md, not in --help" % tool


@pytest.mark.parametrize("tool", TOOLS)
def test_shared_options_speak_with_the_kits_words(rtmem, source_dir, tool):
    words = kit_words(source_dir)
    assert {"cpu", "prio", "no-rt", "json", "quick", "duration", "sizes", "seed", "kinds",
            "plugin"} <= set(words)
    options, _ = help_options(rtmem, tool)
    shared = [name for name in options if name in words]
    for name in shared:
        # (the tool's default may close the kit's parenthesis: "...; default 60)")
        assert options[name].startswith(words[name].rstrip(")")), (name, options[name])
    # ... and the manual points to where they are described.
    _, manual = manual_options(source_dir, tool)
    if shared:
        assert "tools.md#options-every-tool-shares" in manual


def test_tools_md_describes_every_shared_option(source_dir):
    with open(os.path.join(source_dir, "docs", "tools.md")) as f:
        text = f.read()
    m = re.search(r"^## Options every tool shares\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert m
    rows = re.findall(r"^\| `--([a-z0-9-]+)", m.group(1), re.M)
    assert sorted(rows) == sorted(kit_words(source_dir))
    for tool in TOOLS:
        assert "| `%s` |" % tool in text, "docs/tools.md's table misses %s" % tool


def test_readme_links_every_manual_and_only_pages_that_exist(source_dir):
    with open(os.path.join(source_dir, "README.md")) as f:
        readme = f.read()
    linked = set(re.findall(r"\]\((docs/[A-Za-z0-9_-]+\.md)[#)]", readme))
    pages = {"docs/" + name for name in os.listdir(os.path.join(source_dir, "docs"))
             if name.endswith(".md")}
    assert linked - pages == set(), "the README links pages that do not exist"
    assert pages - linked == set(), "pages the README does not link"
    for tool in TOOLS:
        assert "docs/%s.md" % tool in linked
