"""rtmem latency (its periodic thread, alone or under pressure) and rtmem
latency --noise: histograms with a logarithmic count axis, idle against
under pressure, and the machine's own noise."""

from .. import page, plot

TITLE = "Wake-up latency (rtmem latency)"
ANCHOR = "latency"
TOOL = "latency"
VERSION = 1
MAKE = "rtmem latency --json {dir}/latency.json"

# One colour per run, idle first, the same on both plots.
SHADES = ["#1f77b4", "#d62728", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b"]


def accepts(doc):
    return doc.str("mode") in ("latency", "noise")


def load_label(doc):
    """'idle' or what the load was: 'vm=2 bytes=128M stride=4096'."""
    p = doc.obj("pressure", nullable=True)
    if p is None:
        return "idle"
    ld = p.obj("load")
    parts = []
    if ld.num("vm"):
        parts.append("vm=%d bytes=%s stride=%d%s" % (
            ld.num("vm"), page.fmt_bytes(ld.num("bytes")), ld.num("stride"),
            "" if ld.str("mode") == "plain" else " " + ld.str("mode")))
    for k in ("spin", "sync", "hdd"):
        if ld.num(k):
            parts.append("%s=%d" % (k, ld.num(k)))
    return "under " + (" ".join(parts) or "a load")


def _setup(doc):
    bits = []
    bits.append("SCHED_FIFO+mlock" if doc.bool("real_time_granted") else "NOT real-time")
    if doc.raw("virtual_machine"):
        bits.append("VM")
    if doc.raw("cpu_isolated"):
        bits.append("isolated CPU")
    if doc.raw("steal_ms"):
        bits.append("steal %d ms" % doc.num("steal_ms"))
    if doc.has("cpu_dma_latency"):
        dma = doc.obj("cpu_dma_latency")
        if dma.bool("held"):
            bits.append("idle states held (cpu_dma_latency 0)")
        elif not dma.bool("hold_zero"):
            bits.append("the machine's idle states (--default-system)")
        else:
            bits.append("idle states NOT held")
    return ", ".join(bits)


def _hist_steps(hist):
    xs, ys = [], []
    for b in hist.objs():
        xs += [b.num("lo_ns") / 1000.0, b.num("hi_ns") / 1000.0]
        ys += [max(b.num("count"), 0.8)] * 2  # an empty bucket drawn just under 1
    return xs, ys


def _hist_plot(lat, noise, ctx):
    panels = (1 if lat else 0) + (1 if noise else 0)
    fig, axes = plot.figure(11.5 if panels == 2 else 7.0, 4.4, ncols=panels)
    axes = list(axes[0])
    if lat:
        ax = axes.pop(0)
        ordered = sorted(lat, key=lambda d: load_label(d) != "idle")
        for i, d in enumerate(ordered):
            xs, ys = _hist_steps(d.arr("histogram"))
            worst = d.obj("summary").num("max_ns", nullable=True)  # null: no wake-up
            c = SHADES[i % len(SHADES)]
            ax.plot(xs, ys, color=c, linewidth=1.5, label="%s (%s): max %s" % (
                load_label(d), d.name, page.fmt_ns(worst)))
            if worst is not None:
                ax.axvline(worst / 1000.0, color=c, linewidth=0.8, linestyle=":")
        plot.log10_axis(ax, axis="x")
        plot.log10_axis(ax, axis="y")
        ax.set_ylim(bottom=0.7)
        ax.set_xlabel("wake-up latency (us, log scale; log2 buckets)")
        ax.set_ylabel("wake-ups (log scale)")
        ax.set_title("periodic thread: idle against under pressure")
        ax.legend(fontsize=7.5)
    if noise:
        ax = axes.pop(0)
        for d in noise:
            xs, ys = _hist_steps(d.obj("noise").arr("histogram"))
            ax.plot(xs, ys, color="#7f7f7f", linewidth=1.5, label=d.name)
        ax.axvline(1000, color="#b00020", linewidth=0.8, linestyle="--",
                   label="1 ms: a stall of the machine")
        plot.log10_axis(ax, axis="x")
        plot.log10_axis(ax, axis="y")
        ax.set_ylim(bottom=0.7)
        ax.set_xlabel("gap between two clock readings (us, log scale)")
        ax.set_ylabel("gaps (log scale)")
        ax.set_title("the machine's noise (--noise), the same CPU")
        ax.legend(fontsize=7.5)
    return ctx.png("histogram", fig, "latency histograms, idle and under pressure",
                   "How late the periodic thread woke, as a histogram of log2 buckets with a "
                   "logarithmic count axis (a single late wake-up still shows); dotted lines "
                   "mark each run's worst. The gaps a thread spinning on the clock saw on the "
                   "same CPU (--noise) are what the machine itself takes from a real-time "
                   "thread: a wake-up due in such a gap is late by it, whatever the load.")


def _per_second_plot(lat, ctx):
    fig, axes = plot.figure(11.5, 3.6)
    ax = axes[0][0]
    ordered = sorted(lat, key=lambda d: load_label(d) != "idle")
    for i, d in enumerate(ordered):
        pts = [(s.num("second"), s.num("max_ns", nullable=True)) for s in
               d.arr("per_second").objs()]
        pts = [(x, y / 1000.0) for x, y in pts if y is not None]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3,
                color=SHADES[i % len(SHADES)], label="%s (%s)" % (load_label(d), d.name))
    plot.log10_axis(ax)
    ax.set_xlabel("second of the run")
    ax.set_ylabel("worst wake-up that second (us, log)")
    ax.legend(fontsize=7.5)
    return ctx.png("per-second", fig, "latency: the worst wake-up of each second",
                   "The worst wake-up of each second of each run: a single spike and a "
                   "steady level read differently.")


