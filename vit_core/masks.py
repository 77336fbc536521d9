"""Additive attention masks M for a sequence of n_image image tokens followed by n_text text tokens.

M[i, j] = 0 lets query i read key j; M[i, j] = -inf blocks it (softmax turns it into exactly 0).

    full    every token sees every token (the plain ViT encoder)
    causal  token i sees tokens j <= i over the whole sequence, image patches included
    prefix  image block bidirectional, image -> text blocked, text -> image allowed, text causal

           keys:  image    text
    queries image [ 0     | -inf ]      prefix = causal with the image block opened up
            text  [ 0     | causal ]
"""

from __future__ import annotations

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
