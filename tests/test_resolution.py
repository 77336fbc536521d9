"""Another resolution (issue 29, item 3): vit_core.at_size against timm's dynamic_img_size on a
fixture (tools/make_fixtures.py --resolution), the size picker and its link, and the Embeddings
stage's numbers at two sizes against this test's own runs of the model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from tests.support import open_app, softmax64
from ui import keys
from ui.drawing.numbers import pct, percent
from ui.stages import embeddings as stage
from ui.stages.embeddings.keys import EMBED_POS_SIZES
from vit_core import at_size, input_sizes, load_image, load_model, preprocess
from vit_core.io.external import _build, infer_config

FIXTURE = Path(__file__).parent / "fixtures" / "timm_vit_resolution.safetensors"
CLF = "shapes-classifier"  # 224 px, patch 32: a 7x7 grid


@pytest.fixture(scope="module")
def timm_run():
    """The fixture's tensors and our ViT built from its weights at its own 224 px."""
    saved = load_file(str(FIXTURE))
    state = {k.removeprefix("state."): v for k, v in saved.items() if k.startswith("state.")}
    return saved, _build(state, infer_config(state, num_heads=3), FIXTURE.name)


def pixels(saved: dict, size: int) -> torch.Tensor:
    return saved[f"pixels_{size}"].float() / 127.5 - 1.0  # as the fixture script normalised them


# ---------------------------------------------------------------- parity with timm
@pytest.mark.parametrize("size", [160, 288])
def test_logits_at_another_size_equal_timms_dynamic_img_size(timm_run, size):
    saved, model = timm_run
    resized = at_size(model, size)
    assert resized.config.img_size == size and resized.config.grid == size // 16
    with torch.no_grad():
        ours = resized(pixels(saved, size))
    torch.testing.assert_close(ours, saved[f"logits_{size}"], atol=1e-5, rtol=0)
    with pytest.raises(ValueError):  # the model at its own size cannot read this image
        model(pixels(saved, size))


@pytest.mark.parametrize("size", [160, 288])
def test_resampled_positions_equal_timms_resample_abs_pos_embed(timm_run, size):
    saved, model = timm_run
    g = size // 16
    resized = at_size(model, size)
    assert resized.pos_embed.shape == (1, 1 + g * g, 48)
    torch.testing.assert_close(resized.pos_embed.detach(), saved[f"pos_embed_{size}"],
                               atol=1e-6, rtol=0)
    assert torch.equal(resized.pos_embed[0, 0], model.pos_embed[0, 0])  # CLS keeps its own


def test_at_its_own_size_the_model_is_unchanged(timm_run):
    saved, model = timm_run
    same = at_size(model, 224)
    with torch.no_grad():
        assert torch.equal(same(pixels(saved, 224)), model(pixels(saved, 224)))
        torch.testing.assert_close(model(pixels(saved, 224)), saved["logits_224"], atol=1e-5,
                                   rtol=0)


def test_weights_are_shared_and_the_original_untouched(timm_run):
    _, model = timm_run
    before = model.pos_embed.detach().clone()
    resized = at_size(model, 288)
    assert resized.blocks[1].mlp.fc2.weight.data_ptr() == model.blocks[1].mlp.fc2.weight.data_ptr()
    assert torch.equal(model.pos_embed, before) and model.config.img_size == 224
    assert not resized.training
    bundled = load_model(CLF)
    assert at_size(bundled, 288).info is bundled.info  # what the model card says


@pytest.mark.parametrize("size", [100, 0, 8, 240.0])
def test_a_size_the_patch_size_does_not_divide_is_refused(timm_run, size):
    with pytest.raises(ValueError, match="multiple of the patch size 16"):
        at_size(timm_run[1], size)


def test_the_sizes_offered():
    c = load_model(CLF).config
    assert input_sizes(c) == [224, 128, 160, 192, 256, 288, 320, 352, 384, 416, 448]
    assert input_sizes(load_model("vit-ti16").config) == [224, 112, 128, 144, 160, 176, 192, 208,
                                                            *range(240, 449, 16)]


def test_the_preprocessing_keeps_its_margin():
    """A timm model crops 224 from 248 (crop_pct 0.9): at 160 px, 160 from floor(160 / 0.9)."""
    model = load_model("vit-ti16")
    timm_like = type(model)(model.config.replace(resize_size=248))
    timm_like.load_state_dict(model.state_dict())
    assert at_size(timm_like, 160).config.resize_size == 177
    assert at_size(model, 160).config.resize_size == 0  # no margin stays no margin


