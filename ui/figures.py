"""Pure figure functions: tensors and images in, plotly figures out. Never imports streamlit."""

from __future__ import annotations

import base64
import io
import textwrap
from dataclasses import dataclass, field

import numpy as np
import plotly.graph_objects as go
from PIL import Image

from .pictures import (  # noqa: F401 (pictures are drawn as figures.<name> too)
    array_image,
    class_colours,
    class_map_image,
    class_palette,
    enlarged_patch,
    overlay,
    tile,
    with_legend,
    with_scale,
    with_text_px,
)
from .readable import TEXT_PX


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

        def ref(r, axis, sfx=sfx):
            r = r or axis
            return r.replace(axis, axis + sfx, 1) if r.startswith(axis) else r

        d = fig.to_dict()
        for trace in d["data"]:
            trace["xaxis"], trace["yaxis"] = "x" + sfx, "y" + sfx
            if coloraxis:
                trace["coloraxis"] = "coloraxis"
            if own_colorbars and "colorbar" in trace:
                trace["colorbar"].update(x=x1 + 0.005, xanchor="left", thickness=8)
            data.append(trace)
        for axis, other in (("x", "y"), ("y", "x")):
            spec = d["layout"].get(f"{axis}axis", {})
            spec = {k: v for k, v in spec.items() if k not in ("domain", "anchor")
                    and (axis_keys is None or k in axis_keys)}
            if spec.get("scaleanchor"):
                spec["scaleanchor"] = ref(spec["scaleanchor"], "x")
            layout[f"{axis}axis{sfx}"] = {**spec, "anchor": other + sfx,
                                          "domain": [x0, x1] if axis == "x" else [0.0, 1.0]}
        for key, out in (("shapes", shapes), ("annotations", notes)):
            for item in d["layout"].get(key, ()):
                out.append({**item, "xref": ref(item.get("xref"), "x"),
                            "yref": ref(item.get("yref"), "y")})
        notes.append(dict(text=panel_title, x=(x0 + x1) / 2, y=1.0, xref="paper", yref="paper",
                          xanchor="center", yanchor="bottom", showarrow=False,
                          font=dict(size=13), name=f"panel:{i}"))
    return go.Figure(data=data, layout={**layout, "shapes": shapes, "annotations": notes,
                                        **(more or {})})


