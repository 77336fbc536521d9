"""A captioner's steps: the caption written word by word, and a typed caption scored."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import streamlit as st

from ui import keys
from ui.drawing import describe, figures
from ui.drawing.equation import latex
from ui.drawing.numbers import pct, percent
from ui.lesson import deck, player
from ui.lesson.deck import Question
from ui.serving import state
from ui.stages.logits.base import (
    SLIDE_ROWS,
    TEMPERATURE,
    TEMPERATURE_Q,
    WORD_BARS,
    Ctx,
)
from ui.stages.logits.keys import (
    CAPTION_SCORES,
    GEN_ALL,
    GEN_DIST,
    GEN_FOR,
    GEN_NEXT,
    GEN_RESET,
    GEN_STEPS,
    PLAY_CAPTION,
)
from ui.stages.logits.words import (
    caption_note,
    scored_column,
)
from vit_core.explain.logit_facts import caption_scores, live_words, sees_ahead, top_of


# ---------------------------------------------------------------- captioner: writing
@dataclass(frozen=True)
class Writing:
    temperature: float
    top_k: int  # 0: every word
    gen: Any  # vit_core.Generation for these settings
    steps: int  # words shown so far
    probs: np.ndarray | None  # the next word's distribution; None when the caption is written
    live: int  # words that keep any probability in it


def _writing_facts(x: Ctx) -> Writing:
    ss = st.session_state
    temperature = float(ss[keys.TEMPERATURE])
    top_k, seed = int(ss[keys.TOP_K]), int(ss[keys.GEN_SEED])
    if top_k > x.c.vocab_size:  # kept from a captioner with a larger vocabulary
        ss[keys.TOP_K] = top_k = x.c.vocab_size
    signature = (x.inp.key, x.name, x.mask, temperature, top_k, seed)
    if ss.get(GEN_FOR) != signature:
        ss[GEN_FOR], ss[GEN_STEPS] = signature, 0
    with st.spinner("Writing the caption, one forward pass per word…"):
        # The whole caption once per settings (greedy ignores the seed, so it shares the
        # overview's); each step is a prefix of it, so Next token costs no forward pass.
        gen = state.generation(x.inp, x.name, temperature=temperature, top_k=top_k or None,
                               seed=seed if temperature > 0 else None, mask=x.mask)
    steps = int(ss[GEN_STEPS])
    p = gen.probs[steps].numpy() if steps < len(gen.words) else None
    return Writing(temperature, top_k, gen, steps, p, 0 if p is None else live_words(p))


def _set_steps(n: int) -> None:
    st.session_state[GEN_STEPS] = n


def _writing_figure(x: Ctx, f: Writing) -> None:
    c, gen, n = x.c, f.gen, len(f.gen.words)
    head_w = "E^\\top" if c.tie_text_head else "W_\\mathrm{vocab}"
    formula = (rf"Z = \mathrm{{LN}}(X_L)[{c.num_image_tokens}{{:}}]\,{head_w} \in "
               rf"\mathbb{{R}}^{{T\times {c.vocab_size}}}")
    if x.presenting:  # on a slide the formula and the settings share a row
        first, *cols = st.columns([3, 2, 2, 2], vertical_alignment="bottom")
        latex(formula, first)
    else:
        latex(formula)
        cols = st.columns(3)
    cols[0].slider("Temperature (0 = greedy)", 0.0, 2.0, step=0.1, key=keys.TEMPERATURE)
    cols[1].number_input("Top-k (0 = all)", 0, c.vocab_size, key=keys.TOP_K)
    cols[2].number_input("Sampling seed", 0, 10_000, key=keys.GEN_SEED)

    def rewind() -> None:
        """Play from [SOS] when the caption is already written out."""
        if st.session_state[GEN_STEPS] >= n:
            st.session_state[GEN_STEPS] = 0

    def next_word() -> bool:
        st.session_state[GEN_STEPS] = min(st.session_state[GEN_STEPS] + 1, n)
        return st.session_state[GEN_STEPS] < n

    b = st.columns(4)
    b[0].button("Next token", key=GEN_NEXT, on_click=next_word)
    b[1].button("Run to end", key=GEN_ALL, on_click=_set_steps, args=(n,))
    b[2].button("Start again", key=GEN_RESET, on_click=_set_steps, args=(0,))
    player.play("caption", PLAY_CAPTION, rewind, next_word, where=b[3],
                help=f"Write the caption one word every {player.PLAY_EVERY:g} s.")
    st.subheader("[SOS] " + " ".join(gen.words[:f.steps]) + (" …" if n > f.steps else ""))
    # the next word's distribution; once the caption is written, the last word's (the chart
    # stays on the slide when Play or "Run to end" reaches the end)
    shown = f.steps if f.probs is not None else n - 1
    if shown >= 0:
        probs = f.probs if f.probs is not None else gen.probs[shown].numpy()
        deck.chart(figures.top_k_bars(
            probs, list(c.vocab), k=min(WORD_BARS, len(probs)),
            title=f"P(word {shown + 1} | image, words before)"
            + (f" at T = {f.temperature:g}" if f.temperature > 0 else "")
            + (f": it wrote “{gen.words[shown]}”" if f.probs is None else ""),
            x_title="probability", y_title="word"), key=GEN_DIST)


def _writing_words(x: Ctx, f: Writing) -> str:
    gen = f.gen
    if f.probs is None:
        return (f"Finished: “{gen.text}” (the model wrote [EOS])." if gen.words and
                gen.words[-1] == "[EOS]" else
                f"Finished: “{gen.text}” (the {x.c.max_text_len} text positions ran out before "
                f"[EOS]).")
    top, p = top_of(f.probs)
    tallest = f"“{x.c.vocab[top]}” at {pct(p, 1)}"
    if f.temperature == 0:
        return f"Word {f.steps + 1}: greedy takes the tallest bar, {tallest}."
    return (f"Word {f.steps + 1} is drawn at random from these probabilities, so a less likely "
            f"word can come out; the tallest bar is {tallest}.")


def _writing_describe(x: Ctx, f: Writing) -> str | None:
    gen, n = f.gen, len(f.gen.words)
    shown = f.steps if f.probs is not None else n - 1  # the distribution the chart draws
    if shown < 0:
        return None
    probs = f.probs if f.probs is not None else gen.probs[shown].numpy()
    order = np.argsort(-probs)[:min(WORD_BARS, len(probs))]
    return (f"Above the chart, the caption so far: “[SOS] {' '.join(gen.words[:f.steps])}”. "
            + describe.bars(f"the {len(order)} most likely words for word {shown + 1}",
                             [f"“{x.c.vocab[i]}”" for i in order], probs[order],
                             lambda p: pct(p, 1),
                             axis="one row per word, across: probability from 0 to 100%"))


def _writing_notes(x: Ctx, f: Writing) -> str | None:
    if f.probs is None:
        return None
    n_bars = min(WORD_BARS, len(f.probs))
    zero = n_bars - min(f.live, n_bars)  # words top-k (or float underflow) leaves at 0
    kept = (f" Top-k = {f.top_k}: only the {f.live} most likely words keep any probability, "
            f"renormalised to sum to 1." if f.top_k else "")
    return ((f"The {n_bars} most likely next words{x.masked}" if not zero else
             f"The {n_bars - zero} most likely next words{x.masked} (and {zero} words at 0 %)")
            + (": greedy takes the tallest bar." if f.temperature == 0 else
               f", from softmax(logits / {f.temperature:g}); the next word is sampled from it.")
            + kept)


def _writing_question(x: Ctx, f: Writing) -> Question:
    """Read off the next-word bars the chart draws now."""
    if f.probs is None:
        return Question(TEMPERATURE_Q, "Temperature reshapes each next-word distribution before "
                                       "a word is picked; the caption is written out, so no "
                                       "distribution is drawn now (Next token from the start "
                                       "draws one).", TEMPERATURE)
    best, p = top_of(f.probs)
    word = list(x.c.vocab)[best]
    return Question(TEMPERATURE_Q,
                    f"How sure the distribution looks: the chart's most likely next word, "
                    f"“{word}”, gets {pct(p, 1)}; a lower temperature makes it "
                    f"surer, a higher one flatter. Never the order: dividing every logit by the "
                    f"same T > 0 keeps every inequality, so “{word}” stays the most likely.",
                    TEMPERATURE)


# ---------------------------------------------------------------- captioner: a typed caption
@dataclass(frozen=True)
class Scoring:
    scored: Any  # vit_core.Scored
    ahead: bool  # under this mask a text position also sees the words after it (full)


def _scoring_facts(x: Ctx) -> Scoring:
    text = st.session_state[keys.CAPTION]
    scored = state.scores(x.inp, x.name, text, mask=x.mask)
    kind = x.tr.mask_kind
    ahead = sees_ahead(kind, x.c.num_image_tokens)
    return Scoring(scored, ahead)


def _scoring_figure(x: Ctx, f: Scoring) -> None:
    st.text_input("Type a caption", key=keys.CAPTION, max_chars=2000)
    if f.scored.notice:
        st.warning(f.scored.notice)
    column = scored_column(f.ahead)
    s = f.scored
    rows = [{"word": w + (" (unknown → [UNK])" if u else ""), column: percent(p, 2)}
            for w, p, u in zip(s.words, s.probs, s.unknown, strict=True)]
    st.dataframe(rows, hide_index=True, key=CAPTION_SCORES,  # on a slide: its first rows
                 height=(min(len(rows), SLIDE_ROWS) + 1) * 35 + 3 if x.presenting else "auto")


def _scoring_words(x: Ctx, f: Scoring) -> str:
    return caption_note(f.scored, sees_ahead=f.ahead)


def _scoring_describe(x: Ctx, f: Scoring) -> str:
    s = f.scored
    column = scored_column(f.ahead)
    rows = [{"word": w, column: p} for w, p in zip(s.words, s.probs, strict=True)]
    if not rows:
        return "Under the caption's field, an empty table: no word to score."
    c = caption_scores(s.words, s.probs, 0.0)
    return describe.table(
        "the typed caption's words in order, each with its probability", rows,
        f"The least likely word is “{c.low[0]}” at {percent(c.low[1], 2)}, the most likely "
        f"“{c.high[0]}” at {percent(c.high[1], 2)}.")


def _scoring_notes(x: Ctx, f: Scoring) -> str | None:
    said = []
    if x.name.startswith("shapes-captioner"):
        said.append("Trained with label smoothing 0.05: a word the model is sure of gets about "
                    "95 %, not 100 %.")
    if f.ahead:
        said.append(f"Under the {x.tr.mask_kind} mask every text position also sees the words "
                    f"after it, so each word is scored by a position that can see the whole "
                    f"caption: not a prediction from the words before.")
    return " ".join(said) or None
