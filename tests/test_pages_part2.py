"""Part 2 pages under AppTest (rendering is in test_pages.py): widgets and the core's numbers."""

import re

import pytest

from tests.test_pages import charts, start
from vit_core import load_image, load_model, preprocess
from vit_core.generate import generate, score_text


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
