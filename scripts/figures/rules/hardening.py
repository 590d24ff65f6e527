"""docs/hardening.md's cost figures: rtmem bench's main phase, each kind at
its default hardening (O1) beside its `<kind>-none` row of the same run;
medians over the runs, ratios and differences taken within each run."""
import statistics

from engine import by_name, fmt, med_span, rule, table

# Every kind, in the pages' order; a table has the rows of those the runs
# measured at both levels (every kind, in make bench's runs).
KINDS = ("tlsf", "halffit", "heapmem", "xnheap", "xvheap", "zsheap")


def measured(runs):
    """The kinds of KINDS that every run has at both levels."""
    have = [{a["name"] for a in d["allocators"]} for d in runs.all("bench")]
    return [k for k in KINDS if all(k in h and k + "-none" in h for h in have)]


def time_rows(runs):
    """The times table's rows: (JSON name, label on the page)."""
    rows = []
    for kind in measured(runs):
        rows += [(kind, "tlsf (O1, the default)" if kind == "tlsf" else kind),
                 (kind + "-none", kind + "-none")]
    return rows + [("glibc", "glibc malloc/free")]


def stat(doc, name, op, key="avg_minus_floor_ns"):
    return by_name(doc["allocators"], name)[op][key]


def per_run(runs, fn):
    return [fn(d) for d in runs.all("bench")]


def o1_over_none(runs, kind, op):
    return per_run(runs, lambda d: stat(d, kind, op) / stat(d, kind + "-none", op))


def signed(x, nd):
    """+7.2, or −2.0 with a minus sign."""
    return ("+" if x >= 0 else "−") + fmt(abs(x), nd)


@rule("bench.harden_ratio_table", "bench",
      what="each kind's O1 over none and O1 − none, alloc and free, median (range) over the runs")
def harden_ratio_table(runs):
    rows = []
    for kind in measured(runs):
        ratios = [med_span(o1_over_none(runs, kind, op), 2, "×") for op in ("alloc", "free")]
        diffs = [signed(statistics.median(per_run(
            runs, lambda d: stat(d, kind, op) - stat(d, kind + "-none", op))), 1)
            for op in ("alloc", "free")]
        rows.append([kind] + ratios + diffs)
    return table(["kind", "alloc, O1 / none", "free, O1 / none", "alloc ns, O1 − none",
                  "free ns, O1 − none"], rows)


@rule("bench.harden_ns_table", "bench",
      what="avg − floor and p99 of each kind at O1 and none, and glibc's, median over the runs")
def harden_ns_table(runs):
    n = len(runs.all("bench"))
    head = f"ns (median of {n} runs)" if n > 1 else "ns (one run)"
    rows = []
    for name, label in time_rows(runs):
        rows.append([label]
                    + [fmt(statistics.median(per_run(runs, lambda d: stat(d, name, op))), 1)
                       for op in ("alloc", "free")]
                    + [fmt(statistics.median(per_run(runs, lambda d: stat(d, name, op, "p99_ns"))), 0)
                       for op in ("alloc", "free")])
    return table([head, "alloc avg − floor", "free avg − floor", "alloc p99", "free p99"], rows)


@rule("bench.harden_page_cost", "bench",
      what="what the checks add to heapmem's and xnheap's alloc and free: the range of the "
           "medians of O1 / none, '2–11%'")
def harden_page_cost(runs):
    v = [100 * (statistics.median(o1_over_none(runs, kind, op)) - 1)
         for kind in ("heapmem", "xnheap") for op in ("alloc", "free")]
    lo, hi = (fmt(x, 0).replace("-", "−") for x in (min(v), max(v)))
    if lo == hi:
        return lo + "%"
    return f"{lo}% to {hi}%" if lo.startswith("−") else f"{lo}–{hi}%"


def heap_vs_glibc(runs, op):
    v = per_run(runs, lambda d: by_name(d["ratios_vs_glibc"], "tlsf")[f"{op}_avg_minus_floor"])
    return fmt(statistics.median(v), 2) + "×"


@rule("bench.tlsf_heap_free_vs_glibc", "bench",
      what="TLSF's free through rtm_heap_* (O1) over glibc's, avg − floor, median over the runs")
def tlsf_heap_free_vs_glibc(runs):
    return heap_vs_glibc(runs, "free")


@rule("bench.tlsf_heap_alloc_vs_glibc", "bench",
      what="TLSF's alloc through rtm_heap_* (O1) over glibc's, avg − floor, median over the runs")
def tlsf_heap_alloc_vs_glibc(runs):
    return heap_vs_glibc(runs, "alloc")
