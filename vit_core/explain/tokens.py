"""Token vectors summarised: one token's mean and spread, and all patch tokens as colours."""

from __future__ import annotations

import torch


def token_stats(x: torch.Tensor) -> dict[str, float]:
    """Mean and (biased, as LayerNorm uses) standard deviation of one token vector."""
    x = x.double()
    mu = x.mean()
    return {"mean": float(mu), "std": float(((x - mu) ** 2).mean().sqrt())}


def pca_rgb(tokens: torch.Tensor, grid: int) -> torch.Tensor:
    """First three principal components of the patch tokens as colours: [N, D] -> [g, g, 3].

    Patches the model represents alike get alike colours (each component scaled to [0, 1]).
    """
    x = tokens.double() - tokens.double().mean(0, keepdim=True)
    _, _, vh = torch.linalg.svd(x, full_matrices=False)
    k = min(3, vh.shape[0])
    proj = x @ vh[:k].T  # [N, k]
    if k < 3:
        proj = torch.cat([proj, torch.zeros(proj.shape[0], 3 - k, dtype=proj.dtype)], 1)
    lo, hi = proj.amin(0), proj.amax(0)
    return ((proj - lo) / (hi - lo).clamp_min(1e-12)).reshape(grid, grid, 3).float()
