"""Another resolution: the same ViT at another input size, as the notes' §12 says.

A ViT's weights do not depend on the image size, except the learned position embeddings: one per
patch of the grid it was trained on. At another size the grid changes (a 224-pixel image in 16-pixel
patches is 14×14; at 288 pixels it is 18×18), so the position vectors are interpolated to the new
grid, bicubically, exactly as timm does (`resample_abs_pos_embed`, used by `dynamic_img_size`);
CLS and DIST keep their own. Everything else is shared with the original model, tensor for tensor.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .config import ViTConfig
from .model import ViT

SMALLEST, LARGEST = 0.5, 2.0  # input_sizes' default range, as a multiple of the model's own size


def resample_pos_embed(pos: torch.Tensor, new_grid: tuple[int, int], num_prefix: int):
    """Resize learned positions to a new patch grid, exactly as timm's resample_abs_pos_embed.

    Args:
        pos: [1, prefix + g*g, D] position embeddings on a square g x g grid.
        new_grid: (rows, cols) of the new grid.
        num_prefix: leading tokens (CLS, DIST) that are passed through unchanged.
    Returns:
        [1, prefix + rows*cols, D], in pos's dtype.
    """
    prefix, grid_pos = pos[:, :num_prefix], pos[:, num_prefix:]
    g, D = math.isqrt(grid_pos.shape[1]), pos.shape[-1]
    x = grid_pos.float().reshape(1, g, g, D).permute(0, 3, 1, 2)  # (1, D, g, g), row-major grid
    x = F.interpolate(x, size=tuple(new_grid), mode="bicubic", antialias=True,
                      align_corners=False)  # interpolate needs float32; timm's exact call
    x = x.permute(0, 2, 3, 1).reshape(1, -1, D).to(pos.dtype)
    return torch.cat([prefix, x], dim=1)


def at_size(model: ViT, img_size: int) -> ViT:
    """The same model reading img_size x img_size images: same weights (shared, not copied),
    position embeddings resampled bicubically to the new grid, config.img_size changed.

    Args:
        model: a ViT at its own size.
        img_size: the new input size in pixels, a multiple of the patch size.
    Returns:
        `model` itself at its own size; else a new ViT in eval mode (with the same `info`).
    Raises:
        ValueError: img_size is not a positive multiple of the patch size.
    """
    c = model.config
    P = c.patch_size
    if not isinstance(img_size, int) or img_size < P or img_size % P:
        raise ValueError(f"The input size must be a multiple of the patch size {P} (so the "
                         f"patches tile the image), not {img_size!r}.")
    if img_size == c.img_size:
        return model
    config = resized_config(c, img_size)
    state = dict(model.state_dict())  # detached views of the same tensors
    g = config.grid
    state["pos_embed"] = resample_pos_embed(state["pos_embed"], (g, g), c.num_prefix_tokens)
    with torch.device("meta"):  # no memory and no init: every tensor comes from `state`
        new = ViT(config)
    new.load_state_dict(state, strict=True, assign=True)  # assign: share, do not copy
    left = [n for n, t in [*new.named_parameters(), *new.named_buffers()] if t.is_meta]
    if left:  # a tensor outside the state dict would have no values
        raise RuntimeError(f"at_size could not carry over {', '.join(left)}.")
    if hasattr(model, "info"):  # where it came from (vit_core.io), if it says
        new.info = model.info
    return new.eval()


def resized_config(c: ViTConfig, img_size: int) -> ViTConfig:
    """`c` at img_size pixels; the preprocessing resize keeps its margin (timm: floor(size /
    crop_pct)), so the crop at the new size covers the same part of a photo."""
    margin = c.resize_size and max(img_size, math.floor(img_size * c.resize_size / c.img_size))
    return c.replace(img_size=img_size, resize_size=margin)


def input_sizes(c: ViTConfig, smallest: float = SMALLEST, largest: float = LARGEST) -> list[int]:
    """The sizes a model can read between smallest x and largest x its own: the multiples of its
    patch size, its own size first, then the others in increasing order."""
    P = c.patch_size
    low = max(P, math.ceil(c.img_size * smallest / P) * P)
    others = [s for s in range(low, int(c.img_size * largest) + 1, P) if s != c.img_size]
    return [c.img_size, *others]
