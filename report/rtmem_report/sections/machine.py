"""The machine and the setup each run was really granted: what every other
section's figures stand on."""

from .. import page

TITLE = "Machine and setup"
ANCHOR = "machine"
TOOL = None
VERSION = None
MAKE = "make bench"

_FACTS = (("cpu_model", "CPU"), ("cpus_online", "CPUs online"), ("arch", "architecture"),
          ("sysname", "system"), ("kernel_release", "kernel"), ("kernel_version", "kernel build"),
          ("libc", "glibc"), ("compiler", "compiler"))


def _granted(step):
    """'yes', or 'no: why' for one {requested, granted, error} step."""
    if step is None or not step.bool("requested"):
        return ("not asked", "")
    if step.bool("granted"):
        return ("yes", "")
    return ("NO: %s" % (step.str("error", nullable=True) or "refused"), "bad")


def accepts(doc):
    """A document of the schema version its tool's section draws (an older
    layout may lack the envelope)."""
    from ..build import drawn

    return drawn(doc)


def build(docs, ctx):
    out = []
    first = docs[0].obj("machine")
    rows = [(label, str(first.raw(key))) for key, label in _FACTS]
    out.append(page.table(("machine", ""), rows, numeric_from=2))
    differ = []
    for d in docs[1:]:
        m = d.obj("machine")
        for key, label in _FACTS:
            if key != "kernel_version" and m.raw(key) != first.raw(key):
                differ.append("%s: %s %s" % (d.name, label, m.raw(key)))
    emulated = sorted(set("%s (%s)" % (d.obj("machine").raw("emulation"), d.name) for d in docs
                          if d.obj("machine").raw("emulation")))
    if emulated:
        out.append(page.note("Run under emulation: %s. Every time in these files is the "
                             "emulator's, not the program's: read them for behaviour only."
                             % "; ".join(emulated)))
    if differ:
        out.append(page.note("These results do not all come from one machine (%s): compare "
                             "their figures with care." % "; ".join(differ)))

    rows = []
    for d in docs:
        t = d.obj("timer", nullable=True)  # null: the tool times nothing (rtmem trace)
        rt = d.obj("real_time", nullable=True)
        if rt is None:
            pinned = fifo = locked = ("-", "")
            vmlck = "-"
            policy = "-"
        else:
            pinned = _granted(rt.obj("affinity"))
            if pinned[0] == "yes":
                pinned = ("CPU %d" % rt.num("cpu_now"), "")
            fifo = _granted(rt.obj("fifo"))
            policy = "%s %d" % (rt.str("policy"), rt.num("priority"))
            locked = _granted(rt.obj("mlockall"))
            vmlck = page.fmt_bytes(rt.num("vmlck_kb") * 1024)
        if t is None:
            timer = ("-", "-", "-", "-")
        else:
            timer = (t.str("source"), page.fmt_ns(t.num("overhead_p50_ns")),
                     page.fmt_ns(t.num("overhead_p99_ns")), page.fmt_ns(t.num("resolution_ns")))
        rows.append((d.name,) + timer + (pinned, fifo, policy, locked, vmlck))
    out.append(page.para(
        "The setup each run asked for and was granted (the tools check it rather than assume "
        "it). A timer reading pair's cost is inside every timed sample: the tools' plots draw "
        "it, or the no-op call, as their noise floor."))
    out.append(page.table(("result", "timer", "reading pair p50", "p99", "resolution", "pinned",
                           "SCHED_FIFO", "policy", "mlockall", "locked (VmLck)"), rows,
                          numeric_from=2))
    out.append(_floors(docs))
    return "".join(out)


def _floors(docs):
    """The floors under the figures: below them, a figure is the machine's."""
    rows = []
    for d in docs:
        if d.tool == "bench" and d.version == 2 and d.obj("floor").has("alloc_avg_ns"):
            f = d.obj("floor")
            rows.append(("bench's no-op call (%s)" % d.name,
                         "alloc %s, free %s" % (page.fmt_ns(f.num("alloc_avg_ns")),
                                                page.fmt_ns(f.num("free_avg_ns"))),
                         "the same timing loop calling a function that does nothing: inside "
                         "every bench figure"))
        if d.tool == "wcet" and d.version == 1:
            for s in d.arr("scenarios").objs():
                if s.str("kind") == "noop" and s.has("warm"):
                    rows.append(("wcet's noop scenario (%s)" % d.name,
                                 "p99 %s" % page.fmt_ns(s.obj("warm").num("p99_ns")),
                                 "the harness's call alone"))
        if d.tool == "latency" and d.version == 1 and d.str("mode") == "noise":
            n = d.obj("noise")
            rows.append(("the clock's gaps, spinning (%s)" % d.name,
                         "longest %s, %s in all over %s" % (
                             page.fmt_ns(n.num("max_ns", nullable=True)),
                             page.fmt_ns(n.num("total_ns")), page.fmt_ns(n.num("spun_ns"))),
                         "time the CPU spent elsewhere: a wake-up due in such a gap is late by it"))
    if not rows:
        return ""
    return (page.heading(3, "Noise floors") +
            page.table(("floor", "figure", "what it is"), rows, numeric_from=1, numeric_to=2))
