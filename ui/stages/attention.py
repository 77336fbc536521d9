"""Stage 4: attention, head by head: scores, softmax, where a patch looks, every head's CLS map,
rollout, and how far and how evenly the heads look."""

from __future__ import annotations

import math
from dataclasses import dataclass

import streamlit as st
import torch

from vit_core.explain.attention import (
    allowed_from_mask,
    keys_holding,
    max_entropy,
    uniform_distance,
)

from .. import deck, figures, keys, session, show, state
from ..deck import Choice, PatchPick, Question, Step
from ..numbers import pct, span
from . import choices

LOCAL = 0.5  # a head "looks locally" when its mean distance is under this share of an even spread
NEAR_EVEN = 0.75  # ... and "looks everywhere" when even its nearest is at least this share
EVEN_ENTROPY = 0.9  # "almost evenly": the lowest entropy is at least this share of the maximum
STRONGEST = 5  # the rollout sentence sums the strongest patches, this many
VIEWS = choices.VIEWS  # what the matrix shows


@dataclass(frozen=True)
class Ctx:
    """The stage's view and what its steps share: token labels, the mask's visible keys and the
    per-head summaries (computed once per trace)."""

    v: deck.View
    labels: list[str]
    allowed: torch.Tensor  # [S, S] bool
    summary: dict

    def __getattr__(self, name):  # the view's fields (inp, tr, c, layer, …)
        return getattr(self.v, name)


def view() -> Ctx:
    v = deck.load(text_free_note=True)
    summary = state.attention_summary(v.inp, v.name, session.chosen_mask())
    return Ctx(v, figures.token_labels(v.c), allowed_from_mask(v.tr.mask), summary)


def _intro(x: Ctx) -> str:
    return ("Each head turns its scores into weights with a softmax over every row, so each "
            "query spreads exactly 1 unit of attention over the keys it may see. Its output for "
            "a token is the weighted average of the value vectors. Heads can learn different "
            "habits (looking at neighbours, at the whole image, at one token); the last steps "
            "measure what this model's heads do.")


def _pattern(x: Ctx) -> torch.Tensor:
    return x.tr[f"blocks.{x.layer}.attn.pattern"][x.head]


# ---------------------------------------------------------------- scores and the softmax
def _scores_figure(x: Ctx, _) -> None:
    c, S, dk = x.c, x.tr["embed"].shape[0], x.c.head_dim
    pre, g = c.num_prefix_tokens, c.grid
    st.latex(rf"A = \mathrm{{softmax}}\!\left(\frac{{QK^\top}}{{\sqrt{{{dk}}}}} + M\right)\in"
             rf"\mathbb{{R}}^{{{S}\times{S}}},\qquad \mathrm{{head}} = AV\in"
             rf"\mathbb{{R}}^{{{S}\times{dk}}}")
    view = st.radio("Show", VIEWS, index=len(VIEWS) - 1, horizontal=True, key=keys.ATTN_VIEW,
                    label_visibility="collapsed" if x.presenting else "visible")  # room: matrix
    scores = x.tr[f"blocks.{x.layer}.attn.scores"][x.head]
    if view.startswith("raw"):
        z, title, scale = scores * dk**0.5, "raw scores q·k", "RdBu_r"
    elif view.startswith("scaled"):
        z, title, scale = scores, "scaled scores q·k/√d_k", "RdBu_r"
    else:
        z, title, scale = _pattern(x), "attention pattern A (rows sum to 1)", "Viridis"
    ticks, tick_text = figures.prefix_ticks(x.labels[:S], g, c.prefix_names)
    deck.chart(figures.matrix_heatmap(
        z.numpy(), f"Layer {x.layer}, head {x.head}: {title}, {S}×{S}", row_labels=x.labels[:S],
        col_labels=x.labels[:S], highlight_row=x.patch + pre, colorscale=scale,
        zmid=None if scale == "Viridis" else 0.0, height=560,
        x_title="key token (what is looked at)", y_title="query token (who looks)",
        value_name="attention weight" if scale == "Viridis" else "score",
        row_ticks=ticks, col_ticks=ticks, tick_text=tick_text,
        boundaries=tuple(range(1, pre + 1))), key=keys.ATTN_MATRIX)


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
@dataclass(frozen=True)
class Where:
    row: torch.Tensor  # [g, g] the patch's attention over the patches
    col: torch.Tensor  # [g, g] every patch's attention on it
    on_prefix: tuple[float, ...]  # its attention on CLS (and DIST)
    own: float  # on its own patch
    near: float  # on its own patch and the 8 around it
    top: int  # the patch it looks at most
    top_share: float
    top_steps: int  # how many grid steps away that patch is


