"""Step 1: guess first. Before any map is shown, the student clicks the k patches they think the
model relies on, on their own image; the guess is put through the same deletion test as the six
methods (vit_core.explain.why_guess_facts: the guess first, then the rest in a fixed random
order) and its AUC is shown beside theirs and random orders'.

Alone, "Test my guess" scores it. In a live class the student sends it (the question box's Send:
ui/live/student.py, its scores computed then on their own image and kept with the answer); the
scores appear when the teacher reveals, and the teacher's box counts how many guessed better than
attention and than random. On a big model the scores take a while (the table, ~70 s on ViT-B/16):
Send keeps the guess marked pending and a thread of the class's scores it behind the pages'
passes (ui/live/student.py); Test and Reveal show a progress bar meanwhile (ui/stages/why/jobs).

The step `holds`: the stage's later steps, which show the maps, are not drawn until a student in
a class has sent a guess or the teacher revealed, and alone until the student tested a guess,
revealed or chose to skip guessing (ui/lesson/deck); a teacher's slides are never held."""

from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go
import streamlit as st

from ui import keys
from ui.drawing import figures
from ui.lesson import deck
from ui.lesson.replies import PatchSet
from ui.selection import session
from ui.stages.why import compute, guess_compute, jobs
from ui.stages.why.keys import (
    WHY_GUESS_AGAIN,
    WHY_GUESS_GRID,
    WHY_GUESS_PICK,
    WHY_GUESS_SCORES,
    WHY_GUESS_SENT,
    WHY_GUESS_SKIP,
    WHY_GUESS_TEST,
    WHY_GUESS_TESTED,
    WHY_OPEN,
)
from ui.stages.why.maps import NAMES
from vit_core.explain import why_guess_facts as gf

STAGE, STEP = "why", "guess"
TITLE = "Guess first: which patches?"
AXIS = "deletion AUC (lower: the answer fell faster)"
ASKS = ("answer", "word", "chosen", "k", "shown", "verdict", "rows")  # what `question` reads


@dataclass(frozen=True)
class Facts:
    k: int  # patches a guess names (why_guess_facts.guess_size)
    n: int  # patches of the image
    grid: int
    answer: str  # what the model answers (the class, or the caption's first word)
    word: bool  # the answer is a caption's first word (a captioner)
    chosen: tuple[int, ...]  # the session's choice so far
    in_class: bool  # a student of a live class
    sent: tuple[int, ...] | None  # in a class: the guess sent
    shown: bool  # the scores are shown (alone: tested or revealed; in a class: revealed)
    verdict: gf.Verdict | None  # the guess scored, when shown and there is one
    rows: tuple = ()  # compute.table's rows, when shown


HELD = ("The maps and tests below stay hidden until you test your guess (or skip guessing): "
        "seeing them first would give the guess away.")


def opened() -> bool:
    """Alone: the student tested a guess, revealed the scores or skipped guessing."""
    ss = st.session_state
    return bool(ss.get(WHY_OPEN) or ss.get(WHY_GUESS_TESTED) or ss.get(keys.reveal(STAGE, STEP)))


def holds(view) -> bool | str:
    """No later step (they show maps) for a student in a class until they sent or Reveal; for
    a student alone (HELD, said under the step) until `opened`; never on a teacher's slides."""
    asked = deck.lesson().asked(STAGE, STEP)
    if asked is not None:
        return asked.sent is None and not asked.revealed
    return False if view.presenting or opened() else HELD


