"""What the Experiments stage's steps read beyond the trace (ui/deck.Read: ui/ahead.plan calls
them for the read-ahead): the stage's default change, and the runs without positions."""

from __future__ import annotations

from collections.abc import Callable

from ui.serving import state
from ui.serving.tour import Ask


def experiment(a: Ask) -> list[Callable]:
    """The stage's default change: head 0 of the session's layer switched off."""
    c = state.get_model(a.name).config
    if not c.num_classes or c.has_text or a.layer is None:
        return []
    head = ((min(a.layer, c.depth - 1), 0),)
    return [lambda: state.experiment(a.inp, a.name, "heads", head, None, a.mask)]


def _image_only(a: Ask, kind: str, arg: tuple = ()) -> list[Callable]:
    """One run with the stage's default arguments, on a model fed no text (a captioner's runs
    are fed its caption, known only once it is written: left to the page)."""
    if state.get_model(a.name).config.has_text:
        return []
    return [lambda: state.experiment(a.inp, a.name, kind, arg, None, a.mask)]


def unordered_runs(a: Ask) -> list[Callable]:
    """The two runs without positions: in order and shuffled."""
    return _image_only(a, "positions") + _image_only(a, "shuffle_no_positions", (0,))
