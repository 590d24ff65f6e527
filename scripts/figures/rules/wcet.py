"""rtmem wcet's figures: docs/wcet.md (its run's two tables, the prose that
reads them) and the README's wcet bullet.

The tables show one run, as the page says. The prose figures are each
scenario's median over the runs (one run: that run's), rounded as the page
writes them: times to two significant digits, ranges as "A to B" over the
scenarios the sentence names."""
import math
import statistics

from engine import fmt, group, rule, table

SYSCALL = "system call"
ONCE = "O(n) once"
TLSF_O1 = "O(1)"
PAGE_KINDS = ("heapmem", "xnheap")


# Reading the runs.

def scenarios(doc, kind=None):
    """DOC's scenarios (noop left out), of KIND if given, in report order."""
    return [s for s in doc["scenarios"]
            if s["kind"] != "noop" and (kind is None or s["kind"] == kind)]


def find(doc, kind, sid):
    for s in doc["scenarios"]:
        if s["kind"] == kind and s["id"] == sid:
            return s
    raise KeyError(f"no wcet scenario {kind} {sid}")


def counted(s, key):
    c = s.get("counted")
    if not c:
        raise ValueError(f"{s['kind']} {s['id']} not counted: {s.get('counted_why_not')}")
    return c[key]


def warm(s):
    return s["warm"]["p50_ns"]


def cold(s):
    return s["cold"]["p50_ns"]


def med(runs, kind, sid, get):
    """GET of scenario KIND/SID, median over the runs."""
    return statistics.median(get(find(d, kind, sid)) for d in runs.all("wcet"))


def meds(runs, pick, get):
    """GET of every scenario PICK(s) selects, each its median over the runs."""
    first = runs.one("wcet")
    return [med(runs, s["kind"], s["id"], get) for s in scenarios(first) if pick(s)]


def is_tlsf_o1(s):
    return s["kind"] == "tlsf" and s["bound"] == TLSF_O1


def is_page_op(s):
    """A page-heap scenario, the once-only first use left out."""
    return s["kind"] in PAGE_KINDS and s["bound"] != ONCE


# Formats.

def sig2(x):
    """X to two significant digits: 351 -> 350, 2.173 -> 2.2, 20.96 -> 21."""
    if x <= 0:
        return fmt(x, 0)
    e = math.floor(math.log10(x))
    r = round(x, 1 - e)
    if r >= 10 ** (e + 1):
        e += 1
        r = round(x, 1 - e)
    return fmt(r, max(0, 1 - e))


def to_range(values, f, unit=""):
    """'A to B' + UNIT from the smallest and largest of VALUES, each shown by
    F; one figure when both show alike."""
    lo, hi = f(min(values)), f(max(values))
    return (lo if lo == hi else f"{lo} to {hi}") + unit


def integer(x):
    return fmt(x, 0)


def us(ns):
    return sig2(ns / 1000)


def lines_word(n):
    return {0: "no line", 1: "one line"}.get(n, f"{n} lines")


# The run's header and the harness.

@rule("wcet.seconds", "wcet", what="how long rtmem wcet ran, s, median over the runs")
def seconds(runs):
    return fmt(statistics.median(d["seconds"] for d in runs.all("wcet")), 0) + " s"


@rule("wcet.timer_overhead", "wcet", what="the timer's own overhead (p50), ns, median over the runs")
def timer_overhead(runs):
    return fmt(statistics.median(d["timer"]["overhead_p50_ns"] for d in runs.all("wcet")), 0) + " ns"


@rule("wcet.system", "wcet", what="the run's kernel, glibc and compiler: 'Linux 6.18, glibc 2.36, gcc 12.2'")
def system(runs):
    m = runs.one("wcet")["machine"]
    kernel = ".".join(m["kernel_release"].split("-")[0].split(".")[:2])
    name, version = m["compiler"].split(" ", 1)
    return f"{m['sysname']} {kernel}, glibc {m['libc']}, {name} {'.'.join(version.split('.')[:2])}"