def facts(x: deck.View) -> Facts:
    c, ss = x.c, st.session_state
    k, n, mask = gf.guess_size(c.grid), c.num_patches, session.chosen_mask()
    pick = [int(p) for p in ss.get(WHY_GUESS_PICK) or [] if 0 <= int(p) < n][:k]
    if pick != ss.get(WHY_GUESS_PICK):
        ss[WHY_GUESS_PICK] = pick  # another model (fewer patches) since: its own choice
    asked = deck.lesson().asked(STAGE, STEP)
    sent = None
    if asked is None:  # alone (or teaching): Test, or the Reveal toggle
        guess = ss.get(WHY_GUESS_TESTED)
        shown = guess is not None or bool(ss.get(keys.reveal(STAGE, STEP)))
    else:
        sent = tuple((asked.sent.scores or {}).get("patches", ())) if asked.sent else None
        guess, shown = sent, asked.revealed
    target = compute.target(x.inp, x.name, mask)
    verdict = rows = None
    if shown:  # on a big model: NotReady until computed (the step shows a progress bar)
        verdict = jobs.ready("guess", x.inp, x.name, mask, target, guess) if guess else None
        rows = jobs.ready("table", x.inp, x.name, mask, target)
    return Facts(k, n, c.grid, target.label, target.is_word, tuple(pick), asked is not None,
                 sent, shown, verdict, tuple(rows or ()))


# ---------------------------------------------------------------- the figure
def _toggle(k: int):
    def clicked() -> None:
        """on_select of the grid: a click adds the patch to the guess (up to k) or takes it
        out."""
        ss = st.session_state
        chosen = list(ss.get(WHY_GUESS_PICK) or [])
        for point in (ss.get(WHY_GUESS_GRID) or {}).get("selection", {}).get("points", []):
            data = point.get("customdata")
            if data is None:
                continue
            p = int(data[0] if isinstance(data, list) else data)
            if p in chosen:
                chosen.remove(p)
            elif len(chosen) < k:
                chosen.append(p)
        ss[WHY_GUESS_PICK] = chosen

    return clicked


def _test() -> None:
    st.session_state[WHY_GUESS_TESTED] = tuple(sorted(st.session_state[WHY_GUESS_PICK]))
    st.session_state[WHY_OPEN] = True


def _skip() -> None:
    st.session_state[WHY_OPEN] = True


def _again() -> None:
    st.session_state[WHY_GUESS_TESTED] = None
    st.session_state[keys.reveal(STAGE, STEP)] = False


def figure(x: deck.View, f: Facts) -> None:
    if f.shown:
        deck.chart(scores_figure(f), key=WHY_GUESS_SCORES)
        if not f.in_class:
            st.button("Guess again", key=WHY_GUESS_AGAIN, on_click=_again,
                      icon=":material/replay:")
        return
    P = x.c.patch_size
    if f.sent is not None:  # sent, waiting for the teacher's Reveal
        deck.chart(figures.labelled_patches(x.prep.crop, P, f"Your guess, sent: {_listed(f.sent)}",
                                            outlined=f.sent), key=WHY_GUESS_SENT)
        return
    deck.chart(figures.patch_set_grid(
        x.prep.crop, P, f.chosen, show_index=f.grid <= 16,
        title=f"Click the {f.k} patches the model relies on ({len(f.chosen)} of {f.k} chosen)"),
        key=WHY_GUESS_GRID, on_select=_toggle(f.k), selection_mode="points",
        config={"displayModeBar": False})
    _pick(f)


def _pick(f: Facts) -> None:
    """The keyboard's way to choose (the grid's cells are not tab stops), and Test (alone); on
    a slide in one row of buttons under the grid (the numbers in a popover), so that the grid
    keeps the slide's height."""
    slide = deck.presenting()
    with st.container(horizontal=True) if slide else st.container():
        with st.popover("Choose by number", icon=":material/dialpad:") if slide else \
                st.container():
            st.multiselect(f"…or choose the {f.k} patches by number (0 to {f.n - 1}, row by "
                           f"row)", list(range(f.n)), key=WHY_GUESS_PICK, max_selections=f.k,
                           placeholder="Patch numbers")
        _test_button(f)


def _test_button(f: Facts) -> None:
    if f.in_class:
        return
    st.button("Test my guess", key=WHY_GUESS_TEST, on_click=_test, type="primary",
              disabled=len(f.chosen) != f.k, icon=":material/science:")
    if not deck.presenting() and not opened():
        st.button("Skip guessing: show the maps", key=WHY_GUESS_SKIP, on_click=_skip,
                  icon=":material/skip_next:")


