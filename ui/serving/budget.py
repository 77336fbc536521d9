"""The one byte budget every session shares, the one forward worker, and the models held in it.

Models are loaded by name (vit_core.io.ref.ModelRef: 'NAME', 'hf:ORG/NAME', 'PATH?heads=H',
with '@stepN' and '@Spx'), once, and kept in the byte budget of ui/serving/cache.py with everything
computed
from them (`held`); ui/serving/state.py computes the rest. Never downloads: in the app only the
teacher
fetches (ui/selection/models.py).
"""

from __future__ import annotations

import functools
import inspect

import streamlit as st

import vit_core
from ui.serving import cache, worker
from vit_core.io.ref import ModelRef


@st.cache_resource(show_spinner=False)
def forward_worker() -> worker.Worker:
    """The one thread that runs every session's forward passes (ui/serving/worker.py)."""
    return worker.Worker()


@st.cache_resource(show_spinner=False)
def shared_cache() -> cache.ByteLRU:
    """The one byte-bounded cache of every session (its budget read once: ui/serving/cache.py)."""
    return cache.ByteLRU(int(cache.budget_mb() * cache.MB))


def held(fn):
    """Cache `fn` in shared_cache(), keyed by its name and the arguments whose names do not
    start with "_" (as st.cache_resource does); what it returns counts against the budget and
    belongs to the model its `model_name` argument names (dropped with that model)."""
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def cached(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        key = (fn.__name__,) + tuple(v for name, v in bound.arguments.items()
                                     if not name.startswith("_"))
        model = bound.arguments.get("model_name")
        return shared_cache().get(key, lambda: fn(*args, **kwargs),
                                  owner=None if model is None else _model_key(model))

    cached.clear = lambda: shared_cache().clear(lambda key: key[0] == fn.__name__)
    return cached


def _model_key(name: str) -> tuple:
    return ("get_model", name)


def get_model(name: str):
    """A model by picker name ('hf:ORG/NAME' from the local Hugging Face cache; a loaded file
    may carry options as 'PATH?heads=H'), loaded once and kept in the byte budget. 'NAME@288px'
    is that model at 288 px (vit_core.at_size: its tensors shared, positions resampled);
    'NAME@step250' a bundled model's weights after 250 training steps (its snapshot). A name
    that is not one of these forms raises ValueError in one sentence (vit_core.io.ref)."""
    ref = ModelRef.parse(name)
    if ref.size is not None:
        return shared_cache().get(_model_key(name),
                                  lambda: vit_core.at_size(get_model(str(ref.unsized)), ref.size))
    return shared_cache().get(_model_key(name), lambda: _load(ref))


def _load(ref: ModelRef):
    """Never downloads: in the app only the teacher fetches (ui/selection/models.py)."""
    if ref.step is not None:
        return vit_core.load_model(ref.name, step=ref.step, local_files_only=True)
    options = {"num_heads": ref.heads} if ref.heads is not None else {}
    return vit_core.load_model(ref.name, local_files_only=True, **options)


def sized(name: str, size: int | None) -> str:
    """The name of model `name` at `size` pixels: the picker name itself at its own size, or for
    a size it cannot read (not one of vit_core.input_sizes), else 'NAME@{size}px'."""
    base = ModelRef.parse(name).unsized
    config = get_model(str(base)).config
    if size is None or size == config.img_size or size not in vit_core.input_sizes(config):
        return str(base)
    return str(base.at(step=base.step, size=size))


@st.cache_resource(show_spinner=False)
def training_log(name: str) -> vit_core.TrainingLog | None:
    """How picker model `name` was trained (vit_core.training_log), read once; None without."""
    return vit_core.training_log(name)


def stepped(name: str, step: int | None) -> str:
    """The name of picker model `name` after `step` training steps: the name itself at its last
    step (or for a step it was not kept at), else 'NAME@step{step}'."""
    log = training_log(name)
    if log is None or step is None or step not in log.steps or step == log.final_step:
        return name
    return str(ModelRef.parse(name).at(step=step))


COMPARE_AT = 1.5  # at its own size, the Embeddings stage compares a model with it at ~1.5x


def size_pair(name: str) -> tuple[str, str]:
    """(the model at its own size, the model at another size) for the page of model `name`: the
    session's size when it is not the model's own, else the size nearest COMPARE_AT x its own."""
    ref = ModelRef.parse(name)
    base = str(ref.unsized)
    if ref.size is not None:
        return base, name
    c = get_model(base).config
    others = vit_core.input_sizes(c)[1:]
    if not others:
        return base, base
    return base, sized(base, min(others, key=lambda s: (abs(s - COMPARE_AT * c.img_size), -s)))
