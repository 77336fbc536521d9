"""vit_core/explain/why_patch_facts.py against references worked out here (plain Python loops
and float64 numpy), and the restored share the "Where the answer is formed" step reads against
a hand-written run of the bundled classifier with one block's input swapped at one token by a
plain torch forward pre-hook (not the library's hook points)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import vit_core
from vit_core.explain import patching, targets
from vit_core.explain import why_patch_facts as wf
from vit_core.io.images import preprocess
from vit_core.scenes import world


def test_scaled_is_the_share_of_the_largest_absolute_value():
    v = [0.5, -2.0, 1.0]
    assert np.allclose(wf.scaled(v), [0.25, -1.0, 0.5])
    assert np.allclose(wf.scaled([0.0, 0.0]), [0.0, 0.0])


def test_survivors_undefined_and_most_kept():
    rhos = {"a": 0.9, "b": 0.5, "c": float("nan"), "d": 0.51, "e": -0.2}
    assert wf.survivors(rhos, 0.5) == ["a", "d"]  # strictly above; nan never
    assert wf.undefined(rhos) == ["c"]
    assert wf.most_kept(rhos) == "a"
    assert wf.most_kept({"x": 0.3, "y": 0.3}) == "x"  # the first on a tie
    assert wf.most_kept({"x": float("nan")}) is None


def hand_token_facts(g: list[list[float]], n_prefix: int, carries: float):
    """The same reading, by loops."""
    best = (-math.inf, 0, 0)
    for b, row in enumerate(g):
        for t, v in enumerate(row):
            if v > best[0]:
                best = (v, b, t)
    carrier = None
    for start in range(len(g)):
        if n_prefix and all(g[b][0] >= carries for b in range(start, len(g))):
            carrier = start
            break
    block_top = []
    for b, row in enumerate(g):
        t = max(range(len(row)), key=lambda k: (row[k], -k))
        block_top.append((b, t, row[t]))
    return best, carrier, block_top


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_token_facts_equal_loops(seed):
    rng = np.random.default_rng(seed)
    g = rng.normal(0.3, 0.4, size=(5, 10))
    g[:, 0] = [0.1] * (seed + 1) + [0.7] * (4 - seed)  # [CLS] carries from block seed + 1 on
    best, carrier, block_top = hand_token_facts(g.tolist(), 1, wf.CARRIES)
    f = wf.token_facts(g, n_prefix=1)
    assert (f.top.share, f.top.block, f.top.column) == best
    assert f.carrier_from == carrier == seed + 1
    assert [(c.block, c.column, c.share) for c in f.block_top] == block_top
    assert np.array_equal(f.prefix[:, 0], g[:, 0])
    patch_best = max((v, b, t) for b, row in enumerate(g) for t, v in enumerate(row) if t >= 1)
    assert (f.patch_top.share, f.patch_top.block, f.patch_top.column) == patch_best
    assert wf.token_facts(g, n_prefix=0).carrier_from is None


def test_carrier_needs_every_later_block():
    g = np.zeros((4, 3))
    g[:, 0] = [0.9, 0.9, 0.2, 0.8]  # falls back in block 2: from block 3 only
    assert wf.token_facts(g, 1).carrier_from == 3
    g[3, 0] = 0.1
    assert wf.token_facts(g, 1).carrier_from is None


def test_head_facts_and_the_colour_limit():
    h = np.array([[0.05, 0.2], [0.1, -0.4]])
    f = wf.head_facts(h)
    assert (f.top.block, f.top.column, f.top.share) == (0, 1, 0.2)
    assert f.counting == 2 and f.total == 4  # 0.2 and 0.1 reach HEAD_COUNTS = 0.1
    assert wf.colour_limit(h) == 1.0
    assert wf.colour_limit(h, np.array([[1.5, -2.5]])) == 2.5


def swapped_share(model, clean, bad, target, block: int, tokens: list[int]) -> list[float]:
    """(s_patched - s_corrupt) / (s_clean - s_corrupt) for each token, in float64, from runs of
    the model with a plain torch forward pre-hook on block `block` that puts the clean input
    at that token (one batch row per token)."""
    kept = {}

    def keep(module, args):
        kept["x"] = args[0].detach().clone()

    h = model.blocks[block].register_forward_pre_hook(keep)
    with torch.no_grad():
        s_clean = float(model(clean)[0, target.index])
    h.remove()

    def swap(module, args):
        x = args[0].clone()
        for row, t in enumerate(tokens):
            x[row, t] = kept["x"][0, t]
        return (x, *args[1:])

    with torch.no_grad():
        s_bad = float(model(bad)[0, target.index])
        h = model.blocks[block].register_forward_pre_hook(swap)
        s = model(bad.expand(len(tokens), -1, -1, -1))[:, target.index].double()
        h.remove()
    return ((s - s_bad) / (s_clean - s_bad)).tolist()


def test_the_restored_share_equals_a_hand_run_with_the_block_input_swapped():
    model = vit_core.load_model("shapes-classifier")
    c = model.config
    pixels = preprocess(world.make_scene(11).image, c)
    target = targets.predicted(model, pixels)
    bad = patching.corrupt(pixels, c, "grey")
    grid = patching.patch_tokens(model, pixels, bad, target).grid.double().numpy()
    f = wf.token_facts(grid, c.num_prefix_tokens)
    b = f.top.block
    hand = swapped_share(model, pixels, bad, target, b, list(range(c.num_image_tokens)))
    assert np.allclose(grid[b], hand, atol=1e-4)
    assert int(np.argmax(hand)) == f.block_top[b].column == f.top.column
