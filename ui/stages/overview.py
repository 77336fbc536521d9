"""The whole forward pass at a glance: the model map (click a box to open its stage), the patch
grid, what the model outputs, and the shape of every stage, live."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import streamlit as st

from ui import keys
from ui.drawing import figures, phone, phone_figures, show
from ui.drawing.equation import latex
from ui.drawing.numbers import pct
from ui.drawing.tables import stage_table
from ui.lesson import deck, navigate
from ui.lesson.deck import Step
from ui.selection import models, session
from ui.selection.scene_notes import caption_note, class_note
from ui.serving import state
from ui.serving.tour import caption_pass, patch_pca
from ui.stages import overview_alt as alt
from vit_core.explain.attention import cls_patch_row
from vit_core.explain.lens import probabilities, top_class
from vit_core.explain.stages import ModelMap, model_map
from vit_core.io.images import describe_preprocessing
from vit_core.scenes.world import Composition

# the stage's own widget keys (AppTest addresses its widgets by them; shared: ui/keys.py)
OVERVIEW_GRID = "overview_grid"  # chart: patch grid
OVERVIEW_TOPK = "overview_topk"  # chart: top-k classes
OVERVIEW_TABLE = "overview_table"  # table: every stage's shape
OVERVIEW_WORDS = "overview_words"  # chart: the caption's word probabilities
OVERVIEW_OUTPUT = "overview_output"  # chart: a headless encoder's CLS attention over the image
OVERVIEW_MAP = "overview_map"  # chart: the model map (a click on a box opens its stage)
PRESENTER_SCALE = 1.3  # presenter mode draws the map's text and markers this much larger
TOP_SHOWN = 5  # the prediction's bars show this many classes at most (figures.top_k_bars' k)


@dataclass(frozen=True)
class Ctx:
    """The stage's view and the scene the student composed (None for any other image)."""

    v: deck.View
    composed: Composition | None

    def __getattr__(self, name):  # the view's fields (inp, tr, c, layer, …)
        return getattr(self.v, name)


def view() -> Ctx:
    navigate.open_pending()  # a click on the map's boxes opens that stage (before any work)
    v = deck.load()
    code = st.session_state.get(keys.SCENE)
    composed = (Composition.parse(code) if v.inp.label.startswith("composed") and code
                else None)
    return Ctx(v, composed)


def _caption_pass(x: Ctx):
    """(generation, text ids, trace) of the pass in which a captioner wrote its last token."""
    with st.spinner("Writing its caption, one forward pass per word…"):
        return state.caption_pass(x.inp, x.name, mask=session.chosen_mask())


def _blocks(L: int) -> str:
    return "1 block" if L == 1 else f"{L} blocks"


def _intro(x: Ctx) -> str:
    c = x.c
    return (f"The model cuts the {c.img_size}×{c.img_size} image into square patches of "
            f"{c.patch_size}×{c.patch_size} pixels, turns each patch into a vector of "
            f"{c.embed_dim} numbers, and lets these vectors exchange information through "
            f"{_blocks(c.depth)} of attention and MLP layers. Everything below comes from one "
            f"forward pass on your image"
            + (" (the caption takes one more pass per word)" if c.has_text else "")
            + f", which offers {len(x.tr)} intermediate tensors by name. It keeps the residual "
            f"stream, the input and output of every block; when a page opens a block's inside "
            f"(Q, K, V, attention, the MLP), that one block is run again from its kept input, "
            f"which gives the same numbers.")


# ---------------------------------------------------------------- the model map
@dataclass(frozen=True)
class Map:
    mm: ModelMap
    S: int  # tokens in the mapped pass (image + text for a captioner)
    n_image: int
    n_text: int  # text tokens in the mapped pass: [SOS] and the words read before the last
    last_word: str | None  # the token written in that pass (a captioner), else None


def _map_facts(x: Ctx) -> Map:
    map_tr, last = x.tr, None
    if x.c.has_text:  # the map shows the pass that wrote the caption's last word
        gen, _, map_tr = _caption_pass(x)
        last = gen.words[-1]
    _, C, H, W = x.prep.pixels.shape
    mm = model_map(map_tr, (H, W, C), st.session_state[keys.LAYER])
    return Map(mm, int(map_tr["embed"].shape[0]), int(map_tr.n_image), int(map_tr.n_text), last)


