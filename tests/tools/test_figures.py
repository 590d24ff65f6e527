"""scripts/figures: the markers of README.md and docs/ and their rules.

Every marker has a rule and every rule a marker; every rule makes its
figure from a complete run (the report's fixture result files and the two
studies' in tests/fixtures/figures); update rewrites the markers' text and
nothing else, through a temporary file, and again changes nothing; several
runs become ranges; a missing source leaves its figures and says so;
collect removes the run it was making when it fails or is interrupted,
and reaps what it ran.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(ROOT, "scripts", "figures")
REPORT_FIXTURES = os.path.join(ROOT, "tests", "fixtures", "report")
STUDY_FIXTURES = os.path.join(ROOT, "tests", "fixtures", "figures")
MARK = re.compile(r"(<!--fig:[a-z0-9_.-]+-->)(.*?)(<!--/fig-->)", re.S)


def figures(*args, env=None, timeout=120):
    r = subprocess.run([sys.executable, SCRIPT] + list(args), capture_output=True, text=True,
                       env=env, timeout=timeout)
    return r.returncode, r.stdout + r.stderr


def make_run(d):
    """A complete run in D: every result file a rule reads."""
    os.makedirs(d, exist_ok=True)
    for src in (REPORT_FIXTURES, STUDY_FIXTURES):
        for n in os.listdir(src):
            if n.endswith((".json", ".txt")):
                shutil.copy(os.path.join(src, n), d)
    return d


def make_tree(dst):
    """A copy of this tree's pages, to update without touching the tree."""
    os.makedirs(os.path.join(dst, "docs"))
    shutil.copy(os.path.join(ROOT, "README.md"), dst)
    for n in os.listdir(os.path.join(ROOT, "docs")):
        if n.endswith(".md"):
            shutil.copy(os.path.join(ROOT, "docs", n), os.path.join(dst, "docs"))
    return dst


def pages(tree):
    out = {"README.md": open(os.path.join(tree, "README.md"), encoding="utf-8").read()}
    for n in sorted(os.listdir(os.path.join(tree, "docs"))):
        if n.endswith(".md"):
            out["docs/" + n] = open(os.path.join(tree, "docs", n), encoding="utf-8").read()
    return out


def bodies_out(text):
    return MARK.sub(lambda m: m.group(1) + m.group(3), text)


def marker_text(text, name):
    m = re.search(r"<!--fig:" + re.escape(name) + r"-->(.*?)<!--/fig-->", text, re.S)
    assert m, name
    return m.group(1)


def shared_ratio(run):
    with open(os.path.join(run, "bench.json")) as f:
        d = json.load(f)
    return next(x for x in d["threads"]["uncontended"]["locks"]
                if x["lock"] == "shared")["call_locked_over_unlocked"]


# ---- the tree's markers -----------------------------------------------------------------

def test_every_marker_has_a_rule_and_every_rule_a_marker():
    code, out = figures("check")
    assert code == 0, out
    n = int(re.search(r"figures: (\d+) markers", out).group(1))
    assert n >= 50, out


def test_every_rule_makes_its_figure_from_a_complete_run(tmp_path):
    run = make_run(str(tmp_path / "run"))
    code, out = figures("update", "--dry-run", run)
    assert code == 0, out
    assert ", 0 not refreshed" in out, out


# ---- update -------------------------------------------------------------------------------

def test_update_rewrites_the_markers_and_nothing_else(tmp_path):
    tree = make_tree(str(tmp_path / "tree"))
    before = pages(tree)
    run = make_run(str(tmp_path / "run"))
    code, out = figures("--root", tree, "update", run)
    assert code == 0, out
    after = pages(tree)
    assert sorted(after) == sorted(before)
    assert any(after[p] != before[p] for p in after), "nothing changed: " + out
    for p in after:
        assert bodies_out(after[p]) == bodies_out(before[p]), p
    assert not [n for n in os.listdir(os.path.join(tree, "docs")) if n.startswith(".figures-")]
    assert marker_text(after["README.md"], "bench.shared_ratio") == "%.2f×" % shared_ratio(run)
    # Again from the same run: nothing to change.
    code, out = figures("--root", tree, "update", run)
    assert code == 0 and "0 figures changed" in out, out
    assert pages(tree) == after