def patch_grid(crop: Image.Image, patch_size: int, selected: int | None = None,
               show_index: bool = True, height: int = 460) -> go.Figure:
    """The model's input crop with its P x P patch grid and the patch index in each cell.

    An invisible marker sits on every cell centre so that clicking a cell selects its patch
    (plotly images report no clicks themselves); the marker's customdata is the patch index.
    """
    g = crop.size[0] // patch_size
    text = max(7, min(14, height // (3 * g)))  # by drawn size
    return _grid_figure(crop, patch_size, [_click_layer(crop, patch_size, show_index, text)],
                        [] if selected is None else [selected], "#ff2d55", height=height)


def _grid_figure(crop: Image.Image, patch_size: int, layers: list, outlined, colour: str, *,
                 height: int = 460, title: str | None = None, pinned: bool = False) -> go.Figure:
    """The crop, its grid lines, more `layers` (click markers, labels), the `outlined` patches
    framed in `colour`; axes hidden, square; `pinned`: the axes end at the image (markers
    would widen them). One constructor call: each add_* / update_* call costs ~5-20 ms."""
    size = crop.size[0]
    g = size // patch_size
    # all grid lines as one trace (None breaks the line), not a shape per line
    xs, ys = [], []
    for i in range(1, g):
        cut, lo, hi = i * patch_size - 0.5, -0.5, size - 0.5
        xs += [cut, cut, None, lo, hi, None]  # a vertical line, then a horizontal one
        ys += [lo, hi, None, cut, cut, None]
    lines = go.Scatter(x=xs, y=ys, mode="lines", line=dict(color="white", width=1),
                       hoverinfo="skip", showlegend=False)
    boxes = []
    for p in sorted(outlined):
        r, c = divmod(int(p), g)
        boxes.append(dict(type="rect", x0=c * patch_size - 0.5, x1=(c + 1) * patch_size - 0.5,
                          y0=r * patch_size - 0.5, y1=(r + 1) * patch_size - 0.5,
                          line=dict(color=colour, width=3)))
    x, y = dict(visible=False), dict(visible=False, scaleanchor="x")
    if pinned:
        x["range"], y["range"] = [-0.5, size - 0.5], [size - 0.5, -0.5]
    layout = dict(margin=dict(l=0, r=0, t=0 if title is None else 30, b=0), height=height,
                  xaxis=x, yaxis=y, shapes=boxes)
    if title is not None:
        layout["title"] = _title(title)
    return go.Figure(data=[go.Image(source=jpeg_data_uri(crop), hoverinfo="skip"), lines,
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
        textfont=dict(color="white", size=text_size),
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


def jpeg_data_uri(img: Image.Image, quality: int = 90) -> str:
    """The image as a JPEG data URI for go.Image(source=...).

    Given raw pixels (z=), plotly ships them as a 150 KB array for 224 x 224 and paints them one
    fillRect per pixel; the browser decodes a ~20 KB JPEG natively. Full-resolution chroma
    (subsampling 0) keeps the edges of the coloured shapes crisp.
    """
    buf = io.BytesIO()
    img.convert("RGB").save(buf, format="JPEG", quality=quality, subsampling=0)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode()


def top_k_bars(probs: np.ndarray, names: list[str], k: int = 5, title: str | None = None,
               x_title: str | None = None, y_title: str | None = "class") -> go.Figure:
    """Horizontal bars of the k most probable classes, best on top.

    Args:
        title, x_title: the chart's title and the x axis's name (none by default).
        y_title: what the bars are named by ("class" by default; "word" for a vocabulary)."""
    order = np.argsort(-probs)[:k][::-1]
    layout = dict(margin=dict(l=0, r=0, t=30 if title else 10, b=0),
                  height=40 + 36 * len(order) + (20 if title else 0) + (20 if x_title else 0),
                  xaxis=dict(range=[0, 1], tickformat=".0%"), yaxis={})
    if title:
        layout["title"] = _title(title)
    if x_title:
        layout["xaxis"]["title"] = _title(x_title, 12)
    if y_title:
        layout["yaxis"]["title"] = _title(y_title, 12)
    return go.Figure(  # one constructor call: each update_* re-walks plotly's property tree
        data=[go.Bar(x=probs[order], y=[names[i] for i in order], orientation="h",
                     text=[f"{probs[i]:.1%}" for i in order], textposition="auto")],
        layout=layout)


def logit_bars(logits: np.ndarray, names: list[str], k: int = 15,
               y_title: str = "class") -> go.Figure:
    """The raw logits as horizontal bars named by class, largest on top: all of them when there
    are at most k classes, else the k largest (the title says how many of how many)."""
    z = np.asarray(logits, dtype=np.float64)
    K = len(z)
    order = np.argsort(-z)[:min(k, K)][::-1]
    bars = go.Bar(x=z[order], y=[names[i] for i in order], orientation="h",
                  text=[f"{z[i]:.2f}" for i in order], textposition="auto",
                  marker_color=np.where(z[order] >= 0, "#4c78a8", "#e45756"))
    shown = f"all {K} classes" if K <= k else f"the {len(order)} largest of {K}"
    return go.Figure(data=[bars], layout=dict(
        title=_title(f"the raw logits ({shown})"), margin=dict(l=0, r=0, t=30, b=0),
        height=80 + 24 * len(order), yaxis=dict(tickfont=dict(size=11), title=_title(y_title, 12)),
        xaxis=dict(title=_title("logit (score before the softmax)", 12))))


def word_bars(words: list[str], probs: list[float]) -> go.Figure:
    """One bar per generated word, in reading order: the probability it had when it was chosen."""
    x = [f"{i + 1}. {w}" for i, w in enumerate(words)]  # numbered: repeated words stay apart
    fig = go.Figure(go.Bar(x=x, y=probs, text=[f"{p:.0%}" for p in probs], textposition="auto"))
    fig.update_layout(margin=dict(l=0, r=0, t=10, b=0), height=260,
                      yaxis=dict(range=[0, 1], tickformat=".0%", title="P(word)"))
    return fig


# ---------------------------------------------------------------- helpers shared by the pages
def token_labels(config, words: list[str] | None = None) -> list[str]:
    """A readable name for every token position: CLS (and DIST), patches with (row, col), words.

    Token numbers count from 0 over the whole sequence, so with a CLS token patch p is token
    p + 1: these labels name the patch, never the bare token number."""
    g = config.grid
    labels = list(config.prefix_names)
    labels += [f"patch {i} ({i // g},{i % g})" for i in range(config.num_patches)]
    labels += [f"text {t}: {w}" for t, w in enumerate(words or [])]
    return labels


def token_ticks(labels: list[str], grid: int, min_gap: int = 1) -> list[str]:
    """Which token labels to print on an axis: every CLS / DIST and text token, and the first
    patch of each patch row (every patch when there are few).

    Args:
        min_gap: drop a patch tick closer than this many tokens to the tick before it, so that
            labels on a short axis do not print over each other (CLS / DIST / text stay)."""
    few = len(labels) <= 24
    shown = [lab for lab in labels if few or not lab.startswith("patch ")
             or int(lab.split()[1]) % grid == 0]
    if min_gap <= 1:
        return shown
    where = {lab: i for i, lab in enumerate(labels)}
    kept: list[str] = []
    for lab in shown:
        if lab.startswith("patch ") and kept and where[lab] - where[kept[-1]] < min_gap:
            continue
        kept.append(lab)
    return kept


def tick_gap(n_rows: int, height: int, font_px: int = TEXT_PX) -> int:
    """How many rows apart two tick labels must be so they do not overlap on a heatmap of
    `n_rows` rows drawn `height` pixels tall (about 60 px go to the title and x axis)."""
    return max(1, -(-n_rows * font_px // max(1, height - 60)))


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


# A tick label turned 90° stands across its axis by the height of its glyphs (ascender to
# descender, about 0.9 em), not by its length: such labels 13 px apart stand side by side at 14 px.
TURNED_GAP_PX = TEXT_PX - 1


def spaced_ticks(labels: list[str], grid: int, span_px: float,
                 min_px: float = TEXT_PX + 2) -> list[str]:
    """Ticks for a token axis `span_px` pixels long that never print over each other: CLS /
    DIST first, then [SOS] and the words, then the first patch of each grid row, each kept only
    if it is at least `min_px` from every tick kept before it."""
    per = span_px / max(1, len(labels))
    prefix = [i for i, t in enumerate(labels) if not t.startswith(("patch ", "text "))]
    words = [i for i, t in enumerate(labels) if t.startswith("text ")]
    rows = [i for i, t in enumerate(labels) if t.startswith("patch ")
            and int(t.split()[1]) % grid == 0]
    kept: list[int] = []
    for i in prefix + words + rows:
        if all(abs(i - j) * per >= min_px for j in kept):
            kept.append(i)
    return [labels[i] for i in sorted(kept)]


def prefix_ticks(labels: list[str], grid: int, prefix_names: tuple[str, ...]) -> tuple[list,
                                                                                     dict]:
    """Ticks for a big token axis that keep CLS / DIST readable: token_ticks without patch 0
    (a boundary line marks where the patches start, and its tick would print over CLS's), and
    with CLS and DIST side by side in a long sequence one tick "CLS, DIST" (theirs would print
    over each other). Returns (ticks, tick_text) for matrix_heatmap."""
    ticks = token_ticks(labels, grid)
    if len(labels) <= 24 or not prefix_names:
        return ticks, {}
    ticks = [t for t in ticks if not t.startswith("patch 0 ")]
    if len(prefix_names) > 1:
        ticks = [t for t in ticks if t not in prefix_names[1:]]
        return ticks, {prefix_names[0]: ", ".join(prefix_names)}
    return ticks, {}


def matrix_heatmap(z: np.ndarray, title: str, *, x_title: str, y_title: str, value_name: str,
                   row_labels: list[str] | None = None, col_labels: list[str] | None = None,
                   row_ticks: list[str] | None = None, col_ticks: list[str] | None = None,
                   highlight_row: int | None = None, highlight_col: int | None = None,
                   colorscale: str = "RdBu_r", zmid: float | None = 0.0, height: int = 420,
                   square: bool = True, boundaries: tuple[int, ...] = (),
                   tick_text: dict[str, str] | None = None,
                   zrange: tuple[float, float] | None = None) -> go.Figure:
    """A matrix as a heatmap that reads without hovering.

    Args:
        x_title, y_title: what the columns and rows are ("key token", "hidden unit", ...).
        value_name: what the colour is; the colour bar's title and the hover's.
        row_labels, col_labels: a name per row / column (hover shows them); the ticks print
            `row_ticks` / `col_ticks` of them (default: all of up to 24, else about 12).
        boundaries: token indices where a new block starts (after CLS/DIST, before text):
            drawn as thin lines on both axes of a token x token matrix.
        tick_text: what to print for some ticks instead of their short label (prefix_ticks).
        zrange: the colour scale's ends (e.g. 0 to a maximum, so that cells judged by eye
            differ only as much as their values do); default: the values' own range.
    """
    z = np.asarray(z, dtype=np.float32)
    finite = z[np.isfinite(z)]
    hover = f"%{{y}} → %{{x}}<br>{value_name} %{{z:.4g}}<extra></extra>"
    trace = go.Heatmap(
        z=np.where(np.isfinite(z), z, np.nan), colorscale=colorscale, zmid=zmid,
        zmin=zrange[0] if zrange else
        None if zmid is not None or not finite.size else float(finite.min()),
        zmax=zrange[1] if zrange else None,
        x=col_labels, y=row_labels, hovertemplate=hover if row_labels else None,
        hoverongaps=False, colorbar=_colorbar(value_name))
    lines, line = [], dict(color="white", width=1)
    for b in boundaries:
        lines += [dict(type="line", xref="x", yref="y domain", x0=b - 0.5, x1=b - 0.5, y0=0,
                       y1=1, line=line),
                  dict(type="line", yref="y", xref="x domain", y0=b - 0.5, y1=b - 0.5, x0=0,
                       x1=1, line=line)]
    if highlight_row is not None:
        lines.append(dict(type="rect", xref="x domain", x0=0, x1=1, y0=highlight_row - 0.5,
                          y1=highlight_row + 0.5, line=dict(color="#ff2d55", width=2), yref="y"))
    if highlight_col is not None:
        lines.append(dict(type="rect", yref="y domain", y0=0, y1=1, x0=highlight_col - 0.5,
                          x1=highlight_col + 0.5, line=dict(color="#ff9500", width=2)))
    return _heat(trace, title, height, _axis(x_title, col_labels, col_ticks, tick_text),
                 _axis(y_title, row_labels, row_ticks, tick_text), square, shapes=lines)


def vector_strip(v: np.ndarray, title: str, *, x_title: str, value_name: str, rows: int = 1,
                 row_names=None, height: int = 150, colorscale: str = "RdBu_r",
                 y_title: str = "") -> go.Figure:
    """A long vector drawn as a strip (optionally folded into `rows` rows, e.g. channels).

    Args:
        x_title: what the positions along the strip are ("dimension of D", ...).
        value_name: what the colour is (the colour bar's title).
        y_title: what the rows are ("colour channel"), or what the one row is ("patch 24")."""
    z = np.asarray(v, dtype=np.float32).reshape(rows, -1)
    trace = go.Heatmap(z=z, colorscale=colorscale, zmid=0, y=row_names,
                       colorbar=_colorbar(value_name),
                       hovertemplate="index %{x}<br>value %{z:.4f}<extra></extra>")
    return _heat(trace, title, height, dict(title=_title(x_title, 12)),
                 dict(title=_title(y_title, 12), showticklabels=row_names is not None),
                 square=False)


def grid_heatmap(values: np.ndarray, title: str, *, value_name: str,
                 selected: tuple[int, int] | None = None, zmin: float | None = None,
                 zmax: float | None = None, colorscale: str = "RdBu_r",
                 height: int = 360, dtick_up_to: int = 16) -> go.Figure:
    """A g x g map, one cell per patch position, rows and columns named (every one up to
    `dtick_up_to`), the colour bar titled `value_name`; the `selected` (row, col) cell
    outlined."""
    v = np.asarray(values, dtype=np.float32)
    g = v.shape[0]
    trace = go.Heatmap(
        z=v, colorscale=colorscale, zmin=zmin, zmax=zmax,
        hovertemplate=f"row %{{y}}, column %{{x}}<br>{value_name} %{{z:.3f}}<extra></extra>",
        colorbar=_colorbar(value_name))
    dtick = 1 if g <= dtick_up_to else None
    boxes = []
    if selected is not None:
        r, c = selected
        boxes.append(dict(type="rect", x0=c - 0.5, x1=c + 0.5, y0=r - 0.5, y1=r + 0.5,
                          line=dict(color="#ff2d55", width=3)))
    return _heat(trace, title, height, dict(title=_title("patch column", 12), dtick=dtick),
                 dict(title=_title("patch row", 12), dtick=dtick), shapes=boxes)


def grid_heatmap_pair(left: np.ndarray, right: np.ndarray, titles: tuple[str, str], title: str,
                      *, value_name: str, selected: tuple[tuple[int, int], tuple[int, int]],
                      zmin: float = -1, zmax: float = 1, height: int = 330) -> go.Figure:
    """Two grid maps side by side (grids of any sizes) on ONE colour scale and colour bar, each
    with its `selected` (row, col) cell outlined: a map before and after a change."""
    figs = [grid_heatmap(v, "", value_name=value_name, selected=cell, dtick_up_to=12)
            for v, cell in zip((left, right), selected, strict=True)]
    fig = panels(figs, list(titles), spacing=0.1, coloraxis=True)
    fig.update_layout(title=_title(title), height=height, margin=dict(l=0, r=0, t=60, b=0),
                      coloraxis=dict(colorscale="RdBu_r", cmin=zmin, cmax=zmax,
                                     colorbar=_colorbar(value_name)))
    return fig


def similarity_tiles(sim: np.ndarray, title: str, *, value_name: str,
                     selected: tuple[int, int] | None = None, height: int = 420) -> go.Figure:
    """Every position's g x g similarity map, laid out on the grid (ViT paper, Figure 7
    centre): the small map in tile (r, c) is sim[r, c]. One colour bar for all, from -1 to 1.

    Args:
        sim: [g, g, g, g] similarities (e.g. cosine of position embeddings).
        selected: a tile to outline.
    """
    sim = np.asarray(sim, dtype=np.float32)
    g = sim.shape[0]
    step = g + 1  # each tile plus a one-cell gap (NaN: drawn as background)
    z = np.full((g * step - 1, g * step - 1), np.nan, np.float32)
    for r in range(g):
        for c in range(g):
            z[r * step:r * step + g, c * step:c * step + g] = sim[r, c]
    centres = [i * step + (g - 1) / 2 for i in range(g)]
    trace = go.Heatmap(z=z, colorscale="RdBu_r", zmin=-1, zmax=1, hoverongaps=False,
                       hovertemplate=f"{value_name} %{{z:.3f}}<extra></extra>",
                       colorbar=_colorbar(value_name))
    every = max(1, g // 8)
    ticks = dict(tickmode="array", tickvals=centres[::every],
                 ticktext=[str(i) for i in range(0, g, every)], showgrid=False, zeroline=False)
    boxes = []
    if selected is not None:
        r, c = selected
        boxes.append(dict(type="rect", x0=c * step - 0.5, x1=c * step + g - 0.5,
                          y0=r * step - 0.5, y1=r * step + g - 0.5,
                          line=dict(color="#ff2d55", width=2)))
    return _heat(trace, title, height,
                 dict(title=_title("tile column = the patch's column", 12), **ticks),
                 dict(title=_title("tile row = the patch's row", 12), **ticks), shapes=boxes,
                 plot_bgcolor="white")


def histogram_pair(before: np.ndarray, after: np.ndarray, names=("before", "after"),
                   title: str = "", x_title: str = "value", y_title: str = "count") -> go.Figure:
    fig = go.Figure()
    for v, name in zip((before, after), names, strict=True):
        fig.add_trace(go.Histogram(x=np.asarray(v, np.float32), name=name, opacity=0.6,
                                   nbinsx=60))
    fig.update_layout(barmode="overlay", height=300, margin=dict(l=0, r=0, t=30, b=0),
                      title=dict(text=title, font=dict(size=14)),
                      legend=dict(orientation="h", y=-0.25), xaxis_title=x_title,
                      yaxis_title=y_title)
    return fig


# ---------------------------------------------------------------- images composed with numpy
def line_chart(x, ys: dict, title: str, xaxis: str, yaxis: str, height: int = 320,
               mode: str = "lines+markers") -> go.Figure:
    fig = go.Figure([go.Scatter(x=list(x), y=np.asarray(y, np.float32), name=name, mode=mode)
                     for name, y in ys.items()])
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
                           marker=dict(size=8)) for h in range(H)),
              go.Scatter(x=[-0.4, L - 0.6], y=[baseline, baseline], mode="lines",
                         name=f"spread evenly: {baseline:.1f} px",
                         line=dict(color="#555", dash="dash", width=2))],
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
        go.Scatter(x=curve_x, y=curve_y, name="GELU(x)", mode="lines", line=dict(color="#888")),
        go.Scatter(x=u, y=gelu_u, name=f"{token}: {n} hidden units", mode="markers",
                   marker=dict(size=4, opacity=0.6))])
    fig.update_layout(title=dict(text=f"GELU with this token's {n} pre-activations",
                                 font=dict(size=14)), height=360,
                      margin=dict(l=0, r=0, t=30, b=0), xaxis_title="U (before)",
                      yaxis_title="GELU(U) (after)", legend=dict(orientation="h", y=-0.2))
    return fig


def top_units_bars(values: np.ndarray, units: list[int]) -> go.Figure:
    """Horizontal bars of the most active hidden units (values in order, largest first)."""
    fig = go.Figure(go.Bar(x=values, y=[f"unit {int(j)}" for j in units], orientation="h"))
    fig.update_layout(title=dict(text=f"its {len(units)} most active hidden units",
                                 font=dict(size=14)),
                      height=320, margin=dict(l=0, r=0, t=30, b=0),
                      yaxis=dict(autorange="reversed", title="hidden unit"),
                      xaxis_title="GELU(U): the unit's output")
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
        go.Bar(x=blocks, y=attn_norm, name="‖attention output‖ added"),
        go.Bar(x=blocks, y=mlp_norm, name="‖MLP output‖ added"),
        go.Scatter(x=["embed"] + blocks, y=resid, name="‖residual‖ after",
                   mode="lines+markers")])
    fig.update_layout(barmode="group", height=380, margin=dict(l=0, r=0, t=30, b=0),
                      title=dict(text=title, font=dict(size=14)),
                      legend=dict(orientation="h", y=-0.2), yaxis_title="vector norm",
                      xaxis=dict(title="where in the network (embedding, then after each block)",
                                 categoryorder="array", categoryarray=["embed"] + blocks))
    return fig


