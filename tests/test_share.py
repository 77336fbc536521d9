"""Shareable views, presenter mode and the trace download, driven with AppTest."""

import io
import threading

import numpy as np
import pytest
import streamlit as st
import torch
from PIL import Image
from streamlit.testing.v1 import AppTest

from tests.independent import attention_pattern_shown
from tests.support import open_app
from ui import keys
from ui.selection import inputs
from ui.stages import BY_SLUG as ROUTES
from vit_core import load_image, load_model, preprocess, run_trace

LAST = len(ROUTES) - 1  # the numbered stages: 'Stage 1/LAST' … (the overview is not numbered)

VIEW = {"page": "attention", "model": "vit-ti16", "layer": "3", "head": "2", "patch": "40",
        "mask": "causal"}


def open_link(params: dict) -> AppTest:
    """The app opened on a link, with the sidebar's "Share and export" expander opened."""
    return open_app(params=params, state={keys.SHARE_OPEN: True}, same_model=False)


def test_a_link_restores_the_view_and_the_url_follows_the_view():
    seed = inputs.sample_seeds()[2]
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
    at = open_link(VIEW)  # vit-ti16, layer 3, head 2, causal mask
    model = load_model("vit-ti16")
    pixels = preprocess(load_image(at.session_state["_input"].data), model.config)
    causal = run_trace(model, pixels, mask="causal")["blocks.3.attn.pattern"][2].double()
    full = run_trace(model, pixels)["blocks.3.attn.pattern"][2].double()
    assert (causal - full).abs().max() > 0.05  # the mask matters for this check
    shown = attention_pattern_shown(at)
    np.testing.assert_allclose(shown, causal.numpy(), atol=1e-6)
    assert np.all(np.triu(shown, 1) == 0)  # no query sees a later token
    np.testing.assert_allclose(shown.sum(1), 1.0, atol=1e-5)
    at.sidebar.selectbox(key="mask").set_value("trained").run()  # back to the full mask
    assert not at.exception and "mask" not in at.query_params
    np.testing.assert_allclose(attention_pattern_shown(at), full.numpy(), atol=1e-6)


def test_presenter_mode_shows_the_stage_and_its_story():
    at = open_link({"page": "qkv", "model": "vit-ti16", "presenter": "1"})
    assert any(f"Stage 3/{LAST} · step 1/3" in m.value for m in at.markdown)
    # the stage's story, for the teacher: in the header's speaker notes on the first step
    assert any("asks a question (query)" in m.value for m in at.markdown)
    assert at.toggle(key="presenter").value  # in the header's popover: the sidebar is hidden
    assert not at.sidebar.toggle
    assert not at.button(key="presenter_prev").disabled
    # Next walks the stage's steps, then switches page (AppTest loses sidebar state across
    # st.switch_page, so the browser test walks the whole presenter sequence; here: it lands on
    # the next stage)
    for _ in range(2):  # the stage's steps 2 and 3
        at.button(key="presenter_next").click().run()
        assert not at.exception and at.title[0].value.startswith("3 · LayerNorm")
    at.button(key="presenter_next").click().run()
    assert not at.exception and at.title[0].value.startswith("4 · Attention")


def test_presenter_mode_first_stage_has_no_previous():
    at = open_link({"page": "overview", "model": "vit-ti16", "presenter": "1"})
    assert at.button(key="presenter_prev").disabled
    assert any(m.value.startswith("**Overview · step 1/") for m in at.markdown)


@pytest.fixture
def downloads(monkeypatch):
    """Every download button drawn in the next runs: key -> (data, file name, the image drawn
    just before it by st.image). The app's own st.download_button runs as usual."""
    seen, last_image = {}, []
    real_button, real_image = st.download_button, st.image

    def button(label, data, *args, **kwargs):
        seen[kwargs.get("key")] = (data, kwargs.get("file_name"),
                                   last_image[-1] if last_image else None)
        return real_button(label, data, *args, **kwargs)

    def image(img, *args, **kwargs):
        last_image.append(img)
        return real_image(img, *args, **kwargs)

    monkeypatch.setattr(st, "download_button", button)
    monkeypatch.setattr(st, "image", image)
    return seen


