"""What the attention stage's steps share: its view (token labels, the mask's visible keys, the
per-head summaries) and its wording thresholds."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ui.drawing import figures
from ui.lesson import deck
from ui.selection import session
from ui.serving import state
from ui.stages import choices
from vit_core.explain.attention import allowed_from_mask

LOCAL = 0.5  # a head "looks locally" when its mean distance is under this share of an even spread
NEAR_EVEN = 0.75  # ... and "looks everywhere" when even its nearest is at least this share
EVEN_ENTROPY = 0.9  # "almost evenly": the lowest entropy is at least this share of the maximum
STRONGEST = 5  # the rollout sentence sums the strongest patches, this many
VIEWS = choices.VIEWS  # what the matrix shows


@dataclass(frozen=True)
class Ctx:
    """The stage's view and what its steps share: token labels, the mask's visible keys and the
    per-head summaries (computed once per trace)."""

    v: deck.View
    labels: list[str]
    allowed: torch.Tensor  # [S, S] bool
    summary: dict

    def __getattr__(self, name):  # the view's fields (inp, tr, c, layer, …)
        return getattr(self.v, name)


def view() -> Ctx:
    v = deck.load(text_free_note=True)
    summary = state.attention_summary(v.inp, v.name, session.chosen_mask())
    return Ctx(v, figures.token_labels(v.c), allowed_from_mask(v.tr.mask), summary)


def pattern(x: Ctx) -> torch.Tensor:
    """The chosen layer's and head's attention pattern [S, S]."""
    return x.tr[f"blocks.{x.layer}.attn.pattern"][x.head]
