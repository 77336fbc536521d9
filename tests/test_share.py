"""Shareable views, presenter mode and the trace download, driven with AppTest."""

import io

import numpy as np
from streamlit.testing.v1 import AppTest

from tests.test_app import APP
from ui import state as ui_state
from vit_core import load_image, load_model, preprocess, run_trace

VIEW = {"page": "attention", "model": "vit-ti16", "layer": "3", "head": "2", "patch": "40",
        "mask": "causal"}


def open_link(params: dict) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=240)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_link_restores_the_view_and_the_url_follows_the_view():
    seed = ui_state.sample_seeds()[2]
    at = open_link({**VIEW, "sample": str(seed)})
    assert at.title[0].value.startswith("4 · Attention")
    assert at.sidebar.selectbox(key="model").value == "vit-ti16"
    assert at.sidebar.selectbox(key="sample").value == seed
    assert at.sidebar.selectbox(key="mask").value == "causal"
    assert (at.slider(key="layer").value, at.slider(key="head").value,
            at.number_input(key="patch").value) == (3, 2, 40)
    at.slider(key="head").set_value(1).run()
    assert at.query_params["head"] == "1" and at.query_params["page"] == "attention"
    assert any("head=1" in c.value for c in at.sidebar.code)


def test_nonsense_in_the_link_is_ignored_or_clamped():
    at = open_link({"page": "nowhere", "model": "gpt-9", "layer": "99", "head": "x",
                    "sample": "123", "mask": "diagonal"})
    assert at.title[0].value == "From pixels to logits, in one pass"  # the default stage
    assert at.session_state["layer"] == load_model(at.session_state["model"]).config.depth - 1
    assert at.sidebar.selectbox(key="mask").value == "trained"


def test_the_mask_choice_reaches_the_trace():
    at = open_link(VIEW)
    pattern_title = [t for t in (el.proto.spec for el in at.get("plotly_chart"))][0]
    assert "Layer 3, head 2" in pattern_title
    model = load_model("vit-ti16")
    pixels = preprocess(load_image(at.session_state["_input"].data), model.config)
    tr = run_trace(model, pixels, mask="causal")
    assert float(tr["blocks.3.attn.pattern"][2, 0, 1:].sum()) == 0.0  # CLS sees only itself


def test_presenter_mode_shows_the_stage_and_its_story():
    at = open_link({"page": "qkv", "model": "vit-ti16", "presenter": "1"})
    assert any("Stage 3 / 10" in m.value for m in at.markdown)
    assert at.success and "query" in at.success[0].value
    assert at.sidebar.toggle(key="presenter").value
    assert not at.button(key="presenter_prev").disabled
    # Next switches page (AppTest loses sidebar state across st.switch_page, so the browser
    # test walks the whole presenter sequence; here: it lands on the next stage)
    at.button(key="presenter_next").click().run()
    assert not at.exception and at.title[0].value.startswith("4 · Attention")


def test_presenter_mode_first_stage_has_no_previous():
    at = open_link({"page": "overview", "model": "vit-ti16", "presenter": "1"})
    assert at.button(key="presenter_prev").disabled
    assert any("Overview" in m.value and "10 stages" in m.value for m in at.markdown)


def test_trace_download_holds_every_tensor():
    at = open_link({"page": "overview", "model": "vit-ti16"})
    inp = at.session_state["_input"]
    data = np.load(io.BytesIO(ui_state.trace_npz(inp, "vit-ti16")))
    model = load_model("vit-ti16")
    tr = run_trace(model, preprocess(load_image(inp.data), model.config))
    assert set(data.files) == set(tr.names()) | {"mask"}
    np.testing.assert_array_equal(data["blocks.5.attn.pattern"], tr["blocks.5.attn.pattern"])


def test_composed_images_have_png_downloads():
    at = open_link({"page": "attention", "model": "vit-ti16"})
    keys = {el.proto.id for el in at.get("download_button")}
    assert len(keys) >= 4  # where / who / CLS heads / rollout
    from ui.show import image  # the helper builds real PNGs
    assert callable(image)


def test_presenter_mode_can_be_left():
    at = open_link({"page": "qkv", "model": "vit-ti16", "presenter": "1"})
    at.button(key="presenter_exit").click().run()
    assert not at.exception and not at.session_state["presenter"]
    assert not any("Stage 3 / 10" in m.value for m in at.markdown)
    assert "presenter" not in at.query_params
