"""tools.report: rtmem report from the fixture result files
(tests/fixtures/report) and from a fresh memcheck --quick run: every
expected plot a valid, non-blank PNG, the page well formed and referencing
only files beside it, sections left out with a note for a missing or
older-schema file, a malformed file named in an error, the report
directory written safely (never another's file, nothing left on failure
or SIGINT), usage. Then the page rendered in headless Chromium: every
image loaded, and a missing PNG seen as not loaded.

The build gives (tests/tools/CMakeLists.txt) --file screenshot=PATH: where
the page as Chromium drew it is copied. With RTMEM_REPORT_LAUNCHER_ONLY=1
(the sanitized, clang and cross builds: the Python is the same, only the
C launcher is built otherwise): usage and the partial report (memcheck's
fixture, with files left out) alone.
"""

import html.parser
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import time
import zlib

import pytest

from rtmemtest import bench_status, explain, load_json, run

LAUNCHER_ONLY = os.environ.get("RTMEM_REPORT_LAUNCHER_ONLY") == "1"
FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "fixtures", "report")
FIXTURE_FILES = sorted(n for n in os.listdir(FIXTURES) if n.endswith(".json"))

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
    "trace": ["trace-live"],
    "replay": ["replay-pools"],
    "size": ["size-pools"],
    "run": [],
}
ALL_PNGS = sorted(n + ".png" for names in EXPECTED.values() for n in names)
MEMCHECK_PNGS = sorted(n + ".png" for n in EXPECTED["memcheck"])
# A fresh run's churn samples what each heap holds (the fixture predates it).
FRESH_MEMCHECK_PNGS = sorted(MEMCHECK_PNGS + ["memcheck-held.png"])


# ---- a PNG's and a page's checks ------------------------------------------------------

def png_pixels(raw, width, height, channels):
    """The rows of an 8-bit PNG's pixels, its scanline filters undone, one
    at a time."""
    stride = width * channels
    prev, pos = bytearray(stride), 0
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
        yield line
        prev = line


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
        for y, line in enumerate(png_pixels(raw, width, height, channels)):
            if y % 2:
                continue
            for x in range(0, width * channels, 2 * channels):
                r, g, b = line[x], line[x + 1], line[x + 2]
                n += max(r, g, b) - min(r, g, b) > 60
            if n >= 300:
                break
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


def assert_page(out, pngs):
    """index.html parses, references only files that exist beside it, and
    every PNG drawn is referenced: the parsed page."""
    page = os.path.join(out, "index.html")
    assert os.path.isfile(page), "no index.html written"
    p = parse_page(page)
    assert not p.errors, "the page's elements do not nest: %s" % p.errors[:5]
    remote = [s for s in p.srcs + p.hrefs if "://" in s or s.startswith("//")]
    assert not remote, "referenced over the network: %s" % remote
    local = [s for s in p.srcs + [h for h in p.hrefs if not h.startswith("#")]]
    missing = [s for s in local if not os.path.isfile(os.path.join(out, s))]
    assert not missing, "referenced, not there: %s" % missing
    anchors = [h[1:] for h in p.hrefs if h.startswith("#")]
    assert all(a in p.ids for a in anchors), \
        "links of the contents without their section: %s" % [a for a in anchors if a not in p.ids]
    assert sorted(set(p.srcs)) == sorted(pngs), "the page does not show exactly the plots drawn"
    return p


def page_text(out):
    path = os.path.join(out, "index.html")
    if not os.path.isfile(path):
        return ""
    with open(path, encoding="utf-8") as f:
        return f.read()


# ---- running rtmem report -------------------------------------------------------------

def report(rtmem, results, out, *extra, **kw):
    return run(rtmem, "report", results, "-o", out, *extra, timeout=300, **kw)


def listing(d):
    return sorted(os.listdir(d)) if os.path.isdir(d) else None


def pngs_in(d):
    return sorted(n for n in (listing(d) or []) if n.endswith(".png"))


def contents(d):
    """{name: bytes} of the files in d."""
    out = {}
    for n in listing(d):
        with open(os.path.join(d, n), "rb") as f:
            out[n] = f.read()
    return out


def copy_fixtures(dst, names=None):
    os.makedirs(dst, exist_ok=True)
    for n in FIXTURE_FILES:
        if names is None or n in names:
            shutil.copy(os.path.join(FIXTURES, n), dst)


