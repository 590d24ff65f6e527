"""rtmem pressure: what the load alone did, second by second."""

from .. import page, plot

TITLE = "Memory pressure alone (rtmem pressure)"
ANCHOR = "pressure"
TOOL = "pressure"
VERSION = 1
MAKE = "rtmem pressure --json {dir}/pressure.json"


def _describe(ld):
    parts = []
    if ld.num("vm"):
        parts.append("%d vm worker(s) writing %s blocks every %d bytes (%s, %s)" % (
            ld.num("vm"), page.fmt_bytes(ld.num("bytes")), ld.num("stride"), ld.str("mode"),
            ld.str("alloc")))
    for k, what in (("spin", "spinning"), ("sync", "calling sync"), ("hdd", "writing to disk")):
        if ld.num(k):
            parts.append("%d worker(s) %s" % (ld.num(k), what))
    return "; ".join(parts) or "no worker"


def build(docs, ctx):
    out = []
    for doc in docs:
        ld, tot = doc.obj("load"), doc.obj("totals")
        out.append(page.command(doc))
        out.append(page.para("The load: %s; transparent huge pages %s." % (
            _describe(ld), ld.str("transparent_hugepages"))))
        ended = tot.num("ended_early_count")
        if ended:
            out.append(page.note("%d worker(s) ended early: %s" % (ended, "; ".join(
                "%s %s at %.1f s" % (e.str("kind"), e.str("how"), e.num("at_s"))
                for e in tot.arr("ended_early").objs()))))
        secs = doc.arr("per_second").objs()
        if secs:
            fig, axes = plot.figure(11.5, 3.6, ncols=2)
            t = [s.num("t_s") for s in secs]
            dt = [s.num("dt_s") or 1 for s in secs]
            ax = axes[0][0]
            ax.plot(t, [s.num("vm_bytes_swept") / 2.0 ** 30 / d for s, d in zip(secs, dt)],
                    marker="o", markersize=3, color="#1f77b4")
            ax.set_ylim(bottom=0)
            ax.set_xlabel("time (s)")
            ax.set_ylabel("GiB/s swept by the vm workers")
            ax = axes[0][1]
            ax.plot(t, [s.num("vm_faults") / d for s, d in zip(secs, dt)], marker="o",
                    markersize=3, color="#d62728")
            ax.set_ylim(bottom=0)
            ax.set_xlabel("time (s)")
            ax.set_ylabel("page faults per second")
            plot.short_numbers(ax)
            out.append(ctx.png("per-second", fig, "pressure: what the workers did per second",
                               "What the load's workers did in each second: the address range "
                               "their strides swept, and the page faults they took (each "
                               "fresh page of a block costs one)."))
        rows = [("seconds", page.fmt_num(tot.num("seconds"))),
                ("vm rounds", page.fmt_num(tot.num("vm_rounds"))),
                ("bytes swept", page.fmt_bytes(tot.num("vm_bytes_swept"))),
                ("minor faults", page.fmt_num(tot.num("vm_minor_faults"))),
                ("major faults", page.fmt_num(tot.num("vm_major_faults"))),
                ("spin loops", page.fmt_num(tot.num("spin_loops"))),
                ("sync calls", page.fmt_num(tot.num("sync_calls"))),
                ("disk bytes written", page.fmt_bytes(tot.num("hdd_bytes_written")))]
        out.append(page.table(("", "total"), rows))
    return "".join(out)
