"""Stage 7: logits, as the model family has them. A classifier: its class probabilities under a
temperature, the raw logits, and the logit lens. A captioner: the caption written word by word,
and a typed caption scored. A model without a head: its final token vector, and which patches
point like it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import streamlit as st
import torch

from vit_core import allowed_keys
from vit_core.config import MASK_KINDS
from vit_core.explain.lens import logit_lens
from vit_core.explain.readout import (
    UNIFORM_ENTROPY,
    UNIFORM_MOVED,
    distribution,
    headless_summary,
    image_blind,
    lens_lines,
    lens_summary,
)

from .. import deck, figures, keys, models, player, session, show, state
from ..deck import Choice, Number, Question, Step
from ..numbers import pct, pct_at_least

CONFIDENT = 0.75  # "confident": at least this much on the top class ...
CLEAR_LEAD = 5.0  # ... and at least this many times the runner-up's probability
LEANS = 0.5  # "leans to" the top class: at least this much on it (below: "no class gets half")
TOGETHER = 3  # ... and then what the top this-many classes hold together is said
RIVALS_NAMED = 3  # classes on top on the way that the lens words name; the rest are counted
TOP_BARS = 5  # the classifier's bars: the most probable this-many classes
WORD_BARS = 8  # the captioner's bars: the most likely this-many next words
SLIDE_ROWS = 8  # a scored caption on a slide shows this many rows (the rest scroll)
CAPTION = "a red ball on the grass"  # the caption scored until the student types one


@dataclass(frozen=True)
class Ctx:
    """The stage's view and the sidebar's mask (None: the one the model was trained with)."""

    v: deck.View
    mask: str | None

    def __getattr__(self, name):  # the view's fields (inp, tr, c, …)
        return getattr(self.v, name)

    @property
    def masked(self) -> str:
        """' (under the causal mask)' when the sidebar chose a mask, else ''."""
        return "" if self.mask is None else f" (under the {self.tr.mask_kind} mask)"

    @property
    def names(self) -> list[str]:
        c = self.c
        return list(c.class_names) or [f"class {k}" for k in range(c.num_classes)]


# The stage's own widgets, with their first values. Each is drawn by one step, so in presenter
# mode it is not drawn while another step shows; its value is written back at every run (before
# any widget), so it stays instead of Streamlit dropping it, and the widgets take no default.
WIDGETS = {keys.CLASS_TEMPERATURE: 1.0, keys.TEMPERATURE: 0.0, keys.TOP_K: 0, keys.GEN_SEED: 0,
           keys.CAPTION: CAPTION}


def view() -> Ctx:
    ss = st.session_state
    for key, first in WIDGETS.items():
        ss[key] = ss.get(key, first)
    return Ctx(deck.load(), session.chosen_mask())


def _classifier(c) -> bool:
    return c.num_classes > 0


def _captioner(c) -> bool:
    return not c.num_classes and c.has_text


def _headless(c) -> bool:
    return not c.num_classes and not c.has_text


# ---------------------------------------------------------------- wording of the read-out
def readout_words(c) -> str:
    """How this model's class head turns the final tokens into K logits, as one sentence."""
    K = c.num_classes
    if c.global_pool == "avg":
        return (f"The {c.num_patches} final patch tokens"
                + ("" if c.fc_norm else ", after the final LayerNorm,") + " are averaged"
                + (" (CLS is left out)" if c.class_token else "")
                + (", the mean goes through one more LayerNorm (fc_norm)," if c.fc_norm else "")
                + f" and one linear layer gives one score (logit) per class, {K} in all.")
    if c.dist_token:
        return (f"The final CLS token and the final DIST token (after the final LayerNorm) each "
                f"go through their own linear layer, and the two sets of {K} scores (logits) "
                f"are averaged.")
    return (f"Only the final CLS token is used: after the final LayerNorm, one linear layer "
            f"gives one score (logit) per class, {K} in all.")


def readout_path(c) -> str:
    """The path from the residual stream to the logits, short: for the logit lens."""
    if c.global_pool == "avg":
        return ("the mean of the patch tokens → fc_norm → class head" if c.fc_norm else
                "final LayerNorm → the mean of the patch tokens → class head")
    if c.dist_token:
        return "final LayerNorm → CLS and DIST through their two heads, averaged"
    return "final LayerNorm → CLS token → class head"


