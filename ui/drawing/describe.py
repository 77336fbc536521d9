"""A figure's text alternative in words (deck.Step.describe): what the figure is, what its axes
are, the range of its values and where the largest is, worded the same way on every page so a
screen reader's user learns one pattern. No Streamlit; the numbers come from the step's facts
(vit_core.explain.extremes computes a range and where its ends are).

    num(x)                     a value as the descriptions print it: 3 significant digits
    heatmap(what, rows=, cols=, value=, ext=)
                               "A heatmap of … : rows are …, columns are …; colour is …, from
                               a to b, the largest at row r (name), column c (name)."
    patch_map(what, value, ext, grid)
                               a g×g map over the patches: "… the largest at patch p (row r,
                               column c)."
    bars(what, labels, values) "Bars of …: label: value; label: value." (in the drawn order)
    table(what, rows, columns) "A table of … : n rows; columns: …."

The numbers keep the forms tests/test_figure_alt.py reads back ("from a to b", "row r",
"column c", "label: value"): change them together.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from vit_core.explain.extremes import Extremes


def num(x: float) -> str:
    """3 significant digits ('0.0123', '-1.5', '42.7'), whole numbers from 100 ('1,234'); never
    '-0'."""
    x = float(x)
    text = f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"
    return text[1:] if text.startswith("-") and float(text.replace(",", "")) == 0 else text


def _named(i: int, names: Sequence[str] | None) -> str:
    return f" ({names[i]})" if names is not None and i < len(names) else ""


def span(ext: Extremes, fmt: Callable[[float], str] = num) -> str:
    """'from a to b': the range of a figure's values."""
    return f"from {fmt(ext.lo)} to {fmt(ext.hi)}"


def heatmap(what: str, *, rows: str, cols: str, value: str, ext: Extremes,
            row_names: Sequence[str] | None = None, col_names: Sequence[str] | None = None,
            fmt: Callable[[float], str] = num) -> str:
    """A matrix drawn as a heatmap (`ext` = extremes of the matrix as drawn, rows first).

    Args:
        what: what the matrix is ("the attention pattern of layer 0, head 1, 65×65").
        rows, cols: what its rows and columns are ("query token", "key token").
        value: what the colour is ("attention weight").
        row_names, col_names: a name per row / column, said with the largest cell's index."""
    r, c = ext.at_hi if len(ext.at_hi) == 2 else (0, ext.at_hi[-1])
    blank = (f" {ext.left_out} blocked cell{'' if ext.left_out == 1 else 's'} left blank."
             if ext.left_out else "")
    head = f"A heatmap of {what}: rows are {rows}, columns are {cols}; colour is {value}, "
    if ext.lo == ext.hi:
        return head + f"{fmt(ext.hi)} in every cell.{blank}"
    return (head + f"{span(ext, fmt)}, the largest at row {r}{_named(r, row_names)}, column "
            f"{c}{_named(c, col_names)}.{blank}")


def patch_map(what: str, value: str, ext: Extremes, grid: int,
              fmt: Callable[[float], str] = num) -> str:
    """A map over the g×g patches (`ext` of the [g, g] map or of its g² values)."""
    p = ext.at_hi[0] * grid + ext.at_hi[1] if len(ext.at_hi) == 2 else ext.at_hi[0]
    r, c = divmod(p, grid)
    head = f"{what}: a {grid}×{grid} map over the patches, colour is {value}, "
    if ext.lo == ext.hi:
        return head + f"{fmt(ext.hi)} on every patch."
    return head + f"{span(ext, fmt)}, the largest at patch {p} (row {r}, column {c})."


def bars(what: str, labels: Sequence[str], values: Sequence[float],
         fmt: Callable[[float], str] = num) -> str:
    """Bars in the order they are drawn, each said with its value."""
    said = "; ".join(f"{label}: {fmt(v)}" for label, v in zip(labels, values, strict=True))
    return f"Bars of {what}: {said}."


def table(what: str, rows: int, columns: Sequence[str]) -> str:
    return (f"A table of {what}: {rows} row{'' if rows == 1 else 's'}; its columns: "
            f"{'; '.join(columns)}.")
