"""What every attribution method shares: the result's shape, the checks, which query row a
target reads, and summing a pixel map per patch.

A map has one value per patch, in the order `patchify` gives the patches (row-major over the
grid: patch i sits at row i // g, column i % g), plus the prefix tokens' share (CLS, DIST) where
the method gives one.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .. import targets as _targets
from ..targets import Target


@dataclass(frozen=True)
class Attribution:
    """One map: how much each patch counts for `target`, by `method`.

    Attributes:
        method: a key of METHODS ("rollout", ...).
        patches: [N] float, one value per patch, row-major over the grid (patchify's order).
        prefix: [prefix tokens] (CLS, DIST) the map gives the prefix keys, or None where the
            method has no such share (Grad-CAM, Integrated Gradients, occlusion).
        target: what is explained (a class, or a caption word).
        settings: what it was computed with (baseline, steps, layer, the query row, ...).
        completeness_gap: Integrated Gradients only: sum of attributions − (f(x) − f(x0)).
        seconds: wall-clock time of the computation.
    """

    method: str
    patches: torch.Tensor
    prefix: torch.Tensor | None
    target: Target
    settings: dict
    completeness_gap: float | None = None
    seconds: float = 0.0

    @property
    def grid(self) -> torch.Tensor:
        """The patch map as the [g, g] grid it was read from."""
        g = int(round(self.patches.numel() ** 0.5))
        return self.patches.reshape(g, g)


def check(model, pixels: torch.Tensor, target: Target) -> None:
    """One sentence for what no method can explain: a headless encoder, a word of a classifier,
    a class of a captioner, or more than one image."""
    c = model.config
    if not c.num_classes and not c.has_text:
        raise ValueError("This model is a headless encoder: it has no class head and no text "
                         "head, so there is no class or word to attribute to its patches.")
    if pixels.dim() != 4 or pixels.shape[0] != 1:
        raise ValueError(f"Attribution explains one image [1, C, H, W] at a time, not "
                         f"{tuple(pixels.shape)}.")
    if target.is_word and not c.has_text:
        raise ValueError("This model has no text stream: a caption word cannot be its target.")
    if not target.is_word and not c.num_classes:
        raise ValueError("This model writes captions: its target is a word "
                         "(targets.word_targets), not a class.")
    if not target.is_word and not 0 <= target.index < c.num_classes:
        raise ValueError(f"Class {target.index} is not one of this model's {c.num_classes} "
                         f"classes.")


def resolve_target(model, pixels: torch.Tensor, target: Target | None, mask=None) -> Target:
    """The target given, or what the model answers (`targets.predicted`)."""
    if target is not None:
        return target
    c = model.config
    if not c.num_classes and not c.has_text:
        check(model, pixels, Target(0))  # the headless encoder's sentence
    return _targets.predicted(model, pixels, mask=mask)


def text_ids(target: Target) -> torch.Tensor | None:
    """The text fed with a word's image: [SOS] and the words before it (None for a class)."""
    return torch.tensor(target.ids[:target.index]) if target.is_word else None


def query_weights(config, target: Target) -> tuple[torch.Tensor, str]:
    """[S] weights over the query rows whose attention a map reads, and their name.

    A word: the last text position fed (index − 1 in the text stream), the one whose output
    predicts the word. A class: the rows the class head reads: CLS (with DeiT's DIST, the mean
    of the two rows, as the two heads are averaged), or, for an average-pooled head, the mean of
    the patch rows.
    """
    pre, n_img = config.num_prefix_tokens, config.num_image_tokens
    S = n_img + (target.index if target.is_word else 0)
    w = torch.zeros(S, dtype=torch.float64)
    if target.is_word:
        w[S - 1] = 1.0
        return w, f"text position {target.index - 1} (predicts '{target.label}')"
    if config.global_pool == "avg":
        w[pre:n_img] = 1.0 / config.num_patches
        return w, "the mean of the patch rows (the head averages the patch tokens)"
    w[:pre] = 1.0 / pre
    return w, " and ".join(config.prefix_names) + (" (mean)" if pre > 1 else "")


def read_row(matrix: torch.Tensor, config, target: Target) -> tuple[torch.Tensor, torch.Tensor
                                                                       | None, str]:
    """(patches [N], prefix [pre] or None, the row's name) from an [S, S] token-to-token map
    (row: query, column: key). Keys after the image (earlier text) are left out."""
    w, name = query_weights(config, target)
    row = w @ matrix.to(torch.float64)  # [S]: the chosen query rows' mix
    pre, n_img = config.num_prefix_tokens, config.num_image_tokens
    prefix = row[:pre].float() if pre else None
    return row[pre:n_img].float(), prefix, name


def per_patch(pixel_map: torch.Tensor, patch_size: int) -> torch.Tensor:
    """[1, C, H, W] (or [C, H, W]) values -> [N]: each patch's signed sum over its C·P² values,
    row-major over the grid."""
    x = pixel_map.reshape(-1, *pixel_map.shape[-2:]).sum(0)  # [H, W]
    g = x.shape[-1] // patch_size
    return x.reshape(g, patch_size, g, patch_size).sum((1, 3)).reshape(-1)
