"""rtmem stride's figures: docs/stride.md (its sample run, what the table
shows, the --first-touch study) and the README's stride bullet.

The sample run's header and report are the first run's stride.txt, as
the tool printed them; the prose figures come from the same run's JSON,
the README's and the study's from every run."""
import math
import statistics

from engine import fmt, rule

WIDE = 16       # stride 16 ints: a pass of stride 1 makes 16 times its accesses
PATTERNS = ("stride_1", "stride_16", "chase")
# "In the L3": the sizes of 1 to 4 MiB that the tool places in the L3 (2 and
# 4 MiB where the L2 is 1 MiB)
L3_EARLY = (1 << 20, 4 << 20)


# Formats, as the tool prints them.

def iec(n):
    """tk_fmt_iec: 4 KiB, 1792 B, 128 MiB."""
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    u = 0
    while u + 1 < len(units) and n and n % 1024 == 0:
        n //= 1024
        u += 1
    return f"{n} {units[u]}"


def num(x, nd):
    """tk_fmt_double: '-' for no value."""
    return "-" if x is None or not math.isfinite(x) else fmt(x, nd)


def ns(x):
    """ns per access with the decimals its size deserves."""
    return num(x, 3 if x < 10 else 2 if x < 100 else 1)


def span_to(values, nd):
    """The runs' (or points') range as the page writes it: 'a to b', or 'a'."""
    texts = sorted({fmt(v, nd) for v in values}, key=float)
    return texts[0] if len(texts) == 1 else f"{texts[0]} to {texts[-1]}"


def code_block(text):
    return "\n```\n" + text.rstrip("\n") + "\n```\n"


# The run's points and jumps.

def sweep(runs):
    return runs.all("stride")


def ratio(p):
    return p["ratio_16_over_1"]


def pass_ratio(p):
    """A pass of stride 1 over one of stride 16 (16 / 16/1 where the JSON
    predates the field)."""
    r = p.get("pass_ratio_1_over_16")
    return r if r is not None else WIDE / ratio(p)


def spread(r):
    return 100 * (r["p90_ns_per_access"] - r["p10_ns_per_access"]) / r["median_ns_per_access"]


def med(p, pat):
    return p[pat]["median_ns_per_access"]


def caches(d):
    """The caches that hold data and have a size, in sysfs order."""
    return [c for c in d["caches"] if c["type"] != "Instruction" and c.get("bytes")]


def llc(d):
    best = None
    for c in caches(d):
        if best is None or c["bytes"] >= best["bytes"]:
            best = c
    return best


def cache_named(d, name):
    for c in caches(d):
        if c["name"] == name:
            return c
    raise KeyError(f"no cache named {name}")


def level_points(d, level):
    pts = [p for p in d["points"] if p["level"] == level]
    if not pts:
        raise ValueError(f"no point in {level}")
    return pts


def l1_points(d):
    return level_points(d, caches(d)[0]["name"])


def l2_points(d):
    """The L2's points below its very size (the page's "64 to 256 KiB")."""
    l2 = cache_named(d, "L2")
    return [p for p in level_points(d, "L2") if p["bytes"] < l2["bytes"]]


def l3_early_points(d):
    lo, hi = L3_EARLY
    pts = [p for p in level_points(d, llc(d)["name"]) if lo <= p["bytes"] <= hi]
    if not pts:
        raise ValueError("no L3 point of 1 to 4 MiB")
    return pts


def memory_points(d):
    return level_points(d, "memory")


def last_jump(d, pat):
    jumps = d["jumps"][pat]
    if not jumps:
        raise ValueError(f"{pat}: no jump")
    return jumps[-1]


def chase_beyond(d):
    """The chase's points from the end of its last jump on: beyond the
    caches the host leaves this VM."""
    to = last_jump(d, "chase")["to_bytes"]
    return [med(p, "chase") for p in d["points"] if p["bytes"] >= to]


