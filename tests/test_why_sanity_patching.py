"""The why stage's "Sanity" and "Where the answer is formed" steps under AppTest (?page=why):
each draws its figure, and every number it says or draws is computed again here through the
library's public functions on the session's image (faithfulness_sanity.sanity_check with the
trained map computed afresh, patching.corrupt / patch_tokens / patch_heads / attribute /
agreement), read off by hand (numpy argmax, counts), never through the stage's helpers."""

from __future__ import annotations

import re

import numpy as np
import pytest

import vit_core
from tests.support import arr, chart_titled, open_app, settle
from ui import keys, stages
from ui.drawing.numbers import pct
from ui.keys import WHY_PATCH_KIND
from ui.selection import inputs
from ui.serving import worker
from ui.stages.why import compute, patch_compute
from ui.stages.why.keys import WHY_OPEN
from vit_core import load_image, preprocess
from vit_core.explain import patching, targets
from vit_core.explain.attribution import METHODS
from vit_core.explain.faithfulness_sanity import sanity_check
from vit_core.explain.training import crop_mask, object_cover
from vit_core.scenes import world

OPEN = {WHY_OPEN: True}  # alone, the steps after the guess shown (as after "Skip guessing")

SHOWN = {"cls_attention": "CLS attention", "rollout": "Rollout", "grad_rollout":
         "Gradient rollout", "gradcam": "Grad-CAM", "integrated_gradients":
         "Integrated Gradients", "occlusion": "Occlusion"}
SURVIVES, HEADS = 0.5, 0.1  # the thresholds the steps name


def infos(at) -> list[str]:
    return [i.value for i in at.info]


def alts(at) -> str:
    return " ".join(e.proto.body for e in at.get("html") if "figure-alt" in e.proto.body)


