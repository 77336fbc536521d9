"""A live class: where the teacher is, who follows, what the students answered.

Plain logic over a store (ui/live/store.py: this process's memory, or Redis shared by replicas);
no Streamlit here. What lives in the store, under keys that end with the class's code:

- `vitx:class:<code>`: the class as JSON: the teacher's position (stage, step, layer, head,
  patch, and the stage's other settings: ui/live/follow.py), a version that grows with every
  change, the steps revealed, the hash of the teacher's secret, when it started;
- `vitx:answers:<code>`: a hash, one field per (student, step), written once (HSETNX): a second
  answer to the same step is refused, also across replicas;
- `vitx:seen:<code>`: a sorted set, student -> when last seen (who follows now).

Every change publishes the code on CHANNEL, so each process learns of a move at once (Watcher).
A class and its answers are deleted when the teacher ends it, or LIFETIME after the teacher's
last action.
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import json
import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace

_log = logging.getLogger(__name__)

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read off a projector
CODE_LENGTH = 6  # 32**6 = 1.07e9 codes, for a handful of classes at a time
LIFETIME = 4 * 3600  # s after the teacher's last action: the class and its answers go
FOLLOW_WINDOW = 15  # s: a student seen within this counts as following
WRONG_CODES = 5  # wrong codes one address may try per TRY_WINDOW
TRY_WINDOW = 60  # s
MAX_WORDS = 500  # characters kept of a free-text answer
CHANNEL = "vitx:class"  # each change publishes the class's code here
RESYNC = 5.0  # s: a Watcher re-reads a class at least this often (a missed message heals)


class ClassError(Exception):
    """A class action refused, in one sentence for the screen."""


@dataclass(frozen=True)
class Position:
    """Where the teacher is: a stage, a step (its key), the shared controls, and every other
    setting that decides what the stage's steps show (ui/live/follow.py: name -> value, as JSON
    holds it: the experiment, the training step, the input size, the mask, M, T, …)."""

    stage: str
    step: str
    layer: int | None = None
    head: int | None = None
    patch: int | None = None
    settings: dict = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class Class:
    code: str
    position: Position
    version: int = 0
    revealed: tuple[str, ...] = ()  # step ids ("attention/where") the teacher revealed
    started: float = 0.0
    secret_hash: str = field(default="", repr=False)
    lesson: tuple[str, ...] = ()  # the stages of the lesson, in the tour's order; (): all

    def is_revealed(self, stage: str, step: str) -> bool:
        return step_id(stage, step) in self.revealed


@dataclass(frozen=True)
class Answer:
    student: str
    nickname: str
    stage: str
    step: str
    question: str
    kind: str  # "choice", "number", "patch", "patches", "words"
    value: str  # the option, number, patch or text as shown
    right: bool | None  # against the student's own image and model; None: nobody is marked
    at: float  # seconds after the class started
    scores: dict = field(default_factory=dict)  # numbers computed with it (a guess's AUCs)


def step_id(stage: str, step: str) -> str:
    return f"{stage}/{step}"


def pretty(code: str) -> str:
    """ABCDEF -> ABC-DEF, as the projector shows it."""
    return f"{code[:3]}-{code[3:]}"


def normalise(text: str) -> str | None:
    """What a student typed, as a code (case, spaces and dashes ignored), or None if it cannot
    be one."""
    code = "".join(ch for ch in (text or "").upper() if ch not in " -_")
    if len(code) != CODE_LENGTH or any(ch not in CODE_ALPHABET for ch in code):
        return None
    return code


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _key(what: str, code: str) -> str:
    return f"vitx:{what}:{code}"


def _dump(c: Class) -> str:
    return json.dumps({**asdict(c), "position": asdict(c.position)})


def _load(text: str) -> Class:
    d = json.loads(text)
    return Class(**{**d, "position": Position(**d["position"]),
                    "revealed": tuple(d["revealed"]), "lesson": tuple(d.get("lesson", ()))})


# ---------------------------------------------------------------- the teacher
def start(store, position: Position, lesson: tuple[str, ...] = ()) -> tuple[Class, str]:
    """A new class at `position` that walks the stages of `lesson` (() for the whole tour):
    (the class, the teacher's secret). Only the secret's hash is stored; the teacher's browser
    keeps the secret."""
    secret = secrets.token_urlsafe(18)
    for _ in range(20):
        code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
        c = Class(code, position, 1, (), time.time(), _hash(secret), tuple(lesson))
        if store.create(_key("class", code), _dump(c), LIFETIME):
            return c, secret
    raise ClassError("No free class code was found; try again.")  # 20 collisions: never seen


def get(store, code: str) -> Class | None:
    """The class, or None when it ended or expired."""
    text = store.get(_key("class", code))
    return None if text is None else _load(text)


def is_teacher(c: Class, secret: str | None) -> bool:
    return bool(secret) and hmac.compare_digest(c.secret_hash, _hash(secret))


def _teacher(store, code: str, secret: str | None) -> Class:
    c = get(store, code)
    if c is None:
        raise ClassError("This class has ended.")
    if not is_teacher(c, secret):
        raise ClassError("Only the teacher who started this class can do that.")
    return c


def _save(store, c: Class) -> Class:
    """Write a change by the teacher (one writer per class) and tell every process."""
    store.put(_key("class", c.code), _dump(c), LIFETIME)
    store.touch(LIFETIME, _key("answers", c.code), _key("seen", c.code))
    store.publish(CHANNEL, c.code)
    return c


def move(store, code: str, secret: str | None, position: Position) -> Class:
    """The teacher is at `position` now (nothing is written when it did not change)."""
    c = _teacher(store, code, secret)
    if c.position == position:
        return c
    return _save(store, replace(c, position=position, version=c.version + 1))


def reveal(store, code: str, secret: str | None, stage: str, step: str) -> Class:
    c = _teacher(store, code, secret)
    if c.is_revealed(stage, step):
        return c
    return _save(store, replace(c, revealed=(*c.revealed, step_id(stage, step)),
                                version=c.version + 1))


def end(store, code: str, secret: str | None) -> None:
    """Delete the class and everything the students sent."""
    _teacher(store, code, secret)
    store.delete(_key("class", code), _key("answers", code), _key("seen", code))
    store.publish(CHANNEL, code)


def answers(store, code: str, secret: str | None) -> list[Answer]:
    """Every answer of the class, oldest first (the teacher's only)."""
    _teacher(store, code, secret)
    return _answers(store, code)


def _answers(store, code: str) -> list[Answer]:
    found = [Answer(**json.loads(v)) for v in store.hgetall(_key("answers", code)).values()]
    return sorted(found, key=lambda a: a.at)


def counts(store, code: str, secret: str | None, stage: str, step: str) -> list[Answer]:
    """The answers to one step (the teacher's tally)."""
    return [a for a in answers(store, code, secret) if (a.stage, a.step) == (stage, step)]


def following(store, code: str, now: float | None = None) -> int:
    """How many students were seen within FOLLOW_WINDOW."""
    now = time.time() if now is None else now
    return store.zcount(_key("seen", code), now - FOLLOW_WINDOW, float("inf"))


def csv_text(store, code: str, secret: str | None) -> str:
    """The class's answers as CSV (the teacher's only)."""
    return to_csv(answers(store, code, secret))


def to_csv(found: list[Answer]) -> str:
    """Answers as CSV: one row per answer, students by their anonymous id."""
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["seconds", "stage", "step", "question", "student", "nickname", "kind",
                "answer", "right", "scores"])
    for a in found:
        w.writerow([f"{a.at:.1f}", a.stage, a.step, a.question, a.student, a.nickname, a.kind,
                    a.value, "" if a.right is None else ("yes" if a.right else "no"),
                    scores_text(a.scores)])
    return out.getvalue()


def scores_text(scores: dict) -> str:
    """An answer's scores in one CSV cell: "guess_auc=0.2143; better_than_random=yes"."""
    def cell(v):
        if isinstance(v, bool):
            return "yes" if v else "no"
        return " ".join(str(x) for x in v) if isinstance(v, list) else str(v)
    return "; ".join(f"{k}={cell(v)}" for k, v in scores.items())


# ---------------------------------------------------------------- the students
def join(store, text: str, address: str) -> Class:
    """The class a student typed the code of; a wrong code costs one of WRONG_CODES tries per
    TRY_WINDOW for this address (tries are counted in the store: every replica sees them)."""
    tries = _key("tries", address or "unknown")
    used = int(store.get(tries) or 0)
    if used >= WRONG_CODES:
        raise ClassError("Too many wrong codes from this computer: wait a minute, then type "
                         "the code on the projector again.")
    code = normalise(text)
    c = get(store, code) if code else None
    if c is None:
        store.incr(tries, TRY_WINDOW)
        shown = pretty(code) if code else (text or "").strip()[:20]
        raise ClassError(f"No class has the code {shown!r} (a class that ended has none): "
                         f"check the code on the projector, {CODE_LENGTH} letters and digits.")
    return c


def new_student() -> str:
    """An anonymous id for a student's tab (kept in its address: a reconnect keeps it)."""
    return secrets.token_urlsafe(9)


def seen(store, code: str, student: str) -> None:
    store.zadd(_key("seen", code), student, time.time(), LIFETIME)


def answer(store, c: Class, student: str, nickname: str, stage: str, step: str,
           question: str, kind: str, value: str, right: bool | None,
           scores: dict | None = None) -> bool:
    """Record a student's answer to a step (with the `scores` computed for it, plain JSON
    values); False when they already answered it."""
    if kind == "words":
        value = value.strip()[:MAX_WORDS]
    a = Answer(student, nickname.strip()[:30], stage, step, question, kind, value, right,
               round(time.time() - c.started, 1), dict(scores or {}))
    return store.hsetnx(_key("answers", c.code), f"{student}|{step_id(stage, step)}",
                        json.dumps(asdict(a)), LIFETIME)


def rescore(store, code: str, student: str, stage: str, step: str, scores: dict) -> bool:
    """Replace the scores of a student's answer with `scores` (computed after it was sent: a
    guess on a big model); False when there is no such answer."""
    field = f"{student}|{step_id(stage, step)}"
    text = store.hget(_key("answers", code), field)
    if text is None:
        return False
    store.hset(_key("answers", code), field, json.dumps({**json.loads(text),
                                                         "scores": dict(scores)}), LIFETIME)
    return True


def answered(store, code: str, student: str, stage: str, step: str) -> Answer | None:
    """The student's own answer to a step (they see theirs, nobody else's)."""
    text = store.hget(_key("answers", code), f"{student}|{step_id(stage, step)}")
    return None if text is None else Answer(**json.loads(text))


# ---------------------------------------------------------------- every process
class Watcher:
    """The classes this process's sessions follow, kept fresh by the store's messages.

    A session asks `latest(code)` on every run: that reads memory, and reads the store only
    after a message said the class changed, or RESYNC after the last read (a message lost
    while Redis restarted heals by itself). `then(code)` is called after each message (on the
    store's listener thread; code None: any class may have changed).
    """

    def __init__(self, store, then: Callable[[str | None], None] | None = None):
        self.store, self.then = store, then
        self._lock = threading.Lock()
        self._seen: dict[str, tuple[float, Class | None]] = {}
        self._changes = 0  # messages so far: a read that raced with one is not kept
        self._listening = False

    def _changed(self, code: str | None) -> None:
        with self._lock:
            self._changes += 1
            if code is None:
                self._seen.clear()
            else:
                self._seen.pop(code, None)
        if self.then is not None:
            try:
                self.then(code)
            except Exception:  # never the listener's end: the keeper's round checks again
                _log.exception("after a change of class %s", code)

    def latest(self, code: str) -> Class | None:
        if not self._listening:
            with self._lock:
                if not self._listening:
                    self.store.listen(CHANNEL, self._changed)
                    self._listening = True
        now = time.monotonic()
        with self._lock:
            hit, changes = self._seen.get(code), self._changes
        if hit is not None and now - hit[0] < RESYNC:
            return hit[1]
        c = get(self.store, code)
        with self._lock:
            if self._changes == changes:
                self._seen[code] = (now, c)
        return c
