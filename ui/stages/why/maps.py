"""Step 1: the six maps side by side, on one colour scale (each divided by its own largest
|value|: vit_core.explain.why_facts)."""

from __future__ import annotations

from dataclasses import dataclass

from ui.drawing.describe import span, two
from ui.drawing.equation import latex
from ui.drawing.figures import why as draw
from ui.lesson import deck
from ui.selection import session
from ui.stages.why import compute, jobs
from ui.stages.why.keys import WHY_MAPS
from vit_core.explain import why_facts
from vit_core.explain.attribution import METHODS
from vit_core.explain.extremes import extremes

NAMES = {"cls_attention": "CLS attention", "rollout": "Rollout", "grad_rollout":
         "Gradient rollout", "gradcam": "Grad-CAM", "integrated_gradients":
         "Integrated Gradients", "occlusion": "Occlusion"}
CHOICES = 4  # a question's options at most (a live class's answer buttons on a phone)


def method_choice(values: dict[str, float], right: str, prompt: str = "The method") -> deck.Choice:
    """A Choice of CHOICES methods for a question whose answer is `right`: it and the methods
    whose `values` lie nearest its own (an undefined value farthest), in METHODS' order."""
    def gap(m: str) -> float:
        d = abs(values[m] - values[right])
        return d if d == d else float("inf")

    near = [m for _, m in sorted((gap(m), m) for m in values if m != right)][:CHOICES - 1]
    kept = [m for m in METHODS if m == right or m in near]
    return deck.Choice(tuple(NAMES[m] for m in kept), kept.index(right), prompt=prompt)


HEADLESS = ("This model has no class head and no text head: it gives no answer, so there is "
            "nothing for a map to explain. Pick a classifier or a captioner in the sidebar.")


ASKS = ("target", "places", "common", "agreeing")
SCALED_TEX = r"\tilde a_i = \frac{a_i}{\max_j |a_j|}"


def title(config) -> str:
    return "Six maps of one answer" if config.num_classes else "Six maps of one word"


@dataclass(frozen=True)
class Facts:
    target: str  # the class or word the maps explain
    word: bool  # a caption's word (else a class)
    grid: int
    m: why_facts.MapFacts | None  # None: the model has no answer (a headless encoder)
    places: int = 0  # how many different patches the six maps put first
    common: str = ""  # the patch most of them put first, "row r, column c"
    agreeing: int = 0  # how many put it first


def facts(x: deck.View) -> Facts:
    if not compute.applies(x.c):
        return Facts("", False, x.c.grid, None)
    mask = session.chosen_mask()
    target = compute.target(x.inp, x.name, mask)
    found = jobs.ready("maps", x.inp, x.name, mask, target)
    m = why_facts.map_facts({k: found[k] for k in METHODS}, x.c.grid)
    r, c = m.common
    return Facts(target.label, target.is_word, x.c.grid, m, m.places, f"row {r}, column {c}",
                 len(m.agreeing))


def named(f: Facts) -> str:
    return f"the word “{f.target}”" if f.word else f"the class “{f.target}”"


def equation(x: deck.View) -> None:
    """How every map is put on one scale, with this model's patch count."""
    latex(SCALED_TEX + rf",\quad i, j = 1, \dots, N = {x.c.num_patches}\ \text{{patches}}")


def figure(x: deck.View, f: Facts) -> None:
    if f.m is None:
        return
    where = (f"the same patch ({f.common})" if f.places == 1 else
             f"{f.places} different patches" if f.agreeing == 1 else
             f"{f.places} different patches, {f.agreeing} of 6 on {f.common}")
    fig = draw.six_maps(f.m.scaled, NAMES, f.grid, f"What made {named(f)}? Six methods on one "
                        f"colour scale; their strongest patch (outlined): {where}",
                        why_facts.SCALE, f.m.tops)
    deck.chart(fig, key=WHY_MAPS)


def words(x: deck.View, f: Facts) -> str:
    if f.m is None:
        return HEADLESS
    first = ("all six put the same patch first" if f.places == 1 else
             f"they put their strongest patch in {f.places} different places; no two chose "
             f"the same patch" if f.agreeing == 1 else
             f"they put their strongest patch in {f.places} different places; "
             f"{f.agreeing} of 6 chose {f.common}")
    return (f"Each map gives every patch a share of {named(f)}, drawn on one scale: each map "
            f"divided by its own largest value, so 1 is its strongest patch. Here {first}. A "
            f"map is a claim about the model; the next step tests it.")


def describe(x: deck.View, f: Facts) -> str | None:
    if f.m is None:
        return None
    g = f.grid

    def one(k: str) -> str:  # a map's range as drawn, and its strongest patch (outlined)
        r, c = f.m.tops[k]
        return (f"{NAMES[k]} {span(extremes(f.m.scaled[k]), two)}, the largest at patch "
                f"{r * g + c} (row {r}, column {c})")

    return (f"Six {g}×{g} patch grids side by side, one per method, each divided by its own "
            f"largest |value| and coloured on one scale from {why_facts.SCALE[0]:g} (blue, "
            f"against the answer) to {why_facts.SCALE[1]:g} (red, for it); each map's strongest "
            f"patch outlined. " + "; ".join(one(k) for k in f.m.tops) + ".")


def question(x: deck.View, f: Facts) -> deck.Question | None:
    if not f.target:
        return None
    answer = (f"On one: all six maps put {f.common} first." if f.places == 1 else
              f"On {f.places}: the six maps put their strongest patch in {f.places} "
              f"different places" + (
                  "; no two chose the same one." if f.agreeing == 1 else
                  f"; the most common choice, {f.common}, is the first patch of {f.agreeing} "
                  f"of the 6 maps."))
    return deck.Question("On how many different patches do the six maps put their strongest "
                         "value?", answer, deck.Number(f.places, unit="patches"))