def _map_figure(x: Ctx, f: Map) -> None:
    fig = figures.model_map(f.mm, scale=PRESENTER_SCALE if x.presenting else 1.0)
    if x.presenting:  # as wide as the slide (the height is the slide's: deck.chart)
        fig.update_layout(width=None)
        return navigate.map_chart(fig, OVERVIEW_MAP, "stretch")
    # the 800-px serpentine, or on a phone the pass top to bottom (ui/drawing/phone.py: which is
    # shown is the browser's choice, by the screen's width)
    tall = figures.model_map(f.mm, plan=phone_figures.tall_plan(f.mm))
    phone.both(OVERVIEW_MAP, lambda: navigate.map_chart(fig, OVERVIEW_MAP, "content"),
               lambda: navigate.map_chart(tall, keys.phone(OVERVIEW_MAP), "stretch"))


def _edge(mm: ModelMap, name: str):
    return next((e for e in mm.edges if e.name == name), None)


def _map_words(x: Ctx, f: Map) -> str:
    c, mm = x.c, f.mm
    image, patches, out = _edge(mm, "image"), _edge(mm, "patches"), mm.edges[-1]
    end = ("the logits" if out.name == "logits" else "the final tokens") + f" ({out.label})"
    tokens = f"{f.S} tokens" + (f" ({f.n_image} image + {f.n_text} text)" if f.n_text else "")
    return (f"One pass on your image ({x.inp.label}): the picture ({image.label}) becomes "
            f"{c.num_patches} patches ({patches.label}), then {tokens} of {c.embed_dim} numbers "
            f"that go through {_blocks(c.depth)}, and ends as {end}.")


def _map_notes(x: Ctx, f: Map) -> str:
    c = x.c
    pick = (" The dotted frame is one block; the cells under it pick which block's tensors label "
            "its arrows." if c.depth > 1 else " The dotted frame is the model's only block.")
    written = ""
    if c.has_text:
        k = f.n_text - 1  # words read besides [SOS]
        last = "[EOS]" if f.last_word == "[EOS]" else f"“{f.last_word}”"
        written = (f" The text stream is the pass in which it wrote its last token, {last}: it "
                   f"read [SOS] and the {k} word{'' if k == 1 else 's'} it had written before, "
                   f"under the {f.mm.mask_kind} mask, so S = {f.n_image} image + {f.n_text} "
                   f"text tokens = {f.S} there.")
    return ("Each box is one step of the forward pass on your image: click it to open the page "
            "that explains it (a box inside the block also selects that block). Each blue label "
            "is the shape of the tensor on that arrow in this very pass (e.g. tokens × numbers "
            "per token, or heads × tokens × tokens for attention)." + pick + written)


# ---------------------------------------------------------------- the patch grid
def _grid_figure(x: Ctx, _) -> None:
    c, S = x.c, x.tr["embed"].shape[0]
    N, g = c.num_patches, c.grid
    prefix_tex = "".join(rf"x_\mathrm{{{n.lower()}}};\," for n in c.prefix_names)
    latex(rf"N = \frac{{H}}{{P}}\cdot\frac{{W}}{{P}} = \frac{{{c.img_size}}}{{{c.patch_size}}}"
          rf"\cdot\frac{{{c.img_size}}}{{{c.patch_size}}} = {N},\qquad "
          rf"z_0 = [{prefix_tex}x_pE] + E_\mathrm{{pos}} \in \mathbb{{R}}^{{{S}"
          rf"\times {c.embed_dim}}}")
    deck.chart(figures.patch_grid(x.prep.crop, c.patch_size, show_index=g <= 16),
               key=OVERVIEW_GRID)


def _grid_words(x: Ctx, _) -> str:
    c, S = x.c, int(x.tr["embed"].shape[0])
    g, N, P = c.grid, c.num_patches, c.patch_size
    if c.prefix_names:
        tokens = f"with {' and '.join(c.prefix_names)} that makes S = {S} tokens"
    else:
        tokens = f"one token per patch (no CLS): S = {S} tokens"
    text = " (the text tokens come on top while it writes)" if c.has_text else ""
    return (f"The model sees the {c.img_size}×{c.img_size} crop as a {g}×{g} grid of {N} "
            f"patches of {P}×{P} pixels; {tokens} of {c.embed_dim} numbers{text}.")


def _grid_notes(x: Ctx, _) -> str:
    c = x.c
    return (f"{x.inp.label} · {describe_preprocessing(c)} · {c.grid}×{c.grid} = "
            f"{c.num_patches} patches")


# ---------------------------------------------------------------- what the model outputs
@dataclass(frozen=True)
class Prediction:
    probs: np.ndarray  # [K] after the softmax
    names: list[str]
    top: int


def _prediction_facts(x: Ctx) -> Prediction:
    c = x.c
    probs = probabilities(x.tr.logits).numpy()
    names = list(c.class_names) or [f"class {i}" for i in range(c.num_classes)]
    return Prediction(probs, names, top_class(x.tr.logits)[0])