def mask_figure(allowed: np.ndarray, n_image: int, title: str,
                labels: list[str] | None = None, ticks: list[str] | None = None,
                height: int = 380) -> go.Figure:
    """An S x S mask: visible cells light, -inf cells dark, the four blocks outlined and named.

    Args:
        labels, ticks: a name per token (token_labels) and which of them to print on the axes
            (token_ticks); without them the axes are numbered."""
    allowed = np.asarray(allowed, dtype=bool)
    S = allowed.shape[0]
    trace = go.Heatmap(
        z=allowed.astype(np.float32), colorscale=[[0, "#1f1f3a"], [1, "#e8f1ff"]], zmin=0,
        zmax=1, showscale=False,
        hovertemplate="query %{y} → key %{x}: %{z}<extra>1 visible, 0 blocked (−∞)</extra>")
    ticks_spec = {}
    if labels is not None:
        shown = ticks if ticks is not None else labels
        ticks_spec = dict(tickmode="array", tickvals=[labels.index(t) for t in shown],
                          ticktext=[_short(t) for t in shown], tickfont=dict(size=9))
    lines, notes = [], []
    if 0 < n_image < S:
        edge = n_image - 0.5
        lines = [dict(type="line", line=dict(color="#ff9500", width=2), **kw) for kw in (
            dict(x0=edge, x1=edge, y0=-0.5, y1=S - 0.5),
            dict(y0=edge, y1=edge, x0=-0.5, x1=S - 0.5))]
        narrow = (S - n_image) < S / 4  # a short caption: the text column is a thin strip
        right = dict(x=S - 0.5, xanchor="right") if narrow else {}  # keep text→text inside
        upright = {"textangle": -90} if narrow else {}
        notes = [{"x": x - 0.5, "y": y - 0.5, **kw, "text": text, "showarrow": False,
                  "font": dict(color="#ff9500", size=12), "bgcolor": "rgba(0,0,0,0.5)"}
                 for x, y, text, kw in [
                     (n_image / 2, n_image / 2, "image→image", {}),
                     ((n_image + S) / 2, n_image / 2, "image→text", upright),
                     (n_image / 2, (n_image + S) / 2, "text→image", {}),
                     ((n_image + S) / 2, (n_image + S) / 2, "text→text", right)]]
    return _heat(trace, title, height,
                 dict(title=_title("key token j (looked at)", 12), **ticks_spec),
                 dict(title=_title("query token i (looks)", 12), **ticks_spec),
                 shapes=lines, notes=notes)


