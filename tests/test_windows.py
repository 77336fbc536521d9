"""Windowed attention (issue 29, item 4): the window masks against masks built by hand from the
windows' row and column ranges, a pass under them against a float64 block-by-block run, the cost
against a count of allowed pairs, and the Masks stage's step against the test's own numbers
(pairs, keys, and the bundled classifier's top-1 on held-out scenes counted here)."""

from __future__ import annotations

import pytest
import torch

from tests import reference
from tests.support import open_app, page_text
from ui import keys
from ui.drawing.numbers import pct
from ui.stages import masks as masks_stage
from vit_core import ViT, ViTConfig, load_model, run_trace
from vit_core.explain.flops import stage_rows
from vit_core.explain.windows import window_cost
from vit_core.masks import parse_window, window_keys, window_masks
from vit_core.scenes.world import SceneDataset, heldout_seeds

GRID7 = ViTConfig(img_size=28, patch_size=4, embed_dim=32, depth=4, num_heads=2, num_classes=5)


# ---------------------------------------------------------------- the mask, by hand
def bands(grid: int, size: int, shift: int) -> list[range]:
    """The rows (or columns) of each window, written out: cuts at 0, M, 2M, ... or, shifted, at
    shift, shift + M, ..., every band clipped to the grid."""
    starts = [0] + list(range(shift, grid, size)) if shift else list(range(0, grid, size))
    starts = sorted(set(starts))
    return [range(a, min(b, grid)) for a, b in zip(starts, starts[1:] + [grid], strict=True)]


def hand_mask(c: ViTConfig, size: int, shifted: bool, n_text: int = 0) -> torch.Tensor:
    """Boolean [L, S, S] by plain loops over every (query, key) pair of every block."""
    g, pre, n_img = c.grid, c.num_prefix_tokens, c.num_image_tokens
    S = n_img + n_text
    out = torch.zeros(c.depth, S, S, dtype=torch.bool)
    for layer in range(c.depth):
        shift = size // 2 if shifted and layer % 2 == 1 else 0
        band_of = {r: k for k, rows in enumerate(bands(g, size, shift)) for r in rows}
        for i in range(S):
            for j in range(S):
                if i >= n_img:  # text query: every image token, the text up to itself
                    ok = j < n_img or j <= i
                elif j >= n_img:  # image query, text key: never (prefix and causal models)
                    ok = False
                elif i < pre or j < pre:  # CLS / DIST: global both ways
                    ok = True
                else:
                    (ri, ci), (rj, cj) = divmod(i - pre, g), divmod(j - pre, g)
                    ok = band_of[ri] == band_of[rj] and band_of[ci] == band_of[cj]
                out[layer, i, j] = ok
    return out


def test_the_hand_bands_are_the_docstrings():
    assert [list(b) for b in bands(7, 2, 1)] == [[0], [1, 2], [3, 4], [5, 6]]
    assert [list(b) for b in bands(7, 2, 0)] == [[0, 1], [2, 3], [4, 5], [6]]
    assert [list(b) for b in bands(7, 3, 1)] == [[0], [1, 2, 3], [4, 5, 6]]


@pytest.mark.parametrize("shifted", [False, True], ids=["plain", "shifted"])
@pytest.mark.parametrize("size", [2, 3])
@pytest.mark.parametrize("config", [
    GRID7,  # CLS
    GRID7.replace(dist_token=True),  # CLS and DIST
    GRID7.replace(class_token=False, global_pool="avg"),  # no prefix token
], ids=["cls", "cls+dist", "no-prefix"])
def test_the_window_mask_equals_one_built_by_hand(config, size, shifted):
    got = window_keys(config, f"window:{size}" + (":shifted" if shifted else ""))
    assert torch.equal(got, hand_mask(config, size, shifted))
    # alternation: blocks 0 and 2 the same, 1 and 3 the same; shifted blocks differ from plain
    assert torch.equal(got[0], got[2]) and torch.equal(got[1], got[3])
    assert torch.equal(got[0], got[1]) != shifted
    assert torch.equal(window_masks(config, "window:2").isfinite(),
                       window_keys(config, "window:2"))


def test_text_keeps_the_captioners_own_rule():
    c = GRID7.replace(num_classes=0, vocab_size=9, max_text_len=5, default_mask="prefix")
    for size, shifted in ((2, True), (3, False)):
        name = f"window:{size}" + (":shifted" if shifted else "")
        assert torch.equal(window_keys(c, name, n_text=4), hand_mask(c, size, shifted, 4))


def test_window_names_parse_and_bad_ones_are_refused():
    assert parse_window("window:2") == (2, False)
    assert parse_window("window:3:shifted") == (3, True)
    assert parse_window("prefix") is None
    for bad in ("window:0", "window", "window:2:wrapped", "window:x"):
        with pytest.raises(ValueError):
            window_keys(GRID7, bad)


# ---------------------------------------------------------------- a pass under the mask
@pytest.mark.parametrize("name,size,shifted", [("window:2:shifted", 2, True),
                                               ("window:3", 3, False)])
