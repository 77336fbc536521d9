"""Stage 5: attention masks. Who may look at whom: full, causal and bidirectional-prefix; the
captioners' attention live under the prefix and causal masks, how sure they are of a caption the
student types, a classifier put under a causal mask, and windowed attention (Swin's local
windows, shifted on alternate blocks) with what it saves and, for the bundled classifier, what
it costs in top-1."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from vit_core import allowed_keys
from vit_core.explain.flops import si
from vit_core.explain.generation import learning_curve, tokenizer_for
from vit_core.explain.windows import window_cost
from vit_core.io.ref import ModelRef
from vit_core.masks import window_keys, window_name, window_of

from .. import deck, figures, inputs, keys, state, tour
from .. import models as picker
from ..deck import Choice, Number, Question, Step
from ..numbers import pct
from .common import image_block_full, window_sizes

KINDS = ("full", "causal", "prefix")  # the three masks drawn side by side
SAME_LOGITS = 1e-4  # causal logits on two pictures closer than this are "the same"
NO_PEEKING = Choice((  # why text must not see later words: the right reason and misconceptions
    "The text comes after the image, so it must go last",
    "Attention over later words would cost too much",
    "It would learn to copy the next word, not to predict it",
    "Later words are padding with nothing in them"), right=2)
BOTH_WAYS = Choice((  # why image patches may see each other both ways
    "The patches have no positions, so order cannot matter",
    "Nothing is predicted from the image, so nothing can leak",
    "Attention both ways is cheaper to compute",
    "A causal mask works only on text tokens"), right=1)
CLS_KNOWS = (  # what CLS knows under a causal mask; right: "nothing" when the model has a CLS
    "Everything: it still sees every patch",
    "Only the first patch of the image",
    "Nothing about the image: it sees only itself",
    "The top half of the image")


# ---------------------------------------------------------------- the stage's view
@dataclass(frozen=True)
class Ctx:
    """The session's view and what the steps share: the captioners shown (the two bundled ones,
    else the chosen one, else a preset), the (captioner, mask) pairs run live, the classifier put
    under a causal mask, and the caption the student typed, as the first captioner reads it."""

    v: deck.View
    captioners: list[str]
    runs: list[tuple[str, str]]
    clf: str
    models: dict[str, Any]
    caption: str
    enc: Any  # vit_core.io.text.Encoding of `caption` by the first captioner's tokenizer
    fed: list[str]  # the words fed after [SOS], [UNK] where the vocabulary has none

    def __getattr__(self, name):  # the view's fields (inp, name, tr, c, …)
        return getattr(self.v, name)

    @property
    def cap(self):
        return self.models[self.captioners[0]]

    @property
    def trained(self) -> list[str]:
        """The bundled (trained) captioners among those shown."""
        return [m for m in self.captioners if m in tour.BUNDLED]

    @property
    def others(self) -> bool:
        """The captioners shown are other models than the one chosen."""
        return self.name not in self.captioners


def _keep(key: str, default, limit: int | None = None) -> None:
    """Keep a widget's value while a presenter step without that widget runs (Streamlit drops
    the value of a widget a run does not draw); clamp a slider to this captioner."""
    ss = st.session_state
    value = ss.get(key, default)
    ss[key] = value if limit is None else min(max(int(value), 0), limit - 1)


def view() -> Ctx:
    v = deck.load()
    captioners, runs, clf = tour.masks_page_models(v.name, v.model)
    models = {m: state.get_model(m) for m in captioners}
    cc = models[captioners[0]].config
    _keep(keys.MASK_CAPTION, tour.MASK_CAPTION)
    _keep(keys.MASK_LAYER, cc.depth - 1, cc.depth)
    _keep(keys.MASK_HEAD, 0, cc.num_heads)
    sizes = window_sizes(v.c)
    if sizes and st.session_state.get(keys.MASK_WINDOW) not in sizes:  # first visit, or a model
        st.session_state[keys.MASK_WINDOW] = min(tour.WINDOW_SIZE, sizes[-1])  # with fewer
    elif sizes:
        _keep(keys.MASK_WINDOW, tour.WINDOW_SIZE)
    caption = str(st.session_state[keys.MASK_CAPTION])
    tok = tokenizer_for(models[captioners[0]])
    enc = tok.encode(caption, max_len=cc.max_text_len)
    fed = ["[UNK]" if i == tok.unk_id else w for w, i in zip(enc.words, enc.ids, strict=True)]
    return Ctx(v, captioners, runs, clf, models, caption, enc, fed)


def _intro(x: Ctx) -> str:
    return ("An image-to-text model puts the image tokens first and the text after them, in one "
            "sequence. A mask M is added to the scores before the softmax: 0 where a query may "
            "read a key, −∞ where it may not, which the softmax turns into a weight of exactly 0. "
            "The mask decides what each token can know. Text must never see words after it "
            "(otherwise training would let it copy the answer), but the image has no order, so "
            "its patches may as well see each other in both directions: that is the prefix mask.")


def _caption_input(x: Ctx) -> None:
    """The caption fed to the captioners' text stream (its value kept by `view`)."""
    st.text_input("Caption fed to the text stream", key=keys.MASK_CAPTION, max_chars=2000)
    if x.enc.notice:
        st.warning(x.enc.notice)


