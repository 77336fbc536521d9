"""Is the map faithful? (vit_core.explain.faithfulness): deletion / insertion curves against the
test's own loops of single passes that grey patches pixel by pixel, random orders against the
test's own mean, and the sanity check's rank correlation against the test's own Spearman.

The maps are the test's own (the attribution package is not needed): gradient × input summed
per patch, a map with ties, and one that reports a completeness gap."""

import math
import re
import statistics
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from vit_core import ViT, ViTConfig, load_model, preprocess
from vit_core.explain import baselines, targets
from vit_core.explain import faithfulness as F
from vit_core.explain import faithfulness_sanity as S
from vit_core.scenes import world

MEAN, STD = (0.4, 0.5, 0.6), (0.2, 0.25, 0.3)


def tiny(depth=3):
    torch.manual_seed(0)
    c = ViTConfig(img_size=32, patch_size=8, embed_dim=32, depth=depth, num_heads=2,
                  num_classes=5, mean=MEAN, std=STD)
    return ViT(c).eval()


def image(seed=1):
    return torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(seed))


def grad_times_input(model, pixels, target, *, mask=None, progress=None):
    """The test's map: gradient × input of the target's score, summed over each patch."""
    x = pixels.detach().clone().requires_grad_(True)
    targets.score(model, x, target, mask=mask).sum().backward()
    g, P = model.config.grid, model.config.patch_size
    per_pixel = (x.grad * x).sum(1)[0]  # [H, W]
    return SimpleNamespace(patches=per_pixel.reshape(g, P, g, P).sum((1, 3)).flatten().detach(),
                           completeness_gap=None)


def coarse(model, pixels, target, *, mask=None, progress=None):
    """Gradient × input rounded to one digit of its largest value: a map with ties."""
    v = grad_times_input(model, pixels, target).patches
    return SimpleNamespace(patches=torch.round(v / v.abs().max() * 3), completeness_gap=0.25)


# ---- the test's own references ----

def own_probability(model, x, target):
    with torch.no_grad():
        if target.is_word:
            fed = torch.tensor([target.ids[:target.index]])
            return float(model(x, text_ids=fed)[0, -1].softmax(-1)[target.ids[target.index]])
        return float(model(x)[0].softmax(-1)[target.index])


def own_curve(model, pixels, target, order, k, kind):
    """One single pass per step; patches copied pixel block by pixel block."""
    c = model.config
    P, g, N = c.patch_size, c.grid, c.num_patches
    grey = torch.empty_like(pixels)
    for ch in range(3):
        grey[:, ch] = (0.5 - c.mean[ch]) / c.std[ch]
    start, source = (pixels, grey) if kind == "deletion" else (grey, pixels)
    xs, ys, step = [], [], 0
    while True:
        n = min(step * k, N)
        x = start.clone()
        for patch in [int(i) for i in order[:n]]:
            r, col = divmod(patch, g)
            x[:, :, r * P:(r + 1) * P, col * P:(col + 1) * P] = \
                source[:, :, r * P:(r + 1) * P, col * P:(col + 1) * P]
        xs.append(n / N)
        ys.append(own_probability(model, x, target))
        if n == N:
            return xs, ys
        step += 1


def own_trapezoid(xs, ys):
    return sum((xs[i + 1] - xs[i]) * (ys[i] + ys[i + 1]) / 2 for i in range(len(xs) - 1))


def own_ranks(values):
    """Average ranks by counting: rank = 1 + #smaller + (#equal - 1) / 2."""
    v = [float(a) for a in values]
    return [1 + sum(b < a for b in v) + (sum(b == a for b in v) - 1) / 2 for a in v]


def own_spearman(a, b):
    ra, rb = own_ranks(a), own_ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb, strict=True))
    return cov / math.sqrt(sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb))


def permutation(n, seed):
    return torch.randperm(n, generator=torch.Generator().manual_seed(seed))


# ---- curves ----

@pytest.mark.parametrize("kind, k, batch", [("deletion", 3, 4), ("insertion", 2, 5)])
def test_a_curve_is_the_tests_own_loop_of_greyed_patches(kind, k, batch):
    m, x = tiny(), image()
    t = targets.predicted(m, x)
    order = F.order_of(grad_times_input(m, x, t).patches)
    curve = getattr(F, kind)(m, x, t, order, k=k, batch_size=batch)
    xs, ys = own_curve(m, x, t, order, k, kind)
    assert curve.kind == kind and torch.equal(curve.order, order)
    assert curve.x.tolist() == pytest.approx(xs, abs=0) and xs[-1] == 1.0
    assert curve.y.tolist() == pytest.approx(ys, abs=1e-6)
    assert curve.auc == pytest.approx(own_trapezoid(xs, ys), abs=1e-6)


