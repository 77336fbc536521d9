"""The stages, in the tour's order: one module (or package) each, declaring `STAGE` (a
ui.deck.Stage): its steps, in order.

`STAGES` is the one list; whoever needs the stage of a slug (the pages, the presenter header,
the live class, the read-ahead, the tests) reads it through `get`. Every stage is imported here,
so the import graph shows who reaches them (stages reach the deck, never the other way).
"""

from __future__ import annotations

from . import (
    attention,
    embeddings,
    experiments,
    input_patches,
    ln_qkv,
    logits,
    mae,
    masks,
    mlp,
    overview,
    segmentation,
    shape_trace,
    training,
)

STAGES = (
    overview.STAGE,
    input_patches.STAGE,
    embeddings.STAGE,
    ln_qkv.STAGE,
    attention.STAGE,
    masks.STAGE,
    mlp.STAGE,
    logits.STAGE,
    shape_trace.STAGE,
    segmentation.STAGE,
    experiments.STAGE,
    training.STAGE,
    mae.STAGE,
)
BY_SLUG = {stage.slug: stage for stage in STAGES}


def get(slug: str):
    """The declared Stage of `slug` (KeyError for an unknown slug)."""
    return BY_SLUG[slug]


def titles(slug: str, config) -> list[str]:
    """The titles of the steps stage `slug` shows for a model with this config."""
    return [s.title_for(config) for s in get(slug).steps_for(config)]
