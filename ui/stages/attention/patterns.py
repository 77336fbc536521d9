"""The attention stage's first steps: the scores and the softmax, where one patch looks, and
every head's CLS (and DIST) map; with the questions on those maps."""

from __future__ import annotations

import streamlit as st

from ui import keys
from ui.drawing import describe, figures, show
from ui.drawing.equation import latex
from ui.drawing.numbers import pct
from ui.lesson import deck
from ui.lesson.deck import PatchPick, Question, Step
from ui.serving import tour
from ui.stages.attention.context import VIEWS, Ctx, pattern
from ui.stages.attention.keys import ATTN_MATRIX
from vit_core.explain.attention import (
    PatchLook,
    PrefixMaps,
    head_agreement,
    patch_look,
    prefix_maps,
    top_cell,
)
from vit_core.explain.extremes import extremes

SLIDE_MAPS = 6  # a slide shows at most this many heads' maps, in one row


# ---------------------------------------------------------------- scores and the softmax
def _scores_facts(x: Ctx) -> dict:
    """The matrix the step draws: the pattern, or the scores (scaled or raw), as the radio
    chose (st.radio keeps its choice in the session state before the figure draws it)."""
    dk = x.c.head_dim
    view = st.session_state.get(keys.ATTN_VIEW, VIEWS[-1])
    scores = x.tr[f"blocks.{x.layer}.attn.scores"][x.head]
    if view.startswith("raw"):
        z, title, scale = scores * dk**0.5, "raw scores q·k", "RdBu_r"
    elif view.startswith("scaled"):
        z, title, scale = scores, "scaled scores q·k/√d_k", "RdBu_r"
    else:
        z, title, scale = pattern(x), "attention pattern A (rows sum to 1)", "Viridis"
    return {"z": z.numpy(), "title": title, "scale": scale, "ext": extremes(z),
            "value": "attention weight" if scale == "Viridis" else "score"}


def _scores_figure(x: Ctx, f: dict) -> None:
    c, S, dk = x.c, x.tr["embed"].shape[0], x.c.head_dim
    pre, g = c.num_prefix_tokens, c.grid
    latex(rf"A = \mathrm{{softmax}}\!\left(\frac{{QK^\top}}{{\sqrt{{{dk}}}}} + M\right)\in"
          rf"\mathbb{{R}}^{{{S}\times{S}}},\qquad \mathrm{{head}} = AV\in"
          rf"\mathbb{{R}}^{{{S}\times{dk}}}")
    st.radio("Show", VIEWS, index=len(VIEWS) - 1, horizontal=True, key=keys.ATTN_VIEW,
             label_visibility="collapsed" if x.presenting else "visible")  # room: matrix
    ticks, tick_text = figures.prefix_ticks(x.labels[:S], g, c.prefix_names)
    deck.chart(figures.matrix_heatmap(
        f["z"], f"Layer {x.layer}, head {x.head}: {f['title']}, {S}×{S}",
        row_labels=x.labels[:S], col_labels=x.labels[:S], highlight_row=x.patch + pre,
        colorscale=f["scale"], zmid=None if f["scale"] == "Viridis" else 0.0, height=560,
        x_title="key token (what is looked at)", y_title="query token (who looks)",
        value_name=f["value"], row_ticks=ticks, col_ticks=ticks, tick_text=tick_text,
        boundaries=tuple(range(1, pre + 1))), key=ATTN_MATRIX)


def _scores_alt(x: Ctx, f: dict) -> str:
    S = f["z"].shape[0]
    return describe.heatmap(f"layer {x.layer}, head {x.head}: the {f['title']}, {S}×{S}, the row "
                            f"of patch {x.patch} outlined", rows="query tokens (who looks)",
                            cols="key tokens (what is looked at)", value=f["value"],
                            ext=f["ext"], row_names=x.labels, col_names=x.labels)


def _scores_words(x: Ctx, _) -> str:
    c, p, pre = x.c, x.patch, x.c.num_prefix_tokens
    if pre:
        first = " and ".join(f"{n} is token {i}" for i, n in enumerate(c.prefix_names))
        numbering = (f"{first}, so patch {p} is token {p + pre}; white lines mark where "
                     + ("DIST and " if c.dist_token else "") + "the patches start.")
    else:
        numbering = f"This model has no CLS token: patch {p} is token {p}."
    softmax = st.session_state.get(keys.ATTN_VIEW, VIEWS[-1]) == VIEWS[-1]
    masked = "" if bool(x.allowed.all()) else (
        f" Under the {x.tr.mask_kind} mask, blocked keys get weight 0." if softmax else
        f" Under the {x.tr.mask_kind} mask, blocked keys score −∞ and are left blank.")
    return (f"Rows are queries, columns are keys; pN is patch N. {numbering} The selected "
            f"patch's row is outlined.{masked}")


# ---------------------------------------------------------------- where a patch looks
def _where_facts(x: Ctx) -> PatchLook:
    return patch_look(pattern(x), x.patch, x.c.grid, x.c.num_prefix_tokens)


