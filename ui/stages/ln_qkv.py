"""Stage 3: LayerNorm of one token, then Q, K and V, split into heads; one query-key score by
hand."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from ui import keys
from ui.drawing import describe, figures
from ui.drawing.equation import latex
from ui.drawing.numbers import pct
from ui.lesson import deck, steps
from ui.lesson.deck import Choice, Question, Step
from vit_core.explain.attention import score_by_hand
from vit_core.explain.extremes import extremes
from vit_core.explain.tokens import layernorm_steps, token_stats

# the stage's own widget keys (AppTest addresses its widgets by them; shared: ui/keys.py)
LN_HIST = "ln_hist"  # chart: values before and after LayerNorm

NOT_EXACT = (  # why LN's output is not exactly mean 0, std 1; right: γ and β, or ε alone
    "It normalises over all tokens at once, not each token",
    "The learned γ and β scale and shift it afterwards",
    "Float32 rounding errors add up over the numbers",
    "ε in √(σ² + ε) keeps the std a hair under 1")
SCORES_HIGH = Choice((  # what makes a query-key score high: the right reason, and misconceptions
    "The key's patch is next to the query's patch",
    "The key points the same way as the query, and is long",
    "The key's value vector is large",
    "The key comes early in the sequence"), right=1)


@dataclass(frozen=True)
class Ctx:
    """The stage's view and the query and key it compares: the query is the selected patch, or
    CLS (the stage's toggle); the key is the stage's own "Key patch"."""

    v: deck.View
    labels: list[str]
    use_cls: bool
    key_patch: int
    drawn: set = field(default_factory=set)  # the stage's widgets drawn in this run

    def __getattr__(self, name):  # the view's fields (inp, tr, c, layer, …)
        return getattr(self.v, name)

    @property
    def i(self) -> int:
        """The query's token number."""
        return 0 if self.use_cls else self.patch + self.c.num_prefix_tokens

    @property
    def j(self) -> int:
        """The key's token number."""
        return self.key_patch + self.c.num_prefix_tokens


def view() -> Ctx:
    v = deck.load(text_free_note=True)
    ss = st.session_state
    for key in (keys.QUERY_IS_CLS, keys.KEY_PATCH):  # kept on the steps that do not draw it
        if key in ss:
            ss[key] = ss[key]
    x = Ctx(v, figures.token_labels(v.c), False, 0)
    if v.presenting:  # a row of its own, above the slide's controls: the figure keeps its height
        _choices(x, key_patch=_step_compares_keys(v.c), here=True)
    use_cls = bool(v.c.class_token and ss.get(keys.QUERY_IS_CLS, False))
    key_patch = min(max(int(ss.get(keys.KEY_PATCH, 0)), 0), v.c.num_patches - 1)
    return Ctx(v, x.labels, use_cls, key_patch, x.drawn)


def _step_compares_keys(c) -> bool:
    """Does the step presenter mode shows use the key patch (LayerNorm's does not: without the
    number box its row is the toggle's height, which the slide's figure gets)?"""
    shown = STAGE.steps_for(c)
    return shown[steps.index_in(STAGE.slug, len(shown))].key != "layernorm"


def _choices(x: Ctx, key_patch: bool, here: bool = False) -> None:
    """The stage's own widgets, each drawn once per run: the key patch and "the CLS token as the
    query" (the layer, head and query patch are the deck's controls). On the page, the first step
    that uses a widget draws it; in presenter mode the view draws both above the slide (`here`),
    so no step's figure shares its box with them."""
    if x.presenting and not here:
        return
    want = [w for w in (("key" if key_patch else None), ("cls" if x.c.class_token else None))
            if w and w not in x.drawn]
    if not want:
        return
    for col, w in zip(st.columns(len(want), vertical_alignment="bottom"), want, strict=True):
        x.drawn.add(w)
        if w == "key":
            col.number_input("Key patch", 0, x.c.num_patches - 1, key=keys.KEY_PATCH)
        else:
            col.toggle("Use the CLS token as the query", key=keys.QUERY_IS_CLS)


def _num(x: float) -> str:
    """Three decimals, never '-0.000'."""
    text = f"{x:.3f}"
    return text[1:] if text == "-0.000" else text


def _intro(x: Ctx) -> str:
    c = x.c
    D, H, dk = c.embed_dim, c.num_heads, c.head_dim
    return ("Before attention, every token is normalised on its own: subtract its mean, divide "
            "by its standard deviation, then scale and shift with two learned vectors γ and β. "
            "Then three learned matrices turn each normalised token into a query (what am I "
            "looking for?), a key (what do I contain?) and a value (what do I pass on?). "
            f"The {D} columns are split into "
            + (f"{H} heads of {dk}, so each head compares tokens in its own small space."
               if H > 1 else
               f"1 head of {dk}: this model has a single head, so it compares tokens in all {D} "
               "dimensions at once."))


def token_numbering(config, patch: int) -> str:
    """One sentence on how patch numbers map to token numbers in this model's sequence
    ("patch 24 is token 25, because CLS is token 0")."""
    pre = config.num_prefix_tokens
    t = patch + pre
    if pre == 0:
        return (f"Tokens count from 0 over the whole sequence, and this model has no CLS token, "
                f"so patch {patch} is token {t}.")
    if pre == 1:
        return (f"Tokens count from 0 over the whole sequence: CLS is token 0, so patch {patch} "
                f"is token {t} (every patch number + 1).")
    names = config.prefix_names
    return ("Tokens count from 0 over the whole sequence: "
            + ", ".join(f"{n} is token {k}" for k, n in enumerate(names))
            + f", so patch {patch} is token {t} (every patch number + {pre}).")


# ---------------------------------------------------------------- LayerNorm of one token
def _ln_facts(x: Ctx) -> dict:
    c, i = x.c, x.i
    x_in = x.tr[f"blocks.{x.layer}.resid_pre"][i]  # the block's input X
    x_ln = x.tr[f"blocks.{x.layer}.ln1"][i]
    norm1 = x.model.blocks[x.layer].norm1
    ln = layernorm_steps(x_in, norm1.weight.detach(), norm1.bias.detach(), c.norm_eps)
    return {"x_in": x_in.numpy(), "x_ln": x_ln.numpy(), "before": ln["before"],
            "normalised": ln["normalised"], "after": token_stats(x_ln),
            "identity": ln["identity"], "gamma_mean": ln["gamma_mean"],
            "beta_mean": ln["beta_mean"], "range": (extremes(x_in), extremes(x_ln))}


def _ln_alt(x: Ctx, f: dict) -> str:
    num = describe.num
    said = [f"{when} LayerNorm {describe.span(ext)} (mean {num(stats['mean'])}, std "
            f"{num(stats['std'])})" for when, ext, stats in
            zip(("before", "after"), f["range"], (f["before"], f["after"]), strict=True)]
    return (f"Two overlaid histograms of the {x.c.embed_dim} numbers of {x.labels[x.i]} (token "
            f"{x.i}) at block {x.layer}: across, a number's value; up, how many numbers have "
            f"it. {said[0][0].upper()}{said[0][1:]}; {said[1]}.")


def _ln_figure(x: Ctx, f: dict) -> None:
    _choices(x, key_patch=False)
    c, i = x.c, x.i
    before, after = f["before"], f["after"]
    what = f"the {c.embed_dim} values of {x.labels[i]} (token {i}) at block {x.layer}"
    if x.presenting:  # one chart fills the slide: the formula in its title, μ and σ in the words
        title = f"LN(x) = γ ⊙ (x − μ) / √(σ² + ε) + β: {what}"
    else:
        mant, _, expo = f"{c.norm_eps:.0e}".partition("e")
        tex_eps = rf"{mant}\cdot 10^{{{int(expo)}}}" if mant != "1" else rf"10^{{{int(expo)}}}"
        latex(r"\mathrm{LN}(x) = \gamma\odot\frac{x-\mu}{\sqrt{\sigma^2+\epsilon}}+\beta,"
              rf"\quad \mu={_num(before['mean'])},\ \sigma={_num(before['std'])},\ "
              rf"\epsilon={tex_eps}")
        m = st.columns(4)
        m[0].metric("mean before (μ)", f"{_num(before['mean'])}")
        m[1].metric("std before (σ)", f"{_num(before['std'])}")
        m[2].metric("mean after LN", f"{_num(after['mean'])}")
        m[3].metric("std after LN", f"{_num(after['std'])}")
        title = f"{what}, before and after LayerNorm"
    deck.chart(figures.histogram_pair(
        f["x_in"], f["x_ln"], names=("before LN (the block's input X)", "after LN (with γ, β)"),
        title=title, x_title="value of one of the token's numbers",
        y_title=f"how many of the {c.embed_dim} numbers"), key=LN_HIST)


def _ln_words(x: Ctx, f: dict) -> str:
    normalised, after = f["normalised"], f["after"]
    if f["identity"]:
        ln_note = (f"This layer's γ is all ones and β all zeros (as initialised), so LN's output "
                   f"is just the normalised token: mean {_num(after['mean'])}, std "
                   f"{_num(after['std'])}.")
    else:
        ln_note = (f"γ and β then scale and shift it to mean {_num(after['mean'])} and std "
                   f"{_num(after['std'])}: where this layer wants its input.")
    before = f["before"]
    return (f"The token's numbers have mean μ = {_num(before['mean'])} and std σ = "
            f"{_num(before['std'])}; after subtracting μ and dividing by √(σ² + ε), the token "
            f"has mean {_num(normalised['mean'])} and std {_num(normalised['std'])} (ε keeps the "
            f"division safe). " + ln_note)


def _ln_notes(x: Ctx, f: dict) -> str:
    mant, _, expo = f"{x.c.norm_eps:.0e}".partition("e")
    eps = f"{mant}·10^{int(expo)}" if mant != "1" else f"10^{int(expo)}"
    return (f"μ and σ are the mean and standard deviation of this one token's {x.c.embed_dim} "
            f"numbers (every token is normalised on its own); ε = {eps} keeps the division "
            f"safe. The histogram counts the token's numbers by value, before and after.")


def _ln_question(x: Ctx, f: dict) -> Question:
    i, layer = x.i, x.layer
    mean, std = f["after"]["mean"], f["after"]["std"]
    ln = (f"LayerNorm first makes the token's mean 0 and its standard deviation 1, then "
          f"multiplies by the learned γ and adds the learned β. For {x.labels[i]} (token {i}) at "
          f"block {layer} the result has mean {mean:.3f} and std {std:.3f}"
          + (": this layer's γ is all ones and β all zeros (as initialised), so only ε keeps "
             "them from being exactly 0 and 1." if f["identity"] else
             ": this layer's γ and β were learned (they are not all ones and zeros), so the "
             "output sits where this layer wants it."))
    return Question("After LayerNorm, why are the mean and std not exactly 0 and 1?", ln,
                    Choice(NOT_EXACT, 3 if f["identity"] else 1))


# ---------------------------------------------------------------- Q, K and V
def _qkv_facts(x: Ctx) -> dict:
    found = {n: x.tr[f"blocks.{x.layer}.attn.{n.lower()}"][x.head].numpy() for n in "QKV"}
    return {**found, "ext": {n: extremes(found[n]) for n in "QKV"}}


def _qkv_alt(x: Ctx, f: dict) -> str:
    S, dk = f["Q"].shape
    said = [describe.heatmap(
        f"{n} of head {x.head}, block {x.layer}, {S}×{dk}", rows="tokens",
        cols=f"the head's {dk} dimensions", value=f"{n} entry", ext=f["ext"][n],
        row_names=x.labels) for n in "QKV"]
    return (f"Three heatmaps side by side, Q, K and V, the query {x.labels[x.i]} outlined in Q, "
            f"the key {x.labels[x.j]} in K. " + " ".join(said))


def _qkv_figure(x: Ctx, f: dict) -> None:
    _choices(x, key_patch=True)
    c, S = x.c, f["Q"].shape[0]
    D, H, dk = c.embed_dim, c.num_heads, c.head_dim
    bias = {n: rf" + b_{n}" if c.qkv_bias else "" for n in "QKV"}  # timm's qkv_bias
    if not x.presenting:  # on a slide the three matrices take the height; the words say it
        latex(rf"Q = \tilde X W_Q{bias['Q']},\ K = \tilde X W_K{bias['K']},\ "
              rf"V = \tilde X W_V{bias['V']}:\ [{S}\times{D}]\cdot[{D}\times{D}] = "
              rf"[{S}\times{D}] \;\to\; [{H}\times{S}\times{dk}]")
    ticks = figures.token_ticks(x.labels[:S], c.grid, figures.tick_gap(S, 380))
    charts = {nm: figures.matrix_heatmap(
        f[nm], f"{nm} of head {x.head}, block {x.layer}: {S}×{dk}", row_labels=x.labels[:S],
        row_ticks=ticks, x_title=f"dimension of the head (0 … {dk - 1})",
        y_title="token" + {"Q": " (outlined: the query)", "K": " (outlined: the key)", "V": ""}[nm],
        value_name={"Q": "query entry", "K": "key entry", "V": "value entry"}[nm],
        highlight_row=x.i if nm == "Q" else x.j if nm == "K" else None, square=False,
        height=380) for nm in "QKV"}
    if x.presenting:  # one chart fills the slide (charts in columns keep a fixed height)
        deck.chart(side_by_side(list(charts.values())), key=keys.qkv("QKV"))
        return
    for col, nm in zip(st.columns(3), "QKV", strict=True):
        with col:
            deck.chart(charts[nm], key=keys.qkv(nm))


def side_by_side(figs: list[go.Figure], gap: float = 0.17) -> go.Figure:
    """One-heatmap figures (figures.matrix_heatmap) as the panels of one figure, each with its
    title, axes, colour bar and outlines; the gap holds a colour bar and the next panel's axis
    title, ticks and bar in 14-px type (readable.TEXT_PX) at 1024 px."""
    out = figures.panels(figs, [f.layout.title.text for f in figs], spacing=gap,
                         own_colorbars=True,
                         axis_keys=("title", "tickmode", "tickvals", "ticktext", "tickfont",
                                    "autorange", "showticklabels"))
    out.update_layout(margin=dict(l=0, r=40, t=30, b=0), height=380)
    return out


def _qkv_words(x: Ctx, f: dict) -> str:
    c, S = x.c, f["Q"].shape[0]
    split = (f"the {c.embed_dim} columns of Q, K and V split into {c.num_heads} heads of "
             f"{c.head_dim}" if c.num_heads > 1 else
             f"this model has a single head, so it gets all {c.embed_dim} columns")
    return (f"Head {x.head} of block {x.layer} gives each of the {S} tokens a query, a key and a "
            f"value of {c.head_dim} numbers ({split}). Outlined: the query {x.labels[x.i]} "
            f"(token {x.i}) in Q, the key {x.labels[x.j]} (token {x.j}) in K.")


def _qkv_notes(x: Ctx, f: dict) -> str:
    return (token_numbering(x.c, x.patch) + " The rows and the equations of this stage use "
            "token numbers. X̃ is the block's input after LayerNorm, one row per token.")


# ---------------------------------------------------------------- one score by hand
def _score_facts(x: Ctx) -> dict:
    i, j, layer, head = x.i, x.j, x.layer, x.head
    q = x.tr[f"blocks.{layer}.attn.q"][head]
    k = x.tr[f"blocks.{layer}.attn.k"][head]
    score = score_by_hand(q[i], k[j], x.tr[f"blocks.{layer}.attn.scores"][head, i],
                          x.tr[f"blocks.{layer}.attn.pattern"][head, i, j], j)
    return {**dataclasses.asdict(score), "q": q[i][:4].numpy(), "k": k[j][:4].numpy()}


def _score_figure(x: Ctx, f: dict) -> None:
    _choices(x, key_patch=True)
    i, j, dk = x.i, x.j, x.c.head_dim
    equation = (rf"\frac{{q_{{{i}}}\cdot k_{{{j}}}}}{{\sqrt{{d_k}}}} = \frac{{{f['dot']:.4f}}}"
                rf"{{\sqrt{{{dk}}}}} = {f['score']:.4f}")
    if f["masked"]:
        equation += rf",\quad \text{{then }} + M_{{{i},{j}}} = -\infty"
    latex(equation)


def _score_alt(x: Ctx, f: dict) -> str:
    i, j, num = x.i, x.j, describe.num
    said = (f"An equation: the score of query token {i} and key token {j} is q_{i} · k_{j} / "
            f"√d_k = {num(f['dot'])} / √{x.c.head_dim} = {num(f['score'])}")
    return said + (", then the mask adds −∞." if f["masked"] else ".")


def _score_words(x: Ctx, f: dict) -> str:
    i, j, labels = x.i, x.j, x.labels
    who = (f"Query **{labels[i]}** (token {i}), key **{labels[j]}** (token {j}), layer "
           f"{x.layer}, head {x.head}")
    if f["masked"]:
        return (f"{who}: q·k/√d_k = {f['score']:.4f} is computed, but the {x.tr.mask_kind} mask "
                f"sets this entry to −∞ (token {i} may not look at token {j}), so softmax gives "
                f"it weight {f['weight']:g}: the score matrix of the trace holds −∞ there.")
    return (f"{who}: q·k/√d_k = **{f['score']:.4f}**. The attention page shows the same entry of "
            f"the score matrix: {f['traced']:.4f}; after the softmax over the row this key gets "
            f"{pct(f['weight'])} of the query's attention.")


def _score_notes(x: Ctx, f: dict) -> str:
    if f["masked"]:
        said = (f"A score is just a dot product, but a mask decides whether it counts: this key "
                f"is hidden from this query, which may look at only {f['visible']} of the "
                f"{f['S']} tokens.")
    else:
        said = (f"A score is just a dot product: keys that point the same way as the query get "
                f"large scores. This key's score ranks {f['rank']} of the {f['visible']} keys "
                f"this query may look at; softmax on the next page turns the row into weights.")
    return (said + f" q = {np.array2string(f['q'], precision=3)} …, "
            f"k = {np.array2string(f['k'], precision=3)} … ({x.c.head_dim} numbers each).")


def _score_question(x: Ctx, f: dict) -> Question:
    """The rule, and the pair the step's equation works out."""
    dk, i, j = x.c.head_dim, x.i, x.j
    pair = (f"Here {x.labels[j]} is blocked for {x.labels[i]} by the mask: its score is −∞."
            if f["masked"] else
            f"For the pair worked out here, q_{i}·k_{j} = {f['dot']:.2f}, so the score is "
            f"{f['dot']:.2f}/√{dk} = {f['score']:.2f}.")
    return Question("What makes a query and a key score high?",
                    f"A key that points the same way as the query, and is long: the score is "
                    f"q·k/√{dk}, and a dot product grows with both. {pair}", SCORES_HIGH)


STAGE = deck.Stage(
    slug="qkv",
    name="LayerNorm, then queries, keys and values",
    nav="LayerNorm and Q/K/V", icon=":material/key:",
    story="Each token is normalised, then asks a question (query), advertises what it holds "
          "(key), and prepares what it will share (value). Their dot products are the scores.",
    view=view,
    intro=_intro,
    steps=(
        Step("layernorm", "LayerNorm of one token", _ln_figure, facts=_ln_facts, words=_ln_words,
             notes=_ln_notes, describe=_ln_alt, question=_ln_question,
             asks=("after", "identity"), controls=("layer", "patch")),
        Step("qkv", "Q, K and V, split into heads", _qkv_figure, facts=_qkv_facts,
             words=_qkv_words, notes=_qkv_notes, describe=_qkv_alt,
             controls=("layer", "head", "patch")),
        Step("score", "One attention score, by hand", _score_figure, facts=_score_facts,
             words=_score_words, notes=_score_notes, describe=_score_alt,
             question=_score_question,
             asks=("dot", "masked", "score"),
             controls=("layer", "head", "patch")),
    ),
)
