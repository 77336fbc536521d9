"""The live class's rules (ui/live/classes.py) on the in-memory store: who may move a class,
one answer per student and step, the tally and CSV equal what was sent, wrong codes are
limited, an ended class is gone. The same logic runs on Redis (tests/test_live_store.py checks
that the two stores behave alike; tests/test_live_replicas.py runs a class across replicas)."""

from __future__ import annotations

import csv
import io

import pytest

from ui.live import classes
from ui.live.store import MemoryStore

AT = classes.Position("overview", "map", 1, 0, 5)


@pytest.fixture
def store():
    return MemoryStore()


def test_a_new_class_has_a_code_and_only_the_secret_moves_it(store):
    c, secret = classes.start(store, AT)
    assert len(c.code) == classes.CODE_LENGTH and set(c.code) <= set(classes.CODE_ALPHABET)
    assert secret not in store.get(f"vitx:class:{c.code}")  # only its hash is stored
    there = classes.Position("attention", "where", 3, 1, 7)
    for wrong in (None, "", "x" * len(secret), secret[:-1]):
        with pytest.raises(classes.ClassError, match="Only the teacher"):
            classes.move(store, c.code, wrong, there)
        with pytest.raises(classes.ClassError, match="Only the teacher"):
            classes.reveal(store, c.code, wrong, "attention", "where")
        with pytest.raises(classes.ClassError):
            classes.answers(store, c.code, wrong)
    assert classes.get(store, c.code).position == AT  # nothing moved
    moved = classes.move(store, c.code, secret, there)
    assert (moved.position, moved.version) == (there, c.version + 1)
    assert classes.move(store, c.code, secret, there).version == moved.version  # no change


def test_every_change_is_announced(store):
    heard = []
    store.listen(classes.CHANNEL, heard.append)
    c, secret = classes.start(store, AT)
    classes.move(store, c.code, secret, classes.Position("masks", "three"))
    classes.reveal(store, c.code, secret, "masks", "three")
    import time

    end = time.monotonic() + 60  # the messages arrive on the store's thread
    while len(heard) < 2 and time.monotonic() < end:
        time.sleep(0.02)
    assert heard[:2] == [c.code, c.code]


def test_one_answer_per_student_and_step(store):
    c, secret = classes.start(store, AT)
    assert classes.answer(store, c, "s1", "", "attention", "where", "Q?", "choice", "Yes", True)
    assert not classes.answer(store, c, "s1", "", "attention", "where", "Q?", "choice", "No",
                              False)  # refused: the first answer stays
    assert classes.answer(store, c, "s1", "", "attention", "heads", "Q2?", "number", "3", None)
    mine = classes.answered(store, c.code, "s1", "attention", "where")
    assert (mine.value, mine.right) == ("Yes", True)
    assert classes.answered(store, c.code, "s2", "attention", "where") is None


def test_the_tally_and_the_csv_hold_exactly_what_was_sent(store):
    c, secret = classes.start(store, AT)
    sent = [("s1", "Ann", "Yes", True), ("s2", "", "No", False), ("s3", "Bo", "Yes", True)]
    for who, nick, value, right in sent:
        assert classes.answer(store, c, who, nick, "masks", "three", "Why?", "choice", value,
                              right)
    classes.answer(store, c, "s1", "", "logits", "answer", "T?", "words", "  hotter  ", None)
    got = classes.counts(store, c.code, secret, "masks", "three")
    assert sorted((a.student, a.nickname, a.value, a.right) for a in got) == sorted(sent)
    rows = list(csv.DictReader(io.StringIO(classes.csv_text(store, c.code, secret))))
    assert len(rows) == 4
    assert sorted((r["student"], r["nickname"], r["answer"], r["right"]) for r in rows
                  if r["step"] == "three") == sorted(
        (w, n, v, "yes" if r else "no") for w, n, v, r in sent)
    assert [r["answer"] for r in rows if r["step"] == "answer"] == ["hotter"]  # trimmed


