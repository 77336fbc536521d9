"""How much work an explanation does by default, chosen from the model's size.

The methods' settings trade accuracy for passes: Integrated Gradients' steps, occlusion's window,
the curves' patches a step and the random orders' count. On the bundled models (a pass is a few
milliseconds) the defaults are the fine ones; on a model whose pass costs more than
HEAVY_GFLOPS (ViT-Ti/16, 2.5 GFLOPs, and up; ViT-B/16 is 35 GFLOPs a 224-px image, ~0.25 s on
two CPU cores) they are the coarse ones, so that a map with its deletion and insertion curves
stays near 20 s there (docs/performance.md, "Why this answer?"). Each is only a default: every
function takes its setting by name, and what was used is recorded with the result
(`Attribution.settings`, the curve's x).
"""

from __future__ import annotations

import math

from ..config import ViTConfig
from .flops import total_flops

HEAVY_GFLOPS = 2.0  # one pass costing more than this (2 per multiply-add) is heavy
FINE_UP_TO = 64  # patches: a grid this small loses one patch a curve step, a larger one a row
IG_STEPS = {False: 32, True: 8}  # Integrated Gradients' points on the path, light / heavy
OCCLUSION_WINDOW = {False: 1, True: 2}  # occlusion's square of patches taken away at once
RANDOM_SEEDS = {False: 5, True: 3}  # random orders for the curves' yardstick


def heavy(config: ViTConfig) -> bool:
    """Does one forward pass over one image cost more than HEAVY_GFLOPS?"""
    return total_flops(config) > HEAVY_GFLOPS * 1e9


def curve_k(config: ViTConfig) -> int:
    """Patches taken away (or put back) per curve step: 1 on a grid of up to FINE_UP_TO patches
    (every patch its own step), else one grid row's worth (g steps for g × g patches)."""
    return 1 if config.num_patches <= FINE_UP_TO else config.grid


def ig_steps(config: ViTConfig) -> int:
    return IG_STEPS[heavy(config)]


def occlusion_window(config: ViTConfig) -> int:
    return OCCLUSION_WINDOW[heavy(config)]


def random_seeds(config: ViTConfig) -> int:
    return RANDOM_SEEDS[heavy(config)]


def windows(grid: int, window: int) -> list[list[int]]:
    """The patches (row-major indices) of each window × window square tiling the grid, row by
    row; the last row and column of squares are smaller when `window` does not divide `grid`."""
    side = math.ceil(grid / window)
    return [[r * grid + c for r in range(wr * window, min(grid, (wr + 1) * window))
             for c in range(wc * window, min(grid, (wc + 1) * window))]
            for wr in range(side) for wc in range(side)]
