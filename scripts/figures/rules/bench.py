"""rtmem bench's figures: docs/bench.md and the README's lock table."""
import statistics

from engine import by_name, fmt, list_and, med_span, rule, span, table

# The main table's rows: (JSON name, label on the page).
MAIN_ROWS = [
    ("tlsf(typed)", "tlsf (typed API)"),
    ("tlsf", "tlsf (through `rtm_heap_*`)"),
    ("tlsf-none", "tlsf-none"),
    ("xnheap", "xnheap"),
    ("xnheap-none", "xnheap-none"),
    ("heapmem", "heapmem"),
    ("heapmem-none", "heapmem-none"),
    ("glibc", "glibc malloc/free (defaults)"),
]


def alloc(doc, name):
    return by_name(doc["allocators"], name)


def ratio(doc, name, op):
    """NAME's avg − floor over glibc's, OP alloc or free, in one run."""
    return by_name(doc["ratios_vs_glibc"], name)[f"{op}_avg_minus_floor"]


def over_runs(runs, fn):
    return [fn(d) for d in runs.all("bench")]


@rule("bench.timer_p50", "bench", what="the timer's own overhead, p50 ns (one run)")
def timer_p50(runs):
    return fmt(runs.one("bench")["timer"]["overhead_p50_ns"], 1)


@rule("bench.timer_resolution", "bench", what="the timer's resolution, ns (one run)")
def timer_resolution(runs):
    return fmt(runs.one("bench")["timer"]["resolution_ns"], 1)


@rule("bench.floor", "bench", what="the floor's alloc avg, ns (one run)")
def floor(runs):
    return fmt(runs.one("bench")["floor"]["alloc_avg_ns"], 1)


@rule("bench.main_table", "bench", what="the main phase's table (one run)")
def main_table(runs):
    d = runs.one("bench")
    rows = []
    for name, label in MAIN_ROWS:
        a = alloc(d, name)
        row = [label]
        for op in ("alloc", "free"):
            s = a[op]
            row += [fmt(s["avg_minus_floor_ns"], 1), fmt(s["p99_ns"], 1), fmt(s["p99_99_ns"], 0)]
        rows.append(row)
    return table(["ns", "alloc avg − floor", "alloc p99", "alloc p99.99",
                  "free avg − floor", "free p99", "free p99.99"], rows)


@rule("bench.vs_glibc_table", "bench", what="TLSF's ratios to glibc, median (range) over the runs")
def vs_glibc_table(runs):
    rows = []
    for name, label in [("tlsf(typed)", "typed API"), ("tlsf", "through `rtm_heap_*`"),
                        ("tlsf-none", "through `rtm_heap_*`, no checks (`tlsf-none`)")]:
        rows.append([label] + [med_span(over_runs(runs, lambda d: ratio(d, name, op)), 2, "×")
                               for op in ("alloc", "free")])
    return table(["TLSF vs glibc", "alloc avg − floor", "free avg − floor"], rows)


def median_ratio(runs, name, op):
    return fmt(statistics.median(over_runs(runs, lambda d: ratio(d, name, op))), 2) + "×"


@rule("bench.tlsf_alloc_vs_glibc", "bench", what="TLSF (typed) alloc over glibc's, median")
def tlsf_alloc_vs_glibc(runs):
    return median_ratio(runs, "tlsf(typed)", "alloc")


@rule("bench.tlsf_none_alloc_vs_glibc", "bench", what="tlsf-none alloc over glibc's, median")
def tlsf_none_alloc_vs_glibc(runs):
    return median_ratio(runs, "tlsf-none", "alloc")


@rule("bench.tlsf_none_free_vs_glibc", "bench", what="tlsf-none free over glibc's, median")
def tlsf_none_free_vs_glibc(runs):
    return median_ratio(runs, "tlsf-none", "free")


def free_net(d, name):
    return alloc(d, name)["free"]["avg_minus_floor_ns"]


@rule("bench.tlsf_free_over_none", "bench", what="tlsf's checked free over tlsf-none's, median")
def tlsf_free_over_none(runs):
    v = over_runs(runs, lambda d: free_net(d, "tlsf") / free_net(d, "tlsf-none"))
    return fmt(statistics.median(v), 1) + "×"


@rule("bench.tlsf_free_minus_none", "bench", what="ns tlsf's checked free adds, median")
def tlsf_free_minus_none(runs):
    v = over_runs(runs, lambda d: free_net(d, "tlsf") - free_net(d, "tlsf-none"))
    return fmt(statistics.median(v), 0) + " ns"


