"""The model map: the whole forward pass as boxes and arrows."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

import plotly.graph_objects as go

from ui.drawing.readable import TEXT_PX

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


ATTN_HALF = ("ln1", "qkv", "pattern", "attn_out", "add1")  # the block's first half, drawn up
MLP_HALF = ("ln2", "mlp_up", "mlp_down", "add2")  # its second half, drawn down


def model_map_layout(mm) -> dict[str, tuple[float, float]]:
    """Where each box of a vit_core.explain.stages.ModelMap sits: (x in columns, y in rows).

    A serpentine: the image stream runs down the first column (the text stream beside it), the
    block's attention half runs up, its MLP half down, the readout up again, so every hand-over
    between columns is a short horizontal arrow. The mask sits between the two halves, level with
    the attention pattern it is added to; a segmentation head gets a column of its own.
    """
    ids = [b.id for b in mm.boxes]
    pos, bottom = _streams(mm)
    x = 2.0 if "join" in ids else 1.0
    for k, i in enumerate(ATTN_HALF):  # upwards
        pos[i] = (x, bottom - k)
    top = bottom - 4
    pos["mask"] = (x + 0.8, pos["pattern"][1])
    c = x + 1.6
    for k, i in enumerate(MLP_HALF):  # downwards
        pos[i] = (c, top + k)
    d = c + 1.0
    readout = [b.id for b in mm.boxes if b.row == "out" and not b.id.startswith("seg_")]
    for k, i in enumerate(readout):  # upwards again
        pos[i] = (d, top + 3 - k)
    if "seg_head" in ids:
        pos["seg_head"], pos["seg_map"] = (d + 1.0, top + 3.0), (d + 1.0, top + 4.0)
    return pos


def _streams(mm) -> tuple[dict[str, tuple[float, float]], int]:
    """The image stream down the first column, spread to the block's bottom row, and a
    captioner's text stream in a column of its own, down into the join. Returns the places
    and the bottom row."""
    ids = [b.id for b in mm.boxes]
    image = [i for i in ids if mm.box(i).row == "input" and i != "join"]
    pos: dict[str, tuple[float, float]] = {}
    bottom = max(len(image) - 1, 4) + (1 if "join" in ids else 0)
    last = bottom - (1 if "join" in ids else 0)
    for k, i in enumerate(image):
        pos[i] = (0.0, k * last / max(len(image) - 1, 1))
    if "join" in ids:
        pos["words"], pos["text_embed"] = (1.0, bottom - 2.0), (1.0, bottom - 1.0)
        pos["join"] = (1.0, bottom)
    return pos, bottom


def model_map(mm, title: str | None = None, scale: float = 1.0, plan=None) -> go.Figure:
    """The whole forward pass as boxes and arrows (vit_core.explain.stages.ModelMap).

    Every box is a rectangle with its name; every arrow carries the live shape of the tensor it
    carries (annotation name "edge:<trace name>", text the shape). An invisible marker on each box
    makes it clickable (customdata [stage slug, layer or -1, box id]); the strip of L cells under
    the block picks the layer it shows (customdata ["", layer, "layer"]). `scale` enlarges
    the whole drawing (size, text, markers), e.g. for presenter mode. `plan`: where the boxes,
    the block's note and the strip go, and the sizes (MapPlan; default: the wide serpentine;
    ui/drawing/phone_figures.py has one top to bottom for a phone).
    """
    pen = _Pen(plan or wide_plan(mm), scale)
    frame, frame_shape, frame_note = _frame(mm, pen)
    shapes, notes = [frame_shape], [frame_note]
    for b in mm.boxes:
        shape, note = _box(b, pen)
        shapes.append(shape)
        notes.append(note)
    for e in mm.edges:
        notes += _arrow(e, pen)
    traces = [_box_markers(mm, pen)]
    if mm.depth > 1:
        strip, note = _layer_strip(mm, pen)
        traces.append(strip)
        notes.append(note)
    return _figure(traces, shapes, notes, _ranges(pen.plan, frame), title, pen)


@dataclass(frozen=True)
class _Pen:
    """A plan and the scale it is drawn at."""

    plan: MapPlan
    scale: float

    def px(self, n: float) -> int:
        return max(1, round(n * self.scale))

    def font(self, part: str) -> int:
        return self.px(self.plan.font[part])

    def half_width(self, box_id: str) -> float:
        return 0.25 if box_id == "mask" else self.plan.box_w  # the mask's box is narrower


def _frame(mm, pen: _Pen) -> tuple[dict, dict, dict]:
    """The dotted frame around the block drawn in full (its extent, its shape) and its note."""
    plan = pen.plan
    inside = [plan.pos[b.id] for b in mm.boxes if b.in_block]
    bx, by = [p[0] for p in inside], [p[1] for p in inside]
    frame = dict(x0=min(bx) - plan.box_w - 0.1, x1=max(bx) + plan.box_w + 0.1, y0=min(by) - 0.5,
                 y1=max(by) + 0.5)
    shape = dict(type="rect", **frame, line=dict(color="#64748b", width=1.5, dash="dot"),
                 fillcolor="rgba(0,0,0,0)", layer="below")
    L = mm.depth
    said = (f"<b>Block {mm.layer}</b> (of blocks 0–{L - 1}), drawn in full: the model repeats "
            f"this block × {L}" if L > 1 else
            "<b>Block 0</b>, drawn in full: this model has a single block")
    where = plan.note_at or dict(x=frame["x0"], y=frame["y0"], xanchor="left", yanchor="bottom")
    text = "<br>".join(textwrap.wrap(said, plan.note_wrap)) if plan.note_wrap else said
    note = dict(**where, text=text, showarrow=False,
                font=dict(size=pen.font("frame"), color="#334155"), name="frame")
    return frame, shape, note


def _box(b, pen: _Pen) -> tuple[dict, dict]:
    """A box's rectangle and its name."""
    x, y = pen.plan.pos[b.id]
    w, h = pen.half_width(b.id), pen.plan.box_h
    fill = MAP_FILL["mask" if b.id == "mask" else b.row]
    shape = dict(type="rect", x0=x - w, x1=x + w, y0=y - h, y1=y + h,
                 line=dict(color="#334155", width=1), fillcolor=fill, layer="below")
    note = dict(x=x, y=y, text=b.label.replace("\n", "<br>"), showarrow=False,
                font=dict(size=pen.font("box"), color="#0f172a"), name=f"box:{b.id}")
    return shape, note