DOUBTED = 0.1  # a caption word "doubted" by the model: below this probability
AGREES = 0.5  # the model "agrees with the caption": every word at least this likely


def scored_column(sees_ahead: bool = False) -> str:
    """The heading of a scored caption's probabilities: what each position could see. Under a
    mask where a text position also sees the words after it (full), that is the whole caption."""
    return "P(word | image, whole caption)" if sees_ahead else "P(word | image, words before)"


def caption_note(scored, sees_ahead: bool = False) -> str:
    """One sentence on a scored caption, worded from its probabilities: the least and the most
    likely word, and whether the model agrees with the caption.

    Args:
        sees_ahead: each text position also saw the words after it (the full mask): every word
            fed was then scored by a position that could read that very word, so the scores are
            not predictions from the words before.
    """
    if not scored.words:
        return "There is nothing to score: type a caption."
    pairs = list(zip(scored.words, scored.probs, strict=True))
    low = min(pairs, key=lambda wp: wp[1])
    high = max(pairs, key=lambda wp: wp[1])
    doubted = [w for w, p in pairs if p < DOUBTED]
    listed = ", ".join(f"“{w}”" for w in doubted[:4]) + (" …" if len(doubted) > 4 else "")
    if sees_ahead:
        # [EOS] is scored (last) only when the caption fitted, and it is never fed
        eos = scored.words[-1] == "[EOS]"
        head = (f"Every word gets at least {pct(low[1], 1)} (the least likely is “{low[0]}”)."
                if low[1] >= AGREES else
                f"The least likely word is “{low[0]}” at {pct(low[1], 1)}, the most likely "
                f"“{high[0]}” at {pct(high[1], 1)}"
                + (f"; the model doubts {listed} (under {pct(DOUBTED)})." if doubted else "."))
        return head + (" But under the full mask every text position also sees the words after "
                       "it: " + ("every word but [EOS]" if eos else "every word")
                       + " is scored by a position that can read that very word, so a high "
                       "score can come from reading the word rather than predicting it.")
    if low[1] >= AGREES:
        return (f"Every word gets at least {pct(low[1], 1)} (the least likely is “{low[0]}”), so "
                f"the model agrees with this caption for this image.")
    return (f"The least likely word is “{low[0]}” at {pct(low[1], 1)}, the most likely “{high[0]}” "
            f"at {pct(high[1], 1)}"
            + (f"; the model doubts {listed} (under {pct(DOUBTED)}) after the words before them."
               if doubted else "."))


def blind_words(c, mask_kind: str) -> str:
    """Why the prediction cannot see the image (readout.image_blind), as a sentence."""
    who = ("CLS (token 0) may attend only to itself"
           + (", and DIST only to CLS and itself" if c.dist_token else ""))
    reads, them = ("CLS and DIST", "them") if c.dist_token else ("CLS", "it")
    return (f"Under the {mask_kind} mask {who}: no patch ever reaches {them}, and the class head "
            f"reads only {reads}, so this prediction is the same for every picture.")


def distribution_words(probs, names: list[str], temperature: float, image_blind: bool = False,
                       outside: bool = False) -> str:
    """One sentence on how sure the shown distribution is, from its top probability, the
    runner-up's, and the entropy (against the uniform 1/K and log K).

    Args:
        image_blind: the distribution cannot depend on the image (readout.image_blind): then it
            is not told as the model's view of this picture.
        outside: the image is outside what the model knows (a photo on a model of generated
            scenes, ui/models.honesty_note): a clear lead is not called confidence.
    """
    d = distribution(probs, TOGETHER)
    K = d["K"]
    (top, p1), *rest = d["leaders"]
    text = (f"At T = {temperature:g} the top class, {names[top]}, has {pct(p1, 1)}; the "
            f"entropy is {d['entropy']:.2f} nats of a possible {d['max_entropy']:.2f}")
    if image_blind:
        return text + ": the same for every picture, so it says nothing about this one."
    if d["near_uniform"]:
        return text + f", so the distribution is close to uniform (1/{K} = {pct(1 / K, 1)} each)."
    if not rest:
        return text + "."
    second, p2 = rest[0]
    runner = f"the runner-up, {names[second]}, has {pct(p2, 1)}"
    if p1 >= CONFIDENT and p1 >= CLEAR_LEAD * p2:
        if outside:
            return (text + f": {names[top]} leads clearly ({runner}), but this model knows only "
                    f"its generated scenes, so on a photo a clear lead does not make it right.")
        return text + f": the model is confident ({runner})."
    if p1 >= LEANS:
        return text + f": the model leans to {names[top]} but is not sure: {runner}."
    together = sum(p for _, p in d["leaders"])
    return (text + f": no class gets half the probability; {runner}, and the top "
            f"{len(d['leaders'])} together hold {pct(together, 1)}.")


