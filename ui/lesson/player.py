"""Play / Pause: step through something on a timer (the layers, a caption's words).

While playing, a fragment with `run_every` ticks every PLAY_EVERY seconds; each tick moves one
step (the page's `advance`) and reruns the page so that every figure follows. At the end the
player stops by itself; Play again starts over. Only this session's state changes, and nothing
ticks while paused.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from ui import keys
from ui.serving.ticking import ticking

PLAY_EVERY = 1.5  # seconds per step


def play(what: str, key: str, start: Callable[[], None], advance: Callable[[], bool],
         where=None, help: str | None = None) -> bool:
    """Draw the Play / Pause button for `what` ("layers", "caption"); True while it plays.

    start(): called when Play is pressed (rewind when at the end).
    advance(): one step forward; returns False when that was the last step (playing stops).
    """
    ss = st.session_state
    playing = ss.get(keys.PRESENTER_PLAYING) == what

    def toggle() -> None:
        if ss.get(keys.PRESENTER_PLAYING) == what:
            ss[keys.PRESENTER_PLAYING] = None
        else:
            ss[keys.PRESENTER_PLAYING] = what
            start()

    (where or st).button("Pause" if playing else "Play", key=key, on_click=toggle, help=help,
                         icon=":material/pause:" if playing else ":material/play_arrow:")
    if playing:
        ss[keys.PRESENTER_PLAY_FULL] = True  # this call is part of a full run, not a tick
        _ticker(what, advance)
    return playing


@ticking(PLAY_EVERY)
def _ticker(what: str, advance: Callable[[], bool]) -> None:
    ss = st.session_state
    if ss.get(keys.PRESENTER_PLAY_FULL):  # drawn by the page's run: the first tick comes later
        ss[keys.PRESENTER_PLAY_FULL] = False
        return
    if ss.get(keys.PRESENTER_PLAYING) != what:
        return
    if not advance():
        ss[keys.PRESENTER_PLAYING] = None
    st.rerun()  # the whole page, so every figure shows the new step
