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


def _range(values) -> str:
    lo, hi = float(min(values)), float(max(values))
    return f"{lo:.0f} px" if round(lo) == round(hi) else f"{lo:.0f}–{hi:.0f} px"


def distance_note(dist, baseline: float) -> str:
    """One or two sentences on how far heads look, worded from the numbers.

    Args:
        dist: [L, H] mean attention distance per layer and head, in pixels.
        baseline: `uniform_distance` for this grid and mask.
    """
    d = torch.as_tensor(dist, dtype=torch.float64)
    L, H = d.shape
    where = divmod(int(d.argmin()), H)
    nearest = float(d.min())
    local = d < 0.5 * baseline
    text = (f"Mean attention distance {_range(d.flatten())}; attention spread evenly over the "
            f"patches would give {baseline:.1f} px")
    if not local.any() and nearest >= 0.75 * baseline:
        return text + (", so this head looks everywhere, not near its own patch." if L * H == 1
                       else ", so these heads look everywhere, none near its own patch.")
    if not local.any():
        return (text + f". The nearest head (layer {where[0]}, head {where[1]}, {nearest:.0f} px) "
                f"looks somewhat closer than that, but no head stays near its own patch.")
    n = int(local.sum())
    layers = sorted({int(i) for i in local.nonzero()[:, 0]})
    span = f"layer {layers[0]}" if len(layers) == 1 else f"layers {layers[0]}–{layers[-1]}"
    if n == L * H:
        if n == 1:
            return text + f", so this head looks locally, under half of that ({nearest:.0f} px)."
        return (text + f", so these heads look locally: every head stays under half of that "
                f"(nearest {nearest:.0f} px).")
    return (text + f". {n} of {L * H} heads ({span}) look locally, under half of that "
            f"(nearest: layer {where[0]}, head {where[1]} at {nearest:.0f} px); the others look "
            f"further.")


def entropy_note(ent, maximum: float, mask_kind: str = "full") -> str:
    """One sentence on how spread out attention is, worded from the numbers.

    Args:
        ent: [L, H] mean attention entropy per layer and head, in nats.
        maximum: `max_entropy` under the mask used.
    """
    e = torch.as_tensor(ent, dtype=torch.float64)
    H = e.shape[1]
    lo, hi = float(e.min()), float(e.max())
    layer, head = divmod(int(e.argmin()), H)
    span = f"{lo:.2f} nats" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}–{hi:.2f} nats"
    text = (f"Entropy {span}; spreading evenly over every key a query may see "
            f"({mask_kind} mask) gives {maximum:.2f} nats")
    one = e.numel() == 1
    if lo >= 0.9 * maximum:
        return text + (", so this head spreads its attention almost evenly." if one else
                       ", so every head spreads its attention almost evenly.")
    n = round(math.exp(lo))
    which = "The head" if one else f"The most focused head (layer {layer}, head {head})"
    return (text + f". {which} is about as spread as an even split over e^{lo:.2f} ≈ {n} "
            f"key{'s' if n != 1 else ''}.")


def rollout_note(roll: torch.Tensor, prefix_names: tuple[str, ...], grid: int, k: int = 5) -> str:
    """One sentence on the rollout map shown: how much of it comes from the prefix tokens, and
    how much the k strongest patches carry.

    Args:
        roll: [S, S] `rollout` of the image tokens (prefix tokens first, then the grid² patches).
        prefix_names: ("CLS",), ("CLS", "DIST") or ().
    """
    pre, N = len(prefix_names), grid * grid
    k = min(k, N)
    if pre:
        row = roll[0, :pre + N].double()
        row = row / row.sum()
        own = ", ".join(f"{float(row[i]):.1%} on the {n} input" for i, n in
                        enumerate(prefix_names))
        top = float(row[pre:].sort(descending=True).values[:k].sum())
        return (f"The final CLS token draws {own} and {float(row[pre:].sum()):.1%} on the {N} "
                f"patches; its {k} strongest patches give {top:.1%}.")
    row = roll[:N, :N].double().mean(0)
    row = row / row.sum()
    top = float(row.sort(descending=True).values[:k].sum())
    return (f"Averaged over the final patch tokens, the {k} strongest input patches give "
            f"{top:.1%} (an even share would be {k / N:.1%}).")