def test_dry_run_writes_nothing(tmp_path):
    tree = make_tree(str(tmp_path / "tree"))
    before = pages(tree)
    code, out = figures("--root", tree, "update", "--dry-run", make_run(str(tmp_path / "run")))
    assert code == 0 and "would change" in out, out
    assert pages(tree) == before


def test_several_runs_give_ranges(tmp_path):
    tree = make_tree(str(tmp_path / "tree"))
    one = make_run(str(tmp_path / "all" / "run-1"))
    two = make_run(str(tmp_path / "all" / "run-2"))
    with open(os.path.join(two, "bench.json")) as f:
        d = json.load(f)
    lock = next(x for x in d["threads"]["uncontended"]["locks"] if x["lock"] == "shared")
    lock["call_locked_over_unlocked"] = 3.456
    with open(os.path.join(two, "bench.json"), "w") as f:
        json.dump(d, f)
    # The collect directory stands for its run-K directories.
    code, out = figures("--root", tree, "update", str(tmp_path / "all"))
    assert code == 0 and "2 run(s)" in out, out
    text = "\n".join(pages(tree).values())  # README.md first: the markers may be on any page
    lo = "%.2f" % shared_ratio(one)
    assert marker_text(text, "bench.shared_ratio") == lo + "–3.46×"
    assert marker_text(text, "bench.shared_ratio_list") == lo + " and 3.46×"
    assert marker_text(text, "runs.count") == "two runs"


def test_a_source_in_no_run_leaves_its_figures_and_says_so(tmp_path):
    tree = make_tree(str(tmp_path / "tree"))
    before = pages(tree)
    run = make_run(str(tmp_path / "run"))
    os.unlink(os.path.join(run, "bench.json"))
    code, out = figures("--root", tree, "update", run)
    assert code == 1, out
    assert "bench.shared_ratio not refreshed: not in these runs: bench.json" in out, out
    after = pages(tree)
    assert marker_text(after["README.md"], "bench.shared_ratio") == \
        marker_text(before["README.md"], "bench.shared_ratio")


def test_update_of_a_path_that_is_no_directory_is_an_error(tmp_path):
    code, out = figures("update", str(tmp_path / "none"))
    assert code != 0 and "not a directory" in out, out


# ---- check ----------------------------------------------------------------------------------

@pytest.mark.parametrize("bad, why", [
    ("<!--fig:no.such.rule-->1<!--/fig-->", "no rule named no.such.rule"),
    ("<!--fig:bench.floor-->1", "is not closed"),
    ("1<!--/fig-->", "closes nothing"),
    ("<!--fig:Bad Name-->1<!--/fig-->", "is not closed or its name"),
])
def test_check_names_the_page_and_line_of_a_bad_marker(tmp_path, bad, why):
    tree = make_tree(str(tmp_path / "tree"))
    with open(os.path.join(tree, "docs", "bench.md"), "a", encoding="utf-8") as f:
        f.write("\n" + bad + "\n")
    code, out = figures("--root", tree, "check")
    assert code == 1 and why in out, out
    assert re.search(r"docs/bench\.md:\d+: ", out), out
    # update refuses to write pages whose markers are wrong.
    before = pages(tree)
    code, out = figures("--root", tree, "update", make_run(str(tmp_path / "run")))
    assert code == 1 and "nothing written" in out, out
    assert pages(tree) == before


def test_check_finds_a_rule_without_a_marker(tmp_path):
    tree = make_tree(str(tmp_path / "tree"))
    path = os.path.join(tree, "README.md")
    text = open(path, encoding="utf-8").read()
    with open(path, "w", encoding="utf-8") as f:
        f.write(MARK.sub(lambda m: m.group(2) if "runs.date" in m.group(1) else m.group(0), text))
    for n in os.listdir(os.path.join(tree, "docs")):
        p = os.path.join(tree, "docs", n)
        t = open(p, encoding="utf-8").read()
        with open(p, "w", encoding="utf-8") as f:
            f.write(MARK.sub(lambda m: m.group(2) if "runs.date" in m.group(1) else m.group(0), t))
    code, out = figures("--root", tree, "check")
    assert code == 1 and "rule runs.date has no marker" in out, out


