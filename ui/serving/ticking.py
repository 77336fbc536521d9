"""A fragment the browser reruns on a timer (`st.fragment(run_every=…)`), drawn under an id of
its own at each run of the page.

Why not a plain `@st.fragment(run_every=…)`: its id is the same at every run (Streamlit makes
it from the function's name and its place on the page). The browser's timer sends a rerun of
that id; when one arrives just after a full run of the page ended (its script runner stopped,
its last messages not yet sent), the server starts a new runner for the fragment and drops what
the ended run had still to send: its last elements, the timers it set, its end. The page then
never finishes that run, and with its timer gone a step waiting for numbers never reruns
(tools/class_load.py on the Why stage: 2 to 5 of 30 students stuck behind a progress bar; the
last messages a stuck tab heard: a full run's start, a fragment run's start and end, nothing
more). Streamlit drops a timer's rerun whose fragment the page's last full run did not draw; so
here each call draws the fragment under a new name: a late rerun of an earlier run's fragment
is dropped, and the run that just ended is sent whole.

    @ticking(1.0)
    def bar(job): ...      # drawn by each run of the page; reruns itself every second

Uses only the documented `st.fragment`; a new Streamlit that names fragments otherwise would
bring back the plain behaviour, not break the page.
"""

from __future__ import annotations

import functools
import itertools

import streamlit as st

_drawn = itertools.count()  # calls so far in this process: each names its fragment


def ticking(seconds: float):
    """Decorator: each call of the function draws it as a fragment rerun every `seconds`,
    under a name (hence an id) of that call's own."""
    def wrap(fn):
        @functools.wraps(fn)
        def draw(*args, **kwargs):
            def tick(*a, **k):
                return fn(*a, **k)

            tick.__module__ = fn.__module__
            tick.__qualname__ = f"{fn.__qualname__}.drawn{next(_drawn)}"
            return st.fragment(tick, run_every=seconds)(*args, **kwargs)

        return draw

    return wrap
