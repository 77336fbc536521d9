"""Pictures of the embedding weights: W_E's principal components and position similarity
(the ViT paper's Figure 7, left and centre)."""

from __future__ import annotations

import torch


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