def tile(z: np.ndarray, i: int, cols: int, shape: tuple[int, int], gap: int = 2) -> np.ndarray:
    """Tile i of a figure of tiles (`gap` empty rows above each, one empty column between)."""
    R, C = shape
    r0, c0 = (i // cols) * (R + gap) + gap, (i % cols) * (C + 1)
    return z[r0:r0 + R, c0:c0 + C]


def check_sanity(at, model, pixels, target) -> dict:
    g = model.config.grid
    found = {m: sanity_check(model, pixels, target, fn) for m, fn in METHODS.items()}
    rho = {m: s.rho for m, s in found.items()}
    kept = [SHOWN[m] for m in METHODS if rho[m] == rho[m] and rho[m] > SURVIVES]
    said = next((t for t in infos(at) if "drawn at random" in t), None)
    assert said, ("no Sanity sentence", infos(at), [e.value for e in at.caption][:6],
                  [e.value for e in at.warning], [e.value for e in at.error])
    if kept:
        names = kept[0] if len(kept) == 1 else ", ".join(kept[:-1]) + " and " + kept[-1]
        assert said.startswith(f"{names} barely changed"), (said, rho)
    else:
        assert said.startswith("No map kept its ranking"), (said, rho)
    alt = alts(at)
    for m in METHODS:
        assert f"{SHOWN[m]} ρ {rho[m]:.2f}" in alt, (m, rho[m], alt)
    fig = chart_titled(at, f"“{target.label}”: the maps on the trained model")
    z = arr(fig["data"][0]["z"]).astype(float)
    assert fig["data"][0]["zmin"] == -1 and fig["data"][0]["zmax"] == 1  # one scale for all
    for i, m in enumerate(METHODS):
        for row, v in enumerate((found[m].trained, found[m].randomised)):
            v = v.double().numpy()
            own = v / np.abs(v).max()
            assert np.allclose(tile(z, row * len(METHODS) + i, len(METHODS), (g, g)),
                               own.reshape(g, g), atol=1e-5), (m, row)
    return rho


def object_patches(at, config) -> list[int]:
    """The patches the sample scene's object covers, from the scene world's own mask."""
    scene = world.make_scene(int(at.session_state[keys.SAMPLE]))
    cover = object_cover(crop_mask(scene.mask, config), config.grid, config.patch_size)
    return [int(i) for i in np.flatnonzero(cover > 0)]


def token(t: int, c) -> str:
    n, g = c.num_prefix_tokens, c.grid
    if t < n:
        return f"[{c.prefix_names[t]}]"
    return f"patch {t - n} (row {(t - n) // g}, column {(t - n) % g})"


def check_patching(at, model, pixels, target, bad, exact: bool) -> tuple | None:
    c = model.config
    try:
        fast = patching.attribute(model, pixels, bad, target)
    except ValueError as e:  # the corruption changed nothing: the page says the library's words
        assert f"Nothing to patch here: {e}" in infos(at)
        return
    tok = patching.patch_tokens(model, pixels, bad, target) if exact else fast["resid_pre"]
    heads = patching.patch_heads(model, pixels, bad, target) if exact else fast["z"]
    g, h = tok.grid.double().numpy(), heads.grid.double().numpy()
    said = next(t for t in infos(at) if "restores at most" in t)
    score = "log-probability" if target.is_word else "logit"
    assert f"{score} of “{target.label}” from {tok.clean:.2f} to {tok.corrupt:.2f}" in said
    b, t = divmod(int(np.argmax(g)), g.shape[1])
    assert f"restores at most {pct(g[b, t])} of it: {token(t, c)} in block {b}." in said
    hb, hh = divmod(int(np.argmax(h)), h.shape[1])
    assert (f"{int((h >= HEADS).sum())} of the {h.size} heads restore at least {pct(HEADS)} "
            f"alone; the most, head {hh} of block {hb}, {pct(h[hb, hh])}.") in said
    if exact:
        a = patching.agreement(tok, fast["resid_pre"])
        assert f"Pearson r = {a.pearson:.2f}" in said and "Shown: exact patching" in said
    else:
        assert "Shown: attribution patching" in said
    fig = chart_titled(at, f"“{target.label}” against")
    assert fig["layout"]["title"]["text"].endswith("exact patching" if exact else
                                                  "attribution patching")
    assert np.allclose(arr(fig["data"][1]["z"]).astype(float), h, atol=1e-5)
    z = arr(fig["data"][0]["z"]).astype(float)
    n, gr = c.num_prefix_tokens, c.grid
    for layer in range(c.depth):  # each block's tile: the prefix row, then the patch grid
        cut = tile(z, layer, -(-c.depth // 2), (gr + (1 if n else 0), gr),
                   gap=2 if c.depth <= 6 else 1)  # (deeper: the tiles are not named)
        assert np.allclose(cut[-gr:].flatten(), g[layer, n:], atol=1e-5)
        assert np.allclose(cut[0, :n], g[layer, :n], atol=1e-5)
    limit = max(1.0, np.abs(g).max(), np.abs(h).max())
    assert abs(fig["layout"]["coloraxis"]["cmax"] - limit) < 1e-5
    return b, token(t, c), g[b, t]


def revealed(at, step: str) -> str:
    """The answer the step's Reveal shows."""
    before = set(infos(at))
    at.toggle(key=keys.reveal("why", step)).set_value(True).run()
    assert not at.exception
    return next(t for t in infos(at) if t not in before)


def image(at, model):
    pixels = preprocess(load_image(at.session_state[keys.INPUT].data), model.config)
    return pixels, targets.predicted(model, pixels)


@pytest.mark.parametrize("name", ["shapes-classifier", "shapes-captioner-causal"])
def test_sanity_and_patching_say_the_librarys_numbers(name):
    at = open_app("why", name, no_error=True, state=OPEN)
    model = vit_core.load_model(name)
    pixels, target = image(at, model)
    rho = check_sanity(at, model, pixels, target)
    c = model.config
    bad = patching.corrupt(pixels, c, "grey", patches=object_patches(at, c))
    block, where, share = check_patching(at, model, pixels, target, bad, exact=True)
    best = max(METHODS, key=lambda m: rho[m])  # (rho is never nan on these maps)
    assert revealed(at, "sanity").startswith(f"{SHOWN[best]}: ρ {rho[best]:.2f} between")
    assert revealed(at, "patching") == f"Block {block}: {where} restores {pct(share)}."
    at.radio(key=WHY_PATCH_KIND).set_value("blur").run()
    assert not at.exception
    check_patching(at, model, pixels, target, patching.corrupt(pixels, c, "blur"), exact=True)
    if name != "shapes-classifier":
        return
    at.radio(key=WHY_PATCH_KIND).set_value("other").run()  # the gallery's next scene
    data = at.session_state[keys.INPUT].data
    seed = next(s for s in inputs.sample_seeds() if inputs.sample_bytes(s) != data)
    other = preprocess(world.make_scene(seed).image, c)
    check_patching(at, model, pixels, target, patching.corrupt(pixels, c, "other", other=other),
                   exact=True)
    assert f"Putting another sample scene (“{world.scene_spec(seed).caption}”)" in " ".join(
        infos(at))


def test_a_random_vit_ti_is_patched_by_attribution(monkeypatch):
    """Above the exact budget (12 blocks × 197 tokens) the step shows attribution patching, its
    tiles unnamed. The step alone, as a slide: the page's other steps (the six maps twice for
    Sanity, ~20 s here) are checked on the bundled models above."""
    monkeypatch.setattr(worker, "LIMIT_S", 1800.0)  # a loaded machine
    model = vit_core.load_model("vit-ti16")
    steps = [s.key for s in stages.get("why").steps_for(model.config)]
    at = open_app("why", "vit-ti16", no_error=True, state=OPEN,
                  params={"presenter": "1", "step": str(steps.index("patching") + 1)})
    settle(at)  # (a progress bar first, unless this process has the numbers)
    pixels, target = image(at, model)
    bad = patching.corrupt(pixels, model.config, "grey",
                           patches=object_patches(at, model.config))
    check_patching(at, model, pixels, target, bad, exact=False)
    assert re.search(r"more than the \d+ patched exactly", " ".join(infos(at)))


def test_sanity_compares_both_maps_under_the_sidebars_mask():
    """A mask other than the model's own (here causal on the bundled classifier): the trained
    and the randomised maps are both computed under it, as the library's sanity_check does."""
    name = "shapes-classifier"
    model = vit_core.load_model(name)
    inp = inputs.make_input("sanity-mask", inputs.sample_bytes(3))
    pixels = preprocess(load_image(inp.data), model.config)
    target = compute.target(inp, name, "causal")
    found = patch_compute.sanity(inp, name, "causal", target)
    for m, fn in METHODS.items():
        own = sanity_check(model, pixels, target, fn, mask="causal")
        assert np.allclose(found[m].randomised, own.randomised, atol=1e-5), m
        assert found[m].rho == pytest.approx(own.rho, abs=1e-6, nan_ok=True), m