def _ends(e, pen: _Pen) -> tuple[tuple, tuple, dict]:
    """Where an edge's arrow starts and ends, and where its shape label goes."""
    (x0, y0), (x1, y1) = pen.plan.pos[e.src], pen.plan.pos[e.dst]
    w0, w1, h = pen.half_width(e.src), pen.half_width(e.dst), pen.plan.box_h
    if abs(y0 - y1) < 1e-6:  # horizontal
        sx = 1 if x1 > x0 else -1
        a, b = (x0 + sx * w0, y0), (x1 - sx * w1, y1)
        label = dict(x=(a[0] + b[0]) / 2, y=y0, yanchor="bottom", yshift=pen.px(2))
    elif abs(x0 - x1) < 1e-6:  # vertical
        sy = 1 if y1 > y0 else -1
        a, b = (x0, y0 + sy * h), (x1, y1 - sy * h)
        label = dict(x=x0, y=(a[1] + b[1]) / 2, xanchor="left", xshift=pen.px(5))
    elif pen.plan.elbow and x1 > x0:  # to the right: from the source's side to the top of
        a, b = (x0 + pen.plan.box_w, y0), (x1, y1 - h)  # the destination, labelled above it
        label = dict(x=x1, y=(a[1] + b[1]) / 2, xanchor="left", xshift=pen.px(5))
    else:  # diagonal: from the bottom or top of the source to the side of the destination
        sy = 1 if y1 > y0 else -1
        a = (x0, y0 + sy * h)
        b = (x1 - (w1 if x1 > x0 else -w1), y1)
        label = dict(x=x0, y=(a[1] + b[1]) / 2, xanchor="right", xshift=-pen.px(5))
    if e.src == "mask":  # the mask's shape sits under its box
        label = dict(x=x0, y=y0 + h, yanchor="top", yshift=-1)
    return a, b, label


def _arrow(e, pen: _Pen) -> list[dict]:
    """An edge: its arrow, and its label (the live shape, named "edge:<trace name>")."""
    a, b, label = _ends(e, pen)
    arrow = dict(x=b[0], y=b[1], ax=a[0], ay=a[1], xref="x", yref="y", axref="x", ayref="y",
                 text="", showarrow=True, arrowhead=2, arrowsize=1, arrowwidth=1.3 * pen.scale,
                 arrowcolor="#475569", standoff=0, startstandoff=0)
    text = dict(text=e.label, showarrow=False, font=dict(size=pen.font("edge"), color="#1d4ed8"),
                bgcolor="rgba(255,255,255,0.85)", borderpad=0, name=f"edge:{e.name}", **label)
    return [arrow, text]


