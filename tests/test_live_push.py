"""Server push (ui/live/push.py): on each of the store's messages, the pages of this process's
students that show an older state of their class are rerun, once per state: a follower's when
the class moved, an explorer's when an answer was revealed, every page of an ended class; and
the keeper's rounds mark the open pages' followers as still here and heal a lost message. The
class changes through ui/live/classes on a memory store, whose messages reach a real Watcher on
its listener thread; the reruns are recorded instead of asked of a server. (Over a server, the
push is what tests/test_live_replicas.py shows, with the rounds' checks switched off: nothing
else gets students there.) Waits end when what they wait for happened (generous limits for a busy
machine); a short wait only where nothing should come."""

import dataclasses
import time

import pytest

from ui.live import classes, push
from ui.live.memory import MemoryStore
from ui.serving import server

WHERE = classes.Position("overview", "model")
THERE = classes.Position("overview", "pipeline")


class Reached(list):
    """The sessions asked to rerun; `gone` are no longer on the server."""

    def __init__(self, gone=()):
        super().__init__()
        self.gone = set(gone)

    def __call__(self, session_id: str) -> bool:
        self.append(session_id)
        return session_id not in self.gone


def wired(gone=(), **keeper):
    store = MemoryStore()
    reached = Reached(gone)
    pages = push.Pages(reach=reached, **keeper)
    watcher = classes.Watcher(store, then=pages.changed)
    pages.latest = watcher.latest
    c, secret = classes.start(store, WHERE)
    watcher.latest(c.code)  # listening from now on
    return store, pages, reached, c, secret


def settle(reached: Reached, n: int, timeout: float = 60.0) -> None:
    """Wait until `n` reruns were asked (the messages arrive on the store's thread), and a
    little longer for any that should not come."""
    end = time.monotonic() + timeout
    while len(reached) < n and time.monotonic() < end:
        time.sleep(0.01)
    time.sleep(0.1)


def until(done, timeout: float = 60.0) -> bool:
    """Wait until done() (at most `timeout` s: a busy machine's threads may start late)."""
    end = time.monotonic() + timeout
    while not done() and time.monotonic() < end:
        time.sleep(0.01)
    return done()


def test_a_move_reruns_the_followers_of_that_class_once_and_a_reveal_the_explorers():
    store, pages, reached, c, secret = wired()
    shown = (c.version, c.revealed)
    pages.note("follower", c.code, True, shown)
    pages.note("explorer", c.code, False, shown)
    pages.note("elsewhere", "ZZZZZZ", True, (0, ()))  # another class's student
    pages.note("done", c.code, True, shown)
    pages.forget("done")  # left the class

    classes.move(store, c.code, secret, THERE)
    settle(reached, 1)
    assert reached == ["follower"]  # the explorer stays where it chose to be

    store.publish(classes.CHANNEL, c.code)  # a message with nothing new: no rerun
    settle(reached, 2, timeout=0.3)
    assert reached == ["follower"]

    moved = classes.get(store, c.code)
    pages.note("follower", c.code, True, (moved.version, moved.revealed))  # its rerun drew it
    classes.reveal(store, c.code, secret, THERE.stage, THERE.step)
    settle(reached, 3)
    assert sorted(reached[1:]) == ["explorer", "follower"]  # the reveal bumps the version too
    assert pages.pushed == 3

    classes.end(store, c.code, secret)  # every page of the class says it ended, once
    settle(reached, 5)
    store.publish(classes.CHANNEL, c.code)
    settle(reached, 6, timeout=0.3)
    assert sorted(reached[3:]) == ["explorer", "follower"]


def test_a_session_the_server_no_longer_has_is_forgotten():
    store, pages, reached, c, secret = wired(gone={"closed"})
    pages.note("closed", c.code, True, (c.version, c.revealed))
    classes.move(store, c.code, secret, THERE)
    settle(reached, 1)
    classes.move(store, c.code, secret, WHERE)
    settle(reached, 2, timeout=0.3)
    assert reached == ["closed"] and pages.pushed == 0


def test_without_a_server_nothing_is_rerun():
    assert push.here() is None  # no script run on this thread
    assert server.rerun("a-session-id") is False