def scores_figure(f: Facts) -> go.Figure:
    """Horizontal bars: the guess's deletion AUC (if any), each method's, random orders' mean
    with its spread; a dashed line where "better than random" begins."""
    v, methods = f.verdict, [r for r in f.rows if r.method != "random"]
    rand = next(r for r in f.rows if r.method == "random")
    spread = float(rand.deletion_spread or 0.0)
    names = ([f"Your guess ({f.k} patches)"] if v else []) + [NAMES.get(r.method, r.method)
                                                              for r in methods]
    aucs = ([v.auc] if v else []) + [float(r.deletion_auc) for r in methods]
    fig = go.Figure([
        go.Bar(y=names, x=aucs, orientation="h", text=[f"{a:.3f}" for a in aucs],
               textposition="outside", marker_color=(["#ff2d55"] if v else []) +
               ["#4a6fa5"] * len(methods), name="one order", showlegend=False),
        go.Bar(y=["Random orders"], x=[float(rand.deletion_auc)], orientation="h",
               error_x=dict(type="data", array=[spread], color="#333"),
               text=[f"{rand.deletion_auc:.3f} ± {spread:.3f}"], textposition="inside",
               insidetextanchor="start",
               marker_color="#9e9e9e", showlegend=False)])
    edge = float(rand.deletion_auc) - gf.RANDOM_SPREADS * spread
    fig.add_vline(x=edge, line=dict(dash="dash", color="#333"),
                  annotation_text="better than random: left of this line",
                  annotation_position="top")
    fig.update_layout(title=f"Greying the patches in each order: how fast “{f.answer}” fell",
                      height=140 + 34 * (len(names) + 1), margin=dict(l=10, r=30, t=60, b=50),
                      xaxis=dict(title=AXIS, range=[0, 1.1]),
                      yaxis=dict(title="order of the patches", autorange="reversed"))
    return fig


# ---------------------------------------------------------------- the words
SPREAD = f"{gf.RANDOM_SPREADS:g} × their spread, the std over the seeds"


def _name(method: str) -> str:
    return "random orders" if method == "random" else NAMES.get(method, method)


def _answers(f: Facts) -> str:
    return (f"The model's caption begins with “{f.answer}”" if f.word else
            f"The model answers “{f.answer}”")


ATT = _name(gf.ATTENTION)


def _listed(patches) -> str:
    return "patches " + ", ".join(str(p) for p in sorted(patches))


def _verdict_words(f: Facts) -> str:
    v = f.verdict
    att = v.methods.get(gf.ATTENTION)
    said = (f"Your guess ({_listed(v.patches)}) has a deletion AUC of {v.auc:.3f} (lower: the "
            f"answer fell faster). ")
    if att is not None:
        said += (f"Against {ATT} ({att:.3f}): "
                 f"{'faster' if v.better_than_attention else 'not faster'}. ")
    said += (f"Against random orders ({v.random_mean:.3f} ± {v.random_spread:.3f}): "
             f"{'faster' if v.better_than_random else 'not faster'} by more than {SPREAD}.")
    return said + f" It beat {len(v.beaten)} of the {len(v.methods)} methods."


def _methods_words(f: Facts) -> str:
    best = min((r for r in f.rows if r.method != "random"), key=lambda r: r.deletion_auc)
    rand = next(r for r in f.rows if r.method == "random")
    return (f"No guess was scored. The fastest method here is {_name(best.method)} (deletion "
            f"AUC {best.deletion_auc:.3f}); random orders {rand.deletion_auc:.3f}.")


