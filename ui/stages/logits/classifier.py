"""A classifier's steps: the answer at a temperature, the raw logits, the logit lens."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st
import torch

from ui.drawing import describe, figures
from ui.drawing.equation import latex
from ui.drawing.numbers import pct
from ui.lesson import deck
from ui.lesson.deck import Number, Question
from ui.selection import models
from ui.stages.logits.base import (
    LOGIT_BARS,
    TEMPERATURE,
    TEMPERATURE_Q,
    TOP_BARS,
    Ctx,
    _temperature,
    _temperature_slider,
)
from ui.stages.logits.keys import LOGITS_LENS, LOGITS_RAW, LOGITS_TOPK
from ui.stages.logits.words import (
    _where,
    blind_words,
    distribution_words,
    lens_words,
    readout_path,
)
from vit_core.explain.logit_facts import lens_at, logit_order, tempered, top_of
from vit_core.explain.readout import (
    image_blind,
    lens_summary,
)


@dataclass(frozen=True)
class Answer:
    T: float
    logits: torch.Tensor  # [K]
    probs: np.ndarray  # [K] softmax(logits / T)
    best: int
    blind: bool  # the head cannot see the image under this mask (readout.image_blind)
    outside: bool  # a photo on a model that knows only its scenes (models.honesty_note)


def _answer_facts(x: Ctx) -> Answer:
    T = _temperature()
    logits = x.tr.logits
    probs = tempered(logits, T)
    return Answer(T, logits, probs, top_of(probs)[0], image_blind(x.c, x.tr.mask),
                  models.honesty_note(x.model, x.inp.label) is not None)


def _equation(c) -> str:
    K = c.num_classes
    if c.global_pool == "avg":
        pooled = (rf"\mathrm{{LN}}_\mathrm{{fc}}\!\left(\tfrac1{{{c.num_patches}}}\sum_p "
                  rf"z_L^p\right)" if c.fc_norm else rf"\tfrac1{{{c.num_patches}}}\sum_p z_L^p")
        eq = rf"\hat y = \mathrm{{softmax}}\!\left(\frac{{{pooled}\,W_c + b_c}}{{T}}\right)"
    elif c.dist_token:
        eq = (r"\hat y = \mathrm{softmax}\!\left(\frac{\tfrac12\left("
              r"\mathrm{LN}(z_L^\mathrm{CLS})W_c + b_c + "
              r"\mathrm{LN}(z_L^\mathrm{DIST})W_d + b_d\right)}{T}\right)")
    else:
        eq = (r"\hat y = \mathrm{softmax}\!\left(\frac{\mathrm{LN}(z_L^\mathrm{CLS})\,"
              r"W_c + b_c}{T}\right)")
    return eq + rf",\quad W_c\in\mathbb{{R}}^{{{c.embed_dim}\times {K}}}"


def _answer_figure(x: Ctx, f: Answer) -> None:
    K = x.c.num_classes
    # on a slide the formula and the slider share a row, leaving the height to the bars
    left, right = (st.columns([3, 2], vertical_alignment="center") if x.presenting else
                   (st.container(),) * 2)
    latex(_equation(x.c), left)
    with right:
        _temperature_slider()
    k = min(TOP_BARS, K)
    deck.chart(figures.top_k_bars(f.probs, x.names, k=k,
                                  title=f"top {k} of {K} classes at T = {f.T:g}",
                                  x_title="probability", y_title="class"), key=LOGITS_TOPK)


def _answer_words(x: Ctx, f: Answer) -> str:
    p = float(f.probs[f.best])
    return (f"Prediction{x.masked}: **{x.names[f.best]}** with {pct(p, 1)} at T = {f.T:g} "
            f"(logit {float(f.logits[f.best]):.2f}). "
            + distribution_words(f.probs, x.names, f.T, image_blind=f.blind, outside=f.outside))


def _answer_describe(x: Ctx, f: Answer) -> str:
    K = x.c.num_classes
    order = np.argsort(-f.probs)[:min(TOP_BARS, K)]  # the bars drawn
    return describe.bars(f"the top {len(order)} of {K} classes' probabilities at T = {f.T:g}",
                          [x.names[i] for i in order], f.probs[order], lambda p: pct(p, 1),
                          axis="one row per class, across: probability from 0 to 100%")


def _answer_notes(x: Ctx, f: Answer) -> str | None:
    return blind_words(x.c, x.tr.mask_kind) if f.blind else None


def _answer_question(x: Ctx, f: Answer) -> Question:
    """Read off the bars at the slider's T: how sure the top class looks, and that it stays."""
    k, p = top_of(f.probs)
    best = x.names[k]
    return Question(TEMPERATURE_Q,
                    f"How sure the probabilities look: at T = {f.T:g} the chart gives the top "
                    f"class, {best}, {pct(p, 1)}; a lower T makes it surer, "
                    f"a higher one flatter (move the slider). Never the order: dividing every "
                    f"logit by the same T > 0 keeps every inequality, so {best} stays on top.",
                    TEMPERATURE)


# ---------------------------------------------------------------- classifier: raw logits
def _raw_facts(x: Ctx) -> np.ndarray:
    return x.tr.logits.double().numpy()


