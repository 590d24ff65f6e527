"""rtmem replay: a user's trace replayed on every heap kind (and a user's
plugins beside them): the pool each needs against the program's peak, the
time per call, and the verdict (also the page's first line: headline())."""

from .. import page, plot

TITLE = "Your program on every heap (rtmem replay)"
ANCHOR = "replay"
TOOL = "replay"
VERSION = 1
MAKE = "rtmem replay --json {dir}/replay.json {dir}/program.trace"

# The heaps a pool is searched for: rtmem's kinds and plugins.
BOUNDED = ("rtmem", "plugin")


def _verdict(doc):
    """The verdict in a sentence, with the figures it rests on."""
    v = doc.obj("verdict")
    p = doc.obj("program")
    words = []
    a = v.obj("advised", nullable=True)
    tried = [x for x in doc.arr("allocators").objs()
             if x.str("origin") in BOUNDED and x.bool("replayed")]
    if not v.bool("needs_heap"):
        words.append("what was replayed makes no allocation: it needs no heap")
    elif a is not None:
        words.append("use %s on a pool of %s (the smallest that fits this trace is %s, %.2fx its "
                     "peak of %s asked; its worst call %s)" % (
                         a.str("kind"), page.fmt_bytes(a.num("pool")),
                         page.fmt_bytes(a.num("min_pool")),
                         a.num("min_pool") / max(p.num("peak_live_bytes"), 1),
                         page.fmt_bytes(p.num("peak_live_bytes")),
                         page.fmt_ns(a.num("worst_call_ns"))))
    elif not tried:
        words.append("no heap (an rtmem kind or a plugin) was replayed (--kinds)")
    else:
        words.append("no heap fits this trace within the search's limit")
    if v.has("other_images") and v.num("other_images"):
        words.append("%d other process image(s) of this run recorded beside it: each needs a "
                     "heap of its own (replay each)" % v.num("other_images"))
    threads = p.num("threads")
    if v.bool("needs_lock"):
        words.append("a locked heap: %d threads allocate or free" % threads)
    else:
        words.append("no lock needed: %s" % ("one thread allocates and frees" if threads
                                             else "no thread calls the heap"))
    return "; ".join(words) + "."


def _instructions(a):
    """Instructions per call counted under callgrind, or why not."""
    n = a.raw("instructions")
    if isinstance(n, dict):
        return "%.0f / %.0f" % (n["alloc"], n["free"])
    return "-"


def headline(docs):
    """The page's first line: the last replay's verdict."""
    doc = docs[-1]
    what = ("phase '%s' of " % doc.str("phase")) if doc.raw("phase") else ""
    return "Your program (%s%s): %s" % (what, doc.str("trace_path"), _verdict(doc))


