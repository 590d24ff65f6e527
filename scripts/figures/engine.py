"""The figures' machinery: markers in the Markdown, runs to read, rules that
turn runs into text, and the number formats the pages use.

A figure in README.md or docs/*.md that a run measures sits between two
HTML comments, invisible on the rendered page:

    <!--fig:bench.shared_ratio-->3.00–3.01×<!--/fig-->

The name picks a rule (a function registered with @rule); the text between
the comments is what the rule made from the last runs and is replaced when
figures are regenerated. A rule may make a whole table: its markers then
stand on lines of their own around it.
"""
import datetime
import glob
import json
import os
import re
import statistics

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The pages whose figures are kept: the README and every docs/ page.
PAGES = ("README.md", "docs/*.md")

MARK = re.compile(r"<!--fig:([a-z0-9_.-]+)-->(.*?)<!--/fig-->", re.S)
OPEN = re.compile(r"<!--fig:([^>]*?)-->")
CLOSE = "<!--/fig-->"

# Each source a rule reads: the file a run leaves in its directory and the
# command that makes it (what `collect` runs; make bench makes most).
SOURCES = {
    "bench": ("bench.json", "make bench (rtmem bench)"),
    "memcheck": ("memcheck.json", "make bench (rtmem memcheck)"),
    "wcet": ("wcet.json", "make bench (rtmem wcet)"),
    "latency": ("latency.json", "make bench (rtmem latency)"),
    "latency-noise": ("latency-noise.json", "make bench (rtmem latency --noise)"),
    "latency-pressure": ("latency-pressure.json", "make bench (rtmem latency --pressure ...)"),
    "latency-sweep": ("latency-sweep.json", "make bench (rtmem latency --sweep --quick)"),
    "pressure": ("pressure.json", "make bench (rtmem pressure)"),
    "stride": ("stride.json", "make bench (rtmem stride)"),
    "bw": ("bw.json", "make bench (rtmem bw)"),
    "shm": ("shm.json", "make bench (rtmem shm --java)"),
    "latency-default-system": ("latency-default-system.json",
                               "rtmem latency --default-system (collect)"),
    "stride-first-touch": ("stride-first-touch.json", "rtmem stride --first-touch (collect)"),
}

# What `collect` runs after make bench in each run directory: the studies
# the pages quote that make bench does not make. {rtmem} is the binary,
# {out} the source's file.
STUDIES = {
    "latency-default-system": ["{rtmem}", "latency", "--default-system", "--json", "{out}"],
    "stride-first-touch": ["{rtmem}", "stride", "--first-touch", "--json", "{out}"],
}

RUN_STAMP = "figures-run.json"


class Missing(Exception):
    """A rule's source is in none of the runs."""


class Runs:
    """The runs figures are made from: one directory per run, each holding
    result files by the names of SOURCES (a make bench results directory is
    one run)."""

    def __init__(self, dirs):
        self.dirs = list(dirs)
        self._cache = {}

    def all(self, source):
        """Every run's JSON of SOURCE, in run order (the runs that lack it
        left out); Missing when none has it."""
        if source not in self._cache:
            name = SOURCES[source][0]
            docs = []
            for d in self.dirs:
                p = os.path.join(d, name)
                if os.path.exists(p):
                    with open(p, encoding="utf-8") as f:
                        docs.append(json.load(f))
            self._cache[source] = docs
        if not self._cache[source]:
            raise Missing(source)
        return self._cache[source]

    def text(self, source):
        """The first run's report of SOURCE as its tool printed it: the
        .txt beside its JSON (make bench keeps both)."""
        self.one(source)
        for d in self.dirs:
            p = os.path.join(d, SOURCES[source][0][:-len(".json")] + ".txt")
            if os.path.exists(p):
                with open(p, encoding="utf-8") as f:
                    return f.read()
        raise Missing(source, SOURCES[source][0][:-len(".json")] + ".txt")

    def one(self, source):
        """The first run's JSON of SOURCE: for tables that show one run."""
        return self.all(source)[0]

    def stamps(self):
        """Each run's stamp (date, commit), from collect's stamp file or,
        for a plain results directory, the date of its files."""
        out = []
        for d in self.dirs:
            p = os.path.join(d, RUN_STAMP)
            if os.path.exists(p):
                with open(p, encoding="utf-8") as f:
                    out.append(json.load(f))
                continue
            times = [os.path.getmtime(f) for f in glob.glob(os.path.join(d, "*.json"))]
            if times:
                day = datetime.datetime.fromtimestamp(max(times), datetime.timezone.utc)
                out.append({"date": day.strftime("%Y-%m-%d"), "commit": None})
        return out


RULES = {}


class Rule:
    def __init__(self, name, sources, fn, what):
        self.name, self.sources, self.fn, self.what = name, sources, fn, what


def rule(name, *sources, what=""):
    """Registers fn(runs) -> text as the rule of the figures named NAME,
    made from SOURCES (keys of SOURCES)."""
    for s in sources:
        if s not in SOURCES:
            raise ValueError(f"rule {name}: unknown source {s}")

    def add(fn):
        if name in RULES:
            raise ValueError(f"rule {name} registered twice")
        RULES[name] = Rule(name, sources, fn, what or (fn.__doc__ or "").strip())
        return fn
    return add