def signalled_while_drawing(rtmem, results, out, signum):
    """(exit status, stderr) of a report into out sent signum once its first
    temporary file appears (it is drawing then). A run that ended before the
    signal reached it (its temporary files came and went between two looks:
    a busy machine) is not the case asked for: out gets its files back and
    the run is tried again, up to five times."""
    before = contents(out)
    for _ in range(5):
        proc = subprocess.Popen([rtmem, "report", results, "-o", out, "-q"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        end = time.monotonic() + 120
        while time.monotonic() < end and proc.poll() is None and \
                not any(n.endswith(".tmp") for n in listing(out)):
            time.sleep(0.01)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=120)
        if proc.returncode != 0:
            break
        shutil.rmtree(out)
        os.makedirs(out)
        for name, data in before.items():
            with open(os.path.join(out, name), "wb") as f:
                f.write(data)
    return proc.returncode, err


@pytest.fixture(scope="module", autouse=True)
def drawable(rtmem):
    """rtmem report can draw here (matplotlib installed): the whole file is
    skipped otherwise. The --help it prints."""
    r = run(rtmem, "report", "--help")
    if r.returncode != 0 and "cannot draw" in r.stderr + r.stdout:
        pytest.skip("no matplotlib for rtmem report (scripts/ensure-deps.sh report installs "
                    "it): " + r.stderr)
    return r


@pytest.fixture
def whole_report():
    """Skips a case beyond the launcher under RTMEM_REPORT_LAUNCHER_ONLY."""
    if LAUNCHER_ONLY:
        pytest.skip("RTMEM_REPORT_LAUNCHER_ONLY: usage and the partial report alone")


@pytest.fixture(scope="module")
def whole_report_module():
    """whole_report, for a file's shared run."""
    if LAUNCHER_ONLY:
        pytest.skip("RTMEM_REPORT_LAUNCHER_ONLY: usage and the partial report alone")


# ---- usage ---------------------------------------------------------------------------

def test_help_names_the_results_and_the_report_directory(drawable):
    # (test_docs.py does not cover `rtmem report`, a command of its own.)
    r = drawable
    assert r.returncode == 0 and "RESULTS_DIR" in r.stdout and "REPORT_DIR" in r.stdout, \
        explain(r)


def test_no_results_dir_is_bad_usage(rtmem):
    r = run(rtmem, "report")
    assert r.returncode == 2 and "RESULTS_DIR" in r.stderr, explain(r)


def test_a_missing_results_dir_is_bad_usage(rtmem, tmp_dir):
    r = run(rtmem, "report", os.path.join(tmp_dir, "nowhere"))
    assert r.returncode == 2 and "not a directory" in r.stderr, explain(r)


def test_an_unknown_option_is_bad_usage(rtmem, tmp_dir):
    r = run(rtmem, "report", tmp_dir, "--bogus")
    assert r.returncode == 2, explain(r)


# ---- the fixtures: every section, every plot ------------------------------------------

@pytest.fixture(scope="module")
def full(rtmem, module_dir, whole_report_module):
    """The report of every fixture: (the results directory, the report
    directory)."""
    res = os.path.join(module_dir, "results")
    copy_fixtures(res)
    out = os.path.join(module_dir, "report")
    r = report(rtmem, res, out)
    assert r.returncode == 0, explain(r)
    return res, out


def test_bw_preparation_faults_are_per_preparation_as_the_copies_are_per_copy(full):
    with open(os.path.join(FIXTURES, "bw.json")) as f:
        d = json.load(f)
    reps = d["params"]["reps"]
    per = ", ".join("%s %s" % (k, "{:,}".format(round(d["prep"][k]["prep_minor_faults"] / reps)))
                    for k in ("none", "prefault", "mlock", "memset"))
    text = " ".join(page_text(full[1]).split())
    assert ("page faults per preparation (%s; the JSON&#x27;s prep_minor_faults are over all %d)"
            % (per, reps)) in text or \
        ("page faults per preparation (%s; the JSON's prep_minor_faults are over all %d)"
         % (per, reps)) in text, "the preparation's faults are not given per preparation"


def memcheck_cells(text, name):
    """The cells of allocator name's first row in the memcheck summary (the
    power-of-two table): [(css classes, text)], the name's cell first."""
    start = text.index("Overall summary, power-of-two blocks")
    row = re.search(r"<tr><td>%s</td>(.*?)</tr>" % re.escape(name), text[start:])
    assert row, "no summary row for %s" % name
    return re.findall(r'<td class="([^"]*)">(.*?)</td>', row.group(1))


def test_memcheck_shades_a_best_time_only_beyond_the_noise_of_the_run(rtmem, module_dir,
                                                                     whole_report_module):
    with open(os.path.join(FIXTURES, "memcheck.json")) as f:
        d = json.load(f)
    heaps = [a for a in d["allocators"] if a.get("pow2")]
    assert len(heaps) >= 2, [a["name"] for a in heaps]
    # one heap's worst alloc 1 ns better than the others': a difference far
    # inside this run's spread of the tests' maxima, luck and not a best
    for k, a in enumerate(heaps):
        a["pow2"]["overall"]["worst_alloc_ns"] = 10000.0 + (0 if k == 0 else 1)
        # and a clear best of avg alloc: a tenth of the others' (1 us apart)
        a["pow2"]["overall"]["avg_alloc_ns"] = 100.0 if k == 0 else 1000.0 + k
    res = os.path.join(module_dir, "noise")
    os.makedirs(res)
    with open(os.path.join(res, "memcheck.json"), "w") as f:
        json.dump(d, f)
    out = os.path.join(module_dir, "noise-report")
    r = report(rtmem, res, out)
    assert r.returncode == 0, explain(r)
    cells = memcheck_cells(page_text(out), heaps[0]["name"])
    worst_alloc, avg_alloc = cells[0], cells[4]
    assert "best" not in worst_alloc[0].split(), cells
    assert "best" in avg_alloc[0].split(), cells
    assert "only where it beats every other figure of the column by more than the noise" in \
        " ".join(page_text(out).split()), "the legend does not say what green means"


def test_bench_shows_the_shared_target_and_the_contended_latencies(full):
    text = page_text(full[1])
    assert "&lt;= 3.00x: met" in text and "NOT MET" not in text, "the target is not shown"
    assert "Contended: 2 threads at once on one heap" in text, "no contended table"
    assert "pi, thread 0" in text and "pi, thread 1" in text and "alloc p99" in text, \
        "the PI lock's threads are not in the contended table"


def test_a_bench_whose_target_was_not_met_is_drawn_failed_with_the_reason(rtmem, module_dir,
                                                                         whole_report_module):
    res = os.path.join(module_dir, "unmet")
    os.makedirs(res)
    with open(os.path.join(FIXTURES, "bench.json")) as f:
        d = json.load(f)
    d["passed"] = False
    shared = [x for x in d["threads"]["uncontended"]["locks"] if x["lock"] == "shared"][0]
    shared["call_locked_over_unlocked"] = 3.38
    shared["target"]["met"] = False
    with open(os.path.join(res, "bench.json"), "w") as f:
        json.dump(d, f)
    out = os.path.join(module_dir, "unmet-report")
    r = report(rtmem, res, out)
    assert r.returncode == 0, explain(r)
    text = page_text(out)
    assert "&lt;= 3.00x: NOT MET" in text, "the unmet target is not shown as such"
    assert "cost target was NOT MET (shared: 3.38x): bench failed" in text, "no note"
    assert "FAILED" in text, "the bench run is not marked failed"


def test_a_bench_with_wide_ranges_draws_them_with_their_spread(rtmem, module_dir,
                                                             whole_report_module):
    """bench's wide ranges (its JSON's "wide"): a plot of each allocator's
    median with its least and most; a range where it failed every request
    (null) has no point, and the plot is still drawn."""
    res = os.path.join(module_dir, "wide")
    os.makedirs(res)
    with open(os.path.join(FIXTURES, "bench.json")) as f:
        d = json.load(f)
    ranges, reps = 8, 3
    wide = {"range_width_bytes": 1024, "ranges": ranges, "reps": reps, "ops_per_range": 1000,
            "seconds": 0.1, "range_min_bytes": [r * 1024 + 1 for r in range(ranges)],
            "range_max_bytes": [(r + 1) * 1024 for r in range(ranges)], "allocators": []}
    for k, name in enumerate(["floor", "tlsf", "pagey"]):
        full = name != "pagey"
        med = [None if name == "floor" or (not full and r >= 4) else 20.0 + k + r
               for r in range(ranges)]
        wide["allocators"].append({
            "name": name, "pair_ns": [[40.0] * reps for _ in range(ranges)],
            "net_median_ns": med,
            "net_min_ns": [None if m is None else m - 2 for m in med],
            "net_max_ns": [None if m is None else m + 3 for m in med],
            "failed_allocs": [0 if full or r < 4 else 1000 for r in range(ranges)]})
    d["wide"] = wide
    with open(os.path.join(res, "bench.json"), "w") as f:
        json.dump(d, f)
    out = os.path.join(module_dir, "wide-report")
    r = report(rtmem, res, out)
    assert r.returncode == 0, explain(r)
    assert os.path.exists(os.path.join(out, "bench-wide.png")), os.listdir(out)
    assert "wide size ranges, with spread" in page_text(out)


def test_a_replayed_plugin_is_drawn_as_a_heap_beside_the_kinds(rtmem, module_dir,
                                                                whole_report_module):
    """A plugin in replay's results (origin "plugin"): its smallest pool in
    the table and the chart, no bound, and the verdict may name it."""
    res = os.path.join(module_dir, "plugin")
    os.makedirs(res)
    with open(os.path.join(FIXTURES, "replay.json")) as f:
        d = json.load(f)
    tlsf = [a for a in d["allocators"] if a["name"] == "tlsf"][0]
    mine = dict(tlsf, name="myheap", origin="plugin", bound=None,
                bound_why="rtmem derives none for a plugin", min_pool=tlsf["min_pool"] + 4096)
    d["allocators"].append(mine)
    d["verdict"]["advised"] = dict(d["verdict"]["advised"], kind="myheap", origin="plugin")
    with open(os.path.join(res, "replay.json"), "w") as f:
        json.dump(d, f)
    out = os.path.join(module_dir, "plugin-report")
    r = report(rtmem, res, out)
    assert r.returncode == 0, explain(r)
    text = page_text(out)
    row = re.search(r"<tr><td>myheap</td>(.*?)</tr>", text)
    assert row, "no row for the plugin"
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(1))
    assert cells[0] not in ("-", "does not fit") and cells[7] == "-", cells  # pool; no bound
    assert "use myheap on a pool of" in text
    assert pngs_in(out) == ["replay-pools.png"]


