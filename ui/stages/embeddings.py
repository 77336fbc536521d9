"""Stage 2: patch vectors projected by W_E, CLS (and DIST) prepended, position embeddings added;
a captioner's text rows after them."""

from __future__ import annotations

import numpy as np
import streamlit as st

from vit_core.explain.flops import si, total_macs
from vit_core.explain.generation import tokenizer_for

from .. import deck, figures, keys, session, show, state
from ..deck import Choice, Number, Question, Step
from ..numbers import pct, span
from . import common

# The position-similarity note's wording thresholds (on mean cosines of position vectors,
# vit_core.explain.embeddings.position_distance_stats):
CLEAR_GAP = 0.2  # neighbours "clearly more alike" than distant positions by at least this ...
WEAK_GAP = 0.05  # ... "only a little more alike" from this gap, "hardly" under it
CHECKERBOARD = 0.05  # even-step pairs more alike than odd-step ones by this: "a checkerboard"
APART = 3  # the most alike pairs are "not neighbours": at least this many steps apart ...
ALIKE_GAP = 0.2  # ... and at least this much more alike than neighbours are on average
BORDER_GAP = 0.2  # border positions "alike among themselves": their mean cosine above the
#                   inner pairs' and the border-inner pairs' by at least this
SAME_CONFIDENCE = 0.05  # another size moves the top class's probability less than this: "about
#                         as sure"; from this on, "N points more / less sure"
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


def _intro(v: deck.View) -> str:
    c, tr = v.c, v.tr
    P, D = c.patch_size, c.embed_dim
    cpp = c.in_chans * P * P
    pre = c.num_prefix_tokens
    if not pre:
        prefix_text = "This model has no CLS token: the sequence is the patches alone. "
    else:
        prefix_text = (
            ("A learned CLS vector is then put in front of the patches. " if pre == 1 else
             "Two learned vectors, CLS and DIST, are then put in front of the patches (DeiT "
             "trains DIST to agree with a teacher network). ")
            + ("It has no pixels of its own, so anything it knows about the image must come "
               "from the patches through attention. " if pre == 1 else
               "They have no pixels of their own, so anything they know about the image must "
               "come from the patches through attention. "))
        if tr.mask_kind == "causal":
            whose = ("chosen in the sidebar" if session.chosen_mask() else
                     "this model's own, the one it was trained with")
            prefix_text += (f"Under the causal mask ({whose}), CLS is token 0 and may attend "
                            f"only to itself. ")
    return (f"Each flattened patch is multiplied by one learned matrix W_E ({cpp}×{D}) and "
            f"shifted by a bias b, giving a {D}-number embedding. The same W_E is used for every "
            f"patch, exactly like a convolution with a {P}×{P} kernel and stride {P}. "
            + prefix_text + "Finally a learned position vector is added to every token, because "
            "attention itself does not know where a patch came from.")


def _num(x: float) -> str:
    """Two decimals, never '-0.00'."""
    return f"{x:.2f}".replace("-0.00", "0.00")


def _cell(i: int, g: int) -> str:
    return f"{i} ({i // g},{i % g})"


# ---------------------------------------------------------------- one patch becomes a vector
def _vector_facts(v: deck.View) -> dict:
    c, p = v.c, v.patch
    W = v.model.patch_embed.proj.weight.detach().double().reshape(c.embed_dim, -1)  # [D, CPP]
    b = v.model.patch_embed.proj.bias.detach().double()
    by_hand = v.tr["patches"][p].double() @ W.T + b  # the equation, in float64
    traced = v.tr["patch_embed"][p]
    return {"embedding": traced.numpy(), "diff": float((by_hand - traced.double()).abs().max()),
            "first": by_hand[:5].numpy()}


def _vector_figure(v: deck.View, f: dict) -> None:
    p, D = v.patch, v.c.embed_dim
    deck.chart(figures.vector_strip(f["embedding"], f"x_p E + b for patch {p} (from the trace): "
                                    f"{D} values", height=140,
                                    x_title=f"embedding dimension (0 … {D - 1})",
                                    value_name="embedding value", y_title=f"patch {p}"),
               key=keys.EMBED_VECTOR)


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
    # the number of principal components there are: the rank of the centred D x C·P·P filters
    rank = min(c.embed_dim - 1, c.in_chans * c.patch_size ** 2)
    return {"filters": views["filters"], "ratio": ratio, "all": len(ratio) >= rank,
            "trained": bool(v.model.info.trained)}


