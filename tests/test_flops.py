"""The shape trace's FLOP and parameter counts against torch's own counters."""

import pytest

from tests.support import TEXT, torch_flops
from vit_core import PRESETS, ViT
from vit_core.explain.flops import stage_rows, total_flops, total_params


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