def test_latency_says_whether_idle_states_were_held(rtmem, module_dir, whole_report_module):
    res = os.path.join(module_dir, "idle-states")
    os.makedirs(res)
    with open(os.path.join(FIXTURES, "latency.json")) as f:
        held = json.load(f)
    assert held["cpu_dma_latency"]["held"], "the fixture was not made holding the setting"
    machine = json.loads(json.dumps(held))
    machine["cpu_dma_latency"].update(hold_zero=False, held=False, in_force_us=None)
    for name, d in (("latency.json", held), ("latency-default-system.json", machine)):
        with open(os.path.join(res, name), "w") as f:
            json.dump(d, f)
    out = os.path.join(module_dir, "idle-states-report")
    r = report(rtmem, res, out)
    assert r.returncode == 0, explain(r)
    text = page_text(out)
    assert "idle states held (cpu_dma_latency 0)" in text, "the held setting is not shown"
    assert "the machine&#x27;s idle states (--default-system)" in text or \
        "the machine's idle states (--default-system)" in text, "--default-system is not shown"


def test_a_first_touch_run_beside_the_sweep_is_a_table_of_its_loops(rtmem, module_dir,
                                                                    whole_report_module):
    """rtmem stride --first-touch writes a stride document with no points
    (its loops are in first_touch): it made the whole report fail, its
    empty curve on a log axis; it is a table of its own now, beside the
    sweep's curve."""
    res = os.path.join(module_dir, "first-touch")
    copy_fixtures(res, ["stride.json"])
    with open(os.path.join(FIXTURES, "stride.json")) as f:
        d = json.load(f)
    loop = {"median_ns": 98795070, "p10_ns": 93372740, "p90_ns": 111279981,
            "minor_faults": 65536}
    d.update(points=[], jumps={k: [] for k in d["jumps"]},
             command_line=["rtmem", "stride", "--first-touch", "--json", "ft.json"],
             first_touch=[{"bytes": 134217728, "reps": 11, "loop1_first_touch": loop,
                           "loop2": dict(loop, median_ns=7362290, minor_faults=0),
                           "loop1_again": dict(loop, median_ns=12782137, minor_faults=0),
                           "ratio_loop1_over_loop2": 13.42, "ratio_again_over_loop2": 1.74,
                           "ratio_16_over_1_per_access": 9.22}])
    with open(os.path.join(res, "stride-first-touch.json"), "w") as f:
        json.dump(d, f)
    out = os.path.join(module_dir, "first-touch-report")
    r = report(rtmem, res, out)
    assert r.returncode == 0, explain(r)
    text = page_text(out)
    row = re.search(r"<tr><td>128M</td>(.*?)</tr>", text)
    assert row, "no row for the first-touch run"
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(1))
    assert cells == ["98.8 ms (65536 faults)", "7.4 ms (0 faults)", "12.8 ms (0 faults)",
                     "13.42", "1.74", "9.22"], cells
    assert pngs_in(out) == ["stride-curve.png"]  # the sweep's curve, and no other


