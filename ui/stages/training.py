"""Stage 11: how the weights were learned. A bundled model trained here with snapshots
(vit_core.training_log) runs at any kept step (the sidebar's "Training step"); this stage draws
its training curves and, at the chosen step beside the final weights, what the ViT paper points
to: position similarity, mean attention distance, CLS attention on the object, the prediction.
A model without a log (a preset, a fetched ViT, a captioner) shows its only weights."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go
import streamlit as st
import torch
from plotly.subplots import make_subplots

from vit_core import bundled_models
from vit_core.explain.attention import allowed_from_mask, uniform_distance
from vit_core.explain.training import (
    SMOOTH_ROWS,
    best_of,
    crop_mask,
    held_out_at,
    layer_distances,
    local_heads,
    object_cover,
    position_closeness,
    row_at,
    series,
    smooth,
    top_from,
    uniform_loss,
)
from vit_core.io.ref import ModelRef
from vit_core.scenes import world
from vit_core.scenes.evaluate import object_attention_ratio

from .. import deck, figures, inputs, keys, models, session, state
from ..deck import Number, PatchPick, Question, Step
from ..numbers import pct, span
from . import common
from .attention import LOCAL  # a head "looks locally" under this share of an even spread

# Wording thresholds, each named where the sentence uses it:
NEAR_CHANCE = 2.0  # held-out top-1 under this many times chance (1/K) is "near chance"
CLEAR_GAP = 0.2  # neighbouring positions "clearly more alike" than far ones by this cosine gap
WEAK_GAP = 0.05  # ... "a little more alike" from this gap; under it "hardly"
ON_OBJECT = 2.0  # CLS attention on the object at least this many times chance: "clearly on it"
ABOVE_CHANCE = 1.25  # ... from this ratio "somewhat more than an even spread"; under it "no more"
TIE = 0.01  # cosines (or attention shares, relative) this close to the best count as the best
OBJECT_PATCH = 0.5  # a patch is outlined as the object's when this share of its pixels is
TOP_SHOWN = 5  # the prediction's bars show this many classes
READ_OFF = 0.05  # a value read off a chart counts as right within this share of its axis
COLOURS = {"start": "#8c8c8c", "this": "#d62728", "final": "#1f4e9c"}  # step 0, session, end


@dataclass(frozen=True)
class Ctx:
    """The stage's view, the picker model it is a step of, and that model's training log."""

    v: deck.View
    base: str  # the picker model (no step, no size)
    size: int | None  # the sidebar's input size when it is not the model's own
    log: Any  # vit_core.TrainingLog, or None for a model trained without one
    step: int | None  # the training step whose weights run (None without a log)

    def __getattr__(self, name):  # the view's fields (inp, tr, c, layer, …)
        return getattr(self.v, name)

    @property
    def final(self) -> int | None:
        return None if self.log is None else self.log.final_step

    def at(self, step: int) -> str:
        """The model's name after `step` training steps, at the session's input size."""
        return state.sized(state.stepped(self.base, step), self.size)

    def compared(self) -> list[int]:
        """The steps shown side by side: the random start, this one and the final, in order."""
        return [] if self.log is None else sorted({0, self.step, self.final})


def view() -> Ctx:
    v = deck.load(text_free_note=True)
    ref = ModelRef.parse(v.name)
    base, size, step = str(ref.picked), ref.size, ref.step
    log = state.training_log(base)
    if log is not None and step is None:
        step = log.final_step
    return Ctx(v, base, size, log, step)


def _intro(x: Ctx) -> str:
    if x.log is None:
        return ("Every weight on the other pages was learned: a training run starts from random "
                "numbers and nudges them, one batch of images at a time, to lower a loss. "
                "This model was not kept at earlier steps, so the steps below show its only "
                "weights.")
    return (f"{x.base} started from random numbers and was trained for {x.final:,} steps; its "
            f"weights were kept at steps {', '.join(map(str, x.log.steps))}. The sidebar's "
            f"**Training step** runs every page with one of them (now step {x.step:,}), so the "
            f"same image can be followed through training.")


def _label(x: Ctx, step: int) -> str:
    """'step 250 (this snapshot)', 'step 0 (random start)', 'step 12,000 (final)'."""
    roles = [r for r, s in (("random start", 0), ("final", x.final)) if s == step]
    if step == x.step:
        roles.append("this snapshot")
    return f"step {step:,}" + (f" ({', '.join(roles)})" if roles else "")


def _role(x: Ctx, step: int) -> str:
    return "this" if step == x.step else "start" if step == 0 else "final"


def _x(step: int) -> int:
    """Where a step goes on the log-scale axis: step 0 at 1 (its tick still reads 0)."""
    return max(int(step), 1)


def _step_axis(fig: go.Figure, steps, title: str = "training step (log scale; kept steps "
               "ticked, step 0 drawn at 1)", **where) -> None:
    fig.update_xaxes(type="log", tickmode="array", tickvals=[_x(s) for s in steps],
                     ticktext=[f"{s:,}" for s in steps],
                     title=dict(text=title, font=dict(size=12)), **where)


def _kind_of(x: Ctx) -> str:
    """Why this model has no training log, in one clause."""
    info = x.model.info
    if info.source == "preset" or not info.trained:
        return f"{x.base} has random weights and was never trained, so there is no run to show"
    if info.source == "bundled":
        return (f"{x.base} was trained by this repository without keeping snapshots or a log "
                f"of the run")
    if ModelRef.parse(x.base).source == "hub" or str(info.source).startswith(("hf:", "timm")):
        return (f"{x.base} was trained elsewhere, by its authors, so this app has no log of how "
                f"its weights formed")
    return (f"{x.base} was read from a checkpoint file, so this app has no log of how its "
            f"weights formed")


def _with_log() -> list[str]:
    return [m for m in bundled_models() if state.training_log(m) is not None]


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
    T, r = log.final_step, log.recipe
    return {"log": log, "S": S, "T": T, "recipe": r, "steps": log.steps,
            "loss": series(log.train, "loss"), "smooth": smooth(series(log.train, "loss")[1]),
            "top1": series(log.held_out, "top1"), "miou": series(log.held_out, "miou"),
            "kept_top1": series(log.snapshots, "top1"),
            "row": row_at(log.train, S), "first": log.train[0] if log.train else None,
            "last": log.train[-1] if log.train else None, "end_row": row_at(log.train, T),
            "held": held_out_at(log, S), "end": held_out_at(log, T), "K": K,
            "lr": series(log.train, "lr"), "card": models.card_top1(state.get_model(log.model))}


def curves_figure(f: dict, whose: str | None = None) -> go.Figure:
    """The training loss (every 10 steps, and its running mean) above the held-out top-1 and
    mIoU, against the step on a log axis; the kept steps dotted, the session's solid red.
    `whose`: a title naming the model, when the curves are not the session model's."""
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.1,
                        subplot_titles=("training loss (the mean of every 10 steps)",
                                        "held-out scores (scenes never trained on)"))
    steps, loss = f["loss"]
    fig.add_trace(go.Scatter(x=steps, y=loss, name="training loss", mode="lines",
                             line=dict(color="#9ecae1", width=1)), row=1, col=1)
    fig.add_trace(go.Scatter(x=steps, y=f["smooth"].tolist(), mode="lines",
                             name=f"its running mean over {SMOOTH_ROWS * 10} steps",
                             line=dict(color="#08519c", width=2.5)), row=1, col=1)
    n_eval, n_kept = f["recipe"].get("eval_n"), f["log"].snapshot_eval["n"]
    for key, name, colour in (("top1", "top-1", "#2ca02c"), ("miou", "mIoU", "#ff7f0e")):
        s, v = f[key]
        if s:
            fig.add_trace(go.Scatter(x=s, y=v, name=f"held-out {name} ({n_eval} scenes)",
                                     mode="lines", line=dict(color=colour, width=2)),
                          row=2, col=1)
    s, v = f["kept_top1"]
    fig.add_trace(go.Scatter(x=[_x(i) for i in s], y=v, mode="markers",
                             name=f"top-1 of each kept step ({n_kept} scenes)",
                             marker=dict(color="#2ca02c", size=9, symbol="diamond")), row=2, col=1)
    top = max(loss) * 1.05 if loss else 1.0
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
                line=dict(color=COLOURS["this"] if this else "#bbbbbb", width=2.5 if this else 1,
                          dash="solid" if this else "dot")), row=row, col=1)
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