def visible_keys_chart(visible: dict, labels: list[str], ticks: list[str],
                       n_image: int) -> go.Figure:
    """How many keys each query may see under each mask (one line per mask), the queries named
    on the x axis and the start of the text marked."""
    S = len(labels)
    fig = go.Figure(  # the lines and the layout in one constructor call
        data=[go.Scatter(x=list(range(S)), y=np.asarray(v, np.float32), name=f"{k} mask",
                         mode="lines+markers", marker=dict(size=4), customdata=labels,
                         hovertemplate="%{customdata}: %{y} keys<extra>%{fullData.name}</extra>")
              for k, v in visible.items()],
        layout=dict(title=_title("How many keys each query may see"), height=320,
                    margin=dict(l=0, r=0, t=30, b=0),
                    legend=dict(orientation="h", y=1.12, x=1, xanchor="right"),
                    yaxis=dict(title=dict(text="visible keys")),
                    xaxis=dict(title=_title("query token (image tokens first, then text)", 12),
                               tickmode="array", tickvals=[labels.index(t) for t in ticks],
                               ticktext=[_short(t) for t in ticks], tickfont=dict(size=10),
                               tickangle=-90)))
    if 0 < n_image < S:
        fig.add_vline(x=n_image - 0.5, line=dict(color="#ff9500", width=1, dash="dot"),
                      annotation_text="text starts", annotation_position="top left")
    return fig


