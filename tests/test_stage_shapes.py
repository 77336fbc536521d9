"""Stage 8, the shape trace, as a deck of steps: its declaration per model family, tables that
fit a slide, and words checked against numbers worked out here (hand formulas and torch's FLOP
counter), never with the stage's own facts."""

from __future__ import annotations

import ast
import html
import json
import re

import pytest
import torch

from tests.support import HUB, ROOT, arr, open_app, page_text, torch_flops
from ui import keys, stages
from ui.stages.shape_trace import COST_VS_PATCH
from vit_core import PRESETS, ViT, load_model

NOCLS = str(HUB / "timm/vit_tiny_avg_nocls.test")


def open_step(model: str, key: str, **kw):
    """Presenter mode on the step `key` of the shape trace (its place read from the stage)."""
    c = load_model(model).config
    n = [s.key for s in stages.get("shapes").steps_for(c)].index(key) + 1
    at = open_app(model=model, params={"page": "shapes", "presenter": "1", "step": str(n)}, **kw)
    assert not at.exception, [e.value for e in at.exception]
    return at


def words(at) -> str:
    return " ".join(i.value for i in at.info)


def percent(x: float) -> str:
    return f"{x:.1%}"


def quadratic_share(c) -> float:
    """QKᵀ and AV multiply-adds over all of them, with torch's count (halved) as the total."""
    S = c.num_image_tokens
    return 2 * c.depth * c.num_heads * S * S * c.head_dim / (torch_flops(c) / 2)


# ---------------------------------------------------------------- the declaration
@pytest.mark.parametrize("model", ["shapes-classifier", "shapes-captioner-causal", NOCLS,
                                   "vit-b16"])
def test_the_stage_declares_every_step_for_every_family(model):
    stage = stages.get("shapes")
    c = PRESETS[model] if model in PRESETS else load_model(model).config
    steps = stage.steps_for(c)
    assert [s.key for s in steps] == ["shapes", "block", "costs", "totals", "params", "patch"]
    assert stages.titles("shapes", c)[1] == (
        f"Inside one block (× {c.depth}): each step's shape" if c.depth > 1 else
        "Inside the block: each step's shape")


