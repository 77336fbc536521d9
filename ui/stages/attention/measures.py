"""The attention stage's measures over every head: rollout through the layers, how far each head
looks and how evenly; with the questions on them."""

from __future__ import annotations

import math

from ui.drawing import describe, figures, show
from ui.drawing.numbers import pct, span
from ui.lesson import deck
from ui.lesson.deck import Choice, Question, Step
from ui.serving import tour
from ui.stages.attention.context import EVEN_ENTROPY, LOCAL, NEAR_EVEN, STRONGEST, Ctx
from ui.stages.attention.keys import ATTN_DISTANCE, ATTN_ENTROPY
from vit_core.explain.attention import (
    RolloutShares,
    head_range,
    heads_below,
    max_entropy,
    rollout_shares,
    spread_picks,
    uniform_distance,
)
from vit_core.explain.extremes import extremes


# ---------------------------------------------------------------- rollout
def _rollout_facts(x: Ctx) -> RolloutShares:
    return rollout_shares(x.summary["rollout"], x.c.grid, x.c.num_prefix_tokens, STRONGEST)


def _rollout_figure(x: Ctx, f: RolloutShares) -> None:
    m = f.map  # coloured from 0, so that an even map does not look like a sharp one
    top = max(float(m.max()), 1e-12)
    show.image(figures.with_scale(figures.overlay(x.prep.crop, m.numpy() / top, normalise=False),
                                  0.0, top, "rollout share, from 0"),
               "Rollout: " + ("the CLS row, over the patches" if x.c.num_prefix_tokens else
                              "the mean of the patch rows"), "rollout", width=360,
               alt=_rollout_alt(x, f))


def _rollout_alt(x: Ctx, f: RolloutShares) -> str:
    whose = ("the final CLS token's rollout" if x.c.num_prefix_tokens else
             "the final patch tokens' mean rollout")
    return describe.patch_map(f"Your image under {whose} over the patches, coloured from 0",
                              "rollout share", extremes(f.map), x.c.grid, fmt=lambda v: pct(v, 1))


def _rollout_words(x: Ctx, f: RolloutShares) -> str:
    k, N = f.k, f.N
    if x.c.num_prefix_tokens:
        own = ", ".join(f"{pct(s, 1)} on the {n} input" for s, n in
                        zip(f.on_prefix, x.c.prefix_names, strict=True))
        said = (f"The final CLS token draws {own} and {pct(f.on_patches, 1)} on the {N} "
                f"patches; its {k} strongest patches give {pct(f.top, 1)}.")
    else:
        said = (f"Averaged over the final patch tokens, the {k} strongest input patches give "
                f"{pct(f.top, 1)} (an even share would be {pct(k / N, 1)}).")
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
               key=ATTN_DISTANCE)


def _distance_alt(x: Ctx, f: dict) -> str:
    r, num = head_range(f["dist"]), describe.num
    (a, b), (c, d) = r.where(r.lowest), r.where(r.highest)
    return (f"Points, one per head (a series per head): across, the layer (0 to "
            f"{x.c.depth - 1}); up, the mean attention distance in pixels, from {num(r.lo)} "
            f"(layer {a}, head {b}) to {num(r.hi)} (layer {c}, head {d}). A dashed line at "
            f"{num(f['baseline'])} px: attention spread evenly over the patches.")


def _px(r) -> str:
    """A HeadRange's distances as '9–12 px'."""
    return span(f"{r.lo:.0f}", f"{r.hi:.0f}") + " px"


def distance_words(dist, baseline: float) -> str:
    """How far heads look, worded from [L, H] mean distances (px) and the even-spread distance."""
    r = head_range(dist)
    L, H = r.n // r.H, r.H
    where, nearest = r.where(r.lowest), r.lo
    n, layers = heads_below(dist, LOCAL * baseline)
    text = (f"Mean attention distance {_px(r)}; attention spread evenly over the "
            f"patches would give {baseline:.1f} px")
    if not n and nearest >= NEAR_EVEN * baseline:
        return text + (", so this head looks everywhere, not near its own patch." if L * H == 1
                       else ", so these heads look everywhere, none near its own patch.")
    if not n:
        return (text + f". The nearest head (layer {where[0]}, head {where[1]}, {nearest:.0f} px) "
                f"looks somewhat closer than that, but no head stays near its own patch.")
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
    per_layer = "; ".join(f"layer {i}: " + _px(head_range(dist[i:i + 1])) for i in range(L))
    lo, hi = head_range(share).lo, head_range(share).hi
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
    picks = spread_picks(values, right)
    return Choice(tuple(head_name(k, H) for k in picks),
                  None if right is None else picks.index(right), prompt)


