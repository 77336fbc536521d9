"""The embeddings stage at another input size: the position vectors resampled to another grid,
what the pass then costs (vit_core.explain.embeddings.input_cost) and what the model says."""

from __future__ import annotations

import numpy as np

from ui.drawing import describe, figures
from ui.drawing.numbers import pct, points
from ui.lesson import deck
from ui.lesson.deck import Number, Question, Step
from ui.selection import session
from ui.serving import state
from ui.serving.tour import Ask
from ui.stages.embeddings.keys import EMBED_POS_SIZES
from ui.stages.embeddings.positions import num as _num
from vit_core.explain.embeddings import cost_ratios, input_cost
from vit_core.explain.extremes import extremes
from vit_core.explain.flops import si
from vit_core.explain.lens import top_class

SAME_CONFIDENCE = 0.05  # another size moves the top class's probability less than this: "about
#                         as sure"; from this on, "N points more / less sure"


def same_place(p: int, g_from: int, g_to: int) -> int:
    """The patch of a g_to x g_to grid that holds the centre of patch p of a g_from grid."""
    r, c = divmod(p, g_from)
    return int((r + 0.5) * g_to / g_from) * g_to + int((c + 0.5) * g_to / g_from)


def _prediction(v: deck.View, name: str) -> tuple[str, float] | str | None:
    """What the model at this size says about the image: (top class, its probability) for a
    classifier, its greedy caption for a captioner, None for a headless encoder."""
    c = state.get_model(name).config
    if c.num_classes:
        k, p = top_class(state.logits(v.inp, name, mask=session.chosen_mask()))
        return (c.class_names[k] if c.class_names else f"class {k}"), p
    if c.has_text:
        return state.greedy_caption(v.inp, name, mask=session.chosen_mask())
    return None


def _size_facts(v: deck.View) -> dict:
    own, other = state.size_pair(v.name)
    out = {}
    for which, name in (("own", own), ("other", other)):
        views = state.weight_views(name)
        out[which] = {**input_cost(state.get_model(name).config),  # image tokens only
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
        out[which]["ext"] = extremes(out[which]["map"])
    ratio = cost_ratios(out["own"], out["other"])
    out["other"]["vs_own"] = ratio  # the question's: read off the drawn side
    out.update(chosen=chosen, same=other == own, patch_ratio=ratio["N"],
               pair_ratio=ratio["pairs"], macs_ratio=ratio["macs"])
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
        key=EMBED_POS_SIZES)


def _size_alt(v: deck.View, f: dict) -> str:
    o, n = f["own"], f["other"]
    return (f"Two heatmaps side by side on one colour scale of cosine similarity (−1 … 1), "
            f"rows and columns the patch rows and columns. Left, at its own {o['size']} px: patch "
            f"{o['patch']}'s position vector against every position of the {o['grid']}×"
            f"{o['grid']} grid, {describe.span(o['ext'])}. Right, at {n['size']} px: the same "
            f"place, patch {n['patch']}, on the {n['grid']}×{n['grid']} grid, "
            f"{describe.span(n['ext'])}.")


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
             f"({f['patch_ratio']:.2f}×). Each head of each block scores S² = {n['S']}² = "
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
            text += (f": the same class, {points(change)} "
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
    r, grows = n["vs_own"]["pairs_2dp"], n["vs_own"]["S"]  # the tokens of the two grids drawn
    return Question(
        f"The image goes from {o['size']} to {n['size']} px. How many times as many query–key "
        f"pairs does each attention head score?",
        f"(S′ / S)² = ({n['S']} / {o['S']})² = **{r:.2f}×**: the number of tokens grows "
        f"{grows:.2f}×, and attention pairs every token with every token, so its "
        f"cost grows with the square.",
        Number(r, tolerance=round(max(0.1, 0.05 * r), 2), unit="×",
               prompt="Times as many pairs"))



def size_views(a: Ask) -> list:
    """What the read-ahead computes for the step: both sizes' position maps and predictions."""
    items = []
    for name in dict.fromkeys(state.size_pair(a.name)):
        c = state.get_model(name).config
        items.append(lambda name=name: state.weight_views(name))
        if c.num_classes:
            items.append(lambda name=name: state.logits(a.inp, name, mask=a.mask))
        elif c.has_text:
            items.append(lambda name=name: state.greedy_caption(a.inp, name, a.mask))
    return items

STEPS = (
    Step("size", "At another input size", _size_figure, facts=_size_facts, words=_size_words,
         notes=_size_notes, question=_size_question, describe=_size_alt,
         asks=("other", "own", "same"), controls=("patch",),
         reads=(size_views,)),
)
