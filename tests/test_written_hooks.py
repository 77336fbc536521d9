"""Written hooks (vit_core.run_with_hooks, run_trace(hooks=)) against float64 hand computations.

The reference here is written from the equations with explicit heads (tests/reference.py's
LayerNorm, softmax and GELU), with a place to change Q, K, V, the scores, the pattern or z of a
block as a hook would: it never runs vit_core's modules.
"""

import math
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch

from tests.reference import gelu, layer_norm, softmax
from tests.support import SMALL, randomised
from vit_core import run_trace, run_with_hooks

POINTS = ("q", "k", "v", "scores", "pattern", "z")
ROOT = Path(__file__).resolve().parents[1]


def hand_forward(model, pixels, edits=None, positions=True):
    """Class logits [K] in float64, with edits {(layer, point): fn([H, S, *]) -> [H, S, *]}
    applied where the block forms that point (no batch dimension)."""
    edits = edits or {}
    c = model.config
    sd = {k: v.detach().double() for k, v in model.state_dict().items()}
    P, D, H = c.patch_size, c.embed_dim, c.num_heads
    dk = D // H
    img = pixels[0].double()
    rows = [img[:, i:i + P, j:j + P].reshape(-1) for i in range(0, c.img_size, P)
            for j in range(0, c.img_size, P)]
    X = torch.stack(rows) @ sd["patch_embed.proj.weight"].reshape(D, -1).T
    X = torch.cat([sd["cls_token"][0], X + sd["patch_embed.proj.bias"]])
    if positions:
        X = X + sd["pos_embed"][0]
    for layer in range(c.depth):
        g = {k.split(".", 2)[2]: v for k, v in sd.items() if k.startswith(f"blocks.{layer}.")}

        def at(point, t, layer=layer):
            fn = edits.get((layer, point))
            return t if fn is None else fn(t)

        Xt = layer_norm(X, g["norm1.weight"], g["norm1.bias"], c.norm_eps)
        qkv = Xt @ g["attn.qkv.weight"].T + g["attn.qkv.bias"]  # [S, 3D]
        Q, K, V = (at(n, qkv[:, i * D:(i + 1) * D].reshape(-1, H, dk).transpose(0, 1))
                   for i, n in enumerate("qkv"))  # each [H, S, d_k]
        A = at("pattern", softmax(at("scores", Q @ K.transpose(1, 2) / math.sqrt(dk))))
        Z = at("z", A @ V)  # [H, S, d_k]
        X = X + Z.transpose(0, 1).reshape(-1, D) @ g["attn.proj.weight"].T + g["attn.proj.bias"]
        U = layer_norm(X, g["norm2.weight"], g["norm2.bias"], c.norm_eps)
        X = X + gelu(U @ g["mlp.fc1.weight"].T + g["mlp.fc1.bias"]) @ g["mlp.fc2.weight"].T \
            + g["mlp.fc2.bias"]
    Xf = layer_norm(X, sd["norm.weight"], sd["norm.bias"], c.norm_eps)
    return Xf[0] @ sd["head.weight"].T + sd["head.bias"]


def setup64(seed=0):
    model = randomised(SMALL, seed).double()
    x = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(seed)).double()
    return model, x


def zero_head(head):
    def fn(z, name):  # z [B, H, S, d_k]
        z = z.clone()
        z[:, head] = 0
        return z
    return fn