def jump_place(d, j):
    """Where a jump lies against the caches, as the report says it."""
    top = llc(d)
    if top is None:
        return "no cache size known"
    past = [c for c in caches(d) if j["from_bytes"] <= c["bytes"] < j["to_bytes"]]
    if past:
        names = [f"{c['name']} ({iec(c['bytes'])})" for c in past]
        return "past " + (names[0] if len(names) == 1
                          else ", ".join(names[:-1]) + " and " + names[-1])
    for c in caches(d):
        if j["to_bytes"] <= c["bytes"]:
            word = "reaching" if j["to_bytes"] == c["bytes"] else "within"
            return f"{word} {c['name']} ({iec(c['bytes'])})"
    return f"beyond {top['name']} ({iec(top['bytes'])})"


def jump_text(d, j):
    """'x3.6 from 256 KiB to 1 MiB, past L2 (512 KiB)'."""
    return (f"x{fmt(j['factor'], 1)} from {iec(j['from_bytes'])} to {iec(j['to_bytes'])}, "
            f"{jump_place(d, j)}")


# The sample run's header and report.

def printed(runs):
    """The first run's report as rtmem stride printed it (stride.txt), in
    parts split at its blank lines, the closing "results written" left out."""
    parts = runs.text("stride").rstrip("\n").split("\n\n")
    return [p for p in parts if not p.startswith("results written")]


@rule("stride.header", "stride", what="the sample run's header, as rtmem stride printed it (one run)")
def header(runs):
    return code_block(printed(runs)[0])


@rule("stride.report", "stride",
      what="the sample run's report: table (with 16/1 and pass), jumps, timer, faults (one run)")
def report(runs):
    parts = printed(runs)
    first = next(i for i, p in enumerate(parts) if "16/1" in p)
    return code_block("\n\n".join(parts[first:]))


@rule("stride.run_seconds", "stride", what="how long the sample run took, s (one run)")
def run_seconds(runs):
    return fmt(runs.one("stride")["seconds"], 1)


@rule("stride.seconds", "stride", what="how long a default run takes, s, range over the runs")
def seconds(runs):
    return span_to([d["seconds"] for d in sweep(runs)], 0)


@rule("stride.timer_pair", "stride", what="the timer's start/end pair, p50 ns, range over the runs")
def timer_pair(runs):
    return span_to([d["timer"]["overhead_p50_ns"] for d in sweep(runs)], 0)


# What the sample run's table shows (one run).

def l1_rmw(d):
    """A read-modify-write in the L1d, either stride: the median of the
    L1d rows' medians."""
    return statistics.median([med(p, pat) for p in l1_points(d) for pat in PATTERNS[:2]])


def l1_chase(d):
    return statistics.median([med(p, "chase") for p in l1_points(d)])


def mem_ratios(d):
    return [ratio(p) for p in memory_points(d)]


def mem_s16(d):
    return statistics.median([med(p, "stride_16") for p in memory_points(d)])


@rule("stride.l1_rmw", "stride", what="a read-modify-write in the L1d, either stride, median ns (one run)")
def l1_rmw_one(runs):
    return fmt(l1_rmw(runs.one("stride")), 2)


@rule("stride.l1_chase", "stride", what="the chase in the L1d, median ns (one run)")
def l1_chase_one(runs):
    return fmt(l1_chase(runs.one("stride")), 1)


@rule("stride.l2_s16", "stride", what="stride 16 in the L2 below its size, ns, range (one run)")
def l2_s16(runs):
    return span_to([med(p, "stride_16") for p in l2_points(runs.one("stride"))], 2)


@rule("stride.l2_ratio_min", "stride", what="the lowest 16/1 in the L2 below its size (one run)")
def l2_ratio_min(runs):
    return fmt(min(ratio(p) for p in l2_points(runs.one("stride"))), 1)


@rule("stride.l2_chase", "stride", what="the chase at the smallest L2 size, ns (one run)")
def l2_chase(runs):
    return fmt(med(l2_points(runs.one("stride"))[0], "chase"), 1)


