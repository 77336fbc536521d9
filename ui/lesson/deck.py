"""A stage is a deck of steps, declared as data (as st.navigation declares pages).

Each stage module in ui/stages/ declares `STAGE = Stage(...)`: its slug, title, menu name and
icon, the story told on its first step, how to load what it shows (`view`), and its steps in
order; its number ("4 · …") is its place in ui/stages.STAGES, the one list of stages. A `Step` has:

- `title` (a string, or a function of the model's config);
- `facts(view)`: the numbers the step shows and says, computed once per run (no wording);
- `figure(view, facts)`: draws the one key figure;
- `words(view, facts)`: the sentence(s) said with the figure, worded from those facts;
- `notes(view, facts)`: the longer explanation (under the figure on the page; in presenter mode
  the speaker notes, so it never pushes the figure off the slide);
- `describe(view, facts)`: the figure's text alternative, worded from its facts (the axes, the
  range, where the maximum is): under the figure on the page, visually hidden on a slide and
  said in its speaker notes (docs/accessibility.md);
- `question(view, facts)`: the question to ask, with its answer worded from `facts` alone (it
  computes no number of its own);
- `asks`: the facts its question reads, by name (fields of what `facts` returns); each one that
  is a number is one its figure draws, so the answer is what the figure shows
  (tests/test_question_facts.py reads both);
- `controls`: the shared controls it is changed with ("layer", "head", "patch", "play");
- `reads`: what it asks ui/state for beyond the trace, as the functions that ask it (each
  `(ui/tour.Ask) -> [calls]`; ui/ahead.plan calls them for the read-ahead);
- `applies(config)`: False for the model families it does not apply to.
- `holds(view)`: true while the steps after it must not be shown (a question asked before the
  answer is seen: the later steps would give it away); the page stops under it (a string: the
  sentence said there), a session following a class shows it in place of a later step.

`run(STAGE)` is a whole page. Normally it draws the stage's controls once, then every step
one after another (the page a student scrolls); in presenter mode it draws the current step
alone, as a slide: controls, the figure filling the screen that is left, the words, the question.
The header (ui/lesson/presenter.py), the step count, the link's ?step=, the read-ahead and the
tests all read the same list: nothing counts positions by hand.

The deck knows nothing of a live class: a lesson joins in at the points `Lesson` names (does the
page show one step, a question's box, the header's own controls, the stages Next walks, the
session's own address), each doing nothing by default; app.py joins the live class (ui/live/
lesson.py) with `join` at start. The deck imports neither the class nor the stages.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from ui import keys
from ui.drawing import phone, phone_figures
from ui.drawing.readable import readable
from ui.lesson import player
from ui.lesson import steps as position
from ui.lesson.replies import Choice, Number, PatchPick, Reply, Words  # noqa: F401 (stages use deck.Choice…)
from ui.selection import controls, session


@dataclass(frozen=True)
class Question:
    question: str
    answer: str  # the answer said on Reveal, worded from this model's and image's numbers
    reply: Reply = Words()  # how a student in a live class answers it (ui/live)


def _always(config) -> bool:
    return True


def _none(view, facts) -> None:
    return None


# A read: given what a session shows (ui/tour.Ask), the calls into ui/state's caches that compute
# what a step reads beyond the trace (ui/serving/tour.py has the reads several stages share).
Read = Callable[[Any], list[Callable[[], Any]]]


@dataclass(frozen=True)
class Step:
    key: str  # a stable name within the stage ("pattern"): widget keys, tests, speaker notes
    title: str | Callable[[Any], str]
    figure: Callable[[Any, Any], None]
    facts: Callable[[Any], Any] = lambda view: None
    words: Callable[[Any, Any], str | None] = _none
    notes: Callable[[Any, Any], str | None] = _none
    question: Callable[[Any, Any], Question | None] = _none
    controls: tuple[str, ...] = ()  # names in CONTROLS, drawn above the figure
    reads: tuple[Read, ...] = ()  # what the read-ahead computes for it (ui/ahead.plan calls each)
    applies: Callable[[Any], bool] = _always
    asks: tuple[str, ...] = ()  # the facts `question` reads; `figure` draws each number of them
    holds: Callable[[Any], bool | str] = lambda view: False  # true: no later step shown yet
    # the figure's text alternative; last, so that a stage passing the fields before it by
    # position (ui/stages/mae: figure, facts, words, notes, question) keeps its meaning
    describe: Callable[[Any, Any], str | None] = _none

    def title_for(self, config) -> str:
        return self.title(config) if callable(self.title) else self.title


@dataclass(frozen=True)
class Stage:
    slug: str  # its address, `?page=<slug>` (and the stage's part of widget keys)
    name: str  # the page's title without its number: "Attention heads"
    story: str  # two or three sentences said to the class on the stage's first step
    view: Callable[[], Any]  # loads the session's image, model and trace (and the stage's extras)
    steps: tuple[Step, ...]
    intro: Callable[[Any], str | None] = lambda view: None  # a paragraph atop the normal page
    extra_reads: tuple[Read, ...] = field(default=())  # reads of the stage as a whole
    nav: str = ""  # its name in the menu, if shorter than `name`
    icon: str | None = None  # its icon in the menu (":material/visibility:")
    number: int = 0  # its place in the tour (ui/stages.STAGES numbers it; the first is 0)

    @property
    def title(self) -> str:
        """The page's title: "4 · Attention heads" (the first stage's carries no number)."""
        return f"{self.number} · {self.name}" if self.number else self.name

    @property
    def nav_title(self) -> str:
        """Its title in the menu: "4 · Attention heads"."""
        name = self.nav or self.name
        return f"{self.number} · {name}" if self.number else name

    def steps_for(self, config) -> list[Step]:
        """The steps that apply to a model with this config, in order (never empty)."""
        found = [s for s in self.steps if s.applies(config)]
        assert found, f"stage {self.slug} has no step for this model"
        return found


# ---------------------------------------------------------------- the session's view
@dataclass(frozen=True)
class View:
    """What every stage shows: the session's image, model and trace, and the shared choices."""

    inp: Any
    name: str
    model: Any
    prep: Any
    tr: Any
    layer: int
    head: int
    patch: int
    presenting: bool

    @property
    def c(self):
        return self.model.config