def _where(rows: int) -> list[str]:
    """The name of each lens row: 'the embedding', 'block 0', …"""
    return ["the embedding"] + [f"block {i}" for i in range(rows - 1)]


def _depths(rows: list[int]) -> str:
    """Lens rows (0: after the embedding, l + 1: after block l) as words: runs of consecutive
    blocks joined ("the embedding", "block 1", "blocks 2–4", "the embedding to block 1")."""
    runs, start = [], rows[0]
    for a, b in zip(rows, [*rows[1:], None], strict=True):
        if b != a + 1:
            runs.append((start, a))
            start = b
    out = []
    for a, b in runs:
        if a == b:
            out.append("the embedding" if a == 0 else f"block {a - 1}")
        else:
            out.append(f"the embedding to block {b - 1}" if a == 0 else f"blocks {a - 1}–{b - 1}")
    return ", ".join(out)


def lens_words(lens_probs, names: list[str]) -> str:
    """The logit lens told in numbers: the first read-out, every class that led on the way (and
    how high it got), where the final answer takes the lead for good, and how sure it ends.

    Args:
        lens_probs: [L + 1, K] probabilities; row 0 read after the embedding, row l + 1 after
            block l.
    """
    s = lens_summary(lens_probs)
    K = s["K"]
    if s["all_near_uniform"]:
        return (f"Every read-out is close to uniform (its entropy at least "
                f"{pct(UNIFORM_ENTROPY)} of the maximum, and at most {pct(UNIFORM_MOVED)} of "
                f"the probability away from an even split): the most any class gets at any "
                f"depth is {pct_at_least(s['p_max'])}, {s['p_max'] * K:.1f}× the even "
                f"1/{K} = {pct_at_least(1 / K)}.")
    final, lead = s["final"], s["lead"]
    text = (f"Read after the embedding the top guess is {names[s['first']]} at "
            f"{pct(s['p_first'], 0)} (entropy {s['first_entropy']:.2f} of a possible "
            f"{np.log(K):.2f} nats" + (", close to uniform)" if s["first_near_uniform"] else ")"))
    if lead == 0:
        return text + f" and it stays on top at every depth, ending at {pct(s['p_final'], 0)}."
    rivals = s["rivals"]
    if rivals:  # every class on top before the final answer took over, where and how high
        said = [f"{names[k]} is on top after {_depths(rows)} "
                + (f"({pct(peak, 0)})" if len(rows) == 1 else f"(up to {pct(peak, 0)})")
                for k, rows, peak in rivals[:RIVALS_NAMED]]
        more = len(rivals) - RIVALS_NAMED
        text += ("; on the way " + ", then ".join(said)
                 + (f", and {more} more class{'es' if more > 1 else ''}" if more > 0 else ""))
    return text + (f"; {names[final]} leads from {_where(s['rows'])[lead]} on and ends at "
                   f"{pct(s['p_final'], 0)}.")


# ---------------------------------------------------------------- the stage's intro
def _intro(x: Ctx) -> str:
    c = x.c
    if _classifier(c):
        return (f"{readout_words(c)} Softmax turns the scores into probabilities. Dividing the "
                f"logits by a temperature before the softmax makes the distribution sharper "
                f"(T < 1) or flatter (T > 1) without changing which class wins.")
    if _headless(c):
        return (f"{models.plain_label(x.name)} has no class head, so there are no class logits: "
                f"its output is the final token vectors themselves ({c.embed_dim} numbers "
                f"each).")
    return ("An image-to-text model reads the image tokens and then the text so far, starting "
            "with [SOS]. At every text position it produces one logit per word of its "
            "vocabulary: its guess for the next word. Generation picks a word, appends it, and "
            "runs again.")


# ---------------------------------------------------------------- the temperature question
TEMPERATURE_Q = "What does temperature change, and what does it never change?"
TEMPERATURE = Choice((  # its options: the right one (true for any logits) and misconceptions
    "Which one is on top; never how sure it looks",
    "How sure it looks; never which one is on top",
    "The logits' order; never the probabilities",
    "Nothing at all: the softmax undoes it"), right=1)