def _curves_figure(x: Ctx, f: dict) -> None:
    if f["log"] is None:
        o = f["other"]
        if o is not None:
            deck.chart(curves_figure(o, whose=f"How {o['name']}'s weights formed (its log: "
                                               f"{x.base} has none)"), key=keys.TRAIN_CURVES)
        return
    r = f["recipe"]
    if not x.presenting:  # on a slide the curves take the height; the notes give the recipe
        seg = (rf" + {r['seg_weight']:g}\,\mathrm{{CE}}_{{\mathrm{{seg}}}}"
               if r.get("task") == "classify" else "")
        st.latex(rf"\mathcal{{L}} = \mathrm{{CE}}_{{\varepsilon={r['label_smoothing']:g}}}"
                 rf"(\mathrm{{logits}}, y){seg},\qquad \eta_t = {r['lr']:g}\cdot\begin{{cases}}"
                 rf"\tfrac{{t+1}}{{{r['warmup']}}} & t < {r['warmup']}\\ f + (1-f)\,"
                 rf"\tfrac12\big(1+\cos\pi\tfrac{{t-{r['warmup']}}}{{{f['T'] - r['warmup']}}}"
                 rf"\big) & \text{{after (}}f\text{{: a small floor)}}\end{{cases}}")
    deck.chart(curves_figure(f), key=keys.TRAIN_CURVES)