def test_a_signal_as_the_report_ends_ends_it_as_interrupted(rtmem, module_dir,
                                                              whole_report_module):
    # A signal after the last file is in place (RTMEM_REPORT_TEST_LATE_SIGNAL
    # sends SIGTERM there) still ends the run as interrupted, never exit 0.
    res = os.path.join(module_dir, "late")
    copy_fixtures(res, ["stride.json"])
    out = os.path.join(module_dir, "late-report")
    r = subprocess.run([rtmem, "report", res, "-o", out, "-q"], capture_output=True, text=True,
                       env=dict(os.environ, RTMEM_REPORT_TEST_LATE_SIGNAL="1"))
    assert r.returncode == 128 + signal.SIGTERM, explain(r)
    assert "interrupted by SIGTERM as it ended; the report was already complete" in r.stderr
    assert os.path.exists(os.path.join(out, "index.html"))
    assert not [n for n in listing(out) if n.endswith(".tmp")]


def test_the_fixtures_report_draws_every_expected_plot_and_no_other(full):
    assert pngs_in(full[1]) == ALL_PNGS


@pytest.mark.parametrize("png", ALL_PNGS)
def test_every_plot_of_the_fixtures_is_a_valid_png_with_a_plot_in_it(full, png):
    why = png_problem(os.path.join(full[1], png))
    assert why is None, why


def test_the_fixtures_report_is_the_plots_the_page_and_the_list_of_them(full):
    assert listing(full[1]) == sorted(ALL_PNGS + ["index.html", ".rtmem-report"])


def test_the_fixtures_page_is_well_formed_and_shows_exactly_the_plots(full):
    assert_page(full[1], ALL_PNGS)


@pytest.mark.parametrize("section", ["machine"] + list(EXPECTED))
def test_the_fixtures_page_has_every_section(full, section):
    assert section in parse_page(os.path.join(full[1], "index.html")).ids


@pytest.mark.parametrize("name", FIXTURE_FILES)
def test_the_fixtures_page_shows_the_command_of_each_file(full, name):
    with open(os.path.join(full[0], name)) as f:
        cmd = " ".join(json.load(f)["command_line"])
    assert cmd in page_text(full[1]), cmd


def test_the_fixtures_page_leaves_no_section_out(full):
    assert "Not in this report" not in page_text(full[1])