def _where_figure(x: Ctx, f: PatchLook) -> None:
    p = x.patch
    left, right = st.columns(2)
    on_prefix = ", ".join(f"{pct(s)} on {n}" for s, n in zip(f.on_prefix, x.c.prefix_names,
                                                                  strict=True))
    lo = 0.0  # one scale from 0: the two maps are compared, and no weight looks larger than it is
    hi = float(max(f.row.max(), f.col.max()))
    parts = _where_parts(x, f)
    for where, m, title, what, alt in (
            (left, f.row, f"Where patch {p} looks",
             f"patch {p}'s attention over the patches" + (f" (and {on_prefix})" if on_prefix
                                                          else ""), parts[0]),
            (right, f.col, f"Who looks at patch {p}", f"how much each patch attends to patch {p}",
             parts[1])):
        with where:
            st.markdown(f"**{title}** · layer {x.layer}, head {x.head}")
            norm = ((m - lo) / max(hi - lo, 1e-12)).numpy()
            show.image(figures.with_scale(figures.overlay(x.prep.crop, norm, normalise=False),
                                          lo, hi, "attention weight from 0, both maps"),
                       what, "attention-" + title.split()[0].lower(), alt=alt)


def _where_parts(x: Ctx, f: PatchLook) -> list[str]:
    """Each picture's text alternative: the left one's, the right one's."""
    p, g = x.patch, x.c.grid
    return [describe.patch_map(f"{side}, your image under {what}", "attention weight",
                               extremes(m), g, fmt=pct)
            for side, what, m in (("Left", f"where patch {p} looks: its attention", f.row),
                                  ("Right", f"who looks at patch {p}: each patch's attention on "
                                            f"it", f.col))]


def _where_alt(x: Ctx, f: PatchLook) -> str:
    hi = float(max(f.row.max(), f.col.max()))
    return (f"Two pictures, layer {x.layer}, head {x.head}, on one colour scale from 0 to "
            f"{pct(hi)}. " + " ".join(_where_parts(x, f)))


def _where_words(x: Ctx, f: PatchLook) -> str:
    p, g = x.patch, x.c.grid
    if g * g == 1:
        return "The image is a single patch: all of its patch attention is on itself."
    looks = (f"itself ({pct(f.top_share)})" if f.top == p else
             f"patch {f.top}, {f.top_steps} step{'s' if f.top_steps != 1 else ''} away "
             f"({pct(f.top_share)})")
    return (f"In layer {x.layer}, head {x.head}, patch {p} looks most at {looks}; it puts "
            f"{pct(f.own)} on its own patch and {pct(f.near)} on it and its neighbours "
            f"(an even spread over the {g * g} patches would give {pct(1 / (g * g))} each).")


# ---------------------------------------------------------------- every head's CLS map
def _heads_facts(x: Ctx) -> PrefixMaps:
    return prefix_maps(x.summary["prefix_rows"], x.layer, x.c.grid, x.allowed)


