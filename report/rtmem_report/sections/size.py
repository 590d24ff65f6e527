"""rtmem size: each kind's proven pool bound for stated limits, and how
close the adversaries came to it."""

from .. import page, plot

TITLE = "Pools that never run out (rtmem size)"
ANCHOR = "size"
TOOL = "size"
VERSION = 1
MAKE = ("rtmem size --max-live 64K --max-block 4K --min-block 16 --adversaries "
        "--json {dir}/size.json")


def _limits(doc):
    lim = doc.obj("limits")
    words = "at most %s live, requests of %s to %s" % (
        page.fmt_bytes(lim.num("max_live")), page.fmt_bytes(lim.num("min_block")),
        page.fmt_bytes(lim.num("max_block")))
    if lim.num("max_align"):
        words += ", aligned up to %d" % lim.num("max_align")
    return words + (", lock: %s" % lim.str("lock") if lim.str("lock") != "none" else "")


def build(docs, ctx):
    out = []
    for doc in docs:
        out.append(page.command(doc))
        live = doc.obj("limits").num("max_live")
        out.append(page.para(
            "Limits: %s. The bound is the pool in which no sequence of calls within them can "
            "make an allocation fail, proven from the kind's structure (rtm_heap_pool_bound_ex, "
            "docs/size.md); the adversaries are sequences within the same limits built to need "
            "as much as they can, each run on a pool of the bound (where none may fail) and "
            "searched for the smallest pool it needs." % _limits(doc)))
        kinds = doc.arr("kinds").objs()
        names = [a.str("name") for k in kinds for a in k.arr("adversaries").objs()]
        names = list(dict.fromkeys(names))
        rows = []
        for k in kinds:
            advs = {a.str("name"): a for a in k.arr("adversaries").objs()}
            bound = k.num("bound", nullable=True)
            worst = k.num("worst_found", nullable=True)
            cells = [k.str("kind"),
                     page.fmt_bytes(bound) if bound else (k.str("why", nullable=True) or "-"),
                     "%.1fx" % (bound / max(live, 1)) if bound else "-",
                     page.fmt_bytes(worst) if worst else "-",
                     "%.1fx" % (bound / worst) if bound and worst else "-"]
            for n in names:
                a = advs.get(n)
                if a is None:
                    cells.append("-")
                elif not a.bool("held_at_bound"):
                    cells.append("EXCEEDED")
                else:
                    cells.append(page.fmt_bytes(a.num("needed")))
            rows.append(tuple(cells))
        out.append(page.table(("kind", "bound", "x max live", "worst found", "bound / worst")
                              + tuple(names), rows))
        drawn = [k for k in kinds if k.num("bound", nullable=True) and k.arr("adversaries").objs()]
        if drawn:
            fig, axes = plot.figure(11.5, 1.0 + 0.5 * len(drawn) * (len(names) + 1) / 2)
            ax = axes[0][0]
            y = 0
            ticks, labels = [], []
            for k in reversed(drawn):
                for a in reversed(k.arr("adversaries").objs()):
                    if a.bool("held_at_bound"):
                        ax.barh(y, a.num("needed"), 0.7, color=plot.colour(k.str("kind")),
                                hatch=plot.hatch(k.str("kind")))
                    ticks.append(y)
                    labels.append("%s: %s" % (k.str("kind"), a.str("name")))
                    y += 1
                ax.plot([k.num("bound")] * 2, [y - len(names) - 0.4, y - 0.6], color="#d62728",
                        linewidth=2)
                y += 0.6
            ax.axvline(live, color="#444444", linestyle="--", linewidth=1)
            ax.set_yticks(ticks)
            ax.set_yticklabels(labels, fontsize=7)
            ax.set_xscale("log")
            ax.set_xlabel("pool (bytes): each adversary's smallest (bars), the bound (red), "
                          "max live (dashed)")
            out.append(ctx.png("pools", fig, "size: the bound against the adversaries",
                               "Per kind, the smallest pool each adversary needed (bars) and "
                               "the proven bound (red), against the limit of live bytes "
                               "(dashed), on a logarithmic axis. docs/size.md reads them."))
    return "".join(out)
