"""Matrices and maps as heatmaps that read without hovering: token x token matrices,
vector strips, g x g grid maps, similarity tiles, attention masks, the head switches."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ui.drawing import palette
from ui.drawing.figures.parts import _axis, _colorbar, _heat, _short, _title, panels
from ui.drawing.figures.tokens import token_labels, token_ticks

# a mask's two kinds of cell: blocked dark, visible light (told apart by lightness, 13.7:1, and
# named in the title or the colour bar), and the orange lines (on a black edge) between blocks
MASK_COLOURS = ("#1f1f3a", "#e8f1ff")
MASK_LINE = "#ff9500"
SWITCHES = ("#1f1f3a", "#9fd3a8")  # a head switched off (dark, "off" printed in it), on


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
    lines = []  # white lines and outlines on a black edge: seen on every colour of the map
    for b in boundaries:
        lines += [*palette.outlined(dict(type="line", xref="x", yref="y domain", x0=b - 0.5,
                                         x1=b - 0.5, y0=0, y1=1), width=1),
                  *palette.outlined(dict(type="line", yref="y", xref="x domain", y0=b - 0.5,
                                         y1=b - 0.5, x0=0, x1=1), width=1)]
    if highlight_row is not None:
        lines += palette.outlined(dict(type="rect", xref="x domain", x0=0, x1=1, yref="y",
                                       y0=highlight_row - 0.5, y1=highlight_row + 0.5))
    if highlight_col is not None:  # dashed: told from the row by more than its direction
        lines += palette.outlined(dict(type="rect", yref="y domain", y0=0, y1=1,
                                       x0=highlight_col - 0.5, x1=highlight_col + 0.5,
                                       line=dict(dash="dash")))
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
        boxes = palette.outlined(dict(type="rect", x0=c - 0.5, x1=c + 0.5, y0=r - 0.5,
                                      y1=r + 0.5), width=3)
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
        boxes = palette.outlined(dict(type="rect", x0=c * step - 0.5, x1=c * step + g - 0.5,
                                      y0=r * step - 0.5, y1=r * step + g - 0.5))
    return _heat(trace, title, height,
                 dict(title=_title("tile column = the patch's column", 12), **ticks),
                 dict(title=_title("tile row = the patch's row", 12), **ticks), shapes=boxes,
                 plot_bgcolor="white")


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
        z=allowed.astype(np.float32), colorscale=[[0, MASK_COLOURS[0]], [1, MASK_COLOURS[1]]],
        zmin=0, zmax=1, showscale=False,
        hovertemplate="query %{y} → key %{x}: %{z}<extra>1 visible, 0 blocked (−∞)</extra>")
    ticks_spec = {}
    if labels is not None:
        shown = ticks if ticks is not None else labels
        ticks_spec = dict(tickmode="array", tickvals=[labels.index(t) for t in shown],
                          ticktext=[_short(t) for t in shown], tickfont=dict(size=9))
    lines, notes = [], []
    if 0 < n_image < S:
        edge = n_image - 0.5
        lines = [shape for kw in (dict(x0=edge, x1=edge, y0=-0.5, y1=S - 0.5),
                                  dict(y0=edge, y1=edge, x0=-0.5, x1=S - 0.5))
                 for shape in palette.outlined(dict(type="line", **kw), light=MASK_LINE)]
        narrow = (S - n_image) < S / 4  # a short caption: the text column is a thin strip
        right = dict(x=S - 0.5, xanchor="right") if narrow else {}  # keep text→text inside
        upright = {"textangle": -90} if narrow else {}
        notes = [{"x": x - 0.5, "y": y - 0.5, **kw, "text": text, "showarrow": False,
                  "font": dict(color=MASK_LINE, size=12), "bgcolor": MASK_COLOURS[0]}
                 for x, y, text, kw in [
                     (n_image / 2, n_image / 2, "image→image", {}),
                     ((n_image + S) / 2, n_image / 2, "image→text", upright),
                     (n_image / 2, (n_image + S) / 2, "text→image", {}),
                     ((n_image + S) / 2, (n_image + S) / 2, "text→text", right)]]
    return _heat(trace, title, height,
                 dict(title=_title("key token j (looked at)", 12), **ticks_spec),
                 dict(title=_title("query token i (looks)", 12), **ticks_spec),
                 shapes=lines, notes=notes)


def head_switches(depth: int, num_heads: int, off) -> go.Figure:
    """Every head of the model as a cell, layer by head: switched-off heads dark."""
    z = np.ones((depth, num_heads))
    for layer, head in off:
        z[layer, head] = 0
    dark, light = SWITCHES
    trace = go.Heatmap(
        z=z, x=[f"head {h}" for h in range(num_heads)], y=[f"block {b}" for b in range(depth)],
        zmin=0, zmax=1, colorscale=[[0, dark], [0.5, dark], [0.5, light], [1, light]],
        xgap=2, ygap=2, text=np.where(z == 0, "off", ""), texttemplate="%{text}",
        textfont=dict(color=palette.ink_on(dark)),  # "off" in the dark cells: not colour alone
        colorbar=dict(thickness=10, tickvals=[0.25, 0.75], ticktext=["off", "on"],
                      title=dict(text="switched", side="right", font=dict(size=11))),
        hovertemplate="%{y}, %{x}<extra></extra>")
    return _heat(trace, f"The model's {depth} × {num_heads} heads: dark ones are switched off",
                 min(420, max(170, 90 + 26 * depth)), dict(title=_title("head", 12)),
                 dict(title=_title("block (layer)", 12)), square=False)


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
