"""Figures laid out for a phone (ui/phone.py shows them on a narrow screen). No Streamlit here.

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

from .figures import MapPlan

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
    block = ["ln1", "qkv", "pattern", "attn_out", "add1", "ln2", "mlp_up", "mlp_down", "add2"]
    for i in block:
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
PANEL_PX = 300  # px: a stacked panel's height at most (a 390-px phone's column is ~358 px wide)
GAP_PX = 90  # px between panels: the upper one's axis labels, the lower one's title
TITLE_CHARS = 40  # a title's line on a phone: ~40 characters of 14-px type


def stacked(fig: go.Figure) -> go.Figure | None:
    """A figures.panels figure with its panels one under another, each as wide as the phone
    (None for any other figure). Side by side on a 390-px phone each panel was 100-150 px wide
    with overlapping titles. The panels keep their traces, axes, lines and labels; each title
    goes above its own panel, the figure's title is wrapped to the width."""
    n = ((fig.layout.meta or {}) if isinstance(fig.layout.meta, dict) else {}).get("panels", 0)
    if n < 2:
        return None
    out = go.Figure(fig)
    lay = out.layout
    margin = lay.margin
    top, bottom = (margin.t if margin.t is not None else 60), margin.b or 0
    plot_h = (lay.height or 360) - top - bottom
    ph = min(plot_h, PANEL_PX)
    total = n * ph + (n - 1) * GAP_PX
    spans = []
    for i in range(n):
        y1 = 1 - i * (ph + GAP_PX) / total
        spans.append((max(y1 - ph / total, 0.0), min(y1, 1.0)))
        sfx = "" if i == 0 else str(i + 1)
        out.layout[f"xaxis{sfx}"].domain = [0, 1]
        out.layout[f"yaxis{sfx}"].domain = list(spans[-1])
        for axis in (out.layout[f"xaxis{sfx}"], out.layout[f"yaxis{sfx}"]):
            axis.update(tickfont=dict(size=FONT), title_font=dict(size=FONT))
    for note in lay.annotations:
        if (note.name or "").startswith("panel:"):
            i = int(note.name.split(":")[1])
            note.update(x=0.5, y=spans[i][1], font=dict(size=FONT))
        elif note.font.size is None or note.font.size < FONT:
            note.font.size = FONT
    for trace in out.data:  # a colour bar of its own sits beside its own panel
        bar = getattr(trace, "colorbar", None)
        if bar is not None and bar.x is not None:
            i = int((trace.yaxis or "y")[1:] or 1) - 1
            bar.update(x=1.01, y=sum(spans[i]) / 2, yanchor="middle", len=ph / total)
        if bar is not None:
            bar.update(tickfont=dict(size=FONT), title_font=dict(size=FONT))
        if "textfont" in trace:
            trace.textfont.size = max(trace.textfont.size or 0, FONT)
    if lay.coloraxis.colorbar is not None:
        lay.coloraxis.colorbar.update(tickfont=dict(size=FONT), title_font=dict(size=FONT))
    title = lay.title.text
    if title:  # wrapped, atop the figure, with the first panel's title under it
        lines = textwrap.wrap(title, TITLE_CHARS)
        lay.title.update(text="<br>".join(lines), font=dict(size=FONT), y=1, yref="container",
                         yanchor="top", pad=dict(t=6))
        top = max(top, 40 + 20 * len(lines))
    out.update_layout(height=total + top + bottom, margin=dict(t=top, r=max(margin.r or 0, 8)),
                      width=None, autosize=True, font=dict(size=FONT))
    return out