# ---------------------------------------------------------------- the experiments page
def patch_set_grid(crop: Image.Image, patch_size: int, chosen, show_index: bool = True,
                   title: str = "") -> go.Figure:
    """patch_grid (clickable, a patch index in each cell) with a set of patches outlined."""
    g = crop.size[0] // patch_size
    return _grid_figure(crop, patch_size,
                        [_click_layer(crop, patch_size, show_index, _cell_font(g))], chosen,
                        "#ffd60a", title=title or None, pinned=True)


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
            textfont=dict(color="white", size=_cell_font(g)), hoverinfo="skip", showlegend=False))
    return _grid_figure(img, patch_size, layers, outlined, "#ffd60a", title=title, pinned=True)


def before_after_bars(labels: list[str], before, after, *, title: str, value_title: str,
                      names=("before", "after"), percent: bool = True) -> go.Figure:
    """Paired horizontal bars: each label's value before and after a change, first label on
    top; the legend names the two runs and every bar prints its value."""
    def fmt(v: float) -> str:  # under 1 %, three significant digits: the changes stay visible
        return (f"{100 * v:.1f}%" if v >= 0.01 else f"{100 * v:.3g}%") if percent else f"{v:.3g}"

    top = max([float(x) for x in before] + [float(x) for x in after] + [1e-12])
    fig = go.Figure([go.Bar(y=labels, x=[float(x) for x in v], name=name, orientation="h",
                            text=[fmt(float(x)) for x in v], textposition="outside",
                            cliponaxis=False, marker_color=colour)
                     for v, name, colour in zip((before, after), names, ("#8e8e93", "#ff2d55"),
                                                strict=True)])
    fig.update_layout(title=dict(text=title, font=dict(size=14)), barmode="group",
                      height=90 + 46 * len(labels), margin=dict(l=0, r=40, t=60, b=0),
                      legend=dict(orientation="h", y=1.0, yanchor="bottom", x=0),
                      xaxis=dict(title=value_title,
                                 range=[0, min(1.08, 1.2 * top)] if percent else None,
                                 tickformat=(".0%" if top > 0.05 else ".2%") if percent else None),
                      yaxis=dict(autorange="reversed"))
    return fig