def _prediction_figure(x: Ctx, f: Prediction) -> None:
    deck.chart(figures.top_k_bars(f.probs, f.names, k=TOP_SHOWN, x_title="probability"),
               key=OVERVIEW_TOPK)


def _prediction_words(x: Ctx, f: Prediction) -> str:
    if x.composed:
        return class_note(x.composed, f.names, [float(p) for p in f.probs])
    return (f"Its top class is “{f.names[f.top]}”, {pct(float(f.probs[f.top]))} after the "
            f"softmax over its {len(f.names)} classes.")


def _how_read(c) -> str:
    N = c.num_patches
    if c.global_pool == "avg":
        return (f"The class is read from the mean of the {N} final patch tokens"
                + (", normalised by fc_norm," if c.fc_norm else "")
                + " through one linear layer (the head)"
                + (", not from the CLS token." if c.class_token else "."))
    if c.dist_token:
        return ("This DeiT model has two heads, one on the final CLS token and one on the "
                "final DIST token; its prediction is the mean of their two logit vectors, as "
                "DeiT does at inference.")
    return "The class is read from the final CLS token by one linear layer (the head)."


def _sureness(x: Ctx, sure: float) -> list[str]:
    note = models.sureness_note(x.model, sure, x.inp.label, session.chosen_mask())
    return [note] if note else []


def _prediction_notes(x: Ctx, f: Prediction) -> str:
    K = len(f.names)
    shown = f"all {K} classes" if K <= TOP_SHOWN else f"the {TOP_SHOWN} most likely of {K} classes"
    return " ".join(_sureness(x, float(f.probs.max()))
                    + [f"Bars: P(class) after softmax, {shown}. " + _how_read(x.c)])


@dataclass(frozen=True)
class Caption:
    text: str
    words: list[str]
    chosen: list[float]  # the probability of each word when it was written


def _caption_facts(x: Ctx) -> Caption:
    gen, _, _ = _caption_pass(x)
    return Caption(gen.text, list(gen.words), [float(p) for p in gen.chosen])


def _caption_figure(x: Ctx, f: Caption) -> None:
    st.markdown(f"Its caption, one word at a time (greedy): **“{f.text}”**")
    deck.chart(figures.word_bars(f.words, f.chosen), key=OVERVIEW_WORDS)


def _caption_words(x: Ctx, f: Caption) -> str:
    if x.composed:
        return caption_note(x.composed, f.words)
    n = len(f.words)
    if n == 1:
        return (f"It wrote a single token, {f.words[0]}, with {pct(f.chosen[0])}: one forward "
                f"pass.")
    lo, hi = int(np.argmin(f.chosen)), int(np.argmax(f.chosen))
    return (f"It wrote {n} tokens, one forward pass each; it was surest of “{f.words[hi]}” "
            f"({pct(f.chosen[hi])}) and least sure of “{f.words[lo]}” ({pct(f.chosen[lo])}).")


def _caption_notes(x: Ctx, f: Caption) -> str:
    return " ".join(_sureness(x, sum(f.chosen) / len(f.chosen))
                    + ["Each bar: how sure the model was of that word when it wrote it ([EOS] "
                       "ends the caption). The Logits page steps through it."])


@dataclass(frozen=True)
class Encoded:
    S: int
    cls_to_patches: Any  # [g, g] the final CLS row over the patches (heads averaged), or None
    on_patches: float  # its total on the patches
    pca: Any  # [g, g, 3] the final patch tokens' first principal components, when no map


def _is_headless(c) -> bool:
    return not c.num_classes and not c.has_text


def _encoded_facts(x: Ctx) -> Encoded:
    c = x.c
    row, total = (cls_patch_row(x.tr[f"blocks.{c.depth - 1}.attn.pattern"], c.grid,
                                c.num_prefix_tokens) if c.class_token else (None, 0.0))
    if row is not None and total > 1e-6:
        return Encoded(int(x.tr["embed"].shape[0]), row.numpy(), total, None)
    pca = state.patch_pca(x.inp, x.name, session.chosen_mask())  # [g, g, 3] in [0, 1]
    return Encoded(int(x.tr["embed"].shape[0]), None, total, pca)


def _encoded_figure(x: Ctx, f: Encoded) -> None:
    c = x.c
    if f.cls_to_patches is not None:
        deck.chart(figures.map_over_image(
            x.prep.crop, f.cls_to_patches,
            f"Where the final CLS token looks (block {c.depth - 1}, mean of "
            f"{c.num_heads} head{'s' if c.num_heads > 1 else ''})",
            value_name="attention weight", zmin=0), key=OVERVIEW_OUTPUT)
        return
    show.image(figures.array_image(f.pca.transpose(2, 0, 1), 224),
               "Each final patch token's first three principal components shown as red, green "
               "and blue: patches the model represents alike get alike colours.", "patch-pca")


