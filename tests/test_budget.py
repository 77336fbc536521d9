"""The explanations' default work by model size (vit_core.explain.budget): which models count as
heavy, the coarse defaults they get, and that the coarse settings still compute what they say
(occlusion by squares of patches against the test's own loop; curves a grid row a step against
the test's own greying)."""

import torch

from vit_core import PRESETS, ViT, load_model, preprocess
from vit_core.explain import attribution, budget, faithfulness, targets
from vit_core.explain.flops import total_flops
from vit_core.scenes import world


def test_heavy_is_a_pass_over_two_gflops():
    assert total_flops(PRESETS["vit-ti16"]) > 2e9 and budget.heavy(PRESETS["vit-ti16"])
    assert budget.heavy(PRESETS["vit-b16"])
    assert not budget.heavy(load_model("shapes-classifier").config)
    b16, small = PRESETS["vit-b16"], load_model("shapes-classifier").config
    assert (budget.ig_steps(b16), budget.occlusion_window(b16), budget.random_seeds(b16)) == \
        (8, 2, 3)
    assert (budget.ig_steps(small), budget.occlusion_window(small), budget.random_seeds(small)) \
        == (32, 1, 5)
    assert budget.curve_k(small) == 1 and budget.curve_k(b16) == 14


def test_windows_tile_the_grid_once():
    for g, w in [(7, 2), (14, 2), (5, 3), (4, 1)]:
        squares = budget.windows(g, w)
        flat = sorted(i for s in squares for i in s)
        assert flat == list(range(g * g))
        for s in squares:  # each square: patches within w rows and w columns of each other
            rows, cols = {i // g for i in s}, {i % g for i in s}
            assert max(rows) - min(rows) < w and max(cols) - min(cols) < w
            assert len(s) == len(rows) * len(cols)


def grey_out(x, config, patches):
    P, g = config.patch_size, config.grid
    grey = ((0.5 - torch.tensor(config.mean)) / torch.tensor(config.std)).view(-1, 1, 1)
    y = x.clone()
    for i in patches:
        r, c = divmod(int(i), g)
        y[0, :, r * P:(r + 1) * P, c * P:(c + 1) * P] = grey
    return y


def test_occlusion_by_squares_equals_the_tests_loop():
    model = load_model("shapes-classifier")
    c = model.config
    x = preprocess(world.make_scene(3).image, c)
    target = targets.predicted(model, x)
    with torch.no_grad():
        full = float(targets.score(model, x, target))
        want = torch.empty(c.num_patches, dtype=torch.float64)
        for r0 in range(0, c.grid, 2):  # the test's own squares of 2 × 2 patches
            for c0 in range(0, c.grid, 2):
                square = [r * c.grid + col for r in range(r0, min(c.grid, r0 + 2))
                          for col in range(c0, min(c.grid, c0 + 2))]
                drop = full - float(targets.score(model, grey_out(x, c, square), target))
                want[square] = drop
    a = attribution.occlusion(model, x, target, window=2)
    assert a.settings["window"] == 2
    torch.testing.assert_close(a.patches.double(), want, rtol=1e-4, atol=1e-4)


def test_a_large_grid_loses_a_row_a_step():
    torch.manual_seed(0)
    model = ViT(PRESETS["vit-ti16"]).eval()  # 14 × 14 patches, random weights
    c = model.config
    x = torch.randn(1, 3, c.img_size, c.img_size)
    target = targets.class_target(model, 3)
    order = torch.randperm(c.num_patches, generator=torch.Generator().manual_seed(1))
    curve = faithfulness.deletion(model, x, target, order)
    assert curve.x.tolist() == [min(s * 14, 196) / 196 for s in range(15)]
    with torch.no_grad():
        want = [float(targets.probability(model, grey_out(x, c, order[:s * 14]), target))
                for s in range(15)]
    torch.testing.assert_close(curve.y.double(), torch.tensor(want, dtype=torch.float64),
                               rtol=1e-4, atol=1e-5)