def test_the_stage_module_addresses_no_step_by_position():
    for path in ("ui/stages/shape_trace.py",):
        tree = ast.parse((ROOT / path).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                assert not (isinstance(node.value, ast.Name) and node.value.id == "steps"
                            and node.attr in ("show", "first")), path
            if isinstance(node, ast.ImportFrom):
                assert not any(a.name == "steps" for a in node.names), path


# ---------------------------------------------------------------- tables that fit a slide
@pytest.mark.parametrize("key", ["shapes", "block", "costs", "params"])
def test_every_table_fits_the_slide(key):
    """On a slide a table is large type (deck.table): every row, up to 16 px or more as the
    width allows, down to what the key figure's height leaves its rows, never under 14 px
    (the browser walk checks that it is not cut)."""
    at = open_step("shapes-captioner-causal", key)
    (table,) = [h.proto.body for h in at.get("html") if "big-table" in h.proto.body]
    least, per_row, px = re.search(r"\.big-table \{ font-size: clamp\((\d+)px, "
                                   r"calc\(85cqh / ([\d.]+)\), (\d+)px\)", table).groups()
    rows = table.count("<tr>") - 1
    assert len(at.dataframe) == 0 and "more rows" not in table  # no small grid, no row left out
    cols = [html.unescape(c) for c in re.findall(r"<th>(.*?)</th>", table)]
    page = open_app("shapes", "shapes-captioner-causal", no_error=True)  # the same table there
    assert rows in [len(d.value) for d in page.dataframe if list(d.value.columns) == cols]
    assert int(least) >= 14 and int(px) >= 16 and float(per_row) >= (rows + 1) * 1.6, key


def test_the_two_shape_tables_hold_every_step_once():
    """Around the blocks and inside one block: together the whole pass, each parameter once."""
    name = "shapes-classifier"
    at = open_app("shapes", name, no_error=True)
    model = load_model(name)
    c = model.config
    around, block = (d.value for d in at.dataframe if "traced shape" in d.value.columns)
    assert list(block["step"]) == ["LN1", "Q, K, V", "scores", "softmax", "A V", "W_O",
                                   "residual", "LN2", "MLP up", "GELU", "MLP down", "residual"]
    assert set(block["× layers"]) == {c.depth}
    assert "tokens" in set(around["step"]) and "class head" in set(around["step"])
    total = sum(int(p.replace(",", "")) * n for t in (around, block)
                for p, n in zip(t["parameters"], t["× layers"], strict=True))
    assert total == sum(p.numel() for p in model.parameters())
    S, D = c.num_image_tokens, c.embed_dim
    assert list(block[block["step"] == "residual"]["traced shape"]) == [f"{S} × {D}"] * 2
    assert list(block[block["step"] == "MLP up"]["ViT-B/16 shape"]) == ["197 × 3072"]


def test_the_cost_table_leaves_out_only_the_steps_that_cost_nothing():
    at = open_app("shapes", "shapes-classifier", no_error=True)
    c = load_model("shapes-classifier").config
    cost = next(d.value for d in at.dataframe if "MACs (all layers)" in d.value.columns)
    free = ["patchify", "tokens", "LN1", "softmax", "residual", "LN2", "GELU", "final LN"]
    listed = ["patch embedding", "Q, K, V", "scores", "A V", "W_O", "MLP up", "MLP down",
              "class head"] + (["segmentation head"] if c.seg_classes else [])
    assert list(cost["step"]) == listed
    assert f"the steps without one ({', '.join(free)}) cost 0 and are left out" in words(at)


# ---------------------------------------------------------------- words against the numbers
@pytest.mark.parametrize("model", ["shapes-classifier", "vit-ti16"])
def test_the_quadratic_share_is_the_charts(model):
    at = open_step(model, "patch")
    c = load_model(model).config
    drawn = c.replace(seg_classes=0)  # the chart's title: no text, no seg head
    spec = json.loads(next(e for e in at.get("plotly_chart")
                           if e.proto.id.endswith("-" + COST_VS_PATCH)).proto.spec)
    xs = [int(v) for v in arr(spec["data"][0]["x"])]
    total, quad = (arr(t["y"]).astype(float) for t in spec["data"])
    i = xs.index(c.patch_size)
    said = words(at)
    share = quadratic_share(drawn)
    assert quad[i] / total[i] == pytest.approx(share, rel=1e-3)  # the chart, by hand
    assert f"at P = {c.patch_size} the quadratic part (QKᵀ and AV) is {percent(share)}" in said


def test_the_totals_compare_with_vit_b16_by_torchs_count():
    at = open_step("shapes-classifier", "totals")
    model = load_model("shapes-classifier")
    ref = PRESETS["vit-b16"]
    ratio = torch_flops(ref) / torch_flops(model.config)
    params = sum(p.numel() for p in model.parameters())
    said = words(at)
    assert f"with {params:,} parameters" in said
    assert f"ViT-B/16 needs {ratio:.0f}× the multiply-adds" in said
    with torch.device("meta"):
        ref_params = sum(p.numel() for p in ViT(ref).parameters())
    assert f"{ref_params / params:.0f}× the parameters" in said


def test_vit_b16_is_compared_with_itself():
    at = open_step("vit-b16", "totals")
    assert "exactly ViT-B/16's" in words(at)


def test_the_around_words_follow_the_pass_of_a_captioner():
    name = "shapes-captioner-causal"
    at = open_step(name, "shapes")
    c = load_model(name).config
    said = words(at)
    m = re.search(r"then (\d+) tokens \((\d+) image \+ (\d+) text\)", said)
    assert m and int(m.group(2)) == c.num_image_tokens
    assert int(m.group(1)) == c.num_image_tokens + int(m.group(3))
    assert f"the text head gives {m.group(3)} × {c.vocab_size}" in said


def test_a_headless_model_says_it_has_no_head():
    at = open_app("shapes", str(HUB / "tiny-org/vit-headless"), no_error=True)
    assert "it has no head: its output is the final tokens" in page_text(at)


def test_the_parameter_question_sits_under_the_parameter_table():
    at = open_step("shapes-classifier", "params")
    toggles = [t for t in at.toggle if str(t.key).startswith(keys.REVEAL_PREFIX)]
    assert len(toggles) == 1
    toggles[0].set_value(True)
    at.run()
    model = load_model("shapes-classifier")
    mlp = sum(p.numel() for n, p in model.named_parameters() if ".mlp." in n)
    n = sum(p.numel() for p in model.parameters())
    assert f"In “blocks: mlp”, {mlp:,} of {n:,} parameters ({mlp / n:.0%})" in words(at)