def _where_facts(x: Ctx) -> Where:
    c, p = x.c, x.patch
    g, pre = c.grid, c.num_prefix_tokens
    a = _pattern(x)
    row, col = a[p + pre, pre:pre + g * g], a[pre:pre + g * g, p + pre]
    r, q = divmod(p, g)
    near = sum(float(row[i * g + j]) for i in range(max(r - 1, 0), min(r + 2, g))
               for j in range(max(q - 1, 0), min(q + 2, g)))
    top = int(row.argmax())
    return Where(row.reshape(g, g), col.reshape(g, g),
                 tuple(float(a[p + pre, i]) for i in range(pre)), float(row[p]), near, top,
                 float(row[top]), max(abs(top // g - r), abs(top % g - q)))


def _where_figure(x: Ctx, f: Where) -> None:
    p = x.patch
    left, right = st.columns(2)
    on_prefix = ", ".join(f"{pct(s)} on {n}" for s, n in zip(f.on_prefix, x.c.prefix_names,
                                                                  strict=True))
    lo = 0.0  # one scale from 0: the two maps are compared, and no weight looks larger than it is
    hi = float(max(f.row.max(), f.col.max()))
    for where, m, title, what in (
            (left, f.row, f"Where patch {p} looks",
             f"patch {p}'s attention over the patches" + (f" (and {on_prefix})" if on_prefix
                                                          else "")),
            (right, f.col, f"Who looks at patch {p}", f"how much each patch attends to patch {p}")):
        with where:
            st.markdown(f"**{title}** · layer {x.layer}, head {x.head}")
            norm = ((m - lo) / max(hi - lo, 1e-12)).numpy()
            show.image(figures.with_scale(figures.overlay(x.prep.crop, norm, normalise=False),
                                          lo, hi, "attention weight from 0, both maps"),
                       what, "attention-" + title.split()[0].lower())


def _where_words(x: Ctx, f: Where) -> str:
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
@dataclass(frozen=True)
class Heads:
    rows: tuple  # per prefix token: [H] rows over the patches, each [g*g]
    top: tuple[float, ...]  # per prefix token: the largest weight any head gives a patch
    mean_rows: tuple  # per prefix token: the mean over heads of its whole row [S]
    n_keys: tuple[int, ...]  # per prefix token: how many keys it may see
    sees_patches: tuple[bool, ...]


def _heads_facts(x: Ctx) -> Heads:
    c = x.c
    pre, g, H = c.num_prefix_tokens, c.grid, c.num_heads
    prefix_rows = x.summary["prefix_rows"]  # [L, H, prefix, S]
    rows = tuple([prefix_rows[x.layer, h, i, pre:pre + g * g] for h in range(H)]
                 for i in range(pre))
    return Heads(rows, tuple(max(float(r.max()) for r in rs) for rs in rows),
                 tuple(prefix_rows[x.layer, :, i].mean(0) for i in range(pre)),
                 tuple(int(x.allowed[i].sum()) for i in range(pre)),
                 tuple(bool(x.allowed[i, pre:].any()) for i in range(pre)))


SLIDE_MAPS = 6  # a slide shows at most this many heads' maps, in one row


def _heads_figure(x: Ctx, f: Heads) -> None:
    c = x.c
    g, H = c.grid, c.num_heads
    # on a slide one row as wide as the slide, of at most SLIDE_MAPS heads (the six around the
    # Head slider's); on a page (a phone too) two maps a row: each large enough for its label
    first = (x.head // SLIDE_MAPS) * SLIDE_MAPS if x.presenting and H > SLIDE_MAPS else 0
    heads = range(first, min(H, first + SLIDE_MAPS)) if x.presenting else range(H)
    cols = len(heads) if x.presenting else min(H, 2)
    cell = min(280, 1180 // cols - 4) if x.presenting else 200
    some = "" if len(heads) == H else f"heads {heads[0]}–{heads[-1]} of {H} (the Head slider's "
    for i, tok in enumerate(c.prefix_names):
        top = f.top[i]
        maps = [figures.overlay(x.prep.crop, f.rows[i][h].reshape(g, g).numpy()
                                / max(top, 1e-12), normalise=False) for h in heads]
        tiled = figures.tile(maps, cols=cols, cell=cell, framed=x.head - first, labels=[
            f"head {h}: {pct(float(f.rows[i][h].min()))} to {pct(float(f.rows[i][h].max()))}"
            for h in heads])
        show.image(figures.with_scale(tiled, 0.0, top, f"{tok}'s attention weight on a patch, "
                                      "one scale for every head"),
                   f"layer {x.layer}: " + (f"{some}six), each one's" if some else "every head's")
                   + f" {tok} row over the patches; head {x.head} (the Head slider's) framed",
                   f"{tok.lower()}-heads")


def _heads_words(x: Ctx, f: Heads) -> str:
    c = x.c
    pre, prefix = c.num_prefix_tokens, c.prefix_names
    said = []
    for i, tok in enumerate(prefix):
        mean_row = f.mean_rows[i]
        on_prefix = pct(float(mean_row[:pre].sum()))
        if f.sees_patches[i]:
            n = f.n_keys[i]
            said.append(f"Bright = where the {tok} token reads from; every map has the same "
                        f"scale, from 0 to {pct(f.top[i], 1)}, the largest weight any head gives "
                        f"a patch. Averaged over the heads, half of {tok}'s "
                        f"attention falls on {keys_holding(mean_row)} of its {n} "
                        f"key{'' if n == 1 else 's'}; {on_prefix} on {' and '.join(prefix)}.")
        else:  # e.g. the causal mask: CLS (and DIST) come before every patch
            seen = " and ".join(n for j, n in enumerate(prefix) if x.allowed[i, j])
            said.append(f"Under the {x.tr.mask_kind} mask the {tok} token sees no patch, only "
                        f"{seen}, so no map colours the image: 0% of its attention on each "
                        f"patch, {on_prefix} on {seen}.")
    return " ".join(said)


def _heads_title(c) -> str:
    return f"Every head's {' and '.join(c.prefix_names)} attention"


# ---------------------------------------------------------------- rollout
def _rollout_facts(x: Ctx) -> dict:
    c = x.c
    pre, g = c.num_prefix_tokens, c.grid
    N = g * g
    roll = x.summary["rollout"]
    if pre:
        row = roll[0, :pre + N].double()
        row = row / row.sum()
        patches = row[pre:]
        grid_map = roll[0, pre:pre + N]
    else:
        row = roll[:N, :N].double().mean(0)
        row = patches = row / row.sum()
        grid_map = roll[:N, :N].mean(0)
    k = min(STRONGEST, N)
    return {"map": grid_map.reshape(g, g), "on_prefix": [float(row[i]) for i in range(pre)],
            "on_patches": float(patches.sum()), "k": k,
            "top": float(patches.sort(descending=True).values[:k].sum()), "N": N}


def _rollout_figure(x: Ctx, f: dict) -> None:
    m = f["map"]  # coloured from 0, so that an even map does not look like a sharp one
    top = max(float(m.max()), 1e-12)
    show.image(figures.with_scale(figures.overlay(x.prep.crop, m.numpy() / top, normalise=False),
                                  0.0, top, "rollout share, from 0"),
               "Rollout: " + ("the CLS row, over the patches" if x.c.num_prefix_tokens else
                              "the mean of the patch rows"), "rollout", width=360)


def _rollout_words(x: Ctx, f: dict) -> str:
    k, N = f["k"], f["N"]
    if x.c.num_prefix_tokens:
        own = ", ".join(f"{pct(s, 1)} on the {n} input" for s, n in
                        zip(f["on_prefix"], x.c.prefix_names, strict=True))
        said = (f"The final CLS token draws {own} and {pct(f['on_patches'], 1)} on the {N} "
                f"patches; its {k} strongest patches give {pct(f['top'], 1)}.")
    else:
        said = (f"Averaged over the final patch tokens, the {k} strongest input patches give "
                f"{pct(f['top'], 1)} (an even share would be {pct(k / N, 1)}).")
    return said + " Rollout follows attention only; it ignores what the values and MLPs do."


def _rollout_notes(x: Ctx, _) -> str:
    return ("Rollout (Abnar & Zuidema): average the heads, add the skip connection, "
            "renormalise, and multiply the layers from the first to the last.")


# ---------------------------------------------------------------- how far heads look
def _distance_facts(x: Ctx) -> dict:
    c = x.c
    return {"dist": x.summary["distance"],  # [L, H] px
            "baseline": uniform_distance(c.grid, c.patch_size, x.allowed, c.num_prefix_tokens),
            "share": x.summary["prefix_share"]}  # [L, H]


def _distance_figure(x: Ctx, f: dict) -> None:
    deck.chart(figures.distance_chart(f["dist"], f["baseline"], "Mean attention distance"),
               key=keys.ATTN_DISTANCE)


def _px(values) -> str:
    lo, hi = float(min(values)), float(max(values))
    return span(f"{lo:.0f}", f"{hi:.0f}") + " px"


def distance_words(dist, baseline: float) -> str:
    """How far heads look, worded from [L, H] mean distances (px) and the even-spread distance."""
    d = torch.as_tensor(dist, dtype=torch.float64)
    L, H = d.shape
    where = divmod(int(d.argmin()), H)
    nearest = float(d.min())
    local = d < LOCAL * baseline
    text = (f"Mean attention distance {_px(d.flatten())}; attention spread evenly over the "
            f"patches would give {baseline:.1f} px")
    if not local.any() and nearest >= NEAR_EVEN * baseline:
        return text + (", so this head looks everywhere, not near its own patch." if L * H == 1
                       else ", so these heads look everywhere, none near its own patch.")
    if not local.any():
        return (text + f". The nearest head (layer {where[0]}, head {where[1]}, {nearest:.0f} px) "
                f"looks somewhat closer than that, but no head stays near its own patch.")
    n = int(local.sum())
    layers = sorted({int(i) for i in local.nonzero()[:, 0]})
    where_ = f"layer {layers[0]}" if len(layers) == 1 else f"layers {layers[0]}–{layers[-1]}"
    if n == L * H:
        if n == 1:
            return text + f", so this head looks locally, under half of that ({nearest:.0f} px)."
        return (text + f", so these heads look locally: every head stays under half of that "
                f"(nearest {nearest:.0f} px).")
    return (text + f". {n} of {L * H} heads ({where_}) look locally, under half of that "
            f"(nearest: layer {where[0]}, head {where[1]} at {nearest:.0f} px); the others look "
            f"further.")


def _distance_words(x: Ctx, f: dict) -> str:
    return distance_words(f["dist"], f["baseline"])


def _distance_notes(x: Ctx, f: dict) -> str:
    c, L, H = x.c, x.c.depth, x.c.num_heads
    dist, share = f["dist"], f["share"]
    per_layer = "; ".join(f"layer {i}: " + _px(dist[i]) for i in range(L))
    lo, hi = min(float(s.min()) for s in share), max(float(s.max()) for s in share)
    by_head = " (by head)" if L * H > 1 else ""
    left_out = (f" Left out: the {span(pct(lo, 1), pct(hi, 1))}{by_head} of "
                f"their attention that patch queries put on {' and '.join(c.prefix_names)}."
                if c.num_prefix_tokens else "")
    return (f"For each patch query: the distance in pixels between patch centres, weighted by "
            f"its attention re-normalised over the patches it may see, averaged over the "
            f"{c.grid ** 2} patch queries (after the ViT paper's Figure 7).{left_out} Per layer: "
            f"{per_layer}. Dashed: every query spreading evenly over the patches it may see.")


def head_name(k: int, H: int) -> str:
    """Head k of the flattened [L, H] grid, as the answers name it."""
    return f"layer {k // H}, head {k % H}"


def head_choice(values, H: int, right: int | None,
                prompt: str = "Which of these heads looks farthest?") -> Choice:
    """Choose one head: `right` (a flat head index; None: nobody is marked, and the top head is
    offered), the bottom head of `values` ([L * H], flattened) and the two a third and two thirds
    down its ranking: at most 4, in layer and head order, so that where the right one stands
    tells nothing."""
    order = torch.as_tensor(values).sort(descending=True, stable=True).indices.tolist()
    n = len(order)
    top = order[0] if right is None else right
    picks = sorted({top, order[-1], order[n // 3], order[2 * n // 3]})
    return Choice(tuple(head_name(k, H) for k in picks),
                  None if right is None else picks.index(right), prompt)


def _distance_question(x: Ctx, f: dict) -> Question:
    c = x.c
    L, H = c.depth, c.num_heads
    q = "Which heads look far, which near?"
    d = f["dist"].flatten()
    if c.grid ** 2 < 2:
        return Question(q, "The image is a single patch, so every distance is 0: no head looks "
                           "far or near.", head_choice(d, H, None))
    far, near = int(d.argmax()), int(d.argmin())
    if L * H == 1:
        return Question(q, f"This model has one head in one block: its patch queries look "
                           f"{float(d[0]):.0f} px away on average, on a {c.img_size}-pixel "
                           f"image, so there is no other head to compare.",
                        head_choice(d, H, None))
    return Question(q, f"Mean attention distance of the patch queries, over all {L * H} heads: "
                       f"the farthest is {head_name(far, H)} ({float(d[far]):.0f} "
                       f"px), the nearest {head_name(near, H)} "
                       f"({float(d[near]):.0f} px), on a {c.img_size}-pixel image.",
                    head_choice(d, H, far))


# ---------------------------------------------------------------- how evenly heads look
def _entropy_facts(x: Ctx) -> dict:
    return {"ent": x.summary["entropy"], "max": max_entropy(x.allowed)}


def _entropy_figure(x: Ctx, f: dict) -> None:
    c = x.c
    deck.chart(figures.matrix_heatmap(
        f["ent"], f"Attention entropy (nats; max for the {x.tr.mask_kind} mask = {f['max']:.2f})",
        row_labels=[f"layer {i}" for i in range(c.depth)],
        col_labels=[f"head {h}" for h in range(c.num_heads)], colorscale="Viridis", zmid=None,
        zrange=(0.0, f["max"]), square=False, height=320, x_title="head", y_title="layer",
        value_name=f"entropy (nats), 0 to the max {f['max']:.2f}"),
        key=keys.ATTN_ENTROPY)


def entropy_words(ent, maximum: float, mask_kind: str = "full") -> str:
    """How spread out attention is, worded from [L, H] mean entropies (nats) and the maximum."""
    e = torch.as_tensor(ent, dtype=torch.float64)
    H = e.shape[1]
    lo, hi = float(e.min()), float(e.max())
    layer, head = divmod(int(e.argmin()), H)
    text = (f"Entropy {span(f'{lo:.2f}', f'{hi:.2f}')} nats; spreading evenly over every key a "
            f"query may see ({mask_kind} mask) gives {maximum:.2f} nats")
    one = e.numel() == 1
    if lo >= EVEN_ENTROPY * maximum:
        return text + (", so this head spreads its attention almost evenly." if one else
                       ", so every head spreads its attention almost evenly.")
    n = round(math.exp(lo))
    which = "The head" if one else f"The most focused head (layer {layer}, head {head})"
    return (text + f". {which} is about as spread as an even split over e^{lo:.2f} ≈ {n} "
            f"key{'s' if n != 1 else ''}.")


def _entropy_words(x: Ctx, f: dict) -> str:
    return entropy_words(f["ent"], f["max"], x.tr.mask_kind)


def _entropy_notes(x: Ctx, f: dict) -> str:
    S = x.tr["embed"].shape[0]
    return (f"Mean over the {S} queries of −Σ A log A. Low: a head that focuses on a few tokens; "
            f"the max, {f['max']:.2f} nats, is every query spreading evenly over the keys its "
            f"mask lets it see (the mean of log(visible keys)).")


# ---------------------------------------------------------------- the questions on the maps
def _where_question(x: Ctx, f: Where) -> Question:
    """Where patch p looks most: the brightest patch of the left map."""
    p, top = x.patch, int(f.row.flatten().argmax())
    return Question(f"In layer {x.layer}, head {x.head}, which patch does patch {p} look at most?",
                    f"Patch {top} ({pct(float(f.row.flatten()[top]))} of patch {p}'s attention), "
                    "the brightest cell of the left map.", PatchPick((top,)))


def _brightest_question(x: Ctx, f: Heads) -> Question | None:
    """The brightest cell of the heads' maps of the first prefix token (one scale for all), and
    whether the heads agree on their brightest patch."""
    tok, g = x.c.prefix_names[0], x.c.grid
    if not f.sees_patches[0]:
        return None  # no map colours the image: nothing to click
    rows = torch.stack([torch.as_tensor(r, dtype=torch.float64) for r in f.rows[0]])  # [H, N]
    H, top = rows.shape[0], float(rows.max())
    right = tuple(int(p) for p in torch.nonzero((rows == top).any(0)).flatten())
    h = int((rows == top).any(1).nonzero()[0])
    fav = [int(r.argmax()) for r in rows]
    shared = max(fav.count(p) for p in fav)
    agree = ("" if H == 1 else " All the heads share it." if shared == H else
             f" {shared} of the {H} heads share a brightest patch." if shared > 1 else
             " No two heads share a brightest patch.")
    return Question(f"In layer {x.layer}, which patch does {tok} look at most, in any head? (the "
                    f"brightest cell of {'the map' if H == 1 else f'all {H} maps'})",
                    f"Patch {right[0]} ({right[0] // g},{right[0] % g}): head {h} puts "
                    f"{pct(top)} of {tok}'s attention on it, the top of the maps' shared scale. "
                    "Each head's brightest patch: " + "; ".join(
                        f"head {k} → patch {p} ({pct(float(rows[k, p]))})"
                        for k, p in enumerate(fav)) + "." + agree, PatchPick(right))


def _focused_question(x: Ctx, f: dict) -> Question:
    """Which head is the most focused: the lowest entropy of the heatmap."""
    e, H = torch.as_tensor(f["ent"]).flatten(), x.c.num_heads
    low, high = int(e.argmin()), int(e.argmax())
    q = "Which head is the most focused (the lowest entropy, the darkest cell)?"
    even = float(e[low]) >= EVEN_ENTROPY * f["max"]
    said = (f"The lowest entropy is {head_name(low, H)}'s, {float(e[low]):.3f} nats; the highest "
            f"{head_name(high, H)}'s, {float(e[high]):.3f}; the maximum is {f['max']:.3f}.")
    if e.numel() == 1:
        return Question(q, f"This model has one head: its entropy is {float(e[0]):.3f} nats, of "
                           f"a maximum {f['max']:.3f}.", head_choice(-e, H, None))
    if even:  # nobody is marked: every cell is nearly the maximum
        return Question(q, said + f" Every head is at least {pct(EVEN_ENTROPY)} of the maximum: "
                        "all spread almost evenly, none is really focused.",
                        head_choice(-e, H, None, "Which of these heads is the most focused?"))
    return Question(q, said, head_choice(-e, H, low, "Which of these heads is the most focused?"))


def _has_prefix(c) -> bool:
    return c.num_prefix_tokens > 0


STAGE = deck.Stage(
    slug="attention",
    title="4 · Attention heads",
    story="Softmax turns scores into weights: where each token looks. Each head has its own "
          "habit; the stage measures how far and how evenly each one looks.",
    view=view,
    intro=_intro,
    steps=(
        Step("pattern", "Scores and the softmax pattern", _scores_figure,
             words=_scores_words, controls=("layer", "head", "patch", "play"),
             reads=("layer_block",)),
        Step("where", "Where a patch looks, and who looks at it", _where_figure,
             facts=_where_facts, words=_where_words, controls=("layer", "head", "patch"),
             question=lambda x, f: None if _has_prefix(x.c) else _where_question(x, f),
             asks=("row",), reads=("layer_block",)),
        Step("heads", _heads_title, _heads_figure, facts=_heads_facts, words=_heads_words,
             controls=("layer", "head", "play"), question=_brightest_question,
             asks=("rows", "sees_patches"),
             applies=_has_prefix,
             reads=("layer_block", "attention_summary")),
        Step("rollout", "Attention rollout: all layers together", _rollout_figure,
             facts=_rollout_facts, words=_rollout_words, notes=_rollout_notes,
             reads=("attention_summary",)),
        Step("entropy", "How evenly each head looks", _entropy_figure, facts=_entropy_facts,
             words=_entropy_words, notes=_entropy_notes, question=_focused_question,
             asks=("ent", "max"),
             reads=("attention_summary",)),
        Step("distance", "How far each head looks", _distance_figure, facts=_distance_facts,
             words=_distance_words, notes=_distance_notes, question=_distance_question,
             asks=("dist",),
             reads=("attention_summary",)),
    ),
)
