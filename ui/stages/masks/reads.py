"""What the Masks stage's steps read beyond the trace (ui/deck.Read: ui/ahead.plan calls them for
the read-ahead): the captioners' passes and captions under each mask, their scores of the
caption, the classifier under a causal mask, its top-1 under windows."""

from __future__ import annotations

from collections.abc import Callable

from ui.serving import state, tour
from ui.serving.tour import Ask
from vit_core import bundled_models
from vit_core.explain.generation import tokenizer_for


def masks_runs(a: Ask) -> list[Callable]:
    caps, runs, _ = tour.masks_page_models(a.name, state.get_model(a.name))
    cap = state.get_model(caps[0])
    ids = tokenizer_for(cap).encode(a.caption, max_len=cap.config.max_text_len).ids
    items = []
    for m, k in runs:
        items += [lambda m=m, k=k: state.trace(a.inp, m, mask=k, text_ids=ids),
                  lambda m=m, k=k: state.greedy_caption(a.inp, m, k)]
    return items


def masks_scores(a: Ask) -> list[Callable]:
    _, runs, _ = tour.masks_page_models(a.name, state.get_model(a.name))
    return [lambda m=m, k=k: state.scores(a.inp, m, a.caption, mask=k) for m, k in runs]


def causal_classifier(a: Ask) -> list[Callable]:
    clf = tour.masks_page_models(a.name, state.get_model(a.name))[2]
    return [lambda: state.logits(a.inp, clf, mask="full"),
            lambda: state.logits(a.inp, clf, mask="causal"),
            lambda: state.logits(tour.other_sample(a.inp)[1], clf, mask="causal")]


def window_top1(a: Ask) -> list[Callable]:
    """The bundled classifier's top-1 under windows (the stage's default size)."""
    if a.name != tour.WINDOW_CLASSIFIER or a.name not in bundled_models():
        return []
    return [lambda: state.window_top1(a.name, tour.WINDOW_SIZE)]
