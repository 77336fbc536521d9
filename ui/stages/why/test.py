"""Step "Put them to the test": deletion and insertion curves of every map's order and of random
orders (mean ± spread), the AUCs in the legend, and a Play that greys the fastest order's
patches a group at a time on the image while its probability falls. The sentence and the
question are worded from faithfulness.table's numbers (vit_core.explain.why_facts)."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from ui.drawing.equation import latex
from ui.drawing.figures import why as draw
from ui.lesson import deck, player
from ui.selection import session
from ui.stages.why import compute, jobs
from ui.stages.why.keys import WHY_FRAME, WHY_PLAY, WHY_RACE
from ui.stages.why.maps import NAMES, method_choice
from vit_core.explain import why_facts
from vit_core.explain.attribution import METHODS

TITLE = "Put them to the test"


@dataclass(frozen=True)
class Facts:
    target: str
    word: bool
    deletion: dict[str, float]  # method -> deletion AUC
    insertion: dict[str, float]  # method -> insertion AUC
    random_mean: float  # random orders' mean deletion AUC
    random_spread: float  # and its spread (population std over the seeds)
    random_insertion: tuple[float, float]
    fastest: str  # the method whose order removed the answer fastest (its name)
    gap: float  # random_mean minus the fastest's deletion AUC
    spreads: float  # gap in random spreads
    clearly: bool  # gap >= MIN_GAP and >= CLEAR_SPREADS spreads
    beat: int  # methods clearly faster than random
    behind: int  # methods slower than random's mean
    curves: dict  # kind -> (lines, band) for the figure
    frames: tuple  # why_facts.Frame of the Play, the fastest order's
    patch_size: int


def facts(x: deck.View) -> Facts:
    mask = session.chosen_mask()
    target = compute.target(x.inp, x.name, mask)
    rows = jobs.ready("table", x.inp, x.name, mask, target)
    t = why_facts.test_facts(rows)
    by = {r.method: r for r in rows}
    curves = {kind: _lines(by, kind) for kind in ("deletion", "insertion")}
    frames = why_facts.play_frames(by[t.fastest].deletion, x.c.num_patches)
    return Facts(target.label, target.is_word, t.deletion, t.insertion, *t.random_deletion,
                 t.random_insertion, NAMES[t.fastest], t.gap, t.spreads, t.clearly,
                 len(t.beat_random), len(t.behind_random), curves, tuple(frames),
                 x.c.patch_size)


def _lines(by: dict, kind: str) -> tuple[list[dict], dict]:
    """The figure's lines for one kind of curve: each method's, and random's band."""
    lines = []
    for m in METHODS:
        c = getattr(by[m], kind)
        lines.append(dict(method=m, x=c.x.numpy(), y=c.y.double().numpy()))
    r = getattr(by["random"], kind)
    mean, std = r.mean.double().numpy(), r.std.double().numpy()
    band = dict(x=r.x.numpy(), mean=mean, lo=mean - std, hi=mean + std, seeds=len(r.seeds),
                band_name="random orders: mean ± spread")
    return lines, band


def _named_curves(f: Facts) -> dict:
    """The curves with their legends: each method's AUCs, random's mean ± spread."""
    ri, rs = f.random_insertion
    out = {}
    for kind, (lines, band) in f.curves.items():
        named_lines = [{**ln, "name": f"{NAMES[ln['method']]} {f.deletion[ln['method']]:.3f} / "
                                      f"{f.insertion[ln['method']]:.3f}"} for ln in lines]
        out[kind] = (named_lines, {**band, "name": (
            f"{band['seeds']} random orders {f.random_mean:.3f} ± {f.random_spread:.3f} / "
            f"{ri:.3f} ± {rs:.3f}")})
    return out


def equation(x: deck.View) -> None:
    """What the areas in the legend are, with this model's patch count."""
    latex(r"\mathrm{AUC} = \int_0^1 p\big(\text{answer} \mid \text{a fraction } x "
          r"\text{ of the } N = " + str(x.c.num_patches) + r"\text{ patches greyed}\big)"
          r"\,dx")


def frame(f: Facts) -> int:
    """The Play's frame this session shows (kept within this image's frames)."""
    return min(int(st.session_state.get(WHY_FRAME, 0)), len(f.frames) - 1)


