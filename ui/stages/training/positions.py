"""Step 2: how alike the position embeddings of neighbouring and far patches are."""

from __future__ import annotations

import numpy as np

from ui.drawing import figures
from ui.drawing.equation import latex
from ui.lesson import deck
from ui.lesson.deck import PatchPick, Question
from ui.serving import state
from ui.stages.training.base import (
    CLEAR_GAP,
    TIE,
    WEAK_GAP,
    Ctx,
    _label,
)
from ui.stages.training.keys import TRAIN_POSITIONS
from vit_core.explain.extremes import extremes
from vit_core.explain.training import (
    best_of,
    grid_steps,
    position_closeness,
)


# ---------------------------------------------------------------- 2. position embeddings
def _positions_facts(x: Ctx) -> dict:
    g, p = x.c.grid, x.patch
    r, col = divmod(p, g)
    runs = [(s, x.at(s)) for s in (sorted({x.step, x.final if x.step != x.final else 0})
                                   if x.log is not None else [None])]
    out = []
    for step, name in runs:
        views = state.weight_views(name if step is not None else x.name)
        sim = np.asarray(views["pos_sim"][r, col], dtype=np.float64)
        best = best_of(sim, tie=TIE, exclude=p)
        out.append({"step": step, "map": sim, "close": position_closeness(views["pos_stats"]),
                    "best": best, "best_cos": float(sim.reshape(-1)[best[0]]) if best else None})
    return {"runs": out, "trained": bool(x.model.info.trained)}


def _this_run(x: Ctx, f: dict) -> dict:
    return next(r for r in f["runs"] if r["step"] == x.step)


def _positions_figure(x: Ctx, f: dict) -> None:
    p, g = x.patch, x.c.grid
    if not x.presenting:
        latex(r"\cos(e_i, e_j) = \frac{e_i\cdot e_j}{\lVert e_i\rVert\,\lVert e_j\rVert},"
              r"\qquad e_i = \text{row } i \text{ of } E_\mathrm{pos}\ (\text{patch } i)")
    title = f"Patch {p}'s position vector vs every position (outlined: itself)"
    if len(f["runs"]) == 1:
        deck.chart(figures.grid_heatmap(f["runs"][0]["map"], title, value_name="cosine "
                                        "similarity", selected=divmod(p, g), zmin=-1, zmax=1,
                                        height=330), key=TRAIN_POSITIONS)
        return
    a, b = f["runs"]
    deck.chart(figures.grid_heatmap_pair(
        a["map"], b["map"], (_label(x, a["step"]), _label(x, b["step"])),
        title + ", at two training steps", value_name="cosine similarity",
        selected=(divmod(p, g), divmod(p, g))), key=TRAIN_POSITIONS)


def _num(v: float) -> str:
    """Two decimals, never '-0.00'."""
    return f"{v:.2f}".replace("-0.00", "0.00")


def _positions_words(x: Ctx, f: dict) -> str:
    here = _this_run(x, f)
    c = here["close"]
    if c["near"] is None or c["far"] is None:
        return "The grid is too small to compare neighbouring positions with far ones."
    gap = c["gap"]
    verdict = ("neighbours are clearly more alike: the grid's layout is in the positions" if
               gap >= CLEAR_GAP else
               "neighbours are only a little more alike: the layout is barely there" if
               gap >= WEAK_GAP else
               "neighbours are hardly more alike than far positions: no layout yet")
    if not f["trained"]:
        verdict += " (random weights: nothing was learned)"
    when = f"At step {x.step:,}" if x.log is not None else "In this model"
    said = (f"{when}, neighbouring positions have mean cosine {_num(c['near'])} and positions "
            f"{c['far_from']} or more steps apart {_num(c['far'])}, a gap of {_num(gap)} "
            f"(clear from {CLEAR_GAP}, a little from {WEAK_GAP}): {verdict}.")
    other = next((r for r in f["runs"] if r["step"] != x.step), None)
    if other is not None and other["close"]["gap"] is not None:
        o = other["close"]
        said += (f" At {_label(x, other['step'])}: {_num(o['near'])} against {_num(o['far'])}, "
                 f"a gap of {_num(o['gap'])}.")
    return said


def _positions_describe(x: Ctx, f: dict) -> str:
    p, g = x.patch, x.c.grid
    said = [f"{'A' if len(f['runs']) == 1 else 'Two'} {g}×{g} map{'s' * (len(f['runs']) > 1)} of "
            f"the patches (rows top to bottom, columns left to right), coloured on one red-blue "
            f"scale from −1 to 1 by the cosine of patch {p}'s position vector (outlined) with "
            f"each position's."]
    for r in f["runs"]:
        when = f"At {_label(x, r['step'])}" if r["step"] is not None else "In this model"
        e = extremes(r["map"])
        said.append(f"{when}: from {_num(e.lo)} to {_num(e.hi)}"
                    + (f"; apart from itself the most alike is patch {r['best'][0]} (row "
                       f"{r['best'][0] // g}, column {r['best'][0] % g}) at "
                       f"{_num(r['best_cos'])}." if r["best"] else "."))
    return " ".join(said)


def _positions_notes(x: Ctx, f: dict) -> str:
    size = (f" At {x.c.img_size} px the vectors are resampled bicubically from the model's own "
            f"grid, as on the Embeddings page." if x.size else "")
    return ("Each map compares the selected patch's learned position vector with every "
            "patch's (1: the same direction, 0 unrelated, −1 opposite), on one colour scale. "
            "Position vectors start as small random numbers, and nothing tells the model that "
            "patches form a grid: if neighbours end up alike, training found it useful (ViT "
            "paper, Figure 7, centre). Steps count along rows and columns "
            "(|Δrow| + |Δcol|)." + size)


def _positions_question(x: Ctx, f: dict) -> Question | None:
    here, p, g = _this_run(x, f), x.patch, x.c.grid
    if not here["best"]:
        return None
    b = here["best"][0]
    steps = grid_steps(b, p, g)
    when = "at this training step" if x.log is not None else "in this model"
    return Question(
        f"Which patch's position vector is most like patch {p}'s {when}? Click it.",
        f"Patch {b} (row {b // g}, column {b % g}), {steps} step{'' if steps == 1 else 's'} "
        f"away: cosine {here['best_cos']:.2f}"
        + (f" (and {len(here['best']) - 1} more within {TIE})" if len(here["best"]) > 1 else "")
        + ".", PatchPick(tuple(sorted(here["best"]))))
