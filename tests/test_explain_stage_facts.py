"""The facts the input, embeddings, LayerNorm/QKV, attention, MLP, segmentation and overview
stages word (moved from ui/stages into vit_core.explain, issue 40), each against a reference
computed here by hand: Python loops over float64 numbers, or plain torch calls."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from vit_core.explain import attention as A
from vit_core.explain import embeddings as E
from vit_core.explain import lens, segmentation, tokens


def softmax_rows(S: int, seed: int, H: int | None = None) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    shape = (S, S) if H is None else (H, S, S)
    return (3 * torch.randn(shape, generator=g, dtype=torch.float64)).softmax(-1)


# ---------------------------------------------------------------- attention
@pytest.mark.parametrize("patch", [0, 4, 7])
def test_where_a_patch_looks_by_hand(patch):
    grid, pre = 3, 1
    a = softmax_rows(pre + grid * grid, seed=patch)
    f = A.patch_look(a, patch, grid, pre)
    row = [float(a[patch + pre, pre + k]) for k in range(grid * grid)]
    r, c = divmod(patch, grid)
    near = 0.0
    for k, w in enumerate(row):
        if abs(k // grid - r) <= 1 and abs(k % grid - c) <= 1:
            near += w
    top = max(range(len(row)), key=lambda k: (row[k], -k))
    assert f.own == pytest.approx(row[patch])
    assert f.near == pytest.approx(near)
    assert (f.top, f.top_share) == (top, pytest.approx(row[top]))
    assert f.top_steps == max(abs(top // grid - r), abs(top % grid - c))
    assert f.on_prefix == (pytest.approx(float(a[patch + pre, 0])),)
    assert float(f.col[2 // grid, 2 % grid]) == pytest.approx(float(a[pre + 2, patch + pre]))
    assert A.top_cell(f.row) == (top, pytest.approx(row[top]))


def test_every_heads_prefix_rows_by_hand():
    L, H, grid, pre = 2, 3, 2, 2
    S = pre + grid * grid
    rows = softmax_rows(S, seed=1, H=L * H).reshape(L, H, S, S)[:, :, :pre]  # [L, H, pre, S]
    allowed = torch.ones(S, S, dtype=torch.bool)
    allowed[1, pre:] = False  # DIST sees no patch
    f = A.prefix_maps(rows, 1, grid, allowed)
    for i in range(pre):
        mean = [sum(float(rows[1, h, i, k]) for h in range(H)) / H for k in range(S)]
        held, need = 0.0, 0
        for w in sorted(mean, reverse=True):  # keys, largest first, until half is held
            held, need = held + w, need + 1
            if held >= 0.5 * sum(mean) - 1e-12:
                break
        assert f.half_keys[i] == need
        assert f.on_prefix[i] == pytest.approx(sum(mean[:pre]))
        assert f.top[i] == pytest.approx(max(float(rows[1, h, i, k]) for h in range(H)
                                             for k in range(pre, S)))
    assert f.sees_patches == (True, False) and f.n_keys == (S, pre)
    patch_row = [float(rows[1, 2, 0, k]) for k in range(pre, S)]
    assert f.ranges[0][2] == pytest.approx((min(patch_row), max(patch_row)))


def test_which_heads_agree_on_a_brightest_patch():
    rows = [[0.1, 0.5, 0.2], [0.6, 0.1, 0.1], [0.2, 0.4, 0.3]]
    a = A.head_agreement(rows)
    assert (a.top, a.patches, a.head) == (0.6, (0,), 1)
    assert a.favourites == (1, 0, 1) and a.favourite_shares == (0.5, 0.6, 0.4)
    assert a.shared == 2


def test_rollout_as_shares_by_hand():
    grid, pre, k = 2, 1, 2
    S = pre + grid * grid
    joint = softmax_rows(S + 2, seed=3)  # two text tokens after the image's: renormalised away
    f = A.rollout_shares(joint, grid, pre, k)
    row = [float(joint[0, j]) for j in range(S)]
    total = sum(row)
    patches = sorted((w / total for w in row[pre:]), reverse=True)
    assert f.on_prefix == (pytest.approx(row[0] / total),)
    assert f.on_patches == pytest.approx(sum(patches))
    assert f.top == pytest.approx(patches[0] + patches[1])
    no_cls = A.rollout_shares(joint[pre:, pre:], grid, 0, k)  # the mean of the patch rows
    mean = [sum(float(joint[pre + q, pre + j]) for q in range(4)) / 4 for j in range(4)]
    assert no_cls.top == pytest.approx(sum(sorted(mean, reverse=True)[:2]) / sum(mean))


def test_a_grid_of_heads_its_extremes_and_the_heads_under_a_bound():
    v = np.array([[3.0, 1.0, 4.0], [1.0, 5.0, 0.5]])
    r = A.head_range(v)
    assert (r.lo, r.hi, r.lowest, r.highest, r.H, r.n) == (0.5, 5.0, 5, 4, 3, 6)
    assert r.where(r.lowest) == (1, 2)
    assert A.heads_below(v, 1.5) == (3, [0, 1])
    assert A.heads_below(v, 0.1) == (0, [])
    flat = [3.0, 1.0, 4.0, 1.0, 5.0, 0.5]  # ranked: 4, 2, 0, 1, 3, 5 (ties in index order)
    # the top (or the right one), the bottom, and a third (rank 2) and two thirds (rank 4) down
    assert A.spread_picks(flat, None) == [0, 3, 4, 5]
    assert A.spread_picks(flat, 2) == [0, 2, 3, 5]


def test_one_score_by_hand():
    g = torch.Generator().manual_seed(5)
    q, k = torch.randn(8, generator=g), torch.randn(8, generator=g)
    row = torch.tensor([0.3, -1.0, float("-inf"), 2.0])
    s = A.score_by_hand(q, k, row, 0.25, j=0)
    dot = sum(float(a) * float(b) for a, b in zip(q, k, strict=True))
    assert s.dot == pytest.approx(dot, rel=1e-5)
    assert s.score == pytest.approx(dot / math.sqrt(8), rel=1e-5)
    assert (s.visible, s.rank, s.S, s.masked) == (3, 2, 4, False)
    assert A.score_by_hand(q, k, row, 0.0, j=2).masked


def test_the_final_cls_row_over_the_patches():
    grid, pre, H = 2, 1, 3
    p = softmax_rows(pre + 4, seed=7, H=H)
    m, total = A.cls_patch_row(p, grid, pre)
    hand = [sum(float(p[h, 0, pre + j]) for h in range(H)) / H for j in range(4)]
    assert m.flatten().tolist() == pytest.approx(hand)
    assert total == pytest.approx(sum(hand))


# ---------------------------------------------------------------- embeddings
def test_a_patch_embedding_against_a_convolution():
    g = torch.Generator().manual_seed(2)
    D, C, P = 6, 3, 2
    w, b = torch.randn(D, C, P, P, generator=g), torch.randn(D, generator=g)
    pixels = torch.randn(1, C, P, P, generator=g)
    conv = torch.nn.functional.conv2d(pixels.double(), w.double(), b.double()).flatten()
    f = E.patch_embedding_check(w, b, pixels.flatten(), conv.float())
    assert f["first"].tolist() == pytest.approx(conv[:5].tolist())
    assert f["diff"] < 1e-5
    assert E.component_count(D, C * P * P) == 5 and E.component_count(64, 12) == 12


def test_one_positions_neighbours_by_hand():
    g, p = 3, 4
    e = torch.randn(g * g, 5, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    unit = [v / math.sqrt(sum(x * x for x in v.tolist())) for v in e]
    cos = [[float(sum(a * b for a, b in zip(u.tolist(), v.tolist(), strict=True))) for v in unit]
           for u in unit]
    f = E.position_neighbours(E.position_similarity(e, g, prefix=0), p)
    best = max((k for k in range(g * g) if k != p), key=lambda k: cos[p][k])
    assert f["best"] == best and f["best_cos"] == pytest.approx(cos[p][best], abs=1e-6)
    assert f["best_steps"] == abs(best // g - 1) + abs(best % g - 1)
    assert f["neighbours"] == 4
    assert f["near_mean"] == pytest.approx(sum(cos[p][k] for k in (1, 3, 5, 7)) / 4, abs=1e-6)
    assert E.position_neighbours(np.ones((1, 1, 1, 1)), 0)["best"] is None


def test_what_another_size_and_patch_size_cost():
    own = {"size": 224, "grid": 7, "N": 49, "S": 50, "pairs": 2500, "macs": 10}
    other = {"size": 288, "grid": 9, "N": 81, "S": 82, "pairs": 6724, "macs": 25}
    r = E.cost_ratios(own, other)
    assert r == {"N": 81 / 49, "S": 82 / 50, "pairs": 6724 / 2500, "macs": 2.5,
                 "pairs_2dp": 2.69}
    c = E.patch_cost(224, 16, extra=1)
    assert (c.P, c.N, c.S, c.S2) == (16, 196, 197, 197 ** 2)
    assert c.times(E.patch_cost(224, 32, extra=1)) == (196 / 49, 197 ** 2 / 50 ** 2)


def test_the_top_class_and_its_probability():
    logits = torch.tensor([1.0, 3.0, 2.0])
    z = sum(math.exp(v) for v in (1.0, 3.0, 2.0))
    k, p = lens.top_class(logits)
    assert k == 1 and p == pytest.approx(math.exp(3.0) / z)
    assert lens.probabilities(logits).tolist() == pytest.approx(
        [math.exp(v) / z for v in (1.0, 3.0, 2.0)])


# ---------------------------------------------------------------- tokens: LN and the MLP
def test_one_tokens_mlp_by_hand():
    g = torch.Generator().manual_seed(6)
    u = torch.randn(12, generator=g)
    tr = {"blocks.0.mlp.pre": u[None], "blocks.0.mlp.post": torch.nn.functional.gelu(u)[None],
          "blocks.0.resid_mid": torch.ones(1, 4), "blocks.0.mlp_out": 2 * torch.ones(1, 4),
          "blocks.0.resid_post": 3 * torch.ones(1, 4)}
    f = tokens.mlp_units(tr, 0, 0, k=3)
    gelu = [x * 0.5 * (1 + math.erf(x / math.sqrt(2))) for x in u.tolist()]
    order = sorted(range(12), key=lambda i: -gelu[i])[:3]
    assert f["on"] == sum(x > 0 for x in u.tolist()) and f["F"] == 12
    assert f["top_units"] == order
    assert f["top_values"].tolist() == pytest.approx([gelu[i] for i in order], abs=1e-6)
    assert (f["mid"], f["out"], f["post"]) == pytest.approx((2.0, 4.0, 6.0))
    xs, ys = tokens.gelu_curve(-1.0, 1.0, n=5)
    assert ys.tolist() == pytest.approx(
        [x * 0.5 * (1 + math.erf(x / math.sqrt(2))) for x in xs.tolist()], abs=1e-6)
    t = tokens.sublayer_totals([1.0, 2.0, 0.5], [0.5, 3.0, 1.0])
    assert t == {"attn": 3.5, "mlp": 4.5, "mlp_larger": 2}


def test_layernorms_scale_and_shift_means():
    w, b = torch.tensor([1.0, 2.0, 4.0]), torch.tensor([0.0, -1.0, 0.5])
    f = tokens.layernorm_steps(torch.tensor([1.0, 2.0, 3.0]), w, b, 1e-6)
    assert (f["gamma_mean"], f["beta_mean"]) == pytest.approx((7 / 3, -1 / 6))


# ---------------------------------------------------------------- segmentation
def test_each_classs_share_and_what_a_patch_has_seen():
    labels = np.array([[0, 0, 2], [2, 2, 2], [1, 0, 2]])
    assert segmentation.class_shares(labels) == {2: 5 / 9, 0: 3 / 9, 1: 1 / 9}
    assert list(segmentation.class_shares(labels)) == [2, 0, 1]
    tril = torch.ones(4, 4, dtype=torch.bool).tril()
    assert segmentation.patch_reach(tril) == {"all": False, "forwards": True, "least": 1,
                                              "most": 4}
    assert segmentation.patch_reach(torch.ones(4, 4, dtype=torch.bool))["all"]
    e = segmentation.edge_shares(on_boundary=30, inside=10, boundary_pairs=20, pairs=100)
    assert e == {"share": 0.75, "chance": 0.2, "ratio": pytest.approx(3.75)}
    assert segmentation.edge_shares(0, 0, 20, 100)["share"] is None
