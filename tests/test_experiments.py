"""Interventions against independent computations."""

import torch

from tests.test_model import SMALL, randomised
from vit_core import run_trace
from vit_core.explain.interventions import (
    ablate_heads,
    occlude,
    shuffle_patches,
    with_mask,
    without_positions,
)


def manual_forward_without_attention(model, x, skip_layer: int) -> torch.Tensor:
    """Logits with layer `skip_layer`'s attention sublayer removed (only W_O's bias remains),
    written with the model's modules directly, not through head_mask."""
    with torch.no_grad():
        h = model.embed(x)
        for i, block in enumerate(model.blocks):
            if i == skip_layer:
                h = h + block.attn.proj.bias
            else:
                h = h + block.attn(block.norm1(h))
            h = h + block.mlp(block.norm2(h))
        return model.head(model.norm(h)[:, 0])[0]


def test_ablating_every_head_of_a_layer_removes_its_attention_output():
    model = randomised(SMALL)
    x = torch.randn(1, 3, 32, 32)
    tr = ablate_heads(model, x, [(1, h) for h in range(SMALL.num_heads)])
    bias = model.blocks[1].attn.proj.bias.detach()
    assert torch.equal(tr["blocks.1.attn_out"], bias.expand(17, -1))
    torch.testing.assert_close(tr["blocks.1.resid_mid"], tr["blocks.0.resid_post"] + bias)
    torch.testing.assert_close(tr.logits, manual_forward_without_attention(model, x, 1))
    assert not torch.allclose(tr.logits, run_trace(model, x).logits)


def test_shuffling_without_positions_changes_nothing():
    model = randomised(SMALL)
    x = torch.randn(1, 3, 32, 32)
    shuffled, perm = shuffle_patches(model, x, seed=4, positions=False)
    plain = without_positions(model, x)
    assert not torch.equal(perm, torch.arange(16))
    torch.testing.assert_close(shuffled.logits, plain.logits, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(shuffled["patch_embed"], plain["patch_embed"][perm])
    with_pos, _ = shuffle_patches(model, x, seed=4)
    assert not torch.allclose(with_pos.logits, run_trace(model, x).logits, atol=1e-3)


def test_occluded_patches_are_mid_grey_and_others_untouched():
    model = randomised(SMALL)
    x = torch.randn(1, 3, 32, 32)
    tr, base = occlude(model, x, [0, 5]), run_trace(model, x)
    assert (tr["patches"][[0, 5]] == 0).all()
    torch.testing.assert_close(tr["patches"][1:5], base["patches"][1:5])


def test_causal_mask_makes_the_classifier_blind():
    model = randomised(SMALL)
    a = with_mask(model, torch.randn(1, 3, 32, 32), "causal")
    b = with_mask(model, torch.randn(1, 3, 32, 32), "causal")
    torch.testing.assert_close(a.logits, b.logits)  # CLS at position 0 sees only itself