def load(text_free_note: bool = False) -> View:
    """The session's view (ui/session.load_current draws its notes: fallbacks, random weights)."""
    inp, name, model, prep, tr = session.load_current(text_free_note=text_free_note)
    ss = st.session_state
    return View(inp, name, model, prep, tr, int(ss[keys.LAYER]), int(ss[keys.HEAD]),
                int(ss[keys.PATCH]), presenting())


def presenting() -> bool:
    return bool(st.session_state.get(keys.PRESENTER))


def one_step() -> bool:
    """Does the page show one step? In presenter mode, and for a student following a class
    (the class's step, on the student's own image: ui/live/student.py)."""
    return presenting() or lesson().follows()


# ---------------------------------------------------------------- shared controls
def _play(view, where) -> None:
    L = view.c.depth
    if L < 2:
        return

    def rewind() -> None:
        if st.session_state[keys.LAYER] >= L - 1:
            st.session_state[keys.LAYER] = 0

    def advance() -> bool:
        st.session_state[keys.LAYER] = min(st.session_state[keys.LAYER] + 1, L - 1)
        return st.session_state[keys.LAYER] < L - 1

    player.play("layers", keys.PLAY_LAYERS, rewind, advance, where=where,
                help=f"Show the blocks one after another, one every {player.PLAY_EVERY:g} s, "
                     f"up to block {L - 1}.")


CONTROLS: dict[str, Callable[[Any, Any], Any]] = {
    "layer": lambda view, where: controls.layer(view.c, where=where),
    "head": lambda view, where: controls.head(view.c, where=where),
    "patch": lambda view, where: controls.patch(view.c, where=where),
    "play": _play,
}


def draw_controls(view, names: list[str]) -> None:
    """One row with the named controls, in the order given (each drawn once per run)."""
    if not names:
        return
    weights = [1.4 if n == "play" else 4 for n in names]
    for col, name in zip(st.columns(weights, vertical_alignment="bottom"), names, strict=True):
        with col:
            CONTROLS[name](view, col)


# ---------------------------------------------------------------- drawing
FIGURE = keys.DECK_FIGURE  # the key figure's container: in presenter mode it fills what is left