def outside_the_script(fn):
    """Call fn on a thread of its own, as Streamlit calls a download's data function when it is
    clicked: no script run, no st.session_state."""
    out = {}
    worker = threading.Thread(target=lambda: out.update(value=fn()))
    worker.start()
    worker.join(120)
    assert "value" in out, "the download's data function raised (see the thread's traceback)"
    return out["value"]


@pytest.mark.parametrize("mask", [None, pytest.param("causal", marks=pytest.mark.slow)])
def test_trace_download_holds_every_tensor(downloads, mask):
    at = open_link({"page": "overview", "model": "vit-ti16", **({"mask": mask} if mask else {})})
    inp = at.session_state["_input"]
    data_fn, file_name, _ = downloads[keys.DOWNLOAD_TRACE]
    assert file_name == f"trace-{inp.key[:8]}.npz"
    data = np.load(io.BytesIO(outside_the_script(data_fn)))
    model = load_model("vit-ti16")
    tr = run_trace(model, preprocess(load_image(inp.data), model.config), mask=mask)
    assert set(data.files) == set(tr.names()) | {"mask"}
    for name in tr.names():
        np.testing.assert_array_equal(data[name], tr[name].numpy(), err_msg=name)
    np.testing.assert_array_equal(data["mask"], tr.mask.numpy())
    assert (data["mask"] == 0).all() == (mask is None)  # vit-ti16 is trained with full


def test_composed_images_have_png_downloads(downloads):
    at = open_link({"page": "attention", "model": "vit-ti16"})
    pngs = {k: v for k, v in downloads.items() if k and k.startswith(keys.PNG_PREFIX)}
    assert len(pngs) >= 4, sorted(pngs)  # where / who / CLS heads / rollout
    assert {el.proto.id.split("-", 2)[-1] for el in at.get("download_button")} >= set(pngs)
    for key, (data_fn, file_name, img) in pngs.items():
        assert file_name == key.removeprefix(keys.PNG_PREFIX) + ".png"
        png = outside_the_script(data_fn)
        assert png[:8] == b"\x89PNG\r\n\x1a\n", key
        decoded = Image.open(io.BytesIO(png))
        assert decoded.size == img.size, key  # the image shown above the button, pixel for pixel
        np.testing.assert_array_equal(np.asarray(decoded), np.asarray(img), err_msg=key)


def test_presenter_mode_can_be_left():
    at = open_link({"page": "qkv", "model": "vit-ti16", "presenter": "1"})
    at.button(key="presenter_exit").click().run()
    assert not at.exception and not at.session_state["presenter"]
    assert not any("Stage 3 / 10" in m.value for m in at.markdown)
    assert "presenter" not in at.query_params


def test_a_captioners_trace_download_holds_its_text_logits(downloads):
    """A captioner's download is the pass that wrote its caption: [SOS] and the caption's words
    fed (`text_ids`), so its text logits have a row per text token, not 0 (checked against the
    same pass run here, and the caption written here greedily)."""
    from tests.independent import greedy

    at = open_link({"page": "overview", "model": "shapes-captioner-prefix"})
    inp = at.session_state["_input"]
    data = np.load(io.BytesIO(outside_the_script(downloads[keys.DOWNLOAD_TRACE][0])))
    model = load_model("shapes-captioner-prefix")
    pixels = preprocess(load_image(inp.data), model.config)
    ids = data["text_ids"]
    assert ids.size >= 1 and data["logits"].shape == (ids.size, model.config.vocab_size)
    words, _ = greedy(model, pixels)
    vocab = list(model.config.vocab)
    assert [vocab[i] for i in ids[1:]] == words[:ids.size - 1]  # [SOS], then its caption
    tr = run_trace(model, pixels, text_ids=torch.as_tensor(ids))
    for name in tr.names():
        np.testing.assert_array_equal(data[name], tr[name].numpy(), err_msg=name)