def _no_log_words(x: Ctx, why: str, others: list[str]) -> str:
    if others:
        named = " and ".join(f"**{m}**" for m in others)
        tail = (f"; {named} {'was' if len(others) == 1 else 'were'} trained here with one "
                f"(its curves are drawn here): choose {'it' if len(others) == 1 else 'one'} in "
                f"the sidebar to watch its weights form.")
    else:
        tail = "; no model on this machine carries a training log."
    return why + tail + " The steps below show this model's only weights."


def _curves_words(x: Ctx, f: dict) -> str:
    if f["log"] is None:
        return _no_log_words(x, f["why"], f["with_log"])
    S, T, r, K = f["S"], f["T"], f["recipe"], f["K"]
    said = (f"At the random start (step 0 of {T:,}, before any update)" if S == 0 else
            f"After {'all' if S == T else f'{S:,} of'} {T:,} steps ({S * int(r['batch']):,} "
            f"scenes seen, each one new)")
    row, last, parts = f["row"], f["last"], []
    if row is not None:
        loss = f"the training loss was **{row['loss']:.2f}**"
        if "cls" in row and "seg" in row:
            loss += (f" (classification {row['cls']:.2f} + {r['seg_weight']:g} × segmentation "
                     f"{row['seg']:.2f})")
        parts.append(loss)
    elif S == 0 and f["first"] is not None:
        parts.append(f"there was no loss yet (the first logged, steps 1–{f['first']['step']}, "
                     f"was {f['first']['loss']:.2f})")
    elif last is not None and int(last["step"]) < S:
        parts.append(f"the log has no loss at step {S:,} (its rows end at step "
                     f"{int(last['step']):,})")
    held, card = f["held"], f["card"]  # a kept step's own scenes, or the curve's; the card's
    if held is not None:
        top1 = (f"held-out top-1 was **{pct(held['top1'], 1)}** on the {held['n']} scenes "
                + ("every kept step is measured on" if f["log"].snapshot(S) else "of its curve")
                + (f" ({card})" if S == T and card else ""))
        if K and held["top1"] < NEAR_CHANCE / K:
            top1 += f", near chance ({pct(1 / K)} for {K} classes)"
        parts.append(top1 + (f", mIoU {held['miou']:.2f}" if "miou" in held else ""))
    said += " " + " and ".join(parts) + "." if parts else ": the log has no measurement there."
    end, end_row = f["end"], f["end_row"]
    if S != T and (end is not None or end_row is not None):
        bits = ([f"loss {end_row['loss']:.2f}"] if end_row is not None else []) + \
               ([f"held-out top-1 {pct(end['top1'], 1)}" + (f" ({card})" if card else "")]
                if end is not None else [])
        said += f" At the end (step {T:,}): {', '.join(bits)}."
    return said


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
            f"{r['batch']} new scenes, so no scene is seen twice: {T * int(r['batch']):,} in "
            f"all.{seg} Held-out scores: every {r['eval_every']} steps on {r.get('eval_n')} "
            f"scenes it never trained on, and each kept step on "
            f"{f['log'].snapshot_eval['n']} others. The log records "
            f"{f['log'].seconds / 60:.0f} minutes of wall time.")


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


# ---------------------------------------------------------------- 2. position embeddings
def _positions_facts(x: Ctx) -> dict:
    g, p = x.c.grid, x.patch
    r, col = divmod(p, g)
    runs = [(s, x.at(s)) for s in (sorted({x.step, x.final if x.step != x.final else 0})
                                   if x.log is not None else [None])]
    out = []
    for step, name in runs:
        views = state.weight_views(name if step is not None else x.name)
        sim = np.asarray(views["pos_sim"][r, col], dtype=np.float64)
        best = best_of(sim, tie=TIE, exclude=p)
        out.append({"step": step, "map": sim, "close": position_closeness(views["pos_stats"]),
                    "best": best, "best_cos": float(sim.reshape(-1)[best[0]]) if best else None})
    return {"runs": out, "trained": bool(x.model.info.trained)}


def _this_run(x: Ctx, f: dict) -> dict:
    return next(r for r in f["runs"] if r["step"] == x.step)


def _positions_figure(x: Ctx, f: dict) -> None:
    p, g = x.patch, x.c.grid
    if not x.presenting:
        st.latex(r"\cos(e_i, e_j) = \frac{e_i\cdot e_j}{\lVert e_i\rVert\,\lVert e_j\rVert},"
                 r"\qquad e_i = \text{row } i \text{ of } E_\mathrm{pos}\ (\text{patch } i)")
    title = f"Patch {p}'s position vector vs every position (outlined: itself)"
    if len(f["runs"]) == 1:
        deck.chart(figures.grid_heatmap(f["runs"][0]["map"], title, value_name="cosine "
                                        "similarity", selected=divmod(p, g), zmin=-1, zmax=1,
                                        height=330), key=keys.TRAIN_POSITIONS)
        return
    a, b = f["runs"]
    deck.chart(figures.grid_heatmap_pair(
        a["map"], b["map"], (_label(x, a["step"]), _label(x, b["step"])),
        title + ", at two training steps", value_name="cosine similarity",
        selected=(divmod(p, g), divmod(p, g))), key=keys.TRAIN_POSITIONS)


