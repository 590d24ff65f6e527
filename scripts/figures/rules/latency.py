"""rtmem latency's figures: docs/latency.md (the sample runs make bench
makes, as the tool printed them, and what they say; the idle-state
limit held or not) and the README's latency bullet.

The sample runs are the first run's latency.txt and latency-noise.txt,
the prose beside them the same run's JSON; the held-against-default
medians come from every run: latency.json holds the limit at 0, the study
latency-default-system.json (rtmem latency --default-system) does not."""
import statistics

from engine import fmt, rule
from rules.stride import code_block, span_to


def printed(runs, source):
    """The first run's report of SOURCE in parts split at its blank lines,
    the closing "results written" left out."""
    parts = runs.text(source).rstrip("\n").split("\n\n")
    return [p for p in parts if not p.startswith("results written")]


@rule("latency.header", "latency", what="the header the sample runs print (one run's latency.txt)")
def header(runs):
    return code_block(printed(runs, "latency")[0])


@rule("latency.run_report", "latency", what="the sample latency run's report (one run's latency.txt)")
def run_report(runs):
    return code_block("\n\n".join(printed(runs, "latency")[1:]))


@rule("latency.noise_report", "latency-noise",
      what="the sample noise run's report (one run's latency-noise.txt)")
def noise_report(runs):
    return code_block("\n\n".join(printed(runs, "latency-noise")[1:]))


# The sample runs' figures (the first run's JSON).

def summary(runs):
    return runs.one("latency")["summary"]


def noise(runs):
    return runs.one("latency-noise")["noise"]


@rule("latency.p50_us", "latency", what="the sample run's median wake-up latency, us (one run)")
def p50_us(runs):
    return fmt(summary(runs)["p50_ns"] / 1e3, 1)


@rule("latency.p99_us", "latency", what="the sample run's p99, us (one run)")
def p99_us(runs):
    return fmt(summary(runs)["p99_ns"] / 1e3, 0)


@rule("latency.max_ms", "latency", what="the sample run's worst wake-up, ms (one run)")
def max_ms(runs):
    return fmt(summary(runs)["max_ns"] / 1e6, 1)


@rule("latency.overruns", "latency", what="the periods the sample run passed without a wake-up (one run)")
def overruns(runs):
    return str(summary(runs)["overruns"])


@rule("latency.steal_ms", "latency", what="the steal time of the sample run's CPU, ms (one run)")
def steal_ms(runs):
    return str(runs.one("latency")["steal_ms"])


@rule("latency.noise_max_ms", "latency-noise", what="the noise run's longest gap, ms (one run)")
def noise_max_ms(runs):
    return fmt(noise(runs)["max_ns"] / 1e6, 1)


@rule("latency.noise_stalls", "latency-noise", what="the noise run's gaps of 1 ms or more (one run)")
def noise_stalls(runs):
    return str(noise(runs)["stalls"])


@rule("latency.clock_pair_ns", "latency", what="a clock_gettime pair, the timer's p50 overhead, ns: median over the runs")
def clock_pair_ns(runs):
    return fmt(statistics.median(d["timer"]["overhead_p50_ns"] for d in runs.all("latency")), 0)


# The idle-state limit: held (make bench's run) against --default-system (the study).

@rule("latency.p50_held", "latency",
      what="the median wake-up latency with the idle-state limit held at 0, us: median over the runs")
def p50_held(runs):
    return fmt(statistics.median(d["summary"]["p50_ns"] / 1e3 for d in runs.all("latency")), 0)


@rule("latency.p50_default_system", "latency-default-system",
      what="the median wake-up latency with --default-system, us: range over the runs")
def p50_default_system(runs):
    return span_to([d["summary"]["p50_ns"] / 1e3 for d in runs.all("latency-default-system")], 0)