def build(docs, ctx):
    out = []
    for doc in docs:
        out.append(page.command(doc))
        out.append(page.para("Verdict: " + _verdict(doc)))
        p = doc.obj("program")
        peak = p.num("peak_live_bytes")
        kinds = [a for a in doc.arr("allocators").objs()
                 if a.str("origin") in BOUNDED and a.bool("replayed") and a.bool("fits")]
        timed = [a for a in doc.arr("allocators").objs() if a.bool("replayed")
                 and a.obj("alloc").num("count") > 0]
        if kinds:
            fig, axes = plot.figure(11.5, 1.2 + 0.45 * max(len(kinds), len(timed)), ncols=2)
            ax = axes[0][0]
            ys = list(range(len(kinds)))[::-1]
            for y, a in zip(ys, kinds):
                ax.barh(y, a.num("min_pool"), 0.6, color=plot.colour(a.str("name")),
                        hatch=plot.hatch(a.str("name")))
                ax.text(a.num("min_pool"), y, " %.2fx" % (a.num("min_pool") / max(peak, 1)),
                        va="center", fontsize=8)
                if a.raw("bound") is not None:  # the proven pool, too large to draw to scale
                    ax.text(a.num("min_pool") * 0.02, y, "bound %s (%.0fx)" % (
                        page.fmt_bytes(a.num("bound")), a.num("bound") / max(a.num("min_pool"), 1)),
                        va="center", fontsize=7, color="white")
            ax.axvline(peak, color="#444444", linestyle="--", linewidth=1)
            ax.set_yticks(ys)
            ax.set_yticklabels([a.str("name") for a in kinds], fontsize=8)
            ax.set_xlabel("smallest pool that fits (bytes); dashed: the peak asked")
            plot.short_numbers(ax, "x")
            bx = axes[0][1]
            ys = list(range(len(timed)))[::-1]
            for y, a in zip(ys, timed):
                bx.barh(y + 0.2, a.obj("alloc").num("mean_ns"), 0.35, color="#1f77b4")
                bx.barh(y - 0.2, a.num("worst_ns"), 0.35, color="#d62728")
            floor = doc.obj("floor", nullable=True) if doc.has("floor") else None
            if floor is not None and floor.obj("alloc").num("mean_ns") > 0:
                bx.axvline(floor.obj("alloc").num("mean_ns"), color="#444444", linestyle=":",
                           linewidth=1)
            bx.set_yticks(ys)
            bx.set_yticklabels([a.str("name") for a in timed], fontsize=8)
            bx.set_xscale("log")
            bx.set_xlabel("ns per call: alloc average (blue), worst (red); dotted: a no-op's")
            out.append(ctx.png("pools", fig, "replay: pool per kind and time per call",
                               "Left: the smallest pool in which the whole replay never fails, "
                               "per kind, against the peak of bytes the program's live blocks "
                               "asked (dashed); inside each bar, the kind's proven bound for "
                               "the trace's limits and its ratio to that pool. Right: the average allocation and the worst "
                               "call (each replay's longest, the median over the replays), in "
                               "ns; dotted, where the results have it, the noise floor: the "
                               "same replay with every call a no-op. docs/replay.md reads "
                               "them."))
        rows = []
        for a in doc.arr("allocators").objs():
            if not a.bool("replayed"):
                why = a.str("why_not", nullable=True) or "not replayed"
                if a.has("failed") and a.bool("failed"):
                    why = "FAILED: " + why
                rows.append((a.str("name"), why,
                             "", "", "", "", "", "", "", ""))
                continue
            rtm = a.str("origin") in BOUNDED
            fits = rtm and a.bool("fits")
            rows.append((a.str("name"),
                         page.fmt_bytes(a.num("min_pool")) if fits else
                         ("does not fit" if rtm else "-"),
                         ("%.2fx" % (a.num("min_pool") / max(peak, 1))) if fits else "-",
                         page.fmt_bytes(a.num("advised_pool")) if fits else "-",
                         page.fmt_ns(a.obj("alloc").num("mean_ns")),
                         page.fmt_ns(a.obj("free").num("mean_ns")),
                         page.fmt_ns(a.num("worst_ns")),
                         page.fmt_pct(100.0 * a.num("fragmentation_at_peak"))
                         if a.raw("fragmentation_at_peak") is not None else "-",
                         page.fmt_bytes(a.num("bound")) if rtm and a.raw("bound") is not None
                         else "-",
                         _instructions(a)))
        out.append(page.table(("allocator", "smallest pool", "x peak", "advised pool",
                               "alloc avg", "free avg", "worst call", "fragmentation at peak",
                               "bound", "instructions alloc / free"),
                              rows))
        lim = p.obj("limits") if p.has("limits") else None
        if lim is not None and lim.num("max_live"):
            out.append(page.para(
                "Bound: the pool in which no sequence within this trace's limits (%s live, a "
                "realloc's old and new block counted; requests of %s to %s) can make an "
                "allocation fail, proven from the kind's structure (rtm_heap_pool_bound_ex, "
                "docs/size.md). The smallest pool is enough for this trace; the bound, for any "
                "order of calls within the same limits." % (
                    page.fmt_bytes(lim.num("max_live")), page.fmt_bytes(lim.num("min_block")),
                    page.fmt_bytes(lim.num("max_block")))))
    return "".join(out)
