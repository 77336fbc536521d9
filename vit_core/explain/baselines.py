"""What a patch becomes when it is taken away, and how a long computation reports and stops.

    base = baseline(pixels, config, "grey")        # the image with every patch replaced
    chosen = torch.zeros(1, N, dtype=torch.bool); chosen[0, [3, 7]] = True
    x = replace_patches(pixels, base, chosen, config.patch_size)   # patches 3 and 7 greyed

The attribution methods (occlusion, Integrated Gradients' x0), the deletion / insertion curves
and the corrupted image of activation patching all take patches away the same way. The images
are the model's input (normalised), so "black" and "grey" are the normalised values of black and
mid-grey pixels, not zeros. A blurred baseline keeps the colours and loses the shapes.

Computations that run many batches take `progress(done, total)`, called after each batch; it
may raise `Cancelled` (or any exception) to stop between batches, which is how the app's worker
cancels them.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

BASELINES = ("black", "grey", "blur")
Progress = Callable[[int, int], None]


class Cancelled(Exception):
    """Raised by a `progress` callback to stop a computation between two batches."""


def tick(progress: Progress | None, done: int, total: int) -> None:
    """Report `done` of `total` batches to `progress` (None: nobody listens)."""
    if progress is not None:
        progress(done, total)


def baseline(pixels: torch.Tensor, config, kind: str = "grey") -> torch.Tensor:
    """The image every patch is replaced by: `kind` is black, grey (pixels at 0.5) or blur (a
    Gaussian blur with sigma = one patch side), in the model's normalised units."""
    if kind not in BASELINES:
        raise ValueError(f"'{kind}' is not a baseline; choose one of {', '.join(BASELINES)}.")
    if kind == "blur":
        return blur(pixels, sigma=float(config.patch_size))
    mean = torch.tensor(config.mean, dtype=pixels.dtype).view(-1, 1, 1)
    std = torch.tensor(config.std, dtype=pixels.dtype).view(-1, 1, 1)
    value = 0.0 if kind == "black" else 0.5
    return ((value - mean) / std).expand_as(pixels).clone()


def blur(pixels: torch.Tensor, sigma: float) -> torch.Tensor:
    """A separable Gaussian blur of [B, C, H, W] (or [C, H, W]) images, edges reflected."""
    one = pixels.dim() == 3
    x = pixels.unsqueeze(0) if one else pixels
    radius = max(1, min(int(3 * sigma), x.shape[-1] // 2 - 1))
    t = torch.arange(-radius, radius + 1, dtype=x.dtype)
    k = torch.exp(-0.5 * (t / sigma) ** 2)
    k = k / k.sum()
    C = x.shape[1]
    x = F.pad(x, (radius, radius, radius, radius), mode="reflect")
    x = F.conv2d(x, k.view(1, 1, 1, -1).expand(C, 1, 1, -1), groups=C)  # along rows
    x = F.conv2d(x, k.view(1, 1, -1, 1).expand(C, 1, -1, 1), groups=C)  # along columns
    return x[0] if one else x


def patch_pixels(chosen: torch.Tensor, patch_size: int) -> torch.Tensor:
    """[B, N] per-patch values (N = g*g, row-major as patchify orders them) -> [B, 1, gP, gP],
    each patch's value over its P×P pixels."""
    B, N = chosen.shape
    g = int(round(N ** 0.5))
    if g * g != N:
        raise ValueError(f"{N} patches do not make a square grid.")
    grid = chosen.reshape(B, 1, g, g)
    return grid.repeat_interleave(patch_size, dim=2).repeat_interleave(patch_size, dim=3)


def replace_patches(pixels: torch.Tensor, base: torch.Tensor, chosen: torch.Tensor,
                    patch_size: int) -> torch.Tensor:
    """[B, C, H, W]: `pixels` (one image [1, C, H, W] or B of them) with the patches chosen in
    each row of `chosen` [B, N] (bool) taken from `base`."""
    where = patch_pixels(chosen.to(torch.bool), patch_size)  # [B, 1, H, W]
    return torch.where(where, base, pixels)
