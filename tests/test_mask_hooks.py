"""Another attention mask than the model's own, and local windows, as written hooks
(vit_core.hooked.mask_hooks): `ViT.forward` adds only the model's own mask, and the hooks give
what adding the other mask in every block gives (the old path, run here block by block) and what
a float64 computation from the equations gives (tests/reference.py)."""

from __future__ import annotations

import threading

import pytest
import torch

from tests import reference
from tests.support import SMALL, TEXT, randomised
from vit_core import make_mask, run_trace, run_with_hooks
from vit_core.hooked import mask_hooks, window_hooks
from vit_core.hooks import capture, writing
from vit_core.masks import window_masks

GRID = SMALL.replace(img_size=32, patch_size=4, depth=3)  # an 8 x 8 grid: windows mean something
IDS = torch.tensor([[1, 4, 7, 9]])


def setup(config, seed=0, dtype=torch.float32):
    model = randomised(config, seed).to(dtype)
    x = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(seed)).to(dtype)
    return model, x


def block_by_block(model, x, masks, ids=None):
    """The old path: the additive mask masks[l] added inside block l's attention (the fused
    kernel), by calling the model's own modules one by one."""
    with torch.no_grad():
        h = model.embed(x, ids)
        for layer, block in enumerate(model.blocks):
            h = block(h, masks[layer].to(h.dtype))
        h = model.norm(h)
        if ids is None:
            return model.classify(h)
        return h[:, model.config.num_image_tokens:] @ model.text_embed.weight.T


def hand(model, x, masks, ids=None):
    """float64 from the equations (tests/reference.py): block l adds masks[l]."""
    c = model.config
    sd = {k: v.detach().double() for k, v in model.state_dict().items()}
    with torch.no_grad():
        Z = model.embed(x, ids)[0].double()  # block 0's input: no mask involved yet
    for layer in range(c.depth):
        Z = reference.block(sd, f"blocks.{layer}.", Z, c.num_heads, masks[layer].double(),
                            c.norm_eps)["resid_post"]
    Xf = reference.layer_norm(Z, sd["norm.weight"], sd["norm.bias"], c.norm_eps)
    if ids is None:
        return Xf[0] @ sd["head.weight"].T + sd["head.bias"]
    return Xf[c.num_image_tokens:] @ sd["text_embed.weight"].T


def test_a_changed_mask_by_hooks_is_the_old_path_and_the_hand_computation():
    model, x = setup(SMALL)
    S = SMALL.num_image_tokens
    causal = [make_mask("causal", S)] * SMALL.depth
    with torch.no_grad():
        hooked = model(x, mask="causal")
        plain = model(x)
    assert (hooked - block_by_block(model, x, causal)).abs().max() < 1e-5
    assert (hooked - plain).abs().max() > 1e-3  # the mask changed something
    assert run_trace(model, x, mask="causal").mask_kind == "causal"
    model64, x64 = setup(SMALL, dtype=torch.float64)
    with torch.no_grad():
        got = model64(x64, mask="causal")[0]
    assert (got - hand(model64, x64, causal)).abs().max() < 1e-10


def test_the_hooks_are_what_forward_runs_for_a_changed_mask():
    """forward itself adds only the model's own mask: the same pass with the hooks installed by
    hand and no mask gives the same logits, bit for bit; the model's own mask needs no hook."""
    model, x = setup(TEXT)
    first, last = mask_hooks(model, "causal", n_text=IDS.shape[1])
    assert set(first) == {f"blocks.{i}.attn.scores" for i in range(TEXT.depth)}
    with torch.no_grad():
        by_name = model(x, IDS, mask="causal")
        by_hand = run_with_hooks(model, x, {**first, **last}, IDS)
    assert torch.equal(by_name, by_hand)
    assert mask_hooks(model, "prefix", IDS.shape[1]) == ({}, {})  # its own
    assert mask_hooks(model, None) == ({}, {})
    own = [make_mask("prefix", TEXT.num_image_tokens, IDS.shape[1])] * TEXT.depth
    causal = [make_mask("causal", TEXT.num_image_tokens, IDS.shape[1])] * TEXT.depth
    with torch.no_grad():
        assert (model(x, IDS) - block_by_block(model, x, own, IDS)).abs().max() < 1e-5
        assert (by_name - block_by_block(model, x, causal, IDS)).abs().max() < 1e-5
        assert (by_name - model(x, IDS)).abs().max() > 1e-4


