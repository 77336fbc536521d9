"""What the why stage's Sanity and patching steps compute, once per (image, model, mask, target,
corruption), kept in the app's shared byte budget (`held`) and run on the server's one worker,
as ui/stages/why/compute.py does for the maps; the randomised maps are the kind "sanity" of
ui/stages/why/jobs.py, patching the kind "patching" (on a big model each computed in the
background while its step shows a progress bar)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ui.selection import inputs
from ui.serving import state, tour
from ui.serving.budget import forward_worker, get_model, held
from ui.serving.tour import Ask
from ui.stages import choices
from ui.stages.why import compute, jobs
from ui.stages.why.compute import each_method
from vit_core.explain import patching
from vit_core.explain.attribution import METHODS
from vit_core.explain.faithfulness_sanity import Sanity, sanity_check
from vit_core.explain.targets import Target
from vit_core.explain.training import crop_mask, object_cover
from vit_core.scenes import world

# exact patching runs one corrupted pass per (block, token): up to this many sites a model is
# patched exactly (the bundled 6-block, 50-token models: 300); above it (ViT-Ti/16 and ViT-B/16:
# 12 x 197 = 2364: 238 s for ViT-Ti here at load 12) by attribution patching alone (0.8 s)
EXACT_SITES = 400
KINDS = choices.PATCH_AGAINST  # the corruptions a student chooses from


# ---------------------------------------------------------------- sanity: the randomised maps
def _all_sanity(model, pixels, target: Target, trained: dict, mask, progress) -> dict:
    """sanity_check for every method against its trained map (`trained`: method -> patches),
    in ONE worker call (compute.each_method): a class's students get their six randomised
    maps one student after another, not each method in turn for everyone (then all were
    ready only near the end)."""
    return each_method(lambda m, p: sanity_check(model, pixels, target, METHODS[m],
                                                 trained=trained[m], mask=mask, progress=p),
                       progress)


@held
def _sanity(key: str, model_name: str, mask: str | None, target: Target, _pixels,
            _trained) -> dict:
    model = get_model(model_name)
    k = ("_sanity", key, model_name, mask, target)
    try:
        return forward_worker().run(_all_sanity, model, _pixels, target, _trained, mask,
                                    jobs.ticker(k), model=model, timeout=jobs.LONG_S)
    finally:
        jobs.finished(k)


def _sanity_keys(inp, model_name: str, mask: str | None, target: Target) -> list[tuple]:
    return [jobs.held_key("_sanity", inp, model_name, mask, target)]


@jobs.kind("sanity", "Computing the maps on the model with random weights", _sanity_keys,
           after="maps")
def sanity(inp, model_name: str, mask: str | None, target: Target) -> dict[str, Sanity]:
    """{method: faithfulness_sanity.Sanity}: each map of the maps step (compute.maps, the
    methods' defaults) against the same method on the randomised copy (every block and the
    output layer re-initialised, seed 0: the library's defaults), the six in one worker call."""
    m = state.same_mask(model_name, mask)
    pixels = state.prepare(inp, model_name).pixels
    trained = compute.maps(inp, model_name, m, target)
    return _sanity(inp.key, model_name, m, target, pixels,
                   {k: trained[k].patches for k in METHODS})


def sanity_read(a: Ask) -> list:
    """The read-ahead's call: the randomised maps of the predicted answer."""
    if not compute.applies(state.get_model(a.name).config):
        return []
    return [lambda: sanity(a.inp, a.name, a.mask, compute.target(a.inp, a.name, a.mask))]


# ---------------------------------------------------------------- patching
def exact_fits(config) -> bool:
    """Is the model patched exactly (one pass per site), or by attribution patching alone?"""
    return config.depth * config.num_image_tokens <= EXACT_SITES


@functools.lru_cache(maxsize=16)
def _sample_mask(seed: int) -> np.ndarray:
    return world.make_scene(seed).mask


def object_pixels(inp) -> np.ndarray | None:
    """The object's pixel mask when the image is one of the gallery's sample scenes (its bytes
    checked against the scene's; found without the session, so the read-ahead's thread finds
    it too); None for an upload or a composed scene."""
    if not inp.label.startswith("sample"):
        return None
    seed = next((s for s in inputs.sample_seeds() if inputs.sample_bytes(s) == inp.data), None)
    return None if seed is None else _sample_mask(int(seed))


def object_patches(inp, config) -> list[int] | None:
    """The patches the object covers (any of its pixels), when the scene world drew the image;
    None for an upload, whose object is not known."""
    raw = object_pixels(inp)
    if raw is None:
        return None
    cover = object_cover(crop_mask(raw, config), config.grid, config.patch_size)
    return [int(i) for i in np.flatnonzero(cover > 0)]


def kinds(inp, config) -> tuple[str, ...]:
    """The corruptions this image offers: "object" only where the object's patches are known."""
    return KINDS if object_patches(inp, config) else KINDS[1:]


def other_input(inp) -> inputs.Input:
    """The other sample scene the "other" corruption takes its patches from."""
    return tour.other_sample(inp)[1]


@dataclass(frozen=True)
class Patched:
    """Activation patching of one image against one corruption."""

    kind: str
    exact: bool  # exact patching shown (else attribution patching)
    tokens: patching.Patching | None  # the grid shown, [L, tokens]; None when `error`
    heads: patching.Patching | None  # [L, H]
    agree_tokens: patching.Agreement | None  # exact vs attribution (exact models only)
    agree_heads: patching.Agreement | None
    error: str | None = None  # the corruption did not change the answer (the library's words)
    changed: tuple[int, ...] = ()  # the patches the corruption replaced


def patch_all(model, clean, corrupted, target: Target, exact: bool, mask, kind: str,
              changed: tuple[int, ...]) -> Patched:
    """Attribution patching of tokens and heads; with `exact`, exact patching too (shown) and
    how far the attribution grids agree with it."""
    try:
        fast = patching.attribute(model, clean, corrupted, target, mask=mask)
        if not exact:
            return Patched(kind, False, fast["resid_pre"], fast["z"], None, None,
                           changed=changed)
        tok = patching.patch_tokens(model, clean, corrupted, target, mask=mask)
        heads = patching.patch_heads(model, clean, corrupted, target, mask=mask)
    except ValueError as e:
        return Patched(kind, exact, None, None, None, None, str(e), changed)
    return Patched(kind, True, tok, heads, patching.agreement(tok, fast["resid_pre"]),
                   patching.agreement(heads, fast["z"]), changed=changed)


@held
def _patched(key: str, model_name: str, mask: str | None, target: Target, kind: str,
             other_key: str | None, _pixels, _corrupted, _changed) -> Patched:
    model = get_model(model_name)
    # on a thread of its own (jobs.ready), never a page's: it may wait behind a class's other
    # patching calls and a long job's batch longer than a page would (worker.LIMIT_S)
    return forward_worker().run(patch_all, model, _pixels, _corrupted, target,
                                exact_fits(model.config), mask, kind, _changed, model=model,
                                timeout=jobs.LONG_S)


def _patched_keys(inp, model_name: str, mask: str | None, target: Target,
                  kind: str) -> list[tuple]:
    other = other_input(inp).key if kind == "other" else None
    return [jobs.held_key("_patched", inp, model_name, mask, target, kind, other)]


@jobs.kind("patching", "Patching the activations", _patched_keys, short=True)
def patched(inp, model_name: str, mask: str | None, target: Target, kind: str) -> Patched:
    """Patching between the image and its corrupted copy (`kind` one of KINDS); on a big model
    a short kind (attribution patching: one forward and one backward pass each), computed among
    the pages' passes while the step shows a progress bar."""
    config = get_model(model_name).config
    pixels = state.prepare(inp, model_name).pixels
    other, changed = None, None
    if kind == "other":
        other = other_input(inp)
        base = patching.corrupt(pixels, config, "other",
                                other=state.prepare(other, model_name).pixels)
    elif kind == "object":
        changed = object_patches(inp, config)
        base = patching.corrupt(pixels, config, "grey", patches=changed)
    else:
        base = patching.corrupt(pixels, config, kind)
    every = tuple(range(config.num_patches)) if changed is None else tuple(changed)
    return _patched(inp.key, model_name, state.same_mask(model_name, mask), target, kind,
                    None if other is None else other.key, pixels, base, every)


def patched_read(a: Ask) -> list:
    """The read-ahead's call: patching against the first corruption offered (the default)."""
    config = state.get_model(a.name).config
    if not compute.applies(config):
        return []
    return [lambda: patched(a.inp, a.name, a.mask, compute.target(a.inp, a.name, a.mask),
                            kinds(a.inp, config)[0])]
