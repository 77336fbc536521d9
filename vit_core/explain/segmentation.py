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


def boundary_stats(labels: torch.Tensor, patch_size: int) -> dict:
    """Where the class map's edges lie: count every pair of neighbouring pixels (left-right and
    up-down) whose classes differ, split into pairs that straddle a patch boundary and pairs
    inside one patch.

    Args:
        labels: [H, W] class index per pixel.
    Returns:
        dict(changes, on_boundary, inside, pairs: all neighbouring pairs, boundary_pairs: those
        that straddle a patch boundary (where edges would all lie on a blocky, patch-sized map)).
    """
    lab = torch.as_tensor(labels)
    H, W = lab.shape
    h_diff = lab[:, 1:] != lab[:, :-1]  # [H, W-1]: between column x and x + 1
    v_diff = lab[1:, :] != lab[:-1, :]  # [H-1, W]: between row y and y + 1
    h_cut = (torch.arange(1, W) % patch_size) == 0  # column x+1 starts a new patch
    v_cut = (torch.arange(1, H) % patch_size) == 0
    on = int(h_diff[:, h_cut].sum()) + int(v_diff[v_cut, :].sum())
    changes = int(h_diff.sum()) + int(v_diff.sum())
    return {"changes": changes, "on_boundary": on, "inside": changes - on,
            "pairs": H * (W - 1) + (H - 1) * W,
            "boundary_pairs": H * int(h_cut.sum()) + W * int(v_cut.sum())}


def pca_variance(tokens: torch.Tensor, k: int = 3) -> torch.Tensor:
    """The share of the tokens' variance that each of their first k principal components
    explains (the PCA behind `tokens.pca_rgb`): [N, D] -> [k]."""
    x = tokens.double() - tokens.double().mean(0, keepdim=True)
    s = torch.linalg.svdvals(x) ** 2
    out = torch.zeros(k, dtype=torch.float64)
    m = min(k, s.numel())
    out[:m] = s[:m] / s.sum().clamp_min(1e-300)
    return out


def class_shares(labels) -> dict[int, float]:
    """Each class found in a class map [H, W] and its share of the pixels, largest first."""
    lab = torch.as_tensor(labels).flatten()
    found, counts = lab.unique(return_counts=True)
    shares = {int(k): int(n) / lab.numel() for k, n in zip(found, counts, strict=True)}
    return dict(sorted(shares.items(), key=lambda kv: -kv[1]))


def patch_reach(seen: torch.Tensor) -> dict:
    """What each final patch token has seen, from [N, N] bool (patch i has seen patch j):
    {"all": every patch every patch, "forwards": exactly patches 0..i (a causal mask), "least",
    "most": the fewest and most patches one has seen}."""
    N = seen.shape[0]
    counts = seen.sum(1)
    return {"all": bool(seen.all()),
            "forwards": bool(torch.equal(seen, torch.ones(N, N, dtype=torch.bool).tril())),
            "least": int(counts.min()), "most": int(counts.max())}


def edge_shares(on_boundary: int, inside: int, boundary_pairs: int, pairs: int) -> dict:
    """`boundary_stats`'s counts as shares: {"share": of the class edges on a patch border,
    "chance": of all neighbouring pairs that straddle one (where edges placed at random would
    fall), "ratio": share / chance}; None for each without edges or without a border."""
    changes = on_boundary + inside
    if not changes or not boundary_pairs:
        return {"share": None, "chance": None, "ratio": None}
    share, chance = on_boundary / changes, boundary_pairs / pairs
    return {"share": share, "chance": chance, "ratio": share / chance}
