"""The embeddings stage's position steps: one position's vector against every other, and every
position's similarity map, worded at named thresholds from
vit_core.explain.embeddings.position_distance_stats."""

from __future__ import annotations

from ui.drawing import describe, figures
from ui.drawing.numbers import span
from ui.lesson import deck
from ui.lesson.deck import Step
from ui.serving import state, tour
from ui.stages.embeddings.keys import EMBED_POS_ALL, EMBED_POS_ONE
from vit_core.explain.embeddings import position_neighbours
from vit_core.explain.extremes import extremes

# The position-similarity note's wording thresholds (on mean cosines of position vectors,
# vit_core.explain.embeddings.position_distance_stats):
CLEAR_GAP = 0.2  # neighbours "clearly more alike" than distant positions by at least this ...
WEAK_GAP = 0.05  # ... "only a little more alike" from this gap, "hardly" under it
CHECKERBOARD = 0.05  # even-step pairs more alike than odd-step ones by this: "a checkerboard"
APART = 3  # the most alike pairs are "not neighbours": at least this many steps apart ...
ALIKE_GAP = 0.2  # ... and at least this much more alike than neighbours are on average
BORDER_GAP = 0.2  # border positions "alike among themselves": their mean cosine above the
#                   inner pairs' and the border-inner pairs' by at least this


def num(x: float) -> str:
    """Two decimals, never '-0.00'."""
    return f"{x:.2f}".replace("-0.00", "0.00")


def _cell(i: int, g: int) -> str:
    return f"{i} ({i // g},{i % g})"


# ---------------------------------------------------------------- one position vs every position
def _position_facts(v: deck.View) -> dict:
    found = position_neighbours(state.weight_views(v.name)["pos_sim"], v.patch)
    return {**found, "ext": extremes(found["map"])}


def _position_figure(v: deck.View, f: dict) -> None:
    p, g = v.patch, v.c.grid
    deck.chart(figures.grid_heatmap(
        f["map"], f"Patch {p}'s position vector vs every position (outlined: itself)",
        value_name="cosine similarity", selected=divmod(p, g), zmin=-1, zmax=1, height=330),
        key=EMBED_POS_ONE)


def _position_words(v: deck.View, f: dict) -> str:
    p, g = v.patch, v.c.grid
    if f["best"] is None:
        return "The image is a single patch: its position vector has no other to compare with."
    d = f["best_steps"]
    said = (f"Patch {p}'s position vector is most like patch {_cell(f['best'], g)}'s, {d} "
            f"step{'' if d == 1 else 's'} away (cosine {num(f['best_cos'])})")
    n = f["neighbours"]
    return said + (f"; its {n} neighbour{'' if n == 1 else 's'} average "
                   f"{num(f['near_mean'])}." if n else ".")


def _position_alt(v: deck.View, f: dict) -> str:
    p, g = v.patch, v.c.grid
    said = describe.patch_map(f"The cosine similarity of patch {p}'s position vector with every "
                              f"position's (patch {p} outlined)",
                              "cosine similarity (scale −1 … 1)", f["ext"], g)
    low = f["ext"].at_lo
    said += f" The smallest is at patch {low[0] * g + low[1]} (row {low[0]}, column {low[1]})."
    if f["best"] is None:
        return said
    return said + (f" Besides itself, the most alike is patch {_cell(f['best'], g)}, cosine "
                   f"{describe.num(f['best_cos'])}.")


def _position_notes(v: deck.View, _) -> str:
    return ("Cosine similarity of this patch's learned position vector with every patch's: 1 "
            "points the same way, 0 unrelated, −1 opposite. Steps count along rows and columns "
            "(|Δrow| + |Δcol|).")


# ---------------------------------------------------------------- every position's map
def _similarity_facts(v: deck.View) -> dict:
    views = state.weight_views(v.name)
    return {"sim": views["pos_sim"], "stats": views["pos_stats"],
            "trained": bool(v.model.info.trained), "ext": extremes(views["pos_sim"])}


def _similarity_alt(v: deck.View, f: dict) -> str:
    g, ext = v.c.grid, f["ext"]
    r1, c1, r2, c2 = ext.at_lo
    return (f"A {g}×{g} grid of tiles, one per patch position; tile (row, column) is a {g}×{g} "
            f"heatmap of the cosine similarity of that patch's position vector with every "
            f"position's, tile of patch {v.patch} outlined. Colour is cosine similarity, "
            f"{describe.span(ext)}; the least alike pair is patch ({r1},{c1}) and patch "
            f"({r2},{c2}).")


def _similarity_figure(v: deck.View, f: dict) -> None:
    g = v.c.grid
    deck.chart(figures.similarity_tiles(
        f["sim"], f"Every position's similarity map, laid out on the {g}×{g} grid (Figure 7, "
        "centre): tile (row, column) compares that patch with all positions",
        value_name="cosine similarity", selected=divmod(v.patch, g),
        height=480 if g > 4 else 360), key=EMBED_POS_ALL)


