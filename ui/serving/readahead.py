"""Read-ahead: while a student reads a page, compute what the tour's later pages will ask for.

After each script run app.py calls `schedule()`: the first time a session shows an image on a
model with a mask, it queues `ahead.plan` (the weights' pictures, the internals of the session's
layer, the attention summary, the Masks page's passes and captions, the MLP page's norms, an
experiment); for a student following a live class, and for its teacher, through the lesson's
stages from the class's, queued again when the class moves. One thread runs the items, every
session's next item before anyone's later ones (a class moves through the tour together),
starting once no page has asked the worker for QUIET_S; its passes queue behind every page's
(ui/worker.Worker.behind), so they run back to back while no page asks and a student's own
request waits at most for the read-ahead pass in progress. Items of a session that moved on, or
queued more than STALE_S ago, are dropped; results go into the cache the pages read; a failed
item is left to its page.
Off with VIT_EXPLAINER_READ_AHEAD=0 (the test suite's default: tests/conftest.py).
"""

from __future__ import annotations

import atexit
import contextlib
import heapq
import itertools
import os
import threading
import time
from collections.abc import Callable

import streamlit as st

from ui import keys
from ui.live import session as live
from ui.selection import session
from ui.serving import ahead, state, tour

ENV = "VIT_EXPLAINER_READ_AHEAD"
QUIET_S = 1.0  # an item starts only after no page's pass has run for this long
STALE_S = 120.0  # items queued longer ago are dropped: that student has read those pages by now


def enabled() -> bool:
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "false", "no", "off")


class _Interest:
    """One session's (image, model, mask); cancelled when the session moves on."""

    def __init__(self, what: tuple, stale_s: float = STALE_S):
        self.what, self.cancelled, self.until = what, False, time.monotonic() + stale_s

    def wanted(self) -> bool:
        return not self.cancelled and time.monotonic() < self.until


class ReadAhead:
    """A heap of (place in the plan, arrival, interest, item) and the thread that runs them."""

    def __init__(self, idle: Callable[[], object],
                 behind: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext):
        """idle(): returns when an item may start; behind(): the context items run in."""
        self._idle, self._behind = idle, behind
        self._items: list = []
        self._arrivals = itertools.count()
        self._lock = threading.Condition()
        self._stopping = self._running = False
        self.done = self.skipped = self.failed = 0  # counts (tests read them)
        self._thread = threading.Thread(target=self._loop, name="vit-read-ahead", daemon=True)
        self._thread.start()
        atexit.register(self.stop)

    def add(self, interest: _Interest, items: list[Callable]) -> None:
        with self._lock:
            for place, item in enumerate(items):
                heapq.heappush(self._items, (place, next(self._arrivals), interest, item))
            self._lock.notify()

    def pending(self) -> int:
        """Items queued, and the one in progress."""
        with self._lock:
            return len(self._items) + self._running

    def stop(self, timeout: float = 30.0) -> None:
        """Drop what is queued and end the thread after the item in progress (an exit while a
        thread is inside torch aborts the process)."""
        with self._lock:
            self._stopping, self._items = True, []
            self._lock.notify()
        self._thread.join(timeout)

    def _loop(self) -> None:
        while True:
            with self._lock:
                while not (self._items or self._stopping):
                    self._lock.wait()
                if self._stopping:
                    return
                _, _, interest, item = heapq.heappop(self._items)
                self._running = True
            try:
                if interest.wanted():
                    self._idle()
                if not interest.wanted() or self._stopping:
                    self.skipped += 1
                else:
                    with self._behind():
                        item()
                    self.done += 1
            except Exception:  # a favour only: the page computes it and shows any error itself
                self.failed += 1
            finally:
                with self._lock:
                    self._running = False


@st.cache_resource(show_spinner=False)
def shared() -> ReadAhead:
    """The one read-ahead queue of the server (its thread starts with the first session)."""
    return ReadAhead(lambda: state.forward_worker().wait_idle(QUIET_S, timeout=STALE_S),
                     lambda: state.forward_worker().behind())


def schedule() -> None:
    """Queue the later pages' work for the session's image, model and mask, once per
    combination; cancel what was queued for the previous one. Call at the end of a script run."""
    if not enabled():
        return
    inp, name = session.current()
    mask = state.same_mask(name, session.chosen_mask())
    start, lesson = class_place()
    old = st.session_state.get(keys.READ_AHEAD)
    if old is not None and old.what == (inp.key, name, mask, start):
        return
    if old is not None:
        old.cancelled = True
    if st.session_state.get(keys.INPUT_ERROR):  # the page shows a sample instead: nothing to do
        return
    interest = st.session_state[keys.READ_AHEAD] = _Interest((inp.key, name, mask, start))
    caption = st.session_state.get(keys.MASK_CAPTION, tour.MASK_CAPTION)
    ss = st.session_state
    shared().add(interest, ahead.plan(inp, name, mask, ss.get(keys.LAYER), caption,
                                      ss.get(keys.PATCH), start=start, lesson=lesson))


def class_place() -> tuple[str | None, tuple[str, ...]]:
    """(the stage of the class this session follows or teaches, set by ui/live/student.follow
    each run; the class's lesson), else (None, ()): what the class left behind or will skip is
    computed for nobody (a teacher's whole tour would load models the lesson never shows)."""
    if not (live.following() or live.role() == "teacher"):
        return None, ()
    c = live.current()
    return st.session_state.get(keys.PRESENTER_AT), (c.lesson if c else ())