def _distance_question(x: Ctx, f: dict) -> Question:
    c = x.c
    L, H = c.depth, c.num_heads
    q = "Which heads look far, which near?"
    d, r = f["dist"].flatten(), head_range(f["dist"])
    if c.grid ** 2 < 2:
        return Question(q, "The image is a single patch, so every distance is 0: no head looks "
                           "far or near.", head_choice(d, H, None))
    if L * H == 1:
        return Question(q, f"This model has one head in one block: its patch queries look "
                           f"{r.hi:.0f} px away on average, on a {c.img_size}-pixel "
                           f"image, so there is no other head to compare.",
                        head_choice(d, H, None))
    return Question(q, f"Mean attention distance of the patch queries, over all {L * H} heads: "
                       f"the farthest is {head_name(r.highest, H)} ({r.hi:.0f} "
                       f"px), the nearest {head_name(r.lowest, H)} "
                       f"({r.lo:.0f} px), on a {c.img_size}-pixel image.",
                    head_choice(d, H, r.highest))


# ---------------------------------------------------------------- how evenly heads look
def _entropy_facts(x: Ctx) -> dict:
    return {"ent": x.summary["entropy"], "max": max_entropy(x.allowed),
            "ext": extremes(x.summary["entropy"])}


def _entropy_figure(x: Ctx, f: dict) -> None:
    c = x.c
    deck.chart(figures.matrix_heatmap(
        f["ent"], f"Attention entropy (nats; max for the {x.tr.mask_kind} mask = {f['max']:.2f})",
        row_labels=[f"layer {i}" for i in range(c.depth)],
        col_labels=[f"head {h}" for h in range(c.num_heads)], colorscale="Viridis", zmid=None,
        zrange=(0.0, f["max"]), square=False, height=320, x_title="head", y_title="layer",
        value_name=f"entropy (nats), 0 to the max {f['max']:.2f}"),
        key=ATTN_ENTROPY)


def _entropy_alt(x: Ctx, f: dict) -> str:
    return describe.heatmap(
        f"attention entropy in nats, {x.c.depth} layers × {x.c.num_heads} heads (the colour "
        f"scale from 0 to the {x.tr.mask_kind} mask's maximum, {describe.num(f['max'])})",
        rows="layers", cols="heads", value="entropy", ext=f["ext"])


def entropy_words(ent, maximum: float, mask_kind: str = "full") -> str:
    """How spread out attention is, worded from [L, H] mean entropies (nats) and the maximum."""
    r = head_range(ent)
    lo, hi = r.lo, r.hi
    layer, head = r.where(r.lowest)
    text = (f"Entropy {span(f'{lo:.2f}', f'{hi:.2f}')} nats; spreading evenly over every key a "
            f"query may see ({mask_kind} mask) gives {maximum:.2f} nats")
    one = r.n == 1
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


def _focused_question(x: Ctx, f: dict) -> Question:
    """Which head is the most focused: the lowest entropy of the heatmap."""
    e, r, H = -f["ent"].flatten(), head_range(f["ent"]), x.c.num_heads
    q = "Which head is the most focused (the lowest entropy, the darkest cell)?"
    said = (f"The lowest entropy is {head_name(r.lowest, H)}'s, {r.lo:.3f} nats; the highest "
            f"{head_name(r.highest, H)}'s, {r.hi:.3f}; the maximum is {f['max']:.3f}.")
    if e.size == 1:
        return Question(q, f"This model has one head: its entropy is {r.lo:.3f} nats, of "
                           f"a maximum {f['max']:.3f}.", head_choice(e, H, None))
    if r.lo >= EVEN_ENTROPY * f["max"]:  # nobody is marked: every cell is nearly the maximum
        return Question(q, said + f" Every head is at least {pct(EVEN_ENTROPY)} of the maximum: "
                        "all spread almost evenly, none is really focused.",
                        head_choice(e, H, None, "Which of these heads is the most focused?"))
    return Question(q, said, head_choice(e, H, r.lowest,
                                         "Which of these heads is the most focused?"))


STEPS = (
    Step("rollout", "Attention rollout: all layers together", _rollout_figure,
         facts=_rollout_facts, words=_rollout_words, notes=_rollout_notes,
         describe=_rollout_alt,
         reads=(tour.attention_summary,)),
    Step("entropy", "How evenly each head looks", _entropy_figure, facts=_entropy_facts,
         words=_entropy_words, notes=_entropy_notes, question=_focused_question,
         describe=_entropy_alt,
         asks=("ent", "max"),
         reads=(tour.attention_summary,)),
    Step("distance", "How far each head looks", _distance_figure, facts=_distance_facts,
         words=_distance_words, notes=_distance_notes, question=_distance_question,
         describe=_distance_alt,
         asks=("dist",),
         reads=(tour.attention_summary,)),
)