def build(docs, ctx):
    lat = [d for d in docs if d.str("mode") == "latency"]
    noise = [d for d in docs if d.str("mode") == "noise"]
    out = []
    for d in docs:
        out.append(page.command(d))
    rows = []
    for d in lat:
        s = d.obj("summary")
        pf = d.obj("page_faults")
        rows.append((d.name, load_label(d), page.fmt_num(s.num("samples")),
                     (page.fmt_num(s.num("overruns")), "bad" if s.num("overruns") else ""),
                     page.fmt_ns(s.num("min_ns", nullable=True)),
                     page.fmt_ns(s.num("avg_ns", nullable=True)),
                     page.fmt_ns(s.num("p99_ns", nullable=True)),
                     page.fmt_ns(s.num("p999_ns", nullable=True)),
                     page.fmt_ns(s.num("max_ns", nullable=True)),
                     "%d/%d" % (pf.num("minor"), pf.num("major")), _setup(d)))
    if rows:
        out.append(page.table(("result", "load", "wake-ups", "overruns", "min", "avg", "p99",
                               "p99.9", "max", "faults min/maj", "setup"), rows, numeric_from=2,
                              numeric_to=10))
    if lat and not any(d.has("pressure") for d in lat):
        out.append(page.note("No latency run under pressure here: `rtmem latency --pressure "
                             "vm=2,bytes=128M,stride=4096 --json %s/latency-pressure.json` "
                             "adds one (make bench does)." % ctx.results_dir))
    for d in noise:
        n = d.obj("noise")
        out.append(page.para(
            "Noise (%s): %s gaps above %s in %s spun, %s in all; the longest %s; %d stall(s) of "
            "1 ms or more%s; %d preemption(s)." % (
                d.name, page.fmt_num(n.num("gaps")), page.fmt_ns(n.num("threshold_ns")),
                page.fmt_ns(n.num("spun_ns")), page.fmt_ns(n.num("total_ns")),
                page.fmt_ns(n.num("max_ns", nullable=True)), n.num("stalls"),
                " (the machine's own: no preemption under SCHED_FIFO)"
                if n.bool("machine_stalls") else "", n.num("preempted"))))
    out.append(_hist_plot(lat, noise, ctx))
    if lat:
        out.append(_per_second_plot(lat, ctx))
    if any(d.raw("virtual_machine") for d in docs):
        out.append(page.note("Measured in a virtual machine: the hypervisor's own stalls set "
                             "the worst case here, not the kernel's scheduler."))
    return "".join(out)
