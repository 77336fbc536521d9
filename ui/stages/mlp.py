"""Stage 6: the MLP of one token: LN2 -> W_1 -> GELU -> W_2 -> residual, and the token's
residual stream block by block."""

from __future__ import annotations

from dataclasses import dataclass, field

import streamlit as st

from ui import keys
from ui.drawing import describe, figures
from ui.drawing.equation import latex
from ui.drawing.numbers import pct
from ui.lesson import deck
from ui.lesson.deck import Choice, Number, Question, Step
from ui.selection import session
from ui.serving import state
from ui.serving.tour import Ask
from ui.stages import common
from vit_core.explain.extremes import extremes
from vit_core.explain.tokens import gelu_curve, mlp_units, residual_stream, sublayer_totals

# the stage's own widget keys (AppTest addresses its widgets by them; shared: ui/keys.py)
MLP_GELU = "mlp_gelu"  # chart: GELU and the token's pre-activations
MLP_TOP = "mlp_top"  # chart: the most active hidden units
MLP_RESID = "mlp_resid"  # chart: the residual stream's norms

GROWS = 1.1  # the token's norm "grows" when it ends at least this many times its start ...
# ... "shrinks" at most 1 / GROWS times it, and "stays about the same" between
TOP_UNITS = 10  # the bar chart shows this many of the most active hidden units
SHARE_TOLERANCE = 5  # percentage points a student reading the share off the scatter may be off
ADDS_MORE = ("The MLP", "Attention")  # the residual-stream question's options


@dataclass(frozen=True)
class Ctx:
    """The stage's view and its token: the selected patch, or CLS (the stage's toggle)."""

    v: deck.View
    labels: list[str]
    use_cls: bool
    drawn: set = field(default_factory=set)  # the stage's widgets drawn in this run

    def __getattr__(self, name):  # the view's fields (inp, tr, c, layer, …)
        return getattr(self.v, name)

    @property
    def i(self) -> int:
        """The token's number."""
        return 0 if self.use_cls else self.patch + self.c.num_prefix_tokens


def view() -> Ctx:
    v = deck.load(text_free_note=True)
    ss = st.session_state
    if keys.MLP_CLS in ss:  # kept on the steps that do not draw the toggle
        ss[keys.MLP_CLS] = ss[keys.MLP_CLS]
    x = Ctx(v, figures.token_labels(v.c), False)
    if v.presenting:  # a row of its own, above the slide's controls: the figure keeps its height
        _toggle(x, here=True)
    return Ctx(v, x.labels, bool(v.c.class_token and ss.get(keys.MLP_CLS)), x.drawn)


def _toggle(x: Ctx, here: bool = False) -> None:
    """"Use the CLS token" (every step shows the token it chooses; a model without CLS has
    none), drawn once per run: on the page by the first step, in presenter mode by the view
    above the slide (`here`), so no step's figure shares its box with it."""
    if (x.presenting and not here) or not x.c.class_token or "cls" in x.drawn:
        return
    x.drawn.add("cls")
    st.toggle("Use the CLS token", key=keys.MLP_CLS)


def _intro(x: Ctx) -> str:
    c = x.c
    D, F_ = c.embed_dim, c.mlp_hidden
    return (f"After attention has mixed information between tokens, each token goes through the "
            f"same small two-layer network, separately: widen from {D} to {F_} numbers, bend them "
            f"with GELU (negative inputs are squashed towards 0, positive ones pass), and project "
            f"back to {D}. The result is added to the token, like the attention output before "
            f"it: the residual stream only ever receives additions.")


# ---------------------------------------------------------------- the token's hidden units
def _units_facts(x: Ctx) -> dict:
    return mlp_units(x.tr, x.layer, x.i, TOP_UNITS)


def _gelu_figure(x: Ctx, f: dict) -> None:
    _toggle(x)
    c = x.c
    D, F_ = c.embed_dim, c.mlp_hidden
    xs, ys = gelu_curve(f["lo"], f["hi"])
    fig = figures.gelu_scatter(f["u"], f["gelu"], xs.numpy(), ys.numpy(), x.labels[x.i])
    if x.presenting:  # one chart fills the slide (the words give the share, the notes the formula)
        deck.chart(fig, key=MLP_GELU)
        return
    # a space after every \quad: "\quadG" would be an unknown command (KaTeX prints it in red)
    latex(rf"\hat X = \mathrm{{LN}}(X'),\quad U = \hat X W_1 + b_1 \in \mathbb{{R}}^{{{F_}}},"
          rf"\quad G = \mathrm{{GELU}}(U),\quad X_\mathrm{{out}} = X' + G W_2 + b_2 "
          rf"\in \mathbb{{R}}^{{{D}}}")
    left, right = st.columns([3, 1], vertical_alignment="center")
    with left:
        deck.chart(fig, key=MLP_GELU)
    right.metric("share of hidden units switched on (U > 0)", pct(f["on"] / f["F"], 1),
                 help="GELU passes positive inputs almost unchanged and squashes negative ones.")
    right.caption(f"{f['on']} of {f['F']} units")


