#!/usr/bin/env python3
"""A man page from one of rtmem's Markdown manuals, at build time.

    manpage.py NAME SECTION DATE VERSION MANUAL.md OUT

NAME is the page's name (rtmem-bench, or rtmem for the overview that the
README makes), MANUAL.md the manual (docs/<tool>.md, README.md), OUT the
roff file written (to a temporary file renamed into place). The Markdown
the manuals use maps onto the man macros: the title gives NAME's one-line
description, ## and ### headings give .SH and .SS, paragraphs .PP, lists
.IP, code blocks .nf/.fi, tables a .TP entry per row (first cell as the
tag, the others after it). Inline code and bold are bold, links keep their
text (a page's own link target, e.g. bench.md, becomes rtmem-bench(1)),
images and HTML comments go (a figure marker keeps its figure). Standard
library only: the build runs it wherever python3 is.
"""
import os
import re
import sys

TOOL_PAGES = {"bench", "memcheck", "wcet", "latency", "pressure", "stride", "bw", "shm",
              "trace", "replay", "size", "run", "report"}


def esc(text):
    """Roff-safe text: backslashes doubled, dashes as \\-, a leading dot or
    apostrophe guarded."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    if text.startswith((".", "'")):
        text = "\\&" + text
    # Not ASCII: as a named Unicode escape, which every troff reads
    return "".join(c if ord(c) < 128 else "\\[u%04X]" % ord(c) for c in text)


def link_text(m):
    """A link's text; a link to a tool's manual names its man page."""
    text, target = m.group(1), m.group(2)
    page = re.match(r"^(?:docs/)?([a-z-]+)\.md(?:#.*)?$", target)
    if not page or page.group(1) not in TOOL_PAGES:
        return text
    man = "rtmem\u2010%s(1)" % page.group(1)
    bare = text.strip("`")
    if bare.endswith(".md"):
        return man
    return "%s (%s)" % (text, man)


def inline(text):
    """Markdown inline markup to roff: code and bold bold, links their text."""
    text = re.sub(r"<!--fig:[^>]*-->(.*?)<!--/fig-->", r"\1", text)
    text = re.sub(r"<!--.*?-->", "", text)
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", text)
    text = re.sub(r"\[([^\]]+)\]\(([^)]+)\)", link_text, text)
    out, pos = [], 0
    for m in re.finditer(r"``(.+?)``|`([^`]+)`|\*\*(.+?)\*\*|(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])",
                         text):
        out.append(esc(text[pos:m.start()]))
        if m.group(4):
            out.append("\\fI" + esc(m.group(4)) + "\\fR")
        else: # code inside bold is bold too
            out.append("\\fB" + esc((m.group(1) or m.group(2) or m.group(3)).replace("`", ""))
                       + "\\fR")
        pos = m.end()
    out.append(esc(text[pos:]))
    return "".join(out).replace("\\[u2010]", "\\-")  # a man page name's hyphen


def cells(row):
    row = row.strip()
    if row.startswith("|"):
        row = row[1:]
    if row.endswith("|"):
        row = row[:-1]
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", row)]


def convert(name, section, date, version, lines):
    title = lines[0].lstrip("# ").strip() if lines and lines[0].startswith("# ") else name
    # "`rtmem size`: a pool that never runs out" -> the part after the colon
    what = title.split(":", 1)[1].strip() if ":" in title else title
    out = ['.\\" Generated from the Markdown manual by scripts/manpage.py: edit that.',
           '.TH "%s" "%s" "%s" "rtmem %s" "rtmem manual"' % (name.upper(), section, date,
                                                             version),
           ".SH NAME", "%s \\- %s" % (esc(name), inline(what)), ".SH DESCRIPTION"]
    i, para = 1, []

    def flush():
        if para:
            out.append(".PP")
            out.append(inline(" ".join(p.strip() for p in para)))
            para.clear()

    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            flush()
            j = i + 1
            out += [".PP", ".RS 4", ".nf"]
            while j < len(lines) and not lines[j].startswith("```"):
                out.append(esc(lines[j]) if lines[j] else "")
                j += 1
            out += [".fi", ".RE"]
            i = j + 1
            continue
        if line.startswith("    ") and not para and (i == 0 or not lines[i - 1].strip()):
            flush()
            out += [".PP", ".RS 4", ".nf"]
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                if not lines[i].strip() and (i + 1 >= len(lines) or
                                             not lines[i + 1].startswith("    ")):
                    break
                out.append(esc(lines[i][4:]))
                i += 1
            out += [".fi", ".RE"]
            continue
        m = re.match(r"^(#{2,4}) (.*)$", line)
        if m:
            flush()
            head = inline(m.group(2)).replace('"', "'")
            out.append('.SH "%s"' % head.upper() if len(m.group(1)) == 2 else '.SS "%s"' % head)
            i += 1
            continue
        if line.startswith("|") and i + 1 < len(lines) and re.match(r"^\|[\s:|-]+\|?\s*$",
                                                                     lines[i + 1]):
            flush()
            head = cells(line)
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                row = cells(lines[i])
                out += [".TP", inline(row[0] or "\u00a0")]
                rest = ["%s: %s" % (h, c) if len(row) > 2 and h else c
                        for h, c in zip(head[1:], row[1:]) if c]
                out.append(inline("; ".join(rest)) if rest else "")
                i += 1
            continue
        m = re.match(r"^(\s*)(?:[-*]|\d+\.) (.*)$", line)
        if m and not para:
            flush()
            item = [m.group(2)]
            indent = len(m.group(1))
            i += 1
            while i < len(lines) and lines[i].strip() and \
                    not re.match(r"^\s*(?:[-*]|\d+\.) ", lines[i]):
                item.append(lines[i].strip())
                i += 1
            out += [".IP \\(bu %d" % (2 + indent), inline(" ".join(item))]
            continue
        if not line.strip() or re.match(r"^<!--.*-->$", line.strip()):
            flush()
            i += 1
            continue
        para.append(line)
        i += 1
    flush()
    out += [".SH \"SEE ALSO\"",
            ", ".join("\\fBrtmem%s\\fR(1)" % ("" if p == "rtmem" else "\\-" + p)
                      for p in ["rtmem"] + sorted(TOOL_PAGES) if p != name.replace("rtmem-", "")) +
            ". The manuals these pages are made from, and the pages they link (kinds.md, "
            "api.md, ...), are in share/doc/rtmem under the prefix rtmem was installed in "
            "(/usr/share/doc/rtmem from the Debian package)."]
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) != 7:
        sys.stderr.write("usage: manpage.py NAME SECTION DATE VERSION MANUAL.md OUT\n")
        return 2
    name, section, date, version, src, dst = argv[1:]
    with open(src, encoding="utf-8") as f:
        lines = f.read().split("\n")
    page = convert(name, section, date, version, lines)
    tmp = dst + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(page)
    os.replace(tmp, dst)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
