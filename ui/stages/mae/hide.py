"""Steps 1 and 2: hide patches; the encoder reads fewer tokens, the decoder all of them."""

from __future__ import annotations

import streamlit as st

from ui import keys
from ui.drawing import figures
from ui.drawing.equation import latex
from ui.drawing.numbers import pct
from ui.lesson import deck
from ui.lesson.deck import Number, Question
from ui.stages.mae.base import (
    LOSS_TEX,
    MODES,
    RATIO_CHOICES,
    SHAPE_WORDS,
    TEXT_CELLS,
    Ctx,
    _no_mae,
    _which,
)
from ui.stages.mae.keys import MAE_CLEAR, MAE_GRID, MAE_INPUT, MAE_NEW, MAE_SHAPES, MAE_TOKENS
from ui.stages.mae.pictures import (
    _blank,
    _clear,
    _next_masking,
    _toggle_clicked_patch,
    token_strips,
)
from vit_core.explain.mae_facts import MAENumbers as Numbers
from vit_core.mae import num_visible


# ---------------------------------------------------------------- step 1: hide patches
def _hide_figure(x: Ctx, f: Numbers | None) -> None:
    if _no_mae(x, first=True) or f is None:
        latex(r"N_\mathrm{vis} = \lfloor N\,(1-r)\rfloor,\qquad " + LOSS_TEX)
        return
    # one row: room for the pictures (on a slide the equation too: under the row, it left the
    # pictures 50 % of a 1280×720 slide with vit-b16; beside it, 57 %)
    row = st.columns([2, 3, 2, 3] if deck.presenting() else [2, 3, 2], vertical_alignment="center")
    mode, left, right = row[:3]
    eq = row[3] if deck.presenting() else st.container()
    mode.radio("Which patches are hidden", list(MODES), format_func=MODES.get,
               key=keys.MAE_MODE)
    if x.mode == "random":
        with left:
            st.select_slider("Share of patches hidden (the mask ratio r)", RATIO_CHOICES,
                             format_func=lambda r: pct(r), key=keys.MAE_RATIO)
        with right:
            st.button("Another random masking", key=MAE_NEW, on_click=_next_masking)
    else:
        with left:
            st.button("Hide no patch", key=MAE_CLEAR, on_click=_clear)
    with eq:
        _visible_equation(f)
    masked = _blank(x.crop, f.hidden, f.P)
    left, right = st.columns(2)
    with left:
        if x.mode == "click":
            deck.chart(figures.patch_set_grid(
                x.crop, f.P, f.hidden, show_index=f.N <= TEXT_CELLS,
                title=f"Click patches to hide them ({f.n_hidden} hidden)"),
                key=MAE_GRID, on_select=_toggle_clicked_patch, selection_mode="points")
        else:
            deck.chart(figures.labelled_patches(x.crop, f.P, "The image: hidden patches framed",
                                                outlined=f.hidden), key=MAE_GRID)
    with right:
        deck.chart(figures.labelled_patches(
            masked, f.P, f"What the encoder is given: {f.n_visible} of {f.N} patches"),
            key=MAE_INPUT)


def _visible_equation(f: Numbers) -> None:
    """N_vis as this masking counts it."""
    if f.mode == "random" and f.exact_visible == f.n_visible:
        latex(rf"N_\mathrm{{vis}} = \lfloor N\,(1-r)\rfloor = \lfloor {f.N}\cdot "
              rf"{1 - f.ratio:.2f}\rfloor = {f.n_visible}")
    elif f.mode == "random":  # the float rounds below an exact whole number (words say so)
        latex(rf"N_\mathrm{{vis}} = \mathrm{{int}}({f.N}\cdot(1-{f.ratio:g})) = "
              rf"{f.n_visible}")
    else:
        latex(rf"N_\mathrm{{vis}} = N - |M| = {f.N} - {f.n_hidden} = {f.n_visible}")


def _hide_words(x: Ctx, f: Numbers | None) -> str | None:
    if f is None:
        return None
    if f.mode == "click":
        return (_which(x) + f"You hid {f.n_hidden} of the {f.N} patches "
                f"({pct(f.n_hidden / f.N)}); the encoder reads the other {f.n_visible}.")
    r = f"{f.ratio:g}"
    rule = (f"N_vis = ⌊N (1 − r)⌋ = ⌊{f.N} × {1 - f.ratio:.2f}⌋ = {f.n_visible}"
            if f.exact_visible == f.n_visible else
            f"N_vis = int({f.N} × (1 − {r})) = {f.n_visible} in floating point (exactly, "
            f"⌊N (1 − r)⌋ = {f.exact_visible}; MAE's code rounds the float down)")
    return (_which(x) + f"With a mask ratio r = {r}, {f.n_hidden} of the {f.N} patches are "
            f"hidden and the encoder reads the other {f.n_visible}: {rule}.")


