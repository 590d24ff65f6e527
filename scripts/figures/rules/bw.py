"""rtmem bw's figures: docs/bw.md (its three tables, as the tool printed
them, and what they show) and the README's bw bullet.

The tables are the first run's bw.txt; the prose beside them comes from
the same run's JSON, the README's from every run."""
from engine import fmt, rule, span
from rules.stride import code_block, iec, span_to

GRAIN = 64      # BW_GRAIN: sizes are multiples of it


def runs_of(runs):
    return runs.all("bw")


def copy_faults(r):
    c = r["copy"]
    return c["minor_faults_per_copy"] + c["major_faults_per_copy"]


def prep_faults(r, reps):
    return (r["prep_minor_faults"] + r["prep_major_faults"]) / reps


# The tables: the first run's bw.txt, each section as the tool printed it.

def section(runs, first_words):
    """The part of the printed report that starts with FIRST_WORDS, up to
    its blank line."""
    for part in runs.text("bw").split("\n\n"):
        if part.startswith(first_words):
            return code_block(part)
    raise KeyError(f"bw.txt has no part starting {first_words!r}")


@rule("bw.methods_table", "bw", what="the methods phase's table, as rtmem bw printed it (one run)")
def methods_table(runs):
    return section(runs, "methods:")


@rule("bw.prep_table", "bw", what="the prep phase's table, as rtmem bw printed it (one run)")
def prep_table(runs):
    return section(runs, "prep:")


@rule("bw.cache_table", "bw", what="the cache phase's table, as rtmem bw printed it (one run)")
def cache_table(runs):
    return section(runs, "cache:")


# What the tables show (one run).

def method_at(d, nbytes):
    for p in d["methods"]:
        if p["bytes"] == nbytes:
            return p
    raise KeyError(f"no methods row of {nbytes} bytes")


def step(d, threshold):
    """The methods rows across a glibc threshold T: T x 7/8 and T, as the
    tool's summary takes them (rounded down to BW_GRAIN); where the sizes
    lack them, the nearest below T and at or above it."""
    rows = {p["bytes"]: p for p in d["methods"]}
    lo, hi = threshold // 8 * 7 // GRAIN * GRAIN, threshold // GRAIN * GRAIN
    if lo in rows and hi in rows:
        return rows[lo], rows[hi]
    below = [p for p in d["methods"] if p["bytes"] < threshold]
    at = [p for p in d["methods"] if p["bytes"] >= threshold]
    if not below or not at:
        raise ValueError(f"no sizes around {threshold} bytes")
    return below[-1], at[0]


def step_ratio(d, threshold):
    lo, hi = step(d, threshold)
    return hi["memcpy"]["median_mib_s"] / lo["memcpy"]["median_mib_s"]


def nt_threshold(d):
    t = d["glibc"]["non_temporal_threshold"]
    if not t:
        raise ValueError("glibc's non-temporal threshold is not known")
    return t


@rule("bw.seconds", "bw", what="how long a default run takes, s, range over the runs")
def seconds(runs):
    return span_to([d["seconds"] for d in runs_of(runs)], 0)


@rule("bw.timer_pair", "bw", what="the timer's start/end pair, p50 ns, range over the runs")
def timer_pair(runs):
    return span_to([d["timer"]["overhead_p50_ns"] for d in runs_of(runs)], 0)


@rule("bw.nt_step", "bw", what="memcpy across glibc's non-temporal threshold (one run)")
def nt_step(runs):
    d = runs.one("bw")
    lo, hi = step(d, nt_threshold(d))
    a, b = lo["memcpy"]["median_mib_s"], hi["memcpy"]["median_mib_s"]
    return (f"{iec(lo['bytes'])} to {iec(hi['bytes'])} memcpy goes from {fmt(a, 0)} to "
            f"{fmt(b, 0)} MiB/s (x{fmt(b / a, 2)})")


@rule("bw.memcpy_top", "bw", what="memcpy at the largest size, MiB/s (one run)")
def memcpy_top(runs):
    top = runs.one("bw")["methods"][-1]
    return f"{fmt(top['memcpy']['median_mib_s'], 0)} at {iec(top['bytes'])}"


@rule("bw.mcblock_top", "bw", what="mcblock at the largest size, MiB/s (one run)")
def mcblock_top(runs):
    return fmt(runs.one("bw")["methods"][-1]["mcblock"]["median_mib_s"], 0)


@rule("bw.movsb_steps", "bw", what="memcpy across the rep movsb thresholds, ratios (one run)")
def movsb_steps(runs):
    d = runs.one("bw")
    g = d["glibc"]
    thr = [t for t in (g["rep_movsb_threshold"], g["rep_movsb_stop"])
           if t and t != g["non_temporal_threshold"]]
    texts = [fmt(step_ratio(d, t), 2) for t in thr]
    if not texts:
        raise ValueError("no rep movsb threshold known")
    if len(texts) == 2 and texts[0] == texts[1]:
        return f"x{texts[0]} at both"
    return " and ".join("x" + t for t in texts)


@rule("bw.dumb_share_cached", "bw",
      what="dumb over memcpy while the data is in L1d or L2, range (one run)")
