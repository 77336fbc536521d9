"""A figure's text alternative in words (deck.Step.describe): what the figure is, what its axes
are, the range of its values and where its ends are, worded the same way on every page so a
screen reader's user learns one pattern. No Streamlit and no stage; the numbers come from the
step's facts (vit_core.explain.extremes computes a range and where its ends are). Each sentence
prints its numbers as the figure prints them (`fmt`), so a reader of the figure and a listener
to its description hear the same numbers.

    num(x), two(x)             a value as the descriptions print it: 3 significant digits /
                               two decimals
    heatmap(what, rows=, cols=, value=, ext=)
                               "A heatmap of … : rows are …, columns are …; colour is …, from
                               a to b, the largest at row r (name), column c (name)."
    patch_map(what, value, ext, grid)
                               a g×g map over the patches: "… from a to b, the largest at patch
                               p (row r, column c), the smallest at patch q (row r, column c)."
    bars(what, labels, values) "A bar chart of …, n bars: the longest is … at …, the shortest
                               … at …; each: label: value; …" (each bar said up to BARS_SAID)
    paired_bars(...)           two runs side by side: the largest change
    curves(x, y, xs, series), line(name, xs, ys)
                               a line chart: its axes; each line's start, end and highest point
    table(what, rows)          "A table of … : n rows; its columns: …; …."

The numbers keep the forms tests/test_figure_alt.py reads back ("from a to b", "the largest
at …row r, column c", "label: value", "n rows; its columns:", "the longest is"): change them
together.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from vit_core.explain.extremes import Extremes, extremes

Fmt = Callable[[float], str]
BARS_SAID = 12  # a bar chart's description says each bar up to this many; past it, its ends
SERIES_NAMED = 4  # a line chart's description follows this many lines; the rest are counted


def num(x: float) -> str:
    """3 significant digits in plain decimals ('0.0123', '-1.5', '42.7', '0.0000123'), whole
    numbers from 100 ('1,234'); never '-0'."""
    x = float(x)
    if abs(x) >= 100 or x == 0:
        text = f"{x:,.0f}"
    else:
        text = f"{x:.{max(0, 2 - math.floor(math.log10(abs(x))))}f}"
        text = text.rstrip("0").rstrip(".") if "." in text else text
    return text[1:] if text.startswith("-") and float(text.replace(",", "")) == 0 else text


def two(v: float) -> str:
    """Two decimals, never '-0.00' (as the charts print logits and cosines)."""
    return f"{v:.2f}".replace("-0.00", "0.00")


def _named(i: int, names: Sequence[str] | None) -> str:
    return f" ({names[i]})" if names is not None and i < len(names) else ""


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def span(ext: Extremes, fmt: Fmt = num) -> str:
    """'from a to b': the range of a figure's values."""
    return f"from {fmt(ext.lo)} to {fmt(ext.hi)}"


def heatmap(what: str, *, rows: str, cols: str, value: str, ext: Extremes,
            row_names: Sequence[str] | None = None, col_names: Sequence[str] | None = None,
            fmt: Fmt = num) -> str:
    """A matrix drawn as a heatmap (`ext` = extremes of the matrix as drawn, rows first).

    Args:
        what: what the matrix is ("the attention pattern of layer 0, head 1, 65×65").
        rows, cols: what its rows and columns are ("query token", "key token").
        value: what the colour is ("attention weight").
        row_names, col_names: a name per row / column, said with the largest cell's index."""
    r, c = ext.at_hi if len(ext.at_hi) == 2 else (0, ext.at_hi[-1])
    blank = f" {ext.left_out} blocked cell{_s(ext.left_out)} left blank." if ext.left_out else ""
    head = f"A heatmap of {what}: rows are {rows}, columns are {cols}; colour is {value}, "
    if ext.lo == ext.hi:
        return head + f"{fmt(ext.hi)} in every cell.{blank}"
    return (head + f"{span(ext, fmt)}, the largest at row {r}{_named(r, row_names)}, column "
            f"{c}{_named(c, col_names)}.{blank}")


