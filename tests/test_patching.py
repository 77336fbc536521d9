"""Activation patching (vit_core.explain.patching) against the test's own forward passes: a
block loop written here from model.blocks with one activation swapped, autograd on that loop,
a single-hook run per head, and numpy's correlations."""

import numpy as np
import pytest
import torch
from torch import nn

from vit_core import ViT, ViTConfig, load_model, preprocess, run_trace, run_with_hooks
from vit_core.explain import baselines, patching, targets
from vit_core.masks import resolve


@pytest.fixture(autouse=True)
def one_thread():
    """These models are tiny: one torch thread is faster than two waiting on each other (on a
    busy machine a 2-thread pass here took 0.6 s, a 1-thread one 0.5 ms)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def tiny(text: bool = False) -> ViT:
    """A small random ViT in float64 with weights large enough for the corruption to matter."""
    torch.manual_seed(1)
    extra = (dict(num_classes=0, vocab_size=9, max_text_len=5, default_mask="causal")
             if text else dict(num_classes=5))
    m = ViT(ViTConfig(img_size=32, patch_size=8, embed_dim=32, depth=3, num_heads=4, **extra))
    for p in m.parameters():
        if p.dim() > 1:
            nn.init.normal_(p, std=0.25)
    return m.double().eval()


def images(m, seed=0):
    g = torch.Generator().manual_seed(seed)
    clean = torch.randn(1, 3, 32, 32, generator=g, dtype=torch.float64)
    return clean, patching.corrupt(clean, m.config, "grey")


WORD = targets.Target(3, ids=(1, 4, 7, 2, 5))  # the third word, fed [SOS] + two words


def target_of(m):
    return WORD if m.config.has_text else targets.Target(2)


def by_hand(m, pixels, target, swap=None):
    """The score from a block loop written here: (score, [resid_pre of each block]); `swap` =
    (block, token, value) puts `value` at that token of that block's input first."""
    ids = torch.tensor([target.ids[:target.index]]) if target.is_word else None
    mask = resolve(m.config, None, 0 if ids is None else ids.shape[1])  # the model's own
    mask = None if mask is None else mask.to(pixels.dtype)  # as forward does (SDPA needs it)
    x, inputs = m.embed(pixels, ids), []
    for layer, block in enumerate(m.blocks):
        if swap is not None and swap[0] == layer:
            x = x.clone()
            x[0, swap[1]] = swap[2]
        inputs.append(x)
        x = block(x, mask)
    x = m.norm(x)
    if target.is_word:
        logits = x[0, m.config.num_image_tokens:] @ m.text_embed.weight.T  # tied head
        return logits[-1].log_softmax(-1)[target.ids[target.index]], inputs
    return m.head(x[0, 0])[target.index], inputs


@pytest.mark.parametrize("text", [False, True], ids=["class", "word"])
def test_each_token_grid_cell_is_the_hand_forward_with_that_token_swapped(text):
    m = tiny(text)
    clean, bad = images(m)
    t = target_of(m)
    cols = patching.positions(m, t, text=True)
    got = patching.patch_tokens(m, clean, bad, t, tokens=cols, batch_size=7)
    with torch.no_grad():
        s_clean, clean_in = by_hand(m, clean, t)
        s_bad, _ = by_hand(m, bad, t)
        want = torch.zeros(m.config.depth, len(cols), dtype=torch.float64)
        for layer in range(m.config.depth):
            for j, tok in enumerate(cols):
                s, _ = by_hand(m, bad, t, (layer, tok, clean_in[layer][0, tok]))
                want[layer, j] = (s - s_bad) / (s_clean - s_bad)
    assert got.grid.shape == want.shape and got.columns == cols
    assert got.clean == pytest.approx(float(s_clean)) and got.corrupt == pytest.approx(float(s_bad))
    assert torch.allclose(got.grid.double(), want, atol=1e-5), (got.grid - want).abs().max()
    assert want[0, 0] == 0  # [CLS] enters block 0 the same for both images