def test_codes_are_typed_loosely_and_wrong_ones_are_limited(store):
    c, _ = classes.start(store, AT)
    typed = f" {c.code[:3].lower()}-{c.code[3:]} "
    assert classes.join(store, typed, "10.0.0.7").code == c.code
    assert classes.normalise("ABC") is None and classes.normalise("O0I1AB") is None
    wrong = next(code for code in ("AAAAAA", "BBBBBB") if code != c.code)
    for _ in range(classes.WRONG_CODES):
        with pytest.raises(classes.ClassError, match="No class has the code"):
            classes.join(store, wrong, "10.0.0.9")
    with pytest.raises(classes.ClassError, match="Too many wrong codes"):
        classes.join(store, c.code, "10.0.0.9")  # even the right code waits now
    assert classes.join(store, c.code, "10.0.0.8").code == c.code  # another computer: fine


def test_ending_deletes_the_class_and_its_answers(store):
    c, secret = classes.start(store, AT)
    classes.answer(store, c, "s1", "", "overview", "map", "Q?", "words", "hi", None)
    classes.seen(store, c.code, "s1")
    assert classes.following(store, c.code) == 1
    classes.end(store, c.code, secret)
    assert classes.get(store, c.code) is None
    assert store.hgetall(f"vitx:answers:{c.code}") == {}
    assert classes.following(store, c.code) == 0
    with pytest.raises(classes.ClassError, match="No class has the code .* ended"):
        classes.join(store, c.code, "10.0.0.1")


def test_a_class_expires_after_its_lifetime(store, monkeypatch):
    monkeypatch.setattr(classes, "LIFETIME", 0.3)
    c, secret = classes.start(store, AT)
    classes.answer(store, c, "s1", "", "overview", "map", "Q?", "words", "hi", None)
    import time

    time.sleep(0.5)
    assert classes.get(store, c.code) is None
    assert store.hgetall(f"vitx:answers:{c.code}") == {}


def test_following_counts_students_seen_lately(store, monkeypatch):
    c, _ = classes.start(store, AT)
    for s in ("a", "b", "c"):
        classes.seen(store, c.code, s)
    import time

    now = time.time()
    assert classes.following(store, c.code, now) == 3
    assert classes.following(store, c.code, now + classes.FOLLOW_WINDOW + 1) == 0


def test_an_answer_is_marked_against_the_reply_it_was_given_for():
    from ui.lesson.replies import Choice, Number, PatchPick, Words, judge, shown

    assert judge(Choice(("Yes", "No"), right=1), "No") is True
    assert judge(Choice(("Yes", "No"), right=1), "Yes") is False
    assert judge(Choice(("Yes", "No")), "Yes") is None  # nobody is marked
    assert judge(Number(49, 0, "patches"), 49) is True
    assert judge(Number(49, 0, "patches"), 50) is False
    assert judge(Number(62.5, 5, "%"), 58) is True and judge(Number(62.5, 5, "%"), 57) is False
    assert judge(Number(None), 3) is None
    assert judge(PatchPick((3, 4)), 4) is True and judge(PatchPick((3, 4)), 5) is False
    assert judge(PatchPick(()), 5) is None
    assert judge(Words(), "anything") is None
    assert shown(Number(49, 0, "patches"), 49.0) == "49 patches"
    assert shown(PatchPick((3,)), 3) == "patch 3"


def test_the_teachers_chart_counts_each_answer_by_its_mark(store):
    from tests.test_every_page import small_fonts
    from ui.live.teacher import RIGHT, UNMARKED, WRONG, tally_figure

    c, secret = classes.start(store, AT)
    sent = [("a", "ball", True), ("b", "ball", True), ("c", "box", False), ("d", "box", True),
            ("e", "tree", None)]
    for who, value, right in sent:
        classes.answer(store, c, who, "", "experiments", "change", "Q?", "choice", value, right)
    fig = tally_figure(classes.counts(store, c.code, secret, "experiments", "change"))
    bars = {(t.name, y): x for t in fig.data for y, x in zip(t.y, t.x, strict=True)}
    expected = {}
    for _, value, right in sent:
        mark = RIGHT if right else WRONG if right is False else UNMARKED
        expected[(mark, value)] = expected.get((mark, value), 0) + 1
    assert {k: v for k, v in bars.items() if v} == expected
    assert fig.layout.showlegend and fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
    assert not small_fonts(fig.to_plotly_json())  # projected: every text at least 14 px