def test_zeroing_a_heads_z_by_a_hook_is_the_head_switch_and_the_hand_computation():
    model, x = setup64()
    with torch.no_grad():
        hooked = run_with_hooks(model, x, {"blocks.0.attn.z": zero_head(1)})[0]
    keep = torch.ones(2, 3, dtype=torch.float64)
    keep[0, 1] = 0
    switch = run_trace(model, x, head_mask=keep)
    hand = hand_forward(model, x, {(0, "z"): lambda z: torch.cat([z[:1], 0 * z[1:2], z[2:]])})
    torch.testing.assert_close(hooked, hand, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(switch.logits, hand, rtol=1e-10, atol=1e-12)
    assert (switch["blocks.0.attn.z"][1] == 0).all()  # the trace holds the z the model used
    assert not torch.allclose(hand, hand_forward(model, x), atol=1e-6)  # the head mattered


@pytest.mark.parametrize("point", POINTS)
def test_a_written_tensor_gives_the_hand_computed_output(point):
    """Each point of block 1 written with a fixed change; the output is the hand computation's
    with the same change (for q, k, v, scores and the pattern: A and z from the written ones)."""
    model, x = setup64(1)
    H, S = SMALL.num_heads, SMALL.num_image_tokens
    gen = torch.Generator().manual_seed(5)
    if point in ("scores", "pattern"):
        new = torch.rand(H, S, S, generator=gen, dtype=torch.float64)
        if point == "pattern":
            new = new / new.sum(-1, keepdim=True)  # rows sum to 1, unlike softmax's rows
    else:
        new = torch.randn(H, S, SMALL.head_dim, generator=gen, dtype=torch.float64)
    with torch.no_grad():
        got = run_with_hooks(model, x, {f"blocks.1.attn.{point}": lambda t, n: new[None]})[0]
    want = hand_forward(model, x, {(1, point): lambda t: new})
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)
    assert not torch.allclose(want, hand_forward(model, x), atol=1e-6)


def test_a_trace_holds_the_written_pattern_and_the_z_it_gives():
    """float32, as the app runs: z is the written pattern times V, and a lean trace recomputes
    every name with the hooks written, bit for bit as a trace that kept everything."""
    model, x = randomised(SMALL), torch.randn(1, 3, 32, 32)
    uniform = torch.full((1, 3, 17, 17), 1 / 17)
    hooks = {"blocks.0.attn.pattern": lambda a, n: uniform, "blocks.1.attn.z": zero_head(2)}
    lean, full = run_trace(model, x, hooks=hooks), run_trace(model, x, hooks=hooks, lean=False)
    assert torch.equal(lean["blocks.0.attn.pattern"], uniform[0])
    v = lean["blocks.0.attn.v"]
    torch.testing.assert_close(lean["blocks.0.attn.z"], v.mean(1, keepdim=True).expand_as(v))
    for name in full.names():
        assert torch.equal(lean[name], full[name]), name


def test_a_wrong_shape_raises_one_sentence_naming_the_hook_and_both_shapes():
    model, x = randomised(SMALL), torch.randn(1, 3, 32, 32)
    with pytest.raises(ValueError) as err:
        run_with_hooks(model, x, {"blocks.1.attn.z": lambda z, n: z[:, :2]})
    msg = str(err.value)
    assert "'blocks.1.attn.z'" in msg and "(1, 2, 17, 16)" in msg and "(1, 3, 17, 16)" in msg
    assert msg.count(". ") == 0 and msg.endswith(".")
    with pytest.raises(ValueError, match="no hook point named 'blocks.7.attn.z'"):
        run_trace(model, x, hooks={"blocks.7.attn.z": zero_head(0)})
    with pytest.raises(TypeError, match="'embed' returned a float"):
        run_with_hooks(model, x, {"embed": lambda t, n: 1.0})


def test_reading_hooks_and_no_hooks_leave_the_pass_as_it_was():
    """A hook that returns None keeps the tensor. Outside attention the pass is bit for bit the
    plain one (the fused kernel kept); a hook inside attention computes z as A V instead, the
    same numbers up to float32 rounding."""
    model, x = randomised(SMALL), torch.randn(1, 3, 32, 32)
    seen = []
    outside = {n: lambda t, n: seen.append(n) for n in ("embed", "blocks.0.attn.z",
                                                        "blocks.1.mlp.post", "logits")}
    inside = {f"blocks.{i}.attn.{p}": lambda t, n: seen.append(n) for i in (0, 1) for p in POINTS}
    with torch.no_grad():
        plain = model(x)
        assert torch.equal(run_with_hooks(model, x, {}), plain)
        assert torch.equal(run_with_hooks(model, x, outside), plain)
        seen.clear()
        torch.testing.assert_close(run_with_hooks(model, x, inside), plain, rtol=1e-5, atol=1e-6)
    assert seen[:6] == [f"blocks.0.attn.{p}" for p in POINTS]


