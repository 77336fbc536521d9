"""Pictures of the embedding weights: W_E's principal components and position similarity
(the ViT paper's Figure 7, left and centre)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .flops import total_macs


def embedding_filters(weight: torch.Tensor, k: int = 28) -> tuple[torch.Tensor, torch.Tensor]:
    """Principal components of the patch-embedding filters (ViT paper, Figure 7 left).

    The D rows of W_E are D filters over a C x P x P patch; their top principal components show
    what kind of patch structure the embedding responds to.

    Args:
        weight: the patch conv weight [D, C, P, P].
    Returns:
        (components [k, C, P, P] each scaled to [0, 1] for display, explained variance ratio [k]).
    """
    D, C, P, _ = weight.shape
    rows = weight.reshape(D, -1).double()
    rows = rows - rows.mean(0, keepdim=True)
    _, s, vh = torch.linalg.svd(rows, full_matrices=False)
    k = min(k, vh.shape[0])
    comps = vh[:k].reshape(k, C, P, P)
    lo = comps.amin(dim=(1, 2, 3), keepdim=True)
    hi = comps.amax(dim=(1, 2, 3), keepdim=True)
    var = s**2
    return ((comps - lo) / (hi - lo).clamp_min(1e-12)).float(), (var[:k] / var.sum()).float()


def position_similarity(pos_embed: torch.Tensor, grid: int, prefix: int = 1) -> torch.Tensor:
    """Cosine similarity of each patch's position embedding with every other (Figure 7 centre).

    Args:
        pos_embed: [1, prefix + N, D] or [prefix + N, D].
    Returns:
        [grid, grid, grid, grid]: entry [r, c] is the similarity map of patch (r, c) to all.
    """
    e = pos_embed.reshape(-1, pos_embed.shape[-1])[prefix:]
    e = torch.nn.functional.normalize(e.double(), dim=-1)
    return (e @ e.T).reshape(grid, grid, grid, grid).float()


MOST_ALIKE = 3  # pairs of positions `position_distance_stats` lists, most alike first


def position_distance_stats(pos_embed: torch.Tensor, grid: int, prefix: int = 1) -> dict:
    """How alike the patch position vectors are as a function of how far apart the patches are.

    Distance is counted in grid steps along rows and columns (|Δrow| + |Δcol|: the four
    patches sharing an edge are 1 step away, the next ring 2). Similarity is the cosine of
    the two position vectors; every mean is over all ordered pairs of distinct patches.

    Args:
        pos_embed: [1, prefix + N, D] or [prefix + N, D] (prefix tokens are skipped).
    Returns:
        {"by_distance": {d: mean cosine of pairs d steps apart, d = 1 .. 2(grid-1)},
         "near": d = 1, "two": d = 2 (None if the grid is too small),
         "far": pairs at least `far_from` = max(3, grid) steps apart (None if none),
         "even", "odd": pairs an even number (>= 2) / odd number (>= 3) of steps apart
         (None if none): a checkerboard in the similarity maps shows as even > odd,
         "most_alike": the MOST_ALIKE most alike pairs of distinct patches, most alike first,
         each (patch i, patch j, steps apart, cosine, both on the grid's border),
         "border_border", "inner_inner", "border_inner": the mean cosine of pairs of distinct
         patches both on the grid's border, both inside it, one of each (None if none)}.
    """
    e = pos_embed.reshape(-1, pos_embed.shape[-1])[prefix:prefix + grid * grid].double()
    e = torch.nn.functional.normalize(e, dim=-1)
    sim = e @ e.T
    idx = torch.arange(grid * grid)
    rows, cols = idx // grid, idx % grid
    steps = (rows[:, None] - rows[None]).abs() + (cols[:, None] - cols[None]).abs()

    def mean(where: torch.Tensor) -> float | None:
        return float(sim[where].mean()) if bool(where.any()) else None

    by = {d: mean(steps == d) for d in range(1, 2 * (grid - 1) + 1)}
    far_from = max(3, grid)
    border = (rows == 0) | (rows == grid - 1) | (cols == 0) | (cols == grid - 1)
    i, j = torch.triu_indices(grid * grid, grid * grid, offset=1)
    order = sim[i, j].argsort(descending=True)[:MOST_ALIKE].tolist()
    alike = [(int(i[k]), int(j[k]), int(steps[i[k], j[k]]), float(sim[i[k], j[k]]),
              bool(border[i[k]] and border[j[k]])) for k in order]
    return {"by_distance": by, "near": by.get(1), "two": by.get(2),
            "far": mean(steps >= far_from), "far_from": far_from,
            "even": mean((steps >= 2) & (steps % 2 == 0)),
            "odd": mean((steps >= 3) & (steps % 2 == 1)), "most_alike": alike, "grid": grid,
            "border_border": mean(border[:, None] & border[None] & (steps > 0)),
            "inner_inner": mean(~border[:, None] & ~border[None] & (steps > 0)),
            "border_inner": mean(border[:, None] & ~border[None])}


def patch_embedding_check(weight: torch.Tensor, bias: torch.Tensor, patch_row: torch.Tensor,
                          traced: torch.Tensor) -> dict:
    """One patch's embedding x_p W_E + b recomputed in float64 from the conv weight [D, C, P, P],
    against the traced (float32) one [D]: {"diff": the largest difference, "first": its first
    5 values (numpy)}."""
    W = weight.detach().double().reshape(weight.shape[0], -1)  # [D, C·P·P]
    by_hand = patch_row.double() @ W.T + bias.detach().double()
    return {"diff": float((by_hand - traced.double()).abs().max()), "first": by_hand[:5].numpy()}


def component_count(embed_dim: int, patch_values: int) -> int:
    """How many principal components D filters of C·P·P values have: the rank of the centred
    D x C·P·P matrix, at most min(D - 1, C·P·P)."""
    return min(embed_dim - 1, patch_values)


def position_neighbours(sim: torch.Tensor, patch: int) -> dict:
    """Patch `patch`'s position vector against every other, from `position_similarity`'s
    [g, g, g, g]: {"map": its [g, g] map, "best": the most alike other patch (None for a single
    patch), "best_cos", "best_steps" (|Δrow| + |Δcol|), "neighbours": patches 1 step away,
    "near_mean": their mean cosine (None without any)}."""
    g = sim.shape[0]
    r, col = divmod(patch, g)
    row = torch.as_tensor(sim[r, col]).double().reshape(-1)
    idx = torch.arange(g * g)
    steps = (idx // g - r).abs() + (idx % g - col).abs()
    others = idx[idx != patch]
    best = int(others[row[others].argmax()]) if others.numel() else None
    near = steps == 1
    return {"map": torch.as_tensor(sim[r, col]).numpy(), "best": best,
            "best_cos": None if best is None else float(row[best]),
            "best_steps": None if best is None else int(steps[best]),
            "neighbours": int(near.sum()),
            "near_mean": float(row[near].mean()) if bool(near.any()) else None}


def input_cost(config) -> dict:
    """What one image costs a model with this config: {"size": px, "grid", "N": patches, "S":
    image tokens, "pairs": S² query-key pairs per head and block, "macs": multiply-adds of the
    pass over the image tokens (`flops.total_macs`)}."""
    S = config.num_image_tokens
    return {"size": config.img_size, "grid": config.grid, "N": config.num_patches, "S": S,
            "pairs": S * S, "macs": total_macs(config)}


def cost_ratios(own: dict, other: dict) -> dict:
    """`input_cost` at another size against its own: {"N", "S", "pairs", "macs"}: other / own
    (pairs = S ratio squared), and "pairs_2dp": the pairs ratio as (S'/S)² rounded to 2 places."""
    out = {k: other[k] / own[k] for k in ("N", "S", "pairs", "macs")}
    out["pairs_2dp"] = round((other["S"] / own["S"]) ** 2, 2)
    return out


@dataclass(frozen=True)
class PatchCost:
    """What cutting an image at patch size P costs."""

    P: int
    N: int  # patches
    S: int  # tokens: the patches and the `extra` (CLS / DIST, text) tokens
    S2: int  # attention entries per head and layer

    def times(self, other: PatchCost) -> tuple[float, float]:
        """(N, S²) of this cost as multiples of `other`'s."""
        return self.N / other.N, self.S2 / other.S2


def patch_cost(img_size: int, patch: int, extra: int = 0) -> PatchCost:
    """Patches, tokens and attention entries per head if a square image of `img_size` pixels
    were cut at `patch` (which divides it), with `extra` tokens besides the patches."""
    n = (img_size // patch) ** 2
    return PatchCost(patch, n, n + extra, (n + extra) ** 2)
