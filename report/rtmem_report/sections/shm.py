"""rtmem shm: the shared-memory mechanisms side by side, per region size:
first touch, random writes and zeroing, with their page faults."""

from .. import page, plot

TITLE = "Shared-memory mechanisms (rtmem shm)"
ANCHOR = "shm"
TOOL = "shm"
VERSION = 2
MAKE = "rtmem shm --json {dir}/shm.json"

PHASES = (("touch", "first touch, per page (ns)"),
          ("writes", "random one-byte write, generator included (ns)"),
          ("zeroings", "zeroing the region (ns)"))


def _net(row):
    """The store's own cost per write as the table prints it: "0.42~0.05",
    "<0.05" within its precision of 0, "-0.47~0.09!" below minus it (the
    generator alone cost more than in the writes' loop: no measurement of
    the store), "0.42~?" where the precision is not known."""
    net = row.num("net_ns_per_write", nullable=True)
    p = row.num("net_precision_ns", nullable=True)
    if net is None:
        return "-"
    if p is None:
        return "%.2f~? ns" % net
    if net < -p:
        return "%.2f~%.2f ns!" % (net, p)
    if net <= p:
        return "<%.2f ns" % max(p, 0.01)
    return "%.2f~%.2f ns" % (net, p)


def _size_plot(doc, ctx, size, rows):
    n = len(rows)
    fig, axes = plot.figure(11.5, 1.4 + 0.3 * n, ncols=3, sharey=True)
    ys = list(range(n))[::-1]
    names = [r.str("mechanism") for r in rows]
    for ax, (phase, label) in zip(axes[0], PHASES):
        vals = []
        for r in rows:
            ph = r.obj("phases").obj(phase, nullable=True)
            vals.append(None if ph is None else ph.num("ns_per_op"))
        shown = [v for v in vals if v is not None and v > 0]
        for y, v, r in zip(ys, vals, rows):
            if v is None or v <= 0:
                continue
            java = r.str("mechanism").startswith("java:")
            ax.barh(y, v, 0.7, color="#ff7f0e" if java else "#1f77b4")
            ph = r.obj("phases").obj(phase)
            faults = ph.num("minor_faults") + ph.num("major_faults")
            words = []
            if phase == "writes":
                words.append("net " + _net(r))
            if phase == "touch" or faults:
                words.append("%s flt" % page.fmt_num(faults))
            if words:
                ax.text(v * 1.1, y, ", ".join(words), va="center", fontsize=7)
        if shown:
            plot.log10_axis(ax, axis="x")
            ax.set_xlim(min(shown) / 2, max(shown) * 8)
        if phase == "writes" and doc.has("rng_ns_per_write"):
            # What the writes' time includes: the rest of a bar is the store.
            rng = doc.num("rng_ns_per_write")
            if shown:
                ax.set_xlim(min(min(shown), rng) / 2, max(max(shown), rng) * 30)
            plot.floor_line(ax, rng, "the generator alone\n(included)", axis="x")
            ax.legend(fontsize=7, loc="upper right")
        ax.set_xlabel(label + ", log")
    axes[0][0].set_yticks(ys)
    axes[0][0].set_yticklabels(names, fontsize=8)
    return ctx.png("size-%s" % page.fmt_bytes(size), fig,
                   "shm: mechanisms at %s" % page.fmt_bytes(size),
                   "Each mechanism with a %s region (orange: the Java runner): the first touch "
                   "per page with its page faults (flt), one random one-byte write timed whole, "
                   "the generator of its indices included (dashed: the generator alone; beside "
                   "each bar the net, the store alone, as the median write less the generator, "
                   "with how precisely it is known: ~ the spread, < where the net is within it "
                   "of 0, ! where it is below minus it: the generator alone cost more than in "
                   "the writes' loop, and the store is not measured), "
                   "and one zeroing of the whole region, with the faults each phase took."
                   % page.fmt_bytes(size))


def build(docs, ctx):
    out = []
    for doc in docs:
        out.append(page.command(doc))
        rows = doc.arr("rows").objs()
        if not rows:
            out.append(page.note("Run with --duration: no table of phases to draw."))
            continue
        skipped = {}
        for r in rows:
            if r.str("status") == "skipped":
                skipped.setdefault(r.str("mechanism"), r.str("why"))
        if skipped:
            out.append(page.details("Not measured here: %s (why, and how to get them)"
                                    % ", ".join(skipped),
                                    ["%s: %s" % (k, v) for k, v in skipped.items()]))
        failed = [r for r in rows if r.str("status") == "failed"]
        for r in failed:
            out.append(page.note("%s at %s failed: %s" % (r.str("mechanism"),
                                                          page.fmt_bytes(r.num("bytes")),
                                                          r.str("why"))))
        sizes = []
        for r in rows:
            if r.num("bytes") not in sizes:
                sizes.append(r.num("bytes"))
        for size in sizes:
            measured = [r for r in rows if r.num("bytes") == size and r.str("status") != "skipped"]
            if measured:
                out.append(page.heading(3, "%s regions" % page.fmt_bytes(size)))
                out.append(_size_plot(doc, ctx, size, measured))
    return "".join(out)
