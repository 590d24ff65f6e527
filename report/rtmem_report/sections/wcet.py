"""rtmem wcet: each heap's worst cases, built on purpose: warm and cold
times, and the counted instructions and cache lines."""

from .. import page, plot

TITLE = "Worst cases (rtmem wcet)"
ANCHOR = "wcet"
TOOL = "wcet"
VERSION = 1
MAKE = "rtmem wcet --json {dir}/wcet.json"


def _p(s, key, stat):
    m = s.obj(key, nullable=True) if s.has(key) else None
    return None if m is None else m.num(stat)


def _scenario_plot(doc, ctx, scenarios, noop):
    n = len(scenarios)
    fig, axes = plot.figure(11.5, 1.2 + 0.24 * n, ncols=2, sharey=True)
    labels = ["%s  %s" % (s.str("kind"), s.str("id")) for s in scenarios]
    ys = list(range(n))[::-1]
    ax = axes[0][0]
    for y, s in zip(ys, scenarios):
        c = plot.colour(s.str("kind"))
        warm, cold = _p(s, "warm", "p99_ns"), _p(s, "cold", "p99_ns")
        if cold:
            ax.barh(y + 0.2, cold, 0.4, color=c, alpha=0.45, edgecolor="black", linewidth=0.5)
        if warm:
            ax.barh(y - 0.2, warm, 0.4, color=c)
    ax.set_yticks(ys)
    ax.set_yticklabels(labels, fontsize=7)
    plot.log10_axis(ax, axis="x")
    plot.floor_line(ax, noop, "noop call (p99)", axis="x")
    ax.set_xlabel("p99 ns per call (log): warm solid, cold pale")
    ax.legend(fontsize=8, loc="lower right")
    ax = axes[0][1]
    counted = False
    for y, s in zip(ys, scenarios):
        c = s.obj("counted", nullable=True) if s.has("counted") else None
        if c is None:
            continue
        counted = True
        ax.barh(y, c.num("instructions"), 0.6, color=plot.colour(s.str("kind")))
        ax.text(c.num("instructions") * 1.08, y, "%d lines" % c.num("data_lines"),
                va="center", fontsize=6.5, color="#333333")
    if counted:
        plot.log10_axis(ax, axis="x")
        ax.set_xlim(right=ax.get_xlim()[1] * 4)
    else:
        ax.text(0.5, 0.5, "not counted: %s" % (
            doc.obj("counting").str("why_not", nullable=True) or "-"),
            transform=ax.transAxes, ha="center", wrap=True)
    ax.set_xlabel("instructions counted (log), data lines beside")
    return ctx.png("scenarios", fig, "wcet: every scenario's time and counts",
                   "Every scenario, its heap's colour. Left: the p99 time of a call on a warm "
                   "image (solid, restored by a copy: its lines in cache) and a cold one (pale: "
                   "the image's lines flushed first), the noop call's p99 dashed. Right: the "
                   "instructions valgrind counted and the distinct 64-byte data lines touched: "
                   "the same on every run, whatever the machine is doing.")


def build(docs, ctx):
    out = []
    for doc in docs:
        out.append(page.command(doc))
        scen = doc.arr("scenarios").objs()
        noop = [s for s in scen if s.str("kind") == "noop"]
        noop_p99 = _p(noop[0], "warm", "p99_ns") if noop else None
        rest = [s for s in scen if s.str("kind") != "noop"]
        bad = [s for s in rest if not s.bool("passed")]
        if bad:
            out.append(page.note("Failed: " + "; ".join(
                "%s %s (%s)" % (s.str("kind"), s.str("id"), s.str("why", nullable=True) or "?")
                for s in bad)))
        rows = []
        for w in doc.arr("worst").objs():
            cells = [w.str("kind")]
            for key, fmt in (("instructions", page.fmt_num), ("data_lines", page.fmt_num),
                             ("warm_p99_ns", page.fmt_ns), ("cold_p99_ns", page.fmt_ns),
                             ("cold_max_ns", page.fmt_ns)):
                m = w.obj(key, nullable=True)
                cells.append("-" if m is None else "%s\n%s" % (fmt(m.num("value")),
                                                               m.str("scenario")))
            rows.append(cells)
        out.append(page.heading(3, "The worst per heap"))
        out.append(page.table(("kind", "instructions", "data lines", "warm p99", "cold p99",
                               "cold max"), rows))
        out.append(_scenario_plot(doc, ctx, rest, noop_p99))
        rows = []
        for s in rest:
            c = s.obj("counted", nullable=True) if s.has("counted") else None
            rows.append((s.str("kind"), s.str("id"), s.str("bound"),
                         ("yes", "") if s.bool("passed") else ("NO", "bad"),
                         page.fmt_num(c.num("instructions")) if c else "-",
                         page.fmt_num(c.num("data_lines")) if c else "-",
                         page.fmt_ns(_p(s, "warm", "p50_ns")), page.fmt_ns(_p(s, "warm", "p99_ns")),
                         page.fmt_ns(_p(s, "cold", "p50_ns")), page.fmt_ns(_p(s, "cold", "p99_ns")),
                         page.fmt_ns(_p(s, "cold", "max_ns"))))
        out.append(page.heading(3, "Every scenario"))
        out.append(page.table(("kind", "scenario", "bound", "passed", "instructions", "lines",
                               "warm p50", "warm p99", "cold p50", "cold p99", "cold max"), rows,
                              numeric_from=4))
        out.append(page.para("docs/wcet.md describes each scenario's path through the code."))
    return "".join(out)
