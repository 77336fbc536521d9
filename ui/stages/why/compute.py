"""What the why stage computes, once per (image, model, mask, target), kept in the app's shared
byte budget (ui/serving/state's `held`) and run on the server's one worker.

The maps and the faithfulness table are long on a big model (ViT-B/16: minutes cold, the IG and
occlusion maps and ~2 000 images of curves), so:
- each is ONE job on the worker whose `progress` callback (called by the library between
  batches) lets the other sessions' waiting passes run (`Worker.between`): nobody waits for it
  longer than one batch; it stops (baselines.Cancelled) when the server exits;
- a page never waits for it: `ready` returns it when it is computed (or the model is small,
  where it takes a second or two), else starts it on a background thread (behind the pages'
  passes) and raises `NotReady` with the fraction done, which the stage's steps show as a
  progress bar that polls until it is there (ui/stages/why/waiting.py);
- the table reuses the cached maps (the library's `table` takes the methods as functions: the
  trained model's map is the cached one, the randomised copy's is computed);
- the read-ahead (`maps_read`, `table_read`) computes both for a student following a lesson
  that includes the stage, before the class gets there.
`maps` and `table` themselves wait for the result (the read-ahead's, a test's, a small model's).
"""

from __future__ import annotations

import threading

import streamlit as st

from ui.drawing.numbers import pct
from ui.serving import state
from ui.serving.budget import forward_worker, get_model, held, shared_cache
from ui.serving.tour import Ask
from ui.serving.worker import small
from vit_core.explain import attribution, faithfulness
from vit_core.explain.attribution import METHODS
from vit_core.explain.baselines import Cancelled
from vit_core.explain.targets import Target, predicted

LONG_S = 1800.0  # the longest a background computation waits for the worker (Busy after)
KINDS = ("maps", "table")
LABELS = {"maps": "Computing the six maps", "table": "Putting each map to the test"}

_progress: dict[tuple, float] = {}  # a held key -> the fraction done, while it is computed
_running: set[tuple] = set()  # held keys computed on a background thread now
_failed: dict[tuple, BaseException] = {}  # a background computation's error, for its page
_lock = threading.Lock()


class NotReady(Exception):
    """The maps or the table are being computed (`key`: the held key of the one asked for)."""

    def __init__(self, kind: str, key: tuple, parts: list[tuple[str, tuple]]):
        self.kind, self.key, self.parts = kind, key, parts  # parts: (label, held key) in order
        label, fraction = self.now()
        super().__init__(f"{label}: {pct(fraction)}")

    def now(self) -> tuple[str, float]:
        """(what is computed now, the fraction of it done)."""
        for i, (label, key) in enumerate(self.parts):
            if not computed(key):
                return f"{label} ({i + 1} of {len(self.parts)})", _progress.get(key, 0.0)
        return self.parts[-1][0], 1.0

    def over(self) -> bool:
        """Computed, or its computation ended (with an error the page shows)."""
        with _lock:
            return computed(self.key) or self.key not in _running


def applies(config) -> bool:
    """The maps explain a class or a caption word: a headless encoder has neither."""
    return bool(config.num_classes) or bool(config.has_text)


@held
def _target(key: str, model_name: str, mask: str | None, _pixels) -> Target:
    model = get_model(model_name)
    return forward_worker().run(predicted, model, _pixels, mask=mask, model=model)


def target(inp, model_name: str, mask: str | None = None) -> Target:
    """What the model answers for this image: its top class, or its caption's first word."""
    return _target(inp.key, model_name, state.same_mask(model_name, mask),
                   state.prepare(inp, model_name).pixels)


def _ticker(key: tuple):
    """The library's progress(done, total): note the fraction, let waiting passes run, stop
    when the server exits."""
    worker = forward_worker()

    def progress(done: int, total: int) -> None:
        _progress[key] = done / max(total, 1)
        if worker.stopping:
            raise Cancelled()
        worker.between()

    return progress


