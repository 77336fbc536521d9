"""Interventions for the experiments page: change one thing, rerun, compare the logits.

Each function returns a fresh Trace; the model itself is never modified, so a cached model
shared by many sessions stays intact.
"""

from __future__ import annotations

import torch

from ..patches import patchify, unpatchify
from ..trace import Trace, run_trace


def ablate_heads(model, pixels, heads: list[tuple[int, int]], text_ids=None) -> Trace:
    """Switch off the given (layer, head) pairs: their outputs are zeroed before W_O."""
    c = model.config
    keep = torch.ones(c.depth, c.num_heads)
    for layer, head in heads:
        keep[layer, head] = 0.0
    return run_trace(model, pixels, text_ids, head_mask=keep)


def occlude(model, pixels, patches: list[int], text_ids=None) -> Trace:
    """Grey out the given patches (set them to the normalised mean, i.e. 0) and rerun."""
    P = model.config.patch_size
    flat = patchify(pixels[0], P).clone()
    flat[patches] = 0.0
    grid = model.config.grid
    return run_trace(model, unpatchify(flat, P, (grid, grid))[None], text_ids)


def shuffle_patches(model, pixels, seed: int = 0, text_ids=None,
                    positions: bool = True) -> tuple[Trace, torch.Tensor]:
    """Rearrange the image's patches in a random order; returns (trace, permutation).

    With positions=False too, attention cannot tell the orders apart: the CLS output and the
    logits come out the same as without positions on the original image.
    """
    P, grid = model.config.patch_size, model.config.grid
    flat = patchify(pixels[0], P)
    perm = torch.randperm(flat.shape[0], generator=torch.Generator().manual_seed(seed))
    shuffled = unpatchify(flat[perm], P, (grid, grid))[None]
    return run_trace(model, shuffled, text_ids, positions=positions), perm


def without_positions(model, pixels, text_ids=None) -> Trace:
    """Leave out the image position embeddings: the model loses where each patch was."""
    return run_trace(model, pixels, text_ids, positions=False)


def with_mask(model, pixels, kind: str, text_ids=None) -> Trace:
    """Run with another attention mask than the one the model was trained with."""
    return run_trace(model, pixels, text_ids, mask=kind)
