"""A caption's word traced to patches: grey the patches a map ranks highest for one word, write
the caption again, and compare it with the caption written before, place by place.

    words = targets.word_targets(model, pixels)             # one Target per word
    a = attribution.attribute(model, pixels, "gradcam", words[2])
    g = grey_top(model, pixels, words[2], a.patches, k=5)
    g.after, g.changed, g.kept, g.p_before, g.p_after

The greyed image is `baselines.replace_patches` with the grey baseline (the same "taken away"
as the deletion curves and occlusion). The caption is written again greedily from the greyed
image alone (`targets.word_targets`), so every word may change. The word's probability before
and after is read as it was generated: fed [SOS] and the caption's words before it (the caption
written before greying), P(word | image, those words) on either image.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .baselines import baseline, replace_patches
from .targets import Target, probability, word_targets


@dataclass(frozen=True)
class Greyed:
    """What greying a word's top-k patches did to the caption."""

    place: int  # the word's place in the caption (1 = the first word)
    label: str  # the word
    chosen: tuple[int, ...]  # the patches greyed, the map's highest first
    before: tuple[str, ...]  # the caption written from the image (no [EOS])
    after: tuple[str, ...]  # the caption written from the greyed image (no [EOS])
    changed: tuple[bool, ...]  # per word of `after`: not the word `before` has at that place
    p_before: float  # P(word | image, the caption's words before it)
    p_after: float  # the same on the greyed image, fed the same words

    @property
    def missing(self) -> int:
        """How many places of `before` the shorter `after` no longer has."""
        return max(0, len(self.before) - len(self.after))

    @property
    def n_changed(self) -> int:
        """Places (of the longer caption) where the two captions differ."""
        return sum(self.changed) + self.missing

    @property
    def places(self) -> int:
        """The longer caption's length: how many places were compared."""
        return max(len(self.before), len(self.after))

    @property
    def kept(self) -> bool:
        """Does the caption written from the greyed image still have the word at its place?"""
        i = self.place - 1
        return i < len(self.after) and self.after[i] == self.label

    @property
    def elsewhere(self) -> int | None:
        """Where the word stands in `after` when not at its place (1 = first), else None."""
        if self.kept or self.label not in self.after:
            return None
        return self.after.index(self.label) + 1


def top_patches(values: torch.Tensor, k: int) -> tuple[int, ...]:
    """The k patches with the highest values ([N], one per patch), highest first; ties go to
    the lower index. k is clipped to 0..N."""
    v = values.detach().flatten().double()
    k = max(0, min(int(k), v.numel()))
    order = torch.argsort(-v, stable=True)
    return tuple(int(i) for i in order[:k])


def changed_places(before: tuple[str, ...], after: tuple[str, ...]) -> tuple[bool, ...]:
    """Per word of `after`: True where `before` has another word, or none, at that place."""
    return tuple(i >= len(before) or before[i] != w for i, w in enumerate(after))


def greyed_image(pixels: torch.Tensor, config, chosen, kind: str = "grey") -> torch.Tensor:
    """[1, C, H, W]: `pixels` with the `chosen` patches replaced by the `kind` baseline."""
    mask = torch.zeros(1, config.num_patches, dtype=torch.bool)
    mask[0, list(chosen)] = True
    return replace_patches(pixels, baseline(pixels, config, kind), mask, config.patch_size)


def grey_top(model, pixels: torch.Tensor, target: Target, values: torch.Tensor, k: int,
             mask=None, kind: str = "grey") -> Greyed:
    """Grey the k patches `values` ([N], a map of `target`) ranks highest and write the caption
    again from that image.

    Args:
        model: a captioner (a text stream).
        pixels: one preprocessed image [1, C, H, W] (never modified).
        target: a word of the caption of `pixels` (targets.word_targets).
        values: the map, one value per patch.
        k: how many patches to grey.
        mask: the attention mask both captions are written with (None: the model's own).
        kind: the baseline the patches become (baselines.BASELINES).
    """
    if not target.is_word:
        raise ValueError("grey_top explains a caption word; this target is a class.")
    chosen = top_patches(values, k)
    greyed = greyed_image(pixels, model.config, chosen, kind)
    before = tuple(t.label for t in word_targets(model, pixels, ids=target.ids))
    after = tuple(t.label for t in word_targets(model, greyed, mask=mask))
    with torch.no_grad():
        p0 = float(probability(model, pixels, target, mask=mask)[0])
        p1 = float(probability(model, greyed, target, mask=mask)[0])
    return Greyed(target.index, target.label, chosen, before, after,
                  changed_places(before, after), p0, p1)
