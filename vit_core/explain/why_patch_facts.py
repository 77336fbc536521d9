"""The numbers the why stage's "Sanity" and "Where the answer is formed" steps show
(ui/stages/why/sanity.py, patching.py), read off the library's outputs: which maps barely
changed when the weights were randomised (faithfulness_sanity's rank correlations), and where
activation patching restores the answer (patching's grids). Pure numpy; no streamlit, no wording.

    s = survivors({"rollout": 0.91, "gradcam": 0.05}, SURVIVES)       # ["rollout"]
    f = token_facts(grid, n_prefix=1)                                  # grid: [L, tokens]
    f.top, f.best_block, f.carrier_from
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

SURVIVES = 0.5  # rank correlation above this: the map barely changed when the weights went
CARRIES = 0.5  # a token whose patch restores at least half of the difference carries the answer
HEAD_COUNTS = 0.1  # a head whose patch restores at least a tenth of the difference counts
SMALL_CHANGE = 0.5  # a score difference under this (logit, or log-probability for a word):
#                     the restored shares are ratios of a small number


def scaled(values) -> np.ndarray:
    """A map as shares of its own largest |value| (float64, in [-1, 1]); all zeros stay zeros.
    Maps of two models differ in scale; their patterns compare on this one."""
    v = np.asarray(values, dtype=np.float64)
    peak = float(np.abs(v).max()) if v.size else 0.0
    return v / peak if peak > 0 else v


def survivors(rhos: dict[str, float], threshold: float = SURVIVES) -> list[str]:
    """The methods whose map kept its ranking (rho > threshold), in the dict's order; a nan
    (a constant map: no ranking to keep) is not among them."""
    return [m for m, r in rhos.items() if not math.isnan(r) and r > threshold]


def undefined(rhos: dict[str, float]) -> list[str]:
    """The methods whose rank correlation is nan (a map constant on one of the two models)."""
    return [m for m, r in rhos.items() if math.isnan(r)]


def most_kept(rhos: dict[str, float]) -> str | None:
    """The method whose map kept its ranking best (largest rho; the first on a tie); None when
    every rho is nan."""
    found = {m: r for m, r in rhos.items() if not math.isnan(r)}
    return max(found, key=lambda m: (found[m], -list(found).index(m))) if found else None


@dataclass(frozen=True)
class Cell:
    """One cell of a patching grid: block, column (a token's position or a head), its share."""

    block: int
    column: int
    share: float


@dataclass(frozen=True)
class TokenFacts:
    """What a [block x token] grid of restored shares says."""

    top: Cell  # the cell that restores most (the first in block-then-token order on a tie)
    block_top: tuple[Cell, ...]  # each block's best token
    prefix: np.ndarray  # [L, n_prefix] the prefix tokens' shares (empty without prefix tokens)
    carrier_from: int | None  # first block from which the first prefix token restores at least
    #                           CARRIES in that block and every later one; None: never / no prefix
    patch_top: Cell | None  # the best cell among the patch tokens alone


def token_facts(grid, n_prefix: int, columns=None, carries: float = CARRIES) -> TokenFacts:
    """Read a [L, T] grid of restored shares whose columns are sequence positions (`columns`,
    default 0..T-1); positions below `n_prefix` are the prefix tokens (CLS, DIST)."""
    g = np.asarray(grid, dtype=np.float64)
    cols = np.arange(g.shape[1]) if columns is None else np.asarray(columns)
    top = _best(g, cols)
    block_top = tuple(_best(g[i:i + 1], cols, block=i) for i in range(g.shape[0]))
    is_prefix = cols < n_prefix
    prefix = g[:, is_prefix]
    carrier_from = None
    if prefix.shape[1]:
        holds = prefix[:, 0] >= carries
        for start in range(len(holds)):
            if holds[start:].all():
                carrier_from = start
                break
    patch_top = _best(g[:, ~is_prefix], cols[~is_prefix]) if (~is_prefix).any() else None
    return TokenFacts(top, block_top, prefix, carrier_from, patch_top)


def _best(g: np.ndarray, cols: np.ndarray, block: int = 0) -> Cell:
    """The largest cell of `g` (rows are blocks from `block`), the first on a tie."""
    i = int(np.argmax(g))
    r, c = divmod(i, g.shape[1])
    return Cell(block + r, int(cols[c]), float(g[r, c]))


@dataclass(frozen=True)
class HeadFacts:
    """What a [block x head] grid of restored shares says."""

    top: Cell
    counting: int  # heads restoring at least HEAD_COUNTS alone
    total: int


def head_facts(grid, counts: float = HEAD_COUNTS) -> HeadFacts:
    g = np.asarray(grid, dtype=np.float64)
    return HeadFacts(_best(g, np.arange(g.shape[1])), int((g >= counts).sum()), int(g.size))


def colour_limit(*grids) -> float:
    """One colour scale for several grids of shares: symmetric, at least 1 (all restored)."""
    peak = max((float(np.abs(np.asarray(g, dtype=np.float64)).max()) for g in grids
                if np.asarray(g).size), default=0.0)
    return max(1.0, peak)