def test_order_is_descending_with_ties_in_patch_order():
    assert F.order_of(torch.tensor([1.0, 3.0, 3.0, 0.0, 3.0, -2.0])).tolist() == [1, 2, 4, 0, 3, 5]
    assert F.order_of(torch.zeros(5)).tolist() == [0, 1, 2, 3, 4]


def test_an_order_that_is_not_each_patch_once_says_so():
    m, x = tiny(), image()
    with pytest.raises(ValueError, match="each of the 16 patches once"):
        F.deletion(m, x, targets.predicted(m, x), [0, 0, *range(2, 16)])


def test_random_orders_mean_and_spread_are_the_tests_own():
    m, x = tiny(), image()
    t = targets.predicted(m, x)
    r = F.random_curves(m, x, t, "deletion", seeds=range(4), k=4, batch_size=3)
    own = [own_curve(m, x, t, permutation(16, s), 4, "deletion") for s in range(4)]
    for step in range(len(own[0][1])):
        at = [ys[step] for _, ys in own]
        assert float(r.mean[step]) == pytest.approx(statistics.fmean(at), abs=1e-6)
        assert float(r.std[step]) == pytest.approx(statistics.pstdev(at), abs=1e-6)
    aucs = [own_trapezoid(xs, ys) for xs, ys in own]
    assert r.auc_mean == pytest.approx(statistics.fmean(aucs), abs=1e-6)
    assert r.auc_std == pytest.approx(statistics.pstdev(aucs), abs=1e-6)
    assert r.seeds == (0, 1, 2, 3) and len(r.curves) == 4


def test_cancelling_stops_between_batches_and_runs_nothing_after():
    m, x = tiny(), image()
    t = targets.predicted(m, x)
    passes, heard = [], []
    m.register_forward_hook(lambda *_: passes.append(1))

    def stop_at_second(done, total):
        heard.append((done, total))
        if done == 2:
            raise baselines.Cancelled

    with pytest.raises(baselines.Cancelled):
        F.deletion(m, x, t, range(16), k=1, batch_size=5, progress=stop_at_second)  # 4 batches
    assert heard == [(1, 4), (2, 4)] and len(passes) == 2
    at_stop = []
    passes.clear()

    def stop_third(done, total):  # the map's end (1 pass), then the deletion's batches
        at_stop.append(len(passes))
        if len(at_stop) == 3:
            raise baselines.Cancelled

    with pytest.raises(baselines.Cancelled):
        F.table(m, x, t, {"gxi": grad_times_input}, k=4, batch_size=2, progress=stop_third)
    assert at_stop == [1, 2, 3] and len(passes) == 3  # nothing after the stop


# ---- the sanity check ----

def test_spearman_averages_tied_ranks_as_the_test_does():
    a = torch.tensor([3.0, 1.0, 1.0, 2.0, 5.0, 5.0, 5.0, 0.0])
    b = torch.tensor([1.0, 2.0, 0.0, 2.0, 7.0, 3.0, 3.0, 1.0])
    assert S.ranks(a).tolist() == own_ranks(a)
    assert S.spearman(a, b) == pytest.approx(own_spearman(a, b), abs=1e-12)
    assert math.isnan(S.spearman(a, torch.ones(8)))


def test_randomised_copy_resets_the_top_blocks_and_leaves_the_callers_model():
    m = tiny()
    before = {k: v.clone() for k, v in m.state_dict().items()}
    rng = torch.get_rng_state()
    one = S.randomised_copy(m, 1, seed=3).state_dict()
    two = S.randomised_copy(m, 2, seed=3).state_dict()
    assert torch.equal(torch.get_rng_state(), rng)
    assert all(torch.equal(v, m.state_dict()[k]) for k, v in before.items())
    for k, v in before.items():
        changed = not torch.equal(one[k], v)
        top = k.startswith(("blocks.2.", "head.", "norm."))
        if k.endswith("weight") and "norm" not in k:  # LayerNorms start at ones, as trained
            assert changed == top, k
        elif not top:
            assert not changed, k
        if k.startswith(("blocks.2.", "head.")):  # the cascade is nested: same values again
            assert torch.equal(two[k], one[k]), k
    assert not torch.equal(two["blocks.1.mlp.fc1.weight"], before["blocks.1.mlp.fc1.weight"])
    assert torch.equal(two["blocks.0.attn.qkv.weight"], before["blocks.0.attn.qkv.weight"])
    untouched = S.randomised_copy(m, 0, head=False).state_dict()
    assert all(torch.equal(untouched[k], v) for k, v in before.items())


def test_sanity_correlation_is_the_tests_own_spearman_on_the_two_maps():
    m, x = tiny(), image()
    t = targets.predicted(m, x)
    before = {k: v.clone() for k, v in m.state_dict().items()}
    s = S.sanity_check(m, x, t, coarse, seed=7)
    assert all(torch.equal(v, m.state_dict()[k]) for k, v in before.items())
    assert s.depth == 3 and s.head
    assert torch.equal(s.trained, coarse(m, x, t).patches)
    assert torch.equal(s.randomised, coarse(S.randomised_copy(m, seed=7), x, t).patches)
    assert len(set(s.trained.tolist())) < 16  # ties, so average ranks matter
    assert s.rho == pytest.approx(own_spearman(s.trained, s.randomised), abs=1e-12)
    steps = S.cascade(m, x, t, coarse, seed=7)
    assert [c.depth for c in steps] == [0, 1, 2, 3]
    assert steps[-1].rho == pytest.approx(s.rho, abs=1e-12)


