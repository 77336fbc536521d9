"""The core against independent references: float64 hand math, torch SDPA, and the notes' shapes."""

import threading

import pytest
import torch
import torch.nn.functional as F

from tests import reference
from tests.support import SMALL, TEXT, randomised
from vit_core import load_model, make_mask, run_trace


def test_block_equals_float64_equations():
    model = randomised(SMALL).double()
    x = torch.randn(1, 3, 32, 32, dtype=torch.float64)
    tr = run_trace(model, x)
    ref = reference.block(model.state_dict(), "blocks.0.", tr["embed"], 3, 0.0, 1e-6)
    for ours, theirs in [("blocks.0.ln1", "ln1"), ("blocks.0.attn.pattern", "pattern"),
                         ("blocks.0.attn_out", "attn_out"), ("blocks.0.resid_mid", "resid_mid"),
                         ("blocks.0.mlp.pre", "mlp_pre"), ("blocks.0.mlp_out", "mlp_out"),
                         ("blocks.0.resid_post", "resid_post")]:
        torch.testing.assert_close(tr[ours], ref[theirs], rtol=1e-10, atol=1e-10, msg=ours)


@pytest.mark.parametrize("kind", ["full", "causal", "prefix"])
def test_whole_text_model_equals_float64_equations(kind):
    model = randomised(TEXT).double()
    x = torch.randn(1, 3, 32, 32, dtype=torch.float64)
    ids = torch.tensor([1, 4, 7, 9, 5])
    tr = run_trace(model, x, text_ids=ids, mask=kind)
    outs, logits = reference.forward(model, x, ids, make_mask(kind, 16, 5))
    for layer, out in enumerate(outs):
        torch.testing.assert_close(tr[f"blocks.{layer}.resid_post"], out, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(tr.logits, logits, rtol=1e-10, atol=1e-10)
    assert tr.logits.shape == (5, 11)  # text logits from the text positions only


def test_classifier_logits_equal_float64_equations():
    model = randomised(SMALL).double()
    x = torch.randn(1, 3, 32, 32, dtype=torch.float64)
    _, logits = reference.forward(model, x)
    torch.testing.assert_close(run_trace(model, x).logits, logits, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("kind", ["full", "causal", "prefix"])
def test_attention_equals_torch_sdpa(kind):
    model = randomised(TEXT)
    tr = run_trace(model, torch.randn(1, 3, 32, 32), text_ids=[1, 2, 3, 4], mask=kind)
    for layer in range(TEXT.depth):
        q, k, v = (tr[f"blocks.{layer}.attn.{n}"] for n in "qkv")
        expected = F.scaled_dot_product_attention(q, k, v, attn_mask=make_mask(kind, 16, 4))
        torch.testing.assert_close(tr[f"blocks.{layer}.attn.z"], expected, rtol=1e-5, atol=1e-6)


@pytest.mark.slow  # a ViT-B/16 pass
def test_vit_b16_has_the_notes_shapes():
    tr = run_trace(load_model("vit-b16"), torch.randn(1, 3, 224, 224))
    assert tr["patches"].shape == (196, 768)
    assert tr["patch_embed"].shape == (196, 768)
    assert tr["embed"].shape == (197, 768)
    assert tr["blocks.0.attn.q"].shape == (12, 197, 64)
    assert tr["blocks.11.attn.pattern"].shape == (12, 197, 197)
    assert tr["blocks.5.mlp.pre"].shape == (197, 3072)
    assert tr["ln_final"].shape == (197, 768)
    assert tr.logits.shape == (1000,)
    assert len([n for n in tr if n.startswith("blocks.")]) == 12 * 15


def test_identities_hold_on_a_trace():
    model = randomised(TEXT)
    tr = run_trace(model, torch.randn(1, 3, 32, 32), text_ids=[1, 5, 6], mask="prefix")
    allowed = torch.isfinite(tr.mask)
    x = tr["embed"]
    for layer in range(TEXT.depth):
        pattern = tr[f"blocks.{layer}.attn.pattern"]
        torch.testing.assert_close(pattern.sum(-1), torch.ones(3, 19))
        assert (pattern[:, ~allowed] == 0).all()  # masked entries are exactly zero
        assert (pattern[:, allowed] > 0).all()
        torch.testing.assert_close(tr[f"blocks.{layer}.resid_mid"],
                                   x + tr[f"blocks.{layer}.attn_out"])
        x = tr[f"blocks.{layer}.resid_post"]
        mid, mlp_out = tr[f"blocks.{layer}.resid_mid"], tr[f"blocks.{layer}.mlp_out"]
        torch.testing.assert_close(x, mid + mlp_out)
    W = model.patch_embed.proj.weight.detach()
    b = model.patch_embed.proj.bias.detach()
    torch.testing.assert_close(tr["patches"] @ W.reshape(48, -1).T + b, tr["patch_embed"])


def test_patch_embedding_equals_the_strided_conv():
    model = randomised(SMALL)
    x = torch.randn(1, 3, 32, 32)
    tr = run_trace(model, x)
    conv = F.conv2d(x, model.patch_embed.proj.weight, model.patch_embed.proj.bias, stride=8)
    torch.testing.assert_close(tr["patch_embed"], conv.flatten(2)[0].T, rtol=1e-5, atol=1e-5)


def _permute_patches(x, perm, P):
    """Move the image's patches so that new patch i holds old patch perm[i]."""
    C, H, W = x.shape[1:]
    g = H // P
    tiles = x.reshape(1, C, g, P, g, P).permute(0, 2, 4, 1, 3, 5).reshape(g * g, C, P, P)
    tiles = tiles[perm]
    return tiles.reshape(1, g, g, C, P, P).permute(0, 3, 1, 4, 2, 5).reshape(1, C, H, W)


def test_without_positions_attention_is_permutation_equivariant():
    model = randomised(SMALL)
    x = torch.randn(1, 3, 32, 32)
    perm = torch.randperm(16, generator=torch.Generator().manual_seed(3))
    xp = _permute_patches(x, perm, 8)
    with torch.no_grad():
        model.pos_embed.zero_()
    a, b = run_trace(model, x), run_trace(model, xp)
    out_a, out_b = a["blocks.1.resid_post"], b["blocks.1.resid_post"]
    # (the fused attention kernel sums keys in blocks, so a new key order rounds differently:
    # ~1e-5 on values of ~10; an order-dependent model would differ by whole units)
    torch.testing.assert_close(out_b[1:], out_a[1:][perm], rtol=1e-4, atol=5e-5)  # patches move
    torch.testing.assert_close(out_b[0], out_a[0], rtol=1e-4, atol=5e-5)  # CLS does not change
    torch.testing.assert_close(a.logits, b.logits, rtol=1e-4, atol=5e-5)
    # the same permutation with position embeddings does change the prediction
    model = randomised(SMALL)
    assert not torch.allclose(run_trace(model, x).logits, run_trace(model, xp).logits, atol=1e-3)


def test_two_threads_get_their_own_traces():
    model = randomised(SMALL)
    images = [torch.randn(1, 3, 32, 32) for _ in range(2)]
    alone = [run_trace(model, x) for x in images]
    barrier = threading.Barrier(2)
    results, errors = [[], []], []

    def work(i):
        try:
            for _ in range(30):
                barrier.wait()
                results[i].append(run_trace(model, images[i]))
        except Exception as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i in range(2):
        for tr in results[i]:
            assert tr.names() == alone[i].names()
            for name in tr:
                assert torch.equal(tr[name], alone[i][name]), name


def test_trace_is_read_only_and_lists_names():
    tr = run_trace(randomised(SMALL), torch.randn(1, 3, 32, 32))
    with pytest.raises(TypeError):
        tr["logits"] = torch.zeros(5)
    with pytest.raises(KeyError, match="No tensor named"):
        tr["blocks.9.attn.q"]
    assert tr.names()[:3] == ["patches", "patch_embed", "embed"]
    assert tr.names()[-2:] == ["ln_final", "logits"]
    assert tr.mask_kind == "full" and tr.mask.shape == (17, 17) and (tr.mask == 0).all()


def test_head_mask_switches_heads_off():
    model = randomised(SMALL)
    x = torch.randn(1, 3, 32, 32)
    keep = torch.ones(2, 3)
    keep[0, 1] = 0
    tr = run_trace(model, x, head_mask=keep)
    z = tr["blocks.0.attn.z"].clone()
    W_O, b_O = model.blocks[0].attn.proj.weight.detach(), model.blocks[0].attn.proj.bias.detach()
    z[1] = 0  # the switched-off head contributes nothing to the concatenation
    expected = z.transpose(0, 1).reshape(17, 48) @ W_O.T + b_O
    torch.testing.assert_close(tr["blocks.0.attn_out"], expected, rtol=1e-5, atol=1e-5)


def test_wrong_input_size_is_a_clear_error():
    with pytest.raises(ValueError, match="reads 3x32x32 images"):
        run_trace(randomised(SMALL), torch.randn(1, 3, 64, 64))
