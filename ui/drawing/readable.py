"""Text a class reads from the back of the room: the one font floor every chart shares.

Every key figure is drawn through ui/deck.chart, which passes it through `readable`: no text in a
chart smaller than TEXT_PX CSS pixels (ticks, axis and chart titles, legends, colour-bar labels,
annotations, text in cells and on bars). Plotly's text keeps its pixel size however the chart is
scaled, so the floor holds on a 1280×720 projector and on a phone alike; a figure function lays
out fewer labels (ticks_every, spaced ticks) rather than smaller ones. Streamlit's own chart theme
writes 12-px ticks and legends into the figure's template, under the figure's layout: the floor
is therefore set on the layout, axis by axis. No streamlit here (pure, tested alone).
"""

from __future__ import annotations

import re

import plotly.graph_objects as go

TEXT_PX = 14  # the smallest text in any figure, in CSS px (issue 39: readable on a projector)
# Text drawn into a picture (a colour scale, a legend, tile labels) shrinks with the picture:
# drawn at 20 px it stays at 14 px down to 70 % of the picture's own size.
PICTURE_TEXT_PX = 20

_AXIS = re.compile(r"^(x|y|z|radial|angular)axis\d*$|^coloraxis\d*$|^legend\d*$")


def _raise(font: dict | None) -> dict:
    """The font with its size at least TEXT_PX (a missing size: TEXT_PX)."""
    font = dict(font or {})
    font["size"] = max(font.get("size") or 0, TEXT_PX)
    return font


def _floor_fonts(d) -> None:
    """Raise every `…font` dict's size in a nested layout or trace dict (in place)."""
    if isinstance(d, list):
        for item in d:
            if isinstance(item, dict):
                _floor_fonts(item)
        return
    for key, value in d.items():
        if key.endswith("font") and isinstance(value, dict):
            d[key] = _raise(value)
        elif isinstance(value, (dict, list)) and key not in ("template", "images"):
            _floor_fonts(value)


def _colorbar(bar: dict | None) -> dict:
    bar = dict(bar or {})
    bar["tickfont"] = _raise(bar.get("tickfont"))
    bar["title"] = {**(bar.get("title") or {}), "font": _raise((bar.get("title") or {})
                                                             .get("font"))}
    return bar


def readable_dict(d: dict) -> dict:
    """The figure dict `d` ({"layout": …, "data": [...]}) with every text at least TEXT_PX
    (changed in place)."""
    layout = d.setdefault("layout", {})
    _floor_fonts(layout)
    layout["font"] = _raise(layout.get("font"))
    layout["hoverlabel"] = {**(layout.get("hoverlabel") or {}),
                            "font": _raise((layout.get("hoverlabel") or {}).get("font"))}
    for name in _axes(layout, d.get("data", [])):
        layout[name] = _readable_axis(name, dict(layout.get(name) or {}))
    for trace in d.get("data", []):
        _readable_trace(trace)
    return d


def _axes(layout: dict, data: list) -> list[str]:
    """Every axis, legend and colour axis the layout or a trace names (xaxis2 of a subplot may
    be named by its trace only), once each."""
    axes = [k for k in layout if _AXIS.match(k)]
    for trace in data:
        axes += [str(trace.get(a, a[0])).replace(a[0], a, 1)
                 for a in ("xaxis", "yaxis") if trace.get(a, a[0]) != a[0]]
    return list(dict.fromkeys(axes + ["xaxis", "yaxis", "legend"]))


def _readable_axis(name: str, spec: dict) -> dict:
    if name.startswith("legend"):
        spec["font"] = _raise(spec.get("font"))
    elif name.startswith("coloraxis"):
        spec["colorbar"] = _colorbar(spec.get("colorbar"))
    else:
        spec["tickfont"] = _raise(spec.get("tickfont"))
        title = spec.get("title") or {}
        title = {"text": title} if isinstance(title, str) else dict(title)
        spec["title"] = {**title, "font": _raise(title.get("font"))}
    return spec


def _readable_trace(trace: dict) -> None:
    _floor_fonts(trace)
    if trace.get("type") in ("heatmap", "contour", "histogram2d"):
        trace["colorbar"] = _colorbar(trace.get("colorbar"))
    marker = trace.get("marker")
    if isinstance(marker, dict) and "colorbar" in marker:
        marker["colorbar"] = _colorbar(marker["colorbar"])
    if trace.get("type") == "bar" and trace.get("text") is not None:
        trace["textfont"] = _raise(trace.get("textfont"))
        trace.setdefault("constraintext", "none")  # never shrink a bar's label to fit


def readable(fig: go.Figure, **layout) -> go.Figure:
    """A copy of `fig` whose every text is at least TEXT_PX (the figure may be shared: a
    cached figure is never changed). Built from the figure's own, already validated, property
    dicts with only font sizes added, so plotly is asked not to validate them again (its
    `_validate=False`: 6 ms instead of 60 ms for a 50×50 heatmap; tests/test_readable.py checks
    the result against a validated build). Keyword arguments set layout properties on the copy
    (None removes one: unvalidated, plotly would send it as null)."""
    d = readable_dict({"layout": fig.layout.to_plotly_json(),
                       "data": [t.to_plotly_json() for t in fig.data]})
    for name, value in layout.items():  # `height=None` drops the figure's own height
        d["layout"].pop(name, None) if value is None else d["layout"].update({name: value})
    return go.Figure(data=d["data"], layout=d["layout"], _validate=False)
