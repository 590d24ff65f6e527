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


def _glibc(h):
    """glibc's memory when the C library's allocator was measured (--kind
    glibc, glibc-rt), else None (files from before it have no member)."""
    return h.obj("glibc") if h.has("glibc") else None


def _glibc_cells(h, g):
    """glibc's or glibc-rt's heap and memory cells: no pool, its memory at
    the end."""
    if h.str("kind") == "glibc-rt":
        heap = "glibc-rt, a reserve of %s (%s)" % (page.fmt_bytes(h.num("pool_bytes")),
                                                   h.str("locked"))
    else:
        heap = "glibc, its defaults"
    if g.num("heap_bytes", nullable=True) is None:
        used = "not read (a signal handler wrote it)"
    else:
        used = "glibc's heap %s at the end, %s mmapped" % (
            page.fmt_bytes(g.num("heap_bytes")), page.fmt_bytes(g.num("mmapped_bytes")))
    return heap, used


def _row(who, h):
    calls = h.obj("calls")
    worst = h.obj("worst_ns", nullable=True)
    lock = h.obj("lock")
    g = _glibc(h)
    if g is not None:
        heap, used = _glibc_cells(h, g)
    else:
        heap = "%s, %s of %s (%s)" % (h.str("kind"), page.fmt_bytes(h.num("usable_bytes")),
                                      page.fmt_bytes(h.num("pool_bytes")), h.str("locked"))
        used = "%s (%s)" % (page.fmt_bytes(h.num("peak_used_bytes")),
                            page.fmt_pct(100.0 * h.num("peak_used_bytes")
                                         / max(h.num("usable_bytes"), 1)))
    return (who, heap, used,
            " / ".join("%d" % calls.num(op) for op in OPS),
            "%d" % h.num("failed"),
            "%d (%s)" % (h.num("fallbacks"), page.fmt_bytes(h.num("fallback_bytes")))
            if g is None else "-",
            "%d of %d" % (lock.num("contended"), lock.num("calls")) if g is None else "glibc's own",
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
        served = ("glibc's own malloc (%s), each call counted and timed by librtmem-malloc, "
                  "preloaded" % h.str("kind") if _glibc(h) is not None else
                  "an rtmem heap in a pool reserved up front (librtmem-malloc, preloaded)")
        out.append(page.para(
            "%s %s after %.3f s, its malloc family served by %s. Worst: each call's whole "
            "time as the program saw it, the wait for a lock included; a run's worst, not a "
            "bound (rtmem wcet builds those). docs/run.md reads the table." % (
                " ".join(p.arr("argv").strs()), _ended(p), p.num("seconds"), served)))
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
