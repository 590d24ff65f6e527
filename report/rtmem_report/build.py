"""The report: the result files found, a section per tool, one page.

A section is a module of sections/ (listed in sections/__init__.py) with:
  TITLE    its heading
  ANCHOR   its id in the page (and the prefix of its plots' files)
  TOOL     the tool whose documents it reads (the schema's rtmem-<tool>;
           None: every document, as the machine's section does)
  VERSION  the schema version it reads (rtmem-<tool>/<VERSION>; None: any)
  MAKE     the command that makes its result file ({dir} is RESULTS_DIR)
  accepts(doc)      optional: which of the tool's documents are its own
  build(docs, ctx)  its HTML, from the documents of its schema (never empty)
  headline(docs)    optional: a sentence for the top of the page (the
                    replay's verdict)
A document of another version of the schema leaves the section out with a
note; so does a missing one. Adding a tool adds a module and a line.
"""

import datetime
import glob
import os
import platform

from . import doc as docmod
from . import page
from .sections import SECTIONS


class Ctx:
    """What a section draws with: its plots are staged in the output and
    referenced by file name."""

    def __init__(self, output, anchor, results_dir):
        self.output = output
        self.anchor = anchor
        self.results_dir = results_dir
        self.images = []

    def png(self, name, fig, alt, caption):
        """Saves fig as <anchor>-<name>.png; returns its <figure>."""
        from . import plot

        file_name = "%s-%s.png" % (self.anchor, name)
        n = 2
        while file_name in self.images:  # a second file of the tool: its own names
            file_name = "%s-%s-%d.png" % (self.anchor, name, n)
            n += 1
        plot.save(fig, self.output.stage(file_name))
        self.images.append(file_name)
        return page.figure(file_name, alt, caption)


def discover(results_dir):
    """(documents, notes): every rtmem result among RESULTS_DIR's *.json,
    by name; a JSON file that is no rtmem result is noted. Malformed for a
    file that cannot be read."""
    docs, notes = [], []
    for path in sorted(glob.glob(os.path.join(glob.escape(results_dir), "*.json"))):
        if not os.path.isfile(path):
            continue
        d = docmod.read(path)
        if d is None:
            notes.append("%s is no rtmem result (no rtmem-<tool>/<N> schema): not read." % path)
        else:
            docs.append(d)
    return docs, notes


def drawn(doc):
    """Is doc of a schema version some section draws?"""
    return any(m.TOOL == doc.tool and m.VERSION == doc.version for m in SECTIONS)


def _machine_line(docs):
    """The machine, from the first document drawn (an older layout's
    machine may lack members)."""
    for d in docs:
        m = d.raw("machine")
        if drawn(d) and isinstance(m, dict):
            return "%s, %s CPUs, %s %s (%s), %s, %s" % tuple(
                m.get(k, "?") for k in ("cpu_model", "cpus_online", "sysname", "kernel_release",
                                        "arch", "libc", "compiler"))
    return ""


# A test hook (tests/tools/test_report.py): the section named here fails
# as a bug in it would, so the test sees that nothing is left behind.
TEST_RAISE = "RTMEM_REPORT_TEST_RAISE"


def build(results_dir, output, log):
    """Stages every plot and the page in output; returns the number of
    sections drawn. Malformed when a result file cannot be read."""
    docs, notes = discover(results_dir)
    body, toc, left_out, headlines = [], [], [], []
    for mod in SECTIONS:
        mine = [d for d in docs if mod.TOOL is None or d.tool == mod.TOOL]
        # The version first: accepts() reads members only a known layout has.
        usable = [d for d in mine if (mod.VERSION is None or d.version == mod.VERSION) and
                  (not hasattr(mod, "accepts") or mod.accepts(d))]
        others = [d for d in mine if mod.VERSION is not None and d.version != mod.VERSION]
        why = []
        for d in others:
            why.append("%s is %s; this report reads rtmem-%s/%d: run the tool again to draw it." % (
                d.path, d.schema, mod.TOOL, mod.VERSION))
        if not usable:
            if not others:
                why.append("No result in %s: `%s` makes one." % (
                    results_dir, mod.MAKE.format(dir=results_dir)))
            left_out.append((mod, why))
            continue
        for d in usable:
            d.check_envelope()
        ctx = Ctx(output, mod.ANCHOR, results_dir)
        try:
            if os.environ.get(TEST_RAISE) == mod.ANCHOR:
                raise RuntimeError("%s=%s" % (TEST_RAISE, mod.ANCHOR))
            html = mod.build(usable, ctx)
        except docmod.Malformed:
            raise
        except (KeyError, TypeError, ValueError, IndexError, ArithmeticError,
                RecursionError) as e:
            raise docmod.Malformed("%s: the %s section cannot read it: %s: %s" % (
                ", ".join(d.path for d in usable), mod.ANCHOR, type(e).__name__, e))
        if hasattr(mod, "headline"):
            headlines.append(mod.headline(usable))
        log("  %-9s %d file(s), %d plot(s)" % (mod.ANCHOR, len(usable), len(ctx.images)))
        toc.append((mod.ANCHOR, mod.TITLE))
        body.append(page.heading(2, mod.TITLE, mod.ANCHOR))
        body.extend(page.note(w) for w in why)
        body.append(html)

    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    versions = sorted(set(d.raw("version") for d in docs if isinstance(d.raw("version"), str)))
    out = ['<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n',
           '<meta name="generator" content="rtmem report">\n',
           '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
           "<title>rtmem report: %s</title>\n" % page.esc(platform.node() or results_dir),
           "<style>%s</style>\n<script>%s</script>\n</head><body>\n" % (page.STYLE,
                                                                       page.CHECK_SCRIPT),
           '<div id="broken"></div>\n',
           "<h1>rtmem report</h1>\n",
           page.para("Made %s from the %d result file(s) in %s (rtmem %s)." % (
               now, len(docs), results_dir, ", ".join(versions) or "-"), "sub"),
           page.para(_machine_line(docs), "sub")]
    out.extend(page.para(h, "headline") for h in headlines)
    if docs:
        rows = []
        for d in docs:
            verdict = {True: ("passed", "ok"), False: ("FAILED", "bad"), None: "-"}[d.passed]
            rows.append((d.name, d.schema, verdict, page.fmt_num(d.seconds), " ".join(d.command)))
        out.append(page.table(("file", "schema", "verdict", "seconds", "command"), rows,
                              numeric_from=3, numeric_to=4))
    out.extend(page.note(n) for n in notes)
    out.append("<nav><ol>\n")
    out.extend('<li><a href="#%s">%s</a></li>\n' % (a, page.esc(t)) for a, t in toc)
    out.append("</ol></nav>\n")
    if left_out:
        out.append(page.heading(3, "Not in this report"))
        out.append("<ul>\n")
        for mod, why in left_out:
            out.append("<li><b>%s</b>: %s</li>\n" % (page.esc(mod.TITLE),
                                                    page.esc(" ".join(why))))
        out.append("</ul>\n")
    out.extend(body)
    out.append('<footer><p class="sub">Every figure above was measured on the machine named '
               "at the top, by the command shown with it; rerun that command to reproduce it. "
               "docs/report.md describes each plot.</p></footer>\n</body></html>\n")
    output.write_text("index.html", "".join(out))
    return len(toc)