def run(stage: Stage) -> None:
    """Draw the stage: every step (a page to scroll), or the current step (presenter mode)."""
    view = stage.view()
    st.title(stage.title)
    steps = stage.steps_for(view.c)
    if view.presenting or one_step():
        at = position.index_in(stage.slug, len(steps))
        step = next((s for s in steps[:at] if s.holds(view)), steps[at])
        if step is not steps[at]:
            st.caption(HELD_HERE)
        names = [n for n in CONTROLS if n in step.controls]
        draw_controls(view, names)
        facts = step.facts(view)
        with st.container(key=FIGURE):
            step.figure(view, facts)
        alt = step.describe(view, facts)
        _describe(stage, step, alt, hidden=True)
        _say(step.words(view, facts))
        notes = [f"**Describe the figure:** {alt}"] if alt else []
        notes += [stage.story] if step is steps[0] else []
        notes += [t for t in (stage.intro(view) if step is steps[0] else None,
                              step.notes(view, facts)) if t]
        speaker_notes(notes)
        _ask(stage, step, view, facts)
        return
    intro = stage.intro(view)
    if intro:
        st.write(intro)
    draw_controls(view, [n for n in CONTROLS if any(n in s.controls for s in steps)])
    for step in steps:
        st.subheader(step.title_for(view.c))
        facts = step.facts(view)
        with st.container(key=keys.step_box(stage.slug, step.key)):
            step.figure(view, facts)
        _describe(stage, step, step.describe(view, facts))
        _say(step.words(view, facts))
        notes = step.notes(view, facts)
        if notes:
            st.caption(notes)
        _ask(stage, step, view, facts)
        if held := step.holds(view):
            st.caption(held if isinstance(held, str) else HELD_BELOW)
            break


HELD_HERE = ("The class has moved on to a later step; this step's question comes first: what "
             "the later steps show would give its answer away.")
HELD_BELOW = ("The next steps appear once you have answered this step's question (or the "
              "teacher reveals its answer): they would give the answer away.")


def speaker_notes(texts: list[str]) -> None:
    """Write the step's notes into the presenter's hidden notes box (ui/lesson/presenter.py shows it
    in the speaker notes' own window, never over the slide)."""
    where = st.session_state.get(keys.PRESENTER_NOTES)
    if where is None:
        return
    with where:
        for t in texts or ["This step has no further notes."]:
            st.markdown(t)


def chart(fig, key: str, **kwargs) -> Any:
    """st.plotly_chart of a key figure: its own height on the page; in presenter mode the height
    the slide leaves it (the figure's container sets it: ui/presenter.CSS), on a copy (a figure
    may be shared by every session: ui/stages/masks._same_for_every_image). Its text is never
    smaller than readable.TEXT_PX (the copy's fonts are raised). A figure that needs another
    layout on a phone (ui/phone_figures.for_phone) is drawn twice, once for a phone."""
    if presenting():
        fig = readable(fig, height=None, autosize=True)
        return st.plotly_chart(fig, key=key, height="stretch", **kwargs)
    fig = readable(fig)
    narrow = None if "on_select" in kwargs else phone_figures.for_phone(fig)
    if narrow is None:
        return st.plotly_chart(fig, key=key, **kwargs)
    # panels side by side (on a phone one under another), or a long title (wrapped there):
    # both drawn, the screen's width shows one (ui/drawing/phone.py)
    phone.both(key, lambda: st.plotly_chart(fig, key=key, **kwargs),
               lambda: st.plotly_chart(narrow, key=keys.phone(key), width="stretch"))


SLIDE_TABLE_ROWS = 12  # a table on a slide shows its first rows in large type, then a count