@rule("bench.glibc_alloc_p99", "bench", what="glibc's alloc p99, ns, median over the runs")
def glibc_alloc_p99(runs):
    return fmt(statistics.median(over_runs(runs, lambda d: alloc(d, "glibc")["alloc"]["p99_ns"])), 0)


def pair_net(d, name):
    a = alloc(d, name)
    return a["alloc"]["avg_minus_floor_ns"] + a["free"]["avg_minus_floor_ns"]


@rule("bench.xnheap_vs_heapmem", "bench",
      what="how much faster xnheap's alloc+free is than heapmem's, %, range over the runs")
def xnheap_vs_heapmem(runs):
    v = over_runs(runs, lambda d: 100 * (1 - pair_net(d, "xnheap") / pair_net(d, "heapmem")))
    return span(v, 0, "%")


@rule("bench.page_p9999", "bench", what="heapmem's and xnheap's p99.99, µs, range over the runs")
def page_p9999(runs):
    v = [alloc(d, k)[op]["p99_99_ns"] / 1000 for d in runs.all("bench")
         for k in ("heapmem", "heapmem-none", "xnheap", "xnheap-none") for op in ("alloc", "free")]
    return span(v, 0, " µs")


FREE_ORDER_ROWS = [("tlsf(typed)", "tlsf (typed)"), ("tlsf-none", "tlsf-none"),
                   ("heapmem", "heapmem"), ("xnheap", "xnheap"), ("glibc", "glibc")]


@rule("bench.free_order_table", "bench", what="the free-order phase's table (one run)")
def free_order_table(runs):
    d = runs.one("bench")["free_order"]
    rows = []
    for name, label in FREE_ORDER_ROWS:
        a = by_name(d["allocators"], name)
        rows.append([label] + [fmt(a[k]["avg_minus_floor_ns"], 1)
                               for k in ("fill_alloc", "free_in_order", "free_shuffled")]
                    + [fmt(a["shuffled_over_in_order_avg_minus_floor"], 2) + "×"])
    return table(["", "fill alloc", "free in-order", "free shuffled", "shuffled / in-order"], rows)


@rule("bench.page_shuffled_ratio", "bench",
      what="heapmem's and xnheap's shuffled over in-order free, range (one run)")
def page_shuffled_ratio(runs):
    d = runs.one("bench")["free_order"]
    v = [by_name(d["allocators"], k)["shuffled_over_in_order_avg_minus_floor"]
         for k in ("heapmem", "xnheap")]
    return span(v, 1, " times")


def sweep_mean(d, name):
    vals = [v for v in by_name(d["sweep"]["allocators"], name)["alloc_free_minus_floor_ns"]
            if v is not None]
    return statistics.mean(vals)


def sweep_first(d, name):
    return by_name(d["sweep"]["allocators"], name)["alloc_free_minus_floor_ns"][0]


@rule("bench.sweep_sentence", "bench", what="the size sweep's means, as a sentence (one run)")
def sweep_sentence(runs):
    d = runs.one("bench")

    def ns(name, fn=sweep_mean):
        return fmt(fn(d, name), 1) + " ns"
    small = span([sweep_first(d, k) for k in ("heapmem-none", "xnheap-none")], 1, " ns")
    return (f"an alloc+free pair costs {ns('tlsf(typed)')} for TLSF (typed),\n"
            f"{ns('tlsf')} through `rtm_heap_*`, {ns('tlsf-none')} without checks, "
            f"{ns('xnheap')} for xnheap,\n{ns('heapmem')} for heapmem and {ns('glibc')} for glibc. "
            f"Below 64 bytes the unchecked\nbucket kinds take {small} and glibc's thread cache "
            f"{ns('glibc', sweep_first)}, against TLSF's\n{ns('tlsf(typed)', sweep_first)} "
            f"({ns('tlsf-none', sweep_first)} without checks).")


def lock(d, name):
    return by_name(d["threads"]["uncontended"]["locks"], name, key="lock")


def contended(d, name):
    return by_name(d["threads"]["contended"], name, key="lock")


def worse_alloc(d, name, stat):
    """The worse of the threads' alloc STAT, ns."""
    return max(t["alloc"][stat] for t in contended(d, name)["threads"])


