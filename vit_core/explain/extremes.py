"""Where a figure's values are largest and smallest, and their range: the numbers a figure's
text alternative says ("values from a to b; the largest at row r, column c"). Pure numpy; no
wording. Entries that are not finite (a mask's −∞ score, a gap drawn as NaN) are left out and
counted, as a heatmap leaves them blank."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Extremes:
    lo: float  # the smallest finite value
    hi: float  # the largest finite value
    at_lo: tuple[int, ...]  # its index (the first in row-major order on a tie)
    at_hi: tuple[int, ...]
    count: int  # finite values
    left_out: int  # values that are not finite (blank in the figure)


def extremes(values) -> Extremes:
    """The range of an array's finite values and where its ends are (row-major index tuples).

    Args:
        values: any array (a torch tensor too); at least one value must be finite."""
    a = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(a)
    if not finite.any():
        raise ValueError("extremes: no finite value")
    hi_at = np.unravel_index(int(np.argmax(np.where(finite, a, -np.inf))), a.shape)
    lo_at = np.unravel_index(int(np.argmin(np.where(finite, a, np.inf))), a.shape)
    return Extremes(float(a[lo_at]), float(a[hi_at]), tuple(int(i) for i in lo_at),
                    tuple(int(i) for i in hi_at), int(finite.sum()), int(a.size - finite.sum()))


def ranked(values, k: int | None = None) -> list[int]:
    """Indices of a vector's k largest values, largest first (all of them without k); a tie
    keeps the lower index first (as a bar chart lists them)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    order = sorted(range(v.size), key=lambda i: (-v[i], i))
    return order if k is None else order[:k]
