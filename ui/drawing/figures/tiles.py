"""Small multiples of patch grids as one heatmap: a tile per map, laid out in rows, each tile
named above it, one colour scale for all (a grid of maps in one trace draws in one call, and
stays one panel a phone can stack beside others). No Streamlit here."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

GAP = 2  # empty cells above each tile: its name


def tiles(grids: list[np.ndarray], labels: list[str], cols: int, *, title: str,
          value_name: str, zmin: float, zmax: float, hover: list[np.ndarray] | None = None,
          outlines: list[list[tuple[int, int, str]]] | None = None,
          row_names: list[str] | None = None, x_name: str = "patch column (in each tile)",
          colorscale: str = "RdBu_r", height: int | None = None, gap: int = GAP) -> go.Figure:
    """Tiles of equal shape [R, C], `cols` to a row, tile i named `labels[i]` above it.

    Args:
        hover: per tile, [R, C] strings said on hover before the value.
        outlines: per tile, (row, col, colour) of the cells outlined (prefix tokens, a top
            cell).
        row_names: the y axis's tick per row of tiles (its title says "patch row" either way).
        gap: empty rows above each tile (room for its name; 1 where the tiles are unnamed).
    """
    R, C = grids[0].shape
    rows = -(-len(grids) // cols)
    step_r, step_c = R + gap, C + 1
    z = np.full((rows * step_r, cols * step_c - 1), np.nan)
    text = np.full(z.shape, "", dtype=object)
    notes, boxes = [], []
    for i, g in enumerate(grids):
        r0, c0 = (i // cols) * step_r + gap, (i % cols) * step_c
        z[r0:r0 + R, c0:c0 + C] = g
        if hover is not None:
            text[r0:r0 + R, c0:c0 + C] = hover[i]
        if labels[i]:
            notes.append(dict(text=labels[i], x=c0 + (C - 1) / 2, y=r0 - 0.6, xref="x", yref="y",
                              showarrow=False, yanchor="bottom", font=dict(size=14)))
        for r, c, colour in (outlines[i] if outlines else ()):
            boxes.append(dict(type="rect", x0=c0 + c - 0.5, x1=c0 + c + 0.5, y0=r0 + r - 0.5,
                              y1=r0 + r + 0.5, line=dict(color=colour, width=3)))
    trace = go.Heatmap(z=z, text=text, colorscale=colorscale, zmin=zmin, zmax=zmax,
                       hoverongaps=False,
                       hovertemplate=f"%{{text}}<br>{value_name} %{{z:.3f}}<extra></extra>",
                       colorbar=dict(thickness=10, title=dict(text=value_name, side="right")))
    y = dict(autorange="reversed", scaleanchor="x", constrain="domain", showgrid=False,
             zeroline=False, title=dict(text="patch row (in each tile)"))
    if row_names:
        y.update(tickmode="array", tickvals=[k * step_r + gap + (R - 1) / 2 for k in range(rows)],
                 ticktext=row_names)
    else:
        y.update(showticklabels=False)
    x = dict(constrain="domain", showgrid=False, zeroline=False, showticklabels=False,
             title=dict(text=x_name))
    return go.Figure(data=[trace], layout=dict(
        title=dict(text=title), xaxis=x, yaxis=y, shapes=boxes, annotations=notes,
        plot_bgcolor="white", margin=dict(l=0, r=0, t=40, b=0), height=height))
