"""tools.report: rtmem report from the fixture result files
(tests/fixtures/report) and from a fresh memcheck --quick run: every
expected plot a valid, non-blank PNG, the page well formed and referencing
only files beside it, sections left out with a note for a missing or
older-schema file, a malformed file named in an error, the report
directory written safely (never another's file, nothing left on failure
or SIGINT), usage. Then the page rendered in headless Chromium: every
image loaded, and a missing PNG seen as not loaded.

usage: test_report.py RTMEM FIXTURES_DIR SCREENSHOT_PATH
With RTMEM_REPORT_LAUNCHER_ONLY=1 (the sanitizer builds: the Python is the
same, only the C launcher is built otherwise): usage and the fixtures'
report alone.
"""

import html.parser
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
import zlib

from rtmemtest import Checks, TempDir, run

rtmem, fixtures, screenshot = sys.argv[1], sys.argv[2], sys.argv[3]
launcher_only = os.environ.get("RTMEM_REPORT_LAUNCHER_ONLY") == "1"
checks = Checks("tools.report")

EXPECTED = {
    "memcheck": ["memcheck-summary", "memcheck-time-by-block", "memcheck-space-by-block"],
    "bench": ["bench-calls", "bench-sweep", "bench-free-order"],
    "wcet": ["wcet-scenarios"],
    "latency": ["latency-histogram", "latency-per-second"],
    "sweep": ["sweep-curves"],
    "pressure": ["pressure-per-second"],
    "stride": ["stride-curve"],
    "bw": ["bw-methods", "bw-prep", "bw-cache"],
    "shm": ["shm-size-64K", "shm-size-1G"],
}
ALL_PNGS = sorted(n + ".png" for names in EXPECTED.values() for n in names)


def png_pixels(raw, width, height, channels):
    """The rows of an 8-bit PNG's pixels, its scanline filters undone."""
    stride = width * channels
    rows, prev, pos = [], bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[pos], bytearray(raw[pos + 1:pos + 1 + stride])
        pos += 1 + stride
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return rows


def png_problem(path, coloured=True):
    """Why path is not a valid PNG with a plot in it, or None: signature,
    every chunk's CRC, IHDR first and IEND last, the image data inflating to
    exactly its rows, and (coloured) at least 300 pixels of a clear colour,
    not grey: a plot's lines or bars (axes, text and grid alone are grey)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return str(e)
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return "no PNG signature"
    pos, chunks, idat = 8, [], b""
    while pos + 12 <= len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        if zlib.crc32(kind + body) & 0xFFFFFFFF != crc:
            return "bad CRC in chunk %r" % kind
        chunks.append(kind)
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
        if kind == b"IDAT":
            idat += body
        pos += 12 + length
    if not chunks or chunks[0] != b"IHDR" or chunks[-1] != b"IEND" or pos != len(data):
        return "chunks out of order or trailing bytes: %r" % chunks[:3]
    channels = {2: 3, 6: 4}.get(colour)
    if depth != 8 or channels is None:
        return "unexpected depth %d colour type %d" % (depth, colour)
    raw = zlib.decompress(idat)
    if len(raw) != height * (1 + width * channels):
        return "image data is %d bytes, not %d" % (len(raw), height * (1 + width * channels))
    if width < 300 or height < 200:
        return "too small: %dx%d" % (width, height)
    if coloured:
        n = 0
        for line in png_pixels(raw, width, height, channels)[::2]:
            for x in range(0, width * channels, 2 * channels):
                r, g, b = line[x], line[x + 1], line[x + 2]
                n += max(r, g, b) - min(r, g, b) > 60
        if n < 300:
            return "no plot drawn: %d coloured pixels" % n
    return None


def write_png(path, width, height, shade):
    """A valid PNG, grey: shade(x, y) for each pixel's three channels."""
    def chunk(kind, body):
        return (struct.pack(">I", len(body)) + kind + body +
                struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))
    rows = b"".join(b"\x00" + bytes(shade(x, y) for x in range(width) for _ in range(3))
                    for y in range(height))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" +
                chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


