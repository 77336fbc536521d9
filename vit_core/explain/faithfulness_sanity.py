"""Does the map depend on what the model learned? The model-randomisation sanity check.

    s = sanity_check(model, pixels, target, my_map)      # every block and the output layer
    s.rho                                                 # near 1: the map ignores the weights
    steps = cascade(model, pixels, target, my_map)        # output layer, + last block, + ...

Adebayo et al. 2018 ("Sanity Checks for Saliency Maps") re-initialise a trained model's layers
from the top down (cascading randomisation: the logits layer first, then each layer below it in
turn) and compare the map on the randomised model with the map on the trained one. A map that
stays the same once the weights that made the decision are gone cannot be explaining that
decision (an edge detector passes this test on any model). Here the comparison is the Spearman
rank correlation of the two maps over the N patches (the prefix tokens left out), with average
ranks for ties; near 0 passes, near 1 fails. A rank correlation ignores the maps' scales, which
differ between the two models anyway. (Adebayo et al. also compare absolute values, and SSIM of
the images; this is the signed map's ranking, the one the deletion curves use.)

What is re-initialised, as the model was first initialised (truncated normal, std 0.02, for
weights; zero biases; unit LayerNorms), from one generator seeded with `seed` (the caller's model
and the global random state are left alone: the work happens on a deep copy):
- with `head=True` (the default, as the paper's cascade starts from the logits), the output
  layer: the final LayerNorm and the class head (and DeiT's distillation head), or a captioner's
  separate word head. A captioner whose word head is tied to its word embedding (the bundled
  ones) keeps the embedding, as it is also the model's input; its final LayerNorm is reset;
- the top `depth` blocks, the last block first (None: every block; 0: the output layer alone).
With one seed, the cascade's steps are nested: depth d re-initialises what depth d - 1 did, with
the same values, and one block more.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from torch import nn

from .baselines import tick


@dataclass(frozen=True, eq=False)
class Sanity:
    """The map on the trained model and on its randomised copy, and their rank correlation."""

    depth: int  # top blocks re-initialised
    head: bool  # the output layer re-initialised too
    seed: int
    trained: torch.Tensor  # [N] the map on the trained model
    randomised: torch.Tensor  # [N] the map on the randomised copy
    rho: float  # Spearman rank correlation of the two maps (nan if either map is constant)


def randomised_copy(model: nn.Module, depth: int | None = None, *, head: bool = True,
                    seed: int = 0) -> nn.Module:
    """A deep copy of `model` with its output layer (if `head`) and its top `depth` blocks (None:
    all) re-initialised, the last block first. `model` itself is not touched."""
    L = len(model.blocks)
    depth = L if depth is None else int(depth)
    if not 0 <= depth <= L:
        raise ValueError(f"This model has {L} blocks; re-initialise 0 to {L} of them.")
    twin = copy.deepcopy(model)
    g = torch.Generator().manual_seed(int(seed))
    if head:
        for name in ("norm", "fc_norm", "head", "head_dist", "text_head"):
            part = getattr(twin, name, None)
            if isinstance(part, nn.Module):
                _reinit(part, g)
    for block in list(twin.blocks)[::-1][:depth]:  # the last block first
        _reinit(block, g)
    return twin


def _reinit(module: nn.Module, g: torch.Generator) -> None:
    """The model's own initialisation (ViT.init_weights), drawn from `g`."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02, generator=g)
                if m.bias is not None:
                    m.bias.zero_()
            elif isinstance(m, nn.LayerNorm):
                m.weight.fill_(1.0)
                m.bias.zero_()


def sanity_check(model, pixels, target, fn, *, depth=None, head=True, seed=0, mask=None,
                 progress=None, trained=None, **settings) -> Sanity:
    """The map `fn(model, pixels, target, mask=, progress=, **settings).patches` on the trained
    model (or `trained`, when the caller has it already) and on `randomised_copy(model, depth,
    head=head, seed=seed)`, and their Spearman correlation."""
    if trained is None:
        trained = fn(model, pixels, target, mask=mask, progress=progress, **settings).patches
    twin = randomised_copy(model, depth, head=head, seed=seed)
    randomised = fn(twin, pixels, target, mask=mask, progress=progress, **settings).patches
    trained, randomised = trained.detach().flatten(), randomised.detach().flatten()
    depth = len(model.blocks) if depth is None else int(depth)
    return Sanity(depth, head, int(seed), trained, randomised, spearman(trained, randomised))


def cascade(model, pixels, target, fn, *, head=True, seed=0, mask=None, progress=None,
            **settings) -> list[Sanity]:
    """The cascade: depth 0 (the output layer alone, with `head`), then 1, ..., every block; the
    trained map computed once. `progress(done, total)` hears each map (L + 2 of them)."""
    L = len(model.blocks)
    trained = fn(model, pixels, target, mask=mask, **settings).patches
    tick(progress, 1, L + 2)
    out = []
    for depth in range(L + 1):
        out.append(sanity_check(model, pixels, target, fn, depth=depth, head=head, seed=seed,
                                mask=mask, trained=trained, **settings))
        tick(progress, depth + 2, L + 2)
    return out


def ranks(values: torch.Tensor) -> torch.Tensor:
    """[n] float64 ranks 1..n of `values`, tied values sharing the mean of their ranks."""
    v = values.detach().double().flatten()
    ordered, where = torch.sort(v, stable=True)
    _, group, size = torch.unique_consecutive(ordered, return_inverse=True, return_counts=True)
    last = size.cumsum(0).double()  # rank of each group's last member
    mean_rank = last - (size.double() - 1) / 2  # (first + last) / 2
    out = torch.empty_like(v)
    out[where] = mean_rank[group]
    return out


def spearman(a: torch.Tensor, b: torch.Tensor) -> float:
    """Spearman's rank correlation: Pearson's correlation of the two average-rank vectors; nan
    when either vector is constant (the correlation is undefined)."""
    ra, rb = ranks(a), ranks(b)
    if len(ra) != len(rb):
        raise ValueError(f"Two maps of {len(ra)} and {len(rb)} values do not compare.")
    ra, rb = ra - ra.mean(), rb - rb.mean()
    norm = (ra.square().sum() * rb.square().sum()).sqrt()
    return float((ra * rb).sum() / norm) if norm > 0 else float("nan")
