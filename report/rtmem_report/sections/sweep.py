"""rtmem latency --sweep: the worst and p99.9 wake-up against the size of
the pressure's allocations, one curve per stride, a panel per mode."""

from .. import page, plot

TITLE = "Latency under memory pressure (rtmem latency --sweep)"
ANCHOR = "sweep"
TOOL = "latency"
VERSION = 1
MAKE = "rtmem latency --sweep --quick --json {dir}/latency-sweep.json"

STRIDE_SHADES = ["#08519c", "#3182bd", "#6baed6", "#e6550d", "#fd8d3c", "#a63603", "#31a354",
                 "#756bb1", "#636363"]


def accepts(doc):
    return doc.str("mode") == "sweep"


def _plot(doc, sw, ctx):
    modes = sw.arr("modes").strs()
    strides = sw.arr("strides").nums()
    runs = [r for r in sw.arr("runs").objs() if not r.has("skipped") and r.has("summary")]
    base = sw.obj("baseline", nullable=True)  # null if stopped before it
    fig, axes = plot.figure(4.2 * max(1, len(modes)) + 1.2, 4.6, ncols=max(1, len(modes)),
                            sharey=True)
    for ax, mode in zip(axes[0], modes):
        for i, stride in enumerate(strides):
            pts = sorted(((r.num("bytes"), r.obj("summary")) for r in runs
                          if r.str("mode") == mode and r.num("stride") == stride),
                         key=lambda p: p[0])
            if not pts:
                continue
            c = STRIDE_SHADES[i % len(STRIDE_SHADES)]
            xs = [p[0] for p in pts]
            for key, marker, line, what in (("max_ns", "o", "-", "worst"),
                                            ("p999_ns", "s", "--", "p99.9")):
                # a run without a wake-up has null figures: no point
                got = [(x, p[1].num(key, nullable=True)) for x, p in zip(xs, pts)]
                got = [(x, y / 1000.0) for x, y in got if y is not None]
                ax.plot([g[0] for g in got], [g[1] for g in got], color=c, marker=marker,
                        markersize=4 if marker == "o" else 3, linestyle=line,
                        label="stride %s: %s" % (page.fmt_bytes(stride), what))
        if base is not None and base.has("summary"):
            bs = base.obj("summary")
            for key, line, what in (("max_ns", "-", "idle: worst"),
                                    ("p999_ns", "--", "idle: p99.9")):
                v = bs.num(key, nullable=True)
                if v is not None:
                    ax.axhline(v / 1000.0, color="#555555", linewidth=1, linestyle=line,
                               label=what)
        plot.log2_size_axis(ax)
        plot.log10_axis(ax)
        ax.set_xlabel("pressure allocation size per worker (bytes, log scale)")
        ax.set_title("mode: %s" % mode)
    axes[0][0].set_ylabel("wake-up latency (us, log scale)")
    axes[0][-1].legend(fontsize=7, loc="best")
    ld = sw.obj("load")
    return ctx.png("curves", fig, "latency under pressure: worst and p99.9 against size",
                   "Worst (solid) and p99.9 (dashed) wake-up latency of the periodic thread "
                   "while %d workers allocate, write every stride-th byte of, and free blocks of "
                   "the size on the axis, one curve per stride, a panel per mode (keep: the "
                   "block is kept and rewritten; hang: held %s before its free). Grey: the "
                   "idle baseline. %s per run." % (
                       ld.num("vm"), page.fmt_ns(sw.num("hang_ns")),
                       page.fmt_ns(sw.num("run_ns"))))


def build(docs, ctx):
    out = []
    for doc in docs:
        sw = doc.obj("sweep")
        out.append(page.command(doc))
        skipped = [r for r in sw.arr("runs").objs() if r.has("skipped")]
        if skipped:
            out.append(page.note("Not run: " + "; ".join(
                "%s %s stride %d (%s)" % (r.str("mode"), page.fmt_bytes(r.num("bytes")),
                                          r.num("stride"), r.str("skipped")) for r in skipped)))
        if sw.num("runs_done") < sw.num("runs_planned"):
            out.append(page.note("Stopped early: %d of %d runs done." % (
                sw.num("runs_done"), sw.num("runs_planned"))))
        out.append(_plot(doc, sw, ctx))
        rows = []
        base = sw.obj("baseline", nullable=True)
        for r in ([base] if base is not None else []) + sw.arr("runs").objs():
            if r.has("skipped") or not r.has("summary"):
                continue
            s = r.obj("summary")
            ld = r.obj("load", nullable=True)
            rows.append((r.str("mode"), page.fmt_bytes(r.num("bytes", nullable=True)),
                         page.fmt_bytes(r.num("stride", nullable=True)),
                         page.fmt_ns(s.num("p99_ns", nullable=True)),
                         page.fmt_ns(s.num("p999_ns", nullable=True)),
                         page.fmt_ns(s.num("max_ns", nullable=True)),
                         page.fmt_num(s.num("overruns")),
                         "-" if ld is None else page.fmt_num(ld.num("vm_minor_faults")),
                         "-" if ld is None else page.fmt_bytes(ld.num("vm_bytes_written"))))
        out.append(page.table(("mode", "size", "stride", "p99", "p99.9", "worst", "overruns",
                               "load's faults", "load wrote"), rows))
        if doc.raw("virtual_machine"):
            out.append(page.note("Measured in a virtual machine: compare the curves with the "
                                 "idle baseline, not with a board's figures."))
    return "".join(out)
