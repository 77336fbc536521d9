"""Attention read three ways: rollout through the layers, how far heads look, and how spread out.

Each function names the paper idea it computes, so a page can say where a picture comes from.
"""

from __future__ import annotations

import math

import torch


def stack_patterns(trace) -> torch.Tensor:
    """All attention patterns of a trace as one tensor [L, H, S, S]."""
    return torch.stack([trace[f"blocks.{i}.attn.pattern"] for i in range(trace.config.depth)])


def rollout(patterns: torch.Tensor, residual: float = 0.5) -> torch.Tensor:
    """Attention rollout (Abnar & Zuidema, 2020): how much each input token flows to each output.

    Per layer: average the heads, mix in the identity for the residual path
    (A' = residual * I + (1 - residual) * A), re-normalise rows, and multiply the layers through.

    Args:
        patterns: [L, H, S, S] attention patterns, layer 0 first.
        residual: weight of the skip connection; 0.5 is the paper's "A + I, renormalised".
    Returns:
        [S, S]: row i is how much output token i draws on each input token.
    """
    L, _, S, _ = patterns.shape
    eye = torch.eye(S, dtype=patterns.dtype)
    joint = eye
    for layer in range(L):
        a = residual * eye + (1 - residual) * patterns[layer].mean(0)
        a = a / a.sum(-1, keepdim=True)
        joint = a @ joint  # later layers act on what earlier layers already mixed
    return joint


def patch_centres(grid: int, patch_size: int) -> torch.Tensor:
    """[N, 2] (row, col) pixel coordinates of every patch centre, in scan order."""
    r, c = torch.meshgrid(torch.arange(grid), torch.arange(grid), indexing="ij")
    return (torch.stack([r, c], -1).reshape(-1, 2).float() + 0.5) * patch_size


def mean_attention_distance(pattern: torch.Tensor, grid: int, patch_size: int,
                            prefix: int = 1) -> torch.Tensor:
    """Mean attention distance per head in pixels (ViT paper, Figure 7 right).

    For each patch query: the pixel distance to each patch key, weighted by the attention it
    pays (re-normalised over patch keys only), averaged over all patch queries.

    Args:
        pattern: [H, S, S] one layer's attention; the first `prefix` tokens are CLS-like.
    Returns:
        [H] distances in pixels.
    """
    N = grid * grid
    a = pattern[:, prefix:prefix + N, prefix:prefix + N]  # patch -> patch block
    a = a / a.sum(-1, keepdim=True).clamp_min(1e-12)
    xy = patch_centres(grid, patch_size)
    dist = torch.cdist(xy, xy)  # [N, N] Euclidean pixel distance
    return (a * dist).sum(-1).mean(-1)


def attention_entropy(pattern: torch.Tensor) -> torch.Tensor:
    """Mean over queries of each head's attention entropy, in nats: [H, S, S] -> [H].

    0 means every query looks at a single key; log(S) means it spreads evenly over all S.
    Masked keys (probability exactly 0) contribute 0.
    """
    p = pattern.clamp_min(0)
    plogp = torch.where(p > 0, p * p.clamp_min(1e-30).log(), torch.zeros_like(p))
    return -plogp.sum(-1).mean(-1)


def max_entropy(S: int) -> float:
    return math.log(S)