def words(x: deck.View, f: Facts) -> str:
    if f.shown:
        return _verdict_words(f) if f.verdict else _methods_words(f)
    if f.sent is not None:
        return ("Your guess is sent. Its score, beside the six methods', appears here when the "
                "teacher reveals the answer.")
    how = ("Send it with the box below" if f.in_class else "Then press Test my guess")
    return (f"{_answers(f)}. Before you see any map: which {f.k} of the "
            f"{f.n} patches do you think it relies on most? Click them ({len(f.chosen)} of "
            f"{f.k} chosen). {how}: they are greyed first, then the rest in a fixed random "
            f"order, and the answer's probability is read after each, as each map's order is "
            f"tested.")


def describe(x: deck.View, f: Facts) -> str:
    if f.shown:
        rand = next(r for r in f.rows if r.method == "random")
        spread = float(rand.deletion_spread or 0.0)
        said = ", ".join(f"{_name(r.method)} {r.deletion_auc:.3f}" + (
            f" ± {spread:.3f}" if r is rand else "") for r in f.rows)
        mine = f"your guess {f.verdict.auc:.3f}, " if f.verdict else ""
        return (f"Horizontal bars of deletion AUC from 0 to 1 (lower: the answer fell faster): "
                f"{mine}{said}; a dashed line at "
                f"{rand.deletion_auc - gf.RANDOM_SPREADS * spread:.3f} marks random orders' "
                f"mean minus {SPREAD}.")
    patches = f.sent if f.sent is not None else f.chosen
    return (f"Your image with its {f.grid}×{f.grid} grid of patches, numbered row by row from 0 "
            f"to {f.n - 1}; outlined: " + (_listed(patches) if patches else "none yet") + ".")


def notes(x: deck.View, f: Facts) -> str:
    return (f"A guess names {f.k} patches (half a row), not an order of all {f.n}: the deletion "
            f"test greys the guessed ones first (in index order), then the rest in a fixed "
            f"random order (seed {gf.REST_SEED}), one patch a step on a grey baseline, as the "
            f"table tests each map. Better than {ATT}: a lower deletion AUC; better "
            f"than random: below random orders' mean by more than {SPREAD}. No map is shown "
            f"on this step.")


def question(x: deck.View, f: Facts) -> deck.Question:
    inp, name, mask = x.inp, x.name, session.chosen_mask()

    def scores(patches) -> dict:  # on Send: the guess scored on this student's own image
        return guess_compute.scores_now(inp, name, mask, patches)

    def later(patches) -> dict:  # after Send, when `scores` had to mark it pending
        return guess_compute.scores_later(inp, name, mask, patches)

    if f.shown:
        said = _verdict_words(f) if f.verdict else _methods_words(f)
    else:
        said = ("Each guess is scored on its own image: its deletion AUC beside the six "
                "methods' and random orders' (lower: the answer fell faster).")
    return deck.Question(
        f"Which {f.k} patches of your image does the model rely on most to "
        f"{'write' if f.word else 'answer'} “{f.answer}”? Guess before you see any map.", said,
        PatchSet(f.k, f.chosen, scores=scores, later=later, summary=class_words,
                 prompt="Your guess, chosen on the grid above"))


def class_words(found: list) -> str:
    """The teacher's line: how many of the class's guesses beat attention and random, each on
    its sender's own image."""
    s = gf.summary([a.scores for a in found])
    waiting = sum(1 for a in found if a.scores.get(guess_compute.PENDING))
    failed = sum(1 for a in found if guess_compute.UNSCORED in a.scores)
    still = (f" {waiting} more {'is' if waiting == 1 else 'are'} still being scored (the model "
             f"is large: each guess is scored once its image's maps are tested)." if waiting
             else "") + (f" {failed} could not be scored (Answers says why)." if failed else "")
    if not s.guesses:
        return "No guess scored yet." + still
    return (f"Of {s.guesses} guesses, each scored on its sender's own image: "
            f"**{s.better_than_attention}** removed the answer faster than {ATT} (a "
            f"lower deletion AUC), **{s.better_than_random}** faster than random orders (below "
            f"their mean AUC by more than {SPREAD}). Best guess: AUC {s.best:.3f}." + still)