def _all_maps(model, pixels, target: Target, mask, progress) -> dict:
    """attribution.attribute for every method with its defaults, under the sidebar's mask;
    progress counts thousandths of the six maps."""
    n, out = len(METHODS), {}
    for i, method in enumerate(METHODS):
        def inner(done, total, i=i):
            progress(1000 * i + 1000 * done // max(total, 1), 1000 * n)

        out[method] = attribution.attribute(model, pixels, method, target, mask=mask,
                                            progress=inner)
        progress(1000 * (i + 1), 1000 * n)
    return out


@held
def _maps(key: str, model_name: str, mask: str | None, target: Target, _pixels) -> dict:
    model = get_model(model_name)
    k = ("_maps", key, model_name, mask, target)
    try:
        return forward_worker().run(_all_maps, model, _pixels, target, mask, _ticker(k),
                                    model=model, timeout=LONG_S)
    finally:
        _progress.pop(k, None)


def maps(inp, model_name: str, mask: str | None, target: Target) -> dict:
    """{method: vit_core.explain.attribution.Attribution} for `target`, the six methods."""
    return _maps(inp.key, model_name, state.same_mask(model_name, mask), target,
                 state.prepare(inp, model_name).pixels)


def _reusing(found: dict, method: str, trained):
    """A method for faithfulness.table: the cached map on the trained model, computed on any
    other (the sanity check's randomised copy)."""
    def fn(model, pixels, target, *, mask=None, progress=None):
        if model is trained:
            return found[method]
        return METHODS[method](model, pixels, target, mask=mask, progress=progress)

    return fn


@held
def _table(key: str, model_name: str, mask: str | None, target: Target, _pixels) -> list:
    model = get_model(model_name)
    found = _maps(key, model_name, mask, target, _pixels)
    methods = {m: _reusing(found, m, model) for m in METHODS}
    k = ("_table", key, model_name, mask, target)
    try:
        return forward_worker().run(faithfulness.table, model, _pixels, target, methods=methods,
                                    mask=mask, progress=_ticker(k), model=model, timeout=LONG_S)
    finally:
        _progress.pop(k, None)


def table(inp, model_name: str, mask: str | None, target: Target) -> list:
    """vit_core.explain.faithfulness.table for `target`: a Row per method, then "random"."""
    return _table(inp.key, model_name, state.same_mask(model_name, mask), target,
                  state.prepare(inp, model_name).pixels)


def held_key(kind: str, inp, model_name: str, mask: str | None, target: Target) -> tuple:
    """The key `maps` / `table` are kept under in the shared budget."""
    return (f"_{kind}", inp.key, model_name, state.same_mask(model_name, mask), target)


def computed(key: tuple) -> bool:
    return key in shared_cache()


def ready(kind: str, inp, model_name: str, mask: str | None, target: Target):
    """`maps` or `table` for a page, which must not freeze: the value when it is computed or the
    model is small (or no server runs: a script, a bare-mode test, where no one sees a page);
    else raises NotReady (its computation started on a background thread, once;
    the table's first part is the maps) or the background computation's error."""
    call = {"maps": maps, "table": table}[kind]
    key = held_key(kind, inp, model_name, mask, target)
    if small(get_model(model_name)) or computed(key) or not st.runtime.exists():
        return call(inp, model_name, mask, target)
    with _lock:
        error = _failed.pop(key, None)
    if error is not None:
        raise error
    _start(key, lambda: call(inp, model_name, mask, target))
    kinds = KINDS[:KINDS.index(kind) + 1]  # the table's first part is the maps
    raise NotReady(kind, key, [(LABELS[k], held_key(k, inp, model_name, mask, target))
                               for k in kinds])


def _start(key: tuple, call) -> None:
    """Run `call` on a thread of its own, behind the pages' passes, unless it runs already."""
    with _lock:
        if key in _running:
            return
        _running.add(key)

    def go() -> None:
        try:
            with forward_worker().behind():
                call()
        except BaseException as e:  # the page that waits for it shows it
            with _lock:
                _failed[key] = e
        finally:
            with _lock:
                _running.discard(key)

    threading.Thread(target=go, name="why-compute", daemon=True).start()


def maps_read(a: Ask) -> list:
    """The read-ahead's call: the maps of the predicted answer."""
    if not applies(state.get_model(a.name).config):
        return []
    return [lambda: maps(a.inp, a.name, a.mask, target(a.inp, a.name, a.mask))]


def table_read(a: Ask) -> list:
    """The read-ahead's calls: the maps, then the faithfulness table of the predicted answer.
    Two items, not one: the read-ahead runs every session's first item before anyone's second
    (ui/serving/readahead.py), so a class gets every student's maps (~18 s each on ViT-B/16)
    before anyone's table (~80 s more), not each student's maps after all the tables before."""
    if not applies(state.get_model(a.name).config):
        return []
    return [*maps_read(a), lambda: table(a.inp, a.name, a.mask, target(a.inp, a.name, a.mask))]