def _gelu_words(x: Ctx, f: dict) -> str:
    name = x.labels[x.i]
    return (f"{name[0].upper() + name[1:]} (token {x.i}) at block {x.layer}: each dot is one of "
            f"its {f['F']} hidden units, placed at its input U and its output GELU(U). "
            f"{f['on']} of them ({pct(f['on'] / f['F'], 1)}) are switched on (U > 0).")


def _gelu_alt(x: Ctx, f: dict) -> str:
    num, out = describe.num, extremes(f["gelu"])
    return (f"A scatter of {x.labels[x.i]}'s {f['F']} hidden units at block {x.layer}, one dot "
            f"each, over the GELU curve: across, a unit's input U, from {num(f['lo'])} to "
            f"{num(f['hi'])}; up, its output GELU(U), {describe.span(out)}. {f['on']} of them "
            f"({pct(f['on'] / f['F'], 1)}) are right of 0 (U > 0, switched on).")


def _gelu_notes(x: Ctx, f: dict) -> str:
    c = x.c
    return (f"X̂ = LN(X'), U = X̂·W_1 + b_1 ({c.mlp_hidden} numbers), G = GELU(U), X_out = X' + "
            f"G·W_2 + b_2 ({c.embed_dim} numbers). "
            "GELU(u) = u·Φ(u), Φ the standard normal's cumulative distribution: it passes "
            "positive inputs almost unchanged and squashes negative ones towards 0, so a unit "
            "with U > 0 is 'on'. Attention moves information between tokens; the MLP "
            "transforms it inside each token.")


def _units_question(x: Ctx, f: dict) -> Question:
    on, F_ = f["on"], f["F"]  # the dots right of U = 0 on the chart
    return Question("What fraction of hidden units fire for this token?",
                    f"In block {x.layer}, {on} of {x.labels[x.i]}'s {F_} hidden units have U > 0: "
                    f"{pct(on / F_, 1)}.", Number(100 * on / F_, SHARE_TOLERANCE, "%"))


def _top_figure(x: Ctx, f: dict) -> None:
    _toggle(x)
    deck.chart(figures.top_units_bars(f["top_values"], f["top_units"]), key=MLP_TOP)


def _top_words(x: Ctx, f: dict) -> str:
    return (f"Its most active hidden unit, unit {f['top_units'][0]}, outputs GELU(U) = "
            f"{float(f['top_values'][0]):.2f}. W_2 maps all {f['F']} outputs back to "
            f"{x.c.embed_dim} numbers: ‖X'‖ = {f['mid']:.2f} before, the MLP adds a vector of "
            f"norm {f['out']:.2f}, giving ‖X_out‖ = {f['post']:.2f}.")


def _top_alt(x: Ctx, f: dict) -> str:
    return describe.bars(f"the output GELU(U) of {x.labels[x.i]}'s {len(f['top_units'])} most "
                         f"active hidden units at block {x.layer}, the largest first",
                         [f"unit {u}" for u in f["top_units"]], [float(v) for v in f["top_values"]])


def _top_notes(x: Ctx, f: dict) -> str:
    return ("X' is the token after this block's attention (the residual stream between the "
            "two sublayers); X_out = X' + the MLP's output. The norm of a sum is not the sum of "
            "the norms: the MLP's vector can point with X' or against it.")


# ---------------------------------------------------------------- the residual stream
def _stream_facts(x: Ctx) -> dict:
    return residual_stream(x.tr, x.i, state.sublayer_norms(x.inp, x.name, session.chosen_mask()))


def _stream_figure(x: Ctx, f: dict) -> None:
    _toggle(x)
    name = x.labels[x.i]
    deck.chart(figures.residual_norms(
        f["attn"], f["mlp"], f["resid"],
        title=f"{name}: the norm of what each sublayer adds (bars) and of the token after it "
              "(line)"), key=MLP_RESID)


