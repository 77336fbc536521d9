"""Numbers derived from a trace or from the weights, for the explainer's pages (pure torch).

Each function names the paper idea it computes, so a page can say where a picture comes from.
"""

from __future__ import annotations

import math

import torch


def stack_patterns(trace) -> torch.Tensor:
    """All attention patterns of a trace as one tensor [L, H, S, S]."""
    return torch.stack([trace[f"blocks.{i}.attn.pattern"] for i in range(trace.config.depth)])


def rollout(patterns: torch.Tensor, residual: float = 0.5) -> torch.Tensor:
    """Attention rollout (Abnar & Zuidema, 2020): how much each input token flows to each output.

    Per layer: average the heads, mix in the identity for the residual path
    (A' = residual * I + (1 - residual) * A), re-normalise rows, and multiply the layers through.

    Args:
        patterns: [L, H, S, S] attention patterns, layer 0 first.
        residual: weight of the skip connection; 0.5 is the paper's "A + I, renormalised".
    Returns:
        [S, S]: row i is how much output token i draws on each input token.
    """
    L, _, S, _ = patterns.shape
    eye = torch.eye(S, dtype=patterns.dtype)
    joint = eye
    for layer in range(L):
        a = residual * eye + (1 - residual) * patterns[layer].mean(0)
        a = a / a.sum(-1, keepdim=True)
        joint = a @ joint  # later layers act on what earlier layers already mixed
    return joint


def patch_centres(grid: int, patch_size: int) -> torch.Tensor:
    """[N, 2] (row, col) pixel coordinates of every patch centre, in scan order."""
    r, c = torch.meshgrid(torch.arange(grid), torch.arange(grid), indexing="ij")
    return (torch.stack([r, c], -1).reshape(-1, 2).float() + 0.5) * patch_size


def mean_attention_distance(pattern: torch.Tensor, grid: int, patch_size: int,
                            prefix: int = 1) -> torch.Tensor:
    """Mean attention distance per head in pixels (ViT paper, Figure 7 right).

    For each patch query: the pixel distance to each patch key, weighted by the attention it
    pays (re-normalised over patch keys only), averaged over all patch queries.

    Args:
        pattern: [H, S, S] one layer's attention; the first `prefix` tokens are CLS-like.
    Returns:
        [H] distances in pixels.
    """
    N = grid * grid
    a = pattern[:, prefix:prefix + N, prefix:prefix + N]  # patch -> patch block
    a = a / a.sum(-1, keepdim=True).clamp_min(1e-12)
    xy = patch_centres(grid, patch_size)
    dist = torch.cdist(xy, xy)  # [N, N] Euclidean pixel distance
    return (a * dist).sum(-1).mean(-1)


def attention_entropy(pattern: torch.Tensor) -> torch.Tensor:
    """Mean over queries of each head's attention entropy, in nats: [H, S, S] -> [H].

    0 means every query looks at a single key; log(S) means it spreads evenly over all S.
    Masked keys (probability exactly 0) contribute 0.
    """
    p = pattern.clamp_min(0)
    plogp = torch.where(p > 0, p * p.clamp_min(1e-30).log(), torch.zeros_like(p))
    return -plogp.sum(-1).mean(-1)


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


def token_stats(x: torch.Tensor) -> dict[str, float]:
    """Mean and (biased, as LayerNorm uses) standard deviation of one token vector."""
    x = x.double()
    mu = x.mean()
    return {"mean": float(mu), "std": float(((x - mu) ** 2).mean().sqrt())}


def max_entropy(S: int) -> float:
    return math.log(S)


@torch.inference_mode()
def logit_lens(model, trace) -> torch.Tensor:
    """The classifier's logits read off after every block (the "logit lens").

    Each layer's CLS vector goes through the final LayerNorm and the class head, as if the
    network stopped there. Row 0 is the embedding, row l+1 the output of block l; the last row
    equals the model's real logits.

    Returns:
        [L + 1, K] logits.
    """
    c = model.config
    if not c.num_classes or not c.class_token:
        raise ValueError("The logit lens here reads the CLS token of a classifier.")
    rows = [trace["embed"][0]] + [trace[f"blocks.{i}.resid_post"][0] for i in range(c.depth)]
    return model.head(model.norm(torch.stack(rows)))


def pca_rgb(tokens: torch.Tensor, grid: int) -> torch.Tensor:
    """First three principal components of the patch tokens as colours: [N, D] -> [g, g, 3].

    Patches the model represents alike get alike colours (each component scaled to [0, 1]).
    """
    x = tokens.double() - tokens.double().mean(0, keepdim=True)
    _, _, vh = torch.linalg.svd(x, full_matrices=False)
    k = min(3, vh.shape[0])
    proj = x @ vh[:k].T  # [N, k]
    if k < 3:
        proj = torch.cat([proj, torch.zeros(proj.shape[0], 3 - k, dtype=proj.dtype)], 1)
    lo, hi = proj.amin(0), proj.amax(0)
    return ((proj - lo) / (hi - lo).clamp_min(1e-12)).reshape(grid, grid, 3).float()
