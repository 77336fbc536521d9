"""Where presenter mode is in the deck: the stage (keys.PRESENTER_AT) and the step within it
(keys.PRESENTER_STEP, from 0; the link's ?step= counts from 1).

The steps themselves are declared by each stage (ui/stages/, ui/deck.py); this module only moves
through them: Next / Previous (and the clicker's → / PageDown, ← / PageUp) move one step, and past
the last step to the next stage's first (or back to the previous stage's last).
"""

from __future__ import annotations

import streamlit as st

from . import keys, stages


def count(slug: str, config) -> int:
    return len(stages.get(slug).steps_for(config))


def sync(slug: str, config) -> int:
    """Call once per run before anything reads the step: the step of `slug`, clamped (a stage
    reached another way than Next / Previous starts at its first step)."""
    ss = st.session_state
    if ss.get(keys.PRESENTER_GOTO) not in (None, slug):  # Next / Previous is leaving this
        return current()  # stage: the header switches page before anything is drawn
    if ss.get(keys.PRESENTER_AT) != slug:
        ss[keys.PRESENTER_AT], ss[keys.PRESENTER_STEP] = slug, 0
    k = min(max(int(ss.get(keys.PRESENTER_STEP, 0)), 0), count(slug, config) - 1)
    ss[keys.PRESENTER_STEP] = k
    return k


def current() -> int:
    return int(st.session_state.get(keys.PRESENTER_STEP, 0))


def index_in(slug: str, n: int) -> int:
    """The step of stage `slug` presenter mode shows, among its n steps."""
    if st.session_state.get(keys.PRESENTER_AT) != slug:
        return 0
    return min(max(current(), 0), n - 1)


def move(slugs: list[str], slug: str, config, delta: int) -> str | None:
    """on_click of Next (+1) / Previous (-1): the next step of this stage; past its end the
    stage to switch to (its first step, or the last step of the stage before), else None."""
    ss = st.session_state
    k = current() + delta
    if 0 <= k < count(slug, config):
        ss[keys.PRESENTER_STEP] = k
        return None
    i = slugs.index(slug) + delta
    if not 0 <= i < len(slugs):
        return None
    target = slugs[i]
    ss[keys.PRESENTER_AT] = target
    ss[keys.PRESENTER_STEP] = 0 if delta > 0 else count(target, config) - 1
    ss[keys.PRESENTER_GOTO] = target
    return target
