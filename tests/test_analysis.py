"""Derived quantities against values worked out by hand on tiny examples."""

import math

import torch

from ui.stages.attention import distance_words, entropy_words
from vit_core.explain.attention import (
    attention_entropy,
    mean_attention_distance,
    rollout,
)
from vit_core.explain.embeddings import embedding_filters, position_similarity
from vit_core.explain.tokens import token_stats


def test_rollout_two_layers_four_tokens_by_hand():
    # layer 0: one head, every token attends to token 0; layer 1: identity attention
    a0 = torch.zeros(1, 1, 4, 4)
    a0[0, 0, :, 0] = 1.0
    a1 = torch.eye(4)[None, None]
    out = rollout(torch.cat([a0, a1]))
    # layer 0 after 0.5 I + 0.5 A: row 0 = [1, 0, 0, 0]; row i>0 = 0.5 e_0 + 0.5 e_i
    # layer 1 after 0.5 I + 0.5 I = I: nothing changes
    expected = torch.tensor([[1.0, 0, 0, 0], [0.5, 0.5, 0, 0], [0.5, 0, 0.5, 0],
                             [0.5, 0, 0, 0.5]])
    torch.testing.assert_close(out, expected)


def test_rollout_multiplies_layers_in_order():
    a = torch.tensor([[0.0, 1.0], [1.0, 0.0]])  # swap
    b = torch.tensor([[1.0, 0.0], [1.0, 0.0]])  # everything from token 0
    out = rollout(torch.stack([a, b])[:, None], residual=0.0)
    torch.testing.assert_close(out, b @ a)  # b after a: both rows read token 1 of the input
    torch.testing.assert_close(out, torch.tensor([[0.0, 1.0], [0.0, 1.0]]))


def test_mean_attention_distance_by_hand():
    # 2x2 grid of 10-pixel patches + CLS. Head 0: each patch looks only at itself (distance 0).
    # Head 1: each patch looks only at its horizontal neighbour (distance 10 px).
    S = 5
    p = torch.zeros(2, S, S)
    p[:, 0, 0] = 1
    for i in range(4):
        p[0, 1 + i, 1 + i] = 1
    for i, j in [(0, 1), (1, 0), (2, 3), (3, 2)]:
        p[1, 1 + i, 1 + j] = 1
    torch.testing.assert_close(mean_attention_distance(p, grid=2, patch_size=10),
                               torch.tensor([0.0, 10.0]))
    # uniform over the 4 patches: distances from a corner are 0, 10, 10, 10*sqrt(2)
    u = torch.zeros(1, S, S)
    u[0, 1:, 1:] = 0.25
    expected = (0 + 10 + 10 + 10 * math.sqrt(2)) / 4
    torch.testing.assert_close(mean_attention_distance(u, 2, 10), torch.tensor([expected]))


def test_attention_entropy_by_hand():
    p = torch.zeros(2, 4, 4)
    p[0] = torch.eye(4)  # one key each: entropy 0
    p[1] = 0.25  # uniform over 4 keys: log 4
    torch.testing.assert_close(attention_entropy(p), torch.tensor([0.0, math.log(4)]))


def test_embedding_filters_recover_a_planted_direction():
    torch.manual_seed(0)
    direction = torch.randn(3 * 4 * 4)
    direction /= direction.norm()
    rows = torch.randn(64, 1) * 10 * direction + 0.01 * torch.randn(64, 48)
    comps, ratio = embedding_filters(rows.reshape(64, 3, 4, 4), k=3)
    assert comps.shape == (3, 3, 4, 4) and ratio[0] > 0.99
    first = comps[0].reshape(-1) - comps[0].mean()
    cos = torch.nn.functional.cosine_similarity(first, direction - direction.mean(), dim=0)
    assert abs(float(cos)) > 0.99


def test_position_similarity_is_cosine():
    pos = torch.tensor([[[9.0, 9.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [-1.0, 0.0]]])
    sim = position_similarity(pos, grid=2)
    assert sim.shape == (2, 2, 2, 2)
    torch.testing.assert_close(sim[0, 0], torch.tensor([[1.0, 0.0], [2**-0.5, -1.0]]))


def test_token_stats_match_layernorm_definition():
    x = torch.tensor([1.0, 2.0, 3.0, 6.0])
    s = token_stats(x)
    assert s["mean"] == 3.0 and math.isclose(s["std"], math.sqrt(3.5))


def test_distance_words_agrees_in_number_with_how_many_heads_there_are():
    """One head is "this head looks", several are "these heads look" (everywhere or locally)."""
    one_far, one_near = distance_words([[9.0]], 10.0), distance_words([[2.0]], 10.0)
    assert "this head looks everywhere, not near its own patch" in one_far
    assert "this head looks locally, under half of that (2 px)" in one_near
    many_far = distance_words([[9.0, 9.5], [8.0, 9.0]], 10.0)
    many_near = distance_words([[2.0, 3.0], [4.0, 1.0]], 10.0)
    assert "these heads look everywhere, none near its own patch" in many_far
    assert "these heads look locally: every head stays under half of that (nearest 1 px)" in (
        many_near)


def test_entropy_words_of_a_single_head_names_no_layer_or_head():
    assert "so this head spreads its attention almost evenly" in entropy_words([[3.9]], 4.0)
    one = entropy_words([[0.7]], 4.0)
    assert "The head is about as spread as an even split over e^0.70 ≈ 2 keys" in one
    many = entropy_words([[3.0, 0.7], [3.5, 3.9]], 4.0)
    assert "The most focused head (layer 0, head 1) is about as spread" in many