def test_patching_every_token_at_a_block_restores_all_and_none_restores_nothing():
    for text in (False, True):
        m = tiny(text)
        clean, bad = images(m, seed=2)
        t = target_of(m)
        every = patching.positions(m, t, text=True)
        for layer in range(m.config.depth):
            share = patching.restore(m, clean, bad, t, {layer: every})
            assert share == pytest.approx(1.0, abs=1e-6), (text, layer)
        assert patching.restore(m, clean, bad, t, {}) == pytest.approx(0.0, abs=1e-9)


def test_attribution_patching_is_the_gradient_times_the_difference():
    for text in (False, True):
        m = tiny(text)
        clean, bad = images(m, seed=3)
        t = target_of(m)
        cols = patching.positions(m, t, text=True)
        got = patching.attribute_tokens(m, clean, bad, t, tokens=cols)
        with torch.no_grad():
            s_clean, clean_in = by_hand(m, clean, t)
        s_bad, bad_in = by_hand(m, bad, t)
        grads = torch.autograd.grad(s_bad, bad_in)
        want = torch.stack([(g[0] * (c[0] - b[0].detach())).sum(-1)[list(cols)]
                            for g, c, b in zip(grads, clean_in, bad_in, strict=True)])
        want = want / (s_clean - s_bad.detach())
        assert torch.allclose(got.grid.double(), want, atol=1e-6), (got.grid - want).abs().max()


def clean_z(m, clean, t):
    ids = torch.tensor([t.ids[:t.index]]) if t.is_word else None
    tr = run_trace(m, clean, text_ids=ids) if ids is not None else run_trace(m, clean)
    return [tr[f"blocks.{layer}.attn.z"] for layer in range(m.config.depth)]  # [H, S, d_k]


def test_each_head_cell_is_a_run_with_that_heads_z_written():
    m = tiny(text=True)
    clean, bad = images(m, seed=4)
    got = patching.patch_heads(m, clean, bad, WORD, batch_size=5)
    zs = clean_z(m, clean, WORD)
    with torch.no_grad():
        s_clean = targets.score(m, clean, WORD)[0]
        s_bad = targets.score(m, bad, WORD)[0]
        for layer in range(m.config.depth):
            for h in range(m.config.num_heads):
                def put(z, name, layer=layer, h=h):
                    z = z.clone()
                    z[0, h] = zs[layer][h]
                    return z
                s = targets.score(m, bad, WORD, hooks={f"blocks.{layer}.attn.z": put})[0]
                want = (s - s_bad) / (s_clean - s_bad)
                assert float(got.grid[layer, h]) == pytest.approx(float(want), abs=1e-6)


def test_attribution_per_head_is_the_gradient_times_the_difference():
    m = tiny()
    clean, bad = images(m, seed=5)
    t = target_of(m)
    got = patching.attribute_heads(m, clean, bad, t)
    zs = clean_z(m, clean, t)
    held = []
    keep = {f"blocks.{layer}.attn.z": lambda z, name: held.append(z) for layer in range(3)}
    s_bad = run_with_hooks(m, bad, keep)[0, t.index]
    grads = torch.autograd.grad(s_bad, held)
    with torch.no_grad():
        s_clean = m(clean)[0, t.index]
    want = torch.stack([(g[0] * (c - z[0].detach())).sum((1, 2))
                        for g, c, z in zip(grads, zs, held, strict=True)])
    want = want / (s_clean - s_bad.detach())
    assert torch.allclose(got.grid.double(), want, atol=1e-6)


def test_cancelling_stops_between_batches():
    m = tiny()
    clean, bad = images(m)
    calls = []

    def stop(done, total):
        calls.append((done, total))
        raise baselines.Cancelled

    with pytest.raises(baselines.Cancelled):
        patching.patch_tokens(m, clean, bad, target_of(m), batch_size=10, progress=stop)
    assert calls == [(1, 6)]  # 3 blocks x 17 tokens = 51 sites in batches of 10


