"""Steps 3 and 4 of the Masks stage: the captioners' attention live under the prefix and the
causal mask, and how sure they are of each word of the caption the student types."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st

from ui import keys
from ui.drawing import describe, figures
from ui.drawing.numbers import pct
from ui.lesson import deck
from ui.selection import models as picker
from ui.serving import state
from ui.stages.masks.keys import MASK_LIVE, MASK_SCORES
from ui.stages.masks.view import Ctx, caption_input, side_by_side
from vit_core.explain.extremes import extremes
from vit_core.explain.generation import learning_curve
from vit_core.explain.mask_facts import least_sure


# ---------------------------------------------------------------- the captioners, live
@dataclass(frozen=True)
class Live:
    layer: int
    head: int
    patterns: list  # per run: [S, S] attention of that head
    labels: list  # per run: a name per token
    captions: list[str]  # per run: its greedy caption of this image
    metrics: list  # per run: the model card's held-out numbers ({} if none)
    curves: dict  # per trained captioner: its held-out learning curve {step: exact match}
    ranges: list  # per run: extremes of its pattern


def live_facts(x: Ctx) -> Live:
    layer, head = int(st.session_state[keys.MASK_LAYER]), int(st.session_state[keys.MASK_HEAD])
    patterns, labels, captions, metrics = [], [], [], []
    for m, kind in x.runs:
        c = x.models[m].config
        t = state.trace(x.inp, m, mask=kind, text_ids=x.enc.ids)
        patterns.append(t[f"blocks.{min(layer, c.depth - 1)}.attn.pattern"][
            min(head, c.num_heads - 1)].numpy())
        labels.append(figures.token_labels(c, x.fed))
        captions.append(state.greedy_caption(x.inp, m, kind))
        metrics.append(dict(x.models[m].info.metrics))
    curves = ({m: learning_curve(x.models[m].info.card) for m in x.captioners}
              if len(x.trained) == 2 else {})
    return Live(layer, head, patterns, labels, captions, metrics, curves,
                [extremes(z) for z in patterns])


def live_alt(x: Ctx, f: Live) -> str:
    lo, hi = min(e.lo for e in f.ranges), max(e.hi for e in f.ranges)
    said = [describe.heatmap(f"{m} under the {kind} mask, {len(tl)}×{len(tl)}",
                             rows="query tokens (who looks)", cols="key tokens (looked at)",
                             value="attention weight", ext=e, row_names=tl, col_names=tl)
            for (m, kind), tl, e in zip(x.runs, f.labels, f.ranges, strict=True)]
    return (f"{len(said)} heatmap{'s' if len(said) > 1 else ''} side by side, layer {f.layer}, "
            f"head {f.head}, with your caption, on one colour scale ({describe.num(lo)} … "
            f"{describe.num(hi)}). " + " ".join(said))


def live_figure(x: Ctx, f: Live) -> None:
    cc = x.cap.config
    left, right = st.columns(2)
    with left:
        st.slider("Layer", 0, cc.depth - 1, key=keys.MASK_LAYER,
                  help="The captioners' own blocks, numbered from 0.")
    with right:
        st.slider("Head", 0, cc.num_heads - 1, key=keys.MASK_HEAD)
    figs = []
    for (m, kind), z, tl in zip(x.runs, f.patterns, f.labels, strict=True):
        c = x.models[m].config
        ticks = figures.spaced_ticks(tl, c.grid, 200)
        figs.append(figures.matrix_heatmap(
            z, f"{m}, {kind} mask", colorscale="Viridis", zmid=None,
            x_title="key token (what is looked at)", y_title="query token (who looks)",
            value_name="attention weight", row_labels=tl, col_labels=tl, row_ticks=ticks,
            col_ticks=ticks, boundaries=(c.num_prefix_tokens, c.num_image_tokens)))
    lo = min(float(np.nanmin(z)) for z in f.patterns)  # one colour scale for both
    hi = max(float(np.nanmax(z)) for z in f.patterns)
    deck.chart(side_by_side(
        figs, [f"{m}, {kind} mask" for m, kind in x.runs],
        f"Layer {f.layer}, head {f.head}: the attention pattern with your caption (one scale)",
        440, spacing=0.1, colour=dict(colorscale="Viridis", cmin=lo, cmax=hi, colorbar=dict(
            thickness=10, title=dict(text="attention weight", side="right",
                                     font=dict(size=11))))),
        key=MASK_LIVE)


def _photo(x: Ctx) -> bool:
    return x.inp.label.startswith(("upload", "camera"))


def _untrained(x: Ctx) -> bool:
    return not all(x.models[m].info.trained for m in x.captioners)


def live_words(x: Ctx, f: Live) -> str:
    said = []
    if x.others:  # the page shows other models than the one chosen
        these = " and ".join(x.captioners)
        said.append(f"{these} {'are' if len(x.captioners) > 1 else 'is'} not "
                    f"{picker.plain_label(x.name)}: this stage needs a model with a text stream.")
        if x.trained and _photo(x):
            said.append("They know only this repository's generated scenes of shapes, so on a "
                        "photo their captions say which scene they would see in it, not what the "
                        "photo shows.")
    if _untrained(x):
        said.append("These captioners are untrained (random weights): the masks are real, the "
                    "patterns and captions are not.")
    one = len(x.captioners) == 1
    said.append("Greedy captions of this image: " + " and ".join(
        f"“{cap}” ({kind} mask)" if one else f"“{cap}” ({m})"
        for (m, kind), cap in zip(x.runs, f.captions, strict=True)) + ".")
    return " ".join(said)


def _story(x: Ctx, f: Live) -> str:
    """How the two trained captioners' held-out exact match ends, and stood early on."""
    ms = x.captioners
    story = ("On these scenes the two trained captioners end close (" + " vs ".join(
        f"{pct(x.models[m].info.metrics['exact_match'], 1)} {x.models[m].config.default_mask}"
        for m in ms) + " exact captions on 1000 held-out scenes)")
    early = min(set.intersection(*(set(cv) for cv in f.curves.values())), default=None)
    if early is not None:
        story += (f"; at step {early} of training they stood at "
                  + " vs ".join(pct(f.curves[m][early], 1) for m in ms) + " (model cards)")
    return story + "."