# ---- the table ----

def test_the_table_has_each_method_and_random_with_the_tests_own_numbers():
    m, x = tiny(), image()
    t = targets.predicted(m, x)
    heard = []
    rows = F.table(m, x, t, {"gxi": grad_times_input, "coarse": coarse}, k=4, seeds=3, batch_size=2,
                   progress=lambda done, total: heard.append((done, total)))
    assert {total for _, total in heard} == {700}  # 2 methods x 3 stages + random, in 100ths
    assert [d for d, _ in heard] == sorted(d for d, _ in heard) and heard[-1] == (700, 700)
    assert [r.method for r in rows] == ["gxi", "coarse", "random"]
    gxi, tied, rand = rows
    order = F.order_of(grad_times_input(m, x, t).patches)
    for kind, auc in (("deletion", gxi.deletion_auc), ("insertion", gxi.insertion_auc)):
        assert auc == pytest.approx(own_trapezoid(*own_curve(m, x, t, order, 4, kind)), abs=1e-6)
    twin = S.randomised_copy(m, seed=0)
    own = own_spearman(coarse(m, x, t).patches, coarse(twin, x, t).patches)
    assert tied.sanity == pytest.approx(own, abs=1e-12)
    gaps = (gxi.completeness_gap, tied.completeness_gap, rand.completeness_gap)
    assert gaps == (None, 0.25, None)
    aucs = [own_trapezoid(*own_curve(m, x, t, permutation(16, s), 4, "insertion"))
            for s in range(3)]
    assert rand.insertion_auc == pytest.approx(statistics.fmean(aucs), abs=1e-6)
    assert rand.insertion_spread == pytest.approx(statistics.pstdev(aucs), abs=1e-6)
    assert rand.sanity is None and gxi.deletion_spread is None
    assert all(r.seconds > 0 for r in rows)


def test_a_captioners_word_is_read_as_generated_at_each_step():
    m = load_model("shapes-captioner-causal")
    x = preprocess(world.make_scene(5).image, m.config)
    word = targets.word_targets(m, x)[1]  # the second word: fed [SOS] and the first
    order = F.order_of(grad_times_input(m, x, word).patches)
    curve = F.deletion(m, x, word, order, k=7)
    xs, ys = own_curve(m, x, word, order, 7, "deletion")
    assert curve.y.tolist() == pytest.approx(ys, abs=1e-5)
    assert curve.auc == pytest.approx(own_trapezoid(xs, ys), abs=1e-5)
    twin, own = S.randomised_copy(m, 1).state_dict(), m.state_dict()
    assert m.config.tie_text_head  # a tied word head is the input too: kept
    assert torch.equal(twin["text_embed.weight"], own["text_embed.weight"])
    assert not torch.equal(twin["blocks.5.mlp.fc2.weight"], own["blocks.5.mlp.fc2.weight"])
    assert torch.equal(twin["blocks.4.mlp.fc2.weight"], own["blocks.4.mlp.fc2.weight"])


@pytest.mark.slow
def test_the_bundled_classifiers_table_on_a_scene():
    m = load_model("shapes-classifier")
    x = preprocess(world.make_scene(11).image, m.config)
    t = targets.predicted(m, x)
    rows = F.table(m, x, t, {"gxi": grad_times_input}, k=7, seeds=3)
    order = F.order_of(grad_times_input(m, x, t).patches)
    xs, ys = own_curve(m, x, t, order, 7, "insertion")
    assert rows[0].insertion.y.tolist() == pytest.approx(ys, abs=1e-5)
    assert rows[0].insertion_auc == pytest.approx(own_trapezoid(xs, ys), abs=1e-5)
    twin = S.randomised_copy(m)
    own = own_spearman(grad_times_input(m, x, t).patches, grad_times_input(twin, x, t).patches)
    assert rows[0].sanity == pytest.approx(own, abs=1e-9)


@pytest.mark.slow
def test_the_docs_example_runs_as_written_and_prints_its_rows(capsys):
    text = (Path(__file__).resolve().parents[1] / "docs" / "library.md").read_text()
    section = text.split("## Is the map faithful?", 1)[1]
    code = re.search(r"^```python\n(.*?)^```", section, re.S | re.M).group(1)
    exec(compile(code, "docs/library.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert [line.rsplit(" ", 3)[0] for line in lines] == ["grad × input", "random"]
    assert re.findall(r"^# (.*)$", code, re.M) == lines, "the comments say what it prints"
