"""The HTML of the report: small builders that escape what they are given.

Every builder returns a string of HTML; text passed in is escaped, never
trusted (a result file's strings come from a machine and its user).
"""

import html
import shlex


def esc(text):
    return html.escape(str(text), quote=True)


def para(text, cls=None):
    c = ' class="%s"' % cls if cls else ""
    return "<p%s>%s</p>\n" % (c, esc(text))


def note(text):
    """A remark the reader should not miss: a section left out, a figure
    near the noise floor."""
    return para(text, "note")


def details(summary, items):
    """A list the reader opens if they want it: long reasons, for one."""
    return ('<details class="note"><summary>%s</summary><ul>%s</ul></details>\n'
            % (esc(summary), "".join("<li>%s</li>" % esc(i) for i in items)))


def command(doc):
    """The command that made doc's results, as a shell would take it."""
    line = " ".join(shlex.quote(a) for a in doc.command)
    status = "passed" if doc.passed else "FAILED"  # a drawn document has its envelope
    return ('<div class="cmd"><span class="file">%s</span> <span class="%s">%s</span>'
            '<pre>$ %s</pre></div>\n'
            % (esc(doc.path), "ok" if doc.passed else "bad", status, esc(line)))


def table(headers, rows, cls="data", numeric_from=1, numeric_to=None):
    """A table; cells of columns numeric_from to numeric_to (exclusive;
    None: the last) are right-aligned. A cell is text, or (text, css
    class) to mark it; a newline in its text breaks the line."""
    out = ['<table class="%s"><thead><tr>' % cls]
    out += ["<th>%s</th>" % esc(h) for h in headers]
    out.append("</tr></thead><tbody>\n")
    end = len(headers) if numeric_to is None else numeric_to
    for row in rows:
        out.append("<tr>")
        for i, cell in enumerate(row):
            text, extra = (cell if isinstance(cell, tuple) else (cell, ""))
            classes = " ".join(c for c in ("num" if numeric_from <= i < end else "", extra) if c)
            body = esc(text).replace("\n", "<br>")
            out.append('<td class="%s">%s</td>' % (classes, body) if classes
                       else "<td>%s</td>" % body)
        out.append("</tr>\n")
    out.append("</tbody></table>\n")
    return "".join(out)


def figure(src, alt, caption):
    return ('<figure><img src="%s" alt="%s" loading="eager"><figcaption>%s</figcaption>'
            '</figure>\n' % (esc(src), esc(alt), esc(caption)))


def heading(level, text, anchor=None):
    a = ' id="%s"' % esc(anchor) if anchor else ""
    return "<h%d%s>%s</h%d>\n" % (level, a, esc(text), level)


def fmt_ns(ns):
    """A time for a table, 3 significant digits: ns below 1 us, else us
    below 1 ms, else ms; "-" for None."""
    if ns is None:
        return "-"
    for unit, scale in (("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            return _sig(ns / scale) + " " + unit
    return _sig(ns) + " ns"


def _sig(x):
    return "%.3g" % x if x < 1000 else "{:,.0f}".format(x)


def fmt_bytes(n):
    """A size as the tools write it: 4K, 128M, 1G (powers of 1024), with
    one decimal where it is not a whole multiple; bytes below 1 KiB."""
    if n is None:
        return "-"
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale:
            return ("%d%s" % (n // scale, unit) if n % scale == 0
                    else "%.1f%s" % (n / float(scale), unit))
    return "%d" % n


def fmt_num(x, digits=3):
    if x is None:
        return "-"
    if isinstance(x, int):
        return "{:,}".format(x)
    if x != 0 and abs(x) < 0.01:
        return "%.2g" % x
    return "%.*g" % (digits, x) if abs(x) < 10 ** digits else "{:,.0f}".format(x)


def fmt_pct(x):
    return "-" if x is None else "%.1f%%" % x


STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
       max-width: 1180px; margin: 0 auto; padding: 0 20px 60px; color: #1d1d1f; line-height: 1.45; }
h1 { margin-bottom: 0.2em; }
h2 { border-bottom: 2px solid #d0d4da; padding-bottom: 0.2em; margin-top: 2.2em; }
h3 { margin-top: 1.6em; }
.sub { color: #555; margin-top: 0; }
p.headline { font-size: 1.1em; background: #e8f4ea; border-left: 4px solid #2ca02c; padding: 6px 10px; }
nav ol { columns: 2; }
table.data { border-collapse: collapse; margin: 0.8em 0; font-size: 0.88em; display: block;
             max-width: 100%; overflow-x: auto; }
table.data th, table.data td { border: 1px solid #d0d4da; padding: 3px 8px; }
table.data th { background: #eef1f5; text-align: left; }
table.data td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.data td.best { background: #e3f4e3; }
table.data td.bad, span.bad { color: #b00020; font-weight: 600; }
span.ok { color: #1a7f37; font-weight: 600; }
table.data td.floor { color: #8a8a8a; }
.cmd { margin: 0.6em 0; }
.cmd .file { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 0.85em;
             color: #555; }
.cmd pre { margin: 0.2em 0; background: #f5f6f8; border: 1px solid #e2e5e9; padding: 6px 10px;
           overflow-x: auto; font-size: 0.85em; }
p.note, details.note { background: #fff8e1; border-left: 4px solid #f0b429; padding: 6px 10px; }
details.note summary { cursor: pointer; }
details.note li { font-size: 0.9em; }
figure { margin: 1em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #e2e5e9; }
figcaption { font-size: 0.88em; color: #444; max-width: 1000px; }
#broken { display: none; background: #fde7e9; border-left: 4px solid #b00020; padding: 6px 10px; }
"""

# Marks every image that did not load (naturalWidth 0) and says so at the
# top of the page: a report copied without its PNG files tells its reader,
# and the browser test reads the marks back (--dump-dom).
CHECK_SCRIPT = """
window.addEventListener("load", function () {
  var imgs = document.getElementsByTagName("img"), broken = 0;
  for (var i = 0; i < imgs.length; i++) {
    var ok = imgs[i].complete && imgs[i].naturalWidth > 0;
    imgs[i].setAttribute("data-loaded", ok ? "yes" : "no");
    if (!ok) broken++;
  }
  document.body.setAttribute("data-images", imgs.length);
  document.body.setAttribute("data-images-broken", broken);
  if (broken) {
    var b = document.getElementById("broken");
    b.textContent = broken + " of " + imgs.length +
      " plots did not load: keep the PNG files beside index.html.";
    b.style.display = "block";
  }
});
"""
