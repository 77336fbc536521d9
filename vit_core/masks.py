"""Additive attention masks M for a sequence of n_image image tokens followed by n_text text tokens.

M[i, j] = 0 lets query i read key j; M[i, j] = -inf blocks it (softmax turns it into exactly 0).

    full    every token sees every token (the plain ViT encoder)
    causal  token i sees tokens j <= i over the whole sequence, image patches included
    prefix  image block bidirectional, image -> text blocked, text -> image allowed, text causal

           keys:  image    text
    queries image [ 0     | -inf ]      prefix = causal with the image block opened up
            text  [ 0     | causal ]

Windowed attention (Swin's local windows), named "window:M" or "window:M:shifted":

    window:M          every block: a patch sees the patches of its own M x M window of the grid
    window:M:shifted  the same on blocks 0, 2, 4, ...; on blocks 1, 3, 5, ... the windows move
                      by M // 2 patches right and down, so the next block mixes across the
                      borders the block before could not cross (Swin's alternation)

A shifted window is clipped at the border, not wrapped around: with M = 2 on a 7-wide grid the
rows group as 0 | 1 2 | 3 4 | 5 6 instead of 0 1 | 2 3 | 4 5 | 6. Swin rolls the grid
cyclically and then masks the pieces that wrapped around apart, which lets every window be full
size on a GPU; what each patch may see is the same as here. Where M does not divide the grid,
the last window of a row is smaller (clipped, not padded).

The prefix tokens (CLS, and DeiT's DIST) stay global: they see every image token and every
patch sees them. The class head reads CLS alone, so a CLS confined to one window would classify
from a corner of the image; and a CLS that every patch reads is also the one road between
windows under "window:M" (as the global tokens of Longformer and BigBird). Text tokens keep the
model's own mask (its `default_mask`): only the image block changes. The mask differs per block,
so `window_masks` gives [L, S, S], and the model adds mask[l] in block l.
"""

from __future__ import annotations

import re

import torch

from .config import MASK_KINDS


def allowed_keys(kind: str, n_image: int, n_text: int = 0) -> torch.Tensor:
    """Boolean [S, S]: True where query i may attend to key j."""
    if kind not in MASK_KINDS:
        raise ValueError(f"Unknown mask '{kind}'; choose one of {', '.join(MASK_KINDS)}.")
    if n_image < 0 or n_text < 0 or n_image + n_text == 0:
        raise ValueError("A mask needs at least one token.")
    S = n_image + n_text
    if kind == "full":
        return torch.ones(S, S, dtype=torch.bool)
    allowed = torch.ones(S, S, dtype=torch.bool).tril()  # j <= i
    if kind == "prefix":
        allowed[:n_image, :n_image] = True  # image patches see each other both ways
    return allowed


def make_mask(kind: str, n_image: int, n_text: int = 0) -> torch.Tensor:
    """Additive float mask [S, S] with 0 (visible) and -inf (blocked); S = n_image + n_text."""
    allowed = allowed_keys(kind, n_image, n_text)
    return torch.zeros(allowed.shape).masked_fill(~allowed, float("-inf"))


WINDOW_NAME = re.compile(r"window:(\d+)(:shifted)?")  # "window:2", "window:3:shifted"


def window_name(size: int, shifted: bool = False) -> str:
    """The mask's name: window_name(2, True) == "window:2:shifted"."""
    return f"window:{size}" + (":shifted" if shifted else "")


def parse_window(name: str) -> tuple[int, bool] | None:
    """"window:2" -> (2, False), "window:3:shifted" -> (3, True); any other name -> None.
    A window name with a size below 1 raises ValueError."""
    found = WINDOW_NAME.fullmatch(name) if isinstance(name, str) else None
    if found is None:
        if isinstance(name, str) and name.startswith("window"):
            raise ValueError(f"Unknown mask '{name}': window masks are named 'window:M' or "
                             f"'window:M:shifted', M the window's side in patches.")
        return None
    size = int(found.group(1))
    if size < 1:
        raise ValueError(f"A window is at least 1 patch wide, not {size}.")
    return size, found.group(2) is not None


def is_window(name) -> bool:
    return parse_window(name) is not None if isinstance(name, str) else False


