"""rtmem bench: the allocators' alloc and free times side by side, against
request size (the sweep), the free-order effect and the cost of a lock."""

from .. import page, plot

TITLE = "Allocator benchmark (rtmem bench)"
ANCHOR = "bench"
TOOL = "bench"
VERSION = 2
MAKE = "rtmem bench --json {dir}/bench.json"


def _floor(doc):
    f = doc.obj("floor")
    return f.num("alloc_avg_ns", nullable=True), f.num("free_avg_ns", nullable=True)


def _ratio(r, key):
    v = r.num(key, nullable=True) if r is not None else None
    return "-" if v is None else "%.2fx" % v


def _main_table(doc):
    listed = doc.arr("ratios_vs_glibc", nullable=True)  # null: glibc not run (--kinds)
    ratios = {} if listed is None else {r.str("name"): r for r in listed.objs()}
    rows = []
    for a in doc.arr("allocators").objs():
        name = a.str("name")
        cells = [name]
        for op in ("alloc", "free"):
            s = a.obj(op)
            if name == "floor":
                cells.append(("%s (the floor)" % page.fmt_ns(s.num("avg_ns")), "floor"))
            else:
                cells.append("%s [%s, %s]" % (
                    page.fmt_ns(s.num("avg_minus_floor_ns")),
                    page.fmt_ns(s.num("avg_minus_floor_ns_round_min")),
                    page.fmt_ns(s.num("avg_minus_floor_ns_round_max"))))
            cells += [page.fmt_ns(s.num(k)) for k in ("p99_ns", "p99_9_ns", "max_ns")]
        r = ratios.get(name)
        cells += [_ratio(r, "alloc_avg_minus_floor"), _ratio(r, "free_avg_minus_floor")]
        rows.append(cells)
    return page.table(("allocator", "alloc mean - floor [round min, max]", "p99", "p99.9", "max",
                       "free mean - floor [round min, max]", "p99", "p99.9", "max",
                       "alloc / glibc", "free / glibc"), rows)


def _main_plot(doc, ctx):
    allocs = doc.arr("allocators").objs()
    fa, ff = _floor(doc)
    fig, axes = plot.figure(11.5, 4.4, ncols=2, sharey=True)
    stats = (("avg_ns", "mean"), ("p50_ns", "p50"), ("p99_ns", "p99"), ("p99_9_ns", "p99.9"))
    for ax, op, floor in zip(axes[0], ("alloc", "free"), (fa, ff)):
        shown = [a for a in allocs if a.str("name") != "floor"]
        width = 0.8 / max(1, len(shown))
        for j, a in enumerate(shown):
            s = a.obj(op)
            xs = [i + (j - (len(shown) - 1) / 2.0) * width for i in range(len(stats))]
            name = a.str("name")
            ax.bar(xs, [s.num(k) for k, _ in stats], width, color=plot.colour(name),
                   hatch=plot.hatch(name), edgecolor="white", linewidth=0.4, label=name)
        ax.set_xticks(range(len(stats)))
        ax.set_xticklabels([label for _, label in stats])
        plot.log10_axis(ax)
        plot.floor_line(ax, floor, "no-op call (the floor)")
        ax.set_title(op)
    axes[0][0].set_ylabel("ns per call (log scale)")
    axes[0][1].legend(fontsize=8, ncol=2)
    return ctx.png("calls", fig, "bench: alloc and free time per allocator",
                   "Alloc and free time per allocator over the main phase's random sizes: "
                   "mean and percentiles of every call, the floor included. The dashed line is "
                   "the floor: the same timing loop calling a function that does nothing. What "
                   "lies near it is the machine's, not the allocator's; the table gives each "
                   "mean less the floor.")


def _sweep_plot(doc, ctx):
    s = doc.obj("sweep", nullable=True)
    if s is None:
        return page.note("bench ran without its size sweep (--no-sweep, --threads-only): no "
                         "plot against request size.")
    lo = s.arr("bucket_min_bytes").nums()
    hi = s.arr("bucket_max_bytes").nums()
    mid = [(a + b + 1) / 2.0 for a, b in zip(lo, hi)]
    fig, axes = plot.figure(11.5, 4.4, ncols=2, sharey=True)
    for a in s.arr("allocators").objs():
        name = a.str("name")
        for ax, key in zip(axes[0], ("alloc_avg_ns", "free_avg_ns")):
            ys = a.arr(key).nums(nullable=True)
            pts = [(x, y) for x, y in zip(mid, ys) if y is not None]
            if name == "floor":
                ax.plot([p[0] for p in pts], [p[1] for p in pts], color=plot.colour(name),
                        linewidth=1, linestyle=(0, (4, 3)), label="no-op call (the floor)")
            else:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], color=plot.colour(name),
                        linestyle=plot.style(name), linewidth=1.2, label=name)
    for ax, op in zip(axes[0], ("alloc", "free")):
        ax.set_xlabel("request size (bytes; %d-byte buckets)" % s.num("bucket_width_bytes"))
        ax.set_xlim(0, hi[-1] + 1 if hi else 1)
        ax.set_ylim(bottom=0)
        ax.set_title("mean %s time against request size" % op)
    axes[0][0].set_ylabel("ns per call (linear)")
    axes[0][1].legend(fontsize=8, ncol=2)
    return ctx.png("sweep", fig, "bench: mean alloc and free time against request size",
                   "The size sweep: for each %d-byte bucket of request sizes, %s alloc and "
                   "free pairs at that size with up to %s blocks live; each line the mean "
                   "call per bucket, the floor's (dashed grey) included. A step marks where "
                   "an allocator changes strategy (a size class, a page run, mmap)." % (
                       s.num("bucket_width_bytes"), page.fmt_num(s.num("ops_per_bucket")),
                       page.fmt_num(s.num("live_cap"))))