def _raw_figure(x: Ctx, z: np.ndarray) -> None:
    deck.chart(figures.logit_bars(z, x.names, k=LOGIT_BARS), key=LOGITS_RAW)


def _raw_words(x: Ctx, z: np.ndarray) -> str:
    names, K, o = x.names, len(z), logit_order(z)
    text = f"The head gives {K} raw scores (logits), from {o.lo:.2f} to {o.hi:.2f}"
    if o.second is not None:
        a, b = f"{z[o.first]:.2f}", f"{z[o.second]:.2f}"  # the gap between the printed values
        text += (f"; {names[o.first]} is highest at {a}, {float(a) - float(b):.2f} above "
                 f"{names[o.second]} ({b})")
    return text + (". Softmax reads only their differences: adding one number to every logit "
                   "would change no probability.")


def _raw_describe(x: Ctx, z: np.ndarray) -> str:
    order = np.argsort(-z)[:min(LOGIT_BARS, len(z))]  # figures.logit_bars' bars
    shown = f"all {len(z)} classes" if len(z) <= LOGIT_BARS else f"the {len(order)} largest"
    return describe.bars(f"the raw logits ({shown})", [x.names[i] for i in order], z[order],
                          describe.two, axis="one row per class, across: the logit; a "
                          "positive bar is blue and points right, a negative one red and left")


def _raw_notes(x: Ctx, z: np.ndarray) -> str:
    return ("A logit is the head's score before the softmax: blue bars are positive, red "
            "negative. Dividing every logit by the same temperature T keeps their order, so "
            "the class with the largest logit wins at every temperature.")


# ---------------------------------------------------------------- classifier: the logit lens
@dataclass(frozen=True)
class Lens:
    T: float
    probs: np.ndarray  # [L + 1, K] softmax(lens logits / T); row 0 after the embedding
    drawn: list[int]  # the classes the chart draws
    left_out: list[int]  # classes on top at some depth that it does not draw
    trained: bool = True  # False: random weights, nothing learned to form an answer


def _lens_facts(x: Ctx) -> Lens:
    T = _temperature()
    lens = lens_at(x.model, x.tr, T)
    return Lens(T, lens.probs, lens.drawn, lens.left_out, x.model.info.trained)


def _lens_figure(x: Ctx, f: Lens) -> None:
    c, names = x.c, x.names
    deck.chart(figures.line_chart(
        ["embed"] + [f"block {i}" for i in range(c.depth)],
        {names[k]: f.probs[:, k] for k in f.drawn},
        f"P(class) if the network stopped after each block (T = {f.T:g})", "read out after",
        "probability"), key=LOGITS_LENS)


def _lens_words(x: Ctx, f: Lens) -> str:
    return lens_words(f.probs, x.names)


def _lens_describe(x: Ctx, f: Lens) -> str:
    xs = ["the embedding"] + [f"block {i}" for i in range(x.c.depth)]
    return describe.curves("read out after the embedding and after each block",
                            f"the probability of a class at T = {f.T:g}", xs,
                            {x.names[k]: f.probs[:, k] for k in f.drawn}, lambda p: pct(p, 0))


def _lens_notes(x: Ctx, f: Lens) -> str:
    c, names = x.c, x.names
    s = lens_summary(f.probs)
    leaders = s["first_on_top"]
    where = _where(s["rows"])
    n_final = min(3, c.num_classes)  # explain.readout.lens_lines draws the top 3 at the end
    return (f"Each point sends the residual stream after that block down the same path as the "
            f"answer ({readout_path(c)}), as if the network stopped there; the last point is "
            f"exactly the model's prediction at the temperature set with the bars (T = {f.T:g}). "
            f"Lines: the "
            + (f"{n_final} classes" if n_final > 1 else "class")
            + " the model ranks highest at the end, and "
            + ("every class that is on top at some depth." if not f.left_out else
               f"{len(leaders) - len(f.left_out)} of the {len(leaders)} classes that are on "
               f"top at some depth; to keep the chart readable, {len(f.left_out)} more that "
               f"lead at some depth are not drawn: "
               + ", ".join(f"{names[k]} (on top after {where[leaders[k]]})" for k in f.left_out)
               + "."))


def _lens_question(x: Ctx, f: Lens) -> Question:
    s = lens_summary(f.probs)
    best, r, n = s["final"], s["lead"], s["rows"]
    where = ("already in the embeddings, before any block" if r == 0 else
             f"after block {r - 1}" if r < n - 1 else
             f"only after the last block ({x.c.depth - 1})")
    return Question("At which block does the answer appear?",
                    f"Read through the logit lens, {x.names[best]} is on top {where}, and stays "
                    f"there to the end ({n - r} of {n} read-outs, counting the embeddings)."
                    + ("" if f.trained else " But this model has random weights: nothing was "
                       "learned, so no answer forms; this only says where a random class came "
                       "out on top."),
                    # read-out r is the one after block r - 1 (exact: read off the x axis)
                    Number(r - 1, 0, "", "Block number (−1: already in the embeddings)"))
