"""Parity with timm: state dicts saved by timm's VisionTransformer load strictly into our ViT and
give the same numbers. Fixtures were made once by tools/make_fixtures.py (timm stays out of
requirements.txt); see tests/fixtures/README.md."""

import json
from pathlib import Path

import pytest
import torch
from safetensors import safe_open

from vit_core import ViT, ViTConfig, run_trace
from vit_core.io.base import load_state_dict_strict

FIXTURES = Path(__file__).parent / "fixtures"
TOL = dict(rtol=1e-5, atol=1e-5)


def read_fixture(name: str):
    with safe_open(str(FIXTURES / name), "pt") as f:
        meta = json.loads(f.metadata()["config"])
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    state = {k.removeprefix("state."): v for k, v in tensors.items() if k.startswith("state.")}
    config = ViTConfig(**{k: meta[k] for k in (
        "img_size", "patch_size", "in_chans", "embed_dim", "depth", "num_heads", "mlp_ratio",
        "num_classes", "class_token", "global_pool", "fc_norm", "norm_eps", "qkv_bias")})
    return config, state, tensors


@pytest.mark.parametrize("fixture", ["timm_vit_tiny.safetensors",
                                     "timm_vit_tiny_avgpool.safetensors"])
def test_timm_state_dict_loads_strictly_and_matches(fixture):
    config, state, expected = read_fixture(fixture)
    model = ViT(config).eval()
    load_state_dict_strict(model, state, fixture)  # raises on any missing/unexpected key
    assert set(model.state_dict()) == set(state)
    for i in range(2):  # each image of the fixture batch on its own
        tr = run_trace(model, expected["input"][i : i + 1])
        torch.testing.assert_close(tr["embed"], expected["embed"][i], **TOL)
        for layer in range(config.depth):
            torch.testing.assert_close(tr[f"blocks.{layer}.resid_post"],
                                       expected[f"blocks.{layer}"][i], **TOL)
        torch.testing.assert_close(tr["ln_final"], expected["norm"][i], **TOL)
        torch.testing.assert_close(tr.logits, expected["logits"][i], **TOL)
    with torch.inference_mode():  # and the batched plain forward
        torch.testing.assert_close(model(expected["input"]), expected["logits"], **TOL)


def test_our_state_dict_has_exactly_timms_keys():
    config, state, _ = read_fixture("timm_vit_tiny.safetensors")
    ours = ViT(config).state_dict()
    assert sorted(ours) == sorted(state)  # the same names (safetensors stores them sorted)
    assert all(ours[k].shape == state[k].shape for k in ours)


def test_a_perturbed_weight_breaks_parity():
    """The comparison is sensitive: change one weight slightly and the logits move."""
    config, state, expected = read_fixture("timm_vit_tiny.safetensors")
    state = dict(state)
    state["blocks.1.mlp.fc2.weight"] = state["blocks.1.mlp.fc2.weight"] * 1.001
    model = ViT(config).eval()
    model.load_state_dict(state)
    with torch.inference_mode():
        out = model(expected["input"])
    assert not torch.allclose(out, expected["logits"], **TOL)
