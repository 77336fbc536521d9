"""The embeddings stage's token steps: one patch becomes a vector, what W_E looks for, the sum
that enters block 0 and a captioner's text rows."""

from __future__ import annotations

import numpy as np
import streamlit as st

from ui.drawing import describe, figures, show
from ui.drawing.equation import latex
from ui.drawing.numbers import pct
from ui.lesson import deck
from ui.lesson.deck import Choice, Question, Step
from ui.selection import session
from ui.serving import state, tour
from ui.stages import common
from ui.stages.embeddings.keys import EMBED_MATRIX, EMBED_TEXT, EMBED_VECTOR
from vit_core.explain.embeddings import component_count, patch_embedding_check
from vit_core.explain.extremes import extremes
from vit_core.explain.generation import tokenizer_for

SAME_WE = Choice((  # why one W_E for every patch: the right reason, and what students often think
    "Every patch holds the same kind of pixels, so one is enough",
    "An edge or a colour is then read the same way everywhere",
    "A matrix per patch could not be trained at all",
    "The same W_E makes every patch's embedding the same"), right=1)
NO_POSITIONS = (  # what breaks without position embeddings; right: decided from the mask
    "Nothing: the patches know their place from their pixels",
    "It could not tell the picture from its patches shuffled",
    "Nothing visible: under this mask no patch reaches the output",
    "Little: the mask still gives each token its order")


# ---------------------------------------------------------------- one patch becomes a vector
def _vector_facts(v: deck.View) -> dict:
    proj, traced = v.model.patch_embed.proj, v.tr["patch_embed"][v.patch]
    checked = patch_embedding_check(proj.weight, proj.bias, v.tr["patches"][v.patch], traced)
    return {"embedding": traced.numpy(), **checked, "ext": extremes(traced[None])}


def _vector_alt(v: deck.View, f: dict) -> str:
    D = v.c.embed_dim
    return describe.heatmap(f"patch {v.patch}'s embedding x_p E + b, {D} values",
                            rows="a single row", cols=f"the {D} embedding dimensions",
                            value="embedding value", ext=f["ext"])


def _vector_figure(v: deck.View, f: dict) -> None:
    p, D = v.patch, v.c.embed_dim
    deck.chart(figures.vector_strip(f["embedding"], f"x_p E + b for patch {p} (from the trace): "
                                    f"{D} values", height=140,
                                    x_title=f"embedding dimension (0 … {D - 1})",
                                    value_name="embedding value", y_title=f"patch {p}"),
               key=EMBED_VECTOR)


def _vector_words(v: deck.View, f: dict) -> str:
    p = v.patch
    return (f"Recomputed on this page in float64 as `patches[{p}] @ W_E + b`: the largest "
            f"difference from the traced (float32) value is **{f['diff']:.2e}**, float32 "
            f"rounding; first values {np.array2string(f['first'], precision=3)}.")


def _vector_notes(v: deck.View, _) -> str:
    c = v.c
    cpp = c.in_chans * c.patch_size ** 2
    return (f"Patch {v.patch}'s {cpp} pixel values (its row of the patch matrix) times W_E "
            f"({cpp}×{c.embed_dim}), plus the bias b: one row of {c.embed_dim} numbers, drawn "
            f"as a strip.")


def _same_we_question(v: deck.View, _) -> Question:
    c = v.c
    P, N, D = c.patch_size, c.num_patches, c.embed_dim
    cpp = c.in_chans * P * P
    w = cpp * D + D
    return Question("Why does every patch use the *same* W_E?",
                    f"So that an edge or a colour is read the same way wherever it is in the "
                    f"picture: one {cpp}×{D} matrix and its bias ({w:,} numbers) serve all {N} "
                    f"patches, exactly like a {P}×{P} convolution with stride {P}. A matrix per "
                    f"patch would need {N}× as many, {N * w:,} numbers, each trained only on its "
                    f"own spot.", SAME_WE)


# ---------------------------------------------------------------- what W_E looks for
def _filters_facts(v: deck.View) -> dict:
    views = state.weight_views(v.name)
    ratio = [float(r) for r in views["ratio"]]
    c = v.c
    rank = component_count(c.embed_dim, c.in_chans * c.patch_size ** 2)
    return {"filters": views["filters"], "ratio": ratio, "all": len(ratio) >= rank,
            "trained": bool(v.model.info.trained)}


