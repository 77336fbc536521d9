"""The MAE stage's pictures: images with their patch grids, the encoder's and decoder's
tokens, the error per patch, the loss; and the grid's click and button callbacks."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st
import torch
from PIL import Image

from ui import keys
from ui.drawing import figures, palette
from ui.drawing.readable import TEXT_PX
from ui.stages.mae.base import (
    HIDDEN_GREY,
    ROW_TEXT,
    TEXT_CELLS,
)
from ui.stages.mae.keys import MAE_GRID
from vit_core.explain.mae_facts import MAENumbers as Numbers
from vit_core.io.images import denormalize


# ---------------------------------------------------------------- pictures
def _image(t: torch.Tensor, c) -> Image.Image:
    """A normalised [3, H, W] tensor as an RGB image."""
    return figures.array_image(denormalize(t, c).numpy(), t.shape[-1])


def _blank(crop: Image.Image, patches, P: int) -> Image.Image:
    out = crop.copy()
    for p in patches:
        r, col = divmod(int(p), crop.size[0] // P)
        out.paste(HIDDEN_GREY, (col * P, r * P, (col + 1) * P, (r + 1) * P))
    return out


def _toggle_clicked_patch() -> None:
    """on_select of the grid: a click hides the patch, or shows it again."""
    ss = st.session_state
    chosen = set(ss.get(keys.MAE_HIDDEN, []))
    for point in (ss.get(MAE_GRID) or {}).get("selection", {}).get("points", []):
        data = point.get("customdata")
        if data is not None:
            chosen ^= {int(data[0] if isinstance(data, list) else data)}
    ss[keys.MAE_HIDDEN] = sorted(chosen)


def _clear() -> None:
    st.session_state[keys.MAE_HIDDEN] = []


def _next_masking() -> None:
    st.session_state[keys.MAE_SEED] = int(st.session_state.get(keys.MAE_SEED, 0)) + 1


def _images_row(images: list[Image.Image], titles: list[str], P: int, outlined,
                title: str) -> go.Figure:
    """Images side by side, each with its patch grid; `outlined` patches framed on each."""
    g = images[0].size[0] // P
    cell = 224 // g  # every image drawn g·cell ≈ 224 px wide, whatever its own size
    side = g * cell
    figs = []
    for img in images:
        one = figures.labelled_patches(img.resize((side, side), Image.Resampling.NEAREST), cell,
                                       "", outlined=outlined)
        one.update_xaxes(visible=False, range=[-0.5, side - 0.5])
        one.update_yaxes(visible=False, range=[side - 0.5, -0.5], scaleanchor="x")
        figs.append(one)
    fig = figures.panels(figs, titles, spacing=0.02)
    fig.update_layout(title=dict(text=title, font=dict(size=14)), height=330,
                      margin=dict(l=0, r=0, t=60, b=0), showlegend=False)
    return fig


def token_strips(f: Numbers) -> go.Figure:
    """Two rows of tokens: the encoder's (CLS + the visible patches, in the order it reads
    them) and the decoder's (CLS + every patch in grid order, [MASK] where hidden), with a line
    from each encoded patch to the place it takes in the decoder. Each token is a bar as wide as
    the chart allows; its patch number is printed in it where it fits at 14 px (plotly's
    uniformtext hides the rest: on a phone), on the decoder's row only when it is short."""
    enc_x = np.arange(f.S_enc) * f.S_dec / f.S_enc  # spread out to the decoder row's width
    enc_w = min(2.5, 0.8 * f.S_dec / f.S_enc)
    lines_x, lines_y = [], []
    for j, p in enumerate(f.visible):  # where each encoded token goes
        lines_x += [enc_x[j + 1], p + 1, None]
        lines_y += [0.75, 0.25, None]
    data = [go.Scatter(x=lines_x, y=lines_y, mode="lines", line=dict(color=palette.NEUTRAL,
                                                                      width=1),
                       hoverinfo="skip", showlegend=False)]
    # the legend counts them: N = n_visible + n_hidden patches
    visible = f"a visible patch's token ({f.n_visible})"
    hidden = f"[MASK]: a hidden patch ({f.n_hidden})"
    kinds = [("CLS", palette.NEUTRAL, [enc_x[0]], 1, ["CLS"]),
             ("CLS", palette.NEUTRAL, [0], 0, ["CLS"]),
             (visible, palette.BLUE, list(enc_x[1:]), 1, [str(p) for p in f.visible]),
             (visible, palette.BLUE, [p + 1 for p in f.visible], 0, [str(p) for p in f.visible]),
             (hidden, palette.ORANGE, [p + 1 for p in f.hidden], 0,
              [str(p) for p in f.hidden])]
    hatch = {hidden: "/", "CLS": "."}  # told apart from a visible token by more than colour
    shown = set()
    for name, colour, xs, row, labels in kinds:
        if not xs:
            continue
        data.append(go.Bar(
            x=xs, y=[0.5] * len(xs), base=[row - 0.25] * len(xs),
            width=enc_w if row == 1 else 0.85, customdata=labels,
            marker=dict(color=colour, pattern=palette.hatch(hatch.get(name, ""), colour)),
            text=labels if row == 1 or f.S_dec <= ROW_TEXT else None,
            textposition="inside", insidetextanchor="middle", constraintext="inside",
            textfont=dict(color=palette.ink_on(colour)), name=name, showlegend=name not in shown,
            hovertemplate="%{customdata}<extra>" + name + "</extra>"))
        shown.add(name)
    return go.Figure(data=data, layout=dict(
        title=dict(text=f"Of N = {f.N} patches the encoder reads {f.n_visible} (+ CLS), the "
                        f"decoder all {f.S_dec} tokens"),
        height=260, margin=dict(l=150, r=0, t=40, b=0), barmode="overlay",
        uniformtext=dict(minsize=TEXT_PX, mode="hide"), legend=dict(orientation="h", y=-0.1),
        xaxis=dict(visible=False, zeroline=False),
        yaxis=dict(tickvals=[0, 1], range=[-0.5, 1.5], zeroline=False, showgrid=False,
                   ticktext=[f"decoder: 1 + N = {f.S_dec}",
                             f"encoder: 1 + N_vis = {f.S_enc}"])))


