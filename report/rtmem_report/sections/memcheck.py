"""rtmem memcheck: the overall summaries in the layout published heap
comparisons use, and each metric against block size (its rows)."""

import statistics

from .. import page, plot

TITLE = "Heap test harness (rtmem memcheck)"
ANCHOR = "memcheck"
TOOL = "memcheck"
VERSION = 2
MAKE = "rtmem memcheck --json {dir}/memcheck.json"

PHASES = (("pow2", "power-of-two blocks"), ("random", "random blocks"))
# The summary's columns: (member of `overall`, heading, is a time)
SUMMARY = (("worst_alloc_ns", "worst alloc", True), ("worst_free_ns", "worst free", True),
           ("avg_max_alloc_ns", "avg of max alloc", True),
           ("avg_max_free_ns", "avg of max free", True), ("avg_alloc_ns", "avg alloc", True),
           ("avg_free_ns", "avg free", True), ("avg_overhead_pct", "overhead", False),
           ("avg_frag_pct", "fragmentation", False))


# The summary's time columns and the row column each is made of, and how:
# "max" (the largest over the phase's tests) or "mean" (over them).
FROM_ROWS = {"worst_alloc_ns": ("max_alloc_ns", "max"), "worst_free_ns": ("max_free_ns", "max"),
             "avg_max_alloc_ns": ("max_alloc_ns", "mean"),
             "avg_max_free_ns": ("max_free_ns", "mean"),
             "avg_alloc_ns": ("avg_alloc_ns", "mean"), "avg_free_ns": ("avg_free_ns", "mean")}


