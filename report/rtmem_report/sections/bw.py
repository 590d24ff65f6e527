"""rtmem bw: copy bandwidth per method against size, after each way of
preparing the memory (with its page faults), and warm against flushed."""

from .. import page, plot

TITLE = "Copy bandwidth (rtmem bw)"
ANCHOR = "bw"
TOOL = "bw"
VERSION = 1
MAKE = "rtmem bw --json {dir}/bw.json"

SHADES = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2"]
METHODS = ("memcpy", "dumb", "mcblock", "mcblock-same")
PREPS = ("none", "prefault", "mlock", "memset")
STATES = ("warm", "flushed", "nt")


def _curves(doc, ctx, points, keys, name, title, caption):
    fig, axes = plot.figure(11.5, 4.4)
    ax = axes[0][0]
    for i, k in enumerate(keys):
        pts = [(p.num("bytes"), p.obj(k)) for p in points if p.has(k)]
        if not pts:
            continue
        xs = [x for x, _ in pts]
        ax.plot(xs, [f.num("median_mib_s") / 1024.0 for _, f in pts], marker="o",
                markersize=3, color=SHADES[i % len(SHADES)], label=k)
        ax.fill_between(xs, [f.num("p10_mib_s") / 1024.0 for _, f in pts],
                        [f.num("p90_mib_s") / 1024.0 for _, f in pts],
                        color=SHADES[i % len(SHADES)], alpha=0.15, linewidth=0)
    plot.cache_lines(ax, doc.arr("caches"), [p.num("bytes") for p in points])
    plot.log2_size_axis(ax)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("bytes per copy (log scale)")
    ax.set_ylabel("GiB/s (median; band p10-p90)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    return ctx.png(name, fig, title, caption)


def _cache_bars(doc, ctx, cache):
    points = cache.arr("points").objs()
    if not points:
        return ""
    fig, axes = plot.figure(11.5, 4.0)
    ax = axes[0][0]
    width = 0.8 / len(STATES)
    for j, state in enumerate(STATES):
        for i, p in enumerate(points):
            f = p.obj(state, nullable=True) if p.has(state) else None
            if f is None:
                continue
            x = i + (j - (len(STATES) - 1) / 2.0) * width
            v = f.num("median_mib_s") / 1024.0
            ax.bar(x, v, width, color=SHADES[j], label=state if i == 0 else None)
            ax.errorbar(x, v, yerr=[[v - f.num("p10_mib_s") / 1024.0],
                                    [f.num("p90_mib_s") / 1024.0 - v]],
                        color="#333333", capsize=3, linewidth=0.8)
    ax.set_xticks(range(len(points)))
    ax.set_xticklabels(["%s (%s)" % (page.fmt_bytes(p.num("bytes")), p.str("level"))
                        for p in points])
    ax.set_xlabel("bytes per copy (where source and destination together fit)")
    ax.set_ylabel("GiB/s (median; bars p10-p90)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    return ctx.png("cache", fig, "bw: memcpy warm, flushed and non-temporal",
                   "memcpy with source and destination in cache (warm), flushed first (%s), "
                   "and with non-temporal stores (nt), per copy size." % cache.str("flush_method"))


def _prep(doc, ctx):
    pr = doc.obj("prep", nullable=True)
    if pr is None:
        return ""
    names = [k for k in PREPS if pr.has(k)]
    fig, axes = plot.figure(11.5, 3.8, ncols=2)
    ax = axes[0][0]
    bw = [pr.obj(k).obj("copy").num("median_mib_s") / 1024.0 for k in names]
    ax.bar(names, bw, color=SHADES[: len(names)])
    for i, k in enumerate(names):
        f = pr.obj(k).obj("copy")
        ax.text(i, bw[i], "%s faults\nper copy" % page.fmt_num(f.num("minor_faults_per_copy")),
                ha="center", va="bottom", fontsize=7.5)
    ax.set_ylabel("copy GiB/s (median)")
    ax.set_ylim(0, max(bw + [0.001]) * 1.3)
    ax.set_title("the first copy into %s, after each preparation" %
                 page.fmt_bytes(pr.num("bytes")))
    ax = axes[0][1]
    prep_ms = [pr.obj(k).num("prep_median_ns") / 1e6 for k in names]
    ax.bar(names, prep_ms, color=SHADES[: len(names)], alpha=0.6)
    # prep_minor_faults counts every repetition's preparation: per one, as
    # the copy's beside it are per copy
    reps = max(1, doc.obj("params").num("reps"))
    per_prep = [pr.obj(k).num("prep_minor_faults") / reps for k in names]
    for i, k in enumerate(names):
        ax.text(i, prep_ms[i], "%s faults\nper preparation\n%s" % (
            page.fmt_num(round(per_prep[i])), pr.obj(k).str("lock_state")),
            ha="center", va="bottom", fontsize=7.5)
    ax.set_ylim(0, max(prep_ms + [0.001]) * 1.35)
    ax.set_ylabel("preparation time (ms, median)")
    ax.set_title("what the preparation itself cost")
    return ctx.png("prep", fig, "bw: copy after each preparation",
                   "A copy into fresh memory, after no preparation, a prefault (a write per "
                   "page), mlock, or a memset: left the copy's bandwidth and the page faults it "
                   "took (a fault per page when nothing was prepared), right what the "
                   "preparation cost and the lock it obtained, and its page faults per "
                   "preparation (%s; the JSON's prep_minor_faults are over all %s). The faults "
                   "move, they do not vanish: a real-time program pays them before its loop."
                   % (", ".join("%s %s" % (k, page.fmt_num(round(v)))
                                for k, v in zip(names, per_prep)), page.fmt_num(reps)))


def build(docs, ctx):
    out = []
    for doc in docs:
        out.append(page.command(doc))
        if not doc.bool("verified"):
            out.append(page.note("A copy did not hold its source's bytes: %s" %
                                 doc.str("mismatch")))
        if doc.has("methods"):
            out.append(_curves(doc, ctx, doc.arr("methods").objs(),
                               [m for m in METHODS], "methods", "copy bandwidth per method",
                               "Bandwidth of each copy method against the copy's size (source "
                               "and destination each that size): memcpy, an 8-byte element "
                               "loop (dumb), memcpy in blocks (mcblock; -same: the same block "
                               "again). Dotted: the caches."))
        out.append(_prep(doc, ctx))
        cache = doc.obj("cache", nullable=True)
        if cache is not None:
            out.append(_cache_bars(doc, ctx, cache))
    return "".join(out)
