"""A step whose facts wait for a long computation (ui/stages/why/jobs.ready: the maps, the table,
the randomised maps, a guess's score): while it is computed on a big model, the step shows a
progress bar in place of its figure (and no words, no question), which follows the computation
every POLL_S seconds and reruns the page when it is done. `waits(Step(...))` wraps a step's
functions; on a small model nothing changes."""

from __future__ import annotations

from dataclasses import dataclass, replace

import streamlit as st

from ui.drawing.numbers import pct
from ui.lesson.deck import Step
from ui.serving.ticking import ticking
from ui.stages.why import jobs

POLL_S = 1.0  # seconds between two looks at a computation in progress


@dataclass(frozen=True)
class Pending:
    """The facts of a step whose numbers are being computed."""

    waiting: jobs.NotReady


def waits(step: Step, before=None, meanwhile=None) -> Step:
    """`step` with facts that may be Pending: its figure a progress bar, its words what is being
    computed, no question. `before(view)` is drawn above the figure either way (an equation);
    `meanwhile(view)` under the progress bar only (what the figure will show)."""
    def facts(view):
        try:
            return step.facts(view)
        except jobs.NotReady as e:
            return Pending(e)

    def figure(view, f):
        if before is not None:
            before(view)
        if isinstance(f, Pending):
            _progress(f.waiting)
            if meanwhile is not None:
                meanwhile(view)
        else:
            step.figure(view, f)

    def unless_pending(fn):
        return lambda view, f: None if isinstance(f, Pending) else fn(view, f)

    def words(view, f):
        if isinstance(f, Pending):
            return (f"{f.waiting.now()[0]} for this image: the step shows them as soon as they "
                    f"are ready.")
        return step.words(view, f)

    return replace(step, facts=facts, figure=figure, words=words,
                   notes=unless_pending(step.notes), describe=unless_pending(step.describe),
                   question=unless_pending(step.question))


def _progress(waiting: jobs.NotReady) -> None:
    st.caption("The model is large: these numbers take a while the first time (they are "
               "computed once for this image and kept). The page continues when they are "
               "ready.")
    _bar(waiting)


@ticking(POLL_S)
def _bar(waiting: jobs.NotReady) -> None:
    if waiting.over():
        st.rerun()
    label, fraction = waiting.now()
    st.progress(min(max(fraction, 0.0), 1.0), text=f"{label}: {pct(fraction)}")
