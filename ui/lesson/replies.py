"""How a student answers a step's question in a live class, and what counts as right.

A step's question (ui/deck.Question) carries one of these as its `reply`, built from the same
numbers as its answer, so each student is marked against their own image and model.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Choice:
    """Answered by choosing one of `options`; `right` is the index of the right one for this
    model and image (None: no option is right or wrong, e.g. "what do you expect?")."""

    options: tuple[str, ...]
    right: int | None = None
    prompt: str = "Your answer"  # the input's label: what exactly to choose, when the
    #                              question asks more than the input answers


@dataclass(frozen=True)
class Number:
    """Answered with a number; right when within `tolerance` of `value` (computed for this model
    and image; None: no number is right or wrong)."""

    value: float | None
    tolerance: float = 0.0
    unit: str = ""  # said after the input ("patches", "%", "px")
    prompt: str = "Your answer"


@dataclass(frozen=True)
class PatchPick:
    """Answered by clicking a patch of the image's grid; right when it is one of `right`
    (patch indices 0..N-1, row by row; empty: no patch is right or wrong)."""

    right: tuple[int, ...] = ()
    prompt: str = "Click a patch of your image"


PENDING = "pending"  # in an answer's scores: sent before they could be computed (PatchSet.later)


@dataclass(frozen=True)
class PatchSet:
    """Answered by choosing `k` patches of the image's grid on the step's own figure (`chosen`:
    the session's choice so far). Nobody is marked: `scores(patches)` gives the numbers kept with
    the answer (computed for the student's own image when they send it, without holding the
    page: marked {PENDING: True} when they take longer, and then `later(patches)`, which
    waits for them, is run on a thread of its own and its numbers replace those), and
    `summary(answers)` words the class's answers for the teacher."""

    k: int
    chosen: tuple[int, ...] = ()
    scores: Callable[[tuple[int, ...]], dict] | None = field(default=None, compare=False)
    later: Callable[[tuple[int, ...]], dict] | None = field(default=None, compare=False)
    summary: Callable[[list], str] | None = field(default=None, compare=False)
    prompt: str = "Choose the patches on the grid above"


@dataclass(frozen=True)
class Words:
    """Answered in the student's own words (the teacher reads them; nobody else does)."""


Reply = Choice | Number | PatchPick | PatchSet | Words


def judge(reply, value) -> bool | None:
    """Is `value` right for this student's own image? None when nobody is marked."""
    if isinstance(reply, Choice):
        return None if reply.right is None else value == reply.options[reply.right]
    if isinstance(reply, Number):
        if reply.value is None or value is None or not math.isfinite(float(value)):
            return None
        return abs(float(value) - reply.value) <= reply.tolerance + 1e-9
    if isinstance(reply, PatchPick):
        return None if not reply.right else int(value) in reply.right
    return None


def shown(reply, value) -> str:
    if isinstance(reply, Number):
        v = float(value)
        text = f"{v:g}"
        return f"{text} {reply.unit}".strip()
    if isinstance(reply, PatchPick):
        return f"patch {int(value)}"
    if isinstance(reply, PatchSet):
        return "patches " + ", ".join(str(int(p)) for p in sorted(value))
    return str(value)
