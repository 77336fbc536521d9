"""Server push for a live class: when this process hears that a class moved (or revealed an
answer), it reruns the pages of that class's students on this process at once, as Streamlit
reruns a page whose source changed; nothing on a student's page polls.

Each run of a student's banner notes what its page shows (`Pages.note`): the class, whether it
follows, the version and reveals it drew, the student's id. On each of the store's messages
the Watcher (ui/live/classes.py, on the store's listener thread) calls `Pages.changed`, which
reads the class once and reruns every noted page that shows an older state of it: a follower's
when the class moved, an explorer's when an answer was revealed, every page of a class that
ended. A page is rerun with its session's last address and page but none of its widget values,
so that nothing the student just did is undone, and a run in progress is asked to run again as
`st.rerun` asks it (a run replaced instead would lose its last messages). A page that starts
following is marked as seen (the teacher's count) when it is noted; after that, every
KEEP_EVERY a thread marks the followers whose page is still open and checks every page again
(a message lost while Redis restarted heals). VIT_EXPLAINER_LIVE_RECHECK=0 switches the second
half of that round off (the marks go on): a page then moves only when the server pushes, which is
how tests/test_live_replicas.py shows the push; a class keeps it on. Reaching a session uses
Streamlit's internals, all in ui/serving/server.py, checked once: when one is missing (or
VIT_EXPLAINER_PUSH=0) each student's page looks at its class itself twice a second (`_poll`,
a documented `st.fragment(run_every=…)` and `st.rerun`), as it did before the push. Without a
server (AppTest) nothing is pushed nor polled.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping

import streamlit as st

from ui.serving import server
from ui.serving.ticking import ticking

KEEP_EVERY = 5.0  # s between the keeper's rounds: "still here" marks, pages checked again
POLL_EVERY = 0.5  # s between a page's own looks at its class when the server cannot push
RECHECK_ENV = "VIT_EXPLAINER_LIVE_RECHECK"  # "0": the keeper's rounds check no page again

_log = logging.getLogger(__name__)


def rechecks(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the keeper's rounds check every page again (heal a lost message): yes, unless
    $VIT_EXPLAINER_LIVE_RECHECK is 0, off, false or no."""
    value = (os.environ if environ is None else environ).get(RECHECK_ENV, "1")
    return value.strip().lower() not in ("0", "off", "false", "no")


def here() -> str | None:
    """The id of the session whose script runs on this thread (None outside a script run, or
    when the server cannot push: ui/serving/server.py)."""
    return server.session_id()