class PageParser(html.parser.HTMLParser):
    """Collects the page's references and ids, and checks its elements
    nest (void elements aside)."""

    VOID = {"meta", "img", "br", "link", "hr", "input", "source"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.srcs, self.hrefs, self.ids = [], [], [], [], set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.srcs.append(a.get("src", ""))
        if tag in ("a", "link") and "href" in a:
            self.hrefs.append(a["href"])
        if tag == "script" and "src" in a:
            self.srcs.append(a["src"])
        if "id" in a:
            self.ids.add(a["id"])
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append("</%s> closes <%s>" % (tag, self.stack[-1] if self.stack else ""))
            return
        self.stack.pop()


def parse_page(path):
    p = PageParser()
    with open(path, encoding="utf-8") as f:
        p.feed(f.read())
    p.close()
    if p.stack:
        p.errors.append("left open: %s" % p.stack)
    return p


def report(results, out, *extra, **kw):
    return run(rtmem, "report", results, "-o", out, *extra, timeout=300, **kw)


def signalled_while_drawing(results, out, signum):
    """(exit status, stderr) of a report into out sent signum once its first
    temporary file appears (it is drawing then)."""
    proc = subprocess.Popen([rtmem, "report", results, "-o", out, "-q"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    end = time.monotonic() + 120
    while time.monotonic() < end and proc.poll() is None and \
            not any(n.endswith(".tmp") for n in listing(out)):
        time.sleep(0.01)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err


def copy_fixtures(dst, names=None):
    os.makedirs(dst, exist_ok=True)
    for n in sorted(os.listdir(fixtures)):
        if n.endswith(".json") and (names is None or n in names):
            shutil.copy(os.path.join(fixtures, n), dst)


def listing(d):
    return sorted(os.listdir(d)) if os.path.isdir(d) else None


def check_page(out, what, pngs):
    """index.html parses, references only files that exist beside it, and
    every PNG drawn is referenced."""
    page = os.path.join(out, "index.html")
    if not checks.ok(os.path.isfile(page), "%s: index.html written" % what):
        return None
    p = parse_page(page)
    checks.ok(not p.errors, "%s: the page's elements nest" % what, p.errors[:5])
    remote = [s for s in p.srcs + p.hrefs if "://" in s or s.startswith("//")]
    checks.ok(not remote, "%s: nothing referenced over the network" % what, remote)
    local = [s for s in p.srcs + [h for h in p.hrefs if not h.startswith("#")]]
    missing = [s for s in local if not os.path.isfile(os.path.join(out, s))]
    checks.ok(not missing, "%s: every referenced file exists" % what, missing)
    anchors = [h[1:] for h in p.hrefs if h.startswith("#")]
    checks.ok(all(a in p.ids for a in anchors), "%s: every link of the contents has its "
              "section" % what, [a for a in anchors if a not in p.ids])
    checks.ok(sorted(set(p.srcs)) == sorted(pngs), "%s: the page shows exactly the plots drawn"
              % what, (sorted(set(p.srcs)), pngs))
    return p


with TempDir() as tmp:
    # -- usage --
    r = run(rtmem, "report", "--help")
    if r.returncode != 0 and "cannot draw" in r.stderr + r.stdout:
        print("tools.report: SKIPPED: no matplotlib for rtmem report (scripts/ensure-deps.sh "
              "report installs it):\n" + r.stderr)
        sys.exit(0)
    checks.ok(r.returncode == 0 and "RESULTS_DIR" in r.stdout and "REPORT_DIR" in r.stdout,
              "report --help", r)
    r = run(rtmem, "report")
    checks.ok(r.returncode == 2 and "RESULTS_DIR" in r.stderr, "no RESULTS_DIR: usage", r)
    r = run(rtmem, "report", os.path.join(tmp, "nowhere"))
    checks.ok(r.returncode == 2 and "not a directory" in r.stderr, "missing RESULTS_DIR", r)
    r = run(rtmem, "report", tmp, "--bogus")
    checks.ok(r.returncode == 2, "unknown option: usage", r)

    # -- the fixtures: every section, every plot --
    res = os.path.join(tmp, "results")
    copy_fixtures(res)
    out = os.path.join(tmp, "report")
    r = report(res, out)
    checks.ok(r.returncode == 0, "report from the fixtures", r)
    drawn = sorted(n for n in (listing(out) or []) if n.endswith(".png"))
    checks.ok(drawn == ALL_PNGS, "every expected plot, no other", (drawn, ALL_PNGS))
    for n in ALL_PNGS:
        why = png_problem(os.path.join(out, n))
        checks.ok(why is None, "%s is a valid PNG with a plot in it" % n, why)
    checks.ok(sorted(listing(out) or []) == sorted(ALL_PNGS + ["index.html", ".rtmem-report"]),
              "nothing but the plots, the page and the list of them", listing(out))
    p = check_page(out, "fixtures", ALL_PNGS)
    if p:
        for anchor in ["machine"] + list(EXPECTED):
            checks.ok(anchor in p.ids, "the %s section is in the page" % anchor)
        with open(os.path.join(out, "index.html"), encoding="utf-8") as f:
            text = f.read()
        for n in sorted(os.listdir(res)):
            with open(os.path.join(res, n)) as f:
                cmd = " ".join(json.load(f)["command_line"])
            checks.ok(cmd in text, "the command of %s is shown" % n, cmd)
        checks.ok("Not in this report" not in text, "no section left out of the fixtures' page")
        # A figure read back into its table: tlsf's worst alloc, power-of-two.
        with open(os.path.join(res, "memcheck.json")) as f:
            worst = json.load(f)["allocators"][0]["pow2"]["overall"]["worst_alloc_ns"]
        checks.ok(("%.3g us" % (worst / 1000.0)) in text,
                  "memcheck's summary shows tlsf's worst alloc", worst)
    with open(os.path.join(out, ".rtmem-report")) as f:
        manifest = f.read().splitlines()
    checks.ok(manifest[1:] == sorted(ALL_PNGS + ["index.html"]),
              "the list of what rtmem report wrote", manifest)

    if launcher_only:
        checks.done()

    # -- missing and older-schema files: sections left out, with a note --
    part = os.path.join(tmp, "part")
    copy_fixtures(part, ["memcheck.json", "bench.json"])
    with open(os.path.join(part, "bench.json")) as f:
        bench = json.load(f)
    # rtmem-bench/1 had no envelope: none of its members is required.
    bench = {"schema": "rtmem-bench/1", "tool": "rtmem bench", "rtmem_version": "0.0.9",
             "rt": {}, "allocators": []}
    with open(os.path.join(part, "bench.json"), "w") as f:
        json.dump(bench, f)
    with open(os.path.join(part, "memcheck-old.json"), "w") as f:
        json.dump({"schema": "rtmem-memcheck/1", "rtmem_version": "0.0.9",
                   "machine": {"cpu_model": "x"}, "timer": {}, "allocators": []}, f)
    with open(os.path.join(part, "other.json"), "w") as f:
        json.dump({"name": "not a result of rtmem's"}, f)
    pout = os.path.join(tmp, "part-report")
    r = report(part, pout)
    checks.ok(r.returncode == 0, "a partial results dir is no error", r)
    pngs = sorted(n for n in (listing(pout) or []) if n.endswith(".png"))
    checks.ok(pngs == sorted(n + ".png" for n in EXPECTED["memcheck"]),
              "only memcheck's plots for memcheck alone", pngs)
    check_page(pout, "partial", pngs)
    text = open(os.path.join(pout, "index.html"), encoding="utf-8").read() \
        if os.path.isfile(os.path.join(pout, "index.html")) else ""
    checks.ok("rtmem-bench/1" in text and "reads rtmem-bench/2" in text,
              "an older bench schema is left out with a note")
    checks.ok("memcheck-old.json is rtmem-memcheck/1" in text,
              "an older memcheck file beside a current one is noted, not drawn")
    checks.ok("No result in" in text and "rtmem wcet --json" in text,
              "a missing tool is noted with the command that makes its file")
    checks.ok("other.json is no rtmem result" in text, "a JSON file of another kind is noted")

    # -- the report directory: safe writes --
    keep = os.path.join(pout, "notes.txt")
    with open(keep, "w") as f:
        f.write("mine\n")
    copy_fixtures(part, ["wcet.json"])
    r = report(part, pout)
    checks.ok(r.returncode == 0 and os.path.isfile(os.path.join(pout, "wcet-scenarios.png")),
              "a second run adds the new plots", r)
    checks.ok(open(keep).read() == "mine\n", "a file of the user's in REPORT_DIR is kept")
    os.unlink(os.path.join(part, "wcet.json"))
    r = report(part, pout)
    checks.ok(r.returncode == 0 and not os.path.exists(os.path.join(pout, "wcet-scenarios.png")),
              "a plot no longer drawn is removed (it was rtmem report's)", listing(pout))
    checks.ok(os.path.isfile(keep), "the user's file survives that too")
    holiday = os.path.join(pout, "holiday.png")
    with open(holiday, "w") as f:
        f.write("a picture\n")
    with open(os.path.join(pout, ".rtmem-report"), "a") as f:
        f.write("notes.txt\nholiday.png\n")  # a list edited by hand names the user's files
    r = report(part, pout)
    checks.ok(r.returncode == 0 and os.path.isfile(keep) and os.path.isfile(holiday),
              "names in the list that rtmem report never writes are not removed", r)

    theirs = os.path.join(tmp, "theirs")
    os.makedirs(theirs)
    with open(os.path.join(theirs, "index.html"), "w") as f:
        f.write("their page\n")
    r = report(part, theirs)
    checks.ok(r.returncode == 1 and "not written by rtmem report" in r.stderr,
              "another's index.html: refused", r)
    checks.ok(open(os.path.join(theirs, "index.html")).read() == "their page\n" and
              listing(theirs) == ["index.html"], "another's index.html: untouched, nothing added",
              listing(theirs))

    # -- malformed files: named, nothing written, an earlier report intact --
    before = {n: open(os.path.join(out, n), "rb").read() for n in listing(out)}
    bad = os.path.join(tmp, "bad")
    copy_fixtures(bad)
    with open(os.path.join(bad, "stride.json"), "w") as f:
        f.write('{"schema": "rtmem-stride/1", "tool": ')
    r = report(bad, out)
    checks.ok(r.returncode == 1 and "stride.json" in r.stderr and "not valid JSON" in r.stderr,
              "a truncated file is named", r)
    after = {n: open(os.path.join(out, n), "rb").read() for n in listing(out)}
    checks.ok(after == before, "a failed run leaves the earlier report as it was",
              sorted(set(after) ^ set(before)))
    copy_fixtures(bad, ["stride.json"])
    with open(os.path.join(bad, "bench.json")) as f:
        bench = json.load(f)
    del bench["sweep"]["allocators"][1]["alloc_avg_ns"]
    with open(os.path.join(bad, "bench.json"), "w") as f:
        json.dump(bench, f)
    fresh = os.path.join(tmp, "fresh")
    r = report(bad, fresh)
    checks.ok(r.returncode == 1 and "bench.json" in r.stderr and
              "sweep.allocators[1].alloc_avg_ns: missing" in r.stderr,
              "a missing member is named with its path", r)
    checks.ok(not os.path.exists(fresh), "a failed run removes the directory it made",
              listing(fresh))
    bench["sweep"]["allocators"][1]["alloc_avg_ns"] = "fast"
    with open(os.path.join(bad, "bench.json"), "w") as f:
        json.dump(bench, f)
    r = report(bad, fresh)
    checks.ok(r.returncode == 1 and "alloc_avg_ns: not an array" in r.stderr,
              "a member of the wrong type is named", r)

    # -- SIGINT while drawing: the directory as it was, no temporary file --
    before = {n: open(os.path.join(out, n), "rb").read() for n in listing(out)}
    code, err = signalled_while_drawing(res, out, signal.SIGINT)
    checks.ok(code == 130 and "interrupted" in err, "SIGINT while drawing ends the run (130)",
              (code, err))
    after = {n: open(os.path.join(out, n), "rb").read() for n in listing(out)}
    checks.ok(after == before, "SIGINT leaves the report directory as it was, no temporary file",
              sorted(set(after) ^ set(before)))

    # -- a fresh memcheck --quick run --
    mres = os.path.join(tmp, "memcheck-run")
    os.makedirs(mres)
    r = run(rtmem, "memcheck", "--quick", "--kinds", "tlsf,heapmem,xnheap,glibc", "--json",
            os.path.join(mres, "memcheck.json"), timeout=600)
    checks.ok(r.returncode == 0, "memcheck --quick", r)
    mout = os.path.join(tmp, "memcheck-report")
    r = report(mres, mout)
    checks.ok(r.returncode == 0, "report from a fresh memcheck --quick run", r)
    pngs = sorted(n for n in (listing(mout) or []) if n.endswith(".png"))
    checks.ok(pngs == sorted(n + ".png" for n in EXPECTED["memcheck"]),
              "memcheck's plots from the fresh run", pngs)
    for n in pngs:
        why = png_problem(os.path.join(mout, n))
        checks.ok(why is None, "fresh run: %s is a valid PNG" % n, why)
    check_page(mout, "fresh memcheck", pngs)

    # -- the PNG check itself: an image of axes and text alone (grey) fails --
    grey = os.path.join(tmp, "grey.png")
    write_png(grey, 400, 300, lambda x, y: 128 if (x + y) % 7 == 0 else 255)
    why = png_problem(grey)
    checks.ok(why is not None and "no plot drawn" in why, "a grey image is no plot", why)
    checks.ok(png_problem(grey, coloured=False) is None, "a grey image is a valid PNG")

    # -- runs with phases left out, other kinds, nulls: drawn, never an error --
    var = os.path.join(tmp, "variants")
    os.makedirs(var)
    for name, args in (("bench-threads", ["bench", "--quick", "--threads-only"]),
                       ("bench-noglibc", ["bench", "--quick", "--kinds", "tlsf,heapmem",
                                          "--threads", "0", "--no-free-order"]),
                       ("memcheck-pc", ["memcheck", "--quick", "--phases", "pattern,churn",
                                        "--kinds", "tlsf,glibc"]),
                       ("memcheck-norows", ["memcheck", "--quick", "--no-json-rows", "--kinds",
                                            "tlsf,xnheap"]),
                       ("noise", ["latency", "--noise", "--duration", "1", "--no-rt"])):
        r = run(rtmem, *(args + ["--json", os.path.join(var, name + ".json")]), timeout=600)
        checks.ok(r.returncode == 0, "a variant run: %s" % " ".join(args), r)
    with open(os.path.join(fixtures, "latency.json")) as f:
        lat = json.load(f)
    for k in lat["summary"]:
        if k not in ("samples", "overruns"):
            lat["summary"][k] = None  # no wake-up: every figure null (docs/json.md)
    lat["summary"]["samples"] = 0
    lat["histogram"] = []
    for sec in lat["per_second"]:
        sec["max_ns"] = sec["min_ns"] = sec["avg_ns"] = None
    with open(os.path.join(var, "latency-none.json"), "w") as f:
        json.dump(lat, f)
    with open(os.path.join(fixtures, "latency-sweep.json")) as f:
        sw = json.load(f)
    sw["sweep"]["baseline"] = None
    sw["sweep"]["runs"][0]["summary"]["max_ns"] = None
    sw["sweep"]["runs"][0]["summary"]["p999_ns"] = None
    with open(os.path.join(var, "sweep-nulls.json"), "w") as f:
        json.dump(sw, f)
    vout = os.path.join(tmp, "variants-report")
    r = report(var, vout)
    checks.ok(r.returncode == 0, "the variants drawn", r)
    pngs = sorted(n for n in (listing(vout) or []) if n.endswith(".png"))
    for n in pngs:
        why = png_problem(os.path.join(vout, n), coloured=False)
        checks.ok(why is None, "variants: %s is a valid PNG" % n, why)
    for n in ("bench-calls.png", "memcheck-summary.png", "latency-histogram.png",
              "sweep-curves.png"):
        checks.ok(n in pngs, "variants: %s drawn" % n, pngs)
    check_page(vout, "variants", pngs)
    text = open(os.path.join(vout, "index.html"), encoding="utf-8").read() \
        if os.path.isfile(os.path.join(vout, "index.html")) else ""
    for phrase in ("without its main phase (--threads-only)", "did not run (--phases)",
                   "without its rows (--no-json-rows)"):
        checks.ok(phrase in text, "variants: the page says \"%s\"" % phrase)

    # -- a bug in a section, a huge number, SIGTERM: nothing left behind --
    before = {n: open(os.path.join(out, n), "rb").read() for n in listing(out)}
    r = report(res, out, env={"RTMEM_REPORT_TEST_RAISE": "stride"})
    checks.ok(r.returncode == 1 and "internal error" in r.stderr and "Traceback" in r.stderr,
              "a bug in a section: exit 1 with its traceback", r)
    after = {n: open(os.path.join(out, n), "rb").read() for n in listing(out)}
    checks.ok(after == before, "a bug in a section leaves the report as it was",
              sorted(set(after) ^ set(before)))
    r = report(res, fresh, env={"RTMEM_REPORT_TEST_RAISE": "stride"})
    checks.ok(r.returncode == 1 and not os.path.exists(fresh),
              "a bug in a section removes the directory the run made", listing(fresh))
    huge = os.path.join(tmp, "huge")
    copy_fixtures(huge, ["stride.json"])
    with open(os.path.join(huge, "stride.json")) as f:
        st = json.load(f)
    st["points"][0]["chase"]["median_ns_per_access"] = 10 ** 400
    with open(os.path.join(huge, "stride.json"), "w") as f:
        json.dump(st, f)
    r = report(huge, fresh)
    checks.ok(r.returncode == 1 and "points[0].chase.median_ns_per_access: not a number" in
              r.stderr and "Traceback" not in r.stderr, "a number out of range is named", r)
    code, err = signalled_while_drawing(res, out, signal.SIGTERM)
    checks.ok(code == 143 and "SIGTERM" in err, "SIGTERM ends the run (143)", (code, err))
    after = {n: open(os.path.join(out, n), "rb").read() for n in listing(out)}
    checks.ok(after == before, "SIGTERM leaves the report directory as it was",
              sorted(set(after) ^ set(before)))

    # -- in a real browser --
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("tools.report: SKIPPED the browser check: chromium is not installed "
              "(scripts/ensure-deps.sh chromium installs it)")
    else:
        profile = os.path.join(tmp, "chromium-profile")
        flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--hide-scrollbars",
                 "--user-data-dir=" + profile]

        def dom(directory):
            r = run(*(flags + ["--virtual-time-budget=5000", "--dump-dom",
                               "file://" + os.path.join(directory, "index.html")]), timeout=120)
            p = PageParser()
            p.feed(r.stdout)
            return r, p

        r, _ = dom(out)
        body = r.stdout[r.stdout.find("<body"):][:200]
        checks.ok('data-images="%d"' % len(ALL_PNGS) in body and 'data-images-broken="0"' in body,
                  "Chromium loaded every plot (none with naturalWidth 0)", body or r)
        checks.ok(r.stdout.count('data-loaded="yes"') == len(ALL_PNGS),
                  "each image marked loaded", r.stdout.count('data-loaded="yes"'))
        # The check itself: a page whose plot is gone shows it as not loaded.
        gone = os.path.join(tmp, "gone")
        shutil.copytree(out, gone)
        os.unlink(os.path.join(gone, "bench-sweep.png"))
        r, _ = dom(gone)
        body = r.stdout[r.stdout.find("<body"):][:200]
        checks.ok('data-images-broken="1"' in body and
                  "1 of %d plots did not load" % len(ALL_PNGS) in r.stdout,
                  "a missing PNG is seen as not loaded, and the page says so", body or r)
        shot = os.path.join(tmp, "shot.png")
        r = run(*(flags + ["--window-size=1280,20000", "--virtual-time-budget=5000",
                           "--screenshot=" + shot, "file://" + os.path.join(out, "index.html")]),
                timeout=120)
        why = png_problem(shot, coloured=False)
        checks.ok(why is None, "Chromium rendered the page to a screenshot", why or r)
        if why is None:
            shutil.copy(shot, screenshot)
            print("tools.report: the page as Chromium drew it: %s" % screenshot)

checks.done()
