"""Step 1: the training run's curves (loss, held-out top-1 and mIoU) with this step marked."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ui.drawing import describe, palette
from ui.drawing.equation import latex
from ui.drawing.numbers import pct
from ui.lesson import deck
from ui.lesson.deck import Number, Question
from ui.selection import models
from ui.serving import state
from ui.stages.training.base import (
    COLOURS,
    NEAR_CHANCE,
    READ_OFF,
    Ctx,
    _kind_of,
    _step_axis,
    _with_log,
    _x,
)
from ui.stages.training.keys import TRAIN_CURVES
from vit_core.explain.training import SMOOTH_ROWS, log_facts, uniform_loss


# ---------------------------------------------------------------- 1. the curves
def _curves_facts(x: Ctx) -> dict:
    if x.log is None:
        others = _with_log()
        other = None
        if others:  # the figure shows how a model trained here learned, named as another's
            log = state.training_log(others[0])
            other = {"name": others[0], **_log_facts(log, log.final_step, None)}
        return {"log": None, "why": _kind_of(x), "with_log": others, "other": other}
    return _log_facts(x.log, x.step, x.c.num_classes)


def _log_facts(log, S: int, K: int | None) -> dict:
    """What the curves show of `log` with step `S` marked (K: the model's classes, if known)."""
    return {**log_facts(log, S), "K": K, "card": models.card_top1(state.get_model(log.model))}


def curves_figure(f: dict, whose: str | None = None) -> go.Figure:
    """The training loss (every 10 steps, and its running mean) above the held-out top-1 and
    mIoU, against the step on a log axis; the kept steps dotted, the session's solid red.
    `whose`: a title naming the model, when the curves are not the session model's."""
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.1,
                        subplot_titles=("training loss (the mean of every 10 steps)",
                                        "held-out scores (scenes never trained on)"))
    steps, loss = f["loss"]
    fig.add_trace(go.Scatter(x=steps, y=loss, name="training loss", mode="lines",
                             line=dict(color=palette.SKY, width=1)), row=1, col=1)
    fig.add_trace(go.Scatter(x=steps, y=f["smooth"].tolist(), mode="lines",
                             name=f"its running mean over {SMOOTH_ROWS * 10} steps",
                             line=dict(color=palette.BLUE, width=2.5)), row=1, col=1)
    n_eval, n_kept = f["recipe"].get("eval_n"), f["log"].snapshot_eval["n"]
    for key, name, colour, dash in (("top1", "top-1", palette.GREEN, "solid"),
                                    ("miou", "mIoU", palette.ORANGE, "dash")):
        s, v = f[key]
        if s:
            fig.add_trace(go.Scatter(x=s, y=v, name=f"held-out {name} ({n_eval} scenes)",
                                     mode="lines", line=dict(color=colour, width=2, dash=dash)),
                          row=2, col=1)
    s, v = f["kept_top1"]
    fig.add_trace(go.Scatter(x=[_x(i) for i in s], y=v, mode="markers",
                             name=f"top-1 of each kept step ({n_kept} scenes)",
                             marker=dict(color=palette.GREEN, size=9, symbol="diamond")),
                  row=2, col=1)
    top = max(loss) * 1.05 if loss else 1.0
    _kept_lines(fig, f, whose, top)
    _step_axis(fig, f["steps"], row=2, col=1)
    fig.update_xaxes(type="log", row=1, col=1)
    fig.update_yaxes(title=dict(text="loss", font=dict(size=12)), range=[0, top], row=1, col=1)
    fig.update_yaxes(title=dict(text="score (1 = all right)", font=dict(size=12)),
                     range=[0, 1.02], row=2, col=1)
    fig.update_layout(height=470, margin=dict(l=0, r=0, t=60 if whose else 30, b=0),
                      legend=dict(orientation="h", y=-0.2, font=dict(size=11)))
    if whose:
        fig.update_layout(title=dict(text=whose, font=dict(size=14), y=0.98))
    return fig


def _kept_lines(fig: go.Figure, f: dict, whose: str | None, top: float) -> None:
    """A vertical line at every kept step on both charts: dotted grey, the marked step red."""
    named = min((s for s in f["steps"] if s != f["S"]), default=None)  # the legend's "kept"
    for row, y1 in ((1, top), (2, 1.0)):
        for s in f["steps"]:
            this = s == f["S"]
            fig.add_trace(go.Scatter(
                x=[_x(s), _x(s)], y=[0, y1], mode="lines", hoverinfo="skip",
                name=(f"its final weights: step {s:,}" if whose else
                      f"this snapshot: step {s:,}") if this else "kept steps",
                legendgroup="this" if this else "kept",
                showlegend=row == 1 and (this or s == named),
                line=dict(color=COLOURS["this"] if this else palette.NEUTRAL,
                          width=2.5 if this else 1,
                          dash="solid" if this else "dot")), row=row, col=1)


