"""What a patch becomes when it is taken away (vit_core.explain.baselines), against the test's
own pixel loops and torch's own blur."""

import pytest
import torch

from vit_core import ViTConfig
from vit_core.explain import baselines

C = ViTConfig(img_size=32, patch_size=8, embed_dim=32, depth=1, num_heads=2, num_classes=3,
              mean=(0.4, 0.5, 0.6), std=(0.2, 0.25, 0.3))


def test_black_and_grey_are_those_pixels_normalised():
    x = torch.randn(1, 3, 32, 32)
    for kind, value in (("black", 0.0), ("grey", 0.5)):
        b = baselines.baseline(x, C, kind)
        for ch in range(3):
            want = (value - C.mean[ch]) / C.std[ch]
            assert torch.allclose(b[0, ch], torch.full((32, 32), want))


def test_an_unknown_baseline_says_which_there_are():
    with pytest.raises(ValueError, match="black, grey, blur"):
        baselines.baseline(torch.zeros(1, 3, 32, 32), C, "white")


def test_replacing_patches_takes_exactly_those_patches_from_the_base():
    x, base = torch.randn(1, 3, 32, 32), torch.randn(1, 3, 32, 32)
    chosen = torch.zeros(2, 16, dtype=torch.bool)
    chosen[0, 6] = chosen[1, 1] = chosen[1, 14] = True  # off the diagonal
    out = baselines.replace_patches(x, base, chosen, 8)
    assert out.shape == (2, 3, 32, 32)
    for b in range(2):
        for n in range(16):
            r, c = divmod(n, 4)  # row-major, as patchify orders the patches
            cell = (slice(None), slice(8 * r, 8 * r + 8), slice(8 * c, 8 * c + 8))
            want = base[0][cell] if chosen[b, n] else x[0][cell]
            assert torch.equal(out[b][cell], want), (b, n)


def test_blur_keeps_a_flat_image_and_equals_a_dense_gaussian_inside():
    flat = torch.full((1, 3, 32, 32), 0.7)
    assert torch.allclose(baselines.blur(flat, 2.0), flat, atol=1e-6)
    x = torch.randn(1, 1, 32, 32, dtype=torch.float64)
    out = baselines.blur(x, 1.5)
    t = torch.arange(-4, 5, dtype=torch.float64)  # radius 3 * sigma = 4
    k = torch.exp(-0.5 * (t / 1.5) ** 2)
    k2 = torch.outer(k, k) / k.sum() ** 2
    i, j = 16, 10  # a pixel away from the edges: the plain 2-D sum
    want = (x[0, 0, i - 4:i + 5, j - 4:j + 5] * k2).sum()
    assert out[0, 0, i, j].item() == pytest.approx(want.item(), abs=1e-9)


def test_progress_hears_each_batch_and_can_stop_it():
    heard = []
    baselines.tick(lambda d, t: heard.append((d, t)), 1, 3)
    assert heard == [(1, 3)]

    def stop(done, total):
        raise baselines.Cancelled

    with pytest.raises(baselines.Cancelled):
        baselines.tick(stop, 1, 3)
