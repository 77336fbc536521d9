"""What a figure's text alternative says of its values (ui/drawing/alt_words words it): the
lowest and the highest value, where each is, and how many values there are. Numbers only.

A figure's description names where its extremes are ("the highest, patch 17, at 0.83"), so
every stage's description reads them from one function: `extremes` of a bar chart's values,
a curve's points or a grid map's cells (flattened in reading order).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Extremes:
    n: int  # how many values
    lo: float  # the smallest value
    hi: float  # the largest value
    argmin: int  # where the smallest is (the first on a tie), in the values' flat order
    argmax: int  # where the largest is (the first on a tie)

    def at(self, grid: int) -> tuple[tuple[int, int], tuple[int, int]]:
        """(row, column) of the smallest and the largest, the values read as a grid × grid map."""
        return divmod(self.argmin, grid), divmod(self.argmax, grid)


def extremes(values) -> Extremes:
    """The smallest and largest of `values` (any shape, read flat in row-major order; NaN left
    out) and their places. Raises ValueError when no value is a number."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    ok = ~np.isnan(v)
    if not ok.any():
        raise ValueError("no value to describe")
    lo = int(np.flatnonzero(ok)[np.argmin(v[ok])])
    hi = int(np.flatnonzero(ok)[np.argmax(v[ok])])
    return Extremes(int(v.size), float(v[lo]), float(v[hi]), lo, hi)