def _curves_figure(x: Ctx, f: dict) -> None:
    if f["log"] is None:
        o = f["other"]
        if o is not None:
            deck.chart(curves_figure(o, whose=f"How {o['name']}'s weights formed (its log: "
                                               f"{x.base} has none)"), key=TRAIN_CURVES)
        return
    r = f["recipe"]
    if not x.presenting:  # on a slide the curves take the height; the notes give the recipe
        seg = (rf" + {r['seg_weight']:g}\,\mathrm{{CE}}_{{\mathrm{{seg}}}}"
               if r.get("task") == "classify" else "")
        latex(rf"\mathcal{{L}} = \mathrm{{CE}}_{{\varepsilon={r['label_smoothing']:g}}}"
              rf"(\mathrm{{logits}}, y){seg},\qquad \eta_t = {r['lr']:g}\cdot\begin{{cases}}"
              rf"\tfrac{{t+1}}{{{r['warmup']}}} & t < {r['warmup']}\\ f + (1-f)\,"
              rf"\tfrac12\big(1+\cos\pi\tfrac{{t-{r['warmup']}}}{{{f['T'] - r['warmup']}}}"
              rf"\big) & \text{{after (}}f\text{{: a small floor)}}\end{{cases}}")
    deck.chart(curves_figure(f), key=TRAIN_CURVES)


def curves_words(f: dict) -> str:
    """The curves of `log_facts` in words: the figure's text alternative."""
    def at(steps) -> list[str]:
        return [f"step {int(v):,}" for v in steps]

    steps, loss = f["loss"]
    held = [describe.line(f"Held-out {name}", at(f[key][0]), f[key][1], fmt)
            for key, name, fmt in (("top1", "top-1", lambda v: pct(v, 0)),
                                   ("miou", "mIoU", describe.two)) if f[key][0]]
    return ("Two charts sharing one axis across: the training step, on a log scale with the "
            "kept steps ticked. Top, up: the loss. "
            + describe.line("The training loss (the mean of every 10 steps)", at(steps), loss,
                             describe.two)
            + " Bottom, up: held-out scores from 0 to 1. " + " ".join(held)
            + f" A solid red line marks step {f['S']:,}; dotted grey lines the other kept steps.")


def _curves_describe(x: Ctx, f: dict) -> str | None:
    if f["log"] is not None:
        return curves_words(f)
    o = f["other"]
    return None if o is None else (f"How {o['name']}'s weights formed ({x.base} has no log). "
                                   + curves_words(o))


def _no_log_words(x: Ctx, why: str, others: list[str]) -> str:
    if others:
        named = " and ".join(f"**{m}**" for m in others)
        tail = (f"; {named} {'was' if len(others) == 1 else 'were'} trained here with one "
                f"(its curves are drawn here): choose {'it' if len(others) == 1 else 'one'} in "
                f"the sidebar to watch its weights form.")
    else:
        tail = "; no model on this machine carries a training log."
    return why + tail + " The steps below show this model's only weights."


def _loss_said(f: dict) -> str | None:
    """The training loss at the marked step, as a clause (None when the log has nothing)."""
    S, r, row, last = f["S"], f["recipe"], f["row"], f["last"]
    if row is not None:
        loss = f"the training loss was **{row['loss']:.2f}**"
        if "cls" in row and "seg" in row:
            loss += (f" (classification {row['cls']:.2f} + {r['seg_weight']:g} × segmentation "
                     f"{row['seg']:.2f})")
        return loss
    if S == 0 and f["first"] is not None:
        return (f"there was no loss yet (the first logged, steps 1–{f['first']['step']}, was "
                f"{f['first']['loss']:.2f})")
    if last is not None and int(last["step"]) < S:
        return f"the log has no loss at step {S:,} (its rows end at step {int(last['step']):,})"
    return None


def _held_said(f: dict) -> str | None:
    """The held-out top-1 at the marked step: a kept step's own scenes, or the curve's."""
    S, T, K, held, card = f["S"], f["T"], f["K"], f["held"], f["card"]
    if held is None:
        return None
    top1 = (f"held-out top-1 was **{pct(held['top1'], 1)}** on the {held['n']} scenes "
            + ("every kept step is measured on" if f["log"].snapshot(S) else "of its curve")
            + (f" ({card})" if S == T and card else ""))
    if K and held["top1"] < NEAR_CHANCE / K:
        top1 += f", near chance ({pct(1 / K)} for {K} classes)"
    return top1 + (f", mIoU {held['miou']:.2f}" if "miou" in held else "")