def stream_words(stream: dict) -> str:
    """How the token's norm changes through the blocks, and which sublayer adds more, worded
    from `residual_stream`."""
    resid, attn, mlp = stream["resid"], stream["attn"], stream["mlp"]
    L = len(attn)
    first, last = resid[0], resid[-1]
    ratio = last / first if first > 0 else float("inf")
    if ratio >= GROWS:
        change = f"grows from {first:.2f} at the embedding to {last:.2f} after block {L - 1}"
        change += f" ({ratio:.1f}×)" if ratio != float("inf") else ""
    elif ratio <= 1 / GROWS:
        change = (f"shrinks from {first:.2f} at the embedding to {last:.2f} after block {L - 1} "
                  f"({ratio:.2f}×)")
    else:
        change = (f"stays about the same, {first:.2f} at the embedding and {last:.2f} after "
                  f"block {L - 1}")
    more = sublayer_totals(attn, mlp)["mlp_larger"]
    blocks = "block" if L == 1 else "blocks"
    if more == L:
        who = "the MLP adds a larger vector than attention in " + (
            "its only block" if L == 1 else f"all {L} blocks")
    elif more == 0:
        who = "attention adds a larger vector than the MLP in " + (
            "its only block" if L == 1 else f"all {L} blocks")
    else:
        who = f"the MLP adds a larger vector than attention in {more} of {L} {blocks}"
    return f"The token's norm {change}, and {who}."


def _stream_words(x: Ctx, f: dict) -> str:
    return stream_words(f)


def _stream_alt(x: Ctx, f: dict) -> str:
    L, num = len(f["attn"]), describe.num
    added = "; ".join(f"{who} adds {describe.span(extremes(f[k]))}"
                      for who, k in (("attention", "attn"), ("the MLP", "mlp")))
    return (f"Bars and a line for {x.labels[x.i]}: across, the embedding then block 0 to "
            f"{L - 1}; up, a vector's norm. Two bars a block, the norm of what each sublayer "
            f"adds: {added}. The line, the token's norm after each: {num(f['resid'][0])} at the "
            f"embedding, {num(f['resid'][-1])} after block {L - 1}, "
            f"{describe.span(extremes(f['resid']))} along the way.")


def _stream_notes(x: Ctx, f: dict) -> str:
    return ("Bars: the size of what each sublayer adds; line: the size of the token afterwards "
            "(additions can point in different directions, so they need not add up, and the "
            "bars stand side by side, not stacked).")


def _stream_question(x: Ctx, f: dict) -> Question:
    L = x.c.depth
    name = common.labels(x.c)[x.i]
    t = sublayer_totals(f["attn"], f["mlp"])  # the chart's bars
    mlp_more = t["mlp"] > t["attn"]
    return Question("Does the MLP or attention add more to the residual stream?",
                    f"For {name}, summed over the {L} block{'s' if L > 1 else ''}: attention adds "
                    f"vectors of norm {t['attn']:.1f}, the MLP {t['mlp']:.1f}, so "
                    + ("the MLP adds more" if mlp_more else "attention adds more")
                    + f"; the MLP's addition is the larger in {t['mlp_larger']} of {L} blocks.",
                    Choice(ADDS_MORE, 0 if mlp_more else 1))



def _norms(a: Ask) -> list:
    """What the read-ahead computes for the residual step: every block's sublayer norms."""
    return [lambda: state.sublayer_norms(a.inp, a.name, a.mask)]

STAGE = deck.Stage(
    slug="mlp",
    name="The MLP: every token thinks on its own",
    nav="MLP", icon=":material/hub:",
    story="After the tokens have talked, each one thinks alone: a small two-layer network "
          "widens it, bends it with GELU, and adds the result back.",
    view=view,
    intro=_intro,
    steps=(
        Step("gelu", "One token through the MLP", _gelu_figure, facts=_units_facts,
             words=_gelu_words, notes=_gelu_notes, describe=_gelu_alt,
             question=_units_question, asks=("F", "on"),
             controls=("layer", "patch")),
        Step("units", "Its most active hidden units", _top_figure, facts=_units_facts,
             words=_top_words, notes=_top_notes, describe=_top_alt, controls=("layer", "patch")),
        Step("stream", "The residual stream, block by block", _stream_figure,
             facts=_stream_facts, words=_stream_words, notes=_stream_notes,
             describe=_stream_alt,
             question=_stream_question, asks=("attn", "mlp"), controls=("patch",),
             reads=(_norms,)),
    ),
)