def side_by_side(figs: list, titles: list[str], title: str, height: int,
                 colour: dict | None = None, spacing: float = 0.08):
    """One plotly figure holding `figs` (single-subplot figures) in a row, each under its title:
    their traces, axes (square cells kept), lines and labels. `colour`: a colour axis the
    heatmaps share (one scale for maps that are compared), e.g. {"colorscale": ..., "cmin": ...,
    "colorbar": ...}."""
    more = dict(title=dict(text=title, font=dict(size=14)), height=height,
                margin=dict(l=0, r=0, t=60, b=0), showlegend=False)
    if colour is not None:
        more["coloraxis"] = colour
    return figures.panels(figs, titles, spacing=spacing, coloraxis=colour is not None, more=more)


# ---------------------------------------------------------------- the three masks
@dataclass(frozen=True)
class Tokens:
    n_img: int
    n_txt: int
    labels: list[str]  # a name per token of the captioner's sequence

    @property
    def S(self) -> int:
        return self.n_img + self.n_txt


def _tokens(x: Ctx) -> Tokens:
    cc = x.cap.config
    return Tokens(cc.num_image_tokens, len(x.enc.ids), figures.token_labels(cc, x.fed))


@st.cache_resource(max_entries=16, show_spinner=False)
def _same_for_every_image(what: str, key: tuple, _build):
    """A key figure that depends on the model's shape, the caption and the controls in `key`,
    never on the image: built once for every student of the class (a big heatmap is most of
    a run's time). Shared and read-only: deck.chart copies a figure before changing it."""
    return _build()


def _three_figure(x: Ctx, f: Tokens) -> None:
    left, right = st.columns([2, 3], vertical_alignment="center")
    with left:
        _caption_input(x)
    with right:
        st.latex(r"A = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right),\quad "
                 r"M_{ij}\in\{0, -\infty\}")
    grid = x.cap.config.grid

    def build():
        ticks = figures.spaced_ticks(f.labels, grid, 190)
        figs = [figures.mask_figure(allowed_keys(k, f.n_img, f.n_txt).numpy(), f.n_img, k,
                                    labels=f.labels, ticks=ticks) for k in KINDS]
        return side_by_side(figs, [f"{k}: {f.S}×{f.S}" for k in KINDS],
                            "Three masks over the same tokens (light: may look; dark: −∞)", 360,
                            spacing=0.12)

    key = (f.n_img, f.n_txt, tuple(f.labels), grid)
    deck.chart(_same_for_every_image("three masks", key, build), key=keys.MASKS_THREE)


def _three_words(x: Ctx, f: Tokens) -> str:
    cc = x.cap.config
    pre = " + ".join(cc.prefix_names)
    n = f.n_txt - 1
    return (f"{x.captioners[0]}: **{f.n_img}** image tokens ({pre + ' + ' if pre else ''}"
            f"{cc.num_patches} patches) + **{f.n_txt}** text tokens ([SOS] + {n} "
            f"word{'' if n == 1 else 's'}) = S = **{f.S}**. Full lets every token see every other; "
            f"causal, itself and the tokens before it; prefix, the whole image, and the text only "
            f"up to itself.")


