"""Step 6 of the Masks stage: windowed attention (Swin's local windows, shifted on alternate
blocks), what it saves and, for the bundled classifier, what it costs in top-1."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from ui import keys
from ui.drawing import figures, palette
from ui.drawing.numbers import pct
from ui.lesson import deck
from ui.lesson.deck import Number, Question
from ui.selection import models as picker
from ui.serving import state, tour
from ui.stages.common import window_sizes
from ui.stages.masks.keys import MASK_WINDOWS
from ui.stages.masks.view import Ctx, fed_words, same_for_every_image, side_by_side
from vit_core.explain.flops import si
from vit_core.explain.generation import tokenizer_for
from vit_core.explain.mask_facts import WindowLayout, fewer_pairs, points_lost, reach, window_layout
from vit_core.explain.windows import window_cost
from vit_core.io.ref import ModelRef

# Paul Tol's "light" scheme (made for cells with labels in them): every window's number is
# printed in black on it, at 8:1 or more; neighbouring windows never share a colour (3 x 3 cycle)
WINDOW_COLOURS = ("#77AADD", "#EE8866", "#EEDD88", "#FFAABB", "#99DDFF", "#44BB99", "#BBCC33",
                  "#AAAA00", "#DDDDDD")


def has_windows(c) -> bool:
    return bool(window_sizes(c))


@dataclass(frozen=True)
class Windows:
    """The window mask of the chosen model at the chosen size: its blocks 0 (plain) and 1
    (shifted), what it keeps, and (for the bundled classifier) what it costs in top-1."""

    size: int
    labels: list[str]  # a name per token (the captioner's sequence with the typed caption)
    n_text: int
    allowed: np.ndarray  # [2, S, S] bool: blocks 0 and 1 under "window:M:shifted"
    bands: np.ndarray  # [2, g, g] int: the window of each patch in blocks 0 and 1
    cost: Any  # vit_core.explain.windows.WindowCost of "window:M:shifted"
    centre: int  # the patch the question asks about (the middle of the grid)
    centre_keys: int  # keys it may read in block 0
    centre_window: tuple[int, int]  # its window's rows x columns in block 0
    top1: Any  # ui.serving.state.WindowTop1, or None when nothing is measured for this model

    @property
    def measured(self) -> bool:
        return self.top1 is not None


def _window_text(x: Ctx) -> tuple[list[int], list[str]]:
    """The chosen model's text ids for the typed caption ([] for a model without text)."""
    if not x.c.has_text:
        return [], []
    tok = tokenizer_for(x.model)
    enc = tok.encode(x.caption, max_len=x.c.max_text_len)
    return enc.ids, fed_words(tok, enc)


def windows_facts(x: Ctx) -> Windows:
    c, size = x.c, int(st.session_state[keys.MASK_WINDOW])
    ids, words = _window_text(x)
    lay: WindowLayout = window_layout(c, size, len(ids))
    top1 = None
    if x.name == tour.WINDOW_CLASSIFIER and x.model.info.trained:
        with st.spinner(f"Measuring the classifier's top-1 on held-out scenes with {size}×{size} "
                        f"windows (once per server)…"):
            top1 = state.window_top1(x.name, size)
    r = lay.centre_reach
    return Windows(size, figures.token_labels(c, words), len(ids), lay.allowed, lay.bands,
                   window_cost(c, size, True, len(ids)), lay.centre, r.keys, (r.rows, r.cols),
                   top1)


