"""What every figure is built from: one-call heatmap figures, axes, titles, colour bars,
panels side by side, shapes added at once, images as JPEG data URIs."""

from __future__ import annotations

import base64
import io

import plotly.graph_objects as go
from PIL import Image


def add_shapes(fig: go.Figure, shapes: list[dict]) -> go.Figure:
    """Add many shapes in one layout update. fig.add_shape re-checks every shape already on the
    figure, so a loop of them is quadratic (150 outlines: 3.2 s; this: 0.02 s). Each shape names
    its own xref / yref when it is not on the first subplot."""
    if shapes:
        fig.update_layout(shapes=[*fig.layout.shapes, *shapes])
    return fig


def panels(figs: list[go.Figure], titles: list[str], *, spacing: float = 0.08,
           axis_keys: tuple[str, ...] | None = None, coloraxis: bool = False,
           own_colorbars: bool = False, more: dict | None = None) -> go.Figure:
    """Single-plot figures side by side as one figure, each under its title: their traces,
    axes (square cells kept through scaleanchor), lines and labels, moved onto subplot i's axes.
    Built from the figures' dicts in one constructor call (make_subplots, add_trace(row=...) and
    per-panel axis updates cost ~0.2 s for four heatmaps).

    Args:
        axis_keys: keep only these axis properties (default: all but the domain and anchor).
        coloraxis: the traces share the layout's colour axis (the caller sets its scale).
        own_colorbars: each trace's colour bar sits just right of its own panel.
        more: more of the layout (title, height, margin, ...), in the same call."""
    n = len(figs)
    width = (1 - spacing * (n - 1)) / n
    data, shapes, notes = [], [], []
    layout: dict = {}
    for i, (fig, panel_title) in enumerate(zip(figs, titles, strict=True)):
        sfx = "" if i == 0 else str(i + 1)
        x0 = i * (width + spacing)
        x1 = x0 + width
        d = fig.to_dict()
        data += _panel_traces(d["data"], sfx, x1, coloraxis, own_colorbars)
        layout.update(_panel_axes(d["layout"], sfx, (x0, x1), axis_keys))
        shapes += [_on_panel(item, sfx) for item in d["layout"].get("shapes", ())]
        notes += [_on_panel(item, sfx) for item in d["layout"].get("annotations", ())]
        notes.append(dict(text=panel_title, x=(x0 + x1) / 2, y=1.0, xref="paper", yref="paper",
                          xanchor="center", yanchor="bottom", showarrow=False,
                          font=dict(size=13), name=f"panel:{i}"))
    return go.Figure(data=data, layout={**layout, "shapes": shapes, "annotations": notes,
                                        **(more or {})})


def _ref(r: str | None, axis: str, sfx: str) -> str:
    """An axis reference ("x", "x domain", "paper", ...) moved onto the panel's axes."""
    r = r or axis
    return r.replace(axis, axis + sfx, 1) if r.startswith(axis) else r


def _on_panel(item: dict, sfx: str) -> dict:
    """A shape or annotation moved onto the panel's axes."""
    return {**item, "xref": _ref(item.get("xref"), "x", sfx),
            "yref": _ref(item.get("yref"), "y", sfx)}


def _panel_traces(traces: list[dict], sfx: str, x1: float, coloraxis: bool,
                  own_colorbars: bool) -> list[dict]:
    """A panel's traces on its axes (and the shared colour axis, or a colour bar at `x1`)."""
    for trace in traces:
        trace["xaxis"], trace["yaxis"] = "x" + sfx, "y" + sfx
        if coloraxis:
            trace["coloraxis"] = "coloraxis"
        if own_colorbars and "colorbar" in trace:
            trace["colorbar"].update(x=x1 + 0.005, xanchor="left", thickness=8)
    return traces


def _panel_axes(layout: dict, sfx: str, domain: tuple[float, float],
                axis_keys: tuple[str, ...] | None) -> dict:
    """A panel's x and y axes, renamed for the panel and placed on its `domain` of the width."""
    axes = {}
    for axis, other in (("x", "y"), ("y", "x")):
        spec = {k: v for k, v in layout.get(f"{axis}axis", {}).items()
                if k not in ("domain", "anchor") and (axis_keys is None or k in axis_keys)}
        if spec.get("scaleanchor"):
            spec["scaleanchor"] = _ref(spec["scaleanchor"], "x", sfx)
        axes[f"{axis}axis{sfx}"] = {**spec, "anchor": other + sfx,
                                    "domain": list(domain) if axis == "x" else [0.0, 1.0]}
    return axes


def jpeg_data_uri(img: Image.Image, quality: int = 90) -> str:
    """The image as a JPEG data URI for go.Image(source=...).

    Given raw pixels (z=), plotly ships them as a 150 KB array for 224 x 224 and paints them one
    fillRect per pixel; the browser decodes a ~20 KB JPEG natively. Full-resolution chroma
    (subsampling 0) keeps the edges of the coloured shapes crisp.
    """
    buf = io.BytesIO()
    img.convert("RGB").save(buf, format="JPEG", quality=quality, subsampling=0)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode()


def _short(label: str) -> str:
    """'patch 14 (1,0)' -> 'p14'; 'text 2: ball' -> 'ball'; CLS / DIST / others unchanged."""
    if label.startswith("patch "):
        return "p" + label.split()[1]
    return label.split(": ", 1)[1] if label.startswith("text ") else label


def _title(text: str, size: int = 14) -> dict:
    return dict(text=text, font=dict(size=size))


def _heat(trace, title: str, height: int, x: dict, y: dict, square: bool = True,
          shapes=(), notes=(), **layout) -> go.Figure:
    """A heatmap figure in one constructor call (each update_* call re-walks plotly's property
    tree: ~10 ms apiece): rows top-down, the title, and square cells (the plot area shrinks to
    fit instead of padding the axes) unless `square` is False."""
    y = {**y, "autorange": "reversed"}
    if square:
        x, y = {**x, "constrain": "domain"}, {**y, "scaleanchor": "x", "constrain": "domain"}
    return go.Figure(data=[trace], layout=dict(
        title=_title(title), margin=dict(l=0, r=0, t=30, b=0), height=height, xaxis=x, yaxis=y,
        shapes=list(shapes), annotations=list(notes), **layout))


def _axis(title: str, labels, ticks, text=None) -> dict:
    """An axis named `title` that prints `ticks` (a subset of `labels`) in short form; no ticks
    at all when the positions are plain numbers nobody needs (a hidden-unit index, say)."""
    if labels is None:
        return dict(title=_title(title, 12), showticklabels=ticks is not False)
    shown = ticks if ticks is not None else (labels if len(labels) <= 24 else labels[::max(
        1, len(labels) // 12)])
    return dict(title=_title(title, 12), tickmode="array", tickvals=list(shown),
                ticktext=[(text or {}).get(t, _short(t)) for t in shown], tickfont=dict(size=9))


def _colorbar(value_name: str) -> dict:
    return dict(thickness=10, title=dict(text=value_name, side="right", font=dict(size=11)))