def _three_notes(x: Ctx, f: Tokens) -> str:
    return (f"On the axes pN is patch N; the text rows and columns are [SOS] and then, in "
            f"order, {' '.join(x.fed[1:]) or 'no words'} (where they do not fit, only some are "
            f"printed). Orange lines split the image tokens from the text: the four blocks are "
            f"who looks (rows) and who is looked at (columns).")


def _three_question(x: Ctx, _) -> Question:
    c = x.c
    if c.has_text:
        mine = (f" This model reads up to {c.max_text_len} text tokens after its "
                f"{c.num_image_tokens} image tokens and was trained with the {c.default_mask} "
                f"mask.")
    else:
        mine = " (This model reads no text; the captioners do.)"
    return Question("Why must text not see later words during training?",
                    "In training the whole caption goes in at once, and each position is asked "
                    "for the next word. If it could see that word it would learn to copy it, and "
                    "when writing a new caption, where the next word does not exist yet, it would "
                    "have learned nothing." + mine, NO_PEEKING)


# ---------------------------------------------------------------- how many keys each query sees
def _visible_facts(x: Ctx) -> dict:
    f = _tokens(x)
    return {"tokens": f, "visible": {k: allowed_keys(k, f.n_img, f.n_txt).sum(1).numpy()
                                     for k in ("causal", "prefix")}}


def _visible_figure(x: Ctx, f: dict) -> None:
    t = f["tokens"]
    deck.chart(figures.visible_keys_chart(
        f["visible"], t.labels, figures.spaced_ticks(t.labels, x.cap.config.grid, 760,
                                                     figures.TURNED_GAP_PX), t.n_img),
        key=keys.MASK_VISIBLE)


def _visible_words(x: Ctx, f: dict) -> str:
    return ("What to notice: the prefix and causal masks differ only in the image block; the "
            "text rows are identical. What changes is what the image tokens know by the time the "
            "text reads them: under the causal mask the early patches never see the rest of the "
            "image.")


def _visible_notes(x: Ctx, f: dict) -> str:
    cc, n_img = x.cap.config, f["tokens"].n_img
    pre = cc.num_prefix_tokens
    first = (f"{cc.prefix_names[0]} (token 0) sees only itself and patch p (token p + {pre}) "
             f"sees p + {pre + 1} tokens" if pre else
             "patch 0 sees only itself and patch p sees p + 1 tokens")
    return (f"Under the causal mask token i sees i + 1 tokens: {first}. Under the prefix mask "
            f"every image token sees all {n_img} image tokens. A text token sees the same keys "
            f"under both: every image token, and the text up to itself. A causal mask also tells "
            f"each token its position: token i sees exactly i + 1 keys.")


def _visible_question(x: Ctx, _) -> Question:
    n_img = x.c.num_image_tokens
    where = "Here" if not x.others else f"In {picker.plain_label(x.name)}"
    if image_block_full(x.tr):
        here = f"{where}, under the {x.tr.mask_kind} mask, all {n_img} image tokens see each other."
    else:
        here = (f"{where}, under the {x.tr.mask_kind} mask, they do not: image token i sees only "
                f"tokens 0 … i.")
    return Question("Why may the image patches see each other both ways?",
                    "The image is given whole and nothing is predicted from it patch by patch, so "
                    "there is nothing to leak: every patch may use every other. " + here,
                    BOTH_WAYS)


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


def _live_facts(x: Ctx) -> Live:
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
    return Live(layer, head, patterns, labels, captions, metrics, curves)


def _live_figure(x: Ctx, f: Live) -> None:
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
    lo = min(float(np.nanmin(z)) for z in f.patterns)
    hi = max(float(np.nanmax(z)) for z in f.patterns)
    deck.chart(side_by_side(
        figs, [f"{m}, {kind} mask" for m, kind in x.runs],
        f"Layer {f.layer}, head {f.head}: the attention pattern with your caption (one scale)",
        440, spacing=0.1, colour=dict(colorscale="Viridis", cmin=lo, cmax=hi, colorbar=dict(
            thickness=10, title=dict(text="attention weight", side="right",
                                     font=dict(size=11))))),
        key=keys.MASK_LIVE)


def _photo(x: Ctx) -> bool:
    return x.inp.label.startswith(("upload", "camera"))