def window_of(grid: int, size: int, shift: int = 0) -> torch.Tensor:
    """[N]: the window each patch (row-major over a grid x grid grid) falls in. Row r belongs to
    band floor((r - shift) / size), likewise for columns: shift 0 cuts at 0, M, 2M, ...; shift s
    cuts at s, s + M, ..., leaving a band of s rows at the top (clipped at the border)."""
    band = torch.div(torch.arange(grid) - shift, size, rounding_mode="floor") + 1  # (g,)  >= 0
    return (band[:, None] * (grid + 1) + band[None, :]).reshape(-1)  # (N,)  one id per window


def window_allowed(grid: int, n_prefix: int, size: int, shift: int = 0) -> torch.Tensor:
    """Boolean [n_image, n_image] image block, n_image = n_prefix + grid²: patches see the patches
    of their own window (windows of size x size patches, cut `shift` patches in); the prefix
    tokens see every image token and are seen by every patch."""
    win = window_of(grid, size, shift)
    n = n_prefix + grid * grid
    allowed = torch.ones(n, n, dtype=torch.bool)  # prefix rows and columns: global
    allowed[n_prefix:, n_prefix:] = win[:, None] == win[None, :]  # patch -> patch: same window
    return allowed


def window_keys(config, name: str, n_text: int = 0) -> torch.Tensor:
    """Boolean [L, S, S]: in block l, True where query i may attend to key j under the window mask
    `name` ("window:M" or "window:M:shifted"). Block l is shifted (by M // 2) when the name says
    shifted and l is odd. Rows and columns of text keep the model's own mask (default_mask)."""
    parsed = parse_window(name)
    if parsed is None:
        raise ValueError(f"'{name}' is not a window mask; name one 'window:M' or "
                         f"'window:M:shifted'.")
    size, shifted = parsed
    n_image = config.num_image_tokens
    base = allowed_keys(config.default_mask, n_image, n_text)  # (S, S) text rules kept
    out = base.expand(config.depth, -1, -1).clone()  # (L, S, S)
    for layer in range(config.depth):
        shift = size // 2 if shifted and layer % 2 == 1 else 0
        out[layer, :n_image, :n_image] = window_allowed(config.grid, config.num_prefix_tokens,
                                                        size, shift)
    return out


def window_masks(config, name: str, n_text: int = 0) -> torch.Tensor:
    """Additive float masks [L, S, S], 0 (visible) and -inf (blocked): block l adds mask[l]."""
    allowed = window_keys(config, name, n_text)
    return torch.zeros(allowed.shape).masked_fill(~allowed, float("-inf"))


# ---------------------------------------------------------------- the model's own, or another
def resolve(config, mask, n_text: int = 0) -> torch.Tensor | None:
    """A mask name, an additive [S, S] or per-block [L, S, S] tensor, or None (the model's own,
    `config.default_mask`) -> the additive tensor, or None for "full" (nothing to add)."""
    if mask is None:
        mask = config.default_mask
    if isinstance(mask, str):
        if mask == "full":
            return None  # nothing to add; skip the S x S addition
        if is_window(mask):
            return window_masks(config, mask, n_text)  # (L, S, S)
        mask = make_mask(mask, config.num_image_tokens, n_text)
    S = config.num_image_tokens + n_text
    if mask.shape[-2:] != (S, S) or mask.dim() not in (2, 3):
        raise ValueError(f"A mask for {S} tokens is [S, S] or [L, S, S] with S = {S}, "
                         f"not {list(mask.shape)}.")
    if mask.dim() == 3 and mask.shape[0] != config.depth:
        raise ValueError(f"A per-block mask needs one [S, S] mask per block: "
                         f"{config.depth}, not {mask.shape[0]}.")
    return mask


def own_mask(config, n_text: int = 0) -> torch.Tensor | None:
    """The mask the model itself uses (its default_mask: a captioner's causal or prefix mask),
    additive [S, S], or None for "full"."""
    return resolve(config, None, n_text)


def is_own(config, mask, n_text: int = 0) -> bool:
    """Whether `mask` (a name, a tensor or None) lets every query see exactly the keys the
    model's own mask lets it see, in every block."""
    new, own = resolve(config, mask, n_text), own_mask(config, n_text)
    if new is None or own is None:
        return new is None and own is None or bool(((new if own is None else own) == 0).all())
    return bool((new.to(own.dtype) == own).all())
