"""The "Why this answer?" stage under AppTest (issue 42): every step of the maps and the test draws
its figure; the maps share one colour scale and show the library's maps; the sentence's fastest
method, the AUCs in the legend and the random band equal this test's own computation with the
library's public functions (attribution.attribute, faithfulness.deletion / insertion /
random_curves on the same image), never the stage's helpers or faithfulness.table."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from tests.independent import pixels_of
from tests.support import HUB, arr, charts, note, open_app
from ui import keys
from ui.stages.why.keys import WHY_FRAME, WHY_OPEN
from vit_core import load_model
from vit_core.explain import attribution, faithfulness, targets

OPEN = {WHY_OPEN: True}  # alone, the steps after the guess shown (as after "Skip guessing")

CLF, CAUSAL = "shapes-classifier", "shapes-captioner-causal"
FIXTURE = str(HUB / "tiny-org/vit-1block-1head-p14")
NAMES = {"cls_attention": "CLS attention", "rollout": "Rollout", "grad_rollout":
         "Gradient rollout", "gradcam": "Grad-CAM", "integrated_gradients":
         "Integrated Gradients", "occlusion": "Occlusion"}  # the names the stage shows
SEEDS = range(5)  # faithfulness.table's default random orders


def own(model, pixels) -> dict:
    """Each method's map and curves, and random orders' curves, from the library's parts."""
    target = targets.predicted(model, pixels)
    out = {"target": target, "maps": {}, "deletion": {}, "insertion": {}}
    for m in attribution.METHODS:
        a = attribution.attribute(model, pixels, m, target)
        order = faithfulness.order_of(a.patches)
        out["maps"][m] = a.patches.double().numpy()
        out["deletion"][m] = faithfulness.deletion(model, pixels, target, order)
        out["insertion"][m] = faithfulness.insertion(model, pixels, target, order)
    for kind in ("deletion", "insertion"):
        out[f"random_{kind}"] = faithfulness.random_curves(model, pixels, target, kind,
                                                           seeds=SEEDS)
    return out


@pytest.fixture(scope="module", params=[CLF, CAUSAL, FIXTURE], ids=["classifier", "captioner",
                                                                     "fixture-vit"])
def shown(request):
    model_name = request.param
    at = open_app("why", model_name, no_error=True, state=OPEN)
    model = load_model(model_name)
    return at, model, own(model, pixels_of(at, model))


def _race(at) -> dict:
    return next(s for t, s in charts(at).items() if t.startswith("Grey each map"))


def _maps(at) -> dict:
    return next(s for t, s in charts(at).items() if t.startswith("What made"))


def test_every_step_draws_its_figure_and_names_the_answer(shown):
    at, model, ref = shown
    label = ref["target"].label
    assert f"“{label}”" in _maps(at)["layout"]["title"]["text"]
    assert f"“{label}”" in _race(at)["layout"]["title"]["text"]


def test_the_maps_share_one_colour_scale_and_are_the_librarys(shown):
    at, model, ref = shown
    fig = _maps(at)
    heat = [t for t in fig["data"] if t["type"] == "heatmap"]
    assert len(heat) == 6 and all(t.get("coloraxis") == "coloraxis" for t in heat)
    axis = fig["layout"]["coloraxis"]
    assert (axis["cmin"], axis["cmax"]) == (-1, 1)  # one scale, one bar, it says what it means
    assert "peak |value|" in axis["colorbar"]["title"]["text"]
    g = model.config.grid
    for t, m in zip(heat, attribution.METHODS, strict=True):
        v = ref["maps"][m]
        expected = v / np.abs(v).max() if np.abs(v).max() > 0 else v
        np.testing.assert_allclose(arr(t["z"]).reshape(g, g), expected.reshape(g, g), atol=2e-4)


def test_the_fastest_method_and_the_aucs_are_the_tests_own(shown):
    at, model, ref = shown
    dele = {m: c.auc for m, c in ref["deletion"].items()}
    fastest = min(dele, key=dele.get)
    said = re.search(r"Greying the patches in (.+?)'s order removed .+? fastest: its deletion "
                     r"AUC is ([0-9.]+), against ([0-9.]+) ± ([0-9.]+)", note(at))
    assert said, note(at)
    assert said.group(1) == NAMES[fastest]
    assert float(said.group(2)) == pytest.approx(dele[fastest], abs=6e-4)
    rd = ref["random_deletion"]
    assert float(said.group(3)) == pytest.approx(rd.auc_mean, abs=6e-4)
    assert float(said.group(4)) == pytest.approx(rd.auc_std, abs=6e-4)
    legend = {t["name"] for t in _race(at)["data"] if t.get("showlegend", True) and t.get("name")}
    for m in attribution.METHODS:
        entry = next(n for n in legend if re.fullmatch(re.escape(NAMES[m]) + r" [0-9.]+ / [0-9.]+",
                                                       n))
        d, i = map(float, re.findall(r"([0-9.]+) / ([0-9.]+)", entry)[0])
        assert d == pytest.approx(ref["deletion"][m].auc, abs=6e-4)
        assert i == pytest.approx(ref["insertion"][m].auc, abs=6e-4)


def test_the_random_band_is_the_tests_mean_and_spread(shown):
    at, model, ref = shown
    fig = _race(at)
    for kind, axis in (("deletion", "x2"), ("insertion", "x3")):
        r = ref[f"random_{kind}"]
        ys = torch.stack([c.y.double() for c in r.curves])
        mean, std = ys.mean(0).numpy(), ys.std(0, correction=0).numpy()  # population spread
        band = next(t for t in fig["data"] if t.get("fill") == "toself" and t["xaxis"] == axis)
        y = arr(band["y"])
        n = len(mean)
        np.testing.assert_allclose(y[:n], mean + std, atol=1e-5)
        np.testing.assert_allclose(y[n:], (mean - std)[::-1], atol=1e-5)


def test_the_question_names_the_fastest_method(shown):
    at, model, ref = shown
    dele = {m: c.auc for m, c in ref["deletion"].items()}
    assert any("Which method's order removed the answer fastest" in m.value
               for m in at.markdown)
    at.toggle(key=keys.reveal("why", "test")).set_value(True).run()
    answers = [i.value for i in at.info if i.value.startswith(NAMES[min(dele, key=dele.get)])]
    assert answers, note(at)


def test_the_play_greys_the_fastest_orders_patches_as_the_probability_falls(shown):
    """The last frame (where Play ends) has every patch greyed and says the probability this
    test's own deletion curve of the fastest order reads there; frame 0 the image as it is."""
    at, model, ref = shown
    dele = ref["deletion"][min(ref["deletion"], key=lambda m: ref["deletion"][m].auc)]
    slider = at.slider(key=WHY_FRAME)
    assert slider.value == 0
    first = _race(at)["layout"]["annotations"][0]["text"]
    assert first == f"0 patches greyed: P = {float(dele.y[0]):.2f}"
    slider.set_value(slider.max).run()
    last = _race(at)["layout"]["annotations"][0]["text"]
    N = model.config.num_patches
    assert last == f"{N} patches greyed: P = {float(dele.y[-1]):.2f}"
