"""The overview declared as steps (ui/stages/overview.py): which steps each model family gets,
and what each step says, against numbers computed here from independent traces; the model map
as wide as the slide in presenter mode, its clicks still opening a stage there."""

from __future__ import annotations

import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.independent import charts_by_key, greedy, pixels_of, trace_of
from tests.support import HUB, open_app, photo_bytes
from ui import keys, stages
from ui.drawing import figures
from ui.drawing.numbers import pct
from ui.stages.overview import OVERVIEW_MAP
from vit_core import load_model

CLF, CAP, B16 = "shapes-classifier", "shapes-captioner-causal", "vit-b16"
NOCLS = str(HUB / "timm" / "vit_tiny_avg_nocls.test")
HEADLESS = str(HUB / "tiny-org" / "vit-headless")
ONE = str(HUB / "tiny-org" / "vit-1block-1head-p14")  # 1 block, 1 head


def said(at: AppTest, start: str) -> str:
    """The one sentence block (a step's words) that starts with `start`."""
    found = [i.value for i in at.info if i.value.startswith(start)]
    assert len(found) == 1, [i.value for i in at.info]
    return found[0]


def blocks(n: int) -> str:
    return "1 block" if n == 1 else f"{n} blocks"


@pytest.mark.parametrize(("model", "expected"), [
    (CLF, ["map", "grid", "prediction", "table"]),
    (CAP, ["map", "grid", "caption", "table"]),
    (HEADLESS, ["map", "grid", "output", "table"]),
])
def test_each_family_gets_its_own_output_step(model, expected):
    c = load_model(model).config
    assert [s.key for s in stages.get("overview").steps_for(c)] == expected
    at = open_app(params={"page": "overview", "presenter": "1", "step": "3"}, model=model)
    where = next(m.value for m in at.markdown if "Overview · step 3/4" in m.value)
    title = {"prediction": "Prediction", "caption": "Caption", "output": "What it outputs"}
    assert title[expected[2]] in where


@pytest.mark.parametrize("model", [CLF, B16, NOCLS, HEADLESS])
def test_the_map_sentence_gives_this_passes_shapes(model):
    at = open_app("overview", model)
    c = load_model(model).config
    tr = trace_of(at, model)
    N, cpp = tr["patches"].shape
    S, D = tr["embed"].shape
    out = (f"the logits ({c.num_classes})" if c.num_classes else
           f"the final tokens ({S}×{D})")
    label = at.session_state[keys.INPUT].label  # the image, named on the slide
    assert said(at, "One pass on your image").startswith(
        f"One pass on your image ({label}): the picture ({c.img_size}×{c.img_size}×3) becomes {N} "
        f"patches ({N}×{cpp}), then {S} tokens of {D} numbers that go through "
        f"{blocks(c.depth)}, and ends as {out}.")


def test_a_captioners_map_sentence_counts_the_text_it_read():
    at = open_app("overview", CAP)
    model = load_model(CAP)
    c = model.config
    words, _ = greedy(model, pixels_of(at, model))
    T = len(words)  # [SOS] and every word but the last
    n_img = c.num_image_tokens
    assert (f"then {n_img + T} tokens ({n_img} image + {T} text) of {c.embed_dim} numbers"
            in said(at, "One pass"))
    assert f"ends as the logits ({T}×{len(c.vocab)})" in said(at, "One pass")
    table = next(cap.value for cap in at.caption if cap.value.startswith("This table is"))
    assert f"S = {n_img} tokens here, {n_img + T} in the model map" in table


@pytest.mark.parametrize(("model", "tokens"), [
    (CLF, "with CLS that makes S = 50 tokens of 128 numbers."),
    (NOCLS, "one token per patch (no CLS): S = 16 tokens of 40 numbers."),
    (CAP, "with CLS that makes S = 50 tokens of 128 numbers (the text tokens come on top while "
          "it writes)."),
])
def test_the_grid_sentence_counts_patches_and_tokens(model, tokens):
    at = open_app("overview", model)
    c = load_model(model).config
    tr = trace_of(at, model)
    N, S = tr["patches"].shape[0], tr["embed"].shape[0]
    g = int(round(N ** 0.5))
    assert S == int(tokens.split("S = ")[1].split()[0])  # the expected text is this trace's
    assert said(at, "The model sees") == (
        f"The model sees the {c.img_size}×{c.img_size} crop as a {g}×{g} grid of {N} patches of "
        f"{c.img_size // g}×{c.img_size // g} pixels; {tokens}")


