"""rtmem stride: the cost of an access against the size walked, with the
caches marked."""

from .. import page, plot

TITLE = "Cache strides (rtmem stride)"
ANCHOR = "stride"
TOOL = "stride"
VERSION = 1
MAKE = "rtmem stride --json {dir}/stride.json"

SHADES = {"stride_1": "#1f77b4", "stride_16": "#ff7f0e", "chase": "#2ca02c"}


def first_touch(doc):
    """A --first-touch run: the published program's three loops, a row per
    size (no curve: it measures no sizes one after another)."""
    rows = []
    for r in doc.arr("first_touch").objs():
        loops = [r.obj(k) for k in ("loop1_first_touch", "loop2", "loop1_again")]
        rows.append((page.fmt_bytes(r.num("bytes")),)
                    + tuple("%.1f ms (%d faults)" % (x.num("median_ns") / 1e6,
                                                      x.num("minor_faults")) for x in loops)
                    + ("%.2f" % r.num("ratio_loop1_over_loop2"),
                       "%.2f" % r.num("ratio_again_over_loop2"),
                       "%.2f" % r.num("ratio_16_over_1_per_access")))
    return page.table(("size", "stride 1, first touch", "stride 16", "stride 1 again",
                       "first / 16", "again / 16", "16 / 1 per access"), rows,
                      numeric_from=1) + page.note(
        "rtmem stride --first-touch: the published two-loop program, stride 1 over a fresh "
        "buffer (its page faults included), then stride 16, then stride 1 again; medians of "
        "the repetitions. docs/stride.md reads it.")


def build(docs, ctx):
    out = []
    for doc in docs:
        out.append(page.command(doc))
        if doc.has("first_touch"):
            out.append(first_touch(doc))
            continue
        pts = doc.arr("points").objs()
        fig, axes = plot.figure(11.5, 5.0)
        ax = axes[0][0]
        for p in doc.arr("patterns").objs():
            pid = p.str("id")
            xs = [q.num("bytes") for q in pts]
            med = [q.obj(pid).num("median_ns_per_access") for q in pts]
            lo = [q.obj(pid).num("p10_ns_per_access") for q in pts]
            hi = [q.obj(pid).num("p90_ns_per_access") for q in pts]
            c = SHADES.get(pid, "#7f7f7f")
            ax.plot(xs, med, marker="o", markersize=3, color=c, label=p.str("name"))
            ax.fill_between(xs, lo, hi, color=c, alpha=0.18, linewidth=0)
        plot.cache_lines(ax, doc.arr("caches"), [q.num("bytes") for q in pts])
        plot.log2_size_axis(ax)
        plot.log10_axis(ax)
        ax.set_xlabel("size walked (bytes, log scale)")
        ax.set_ylabel("ns per access (log scale)")
        ax.legend(fontsize=8, loc="upper left")
        out.append(ctx.png("curve", fig, "stride: ns per access against size",
                           "The time of one access against the size of the buffer walked: "
                           "every int in turn (stride 1), one int per 64-byte line (stride 16), "
                           "and a random chase of dependent loads, one per line. Lines: the "
                           "median repetition; bands: p10 to p90. Dotted verticals: the CPU's "
                           "caches as sysfs lists them. docs/stride.md reads the curve."))
        rows = []
        for pid, jumps in ((k, doc.obj("jumps").arr(k).objs()) for k in doc.obj("jumps").keys()):
            for j in jumps:
                rows.append((pid, "%s -> %s" % (page.fmt_bytes(j.num("from_bytes")),
                                                page.fmt_bytes(j.num("to_bytes"))),
                             "%.3g -> %.3g ns" % (j.num("from_ns"), j.num("to_ns")),
                             "%.1fx" % j.num("factor"), ", ".join(j.arr("past").strs()) or "-"))
        if rows:
            out.append(page.table(("pattern", "between sizes", "per access", "factor",
                                   "caches passed"), rows, numeric_from=1, numeric_to=4))
        buf = doc.obj("buffer")
        if buf.raw("message"):
            out.append(page.note("The buffer: " + buf.str("message")))
    return "".join(out)