# ---------------------------------------------------------------- classifier: the answer
def _temperature() -> float:
    return float(st.session_state[keys.CLASS_TEMPERATURE])


def _temperature_slider() -> None:
    """The classifier's temperature, drawn with the bars; the lens's lines follow it too (on a
    slide of their own, with the T chosen on the bars' slide: view() keeps it)."""
    st.slider("Temperature T", 0.1, 5.0, step=0.1, key=keys.CLASS_TEMPERATURE,
              help="The logits are divided by T before the softmax.")


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
    probs = (logits / T).softmax(-1).numpy()
    return Answer(T, logits, probs, int(np.argmax(probs)), image_blind(x.c, x.tr.mask),
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
    left.latex(_equation(x.c))
    with right:
        _temperature_slider()
    k = min(TOP_BARS, K)
    deck.chart(figures.top_k_bars(f.probs, x.names, k=k,
                                  title=f"top {k} of {K} classes at T = {f.T:g}",
                                  x_title="probability", y_title="class"), key=keys.LOGITS_TOPK)


def _answer_words(x: Ctx, f: Answer) -> str:
    p = float(f.probs[f.best])
    return (f"Prediction{x.masked}: **{x.names[f.best]}** with {pct(p, 1)} at T = {f.T:g} "
            f"(logit {float(f.logits[f.best]):.2f}). "
            + distribution_words(f.probs, x.names, f.T, image_blind=f.blind, outside=f.outside))


def _answer_notes(x: Ctx, f: Answer) -> str | None:
    return blind_words(x.c, x.tr.mask_kind) if f.blind else None


def _answer_question(x: Ctx, f: Answer) -> Question:
    """Read off the bars at the slider's T: how sure the top class looks, and that it stays."""
    best = x.names[int(np.argmax(f.probs))]
    return Question(TEMPERATURE_Q,
                    f"How sure the probabilities look: at T = {f.T:g} the chart gives the top "
                    f"class, {best}, {pct(float(np.max(f.probs)), 1)}; a lower T makes it surer, "
                    f"a higher one flatter (move the slider). Never the order: dividing every "
                    f"logit by the same T > 0 keeps every inequality, so {best} stays on top.",
                    TEMPERATURE)


# ---------------------------------------------------------------- classifier: raw logits
def _raw_facts(x: Ctx) -> np.ndarray:
    return x.tr.logits.double().numpy()


def _raw_figure(x: Ctx, z: np.ndarray) -> None:
    deck.chart(figures.logit_bars(z, x.names), key=keys.LOGITS_RAW)


def _raw_words(x: Ctx, z: np.ndarray) -> str:
    names, K = x.names, len(z)
    order = np.argsort(-z)
    text = f"The head gives {K} raw scores (logits), from {z.min():.2f} to {z.max():.2f}"
    if K > 1:
        a, b = f"{z[order[0]]:.2f}", f"{z[order[1]]:.2f}"  # the gap between the printed values
        text += (f"; {names[order[0]]} is highest at {a}, {float(a) - float(b):.2f} above "
                 f"{names[order[1]]} ({b})")
    return text + (". Softmax reads only their differences: adding one number to every logit "
                   "would change no probability.")


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
    lens = (logit_lens(x.model, x.tr) / T).softmax(-1).numpy()  # [L + 1, K]
    drawn, left_out = lens_lines((x.tr.logits / T).softmax(-1).numpy(), lens)
    return Lens(T, lens, drawn, left_out, x.model.info.trained)


def _lens_figure(x: Ctx, f: Lens) -> None:
    c, names = x.c, x.names
    deck.chart(figures.line_chart(
        ["embed"] + [f"block {i}" for i in range(c.depth)],
        {names[k]: f.probs[:, k] for k in f.drawn},
        f"P(class) if the network stopped after each block (T = {f.T:g})", "read out after",
        "probability"), key=keys.LOGITS_LENS)


def _lens_words(x: Ctx, f: Lens) -> str:
    return lens_words(f.probs, x.names)


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


# ---------------------------------------------------------------- headless: the final vector
def _vector_facts(x: Ctx) -> dict:
    return headless_summary(x.tr)


def _vector_figure(x: Ctx, s: dict) -> None:
    tok, D = s["token"], x.c.embed_dim
    ln = "" if x.c.fc_norm else r"\mathrm{LN}"
    st.latex(rf"z_\mathrm{{out}} = {ln}(z_L^\mathrm{{{tok.split()[0]}}})\in"
             rf"\mathbb{{R}}^{{{D}}}")
    deck.chart(figures.vector_strip(
        s["vector"].numpy(), f"the final {tok} vector ({D} dimensions)",
        x_title="dimension of D", value_name="value", row_names=[tok], y_title="token"),
        key=keys.LOGITS_RAW)


def _vector_words(x: Ctx, s: dict) -> str:
    dims = ", ".join(f"{i} ({v:+.2f})" for i, v in s["top_dims"])
    return (f"Here is the final {s['token']} vector, the one that stands for the whole image. "
            f"Its norm is {s['norm']:.2f}; its largest dimensions are {dims}.")


def _headless_question(x: Ctx, _) -> Question:
    return Question(TEMPERATURE_Q, "This model has no head, so there are no logits to divide by "
                                   "a temperature: its output is the final token vectors.",
                    Choice(TEMPERATURE.options))  # it does not apply: nobody is marked


# ---------------------------------------------------------------- headless: similar patches
def _similar_figure(x: Ctx, s: dict) -> None:
    g = x.c.grid
    sim = s["similarity"].reshape(g, g).numpy()
    show.image(figures.with_scale(figures.overlay(x.prep.crop, sim), float(sim.min()),
                                  float(sim.max()), "cosine similarity", fmt="{:.2f}"),
               f"cosine similarity of each final patch vector with the {s['token']} vector",
               "final-token-similarity", width=320)


def _similar_words(x: Ctx, s: dict) -> str:
    near = ", ".join(f"patch {i} ({c:.2f})" for i, c in s["nearest"])
    return (f"The patches pointing most like it are {near}. Without a head the model gives "
            f"vectors, not answers.")


def _similar_notes(x: Ctx, s: dict) -> str:
    return (f"Cosine similarity of each patch's final vector with the {s['token']} vector: 1 "
            f"is the same direction, 0 at right angles, −1 opposite. The map is coloured from "
            f"its lowest value to its highest, both printed under it.")


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
    if ss.get(keys.GEN_FOR) != signature:
        ss[keys.GEN_FOR], ss[keys.GEN_STEPS] = signature, 0
    with st.spinner("Writing the caption, one forward pass per word…"):
        # The whole caption once per settings (greedy ignores the seed, so it shares the
        # overview's); each step is a prefix of it, so Next token costs no forward pass.
        gen = state.generation(x.inp, x.name, temperature=temperature, top_k=top_k or None,
                               seed=seed if temperature > 0 else None, mask=x.mask)
    steps = int(ss[keys.GEN_STEPS])
    p = gen.probs[steps].numpy() if steps < len(gen.words) else None
    return Writing(temperature, top_k, gen, steps, p, 0 if p is None else int((p > 0).sum()))


def _set_steps(n: int) -> None:
    st.session_state[keys.GEN_STEPS] = n


def _writing_figure(x: Ctx, f: Writing) -> None:
    c, gen, n = x.c, f.gen, len(f.gen.words)
    head_w = "E^\\top" if c.tie_text_head else "W_\\mathrm{vocab}"
    formula = (rf"Z = \mathrm{{LN}}(X_L)[{c.num_image_tokens}{{:}}]\,{head_w} \in "
               rf"\mathbb{{R}}^{{T\times {c.vocab_size}}}")
    if x.presenting:  # on a slide the formula and the settings share a row
        first, *cols = st.columns([3, 2, 2, 2], vertical_alignment="bottom")
        first.latex(formula)
    else:
        st.latex(formula)
        cols = st.columns(3)
    cols[0].slider("Temperature (0 = greedy)", 0.0, 2.0, step=0.1, key=keys.TEMPERATURE)
    cols[1].number_input("Top-k (0 = all)", 0, c.vocab_size, key=keys.TOP_K)
    cols[2].number_input("Sampling seed", 0, 10_000, key=keys.GEN_SEED)

    def rewind() -> None:
        """Play from [SOS] when the caption is already written out."""
        if st.session_state[keys.GEN_STEPS] >= n:
            st.session_state[keys.GEN_STEPS] = 0

    def next_word() -> bool:
        st.session_state[keys.GEN_STEPS] = min(st.session_state[keys.GEN_STEPS] + 1, n)
        return st.session_state[keys.GEN_STEPS] < n

    b = st.columns(4)
    b[0].button("Next token", key=keys.GEN_NEXT, on_click=next_word)
    b[1].button("Run to end", key=keys.GEN_ALL, on_click=_set_steps, args=(n,))
    b[2].button("Start again", key=keys.GEN_RESET, on_click=_set_steps, args=(0,))
    player.play("caption", keys.PLAY_CAPTION, rewind, next_word, where=b[3],
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
            x_title="probability", y_title="word"), key=keys.GEN_DIST)


