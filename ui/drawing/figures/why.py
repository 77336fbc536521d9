"""The why stage's figures: six maps on one colour scale, and the deletion / insertion race with
the image greyed as it runs. No Streamlit here."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from PIL import Image

from ui.drawing.figures.heatmaps import grid_heatmap
from ui.drawing.figures.images import labelled_patches
from ui.drawing.figures.parts import _colorbar, _title, panels

MAP_VALUE = "÷ the map's peak |value| (red: for, blue: against)"  # short: a phone's width
# a style per method, so the lines differ in dash as well as in colour (colour never alone)
DASHES = ("solid", "dot", "dash", "longdash", "dashdot", "longdashdot")
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")
RANDOM = "#7f7f7f"
LEGEND_TITLE = "area under the curve (AUC), deletion / insertion:"
LEGEND_PX = 150  # the legend's room under the curves (a phone's lines are short)


def six_maps(maps: dict[str, np.ndarray], names: dict[str, str], grid: int, title: str,
             scale: tuple[float, float], tops: dict[str, tuple[int, int]],
             height: int = 330) -> go.Figure:
    """Each method's [N] map (already on `scale`) as a grid, side by side, one colour axis,
    its `tops` (row, column) outlined."""
    figs = [grid_heatmap(v.reshape(grid, grid), "", value_name=MAP_VALUE, zmin=scale[0],
                         zmax=scale[1], dtick_up_to=8, selected=tops[m]) for m, v in maps.items()]
    fig = panels(figs, [names[m] for m in maps], coloraxis=True, spacing=0.05)
    fig.update_layout(title=_title(title), height=height, margin=dict(l=0, r=0, t=70, b=0),
                      coloraxis=dict(colorscale="RdBu_r", cmin=scale[0], cmax=scale[1],
                                     colorbar=_colorbar(MAP_VALUE)))
    return fig


def greyed(crop: Image.Image, patch_size: int, patches, shade=(128, 128, 128)) -> Image.Image:
    """The crop with these patches (row-major indices) painted mid-grey."""
    img = np.array(crop.convert("RGB"))
    g = img.shape[0] // patch_size
    for p in patches:
        r, c = divmod(int(p), g)
        img[r * patch_size:(r + 1) * patch_size, c * patch_size:(c + 1) * patch_size] = shade
    return Image.fromarray(img)


def _curves(kind: str, lines: list[dict], band: dict, marker: tuple | None) -> go.Figure:
    """One panel: each method's curve (x: fraction of patches, y: probability) and random's
    mean ± spread band."""
    x = band["x"]
    data = [go.Scatter(x=np.concatenate([x, x[::-1]]),
                       y=np.concatenate([band["hi"], band["lo"][::-1]]), fill="toself",
                       fillcolor="rgba(127,127,127,0.25)", line=dict(width=0), hoverinfo="skip",
                       name=band["band_name"], legendgroup="random-band",
                       showlegend=kind == "deletion"),
            go.Scatter(x=x, y=band["mean"], mode="lines", name=band["name"],
                       line=dict(color=RANDOM, width=2, dash="dash"), legendgroup="random",
                       showlegend=kind == "deletion")]
    for i, line in enumerate(lines):
        data.append(go.Scatter(x=line["x"], y=line["y"], mode="lines", name=line["name"],
                               legendgroup=line["method"], showlegend=kind == "deletion",
                               line=dict(color=COLOURS[i % 6], dash=DASHES[i % 6], width=2)))
    if marker is not None:
        data.append(go.Scatter(x=[marker[0]], y=[marker[1]], mode="markers", showlegend=False,
                               marker=dict(size=12, color="black", symbol="x"),
                               hovertemplate="%{y:.3f}<extra>now</extra>"))
    axis = "fraction of patches greyed" if kind == "deletion" else "fraction of patches put back"
    return go.Figure(data, layout=dict(
        xaxis=dict(title=_title(axis, 12), range=[0, 1]),
        yaxis=dict(title=_title("probability of the answer", 12), range=[0, 1.02])))


def race(crop: Image.Image, patch_size: int, greyed_patches, curves: dict, title: str,
         panel_titles: tuple[str, str, str], marker: tuple | None = None,
         height: int = 420) -> go.Figure:
    """The image with `greyed_patches` grey, then the deletion and the insertion curves.
    `curves`: {"deletion": (lines, band), "insertion": (lines, band)}; each line a dict of
    method, name (its legend, AUCs in it), x, y; the band x, mean, lo, hi, name, band_name.
    `marker`: (x, probability) of the image shown, on the deletion curve."""
    image = labelled_patches(greyed(crop, patch_size, greyed_patches), patch_size, "")
    image.update_layout(xaxis=dict(visible=False), yaxis=dict(visible=False, scaleanchor="x"))
    figs = [image, _curves("deletion", *curves["deletion"], marker),
            _curves("insertion", *curves["insertion"], None)]
    fig = panels(figs, list(panel_titles), spacing=0.07)
    legend = dict(orientation="h", x=0, y=0, yref="container", yanchor="bottom",
                  font=dict(size=12), title=dict(text=LEGEND_TITLE, font=dict(size=14)))
    fig.update_layout(title=_title(title), height=height, legend=legend,
                      margin=dict(l=0, r=0, t=70, b=LEGEND_PX))
    return fig
