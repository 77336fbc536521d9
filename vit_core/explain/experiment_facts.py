"""The numbers the Experiments stage (ui/stages/experiments/) shows beside the interventions
(vit_core.explain.interventions): the 3 x 3 patches around a patch, the cells a shuffle leaves
in place, the grey the occluded patches hold, the classes charted before and after, what a mask
lets the patches read in block 0, and the mean probability of a fed caption's words.
Pure torch; no streamlit, no wording."""

from __future__ import annotations

import torch

from ..config import ViTConfig
from ..masks import allowed_keys, parse_window, window_keys


def around(p: int, g: int) -> list[int]:
    """The 3 x 3 patches around patch p on a g x g grid (fewer at an edge), in reading order."""
    r0, c0 = divmod(p, g)
    return [r * g + c for r in range(r0 - 1, r0 + 2) for c in range(c0 - 1, c0 + 2)
            if 0 <= r < g and 0 <= c < g]


def middle(g: int) -> int:
    """The middle patch of a g x g grid."""
    return g // 2 * g + g // 2


def grey_centre(grey, candidates, g: int) -> int | None:
    """The first of `candidates` whose 3 x 3 neighbourhood is exactly the grey set (None)."""
    return next((p for p in candidates if grey and sorted(grey) == around(p, g)), None)


def fixed_points(perm: torch.Tensor | None) -> tuple[int, ...]:
    """The cells a permutation leaves in place (a random order may keep some)."""
    return () if perm is None else tuple(i for i, p in enumerate(perm.tolist()) if i == p)


def mean_rgb(mean) -> tuple[int, ...]:
    """The normalisation mean in 0-255 per channel: the grey an occluded patch holds."""
    return tuple(round(255 * m) for m in mean)


def probabilities(logits: torch.Tensor) -> torch.Tensor:
    """Class probabilities from a run's logits (softmax over the last axis)."""
    return logits.softmax(-1)


def top_answer(probs: torch.Tensor) -> tuple[int, float]:
    """The class answered and its probability."""
    return int(probs.argmax()), float(probs.max())


def charted_classes(p0: torch.Tensor, p1: torch.Tensor, k: int) -> list[int]:
    """The top k classes of either run, once each, most probable before first."""
    top = list(dict.fromkeys(p0.topk(k).indices.tolist() + p1.topk(k).indices.tolist()))
    top.sort(key=lambda i: -float(p0[i]))
    return top


def allowed_in_block0(c: ViTConfig, kind: str, n_text: int) -> torch.Tensor:
    """Boolean [S, S]: who may attend to whom under mask `kind` in block 0 (a window mask
    differs per block; the others are the same in every block)."""
    if parse_window(kind) is not None:
        return window_keys(c, kind, n_text)[0]
    return allowed_keys(kind, c.num_image_tokens, n_text)


def same_allowed(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Two additive masks (0 / −∞) let exactly the same queries read the same keys."""
    return torch.equal(torch.isfinite(a), torch.isfinite(b))


def most_patch_keys(c: ViTConfig, mask: torch.Tensor) -> int:
    """The most patch keys any patch may read in block 0 of an additive mask [depth, S, S]."""
    pre, n = c.num_prefix_tokens, c.num_image_tokens
    return int(torch.isfinite(mask[0])[pre:n, pre:n].sum(-1).max())


def mean_probability(probs) -> float:
    """The mean of a caption's word probabilities."""
    return sum(probs) / len(probs)