def _shown_heads(x: Ctx) -> range:
    """The heads whose maps are drawn: on a slide one row as wide as the slide, of at most
    SLIDE_MAPS heads (the six around the Head slider's); on a page (a phone too) every head."""
    H = x.c.num_heads
    first = (x.head // SLIDE_MAPS) * SLIDE_MAPS if x.presenting and H > SLIDE_MAPS else 0
    return range(first, min(H, first + SLIDE_MAPS)) if x.presenting else range(H)


def _heads_figure(x: Ctx, f: PrefixMaps) -> None:
    c = x.c
    g, H = c.grid, c.num_heads
    heads = _shown_heads(x)
    first = heads[0]
    # on a page two maps a row: each large enough for its label
    cols = len(heads) if x.presenting else min(H, 2)
    cell = min(280, 1180 // cols - 4) if x.presenting else 200
    some = "" if len(heads) == H else f"heads {heads[0]}–{heads[-1]} of {H} (the Head slider's "
    for i, tok in enumerate(c.prefix_names):
        top = f.top[i]
        maps = [figures.overlay(x.prep.crop, f.rows[i][h].reshape(g, g).numpy()
                                / max(top, 1e-12), normalise=False) for h in heads]
        tiled = figures.tile(maps, cols=cols, cell=cell, framed=x.head - first, labels=[
            f"head {h}: {pct(f.ranges[i][h][0])} to {pct(f.ranges[i][h][1])}"
            for h in heads])
        show.image(figures.with_scale(tiled, 0.0, top, f"{tok}'s attention weight on a patch, "
                                      "one scale for every head"),
                   f"layer {x.layer}: " + (f"{some}six), each one's" if some else "every head's")
                   + f" {tok} row over the patches; head {x.head} (the Head slider's) framed",
                   f"{tok.lower()}-heads", alt=_heads_parts(x, f)[i])


def _heads_parts(x: Ctx, f: PrefixMaps) -> list[str]:
    """Each prefix token's picture's text alternative (the heads drawn, each one's brightest
    patch)."""
    g, heads, said = x.c.grid, _shown_heads(x), []
    n = f"{len(heads)} picture{'s' if len(heads) > 1 else ''} of your image"
    for i, tok in enumerate(x.c.prefix_names):
        if not f.sees_patches[i]:
            said.append(f"{n}, one per head of layer {x.layer}: under the {x.tr.mask_kind} mask "
                        f"the {tok} token sees no patch, so no map colours the image (0 on every "
                        f"patch).")
            continue
        a = head_agreement(f.rows[i])
        each = "; ".join(f"head {h}: patch {a.favourites[h]} ({a.favourites[h] // g},"
                         f"{a.favourites[h] % g}) {pct(a.favourite_shares[h])}" for h in heads)
        said.append(f"{n}, one per head of layer {x.layer}, each under that head's {tok} "
                    f"attention over the {g}×{g} patches, on one colour scale from 0 to "
                    f"{pct(f.top[i], 1)}, head {x.head} framed. The brightest patch of each: "
                    f"{each}.")
    return said


def _heads_alt(x: Ctx, f: PrefixMaps) -> str:
    return " ".join(_heads_parts(x, f))


def _heads_words(x: Ctx, f: PrefixMaps) -> str:
    prefix = x.c.prefix_names
    said = []
    for i, tok in enumerate(prefix):
        on_prefix = pct(f.on_prefix[i])
        if f.sees_patches[i]:
            n = f.n_keys[i]
            said.append(f"Bright = where the {tok} token reads from; every map has the same "
                        f"scale, from 0 to {pct(f.top[i], 1)}, the largest weight any head gives "
                        f"a patch. Averaged over the heads, half of {tok}'s "
                        f"attention falls on {f.half_keys[i]} of its {n} "
                        f"key{'' if n == 1 else 's'}; {on_prefix} on {' and '.join(prefix)}.")
        else:  # e.g. the causal mask: CLS (and DIST) come before every patch
            seen = " and ".join(n for j, n in enumerate(prefix) if x.allowed[i, j])
            said.append(f"Under the {x.tr.mask_kind} mask the {tok} token sees no patch, only "
                        f"{seen}, so no map colours the image: 0% of its attention on each "
                        f"patch, {on_prefix} on {seen}.")
    return " ".join(said)


def _heads_title(c) -> str:
    return f"Every head's {' and '.join(c.prefix_names)} attention"


# ---------------------------------------------------------------- the questions on the maps
def _where_question(x: Ctx, f: PatchLook) -> Question:
    """Where patch p looks most: the brightest patch of the left map."""
    p, (top, share) = x.patch, top_cell(f.row)
    return Question(f"In layer {x.layer}, head {x.head}, which patch does patch {p} look at most?",
                    f"Patch {top} ({pct(share)} of patch {p}'s attention), "
                    "the brightest cell of the left map.", PatchPick((top,)))


def _brightest_question(x: Ctx, f: PrefixMaps) -> Question | None:
    """The brightest cell of the heads' maps of the first prefix token (one scale for all), and
    whether the heads agree on their brightest patch."""
    tok, g = x.c.prefix_names[0], x.c.grid
    if not f.sees_patches[0]:
        return None  # no map colours the image: nothing to click
    a, H = head_agreement(f.rows[0]), len(f.rows[0])
    agree = ("" if H == 1 else " All the heads share it." if a.shared == H else
             f" {a.shared} of the {H} heads share a brightest patch." if a.shared > 1 else
             " No two heads share a brightest patch.")
    return Question(f"In layer {x.layer}, which patch does {tok} look at most, in any head? (the "
                    f"brightest cell of {'the map' if H == 1 else f'all {H} maps'})",
                    f"Patch {a.patches[0]} ({a.patches[0] // g},{a.patches[0] % g}): head "
                    f"{a.head} puts {pct(a.top)} of {tok}'s attention on it, the top of the "
                    "maps' shared scale. Each head's brightest patch: " + "; ".join(
                        f"head {k} → patch {p} ({pct(s)})" for k, (p, s) in
                        enumerate(zip(a.favourites, a.favourite_shares, strict=True)))
                    + "." + agree, PatchPick(a.patches))



def _has_prefix(c) -> bool:
    return c.num_prefix_tokens > 0


STEPS = (
    Step("pattern", "Scores and the softmax pattern", _scores_figure, facts=_scores_facts,
         words=_scores_words, describe=_scores_alt, controls=("layer", "head", "patch", "play"),
         reads=(tour.layer_block,)),
    Step("where", "Where a patch looks, and who looks at it", _where_figure,
         facts=_where_facts, words=_where_words, describe=_where_alt,
         controls=("layer", "head", "patch"),
         question=lambda x, f: None if _has_prefix(x.c) else _where_question(x, f),
         asks=("row",), reads=(tour.layer_block,)),
    Step("heads", _heads_title, _heads_figure, facts=_heads_facts, words=_heads_words,
         describe=_heads_alt,
         controls=("layer", "head", "play"), question=_brightest_question,
         asks=("rows", "sees_patches"),
         applies=_has_prefix,
         reads=(tour.layer_block, tour.attention_summary)),
)
