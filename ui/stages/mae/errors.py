"""Steps 3 to 5: the reconstruction, the error per patch, and the loss on hidden patches."""

from __future__ import annotations

import streamlit as st

from ui.drawing import describe
from ui.drawing.equation import latex
from ui.drawing.numbers import pct
from ui.lesson import deck
from ui.lesson.deck import Choice, Number, Question
from ui.stages.mae.base import (
    CLEARLY,
    LOSS_TEX,
    Ctx,
    _no_mae,
    flat_guess,
)
from ui.stages.mae.keys import MAE_ERROR, MAE_IMAGES, MAE_LOSS
from ui.stages.mae.pictures import (
    _blank,
    _image,
    _images_row,
    error_map,
    loss_bars,
)
from vit_core.explain.extremes import extremes
from vit_core.explain.mae_facts import MAENumbers as Numbers
from vit_core.explain.mae_facts import hardest_of


# ---------------------------------------------------------------- step 3: the reconstruction
def _reconstruction_figure(x: Ctx, f: Numbers | None) -> None:
    if _no_mae(x) or f is None:
        return
    c = x.mae.encoder.config
    images = [x.crop, _blank(x.crop, f.hidden, f.P), _image(x.run.pasted[0], c)]
    titles = ["the image", f"the encoder's input ({f.n_visible} patches)",
              f"reconstruction ({f.n_hidden} patches painted)"]
    deck.chart(_images_row(images, titles, f.P, f.hidden,
                           "Original, masked input and reconstruction (hidden patches framed)"),
               key=MAE_IMAGES)


def _reconstruction_describe(x: Ctx, f: Numbers | None) -> str | None:
    if f is None:
        return None
    return (f"Three pictures side by side, each cut into its {f.grid}×{f.grid} patch grid with "
            f"the {f.n_hidden} hidden patches framed: the image; the encoder's input, the hidden "
            f"patches grey and {f.n_visible} visible; the reconstruction, the {f.n_hidden} "
            f"hidden patches painted by the decoder and the visible ones pasted back.")


def _reconstruction_words(x: Ctx, f: Numbers | None) -> str | None:
    if f is None:
        return None
    if not f.hidden:
        return "No patch is hidden, so there is nothing to reconstruct: hide some patches."
    units = ("each patch normalised to mean 0 and variance 1" if f.norm_pix else
             f"the input's normalised pixel values, here from {f.lo:.2f} to {f.hi:.2f}")
    if f.flat_times >= CLEARLY:
        better = f"{f.flat_times:.1f}× lower than"
    elif f.below_flat > 0:
        better = f"only {pct(f.below_flat)} lower than"
    else:
        better = f"{pct(-f.below_flat)} higher than"
    said = (f"On the {f.n_hidden} hidden patches the decoder's mean squared error is "
            f"{f.loss:.4f} ({units}), {better} {flat_guess(f)}, {f.flat:.4f}.")
    if f.norm_pix:
        said += (" This MAE predicts each patch without its mean and spread (norm_pix_loss): to "
                 "draw it, each hidden patch's own mean and spread are taken from the original.")
    return said + " The visible patches are pasted back from the original."


def _reconstruction_question(x: Ctx, f: Numbers | None) -> Question | None:
    if f is None:
        return None
    return Question(
        "Before the decoder's blocks run, what does it know about a hidden patch?",
        f"Only where it is: all {f.n_hidden} hidden places start from the same [MASK] vector, "
        f"told apart by the decoder's position code alone; what ends up there comes from the "
        f"{f.n_visible} visible patches, through attention.",
        Choice(("Its colour, passed on by the encoder",
                "Only where it is: a shared [MASK] vector plus its position",
                "Its pixels, blurred", "Nothing: hidden patches are left out of the decoder too"),
               right=1))


# ---------------------------------------------------------------- step 4: error per patch
def _error_figure(x: Ctx, f: Numbers | None) -> None:
    if _no_mae(x) or f is None:
        return
    deck.chart(error_map(f), key=MAE_ERROR)