def _num(v: float) -> str:
    """Two decimals, never '-0.00'."""
    return f"{v:.2f}".replace("-0.00", "0.00")


def _positions_words(x: Ctx, f: dict) -> str:
    here = _this_run(x, f)
    c = here["close"]
    if c["near"] is None or c["far"] is None:
        return "The grid is too small to compare neighbouring positions with far ones."
    gap = c["gap"]
    verdict = ("neighbours are clearly more alike: the grid's layout is in the positions" if
               gap >= CLEAR_GAP else
               "neighbours are only a little more alike: the layout is barely there" if
               gap >= WEAK_GAP else
               "neighbours are hardly more alike than far positions: no layout yet")
    if not f["trained"]:
        verdict += " (random weights: nothing was learned)"
    when = f"At step {x.step:,}" if x.log is not None else "In this model"
    said = (f"{when}, neighbouring positions have mean cosine {_num(c['near'])} and positions "
            f"{c['far_from']} or more steps apart {_num(c['far'])}, a gap of {_num(gap)} "
            f"(clear from {CLEAR_GAP}, a little from {WEAK_GAP}): {verdict}.")
    other = next((r for r in f["runs"] if r["step"] != x.step), None)
    if other is not None and other["close"]["gap"] is not None:
        o = other["close"]
        said += (f" At {_label(x, other['step'])}: {_num(o['near'])} against {_num(o['far'])}, "
                 f"a gap of {_num(o['gap'])}.")
    return said


def _positions_notes(x: Ctx, f: dict) -> str:
    size = (f" At {x.c.img_size} px the vectors are resampled bicubically from the model's own "
            f"grid, as on the Embeddings page." if x.size else "")
    return ("Each map compares the selected patch's learned position vector with every "
            "patch's (1: the same direction, 0 unrelated, −1 opposite), on one colour scale. "
            "Position vectors start as small random numbers, and nothing tells the model that "
            "patches form a grid: if neighbours end up alike, training found it useful (ViT "
            "paper, Figure 7, centre). Steps count along rows and columns "
            "(|Δrow| + |Δcol|)." + size)