def test_a_corruption_that_changes_nothing_says_so():
    m = tiny()
    clean, _ = images(m)
    with pytest.raises(ValueError, match="corruption does not change the answer"):
        patching.patch_tokens(m, clean, clean.clone(), target_of(m))


def test_corruptions_replace_the_named_patches_or_every_patch():
    m = tiny()
    clean, other = images(m)[0], torch.randn(1, 3, 32, 32, dtype=torch.float64)
    grey = baselines.baseline(clean, m.config, "grey")
    one = patching.corrupt(clean, m.config, "grey", patches=[6])  # row 1, column 2
    changed = (one != clean).any(1)[0]
    assert changed[8:16, 16:24].all() and changed.sum() == 64
    assert torch.equal(one[..., 8:16, 16:24], grey[..., 8:16, 16:24])
    assert torch.equal(patching.corrupt(clean, m.config, "other", other=other), other)
    assert torch.equal(patching.corrupt(clean, m.config, "blur"),
                       baselines.blur(clean, float(m.config.patch_size)))
    with pytest.raises(ValueError, match="needs the other image"):
        patching.corrupt(clean, m.config, "other")
    with pytest.raises(ValueError, match="from 0 to 15 on this model; got \\[16\\]"):
        patching.corrupt(clean, m.config, "grey", patches=[3, 16])


def test_agreement_is_numpys_correlation_and_the_top_cells_shared():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(4, 9, generator=g), torch.randn(4, 9, generator=g)
    grid = lambda x: patching.Patching(x, "resid_pre", tuple(range(9)), 1.0, 0.0, "exact", 0.0)
    got = patching.agreement(grid(a), grid(a + 0.5 * b))
    x, y = a.flatten().numpy(), (a + 0.5 * b).flatten().numpy()
    assert got.pearson == pytest.approx(np.corrcoef(x, y)[0, 1], abs=1e-6)
    rank = lambda v: np.argsort(np.argsort(v))
    assert got.spearman == pytest.approx(np.corrcoef(rank(x), rank(y))[0, 1], abs=1e-6)
    top = lambda v: set(np.argsort(-np.abs(v))[:5])
    assert got.top_overlap == len(top(x) & top(y)) / 5


@pytest.mark.slow
def test_the_bundled_captioners_word_is_restored_by_its_image_and_text_tokens():
    from vit_core.scenes import world

    m = load_model("shapes-captioner-causal")
    clean = preprocess(world.make_scene(3).image, m.config)
    bad = patching.corrupt(clean, m.config, "other",
                           other=preprocess(world.make_scene(11).image, m.config))
    words = targets.word_targets(m, clean)
    with torch.no_grad():
        t = max(words, key=lambda w: abs(float(targets.score(m, clean, w)
                                                 - targets.score(m, bad, w))))
    image = patching.positions(m, t)
    both = patching.positions(m, t, text=True)
    assert patching.restore(m, clean, bad, t, {0: image}) == pytest.approx(1.0, abs=1e-4)
    assert patching.restore(m, clean, bad, t, {4: both}) == pytest.approx(1.0, abs=1e-4)
    grid = patching.patch_tokens(m, clean, bad, t)
    assert grid.grid.shape == (6, 50) and float(grid.grid[0, 0]) == pytest.approx(0, abs=1e-6)


@pytest.mark.slow  # a fresh interpreter loading the bundled classifier
def test_the_library_docs_patching_example_runs_and_prints_what_it_says():
    import re
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    text = (root / "docs" / "library.md").read_text()
    section = text.split("## Where is the answer formed? Activation patching", 1)[1]
    code = re.search(r"^```python\n(.*?)^```", section, re.S | re.M).group(1)
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[:2] == ["(6, 50) (6, 4)", "1.0"], out.stdout