def test_the_run_section_shows_what_the_heap_saw(full):
    """run.json: the program's row, its heap and pool, its calls, and
    the peak as a share of the usable bytes (a percentage, not a
    fraction)."""
    with open(os.path.join(FIXTURES, "run.json")) as f:
        h = json.load(f)["heap"]
    text = page_text(full[1])
    row = re.search(r"<tr><td>the program \(pid %d\)</td>(.*?)</tr>" % h["pid"], text)
    assert row, "no row for the program"
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(1))
    assert cells[0].startswith(h["kind"] + ", ") and "locked" in cells[0], cells
    pct = 100.0 * h["peak_used_bytes"] / h["usable_bytes"]
    assert cells[1].endswith("(%.1f%%)" % pct), (cells[1], pct)
    assert cells[2].split(" / ")[0] == str(h["calls"]["malloc"]), cells


def test_the_run_section_shows_glibc_rt_measured_the_same_way(full):
    """run-glibc-rt.json: glibc-rt's row, its reserve, glibc's memory at
    the end in place of a pool, its calls and no lock of rtmem's."""
    with open(os.path.join(FIXTURES, "run-glibc-rt.json")) as f:
        h = json.load(f)["heap"]
    text = page_text(full[1])
    row = re.search(r"<tr><td>the program \(pid %d\)</td>(.*?)</tr>" % h["pid"], text)
    assert row, "no row for the program on glibc-rt"
    cells = [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1))]
    assert cells[0].startswith("glibc-rt, a reserve of ") and h["locked"] in cells[0], cells
    assert cells[1].startswith("glibc's heap ") and "at the end" in cells[1], cells
    assert cells[2].split(" / ")[0] == str(h["calls"]["malloc"]), cells
    assert cells[4] == "-" and cells[5] == "glibc's own", cells
    assert "served by glibc's own malloc (glibc-rt)" in html.unescape(text)


def test_memchecks_summary_shows_tlsfs_worst_alloc(full):
    # A figure read back into its table: tlsf's worst alloc, power-of-two.
    with open(os.path.join(full[0], "memcheck.json")) as f:
        worst = json.load(f)["allocators"][0]["pow2"]["overall"]["worst_alloc_ns"]
    assert ("%.3g us" % (worst / 1000.0)) in page_text(full[1]), worst


def test_the_list_of_what_rtmem_report_wrote(full):
    with open(os.path.join(full[1], ".rtmem-report")) as f:
        manifest = f.read().splitlines()
    assert manifest[1:] == sorted(ALL_PNGS + ["index.html"]), manifest


# ---- missing and older-schema files: sections left out, with a note -------------------

@pytest.fixture(scope="module")
def partial(rtmem, module_dir):
    """A report of memcheck's fixture, an rtmem-bench/1 file, an older
    memcheck file and a JSON file of another kind: (the results directory,
    the report directory, the result)."""
    part = os.path.join(module_dir, "part")
    copy_fixtures(part, ["memcheck.json"])
    # rtmem-bench/1 had no envelope: none of its members is required.
    with open(os.path.join(part, "bench.json"), "w") as f:
        json.dump({"schema": "rtmem-bench/1", "tool": "rtmem bench", "rtmem_version": "0.0.9",
                   "rt": {}, "allocators": []}, f)
    with open(os.path.join(part, "memcheck-old.json"), "w") as f:
        json.dump({"schema": "rtmem-memcheck/1", "rtmem_version": "0.0.9",
                   "machine": {"cpu_model": "x"}, "timer": {}, "allocators": []}, f)
    with open(os.path.join(part, "other.json"), "w") as f:
        json.dump({"name": "not a result of rtmem's"}, f)
    pout = os.path.join(module_dir, "part-report")
    return part, pout, report(rtmem, part, pout)


def test_a_partial_results_dir_is_no_error(partial):
    assert partial[2].returncode == 0, explain(partial[2])


def test_memcheck_alone_draws_only_memchecks_plots(partial):
    assert pngs_in(partial[1]) == MEMCHECK_PNGS


def test_the_partial_page_is_well_formed_and_shows_exactly_the_plots(partial):
    assert_page(partial[1], pngs_in(partial[1]))


@pytest.mark.parametrize("png", MEMCHECK_PNGS)
def test_every_plot_of_the_partial_report_is_a_valid_png_with_a_plot_in_it(partial, png):
    why = png_problem(os.path.join(partial[1], png))
    assert why is None, why


NOTES = [
    ("an older bench schema is left out", ["rtmem-bench/1", "reads rtmem-bench/2"]),
    ("an older memcheck file beside a current one is not drawn",
     ["memcheck-old.json is rtmem-memcheck/1"]),
    ("a missing tool is named with the command that makes its file",
     ["No result in", "rtmem wcet --json"]),
    ("a json file of another kind", ["other.json is no rtmem result"]),
]


@pytest.mark.parametrize("phrases", [p for _, p in NOTES], ids=[w for w, _ in NOTES])
def test_the_partial_page_notes_what_it_leaves_out(partial, phrases):
    text = page_text(partial[1])
    assert all(p in text for p in phrases), phrases


# ---- the report directory: safe writes ------------------------------------------------

