"""Lines, points and histograms: values against the layer, the GELU curve, a token's
residual norms, how many keys each query sees."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ui.drawing import palette
from ui.drawing.figures.parts import _short, _title


def histogram_pair(before: np.ndarray, after: np.ndarray, names=("before", "after"),
                   title: str = "", x_title: str = "value", y_title: str = "count") -> go.Figure:
    fig = go.Figure()
    for k, (v, name) in enumerate(zip((before, after), names, strict=True)):
        # overlaid: pale fills, each bar outlined in its full colour (3:1 on the page), the
        # second run hatched, so the two differ in more than colour
        colour = (palette.BEFORE, palette.AFTER)[k]
        fig.add_trace(go.Histogram(x=np.asarray(v, np.float32), name=name, nbinsx=60, marker=dict(
            color=palette.translucent(colour, 0.45), line=dict(color=colour, width=1),
            pattern=dict(shape=("", "/")[k], fgcolor=colour, solidity=0.3))))
    fig.update_layout(barmode="overlay", height=300, margin=dict(l=0, r=0, t=30, b=0),
                      title=dict(text=title, font=dict(size=14)),
                      legend=dict(orientation="h", y=-0.25), xaxis_title=x_title,
                      yaxis_title=y_title)
    return fig


def _series(i: int, marker: dict | None = None) -> dict:
    """Series i of a chart with several: its colour, dash and marker symbol (never colour
    alone)."""
    m = palette.mark(i)
    return dict(line=dict(color=m["colour"], dash=m["dash"]),
                marker=dict(color=m["colour"], symbol=m["symbol"], **(marker or {})))


def line_chart(x, ys: dict, title: str, xaxis: str, yaxis: str, height: int = 320,
               mode: str = "lines+markers") -> go.Figure:
    fig = go.Figure([go.Scatter(x=list(x), y=np.asarray(y, np.float32), name=name, mode=mode,
                                **_series(i)) for i, (name, y) in enumerate(ys.items())])
    fig.update_layout(title=dict(text=title, font=dict(size=14)), height=height,
                      margin=dict(l=0, r=0, t=30, b=0), xaxis_title=xaxis, yaxis_title=yaxis,
                      # the legend under the chart: at its right it left a phone's chart 127 px
                      legend=dict(orientation="h", yanchor="top", y=-0.25, x=0))
    return fig


def distance_chart(dist: np.ndarray, baseline: float, title: str) -> go.Figure:
    """Mean attention distance per head (markers, one series per head) against the layer, with
    the even-spread baseline as a dashed line that the legend names.

    Args:
        dist: [L, H] pixels.
        baseline: the distance if attention were spread evenly (uniform_distance).
    """
    d = np.asarray(dist, dtype=np.float32)
    L, H = d.shape
    top = max(float(d.max()), baseline) * 1.08
    return go.Figure(  # one constructor call (add_trace and update_layout re-walk the figure)
        data=[*(go.Scatter(x=list(range(L)), y=d[:, h], name=f"head {h}", mode="markers",
                           marker=dict(size=8, color=palette.mark(h)["colour"],
                                       symbol=palette.mark(h)["symbol"])) for h in range(H)),
              go.Scatter(x=[-0.4, L - 0.6], y=[baseline, baseline], mode="lines",
                         name=f"spread evenly: {baseline:.1f} px",
                         line=dict(color=palette.NEUTRAL, dash="dash", width=2))],
        layout=dict(title=_title(title), height=340, margin=dict(l=0, r=0, t=30, b=0),
                    legend=dict(orientation="h", y=-0.25),
                    xaxis=dict(title="layer", tickmode="array", tickvals=list(range(L)),
                               range=[-0.5, L - 0.5]),
                    yaxis=dict(title="mean distance (pixels)", range=[0, top])))


def gelu_scatter(u: np.ndarray, gelu_u: np.ndarray, curve_x: np.ndarray, curve_y: np.ndarray,
                 token: str) -> go.Figure:
    """One token's MLP hidden units on the GELU curve: each unit's U against GELU(U).

    Args:
        u, gelu_u: the token's F pre-activations and their GELU (the trace's mlp.pre / mlp.post).
        curve_x, curve_y: the GELU curve drawn under them.
        token: the token's name, for the legend.
    """
    n = len(u)
    fig = go.Figure([
        go.Scatter(x=curve_x, y=curve_y, name="GELU(x)", mode="lines",
                   line=dict(color=palette.NEUTRAL)),
        go.Scatter(x=u, y=gelu_u, name=f"{token}: {n} hidden units", mode="markers",
                   # a pale fill shows where units crowd; the full-colour edge keeps each seen
                   marker=dict(size=5, color=palette.translucent(palette.BLUE, 0.4),
                               line=dict(color=palette.BLUE, width=1)))])
    fig.update_layout(title=dict(text=f"GELU with this token's {n} pre-activations",
                                 font=dict(size=14)), height=360,
                      margin=dict(l=0, r=0, t=30, b=0), xaxis_title="U (before)",
                      yaxis_title="GELU(U) (after)", legend=dict(orientation="h", y=-0.2))
    return fig


def residual_norms(attn_norm: list[float], mlp_norm: list[float],
                   resid: list[float], title: str = "") -> go.Figure:
    """One token's residual stream by block: the norm each sublayer adds (bars side by side, not
    stacked: norms of vectors that point in different directions do not add up) and the norm of
    the token after each block (line; `resid` starts with the embedding).

    The x axis reads left to right in the order of the forward pass: "embed", "block 0", ...
    (plotly would otherwise order categories by first appearance, putting the line's "embed"
    after the bars' last block)."""
    blocks = [f"block {j}" for j in range(len(attn_norm))]
    fig = go.Figure([
        go.Bar(x=blocks, y=attn_norm, name="‖attention output‖ added",
               marker=dict(color=palette.BLUE)),
        go.Bar(x=blocks, y=mlp_norm, name="‖MLP output‖ added",  # hatched: not colour alone
               marker=dict(color=palette.ORANGE, pattern=palette.hatch("/", palette.ORANGE))),
        go.Scatter(x=["embed"] + blocks, y=resid, name="‖residual‖ after",
                   mode="lines+markers", line=dict(color=palette.VERMILLION),
                   marker=dict(symbol="diamond", size=8, color=palette.VERMILLION))])
    fig.update_layout(barmode="group", height=380, margin=dict(l=0, r=0, t=30, b=0),
                      title=dict(text=title, font=dict(size=14)),
                      legend=dict(orientation="h", y=-0.2), yaxis_title="vector norm",
                      xaxis=dict(title="where in the network (embedding, then after each block)",
                                 categoryorder="array", categoryarray=["embed"] + blocks))
    return fig


def visible_keys_chart(visible: dict, labels: list[str], ticks: list[str],
                       n_image: int) -> go.Figure:
    """How many keys each query may see under each mask (one line per mask), the queries named
    on the x axis and the start of the text marked."""
    S = len(labels)
    fig = go.Figure(  # the lines and the layout in one constructor call
        data=[go.Scatter(x=list(range(S)), y=np.asarray(v, np.float32), name=f"{k} mask",
                         mode="lines+markers", customdata=labels,
                         **_series(i, marker=dict(size=4)),
                         hovertemplate="%{customdata}: %{y} keys<extra>%{fullData.name}</extra>")
              for i, (k, v) in enumerate(visible.items())],
        layout=dict(title=_title("How many keys each query may see"), height=320,
                    margin=dict(l=0, r=0, t=30, b=0),
                    legend=dict(orientation="h", y=1.12, x=1, xanchor="right"),
                    yaxis=dict(title=dict(text="visible keys")),
                    xaxis=dict(title=_title("query token (image tokens first, then text)", 12),
                               tickmode="array", tickvals=[labels.index(t) for t in ticks],
                               ticktext=[_short(t) for t in ticks], tickfont=dict(size=10),
                               tickangle=-90)))
    if 0 < n_image < S:
        fig.add_vline(x=n_image - 0.5, line=dict(color=palette.NEUTRAL, width=1, dash="dot"),
                      annotation_text="text starts", annotation_position="top left")
    return fig