def patch_map(what: str, value: str, ext: Extremes, grid: int, fmt: Fmt = num) -> str:
    """A map over the g×g patches (`ext` of the [g, g] map or of its g² values in reading
    order): the range, where the largest and the smallest are."""
    def place(at: tuple[int, ...]) -> str:
        p = at[0] * grid + at[1] if len(at) == 2 else at[0]
        return f"patch {p} (row {p // grid}, column {p % grid})"

    head = (f"{what}: a {grid}×{grid} map over the patches (rows top to bottom, columns left to "
            f"right), colour is {value}, ")
    if ext.lo == ext.hi:
        return head + f"{fmt(ext.hi)} on every patch."
    return (head + f"{span(ext, fmt)}, the largest at {place(ext.at_hi)}, the smallest at "
            f"{place(ext.at_lo)}.")


def bars(what: str, labels: Sequence[str], values, fmt: Fmt = num, *, axis: str = "") -> str:
    """A bar chart in the order it is drawn: how many bars, what they measure (`axis`), the
    longest and the shortest, then each bar with its value (up to BARS_SAID bars)."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    head = f"A bar chart of {what}, {v.size} bar{_s(v.size)}" + (f" ({axis})" if axis else "")
    if v.size == 1:
        return head + f": {labels[0]} at {fmt(v[0])}."
    e = extremes(v)
    said = (f": the longest is {labels[e.at_hi[0]]} at {fmt(e.hi)}, the shortest "
            f"{labels[e.at_lo[0]]} at {fmt(e.lo)}")
    if v.size > BARS_SAID:
        return head + said + "."
    each = "; ".join(f"{label}: {fmt(y)}" for label, y in zip(labels, v, strict=True))
    return head + said + f"; each: {each}."


def paired_bars(what: str, labels: Sequence[str], before, after, fmt: Fmt, *,
                names: Sequence[str] = ("before", "after")) -> str:
    """Two bars per label (two runs side by side): how many, and the largest change."""
    b = np.asarray(before, dtype=np.float64).reshape(-1)
    a = np.asarray(after, dtype=np.float64).reshape(-1)
    e = extremes(np.abs(a - b))
    k = e.at_hi[0]
    said = (f"Paired bars, {names[0]} against {names[1]}, of {what}: {len(labels)} rows, "
            f"each bar printing its value")
    if e.hi == 0:
        return said + ": every pair is equal."
    return said + f"; the largest change is {labels[k]}, from {fmt(b[k])} to {fmt(a[k])}."


def curves(x_name: str, y_name: str, xs: Sequence, series: dict[str, Sequence[float]],
           fmt: Fmt = num) -> str:
    """A line chart: its axes, and for each line where it starts, ends and peaks."""
    said = [f"A line chart; across: {x_name}; up: {y_name}."]
    said += [line(name, xs, ys, fmt) for name, ys in list(series.items())[:SERIES_NAMED]]
    more = len(series) - SERIES_NAMED
    if more > 0:
        said.append(f"{more} more line{_s(more)} are drawn.")
    return " ".join(said)


def line(name: str, xs: Sequence, ys: Sequence[float], fmt: Fmt = num) -> str:
    """One line of a chart: where it starts, where it ends, and its highest point."""
    y = np.asarray(ys, dtype=np.float64).reshape(-1)
    if not y.size:
        return f"{name}: no point."
    e = extremes(y)
    return (f"{name}: from {fmt(y[0])} at {xs[0]} to {fmt(y[-1])} at {xs[len(y) - 1]}, "
            f"highest {fmt(e.hi)} at {xs[e.at_hi[0]]}.")


def table(what: str, rows: int | Sequence[dict], then: str = "", *,
          columns: Sequence[str] | None = None) -> str:
    """A table: what it lists, how many rows, its columns (`columns`, or the keys of its first
    row when `rows` are the rows themselves), then `then` (its key row, worded by the stage)."""
    if columns is None:
        columns = list(rows[0]) if rows else []
    n = rows if isinstance(rows, int) else len(rows)
    return (f"A table of {what}: {n} row{_s(n)}; its columns: {'; '.join(columns)}."
            + (f" {then}" if then else ""))
