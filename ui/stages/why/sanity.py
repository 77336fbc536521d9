"""Step: Sanity. The six maps again, on a copy of the model whose weights were drawn at random
(vit_core.explain.faithfulness_sanity), beside the trained ones: a map that barely changes
when the weights that made the answer are gone cannot be explaining those weights."""

from __future__ import annotations

import streamlit as st

from ui import keys
from ui.drawing import phone
from ui.drawing.figures.tiles import tiles
from ui.drawing.readable import readable
from ui.lesson import deck
from ui.lesson.deck import Question
from ui.selection import session
from ui.stages.why import compute, jobs, patch_compute  # noqa: F401 (registers "sanity")
from ui.stages.why.keys import WHY_SANITY
from ui.stages.why.maps import NAMES, method_choice
from vit_core.explain import why_patch_facts as wf
from vit_core.explain.attribution import METHODS

VALUE = "share of the map's largest |value| (red: for, blue: against)"
RANDOM = "random weights"


def title(config) -> str:
    return "Sanity: the same maps on a model with random weights"


def facts(x: deck.View) -> dict:
    mask = session.chosen_mask()
    target = compute.target(x.inp, x.name, mask)
    found = jobs.ready("sanity", x.inp, x.name, mask, target)
    rhos = {m: found[m].rho for m in METHODS}
    return {"target": target.label, "grid": x.c.grid, "rho": rhos,
            "trained": {m: wf.scaled(found[m].trained.numpy()) for m in METHODS},
            "randomised": {m: wf.scaled(found[m].randomised.numpy()) for m in METHODS},
            "survivors": wf.survivors(rhos), "undefined": wf.undefined(rhos),
            "most_kept": wf.most_kept(rhos), "threshold": wf.SURVIVES}


def _rho(r: float) -> str:
    return "undefined" if r != r else f"{r:.2f}"


def _figure(f: dict, narrow: bool):
    g = f["grid"]
    maps, labels = [], []
    for m in METHODS:  # wide: trained maps in the top row, randomised below; phone: pairs
        pair = [f["trained"][m].reshape(g, g), f["randomised"][m].reshape(g, g)]
        names = [NAMES[m], f"random: ρ {_rho(f['rho'][m])}"] if narrow else [
            NAMES[m], f"ρ = {_rho(f['rho'][m])}"]
        maps.append(pair)
        labels.append(names)
    order = ([p for pair in maps for p in pair], [n for pair in labels for n in pair])
    if not narrow:
        order = ([p[0] for p in maps] + [p[1] for p in maps],
                 [n[0] for n in labels] + [n[1] for n in labels])
    return tiles(order[0], order[1], 2 if narrow else len(METHODS),
                 title="Trained vs random weights" if narrow else
                 f"“{f['target']}”: the maps on the trained model and with {RANDOM}",
                 value_name=VALUE, zmin=-1, zmax=1,
                 row_names=None if narrow else ["trained", RANDOM],
                 height=900 if narrow else 330)


def figure(x: deck.View, f: dict) -> None:
    wide = _figure(f, narrow=False)
    if deck.presenting():
        deck.chart(wide, key=WHY_SANITY)
        return
    # its own phone layout (pairs, two to a row), both drawn: the screen's width shows one
    narrow = readable(_figure(f, narrow=True))
    phone.both(WHY_SANITY, lambda: st.plotly_chart(readable(wide), key=WHY_SANITY),
               lambda: st.plotly_chart(narrow, key=keys.phone(WHY_SANITY), width="stretch"))


def meanwhile(x: deck.View) -> None:
    """While the randomised copy's maps are computed: the trained ones (the maps step's, kept),
    the row the random weights' maps will be set against; nothing if they are not there yet."""
    mask = session.chosen_mask()
    target = compute.target(x.inp, x.name, mask)
    try:
        found = jobs.ready("maps", x.inp, x.name, mask, target)
    except jobs.NotReady:
        return
    g = x.c.grid
    fig = tiles([wf.scaled(found[m].patches.double().numpy()).reshape(g, g) for m in METHODS],
                [NAMES[m] for m in METHODS], 3,
                title=f"“{target.label}”: the maps on the trained model ({RANDOM}: being "
                      f"computed)", value_name=VALUE, zmin=-1, zmax=1, height=520)
    deck.chart(readable(fig), key=WHY_SANITY)


def _names(methods: list[str]) -> str:
    said = [NAMES[m] for m in methods]
    return said[0] if len(said) == 1 else ", ".join(said[:-1]) + " and " + said[-1]


def words(x: deck.View, f: dict) -> str:
    t, kept = f["threshold"], f["survivors"]
    rule = (f"(rank correlation ρ between the trained and the randomised map above {t:g}; "
            f"ρ near 1: the same ranking of patches, near 0: unrelated)")
    if kept:
        said = (f"{_names(kept)} barely changed when every weight was drawn at random {rule}: "
                f"{'that map' if len(kept) == 1 else 'those maps'} cannot be explaining what "
                f"the model learned.")
    else:
        said = (f"No map kept its ranking when every weight was drawn at random {rule}: each "
                f"depends on the weights, as a map of what the model learned must (needed, "
                f"not enough).")
    if f["undefined"]:
        said += (f" {_names(f['undefined'])}: ρ undefined, a map constant on one of the two "
                 f"models.")
    return said


def describe(x: deck.View, f: dict) -> str:
    rhos = "; ".join(f"{NAMES[m]} ρ {_rho(f['rho'][m])}" for m in METHODS)
    return (f"Six pairs of {f['grid']} by {f['grid']} patch maps for “{f['target']}”, one pair "
            f"per method: the map on the trained model (the top row; on a phone the left one) "
            f"and on the model with {RANDOM} (the bottom row; on a phone the right one), each "
            f"map scaled to its own largest value (red for the answer, blue against). Rank "
            f"correlation between the two maps of each pair: {rhos}.")


def notes(x: deck.View, f: dict) -> str:
    return ("The copy keeps the input layers (patch embedding, positions, the prefix tokens; "
            "a captioner's word embedding where its word head shares it) and re-initialises "
            "every block and the output layer as the model was first initialised (Adebayo et "
            "al. 2018, cascading randomisation, all the way down). A low ρ is needed, not "
            "enough: a random map has one too; the deletion test says whether the map ranks "
            "what the model used.")


def question(x: deck.View, f: dict) -> Question | None:
    best = f["most_kept"]
    if best is None:
        return None
    return Question("Which method's map changed least when the weights were randomised?",
                    f"{NAMES[best]}: ρ {_rho(f['rho'][best])} between its map on the trained "
                    f"model and on the random one.",
                    method_choice(f["rho"], best))
