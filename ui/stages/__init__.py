"""The stages, in the tour's order: one module (or package) each, declaring `STAGE` (a
ui.lesson.deck.Stage): its slug, title, menu name and icon, its widget keys, and its steps, in
order,
each with what it reads.

`STAGES` is the one list: adding a stage is its module and one line here. Its place numbers it
("4 · Attention heads"); app.py builds the pages (`?page=<slug>`) from it; whoever needs the
stage of a slug (the presenter header, the live class, the read-ahead, the tests) reads it
through `get`. Every stage is imported here, so the import graph shows who reaches them (stages
reach the deck, never the other way).
"""

from __future__ import annotations

from dataclasses import replace

from ui.stages import (
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
    why,
)


def numbered(*declared):
    """The stages with their places in the tour: the first (the overview) 0, then 1, 2, …"""
    return tuple(replace(stage, number=i) for i, stage in enumerate(declared))


STAGES = numbered(
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
    why.STAGE,
)
BY_SLUG = {stage.slug: stage for stage in STAGES}


def get(slug: str):
    """The declared Stage of `slug` (KeyError for an unknown slug)."""
    return BY_SLUG[slug]


def titles(slug: str, config) -> list[str]:
    """The titles of the steps stage `slug` shows for a model with this config."""
    return [s.title_for(config) for s in get(slug).steps_for(config)]


def walk(lesson: tuple[str, ...], here: str | None = None) -> list[str]:
    """The stages a live class's Next and Previous go through: the lesson's, in the tour's
    order, and the stage the teacher is on (one opened from the menu); the whole tour when the
    lesson names none."""
    return [s for s in BY_SLUG if not lesson or s in lesson or s == here]
