"""Step 3: how far each block's heads look, at this step beside the start and the end."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ui.drawing import describe, palette
from ui.drawing.equation import latex
from ui.drawing.numbers import pct, span
from ui.lesson import deck
from ui.lesson.deck import Number, Question
from ui.selection import session
from ui.serving import state
from ui.stages.attention import LOCAL  # a head "looks locally" under this share of an even spread
from ui.stages.training.base import (
    COLOURS,
    DASHES,
    SYMBOLS,
    Ctx,
    _label,
    _role,
)
from ui.stages.training.keys import TRAIN_DISTANCE
from vit_core.explain.attention import allowed_from_mask, uniform_distance
from vit_core.explain.training import (
    layer_distances,
    local_blocks,
    local_heads,
    spread,
)


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
                     "local_blocks": local_blocks(d, baseline, LOCAL),
                     "mean_range": spread(layers["mean"]), "dist_range": spread(d)})
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
                                 legendgroup=label, line=dict(color=colour, width=2.5,
                                                              dash=DASHES.get(colour)),
                                 marker=dict(size=8, symbol=SYMBOLS.get(colour))))
        fig.add_trace(go.Scatter(x=np.repeat(np.arange(L), H).tolist(),
                                 y=d.reshape(-1).tolist(), mode="markers", name=f"{label}: "
                                 "each head", legendgroup=label, showlegend=False,
                                 marker=dict(color=palette.translucent(colour, 0.35), size=6,
                                             symbol=SYMBOLS.get(colour),  # a pale fill, its
                                             line=dict(color=colour, width=1))))  # edge 3:1
    L = runs[0]["dist"].shape[0]
    fig.add_trace(go.Scatter(x=[-0.4, L - 0.6], y=[baseline, baseline], mode="lines",
                             name=f"spread evenly: {baseline:.0f} px",
                             line=dict(color=palette.NEUTRAL, dash="longdash", width=2)))
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
        latex(r"d_h = \frac{1}{N}\sum_{i}\sum_{j} \tilde a^{\,h}_{ij}\,\lVert c_i - c_j"
              r"\rVert,\qquad \tilde a^{\,h}_{ij} = \text{head } h\text{'s attention of patch }"
              r"i \text{ on patch } j\text{, renormalised over the patches}")
    runs = f["runs"]
    labels = ([_label(x, r["step"]) for r in runs] if x.log is not None else ["this model"])
    colours = ([COLOURS[_role(x, r["step"])] for r in runs] if x.log is not None else
               [COLOURS["this"]])
    when = "" if x.log is None else ", at steps " + ", ".join(f"{r['step']:,}" for r in runs)
    deck.chart(distance_figure(runs, f["baseline"], f"Mean attention distance per block "
                               f"({c.depth} blocks × {c.num_heads} heads){when}", labels,
                               colours), key=TRAIN_DISTANCE)


def _blocks(found: list[int]) -> str:
    return ("block " if len(found) == 1 else "blocks ") + ", ".join(map(str, found))


def _px_range(values: tuple[float, float]) -> str:
    lo, hi = values
    return span(f"{lo:.0f}", f"{hi:.0f}")


def _distance_words(x: Ctx, f: dict) -> str:
    u, runs = f["baseline"], f["runs"]
    here = next(r for r in runs if r["step"] == x.step)
    when = f"At step {x.step:,}" if x.log is not None else "In this model"
    said = (f"{when} the blocks' mean distances run {_px_range(here['mean_range'])} px (attention "
            f"spread evenly: {u:.0f} px), and **{here['local']} of the {here['dist'].size} "
            f"heads look locally** (under {pct(LOCAL, 0)} of the even spread, {LOCAL * u:.0f} px)")
    said += f", in {_blocks(here['local_blocks'])}." if here["local_blocks"] else "."
    for r in runs:
        if r is not here:
            said += (f" At {_label(x, r['step'])}: {_px_range(r['mean_range'])} px, {r['local']} "
                     f"local.")
    return said


def _distance_describe(x: Ctx, f: dict) -> str:
    runs = f["runs"]
    L, H = runs[0]["dist"].shape
    labels = [_label(x, r["step"]) for r in runs] if x.log is not None else ["this model"]
    return (describe.curves("the block, 0 to " + str(L - 1),
                             f"mean attention distance in pixels (a line through the {H} heads' "
                             f"mean, a dot for each head)", [f"block {i}" for i in range(L)],
                             {lab: r["mean"] for lab, r in zip(labels, runs, strict=True)},
                             lambda v: f"{v:.0f} px")
            + f" A dashed line: attention spread evenly, {f['baseline']:.0f} px.")


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
            f"{_px_range(start['dist_range'])} px.")
    return Question(
        f"Attention spread evenly over the patches each query may see: what mean attention "
        f"distance does that give on this {c.grid}×{c.grid} grid of {c.patch_size}-px patches?",
        f"**{u:.1f} px**: the mean distance between a patch's centre and the centres of the "
        f"patches it may see (itself at 0 px), averaged over the patches.{seen}",
        Number(round(u, 1), tolerance=round(max(2.0, 0.05 * u), 1), unit="px",
               prompt="Mean distance"))