@rule("wcet.valgrind", "wcet", what="the valgrind that counted: 'valgrind 3.19'")
def valgrind(runs):
    v = runs.one("wcet")["counting"]["valgrind"]
    if not v:
        raise ValueError("the run was not counted under valgrind")
    return "valgrind " + ".".join(v.split("-")[-1].split(".")[:2])


@rule("wcet.noop", "wcet",
      what="the noop row's instructions and lines, with the compiler's major version (one run)")
def noop(runs):
    d = runs.one("wcet")
    s = find(d, "noop", "noop")
    name, version = d["machine"]["compiler"].split(" ", 1)
    return (f"{counted(s, 'instructions')} instructions and "
            f"{lines_word(counted(s, 'data_lines'))} with {name} {version.split('.')[0]}")


# The tables (one run).

def bound_text(s):
    return "a system call" if s["bound"] == SYSCALL else s["bound"]


def count_cell(s, key):
    return str(counted(s, key)) if s.get("counted") else "—"


@rule("wcet.table", "wcet", what="every scenario's counts and times, the page's main table (one run)")
def main_table(runs):
    rows = []
    for s in scenarios(runs.one("wcet")):
        rows.append([s["kind"], s["id"]]
                    + [count_cell(s, k) for k in ("instructions", "branches", "data_lines")]
                    + [integer(s[t][p]) for t in ("warm", "cold") for p in ("p50_ns", "p99_ns")]
                    + [bound_text(s)])
    return table(["kind", "scenario", "instructions", "branches", "data lines", "warm p50",
                  "warm p99", "cold p50", "cold p99", "bound in the header"], rows,
                 ["l", "l"] + ["r"] * 7 + ["l"])


# The worst paths' table: (kind, scenario, label, the header's bound when it
# is not the scenario's own).
WORST = [
    ("tlsf", "free-merge-both", "free merging both neighbours (`free-merge-both`)", None),
    ("tlsf", "free-merge-last-pool",
     "the same in the pool found last of 8 (`free-merge-last-pool`)", None),
    ("tlsf", "realloc-move", "realloc that moves 4 KiB (`realloc-move`)", None),
    ("heapmem", "bucket-page-give",
     "bucket page given back, merging at the trees' bottom (`bucket-page-give`)", None),
    ("heapmem", "bucket-page-give-last-pool", "the same in the pool found last of 8", None),
    ("heapmem", "run-alloc-first-use",
     "first use of 487 pages, once in a heap's life (`run-alloc-first-use`)", None),
    ("xnheap", "bucket-page-take", "bucket page taken (`bucket-page-take`)", None),
    ("xnheap", "bucket-page-give-last-pool",
     "bucket page given back in the pool found last of 8", None),
    ("xvheap", "free-page-give",
     "free that empties its page and gives it back, in the region found last of 8 "
     "(`free-page-give`)", None),
    ("zsheap", "free-zspage-give",
     "free that gives its zspage back, joined with the runs around it, in the region found "
     "last of 8 (`free-zspage-give`)", None),
    ("glibc", "malloc-consolidate",
     "malloc consolidating 193 fast-bin chunks (`malloc-consolidate`)",
     "none: grows with the fast bins"),
    ("glibc", "malloc-mmap", "malloc above the mmap threshold (`malloc-mmap`)", "none"),
]


def worst_time(kind, ns):
    """ns for the rtmem kinds; µs for glibc's (a decimal below 100 µs)."""
    if kind != "glibc":
        return integer(ns) + " ns"
    return fmt(ns / 1000, 1 if ns < 100000 else 0) + " µs"


@rule("wcet.worst_table", "wcet", what="the worst paths of each kind beside their bounds (one run)")
def worst_table(runs):
    d = runs.one("wcet")
    rows = []
    for kind, sid, label, bound in WORST:
        s = find(d, kind, sid)
        instr = str(counted(s, "instructions"))
        if s["bound"] == SYSCALL:
            instr += " + a system call"
        rows.append([kind, label, instr, str(counted(s, "data_lines")),
                     worst_time(kind, warm(s)), worst_time(kind, cold(s)), bound or s["bound"]])
    return table(["kind", "worst path (scenario)", "instructions", "data lines", "warm p50",
                  "cold p50", "header's bound"], rows, ["l", "l", "r", "r", "r", "r", "l"])


