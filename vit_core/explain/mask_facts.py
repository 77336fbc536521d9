"""The numbers the Masks stage (ui/stages/masks/) shows: how many keys each query may read
under a mask, the least sure word of a scored caption, how far two runs' logits lie apart, and
the layout of a window mask (its blocks 0 and 1, each patch's window, what the middle patch may
read). Pure torch and numpy; no streamlit, no wording."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..config import ViTConfig
from ..masks import allowed_keys, window_keys, window_name, window_of


def visible_keys(kind: str, n_img: int, n_txt: int) -> np.ndarray:
    """[S] int: how many keys each query token may read under mask `kind` (the row sums of
    the boolean mask over n_img image and n_txt text tokens)."""
    return allowed_keys(kind, n_img, n_txt).sum(1).numpy()


def least_sure(probs) -> int | None:
    """The index of the smallest probability (the first, on a tie); None for no probabilities."""
    return int(np.argmin(probs)) if len(probs) else None


def largest_gap(a: torch.Tensor, b: torch.Tensor) -> float:
    """The largest absolute difference between two runs' logits."""
    return float((a - b).abs().max())


@dataclass(frozen=True)
class Reach:
    """What one patch may read in block 0 of a window mask."""

    keys: int  # keys in its row of the mask, itself and the prefix tokens included
    rows: int  # its window's rows x columns (fewer than M x M where clipped at the border)
    cols: int

    @property
    def inside(self) -> int:
        return self.rows * self.cols


def reach(allowed0: np.ndarray, bands0: np.ndarray, patch: int, n_prefix: int) -> Reach:
    """Read off block 0's mask ([S, S] bool) and window map ([g, g] ints) for `patch`."""
    same = bands0 == bands0.flat[patch]  # the patches of its window
    return Reach(int(allowed0[n_prefix + patch].sum()), int(same.any(1).sum()),
                 int(same.any(0).sum()))


@dataclass(frozen=True)
class WindowLayout:
    """A shifted window mask of side `size` on a model: blocks 0 (plain) and 1 (shifted)."""

    size: int
    allowed: np.ndarray  # [2, S, S] bool: who may read whom in blocks 0 and 1
    bands: np.ndarray  # [2, g, g] int: the window of each patch in blocks 0 and 1
    centre: int  # the middle patch of the grid
    centre_reach: Reach  # what it may read in block 0


def window_layout(c: ViTConfig, size: int, n_text: int = 0) -> WindowLayout:
    """The layout of mask "window:size:shifted" for a sequence with n_text text tokens."""
    allowed = window_keys(c, window_name(size, True), n_text)[:2].numpy()  # blocks 0 and 1
    if c.depth == 1:  # one block: nothing is ever shifted
        allowed = np.stack([allowed[0], allowed[0]])
    g = c.grid
    bands = np.stack([window_of(g, size, s).view(g, g).numpy() for s in (0, size // 2)])
    centre = g // 2 * g + g // 2
    return WindowLayout(size, allowed, bands, centre,
                        reach(allowed[0], bands[0], centre, c.num_prefix_tokens))


def fewer_pairs(full_pairs: int, pairs: int) -> float:
    """How many times fewer (query, key) pairs a mask keeps than full attention."""
    return full_pairs / pairs


def points_lost(before: float, after: float) -> int:
    """A fall from one share to another in whole percentage points (≤ 0: it did not fall)."""
    return round(100 * (before - after))