def table(rows: list[dict], key: str, **kwargs) -> None:
    """A table: st.dataframe on the page; on a slide an HTML table in large type (as large as
    the slide's height and width allow, 14 to 24 px), never a small grid on a half-empty slide."""
    if not presenting():
        st.dataframe(rows, hide_index=True, key=key, **kwargs)
        return
    shown = rows[:SLIDE_TABLE_ROWS]
    cols = list(rows[0]) if rows else []
    # the size that fits: the widest line's (about half an em a character on a 1024-px slide,
    # 16 to 24 px), down to what the rows leave (the figure's box is a size container: 85 % of
    # its height over the rows, a two-line header and 1.9 em a row), never under 14 px
    chars = sum(max(len(str(r.get(c, ""))) for r in [{c: c for c in cols}, *shown]) for c in cols)
    px = max(16, min(24, 1800 // max(1, chars)))
    size = f"clamp(14px, calc(85cqh / {(len(shown) + 2) * 1.9:.1f}), {px}px)"
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(r.get(c, '')))}</td>" for c in cols)
                   + "</tr>" for r in shown)
    more = (f"<p>… and {len(rows) - len(shown)} more rows (the page lists them all)</p>"
            if len(rows) > len(shown) else "")
    st.html(f"<style>.big-table {{ font-size: {size}; border-collapse: collapse; width: 100%; }}"
            ".big-table th, .big-table td { text-align: left; padding: 0.15em 0.6em; "
            "border-bottom: 1px solid #ddd; } .big-table th { font-weight: 600; }</style>"
            f"<div class='st-key-{key}'><table class='big-table'><tr>{head}</tr>{body}</table>"
            f"{more}</div>")


def _describe(stage: Stage, step: Step, alt: str | None, hidden: bool = False) -> None:
    """The figure's text alternative next to it, in an element tests and screen readers find by
    its class (`figure-alt`) and key: a line under the figure on the page; visually hidden on a
    slide (where the speaker notes carry it), still read by a screen reader."""
    if not alt:
        return
    cls = "figure-alt sr-only" if hidden else "figure-alt"
    st.html(f"<p class='{cls}' id='alt-{stage.slug}-{step.key}'>"
            f"<strong>Figure:</strong> {html.escape(alt)}</p>")


def _say(words: str | None) -> None:
    if words:
        st.info(words)


def _ask(stage: Stage, step: Step, view, facts) -> None:
    """The step's question, its answer (computed for this model and image) behind Reveal; a
    lesson may draw the box its own way (in a live class the teacher reveals it to everyone and
    a student answers it first: ui/live/lesson.py)."""
    q = step.question(view, facts)
    if q is None:
        return
    with st.container(border=True, key=keys.ask(stage.slug, step.key)):
        if lesson().question(stage.slug, step.key, q, view):
            return
        left, right = st.columns([6, 1], vertical_alignment="center")
        left.markdown(f"**Ask the class:** {q.question}")
        if right.toggle("Reveal", key=keys.reveal(stage.slug, step.key)):
            st.info(q.answer, icon=":material/lightbulb:")


# ---------------------------------------------------------------- where a lesson joins in
class Lesson:
    """The points where a lesson (a live class) joins the deck, each a no-op by default: the
    deck alone is a slide show. app.py joins the live class (ui/live/lesson.py) at start."""

    def follows(self) -> bool:
        """Does this session follow someone else's steps (then its page shows one step)?"""
        return False

    def question(self, stage: str, step: str, q: Question, view: View) -> bool:
        """Draw the step's question box the lesson's way (True), or leave it to Reveal (False)."""
        return False

    def header(self, bar, stage: str, config) -> None:
        """The lesson's own controls in presenter mode's header row (`bar`)."""

    def walk(self, stage: str, tour: list[str]) -> list[str]:
        """The stages (slugs, of the `tour`) that Next and Previous go through from `stage`."""
        return tour

    def address(self) -> dict[str, str]:
        """The session's place in the lesson, kept in its own address (never a shared link)."""
        return {}

    def asked(self, stage: str, step: str) -> Asked | None:
        """This session's own answer to a step's question in the lesson, and whether it was
        revealed; None when the session answers no lesson's questions (alone, or teaching)."""
        return None


@dataclass(frozen=True)
class Asked:
    """A student's side of a step's question in a lesson."""

    sent: Any  # their answer (ui/live/classes.Answer), None before they send one
    revealed: bool  # the teacher revealed the answer to the class


_joined: list[Lesson] = [Lesson()]  # the one lesson this process's deck runs with


def join(joining: Lesson) -> None:
    """Run the deck with this lesson (app.py, on every run: the same for every session)."""
    _joined[0] = joining


def lesson() -> Lesson:
    return _joined[0]
