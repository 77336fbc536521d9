"""Step 5 of the Masks stage: a classifier put under a causal mask."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ui.drawing import describe, figures
from ui.drawing.numbers import pct
from ui.lesson import deck
from ui.lesson.deck import Choice, Question
from ui.selection import inputs
from ui.selection import models as picker
from ui.serving import state, tour
from ui.stages.masks.keys import CLF_CAUSAL
from ui.stages.masks.view import Ctx, side_by_side
from vit_core.explain.experiment_facts import probabilities, top_answer
from vit_core.explain.extremes import ranked
from vit_core.explain.mask_facts import largest_gap

TOP_BARS = 5  # each bar chart shows this many classes (figures.top_k_bars' k)
SAME_LOGITS = 1e-4  # causal logits on two pictures closer than this are "the same"
CLS_KNOWS = (  # what CLS knows under a causal mask; right: "nothing" when the model has a CLS
    "Everything: it still sees every patch",
    "Only the first patch of the image",
    "Nothing about the image: it sees only itself",
    "The top half of the image")


@dataclass(frozen=True)
class Classifier:
    names: list[str]
    full: np.ndarray  # its probabilities with full attention
    causal: np.ndarray  # ... under a causal mask
    gap: float  # the largest difference of its causal logits on another picture
    other_seed: int  # that picture (a sample scene)
    answer: tuple[int, float]  # the class it answers under the causal mask, and its probability


def classifier_facts(x: Ctx) -> Classifier:
    k = state.get_model(x.clf).config
    names = list(k.class_names) or [f"class {i}" for i in range(k.num_classes)]
    causal = state.logits(x.inp, x.clf, mask="causal")
    other_seed, other = tour.other_sample(x.inp)
    gap = largest_gap(state.logits(other, x.clf, mask="causal"), causal)
    p = probabilities(causal)
    return Classifier(names, probabilities(state.logits(x.inp, x.clf, mask="full")).numpy(),
                      p.numpy(), gap, other_seed, top_answer(p))


def _classifier_titles(x: Ctx) -> list[str]:
    label = picker.plain_label(x.clf)
    as_trained = " (as trained)" if state.get_model(x.clf).info.source == "bundled" else ""
    return [f"{label}, full attention{as_trained}", f"{label}, causal mask"]  # a file: unknown


def classifier_figure(x: Ctx, f: Classifier) -> None:
    bars = [figures.top_k_bars(p, f.names, k=TOP_BARS, x_title="probability")
            for p in (f.full, f.causal)]
    deck.chart(side_by_side(bars, _classifier_titles(x), f"{picker.plain_label(x.clf)}: the same "
                            "weights, with and without a causal mask", 330), key=CLF_CAUSAL)


def classifier_alt(x: Ctx, f: Classifier) -> str:
    said = [describe.bars(f"{title}, the {min(TOP_BARS, len(f.names))} most likely classes, the "
                          f"most likely first", [f.names[i] for i in ranked(p, TOP_BARS)],
                          [float(p[i]) for i in ranked(p, TOP_BARS)], fmt=lambda v: pct(v, 1))
            for title, p in zip(_classifier_titles(x), (f.full, f.causal), strict=True)]
    return "Two bar charts side by side. Left: " + said[0] + " Right: " + said[1]


def classifier_words(x: Ctx, f: Classifier) -> str:
    k = state.get_model(x.clf).config
    lead = (f"{picker.plain_label(x.name)} has no class head, so this part uses {x.clf}. "
            if x.clf != x.name else "")
    win = f"**{f.names[f.answer[0]]}** ({pct(f.answer[1], 1)})"
    compare = (f"On another picture (“{inputs.sample_caption(f.other_seed)}”) its causal logits "
               "are " + (f"the same (largest difference {f.gap:.1g})" if f.gap < SAME_LOGITS else
                         f"different (by up to {f.gap:.2f})") + ".")
    if k.global_pool == "avg":
        first = ("CLS (token 0) sees only itself, but the class head does not read CLS: it reads "
                 "the mean of the patch tokens" if k.class_token else
                 "This model has no CLS token: patch 0 sees only itself, and the class head reads "
                 "the mean of the patch tokens")
        return (f"{lead}{first}. The last patch still sees every token, so the prediction still "
                f"depends on the image: {win} with the causal mask. {compare}")
    if k.dist_token:
        return (f"{lead}CLS is token 0 and DIST token 1, so under a causal mask CLS sees only "
                f"itself and DIST only CLS and itself, in every layer. The class heads read only "
                f"these two, so the prediction no longer depends on the image: it becomes {win} "
                f"for any picture. {compare}")
    return (f"{lead}CLS is token 0, so under a causal mask it can attend only to itself in every "
            f"layer: its final vector, the only one the class head reads, no longer depends on "
            f"the image. The prediction becomes {win} for any picture. {compare}")


def classifier_notes(x: Ctx, f: Classifier) -> str:
    return ("Left: the classifier as it runs normally; right: the same weights with a causal mask "
            "added to every block's scores. The mask changes no weight, only what each token may "
            "read.")


def classifier_question(x: Ctx, _) -> Question:
    """What CLS knows under a causal mask, for the classifier this step shows."""
    c = state.get_model(x.clf).config
    n_img = c.num_image_tokens
    if c.num_prefix_tokens:
        names = " and ".join(c.prefix_names)
        cls = ("Nothing about the image. CLS is token 0, so under a causal mask it sees only "
               "itself in every block" + (", and DIST (token 1) only CLS and itself" if
                                           c.dist_token else "")
               + (f": the final {names} vectors are the same for every picture" if c.dist_token
                  else ": CLS's final vector is the same for every picture")
               + (" and so is the prediction." if c.num_classes and c.global_pool != "avg"
                  else "."))
    else:
        cls = (f"This model has no CLS token. Under a causal mask its first patch sees only "
               f"itself and its last patch all {n_img} image tokens.")
    if x.clf != x.name:  # the step shows another model than the one chosen
        cls = f"{x.clf}, the classifier shown here: {cls[0].lower()}{cls[1:]}"
    return Question("What does CLS know under a causal mask?", cls,
                    Choice(CLS_KNOWS, 2 if c.num_prefix_tokens else None))
