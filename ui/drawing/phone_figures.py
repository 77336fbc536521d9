"""Figures laid out for a phone (ui/drawing/phone.py shows them on a narrow screen). No Streamlit
here.

The model map for a phone: one column from the image down to the output (figures.model_map
with `tall_plan`). The wide serpentine is 800 px wide: on a 390-px phone its labels overlapped and
its right part was cut. Here the pass runs down the first column; what joins it from the side
(the captioner's text stream, the mask, a segmentation head) sits in a second column, level
with where it joins; the block's note and its layer strip sit in that column too, beside the
block, so nothing crosses the main column's arrow labels.

Figures with panels side by side (figures.panels): `stacked`, one under another."""

from __future__ import annotations

import textwrap

import plotly.graph_objects as go

from ui.drawing.figures.maps import ATTN_HALF, MLP_HALF, MapPlan

SIDE = 1.2  # the second column's centre, in column units (the main column's is 0)
ROW_PX = 56  # px per row: two lines of 14-px type in a box, an arrow and its label between
FONT = 14  # px: every label of the phone map


def tall_layout(mm) -> dict[str, tuple[float, float]]:
    """Where each box sits: (column, row), the pass top to bottom."""
    ids = [b.id for b in mm.boxes]
    box = {b.id: b for b in mm.boxes}
    pos: dict[str, tuple[float, float]] = {}
    row = 0.0
    for i in (i for i in ids if box[i].row == "input" and i != "join"):
        pos[i], row = (0.0, row), row + 1
    if "join" in ids:  # the text stream beside the image's last two boxes, into the join
        pos["words"], pos["text_embed"] = (SIDE, row - 2), (SIDE, row - 1)
        pos["join"], row = (0.0, row), row + 1
    for i in ATTN_HALF + MLP_HALF:  # the block
        pos[i], row = (0.0, row), row + 1
    pos["mask"] = (SIDE, pos["pattern"][1])
    readout = [i for i in ids if box[i].row == "out" and not i.startswith("seg_")]
    for i in readout:
        pos[i], row = (0.0, row), row + 1
    if "seg_head" in ids:  # beside the readout, below the final LayerNorm it reads
        y = pos["ln_final"][1]
        pos["seg_head"], pos["seg_map"] = (SIDE, y + 1.2), (SIDE, y + 2.2)
    return pos


def tall_plan(mm) -> MapPlan:
    pos = tall_layout(mm)
    top = pos["ln1"][1]
    return MapPlan(
        pos, box_w=0.55, box_h=0.32, row_px=ROW_PX, width=None, x_pad=0.6,
        font=dict(box=FONT, edge=FONT, frame=FONT, strip=FONT, strip_note=FONT),
        note_at=dict(x=SIDE, y=top + 0.5, xanchor="center", yanchor="middle"),
        # the strip: beside Pattern · V … + X′, under its note (rows of 6 cells)
        strip=(SIDE - 0.5, SIDE + 0.5, pos["attn_out"][1] + 0.9), strip_per_row=6, cell_px=24,
        strip_gap=0.4, note_wrap=20, elbow=True)


# ---------------------------------------------------------------- panels, one under another
PANEL_PX = 300  # px: a stacked panel's height (a 390-px phone's column is ~358 px wide)
GAP_PX = 90  # px between panels: the upper one's axis labels, the lower one's title
COLOURBAR_PX = 60  # px between the last panel and a shared colour bar under it
TITLE_CHARS = 40  # a title's line on a phone: ~40 characters of 14-px type


