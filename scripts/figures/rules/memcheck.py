"""rtmem memcheck's figures: docs/memcheck.md (the overall lines of a
default run, and what they show).

The table is one run's (the first), as the page says; so are the run's
time and the timer's overhead quoted beside it."""
import statistics

from engine import fmt, rule, table

PHASES = ("pow2", "random")
# The peers whose worst cases are milliseconds of their own (the page's
# "theirs"): left out of the machine's noise.
OWN_WORST = ("jemalloc", "tcmalloc")


def doc(runs):
    return runs.one("memcheck")


def sig3(x):
    """As the page writes an average: 40.1, 184, 1297."""
    return fmt(x, 0 if x >= 100 else 1)


@rule("memcheck.overall_table", "memcheck",
      what="the overall lines of the pow2 and random phases, per allocator, ns (one run)")
def overall_table(runs):
    rows = []
    for ph in PHASES:
        for a in doc(runs)["allocators"]:
            o = a[ph]["overall"]
            rows.append([ph, a["name"], fmt(o["worst_alloc_ns"], 0), fmt(o["worst_free_ns"], 0),
                         sig3(o["avg_max_alloc_ns"]), sig3(o["avg_max_free_ns"]),
                         sig3(o["avg_alloc_ns"]), sig3(o["avg_free_ns"]),
                         fmt(o["avg_overhead_pct"], 1), fmt(o["avg_frag_pct"], 1)])
    return table(["phase", "allocator", "worst alloc", "worst free", "avg max alloc",
                  "avg max free", "avg alloc", "avg free", "OVRH%", "FRAG%"], rows,
                 ["l", "l"] + ["r"] * 8)


@rule("memcheck.seconds", "memcheck", what="how long the default run took, s (one run)")
def seconds(runs):
    return fmt(doc(runs)["seconds"], 1)


@rule("memcheck.timer_p50", "memcheck", what="the timer's overhead included in every time, ns (one run)")
def timer_p50(runs):
    return fmt(doc(runs)["timer"]["overhead_p50_ns"], 0)


@rule("memcheck.worst_us", "memcheck",
      what="the worst alloc and free of every allocator but jemalloc and tcmalloc, µs: range (one run)")
def worst_us(runs):
    worst = [a[ph]["overall"][k] / 1e3 for a in doc(runs)["allocators"] if a["name"] not in OWN_WORST
             for ph in PHASES for k in ("worst_alloc_ns", "worst_free_ns")]
    lo, hi = fmt(min(worst), 0), fmt(max(worst), 0)
    return lo if lo == hi else f"{lo}–{hi}"


@rule("memcheck.peers_churn_ns", "memcheck",
      what="jemalloc's and tcmalloc's churn-phase average alloc and free, ns: their median (one run)")
def peers_churn_ns(runs):
    avgs = [a["churn"][op]["avg_ns"] for a in doc(runs)["allocators"] if a["name"] in OWN_WORST
            for op in ("alloc", "free")]
    return fmt(statistics.median(avgs), 0)
