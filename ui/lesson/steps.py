"""Where presenter mode is in the deck: the stage (keys.PRESENTER_AT) and the step within it
(keys.PRESENTER_STEP, from 0; the link's ?step= counts from 1).

The steps themselves are declared by each stage (ui/stages/, ui/lesson/deck.py); this module only
moves
through them: Next / Previous (and the clicker's → / PageDown, ← / PageUp) move one step, and past
the last step to the next stage's first (or back to the previous stage's last). It is handed the
stages it moves through (ui/stages.get): it imports none of them, so the deck can read it.
"""

from __future__ import annotations

import streamlit as st

from ui import keys


def sync(stage, config) -> int:
    """Call once per run before anything reads the step: the step of `stage` (a
    ui.lesson.deck.Stage),
    clamped (a stage reached another way than Next / Previous starts at its first step)."""
    ss = st.session_state
    if ss.get(keys.PRESENTER_GOTO) not in (None, stage.slug):  # Next / Previous is leaving
        return current()  # this stage: the header switches page before anything is drawn
    if ss.get(keys.PRESENTER_AT) != stage.slug:
        ss[keys.PRESENTER_AT], ss[keys.PRESENTER_STEP] = stage.slug, 0
    n = len(stage.steps_for(config))
    k = min(max(int(ss.get(keys.PRESENTER_STEP, 0)), 0), n - 1)
    ss[keys.PRESENTER_STEP] = k
    return k


def current() -> int:
    return int(st.session_state.get(keys.PRESENTER_STEP, 0))


def index_in(slug: str, n: int) -> int:
    """The step of stage `slug` presenter mode shows, among its n steps."""
    if st.session_state.get(keys.PRESENTER_AT) != slug:
        return 0
    return min(max(current(), 0), n - 1)


def move(walk: list, stage, config, delta: int) -> str | None:
    """on_click of Next (+1) / Previous (-1): the next step of `stage`; past its end the stage
    of `walk` (the ui.lesson.deck.Stages Next and Previous go through) to switch to (its first
    step, or
    the last step of the stage before), and its slug, else None."""
    ss = st.session_state
    k = current() + delta
    if 0 <= k < len(stage.steps_for(config)):
        ss[keys.PRESENTER_STEP] = k
        return None
    slugs = [s.slug for s in walk]
    i = slugs.index(stage.slug) + delta
    if not 0 <= i < len(walk):
        return None
    target = walk[i]
    ss[keys.PRESENTER_AT] = target.slug
    ss[keys.PRESENTER_STEP] = 0 if delta > 0 else len(target.steps_for(config)) - 1
    ss[keys.PRESENTER_GOTO] = target.slug
    return target.slug
