"""Cutting an image into patches and putting it back: the first step of the model."""

from __future__ import annotations

import math

import torch


def patchify(x: torch.Tensor, patch_size: int) -> torch.Tensor:
    """Cut images into flattened patches in the same order as a stride-P Conv2d.

    Args:
        x: [C, H, W] or [B, C, H, W]; H and W must be multiples of ``patch_size``.
        patch_size: side P of the square patches.

    Returns:
        [N, C*P*P] (or [B, N, C*P*P]); patches in row-major order, each flattened as
        (channel, row, column) like ``conv.weight.reshape(D, -1)``.
    """
    if x.dim() not in (3, 4):
        raise ValueError(f"patchify expects a [C, H, W] or [B, C, H, W] tensor, got {x.dim()}-D.")
    xb = x if x.dim() == 4 else x.unsqueeze(0)
    b, c, h, w = xb.shape
    p = int(patch_size)
    if p <= 0 or h % p or w % p:
        raise ValueError(f"Image size {h}x{w} is not divisible by the patch size {p}.")
    out = xb.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 1, 3, 5)
    out = out.reshape(b, (h // p) * (w // p), c * p * p)
    return out if x.dim() == 4 else out[0]


def unpatchify(
    patches: torch.Tensor, patch_size: int, grid: tuple[int, int] | None = None
) -> torch.Tensor:
    """Exact inverse of :func:`patchify`.

    Args:
        patches: [N, C*P*P] or [B, N, C*P*P].
        patch_size: side P of the square patches.
        grid: (rows, columns) of patches; default a square grid.

    Returns:
        [C, H, W] (or [B, C, H, W]).
    """
    pb = patches if patches.dim() == 3 else patches.unsqueeze(0)
    b, n, d = pb.shape
    p = int(patch_size)
    gh, gw = grid if grid is not None else (math.isqrt(n), math.isqrt(n))
    if gh * gw != n or d % (p * p):
        raise ValueError(f"{n} patches of length {d} do not fit a {gh}x{gw} grid of size {p}.")
    c = d // (p * p)
    out = pb.reshape(b, gh, gw, c, p, p).permute(0, 3, 1, 4, 2, 5).reshape(b, c, gh * p, gw * p)
    return out if patches.dim() == 3 else out[0]
