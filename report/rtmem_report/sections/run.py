"""rtmem run: a program run unmodified on an rtmem heap (librtmem-malloc):
what the heap saw, for the program's process and each child it forked."""

from .. import page

TITLE = "Your program run on the heap (rtmem run)"
ANCHOR = "run"
TOOL = "run"
VERSION = 1
MAKE = "rtmem run --json {dir}/run.json -- PROGRAM [ARGS...]"

OPS = ("malloc", "calloc", "realloc", "aligned", "free")


def _ended(p):
    if not p.bool("status_known"):
        return "ended (how is not known)"
    if p.num("signal"):
        return "ended by signal %d" % p.num("signal")
    return "exited with status %d" % p.num("exit_status")


def _row(who, h):
    calls = h.obj("calls")
    worst = h.obj("worst_ns", nullable=True)
    lock = h.obj("lock")
    return (who,
            "%s, %s of %s (%s)" % (h.str("kind"), page.fmt_bytes(h.num("usable_bytes")),
                                   page.fmt_bytes(h.num("pool_bytes")), h.str("locked")),
            "%s (%s)" % (page.fmt_bytes(h.num("peak_used_bytes")),
                         page.fmt_pct(100.0 * h.num("peak_used_bytes") / max(h.num("usable_bytes"), 1))),
            " / ".join("%d" % calls.num(op) for op in OPS),
            "%d" % h.num("failed"),
            "%d (%s)" % (h.num("fallbacks"), page.fmt_bytes(h.num("fallback_bytes"))),
            "%d of %d" % (lock.num("contended"), lock.num("calls")),
            " / ".join(page.fmt_ns(worst.num(op)) if calls.num(op) else "-" for op in OPS)
            if worst is not None else "not timed")


def build(docs, ctx):
    out = []
    for doc in docs:
        out.append(page.command(doc))
        p = doc.obj("program")
        h = doc.obj("heap", nullable=True)
        if h is None:
            out.append(page.para("%s %s after %.3f s, and never ran on the heap: %s" % (
                " ".join(p.arr("argv").strs()), _ended(p), p.num("seconds"),
                doc.str("why_no_heap"))))
            continue
        out.append(page.para(
            "%s %s after %.3f s, its malloc family served by an rtmem heap in a pool reserved "
            "up front (librtmem-malloc, preloaded). Worst: each call's whole time as the "
            "program saw it, the wait for the lock included; a run's worst, not a bound "
            "(rtmem wcet builds those). docs/run.md reads the table." % (
                " ".join(p.arr("argv").strs()), _ended(p), p.num("seconds"))))
        rows = [_row("the program (pid %d)" % h.num("pid"), h)]
        for c in doc.arr("children").objs():
            rows.append(_row("child %d" % c.num("pid"), c))
        out.append(page.table(("process", "heap, usable of pool", "peak used",
                               "calls malloc / calloc / realloc / aligned / free", "failed",
                               "fallbacks", "lock held when taken", "worst call, same order"),
                              rows))
        if doc.num("children_not_listed"):
            out.append(page.para("%d more forked processes are not listed." %
                                 doc.num("children_not_listed")))
    return "".join(out)
