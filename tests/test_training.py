"""Training smoke test, greedy generation vs teacher forcing, and the segmentation layout."""

import pytest
import torch

from tests.support import randomised
from vit_core import ViTConfig, load_model, run_trace
from vit_core.explain.generation import generate, greedy_ids
from vit_core.explain.segmentation import class_map, seg_grid, seg_targets
from vit_core.io.text import Tokenizer
from vit_core.scenes.train import main as train
from vit_core.scenes.world import VOCAB


@pytest.mark.slow  # trains
def test_tiny_training_run_learns_and_its_checkpoint_loads_back(tmp_path):
    out = tmp_path / "tiny.safetensors"
    result = train(["--task", "classify", "--out", str(out), "--state", str(tmp_path / "s.pt"),
                    "--steps", "40", "--batch", "16", "--dim", "32", "--depth", "1",
                    "--heads", "2", "--patch", "32", "--seg-upsample", "2", "--lr", "3e-3",
                    "--warmup", "5", "--eval-every", "40", "--eval-n", "16", "--seg-fg-weight", "1",
                    "--final-eval-n", "16", "--workers", "0", "--seed", "1"])
    losses = result["losses"]
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    assert last < 0.85 * first, (first, last)  # the stated margin: at least 15 % lower
    model = load_model(str(out))
    assert out.with_suffix(".md").read_text().startswith("# tiny")
    state = torch.load(tmp_path / "s.pt", weights_only=True)  # the resumable state
    assert state["step"] == 40
    fresh = randomised(model.config)
    fresh.load_state_dict(state["model"])
    x = torch.randn(1, 3, 224, 224)
    assert torch.equal(run_trace(model, x).logits, run_trace(fresh.eval(), x).logits)


CAPTIONER = ViTConfig(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=2,
                      num_classes=0, vocab_size=len(VOCAB) + 4,
                      vocab=Tokenizer(VOCAB).vocab, max_text_len=10, default_mask="prefix")


def test_greedy_generate_equals_argmax_of_teacher_forced_logits():
    model = randomised(CAPTIONER, seed=5)
    x = torch.randn(1, 3, 32, 32)
    gen = generate(model, x)
    ids = [1] + gen.ids  # feed the generated text back in as if a user had typed it
    teacher = run_trace(model, x, text_ids=ids[: CAPTIONER.max_text_len]).logits
    for step, token in enumerate(gen.ids):
        assert int(teacher[step].argmax()) == token
        torch.testing.assert_close(gen.probs[step], teacher[step].softmax(-1))
    assert torch.equal(greedy_ids(model, x)[0, : len(gen.ids)], torch.tensor(gen.ids))


def test_sampling_is_repeatable_and_top_k_restricts_choices():
    model = randomised(CAPTIONER, seed=6)
    x = torch.randn(1, 3, 32, 32)
    a = generate(model, x, temperature=1.5, top_k=3, seed=11)
    b = generate(model, x, temperature=1.5, top_k=3, seed=11)
    assert a.ids == b.ids
    for p in a.probs:
        assert int((p > 0).sum()) <= 3


def test_seg_grid_puts_each_patch_cell_in_its_place():
    grid, K, r = 3, 2, 2
    seg = torch.zeros(grid * grid, K, r, r)
    seg[5, 1, 0, 1] = 1.0  # patch 5 = row 1, col 2; its cell (0, 1)
    m = seg_grid(seg, grid)
    assert m.shape == (K, grid * r, grid * r)
    assert m[1].nonzero().tolist() == [[1 * r + 0, 2 * r + 1]]
    cm = class_map(seg, grid, size=12)  # each map cell covers 2x2 pixels
    assert cm[4:6, 10:12].eq(1).all()  # map cell (2, 5) covers pixel rows 4-5, cols 10-11
    assert cm[:3].eq(0).all() and cm[:, :8].eq(0).all()


