"""vit_core.explain.extremes (the range and ends a figure's text alternative says) against plain
Python loops over float64 values."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from vit_core.explain.extremes import extremes, ranked


def _by_hand(rows: list[list[float]]):
    """(lo, hi, where lo, where hi, finite, not finite), first of ties in row order."""
    lo = hi = None
    at_lo = at_hi = None
    finite = blank = 0
    for r, row in enumerate(rows):
        for c, v in enumerate(row):
            if not math.isfinite(v):
                blank += 1
                continue
            finite += 1
            if lo is None or v < lo:
                lo, at_lo = v, (r, c)
            if hi is None or v > hi:
                hi, at_hi = v, (r, c)
    return lo, hi, at_lo, at_hi, finite, blank


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_extremes_match_a_loop_and_leave_out_what_is_not_finite(seed):
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(7, 9, generator=g, dtype=torch.float64)
    z[2, 3] = -math.inf  # a masked score
    z[5, 0] = math.nan  # a gap
    z[1, 1] = z.max().item()  # a tie: the first in row order is the one said
    e = extremes(z)
    lo, hi, at_lo, at_hi, finite, blank = _by_hand(z.tolist())
    assert (e.lo, e.hi, e.at_lo, e.at_hi, e.count, e.left_out) == (lo, hi, at_lo, at_hi,
                                                                     finite, blank)


def test_extremes_of_a_float32_tensor_are_its_own_values():
    z = torch.tensor([[0.1, 0.7], [0.3, 0.2]], dtype=torch.float32)
    e = extremes(z)
    assert e.hi == float(z[0, 1]) and e.at_hi == (0, 1) and e.at_lo == (0, 0)


def test_extremes_refuse_an_array_with_no_finite_value():
    with pytest.raises(ValueError):
        extremes(np.full((2, 2), np.nan))


def test_ranked_is_largest_first_ties_by_index():
    v = [0.2, 0.5, 0.1, 0.5, 0.3]
    assert ranked(v) == [1, 3, 4, 0, 2]
    assert ranked(v, 2) == [1, 3]