def test_the_keeper_marks_open_followers_and_heals_a_lost_message(monkeypatch):
    monkeypatch.setattr(classes, "RESYNC", 0.0)  # the Watcher reads the store every time
    marked, open_ = [], {"here", "exploring"}
    store, pages, reached, c, secret = wired(
        mark=lambda code, student: marked.append((code, student)),
        open_=lambda sid: sid in open_, every=0.05)
    shown = (c.version, c.revealed)
    pages.note("here", c.code, True, shown, "student-1")
    pages.note("exploring", c.code, False, shown, "student-2")
    pages.note("closed", c.code, True, shown, "student-3")
    assert {s for _, s in marked} == {"student-1", "student-3"}  # the followers' first runs
    marked.clear()
    assert until(lambda: len(marked) >= 3 and "closed" not in pages._pages)  # rounds ran
    assert set(marked) == {(c.code, "student-1")}  # rounds: not the explorer, not the closed tab
    assert reached == []
    store.put(classes._key("class", c.code), classes._dump(  # a move whose message was lost
        dataclasses.replace(c, version=c.version + 1)), classes.LIFETIME)
    settle(reached, 1)
    assert reached == ["here"]
    pages.note("closed", c.code, True, shown, "student-3")  # forgotten: a round sees it shut
    assert until(lambda: "closed" not in pages._pages)


def test_with_the_rechecks_switched_off_the_rounds_mark_followers_but_move_no_page(monkeypatch):
    """VIT_EXPLAINER_LIVE_RECHECK=0 (read when the pages are made): a move whose message was
    lost stays unseen however many rounds pass; a move with its message is pushed."""
    monkeypatch.setattr(classes, "RESYNC", 0.0)
    monkeypatch.setenv(push.RECHECK_ENV, "0")
    marked = []
    store, pages, reached, c, secret = wired(
        mark=lambda code, student: marked.append(student), open_=lambda sid: True, every=0.05)
    pages.note("here", c.code, True, (c.version, c.revealed), "student-1")
    store.put(classes._key("class", c.code), classes._dump(  # a move whose message was lost
        dataclasses.replace(c, version=c.version + 1)), classes.LIFETIME)
    assert until(lambda: len(marked) >= 5)  # the note's mark and four rounds'
    assert reached == []
    classes.move(store, c.code, secret, THERE)
    settle(reached, 1)
    assert reached == ["here"]


@pytest.mark.parametrize("value,on", [(None, True), ("1", True), ("0", False), (" Off ", False),
                                      ("no", False), ("false", False), ("yes", True)])
def test_the_rechecks_switch_is_read_from_the_environment(value, on):
    assert push.rechecks({} if value is None else {push.RECHECK_ENV: value}) is on


@pytest.mark.parametrize("student", [None, "student-1"])
def test_a_page_noted_without_a_keeper_starts_none(student):
    pages = push.Pages(reach=Reached())
    pages.note("s", "ABCDEF", True, (0, ()), student)
    assert pages._keeper is None


def test_a_page_that_starts_following_is_marked_still_here_at_once_and_only_then():
    marked = []
    pages = push.Pages(reach=Reached(), mark=lambda code, student: marked.append(student),
                       open_=lambda sid: True, every=3600)  # no round within the test
    pages.note("tab", "ABCDEF", True, (0, ()), "student-1")  # joins: the teacher counts them
    pages.note("tab", "ABCDEF", True, (1, ()), "student-1")  # the next runs: the rounds' job
    pages.note("tab", "ABCDEF", False, (1, ()), "student-1")  # explores: not counted
    pages.note("tab", "ABCDEF", True, (1, ()), "student-1")  # follows again
    pages.note("tab", "ABCDEF", True, (1, ()), "student-2")  # another student on that session
    assert marked == ["student-1", "student-1", "student-2"]


def test_a_polling_page_is_behind_when_its_class_is_newer_and_marks_itself_once_a_round():
    """Without the push (ui/serving/server.py: an internal missing) a page looks itself (`_poll`):
    it
    is behind when the class moved (a follower) or revealed (an explorer), by `changed`'s rule;
    its "still here" goes at most once every round."""
    marked = []
    store, pages, reached, c, secret = wired(mark=lambda code, student: marked.append(student),
                                             every=3600)
    shown = (c.version, c.revealed)
    assert not pages.behind(c.code, True, shown) and not pages.behind(c.code, False, shown)
    classes.move(store, c.code, secret, THERE)
    assert until(lambda: pages.behind(c.code, True, shown))  # once the Watcher heard of it
    assert not pages.behind(c.code, False, shown)  # an explorer stays
    pages.still_here_every(c.code, "student-1")
    pages.still_here_every(c.code, "student-1")
    assert marked == ["student-1"] and reached == []
    pages.latest = None  # no Watcher: never behind (it would rerun the page for ever)
    assert not pages.behind(c.code, True, shown)
