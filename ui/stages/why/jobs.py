"""The why stage's long computations, for a page that must not freeze: each is a registered
`Kind` (the maps, the faithfulness table, the sanity check's randomised maps, a guess's score,
patching) whose value is kept in the app's shared byte budget (ui/serving/state's `held`) and
computed on the server's one worker.

On a big model (ViT-B/16: the six maps 18 s, the table 70 s, the randomised maps 27 s) a kind's
computation is ONE job on the worker whose `progress` callback (`ticker`, called by the library
between batches) lets the other sessions' waiting passes run (`Worker.between`): nobody waits
for it longer than one batch; it stops (baselines.Cancelled) when the server exits. A page never
waits for it: `ready` returns the value when it is computed (or the model is small, where it
takes a second or two), else starts it on a background thread (behind the pages' passes; a
short kind, patching's two passes, among them) and raises `NotReady` with the fraction done,
which the step shows as a progress bar that polls until it is there
(ui/stages/why/waiting.py). A kind's own function (`Kind.call`) waits for the value: the
read-ahead's, a test's, a small model's."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import streamlit as st

from ui.drawing.numbers import pct
from ui.serving import state
from ui.serving.budget import forward_worker, get_model, shared_cache
from ui.serving.worker import small
from vit_core.explain.baselines import Cancelled

LONG_S = 1800.0  # a background job gives up (Busy) once the worker made no progress so long


@dataclass(frozen=True)
class Kind:
    """A long computation: `call(inp, model_name, mask, target, *more)` waits for its value;
    `keys(...)` (the same arguments) are the held keys it is kept under (all there: computed)."""

    label: str  # what the progress bar says is computed: "Computing the six maps"
    call: Callable[..., Any]
    keys: Callable[..., list[tuple]]
    after: str | None = None  # the kind it computes first (the earlier part of its progress)
    short: bool = False  # one pass or two (patching): queued with the pages' passes, not behind


KINDS: dict[str, Kind] = {}  # by name: "maps", "table", "sanity", "guess", "patching"

_progress: dict[tuple, float] = {}  # a held key -> the fraction done, while it is computed
_running: set[tuple] = set()  # jobs computed on a background thread now
_failed: dict[tuple, BaseException] = {}  # a background computation's error, for its page
_lock = threading.Lock()


def kind(name: str, label: str, keys: Callable[..., list[tuple]], after: str | None = None,
         short: bool = False):
    """Register the decorated function as the computation of kind `name` (`short`: see Kind)."""
    def register(call):
        KINDS[name] = Kind(label, call, keys, after, short)
        return call

    return register


def held_key(fn: str, inp, model_name: str, mask: str | None, *more) -> tuple:
    """The key a `held` function named `fn` keeps its value under, for these arguments (those
    after the image's key, the model's name and its mask, in the function's order)."""
    return (fn, inp.key, model_name, state.same_mask(model_name, mask), *more)


def computed(key: tuple) -> bool:
    return key in shared_cache()


def _fraction(keys: list[tuple]) -> float:
    return sum(1.0 if computed(k) else _progress.get(k, 0.0) for k in keys) / max(len(keys), 1)


class NotReady(Exception):
    """A kind is being computed: `parts` are (label, held keys) in order, the kinds it computes
    first, then its own; `job` the background job's name."""

    def __init__(self, name: str, job: tuple, parts: list[tuple[str, list[tuple]]]):
        self.kind, self.job, self.parts = name, job, parts
        label, fraction = self.now()
        super().__init__(f"{label}: {pct(fraction)}")

    def now(self) -> tuple[str, float]:
        """(what is computed now, the fraction of it done: of its own keys, not an earlier
        part's)."""
        earlier: set[tuple] = set()
        for i, (label, keys) in enumerate(self.parts):
            if not all(computed(k) for k in keys):
                own = [k for k in keys if k not in earlier] or keys
                return f"{label} ({i + 1} of {len(self.parts)})", _fraction(own)
            earlier.update(keys)
        return self.parts[-1][0], 1.0

    def over(self) -> bool:
        """Computed, or its computation ended (with an error the page shows)."""
        with _lock:
            return all(computed(k) for k in self.parts[-1][1]) or self.job not in _running


def ticker(key: tuple):
    """The library's progress(done, total) for the computation kept under `key`: note the
    fraction, let waiting passes run, stop when the server exits."""
    worker = forward_worker()

    def progress(done: int, total: int) -> None:
        _progress[key] = done / max(total, 1)
        if worker.stopping:
            raise Cancelled()
        worker.between()

    return progress


def finished(key: tuple) -> None:
    """The computation kept under `key` ended: forget its progress."""
    _progress.pop(key, None)


def busy() -> bool:
    """Is a computation running on a background thread now?"""
    with _lock:
        return bool(_running)


def ready(name: str, inp, model_name: str, mask: str | None, target, *more):
    """Kind `name`'s value for a page, which must not freeze: the value when it is computed or
    the model is small (or no server runs: a script, a bare-mode test, where no one sees a
    page); else raises NotReady (its computation started on a background thread, once) or the
    background computation's error."""
    k, args = KINDS[name], (inp, model_name, mask, target, *more)
    keys = k.keys(*args)
    if small(get_model(model_name)) or all(computed(x) for x in keys) or \
            not st.runtime.exists():
        return k.call(*args)
    job = (name, *keys)
    with _lock:
        error = _failed.pop(job, None)
    if error is not None:
        raise error
    _start(job, lambda: k.call(*args), behind=not k.short)
    parts, at = [], name
    while at is not None:  # the kinds it computes first, each its own part of the progress
        parts.insert(0, (KINDS[at].label, KINDS[at].keys(*args[:4]) if at != name else keys))
        at = KINDS[at].after
    raise NotReady(name, job, parts)


def _start(job: tuple, call, behind: bool = True) -> None:
    """Run `call` on a thread of its own (`behind` the pages' passes, else among them: a short
    job would wait for every long one queued before it), unless it runs already."""
    with _lock:
        if job in _running:
            return
        _running.add(job)

    def go() -> None:
        try:
            with forward_worker().behind() if behind else contextlib.nullcontext():
                call()
        except BaseException as e:  # the page that waits for it shows it
            with _lock:
                _failed[job] = e
        finally:
            with _lock:
                _running.discard(job)

    threading.Thread(target=go, name="why-compute", daemon=True).start()
