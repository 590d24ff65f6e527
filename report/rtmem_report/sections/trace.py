"""rtmem trace: a user's program's allocations, recorded unmodified: live
bytes over its run with its phases, the sizes it asks, its phases."""

from .. import page, plot

TITLE = "Your program's allocations (rtmem trace)"
ANCHOR = "trace"
TOOL = "trace"
VERSION = 1
MAKE = "rtmem trace -o {dir}/program.trace --json {dir}/trace.json -- PROGRAM"


def accepts(doc):
    return doc.obj("trace", nullable=True) is not None


def build(docs, ctx):
    out = []
    for doc in docs:
        out.append(page.command(doc))
        t = doc.obj("trace")
        secs = t.num("seconds")
        series = t.arr("live_series").nums(nullable=True)
        phases = t.arr("phases").objs()
        fig, axes = plot.figure(11.5, 4.2, ncols=2, gridspec_kw={"width_ratios": [2.2, 1]})
        ax = axes[0][0]
        n = len(series)
        xs = [secs * (k + 0.5) / n for k in range(n) if series[k] is not None]
        ys = [v for v in series if v is not None]
        ax.step(xs, ys, where="mid", color="#1f77b4", linewidth=1.2)
        for p in phases[1:]:
            ax.axvline(p.num("start_s"), color="#888888", linestyle=":", linewidth=1)
            ax.text(p.num("start_s"), ax.get_ylim()[1] * 0.97, " " + p.str("name"),
                    fontsize=8, va="top", color="#555555")
        ax.set_xlabel("seconds since the program started")
        ax.set_ylabel("bytes asked by live blocks")
        plot.short_numbers(ax)
        bx = axes[0][1]
        hist = [(b.num("lo_bytes"), b.num("count")) for b in t.arr("size_histogram").objs()]
        labels = [plot.size_label(lo) for lo, _ in hist]
        bx.barh(range(len(hist))[::-1], [c for _, c in hist], color="#ff7f0e")
        bx.set_yticks(list(range(len(hist))[::-1]))
        bx.set_yticklabels(labels, fontsize=7)
        bx.set_xlabel("allocations")
        bx.set_ylabel("size asked, from")
        bx.set_xscale("log")
        out.append(ctx.png("live", fig, "trace: live bytes over time, and the sizes asked",
                           "Left: the bytes the program's live blocks asked for, over its run "
                           "(the most in each of %d equal slices), with its phases marked. "
                           "Right: its allocations by size, in ranges of powers of two. "
                           "docs/trace.md reads them." % n))
        rows = []
        for p in phases:
            span = p.num("end_s") - p.num("start_s")
            rows.append((p.str("name"), "%.3f" % p.num("start_s"), "%.3f" % span,
                         page.fmt_num(p.num("calls")), page.fmt_num(p.num("allocs")),
                         page.fmt_num(p.num("calls") / span) if span > 0 else "-",
                         page.fmt_bytes(p.num("peak_live_bytes"))))
        out.append(page.table(("phase", "from s", "for s", "calls", "allocations", "calls/s",
                               "peak live"), rows))
        last = phases[-1]
        if len(phases) > 1 and last.num("calls") == 0:
            out.append(page.note("The last phase ('%s') makes no call of the malloc family: "
                                 "the program needs no heap in it." % last.str("name")))
        out.append(page.para("%s calls; %s threads; peak %s asked by live blocks at %.3f s; "
                             "ended: %s." % (page.fmt_num(t.num("calls")),
                                            page.fmt_num(t.num("threads")),
                                            page.fmt_bytes(t.num("peak_live_bytes")),
                                            t.num("peak_at_s"), t.str("ending_text"))))
    return "".join(out)
