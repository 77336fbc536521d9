"""Interventions against independent computations."""

import io

import pytest
import torch

from tests.support import SMALL, randomised
from vit_core import generate, load_image, load_model, preprocess, run_trace, run_with_hooks
from vit_core.explain.interventions import (
    SAME_OUTPUT,
    ablate_heads,
    alter,
    caption,
    max_difference,
    occlude,
    run,
    shuffle_patches,
    similarities,
    with_mask,
    without_positions,
)


def scene_png() -> bytes:
    """The app's first sample scene, a red ball on the grass, as PNG bytes."""
    from vit_core.scenes import world

    buf = io.BytesIO()
    seed = world.find_seed("a red ball on the grass", start=world.HELDOUT_BASE)
    world.make_scene(seed).image.save(buf, format="PNG")
    return buf.getvalue()


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


def test_shuffling_without_positions_matters_under_a_causal_mask():
    """Without positions the patch tokens are permutation-equivariant only when every image
    token sees every other: under a causal mask patch i sees only the patches before it."""
    model = randomised(SMALL.replace(global_pool="avg"))  # the output reads every patch token
    x = torch.randn(1, 3, 32, 32)
    for mask, equal in (("full", True), ("prefix", True), ("causal", False)):
        shuffled, _ = shuffle_patches(model, x, seed=4, positions=False, mask=mask)
        plain = without_positions(model, x, mask=mask)
        assert shuffled.mask_kind == plain.mask_kind == mask
        assert torch.allclose(shuffled.logits, plain.logits, atol=1e-5) == equal, mask
        assert (max_difference(shuffled, plain) < SAME_OUTPUT) == equal, mask


def test_the_sidebar_mask_is_kept_except_by_the_mask_experiment():
    model = randomised(SMALL)
    x = torch.randn(1, 3, 32, 32)
    for kind, arg in (("heads", ((0, 1),)), ("occlude", (3,)), ("positions", ()),
                      ("shuffle", (1,)), ("shuffle_no_positions", (1,))):
        assert run(model, x, kind, arg, mask="causal").mask_kind == "causal"
    assert run(model, x, "mask", ("prefix",), mask="causal").mask_kind == "prefix"


def test_altered_pixels_are_the_hand_made_ones():
    model = randomised(SMALL)
    x = torch.randn(1, 3, 32, 32)
    grey = alter(model, x, "occlude", (0, 5)).pixels
    by_hand = x.clone()
    for p in (0, 5):  # 4 x 4 grid of 8-pixel patches
        r, c = divmod(p, 4)
        by_hand[:, :, 8 * r:8 * r + 8, 8 * c:8 * c + 8] = 0
    assert torch.equal(grey, by_hand)
    shuffled = alter(model, x, "shuffle", (2,))
    for i, src in enumerate(shuffled.perm.tolist()):  # cell i holds patch perm[i]
        (r, c), (sr, sc) = divmod(i, 4), divmod(src, 4)
        assert torch.equal(shuffled.pixels[0, :, 8 * r:8 * r + 8, 8 * c:8 * c + 8],
                           x[0, :, 8 * sr:8 * sr + 8, 8 * sc:8 * sc + 8])
    with pytest.raises(ValueError, match="patches 0 to 15"):
        alter(model, x, "occlude", (16,))
    with pytest.raises(ValueError, match="Unknown intervention"):
        alter(model, x, "melt")


def test_a_headless_model_is_compared_by_its_final_tokens():
    model = randomised(SMALL.replace(num_classes=0))
    x = torch.randn(1, 3, 32, 32)
    before, after = run_trace(model, x), ablate_heads(model, x, [(1, 0)])
    assert "logits" not in before
    f0, f1 = before["ln_final"].double(), after["ln_final"].double()
    cls = float(f0[0] @ f1[0] / (f0[0].norm() * f1[0].norm()))
    mean0, mean1 = f0[1:].mean(0), f1[1:].mean(0)
    mean = float(mean0 @ mean1 / (mean0.norm() * mean1.norm()))
    sims = similarities(before, after)
    assert sims == pytest.approx({"CLS": cls, "mean patch token": mean}, abs=1e-6)
    expected = max(float((f0[0] - f1[0]).abs().max()), float((mean0 - mean1).abs().max()))
    assert max_difference(before, after) == pytest.approx(expected, abs=1e-6)


def test_a_caption_is_written_with_the_intervention_in_place():
    """The caption under an intervention equals a greedy loop written here, calling the model
    with the head switched off (or on greyed pixels)."""
    model = load_model("shapes-captioner-prefix")
    x = preprocess(load_image(scene_png()), model.config)
    off = {"blocks.5.attn.z": lambda z, name: torch.zeros_like(z)}  # every head of block 5
    ids = [1]
    with torch.no_grad():
        for _ in range(model.config.max_text_len):
            nxt = int(run_with_hooks(model, x, off, torch.tensor([ids]))[0, -1].argmax())
            ids.append(nxt)
            if nxt == 2:
                break
    gen = caption(model, x, "heads", tuple((5, h) for h in range(model.config.num_heads)))
    assert gen.ids == ids[1:]
    grey = x.clone()
    grey[:, :, 64:160, 64:160] = 0  # patches 16-18, 23-25, 30-32 of the 7 x 7 grid
    assert caption(model, x, "occlude", (16, 17, 18, 23, 24, 25, 30, 31, 32)).ids == generate(
        model, grey).ids
