"""Attention read three ways: rollout through the layers, how far heads look, and how spread out.

Each function names the paper idea it computes, so a page can say where a picture comes from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

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


# ---------------------------------------------------------------- one head, one patch
@dataclass(frozen=True)
class PatchLook:
    """Where one patch query looks in one head, and who looks at it."""

    row: torch.Tensor  # [g, g] the patch's attention over the patches
    col: torch.Tensor  # [g, g] every patch's attention on it
    on_prefix: tuple[float, ...]  # its attention on CLS (and DIST)
    own: float  # on its own patch
    near: float  # on its own patch and the (up to) 8 around it
    top: int  # the patch it looks at most
    top_share: float
    top_steps: int  # how many grid steps (king's moves) away that patch is


def patch_look(pattern: torch.Tensor, patch: int, grid: int, prefix: int) -> PatchLook:
    """Patch `patch`'s row and column of one head's pattern [S, S], over the patches."""
    N = grid * grid
    row = pattern[patch + prefix, prefix:prefix + N]
    col = pattern[prefix:prefix + N, patch + prefix]
    r, q = divmod(patch, grid)
    rows, cols = torch.arange(N) // grid, torch.arange(N) % grid
    around = ((rows - r).abs() <= 1) & ((cols - q).abs() <= 1)
    top = int(row.argmax())
    return PatchLook(row.reshape(grid, grid), col.reshape(grid, grid),
                     tuple(float(pattern[patch + prefix, i]) for i in range(prefix)),
                     float(row[patch]), float(row.double()[around].sum()), top, float(row[top]),
                     max(abs(top // grid - r), abs(top % grid - q)))


def top_cell(values) -> tuple[int, float]:
    """The largest entry of a map (flattened index, first of ties) and its value."""
    v = torch.as_tensor(values).flatten()
    k = int(v.argmax())
    return k, float(v[k])


# ---------------------------------------------------------------- every head's prefix row
@dataclass(frozen=True)
class PrefixMaps:
    """One layer's rows of the prefix queries (CLS, DIST), per head, over the patches."""

    rows: tuple  # per prefix token: [H] rows over the patches, each [g*g]
    top: tuple[float, ...]  # per prefix token: the largest weight any head gives a patch
    mean_rows: tuple  # per prefix token: the mean over heads of its whole row [S]
    n_keys: tuple[int, ...]  # per prefix token: how many keys it may see
    sees_patches: tuple[bool, ...]
    half_keys: tuple[int, ...]  # per prefix token: keys holding half its mean row (keys_holding)
    on_prefix: tuple[float, ...]  # per prefix token: its mean row's share on the prefix tokens
    ranges: tuple  # per prefix token: per head, (its lowest, its highest weight on a patch)


def prefix_maps(prefix_rows: torch.Tensor, layer: int, grid: int,
                allowed: torch.Tensor) -> PrefixMaps:
    """Args: prefix_rows [L, H, prefix, S] (`summarise`'s), allowed [S, S] bool."""
    _, H, pre, _ = prefix_rows.shape
    N = grid * grid
    rows = tuple([prefix_rows[layer, h, i, pre:pre + N] for h in range(H)] for i in range(pre))
    means = tuple(prefix_rows[layer, :, i].mean(0) for i in range(pre))
    return PrefixMaps(rows, tuple(max(float(r.max()) for r in rs) for rs in rows), means,
                      tuple(int(allowed[i].sum()) for i in range(pre)),
                      tuple(bool(allowed[i, pre:].any()) for i in range(pre)),
                      tuple(keys_holding(m) for m in means),
                      tuple(float(m[:pre].sum()) for m in means),
                      tuple([(float(r.min()), float(r.max())) for r in rs] for rs in rows))


@dataclass(frozen=True)
class Agreement:
    """The brightest cell of several heads' maps on one scale, and each head's own."""

    top: float  # the largest weight of all
    patches: tuple[int, ...]  # the patches holding it (ties)
    head: int  # the first head holding it
    favourites: tuple[int, ...]  # per head: its brightest patch
    favourite_shares: tuple[float, ...]  # per head: the weight on it
    shared: int  # the most heads that share one brightest patch


def head_agreement(rows) -> Agreement:
    """rows: per head, a row over the patches ([H] of [N], or [H, N])."""
    r = torch.stack([torch.as_tensor(x, dtype=torch.float64) for x in rows])  # [H, N]
    top = float(r.max())
    fav = [int(x.argmax()) for x in r]
    return Agreement(top, tuple(int(p) for p in torch.nonzero((r == top).any(0)).flatten()),
                     int((r == top).any(1).nonzero()[0]), tuple(fav),
                     tuple(float(r[h, p]) for h, p in enumerate(fav)),
                     max(fav.count(p) for p in fav))


