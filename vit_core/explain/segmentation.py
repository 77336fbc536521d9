"""The segmentation pivot: drop CLS, lay the patch tokens out on their grid, classify every cell.

The per-patch head maps each final patch token to K_seg scores for each of r x r cells inside its
patch, so the class map has (grid * r)^2 cells; it is then upsampled to the image's pixels.
Classes follow `Scene.mask`: 0 = background, c + 1 = object class c.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..trace import run_trace


def seg_grid(seg_logits: torch.Tensor, grid: int) -> torch.Tensor:
    """[..., N, K, r, r] per-patch scores -> [..., K, grid*r, grid*r] score map."""
    *lead, N, K, r, _ = seg_logits.shape
    x = seg_logits.reshape(*lead, grid, grid, K, r, r)  # patch row, patch col, class, cell row, col
    x = x.movedim(-3, -5)  # (..., K, grid, grid, r, r)
    x = x.transpose(-3, -2)  # (..., K, grid, r, grid, r)
    return x.reshape(*lead, K, grid * r, grid * r)


def seg_targets(mask: torch.Tensor, cells: int) -> torch.Tensor:
    """[B, H, W] pixel classes -> [B, cells, cells] by the pixel at each cell's centre."""
    H = mask.shape[-1]
    idx = ((torch.arange(cells) + 0.5) * H / cells).long()
    return mask[..., idx[:, None], idx[None, :]]


def class_map(seg_logits: torch.Tensor, grid: int, size: int) -> torch.Tensor:
    """Per-patch scores [N, K, r, r] -> [size, size] class indices (bilinear, then argmax)."""
    scores = seg_grid(seg_logits, grid)[None]  # (1, K, g r, g r)
    scores = F.interpolate(scores, size=(size, size), mode="bilinear", align_corners=False)
    return scores[0].argmax(0)


def segment(model, pixels: torch.Tensor) -> torch.Tensor:
    """Class index per pixel, [H, W] (0 = background, c + 1 = class c), from the seg head.

    Args:
        model: a ViT built with seg_classes > 0.
        pixels: one preprocessed image [1, C, H, W].
    """
    if model.seg_head is None:
        raise ValueError("This model has no segmentation head.")
    c = model.config
    return class_map(run_trace(model, pixels)["seg_logits"], c.grid, c.img_size)