@pytest.mark.parametrize("photo", [False, True])
def test_the_prediction_sentence_gives_the_top_class_and_no_confidence_word(photo):
    at = open_app("overview", CLF, upload=photo_bytes() if photo else None)
    model = load_model(CLF)
    probs = trace_of(at, CLF).logits.double().softmax(-1).numpy()
    top = int(np.argmax(probs))
    names = list(model.config.class_names)
    words = said(at, "Its top class")
    assert words == (f"Its top class is “{names[top]}”, {pct(float(probs[top]))} after the "
                     f"softmax over its {len(names)} classes.")
    sure = [cap.value for cap in at.caption if cap.value.startswith("How sure")]
    assert len(sure) == 1 and ("this photo" in sure[0]) == photo
    if photo:  # the banner says a photo is outside what it knows: no confidence on the slide
        assert "outside" in sure[0] or "less sure" in sure[0]
        for word in ("confident", "as sure as", "guess"):
            assert word not in words


def test_a_captioners_sentence_names_its_surest_and_least_sure_word():
    at = open_app("overview", CAP)
    model = load_model(CAP)
    words, probs = greedy(model, pixels_of(at, model))
    hi, lo = int(np.argmax(probs)), int(np.argmin(probs))
    assert said(at, "It wrote") == (
        f"It wrote {len(words)} tokens, one forward pass each; it was surest of “{words[hi]}” "
        f"({pct(probs[hi])}) and least sure of “{words[lo]}” ({pct(probs[lo])}).")


def test_a_headless_encoder_says_what_it_outputs():
    at = open_app("overview", HEADLESS)
    S, D = trace_of(at, HEADLESS)["embed"].shape
    assert said(at, "This model has no classifier").startswith(
        f"This model has no classifier: it is an encoder that outputs {S} token vectors of {D} "
        f"numbers")


def test_a_single_block_single_head_model_is_said_so():
    at = open_app("overview", ONE)
    S = trace_of(at, ONE)["embed"].shape[0]
    note = said(at, "What to notice")
    assert f"S×S = {S * S:,} entries for its 1 head in its only block (1 block)," in note
    assert "each of 1 head" not in note and "each of the 1 block" not in note


# ---------------------------------------------------------------- the map on a slide
def map_spec(at: AppTest) -> dict:
    return charts_by_key(at)[OVERVIEW_MAP]


def box_font(spec: dict) -> int:
    return next(a["font"]["size"] for a in spec["layout"]["annotations"]
                if a.get("name", "").startswith("box:"))


def test_presenter_mode_draws_the_map_as_large_as_the_slide():
    normal = map_spec(open_app("overview", CLF))
    assert normal["layout"]["width"] == figures.MAP_WIDTH and normal["layout"]["height"]
    slide = map_spec(open_app(params={"page": "overview", "presenter": "1"}, model=CLF))
    assert "width" not in slide["layout"] and "height" not in slide["layout"]  # the slide's
    assert box_font(slide) > box_font(normal)  # its text drawn larger for a projector


def click(at: AppTest, box_id: str) -> AppTest:
    """What a click on a box of the map sends: the selection event with its marker's data."""
    spec = map_spec(at)
    curve, i, data = next((k, i, d) for k, trace in enumerate(spec["data"])
                          for i, d in enumerate(trace.get("customdata") or [])
                          if d[2] == box_id)
    element = next(e for e in at.get("plotly_chart") if e.proto.id.endswith(OVERVIEW_MAP))
    states = at._tree.get_widget_states()
    clicked = states.widgets.add()
    clicked.id = element.proto.id
    clicked.string_value = json.dumps({"selection": {
        "points": [{"customdata": data, "point_index": i, "curve_number": curve}],
        "point_indices": [i], "box": [], "lasso": []}})
    at._run(states)
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_click_on_the_map_opens_its_stage_in_presenter_mode_too():
    at = open_app(params={"page": "overview", "presenter": "1"}, model=CLF)
    at = click(at, "patches")
    assert at.title[0].value.startswith("1 · Input"), at.title[0].value