def _filters_figure(v: deck.View, f: dict) -> None:
    c = v.c
    labels = [f"PC{i + 1} {pct(r)}" for i, r in enumerate(f["ratio"])]
    show.image(figures.tile([figures.array_image(a, 56) for a in f["filters"]],
                            cols=7 if v.presenting else 4, labels=labels),  # a page: a phone too
               f"The top {len(labels)} principal components of W_E's {c.embed_dim} filters, "
               f"each a {c.patch_size}×{c.patch_size} colour patch (ViT paper, Figure 7, left)",
               "embedding-filters")


def _filters_words(v: deck.View, f: dict) -> str:
    ratio, k = f["ratio"], len(f["ratio"])
    together = ("all of it" if f["all"] else pct(min(sum(ratio), 1.0)))
    said = (f"Each tile is a direction along which W_E's {v.c.embed_dim} filters differ: the "
            f"first explains {pct(ratio[0])} of their variance, the {k} shown {together}.")
    return said + ("" if f["trained"] else " Random weights give noise here.")


def _filters_notes(v: deck.View, _) -> str:
    return ("Each component is drawn with its values scaled so that its lowest is 0 and its "
            "highest full intensity in the R, G, B channels, as in the ViT paper's Figure 7, "
            "left; the percentage under it is the share of the filters' variance it explains.")