@pytest.fixture(scope="module")
def rewritten(rtmem, module_dir, partial, whole_report_module):
    """Copies of the partial report and its results, with a file of the
    user's in the report, reported again: with wcet's file added, then
    removed, then with the list of what rtmem report wrote edited by hand
    to name the user's files. What each step saw."""
    part, pout = os.path.join(module_dir, "re"), os.path.join(module_dir, "re-report")
    shutil.copytree(partial[0], part)
    shutil.copytree(partial[1], pout)
    keep, holiday = os.path.join(pout, "notes.txt"), os.path.join(pout, "holiday.png")
    wcet_png = os.path.join(pout, "wcet-scenarios.png")
    with open(keep, "w") as f:
        f.write("mine\n")
    seen = {}
    copy_fixtures(part, ["wcet.json"])
    r = report(rtmem, part, pout)
    seen["added"] = r, os.path.isfile(wcet_png)
    with open(keep) as f:
        seen["kept"] = f.read()
    os.unlink(os.path.join(part, "wcet.json"))
    r = report(rtmem, part, pout)
    seen["removed"] = r, os.path.exists(wcet_png), listing(pout)
    seen["kept again"] = os.path.isfile(keep)
    with open(holiday, "w") as f:
        f.write("a picture\n")
    with open(os.path.join(pout, ".rtmem-report"), "a") as f:
        f.write("notes.txt\nholiday.png\n")
    r = report(rtmem, part, pout)
    seen["edited"] = r, os.path.isfile(keep), os.path.isfile(holiday)
    return seen


def test_a_second_run_adds_the_new_plots(rewritten):
    r, drawn = rewritten["added"]
    assert r.returncode == 0 and drawn, explain(r)


def test_a_file_of_the_users_in_the_report_dir_is_kept(rewritten):
    assert rewritten["kept"] == "mine\n"


def test_a_plot_no_longer_drawn_is_removed_and_the_users_file_survives(rewritten):
    r, there, files = rewritten["removed"]
    assert r.returncode == 0 and not there, (explain(r), files)
    assert rewritten["kept again"], files


def test_names_rtmem_report_never_writes_are_not_removed_though_listed(rewritten):
    # A list edited by hand names the user's files.
    r, keep, holiday = rewritten["edited"]
    assert r.returncode == 0 and keep and holiday, explain(r)


def test_another_index_html_is_refused_and_left_untouched(rtmem, tmp_dir, partial):
    theirs = os.path.join(tmp_dir, "theirs")
    os.makedirs(theirs)
    with open(os.path.join(theirs, "index.html"), "w") as f:
        f.write("their page\n")
    r = report(rtmem, partial[0], theirs)
    assert r.returncode == 1 and "not written by rtmem report" in r.stderr, explain(r)
    with open(os.path.join(theirs, "index.html")) as f:
        assert f.read() == "their page\n"
    assert listing(theirs) == ["index.html"], "files added: %s" % listing(theirs)


# ---- malformed files: named, nothing written, an earlier report intact ----------------

@pytest.fixture
def earlier(full, tmp_dir, whole_report):
    """A copy of the fixtures' report, to be left as it was: (its path, its
    contents)."""
    out = os.path.join(tmp_dir, "earlier")
    shutil.copytree(full[1], out)
    return out, contents(out)


def test_a_truncated_file_is_named_and_the_earlier_report_left_as_it_was(rtmem, tmp_dir,
                                                                         earlier):
    bad = os.path.join(tmp_dir, "bad")
    copy_fixtures(bad)
    with open(os.path.join(bad, "stride.json"), "w") as f:
        f.write('{"schema": "rtmem-stride/1", "tool": ')
    r = report(rtmem, bad, earlier[0])
    assert r.returncode == 1, explain(r)
    assert "stride.json" in r.stderr and "not valid JSON" in r.stderr, explain(r)
    after = contents(earlier[0])
    assert after == earlier[1], "changed: %s" % sorted(set(after) ^ set(earlier[1]))


def bench_without_a_sweep_member(tmp_dir, value=None):
    """Every fixture, bench's sweep.allocators[1].alloc_avg_ns missing (or
    value): the results directory."""
    bad = os.path.join(tmp_dir, "bad")
    copy_fixtures(bad)
    with open(os.path.join(bad, "bench.json")) as f:
        bench = json.load(f)
    if value is None:
        del bench["sweep"]["allocators"][1]["alloc_avg_ns"]
    else:
        bench["sweep"]["allocators"][1]["alloc_avg_ns"] = value
    with open(os.path.join(bad, "bench.json"), "w") as f:
        json.dump(bench, f)
    return bad


def test_a_missing_member_is_named_with_its_path_and_the_new_directory_removed(
        rtmem, tmp_dir, whole_report):
    fresh = os.path.join(tmp_dir, "fresh")
    r = report(rtmem, bench_without_a_sweep_member(tmp_dir), fresh)
    assert r.returncode == 1 and "bench.json" in r.stderr, explain(r)
    assert "sweep.allocators[1].alloc_avg_ns: missing" in r.stderr, explain(r)
    assert not os.path.exists(fresh), "left: %s" % listing(fresh)


def test_a_member_of_the_wrong_type_is_named(rtmem, tmp_dir, whole_report):
    r = report(rtmem, bench_without_a_sweep_member(tmp_dir, "fast"),
               os.path.join(tmp_dir, "fresh"))
    assert r.returncode == 1 and "alloc_avg_ns: not an array" in r.stderr, explain(r)


def test_sigint_while_drawing_ends_the_run_130_leaving_the_directory_as_it_was(rtmem, full,
                                                                              earlier):
    code, err = signalled_while_drawing(rtmem, full[0], earlier[0], signal.SIGINT)
    assert code == 130 and "interrupted" in err, (code, err)
    after = contents(earlier[0])
    assert after == earlier[1], "changed, or a temporary file: %s" % sorted(
        set(after) ^ set(earlier[1]))