def caption_pair(before_words: list[str], before_probs, after_words: list[str], after_probs,
                 before_title: str, after_title: str, title: str) -> go.Figure:
    """Two captions one above the other: each word, in reading order, with the probability it
    had when it was chosen."""
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=2, cols=1, subplot_titles=(before_title, after_title),
                        vertical_spacing=0.28)
    for row, (words, probs, colour) in enumerate(
            [(before_words, before_probs, "#8e8e93"), (after_words, after_probs, "#ff2d55")], 1):
        fig.add_trace(go.Bar(x=[f"{i + 1}. {w}" for i, w in enumerate(words)], y=list(probs),
                             text=[f"{p:.0%}" for p in probs], textposition="auto",
                             marker_color=colour, showlegend=False), row=row, col=1)
        fig.update_yaxes(range=[0, 1], tickformat=".0%", title="P(word) when chosen", row=row,
                         col=1)
    fig.update_layout(title=dict(text=title, font=dict(size=14)), height=500,
                      margin=dict(l=0, r=0, t=80, b=0))
    return fig


def head_switches(depth: int, num_heads: int, off) -> go.Figure:
    """Every head of the model as a cell, layer by head: switched-off heads dark."""
    z = np.ones((depth, num_heads))
    for layer, head in off:
        z[layer, head] = 0
    trace = go.Heatmap(
        z=z, x=[f"head {h}" for h in range(num_heads)], y=[f"block {b}" for b in range(depth)],
        zmin=0, zmax=1, colorscale=[[0, "#1f1f3a"], [0.5, "#1f1f3a"], [0.5, "#9fd3a8"],
                                    [1, "#9fd3a8"]], xgap=2, ygap=2,
        colorbar=dict(thickness=10, tickvals=[0.25, 0.75], ticktext=["off", "on"],
                      title=dict(text="switched", side="right", font=dict(size=11))),
        hovertemplate="%{y}, %{x}<extra></extra>")
    return _heat(trace, f"The model's {depth} × {num_heads} heads: dark ones are switched off",
                 min(420, max(170, 90 + 26 * depth)), dict(title=_title("head", 12)),
                 dict(title=_title("block (layer)", 12)), square=False)


def similarity_bars(names: list[str], values, title: str) -> go.Figure:
    """Cosine similarity per final token (before vs after), 1 meaning unchanged."""
    fig = go.Figure(go.Bar(y=names, x=[float(v) for v in values], orientation="h",
                           text=[f"{v:.3f}" for v in values], textposition="auto"))
    fig.update_layout(title=dict(text=title, font=dict(size=14)), height=110 + 40 * len(names),
                      margin=dict(l=0, r=0, t=30, b=0), yaxis=dict(autorange="reversed"),
                      xaxis=dict(title="cosine similarity, before vs after (1 = unchanged)",
                                 range=[min(0.0, min(values)), 1.0]))
    return fig


def token_mask(allowed: np.ndarray, config, words: list[str] | None, title: str) -> go.Figure:
    """mask_figure with every token named on its axes (CLS / DIST, the first patch of each row,
    the words) and a note in the title of what light and dark mean."""
    n_image = config.num_image_tokens
    fig = mask_figure(allowed, n_image, title + "<br><sup>light: may attend (M = 0) · dark: "
                                                "blocked (M = −∞)</sup>")
    labels = token_labels(config, words)
    index = {lab: i for i, lab in enumerate(labels)}
    # the plot is ~260 px tall in a half-width column: keep ticks at least ~14 px apart, giving
    # way in this order: CLS / DIST, the first text token, patch rows, the other words
    gap = max(1, int(np.ceil(14 * len(labels) / 260)))
    first_text = [lab for lab in labels if lab.startswith("text 0:")]
    candidates = list(config.prefix_names) + first_text + token_ticks(labels, config.grid)
    kept: list[str] = []
    for lab in dict.fromkeys(candidates):
        if all(abs(index[lab] - index[k]) >= gap for k in kept):
            kept.append(lab)
    ticks = sorted(kept, key=index.get)
    for axis, name in (("x", "key token j (what is looked at)"),
                       ("y", "query token i (who looks)")):
        update = fig.update_xaxes if axis == "x" else fig.update_yaxes
        update(title=dict(text=name, font=dict(size=12)), tickmode="array",
               tickvals=[index[t] for t in ticks], ticktext=[_short(t) for t in ticks],
               tickfont=dict(size=9))
    fig.update_layout(margin=dict(t=60))
    return fig