def _live_words(x: Ctx, f: Live) -> str:
    said = []
    if x.others:  # the page shows other models than the one chosen
        these = " and ".join(x.captioners)
        said.append(f"{these} {'are' if len(x.captioners) > 1 else 'is'} not "
                    f"{picker.plain_label(x.name)}: this stage needs a model with a text stream.")
        if x.trained and _photo(x):
            said.append("They know only this repository's generated scenes of shapes, so on a "
                        "photo their captions say which scene they would see in it, not what the "
                        "photo shows.")
    if not all(x.models[m].info.trained for m in x.captioners):
        said.append("These captioners are untrained (random weights): the masks are real, the "
                    "patterns and captions are not.")
    one = len(x.captioners) == 1
    said.append("Greedy captions of this image: " + " and ".join(
        f"“{cap}” ({kind} mask)" if one else f"“{cap}” ({m})"
        for (m, kind), cap in zip(x.runs, f.captions, strict=True)) + ".")
    return " ".join(said)


def _live_notes(x: Ctx, f: Live) -> str:
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
        ms = x.captioners
        story = ("On these scenes the two trained captioners end close (" + " vs ".join(
            f"{pct(x.models[m].info.metrics['exact_match'], 1)} {x.models[m].config.default_mask}"
            for m in ms) + " exact captions on 1000 held-out scenes)")
        early = min(set.intersection(*(set(cv) for cv in f.curves.values())), default=None)
        if early is not None:
            story += (f"; at step {early} of training they stood at "
                      + " vs ".join(pct(f.curves[m][early], 1) for m in ms) + " (model cards)")
        said.append(story + ".")
    return " ".join(said)


# ---------------------------------------------------------------- the caption's scores
@dataclass(frozen=True)
class Scores:
    scored: list  # per run: vit_core.explain.generation.Scored


def _scores_facts(x: Ctx) -> Scores:
    return Scores([state.scores(x.inp, m, x.caption, mask=kind) for m, kind in x.runs])


def _run_name(x: Ctx, m: str, kind: str) -> str:
    return f"{kind} mask" if len(x.captioners) == 1 else f"{m} ({kind} mask)"


def _scores_figure(x: Ctx, f: Scores) -> None:
    if x.presenting:  # the page has the box at the top; a slide has it here
        _caption_input(x)
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
    st.dataframe(rows, hide_index=True, key=keys.MASK_SCORES,
                 height="stretch" if x.presenting else "auto")


def _scores_words(x: Ctx, f: Scores) -> str:
    said = []
    if not all(x.models[m].info.trained for m in x.captioners):
        said.append("These captioners are untrained (random weights): the masks are real, the "
                    "probabilities are not.")
    least = []
    for (m, kind), s in zip(x.runs, f.scored, strict=True):
        if s.probs:
            i = int(np.argmin(s.probs))
            least.append(f"“{s.words[i]}” ({pct(s.probs[i], 1)}) for {_run_name(x, m, kind)}")
    said.append("Each word's probability given the image and the words before it."
                + (" Least sure: " + "; ".join(least) + "." if least else ""))
    return " ".join(said)


def _scores_notes(x: Ctx, f: Scores) -> str | None:
    said = [f.scored[0].notice] if f.scored and f.scored[0].notice else []
    if x.trained:
        said.append("The bundled captioners were trained with label smoothing 0.05, so a word "
                    "they are sure of gets about 95 %, not 100 %.")
    said.append("Teacher forcing: the whole caption goes in at once, and the mask keeps each "
                "position from reading the word it is scored on.")
    return " ".join(said)


# ---------------------------------------------------------------- a classifier, causal
@dataclass(frozen=True)
class Classifier:
    names: list[str]
    full: np.ndarray  # its probabilities with full attention
    causal: np.ndarray  # ... under a causal mask
    gap: float  # the largest difference of its causal logits on another picture
    other_seed: int  # that picture (a sample scene)


def _classifier_facts(x: Ctx) -> Classifier:
    k = state.get_model(x.clf).config
    names = list(k.class_names) or [f"class {i}" for i in range(k.num_classes)]
    causal = state.logits(x.inp, x.clf, mask="causal")
    other_seed, other = tour.other_sample(x.inp)
    gap = float((state.logits(other, x.clf, mask="causal") - causal).abs().max())
    return Classifier(names, state.logits(x.inp, x.clf, mask="full").softmax(-1).numpy(),
                      causal.softmax(-1).numpy(), gap, other_seed)


