"""The numbers the Experiments stage shows (vit_core/explain/experiment_facts.py), each against
a reference computed here by hand (float64 or plain Python over every cell)."""

from __future__ import annotations

import math

import pytest
import torch

from vit_core.config import ViTConfig
from vit_core.explain import experiment_facts as ef

CFG = ViTConfig(img_size=28, patch_size=4, embed_dim=8, depth=3, num_heads=2, num_classes=5)


def neighbours_by_hand(p: int, g: int) -> list[int]:
    r0, c0 = divmod(p, g)
    return [q for q in range(g * g)
            if abs(q // g - r0) <= 1 and abs(q % g - c0) <= 1]  # reading order: q increasing


@pytest.mark.parametrize("g", [1, 2, 3, 7])
def test_around_is_every_cell_one_step_away(g):
    for p in range(g * g):
        assert ef.around(p, g) == neighbours_by_hand(p, g)
    assert len(ef.around(0, 7)) == 4 and len(ef.around(8, 7)) == 9  # a corner, an inner cell


def test_middle_and_the_grey_set_around_it():
    assert [ef.middle(g) for g in (1, 4, 7)] == [0, 2 * 4 + 2, 3 * 7 + 3]
    grey = (16, 17, 18, 23, 24, 25, 30, 31, 32)  # 3 x 3 around row 3, column 3 of a 7 x 7 grid
    assert ef.grey_centre(grey, (5, 24), 7) == 24
    assert ef.grey_centre(grey[::-1], (24,), 7) == 24  # any order of the set
    assert ef.grey_centre(grey[:-1], (5, 24), 7) is None
    assert ef.grey_centre((), (0,), 7) is None  # an empty set is around nobody


def test_fixed_points_are_the_cells_a_permutation_keeps():
    gen = torch.Generator().manual_seed(3)
    for n in (1, 5, 49):
        perm = torch.randperm(n, generator=gen)
        ref = tuple((perm == torch.arange(n)).nonzero().flatten().tolist())
        assert ef.fixed_points(perm) == ref
    assert ef.fixed_points(torch.tensor([2, 1, 0, 3])) == (1, 3)
    assert ef.fixed_points(None) == ()


def test_mean_rgb_is_the_mean_in_0_to_255():
    assert ef.mean_rgb((0.485, 0.456, 0.406)) == (124, 116, 104)  # ImageNet's mean
    assert ef.mean_rgb((0.5, 0.5, 0.5)) == (128, 128, 128)  # 127.5 rounds to even: 128


def test_probabilities_and_the_answer_match_float64_softmax():
    logits = torch.tensor([[1.0, -2.0, 0.5, 3.0, 0.0]])
    ref = [math.exp(v) for v in logits[0].tolist()]
    ref = [v / sum(ref) for v in ref]
    p = ef.probabilities(logits)[0]
    assert p.tolist() == pytest.approx(ref, rel=1e-6)
    k, top = ef.top_answer(p)
    assert k == 3 and top == pytest.approx(max(ref), rel=1e-6)


def test_charted_classes_are_both_runs_top_k_most_probable_before_first():
    p0 = torch.tensor([0.05, 0.40, 0.30, 0.05, 0.20])
    p1 = torch.tensor([0.60, 0.10, 0.05, 0.20, 0.05])
    # top 2 before: 1, 2; after: 0, 3 -> ordered by p0: 1 (0.40), 2 (0.30), then 0 and 3 (0.05)
    assert ef.charted_classes(p0, p1, 2)[:2] == [1, 2]
    assert set(ef.charted_classes(p0, p1, 2)) == {0, 1, 2, 3}
    assert ef.charted_classes(p0, p0, 3) == [1, 2, 4]  # the same run: its own top 3, once each


def allowed_by_hand(kind: str, n_img: int, n_txt: int) -> list[list[bool]]:
    S = n_img + n_txt
    rows = []
    for i in range(S):
        row = []
        for j in range(S):
            if kind == "full" and i < n_img and j < n_img:
                row.append(True)
            elif kind == "prefix" and j < n_img:
                row.append(True)
            else:  # causal everywhere; the text always sees the image and the words before it
                row.append(j <= i)
        rows.append(row)
    return rows


def test_allowed_in_block0_plain_masks():
    n_img = CFG.num_image_tokens
    for kind in ("causal", "prefix"):
        assert ef.allowed_in_block0(CFG, kind, 3).tolist() == allowed_by_hand(kind, n_img, 3)
    assert ef.allowed_in_block0(CFG, "full", 0).all()


def test_allowed_in_block0_a_window_mask_is_its_plain_block():
    m = ef.allowed_in_block0(CFG, "window:3:shifted", 0)  # 7 x 7 grid, CLS first
    g, pre = CFG.grid, CFG.num_prefix_tokens
    for p in range(g * g):
        for q in range(g * g):
            same = p // g // 3 == q // g // 3 and p % g // 3 == q % g // 3  # block 0: no shift
            assert bool(m[pre + p, pre + q]) == same
    assert m[0].all() and m[:, 0].all()  # CLS sees and is seen by every token


def test_same_allowed_compares_where_the_masks_block():
    a = torch.zeros(2, 4, 4).masked_fill(torch.ones(4, 4, dtype=torch.bool).triu(1), -math.inf)
    assert ef.same_allowed(a, a.clone())
    b = a.clone()
    b[1, 0, 3] = 0.0  # one more key visible in one block
    assert not ef.same_allowed(a, b)


def test_most_patch_keys_reads_block_0s_patch_rows():
    c = ViTConfig(img_size=12, patch_size=4, embed_dim=8, depth=2, num_heads=2)  # 3 x 3, CLS
    S = c.num_image_tokens
    allowed = torch.zeros(2, S, S, dtype=torch.bool)
    allowed[0, :, 0] = True  # CLS seen by all: not a patch key
    allowed[0, 3, 1:5] = True  # patch 2 sees patches 0..3
    allowed[0, 5, 1:3] = True
    allowed[1] = True  # block 1 does not count
    mask = torch.zeros(2, S, S).masked_fill(~allowed, -math.inf)
    assert ef.most_patch_keys(c, mask) == 4


def test_mean_probability_is_the_float64_mean():
    probs = [0.9, 0.25, 0.125, 0.6]
    assert ef.mean_probability(probs) == pytest.approx(
        torch.tensor(probs, dtype=torch.float64).mean().item(), abs=1e-15)
