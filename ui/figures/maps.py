"""The model map: the whole forward pass as boxes and arrows."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

import plotly.graph_objects as go

from ..readable import TEXT_PX

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