def _positions_question(x: Ctx, f: dict) -> Question | None:
    here, p, g = _this_run(x, f), x.patch, x.c.grid
    if not here["best"]:
        return None
    b = here["best"][0]
    steps = abs(b // g - p // g) + abs(b % g - p % g)
    when = "at this training step" if x.log is not None else "in this model"
    return Question(
        f"Which patch's position vector is most like patch {p}'s {when}? Click it.",
        f"Patch {b} (row {b // g}, column {b % g}), {steps} step{'' if steps == 1 else 's'} "
        f"away: cosine {here['best_cos']:.2f}"
        + (f" (and {len(here['best']) - 1} more within {TIE})" if len(here["best"]) > 1 else "")
        + ".", PatchPick(tuple(sorted(here["best"]))))


# ---------------------------------------------------------------- 3. attention distance
def _distance_facts(x: Ctx) -> dict:
    c = x.c
    baseline = uniform_distance(c.grid, c.patch_size, allowed_from_mask(x.tr.mask),
                                c.num_prefix_tokens)
    steps = x.compared() or [None]
    runs = []
    for step in steps:
        name = x.name if step is None else x.at(step)
        d = np.asarray(state.attention_summary(x.inp, name, session.chosen_mask())["distance"],
                       dtype=np.float64)
        layers = layer_distances(d)
        runs.append({"step": step, "dist": d, "mean": layers["mean"],
                     "local": local_heads(d, baseline, LOCAL),
                     "local_blocks": [i for i in range(len(d)) if
                                      local_heads(d[i], baseline, LOCAL)]})
    return {"runs": runs, "baseline": baseline, "full": bool(allowed_from_mask(x.tr.mask).all())}


def distance_figure(runs: list[dict], baseline: float, title: str, labels: list[str],
                    colours: list[str]) -> go.Figure:
    """Each run's mean attention distance per block (a line through the blocks' means, every
    head a small marker), and the even-spread distance dashed."""
    fig = go.Figure()
    for run, label, colour in zip(runs, labels, colours, strict=True):
        d = run["dist"]
        L, H = d.shape
        fig.add_trace(go.Scatter(x=list(range(L)), y=run["mean"].tolist(), mode="lines+markers",
                                 name=f"{label}: the {H} heads' mean (dots: each head)",
                                 legendgroup=label, line=dict(color=colour, width=2.5),
                                 marker=dict(size=8)))
        fig.add_trace(go.Scatter(x=np.repeat(np.arange(L), H).tolist(),
                                 y=d.reshape(-1).tolist(), mode="markers", name=f"{label}: "
                                 "each head", legendgroup=label, showlegend=False,
                                 marker=dict(color=colour, size=5, opacity=0.45)))
    L = runs[0]["dist"].shape[0]
    fig.add_trace(go.Scatter(x=[-0.4, L - 0.6], y=[baseline, baseline], mode="lines",
                             name=f"spread evenly: {baseline:.0f} px",
                             line=dict(color="#555", dash="dash", width=2)))
    top = max(max(float(r["dist"].max()) for r in runs), baseline) * 1.08
    fig.update_layout(title=dict(text=title, font=dict(size=14)), height=380,
                      margin=dict(l=0, r=0, t=30, b=0),
                      legend=dict(orientation="h", y=-0.22, font=dict(size=11)),
                      xaxis=dict(title="block", tickmode="array", tickvals=list(range(L)),
                                 range=[-0.5, L - 0.5]),
                      yaxis=dict(title="mean attention distance (px)", range=[0, top]))
    return fig


def _distance_figure(x: Ctx, f: dict) -> None:
    c = x.c
    if not x.presenting:
        st.latex(r"d_h = \frac{1}{N}\sum_{i}\sum_{j} \tilde a^{\,h}_{ij}\,\lVert c_i - c_j"
                 r"\rVert,\qquad \tilde a^{\,h}_{ij} = \text{head } h\text{'s attention of patch }"
                 r"i \text{ on patch } j\text{, renormalised over the patches}")
    runs = f["runs"]
    labels = ([_label(x, r["step"]) for r in runs] if x.log is not None else ["this model"])
    colours = ([COLOURS[_role(x, r["step"])] for r in runs] if x.log is not None else
               [COLOURS["this"]])
    when = "" if x.log is None else ", at steps " + ", ".join(f"{r['step']:,}" for r in runs)
    deck.chart(distance_figure(runs, f["baseline"], f"Mean attention distance per block "
                               f"({c.depth} blocks × {c.num_heads} heads){when}", labels,
                               colours), key=keys.TRAIN_DISTANCE)


def _blocks(found: list[int]) -> str:
    return ("block " if len(found) == 1 else "blocks ") + ", ".join(map(str, found))


def _px_range(values) -> str:
    return span(f"{float(np.min(values)):.0f}", f"{float(np.max(values)):.0f}")


def _distance_words(x: Ctx, f: dict) -> str:
    u, runs = f["baseline"], f["runs"]
    here = next(r for r in runs if r["step"] == x.step)
    when = f"At step {x.step:,}" if x.log is not None else "In this model"
    said = (f"{when} the blocks' mean distances run {_px_range(here['mean'])} px (attention "
            f"spread evenly: {u:.0f} px), and **{here['local']} of the {here['dist'].size} "
            f"heads look locally** (under {LOCAL:.0%} of the even spread, {LOCAL * u:.0f} px)")
    said += f", in {_blocks(here['local_blocks'])}." if here["local_blocks"] else "."
    for r in runs:
        if r is not here:
            said += (f" At {_label(x, r['step'])}: {_px_range(r['mean'])} px, {r['local']} "
                     f"local.")
    return said


def _distance_notes(x: Ctx, f: dict) -> str:
    mask = ("" if f["full"] else f" Under the {x.tr.mask_kind} mask the even spread is over "
            f"the patches each query may see.")
    return ("For each head: how far, in pixels between patch centres, a patch's attention "
            "reaches on average (its attention to CLS set aside), over all patches of this "
            "image (ViT paper, Figure 7, right). Random weights give queries and keys that "
            "hardly differ, so attention starts out nearly even; a head that learns to look at "
            "its neighbours falls below the dashed line, one that looks everywhere stays "
            "near it." + mask)


def _distance_question(x: Ctx, f: dict) -> Question:
    c, u = x.c, f["baseline"]
    start = next((r for r in f["runs"] if r["step"] == 0), None)
    seen = ("" if start is None else
            f" At the random start (step 0) this image's heads measure "
            f"{_px_range(start['dist'])} px.")
    return Question(
        f"Attention spread evenly over the patches each query may see: what mean attention "
        f"distance does that give on this {c.grid}×{c.grid} grid of {c.patch_size}-px patches?",
        f"**{u:.1f} px**: the mean distance between a patch's centre and the centres of the "
        f"patches it may see (itself at 0 px), averaged over the patches.{seen}",
        Number(round(u, 1), tolerance=round(max(2.0, 0.05 * u), 1), unit="px",
               prompt="Mean distance"))


# ---------------------------------------------------------------- 4. CLS attention on the object
@functools.lru_cache(maxsize=16)
def _scene_mask(kind: str, ident) -> np.ndarray:
    """The object's pixel mask of a sample (seed) or composed (code) scene, as the world drew
    it (0 = background)."""
    scene = (world.make_scene(ident) if kind == "sample" else
             world.compose(world.Composition.parse(ident)))
    return scene.mask


def object_mask(inp: inputs.Input) -> np.ndarray | None:
    """The object's pixels of this image when the scene world drew it (asked of the scene, its
    bytes checked against the image's), else None: an upload's outline is not known."""
    ss = st.session_state
    if inp.label.startswith("sample"):
        seeds = [s for s in (ss.get(keys.SAMPLE), *inputs.sample_seeds()) if s is not None]
        seed = next((int(s) for s in seeds if inputs.sample_bytes(int(s)) == inp.data), None)
        return None if seed is None else _scene_mask("sample", seed)
    code = ss.get(keys.SCENE)
    if inp.label.startswith("composed") and code and inputs.composed_bytes(code) == inp.data:
        return _scene_mask("composed", code)
    return None


def _cls_row(x: Ctx, name: str) -> torch.Tensor:
    """[N]: the last block's CLS -> patch attention, mean over the heads."""
    c = x.c
    pre = c.num_prefix_tokens
    rows = state.attention_summary(x.inp, name, session.chosen_mask())["prefix_rows"]
    return rows[-1][:, 0, pre:pre + c.num_patches].double().mean(0)


def _ratio(cls: torch.Tensor, mask: np.ndarray | None, c) -> float | None:
    side = c.grid * c.patch_size
    if mask is None or float(cls.sum()) <= 0 or not (mask[:side, :side] > 0).any():
        return None
    m = torch.from_numpy(mask[:side, :side].astype(np.int64))[None]
    return float(object_attention_ratio(cls[None], m, c.grid)[0])


def _cls_facts(x: Ctx) -> dict:
    c = x.c
    raw = object_mask(x.inp)
    mask = None if raw is None else crop_mask(raw, c)
    cover = None if mask is None else object_cover(mask, c.grid, c.patch_size)
    runs = {}
    for step in ([x.step, x.final] if x.log is not None else [None]):
        if step in runs:
            continue
        cls = _cls_row(x, x.name if step is None else x.at(step))
        runs[step] = {"cls": cls, "ratio": _ratio(cls, mask, c)}
    here = runs[x.step]
    total = float(here["cls"].sum())
    share = (here["cls"] / total).numpy() if total > 0 else here["cls"].numpy()
    medians = (series(x.log.snapshots, "cls_object_attention_ratio_median") if x.log is not None
               else ([], []))
    return {"known": raw is not None, "cover": cover, "runs": runs, "share": share,
            "top": best_of(share, tie=TIE * float(share.max())) if total > 0 else (),
            "blind": common.prefix_blind(x.tr), "medians": medians,
            "n": None if x.log is None else x.log.snapshot_eval["n"]}


def cls_figure(share: np.ndarray, grid: int, outline: list[int], map_title: str,
               medians: tuple[list[int], list[float]] | None, marks: list[tuple[int, float, str,
                                                                                str]],
               steps) -> go.Figure:
    """Left: the share of CLS's attention on each patch (the object's patches outlined). Right
    (with a log): the held-out median of CLS attention on the object ÷ chance per kept step,
    chance dashed, this image's ratios as marks (step, ratio, name, colour)."""
    cols = 2 if medians is not None else 1
    fig = make_subplots(rows=1, cols=cols, horizontal_spacing=0.2,  # a 14-px bar and axis between
                        column_widths=[0.42, 0.58] if cols == 2 else None,
                        subplot_titles=(map_title, "CLS attention on the object ÷ chance")[:cols])
    top = max(float(share.max()), 1e-12)  # the scale from 0: an even map is not full contrast
    fig.add_trace(go.Heatmap(
        z=share.reshape(grid, grid), colorscale="Viridis", zmin=0, zmax=top,
        hovertemplate="row %{y}, column %{x}<br>share %{z:.3f}<extra></extra>",
        colorbar=dict(thickness=10, x=0.4 if cols == 2 else None, title=dict(
            text=f"share of CLS's attention, 0 to {top:.3f}", side="right",
            font=dict(size=11)))), row=1, col=1)
    figures.add_shapes(fig, [dict(type="rect", x0=c - 0.5, x1=c + 0.5, y0=r - 0.5, y1=r + 0.5,
                                  xref="x", yref="y", line=dict(color="#ff2d55", width=2))
                             for r, c in (divmod(p, grid) for p in outline)])
    dtick = 1 if grid <= 16 else None
    fig.update_xaxes(title=dict(text="patch column", font=dict(size=12)), dtick=dtick,
                     constrain="domain", row=1, col=1)
    fig.update_yaxes(title=dict(text="patch row", font=dict(size=12)), dtick=dtick,
                     autorange="reversed", scaleanchor="x", constrain="domain", row=1, col=1)
    if cols == 2:
        s, v = medians
        fig.add_trace(go.Scatter(x=[_x(i) for i in s], y=v, mode="lines+markers",
                                 name="held-out median", line=dict(color="#1f4e9c", width=2)),
                      row=1, col=2)
        fig.add_trace(go.Scatter(x=[_x(min(steps)), _x(max(steps))], y=[1, 1], mode="lines",
                                 name="chance (spread evenly)",
                                 line=dict(color="#555", dash="dash")), row=1, col=2)
        for step, ratio, name, colour in marks:
            fig.add_trace(go.Scatter(x=[_x(step)], y=[ratio], mode="markers", name=name,
                                     marker=dict(color=colour, size=12, symbol="star")),
                          row=1, col=2)
        _step_axis(fig, steps, title="training step (log scale; step 0 drawn at 1)", row=1,
                   col=2)
        top = max([*v, *(m[1] for m in marks), 1.0]) * 1.1
        fig.update_yaxes(title=dict(text="times chance", font=dict(size=12)), range=[0, top],
                         row=1, col=2)
    fig.update_layout(height=360, margin=dict(l=0, r=0, t=40, b=0),
                      legend=dict(orientation="h", y=-0.25, font=dict(size=11)))
    return fig


def _cls_figure(x: Ctx, f: dict) -> None:
    c = x.c
    outline = ([] if f["cover"] is None else
               [int(i) for i in np.flatnonzero(f["cover"] >= OBJECT_PATCH)])
    when = f" at step {x.step:,}" if x.log is not None else ""
    marks = [(s, r["ratio"], f"this image, {_label(x, s)}", COLOURS[_role(x, s)])
             for s, r in f["runs"].items() if s is not None and r["ratio"] is not None]
    title = f"Last block: CLS → patches{when}" + (" (outlined: the object)" if outline else "")
    deck.chart(cls_figure(f["share"], c.grid, outline, title,
                          f["medians"] if x.log is not None else None, marks,
                          x.log.steps if x.log is not None else ()), key=keys.TRAIN_CLS)


def _as_logged(x: Ctx) -> str:
    """How the log's measurements differ from this page's run: another size or mask."""
    own = state.get_model(x.base).config
    said = ([f"at its own {own.img_size} px"] if x.size else []) + (
        ["under the mask it was trained with"]
        if session.chosen_mask() not in (None, own.default_mask) else [])
    return f" (measured {' and '.join(said)})" if said else ""


def _median_at(x: Ctx, f: dict) -> str:
    if x.log is None:
        return " This model has no earlier snapshots to compare."
    steps, values = f["medians"]
    if x.step not in steps:
        return f" The log has no held-out median for step {x.step:,}."
    m = values[steps.index(x.step)]
    return (f" Over {f['n']} held-out scenes the median at step {x.step:,} was "
            f"**{m:.1f}× chance**{_as_logged(x)}.")


def _cls_words(x: Ctx, f: dict) -> str:
    if f["blind"]:
        return (f"Under the {x.tr.mask_kind} mask {common.prefix_sight(x.tr)}: none of its "
                f"attention reaches a patch, so none lands on the object." + _median_at(x, f))
    if not f["known"]:
        return ("This photo's object outline is unknown, so how much CLS attention lands on "
                "the object cannot be measured on it." + _median_at(x, f))
    here = f["runs"][x.step]
    if here["ratio"] is None:
        return "None of the object's pixels is in the crop the model sees." + _median_at(x, f)
    r = here["ratio"]
    cover = float((f["cover"]).mean())
    verdict = ("clearly more than an even spread would give" if r >= ON_OBJECT else
               "somewhat more than an even spread" if r >= ABOVE_CHANCE else
               "no more than an even spread would give")
    when = f"at step {x.step:,}" if x.log is not None else "in this model"
    said = (f"The object covers {pct(cover)} of this image, and {when} CLS puts "
            f"{pct(r * cover)} of its last-block attention on object pixels: **{r:.1f}× "
            f"chance**, {verdict} ({ON_OBJECT:g}× counts as clearly).")
    final = f["runs"].get(x.final)
    if x.log is not None and x.step != x.final and final["ratio"] is not None:
        said += f" The final weights: {final['ratio']:.1f}×."
    return said + _median_at(x, f)


def _cls_notes(x: Ctx, f: dict) -> str:
    return ("The last block's CLS row, averaged over the heads, over the patches only. Each "
            "patch's share is spread evenly over its pixels; the share landing on the object's "
            "pixels, divided by the object's share of the image, is 1 for an even spread. The "
            "object's outline comes from the scene generator that drew it (a sample or "
            "composed scene), never from the model. The training log measures the same ratio "
            "on held-out scenes at every kept step and keeps the median.")


def _cls_question(x: Ctx, f: dict) -> Question | None:
    if f["blind"]:
        return None
    here = f["runs"][x.step]
    when = "at this training step" if x.log is not None else "in this model"
    if f["known"] and here["ratio"] is not None:
        r, cover = here["ratio"], float(f["cover"].mean())
        return Question(
            f"How many times chance is the share of CLS's last-block attention that lands on "
            f"the object {when} (1× = spread evenly)?",
            f"**{r:.2f}×**: {pct(r * cover)} ÷ {pct(cover)}; an even spread would put exactly "
            f"the object's share, {pct(cover)}, on it (1×).",
            Number(round(r, 2), tolerance=round(max(0.1, 0.05 * r), 2), unit="× chance",
                   prompt="Times chance"))
    if not f["top"]:
        return None
    best = f["top"][0]
    g = x.c.grid
    return Question(
        f"Which patch does CLS attend to most in the last block {when}? Click it.",
        f"Patch {best} (row {best // g}, column {best % g}), with {pct(float(f['share'][best]))} "
        f"of CLS's attention to the patches.", PatchPick(tuple(sorted(f["top"]))))


def _has_cls(c) -> bool:
    return bool(c.class_token)


# ---------------------------------------------------------------- 5. the prediction
def _softmax(logits) -> np.ndarray:
    return torch.as_tensor(logits).double().reshape(-1).softmax(-1).numpy()


def _prediction_facts(x: Ctx) -> dict:
    c = x.c
    names = list(c.class_names) if c.class_names else [f"class {k}" for k in
                                                       range(c.num_classes)]
    probs = _softmax(x.tr.logits)
    out = {"names": names, "probs": probs, "K": c.num_classes}
    if x.log is None:
        out.update(steps=[], curve=[], final=int(probs.argmax()), since=None)
        return out
    steps = list(x.log.steps)
    per = [_softmax(state.logits(x.inp, x.at(s), session.chosen_mask())) for s in steps]
    k = int(per[-1].argmax())  # the final weights' top class
    tops = [int(p.argmax()) for p in per]
    out.update(steps=steps, curve=[float(p[k]) for p in per], final=k,
               since=top_from(steps, tops, k), start=per[steps.index(0)] if 0 in steps else None)
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
                         text=[f"{probs[i]:.1%}" for i in order], textposition="auto",
                         name=f"step {step:,}", marker_color=COLOURS["this"], showlegend=False),
                  row=1, col=1)
    fig.update_xaxes(range=[0, 1], tickformat=".0%", title=dict(text="probability",
                                                                font=dict(size=12)), row=1, col=1)
    fig.update_yaxes(title=dict(text="class", font=dict(size=12)), row=1, col=1)
    steps = f["steps"]
    fig.add_trace(go.Scatter(x=[_x(s) for s in steps], y=f["curve"], mode="lines+markers",
                             name=f"P({names[k]}), the final top class",
                             line=dict(color=COLOURS["final"], width=2)), row=1, col=2)
    fig.add_trace(go.Scatter(x=[_x(min(steps)), _x(max(steps))], y=[1 / f["K"]] * 2, mode="lines",
                             name=f"chance: 1/{f['K']}", line=dict(color="#555", dash="dash")),
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
               key=keys.TRAIN_PREDICTION)


