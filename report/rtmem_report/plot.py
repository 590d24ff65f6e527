"""What every plot of the report shares: matplotlib without a display, one
colour per allocator on every plot, the floor line, axes of sizes.
"""

import math

import matplotlib

matplotlib.use("Agg")  # no display: PNG files only

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

DPI = 100

# One colour per allocator, the same on every plot. An allocator's
# variants (tlsf-none: hardening off; tlsf(typed): the typed API) keep
# its colour and differ by line style or hatch. Plugins and anything
# else take the remaining colours in the order the report first meets them.
_FIXED = {
    "tlsf": "#1f77b4",
    "heapmem": "#2ca02c",
    "xnheap": "#9467bd",
    "glibc": "#d62728",
    "jemalloc": "#ff7f0e",
    "mimalloc": "#8c564b",
    "tcmalloc": "#e377c2",
    "floor": "#7f7f7f",
}
_SPARE = ["#17becf", "#bcbd22", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173",
          "#3182bd", "#e6550d", "#31a354"]
_given = {}


def base_name(name):
    """tlsf-none, tlsf(typed) -> tlsf; a plugin's path -> its file name."""
    for suffix in ("-none", "(typed)", "-full"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def colour(name):
    base = base_name(name)
    if base in _FIXED:
        return _FIXED[base]
    if base not in _given:
        _given[base] = _SPARE[len(_given) % len(_SPARE)]
    return _given[base]


def style(name):
    """Line style: a variant is dashed (-none) or dotted ((typed))."""
    if name.endswith("-none"):
        return "--"
    if name.endswith("(typed)"):
        return ":"
    return "-"


def hatch(name):
    if name.endswith("-none"):
        return "//"
    if name.endswith("(typed)"):
        return ".."
    return None


def figure(width=9.6, height=4.8, ncols=1, nrows=1, **kw):
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), dpi=DPI, squeeze=False, **kw)
    for ax in axes.flat:
        ax.grid(True, which="major", color="#dddddd", linewidth=0.7)
        ax.set_axisbelow(True)
    return fig, axes


def _short(v):
    """1, 20, 500, 2k, 50k, 1M: a log axis's label."""
    if v >= 1e6:
        return "%gM" % (v / 1e6)
    if v >= 1e3:
        return "%gk" % (v / 1e3)
    return "%g" % v


def short_numbers(ax, axis="y"):
    """A linear axis labelled 500k, 1M rather than with an offset (1e6)."""
    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(
        FuncFormatter(lambda v, _: _short(v) if v >= 0 else "-" + _short(-v)))


def _tidy_log_axes(fig):
    """A log axis spanning more than 2.5 decades is labelled at powers of
    10 only; a size axis at most every other power of two past 12 ticks."""
    for ax in fig.axes:
        for a, scale, lim in ((ax.xaxis, ax.get_xscale(), ax.get_xlim()),
                              (ax.yaxis, ax.get_yscale(), ax.get_ylim())):
            if scale != "log" or lim[0] <= 0:
                continue
            decades = math.log10(lim[1] / lim[0])
            base = a.get_transform().base
            if base == 10 and decades > 2.5:
                a.set_major_locator(LogLocator(base=10, subs=(1.0,)))
            elif base == 2 and decades / math.log10(2) > 12:
                a.set_major_locator(LogLocator(base=2, numticks=12))


def save(fig, path):
    _tidy_log_axes(fig)
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=DPI)
    plt.close(fig)


def size_label(n):
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale:
            v = n / float(scale)
            return ("%d%s" % (v, unit)) if v == int(v) else ("%.3g%s" % (v, unit))
    return "%d" % n


def log2_size_axis(ax, axis="x"):
    """A logarithmic axis of sizes in bytes, ticks at powers of two, labelled
    16, 1K, 4M."""
    a = ax.xaxis if axis == "x" else ax.yaxis
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log", base=2)
    a.set_major_formatter(FuncFormatter(lambda v, _: size_label(v) if v >= 1 else ""))
    a.set_minor_formatter(NullFormatter())


def log10_axis(ax, axis="y"):
    """A logarithmic axis labelled at 1, 2 and 5 of each decade (a range
    inside one decade still reads)."""
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
    a = ax.yaxis if axis == "y" else ax.xaxis
    a.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    a.set_major_formatter(FuncFormatter(lambda v, _: _short(v)))
    a.set_minor_locator(LogLocator(base=10, subs="auto"))
    a.set_minor_formatter(NullFormatter())


def cache_lines(ax, caches, sizes):
    """The data and unified caches (the objects of a result's `caches`)
    whose size lies within the sizes plotted, as dotted verticals named at
    the top."""
    lo, hi = (min(sizes), max(sizes)) if sizes else (1, 0)
    for c in caches.objs():
        if c.str("type", nullable=True) == "Instruction" or not c.has("bytes") or \
                not lo <= c.num("bytes") <= hi:
            continue
        ax.axvline(c.num("bytes"), color="#555555", linewidth=0.9, linestyle=":")
        ax.text(c.num("bytes"), 1.0, " " + (c.str("name", nullable=True) or "?"),
                transform=ax.get_xaxis_transform(), va="top", fontsize=8, color="#333333")


def floor_line(ax, value, label, axis="y"):
    """The measurement's own floor (a no-op call, a pair of timer readings)
    as a grey band from 0 to it: a figure inside it is the machine's, not
    the allocator's."""
    if value is None or value <= 0:
        return
    if axis == "y":
        ax.axhline(value, color="#555555", linestyle=(0, (4, 3)), linewidth=1.2, label=label,
                   zorder=1)
        ax.axhspan(ax.get_ylim()[0] if ax.get_yscale() == "log" else 0, value,
                   color="#bbbbbb", alpha=0.25, zorder=0)
    else:
        ax.axvline(value, color="#555555", linestyle=(0, (4, 3)), linewidth=1.2, label=label,
                   zorder=1)