# ---------------------------------------------------------------- rollout, as shares
@dataclass(frozen=True)
class RolloutShares:
    map: torch.Tensor  # [g, g] the drawn map: CLS's rollout row (or the patch rows' mean)
    on_prefix: tuple[float, ...]  # of the renormalised row: the share on CLS (and DIST)
    on_patches: float
    k: int  # the strongest patches summed
    top: float  # their share
    N: int


def rollout_shares(joint: torch.Tensor, grid: int, prefix: int, k: int) -> RolloutShares:
    """`rollout`'s [S, S] read as shares: the final CLS row over the image tokens, renormalised
    to 1 (without CLS: the mean of the final patch rows over the patches)."""
    N = grid * grid
    if prefix:
        row = joint[0, :prefix + N].double()
        row = row / row.sum()
        patches, drawn = row[prefix:], joint[0, prefix:prefix + N]
    else:
        row = joint[:N, :N].double().mean(0)
        row = patches = row / row.sum()
        drawn = joint[:N, :N].mean(0)
    k = min(k, N)
    return RolloutShares(drawn.reshape(grid, grid), tuple(float(row[i]) for i in range(prefix)),
                         float(patches.sum()), k,
                         float(patches.sort(descending=True).values[:k].sum()), N)


# ---------------------------------------------------------------- a grid of heads
@dataclass(frozen=True)
class HeadRange:
    """The extremes of one number per head ([L, H])."""

    lo: float
    hi: float
    lowest: int  # flat index (layer * H + head) of the lowest, first of ties
    highest: int
    H: int  # heads per layer
    n: int  # heads in all

    def where(self, k: int) -> tuple[int, int]:
        """(layer, head) of flat index k."""
        return divmod(k, self.H)


def head_range(values) -> HeadRange:
    """Args: values [L, H] (a flat [n] counts as one layer)."""
    v = torch.as_tensor(values, dtype=torch.float64)
    f = v.flatten()
    return HeadRange(float(f.min()), float(f.max()), int(f.argmin()), int(f.argmax()),
                     v.shape[-1], f.numel())


def heads_below(values, bound: float) -> tuple[int, list[int]]:
    """How many heads of [L, H] are under `bound`, and the layers they are in (sorted)."""
    v = torch.as_tensor(values, dtype=torch.float64)
    under = v < bound
    return int(under.sum()), sorted({int(i) for i in under.nonzero()[:, 0]})


def spread_picks(values, right: int | None) -> list[int]:
    """Up to 4 flat head indices from a ranking of `values` (descending): `right` (None: the
    top), the bottom, and the two a third and two thirds down; in index order."""
    order = torch.as_tensor(values).flatten().sort(descending=True, stable=True).indices.tolist()
    n = len(order)
    return sorted({order[0] if right is None else right, order[-1], order[n // 3],
                   order[2 * n // 3]})


# ---------------------------------------------------------------- one score, by hand
@dataclass(frozen=True)
class Score:
    dot: float  # q_i · k_j
    score: float  # / sqrt(d_k)
    traced: float  # the trace's scores entry (-inf when masked)
    weight: float  # the pattern's entry
    masked: bool
    visible: int  # keys query i may see
    rank: int  # this key's place among them, largest score first
    S: int


def score_by_hand(q: torch.Tensor, k: torch.Tensor, scores_row: torch.Tensor,
                  weight: float, j: int) -> Score:
    """Query vector q [d_k] against key vector k [d_k], and query i's traced score row [S]."""
    dot = float(q @ k)
    traced = float(scores_row[j])
    visible = scores_row[scores_row.isfinite()]
    return Score(dot, dot / math.sqrt(q.numel()), traced, float(weight),
                 not math.isfinite(traced), int(visible.numel()),
                 int((visible > traced).sum()) + 1, int(scores_row.numel()))


# ---------------------------------------------------------------- the final CLS row
def cls_patch_row(pattern: torch.Tensor, grid: int, prefix: int) -> tuple[torch.Tensor, float]:
    """The last layer's CLS row over the patches, heads averaged: ([g, g], its total).
    Args: pattern [H, S, S]."""
    N = grid * grid
    row = pattern.mean(0)[0, prefix:prefix + N]
    return row.reshape(grid, grid), float(row.sum())