def _filters_figure(v: deck.View, f: dict) -> None:
    c = v.c
    labels = [f"PC{i + 1} {pct(r)}" for i, r in enumerate(f["ratio"])]
    show.image(figures.tile([figures.array_image(a, 56) for a in f["filters"]],
                            cols=7 if v.presenting else 4, labels=labels),  # a page: a phone too
               f"The top {len(labels)} principal components of W_E's {c.embed_dim} filters, "
               f"each a {c.patch_size}×{c.patch_size} colour patch (ViT paper, Figure 7, left)",
               "embedding-filters", alt=_filters_alt(v, f))


def _filters_words(v: deck.View, f: dict) -> str:
    ratio, k = f["ratio"], len(f["ratio"])
    together = ("all of it" if f["all"] else pct(min(sum(ratio), 1.0)))
    said = (f"Each tile is a direction along which W_E's {v.c.embed_dim} filters differ: the "
            f"first explains {pct(ratio[0])} of their variance, the {k} shown {together}.")
    return said + ("" if f["trained"] else " Random weights give noise here.")


def _filters_alt(v: deck.View, f: dict) -> str:
    c, ratio = v.c, f["ratio"]
    return (f"{len(ratio)} small square pictures, each {c.patch_size}×{c.patch_size} pixels in "
            f"colour: the top principal components of W_E's {c.embed_dim} filters, each labelled "
            f"with the share of their variance it explains: "
            + "; ".join(f"PC{i + 1} {pct(r)}" for i, r in enumerate(ratio)) + ".")


def _filters_notes(v: deck.View, _) -> str:
    return ("Each component is drawn with its values scaled so that its lowest is 0 and its "
            "highest full intensity in the R, G, B channels, as in the ViT paper's Figure 7, "
            "left; the percentage under it is the share of the filters' variance it explains.")


# ---------------------------------------------------------------- the sum entering block 0
def _sum_facts(v: deck.View) -> dict:
    c = v.c
    embed = v.tr["embed"][: c.num_patches + c.num_prefix_tokens].numpy()
    return {"embed": embed, "ext": extremes(embed)}


def _sum_alt(v: deck.View, f: dict) -> str:
    c = v.c
    S, D = f["embed"].shape
    return describe.heatmap(
        f"the sum that enters block 0, {S} tokens × {D}, the row of patch {v.patch} outlined",
        rows="tokens" + (f" ({' and '.join(c.prefix_names)} first, then the patches)"
                         if c.prefix_names else " (the patches)"),
        cols=f"the {D} embedding dimensions", value="value", ext=f["ext"],
        row_names=figures.token_labels(c))


def _sum_figure(v: deck.View, f: dict) -> None:
    c, p = v.c, v.patch
    N, D, pre, names = c.num_patches, c.embed_dim, c.num_prefix_tokens, c.prefix_names
    cpp = c.in_chans * c.patch_size ** 2
    prefix_tex = "".join(rf"x_\mathrm{{{n.lower()}}};\," for n in names)
    if not v.presenting:  # on a slide the matrix takes the height; its title says the sum
        latex(rf"z_0 = [\,{prefix_tex}x_p^1E+b;\dots;x_p^{{{N}}}E+b"
              rf"\,] + E_\mathrm{{pos}},\quad E\in\mathbb{{R}}^{{{cpp}\times {D}}},\;"
              rf"E_\mathrm{{pos}}\in\mathbb{{R}}^{{{N + pre}\times {D}}},\; z_0\in"
              rf"\mathbb{{R}}^{{{N + pre}\times {D}}}")
    emb = f["embed"]
    token_names = figures.token_labels(c)
    deck.chart(figures.matrix_heatmap(
        emb, f"embed = [{'; '.join(names) + '; ' if pre else ''}patch_embed] + E_pos: "
        f"{emb.shape[0]} tokens × {D} (row of patch {p} outlined)", highlight_row=p + pre,
        square=False, height=360, row_labels=token_names,
        row_ticks=figures.token_ticks(token_names, c.grid, figures.tick_gap(N + pre, 360)),
        y_title="token", x_title=f"embedding dimension (0 … {D - 1})", value_name="value",
        boundaries=(pre,) if pre else ()), key=EMBED_MATRIX)


def _sum_words(v: deck.View, f: dict) -> str:
    c, p = v.c, v.patch
    N, D, pre, names = c.num_patches, c.embed_dim, c.num_prefix_tokens, c.prefix_names
    return (f"{N} patch rows" + "".join(f" + 1 {n} row" for n in names)
            + f" = **{N + pre}** tokens of **{D}** numbers each"
            + (f"; patch {p} is token {p + pre}, because {' and '.join(names)} "
               f"{'comes' if pre == 1 else 'come'} first (tokens count from 0)."
               if pre else f"; with no CLS token, patch {p} is token {p}."))