# Number formats. A figure over several runs is shown as its range ("a–b",
# or one value when all runs print the same) or, in tables, as the median
# with the range in brackets; ranges sort numerically.

def fmt(x, nd):
    return f"{x:.{nd}f}"


def group(x):
    """An integer with a thin space between thousands, as the pages write
    large counts (20 000)."""
    return f"{int(round(x)):,}".replace(",", " ")


def span(values, nd=1, unit=""):
    texts = sorted({fmt(v, nd) for v in values}, key=float)
    if len(texts) == 1:
        return texts[0] + unit
    return f"{texts[0]}–{texts[-1]}{unit}"


def med_span(values, nd=1, unit=""):
    """The median, and the range in brackets when the runs differ."""
    m = fmt(statistics.median(values), nd)
    texts = sorted({fmt(v, nd) for v in values}, key=float)
    if len(texts) == 1:
        return m + unit
    return f"{m}{unit} ({texts[0]}–{texts[-1]}{unit})"


def list_and(values, nd=2, unit=""):
    """Each run's figure, in run order: "3.01, 3.01 and 3.00×"."""
    t = [fmt(v, nd) for v in values]
    if len(t) == 1:
        return t[0] + unit
    return ", ".join(t[:-1]) + " and " + t[-1] + unit


WORDS = ["no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]


def count_word(n):
    return WORDS[n] if n < len(WORDS) else str(n)


def table(header, rows, align=None):
    """A Markdown table: HEADER a list of cells, ROWS lists of cells, ALIGN
    per column 'l' or 'r' (default: first left, the rest right)."""
    align = align or ["l"] + ["r"] * (len(header) - 1)
    rule_row = ["---" if a == "l" else "---:" for a in align]
    lines = ["| " + " | ".join(r) + " |" for r in [header, rule_row] + rows]
    return "\n" + "\n".join(lines) + "\n"


def by_name(items, name, key="name"):
    for it in items:
        if it.get(key) == name:
            return it
    raise KeyError(f"no entry named {name}")


# The pages and their markers.

def pages(root):
    out = []
    for pat in PAGES:
        out += sorted(glob.glob(os.path.join(root, pat)))
    return out


FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.S | re.M)


def fenced(text):
    """The spans of TEXT's fenced code blocks: a marker shown in one is an
    example, not a figure."""
    return [(m.start(), m.end()) for m in FENCE.finditer(text)]


def outside(spans, pos):
    return not any(a <= pos < b for a, b in spans)


def markers(text):
    """The markers of TEXT outside code blocks."""
    code = fenced(text)
    return [m for m in MARK.finditer(text) if outside(code, m.start())]


def lint(root):
    """Every problem with the markers of ROOT's pages: (page, line, text)."""
    problems = []
    used = set()
    for page in pages(root):
        rel = os.path.relpath(page, root)
        with open(page, encoding="utf-8") as f:
            text = f.read()
        code = fenced(text)
        found = markers(text)
        spans = [(m.start(), m.end()) for m in found]
        for m in found:
            line = text.count("\n", 0, m.start()) + 1
            name, body = m.group(1), m.group(2)
            used.add(name)
            if name not in RULES:
                problems.append((rel, line, f"no rule named {name}"))
            if "<!--fig:" in body:
                problems.append((rel, line, f"{name}: another marker opens inside it"))
        # Openings and closings outside a well-formed pair.
        for m in OPEN.finditer(text):
            if outside(code, m.start()) and not any(a == m.start() for a, _ in spans):
                line = text.count("\n", 0, m.start()) + 1
                problems.append((rel, line, f"marker <!--fig:{m.group(1)}--> is not closed "
                                 "or its name is not [a-z0-9_.-]"))
        pos = 0
        while True:
            i = text.find(CLOSE, pos)
            if i < 0:
                break
            if outside(code, i) and not any(b == i + len(CLOSE) for _, b in spans):
                line = text.count("\n", 0, i) + 1
                problems.append((rel, line, "<!--/fig--> closes nothing"))
            pos = i + 1
    for name in sorted(set(RULES) - used):
        problems.append(("(rules)", 0, f"rule {name} has no marker on any page"))
    return problems


def render(runs):
    """Every rule's text from RUNS: {name: text}, and {name: why} for the
    rules that could not be made (a source missing, or an error)."""
    made, failed = {}, {}
    for name, r in sorted(RULES.items()):
        try:
            made[name] = r.fn(runs)
        except Missing as e:
            source = e.args[0]
            file = e.args[1] if len(e.args) > 1 else SOURCES[source][0]
            failed[name] = f"not in these runs: {file} ({SOURCES[source][1]})"
        except (KeyError, IndexError, TypeError, ValueError, ZeroDivisionError,
                statistics.StatisticsError) as e:
            failed[name] = f"error: {type(e).__name__}: {e}"
    return made, failed


def substitute(text, made):
    """TEXT with each marker's body replaced by its rule's new text (the
    markers whose rule made nothing keep theirs); and the list of
    (name, old, new) that changed."""
    changes = []
    code = fenced(text)

    def one(m):
        name, old = m.group(1), m.group(2)
        if name not in made or not outside(code, m.start()):
            return m.group(0)
        new = made[name]
        if new != old:
            changes.append((name, old, new))
        return f"<!--fig:{name}-->{new}{CLOSE}"
    return MARK.sub(one, text), changes