def _classifier_titles(x: Ctx) -> list[str]:
    label = picker.plain_label(x.clf)
    as_trained = " (as trained)" if state.get_model(x.clf).info.source == "bundled" else ""
    return [f"{label}, full attention{as_trained}", f"{label}, causal mask"]  # a file: unknown


def _classifier_figure(x: Ctx, f: Classifier) -> None:
    bars = [figures.top_k_bars(p, f.names, x_title="probability") for p in (f.full, f.causal)]
    deck.chart(side_by_side(bars, _classifier_titles(x), f"{picker.plain_label(x.clf)}: the same "
                            "weights, with and without a causal mask", 330), key=keys.CLF_CAUSAL)


def _classifier_words(x: Ctx, f: Classifier) -> str:
    k = state.get_model(x.clf).config
    lead = (f"{picker.plain_label(x.name)} has no class head, so this part uses {x.clf}. "
            if x.clf != x.name else "")
    win = f"**{f.names[int(np.argmax(f.causal))]}** ({pct(float(f.causal.max()), 1)})"
    compare = (f"On another picture (“{inputs.sample_caption(f.other_seed)}”) its causal logits "
               "are " + (f"the same (largest difference {f.gap:.1g})" if f.gap < SAME_LOGITS else
                         f"different (by up to {f.gap:.2f})") + ".")
    if k.global_pool == "avg":
        first = ("CLS (token 0) sees only itself, but the class head does not read CLS: it reads "
                 "the mean of the patch tokens" if k.class_token else
                 "This model has no CLS token: patch 0 sees only itself, and the class head reads "
                 "the mean of the patch tokens")
        return (f"{lead}{first}. The last patch still sees every token, so the prediction still "
                f"depends on the image: {win} with the causal mask. {compare}")
    if k.dist_token:
        return (f"{lead}CLS is token 0 and DIST token 1, so under a causal mask CLS sees only "
                f"itself and DIST only CLS and itself, in every layer. The class heads read only "
                f"these two, so the prediction no longer depends on the image: it becomes {win} "
                f"for any picture. {compare}")
    return (f"{lead}CLS is token 0, so under a causal mask it can attend only to itself in every "
            f"layer: its final vector, the only one the class head reads, no longer depends on "
            f"the image. The prediction becomes {win} for any picture. {compare}")


def _classifier_notes(x: Ctx, f: Classifier) -> str:
    return ("Left: the classifier as it runs normally; right: the same weights with a causal mask "
            "added to every block's scores. The mask changes no weight, only what each token may "
            "read.")


def _classifier_question(x: Ctx, _) -> Question:
    """What CLS knows under a causal mask, for the classifier this step shows."""
    c = state.get_model(x.clf).config
    n_img = c.num_image_tokens
    if c.num_prefix_tokens:
        names = " and ".join(c.prefix_names)
        cls = ("Nothing about the image. CLS is token 0, so under a causal mask it sees only "
               "itself in every block" + (", and DIST (token 1) only CLS and itself" if
                                           c.dist_token else "")
               + (f": the final {names} vectors are the same for every picture" if c.dist_token
                  else ": CLS's final vector is the same for every picture")
               + (" and so is the prediction." if c.num_classes and c.global_pool != "avg"
                  else "."))
    else:
        cls = (f"This model has no CLS token. Under a causal mask its first patch sees only "
               f"itself and its last patch all {n_img} image tokens.")
    if x.clf != x.name:  # the step shows another model than the one chosen
        cls = f"{x.clf}, the classifier shown here: {cls[0].lower()}{cls[1:]}"
    return Question("What does CLS know under a causal mask?", cls,
                    Choice(CLS_KNOWS, 2 if c.num_prefix_tokens else None))


# ---------------------------------------------------------------- windowed attention
WINDOW_COLOURS = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#eeca3b", "#b279a2",
                  "#ff9da6", "#9d755d")  # neighbouring windows never share a colour (3 x 3 cycle)


def _has_windows(c) -> bool:
    return bool(window_sizes(c))


