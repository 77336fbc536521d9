"""What the tour's stages ask for beyond the image's trace: what a session shows (`Ask`), the
models the Masks stage compares (the live class reads them too), and the reads several stages
share (a step's `reads` are such functions; ui/ahead.plan calls them for the read-ahead, computed
before a student gets there). The stages read this module, so it imports none of them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ui.selection import inputs
from ui.serving import state
from vit_core import bundled_models

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


# ---------------------------------------------------------------- reads several stages share
# A read (ui/deck.Read): what a session shows -> the calls into ui/state's caches that compute
# what a step reads beyond the trace. A stage's own reads live with it (ui/stages/masks/reads.py…).
def weight_views(a: Ask) -> list[Callable]:
    """The weights' pictures (patch filters, position maps)."""
    return [lambda: state.weight_views(a.name)]


def attention_summary(a: Ask) -> list[Callable]:
    """Every block's attention measures (distance, entropy, CLS rows)."""
    return [lambda: state.attention_summary(a.inp, a.name, a.mask)]


def layer_block(a: Ask) -> list[Callable]:
    """The internals of the session's layer."""
    return [] if a.layer is None else [lambda: state.layer_block(a.inp, a.name, a.mask, a.layer)]


def caption_pass(a: Ask) -> list[Callable]:
    """A captioner's pass over its own caption."""
    if not state.get_model(a.name).config.has_text:
        return []
    return [lambda: state.caption_pass(a.inp, a.name, a.mask)]


def generation(a: Ask) -> list[Callable]:
    """A captioner's caption, written word by word."""
    if not state.get_model(a.name).config.has_text:
        return []
    return [lambda: state.generation(a.inp, a.name, mask=a.mask)]


def patch_pca(a: Ask) -> list[Callable]:
    """The patch tokens' principal components."""
    return [lambda: state.patch_pca(a.inp, a.name, a.mask)]