def _writing_words(x: Ctx, f: Writing) -> str:
    gen = f.gen
    if f.probs is None:
        return (f"Finished: “{gen.text}” (the model wrote [EOS])." if gen.words and
                gen.words[-1] == "[EOS]" else
                f"Finished: “{gen.text}” (the {x.c.max_text_len} text positions ran out before "
                f"[EOS]).")
    top = int(np.argmax(f.probs))
    tallest = f"“{x.c.vocab[top]}” at {pct(float(f.probs[top]), 1)}"
    if f.temperature == 0:
        return f"Word {f.steps + 1}: greedy takes the tallest bar, {tallest}."
    return (f"Word {f.steps + 1} is drawn at random from these probabilities, so a less likely "
            f"word can come out; the tallest bar is {tallest}.")


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
    best = int(np.argmax(f.probs))
    word = list(x.c.vocab)[best]
    return Question(TEMPERATURE_Q,
                    f"How sure the distribution looks: the chart's most likely next word, "
                    f"“{word}”, gets {pct(float(f.probs[best]), 1)}; a lower temperature makes it "
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
    ahead = kind in MASK_KINDS and bool(allowed_keys(kind, x.c.num_image_tokens, 2)[-2, -1])
    return Scoring(scored, ahead)


def _scoring_figure(x: Ctx, f: Scoring) -> None:
    st.text_input("Type a caption", key=keys.CAPTION, max_chars=2000)
    if f.scored.notice:
        st.warning(f.scored.notice)
    column = scored_column(f.ahead)
    s = f.scored
    rows = [{"word": w + (" (unknown → [UNK])" if u else ""), column: f"{p:.2%}"}
            for w, p, u in zip(s.words, s.probs, s.unknown, strict=True)]
    st.dataframe(rows, hide_index=True, key=keys.CAPTION_SCORES,  # on a slide: its first rows
                 height=(min(len(rows), SLIDE_ROWS) + 1) * 35 + 3 if x.presenting else "auto")


def _scoring_words(x: Ctx, f: Scoring) -> str:
    return caption_note(f.scored, sees_ahead=f.ahead)


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


STAGE = deck.Stage(
    slug="logits",
    title="7 · Logits",
    story="The head reads the final tokens (the CLS token, or the mean of the patch tokens, as "
          "this model was built): a classifier's linear layer gives a score per class, and "
          "softmax makes them probabilities. A captioner writes word by word; a model without "
          "a head hands over its final vectors.",
    view=view,
    intro=_intro,
    steps=(
        Step("answer", "From the last layer to an answer", _answer_figure, facts=_answer_facts,
             words=_answer_words, notes=_answer_notes, question=_answer_question,
             asks=("probs", "T"),
             applies=_classifier),
        Step("raw", "The raw logits", _raw_figure, facts=_raw_facts, words=_raw_words,
             notes=_raw_notes, applies=_classifier),
        Step("lens", "The logit lens: how the answer forms", _lens_figure, facts=_lens_facts,
             words=_lens_words, notes=_lens_notes, question=_lens_question,
             asks=("probs", "trained"),
             applies=_classifier),
        Step("caption", "Writing the caption, word by word", _writing_figure,
             facts=_writing_facts, words=_writing_words, notes=_writing_notes,
             question=_writing_question, asks=("probs",), reads=("generation",),
             applies=_captioner),
        Step("score", "Score your own caption", _scoring_figure, facts=_scoring_facts,
             words=_scoring_words, notes=_scoring_notes, reads=("scores",),
             applies=_captioner),
        Step("vector", "The final token vector", _vector_figure, facts=_vector_facts,
             words=_vector_words, question=_headless_question, applies=_headless),
        Step("similar", "Which patches point like it", _similar_figure, facts=_vector_facts,
             words=_similar_words, notes=_similar_notes, applies=_headless),
    ),
)