def _error_describe(x: Ctx, f: Numbers | None) -> str | None:
    if f is None:
        return None
    g = f.grid
    said = describe.patch_map("Each patch's error", "its squared error (viridis: dark low, "
                              "yellow high)", extremes(f.error), g, lambda v: f"{v:.4f}")
    means = (f" The {f.n_visible} visible patches are marked with a white ring; the title "
             f"gives the hidden patches' mean, {f.loss:.4f}, and the visible ones', "
             f"{f.visible_error:.4f}." if f.hidden else
             f" No patch is hidden; the mean over all of them is {f.all_error:.4f}.")
    return said + means


def _error_words(x: Ctx, f: Numbers | None) -> str | None:
    if f is None:
        return None
    if not f.hidden:
        return f"No patch is hidden; the decoder's error on the visible ones is {f.all_error:.4f}."
    worst, best = f.hardest, f.easiest
    return (f"The hardest hidden patch is patch {worst} (row {worst // f.grid}, column "
            f"{worst % f.grid}): error {f.error[worst]:.4f}, {f.hardest_times:.1f}× the "
            f"hidden mean of {f.loss:.4f}; the easiest, patch {best}, has {f.error[best]:.4f}. "
            f"The decoder predicts the {f.n_visible} visible patches too (mean error "
            f"{f.visible_error:.4f}), but the loss does not count them.")


def _error_question(x: Ctx, f: Numbers | None) -> Question | None:
    if f is None or not f.hidden:
        return None
    worst, times = hardest_of(f.error, f.hidden)  # read off the map the figure draws
    return Question(
        "Which hidden patch does the decoder get most wrong? Guess, then look at the map.",
        f"Patch {worst} (row {worst // f.grid}, column {worst % f.grid}), error "
        f"{f.error[worst]:.4f}: {times:.1f}× the hidden patches' mean.",
        Number(worst, unit="(patch number)"))


# ---------------------------------------------------------------- step 5: the loss
def _loss_figure(x: Ctx, f: Numbers | None) -> None:
    if _no_mae(x) or f is None:
        return
    if not f.hidden:
        st.info("No patch is hidden, so the loss has nothing to average: hide some patches.")
        return
    latex(LOSS_TEX + rf" = \frac{{1}}{{{f.n_hidden}}}\sum_{{i\in M}}"
          rf"\frac{{\lVert \hat x_i - x_i\rVert^2}}{{{f.P2C:,}}} = {f.loss:.4f}"
          .replace(",", "{,}"))
    deck.chart(loss_bars(f), key=MAE_LOSS)


def _loss_describe(x: Ctx, f: Numbers | None) -> str | None:
    if f is None or not f.hidden:
        return None
    return (describe.bars("the hidden patches' squared errors, largest first",
                           [f"patch {p}" for p in f.hidden], f.error[list(f.hidden)],
                           lambda v: f"{v:.4f}", axis="one column per hidden patch, up: "
                           "squared error")
            + f" A dashed line marks their mean, the loss L = {f.loss:.4f}.")


def _loss_words(x: Ctx, f: Numbers | None) -> str | None:
    if f is None or not f.hidden:
        return None
    target = ("patch i's pixels normalised to mean 0 and variance 1" if f.norm_pix else
              "patch i's pixels")
    return (f"As the notes write it, the loss is the reconstruction loss, L2 on pixels, on the "
            f"masked patches only: L = (1/|M|) Σ_(i∈M) ‖x̂_i − x_i‖² / (P²C), x_i being "
            f"{target}. Here |M| = {f.n_hidden} hidden patches of P²C = "
            f"{f.P}×{f.P}×{f.C} = {f.P2C:,} values each: L = {f.loss:.4f}. Counted "
            f"over all {f.N} patches it would be {f.all_error:.4f}.")


def _loss_question(x: Ctx, f: Numbers | None) -> Question | None:
    if f is None or not f.hidden:
        return None
    return Question(
        "Why does the loss leave out the visible patches?",
        f"They are in the encoder's input: copying them back would lower a loss that counted "
        f"them without learning anything about what is hidden. So the chart's dashed line, "
        f"L = {f.loss:.4f}, averages the {f.n_hidden} hidden patches' errors and no other "
        f"(the step before shows the visible patches' errors too).",
        Choice(("They are the input: copying them scores without learning",
                "They have no positions", "The decoder does not predict them",
                "They would make the loss negative"), right=0))