def live_notes(x: Ctx, f: Live) -> str:
    said = ["Rows are queries, columns are keys; white lines mark where the patches and where the "
            "text start. Under the prefix mask the image block is full; under the causal mask "
            "it is a triangle. The text rows have the same shape under both."]
    told = set()
    for (m, _), card in zip(x.runs, f.metrics, strict=True):
        if card.get("exact_match") is not None and m not in told:
            told.add(m)
            said.append(f"{m}, held-out (model card): exact caption {pct(card['exact_match'], 1)}"
                        f", token accuracy {pct(card['token_accuracy'], 1)}.")
    if f.curves:
        said.append(_story(x, f))
    return " ".join(said)


# ---------------------------------------------------------------- the caption's scores
@dataclass(frozen=True)
class Scores:
    scored: list  # per run: vit_core.explain.generation.Scored


def scores_facts(x: Ctx) -> Scores:
    return Scores([state.scores(x.inp, m, x.caption, mask=kind) for m, kind in x.runs])


def _run_name(x: Ctx, m: str, kind: str) -> str:
    return f"{kind} mask" if len(x.captioners) == 1 else f"{m} ({kind} mask)"


def scores_figure(x: Ctx, f: Scores) -> None:
    if x.presenting:  # the page has the box at the top; a slide has it here
        caption_input(x)
    first = f.scored[0]
    rows = []
    for i, (w, u) in enumerate(zip(first.words, first.unknown, strict=True)):
        row = {"word": w + (" (unknown → [UNK])" if u else "")}
        for (m, kind), s in zip(x.runs, f.scored, strict=True):
            if s.words != first.words:  # another tokenizer: its own words
                row[f"word, {_run_name(x, m, kind)}"] = s.words[i] if i < len(s.words) else ""
            row[f"P(word), {_run_name(x, m, kind)}"] = pct(s.probs[i], 1) if i < len(
                s.probs) else ""
        rows.append(row)
    st.dataframe(rows, hide_index=True, key=MASK_SCORES,
                 height="stretch" if x.presenting else "auto")


def scores_alt(x: Ctx, f: Scores) -> str:
    runs = ", ".join(_run_name(x, m, kind) for m, kind in x.runs)
    return describe.table(f"your caption's words, one per row, with the probability each gets "
                          f"from each run ({runs})", len(f.scored[0].words),
                          columns=["word", *(f"P(word), {_run_name(x, m, k)}" for m, k in x.runs)])


def scores_words(x: Ctx, f: Scores) -> str:
    said = []
    if _untrained(x):
        said.append("These captioners are untrained (random weights): the masks are real, the "
                    "probabilities are not.")
    least = []
    for (m, kind), s in zip(x.runs, f.scored, strict=True):
        i = least_sure(s.probs)
        if i is not None:
            least.append(f"“{s.words[i]}” ({pct(s.probs[i], 1)}) for {_run_name(x, m, kind)}")
    said.append("Each word's probability given the image and the words before it."
                + (" Least sure: " + "; ".join(least) + "." if least else ""))
    return " ".join(said)


def scores_notes(x: Ctx, f: Scores) -> str | None:
    said = [f.scored[0].notice] if f.scored and f.scored[0].notice else []
    if x.trained:
        said.append("The bundled captioners were trained with label smoothing 0.05, so a word "
                    "they are sure of gets about 95 %, not 100 %.")
    said.append("Teacher forcing: the whole caption goes in at once, and the mask keeps each "
                "position from reading the word it is scored on.")
    return " ".join(said)
