"""Part 2 pages under AppTest (rendering is in test_pages.py): widgets and the core's numbers."""

import json
import re

import pytest

from tests.test_pages import charts, start
from vit_core import load_image, load_model, preprocess
from vit_core.explain.generation import generate, score_text


@pytest.mark.parametrize("page,widget,kind,value", [
    ("mlp", "layer", "slider", 3),
    ("mlp", "patch", "number_input", 9),
    ("logits", "class_temperature", "slider", 3.0),
    ("experiments", "exp_kind", "radio", "Grey out patches"),
])
def test_widgets_change_the_output(page, widget, kind, value):
    at = start(page)
    before = charts(at)
    getattr(at, kind)(key=widget).set_value(value).run()
    assert not at.exception
    after = charts(at)
    assert [t for t in after if before.get(t) != after[t]] or set(after) != set(before)


def test_segmentation_says_when_a_model_has_no_seg_head():
    at = start("segmentation")
    assert at.warning  # the preset has no segmentation head, and says so


def caption_page(steps: int):
    at = start("logits", model="vit-b16-text")
    for _ in range(steps):
        at.button(key="gen_next").click().run()
    return at


def test_step_by_step_generation_equals_vit_core_generate():
    at = caption_page(3)
    shown = [h.value for h in at.subheader if h.value.startswith("[SOS]")][0]
    model = load_model("vit-b16-text")
    pixels = preprocess(load_image(at.session_state["_input"].data), model.config)
    gen = generate(model, pixels)
    assert shown.split()[1:4] == gen.words[:3]
    at.button(key="gen_all").click().run()
    assert any(gen.text in s.value for s in at.success) or gen.words[-1] != "[EOS]"


def test_typed_caption_probabilities_equal_run_trace():
    at = caption_page(0)
    at.text_input(key="caption").set_value("a blue zebra on the snow").run()
    assert any("'zebra'" in w.value for w in at.warning)
    df = at.dataframe[0].value
    model = load_model("vit-b16-text")
    pixels = preprocess(load_image(at.session_state["_input"].data), model.config)
    expected = score_text(model, pixels, "a blue zebra on the snow")
    shown = [float(re.sub("%", "", p)) / 100 for p in df.iloc[:, 1]]
    assert shown == pytest.approx(expected.probs, abs=6e-5)
    assert "zebra (unknown → [UNK])" in list(df.iloc[:, 0])


def test_masks_page_compares_the_two_trained_captioners():
    at = start("masks", model="shapes-classifier")
    titles = " | ".join(charts(at))
    text = " ".join(m.value for m in at.markdown)
    for name, kind in [("shapes-captioner-prefix", "prefix"),
                       ("shapes-captioner-causal", "causal")]:
        model = load_model(name)
        assert f"{name}, {kind} mask" in titles
        card = model.info.metrics
        assert f"exact caption {card['exact_match']:.1%}" in text
        pixels = preprocess(load_image(at.session_state["_input"].data), model.config)
        assert f"“{generate(model, pixels, mask=kind).text}”" in text
    assert not at.warning  # both are trained: no "random weights" warning


def test_overview_of_a_captioner_shows_its_greedy_caption_word_by_word():
    at = start("overview", model="shapes-captioner-prefix")
    model = load_model("shapes-captioner-prefix")
    pixels = preprocess(load_image(at.session_state["_input"].data), model.config)
    gen = generate(model, pixels)
    assert any(f"“{gen.text}”" in m.value for m in at.markdown)
    bars = [d for s in charts(at).values() for d in json.loads(s)["data"] if d["type"] == "bar"][0]
    assert bars["x"] == [f"{i + 1}. {w}" for i, w in enumerate(gen.words)]
    assert bars["y"] == pytest.approx(gen.chosen, abs=1e-6)


def test_the_sidebar_mask_reaches_generation_and_scoring_on_the_logits_page():
    at = start("logits", model="shapes-captioner-prefix")
    at.sidebar.selectbox(key="mask").set_value("causal").run()
    at.button(key="gen_all").click().run()
    at.text_input(key="caption").set_value("a red ball on the grass").run()
    assert not at.exception
    model = load_model("shapes-captioner-prefix")
    pixels = preprocess(load_image(at.session_state["_input"].data), model.config)
    causal, prefix = (score_text(model, pixels, "a red ball on the grass", mask=m).probs
                      for m in ("causal", "prefix"))
    assert causal != pytest.approx(prefix, abs=1e-3)  # the mask matters for this check
    shown = [float(p.rstrip("%")) / 100 for p in at.dataframe[0].value.iloc[:, 1]]
    assert shown == pytest.approx(causal, abs=6e-5)
    text = generate(model, pixels, mask="causal").text
    assert any(text in s.value for s in at.success)


def test_sampled_steps_are_the_seeded_generation_word_by_word():
    at = start("logits", model="vit-b16-text")
    at.slider(key="temperature").set_value(1.5).run()
    at.number_input(key="gen_seed").set_value(7).run()
    for _ in range(4):
        at.button(key="gen_next").click().run()
    shown = [h.value for h in at.subheader if h.value.startswith("[SOS]")][0]
    model = load_model("vit-b16-text")
    pixels = preprocess(load_image(at.session_state["_input"].data), model.config)
    sampled = generate(model, pixels, temperature=1.5, seed=7).words
    assert shown.split()[1:5] == sampled[:4]
    assert sampled[:4] != generate(model, pixels).words[:4]  # sampling, not greedy
