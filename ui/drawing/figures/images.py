"""Images as figures: the crop with its patch grid (clickable: an invisible marker per cell),
a map painted over the crop, labelled patches, a QR code."""

from __future__ import annotations

import io

import numpy as np
import plotly.graph_objects as go
from PIL import Image

from ui.drawing import palette
from ui.drawing.figures.parts import _title, jpeg_data_uri


def patch_grid(crop: Image.Image, patch_size: int, selected: int | None = None,
               show_index: bool = True, height: int = 460) -> go.Figure:
    """The model's input crop with its P x P patch grid and the patch index in each cell.

    An invisible marker sits on every cell centre so that clicking a cell selects its patch
    (plotly images report no clicks themselves); the marker's customdata is the patch index.
    """
    g = crop.size[0] // patch_size
    text = max(7, min(14, height // (3 * g)))  # by drawn size
    return _grid_figure(crop, patch_size, [_click_layer(crop, patch_size, show_index, text)],
                        [] if selected is None else [selected], height=height)


def _grid_figure(crop: Image.Image, patch_size: int, layers: list, outlined, *,
                 height: int = 460, title: str | None = None, pinned: bool = False) -> go.Figure:
    """The crop, its grid lines, more `layers` (click markers, labels), the `outlined` patches
    framed; axes hidden, square; `pinned`: the axes end at the image (markers would widen them).
    Grid lines are white on a black edge and frames yellow on a black edge, so that they stand
    out 3:1 on any picture. One constructor call: each add_* / update_* call costs ~5-20 ms."""
    size = crop.size[0]
    g = size // patch_size
    # all grid lines as one trace (None breaks the line), not a shape per line
    xs, ys = [], []
    for i in range(1, g):
        cut, lo, hi = i * patch_size - 0.5, -0.5, size - 0.5
        xs += [cut, cut, None, lo, hi, None]  # a vertical line, then a horizontal one
        ys += [lo, hi, None, cut, cut, None]
    lines = [go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=colour, width=width),
                        hoverinfo="skip", showlegend=False)
             for colour, width in ((palette.OUTLINE_DARK, 3), (palette.OUTLINE_LIGHT, 1))]
    boxes = []
    for p in sorted(outlined):
        r, c = divmod(int(p), g)
        boxes += palette.outlined(dict(type="rect", x0=c * patch_size - 0.5,
                                       x1=(c + 1) * patch_size - 0.5, y0=r * patch_size - 0.5,
                                       y1=(r + 1) * patch_size - 0.5), width=3,
                                  light=palette.SELECTED)
    x, y = dict(visible=False), dict(visible=False, scaleanchor="x")
    if pinned:
        x["range"], y["range"] = [-0.5, size - 0.5], [size - 0.5, -0.5]
    layout = dict(margin=dict(l=0, r=0, t=0 if title is None else 30, b=0), height=height,
                  xaxis=x, yaxis=y, shapes=boxes)
    if title is not None:
        layout["title"] = _title(title)
    return go.Figure(data=[go.Image(source=jpeg_data_uri(crop), hoverinfo="skip"), *lines,
                           *layers], layout=layout)


def _centres(g: int, patch_size: int) -> tuple[np.ndarray, np.ndarray]:
    centres = (np.arange(g) + 0.5) * patch_size - 0.5
    cx, cy = np.meshgrid(centres, centres)
    return cx.ravel(), cy.ravel()


def _click_layer(crop: Image.Image, patch_size: int, show_index: bool, text_size: int):
    """An invisible square marker on each cell (customdata: the patch index), with the index
    printed in it when `show_index`."""
    g = crop.size[0] // patch_size
    cx, cy = _centres(g, patch_size)
    idx = np.arange(g * g)
    return go.Scatter(
        x=cx, y=cy, mode="text+markers" if show_index else "markers",
        text=[str(i) for i in idx] if show_index else None,
        textfont=dict(color="white", size=text_size, shadow=palette.HALO),
        marker=dict(size=patch_size, opacity=0, symbol="square"),
        customdata=idx, hovertemplate="patch %{customdata}<extra></extra>", showlegend=False)


def map_over_image(crop: Image.Image, grid_values: np.ndarray, title: str, *, value_name: str,
                   colorscale: str = "Inferno", opacity: float = 0.6, height: int = 420,
                   zmin: float | None = None, zmax: float | None = None) -> go.Figure:
    """A g x g map (one value per patch, e.g. how much CLS attends to it) painted over the crop,
    with a colour bar that says what the colour is: readable without hovering."""
    v = np.asarray(grid_values, dtype=np.float32)
    g = v.shape[0]
    size = crop.size[0]
    P = size / g
    centres = (np.arange(g) + 0.5) * P - 0.5
    fig = go.Figure([
        go.Image(source=jpeg_data_uri(crop), hoverinfo="skip"),
        go.Heatmap(z=v, x=centres, y=centres, colorscale=colorscale, opacity=opacity,
                   zmin=zmin, zmax=zmax, customdata=np.arange(g * g).reshape(g, g),
                   hovertemplate=f"patch %{{customdata}}<br>{value_name} %{{z:.4g}}<extra></extra>",
                   colorbar=dict(thickness=10, title=dict(text=value_name, side="right",
                                                          font=dict(size=11))))])
    fig.update_layout(title=dict(text=title, font=dict(size=14)), height=height,
                      margin=dict(l=50, r=0, t=30, b=40),
                      xaxis=dict(range=[-0.5, size - 0.5], title=dict(
                          text="x in the model's input (px)", font=dict(size=12))),
                      yaxis=dict(scaleanchor="x", range=[size - 0.5, -0.5], title=dict(
                          text="y (px)", font=dict(size=12))))
    return fig


def patch_set_grid(crop: Image.Image, patch_size: int, chosen, show_index: bool = True,
                   title: str = "") -> go.Figure:
    """patch_grid (clickable, a patch index in each cell) with a set of patches outlined."""
    g = crop.size[0] // patch_size
    return _grid_figure(crop, patch_size,
                        [_click_layer(crop, patch_size, show_index, _cell_font(g))], chosen,
                        title=title or None, pinned=True)


def _cell_font(g: int) -> int:
    """A label size that fits a cell of a g x g grid drawn ~400 px wide."""
    return max(8, min(16, 160 // g))


def labelled_patches(img: Image.Image, patch_size: int, title: str, labels=None,
                     outlined=()) -> go.Figure:
    """An input image with its patch grid, a label in each cell (e.g. where a shuffled patch
    came from) and some patches outlined; not clickable."""
    g = img.size[0] // patch_size
    layers = []
    if labels is not None:
        cx, cy = _centres(g, patch_size)
        layers.append(go.Scatter(
            x=cx, y=cy, mode="text", text=[str(t) for t in labels],
            textfont=dict(color="white", size=_cell_font(g), shadow=palette.HALO),
            hoverinfo="skip", showlegend=False))
    return _grid_figure(img, patch_size, layers, outlined, title=title, pinned=True)


def qr_png(text: str, max_px: int = 200) -> bytes:
    """`text` as a QR code PNG (segno's defaults: the smallest version, error correction L or
    better), black on white with the standard 4-module quiet zone, whole pixels per module so
    a phone reads it at any size up to `max_px`."""
    import segno

    qr = segno.make_qr(text)
    buf = io.BytesIO()
    qr.save(buf, kind="png", scale=max(2, max_px // qr.symbol_size(border=4)[0]), border=4)
    return buf.getvalue()