def _nearest_rank(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, max(0, int(-(-q * len(v) // 1)) - 1))]


def _noise(doc, a, phase, key, floor_ns):
    """How far a summary figure of allocator a may move by chance, measured
    in this run: for a mean over the phase's tests, twice its standard
    error; for a largest over them (a worst figure), the spread of the
    tests' figures it is the largest of (p90 - p10); never less than a pair
    of timer readings. 0 for overhead and fragmentation, which no timing
    moves; None when the run has no rows to measure it from."""
    if key not in FROM_ROWS:
        return 0.0
    col, how = FROM_ROWS[key]
    names = doc.arr("row_columns").strs()
    if col not in names or not a.obj(phase).has("rows"):
        return None
    i = names.index(col)
    v = [r[i] for r in a.obj(phase).raw("rows") if isinstance(r[i], (int, float))]
    if len(v) < 2:
        return None
    if how == "mean":
        spread = 2 * statistics.stdev(v) / len(v) ** 0.5
    else:
        spread = _nearest_rank(v, 0.9) - _nearest_rank(v, 0.1)
    return max(spread, floor_ns or 0.0)


def _summary_table(doc, phase, floor_ns):
    rows, values, noise = [], {}, {}
    allocs = [a for a in doc.arr("allocators").objs() if a.has(phase)]
    if not allocs:
        return page.note("This phase did not run (--phases).")
    for a in allocs:
        o = a.obj(phase).obj("overall")
        values[a.str("name")] = [o.num(k, nullable=True) for k, _, _ in SUMMARY]
        noise[a.str("name")] = [_noise(doc, a, phase, k, floor_ns) for k, _, _ in SUMMARY]
    sorts = {a.str("name"): a.str("sort") for a in allocs}

    def best(i, name):
        """Whether name's figure is its column's least (among all for a
        time; among the same sort, a heap or a process allocator, for
        overhead and fragmentation, which the two sorts measure
        differently) by more than the noise of either figure: only then is
        it the best, and not the luck of this run."""
        v = values[name][i]
        others = [n for n in values if n != name and values[n][i] is not None and
                  (SUMMARY[i][2] or sorts[n] == sorts[name])]
        if v is None or not others:
            return False
        for n in others:
            margin = [noise[name][i], noise[n][i]]
            if None in margin or values[n][i] - v <= max(margin):
                return False
        return True

    for a in allocs:
        name = a.str("name")
        origin = a.str("origin")
        cells = [name + (" (%s)" % origin if origin in ("peer", "plugin") else "")]
        for i, (_, _, is_time) in enumerate(SUMMARY):
            v = values[name][i]
            text = page.fmt_ns(v) if is_time else page.fmt_pct(v)
            cells.append((text, "best") if best(i, name) else text)
        cells.append(page.fmt_num(a.obj(phase).num("tests")))
        rows.append(cells)
    return page.table(["allocator"] + [h for _, h, _ in SUMMARY] + ["tests"], rows)


def _summary_plot(doc, ctx, floor_ns, floor_label):
    ran = [(p, label) for p, label in PHASES
           if any(a.has(p) for a in doc.arr("allocators").objs())]
    if not ran:
        return ""
    fig, axes = plot.figure(11.5 if len(ran) == 2 else 7.0, 4.6, ncols=len(ran), sharey=True)
    metrics = [s for s in SUMMARY if s[2]]
    for ax, (phase, label) in zip(axes[0], ran):
        allocs = [a for a in doc.arr("allocators").objs() if a.has(phase)]
        width = 0.8 / max(1, len(allocs))
        for j, a in enumerate(allocs):
            o = a.obj(phase).obj("overall")
            xs = [i + (j - (len(allocs) - 1) / 2.0) * width for i in range(len(metrics))]
            ys = [o.num(k, nullable=True) or 0 for k, _, _ in metrics]
            name = a.str("name")
            ax.bar(xs, ys, width, color=plot.colour(name), hatch=plot.hatch(name),
                   label=name, edgecolor="white", linewidth=0.4)
        ax.set_xticks(range(len(metrics)))
        ax.set_xticklabels([h.replace("avg of ", "avg of\n") for _, h, _ in metrics],
                           fontsize=8)
        plot.log10_axis(ax)
        ax.set_title(label)
        plot.floor_line(ax, floor_ns, floor_label)
    axes[0][0].set_ylabel("time per call (ns, log scale)")
    axes[0][-1].legend(fontsize=8, ncol=2)
    return ctx.png("summary", fig, "memcheck overall summary: times per allocator",
                   "The overall summary's times per allocator, power-of-two and random blocks "
                   "(log scale). Worst: the longest single call of the phase; avg of max: the "
                   "mean over tests of each test's longest call; avg: the mean call. "
                   + _floor_words(floor_ns))


def _floor(doc):
    """(the floor to draw, its label): a pair of timer readings, inside
    every sample unless memcheck subtracted it (--subtract-timer-overhead)."""
    p = doc.obj("params")
    if p.raw("subtract_timer_overhead"):
        return None, None
    return doc.obj("timer").num("overhead_p50_ns"), "timer reading pair (p50)"


def _floor_words(floor_ns):
    if floor_ns is None:
        return ("memcheck subtracted the timer's overhead from every sample "
                "(--subtract-timer-overhead): no floor is drawn.")
    return ("The dashed line is what a pair of timer readings costs, inside every sample: "
            "figures near it measure the machine, not the allocator.")


def _rows_by_block(doc, phase, cols):
    """{allocator: {block_bytes: {column: median over the heap sizes and
    orders}}} from the phase's rows."""
    idx = {c: i for i, c in enumerate(doc.arr("row_columns").strs())}
    out = {}
    for a in doc.arr("allocators").objs():
        if not a.has(phase):
            continue
        p = a.obj(phase)
        if not p.has("rows"):
            continue
        by_block = {}
        for r in p.arr("rows").rows():
            by_block.setdefault(r[idx["block_bytes"]], []).append(r)
        out[a.str("name")] = {
            b: {c: _median([r[idx[c]] for r in rs]) for c in cols}
            for b, rs in sorted(by_block.items())}
    return out


def _median(values):
    vs = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return statistics.median(vs) if vs else None


def _lines(ax, data, col):
    for name, by_block in data.items():
        pts = [(b, v[col]) for b, v in by_block.items() if v[col] is not None]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3,
                    color=plot.colour(name), linestyle=plot.style(name), label=name)
    plot.log2_size_axis(ax)
    ax.set_xlabel("block size (bytes, log scale)")


def _time_plot(doc, ctx, floor_ns, floor_label):
    if not any(a.has("pow2") for a in doc.arr("allocators").objs()):
        return page.note("The power-of-two phase did not run (--phases): no plot against "
                         "block size.")
    cols = ("avg_alloc_ns", "avg_free_ns", "p99_alloc_ns", "p99_free_ns")
    data = _rows_by_block(doc, "pow2", cols)
    if not data:
        return page.note("memcheck ran without its rows (--no-json-rows): no plot against "
                         "block size.")
    fig, axes = plot.figure(11.5, 7.4, ncols=2, nrows=2)
    titles = ("average alloc", "average free", "p99 alloc", "p99 free")
    for ax, col, title in zip(axes.flat, cols, titles):
        _lines(ax, data, col)
        plot.log10_axis(ax)
        plot.floor_line(ax, floor_ns, floor_label)
        ax.set_title(title)
        ax.set_ylabel("ns per call (log scale)")
    axes[0][1].legend(fontsize=8, ncol=2)
    return ctx.png("time-by-block", fig, "memcheck: alloc and free time against block size",
                   "Average and p99 alloc and free time against block size, power-of-two "
                   "blocks: each point the median over the heap sizes, free orders and cold and "
                   "hot heaps memcheck ran at that block size. " + _floor_words(floor_ns))


def _space_plot(doc, ctx):
    cols = ("overhead_pct", "frag_pct")
    data = _rows_by_block(doc, "pow2", cols)
    if not data:
        return ""
    fig, axes = plot.figure(11.5, 4.2, ncols=2)
    for ax, col, title in zip(axes[0], cols, ("overhead", "fragmentation at half-free")):
        _lines(ax, data, col)
        ax.set_ylim(bottom=0)
        ax.set_ylabel("% (linear)")
        ax.set_title(title)
    axes[0][0].legend(fontsize=8, ncol=2)
    return ctx.png("space-by-block", fig, "memcheck: overhead and fragmentation by block size",
                   "Overhead and fragmentation against block size, power-of-two blocks (median "
                   "over heap sizes, free orders, cold and hot heaps). rtmem's heaps count "
                   "overhead against the heap's bytes "
                   "(100 - 100 x blocks x B / H); the process allocators (glibc, peers) against "
                   "the usable sizes they report, and probe fragmentation inside the fill's "
                   "address span: compare each group within itself (docs/memcheck.md).")


def _held_plot(doc, ctx):
    """What each heap holds against what it uses over the churn: growth,
    steady state, drain (the allocators with a heap of their own)."""
    series = []
    for a in doc.arr("allocators").objs():
        c = a.obj("churn", nullable=True)
        if c is None or not c.has("held_samples"):
            continue
        rows = c.arr("held_samples").rows()
        if rows:
            series.append((a.str("name"), rows))
    if not series:
        return ""
    fig, axes = plot.figure(11.5, 4.6)
    ax = axes[0][0]
    for name, rows in series:
        ops = [r[0] for r in rows]
        ax.plot(ops, [r[3] / 1024 for r in rows], color=plot.colour(name),
                linestyle=plot.style(name), label="%s held" % name)
        ax.plot(ops, [r[2] / 1024 for r in rows], color=plot.colour(name), linestyle=":",
                linewidth=0.9)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("operations (growth, steady state, then every block freed)")
    ax.set_ylabel("KiB (linear)")
    ax.legend(fontsize=8, ncol=3, loc="center right")
    return ctx.png("held", fig, "memcheck: memory held against used over the churn",
                   "What each heap holds (solid; rtm_heap_held_bytes) and what its live blocks "
                   "use with their headers (dotted), sampled over the churn phase: its growth to "
                   "the fill level, the steady state and the drain that frees every block. A "
                   "heap that keeps all it was given holds it throughout; xvheap holds the pages "
                   "its blocks need and gives each back when it empties. Requests above a "
                   "kind's largest (xvheap: 4008 bytes) fail and are counted apart "
                   "(docs/pages.md).")


def _churn_table(doc):
    rows = []
    for a in doc.arr("allocators").objs():
        if not a.has("churn"):
            continue
        c = a.obj("churn")
        al, fr = c.obj("alloc"), c.obj("free")
        rows.append((a.str("name"), page.fmt_ns(al.num("p50_ns")), page.fmt_ns(al.num("p99_ns")),
                     page.fmt_ns(al.num("p99_9_ns")), page.fmt_ns(al.num("max_ns")),
                     page.fmt_ns(fr.num("p50_ns")), page.fmt_ns(fr.num("p99_ns")),
                     page.fmt_ns(fr.num("p99_9_ns")), page.fmt_ns(fr.num("max_ns")),
                     page.fmt_num(c.num("failed_allocs"))))
    if not rows:
        return ""
    return (page.heading(3, "Churn: random alloc and free at half fill") +
            page.table(("allocator", "alloc p50", "p99", "p99.9", "max", "free p50", "p99",
                        "p99.9", "max", "failed allocs"), rows))


def build(docs, ctx):
    out = []
    for doc in docs:
        floor_ns, floor_label = _floor(doc)
        out.append(page.command(doc))
        failed = [a.str("name") for a in doc.arr("allocators").objs() if not a.bool("passed")]
        if failed:
            out.append(page.note("Failed its checks: %s (memcheck's text report says why)."
                                 % ", ".join(failed)))
        skipped = doc.arr("skipped").objs()
        if skipped:
            out.append(page.note("Not loaded: " + "; ".join(
                "%s (%s)" % (s.str("name"), s.str("reason")) for s in skipped)))
        for phase, label in PHASES:
            out.append(page.heading(3, "Overall summary, %s" % label))
            out.append(_summary_table(doc, phase, floor_ns))
        out.append(page.para("Green: the best of a column, and only where it beats every other "
                             "figure of the column by more than the noise measured in this "
                             "run (for a time averaged over the phase's tests, twice its "
                             "standard error; for a worst figure, the spread p10-p90 of the "
                             "tests' maxima it is the largest of; never less than a pair of "
                             "timer readings). A worst time on a virtual machine is mostly the "
                             "machine's stall, and a best one inside that noise is luck: it is "
                             "left unshaded, as is every time of a run without its rows "
                             "(--no-json-rows). Overhead and fragmentation, which no timing "
                             "moves, are compared among rtmem's heaps and among the process "
                             "allocators apart (they measure them differently); they are means "
                             "over the phase's tests."))
        out.append(_summary_plot(doc, ctx, floor_ns, floor_label))
        out.append(page.heading(3, "Against block size"))
        out.append(_time_plot(doc, ctx, floor_ns, floor_label))
        out.append(_space_plot(doc, ctx))
        out.append(_churn_table(doc))
        out.append(_held_plot(doc, ctx))
    return "".join(out)
