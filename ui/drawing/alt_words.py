"""Text alternatives of bar charts, line charts, tables and patch-grid maps, worded from the
values the figure draws (a step's `describe`, ui/lesson/deck.Step): what the axes are, where the
extremes are, the range. Each sentence prints its numbers as the figure prints them (`fmt`), so
a reader of the figure and a listener to its description hear the same numbers.

The extremes come from vit_core.explain.figure_extremes; nothing here knows a stage.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from vit_core.explain.figure_extremes import extremes

Fmt = Callable[[float], str]
SERIES_NAMED = 4  # a line chart's description follows this many lines; the rest are counted


def two(v: float) -> str:
    """Two decimals, never '-0.00' (as the charts print logits and cosines)."""
    return f"{v:.2f}".replace("-0.00", "0.00")


def sig3(v: float) -> str:
    """Three significant figures, in plain decimals (0.000123, 1.23, 123)."""
    if v == 0:
        return "0"
    return f"{v:.{max(0, 2 - math.floor(math.log10(abs(v))))}f}"


def bars(what: str, labels: Sequence[str], values, fmt: Fmt, *, axis: str = "") -> str:
    """A bar chart: how many bars, what they measure (`axis`), the longest and the shortest."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    e = extremes(v)
    head = f"A bar chart of {what}, {e.n} bar{'' if e.n == 1 else 's'}" + (
        f" ({axis})" if axis else "")
    if e.n == 1:
        return head + f": {labels[0]} at {fmt(v[0])}."
    return (head + f": the longest is {labels[e.argmax]} at {fmt(e.hi)}, the shortest "
            f"{labels[e.argmin]} at {fmt(e.lo)}.")


def paired_bars(what: str, labels: Sequence[str], before, after, fmt: Fmt, *,
                names: Sequence[str] = ("before", "after")) -> str:
    """Two bars per label (two runs side by side): how many, and the largest change."""
    b = np.asarray(before, dtype=np.float64).reshape(-1)
    a = np.asarray(after, dtype=np.float64).reshape(-1)
    e = extremes(np.abs(a - b))
    k = e.argmax
    said = (f"Paired bars, {names[0]} against {names[1]}, of {what}: {len(labels)} rows, "
            f"each bar printing its value")
    if e.hi == 0:
        return said + ": every pair is equal."
    return said + f"; the largest change is {labels[k]}, from {fmt(b[k])} to {fmt(a[k])}."


def curves(x_name: str, y_name: str, xs: Sequence, series: dict[str, Sequence[float]],
           fmt: Fmt) -> str:
    """A line chart: its axes, and for each line where it starts, ends and peaks."""
    said = [f"A line chart; across: {x_name}; up: {y_name}."]
    said += [line(name, xs, ys, fmt) for name, ys in list(series.items())[:SERIES_NAMED]]
    more = len(series) - SERIES_NAMED
    if more > 0:
        said.append(f"{more} more line{'' if more == 1 else 's'} are drawn.")
    return " ".join(said)


def line(name: str, xs: Sequence, ys: Sequence[float], fmt: Fmt) -> str:
    """One line of a chart: where it starts, where it ends, and its highest point."""
    y = np.asarray(ys, dtype=np.float64).reshape(-1)
    if not y.size:
        return f"{name}: no point."
    e = extremes(y)
    return (f"{name}: from {fmt(y[0])} at {xs[0]} to {fmt(y[-1])} at {xs[len(y) - 1]}, "
            f"highest {fmt(e.hi)} at {xs[e.argmax]}.")


def table(what: str, rows: list[dict], then: str = "") -> str:
    """A table: what it lists, its rows and its columns, then `then` (its key row, worded by the
    stage)."""
    cols = list(rows[0]) if rows else []
    return (f"A table of {what}: {len(rows)} row{'' if len(rows) == 1 else 's'}, columns "
            + ", ".join(cols) + "." + (f" {then}" if then else ""))


def grid_map(what: str, values, fmt: Fmt) -> str:
    """A map of the patch grid (patch p at row p // g, column p % g), coloured by `what`: the
    range and where the highest and lowest are."""
    v = np.asarray(values, dtype=np.float64)
    g = v.shape[0]
    e = extremes(v)
    (r0, c0), (r1, c1) = e.at(g)
    return (f"A {g}×{g} map of the patches (rows top to bottom, columns left to right), "
            f"coloured by {what} from {fmt(e.lo)} to {fmt(e.hi)}: the highest at patch "
            f"{e.argmax} (row {r1}, column {c1}), the lowest at patch {e.argmin} (row {r0}, "
            f"column {c0}).")
