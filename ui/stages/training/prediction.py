"""Step 5: this image's prediction at every kept step."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ui.drawing import describe, figures, palette
from ui.drawing.numbers import pct
from ui.lesson import deck
from ui.lesson.deck import Number, Question
from ui.selection import session
from ui.serving import state
from ui.stages.training.base import (
    COLOURS,
    TOP_SHOWN,
    Ctx,
    _step_axis,
    _x,
)
from ui.stages.training.keys import TRAIN_PREDICTION
from vit_core.explain.training import best_of, prediction_curve, softmax64


# ---------------------------------------------------------------- 5. the prediction
def _prediction_facts(x: Ctx) -> dict:
    c = x.c
    names = list(c.class_names) if c.class_names else [f"class {k}" for k in
                                                       range(c.num_classes)]
    probs = softmax64(x.tr.logits)
    top = best_of(probs)[0]  # this step's top class
    out = {"names": names, "probs": probs, "K": c.num_classes, "top": top}
    if x.log is None:
        out.update(steps=[], curve=[], final=top, since=None)
        return out
    steps = list(x.log.steps)
    per = [softmax64(state.logits(x.inp, x.at(s), session.chosen_mask())) for s in steps]
    p = prediction_curve(steps, per)
    out.update(steps=p.steps, curve=p.curve, final=p.final, since=p.since, start=p.start)
    return out


def prediction_figure(f: dict, step: int | None, title: str) -> go.Figure:
    """Left: this step's top classes. Right (with kept steps): the final top class's
    probability at every kept step, chance dashed, this step marked."""
    probs, names = f["probs"], f["names"]
    if not f["steps"]:
        return figures.top_k_bars(probs, names, k=TOP_SHOWN, title=title,
                                  x_title="probability")
    k = f["final"]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.16, column_widths=[0.4, 0.6],
                        subplot_titles=(title, f"P({names[k]}) at every kept step"))
    order = np.argsort(-probs)[:TOP_SHOWN][::-1]
    fig.add_trace(go.Bar(x=probs[order].tolist(), y=[names[i] for i in order], orientation="h",
                         text=[pct(probs[i], 1) for i in order], textposition="auto",
                         name=f"step {step:,}", marker_color=COLOURS["this"], showlegend=False,
                         insidetextfont=dict(color=palette.ink_on(COLOURS["this"]))),
                  row=1, col=1)
    fig.update_xaxes(range=[0, 1], tickformat=".0%", title=dict(text="probability",
                                                                font=dict(size=12)), row=1, col=1)
    fig.update_yaxes(title=dict(text="class", font=dict(size=12)), row=1, col=1)
    steps = f["steps"]
    fig.add_trace(go.Scatter(x=[_x(s) for s in steps], y=f["curve"], mode="lines+markers",
                             name=f"P({names[k]}), the final top class",
                             line=dict(color=COLOURS["final"], width=2)), row=1, col=2)
    fig.add_trace(go.Scatter(x=[_x(min(steps)), _x(max(steps))], y=[1 / f["K"]] * 2, mode="lines",
                             name=f"chance: 1/{f['K']}",
                             line=dict(color=palette.NEUTRAL, dash="dot")),
                  row=1, col=2)
    fig.add_trace(go.Scatter(x=[_x(step)], y=[f["curve"][steps.index(step)]], mode="markers",
                             name=f"this snapshot: step {step:,}",
                             marker=dict(color=COLOURS["this"], size=13, symbol="star")),
                  row=1, col=2)
    _step_axis(fig, steps, title="training step (log scale; step 0 drawn at 1)", row=1, col=2)
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%", title=dict(
        text="probability", font=dict(size=12)), row=1, col=2)
    fig.update_layout(height=330, margin=dict(l=0, r=0, t=40, b=0),
                      legend=dict(orientation="h", y=-0.3, font=dict(size=11)))
    return fig


def _prediction_figure(x: Ctx, f: dict) -> None:
    when = f"step {x.step:,}" if x.log is not None else "this model"
    deck.chart(prediction_figure(f, x.step, f"Top {TOP_SHOWN} classes at {when}"),
               key=TRAIN_PREDICTION)


def _prediction_words(x: Ctx, f: dict) -> str:
    names, probs, K = f["names"], f["probs"], f["K"]
    top = f["top"]
    if x.log is None:
        return (f"This model's top class is **{names[top]}** ({pct(probs[top])}; chance "
                f"{pct(1 / K)}); it has no earlier snapshots to compare.")
    k = f["final"]
    said = f"At step {x.step:,} the top class is **{names[top]}** ({pct(probs[top])})"
    if x.step != x.final:
        said += ("; the final weights' too" if k == top else
                 f"; the final weights' is **{names[k]}**") + f" ({pct(f['curve'][-1])})"
    said += (f". P({names[k]}) at the kept steps: "
             + ", ".join(f"{pct(v)} at {s:,}" for s, v in zip(f["steps"], f["curve"],
                                                                strict=True))
             + f" (chance {pct(1 / K)})")
    if f["since"] is not None:
        said += (f"; it is the top class from step {f['since']:,} on" if f["since"] else
                 "; it is the top class at every kept step")
    return said + "."


def _prediction_describe(x: Ctx, f: dict) -> str:
    probs, names = f["probs"], f["names"]
    order = np.argsort(-probs)[:TOP_SHOWN]  # the bars drawn
    when = f"at step {x.step:,}" if x.log is not None else "of this model"
    said = describe.bars(f"the top {len(order)} classes' probabilities {when}",
                          [names[i] for i in order], probs[order], lambda p: pct(p, 1),
                          axis="one row per class, across: probability")
    if not f["steps"]:
        return said
    k = f["final"]
    return (said + " Right, a line chart across the kept training steps (log scale), up: "
            "probability. " + describe.line(f"P({names[k]}), the final top class",
                                             [f"step {s:,}" for s in f["steps"]], f["curve"],
                                             lambda p: pct(p, 0))
            + f" A dashed line: chance, 1/{f['K']}; a star: step {x.step:,}.")


def _prediction_notes(x: Ctx, f: dict) -> str:
    return ("One forward pass of this image per kept step, each with that step's weights. "
            "The bars are the softmax of this step's logits; the curve follows the class the "
            "final weights choose.")


def _prediction_question(x: Ctx, f: dict) -> Question:
    K, names = len(f["probs"]), f["names"]  # the classes of the bars drawn
    even = 100 / K
    at_0 = f.get("steps") and f["steps"][0] == 0  # the curve's first point: step 0
    seen = (f" The chart's curve gives {names[f['final']]} {pct(f['curve'][0])} at step 0."
            if at_0 else "")
    return Question(
        f"A model that knows nothing yet (random weights) gives every one of its {K} classes "
        f"about the same probability. About what probability is that, in %?",
        f"**1/{K} = {pct(1 / K)}**: nothing favours one class over another.{seen}",
        Number(round(even, 3), tolerance=round(0.2 * even, 3), unit="%",
               prompt="Probability of each class"))


def _classifies(c) -> bool:
    return bool(c.num_classes) and not c.has_text