def test_a_hook_on_the_scores_reads_the_changed_mask():
    model, x = setup(SMALL)
    seen = {}

    def look(scores, name):
        seen[name] = scores.clone()

    with torch.no_grad():
        run_with_hooks(model, x, {"blocks.1.attn.scores": look}, mask="causal")
    upper = torch.ones(SMALL.num_image_tokens, SMALL.num_image_tokens).triu(1).bool()
    assert torch.isinf(seen["blocks.1.attn.scores"][0, :, upper]).all()
    assert torch.isfinite(seen["blocks.1.attn.scores"][0, :, ~upper]).all()


@pytest.mark.parametrize("size,shifted", [(2, True), (3, False)])
def test_windows_by_hooks_are_the_old_output_and_the_hand_computation(size, shifted):
    name = f"window:{size}" + (":shifted" if shifted else "")
    model, x = setup(GRID)
    masks = window_masks(GRID, name)  # (L, S, S)
    first, last = window_hooks(model, size, shifted)
    with torch.no_grad():
        old = block_by_block(model, x, masks)
        assert (model(x, mask=name) - old).abs().max() < 1e-5
        assert (run_with_hooks(model, x, {**first, **last}) - old).abs().max() < 1e-5
        assert (model(x) - old).abs().max() > 1e-3
    tr = run_trace(model, x, mask=name)  # lean: block 1 recomputed under the hooks
    assert (tr.logits - old[0]).abs().max() < 1e-5
    assert tr.mask.shape == masks.shape and tr.mask_kind == name
    assert torch.isinf(tr["blocks.1.attn.scores"][:, masks[1] < 0]).all()
    model64, x64 = setup(GRID, dtype=torch.float64)
    with torch.no_grad():
        assert (model64(x64, mask=name)[0] - hand(model64, x64, masks)).abs().max() < 1e-10


def test_gradients_flow_through_the_mask_hooks():
    model, x = setup(SMALL, dtype=torch.float64)
    ahead = make_mask("causal", SMALL.num_image_tokens).double().T  # query i sees keys j >= i
    a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
    model(a, mask=ahead)[0, 2].backward()  # CLS (query 0) sees every key: pixels matter
    h = model.embed(b)
    for block in model.blocks:
        h = block(h, ahead)
    model.classify(model.norm(h))[0, 2].backward()
    assert torch.allclose(a.grad, b.grad, atol=1e-10) and a.grad.abs().sum() > 0


def test_threads_with_different_masks_on_one_model_never_mix():
    model, x = setup(SMALL)
    with torch.no_grad():
        want = {k: model(x, mask=k) for k in ("full", "causal")}
    got, errors = {}, []

    def run(kind):
        try:
            for _ in range(20):
                with torch.no_grad():
                    out = model(x, mask=kind)
                assert torch.equal(out, want[kind]), kind
            got[kind] = True
        except AssertionError as e:  # pragma: no cover - the failure is reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in ("full", "causal")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and got == {"full": True, "causal": True}


def test_a_mask_of_the_wrong_size_says_so():
    model, x = setup(SMALL)
    with pytest.raises(ValueError, match=r"A mask for 17 tokens is \[S, S\]"):
        model(x, mask=torch.zeros(5, 5))
    with writing({}), capture():
        with pytest.raises(ValueError, match="one \\[S, S\\] mask per block"):
            model(x, mask=torch.zeros(4, 17, 17))
