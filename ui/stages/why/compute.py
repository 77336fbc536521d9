"""The why stage's maps and faithfulness table, once per (image, model, mask, target), kept in
the app's shared byte budget (ui/serving/state's `held`) and run on the server's one worker as
the kinds "maps" and "table" of ui/stages/why/jobs.py (a page asks `jobs.ready`: on a big model
they are computed on a background thread while the step shows a progress bar).

- the table reuses the cached maps (the library's `table` takes the methods as functions: the
  trained model's map is the cached one, the randomised copy's is computed);
- the read-ahead (`maps_read`, `table_read`) computes both for a student following a lesson
  that includes the stage, before the class gets there.
`maps` and `table` themselves wait for the result (the read-ahead's, a test's, a small model's).
"""

from __future__ import annotations

from ui.serving import state
from ui.serving.budget import forward_worker, get_model, held
from ui.serving.tour import Ask
from ui.stages.why import jobs
from ui.stages.why.jobs import LONG_S, computed, ticker  # noqa: F401 (tests read computed)
from vit_core.explain import attribution, faithfulness
from vit_core.explain.attribution import METHODS
from vit_core.explain.targets import Target, answered


def applies(config) -> bool:
    """The maps explain a class or a caption word: a headless encoder has neither."""
    return bool(config.num_classes) or bool(config.has_text)


def target(inp, model_name: str, mask: str | None = None) -> Target:
    """What the model answers for this image, read from what the other pages keep (no pass of
    its own once a page showed the answer): the top class of `state.logits` (the overview's
    trace), or the first word of the caption `state.generation` wrote."""
    model = get_model(model_name)
    if model.config.has_text:
        return answered(model, caption=state.generation(inp, model_name, mask=mask).ids)
    logits = state.logits(inp, model_name, mask) if model.config.num_classes else None
    return answered(model, logits=logits)


def each_method(call, progress) -> dict:
    """{method: call(method, its progress)} for the six methods in turn, in one worker call;
    `progress` counts thousandths of the six."""
    n, out = len(METHODS), {}
    for i, method in enumerate(METHODS):
        def inner(done, total, i=i):
            progress(1000 * i + 1000 * done // max(total, 1), 1000 * n)

        out[method] = call(method, inner)
        progress(1000 * (i + 1), 1000 * n)
    return out


def _all_maps(model, pixels, target: Target, mask, progress) -> dict:
    """attribution.attribute for every method with its defaults, under the sidebar's mask."""
    return each_method(lambda m, p: attribution.attribute(model, pixels, m, target, mask=mask,
                                                          progress=p), progress)


@held
def _maps(key: str, model_name: str, mask: str | None, target: Target, _pixels) -> dict:
    model = get_model(model_name)
    k = ("_maps", key, model_name, mask, target)
    try:
        return forward_worker().run(_all_maps, model, _pixels, target, mask, ticker(k),
                                    model=model, timeout=LONG_S)
    finally:
        jobs.finished(k)


def held_key(kind: str, inp, model_name: str, mask: str | None, target: Target) -> tuple:
    """The key `maps` / `table` are kept under in the shared budget."""
    return jobs.held_key(f"_{kind}", inp, model_name, mask, target)


@jobs.kind("maps", "Computing the six maps",
           lambda *a: [held_key("maps", *a)])
def maps(inp, model_name: str, mask: str | None, target: Target) -> dict:
    """{method: vit_core.explain.attribution.Attribution} for `target`, the six methods."""
    return _maps(inp.key, model_name, state.same_mask(model_name, mask), target,
                 state.prepare(inp, model_name).pixels)


def _cached(found: dict, method: str):
    """A method for faithfulness.table: the map the maps step computed (kept)."""
    return lambda model, pixels, target, *, mask=None, progress=None: found[method]


@held
def _table(key: str, model_name: str, mask: str | None, target: Target, _pixels) -> list:
    model = get_model(model_name)
    found = _maps(key, model_name, mask, target, _pixels)
    methods = {m: _cached(found, m) for m in METHODS}
    k = ("_table", key, model_name, mask, target)
    try:
        # sanity=False: the Sanity step computes the randomised copy's maps itself, to draw
        # them (patch_compute); the table's own ρ would be read by nobody (~27 s on ViT-B/16)
        return forward_worker().run(faithfulness.table, model, _pixels, target, methods=methods,
                                    sanity=False, mask=mask, progress=ticker(k), model=model,
                                    timeout=LONG_S)
    finally:
        jobs.finished(k)


@jobs.kind("table", "Putting each map to the test",
           lambda *a: [held_key("table", *a)], after="maps")
def table(inp, model_name: str, mask: str | None, target: Target) -> list:
    """vit_core.explain.faithfulness.table for `target`: a Row per method, then "random"."""
    return _table(inp.key, model_name, state.same_mask(model_name, mask), target,
                  state.prepare(inp, model_name).pixels)


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