def for_phone(fig: go.Figure) -> go.Figure | None:
    """The figure laid out for a phone, when it needs another layout there: panels side by side
    stacked (`stacked`), or a title longer than a phone's line wrapped (plotly never wraps a
    title: on a 390-px phone ten of the tour's titles ran off the chart's right edge). None:
    the figure fits a phone as it is."""
    tall = stacked(fig)
    if tall is not None:
        return tall
    title = fig.layout.title.text or ""
    under = _long_x_titles(fig)  # an x axis's title is wrapped too (_readable): its new lines
    if len(title) <= TITLE_CHARS and not under:  # go under the chart
        return None
    d = fig.to_dict()
    lay = d["layout"]
    lines = textwrap.wrap(title, TITLE_CHARS) or [""]
    if len(lines) > 1:
        lay["title"] = {**lay["title"], "text": "<br>".join(lines), "y": 1, "yref": "container",
                        "yanchor": "top", "pad": {"t": 6}, "x": 0, "xanchor": "left",
                        "xref": "container"}
    grow = 20 * (len(lines) - 1)  # the title's new lines: the chart grows by them
    low = 20 * under  # and by an axis title's
    margin = lay.get("margin", {})
    lay.update(margin={**margin, "t": margin.get("t", 80) + grow, "b": margin.get("b", 80) + low},
               height=lay.get("height", 450) + grow + low, width=None, autosize=True)
    return go.Figure(_readable(d))


def _long_x_titles(fig: go.Figure) -> int:
    """The lines an x axis's wrapped title adds, at most (0: every one fits a phone's line)."""
    texts = [ax.title.text or "" for ax in fig.select_xaxes()]
    return max([len(wrap(t).split("<br>")) - 1 for t in texts], default=0)


def wrap(text: str) -> str:
    """Text in lines of a phone's width (plotly breaks a line only at <br>)."""
    return text if len(text) <= TITLE_CHARS or "<br>" in text else "<br>".join(
        textwrap.wrap(text, TITLE_CHARS))


def _readable(d: dict) -> dict:
    """Every label of a figure's dict at least FONT px: ticks, axis and colour-bar titles,
    legends, annotations, text on the traces."""
    lay = d["layout"]
    for name, ax in lay.items():
        if name[1:].startswith("axis") and isinstance(ax, dict):
            _readable_axis(name, ax)
    for note in lay.get("annotations", []):
        size = note.get("font", {}).get("size") or 0
        note["font"] = {**note.get("font", {}), "size": max(size, FONT)}
    bars = [t["colorbar"] for t in d["data"] if "colorbar" in t]
    bars += [lay["coloraxis"]["colorbar"]] if "colorbar" in lay.get("coloraxis", {}) else []
    for bar in bars:
        bar.update(tickfont={"size": FONT}, title={**bar.get("title", {}), "font": {"size": FONT}})
    for trace in d["data"]:
        if "textfont" in trace:
            trace["textfont"]["size"] = max(trace["textfont"].get("size") or 0, FONT)
        if trace.get("name"):  # a legend's entry
            trace["name"] = wrap(trace["name"])
    lay["legend"] = {**lay.get("legend", {}), "font": {"size": FONT}}
    lay["font"] = {**lay.get("font", {}), "size": FONT}
    return d


def _readable_axis(name: str, ax: dict) -> None:
    """An axis's ticks and title at FONT px; an x axis's title wrapped to a phone's line."""
    ax["tickfont"] = {**ax.get("tickfont", {}), "size": FONT}
    title = ax.get("title", {})
    title = title if isinstance(title, dict) else {"text": title}
    ax["title"] = {**title, "font": {"size": FONT}}
    if name.startswith("x") and title.get("text"):
        ax["title"]["text"] = wrap(title["text"])