def _prediction_words(x: Ctx, f: dict) -> str:
    names, probs, K = f["names"], f["probs"], f["K"]
    top = int(probs.argmax())
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


STAGE = deck.Stage(
    slug="training",
    title="11 · Training",
    story="Every weight on the other pages was learned: training starts from random numbers "
          "and nudges them, batch after batch, to lower a loss. Here the run's curves, and at "
          "the chosen training step, beside the final weights: the position embeddings, how "
          "far the heads look, where CLS looks and what the model predicts.",
    view=view,
    intro=_intro,
    steps=(
        Step("curves", "Loss and held-out accuracy, step by step", _curves_figure,
             facts=_curves_facts, words=_curves_words, notes=_curves_notes,
             question=_curves_question, asks=("log", "loss", "recipe")),
        Step("positions", "Position embeddings: neighbours against far positions",
             _positions_figure, facts=_positions_facts, words=_positions_words,
             notes=_positions_notes, question=_positions_question,
             asks=("runs",), controls=("patch",),
             reads=("weight_views",)),
        Step("distance", "How far the heads look, block by block", _distance_figure,
             facts=_distance_facts, words=_distance_words, notes=_distance_notes,
             question=_distance_question, asks=("baseline", "runs"), reads=("attention_summary",)),
        Step("cls", "CLS attention on the object", _cls_figure, facts=_cls_facts,
             words=_cls_words, notes=_cls_notes, question=_cls_question,
             asks=("blind", "cover", "known", "runs"), applies=_has_cls,
             reads=("attention_summary",)),
        Step("prediction", "The prediction at every kept step", _prediction_figure,
             facts=_prediction_facts, words=_prediction_words, notes=_prediction_notes,
             question=_prediction_question,
             asks=("curve", "final", "names", "probs", "steps"), applies=_classifies),
    ),
)