def figure(x: deck.View, f: Facts) -> None:
    n = len(f.frames) - 1

    def rewind() -> None:
        st.session_state[WHY_FRAME] = 0

    def advance() -> bool:
        st.session_state[WHY_FRAME] = min(frame(f) + 1, n)
        return st.session_state[WHY_FRAME] < n

    left, right = st.columns([1.4, 4], vertical_alignment="bottom")
    with left:
        player.play("why-race", WHY_PLAY, rewind, advance,
                    help=f"Grey the patches in {f.fastest}'s order, one group every "
                         f"{player.PLAY_EVERY:g} s, and watch the probability.")
    right.slider("Groups of patches greyed", 0, n, key=WHY_FRAME,
                 help=f"{n} groups, in {f.fastest}'s order (the fastest here)")
    now = f.frames[frame(f)]
    title = (f"Grey each map's patches first: does {named_of(f)} fall? "
             f"Fastest here: {f.fastest}")
    fig = draw.race(x.prep.crop, f.patch_size, now.greyed, _named_curves(f), title,
                    (f"{now.removed} patches greyed: P = {now.probability:.2f}",
                     "deletion (lower area: faster fall)",
                     "insertion (higher area: faster return)"),
                    marker=(now.removed / x.c.num_patches, now.probability))
    deck.chart(fig, key=WHY_RACE)


def named_of(f: Facts) -> str:
    return f"the word “{f.target}”" if f.word else f"the class “{f.target}”"


def words(x: deck.View, f: Facts) -> str:
    auc = f.deletion[_key(f.fastest)]
    first = (f"Greying the patches in {f.fastest}'s order removed {named_of(f)} fastest: its "
             f"deletion AUC is {auc:.3f}, against {f.random_mean:.3f} ± {f.random_spread:.3f} "
             f"for random orders")
    if f.clearly:
        verdict = (f", {f.gap:.3f} lower ({f.spreads:.1f} random spreads; we call a gap of at "
                   f"least {why_facts.CLEAR_SPREADS:g} spreads and {why_facts.MIN_GAP:g} "
                   f"clear).")
    else:
        verdict = (f": not clearly faster than random (a clear gap is at least "
                   f"{why_facts.CLEAR_SPREADS:g} random spreads and {why_facts.MIN_GAP:g}).")
    return (f"{first}{verdict} {f.beat} of {len(f.deletion)} maps clearly beat random orders; "
            f"{f.behind} did worse than their mean. A grey patch is not what the model was "
            f"trained on, so compare with random orders, which grey just as much.")


def _key(name: str) -> str:
    return next(m for m, n in NAMES.items() if n == name)


def describe(x: deck.View, f: Facts) -> str:
    now = f.frames[frame(f)]
    best_ins = max(f.insertion, key=f.insertion.get)
    ri, rs = f.random_insertion
    return (f"Left: the image with {now.removed} patches greyed in {f.fastest}'s order; the "
            f"probability of {named_of(f)} is {now.probability:.2f} there (it was "
            f"{f.frames[0].probability:.2f} with none greyed). Middle: the probability as "
            f"patches are greyed, one line per map, and a grey band for random orders (their area "
            f"{f.random_mean:.3f} ± {f.random_spread:.3f}); the lowest area is {f.fastest}'s, "
            f"{f.deletion[_key(f.fastest)]:.3f}. Right: the probability as patches are put "
            f"back on grey, the same lines and band (their area {ri:.3f} ± {rs:.3f}); the highest "
            f"area is {NAMES[best_ins]}'s, {f.insertion[best_ins]:.3f}.")


def question(x: deck.View, f: Facts) -> deck.Question:
    auc = f.deletion[_key(f.fastest)]
    how = ("clearly faster than random" if f.clearly else "but not clearly faster than random")
    answer = (f"{f.fastest}: its order's deletion AUC was the lowest, {auc:.3f}, "
              f"{how} ({f.random_mean:.3f} ± {f.random_spread:.3f}).")
    return deck.Question("Which method's order removed the answer fastest on your image?",
                         answer, method_choice(f.deletion, _key(f.fastest)))


ASKS = ("fastest", "deletion", "random_mean", "random_spread", "clearly")