# ---------------------------------------------------------------- one position vs every position
def _position_facts(v: deck.View) -> dict:
    g, p = v.c.grid, v.patch
    sim = state.weight_views(v.name)["pos_sim"]
    r, col = divmod(p, g)
    row = np.asarray(sim[r, col], dtype=np.float64).reshape(-1)  # [g*g]
    idx = np.arange(g * g)
    steps = np.abs(idx // g - r) + np.abs(idx % g - col)
    others = np.flatnonzero(idx != p)
    best = int(others[np.argmax(row[others])]) if others.size else None
    near = steps == 1
    return {"map": np.asarray(sim[r, col]), "best": best,
            "best_cos": None if best is None else float(row[best]),
            "best_steps": None if best is None else int(steps[best]),
            "neighbours": int(near.sum()),
            "near_mean": float(row[near].mean()) if near.any() else None}


def _position_figure(v: deck.View, f: dict) -> None:
    p, g = v.patch, v.c.grid
    deck.chart(figures.grid_heatmap(
        f["map"], f"Patch {p}'s position vector vs every position (outlined: itself)",
        value_name="cosine similarity", selected=divmod(p, g), zmin=-1, zmax=1, height=330),
        key=keys.EMBED_POS_ONE)


def _position_words(v: deck.View, f: dict) -> str:
    p, g = v.patch, v.c.grid
    if f["best"] is None:
        return "The image is a single patch: its position vector has no other to compare with."
    d = f["best_steps"]
    said = (f"Patch {p}'s position vector is most like patch {_cell(f['best'], g)}'s, {d} "
            f"step{'' if d == 1 else 's'} away (cosine {_num(f['best_cos'])})")
    n = f["neighbours"]
    return said + (f"; its {n} neighbour{'' if n == 1 else 's'} average "
                   f"{_num(f['near_mean'])}." if n else ".")


def _position_notes(v: deck.View, _) -> str:
    return ("Cosine similarity of this patch's learned position vector with every patch's: 1 "
            "points the same way, 0 unrelated, −1 opposite. Steps count along rows and columns "
            "(|Δrow| + |Δcol|).")


# ---------------------------------------------------------------- every position's map
def _similarity_facts(v: deck.View) -> dict:
    views = state.weight_views(v.name)
    return {"sim": views["pos_sim"], "stats": views["pos_stats"],
            "trained": bool(v.model.info.trained)}


def _similarity_figure(v: deck.View, f: dict) -> None:
    g = v.c.grid
    deck.chart(figures.similarity_tiles(
        f["sim"], f"Every position's similarity map, laid out on the {g}×{g} grid (Figure 7, "
        "centre): tile (row, column) compares that patch with all positions",
        value_name="cosine similarity", selected=divmod(v.patch, g),
        height=480 if g > 4 else 360), key=keys.EMBED_POS_ALL)


def _apart(stats: dict, trained: bool) -> list:
    """The most alike pairs, when every one of them is far apart and much more alike than
    neighbours are on average (the map's brightest pattern then is not closeness); else []."""
    alike, near = stats.get("most_alike") or [], stats["near"]
    if not trained or not alike or near is None:
        return []
    apart = [a for a in alike if a[2] >= APART and a[3] >= near + ALIKE_GAP]
    return alike if len(apart) == len(alike) else []


def similarity_words(stats: dict, trained: bool = True) -> str:
    """Is position encoded as closeness in this model, how strongly, and (when they are far
    apart) where the most alike pairs are: worded from `position_distance_stats`."""
    near, two, far = stats["near"], stats["two"], stats["far"]
    if near is None:
        return "The image is a single patch, so there are no neighbouring positions to compare."
    parts = [f"neighbouring positions (1 step apart) have mean cosine similarity {_num(near)}"]
    if two is not None:
        parts.append(f"two steps apart {_num(two)}")
    if far is not None:
        parts.append(f"{stats['far_from']} or more steps apart {_num(far)}")
    text = ", ".join(parts)
    ref = far if far is not None else two
    if ref is None:
        return text[0].upper() + text[1:] + "."
    gap = near - ref
    if gap >= CLEAR_GAP and (two is None or near > two):
        verdict = ("neighbours are clearly more alike than distant positions, so these "
                   "position vectors encode the 2-D layout of the grid.")
    elif gap >= WEAK_GAP:
        verdict = ("neighbours are only a little more alike than distant positions, so "
                   "position is only weakly encoded as closeness in this model.")
    elif gap >= 0:
        verdict = ("neighbours are hardly more alike than distant positions, so position is "
                   "barely encoded as closeness in this model.")
    else:
        verdict = ("neighbours are no more alike than distant positions, so these position "
                   "vectors do not encode closeness.")
    if not trained:
        verdict = verdict[:-1] + " (random weights: nothing was learned)."
    text = text[0].upper() + text[1:] + ": " + verdict
    apart = _apart(stats, trained)
    if apart:  # the map's brightest pairs: not close
        steps = span(str(min(a[2] for a in apart)), str(max(a[2] for a in apart)))
        cos = span(_num(min(a[3] for a in apart)), _num(max(a[3] for a in apart)))
        text += (f" Yet the {len(apart)} most alike pairs of positions are not neighbours: "
                 f"{steps} steps apart (cosine {cos}).")
    return text


def border_words(stats: dict) -> str | None:
    """The border pattern, when positions on the grid's border are clearly more alike among
    themselves (BORDER_GAP) than inner positions are, and than border and inner."""
    bb, ii, bi = stats.get("border_border"), stats.get("inner_inner"), stats.get("border_inner")
    if bb is None or ii is None or bb - max(ii, bi) < BORDER_GAP:
        return None
    return (f"The strongest pattern is the border: positions on the grid's border are alike "
            f"among themselves (mean cosine {_num(bb)} over pairs of border positions), inner "
            f"positions hardly ({_num(ii)}), a border and an inner position {_num(bi)}.")


def similarity_notes(stats: dict, trained: bool = True) -> str | None:
    """The patterns under the headline: a checkerboard, and the most alike pairs by name."""
    said = []
    even, odd = stats["even"], stats["odd"]
    if even is not None and odd is not None and even - odd >= CHECKERBOARD:
        said.append(f"There is a checkerboard pattern: positions an even number of steps apart "
                    f"are more alike (mean {_num(even)}) than an odd number, 3 or more "
                    f"({_num(odd)}).")
    border = border_words(stats)
    if border:
        said.append(border)
    apart = _apart(stats, trained)
    if apart:
        g = stats["grid"]
        pairs = "; ".join(f"{_cell(a, g)} and {_cell(b, g)}: {d} steps, {_num(cos)}"
                          for a, b, d, cos, _ in apart)
        on_border = all(edge for *_, edge in apart)
        said.append(f"The {len(apart)} most alike pairs (patch (row,col)): {pairs}."
                    + (" All of them on the grid's border." if on_border else ""))
    said.append("Steps count along rows and columns (|Δrow| + |Δcol|); each mean is over all "
                "pairs of distinct patches that far apart.")
    return " ".join(said)


def _similarity_words(v: deck.View, f: dict) -> str:
    return similarity_words(f["stats"], f["trained"])


def _similarity_notes(v: deck.View, f: dict) -> str | None:
    return similarity_notes(f["stats"], f["trained"])


# ---------------------------------------------------------------- the sum entering block 0
def _sum_facts(v: deck.View) -> dict:
    c = v.c
    return {"embed": v.tr["embed"][: c.num_patches + c.num_prefix_tokens].numpy()}


def _sum_figure(v: deck.View, f: dict) -> None:
    c, p = v.c, v.patch
    N, D, pre, names = c.num_patches, c.embed_dim, c.num_prefix_tokens, c.prefix_names
    cpp = c.in_chans * c.patch_size ** 2
    prefix_tex = "".join(rf"x_\mathrm{{{n.lower()}}};\," for n in names)
    if not v.presenting:  # on a slide the matrix takes the height; its title says the sum
        st.latex(rf"z_0 = [\,{prefix_tex}x_p^1E+b;\dots;x_p^{{{N}}}E+b"
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
        boundaries=(pre,) if pre else ()), key=keys.EMBED_MATRIX)


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
            "rows": text_tr["embed"][n_img:].numpy(), "n_img": n_img}


