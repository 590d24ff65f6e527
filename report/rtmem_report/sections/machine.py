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
    if differ:
        out.append(page.note("These results do not all come from one machine (%s): compare "
                             "their figures with care." % "; ".join(differ)))

    rows = []
    for d in docs:
        t = d.obj("timer")
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
        rows.append((d.name, t.str("source"), page.fmt_ns(t.num("overhead_p50_ns")),
                     page.fmt_ns(t.num("overhead_p99_ns")), page.fmt_ns(t.num("resolution_ns")),
                     pinned, fifo, policy, locked, vmlck))
    out.append(page.para(
        "The setup each run asked for and was granted (the tools check it rather than assume "
        "it). A timer reading pair's cost is inside every timed sample: the tools' plots draw "
        "it, or the no-op call, as their noise floor."))
    out.append(page.table(("result", "timer", "reading pair p50", "p99", "resolution", "pinned",
                           "SCHED_FIFO", "policy", "mlockall", "locked (VmLck)"), rows,
                          numeric_from=2))
    return "".join(out)