def qr_png(text: str, max_px: int = 200) -> bytes:
    """`text` as a QR code PNG (segno's defaults: the smallest version, error correction L or
    better), black on white with the standard 4-module quiet zone, whole pixels per module so
    a phone reads it at any size up to `max_px`."""
    import segno

    qr = segno.make_qr(text)
    buf = io.BytesIO()
    qr.save(buf, kind="png", scale=max(2, max_px // qr.symbol_size(border=4)[0]), border=4)
    return buf.getvalue()


# ---------------------------------------------------------------- the model map (overview)
MAP_FILL = {"input": "#dbeafe", "text": "#fef3c7", "attn": "#ffedd5", "mlp": "#dcfce7",
            "out": "#ede9fe", "mask": "#f1f5f9"}
MAP_ROW_PX = 58  # pixels per row of the map
MAP_WIDTH = 800  # fixed: fits the main column at 1280 px, with the sidebar or zoomed 1.3x
MAP_BOX_W, MAP_BOX_H = 0.36, 0.3  # half width / half height of a box, in column / row units


@dataclass(frozen=True)
class MapPlan:
    """How a model map is laid out: box centres (columns, rows), sizes, type sizes in px."""

    pos: dict[str, tuple[float, float]]
    box_w: float = MAP_BOX_W  # half width of a box, in column units
    box_h: float = MAP_BOX_H  # half height, in row units
    row_px: int = MAP_ROW_PX
    width: int | None = MAP_WIDTH  # px; None: as wide as its column (the x range fits it)
    x_pad: float = 0.5  # columns of margin left of the first box centre and right of the last
    # type sizes at scale 1: the figures' floor (readable.TEXT_PX), so a map scaled up for a
    # slide draws its text larger than the page's
    font: dict = field(default_factory=lambda: dict(box=TEXT_PX, edge=TEXT_PX, frame=TEXT_PX + 1,
                                                    strip=TEXT_PX, strip_note=TEXT_PX))
    note_at: dict | None = None  # where the block's note goes (default: atop the frame, left)
    strip: tuple[float, float, float] | None = None  # the layer strip's left, right, row
    strip_per_row: int = 12
    strip_gap: float = 0.3  # rows between two rows of layer cells
    note_wrap: int | None = None  # wrap the block's note at this many characters
    elbow: bool = False  # an arrow down to the right leaves its source's side, not its bottom
    cell_px: int = 18  # a layer cell's largest side


def wide_plan(mm) -> MapPlan:
    return MapPlan(model_map_layout(mm))


def model_map_layout(mm) -> dict[str, tuple[float, float]]:
    """Where each box of a vit_core.explain.stages.ModelMap sits: (x in columns, y in rows).

    A serpentine: the image stream runs down the first column (the text stream beside it), the
    block's attention half runs up, its MLP half down, the readout up again, so every hand-over
    between columns is a short horizontal arrow. The mask sits between the two halves, level with
    the attention pattern it is added to; a segmentation head gets a column of its own.
    """
    ids = [b.id for b in mm.boxes]
    image = [i for i in ids if mm.box(i).row == "input" and i != "join"]
    pos: dict[str, tuple[float, float]] = {}
    bottom = max(len(image) - 1, 4) + (1 if "join" in ids else 0)
    last = bottom - (1 if "join" in ids else 0)
    for k, i in enumerate(image):  # spread down to the block's bottom row
        pos[i] = (0.0, k * last / max(len(image) - 1, 1))
    x = 1.0
    if "join" in ids:  # the text stream: a column of its own, down into the join
        pos["words"], pos["text_embed"] = (1.0, bottom - 2.0), (1.0, bottom - 1.0)
        pos["join"] = (1.0, bottom)
        x = 2.0
    attn = ["ln1", "qkv", "pattern", "attn_out", "add1"]
    for k, i in enumerate(attn):  # upwards
        pos[i] = (x, bottom - k)
    top = bottom - 4
    pos["mask"] = (x + 0.8, pos["pattern"][1])
    c = x + 1.6
    for k, i in enumerate(["ln2", "mlp_up", "mlp_down", "add2"]):  # downwards
        pos[i] = (c, top + k)
    d = c + 1.0
    readout = [i for i in ids if mm.box(i).row == "out" and not i.startswith("seg_")]
    for k, i in enumerate(readout):  # upwards again
        pos[i] = (d, top + 3 - k)
    if "seg_head" in ids:
        pos["seg_head"], pos["seg_map"] = (d + 1.0, top + 3.0), (d + 1.0, top + 4.0)
    return pos


def model_map(mm, title: str | None = None, scale: float = 1.0, plan=None) -> go.Figure:
    """The whole forward pass as boxes and arrows (vit_core.explain.stages.ModelMap).

    Every box is a rectangle with its name; every arrow carries the live shape of the tensor it
    carries (annotation name "edge:<trace name>", text the shape). An invisible marker on each box
    makes it clickable (customdata [stage slug, layer or -1, box id]); the strip of L cells under
    the block picks the layer it shows (customdata ["", layer, "layer"]). `scale` enlarges
    the whole drawing (size, text, markers), e.g. for presenter mode. `plan`: where the boxes,
    the block's note and the strip go, and the sizes (MapPlan; default: the wide serpentine;
    ui/map_phone.py has one top to bottom for a phone).
    """

    def px(n: float) -> int:
        return max(1, round(n * scale))

    plan = plan or wide_plan(mm)
    pos, box_w, box_h, font = plan.pos, plan.box_w, plan.box_h, plan.font
    xs = [p[0] for p in pos.values()]
    ys = [p[1] for p in pos.values()]
    x_lo, x_hi = min(xs) - plan.x_pad, max(xs) + plan.x_pad
    fig = go.Figure()
    shapes, notes = [], []
    block_ids = [b.id for b in mm.boxes if b.in_block]
    bx = [pos[i][0] for i in block_ids]
    by = [pos[i][1] for i in block_ids]
    frame = dict(x0=min(bx) - box_w - 0.1, x1=max(bx) + box_w + 0.1, y0=min(by) - 0.5,
                 y1=max(by) + 0.5)
    y_lo, y_hi = min(min(ys) - 0.4, frame["y0"] - 0.45), max(ys) + 0.55
    shapes.append(dict(type="rect", **frame, line=dict(color="#64748b", width=1.5, dash="dot"),
                       fillcolor="rgba(0,0,0,0)", layer="below"))
    L = mm.depth
    said = (f"<b>Block {mm.layer}</b> (of blocks 0–{L - 1}), drawn in full: the model repeats "
            f"this block × {L}" if L > 1 else
            "<b>Block 0</b>, drawn in full: this model has a single block")
    where = plan.note_at or dict(x=frame["x0"], y=frame["y0"], xanchor="left", yanchor="bottom")
    text = "<br>".join(textwrap.wrap(said, plan.note_wrap)) if plan.note_wrap else said
    notes.append(dict(**where, text=text,
                      showarrow=False, font=dict(size=px(font["frame"]), color="#334155"),
                      name="frame"))
    for b in mm.boxes:
        x, y = pos[b.id]
        w = 0.25 if b.id == "mask" else box_w
        fill = MAP_FILL["mask" if b.id == "mask" else b.row]
        shapes.append(dict(type="rect", x0=x - w, x1=x + w, y0=y - box_h, y1=y + box_h,
                           line=dict(color="#334155", width=1), fillcolor=fill, layer="below"))
        notes.append(dict(x=x, y=y, text=b.label.replace("\n", "<br>"), showarrow=False,
                          font=dict(size=px(font["box"]), color="#0f172a"), name=f"box:{b.id}"))
    for e in mm.edges:
        (x0, y0), (x1, y1) = pos[e.src], pos[e.dst]
        w0 = 0.25 if e.src == "mask" else box_w
        w1 = 0.25 if e.dst == "mask" else box_w
        if abs(y0 - y1) < 1e-6:  # horizontal
            sx = 1 if x1 > x0 else -1
            a, b = (x0 + sx * w0, y0), (x1 - sx * w1, y1)
            label = dict(x=(a[0] + b[0]) / 2, y=y0, yanchor="bottom", yshift=px(2))
        elif abs(x0 - x1) < 1e-6:  # vertical
            sy = 1 if y1 > y0 else -1
            a, b = (x0, y0 + sy * box_h), (x1, y1 - sy * box_h)
            label = dict(x=x0, y=(a[1] + b[1]) / 2, xanchor="left", xshift=px(5))
        elif plan.elbow and x1 > x0:  # to the right: from the source's side to the top of
            a, b = (x0 + box_w, y0), (x1, y1 - box_h)  # the destination, labelled above it
            label = dict(x=x1, y=(a[1] + b[1]) / 2, xanchor="left", xshift=px(5))
        else:  # diagonal: from the bottom or top of the source to the side of the destination
            sy = 1 if y1 > y0 else -1
            a = (x0, y0 + sy * box_h)
            b = (x1 - (w1 if x1 > x0 else -w1), y1)
            label = dict(x=x0, y=(a[1] + b[1]) / 2, xanchor="right", xshift=-px(5))
        if e.src == "mask":  # the mask's shape sits under its box
            label = dict(x=x0, y=y0 + box_h, yanchor="top", yshift=-1)
        notes.append(dict(x=b[0], y=b[1], ax=a[0], ay=a[1], xref="x", yref="y", axref="x",
                          ayref="y", text="", showarrow=True, arrowhead=2, arrowsize=1,
                          arrowwidth=1.3 * scale, arrowcolor="#475569", standoff=0,
                          startstandoff=0))
        notes.append(dict(text=e.label, showarrow=False,
                          font=dict(size=px(font["edge"]), color="#1d4ed8"),
                          bgcolor="rgba(255,255,255,0.85)", borderpad=0,
                          name=f"edge:{e.name}", **label))
    # clickable boxes: one invisible marker per box
    fig.add_trace(go.Scatter(
        x=[pos[b.id][0] for b in mm.boxes], y=[pos[b.id][1] for b in mm.boxes], mode="markers",
        marker=dict(size=px(34), symbol="square", opacity=0),
        customdata=[[b.stage, mm.layer if b.in_block else -1, b.id] for b in mm.boxes],
        text=[b.label.replace("\n", " ") for b in mm.boxes],
        hovertemplate="%{text}<br>click: open its stage<extra></extra>", showlegend=False,
        name="boxes"))
    # the layer strip: one cell per block (under the MLP half; a phone's: beside the block)
    if L > 1:
        per_row = plan.strip_per_row
        rows = -(-L // per_row)
        left, right, cy0 = plan.strip or (pos["mask"][0] - 0.2, pos["add2"][0] + box_w,
                                          pos["ln1"][1])
        step = min((right - left) / min(L, per_row), 0.2)
        cy0 = cy0 - plan.strip_gap / 2 * (rows - 1)
        cx = [left + step * (i % per_row + 0.5) for i in range(L)]
        cy = [cy0 + plan.strip_gap * (i // per_row) for i in range(L)]
        fig.add_trace(go.Scatter(
            x=cx, y=cy, mode="markers+text", text=[str(i) for i in range(L)],
            textfont=dict(size=px(font["strip"]), color=["white" if i == mm.layer else
                                                         "#0f172a" for i in range(L)]),
            marker=dict(size=px(min(plan.cell_px, max(8, int(step * 140) - 3))), symbol="square",
                        color=["#ea580c" if i == mm.layer else "#fed7aa" for i in range(L)],
                        line=dict(color="#9a3412", width=1)),
            customdata=[["", i, "layer"] for i in range(L)],
            hovertemplate="block %{customdata[1]}: click to show it<extra></extra>",
            showlegend=False, name="layers"))
        notes.append(dict(x=left, y=cy0 - 0.3, xanchor="left", yanchor="bottom",
                          text="Show block (click):", showarrow=False,
                          font=dict(size=px(font["strip_note"])), name="strip"))
    fig.update_layout(
        shapes=shapes, annotations=notes, height=px((y_hi - y_lo) * plan.row_px + 10),
        width=px(plan.width) if plan.width else None,
        margin=dict(l=4, r=4, t=4 if not title else 30, b=4), plot_bgcolor="white",
        title=dict(text=title, font=dict(size=14)) if title else None,
        xaxis=dict(visible=False, range=[x_lo, x_hi], fixedrange=True),
        yaxis=dict(visible=False, range=[y_hi, y_lo], fixedrange=True),
        dragmode=False, clickmode="event+select", hoverlabel=dict(font_size=px(font["box"])))
    return fig