# The prose: TLSF's O(1) operations and the page heaps'.

def instructions(s):
    return counted(s, "instructions")


def lines(s):
    return counted(s, "data_lines")


@rule("wcet.tlsf_o1_instructions", "wcet",
      what="instructions of TLSF's O(1) scenarios, smallest to largest: '243 to 457'")
def tlsf_o1_instructions(runs):
    return to_range(meds(runs, is_tlsf_o1, instructions), integer)


@rule("wcet.tlsf_o1_lines", "wcet", what="data lines of TLSF's O(1) scenarios: '11 to 16'")
def tlsf_o1_lines(runs):
    return to_range(meds(runs, is_tlsf_o1, lines), integer)


@rule("wcet.tlsf_o1_warm", "wcet", what="warm p50 of TLSF's O(1) scenarios: '60 to 80 ns'")
def tlsf_o1_warm(runs):
    return to_range(meds(runs, is_tlsf_o1, warm), sig2, " ns")


@rule("wcet.tlsf_o1_cold", "wcet", what="cold p50 of TLSF's O(1) scenarios: '350 to 750 ns'")
def tlsf_o1_cold(runs):
    return to_range(meds(runs, is_tlsf_o1, cold), sig2, " ns")


@rule("wcet.page_lines", "wcet",
      what="data lines of the page heaps' scenarios (first use left out): '21 to 65'")
def page_lines(runs):
    return to_range(meds(runs, is_page_op, lines), integer)


@rule("wcet.page_warm", "wcet", what="warm p50 of the page heaps' scenarios: '150 to 450 ns'")
def page_warm(runs):
    return to_range(meds(runs, is_page_op, warm), sig2, " ns")


@rule("wcet.page_cold", "wcet", what="cold p50 of the page heaps' scenarios: '2.2 to 3.2 µs'")
def page_cold(runs):
    return to_range(meds(runs, is_page_op, lambda s: cold(s) / 1000), sig2, " µs")


@rule("wcet.cold_over_warm", "wcet",
      what="cold p50 over warm p50 of TLSF's O(1) and the page heaps' scenarios: '4 to 11 times'")
def cold_over_warm(runs):
    v = meds(runs, lambda s: is_tlsf_o1(s) or is_page_op(s), lambda s: cold(s) / warm(s))
    return to_range(v, integer, " times")


# TLSF's worst free, its realloc, the pool found last.

def tlsf(runs, sid, get):
    return med(runs, "tlsf", sid, get)


@rule("wcet.tlsf_free_instructions", "wcet", what="instructions of TLSF's free-merge-both")
def tlsf_free_instructions(runs):
    return integer(tlsf(runs, "free-merge-both", instructions))


@rule("wcet.tlsf_free_lines", "wcet", what="data lines of TLSF's free-merge-both")
def tlsf_free_lines(runs):
    return integer(tlsf(runs, "free-merge-both", lines))


@rule("wcet.tlsf_free_warm", "wcet", what="warm p50 of TLSF's free-merge-both: '80 ns'")
def tlsf_free_warm(runs):
    return sig2(tlsf(runs, "free-merge-both", warm)) + " ns"


@rule("wcet.tlsf_free_cold_us", "wcet", what="cold p50 of TLSF's free-merge-both, µs: '0.6 µs'")
def tlsf_free_cold_us(runs):
    return fmt(tlsf(runs, "free-merge-both", cold) / 1000, 1) + " µs"


@rule("wcet.tlsf_realloc_lines", "wcet", what="data lines of TLSF's realloc-move")
def tlsf_realloc_lines(runs):
    return integer(tlsf(runs, "realloc-move", lines))


def last_pool_extra(runs, get):
    return tlsf(runs, "free-merge-last-pool", get) - tlsf(runs, "free-merge-both", get)