@rule("stride.chase_l2_jump", "stride", what="the chase's jump past the L2, as the report gives it (one run)")
def chase_l2_jump(runs):
    d = runs.one("stride")
    for j in d["jumps"]["chase"]:
        if "L2" in j["past"]:
            return jump_text(d, j)
    raise ValueError("no chase jump past the L2")


@rule("stride.l3_chase", "stride", what="the chase at 1 to 4 MiB (L3), ns, range (one run)")
def l3_chase(runs):
    return span_to([med(p, "chase") for p in l3_early_points(runs.one("stride"))], 0)


@rule("stride.l3_s16", "stride", what="stride 16 at 1 to 4 MiB (L3), median ns (one run)")
def l3_s16(runs):
    return fmt(statistics.median([med(p, "stride_16") for p in l3_early_points(runs.one("stride"))]), 1)


@rule("stride.chase_llc_jump", "stride", what="the chase's last jump, out of the L3 (one run)")
def chase_llc_jump(runs):
    d = runs.one("stride")
    return jump_text(d, last_jump(d, "chase"))


@rule("stride.s16_llc_jump", "stride", what="stride 16's last jump, out of the L3 (one run)")
def s16_llc_jump(runs):
    d = runs.one("stride")
    return jump_text(d, last_jump(d, "stride_16"))


@rule("stride.chase_8m", "stride", what="the chase at 8 MiB, ns (one run)")
def chase_8m(runs):
    for p in runs.one("stride")["points"]:
        if p["bytes"] == 8 << 20:
            return fmt(med(p, "chase"), 0)
    raise ValueError("no 8 MiB point")


@rule("stride.mem_chase", "stride",
      what="the chase from the end of its last jump on, ns, range (one run)")
def mem_chase(runs):
    return span_to(chase_beyond(runs.one("stride")), 0)


@rule("stride.mem_s16", "stride", what="stride 16 in memory, ns, range (one run)")
def mem_s16_range(runs):
    return span_to([med(p, "stride_16") for p in memory_points(runs.one("stride"))], 1)


@rule("stride.mem_s16_median", "stride", what="stride 16 in memory, median ns (one run)")
def mem_s16_median(runs):
    return fmt(mem_s16(runs.one("stride")), 1)


@rule("stride.mem_s16_over_l3", "stride",
      what="stride 16 in memory over stride 16 at 1 to 4 MiB, medians, whole times (one run)")
def mem_s16_over_l3(runs):
    d = runs.one("stride")
    l3 = statistics.median([med(p, "stride_16") for p in l3_early_points(d)])
    return fmt(mem_s16(d) / l3, 0)


@rule("stride.mem_s1", "stride", what="stride 1 in memory, median ns (one run)")
def mem_s1(runs):
    return fmt(statistics.median([med(p, "stride_1") for p in memory_points(runs.one("stride"))]), 1)


@rule("stride.mem_ratio", "stride", what="16/1 in memory, range (one run)")
def mem_ratio(runs):
    return span_to(mem_ratios(runs.one("stride")), 1)


@rule("stride.s1_spread_max", "stride", what="the largest spread of the stride-1 rows, % (one run)")
def s1_spread_max(runs):
    return fmt(max(spread(p["stride_1"]) for p in runs.one("stride")["points"]), 0) + "%"


@rule("stride.faults_timed", "stride", what="page faults during the timed repetitions, in words (one run)")
def faults_timed(runs):
    n = runs.one("stride")["minor_faults_timed"]
    return "No page fault" if n == 0 else f"{n} page faults"


# The README's figures: every run.

def over_runs(runs, fn):
    return [fn(d) for d in sweep(runs)]


@rule("stride.l1_rmw_runs", "stride", what="a read-modify-write in the L1d, median ns over the runs")
def l1_rmw_runs(runs):
    return fmt(statistics.median(over_runs(runs, l1_rmw)), 1)


@rule("stride.l1_chase_runs", "stride", what="the chase in the L1d, median ns over the runs")
def l1_chase_runs(runs):
    return fmt(statistics.median(over_runs(runs, l1_chase)), 1)