def stacked(fig: go.Figure) -> go.Figure | None:
    """The figure with its panels side by side (figures.panels, make_subplots with one row)
    one under another, each as wide as the phone; None for a figure of one panel or another
    grid. Side by side on a 390-px phone each panel was 90-150 px wide, the titles overlapping.
    The panels keep their traces, axes, lines and labels; each title goes above its own panel,
    the figure's title is wrapped to the width, and every label is at least FONT px."""
    if "xaxis2" not in fig.layout:  # one panel (the check costs nothing; to_dict does)
        return None
    d = fig.to_dict()
    lay = d["layout"]
    cols = _side_by_side(lay)
    if cols is None:
        return None
    n = len(cols)
    margin = lay.get("margin", {})
    top, bottom = margin.get("t", 60), margin.get("b", 0) or 0
    total = n * PANEL_PX + (n - 1) * GAP_PX
    spans = _stack(lay, cols, total)
    for trace in d["data"]:
        bar = trace.get("colorbar")
        if bar is not None:  # a colour bar of its own sits beside its own panel
            i = next((k for k, (_, y) in enumerate(cols) if y == trace.get("yaxis", "y")), 0)
            bar.update(x=1.01, xanchor="left", y=sum(spans[i]) / 2, yanchor="middle",
                       len=PANEL_PX / total)
    bar = lay.get("coloraxis", {}).get("colorbar")
    if bar is not None:  # one scale for every panel: under the last, so each is as wide as
        bar.update(orientation="h", x=0.5, xanchor="center", y=-COLOURBAR_PX / total,  # can be
                   yanchor="top", len=1.0, thickness=12,
                   title={**bar.get("title", {}), "side": "top"})
        bottom += COLOURBAR_PX + 60
    title = (lay.get("title") or {}).get("text")
    if title:  # wrapped, atop the figure, with the first panel's title under it
        lines = textwrap.wrap(title, TITLE_CHARS)
        lay["title"] = {**lay["title"], "text": "<br>".join(lines), "y": 1, "yref": "container",
                        "yanchor": "top", "pad": {"t": 6}}
        top = max(top, 40 + 20 * len(lines))
    lay.update(height=total + top + bottom, width=None, autosize=True,
               margin={**margin, "t": top, "r": max(margin.get("r") or 0, 8)})
    return go.Figure(_readable(d))


def _stack(lay: dict, cols: list[tuple[str, str]], total: float) -> list[list[float]]:
    """Move panel i (its x and y axes, `cols`) to the i-th band from the top, full width, and
    each panel's title above it. Returns each panel's y domain."""
    spans = []
    before = [lay[_axis(x)].get("domain", [0.0, 1.0]) for x, _ in cols]  # side by side
    for i, (x, y) in enumerate(cols):
        y1 = 1 - i * (PANEL_PX + GAP_PX) / total
        spans.append([max(y1 - PANEL_PX / total, 0.0), min(y1, 1.0)])
        for name, dom in ((_axis(x), [0.0, 1.0]), (_axis(y), spans[-1])):
            lay[name] = {**lay.get(name, {}), "domain": dom}
    for note in lay.get("annotations", []):
        i = _title_of(note, before)
        if i is not None:
            note.update(x=0.5, xanchor="center", y=spans[i][1], yanchor="bottom",
                        text=wrap(note.get("text", "")))
    return spans


def _axis(ref: str) -> str:
    """'x2' -> 'xaxis2', 'y' -> 'yaxis'."""
    return f"{ref[0]}axis{ref[1:]}"


def _side_by_side(lay: dict) -> list[tuple[str, str]] | None:
    """The (x, y) axis ids of the panels left to right, when there are two or more in one row."""
    found = []
    for name, ax in lay.items():
        if not name.startswith("xaxis") or not isinstance(ax, dict):
            continue
        dom = ax.get("domain", [0.0, 1.0])
        if dom[1] - dom[0] < 0.9:
            y = ax.get("anchor", "y")
            found.append((dom[0], "x" + name[5:], y,
                          tuple(lay.get(_axis(y), {}).get("domain", [0.0, 1.0]))))
    if len(found) < 2 or len({f[3] for f in found}) > 1:  # one panel, or rows of panels
        return None
    return [(x, y) for _, x, y, _ in sorted(found)]


def _title_of(note: dict, domains: list) -> int | None:
    """The panel whose title this annotation is (figures.panels names them; make_subplots puts
    them atop their panel, in paper coordinates), or None."""
    name = note.get("name") or ""
    if name.startswith("panel:"):
        return int(name.split(":")[1])
    if note.get("xref") != "paper" or note.get("yref") != "paper" or note.get("y", 0) < 0.95:
        return None
    for i, (lo, hi) in enumerate(domains):
        if lo - 0.01 <= note.get("x", -1) <= hi + 0.01:
            return i
    return None