@rule("wcet.tlsf_last_pool_instructions", "wcet",
      what="instructions free-merge-last-pool runs more than free-merge-both")
def tlsf_last_pool_instructions(runs):
    return integer(last_pool_extra(runs, instructions))


@rule("wcet.tlsf_last_pool_per_pool", "wcet",
      what="those more instructions per pool walked (the pools before the last)")
def tlsf_last_pool_per_pool(runs):
    pools = find(runs.one("wcet"), "tlsf", "free-merge-last-pool")["state"]["pools"]
    return integer(last_pool_extra(runs, instructions) / (pools - 1))


@rule("wcet.tlsf_last_pool_lines", "wcet",
      what="data lines free-merge-last-pool touches more than free-merge-both")
def tlsf_last_pool_lines(runs):
    return integer(last_pool_extra(runs, lines))


# The page map's first use (heapmem's scenario; xnheap's runs the same code).

def first_use(runs, get):
    return med(runs, "heapmem", "run-alloc-first-use", get)


@rule("wcet.first_use_instructions", "wcet", what="instructions of run-alloc-first-use (heapmem)")
def first_use_instructions(runs):
    return integer(first_use(runs, instructions))


@rule("wcet.first_use_instructions_round", "wcet",
      what="the same to the thousand, grouped: '12 000'")
def first_use_instructions_round(runs):
    return group(round(first_use(runs, instructions), -3))


@rule("wcet.first_use_branches", "wcet", what="branches of run-alloc-first-use (heapmem)")
def first_use_branches(runs):
    return integer(first_use(runs, lambda s: counted(s, "branches")))


@rule("wcet.first_use_lines", "wcet", what="data lines of run-alloc-first-use (heapmem)")
def first_use_lines(runs):
    return integer(first_use(runs, lines))


# glibc's long paths.

def glibc(runs, sid, get):
    return med(runs, "glibc", sid, get)


@rule("wcet.glibc_consolidate_instructions", "wcet",
      what="instructions of glibc's malloc-consolidate, grouped: '19 949'")
def glibc_consolidate_instructions(runs):
    return group(glibc(runs, "malloc-consolidate", instructions))


@rule("wcet.glibc_consolidate_instructions_round", "wcet",
      what="the same to the thousand: '20 000'")
def glibc_consolidate_instructions_round(runs):
    return group(round(glibc(runs, "malloc-consolidate", instructions), -3))


@rule("wcet.glibc_consolidate_lines", "wcet", what="data lines of glibc's malloc-consolidate")
def glibc_consolidate_lines(runs):
    return integer(glibc(runs, "malloc-consolidate", lines))


@rule("wcet.glibc_consolidate_cold", "wcet", what="cold p50 of glibc's malloc-consolidate: '12 µs'")
def glibc_consolidate_cold(runs):
    return us(glibc(runs, "malloc-consolidate", cold)) + " µs"


@rule("wcet.glibc_trim_instructions", "wcet", what="instructions of glibc's free-trim")
def glibc_trim_instructions(runs):
    return integer(glibc(runs, "free-trim", instructions))


@rule("wcet.glibc_trim_warm", "wcet", what="warm p50 of glibc's free-trim: '21 µs'")
def glibc_trim_warm(runs):
    return us(glibc(runs, "free-trim", warm)) + " µs"


def p50s_us(runs, sids):
    return [glibc(runs, sid, get) / 1000 for sid in sids for get in (warm, cold)]


@rule("wcet.glibc_map_us", "wcet",
      what="warm and cold p50 of glibc's malloc-mmap and free-munmap: '100 to 350 µs'")
def glibc_map_us(runs):
    return to_range(p50s_us(runs, ("malloc-mmap", "free-munmap")), sig2, " µs")


@rule("wcet.glibc_syscall_us", "wcet",
      what="warm and cold p50 of glibc's free-trim, malloc-mmap and free-munmap: '20 to 350 µs'")
def glibc_syscall_us(runs):
    return to_range(p50s_us(runs, ("free-trim", "malloc-mmap", "free-munmap")), sig2, " µs")
