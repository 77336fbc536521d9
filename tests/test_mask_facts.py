"""The numbers the Masks stage shows (vit_core/explain/mask_facts.py), each against a reference
computed here by hand: key counts by the masks' rules, windows by cutting the grid cell by cell."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vit_core.config import ViTConfig
from vit_core.explain import mask_facts as mf
from vit_core.explain.windows import window_cost


@pytest.mark.parametrize("n_img,n_txt", [(50, 7), (4, 0), (1, 3)])
def test_visible_keys_follow_the_masks_rules(n_img, n_txt):
    causal = mf.visible_keys("causal", n_img, n_txt)
    prefix = mf.visible_keys("prefix", n_img, n_txt)
    S = n_img + n_txt
    assert causal.tolist() == [i + 1 for i in range(S)]  # token i sees 0 … i
    assert prefix.tolist() == [n_img] * n_img + [n_img + j + 1 for j in range(n_txt)]


def test_least_sure_and_largest_gap():
    assert mf.least_sure([0.9, 0.3, 0.7, 0.3]) == 1  # the first of a tie
    assert mf.least_sure([]) is None
    a, b = torch.tensor([1.0, -2.0, 0.5]), torch.tensor([1.5, 1.0, 0.5])
    assert mf.largest_gap(a, b) == pytest.approx(3.0)
    assert mf.largest_gap(a, a) == 0.0


def window_by_hand(g: int, m: int, shift: int, p: int) -> set[int]:
    """The patches in p's window: rows cut at shift, shift + m, …; columns likewise."""
    band = (lambda r: (r - shift) // m)
    r, c = divmod(p, g)
    return {q for q in range(g * g) if band(q // g) == band(r) and band(q % g) == band(c)}


@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_window_layout_against_cutting_the_grid_by_hand(size):
    c = ViTConfig(img_size=28, patch_size=4, embed_dim=8, depth=3, num_heads=2, num_classes=5)
    g, pre = c.grid, c.num_prefix_tokens
    lay = mf.window_layout(c, size, 0)
    assert lay.centre == 3 * 7 + 3
    for block, shift in ((0, 0), (1, size // 2)):
        for p in range(g * g):
            mine = window_by_hand(g, size, shift, p)
            same = set(np.flatnonzero(lay.bands[block].ravel() == lay.bands[block].flat[p]))
            assert same == mine
            row = lay.allowed[block][pre + p]
            assert {q for q in range(g * g) if row[pre + q]} == mine
            assert row[:pre].all()  # CLS seen by every patch
    centre = window_by_hand(g, size, 0, lay.centre)
    rows = {q // g for q in centre}
    cols = {q % g for q in centre}
    assert (lay.centre_reach.keys, lay.centre_reach.rows, lay.centre_reach.cols) == (
        len(centre) + pre, len(rows), len(cols))
    assert lay.centre_reach.inside == len(centre)
    for p in range(g * g):  # every patch, clipped windows at the border included
        mine = window_by_hand(g, size, 0, p)
        seen = mf.reach(lay.allowed[0], lay.bands[0], p, pre)
        assert (seen.keys, seen.rows * seen.cols) == (len(mine) + pre, len(mine))


def test_window_layout_one_block_is_never_shifted():
    c = ViTConfig(img_size=28, patch_size=4, embed_dim=8, depth=1, num_heads=2, num_classes=5)
    lay = mf.window_layout(c, 4, 0)
    assert (lay.allowed[0] == lay.allowed[1]).all()


def test_the_bundled_classifiers_2x2_windows():
    """Numbers the stage says for shapes-classifier's 7 x 7 grid: 5 keys, 268 of 2500 pairs."""
    c = ViTConfig(img_size=56, patch_size=8, embed_dim=8, depth=2, num_heads=2, num_classes=5)
    lay = mf.window_layout(c, 2, 0)
    assert (lay.centre_reach.keys, lay.centre_reach.inside) == (5, 4)
    w = window_cost(c, 2, True, 0)
    n = c.num_image_tokens
    pairs = sum(len(window_by_hand(7, 2, 0, p)) + 1 for p in range(49)) + n  # patches, CLS row
    assert (w.full_pairs, w.pairs[0]) == (n * n, pairs)
    assert mf.fewer_pairs(w.full_pairs, w.pairs[0]) == pytest.approx(2500 / 268)


def test_points_lost_in_whole_points():
    assert mf.points_lost(1.0, 0.3) == 70
    assert mf.points_lost(0.975, 0.5) == round(47.5)  # Python rounds a half to even: 48
    assert mf.points_lost(0.2, 0.5) == -30  # it rose
