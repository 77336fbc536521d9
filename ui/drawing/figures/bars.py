"""Bar charts: the top classes, raw logits, words of a caption, active units, before and
after a change, similarities."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ui.drawing import palette
from ui.drawing.figures.parts import _title

RUNS = (palette.BEFORE, palette.AFTER)  # before a change (plain) and after it (hatched)


def _solid(colour: str) -> dict:
    """A single series' bars: `colour` (3:1 on the light and the dark page), text inside in
    black or white, whichever reads on it."""
    return dict(marker=dict(color=colour), insidetextfont=dict(color=palette.ink_on(colour)))


def _runs(k: int) -> dict:
    """Run k's bars (0 before, 1 after): its colour, and the second hatched, so the two differ
    in more than colour."""
    return dict(color=RUNS[k], pattern=palette.hatch(("", "/")[k], RUNS[k]))


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
                     text=[f"{probs[i]:.1%}" for i in order], textposition="auto",
                     **_solid(palette.BLUE))],
        layout=layout)


def logit_bars(logits: np.ndarray, names: list[str], k: int = 15,
               y_title: str = "class") -> go.Figure:
    """The raw logits as horizontal bars named by class, largest on top: all of them when there
    are at most k classes, else the k largest (the title says how many of how many)."""
    z = np.asarray(logits, dtype=np.float64)
    K = len(z)
    order = np.argsort(-z)[:min(k, K)][::-1]
    signed = {True: palette.POSITIVE, False: palette.NEGATIVE}
    bars = go.Bar(x=z[order], y=[names[i] for i in order], orientation="h",
                  text=[f"{z[i]:.2f}" for i in order], textposition="auto",
                  # the sign is not the colour alone: the bar points left and its text has a −
                  marker=dict(color=[signed[z[i] >= 0] for i in order]),
                  insidetextfont=dict(color=[palette.ink_on(signed[z[i] >= 0]) for i in order]))
    shown = f"all {K} classes" if K <= k else f"the {len(order)} largest of {K}"
    return go.Figure(data=[bars], layout=dict(
        title=_title(f"the raw logits ({shown})"), margin=dict(l=0, r=0, t=30, b=0),
        height=80 + 24 * len(order), yaxis=dict(tickfont=dict(size=11), title=_title(y_title, 12)),
        xaxis=dict(title=_title("logit (score before the softmax)", 12))))


def word_bars(words: list[str], probs: list[float]) -> go.Figure:
    """One bar per generated word, in reading order: the probability it had when it was chosen."""
    x = [f"{i + 1}. {w}" for i, w in enumerate(words)]  # numbered: repeated words stay apart
    fig = go.Figure(go.Bar(x=x, y=probs, text=[f"{p:.0%}" for p in probs], textposition="auto",
                           **_solid(palette.BLUE)))
    fig.update_layout(margin=dict(l=0, r=0, t=10, b=0), height=260,
                      yaxis=dict(range=[0, 1], tickformat=".0%", title="P(word)"))
    return fig


def top_units_bars(values: np.ndarray, units: list[int]) -> go.Figure:
    """Horizontal bars of the most active hidden units (values in order, largest first)."""
    fig = go.Figure(go.Bar(x=values, y=[f"unit {int(j)}" for j in units], orientation="h",
                           **_solid(palette.BLUE)))
    fig.update_layout(title=dict(text=f"its {len(units)} most active hidden units",
                                 font=dict(size=14)),
                      height=320, margin=dict(l=0, r=0, t=30, b=0),
                      yaxis=dict(autorange="reversed", title="hidden unit"),
                      xaxis_title="GELU(U): the unit's output")
    return fig


def before_after_bars(labels: list[str], before, after, *, title: str, value_title: str,
                      names=("before", "after"), percent: bool = True) -> go.Figure:
    """Paired horizontal bars: each label's value before and after a change, first label on
    top; the legend names the two runs and every bar prints its value."""
    def fmt(v: float) -> str:  # under 1 %, three significant digits: the changes stay visible
        return (f"{100 * v:.1f}%" if v >= 0.01 else f"{100 * v:.3g}%") if percent else f"{v:.3g}"

    top = max([float(x) for x in before] + [float(x) for x in after] + [1e-12])
    fig = go.Figure([go.Bar(y=labels, x=[float(x) for x in v], name=name, orientation="h",
                            text=[fmt(float(x)) for x in v], textposition="outside",
                            cliponaxis=False, marker=_runs(k))
                     for k, (v, name) in enumerate(zip((before, after), names, strict=True))])
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
    for row, (words, probs) in enumerate([(before_words, before_probs),
                                          (after_words, after_probs)], 1):
        fig.add_trace(go.Bar(x=[f"{i + 1}. {w}" for i, w in enumerate(words)], y=list(probs),
                             text=[f"{p:.0%}" for p in probs], textposition="auto",
                             marker=dict(color=RUNS[row - 1]), showlegend=False,
                             insidetextfont=dict(color=palette.ink_on(RUNS[row - 1]))),
                      row=row, col=1)
        fig.update_yaxes(range=[0, 1], tickformat=".0%", title="P(word) when chosen", row=row,
                         col=1)
    fig.update_layout(title=dict(text=title, font=dict(size=14)), height=500,
                      margin=dict(l=0, r=0, t=80, b=0))
    return fig


def similarity_bars(names: list[str], values, title: str) -> go.Figure:
    """Cosine similarity per final token (before vs after), 1 meaning unchanged."""
    fig = go.Figure(go.Bar(y=names, x=[float(v) for v in values], orientation="h",
                           text=[f"{v:.3f}" for v in values], textposition="auto",
                           **_solid(palette.BLUE)))
    fig.update_layout(title=dict(text=title, font=dict(size=14)), height=110 + 40 * len(names),
                      margin=dict(l=0, r=0, t=30, b=0), yaxis=dict(autorange="reversed"),
                      xaxis=dict(title="cosine similarity, before vs after (1 = unchanged)",
                                 range=[min(0.0, min(values)), 1.0]))
    return fig
