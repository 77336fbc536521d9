"""Stage 1: the image the model sees, cut into patches; one patch flattened into a vector; all
patches as the matrix X_patch; and what another patch size would cost."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st

from ui.drawing import describe, figures, show
from ui.drawing.equation import latex
from ui.lesson import deck
from ui.lesson.deck import Number, Question, Step
from ui.selection import controls
from ui.stages.common import smaller_patch
from vit_core.explain.embeddings import PatchCost, patch_cost
from vit_core.explain.extremes import Extremes, extremes
from vit_core.io.images import denormalize, describe_preprocessing

# the stage's own widget keys (AppTest addresses its widgets by them; shared: ui/keys.py)
GRID_CLICK = "grid_click"  # chart: clickable patch grid (its selection event selects a patch)
PATCH_VECTOR = "patch_vector"  # chart: the selected patch flattened
PATCH_MATRIX = "patch_matrix"  # chart: X_patch
WHAT_IF_P = "what_if_p"  # int: the other patch size (select_slider)
WHAT_IF_TABLE = "what_if_table"  # table: patch sizes compared
WHAT_IF_GRID = "what_if_grid"  # chart: the crop cut at the other patch size

OTHER_SIZES = (8, 14, 16, 28, 32)  # the patch sizes the "what if" offers (when they divide)
TABLE_ROW_PX, TABLE_HEAD_PX = 35, 38  # st.dataframe's row and header heights: no scroll bar


def view() -> deck.View:
    return deck.load()


def _cpp(c) -> int:
    return c.in_chans * c.patch_size ** 2


def _intro(x: deck.View) -> str:
    c = x.c
    P, g = c.patch_size, c.grid
    return (f"A transformer reads a sequence of vectors, so the image has to become one. First "
            f"your picture is prepared the way this model expects: {describe_preprocessing(c)}. "
            f"The model then cuts the {c.img_size}×{c.img_size} result into a grid of {g}×{g} "
            f"patches of {P}×{P} pixels and flattens each patch into a row of "
            f"{c.in_chans}·{P}² = {_cpp(c)} numbers. No learning happens here: it is pure "
            f"reshaping.")


def _times(r: float) -> str:
    """'15.7×', '246×', '1,230×' (never 1.23e+03×)."""
    return f"{r:,.0f}×" if r >= 100 else f"{r:.3g}×"


def _patches(n: int) -> str:
    return f"{n:,} patch{'' if n == 1 else 'es'}"


# ---------------------------------------------------------------- the grid
@dataclass(frozen=True)
class Cell:
    p: int
    row: int
    col: int


def _cell(x: deck.View) -> Cell:
    r, col = divmod(x.patch, x.c.grid)
    return Cell(x.patch, r, col)


def _grid_figure(x: deck.View, f: Cell) -> None:
    c = x.c
    P, g = c.patch_size, c.grid
    left, right = st.columns([3, 2])  # the figure is the two columns alone: they fill the slide
    with left:
        deck.chart(figures.patch_grid(x.prep.crop, P, selected=f.p, show_index=g <= 16),
                   key=GRID_CLICK, selection_mode="points",
                   on_select=lambda: controls.select_patch_from_chart(GRID_CLICK))
    with right:
        show.image(figures.enlarged_patch(x.prep.crop, f.row, f.col, P, 224),
                   f"Patch {f.p}: row {f.row}, column {f.col}, enlarged", "patch-enlarged")


def _grid_words(x: deck.View, f: Cell) -> str:
    c = x.c
    P, g = c.patch_size, c.grid
    return (f"The {c.img_size}×{c.img_size} crop becomes a {g}×{g} grid of "
            f"{_patches(c.num_patches)} of {P}×{P} pixels; patch {f.p}, outlined and enlarged, "
            f"is row {f.row}, column {f.col}: pixels {f.row * P}–{(f.row + 1) * P - 1} down, "
            f"{f.col * P}–{(f.col + 1) * P - 1} across.")


def _grid_alt(x: deck.View, f: Cell) -> str:
    c = x.c
    P, g = c.patch_size, c.grid
    return (f"Left: your image, cropped to {c.img_size}×{c.img_size} pixels, under a {g}×{g} grid "
            f"of {_patches(c.num_patches)} of {P}×{P} pixels, patch {f.p} outlined. Right: patch "
            f"{f.p} (row {f.row}, column {f.col}) enlarged.")


def _grid_notes(x: deck.View, _) -> str:
    return (f"{x.inp.label} · what this model does to a photo: {describe_preprocessing(x.c)} · "
            f"click a patch to select it")


# ---------------------------------------------------------------- one patch as numbers
@dataclass(frozen=True)
class Row:
    p: int
    vec: np.ndarray  # [C·P²] the live row of X_patch (normalised pixel values)
    first: float  # pixel (0, 0) of the patch, channel 0, before normalisation (0 … 255)
    ext: Extremes  # of the strip as drawn: [channel, pixel]


def _row_facts(x: deck.View) -> Row:
    c, p = x.c, x.patch
    P = c.patch_size
    back = denormalize(x.tr["patches"][p].reshape(c.in_chans, P, P), c)  # undo the normalisation
    vec = x.tr["patches"][p].numpy()
    return Row(p, vec, float(back[0, 0, 0]) * 255, extremes(vec.reshape(c.in_chans, -1)))


def _row_figure(x: deck.View, f: Row) -> None:
    c = x.c
    deck.chart(figures.vector_strip(
        f.vec, f"Patch {f.p} flattened: {_cpp(c)} numbers, one row per colour channel "
               f"(normalised values)",
        rows=c.in_chans, row_names=["R", "G", "B"][: c.in_chans], height=180,
        x_title=f"pixel in the patch, row by row (0 … {c.patch_size ** 2 - 1})",
        value_name="normalised pixel", y_title="channel"), key=PATCH_VECTOR)


def _row_words(x: deck.View, f: Row) -> str:
    c = x.c
    channel = "R" if c.in_chans == 3 else "channel 0"
    return (f"First values: {np.array2string(f.vec[:6], precision=3)} … — pixel (0, 0) of patch "
            f"{f.p} is {channel}={f.first:.0f} before normalisation by mean {c.mean[0]} and std "
            f"{c.std[0]}.")


def _row_alt(x: deck.View, f: Row) -> str:
    c = x.c
    names = ["R", "G", "B"][: c.in_chans] if c.in_chans == 3 else None
    return describe.heatmap(
        f"patch {f.p} flattened into {_cpp(c)} numbers", rows="colour channels",
        cols=f"the patch's {c.patch_size ** 2} pixels, row by row", value="normalised pixel value",
        ext=f.ext, row_names=names)


# ---------------------------------------------------------------- X_patch
def _matrix_facts(x: deck.View) -> Extremes:
    return extremes(x.tr["patches"])  # [N, C·P²], as drawn


def _matrix_alt(x: deck.View, ext: Extremes) -> str:
    c = x.c
    return describe.heatmap(
        f"X_patch, {c.num_patches}×{_cpp(c)}, row {x.patch} outlined",
        rows=f"the {c.num_patches} patches", cols=f"the {_cpp(c)} values of a flattened patch",
        value="normalised pixel value", ext=ext)

def _matrix_figure(x: deck.View, _) -> None:
    c = x.c
    N, cpp, p, P = c.num_patches, _cpp(c), x.patch, c.patch_size
    latex(rf"N = \frac{{H}}{{P}}\cdot\frac{{W}}{{P}} = \frac{{{c.img_size}}}{{{P}}}\cdot"
          rf"\frac{{{c.img_size}}}{{{P}}} = {N},\qquad X_\mathrm{{patch}} = "
          rf"\mathcal{{U}}(X_\mathrm{{img}}) \in \mathbb{{R}}^{{{N}\times {cpp}}}")
    deck.chart(figures.matrix_heatmap(
        x.tr["patches"].numpy(), f"X_patch: all {N} patches × {cpp} values (row {p} outlined)",
        highlight_row=p, square=False, height=360, value_name="normalised pixel",
        y_title=f"patch (0 … {N - 1})", x_title=f"value in the flattened patch (0 … {cpp - 1})"),
        key=PATCH_MATRIX)


def _matrix_words(x: deck.View, _) -> str:
    c = x.c
    return (f"X_patch stacks the {_patches(c.num_patches)} as rows: a {c.num_patches}×{_cpp(c)} "
            f"matrix, row {x.patch} outlined. Nothing is learned yet: it is pure reshaping.")


def _size_question(x: deck.View, _) -> Question:
    c, tr = x.c, x.tr
    P, img, pre, n_text = c.patch_size, c.img_size, c.num_prefix_tokens, tr.n_text
    p2 = smaller_patch(c)
    if p2 is None:
        return Question(f"If P were smaller than {P}, how many patches?",
                        f"No smaller patch size divides this model's {img}-pixel image, so the "
                        f"question does not apply to it.",
                        Number(None, 0, "patches", "How many patches?"))
    own, new = patch_cost(img, P, pre + n_text), patch_cost(img, p2, pre + n_text)
    n, n2, s, s2 = own.N, new.N, own.S, new.S
    extra = " + ".join([*c.prefix_names, *([f"{n_text} text"] if n_text else [])])
    with_ = ("With " + (f"the {extra} token{'s' if pre + n_text > 1 else ''}" if extra else
                        "no CLS token"))
    if c.has_text and not n_text:  # the trace holds the image tokens only
        grows = (f"{with_}, the image tokens grow from {s:,} to {s2:,}, so the image part of "
                 f"each head's attention matrix grows from {s:,}² = {own.S2:,} to "
                 f"{s2:,}² = {new.S2:,} entries: {new.times(own)[1]:.1f}× bigger, in every "
                 f"head of every layer. While the caption is written its T text tokens come on "
                 f"top: the sequence is S = {s:,} + T tokens, or {s2:,} + T.")
    else:
        grows = (f"{with_}, the sequence grows from S = {s:,} to {s2:,} tokens, so each head's "
                 f"attention matrix grows from {s:,}² = {own.S2:,} to {s2:,}² = {new.S2:,} "
                 f"entries: {new.times(own)[1]:.1f}× bigger, in every head of every layer.")
    return Question(f"If P were {p2} instead of {P}, how many patches? How much bigger is the "
                    f"attention matrix?",
                    f"({img}/{p2})² = {n2:,} patches instead of ({img}/{P})² = {n:,}. " + grows,
                    Number(n2, 0, "patches", "How many patches?"))  # a count: exact


# ---------------------------------------------------------------- another patch size
Cost = PatchCost  # P, N patches, S tokens (the image's: patches and CLS / DIST), S2 entries


def _cost(c, size: int) -> Cost:
    """Patches, tokens and attention entries per head if this image were cut at `size`."""
    return patch_cost(c.img_size, size, c.num_prefix_tokens)


def _sizes(c) -> list[int]:
    """The patch sizes offered: those of OTHER_SIZES that divide the image, this model's own P
    and the smaller one the question asks about."""
    return sorted({s for s in OTHER_SIZES if c.img_size % s == 0} | {c.patch_size}
                  | ({smaller_patch(c)} - {None}))


@dataclass(frozen=True)
class WhatIf:
    sizes: list[int]
    own: Cost
    new: Cost  # at the size chosen on the slider
    smaller: Cost | None  # at ui.stages.common.smaller_patch (the question's size), if any


def _what_if_facts(x: deck.View) -> WhatIf:
    c = x.c
    P, sizes, p2 = c.patch_size, _sizes(c), smaller_patch(c)
    if st.session_state.get(WHAT_IF_P) not in sizes:  # first visit, or another model
        bigger = [s for s in sizes if s > P]
        st.session_state[WHAT_IF_P] = p2 if p2 else (bigger[0] if bigger else P)
    return WhatIf(sizes, _cost(c, P), _cost(c, int(st.session_state[WHAT_IF_P])),
                  _cost(c, p2) if p2 else None)


def _what_if_figure(x: deck.View, f: WhatIf) -> None:
    c = x.c
    P, img = c.patch_size, c.img_size
    own, new = f.own, f.new
    tokens = " + ".join(["N", *c.prefix_names])
    left, right = st.columns([3, 2])  # the figure is the two columns alone: they fill the slide
    with left:
        deck.chart(figures.patch_grid(x.prep.crop, new.P, show_index=img // new.P <= 8,
                                      height=360), key=WHAT_IF_GRID)
    with right:
        if len(f.sizes) > 1:
            st.select_slider("Patch size P", f.sizes, key=WHAT_IF_P,
                             help=f"This model uses P = {P}; only sizes that divide the "
                                  f"{img}-pixel image are offered.")
        else:
            st.caption(f"Patch size P = {P}: no other size from "
                       f"{', '.join(map(str, OTHER_SIZES))} divides the {img}-pixel image, so "
                       f"only this model's own P is shown.")
        st.metric(f"patches N = ({img}/{new.P})²", f"{new.N:,}",
                  delta=f"{new.times(own)[0]:.3g}× this model's {own.N:,}" if new.P != P else None,
                  delta_color="off", delta_arrow="off")
        st.metric(f"sequence length S = {tokens}" + (" (+ the text, while it writes)"
                                                      if c.has_text else ""), f"{new.S:,}")
        st.metric("attention entries per head and layer (S²)", f"{new.S2:,}",
                  delta=f"{new.times(own)[1]:.3g}× this model's {own.S2:,}" if new.P != P
                  else None, delta_color="off", delta_arrow="off")


def _what_if_words(x: deck.View, f: WhatIf) -> str:
    P, own, new = x.c.patch_size, f.own, f.new
    if new.P == P:
        note = (f"this is the model's own patch size: N = {own.N:,} patches, S = {own.S:,} "
                f"tokens, {own.S2:,} query–key pairs per head and layer.")
        h = f.smaller
        if h:
            how = f"Halving P to {h.P}" if 2 * h.P == P else f"A smaller P of {h.P}"
            note += (f" {how} would give N = {h.N:,} ({h.times(own)[0]:.3g}×) and {h.S2:,} "
                     f"pairs ({h.times(own)[1]:.3g}×): attention cost grows with the square of the "
                     f"token count.")
    else:
        note = (f"at P = {new.P} instead of {P}, N = {new.N:,} instead of {own.N:,} "
                f"({new.times(own)[0]:.3g}×), and each attention head compares {new.S2:,} "
                f"instead of {own.S2:,} query–key pairs ({new.times(own)[1]:.3g}×): N grows "
                f"with 1/P², and attention with the square of the token count."
                + (" Smaller patches see finer detail and pay for it in attention."
                   if new.P < P else " Bigger patches are cheaper but see coarser detail."))
    return "What to notice: " + note


def _what_if_alt(x: deck.View, f: WhatIf) -> str:
    g, new = x.c.img_size // f.new.P, f.new
    return (f"Left: your image cut at patch size P = {new.P}, a {g}×{g} grid. "
            f"Right: the patch size P, and three numbers: N = {new.N:,} patches, S = {new.S:,} "
            f"tokens, {new.S2:,} attention entries per head and layer.")


def _what_if_notes(x: deck.View, f: WhatIf) -> str:
    img, P, new = x.c.img_size, x.c.patch_size, f.new.P
    return (f"The grid: the same {img}×{img} crop cut at P = {new}, {img // new}×{img // new} "
            f"patches" + (" (this model's own patch size)." if new == P else
                          f" (this model uses P = {P}).")
            + " Only sizes that divide the image are offered.")


# ---------------------------------------------------------------- every size, side by side
@dataclass(frozen=True)
class Sizes:
    own: Cost
    costs: list[Cost]  # one per size offered, smallest P first
    rows: list[dict]  # the table: one row per cost


def _sizes_facts(x: deck.View) -> Sizes:
    c = x.c
    own, costs = _cost(c, c.patch_size), [_cost(c, s) for s in _sizes(c)]
    rows = [{"P": k.P, "grid": f"{c.img_size // k.P}×{c.img_size // k.P}", "N patches": k.N,
             "tokens S": k.S, "values per patch (C·P²)": c.in_chans * k.P * k.P,
             "attention entries per head (S²)": k.S2,
             "× this model's": round(k.times(own)[1], 2)} for k in costs]
    return Sizes(own, costs, rows)


def _sizes_figure(x: deck.View, f: Sizes) -> None:
    deck.table(f.rows, WHAT_IF_TABLE, height=TABLE_HEAD_PX + TABLE_ROW_PX * len(f.rows))


def _sizes_words(x: deck.View, f: Sizes) -> str:
    own = f.own
    if len(f.costs) == 1:
        return (f"Only this model's own P = {own.P} is listed: N = {own.N:,} patches, "
                f"S = {own.S:,} tokens, {own.S2:,} attention entries per head.")
    small, big = f.costs[0], f.costs[-1]
    return (f"From P = {big.P} down to P = {small.P}, the patches go from {big.N:,} to "
            f"{small.N:,} and each head's attention entries from {big.S2:,} to {small.S2:,} "
            f"({_times(small.times(big)[1])}): N grows with 1/P², attention with N².")


def _sizes_alt(x: deck.View, f: Sizes) -> str:
    return describe.table(f"every patch size that divides the {x.c.img_size}-pixel image, the "
                          f"smallest P first ({', '.join(str(k.P) for k in f.costs)})",
                          len(f.rows), columns=list(f.rows[0]))


def _sizes_notes(x: deck.View, f: Sizes) -> str:
    c = x.c
    return (f"Only the sizes that divide the {c.img_size}-pixel image are listed; tokens S "
            f"count the patches" + (f" and {' and '.join(c.prefix_names)}" if c.prefix_names
                                    else "")
            + (", not the text a captioner adds while it writes" if c.has_text else "")
            + ". \"× this model's\" compares the attention entries with this model's own "
              f"P = {c.patch_size}.")


STAGE = deck.Stage(
    slug="patches",
    name="Input and patch grid",
    nav="Input and patches", icon=":material/grid_on:",
    story="A transformer reads a list of vectors, not a picture. So we cut the image into "
          "square patches and unroll every patch into one long row of numbers.",
    view=view,
    intro=_intro,
    steps=(
        Step("grid", "The image, cut into patches", _grid_figure, facts=_cell,
             words=_grid_words, notes=_grid_notes, describe=_grid_alt, controls=("patch",)),
        Step("vector", "One patch as numbers", _row_figure, facts=_row_facts, words=_row_words,
             describe=_row_alt, controls=("patch",)),
        Step("matrix", "Every patch: the matrix X_patch", _matrix_figure, facts=_matrix_facts,
             words=_matrix_words, describe=_matrix_alt, question=_size_question,
             controls=("patch",)),
        Step("what_if", "What if the patches were another size?", _what_if_figure,
             facts=_what_if_facts, words=_what_if_words, notes=_what_if_notes,
             describe=_what_if_alt),
        Step("sizes", "Every patch size, side by side", _sizes_figure, facts=_sizes_facts,
             words=_sizes_words, notes=_sizes_notes, describe=_sizes_alt),
    ),
)