def test_a_pass_with_a_window_mask_equals_blocks_run_by_hand(name, size, shifted):
    torch.manual_seed(0)
    model = ViT(GRID7).double().eval()
    pixels = torch.randn(1, 3, 28, 28, dtype=torch.float64)
    M = torch.zeros(hand_mask(GRID7, size, shifted).shape, dtype=torch.float64).masked_fill(
        ~hand_mask(GRID7, size, shifted), float("-inf"))
    sd = {k: v.detach().double() for k, v in model.state_dict().items()}
    Z = run_trace(model, pixels, mask="full")["embed"]  # block 0's input (no mask involved)
    for layer in range(GRID7.depth):  # block l with its own mask, from the equations
        Z = reference.block(sd, f"blocks.{layer}.", Z, GRID7.num_heads, M[layer],
                            GRID7.norm_eps)["resid_post"]
    Xf = reference.layer_norm(Z, sd["norm.weight"], sd["norm.bias"], GRID7.norm_eps)
    want = Xf[0] @ sd["head.weight"].T + sd["head.bias"]
    with torch.inference_mode():
        got = model(pixels, mask=name)[0]
    assert (got - want).abs().max() < 1e-5
    tr = run_trace(model, pixels, mask=name)  # a lean trace recomputes block 1 with mask[1]
    assert tr.mask_kind == name and tr.mask.shape == (GRID7.depth, 50, 50)
    assert (tr.logits - want).abs().max() < 1e-5
    full = model(pixels, mask="full")[0]
    assert (full - want).abs().max() > 1e-3  # the mask changed something
    Z1 = reference.block(sd, "blocks.1.", tr["blocks.1.resid_pre"].double(), GRID7.num_heads,
                         M[1], GRID7.norm_eps)
    assert (tr["blocks.1.attn.pattern"] - Z1["pattern"]).abs().max() < 1e-5


# ---------------------------------------------------------------- the cost
@pytest.mark.parametrize("size,shifted", [(1, False), (2, True), (3, True), (4, False)])
def test_the_cost_is_a_count_of_allowed_pairs(size, shifted):
    c = GRID7
    allowed = hand_mask(c, size, shifted)
    pairs = [sum(bool(allowed[b, i, j]) for i in range(50) for j in range(50))
             for b in range(c.depth)]
    cost = window_cost(c, size, shifted)
    assert list(cost.pairs) == pairs and cost.full_pairs == 50 * 50
    assert cost.macs == 2 * c.embed_dim * sum(pairs)
    rows = {r["step"]: r for r in stage_rows(c)}  # full attention's Q Kᵀ and A V, from flops
    assert cost.full_macs == sum(rows[s]["flops"] // 2 * rows[s]["times"]
                                 for s in ("scores", "A V"))
    assert cost.ratio == pytest.approx(50 * 50 * c.depth / sum(pairs))


# ---------------------------------------------------------------- the Masks stage
def windows_step(model: str):
    steps = [s.key for s in masks_stage.STAGE.steps_for(load_model(model).config)]
    return open_app(model=model, params={"page": "masks", "presenter": "1",
                                         "step": str(steps.index("windows") + 1)},
                    no_error=True)


def reveal_answer(at) -> str:
    before = {i.value for i in at.info}
    at.toggle(key=keys.reveal("masks", "windows")).set_value(True).run()
    return next(i.value for i in at.info if i.value not in before)


def test_the_step_for_a_captioner_says_its_own_pairs_and_keys():
    name = "shapes-captioner-prefix"
    at = windows_step(name)
    c = load_model(name).config
    n_text = 1 + len("a red ball on the grass".split())  # [SOS] + the default caption's words
    allowed = hand_mask(c, 2, True, n_text)
    S = c.num_image_tokens + n_text
    said = page_text(at)
    assert (f"The mask keeps {int(allowed[0].sum()):,} of the {S * S:,} (query, key) pairs per "
            f"head") in said
    assert "its accuracy under windows is not measured here" in said
    g = c.grid
    centre = c.num_prefix_tokens + g // 2 * g + g // 2
    assert reveal_answer(at).startswith(f"{int(allowed[0, centre].sum())}: ")
    at.select_slider(key=keys.MASK_WINDOW).set_value(3).run()
    assert f"keeps {int(hand_mask(c, 3, True, n_text)[0].sum()):,} of the" in page_text(at)


@pytest.mark.slow  # the page measures 3 masks on 200 scenes, and so does the test
def test_the_classifiers_top1_under_windows_is_the_tests_own_count():
    name = "shapes-classifier"
    model = load_model(name)
    c = model.config
    additive = {k: torch.zeros(c.depth, 50, 50).masked_fill(~hand_mask(c, 2, k), float("-inf"))
                for k in (False, True)}
    ds = SceneDataset(heldout_seeds(200, 3), mean=c.mean, std=c.std)
    hits = {"full": 0, False: 0, True: 0}
    with torch.inference_mode():
        for start in range(0, 200, 50):
            items = [ds[i] for i in range(start, start + 50)]
            x = torch.stack([it["pixels"] for it in items])
            y = torch.tensor([it["label"] for it in items])
            for k in hits:
                logits = model(x, mask="full" if k == "full" else additive[k])
                hits[k] += int((logits.argmax(-1) == y).sum())
    full, plain, shifted = (hits[k] / 200 for k in ("full", False, True))
    at = windows_step(name)
    said = page_text(at)
    assert (f"With 2×2 windows the classifier's top-1 on 200 held-out scenes falls from "
            f"{pct(full)} to {pct(plain)} ({pct(shifted)} with the windows shifted") in said
    assert full > plain  # windows the model never saw in training cost it accuracy


def test_the_shape_trace_gives_the_windows_cost_counted_by_hand():
    name = "shapes-classifier"
    c = load_model(name).config
    at = open_app(model=name, params={"page": "shapes", "presenter": "1", "step": "6"},
                  no_error=True)
    pairs = int(hand_mask(c, 2, True).sum())  # the Masks stage's default size, all blocks
    full = c.num_image_tokens**2 * c.depth
    assert (f"Windows of 2×2 patches (Masks stage, shifted on alternate blocks) keep {pairs:,} "
            f"(query, key) pairs per head over the {c.depth} blocks instead of {full:,}, "
            f"{full / pairs:.1f}× fewer") in page_text(at)
