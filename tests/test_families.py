"""Every ViT family a user may bring, loaded from fixture repos made by transformers and timm
themselves (tests/fixtures/hub, tools/make_hub_fixtures.py): same outputs, same pixels."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from vit_core import CheckpointError, load_image, load_model, preprocess, run_trace
from vit_core.explain.lens import logit_lens

FIXTURES = Path(__file__).parent / "fixtures"
HUB = FIXTURES / "hub"
CLASSIFIERS = ["tiny-org/vit-cls", "tiny-org/deit-cls", "tiny-org/deit-distilled",
               "tiny-org/vit-1block-1head-p14", "timm/vit_tiny_cls.test",
               "timm/vit_tiny_avg_fcnorm.test", "timm/vit_tiny_avg_nocls.test"]
ALL = CLASSIFIERS + ["tiny-org/vit-headless"]


def expected(repo: str) -> dict:
    return load_file(FIXTURES / "hub_expected" / f"{repo.replace('/', '__')}.safetensors")


@pytest.fixture(scope="module")
def photo():
    return load_image(FIXTURES / "photo.jpg")


@pytest.fixture(scope="module")
def pixels():
    return load_file(FIXTURES / "hub_expected" / "preprocess.safetensors")


@pytest.mark.parametrize("repo", ALL)
def test_every_family_gives_the_librarys_outputs(repo):
    model, e = load_model(str(HUB / repo)), expected(repo)
    with torch.no_grad():
        out = model(e["input"])
    key = "logits" if model.config.num_classes else "last_hidden_state"
    torch.testing.assert_close(out, e[key], atol=1e-5, rtol=1e-5)
    for i in range(2):  # and every block's output, read from the trace
        tr = run_trace(model, e["input"][i:i + 1])
        torch.testing.assert_close(tr["embed"], e["hidden_states.0"][i], atol=1e-5, rtol=1e-5)
        for layer in range(model.config.depth):
            torch.testing.assert_close(tr[f"blocks.{layer}.resid_post"],
                                       e[f"hidden_states.{layer + 1}"][i], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(tr["ln_final"], e["hidden_states_last"][i], atol=1e-5,
                                   rtol=1e-5)


def test_the_distilled_deit_has_two_prefix_tokens_and_averages_its_heads():
    model, e = load_model(str(HUB / "tiny-org/deit-distilled")), expected("tiny-org/deit-distilled")
    c = model.config
    assert (c.num_prefix_tokens, c.prefix_names) == (2, ("CLS", "DIST"))
    assert c.num_image_tokens == c.num_patches + 2
    torch.testing.assert_close((e["cls_logits"] + e["distillation_logits"]) / 2, e["logits"])
    with torch.no_grad():
        x = model.norm(run_trace(model, e["input"][:1])["blocks.1.resid_post"])
        cls, dist = model.head(x[0]), model.head_dist(x[1])
    torch.testing.assert_close(cls, e["cls_logits"][0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(dist, e["distillation_logits"][0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("repo", ALL)
def test_a_photo_is_preprocessed_as_the_library_does(repo, photo, pixels):
    model = load_model(str(HUB / repo))
    ours = preprocess(photo, model.config)[0]
    theirs = pixels[f"pixels_{repo.replace('/', '__')}"]
    assert ours.shape == theirs.shape
    std = torch.tensor(model.config.std).view(3, 1, 1)
    # mean |difference| in [0, 1] pixel units: well inside 1/255, and tight enough that a crop one
    # pixel off (0.1-0.3 of a level on average) or a squash read as a shortest edge (0.5) fails
    assert float(((ours - theirs).abs() * std).mean()) < 0.05 / 255
    name = "logits" if model.config.num_classes else "last_hidden_state"
    with torch.no_grad():
        out = model(ours[None])
    ref = pixels[f"photo_{name}_{repo.replace('/', '__')}"]
    torch.testing.assert_close(out[0], ref, atol=0.05, rtol=0.05)  # pixels within a uint8 level


@pytest.mark.parametrize("key, json_name", [("hf_vit", "preprocess_hf_vit.json"),
                                            ("hf_deit", "preprocess_hf_deit.json"),
                                            ("timm_crop09", "preprocess_timm_crop09.json")])
def test_full_size_configs_reproduce_the_libraries_pixels(key, json_name, photo, pixels):
    import json

    from vit_core import ViTConfig
    from vit_core.io.external import preprocessing_from_hf, preprocessing_from_timm

    cfg = json.loads((FIXTURES / "hub_expected" / json_name).read_text())
    read = preprocessing_from_timm if key.startswith("timm") else preprocessing_from_hf
    config = ViTConfig(**read(cfg, 224))
    ours = preprocess(photo, config)[0]
    std = torch.tensor(config.std).view(3, 1, 1)
    assert float(((ours - pixels[key]).abs() * std).mean()) < 0.05 / 255


def test_the_deit_processor_squashes_the_photo_and_timm_keeps_its_aspect(photo):
    from vit_core.io.images import describe_preprocessing

    deit = load_model(str(HUB / "tiny-org/deit-distilled")).config
    timm = load_model(str(HUB / "timm/vit_tiny_cls.test")).config
    assert describe_preprocessing(deit) == ("resize to 35×35 (the aspect ratio is not kept), "
                                            "centre-crop 32×32, bicubic, ImageNet mean/std")
    assert describe_preprocessing(timm) == ("resize the shorter side to 35, centre-crop 32×32, "
                                            "bicubic, mean 0.5 / std 0.5 per channel")


@pytest.mark.parametrize("repo", CLASSIFIERS)
def test_the_logit_lens_last_row_is_the_models_logits(repo):
    model, e = load_model(str(HUB / repo)), expected(repo)
    tr = run_trace(model, e["input"][:1])
    lens = logit_lens(model, tr)
    assert lens.shape == (model.config.depth + 1, model.config.num_classes)
    torch.testing.assert_close(lens[-1], e["logits"][0], atol=1e-5, rtol=1e-5)


def test_the_lens_of_a_headless_model_says_why_not():
    model = load_model(str(HUB / "tiny-org/vit-headless"))
    with pytest.raises(ValueError, match="no class head"):
        logit_lens(model, run_trace(model, torch.zeros(1, 3, 32, 32)))


def test_a_model_that_is_not_a_vit_is_refused_in_one_sentence():
    with pytest.raises(CheckpointError, match=r"'bert' model, not a Vision Transformer"):
        load_model(str(HUB / "tiny-org/bert-not-vit"))