# ---- collect ---------------------------------------------------------------------------------

# A stand-in for make bench and the studies ($1: the run directory, or a
# study's file): copies the fixtures, or does what the test says.
STAND_IN = """
if [ -d "$1" ]; then
  echo $$ > "$FIG_PIDS/bench.$$"
  case "$FIG_MODE" in
    fail) echo partial > "$1/bench.json"; exit 2 ;;
    hang) echo started > "$FIG_PIDS/started"; exec sleep 60 ;;
  esac
  for f in "$FIG_RUN"/*.json "$FIG_RUN"/*.txt; do cp "$f" "$1/"; done
  rm -f "$1/latency-default-system.json" "$1/stride-first-touch.json"
else
  cp "$FIG_RUN/$(basename "$1")" "$1"
fi
"""


def collect_env(tmp_path, mode=""):
    pids = tmp_path / "pids"
    pids.mkdir()
    env = dict(os.environ, RTMEM_FIGURES_BENCH=STAND_IN, FIG_MODE=mode, FIG_PIDS=str(pids),
               FIG_RUN=make_run(str(tmp_path / "src")))
    return env, pids


def test_collect_makes_runs_with_their_stamp(tmp_path):
    env, _ = collect_env(tmp_path)
    out_dir = tmp_path / "out"
    code, out = figures("collect", "--runs", "2", "--out", str(out_dir), env=env)
    assert code == 0, out
    assert sorted(os.listdir(out_dir)) == ["run-1", "run-2"]
    for k in (1, 2):
        d = out_dir / f"run-{k}"
        assert (d / "latency-default-system.json").exists() and (d / "bench.json").exists()
        stamp = json.loads((d / "figures-run.json").read_text())
        assert re.fullmatch(r"\d{4}-\d\d-\d\d", stamp["date"]) and stamp["bench_status"] == 0
    code, out = figures("--root", make_tree(str(tmp_path / "tree")), "update", str(out_dir), env=env)
    assert code == 0 and "2 run(s)" in out, out


def test_collect_never_writes_into_a_directory_that_is_not_empty(tmp_path):
    env, _ = collect_env(tmp_path)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    (out_dir / "mine").write_text("keep")
    code, out = figures("collect", "--out", str(out_dir), env=env)
    assert code == 2 and "not empty" in out, out
    assert os.listdir(out_dir) == ["mine"] and (out_dir / "mine").read_text() == "keep"


def test_a_failed_run_is_removed(tmp_path):
    env, _ = collect_env(tmp_path, "fail")
    out_dir = tmp_path / "out"
    code, out = figures("collect", "--runs", "2", "--out", str(out_dir), env=env)
    assert code == 1 and "removed it" in out, out
    assert not out_dir.exists(), "collect left the run it made"


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(")")[-1].split()[0] != "Z"


def test_an_interrupted_collect_removes_its_run_and_reaps_it(tmp_path):
    env, pids = collect_env(tmp_path, "hang")
    out_dir = tmp_path / "out"
    p = subprocess.Popen([sys.executable, SCRIPT, "collect", "--out", str(out_dir)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 30
    while not (pids / "started").exists():
        assert time.monotonic() < deadline and p.poll() is None, "the stand-in never started"
        time.sleep(0.05)
    child = int(next(n for n in os.listdir(pids) if n.startswith("bench.")).split(".")[1])
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=30)
    assert p.returncode == 130 and "interrupted" in out, out
    assert not out_dir.exists()
    assert not alive(child), "the run's process outlived collect"


def test_a_marker_in_a_code_block_is_an_example_left_alone(tmp_path):
    tree = make_tree(str(tmp_path / "tree"))
    example = "```\n<!--fig:no.such.rule-->x<!--/fig--> <!--fig:bench.floor-->1.0<!--/fig-->\n```\n"
    with open(os.path.join(tree, "docs", "bench.md"), "a", encoding="utf-8") as f:
        f.write("\n" + example)
    code, out = figures("--root", tree, "check")
    assert code == 0, out
    code, out = figures("--root", tree, "update", make_run(str(tmp_path / "run")))
    assert code == 0, out
    assert pages(tree)["docs/bench.md"].endswith(example)