def test_seg_targets_sample_cell_centres():
    mask = torch.zeros(1, 8, 8, dtype=torch.long)
    mask[0, 4:8, 0:4] = 3
    assert seg_targets(mask, 2)[0].tolist() == [[0, 0], [3, 0]]


def test_sincos_positions_follow_the_formula_and_land_on_the_patches_only():
    import math

    from vit_core.model import ViT
    from vit_core.scenes.train import add_smooth_positions, sincos_2d

    grid, dim = 4, 16
    code = sincos_2d(grid, dim)
    q = dim // 4
    for n in range(grid * grid):
        r, c = divmod(n, grid)
        for i in range(q):  # x = column in the first half, y = row in the second (float64)
            w = 100.0 ** (-i / q)
            assert math.isclose(code[n, i], math.sin(c * w), abs_tol=1e-6)
            assert math.isclose(code[n, q + i], math.cos(c * w), abs_tol=1e-6)
            assert math.isclose(code[n, 2 * q + i], math.sin(r * w), abs_tol=1e-6)
            assert math.isclose(code[n, 3 * q + i], math.cos(r * w), abs_tol=1e-6)
    cfg = ViTConfig(img_size=32, patch_size=8, embed_dim=dim, depth=1, num_heads=2,
                    num_classes=3)
    model = ViT(cfg)
    before = model.pos_embed.detach().clone()
    add_smooth_positions(model, rms=1.5)
    added = (model.pos_embed - before)[0].detach()
    assert torch.equal(added[0], torch.zeros(dim))  # CLS keeps its own embedding
    assert abs(added[1:].pow(2).mean().sqrt().item() - 1.5) < 1e-5
    assert torch.allclose(added[1:], code * 1.5 / code.pow(2).mean().sqrt(), atol=1e-6)


@pytest.mark.slow  # trains, and measures three snapshots on 200 scenes
def test_a_run_keeps_float16_snapshots_and_a_log_it_resumes_with(tmp_path):
    import json

    from safetensors.torch import load_file

    from vit_core import ViT
    from vit_core.scenes.train import make_config, parse

    out = tmp_path / "tiny.safetensors"
    argv = ["--task", "classify", "--out", str(out), "--state", str(tmp_path / "s.pt"),
            "--batch", "8", "--dim", "32", "--depth", "1", "--heads", "2", "--patch", "32",
            "--seg-upsample", "2", "--warmup", "2", "--eval-every", "10", "--eval-n", "8",
            "--final-eval-n", "8", "--workers", "0", "--seed", "3", "--save-every", "10",
            "--snapshots", "0,5,20"]
    train(argv + ["--steps", "10"])  # stops at 10; the rerun below resumes to 20
    torch.manual_seed(3)  # what the run built before its first step
    start = ViT(make_config(parse(argv))).state_dict()
    snap0 = load_file(str(tmp_path / "tiny.snapshots" / "step-0.safetensors"))
    assert snap0.keys() == start.keys()
    for k, v in start.items():
        assert snap0[k].dtype == torch.float16 and torch.equal(snap0[k], v.half())
    train(argv + ["--steps", "20"])
    state = torch.load(tmp_path / "s.pt", weights_only=True)
    assert state["step"] == 20
    snap20 = load_file(str(tmp_path / "tiny.snapshots" / "step-20.safetensors"))
    for k, v in state["model"].items():
        assert torch.equal(snap20[k], v.half())
    log = json.loads((tmp_path / "tiny.training.json").read_text())
    assert [s["step"] for s in log["snapshots"]] == [0, 5, 20]  # each once, across the resume
    assert [r["step"] for r in log["train"]] == [10, 20]
    assert [r["step"] for r in log["held_out"]] == [10, 20]
    assert log["recipe"]["steps"] == 20 and log["snapshot_eval"] == {"n": 200, "seed": 7}
    for s in log["snapshots"]:
        assert 0 <= s["top1"] <= 1
