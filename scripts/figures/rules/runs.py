"""What the runs were: how many, when, at which commit."""
from engine import count_word, rule


@rule("runs.count", what="how many runs the figures come from, in words: 'three runs'")
def runs_count(runs):
    n = len(runs.dirs)
    return count_word(n) + (" run" if n == 1 else " runs")


@rule("runs.date", what="the day of the runs (or the first and last)")
def runs_date(runs):
    days = sorted({s["date"] for s in runs.stamps()})
    if not days:
        raise ValueError("no run has a date")
    return days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"