def _text_figure(v: deck.View, f: dict) -> None:
    D, words = v.c.embed_dim, f["words"]
    T = len(words)
    deck.chart(figures.matrix_heatmap(
        f["rows"], f"embed, text rows = E[word] + P_txt[t]: {T} tokens × {D}", square=False,
        height=120 + 22 * T, row_labels=words, row_ticks=words, y_title="text token",
        x_title=f"embedding dimension (0 … {D - 1})", value_name="value"), key=keys.EMBED_TEXT)


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


# ---------------------------------------------------------------- at another input size
def same_place(p: int, g_from: int, g_to: int) -> int:
    """The patch of a g_to x g_to grid that holds the centre of patch p of a g_from grid."""
    r, c = divmod(p, g_from)
    return int((r + 0.5) * g_to / g_from) * g_to + int((c + 0.5) * g_to / g_from)


def _prediction(v: deck.View, name: str) -> tuple[str, float] | str | None:
    """What the model at this size says about the image: (top class, its probability) for a
    classifier, its greedy caption for a captioner, None for a headless encoder."""
    c = state.get_model(name).config
    if c.num_classes:
        probs = state.logits(v.inp, name, mask=session.chosen_mask()).double().softmax(-1)
        k = int(probs.argmax())
        return (c.class_names[k] if c.class_names else f"class {k}"), float(probs[k])
    if c.has_text:
        return state.greedy_caption(v.inp, name, mask=session.chosen_mask())
    return None