def _positions_question(v: deck.View, _) -> Question:
    c, tr = v.c, v.tr
    if common.image_block_full(tr):
        right = 1
        order = (f"Attention and the MLP treat the tokens as a set: without positions, "
                 f"shuffling the patches would only reorder the patch tokens, and "
                 f"{common.reader(c)} would come out the same. The model could not tell the "
                 f"picture from its patches shuffled (try it on the Experiments page).")
    elif common.reads_prefix(c) and common.prefix_blind(tr):
        right = 2
        order = (f"Nothing the output could show: under the {tr.mask_kind} mask used here "
                 f"{common.prefix_sight(tr)}, in every block, so no patch reaches "
                 f"{common.output(c)}: they are the same for every image, and stay so without "
                 f"positions. The patch tokens themselves still get the order through the mask "
                 f"(token i sees exactly i + 1 keys); with a mask that lets every patch see "
                 f"every other, shuffled patches could not be told from the picture.")
    else:
        right = 3
        order = (f"Under the {tr.mask_kind} mask used here each token sees only the tokens "
                 f"before it (token i exactly i + 1 keys), so the order still reaches the model "
                 f"through the mask; with a mask that lets every patch see every other, "
                 f"shuffled patches could not be told from the picture.")
    return Question("What would break if there were no position embeddings?", order,
                    Choice(NO_POSITIONS, right))


# ---------------------------------------------------------------- a captioner's text rows
def _text_facts(v: deck.View) -> dict:
    with st.spinner("Writing its caption, one forward pass per word…"):
        gen, ids, text_tr = state.caption_pass(v.inp, v.name, mask=session.chosen_mask())
    n_img = v.c.num_image_tokens
    return {"caption": gen.text, "words": [tokenizer_for(v.model).vocab[i] for i in ids],
            "rows": text_tr["embed"][n_img:].numpy(), "n_img": n_img,
            "ext": extremes(text_tr["embed"][n_img:])}


def _text_alt(v: deck.View, f: dict) -> str:
    T, D = f["rows"].shape
    return describe.heatmap(f"the text rows of the sum, {T} tokens × {D}",
                            rows=f"the text tokens in order ({', '.join(f['words'])})",
                            cols=f"the {D} embedding dimensions", value="value", ext=f["ext"],
                            row_names=f["words"])


def _text_figure(v: deck.View, f: dict) -> None:
    D, words = v.c.embed_dim, f["words"]
    T = len(words)
    deck.chart(figures.matrix_heatmap(
        f["rows"], f"embed, text rows = E[word] + P_txt[t]: {T} tokens × {D}", square=False,
        height=120 + 22 * T, row_labels=words, row_ticks=words, y_title="text token",
        x_title=f"embedding dimension (0 … {D - 1})", value_name="value"), key=EMBED_TEXT)


def _text_words(v: deck.View, f: dict) -> str:
    n_img, T = f["n_img"], len(f["words"])
    return (f"Here the text is what the model read when it wrote the last token of its greedy "
            f"caption “{f['caption']}”: [SOS] and {T - 1} word{'' if T == 2 else 's'}, so "
            f"S = {n_img} + {T} = **{n_img + T}** tokens.")


def _text_notes(v: deck.View, f: dict) -> str:
    c = v.c
    return (f"A captioner's text joins the same sequence after its {f['n_img']} image tokens. "
            f"Each token's id picks one row of the word embedding E ({c.vocab_size}×"
            f"{c.embed_dim}), and its place t in the text adds row t of the text positions "
            f"P_txt ({c.max_text_len}×{c.embed_dim}).")


def _has_text(c) -> bool:
    return bool(c.has_text)




STEPS = (
    Step("vector", "One patch becomes a vector", _vector_figure, facts=_vector_facts,
         words=_vector_words, notes=_vector_notes, question=_same_we_question,
         describe=_vector_alt, controls=("patch",)),
    Step("filters", "What W_E looks for", _filters_figure, facts=_filters_facts,
         words=_filters_words, notes=_filters_notes, describe=_filters_alt,
         reads=(tour.weight_views,)),
)
SUM_STEPS = (
    Step("sum", "The sum that enters block 0", _sum_figure, facts=_sum_facts,
         words=_sum_words, question=_positions_question, describe=_sum_alt, controls=("patch",)),
    Step("text", "Then the text tokens", _text_figure, facts=_text_facts, words=_text_words,
         notes=_text_notes, describe=_text_alt, applies=_has_text, reads=(tour.caption_pass,)),
)