def _grid_figure(bands: np.ndarray, title: str, centre: int):
    """The patch grid coloured by window (each window its colour), the centre patch outlined.
    One constructor call (plotly re-walks the figure on every update_* call)."""
    g = bands.shape[0]
    grid = bands.tolist()
    order = {b: k for k, b in enumerate(dict.fromkeys(b for row in grid for b in row))}
    rows = {b: k for k, b in enumerate(sorted({b // (g + 1) for b in order}))}
    cols = {b: k for k, b in enumerate(sorted({b % (g + 1) for b in order}))}
    tone = np.array([[rows[b // (g + 1)] % 3 * 3 + cols[b % (g + 1)] % 3 for b in row]
                     for row in grid])
    text = [[str(order[b] + 1) for b in row] for row in grid]
    k = len(WINDOW_COLOURS)
    scale = [[v / (k - 1), colour] for v, colour in enumerate(WINDOW_COLOURS)]  # z = v: colour v
    r, col = divmod(centre, g)
    # both axes span the grid alone and give up the rest of their box: square cells, no empty
    # columns either side when the grid sits in a wide subplot
    return go.Figure(data=[dict(
        type="heatmap", z=tone, colorscale=scale, zmin=0, zmax=k - 1, showscale=False, text=text,
        texttemplate="%{text}", textfont=dict(size=10, color="#000000"), xgap=1, ygap=1,
        hovertemplate="patch row %{y}, column %{x}: window %{text}<extra></extra>")],
        layout=dict(
            shapes=palette.outlined(dict(type="rect", x0=col - 0.5, x1=col + 0.5, y0=r - 0.5,
                                         y1=r + 0.5), width=3),  # white on a black edge
            title=dict(text=title, font=dict(size=14)), margin=dict(l=0, r=0, t=30, b=0),
            xaxis=dict(title=dict(text="patch column", font=dict(size=12)), dtick=1,
                       range=[-0.5, g - 0.5], constrain="domain"),
            yaxis=dict(title=dict(text="patch row", font=dict(size=12)), dtick=1,
                       range=[g - 0.5, -0.5], scaleanchor="x", constrain="domain")))


def _mark_prefix(fig, c) -> None:
    """Dotted white lines after the prefix tokens' row and column, so CLS stands apart."""
    pre, n = c.num_prefix_tokens, c.num_image_tokens
    if not pre:
        return
    figures.add_shapes(fig, [  # white on a black edge: seen on the light and the dark cells
        shape for kw in (dict(x0=pre - 0.5, x1=pre - 0.5, y0=-0.5, y1=n - 0.5),
                         dict(y0=pre - 0.5, y1=pre - 0.5, x0=-0.5, x1=n - 0.5))
        for shape in palette.outlined(dict(type="line", line=dict(dash="dot"), **kw), width=1)])


def _windows_chart(c, f: Windows):
    """The windows of blocks 0 and 1 on the grid, each beside the mask it makes."""
    M = f.size
    ticks = figures.spaced_ticks(f.labels, c.grid, 230)
    shift = M // 2
    masks = []
    for b in (0, 1):
        fig = figures.mask_figure(f.allowed[b], c.num_image_tokens, "", labels=f.labels,
                                  ticks=ticks)
        _mark_prefix(fig, c)
        masks.append(fig)
    grids = [_grid_figure(f.bands[0], "", f.centre), _grid_figure(f.bands[1], "", f.centre)]
    moved = f"moved by {shift}" if shift else "a 1×1 window moves by 0: the same"
    titles = [f"block 0: {M}×{M} windows", "block 0: its mask (query → key)",
              f"block 1: windows {moved}", "block 1: its mask"]
    fig = side_by_side(
        [grids[0], masks[0], grids[1], masks[1]], titles,
        "Windows on the patch grid (number = window; white square: the middle patch) and "
        "the masks they make (light: may look; dark: −∞; CLS is the first row and column)",
        370, spacing=0.06)
    fig.update_layout(margin=dict(l=30, b=30))  # room for the first grid's row numbers
    return fig


def windows_figure(x: Ctx, f: Windows) -> None:
    c, M = x.c, f.size
    st.select_slider("Window side M (patches)", window_sizes(c), key=keys.MASK_WINDOW,
                     help=f"Windows of M×M patches on this model's {c.grid}×{c.grid} grid; "
                          f"block 1 moves them by M // 2 patches.")
    # the windows, and so the masks, follow from the model's shape, M and the caption's length
    key = (repr(c), M, f.n_text, tuple(f.labels))
    deck.chart(same_for_every_image("windows", key, lambda: _windows_chart(c, f)),
               key=MASK_WINDOWS)


def windows_alt(x: Ctx, f: Windows) -> str:
    c, M = x.c, f.size
    n = [len(np.unique(b)) for b in f.bands]  # windows in blocks 0 and 1
    kept = [int(a.sum()) for a in f.allowed]  # pairs each block's mask lets through
    S = f.allowed.shape[1]
    return (f"Four panels. Block 0: the {c.grid}×{c.grid} patch grid coloured and numbered by "
            f"window, {n[0]} windows of up to {M}×{M} patches, the middle patch {f.centre} "
            f"outlined; beside it the {S}×{S} mask they make (light: may look, dark: −∞), "
            f"{kept[0]:,} of {S * S:,} pairs let through. Block 1: the windows moved "
            f"by {M // 2}, {n[1]} windows; its mask lets {kept[1]:,} pairs through.")


def _points(n: int) -> str:
    """A fall in top-1 said in percentage points: '70 points', or 'nothing' when it rose."""
    return "nothing" if n <= 0 else f"{n} point{'' if n == 1 else 's'}"


def _top1_words(x: Ctx, f: Windows) -> str:
    """What the windows cost the bundled classifier in top-1, or why it is not measured."""
    M = f.size
    if f.measured:
        t, card = f.top1, picker.card_top1(x.model)
        return (f"With {M}×{M} windows the classifier's top-1 on {t.n} held-out scenes falls "
                f"from {pct(t.full)} to {pct(t.plain)}"
                + (f" ({pct(t.shifted)} with the windows shifted on alternate blocks)"
                   if t.shifted is not None else "")
                + f": it was trained with full attention, and these windows cost it "
                f"{_points(points_lost(t.full, t.plain))} on the same scenes"
                + (f" (full attention on another set: {card})." if card else "."))
    # another model, or the classifier at another size or training step
    own = ModelRef.parse(x.name).name == tour.WINDOW_CLASSIFIER
    why = ("the app measures it at the model's own size and final weights only: choose "
           "those to see it" if own else "that needs labelled held-out images of its own "
           f"task; the app measures it for {tour.WINDOW_CLASSIFIER} on its scenes")
    return (f"The pairs are exact for {picker.plain_label(x.name)}; its accuracy under "
            f"windows is not measured here ({why}).")


def windows_words(x: Ctx, f: Windows) -> str:
    c, M, w = x.c, f.size, f.cost
    pre = " and ".join(c.prefix_names)
    sees = f"its window's patches and {pre}" if pre else "its window's patches"
    said = (f"Windows of {M}×{M} patches: in block 0 a patch reads only {sees}. The mask keeps "
            f"{w.pairs[0]:,} of the {w.full_pairs:,} (query, key) pairs per head, "
            f"{fewer_pairs(w.full_pairs, w.pairs[0]):.1f}× fewer"
            + (f" (block 1, shifted: {w.pairs[1]:,})" if c.depth > 1 and w.pairs[1] != w.pairs[0]
               else "") + ".")
    return said + " " + _top1_words(x, f)


def windows_notes(x: Ctx, f: Windows) -> str:
    c, M = x.c, f.size
    said = [f"Swin's windowed attention: a patch reads the M×M patches of its window, so a block "
            f"weighs about N·M² pairs instead of N² (O(N·M) in the notes, M counting a window's "
            f"patches). On odd blocks (shifted) the windows move by M // 2 = {M // 2} patches; at "
            f"the border they are clipped, not wrapped around (Swin wraps and masks, which "
            f"lets the same patches meet). CLS sees every patch and every patch sees CLS: the "
            f"class head reads CLS alone, and CLS is also the one road between windows that "
            f"never move."]
    if f.n_text:
        said.append(f"The {f.n_text} text tokens keep this model's own {c.default_mask} mask: only "
                    f"the image block changes.")
    said.append(f"This app still computes all S² scores and adds −∞ to the blocked ones, so its "
                f"pass costs the same; a windowed kernel would spend {si(f.cost.macs)} "
                f"multiply-adds on Q Kᵀ and A V instead of {si(f.cost.full_macs)}.")
    if f.measured and f.top1.shifted is not None:
        said.append(f"Held-out scenes: seed block {f.top1.seed} of the scene world, never seen in "
                    f"training; the same {f.top1.n} scenes for every mask.")
    return " ".join(said)


def windows_question(x: Ctx, f: Windows) -> Question:
    c = x.c
    r, col = divmod(f.centre, c.grid)
    # read off what the figure draws: block 0's window map and its row of the mask
    seen = reach(f.allowed[0], f.bands[0], f.centre, c.num_prefix_tokens)
    clipped = ", clipped at the border" if seen.inside < f.size**2 else ""
    extra = (f" plus {' and '.join(c.prefix_names)}, which every patch sees"
             if c.num_prefix_tokens else "")
    return Question(
        f"With {f.size}×{f.size} windows, how many keys may patch {f.centre} (row {r}, column "
        f"{col}, the white square) read in block 0, itself included?",
        f"{seen.keys}: the {seen.inside} patches of its window (a {seen.rows}×{seen.cols} "
        f"window{clipped}){extra}.", Number(seen.keys, 0, "keys"))
