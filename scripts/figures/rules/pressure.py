"""rtmem pressure's figures: docs/pressure.md's sample output, the load
make bench runs (`rtmem pressure` on its defaults), as the tool printed it
in the first run (pressure.txt)."""
from engine import rule
from rules.stride import code_block

SHOWN = 2       # per-second lines kept at each end of the table, the rest elided


def elided(part):
    """The per-second table with its first and last SHOWN lines and '...'
    between; any other part as it is."""
    lines = part.split("\n")
    if not lines[0].lstrip().startswith("time"):
        return part
    rows = lines[1:]
    if len(rows) <= 2 * SHOWN + 1:
        return part
    return "\n".join([lines[0]] + rows[:SHOWN] + ["..."] + rows[-SHOWN:])


@rule("pressure.output", "pressure",
      what="rtmem pressure's report on its defaults, per-second lines elided (one run's pressure.txt)")
def output(runs):
    parts = runs.text("pressure").rstrip("\n").split("\n\n")
    return code_block("\n\n".join(elided(p) for p in parts if not p.startswith("results written")))
