"""Step: where the answer is formed. Activation patching (vit_core.explain.patching) between the
image and a corrupted copy the student chooses: run the copy again with one token's input to
one block (or one head's output) taken from the clean run, and see how much of the answer's
score comes back. Drawn per block on the patch grid, and per head."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from ui import keys
from ui.drawing.describe import span, two
from ui.drawing.figures.parts import panels
from ui.drawing.figures.tiles import tiles
from ui.drawing.numbers import pct
from ui.lesson import deck
from ui.lesson.deck import Number, Question
from ui.selection import session
from ui.stages.why import compute, jobs, patch_compute
from ui.stages.why.keys import WHY_PATCH
from vit_core.explain import why_patch_facts as wf
from vit_core.explain.extremes import extremes

VALUE = "share of the score difference restored (1: all, red)"
TOP = "#00a651"  # the outline of the cell that restores most
TILES, HEADS = (0.0, 0.6), (0.7, 0.92)  # the panels' shares of the width
NAMED_UP_TO = 6  # blocks: each tile named above it (more: each row of tiles names its blocks)
KIND_NAMES = {"object": "the object's patches greyed", "grey": "the whole image greyed",
              "blur": "the whole image blurred", "other": "another sample scene"}


def title(config) -> str:
    return "Where the answer is formed"


def chosen_kind(x: deck.View) -> str:
    offered = patch_compute.kinds(x.inp, x.c)
    kind = st.session_state.get(keys.WHY_PATCH_KIND)
    return kind if kind in offered else offered[0]


def facts(x: deck.View) -> dict:
    mask = session.chosen_mask()
    target = compute.target(x.inp, x.name, mask)
    kind = chosen_kind(x)
    p = jobs.ready("patching", x.inp, x.name, mask, target, kind)
    c = x.c
    out = {"target": target.label, "kind": kind, "grid": c.grid, "n_prefix": c.num_prefix_tokens,
           "exact": p.exact, "error": p.error, "changed": len(p.changed), "depth": c.depth,
           "score": "log-probability" if target.is_word else "logit",
           "sites": c.depth * c.num_image_tokens, "budget": patch_compute.EXACT_SITES,
           "prefix_names": tuple(f"[{n}]" for n in c.prefix_names),
           "reads_cls": bool(c.num_classes) and c.global_pool == "token" and not c.has_text,
           "other": (patch_compute.other_input(x.inp).label.removeprefix("sample: ")
                     if kind == "other" else None)}
    if p.error:
        return out
    tokens, heads = p.tokens.grid.double().numpy(), p.heads.grid.double().numpy()
    tf, hf = wf.token_facts(tokens, c.num_prefix_tokens, p.tokens.columns), wf.head_facts(heads)
    return {**out, "tokens": tokens, "heads": heads, "top": tf.top, "carrier_from":
            tf.carrier_from, "prefix": tf.prefix, "head_top": hf.top, "counting": hf.counting,
            "total": hf.total, "limit": wf.colour_limit(tokens, heads), "clean": p.tokens.clean,
            "corrupt": p.tokens.corrupt, "agree": p.agree_tokens, "agree_heads": p.agree_heads}


def token_name(t: int, f: dict) -> str:
    g, n = f["grid"], f["n_prefix"]
    if t < n:
        return f["prefix_names"][t]
    i = t - n
    return f"patch {i} (row {i // g}, column {i % g})"


def _block_tiles(f: dict) -> tuple[list, list, list]:
    """Each block's restored shares as a tile: a row of prefix tokens above the patch grid."""
    g, n = f["grid"], f["n_prefix"]
    top = 1 if n else 0
    grids, hover, outlines = [], [], []
    for layer, row in enumerate(f["tokens"]):
        t = np.full((g + top, g), np.nan)
        t[:top, :n] = row[:n]
        t[top:] = row[n:].reshape(g, g)
        names = np.full(t.shape, "", dtype=object)
        for pos in range(len(row)):
            r, cc = (0, pos) if pos < n else (top + (pos - n) // g, (pos - n) % g)
            names[r, cc] = f"block {layer}, {token_name(pos, f)}"
        marks = [(0, k, "black") for k in range(n)]
        if f["top"].block == layer:
            pos = f["top"].column
            marks.append((0, pos, TOP) if pos < n else (top + (pos - n) // g, (pos - n) % g,
                                                          TOP))
        grids.append(t)
        hover.append(names)
        outlines.append(marks)
    return grids, hover, outlines


def _tile_axis(f: dict) -> str:
    if not f["n_prefix"]:
        return "each tile: the patch grid"
    return f"top row, outlined: {' '.join(f['prefix_names'])}; below: the patch grid"


def _heads_figure(f: dict) -> go.Figure:
    L, H = f["heads"].shape
    trace = go.Heatmap(z=f["heads"], colorscale="RdBu_r", zmin=-f["limit"], zmax=f["limit"],
                       hovertemplate="block %{y}, head %{x}<br>" + VALUE +
                       " %{z:.3f}<extra></extra>")
    return go.Figure(data=[trace], layout=dict(
        xaxis=dict(title=dict(text="head"), dtick=1, constrain="domain"),
        yaxis=dict(title=dict(text="block"), dtick=1, autorange="reversed")))


def corruption(x: deck.View) -> None:
    """The step's control, above its figure (and above the progress bar while it waits)."""
    offered = patch_compute.kinds(x.inp, x.c)
    st.radio("Patch against", offered, format_func=lambda k: f"against {KIND_NAMES[k]}",
             key=keys.WHY_PATCH_KIND, index=offered.index(chosen_kind(x)), horizontal=True,
             label_visibility="collapsed")  # each option says "against …": the slide's room


def figure(x: deck.View, f: dict) -> None:
    if f["error"]:
        st.warning(f["error"])
        return
    grids, hover, outlines = _block_tiles(f)
    L = f["depth"]
    cols = -(-L // 2)
    # two rows of tiles; up to NAMED_UP_TO blocks each tile is named above it, beyond that
    # (small tiles: a name would cover the tile above) each row says its blocks
    named = L <= NAMED_UP_TO
    rows = None if named else [f"blocks {a}–{min(a + cols, L) - 1}" for a in range(0, L, cols)]
    left = tiles(grids, [f"block {i}" if named else "" for i in range(L)], cols, title="",
                 value_name=VALUE, zmin=-f["limit"], zmax=f["limit"], hover=hover,
                 outlines=outlines, x_name=_tile_axis(f), row_names=rows, gap=2 if named else 1)
    shown = "exact patching" if f["exact"] else "attribution patching"
    fig = panels([left, _heads_figure(f)], ["one token at a time, each block",
                                             "one head at a time"], coloraxis=True,
                 spacing=0.1)
    for i, (axis, dom) in enumerate((("xaxis", TILES), ("xaxis2", HEADS))):  # the tiles wider
        fig.layout[axis].domain = dom
        fig.layout.annotations[[a.name for a in fig.layout.annotations].index(
            f"panel:{i}")].x = sum(dom) / 2
    fig.update_layout(title=f"“{f['target']}” against {KIND_NAMES[f['kind']]}: {shown}",
                      coloraxis=dict(colorscale="RdBu_r", cmin=-f["limit"], cmax=f["limit"],
                                     colorbar=dict(title=dict(text=VALUE, side="right"))),
                      height=380, plot_bgcolor="white")
    deck.chart(fig, key=WHY_PATCH)


def _how(f: dict) -> str:
    if not f["exact"]:
        return (f"Shown: attribution patching, one forward and one backward pass (a linear "
                f"estimate; this model has {f['sites']} block-token sites, more than the "
                f"{f['budget']} patched exactly here).")
    a = f["agree"]
    return (f"Shown: exact patching, one corrupted pass per cell. Attribution patching's "
            f"estimate agrees with it at Pearson r = {a.pearson:.2f} over the cells, and "
            f"{round(a.top_overlap * a.k)} of the exact grid's {a.k} largest cells are among "
            f"its {a.k}.")


def _corruption(f: dict) -> str:
    if f["kind"] == "object":
        return f"Greying the object's {f['changed']} patches"
    return {"grey": "Greying the whole image", "blur": "Blurring the whole image",
            "other": f"Putting another sample scene (“{f['other']}”) in its place"}[f["kind"]]


def _cls(f: dict) -> str:
    """[CLS], the token a classifier's head reads: from which block on it carries the answer."""
    if f["carrier_from"] is not None:
        return (f"[CLS] alone restores at least {pct(wf.CARRIES)} from block "
                f"{f['carrier_from']} to the last: by then the answer has been gathered into "
                f"the token the head reads. ")
    return (f"[CLS] alone restores {pct(f['prefix'][-1, 0])} in the last block, under "
            f"{pct(wf.CARRIES)}: patched alone there, it does not bring most of the answer "
            f"back. ")


def words(x: deck.View, f: dict) -> str:
    if f["error"]:
        return f"Nothing to patch here: {f['error']}"
    top = f["top"]
    said = (f"{_corruption(f)} moves the {f['score']} of “{f['target']}” from "
            f"{f['clean']:.2f} to {f['corrupt']:.2f}. ")
    if abs(f["clean"] - f["corrupt"]) < wf.SMALL_CHANGE:
        said += (f"That difference is under {wf.SMALL_CHANGE:g}: the shares below divide by a "
                 f"small number, so read them with care. ")
    said += (f"Taking one token's input to a block from the clean image restores at most "
             f"{pct(top.share)} of it: {token_name(top.column, f)} in block {top.block}. ")
    if f["reads_cls"]:
        said += _cls(f)
    h = f["head_top"]
    said += (f"{f['counting']} of the {f['total']} heads restore at least "
             f"{pct(wf.HEAD_COUNTS)} alone; the most, head {h.column} of block {h.block}, "
             f"{pct(h.share)}. ")
    return said + _how(f)


def describe(x: deck.View, f: dict) -> str | None:
    if f["error"]:
        return None
    top, g, h = f["top"], f["grid"], f["head_top"]
    above = " and ".join(f["prefix_names"]) or "no prefix token"
    tokens, heads = extremes(f["tokens"]), extremes(f["heads"])
    return (f"Left: {f['depth']} tiles, one per block, each the {g} by {g} patch grid with "
            f"{above} above it, coloured by the share of the {f['score']} difference "
            f"restored when that token's input to the block is taken from the clean image; "
            f"both panels on one colour scale from {-f['limit']:.2f} (blue) through 0 (white) "
            f"to {f['limit']:.2f} (red). The shares run {span(tokens, two)}, the largest in "
            f"block {top.block} at {token_name(top.column, f)} (outlined green). Right: the "
            f"same share per head, blocks down and heads across, {span(heads, two)}, the "
            f"largest at head {h.column} of block {h.block}.")


def notes(x: deck.View, f: dict) -> str:
    return ("Restored share r = (s_patched − s_corrupt) / (s_clean − s_corrupt): 0 means the "
            "patched activation carries none of what the corruption took away, 1 all of it. "
            "Patching every token of a block's input is the clean run from there on (r = 1), "
            "so a block's shares across its tokens say where, in that block, the answer's "
            "information sits. Attribution patching (Nanda 2023) replaces each corrupted pass "
            "by a gradient times the activation's change: fast, linear, wrong where a change "
            "is large and the model saturates.")


def question(x: deck.View, f: dict) -> Question | None:
    if f["error"]:
        return None
    top = f["top"]
    return Question("Patching one token at a time: in which block does one token restore the "
                    "most of the answer?",
                    f"Block {top.block}: {token_name(top.column, f)} "
                    f"restores {pct(top.share)}.",
                    Number(top.block, prompt="The block (its number)"))