def test_gradients_through_identity_hooks_equal_autograd_on_the_plain_forward():
    model, x = setup64(2)
    x.requires_grad_(True)
    model(x)[0, 3].backward()
    plain_x = x.grad.clone()
    plain_w = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    x.grad = None
    model.zero_grad(set_to_none=True)
    kept = {}

    def keep(t, name):  # an identity write that also keeps the tensor for its gradient
        t = t * 1.0
        t.retain_grad()
        kept[name] = t
        return t

    hooks = {"blocks.0.attn.pattern": keep, "blocks.1.attn.q": keep, "blocks.1.resid_post": keep,
             "embed": keep}
    run_with_hooks(model, x, hooks)[0, 3].backward()
    torch.testing.assert_close(x.grad, plain_x, rtol=1e-9, atol=1e-12)
    for name, p in model.named_parameters():
        if name in plain_w:
            torch.testing.assert_close(p.grad, plain_w[name], rtol=1e-9, atol=1e-12)
    # the gradient at the last block's output, against autograd on LN_f and the head alone
    last = kept["blocks.1.resid_post"].detach().clone().requires_grad_(True)
    model.head(model.norm(last)[:, 0])[0, 3].backward()
    torch.testing.assert_close(kept["blocks.1.resid_post"].grad, last.grad, rtol=1e-9, atol=1e-12)


def test_threads_with_different_hooks_on_one_model_each_get_their_own():
    model, x = randomised(SMALL), torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        want = {h: run_with_hooks(model, x, {"blocks.0.attn.z": zero_head(h)}) for h in range(3)}
    got, start = {h: [] for h in range(3)}, threading.Barrier(3)

    def work(h):
        start.wait()
        with torch.no_grad():
            for _ in range(20):
                got[h].append(run_with_hooks(model, x, {"blocks.0.attn.z": zero_head(h)}))

    threads = [threading.Thread(target=work, args=(h,)) for h in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for h in range(3):
        assert all(torch.equal(out, want[h]) for out in got[h]), h


def test_an_activation_patched_in_from_another_image_carries_that_images_output():
    """Everything after `embed` is computed from it: patching image b's embed into image a's
    pass gives b's logits, bit for bit; patching one block's z gives neither."""
    model = randomised(SMALL)
    a, b = torch.randn(1, 3, 32, 32), torch.randn(1, 3, 32, 32)
    tb = run_trace(model, b)
    with torch.no_grad():
        patched = run_with_hooks(model, a, {"embed": lambda t, n: tb[n][None]})[0]
        mixed = run_with_hooks(model, a, {"blocks.0.attn.z": lambda t, n: tb[n][None]})[0]
    assert torch.equal(patched, tb.logits)
    assert not torch.allclose(mixed, tb.logits) and not torch.allclose(mixed, model(a)[0])


def test_positions_left_out_by_hooks_are_the_hand_computation_without_them():
    model, x = setup64(3)
    tr = run_trace(model, x, positions=False)
    torch.testing.assert_close(tr.logits, hand_forward(model, x, positions=False),
                               rtol=1e-10, atol=1e-12)
    assert torch.equal(tr["embed"][1:], tr["patch_embed"])  # nothing added to the patches


@pytest.mark.slow  # a fresh interpreter loading the bundled classifier
def test_the_library_docs_hooks_example_runs_and_prints_what_it_says():
    text = (ROOT / "docs" / "library.md").read_text()
    section = text.split("## Written hooks", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"^```python\n(.*?)^```", section, re.S | re.M).group(1)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[:2] == ["True 0.0", "torch.Size([1, 3, 224, 224])"]