# ---- a fresh memcheck --quick run ----------------------------------------------------

@pytest.fixture(scope="module")
def fresh_memcheck(rtmem, module_dir, whole_report_module):
    """A report of a fresh memcheck --quick run: its directory."""
    mres = os.path.join(module_dir, "memcheck-run")
    os.makedirs(mres)
    r = run(rtmem, "memcheck", "--quick", "--kinds", "tlsf,heapmem,xnheap,xvheap,glibc", "--json",
            os.path.join(mres, "memcheck.json"), timeout=600)
    assert r.returncode == 0, explain(r)
    mout = os.path.join(module_dir, "memcheck-report")
    r = report(rtmem, mres, mout)
    assert r.returncode == 0, explain(r)
    return mout


def test_a_fresh_memcheck_run_draws_memchecks_plots(fresh_memcheck):
    assert pngs_in(fresh_memcheck) == FRESH_MEMCHECK_PNGS


@pytest.mark.parametrize("png", FRESH_MEMCHECK_PNGS)
def test_a_fresh_memcheck_runs_plots_are_valid_pngs(fresh_memcheck, png):
    why = png_problem(os.path.join(fresh_memcheck, png))
    assert why is None, why


def test_a_fresh_memcheck_runs_page_is_well_formed(fresh_memcheck):
    assert_page(fresh_memcheck, pngs_in(fresh_memcheck))


# ---- the PNG check itself ------------------------------------------------------------

@pytest.fixture
def grey(tmp_dir, whole_report):
    """An image of axes and text alone: grey."""
    path = os.path.join(tmp_dir, "grey.png")
    write_png(path, 400, 300, lambda x, y: 128 if (x + y) % 7 == 0 else 255)
    return path


def test_a_grey_image_is_no_plot(grey):
    why = png_problem(grey)
    assert why is not None and "no plot drawn" in why, why


def test_a_grey_image_is_a_valid_png(grey):
    assert png_problem(grey, coloured=False) is None


# ---- runs with phases left out, other kinds, nulls: drawn, never an error -------------

VARIANTS = [("bench-threads", ["bench", "--quick", "--threads-only"]),
            ("bench-noglibc", ["bench", "--quick", "--kinds", "tlsf,heapmem", "--threads", "0",
                               "--no-free-order"]),
            ("memcheck-pc", ["memcheck", "--quick", "--phases", "pattern,churn", "--kinds",
                             "tlsf,glibc"]),
            ("memcheck-norows", ["memcheck", "--quick", "--no-json-rows", "--kinds",
                                 "tlsf,xnheap"]),
            ("noise", ["latency", "--noise", "--duration", "1", "--no-rt"])]


def write_null_variants(var):
    """latency without a wake-up (every figure null, docs/json.md) and a
    sweep with nulls, from the fixtures."""
    with open(os.path.join(FIXTURES, "latency.json")) as f:
        lat = json.load(f)
    for k in lat["summary"]:
        if k not in ("samples", "overruns"):
            lat["summary"][k] = None
    lat["summary"]["samples"] = 0
    lat["histogram"] = []
    for sec in lat["per_second"]:
        sec["max_ns"] = sec["min_ns"] = sec["avg_ns"] = None
    with open(os.path.join(var, "latency-none.json"), "w") as f:
        json.dump(lat, f)
    with open(os.path.join(FIXTURES, "latency-sweep.json")) as f:
        sw = json.load(f)
    sw["sweep"]["baseline"] = None
    sw["sweep"]["runs"][0]["summary"]["max_ns"] = None
    sw["sweep"]["runs"][0]["summary"]["p999_ns"] = None
    with open(os.path.join(var, "sweep-nulls.json"), "w") as f:
        json.dump(sw, f)


@pytest.fixture(scope="module")
def variants(rtmem, module_dir, whole_report_module):
    """The variant runs' results, the nulls, and their report: ({name: the
    run's result}, the report's result, its directory)."""
    var = os.path.join(module_dir, "variants")
    os.makedirs(var)
    runs = {name: run(rtmem, *(args + ["--json", os.path.join(var, name + ".json")]),
                      timeout=600) for name, args in VARIANTS}
    write_null_variants(var)
    vout = os.path.join(module_dir, "variants-report")
    return runs, report(rtmem, var, vout), vout


@pytest.mark.parametrize("name", [n for n, _ in VARIANTS])
def test_a_variant_run_passes(variants, module_dir, name):
    r = variants[0][name]
    # bench fails a run whose shared heap missed its cost target: a
    # machine's verdict, which the report then draws as a failure
    d = load_json(os.path.join(module_dir, "variants", name + ".json"))
    want = bench_status(d) if name.startswith("bench") else 0
    assert r.returncode == want, explain(r)


def test_the_variants_are_drawn_every_plot_a_valid_png(variants):
    _, r, vout = variants
    assert r.returncode == 0, explain(r)
    for n in pngs_in(vout):
        why = png_problem(os.path.join(vout, n), coloured=False)
        assert why is None, "%s: %s" % (n, why)