def _size_facts(v: deck.View) -> dict:
    own, other = state.size_pair(v.name)
    out = {}
    for which, name in (("own", own), ("other", other)):
        c = state.get_model(name).config
        views = state.weight_views(name)
        S = c.num_image_tokens
        out[which] = {"size": c.img_size, "grid": c.grid, "N": c.num_patches, "S": S,
                      "pairs": S * S, "macs": total_macs(c),  # image tokens only
                      "sim": views["pos_sim"], "near": views["pos_stats"]["near"],
                      "said": _prediction(v, name)}
    g_here, g_own, g_other = v.c.grid, out["own"]["grid"], out["other"]["grid"]
    chosen = other != own and v.name == other  # the session runs at the other size
    p_own = same_place(v.patch, g_here, g_own) if chosen else v.patch
    p_other = v.patch if chosen else same_place(v.patch, g_here, g_other)
    for which, p in (("own", p_own), ("other", p_other)):
        g = out[which]["grid"]
        out[which]["patch"] = p
        out[which]["map"] = np.asarray(out[which]["sim"][p // g, p % g])
    out.update(chosen=chosen, same=other == own, pair_ratio=out["other"]["pairs"] /
               out["own"]["pairs"], macs_ratio=out["other"]["macs"] / out["own"]["macs"])
    return out


def _size_figure(v: deck.View, f: dict) -> None:
    o, n = f["own"], f["other"]
    deck.chart(figures.grid_heatmap_pair(
        o["map"], n["map"],
        (f"its own {o['size']} px: {o['grid']}×{o['grid']} positions, as trained",
         f"at {n['size']} px: resampled to {n['grid']}×{n['grid']}"),
        f"Patch {o['patch']}'s position vector vs every position, and the same place's at "
        f"{n['size']} px (outlined: itself)", value_name="cosine similarity",
        selected=(divmod(o["patch"], o["grid"]), divmod(n["patch"], n["grid"]))),
        key=keys.EMBED_POS_SIZES)


def _said(at: dict) -> str:
    said = at["said"]
    if isinstance(said, tuple):
        return f"{said[0]} ({pct(said[1])})"
    return f"“{said}”"


def size_words(f: dict) -> str:
    """N, the attention cost and the prediction at both sizes, worded from `_size_facts`."""
    o, n = f["own"], f["other"]
    if f["same"]:
        return (f"This model reads only its own {o['size']} px: no other multiple of its patch "
                f"size fits between half and twice it.")
    text = ("" if f["chosen"] else f"Choose **Input size** in the sidebar to run every page at "
            f"another size; here, {n['size']} px. ")
    text += (f"At {n['size']} px the model reads N = {n['grid']}×{n['grid']} = **{n['N']}** "
             f"patches instead of {o['N']} at its own {o['size']} px "
             f"({n['N'] / o['N']:.2f}×). Each head of each block scores S² = {n['S']}² = "
             f"{n['pairs']:,} query–key pairs instead of {o['S']}² = {o['pairs']:,}: "
             f"**{f['pair_ratio']:.2f}×**, the square of the token ratio; the whole pass costs "
             f"{si(n['macs'])} multiply-adds instead of {si(o['macs'])} "
             f"({f['macs_ratio']:.2f}×).")
    if o["said"] is None:
        return text + " A headless encoder makes no prediction to compare."
    text += (f" On this image: {_said(o)} at {o['size']} px, {_said(n)} at {n['size']} px")
    if isinstance(o["said"], tuple):
        (a, pa), (b, pb) = o["said"], n["said"]
        change = pb - pa
        if a != b:
            text += ": another class."
        elif abs(change) < SAME_CONFIDENCE:
            text += ": the same class, about as sure."
        else:
            text += (f": the same class, {abs(change) * 100:.0f} points "
                     f"{'more' if change > 0 else 'less'} sure.")
    else:
        text += ": " + ("the same caption." if o["said"] == n["said"] else "another caption.")
    return text


def _size_words(v: deck.View, f: dict) -> str:
    return size_words(f)


def _size_notes(v: deck.View, f: dict) -> str:
    o, n = f["own"], f["other"]
    near = ("" if o["near"] is None or n["near"] is None else
            f" Neighbouring positions average cosine {_num(o['near'])} on the {o['grid']}×"
            f"{o['grid']} grid and {_num(n['near'])} on the resampled one.")
    return ("The weights do not depend on the image size, except the position embeddings: one "
            "learned vector per patch of the grid the model was trained on. At another size the "
            "grid changes, so the vectors are interpolated bicubically to the new grid (each of "
            "the D dimensions as an image), as timm does; the CLS (and DIST) position is kept. "
            "Attention compares every token with every token, so its cost grows with the square "
            "of the number of tokens." + near)


def _size_question(v: deck.View, f: dict) -> Question | None:
    o, n = f["own"], f["other"]
    if f["same"]:
        return None
    r = round((n["S"] / o["S"]) ** 2, 2)  # the tokens of the two grids drawn
    return Question(
        f"The image goes from {o['size']} to {n['size']} px. How many times as many query–key "
        f"pairs does each attention head score?",
        f"(S′ / S)² = ({n['S']} / {o['S']})² = **{r:.2f}×**: the number of tokens grows "
        f"{n['S'] / o['S']:.2f}×, and attention pairs every token with every token, so its "
        f"cost grows with the square.",
        Number(r, tolerance=round(max(0.1, 0.05 * r), 2), unit="×",
               prompt="Times as many pairs"))


STAGE = deck.Stage(
    slug="embeddings",
    title="2 · Patch embeddings and positions",
    story="One learned matrix turns every patch row into an embedding. Most ViTs add a learned "
          "CLS token to the list, and a position vector is added to each token so the model "
          "knows where it came from.",
    view=deck.load,
    intro=_intro,
    steps=(
        Step("vector", "One patch becomes a vector", _vector_figure, facts=_vector_facts,
             words=_vector_words, notes=_vector_notes, question=_same_we_question,
             controls=("patch",)),
        Step("filters", "What W_E looks for", _filters_figure, facts=_filters_facts,
             words=_filters_words, notes=_filters_notes, reads=("weight_views",)),
        Step("position", "One position against every position", _position_figure,
             facts=_position_facts, words=_position_words, notes=_position_notes,
             controls=("patch",), reads=("weight_views",)),
        Step("similarity", "Every position's similarity map", _similarity_figure,
             facts=_similarity_facts, words=_similarity_words, notes=_similarity_notes,
             controls=("patch",), reads=("weight_views",)),
        Step("sum", "The sum that enters block 0", _sum_figure, facts=_sum_facts,
             words=_sum_words, question=_positions_question, controls=("patch",)),
        Step("text", "Then the text tokens", _text_figure, facts=_text_facts, words=_text_words,
             notes=_text_notes, applies=_has_text, reads=("caption_pass",)),
        Step("size", "At another input size", _size_figure, facts=_size_facts, words=_size_words,
             notes=_size_notes, question=_size_question,
             asks=("other", "own", "same"), controls=("patch",),
             reads=("size_views",)),
    ),
)
