"""What the tour's stages ask for beyond the image's trace: the models the Masks stage compares,
and what every step reads (`READS`, named by the steps' declarations; ui/ahead.plan orders them
for the read-ahead, computed before a student gets there). The stages read this module, so it
imports none of them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from vit_core import bundled_models
from vit_core.explain.generation import tokenizer_for

from . import inputs, state

BUNDLED = ("shapes-captioner-prefix", "shapes-captioner-causal")
MASK_CAPTION = "a red ball on the grass"  # the Masks page's caption until the student types one
WINDOW_SIZE = 2  # the Masks page's window side M (patches) until the student picks another
WINDOW_CLASSIFIER = "shapes-classifier"  # the model whose top-1 under windows the page measures


def masks_page_models(name: str, model) -> tuple[list[str], list[tuple[str, str]], str]:
    """(the captioners, the (captioner, mask) pairs shown live, the classifier put under a causal
    mask) for the chosen model `name`."""
    trained = [m for m in BUNDLED if m in bundled_models()]
    if trained:
        captioners = trained
    elif model.config.has_text:
        captioners = [name]
    else:
        captioners = ["vit-b16-text"]
    if len(captioners) > 1:
        runs = [(m, state.get_model(m).config.default_mask) for m in captioners]
    else:
        runs = [(captioners[0], "prefix"), (captioners[0], "causal")]
    fallback = "shapes-classifier" if "shapes-classifier" in bundled_models() else "vit-b16"
    return captioners, runs, name if model.config.num_classes else fallback


def other_sample(inp: inputs.Input) -> tuple[int, inputs.Input]:
    """The sample scene the Masks page compares the classifier's causal logits on: the first
    that is not this image. (seed, input)."""
    seed = next(sd for sd in inputs.sample_seeds() if inputs.sample_bytes(sd) != inp.data)
    raw = inputs.sample_bytes(seed)
    return seed, inputs.make_input(f"sample: {inputs.sample_caption(seed)}", raw)


@dataclass(frozen=True)
class Ask:
    """What a session shows: its image, model and mask, its layer, the Masks stage's caption."""

    inp: inputs.Input
    name: str
    mask: str | None
    layer: int | None
    caption: str
    patch: int | None = None


def _masks_runs(a: Ask) -> list[Callable]:
    caps, runs, _ = masks_page_models(a.name, state.get_model(a.name))
    cap = state.get_model(caps[0])
    ids = tokenizer_for(cap).encode(a.caption, max_len=cap.config.max_text_len).ids
    items = []
    for m, k in runs:
        items += [lambda m=m, k=k: state.trace(a.inp, m, mask=k, text_ids=ids),
                  lambda m=m, k=k: state.greedy_caption(a.inp, m, k)]
    return items


def _masks_scores(a: Ask) -> list[Callable]:
    _, runs, _ = masks_page_models(a.name, state.get_model(a.name))
    return [lambda m=m, k=k: state.scores(a.inp, m, a.caption, mask=k) for m, k in runs]


def _causal_classifier(a: Ask) -> list[Callable]:
    clf = masks_page_models(a.name, state.get_model(a.name))[2]
    return [lambda: state.logits(a.inp, clf, mask="full"),
            lambda: state.logits(a.inp, clf, mask="causal"),
            lambda: state.logits(other_sample(a.inp)[1], clf, mask="causal")]


def _window_top1(a: Ask) -> list[Callable]:
    """The Masks stage's windows: the bundled classifier's top-1 under them (its default size)."""
    if a.name != WINDOW_CLASSIFIER or a.name not in bundled_models():
        return []
    return [lambda: state.window_top1(a.name, WINDOW_SIZE)]


def _size_views(a: Ask) -> list[Callable]:
    """The Embeddings stage's other size: both sizes' position maps and predictions."""
    items = []
    for name in dict.fromkeys(state.size_pair(a.name)):
        c = state.get_model(name).config
        items.append(lambda name=name: state.weight_views(name))
        if c.num_classes:
            items.append(lambda name=name: state.logits(a.inp, name, mask=a.mask))
        elif c.has_text:
            items.append(lambda name=name: state.greedy_caption(a.inp, name, a.mask))
    return items


def _experiment(a: Ask) -> list[Callable]:
    """The Experiments stage's default change: head 0 of the session's layer switched off."""
    c = state.get_model(a.name).config
    if not c.num_classes or c.has_text or a.layer is None:
        return []
    head = ((min(a.layer, c.depth - 1), 0),)
    return [lambda: state.experiment(a.inp, a.name, "heads", head, None, a.mask)]


def _image_only(a: Ask, kind: str, arg: tuple = ()) -> list[Callable]:
    """One Experiments run with the stage's default arguments, on a model fed no text (a
    captioner's runs are fed its caption, known only once it is written: left to the page)."""
    if state.get_model(a.name).config.has_text:
        return []
    return [lambda: state.experiment(a.inp, a.name, kind, arg, None, a.mask)]


# A step's `reads` (ui/deck.Step) -> the calls into ui/state's caches that compute it.
READS: dict[str, Callable[[Ask], list[Callable]]] = {
    "weight_views": lambda a: [lambda: state.weight_views(a.name)],
    "attention_summary": lambda a: [lambda: state.attention_summary(a.inp, a.name, a.mask)],
    "layer_block": lambda a: ([] if a.layer is None else
                              [lambda: state.layer_block(a.inp, a.name, a.mask, a.layer)]),
    "masks_runs": _masks_runs,
    "masks_scores": _masks_scores,
    "causal_classifier": _causal_classifier,
    "window_top1": _window_top1,
    "sublayer_norms": lambda a: [lambda: state.sublayer_norms(a.inp, a.name, a.mask)],
    "caption_pass": lambda a: ([lambda: state.caption_pass(a.inp, a.name, a.mask)]
                               if state.get_model(a.name).config.has_text else []),
    "generation": lambda a: ([lambda: state.generation(a.inp, a.name, mask=a.mask)]
                             if state.get_model(a.name).config.has_text else []),
    "patch_pca": lambda a: [lambda: state.patch_pca(a.inp, a.name, a.mask)],
    "unordered_runs": lambda a: (_image_only(a, "positions")
                                 + _image_only(a, "shuffle_no_positions", (0,))),
    "scores": lambda a: [],  # the Logits stage scores the caption a student types: not known yet
    "experiment": _experiment,
    "size_views": _size_views,
}