def error_map(f: Numbers) -> go.Figure:
    """The squared error of every patch on the grid; visible patches marked with a circle."""
    g = f.grid
    fig = figures.grid_heatmap(f.error.reshape(g, g), "", colorscale="Viridis", zmin=0,
                               value_name="squared error (mean over the patch's P²C values)")
    rows, cols = np.divmod(np.array(f.visible), g)
    name = "visible (not in the loss)"
    for colour, size, width in ((palette.OUTLINE_DARK, 12, 4), (palette.OUTLINE_LIGHT, 10, 2)):
        fig.add_trace(go.Scatter(x=cols, y=rows, mode="markers", name=name, showlegend=False,
                                 legendgroup=name, hoverinfo="skip",  # a white ring on a black
                                 marker=dict(symbol="circle-open", color=colour, size=size,
                                             line=dict(width=width))))  # one: seen on any colour
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=name, legendgroup=name,
                             marker=dict(symbol="circle-open", color=palette.NEUTRAL, size=10,
                                         line=dict(width=2))))  # the legend's, on either page
    title = (f"Error per patch: hidden mean {f.loss:.4f}, visible mean {f.visible_error:.4f}"
             if f.hidden else f"Error per patch: nothing hidden, mean {f.all_error:.4f}")
    fig.update_layout(title=dict(text=title, font=dict(size=14)), showlegend=True,
                      legend=dict(orientation="h", y=-0.2))
    fig.update_xaxes(range=[-0.5, g - 0.5], zeroline=False)
    fig.update_yaxes(range=[g - 0.5, -0.5], zeroline=False)
    return fig


def loss_bars(f: Numbers) -> go.Figure:
    """The hidden patches' errors, largest first, and their mean: the loss."""
    order = sorted(f.hidden, key=lambda p: -f.error[p])
    fig = go.Figure(go.Bar(x=[str(p) for p in order], y=[f.error[p] for p in order],
                           marker_color=palette.ORANGE, name="a hidden patch's squared error",
                           hovertemplate="patch %{x}: %{y:.4f}<extra></extra>"))
    fig.add_hline(y=f.loss, line=dict(color=palette.NEUTRAL, dash="dash"),
                  annotation_text=f"L = their mean = {f.loss:.4f}",
                  annotation_position="top right")
    fig.update_layout(title=dict(text=f"The loss: the mean over the {f.n_hidden} hidden patches",
                                 font=dict(size=14)), height=340,
                      margin=dict(l=60, r=10, t=40, b=50),
                      yaxis_title="squared error (mean over P²C values)",
                      xaxis=dict(type="category", showticklabels=f.n_hidden <= TEXT_CELLS,
                                 title="hidden patch (its number), largest error first"))
    return fig
