"""The shape trace's FLOP and parameter counts against torch's own counters, its traced shapes
and parameters by component against shapes and counts worked out by hand from the config."""

import pytest
import torch

from tests.support import SMALL, TEXT, randomised, torch_flops
from vit_core import PRESETS, ViT, run_trace
from vit_core.explain.flops import (
    params_by_component,
    stage_rows,
    total_flops,
    total_params,
    traced_shapes,
)


@pytest.mark.parametrize("config,n_text", [
    (PRESETS["vit-b16"], 0),
    (PRESETS["vit-b16"].replace(seg_classes=11, seg_upsample=4), 0),
    (TEXT, 5),
])
def test_flops_equal_torch_flop_counter(config, n_text):
    assert total_flops(config, n_text) == torch_flops(config, n_text)


def test_vit_b16_numbers():
    c = PRESETS["vit-b16"]
    assert total_params(c) == sum(p.numel() for p in ViT(c).parameters()) == 86_567_656
    rows = {r["step"]: r for r in stage_rows(c)}
    assert rows["scores"]["shape"] == "12 × 197 × 197"
    assert rows["MLP up"]["shape"] == "197 × 3072"
    assert total_flops(c) == 35_127_656_448  # ~35.1 GFLOPs = 17.6 G multiply-adds


@pytest.mark.parametrize("config", [TEXT, PRESETS["vit-ti16"].replace(seg_classes=3)])
def test_param_totals_match_the_model(config):
    model = ViT(config)
    assert total_params(config) == sum(p.numel() for p in model.parameters())


def by_hand(c, T: int) -> list[str]:
    """Every row's shape from the config alone: the tensors' shapes the table should show."""
    N, D, H, F = c.num_patches, c.embed_dim, c.num_heads, c.mlp_hidden
    n_img, dk = c.num_image_tokens, D // H
    S = n_img + T
    x = " × ".join
    rows = [x(map(str, (N, c.in_chans * c.patch_size ** 2))), f"{N} × {D}", f"{n_img} × {D}"]
    rows += [f"{S} × {D}"] if T else []
    rows += [f"{S} × {D}", f"3 × {H} × {S} × {dk}", f"{H} × {S} × {S}", f"{H} × {S} × {S}",
             f"{H} × {S} × {dk}", f"{S} × {D}", f"{S} × {D}", f"{S} × {D}", f"{S} × {F}",
             f"{S} × {F}", f"{S} × {D}", f"{S} × {D}", f"{S} × {D}"]
    rows += [f"{c.num_classes}"] if c.num_classes else []
    rows += [f"{T} × {c.vocab_size}"] if T else []
    r = c.seg_upsample
    return rows + ([f"{N} × {c.seg_classes} × {r} × {r}"] if c.seg_classes else [])


@pytest.mark.parametrize("config,text", [
    (SMALL, None), (TEXT, [1, 4, 2]), (SMALL.replace(seg_classes=3, seg_upsample=2), None),
    (SMALL.replace(class_token=False, global_pool="avg", fc_norm=True), None),
])
def test_traced_shapes_are_each_rows_tensor(config, text):
    model = randomised(config)
    x = torch.rand(1, config.in_chans, config.img_size, config.img_size)
    tr = run_trace(model, x, text_ids=text) if text else run_trace(model, x)
    assert traced_shapes(tr) == by_hand(config, len(text or []))


@pytest.mark.parametrize("config", [SMALL, TEXT, SMALL.replace(seg_classes=3, seg_upsample=2)])
def test_params_by_component_by_hand(config):
    D, F, L, N = config.embed_dim, config.mlp_hidden, config.depth, config.num_patches
    want = {"patch_embed": config.in_chans * config.patch_size ** 2 * D + D,
            "pos_embed": (N + config.num_prefix_tokens) * D,
            "blocks: attn": L * (D * 3 * D + 3 * D + D * D + D),
            "blocks: mlp": L * (D * F + F + F * D + D), "blocks: LayerNorms": L * 4 * D,
            "norm": 2 * D}
    if config.class_token:
        want["cls_token"] = D
    if config.num_classes:
        want["head"] = D * config.num_classes + config.num_classes
    if config.has_text:  # the tied text head has no parameters of its own
        want["text_embed"] = config.vocab_size * D
        want["text_pos_embed"] = config.max_text_len * D
    if config.seg_classes:
        out = config.seg_classes * config.seg_upsample ** 2
        want["seg_head"] = D * out + out
    got = params_by_component(ViT(config))
    assert got == want
    assert list(got.values()) == sorted(got.values(), reverse=True)  # largest first
