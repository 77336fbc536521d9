"""What the why stage computes, once per (image, model, mask, target), kept in the app's shared
byte budget (ui/serving/state's `held`) and run on the server's one worker."""

from __future__ import annotations

from ui.serving import state
from ui.serving.budget import forward_worker, get_model, held
from ui.serving.tour import Ask
from vit_core.explain import attribution, faithfulness
from vit_core.explain.targets import Target, predicted


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


@held
def _maps(key: str, model_name: str, mask: str | None, target: Target, _pixels) -> dict:
    model = get_model(model_name)
    return forward_worker().run(attribution.attribute_all, model, _pixels, target, model=model)


def maps(inp, model_name: str, mask: str | None, target: Target) -> dict:
    """{method: vit_core.explain.attribution.Attribution} for `target`, the six methods."""
    return _maps(inp.key, model_name, state.same_mask(model_name, mask), target,
                 state.prepare(inp, model_name).pixels)


@held
def _table(key: str, model_name: str, mask: str | None, target: Target, _pixels) -> list:
    model = get_model(model_name)
    return forward_worker().run(faithfulness.table, model, _pixels, target, model=model)


def table(inp, model_name: str, mask: str | None, target: Target) -> list:
    """vit_core.explain.faithfulness.table for `target`: a Row per method, then "random"."""
    return _table(inp.key, model_name, state.same_mask(model_name, mask), target,
                  state.prepare(inp, model_name).pixels)


def maps_read(a: Ask) -> list:
    """The read-ahead's call: the maps of the predicted answer."""
    if not applies(state.get_model(a.name).config):
        return []
    return [lambda: maps(a.inp, a.name, a.mask, target(a.inp, a.name, a.mask))]