class Pages:
    """This process's students' pages: session id -> (class code, following, (version,
    revealed) shown); and each one's student id."""

    def __init__(self, reach: Callable[[str], bool] = server.rerun,
                 mark: Callable[[str, str], None] | None = None,
                 open_: Callable[[str], bool] = server.alive, every: float = KEEP_EVERY,
                 recheck: bool | None = None):
        """reach(session id): rerun it (False: gone); mark(code, student): "still here";
        open_(session id): its page is open; recheck: each round checks every page again
        (None: `rechecks()`, read from the environment here)."""
        self.latest: Callable | None = None  # code -> Class | None (the Watcher's, set by it)
        self._reach, self._mark, self._open, self._every = reach, mark, open_, every
        self._recheck = rechecks() if recheck is None else recheck
        self._lock = threading.Lock()
        self._pages: dict[str, tuple[str, bool, tuple]] = {}
        self._students: dict[str, str | None] = {}
        self._keeper: threading.Thread | None = None
        self.pushed = 0  # reruns asked for (tests and benchmarks read it)
        self._marked: dict[tuple, float] = {}  # (code, student) -> last mark by a polling page

    def note(self, session_id: str | None, code: str, following: bool, shown: tuple,
             student: str | None = None) -> None:
        """What the page of `session_id` shows (each run of its banner); a page that starts
        following this class is marked as still here at once (then every round). When the
        server cannot push (ui/serving/server.py), the page looks itself, twice a second
        (`_poll`)."""
        if server.mode() == server.POLL:
            _poll(self, code, following, shown, student)
        if session_id is None:
            return
        with self._lock:
            before = self._pages.get(session_id), self._students.get(session_id)
            self._pages[session_id] = (code, following, shown)
            self._students[session_id] = student
            if self._keeper is None and self._mark is not None:
                self._keeper = threading.Thread(target=self._keep, daemon=True,
                                                name="live-class-keeper")
                self._keeper.start()
        page, who = before
        if following and (page is None or page[:2] != (code, True) or who != student):
            self._still_here(code, student)

    def _still_here(self, code: str, student: str | None) -> None:
        if self._mark is None or not student:
            return
        try:
            self._mark(code, student)
        except Exception:  # the store is down: the pages say so on their next run
            _log.debug("no mark for %s", code, exc_info=True)

    def _keep(self) -> None:
        """Every `every` s: the open pages' followers are still here; every page checked
        (unless switched off: `recheck`)."""
        while True:
            time.sleep(self._every)
            with self._lock:
                noted = [(sid, page, self._students.get(sid)) for sid, page in self._pages.items()]
            for sid, (code, following, _), student in noted:
                if not self._open(sid):
                    self.forget(sid)
                elif following:
                    self._still_here(code, student)
            if self._recheck:
                self.changed(None)

    def forget(self, session_id: str | None) -> None:
        with self._lock:
            self._pages.pop(session_id, None)
            self._students.pop(session_id, None)

    def changed(self, code: str | None) -> None:
        """Rerun the noted pages of class `code` (None: of every class) that show an older
        state of it than the store's."""
        if self.latest is None:
            return
        with self._lock:
            noted = [(sid, page) for sid, page in self._pages.items()
                     if code is None or page[0] == code]
        now: dict[str, object] = {}
        for sid, (c, following, shown) in noted:
            try:
                if c not in now:
                    now[c] = self.latest(c)
            except Exception:
                # the store is down: the keeper's next round tries again; a page's run says so
                _log.debug("class %s not read for a push", c, exc_info=True)
                return
            cls = now[c]
            if cls is None:  # ended: the page says so
                state, same = (None, None), shown == (None, None)
            else:
                state = (cls.version, cls.revealed)
                same = state[0] == shown[0] if following else state[1] == shown[1]
            if same:
                continue
            with self._lock:  # pushed once per state: the rerun's banner notes it again
                if self._pages.get(sid) != (c, following, shown):
                    continue
                self._pages[sid] = (c, following, state)
            if self._reach(sid):
                self.pushed += 1
            else:
                self.forget(sid)

    def behind(self, code: str, following: bool, shown: tuple) -> bool:
        """Whether a page showing `shown` of class `code` is behind the class (`changed`'s
        rule, for a page that looks itself)."""
        if self.latest is None:  # no Watcher yet: nothing known to be newer
            return False
        cls = self.latest(code)
        if cls is None:
            return shown != (None, None)
        return cls.version != shown[0] if following else cls.revealed != shown[1]

    def still_here_every(self, code: str, student: str | None) -> None:
        """A polling follower's "still here", at most every `every` s."""
        now = time.monotonic()
        if now - self._marked.get((code, student), -self._every) >= self._every:
            self._marked[(code, student)] = now
            self._still_here(code, student)


@ticking(POLL_EVERY)
def _poll(pages: Pages, code: str, following: bool, shown: tuple, student: str | None) -> None:
    """The documented way, when the server cannot push: the page asks this process's Watcher
    (memory; the store is read when a message said so) whether its class moved, and reruns
    itself when it did; a follower is marked as still here while it looks."""
    if following:
        pages.still_here_every(code, student)
    try:
        behind = pages.behind(code, following, shown)
    except Exception:  # the store is down: the page says so on its next run
        _log.debug("class %s not read by a polling page", code, exc_info=True)
        return
    if behind:
        st.rerun(scope="app")
