"""Attention read three ways: rollout through the layers, how far heads look, and how spread out.

Each function names the paper idea it computes, so a page can say where a picture comes from.
"""

from __future__ import annotations

import math

import torch


def stack_patterns(trace) -> torch.Tensor:
    """All attention patterns of a trace as one tensor [L, H, S, S]. A lean trace recomputes
    them layer by layer (`Trace.patterns()`) without keeping each block's other internals."""
    return torch.stack(list(trace.patterns()))


def rollout(patterns, residual: float = 0.5) -> torch.Tensor:
    """Attention rollout (Abnar & Zuidema, 2020): how much each input token flows to each output.

    Per layer: average the heads, mix in the identity for the residual path
    (A' = residual * I + (1 - residual) * A), re-normalise rows, and multiply the layers through.

    Args:
        patterns: [L, H, S, S] attention patterns, layer 0 first, or any iterable of [H, S, S]
            layers (e.g. `Trace.patterns()`, which holds one layer at a time).
        residual: weight of the skip connection; 0.5 is the paper's "A + I, renormalised".
    Returns:
        [S, S]: row i is how much output token i draws on each input token.
    """
    joint = None
    for pattern in patterns:
        joint = _rollout_step(joint, pattern, residual)
    return joint


def _rollout_step(joint: torch.Tensor | None, pattern: torch.Tensor, residual: float = 0.5):
    """The rollout through one more layer: [S, S] (None before layer 0) and [H, S, S]."""
    eye = torch.eye(pattern.shape[-1], dtype=pattern.dtype)
    a = residual * eye + (1 - residual) * pattern.mean(0)
    a = a / a.sum(-1, keepdim=True)
    return a if joint is None else a @ joint  # later layers act on what earlier ones mixed


def summarise(trace) -> dict:
    """Every layer's attention, summed up in one walk over the layers (`Trace.patterns()`: one
    layer's pattern held at a time, never all L):

    {"rollout": [S, S], "distance": [L, H] px (`mean_attention_distance`), "entropy": [L, H]
    nats, "prefix_share": [L, H] (`prefix_share`), "prefix_rows": [L, H, prefix, S], the rows of
    the CLS / DIST queries}: rollout and the rows as tensors, the rest numpy arrays.
    """
    joint, distance, entropy, share, rows = _walk(trace.patterns(), trace.config)
    return {"rollout": joint, "distance": distance.numpy(), "entropy": entropy.numpy(),
            "prefix_share": share.numpy(), "prefix_rows": rows}


def _walk(patterns, c):
    """(rollout, distance, entropy, prefix share, prefix rows) over the layers' patterns."""
    pre, joint = c.num_prefix_tokens, None
    distance, entropy, share, rows = [], [], [], []
    for pattern in patterns:
        joint = _rollout_step(joint, pattern)
        distance.append(mean_attention_distance(pattern, c.grid, c.patch_size, pre))
        entropy.append(attention_entropy(pattern))
        share.append(prefix_share(pattern, c.grid, pre))
        rows.append(pattern[:, :pre].clone())
    return joint, torch.stack(distance), torch.stack(entropy), torch.stack(share), torch.stack(rows)


def patch_centres(grid: int, patch_size: int) -> torch.Tensor:
    """[N, 2] (row, col) pixel coordinates of every patch centre, in scan order."""
    r, c = torch.meshgrid(torch.arange(grid), torch.arange(grid), indexing="ij")
    return (torch.stack([r, c], -1).reshape(-1, 2).float() + 0.5) * patch_size


def mean_attention_distance(pattern: torch.Tensor, grid: int, patch_size: int,
                            prefix: int = 1) -> torch.Tensor:
    """Mean attention distance per head in pixels (after the ViT paper, Figure 7 right).

    For each patch query: the pixel distance between patch centres, weighted by the attention it
    pays to the patch keys, with that attention re-normalised over the patch keys (the share it
    puts on CLS / DIST, which have no place in the image, is left out; `prefix_share` measures
    it); then averaged over all patch queries.

    Args:
        pattern: [H, S, S] one layer's attention; the first `prefix` tokens are CLS / DIST.
    Returns:
        [H] distances in pixels.
    """
    N = grid * grid
    a = pattern[:, prefix:prefix + N, prefix:prefix + N]  # patch -> patch block
    a = a / a.sum(-1, keepdim=True).clamp_min(1e-12)
    xy = patch_centres(grid, patch_size)
    dist = torch.cdist(xy, xy)  # [N, N] Euclidean pixel distance
    return (a * dist).sum(-1).mean(-1)


def uniform_distance(grid: int, patch_size: int, allowed: torch.Tensor | None = None,
                     prefix: int = 0) -> float:
    """The mean attention distance if every patch query spread its attention evenly over the
    patch keys it may see: the baseline that `mean_attention_distance` is compared with.

    Args:
        allowed: [S, S] boolean mask (True = query may see key), or None for full attention.
        prefix: tokens before the patches in `allowed` (CLS / DIST).
    """
    N = grid * grid
    xy = patch_centres(grid, patch_size).double()
    dist = torch.cdist(xy, xy)
    vis = (torch.ones(N, N, dtype=torch.bool) if allowed is None
           else allowed[prefix:prefix + N, prefix:prefix + N].bool())
    per_query = (dist * vis).sum(-1) / vis.sum(-1).clamp_min(1)
    return float(per_query.mean())


def prefix_share(pattern: torch.Tensor, grid: int, prefix: int) -> torch.Tensor:
    """[H, S, S] -> [H]: the share of attention patch queries put on the prefix tokens (CLS /
    DIST), averaged over the patch queries; what `mean_attention_distance` leaves out."""
    N = grid * grid
    if not prefix:
        return torch.zeros(pattern.shape[0], dtype=pattern.dtype)
    return pattern[:, prefix:prefix + N, :prefix].sum(-1).mean(-1)


def attention_entropy(pattern: torch.Tensor) -> torch.Tensor:
    """Mean over queries of each head's attention entropy, in nats: [H, S, S] -> [H].

    0 means every query looks at a single key; `max_entropy(allowed)` means every query spreads
    evenly over the keys it may see. Masked keys (probability exactly 0) contribute 0.
    """
    p = pattern.clamp_min(0)
    plogp = torch.where(p > 0, p * p.clamp_min(1e-30).log(), torch.zeros_like(p))
    return -plogp.sum(-1).mean(-1)


def allowed_from_mask(mask: torch.Tensor) -> torch.Tensor:
    """An additive mask [S, S] (0 visible, -inf blocked) as booleans: True where visible."""
    return torch.isfinite(mask)


def max_entropy(allowed: torch.Tensor | int) -> float:
    """The largest possible `attention_entropy` under a mask: every query spreads evenly over the
    keys it may see, so the mean over queries of log(number of visible keys).

    Args:
        allowed: [S, S] boolean mask, or S (full attention: log S).
    """
    if isinstance(allowed, int):
        return math.log(allowed)
    return float(allowed.sum(-1).double().log().mean())


def keys_holding(row: torch.Tensor, share: float = 0.5) -> int:
    """How many keys, largest first, it takes to hold `share` of one query's attention."""
    v = row.double().sort(descending=True).values.cumsum(0)
    return int((v < share * float(v[-1])).sum()) + 1