def _apart(stats: dict, trained: bool) -> list:
    """The most alike pairs, when every one of them is far apart and much more alike than
    neighbours are on average (the map's brightest pattern then is not closeness); else []."""
    alike, near = stats.get("most_alike") or [], stats["near"]
    if not trained or not alike or near is None:
        return []
    apart = [a for a in alike if a[2] >= APART and a[3] >= near + ALIKE_GAP]
    return alike if len(apart) == len(alike) else []


def _verdict(gap: float, nearest_most: bool) -> str:
    """How strongly closeness is encoded, from neighbours' mean cosine minus distant pairs'."""
    if gap >= CLEAR_GAP and nearest_most:
        return ("neighbours are clearly more alike than distant positions, so these "
                "position vectors encode the 2-D layout of the grid.")
    if gap >= WEAK_GAP:
        return ("neighbours are only a little more alike than distant positions, so "
                "position is only weakly encoded as closeness in this model.")
    if gap >= 0:
        return ("neighbours are hardly more alike than distant positions, so position is "
                "barely encoded as closeness in this model.")
    return ("neighbours are no more alike than distant positions, so these position "
            "vectors do not encode closeness.")


def similarity_words(stats: dict, trained: bool = True) -> str:
    """Is position encoded as closeness in this model, how strongly, and (when they are far
    apart) where the most alike pairs are: worded from `position_distance_stats`."""
    near, two, far = stats["near"], stats["two"], stats["far"]
    if near is None:
        return "The image is a single patch, so there are no neighbouring positions to compare."
    parts = [f"neighbouring positions (1 step apart) have mean cosine similarity {num(near)}"]
    if two is not None:
        parts.append(f"two steps apart {num(two)}")
    if far is not None:
        parts.append(f"{stats['far_from']} or more steps apart {num(far)}")
    text = ", ".join(parts)
    ref = far if far is not None else two
    if ref is None:
        return text[0].upper() + text[1:] + "."
    verdict = _verdict(near - ref, two is None or near > two)
    if not trained:
        verdict = verdict[:-1] + " (random weights: nothing was learned)."
    text = text[0].upper() + text[1:] + ": " + verdict
    apart = _apart(stats, trained)
    if apart:  # the map's brightest pairs: not close
        steps = span(str(min(a[2] for a in apart)), str(max(a[2] for a in apart)))
        cos = span(num(min(a[3] for a in apart)), num(max(a[3] for a in apart)))
        text += (f" Yet the {len(apart)} most alike pairs of positions are not neighbours: "
                 f"{steps} steps apart (cosine {cos}).")
    return text


def border_words(stats: dict) -> str | None:
    """The border pattern, when positions on the grid's border are clearly more alike among
    themselves (BORDER_GAP) than inner positions are, and than border and inner."""
    bb, ii, bi = stats.get("border_border"), stats.get("inner_inner"), stats.get("border_inner")
    if bb is None or ii is None or bb - max(ii, bi) < BORDER_GAP:
        return None
    return (f"The strongest pattern is the border: positions on the grid's border are alike "
            f"among themselves (mean cosine {num(bb)} over pairs of border positions), inner "
            f"positions hardly ({num(ii)}), a border and an inner position {num(bi)}.")


def similarity_notes(stats: dict, trained: bool = True) -> str | None:
    """The patterns under the headline: a checkerboard, and the most alike pairs by name."""
    said = []
    even, odd = stats["even"], stats["odd"]
    if even is not None and odd is not None and even - odd >= CHECKERBOARD:
        said.append(f"There is a checkerboard pattern: positions an even number of steps apart "
                    f"are more alike (mean {num(even)}) than an odd number, 3 or more "
                    f"({num(odd)}).")
    border = border_words(stats)
    if border:
        said.append(border)
    apart = _apart(stats, trained)
    if apart:
        g = stats["grid"]
        pairs = "; ".join(f"{_cell(a, g)} and {_cell(b, g)}: {d} steps, {num(cos)}"
                          for a, b, d, cos, _ in apart)
        on_border = all(edge for *_, edge in apart)
        said.append(f"The {len(apart)} most alike pairs (patch (row,col)): {pairs}."
                    + (" All of them on the grid's border." if on_border else ""))
    said.append("Steps count along rows and columns (|Δrow| + |Δcol|); each mean is over all "
                "pairs of distinct patches that far apart.")
    return " ".join(said)


def _similarity_words(v: deck.View, f: dict) -> str:
    return similarity_words(f["stats"], f["trained"])


def _similarity_notes(v: deck.View, f: dict) -> str | None:
    return similarity_notes(f["stats"], f["trained"])


STEPS = (
    Step("position", "One position against every position", _position_figure,
         facts=_position_facts, words=_position_words, notes=_position_notes,
         describe=_position_alt, controls=("patch",), reads=(tour.weight_views,)),
    Step("similarity", "Every position's similarity map", _similarity_figure,
         facts=_similarity_facts, words=_similarity_words, notes=_similarity_notes,
         describe=_similarity_alt, controls=("patch",), reads=(tour.weight_views,)),
)
