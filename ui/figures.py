"""Pure figure functions: tensors and images in, plotly figures out. Never imports streamlit."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from PIL import Image


def patch_grid(crop: Image.Image, patch_size: int, selected: int | None = None,
               show_index: bool = True) -> go.Figure:
    """The model's input crop with its P x P patch grid and the patch index in each cell.

    An invisible marker sits on every cell centre so that clicking a cell selects its patch
    (plotly images report no clicks themselves); the marker's customdata is the patch index.
    """
    img = np.asarray(crop)
    size = img.shape[0]
    g = size // patch_size
    fig = go.Figure(go.Image(z=img, hoverinfo="skip"))
    for i in range(1, g):
        pos = i * patch_size - 0.5
        fig.add_shape(type="line", x0=pos, x1=pos, y0=-0.5, y1=size - 0.5,
                      line=dict(color="white", width=1))
        fig.add_shape(type="line", y0=pos, y1=pos, x0=-0.5, x1=size - 0.5,
                      line=dict(color="white", width=1))
    centres = (np.arange(g) + 0.5) * patch_size - 0.5
    cx, cy = np.meshgrid(centres, centres)
    idx = np.arange(g * g)
    fig.add_trace(go.Scatter(
        x=cx.ravel(), y=cy.ravel(), mode="text+markers" if show_index else "markers",
        text=[str(i) for i in idx] if show_index else None,
        textfont=dict(color="white", size=max(7, min(14, patch_size // 2))),
        marker=dict(size=patch_size, opacity=0, symbol="square"),
        customdata=idx, hovertemplate="patch %{customdata}<extra></extra>", showlegend=False))
    if selected is not None:
        r, c = divmod(int(selected), g)
        fig.add_shape(type="rect", x0=c * patch_size - 0.5, x1=(c + 1) * patch_size - 0.5,
                      y0=r * patch_size - 0.5, y1=(r + 1) * patch_size - 0.5,
                      line=dict(color="#ff2d55", width=3))
    fig.update_layout(margin=dict(l=0, r=0, t=0, b=0), height=460,
                      xaxis=dict(visible=False), yaxis=dict(visible=False, scaleanchor="x"))
    return fig


def top_k_bars(probs: np.ndarray, names: list[str], k: int = 5) -> go.Figure:
    """Horizontal bars of the k most probable classes, best on top."""
    order = np.argsort(-probs)[:k][::-1]
    fig = go.Figure(go.Bar(x=probs[order], y=[names[i] for i in order], orientation="h",
                           text=[f"{probs[i]:.1%}" for i in order], textposition="auto"))
    fig.update_layout(margin=dict(l=0, r=0, t=10, b=0), height=40 + 36 * len(order),
                      xaxis=dict(range=[0, 1], tickformat=".0%"))
    return fig