def dumb_share_cached(runs):
    d = runs.one("bw")
    shares = [p["dumb"]["median_mib_s"] / p["memcpy"]["median_mib_s"]
              for p in d["methods"] if p["level"] in ("L1d", "L2")]
    if not shares:
        raise ValueError("no methods row in L1d or L2")
    return span_to(shares, 2)


def prep_ms(d, p, part):
    r = d["prep"][p]
    return (r["prep_median_ns"] if part == "prep" else r["copy"]["median_ns_per_copy"]) / 1e6


def fresh_over_locked(d):
    return prep_ms(d, "none", "copy") / prep_ms(d, "mlock", "copy")


def mlock_total_ratio(d):
    """Prep and copy with mlock over both without preparing (the tool's
    summary: x0.80)."""
    total = {p: prep_ms(d, p, "prep") + prep_ms(d, p, "copy") for p in ("none", "mlock")}
    return total["mlock"] / total["none"]


def fresh_faults(d):
    return copy_faults(d["prep"]["none"])


@rule("bw.fresh_over_locked", "bw",
      what="the copy into fresh pages over the copy into a locked destination, times (one run)")
def fresh_over_locked_one(runs):
    return fmt(fresh_over_locked(runs.one("bw")), 1)


@rule("bw.fresh_locked_ms", "bw", what="the copy into fresh pages and into a locked one, ms (one run)")
def fresh_locked_ms(runs):
    d = runs.one("bw")
    return f"{fmt(prep_ms(d, 'none', 'copy'), 1)} ms to {fmt(prep_ms(d, 'mlock', 'copy'), 1)} ms"


@rule("bw.fresh_faults", "bw", what="page faults of the copy into fresh pages (one run)")
def fresh_faults_one(runs):
    return fmt(fresh_faults(runs.one("bw")), 0)


@rule("bw.mlock_faults", "bw", what="page faults mlock takes at preparation (one run)")
def mlock_faults(runs):
    d = runs.one("bw")
    return fmt(prep_faults(d["prep"]["mlock"], d["params"]["reps"]), 0)


@rule("bw.mlock_prep_ms", "bw", what="mlock's preparation, ms (one run)")
def mlock_prep_ms(runs):
    return fmt(prep_ms(runs.one("bw"), "mlock", "prep"), 1)


@rule("bw.mlock_total_ms", "bw", what="mlock's preparation plus its copy, ms (one run)")
def mlock_total_ms(runs):
    d = runs.one("bw")
    return fmt(prep_ms(d, "mlock", "prep") + prep_ms(d, "mlock", "copy"), 1)


@rule("bw.mlock_total_ratio", "bw",
      what="mlock's preparation plus copy over the unprepared copy (one run)")
def mlock_total_ratio_one(runs):
    return fmt(mlock_total_ratio(runs.one("bw")), 2)


def cache_x(d, which, state):
    """STATE's MiB/s over warm's at the cache phase's smaller size
    (which=0, fits the L3) or its --size (which=-1)."""
    p = d["cache"]["points"][which]
    if p[state] is None:
        raise ValueError(f"cache {state}: not measured")
    return p[state]["median_mib_s"] / p["warm"]["median_mib_s"]


@rule("bw.flushed_fit", "bw", what="cleaned over warm, copy that fits the L3 (one run)")
def flushed_fit(runs):
    return fmt(cache_x(runs.one("bw"), 0, "flushed"), 2)


@rule("bw.flushed_big", "bw", what="cleaned over warm at --size (one run)")
def flushed_big(runs):
    return fmt(cache_x(runs.one("bw"), -1, "flushed"), 2)


@rule("bw.nt_big", "bw", what="non-temporal over warm at --size (one run)")
def nt_big(runs):
    return fmt(cache_x(runs.one("bw"), -1, "nt"), 2)


# The README's figures: every run.

def over_runs(runs, fn):
    return [fn(d) for d in runs_of(runs)]


@rule("bw.fresh_over_locked_runs", "bw",
      what="the copy into fresh pages over the copy into a locked one, range over the runs")
def fresh_over_locked_runs(runs):
    return span(over_runs(runs, fresh_over_locked), 1)


@rule("bw.fresh_faults_runs", "bw", what="page faults of the copy into fresh pages, range over the runs")
def fresh_faults_runs(runs):
    return span(over_runs(runs, fresh_faults), 0)


@rule("bw.mlock_total_ratio_runs", "bw",
      what="mlock's preparation plus copy over the unprepared copy, range over the runs")
def mlock_total_ratio_runs(runs):
    return span(over_runs(runs, mlock_total_ratio), 2)


@rule("bw.flushed_fit_runs", "bw", what="cleaned over warm, copy that fits the L3, range over the runs")
def flushed_fit_runs(runs):
    return span(over_runs(runs, lambda d: cache_x(d, 0, "flushed")), 2)


@rule("bw.flushed_big_runs", "bw", what="cleaned over warm at --size, range over the runs")
def flushed_big_runs(runs):
    return span(over_runs(runs, lambda d: cache_x(d, -1, "flushed")), 2)


@rule("bw.nt_step_ratio_runs", "bw",
      what="memcpy across glibc's non-temporal threshold, ratio, range over the runs")
def nt_step_ratio_runs(runs):
    return span(over_runs(runs, lambda d: step_ratio(d, nt_threshold(d))), 1)