@rule("stride.mem_ratio_runs", "stride", what="16/1 in memory, median over the runs' points")
def mem_ratio_runs(runs):
    return fmt(statistics.median([r for d in sweep(runs) for r in mem_ratios(d)]), 1)


@rule("stride.mem_pass_runs", "stride",
      what="a pass of stride 1 over one of stride 16 in memory, median over the runs' points")
def mem_pass_runs(runs):
    return fmt(statistics.median([pass_ratio(p) for d in sweep(runs) for p in memory_points(d)]), 1)


@rule("stride.mem_chase_runs", "stride",
      what="the chase beyond its last jump, ns, range over the runs")
def mem_chase_runs(runs):
    return span_to([v for d in sweep(runs) for v in chase_beyond(d)], 0)


@rule("stride.chase_llc_between_runs", "stride",
      what="the sizes between which the chase leaves the L3 (its last jump), over the runs")
def chase_llc_between_runs(runs):
    jumps = over_runs(runs, lambda d: last_jump(d, "chase"))
    return (f"{iec(min(j['from_bytes'] for j in jumps))} and "
            f"{iec(max(j['to_bytes'] for j in jumps))}")


# The --first-touch study: one row per run.

def first(runs):
    """Each run's first (the default: only) size of --first-touch."""
    out = []
    for d in runs.all("stride-first-touch"):
        if not d["first_touch"]:
            raise ValueError("stride-first-touch.json has no first_touch")
        out.append(d["first_touch"][0])
    return out


def ms(loop):
    return loop["median_ns"] / 1e6


@rule("stride.first_touch_table", "stride-first-touch",
      what="rtmem stride --first-touch: each run's loop times (ms) and ratios")
def first_touch_table(runs):
    rows = []
    for k, ft in enumerate(first(runs), 1):
        faults = ft["loop1_first_touch"]["minor_faults"] // max(ft["reps"], 1)
        rows.append("| " + " | ".join([
            str(k), f"{fmt(ms(ft['loop1_first_touch']), 1)} ({faults} faults)",
            fmt(ms(ft["loop2"]), 1), fmt(ms(ft["loop1_again"]), 1),
            fmt(ft["ratio_loop1_over_loop2"], 1), fmt(ft["ratio_again_over_loop2"], 2),
            fmt(ft["ratio_16_over_1_per_access"], 2)]) + " |")
    head = ("| run | loop 1, first touch | loop 2 | loop 1 again | loop 1 / 2 | again / 2 "
            "| per access |\n|---|---:|---:|---:|---:|---:|---:|\n")
    return "\n" + head + "\n".join(rows) + "\n"


@rule("stride.first_touch_ratio", "stride-first-touch",
      what="--first-touch: loop 1 / loop 2 (the published ratio), range over the runs")
def first_touch_ratio(runs):
    return span_to([ft["ratio_loop1_over_loop2"] for ft in first(runs)], 1)


@rule("stride.first_touch_again_ms", "stride-first-touch",
      what="--first-touch: loop 1 again (no faults), ms, range over the runs")
def first_touch_again_ms(runs):
    return span_to([ms(ft["loop1_again"]) for ft in first(runs)], 0)


@rule("stride.first_touch_loop1_ms", "stride-first-touch",
      what="--first-touch: loop 1 with its faults, ms to the ten, median over the runs")
def first_touch_loop1_ms(runs):
    return str(int(round(statistics.median([ms(ft["loop1_first_touch"]) for ft in first(runs)]), -1)))


@rule("stride.first_touch_pass", "stride-first-touch",
      what="--first-touch: loop 1 again / loop 2, range over the runs")
def first_touch_pass(runs):
    return span_to([ft["ratio_again_over_loop2"] for ft in first(runs)], 1)


@rule("stride.first_touch_per_access", "stride-first-touch",
      what="--first-touch: stride 16 over stride 1 per access, range over the runs")
def first_touch_per_access(runs):
    return span_to([ft["ratio_16_over_1_per_access"] for ft in first(runs)], 1)