# ---------------------------------------------------------------- the app at another size
def ours_at(size: int, image: bytes) -> np.ndarray:
    """The bundled classifier's probabilities on `image` at `size` px, run here."""
    model = at_size(load_model(CLF), size)
    with torch.no_grad():
        return softmax64(model(preprocess(load_image(image), model.config)).numpy()[0])


def test_every_page_runs_at_the_linked_size_and_the_link_carries_it():
    at = open_app(params={"page": "shapes", "model": CLF, "size": "288"},
                  state={keys.SHARE_OPEN: True}, no_error=True)
    assert at.sidebar.selectbox(key=keys.SIZE).value == 288
    around = next(d.value for d in at.dataframe if "traced shape" in d.value.columns)
    tokens = around.set_index("step").loc["tokens", "traced shape"]
    assert tokens == f"{(288 // 32) ** 2 + 1} × 128", tokens  # (size / P)^2 + CLS
    assert at.query_params[keys.SIZE] == "288"
    assert any("size=288" in c.value for c in at.sidebar.code)
    probs = ours_at(288, at.session_state[keys.INPUT].data)
    k = int(probs.argmax())
    fingerprint = at.sidebar.caption[-1].value
    assert fingerprint.endswith(f"top: {load_model(CLF).config.class_names[k]} "
                                f"{percent(float(probs[k]))}"), fingerprint
    at.sidebar.selectbox(key=keys.SIZE).set_value(224).run()  # back to its own size
    assert not at.exception and keys.SIZE not in at.query_params


@pytest.mark.parametrize("asked", ["100", "abc", "2240"])
def test_a_size_the_model_cannot_read_falls_back_with_one_sentence(asked):
    at = open_app(params={"page": "overview", "model": CLF, "size": asked})
    (warning,) = [w.value for w in at.sidebar.warning]
    assert warning.startswith(f"This link asks for the input size '{asked}'")
    assert warning.endswith("showing its own 224 px.")
    assert at.sidebar.selectbox(key=keys.SIZE).value == 224
    assert keys.SIZE not in at.query_params


@pytest.mark.parametrize("size,other", [(None, 352), (288, 288)])
def test_the_embeddings_step_numbers_equal_our_runs_at_both_sizes(size, other):
    """At its own size the step compares with ~1.5x (352 px); at 288 px, with 288 px."""
    at = open_app(params={"page": "embeddings", "model": CLF, **({"size": str(size)} if size
                                                                   else {})}, no_error=True)
    said = next(i.value for i in at.info if "query–key pairs" in i.value)
    c = load_model(CLF).config
    g, N = other // 32, (other // 32) ** 2
    S, S0 = N + 1, c.num_patches + 1
    assert f"N = {g}×{g} = **{N}** patches instead of {c.num_patches}" in said
    assert f"{S}² = {S * S:,} query–key pairs instead of {S0}² = {S0 * S0:,}" in said
    assert f"**{S * S / S0 ** 2:.2f}×**" in said
    image = at.session_state[keys.INPUT].data
    for px in (224, other):
        probs = ours_at(px, image)
        k = int(probs.argmax())
        assert f"{c.class_names[k]} ({pct(probs[k])}) at {px} px" in said, (px, said)
    charts = {el.proto.id.rsplit("-", 1)[-1] for el in at.get("plotly_chart")}
    assert EMBED_POS_SIZES in charts


def test_the_prediction_change_is_worded_at_its_threshold():
    def facts(a, pa, b, pb):
        side = {"size": 224, "grid": 7, "N": 49, "S": 50, "pairs": 2500, "macs": 1}
        return {"own": {**side, "said": (a, pa)},
                "other": {**side, "size": 288, "grid": 9, "N": 81, "S": 82, "pairs": 6724,
                          "macs": 2, "said": (b, pb)},
                "same": False, "chosen": True, "patch_ratio": 81 / 49, "pair_ratio": 6724 / 2500,
                "macs_ratio": 2}

    gap = stage.SAME_CONFIDENCE
    assert stage.size_words(facts("ball", 0.9, "ball", 0.9 - gap / 2)).endswith("about as sure.")
    assert stage.size_words(facts("ball", 0.9, "ball", 0.8)).endswith("10 points less sure.")
    assert stage.size_words(facts("ball", 0.5, "star", 0.6)).endswith("another class.")


def test_the_patch_at_the_same_place():
    assert stage.same_place(24, 7, 9) == 40  # the centre stays the centre
    assert stage.same_place(0, 7, 9) == 0 and stage.same_place(48, 7, 9) == 80
    assert stage.same_place(40, 9, 7) == 24