def _wide_plot(doc, ctx):
    """The sweep's wide ranges: each allocator's median alloc+free pair less
    the floor, with the least and the most of the repetitions as a bar."""
    w = doc.obj("wide", nullable=True) if doc.has("wide") else None
    if w is None:
        return ""
    lo = w.arr("range_min_bytes").nums()
    hi = w.arr("range_max_bytes").nums()
    allocs = [a for a in w.arr("allocators").objs() if a.str("name") != "floor"]
    fig, axes = plot.figure(11.5, 4.4)
    ax = axes[0][0]
    n = max(1, len(allocs))
    for k, a in enumerate(allocs):
        name = a.str("name")
        med = a.arr("net_median_ns").nums(nullable=True)
        mins = a.arr("net_min_ns").nums(nullable=True)
        maxs = a.arr("net_max_ns").nums(nullable=True)
        # each allocator a little apart within its range, so the bars show
        xs, ys, below, above = [], [], [], []
        for r in range(len(lo)):
            if med[r] is None:
                continue
            width = hi[r] - lo[r] + 1
            xs.append(lo[r] + width * (0.15 + 0.7 * (k + 0.5) / n))
            ys.append(med[r])
            below.append(med[r] - mins[r])
            above.append(maxs[r] - med[r])
        if not xs:
            continue
        ax.errorbar(xs, ys, yerr=[below, above], color=plot.colour(name), fmt="o",
                    markersize=3.5, linewidth=1, capsize=2, label=name)
    for r in range(1, len(lo)):
        ax.axvline(lo[r] - 0.5, color="#dddddd", linewidth=0.8, zorder=0)
    ax.set_xlim(0, hi[-1] + 1 if hi else 1)
    ax.set_xlabel("request size range (bytes; %d-byte ranges)" % w.num("range_width_bytes"))
    ax.set_ylabel("alloc+free pair less the floor, ns")
    ax.set_title("alloc+free against wide request ranges: median and spread of %d runs"
                 % w.num("reps"))
    ax.legend(fontsize=8, ncol=3)
    return ctx.png("wide", fig, "bench: alloc+free pair against wide size ranges, with spread",
                   "The sweep's wide ranges: each range of request sizes run %d times, each "
                   "time on draws of its own (%s operations, every allocator on the same "
                   "draws in turn); a point is an allocator's median alloc+free pair less the "
                   "floor's on the same draws, its bar the least and the most of the runs. An "
                   "allocator without a point in a range failed every request there (a page "
                   "kind above its largest request)." % (
                       w.num("reps"), page.fmt_num(w.num("ops_per_range"))))


def _free_order(doc, ctx):
    f = doc.obj("free_order", nullable=True)
    if f is None:
        return ""
    rows = []
    names, inorder, shuffled = [], [], []
    for a in f.arr("allocators").objs():
        name = a.str("name")
        if name == "floor":
            continue
        io, sh = a.obj("free_in_order"), a.obj("free_shuffled")
        names.append(name)
        inorder.append(io.num("avg_minus_floor_ns"))
        shuffled.append(sh.num("avg_minus_floor_ns"))
        ratio = a.num("shuffled_over_in_order_avg_minus_floor", nullable=True)
        rows.append((name, page.fmt_ns(io.num("avg_minus_floor_ns")),
                     page.fmt_ns(sh.num("avg_minus_floor_ns")),
                     "-" if ratio is None else "%.2fx" % ratio,
                     page.fmt_ns(io.num("p99_ns")), page.fmt_ns(sh.num("p99_ns"))))
    fig, axes = plot.figure(9.6, 4.0)
    ax = axes[0][0]
    width = 0.38
    for i, name in enumerate(names):
        ax.bar(i - width / 2, inorder[i], width, color=plot.colour(name), hatch=plot.hatch(name),
               edgecolor="white")
        ax.bar(i + width / 2, shuffled[i], width, color=plot.colour(name), alpha=0.45,
               hatch=plot.hatch(name), edgecolor="black", linewidth=0.6)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, fontsize=8)
    ax.set_ylabel("mean free - floor (ns, linear)")
    ax.set_title("free in allocation order (solid) and shuffled (pale, outlined)")
    ax.set_ylim(bottom=0)
    img = ctx.png("free-order", fig, "bench: free in order against shuffled",
                  "The free-order effect: %s blocks of random sizes freed in allocation order "
                  "(solid) and in one fixed random order (pale), the floor subtracted. A "
                  "shuffled free finds its neighbours scattered: more merges between lists and "
                  "more cache misses." % page.fmt_num(f.num("fill_blocks")))
    return (page.heading(3, "Free order") + img +
            page.table(("allocator", "in order: mean - floor", "shuffled: mean - floor",
                        "shuffled / in order", "in order p99", "shuffled p99"), rows))