@dataclass(frozen=True)
class Windows:
    """The window mask of the chosen model at the chosen size: its blocks 0 (plain) and 1
    (shifted), what it keeps, and (for the bundled classifier) what it costs in top-1."""

    size: int
    labels: list[str]  # a name per token (the captioner's sequence with the typed caption)
    n_text: int
    allowed: np.ndarray  # [2, S, S] bool: blocks 0 and 1 under "window:M:shifted"
    bands: np.ndarray  # [2, g, g] int: the window of each patch in blocks 0 and 1
    cost: Any  # vit_core.explain.windows.WindowCost of "window:M:shifted"
    centre: int  # the patch the question asks about (the middle of the grid)
    centre_keys: int  # keys it may read in block 0
    centre_window: tuple[int, int]  # its window's rows x columns in block 0
    top1: Any  # ui.state.WindowTop1, or None when nothing is measured for this model

    @property
    def measured(self) -> bool:
        return self.top1 is not None


def _window_text(x: Ctx) -> tuple[list[int], list[str]]:
    """The chosen model's text ids for the typed caption ([] for a model without text)."""
    if not x.c.has_text:
        return [], []
    tok = tokenizer_for(x.model)
    enc = tok.encode(x.caption, max_len=x.c.max_text_len)
    return enc.ids, ["[UNK]" if i == tok.unk_id else w for w, i in zip(enc.words, enc.ids,
                                                                       strict=True)]