def _hide_describe(x: Ctx, f: Numbers | None) -> str | None:
    if f is None:
        return None
    framed = ("the patches you clicked framed" if f.mode == "click" else
              "the hidden patches framed")
    return (f"Two pictures of the image cut into a {f.grid}×{f.grid} grid of {f.N} patches: "
            f"left, the image with {framed} ({f.n_hidden}); right, what the encoder is given: "
            f"the {f.n_hidden} hidden patches painted grey, {f.n_visible} of {f.N} left as "
            f"they are.")


def _hide_question(x: Ctx, f: Numbers | None) -> Question | None:
    if f is None:
        return None
    r = x.mae.config.mask_ratio
    n = num_visible(f.N, r)
    return Question(
        f"This MAE was trained with {pct(r)} of its {f.N} patches hidden. How many patches "
        f"does its encoder read then (CLS not counted)?",
        f"{n}: N_vis = ⌊N (1 − r)⌋ = ⌊{f.N} × {1 - r:.2f}⌋ = {n}, so the encoder's attention "
        f"works on {1 + n} tokens instead of {1 + f.N}.",
        Number(n, unit="patches"))


# ---------------------------------------------------------------- step 2: the shapes
def _shapes_figure(x: Ctx, f: Numbers | None) -> None:
    if _no_mae(x) or f is None:
        return
    deck.chart(token_strips(f), key=MAE_TOKENS)
    if not deck.presenting():
        st.dataframe([{"tensor": what, "shape": sym, "here": " × ".join(map(str, shape))}
                      for (what, sym), shape in zip(SHAPE_WORDS, f.shapes, strict=True)],
                     key=MAE_SHAPES,
                     hide_index=True)


def _shapes_describe(x: Ctx, f: Numbers | None) -> str | None:
    if f is None:
        return None
    said = (f"Two rows of tokens. Top, the encoder's {f.S_enc}: CLS, then the {f.n_visible} "
            f"visible patches in the order it reads them. Bottom, the decoder's {f.S_dec}: CLS "
            f"and every patch in grid order, the {f.n_hidden} hidden ones as [MASK] tokens (a "
            f"legend names both kinds). A line joins each encoded patch to its place below.")
    if deck.presenting():  # the shapes table is on the page only
        return said
    return said + (" Under it, a table of the " + str(len(f.shapes)) + " tensors' shapes, from "
                   + " × ".join(map(str, f.shapes[0])) + " patch values to the prediction's "
                   + " × ".join(map(str, f.shapes[-1])) + ".")


def _shapes_words(x: Ctx, f: Numbers | None) -> str | None:
    if f is None:
        return None
    return (f"The encoder reads S = 1 + {f.n_visible} = {f.S_enc} tokens instead of {f.S_dec}, so "
            f"each block's attention scores are {f.S_enc}×{f.S_enc} = {f.enc_scores:,} instead "
            f"of {f.full_scores:,} ({pct(f.scores_share)}). The decoder maps its output "
            f"from D = {f.D} to D_dec = {f.D_dec}, adds {f.n_hidden} copies of one learned "
            f"[MASK] vector, puts every token back at its patch's place and adds its own "
            f"positions: S_dec = 1 + {f.N} = {f.S_dec} tokens.")


def _shapes_notes(x: Ctx, f: Numbers | None) -> str | None:
    if f is None:
        return None
    return ("The encoder's tokens keep the positions of their own patches (added before the "
            "hidden ones are dropped), so it knows where each visible patch sits. The [MASK] "
            "vector is the same for every hidden patch: only the decoder's position code tells "
            "them apart. Both position tables are fixed 2D sine-cosine codes, as in MAE.")


def _shapes_question(x: Ctx, f: Numbers | None) -> Question | None:
    if f is None:
        return None
    return Question(
        f"With {f.n_hidden} of {f.N} patches hidden, how many tokens does the decoder read "
        f"(CLS included)?",
        f"{f.S_dec}: the CLS token, the {f.n_visible} encoded visible patches and {f.n_hidden} "
        f"[MASK] tokens, one for each hidden patch; the decoder always reads the whole grid.",
        Number(f.S_dec, unit="tokens"))