def _target(lk):
    """The shared row's target cell: met, or not met (bad), or "-"."""
    t = lk.obj("target", nullable=True)
    if t is None:
        return "-"
    met = t.raw("met")
    limit = "<= %.2fx" % t.num("call_locked_over_unlocked_max")
    if met is None:
        return limit + ": not measured"
    return limit + ": met" if met else (limit + ": NOT MET", "bad")


def _threads(doc):
    t = doc.obj("threads", nullable=True)
    if t is None:
        return ""
    rows = []
    unmet = []
    for lk in t.obj("uncontended").arr("locks").objs():
        if lk.has("skipped"):
            rows.append((lk.str("lock"), ("skipped: " + lk.str("skipped"), "bad"), "", "", "",
                         "", ""))
            continue
        ratio = lk.num("call_locked_over_unlocked", nullable=True)
        target = _target(lk)
        if isinstance(target, tuple):
            unmet.append("%s: %.2fx" % (lk.str("lock"), ratio))
        rows.append((lk.str("lock"), page.fmt_ns(lk.num("bare_lock_unlock_ns", nullable=True)),
                     page.fmt_ns(lk.num("call_unlocked_ns")),
                     page.fmt_ns(lk.num("call_locked_ns", nullable=True)),
                     page.fmt_ns(lk.num("added_per_call_ns", nullable=True)),
                     "-" if ratio is None else "%.2fx" % ratio, target))
    out = [page.heading(3, "A heap shared by threads: the lock's price, uncontended")]
    if unmet:
        out.append(page.note("The shared heap's cost target was NOT MET (%s): bench failed."
                             % "; ".join(unmet)))
    out.append(page.table(("lock", "bare lock+unlock", "call, no lock", "call, locked",
                           "added per call", "locked / unlocked", "target"), rows))
    out.append(_contended(t))
    return "".join(out)


def _contended(t):
    """Each lock type's threads at once on one heap (none: a heap each):
    every thread's alloc and free latency, p50, p99 and max, and how often
    a call found the lock held. The real-time figure of a shared heap."""
    rows = []
    for c in t.arr("contended").objs():
        lock = c.str("lock")
        if c.has("skipped"):
            rows.append((lock, ("skipped: " + c.str("skipped"), "bad"), "", "", "", "", "", "",
                         ""))
            continue
        calls = c.num("lock_calls")
        held = c.num("lock_contended")
        share = "-" if lock == "none" or not calls else "%.1f%%" % (100.0 * held / calls)
        for th in c.arr("threads").objs():
            a, f = th.obj("alloc"), th.obj("free")
            rows.append(("%s, thread %d" % (lock, th.num("thread")), "%d" % th.num("cpu"),
                         page.fmt_ns(a.num("p50_ns", nullable=True)),
                         page.fmt_ns(a.num("p99_ns", nullable=True)),
                         page.fmt_ns(a.num("max_ns", nullable=True)),
                         page.fmt_ns(f.num("p50_ns", nullable=True)),
                         page.fmt_ns(f.num("p99_ns", nullable=True)),
                         page.fmt_ns(f.num("max_ns", nullable=True)), share))
    if not rows:
        return ""
    return (page.heading(3, "Contended: %d threads at once on one heap" % t.num("threads")) +
            page.note("Each lock type's threads call alloc and free on one heap at the same "
                      "time (none: a heap per thread, no lock); latency of each call in ns, "
                      "timer overhead included; found held: the share of lock calls that "
                      "found the lock taken. The pi row is the priority-inheritance lock a "
                      "real-time task waits on.") +
            page.table(("lock, thread", "cpu", "alloc p50", "alloc p99", "alloc max",
                        "free p50", "free p99", "free max", "found held"), rows))


def build(docs, ctx):
    out = []
    for doc in docs:
        out.append(page.command(doc))
        for f in doc.arr("failed_allocators").objs():
            out.append(page.note("%s died in the measuring process (%s): %s" % (
                f.str("name"), f.str("kind"), f.str("message"))))
        for s in doc.arr("skipped").objs():
            out.append(page.note("%s not loaded: %s" % (s.str("name"), s.str("reason"))))
        if doc.obj("params").raw("main_phase") is False:
            out.append(page.note("bench ran without its main phase (--threads-only): no "
                                 "allocator's calls to draw."))
        else:
            out.append(_main_plot(doc, ctx))
            out.append(_main_table(doc))
        out.append(page.heading(3, "Against request size"))
        out.append(_sweep_plot(doc, ctx))
        out.append(_wide_plot(doc, ctx))
        out.append(_free_order(doc, ctx))
        out.append(_threads(doc))
    return "".join(out)