UNCONTENDED_COLS = [("bare_lock_unlock_ns", 1, ""), ("call_unlocked_ns", 1, ""),
                    ("call_locked_ns", 1, ""), ("added_per_call_ns", 1, ""),
                    ("added_over_bare", 2, "×"), ("call_locked_over_unlocked", 2, "×")]


@rule("bench.uncontended_table", "bench",
      what="the threads phase's uncontended lock costs, median (range) over the runs")
def uncontended_table(runs):
    docs = runs.all("bench")
    rows = []
    for name in ("pi", "robust", "shared"):
        rows.append([name] + [med_span([lock(d, name)[k] for d in docs], nd, u)
                              for k, nd, u in UNCONTENDED_COLS])
    return table(["uncontended, ns per call", "bare lock+unlock", "call unlocked", "call locked",
                  "added by the lock", "added / bare", "locked / unlocked"], rows)


CONTENDED_ROWS = [("none", "none (a heap per thread, unlocked)"), ("pi", "pi, one heap"),
                  ("robust", "robust, one heap"), ("shared", "shared, one shared heap")]


@rule("bench.contended_table", "bench",
      what="the threads phase's contended latency, worse thread's alloc, median (range)")
def contended_table(runs):
    docs = runs.all("bench")
    rows = []
    for name, label in CONTENDED_ROWS:
        rows.append([label] + [med_span([worse_alloc(d, name, s) for d in docs], 0)
                               for s in ("p50_ns", "p99_ns", "p99_9_ns", "max_ns")])
    return table(["", "p50", "p99", "p99.9", "max"], rows)


@rule("bench.contended_share", "bench",
      what="the share of locked calls that found the lock held, %, range over runs and locks")
def contended_share(runs):
    v = [100 * contended(d, k)["lock_contended"] / contended(d, k)["lock_calls"]
         for d in runs.all("bench") for k in ("pi", "robust", "shared")]
    return span(v, 0, "%")


def shared_ratios(runs):
    return [lock(d, "shared")["call_locked_over_unlocked"] for d in runs.all("bench")]


@rule("bench.shared_ratio", "bench", what="the shared row's locked/unlocked, range over the runs")
def shared_ratio(runs):
    return span(shared_ratios(runs), 2, "×")


@rule("bench.shared_margin", "bench",
      what="how far the shared row's median ratio lies from 3×: '0.05× under', '0.15× over'")
def shared_margin(runs):
    m = 3 - statistics.median(shared_ratios(runs))
    return fmt(abs(m), 2) + ("× under" if m >= 0 else "× over")


@rule("bench.shared_met", "bench", what="in how many runs the shared target was met")
def shared_met(runs):
    docs = runs.all("bench")
    met = sum(1 for d in docs if lock(d, "shared")["target"]["met"])
    return f"met in {met} of {len(docs)}"


def us(ns):
    return fmt(statistics.median(ns) / 1000, 1)


@rule("bench.readme_lock_table", "bench",
      what="the README's lock table: medians over the runs")
def readme_lock_table(runs):
    docs = runs.all("bench")
    rows = []
    for name, label in [("pi", "`RTM_HEAP_LOCK_PI`"), ("robust", "`RTM_HEAP_LOCK_ROBUST_SHARED`"),
                        ("shared", "a shared heap (`rtm_shared_create`)")]:
        med = {k: statistics.median([lock(d, name)[k] for d in docs])
               for k, _, _ in UNCONTENDED_COLS}
        lat = " / ".join(us([worse_alloc(d, name, s) for d in docs])
                         for s in ("p50_ns", "p99_ns", "p99_9_ns"))
        rows.append([label, fmt(med["bare_lock_unlock_ns"], 1) + " ns",
                     fmt(med["added_per_call_ns"], 1) + " ns",
                     fmt(med["call_locked_over_unlocked"], 2) + "×", lat + " µs"])
    lat = " / ".join(fmt(statistics.median([worse_alloc(d, "none", s) for d in docs]) / 1000, 2)
                     for s in ("p50_ns", "p99_ns", "p99_9_ns"))
    rows.append(["no lock, a heap per thread", "", "", "", lat + " µs"])
    return table(["TLSF, 2 threads", "bare lock+unlock", "added to a call, uncontended",
                  "call locked / unlocked",
                  "both threads allocating back to back: p50 / p99 / p99.9"], rows)


@rule("bench.shared_ratio_list", "bench", what="the shared row's locked/unlocked, each run's")
def shared_ratio_list(runs):
    return list_and(shared_ratios(runs), 2, "×")
