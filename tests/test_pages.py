"""The explainer pages under AppTest: they react to the shared layer/head/patch widgets, keep them
across pages and models, and print numbers equal to the core's (that every page renders, on
every model family: test_every_page.py)."""

import re

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.independent import attention_pattern_shown, trace_of
from tests.support import charts, open_app, photo_bytes
from vit_core import load_image, load_model, preprocess, run_trace

MODEL = "vit-ti16"  # real ViT geometry (197 tokens, 12 layers), small enough to be quick
# (that every page opens and draws its figures, on every model family: test_every_page.py)


def start(page: str, upload: bytes | None = None, model: str = MODEL) -> AppTest:
    return open_app(page, model, upload=upload)  # opens the app on this stage, as a link would


@pytest.mark.parametrize("page,widget,value", [
    ("patches", "patch", 5),
    ("embeddings", "patch", 7),
    ("qkv", "layer", 2),
    ("qkv", "head", 1),
    ("attention", "layer", 0),
    ("attention", "head", 2),
    ("attention", "patch", 3),
])
def test_shared_widgets_change_what_is_drawn(page, widget, value):
    at = start(page)
    before = charts(at)
    element = (at.number_input(key=widget) if widget == "patch" else at.slider(key=widget))
    element.set_value(value).run()
    assert not at.exception
    after = charts(at)
    changed = [t for t in after if before.get(t) != after[t]]
    assert changed, f"moving {widget} changed no figure on {page}"


def test_layer_head_patch_survive_a_page_change():
    at = start("attention")
    at.slider(key="layer").set_value(3).run()
    at.slider(key="head").set_value(2).run()
    at.number_input(key="patch").set_value(40).run()
    at.query_params["page"] = "qkv"  # go to another stage
    at.run()
    assert at.title[0].value.startswith("3 ·")
    assert (at.slider(key="layer").value, at.slider(key="head").value,
            at.number_input(key="patch").value) == (3, 2, 40)


def test_printed_score_equals_the_core_trace():
    at = start("qkv", upload=photo_bytes())
    at.slider(key="layer").set_value(4).run()
    at.slider(key="head").set_value(1).run()
    at.number_input(key="patch").set_value(17).run()
    at.number_input(key="key_patch").set_value(150).run()
    text = " ".join(m.value for m in [*at.markdown, *at.info])
    shown = float(re.search(r"q·k/√d_k = \*\*(-?[0-9.]+)\*\*", text).group(1))
    model = load_model(MODEL)
    tr = run_trace(model, preprocess(load_image(photo_bytes()), model.config))
    expected = float(tr["blocks.4.attn.scores"][1, 17 + 1, 150 + 1])  # +1: CLS is token 0
    assert shown == pytest.approx(expected, abs=5e-4)
    q, k = tr["blocks.4.attn.q"][1, 18], tr["blocks.4.attn.k"][1, 151]
    assert shown == pytest.approx(float(q @ k) / 8.0, abs=5e-4)  # d_k = 64


def test_model_switch_clamps_the_shared_selection():
    big, small = load_model(MODEL).config, load_model("shapes-classifier").config
    assert (big.depth, big.num_heads, big.num_patches) == (12, 3, 196)
    assert (small.depth, small.num_heads, small.num_patches) == (6, 4, 49)
    at = start("attention")
    at.slider(key="layer").set_value(11).run()
    at.number_input(key="patch").set_value(150).run()
    at.slider(key="head").set_value(1).run()
    at.sidebar.selectbox(key="model").set_value("shapes-classifier").run()
    assert not at.exception and at.session_state["model"] == "shapes-classifier"
    selection = (at.slider(key="layer").value, at.slider(key="head").value,
                 at.number_input(key="patch").value)
    assert selection == (5, 1, 48)  # layer 11 and patch 150 do not exist here: the last ones
    assert (at.query_params["layer"], at.query_params["patch"]) == ("5", "48")
    tr = trace_of(at, "shapes-classifier")
    np.testing.assert_allclose(attention_pattern_shown(at),
                               tr["blocks.5.attn.pattern"][1].double().numpy(), atol=1e-6)
    at.slider(key="head").set_value(3).run()  # the classifier's 4th head; vit-ti16 has 3
    at.sidebar.selectbox(key="model").set_value(MODEL).run()
    assert not at.exception and at.session_state["model"] == MODEL
    assert (at.slider(key="layer").value, at.slider(key="head").value,
            at.number_input(key="patch").value) == (5, 2, 48)
    tr = trace_of(at, MODEL)
    np.testing.assert_allclose(attention_pattern_shown(at),
                               tr["blocks.5.attn.pattern"][2].double().numpy(), atol=1e-6)
