"""No timed answers in a class (issue 43): a student's answer is taken however long the step
has been open, and kept as long as the class is. The store's clock is moved by hand (no test
waits), on the in-memory store the class logic runs on (tests/test_live_store.py checks that
Redis behaves alike)."""

from __future__ import annotations

import pytest

from ui.live import classes, memory
from ui.live.store import MemoryStore

AT = classes.Position("patches", "grid", 0, 0, 5)
HOUR = 3600.0


class Clock:
    """time.time and time.monotonic, moved by hand."""

    def __init__(self):
        self.now = 1_000_000.0

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    for module in (classes, memory):
        monkeypatch.setattr(module, "time", c)
    return c


def send(store, c, student: str, value: str) -> bool:
    return classes.answer(store, c, student, "", "patches", "grid", "Which patch?", "number",
                          value, True)


def test_an_answer_is_taken_however_long_the_step_has_been_open(clock):
    store = MemoryStore()
    c, secret = classes.start(store, AT)
    assert send(store, c, "early", "3")
    clock.now += classes.LIFETIME - 1  # the teacher has stayed on the step, doing nothing
    assert classes.get(store, c.code) is not None  # the step is still open ...
    assert send(store, c, "late", "4")  # ... so a late answer counts
    shown = classes.counts(store, c.code, secret, "patches", "grid")
    assert sorted(a.student for a in shown) == ["early", "late"]
    assert [a.at for a in shown if a.student == "late"] == [pytest.approx(classes.LIFETIME - 1)]


def test_answers_live_as_long_as_their_class(clock):
    """The answers outlive no class and no class outlives its answers: the teacher's every
    action keeps both; an answer keeps its own for a lifetime after it."""
    store = MemoryStore()
    c, secret = classes.start(store, AT)
    send(store, c, "a", "3")
    for patch in (1, 2, 3):  # a long lesson: the teacher acts every three hours
        clock.now += 3 * HOUR
        classes.move(store, c.code, secret, classes.Position("patches", "grid", 0, 0, patch))
    clock.now += classes.LIFETIME - 1
    assert [a.student for a in classes.counts(store, c.code, secret, "patches", "grid")] == ["a"]
    clock.now += 2
    assert classes.get(store, c.code) is None  # the class expired, a lifetime after the last act