def _encoded_words(x: Ctx, f: Encoded) -> str:
    return (f"This model has no classifier: it is an encoder that outputs {f.S} token vectors "
            f"of {x.c.embed_dim} numbers for other models to use (e.g. DINO features), so there "
            f"is no prediction to show.")


def _encoded_notes(x: Ctx, f: Encoded) -> str | None:
    c = x.c
    if f.cls_to_patches is not None:
        return (f"Colour: the share of CLS's attention each patch receives in the last block; "
                f"together the patches get {pct(f.on_patches)}, the rest goes to "
                f"{' and '.join(c.prefix_names)}.")
    if c.class_token:
        return (f"Under the {x.tr.mask_kind} mask the CLS token (token 0) sees only itself, so "
                "its attention says nothing about the image; here are the patch tokens "
                "instead.")
    return None


# ---------------------------------------------------------------- every stage's shape
@dataclass(frozen=True)
class Table:
    rows: list[dict]
    S: int  # tokens of the pass the table lists (the image alone)
    S_map: int | None  # a captioner: tokens of the pass the map shows


def _table_facts(x: Ctx) -> Table:
    S_map = None
    if x.c.has_text:
        _, _, map_tr = _caption_pass(x)
        S_map = int(map_tr["embed"].shape[0])
    return Table(stage_table(x.tr), int(x.tr["embed"].shape[0]), S_map)


TABLE_ROWS = 10  # the table shows this many rows before it scrolls (a slide keeps its height)


def _table_figure(x: Ctx, f: Table) -> None:
    height = 38 + 35 * min(len(f.rows), TABLE_ROWS)  # header + rows, in px
    st.dataframe(f.rows, hide_index=True, key=OVERVIEW_TABLE, height=height)


def _table_words(x: Ctx, f: Table) -> str:
    c, S = x.c, f.S
    H, L = c.num_heads, c.depth
    where = ("for its 1 head" if H == 1 else f"for each of {H} heads") + (
        " in its only block (1 block)" if L == 1 else f" in each of the {L} blocks")
    tokens = (f"S = {S} image tokens (plus one per word while it writes a caption)" if c.has_text
              else f"S = {S} tokens")
    return (f"What to notice: the token count stays {tokens} through every block; only the "
            f"attention scores and pattern are S×S = {S * S:,} entries {where}, so their cost "
            f"grows with the square of the token count, and smaller patches mean more tokens.")


def _table_notes(x: Ctx, f: Table) -> str | None:
    c, said = x.c, []
    if f.S_map is not None:
        said.append(f"This table is the pass over the image alone (no text fed), as the other "
                    f"pages start: S = {f.S} tokens here, {f.S_map} in the model map.")
    if c.depth > 2:
        said.append(f"Blocks 1 to {c.depth - 2} are left out of the table: they hold the same "
                    f"tensors with the same shapes as blocks 0 and {c.depth - 1}.")
    return " ".join(said) or None


STAGE = deck.Stage(
    slug="overview",
    name="From pixels to logits, in one pass",
    nav="The whole pass", icon=":material/route:",
    story="This is one real forward pass of a Vision Transformer on one picture. We will "
          "follow the numbers from the pixels to the answer, one stage per screen.",
    view=view,
    intro=_intro,
    steps=(
        Step("map", "The whole pass", _map_figure, facts=_map_facts, words=_map_words,
             notes=_map_notes, describe=alt.map_alt, reads=(caption_pass,)),
        Step("grid", "What the model sees", _grid_figure, words=_grid_words, notes=_grid_notes,
             describe=alt.grid_alt),
        Step("prediction", "Prediction", _prediction_figure, facts=_prediction_facts,
             words=_prediction_words, notes=_prediction_notes,
             describe=lambda x, f: alt.prediction_alt(x, f, TOP_SHOWN),
             applies=lambda c: bool(c.num_classes)),
        Step("caption", "Caption", _caption_figure, facts=_caption_facts, words=_caption_words,
             notes=_caption_notes, describe=alt.caption_alt, reads=(caption_pass,),
             applies=lambda c: bool(c.has_text) and not c.num_classes),
        Step("output", "What it outputs", _encoded_figure, facts=_encoded_facts,
             words=_encoded_words, notes=_encoded_notes, applies=_is_headless,
             describe=alt.encoded_alt, reads=(patch_pca,)),
        Step("table", "Every stage, with the shape it had just now", _table_figure,
             facts=_table_facts, words=_table_words, notes=_table_notes,
             describe=alt.table_alt, reads=(caption_pass,)),
    ),
)