def _box_markers(mm, pen: _Pen) -> go.Scatter:
    """The clickable boxes: one invisible marker per box."""
    pos = pen.plan.pos
    return go.Scatter(
        x=[pos[b.id][0] for b in mm.boxes], y=[pos[b.id][1] for b in mm.boxes], mode="markers",
        marker=dict(size=pen.px(34), symbol="square", opacity=0),
        customdata=[[b.stage, mm.layer if b.in_block else -1, b.id] for b in mm.boxes],
        text=[b.label.replace("\n", " ") for b in mm.boxes],
        hovertemplate="%{text}<br>click: open its stage<extra></extra>", showlegend=False,
        name="boxes")


def _layer_strip(mm, pen: _Pen) -> tuple[go.Scatter, dict]:
    """The layer strip: one clickable cell per block (under the MLP half; a phone's: beside the
    block), and its note."""
    plan, L = pen.plan, mm.depth
    per_row = plan.strip_per_row
    rows = -(-L // per_row)
    left, right, cy0 = plan.strip or (plan.pos["mask"][0] - 0.2, plan.pos["add2"][0] + plan.box_w,
                                      plan.pos["ln1"][1])
    step = min((right - left) / min(L, per_row), 0.2)
    cy0 = cy0 - plan.strip_gap / 2 * (rows - 1)
    here = [i == mm.layer for i in range(L)]
    strip = go.Scatter(
        x=[left + step * (i % per_row + 0.5) for i in range(L)],
        y=[cy0 + plan.strip_gap * (i // per_row) for i in range(L)], mode="markers+text",
        text=[str(i) for i in range(L)],
        textfont=dict(size=pen.font("strip"), color=["white" if h else "#0f172a" for h in here]),
        # the shown block: dark orange under white text (5.2:1) and a thicker edge
        marker=dict(size=pen.px(min(plan.cell_px, max(8, int(step * 140) - 3))), symbol="square",
                    color=["#c2410c" if h else "#fed7aa" for h in here],
                    line=dict(color="#7c2d12", width=[3 if h else 1 for h in here])),
        customdata=[["", i, "layer"] for i in range(L)],
        hovertemplate="block %{customdata[1]}: click to show it<extra></extra>",
        showlegend=False, name="layers")
    note = dict(x=left, y=cy0 - 0.3, xanchor="left", yanchor="bottom",
                text="Show block (click):", showarrow=False,
                font=dict(size=pen.font("strip_note")), name="strip")
    return strip, note


def _ranges(plan: MapPlan, frame: dict) -> tuple[list[float], list[float]]:
    """The x range (the boxes with `x_pad` either side) and the y range, top down (the boxes and
    the frame's note above the block)."""
    xs = [p[0] for p in plan.pos.values()]
    ys = [p[1] for p in plan.pos.values()]
    y_lo, y_hi = min(min(ys) - 0.4, frame["y0"] - 0.45), max(ys) + 0.55
    return [min(xs) - plan.x_pad, max(xs) + plan.x_pad], [y_hi, y_lo]


def _figure(traces: list, shapes: list[dict], notes: list[dict], ranges, title: str | None,
            pen: _Pen) -> go.Figure:
    """The map's figure: fixed axes (no zoom, no drag), clicks select, `row_px` per row."""
    x_range, y_range = ranges
    fig = go.Figure()
    for trace in traces:
        fig.add_trace(trace)
    fig.update_layout(
        shapes=shapes, annotations=notes,
        height=pen.px((y_range[0] - y_range[1]) * pen.plan.row_px + 10),
        width=pen.px(pen.plan.width) if pen.plan.width else None,
        margin=dict(l=4, r=4, t=4 if not title else 30, b=4), plot_bgcolor="white",
        title=dict(text=title, font=dict(size=14)) if title else None,
        xaxis=dict(visible=False, range=x_range, fixedrange=True),
        yaxis=dict(visible=False, range=y_range, fixedrange=True),
        dragmode=False, clickmode="event+select", hoverlabel=dict(font_size=pen.font("box")))
    return fig