def _end_said(f: dict) -> str:
    """' At the end (step T): loss …, held-out top-1 ….' before the end; else ''."""
    end, end_row, card = f["end"], f["end_row"], f["card"]
    if f["S"] == f["T"] or (end is None and end_row is None):
        return ""
    bits = ([f"loss {end_row['loss']:.2f}"] if end_row is not None else []) + \
           ([f"held-out top-1 {pct(end['top1'], 1)}" + (f" ({card})" if card else "")]
            if end is not None else [])
    return f" At the end (step {f['T']:,}): {', '.join(bits)}."


def _curves_words(x: Ctx, f: dict) -> str:
    if f["log"] is None:
        return _no_log_words(x, f["why"], f["with_log"])
    S, T = f["S"], f["T"]
    said = (f"At the random start (step 0 of {T:,}, before any update)" if S == 0 else
            f"After {'all' if S == T else f'{S:,} of'} {T:,} steps ({f['seen']:,} "
            f"scenes seen, each one new)")
    parts = [p for p in (_loss_said(f), _held_said(f)) if p is not None]
    said += " " + " and ".join(parts) + "." if parts else ": the log has no measurement there."
    return said + _end_said(f)


def _curves_notes(x: Ctx, f: dict) -> str | None:
    if f["log"] is None:
        return None
    r, T = f["recipe"], f["T"]
    K = f["K"]
    smoothing = (f"label smoothing ε = {r['label_smoothing']:g} (torch's form: the true "
                 f"class's target is 1 − ε + ε/K, every other class's ε/K"
                 + (f", with K = {K}" if K else "") + ")")
    seg = (f" The loss adds a per-patch segmentation term, {r['seg_weight']:g} × its "
           f"cross-entropy, with object pixels weighted {r['seg_fg_weight']:g}×."
           if r.get("task") == "classify" else "")
    steps, lr = f["lr"]
    now = (f" (the log's last row, step {max(steps):,}: η = {lr[-1]:.2g})" if steps else "")
    return (f"The recipe, in the notes' terms: AdamW with peak learning rate η = {r['lr']:g} "
            f"and decoupled weight decay λ = {r['wd']:g} on the weight matrices (not on biases, "
            f"LayerNorm gains or position embeddings); linear warmup over the first "
            f"{r['warmup']:,} steps, then cosine decay towards a small floor by step {T:,}"
            f"{now}; {smoothing}; batch {r['batch']}; augmentations: light brightness, contrast "
            f"and Gaussian-noise jitter, with no MixUp, RandAugment, dropout or stochastic "
            f"depth. Against the data hunger the notes warn about, every step draws "
            f"{r['batch']} new scenes, so no scene is seen twice: {f['seen_all']:,} in "
            f"all.{seg} Held-out scores: every {r['eval_every']} steps on {r.get('eval_n')} "
            f"scenes it never trained on, and each kept step on "
            f"{f['log'].snapshot_eval['n']} others. The log records "
            f"{f['minutes']:.0f} minutes of wall time.")


def _curves_question(x: Ctx, f: dict) -> Question | None:
    """Where the loss curve starts: its first point, as drawn (the whole training loss, a
    classifier's segmentation term included), next to the ln K an even guess scores."""
    K = x.c.num_classes
    if f["log"] is None or not K or not f["loss"][0]:
        return None
    want, (steps, loss) = uniform_loss(K), f["loss"]
    seg = f["recipe"].get("task") == "classify"
    even = (f"an even guess over {K} classes scores a classification loss of ln {K} = "
            f"{want:.2f}")
    return Question(
        "Where does the training loss start: the curve's first point, at the left of the top "
        "chart?" + (" (The curve is the whole loss: classification plus the segmentation "
                     "term.)" if seg else ""),
        f"At **{loss[0]:.2f}** (the mean of steps 1–{steps[0]}). At the random start "
        + (f"{even}; the rest is the segmentation term, {f['recipe']['seg_weight']:g} × the "
           "per-patch cross-entropy of a model that has not learned yet." if seg else
           f"{even} (label smoothing does not change it for an even guess), and the curve "
           "starts near it."),
        Number(round(loss[0], 2), tolerance=round(READ_OFF * max(loss), 2),
               prompt="Where the loss curve starts"))