def _windows_facts(x: Ctx) -> Windows:
    c, size = x.c, int(st.session_state[keys.MASK_WINDOW])
    ids, words = _window_text(x)
    allowed = window_keys(c, window_name(size, True), len(ids))[:2].numpy()  # blocks 0 and 1
    if c.depth == 1:  # one block: nothing is ever shifted
        allowed = np.stack([allowed[0], allowed[0]])
    g, pre = c.grid, c.num_prefix_tokens
    bands = np.stack([window_of(g, size, s).view(g, g).numpy() for s in (0, size // 2)])
    centre = g // 2 * g + g // 2
    same = bands[0] == bands[0].flat[centre]
    top1 = None
    if x.name == tour.WINDOW_CLASSIFIER and x.model.info.trained:
        with st.spinner(f"Measuring the classifier's top-1 on held-out scenes with {size}×{size} "
                        f"windows (once per server)…"):
            top1 = state.window_top1(x.name, size)
    return Windows(size, figures.token_labels(c, words), len(ids), allowed, bands,
                   window_cost(c, size, True, len(ids)), centre,
                   int(allowed[0, pre + centre].sum()),
                   (int(same.any(1).sum()), int(same.any(0).sum())), top1)


def _grid_figure(bands: np.ndarray, title: str, centre: int):
    """The patch grid coloured by window (each window its colour), the centre patch outlined.
    One constructor call (plotly re-walks the figure on every update_* call)."""
    g = bands.shape[0]
    grid = bands.tolist()
    order = {b: k for k, b in enumerate(dict.fromkeys(b for row in grid for b in row))}
    rows = {b: k for k, b in enumerate(sorted({b // (g + 1) for b in order}))}
    cols = {b: k for k, b in enumerate(sorted({b % (g + 1) for b in order}))}
    tone = np.array([[rows[b // (g + 1)] % 3 * 3 + cols[b % (g + 1)] % 3 for b in row]
                     for row in grid])
    text = [[str(order[b] + 1) for b in row] for row in grid]
    k = len(WINDOW_COLOURS)
    scale = [[v / (k - 1), colour] for v, colour in enumerate(WINDOW_COLOURS)]  # z = v: colour v
    r, col = divmod(centre, g)
    # both axes span the grid alone and give up the rest of their box: square cells, no empty
    # columns either side when the grid sits in a wide subplot
    return go.Figure(data=[dict(
        type="heatmap", z=tone, colorscale=scale, zmin=0, zmax=k - 1, showscale=False, text=text,
        texttemplate="%{text}", textfont=dict(size=10, color="white"), xgap=1, ygap=1,
        hovertemplate="patch row %{y}, column %{x}: window %{text}<extra></extra>")],
        layout=dict(
            shapes=[dict(type="rect", x0=col - 0.5, x1=col + 0.5, y0=r - 0.5, y1=r + 0.5,
                         line=dict(color="white", width=3))],
            title=dict(text=title, font=dict(size=14)), margin=dict(l=0, r=0, t=30, b=0),
            xaxis=dict(title=dict(text="patch column", font=dict(size=12)), dtick=1,
                       range=[-0.5, g - 0.5], constrain="domain"),
            yaxis=dict(title=dict(text="patch row", font=dict(size=12)), dtick=1,
                       range=[g - 0.5, -0.5], scaleanchor="x", constrain="domain")))


def _mark_prefix(fig, c) -> None:
    """Dotted white lines after the prefix tokens' row and column, so CLS stands apart."""
    pre, n = c.num_prefix_tokens, c.num_image_tokens
    if not pre:
        return
    figures.add_shapes(fig, [
        dict(type="line", line=dict(color="white", width=1, dash="dot"), **kw)
        for kw in (dict(x0=pre - 0.5, x1=pre - 0.5, y0=-0.5, y1=n - 0.5),
                   dict(y0=pre - 0.5, y1=pre - 0.5, x0=-0.5, x1=n - 0.5))])


def _windows_figure(x: Ctx, f: Windows) -> None:
    c, M = x.c, f.size
    st.select_slider("Window side M (patches)", window_sizes(c), key=keys.MASK_WINDOW,
                     help=f"Windows of M×M patches on this model's {c.grid}×{c.grid} grid; "
                          f"block 1 moves them by M // 2 patches.")

    def build():
        ticks = figures.spaced_ticks(f.labels, c.grid, 230)
        shift = M // 2
        masks = []
        for b in (0, 1):
            fig = figures.mask_figure(f.allowed[b], c.num_image_tokens, "", labels=f.labels,
                                      ticks=ticks)
            _mark_prefix(fig, c)
            masks.append(fig)
        grids = [_grid_figure(f.bands[0], "", f.centre), _grid_figure(f.bands[1], "", f.centre)]
        moved = f"moved by {shift}" if shift else "a 1×1 window moves by 0: the same"
        titles = [f"block 0: {M}×{M} windows", "block 0: its mask (query → key)",
                  f"block 1: windows {moved}", "block 1: its mask"]
        fig = side_by_side(
            [grids[0], masks[0], grids[1], masks[1]], titles,
            "Windows on the patch grid (number = window; white square: the middle patch) and "
            "the masks they make (light: may look; dark: −∞; CLS is the first row and column)",
            370, spacing=0.06)
        fig.update_layout(margin=dict(l=30, b=30))  # room for the first grid's row numbers
        return fig

    # the windows, and so the masks, follow from the model's shape, M and the caption's length
    key = (repr(c), M, f.n_text, tuple(f.labels))
    deck.chart(_same_for_every_image("windows", key, build), key=keys.MASK_WINDOWS)


def _windows_words(x: Ctx, f: Windows) -> str:
    c, M, w = x.c, f.size, f.cost
    pre = " and ".join(c.prefix_names)
    sees = f"its window's patches and {pre}" if pre else "its window's patches"
    said = [f"Windows of {M}×{M} patches: in block 0 a patch reads only {sees}. The mask keeps "
            f"{w.pairs[0]:,} of the {w.full_pairs:,} (query, key) pairs per head, "
            f"{w.full_pairs / w.pairs[0]:.1f}× fewer"
            + (f" (block 1, shifted: {w.pairs[1]:,})" if c.depth > 1 and w.pairs[1] != w.pairs[0]
               else "") + "."]
    if f.measured:
        t, card = f.top1, picker.card_top1(x.model)
        said.append(f"With {M}×{M} windows the classifier's top-1 on {t.n} held-out scenes falls "
                    f"from {pct(t.full)} to {pct(t.plain)}"
                    + (f" ({pct(t.shifted)} with the windows shifted on alternate blocks)"
                       if t.shifted is not None else "")
                    + f": it was trained with full attention, and these windows cost it "
                    f"{_points(t.full - t.plain)} on the same scenes"
                    + (f" (full attention on another set: {card})." if card else "."))
    else:  # another model, or the classifier at another size or training step
        own = ModelRef.parse(x.name).name == tour.WINDOW_CLASSIFIER
        why = ("the app measures it at the model's own size and final weights only: choose "
               "those to see it" if own else "that needs labelled held-out images of its own "
               f"task; the app measures it for {tour.WINDOW_CLASSIFIER} on its scenes")
        said.append(f"The pairs are exact for {picker.plain_label(x.name)}; its accuracy under "
                    f"windows is not measured here ({why}).")
    return " ".join(said)


def _points(drop: float) -> str:
    """A fall in top-1 said in percentage points: '70 points', or 'nothing' when it rose."""
    n = round(100 * drop)
    return "nothing" if n <= 0 else f"{n} point{'' if n == 1 else 's'}"


def _windows_notes(x: Ctx, f: Windows) -> str:
    c, M = x.c, f.size
    said = [f"Swin's windowed attention: a patch reads the M×M patches of its window, so a block "
            f"weighs about N·M² pairs instead of N² (O(N·M) in the notes, M counting a window's "
            f"patches). On odd blocks (shifted) the windows move by M // 2 = {M // 2} patches; at "
            f"the border they are clipped, not wrapped around (Swin wraps and masks, which "
            f"lets the same patches meet). CLS sees every patch and every patch sees CLS: the "
            f"class head reads CLS alone, and CLS is also the one road between windows that "
            f"never move."]
    if f.n_text:
        said.append(f"The {f.n_text} text tokens keep this model's own {c.default_mask} mask: only "
                    f"the image block changes.")
    said.append(f"This app still computes all S² scores and adds −∞ to the blocked ones, so its "
                f"pass costs the same; a windowed kernel would spend {si(f.cost.macs)} "
                f"multiply-adds on Q Kᵀ and A V instead of {si(f.cost.full_macs)}.")
    if f.measured and f.top1.shifted is not None:
        said.append(f"Held-out scenes: seed block {f.top1.seed} of the scene world, never seen in "
                    f"training; the same {f.top1.n} scenes for every mask.")
    return " ".join(said)


def _windows_question(x: Ctx, f: Windows) -> Question:
    c = x.c
    g = c.grid
    r, col = divmod(f.centre, g)
    same = f.bands[0] == f.bands[0].flat[f.centre]  # block 0's window of the white square
    rows, cols = int(same.any(1).sum()), int(same.any(0).sum())
    keys_ = int(f.allowed[0, c.num_prefix_tokens + f.centre].sum())  # its row of the mask
    inside = rows * cols
    clipped = ", clipped at the border" if inside < f.size**2 else ""
    pre = c.num_prefix_tokens
    extra = (f" plus {' and '.join(c.prefix_names)}, which every patch sees" if pre else "")
    return Question(
        f"With {f.size}×{f.size} windows, how many keys may patch {f.centre} (row {r}, column "
        f"{col}, the white square) read in block 0, itself included?",
        f"{keys_}: the {inside} patches of its window (a {rows}×{cols} window{clipped})"
        f"{extra}.", Number(keys_, 0, "keys"))


STAGE = deck.Stage(
    slug="masks",
    title="5 · Masks: who may look at whom",
    story="A mask decides who may look at whom. Text may only read earlier words; the image "
          "patches may read each other in both directions.",
    view=view,
    intro=_intro,
    steps=(
        Step("three", "Three masks", _three_figure, facts=_tokens, words=_three_words,
             notes=_three_notes, question=_three_question),
        Step("visible", "How many keys each query may see", _visible_figure,
             facts=_visible_facts, words=_visible_words, notes=_visible_notes,
             question=_visible_question),
        Step("live", "The captioners' attention, live", _live_figure, facts=_live_facts,
             words=_live_words, notes=_live_notes, reads=("masks_runs",)),
        Step("scores", "How sure they are of your caption", _scores_figure,
             facts=_scores_facts, words=_scores_words, notes=_scores_notes,
             reads=("masks_scores",)),
        Step("classifier", "A classifier under a causal mask", _classifier_figure,
             facts=_classifier_facts, words=_classifier_words, notes=_classifier_notes,
             question=_classifier_question, reads=("causal_classifier",)),
        Step("windows", "Windowed attention", _windows_figure, facts=_windows_facts,
             words=_windows_words, notes=_windows_notes, question=_windows_question,
             asks=("allowed", "bands", "centre", "size"),
             reads=("window_top1",), applies=_has_windows),
    ),
)