@pytest.mark.parametrize("png", ["bench-calls.png", "memcheck-summary.png",
                                 "latency-histogram.png", "sweep-curves.png"])
def test_the_variants_plots_are_drawn(variants, png):
    assert png in pngs_in(variants[2])


def test_the_variants_page_is_well_formed(variants):
    assert_page(variants[2], pngs_in(variants[2]))


@pytest.mark.parametrize("phrase", ["without its main phase (--threads-only)",
                                    "did not run (--phases)",
                                    "without its rows (--no-json-rows)"])
def test_the_variants_page_says_what_each_run_left_out(variants, phrase):
    assert phrase in page_text(variants[2])


# ---- a bug in a section, a huge number, SIGTERM: nothing left behind -------------------

def test_a_bug_in_a_section_exits_1_with_its_traceback_leaving_the_report(rtmem, full,
                                                                          earlier):
    r = report(rtmem, full[0], earlier[0], env={"RTMEM_REPORT_TEST_RAISE": "stride"})
    assert r.returncode == 1, explain(r)
    assert "internal error" in r.stderr and "Traceback" in r.stderr, explain(r)
    after = contents(earlier[0])
    assert after == earlier[1], "changed: %s" % sorted(set(after) ^ set(earlier[1]))


def test_a_bug_in_a_section_removes_the_directory_the_run_made(rtmem, full, tmp_dir,
                                                               whole_report):
    fresh = os.path.join(tmp_dir, "fresh")
    r = report(rtmem, full[0], fresh, env={"RTMEM_REPORT_TEST_RAISE": "stride"})
    assert r.returncode == 1, explain(r)
    assert not os.path.exists(fresh), "left: %s" % listing(fresh)


def test_a_number_out_of_range_is_named(rtmem, tmp_dir, whole_report):
    huge = os.path.join(tmp_dir, "huge")
    copy_fixtures(huge, ["stride.json"])
    with open(os.path.join(huge, "stride.json")) as f:
        st = json.load(f)
    st["points"][0]["chase"]["median_ns_per_access"] = 10 ** 400
    with open(os.path.join(huge, "stride.json"), "w") as f:
        json.dump(st, f)
    r = report(rtmem, huge, os.path.join(tmp_dir, "fresh"))
    assert r.returncode == 1, explain(r)
    assert "points[0].chase.median_ns_per_access: not a number" in r.stderr, explain(r)
    assert "Traceback" not in r.stderr, explain(r)


def test_sigterm_ends_the_run_143_leaving_the_directory_as_it_was(rtmem, full, earlier):
    code, err = signalled_while_drawing(rtmem, full[0], earlier[0], signal.SIGTERM)
    assert code == 143 and "SIGTERM" in err, (code, err)
    after = contents(earlier[0])
    assert after == earlier[1], "changed: %s" % sorted(set(after) ^ set(earlier[1]))


# ---- in a real browser ---------------------------------------------------------------

@pytest.fixture(scope="module")
def chromium(module_dir, whole_report_module):
    """Headless Chromium's command, with a profile of its own."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.skip("chromium is not installed (scripts/ensure-deps.sh chromium installs it)")
    return [path, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--hide-scrollbars",
            "--user-data-dir=" + os.path.join(module_dir, "chromium-profile")]


def dom(chromium, directory):
    """The page in directory as Chromium leaves it: (the result, the start
    of its body)."""
    r = run(*(chromium + ["--virtual-time-budget=5000", "--dump-dom",
                          "file://" + os.path.join(directory, "index.html")]), timeout=120)
    return r, r.stdout[r.stdout.find("<body"):][:200]


def test_chromium_loads_every_plot(chromium, full):
    r, body = dom(chromium, full[1])
    assert 'data-images="%d"' % len(ALL_PNGS) in body, body or explain(r)
    assert 'data-images-broken="0"' in body, body or explain(r)  # none with naturalWidth 0
    assert r.stdout.count('data-loaded="yes"') == len(ALL_PNGS), \
        "%d images marked loaded" % r.stdout.count('data-loaded="yes"')


def test_chromium_sees_a_missing_png_as_not_loaded_and_the_page_says_so(chromium, full,
                                                                        tmp_dir):
    # The check itself: a page whose plot is gone shows it as not loaded.
    gone = os.path.join(tmp_dir, "gone")
    shutil.copytree(full[1], gone)
    os.unlink(os.path.join(gone, "bench-sweep.png"))
    r, body = dom(chromium, gone)
    assert 'data-images-broken="1"' in body, body or explain(r)
    assert "1 of %d plots did not load" % len(ALL_PNGS) in r.stdout, body or explain(r)


def test_chromium_renders_the_page_to_a_screenshot(chromium, full, files, tmp_dir):
    shot = os.path.join(tmp_dir, "shot.png")
    r = run(*(chromium + ["--window-size=1280,20000", "--virtual-time-budget=5000",
                          "--screenshot=" + shot, "file://" + os.path.join(full[1], "index.html")]),
            timeout=120)
    why = png_problem(shot, coloured=False)
    assert why is None, "%s\n%s" % (why, explain(r))
    if files.get("screenshot"):
        shutil.copy(shot, files["screenshot"])
        print("the page as Chromium drew it: %s" % files["screenshot"])
