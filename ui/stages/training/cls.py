"""Step 4: CLS attention on the object, where the scene generator drew its outline."""

from __future__ import annotations

import functools

import numpy as np
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from ui import keys
from ui.drawing import describe, figures, palette
from ui.drawing.numbers import pct
from ui.lesson import deck
from ui.lesson.deck import Number, PatchPick, Question
from ui.selection import inputs, session
from ui.serving import state
from ui.stages import common
from ui.stages.training.base import (
    ABOVE_CHANCE,
    COLOURS,
    OBJECT_PATCH,
    ON_OBJECT,
    SYMBOLS,
    TIE,
    Ctx,
    _label,
    _role,
    _step_axis,
    _x,
)
from ui.stages.training.keys import TRAIN_CLS
from vit_core.explain.extremes import extremes
from vit_core.explain.training import (
    attention_shares,
    cls_patch_row,
    crop_mask,
    object_attention,
    object_cover,
    series,
)
from vit_core.scenes import world


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


def _cls_run(x: Ctx, name: str, cover) -> dict:
    """The last block's CLS -> patch attention of model `name` (mean over the heads), and how
    much of it lands on the object ("ratio": times chance; "on_object": the share)."""
    c = x.c
    rows = state.attention_summary(x.inp, name, session.chosen_mask())["prefix_rows"]
    cls = cls_patch_row(rows[-1], c.num_prefix_tokens, c.num_patches)
    none = {"ratio": None, "cover": None, "on_object": None}
    return {"cls": cls, **(none if cover is None else object_attention(cls, cover))}


def _cls_facts(x: Ctx) -> dict:
    c = x.c
    raw = object_mask(x.inp)
    mask = None if raw is None else crop_mask(raw, c)
    cover = None if mask is None else object_cover(mask, c.grid, c.patch_size)
    runs = {}
    for step in ([x.step, x.final] if x.log is not None else [None]):
        if step not in runs:
            runs[step] = _cls_run(x, x.name if step is None else x.at(step), cover)
    share, top = attention_shares(runs[x.step]["cls"], TIE)
    medians = (series(x.log.snapshots, "cls_object_attention_ratio_median") if x.log is not None
               else ([], []))
    return {"known": raw is not None, "cover": cover, "runs": runs, "share": share, "top": top,
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
    figures.add_shapes(fig, [box for r, c in (divmod(p, grid) for p in outline)
                             for box in palette.outlined(dict(
                                 type="rect", x0=c - 0.5, x1=c + 0.5, y0=r - 0.5, y1=r + 0.5,
                                 xref="x", yref="y"))])
    dtick = 1 if grid <= 16 else None
    fig.update_xaxes(title=dict(text="patch column", font=dict(size=12)), dtick=dtick,
                     constrain="domain", row=1, col=1)
    fig.update_yaxes(title=dict(text="patch row", font=dict(size=12)), dtick=dtick,
                     autorange="reversed", scaleanchor="x", constrain="domain", row=1, col=1)
    if cols == 2:
        s, v = medians
        fig.add_trace(go.Scatter(x=[_x(i) for i in s], y=v, mode="lines+markers",
                                 name="held-out median",
                                 line=dict(color=COLOURS["final"], width=2)),
                      row=1, col=2)
        fig.add_trace(go.Scatter(x=[_x(min(steps)), _x(max(steps))], y=[1, 1], mode="lines",
                                 name="chance (spread evenly)",
                                 line=dict(color=palette.NEUTRAL, dash="dot")), row=1, col=2)
        for step, ratio, name, colour in marks:
            fig.add_trace(go.Scatter(x=[_x(step)], y=[ratio], mode="markers", name=name,
                                     marker=dict(color=colour, size=12,
                                                 symbol=SYMBOLS.get(colour, "star"))),
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
                          x.log.steps if x.log is not None else ()), key=TRAIN_CLS)


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
    r, cover = here["ratio"], here["cover"]
    verdict = ("clearly more than an even spread would give" if r >= ON_OBJECT else
               "somewhat more than an even spread" if r >= ABOVE_CHANCE else
               "no more than an even spread would give")
    when = f"at step {x.step:,}" if x.log is not None else "in this model"
    said = (f"The object covers {pct(cover)} of this image, and {when} CLS puts "
            f"{pct(here['on_object'])} of its last-block attention on object pixels: **{r:.1f}× "
            f"chance**, {verdict} ({ON_OBJECT:g}× counts as clearly).")
    final = f["runs"].get(x.final)
    if x.log is not None and x.step != x.final and final["ratio"] is not None:
        said += f" The final weights: {final['ratio']:.1f}×."
    return said + _median_at(x, f)


def _cls_describe(x: Ctx, f: dict) -> str:
    g = x.c.grid
    n_out = 0 if f["cover"] is None else int((f["cover"] >= OBJECT_PATCH).sum())
    said = describe.patch_map("Your image", "the share of CLS's last-block attention (viridis, "
                              "from 0)", extremes(f["share"]), g, lambda v: f"{v:.3f}")
    said += (f" The object's {n_out} patches are outlined in red." if n_out else "")
    if x.log is None:
        return said
    steps, v = f["medians"]
    return (said + " Right, a line chart across the kept training steps (log scale), up: times "
            "chance. " + describe.line("The held-out median of CLS attention on the object",
                                        [f"step {s:,}" for s in steps], v,
                                        lambda r: f"{r:.1f}×")
            + " A dashed line: chance, 1×; a star: this image.")


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
        r, cover = here["ratio"], here["cover"]
        return Question(
            f"How many times chance is the share of CLS's last-block attention that lands on "
            f"the object {when} (1× = spread evenly)?",
            f"**{r:.2f}×**: {pct(here['on_object'])} ÷ {pct(cover)}; an even spread would put "
            f"exactly the object's share, {pct(cover)}, on it (1×).",
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
