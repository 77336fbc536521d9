"""Six attribution maps (vit_core.explain.attribution), each against the test's own computation:
float64 rollouts from the traced patterns, gradients by the test's own autograd through its own
hooks, Grad-CAM from the hooked tokens, Integrated Gradients by the test's own quadrature, and
occlusion as a loop of single-patch passes; on the bundled classifier and captioner."""

import re
from pathlib import Path

import numpy as np
import pytest
import torch

from vit_core import ViT, ViTConfig, load_model, preprocess, run_trace, run_with_hooks
from vit_core.explain import attribution, targets
from vit_core.explain.baselines import Cancelled
from vit_core.explain.targets import Target
from vit_core.scenes import world

ROOT = Path(__file__).resolve().parents[1]
SIX = ["cls_attention", "rollout", "grad_rollout", "gradcam", "integrated_gradients",
       "occlusion"]


@pytest.fixture(scope="module")
def classifier():
    return load_model("shapes-classifier")


@pytest.fixture(scope="module")
def captioner():
    return load_model("shapes-captioner-causal")


def scene(model, seed=3):
    return preprocess(world.make_scene(seed).image, model.config)


def cases(classifier, captioner):
    """(model, pixels, target): the classifier's top class, and the captioner's shape word
    (the caption's third word: 'a red ball ...')."""
    x, y = scene(classifier), scene(captioner)
    return [(classifier, x, targets.predicted(classifier, x)),
            (captioner, y, targets.word_targets(captioner, y)[2])]


def query_row(model, target) -> int:
    """The query the test reads: CLS (0) for a class; the text position that predicts the word
    (the last one fed) for a word."""
    return model.config.num_image_tokens + target.index - 1 if target.is_word else 0


def test_score(model, x, target, hooks=None) -> torch.Tensor:
    """The target's score by the test's own reading of the logits (a logit, or a log-prob)."""
    if not target.is_word:
        return run_with_hooks(model, x, hooks or {})[0, target.index]
    fed = torch.tensor([target.ids[:target.index]])
    return run_with_hooks(model, x, hooks or {}, text_ids=fed)[0, -1].log_softmax(-1)[
        target.ids[target.index]]


test_score.__test__ = False  # a helper, not a test


def traced_patterns(model, x, target) -> list[torch.Tensor]:
    fed = None if not target.is_word else torch.tensor(target.ids[:target.index])
    tr = run_trace(model, x, text_ids=fed, lean=False)
    return [tr[f"blocks.{i}.attn.pattern"].double() for i in range(model.config.depth)]


def hooked_with_grads(model, x, target, names):
    """{name: (tensor, its gradient)} by retain_grad and backward, as a user would write it."""
    kept = {}

    def keep(t, name):
        t.retain_grad()
        kept[name] = t

    test_score(model, x.clone().requires_grad_(True), target,
               dict.fromkeys(names, keep)).backward()
    model.zero_grad(set_to_none=True)
    return {n: (t.detach()[0].double(), t.grad[0].double()) for n, t in kept.items()}


def roll(bars: list[torch.Tensor]) -> torch.Tensor:
    joint = torch.eye(bars[0].shape[-1], dtype=torch.float64)
    for bar in bars:
        joint = (bar / bar.sum(-1, keepdim=True)) @ joint
    return joint


def assert_map(a, model, row: torch.Tensor, prefix: bool = True):
    pre, n_img = model.config.num_prefix_tokens, model.config.num_image_tokens
    torch.testing.assert_close(a.patches.double(), row[pre:n_img], rtol=1e-4, atol=1e-7)
    if prefix:
        torch.testing.assert_close(a.prefix.double(), row[:pre], rtol=1e-4, atol=1e-7)


# ---- the attention maps

def test_cls_attention_and_rollout_equal_float64_hand_computations(classifier, captioner):
    for model, x, target in cases(classifier, captioner):
        patterns, q = traced_patterns(model, x, target), query_row(model, target)
        assert_map(attribution.cls_attention(model, x, target), model, patterns[-1].mean(0)[q])
        eye = torch.eye(patterns[0].shape[-1], dtype=torch.float64)
        joint = roll([0.5 * p.mean(0) + 0.5 * eye for p in patterns])
        assert_map(attribution.rollout(model, x, target), model, joint[q])


def test_gradient_weighted_rollout_equals_the_tests_own_autograd(classifier, captioner):
    for model, x, target in cases(classifier, captioner):
        names = [f"blocks.{i}.attn.pattern" for i in range(model.config.depth)]
        got = hooked_with_grads(model, x, target, names)
        for (a, _), p in zip(got.values(), traced_patterns(model, x, target), strict=True):
            torch.testing.assert_close(a, p, rtol=1e-5, atol=1e-6)  # the traced patterns
        eye = torch.eye(got[names[0]][0].shape[-1], dtype=torch.float64)
        bars = [eye + (g * a).clamp(min=0).mean(0) for a, g in got.values()]
        assert_map(attribution.grad_rollout(model, x, target), model,
                   roll(bars)[query_row(model, target)])


def test_gradcam_equals_the_tests_own_hooked_tokens_and_gradients(classifier, captioner):
    for model, x, target in cases(classifier, captioner):
        c = model.config
        name = f"blocks.{c.depth - 1}.ln1"
        tokens, grad = hooked_with_grads(model, x, target, [name])[name]
        grid = tokens[c.num_prefix_tokens:c.num_image_tokens]  # [N, D], row-major patches
        alpha = grad[c.num_prefix_tokens:c.num_image_tokens].mean(0)  # [D]
        want = (grid @ alpha).clamp(min=0)
        a = attribution.gradcam(model, x, target)
        assert a.prefix is None and a.settings["tensor"] == name
        torch.testing.assert_close(a.patches.double(), want, rtol=1e-4, atol=1e-6)
        assert want.max() > 0


# ---- Integrated Gradients and occlusion

def quadrature(rule: str, m: int):
    """(alphas, weights) on [0, 1]: Gauss-Legendre from numpy, or the midpoint rule by hand."""
    if rule == "gausslegendre":
        nodes, weights = np.polynomial.legendre.leggauss(m)
        return (nodes + 1) / 2, weights / 2
    return (np.arange(m) + 0.5) / m, np.full(m, 1 / m)


def black(model, x):
    c = model.config
    return ((0 - torch.tensor(c.mean)) / torch.tensor(c.std)).view(1, -1, 1, 1).expand_as(x)


@pytest.mark.parametrize("rule", ["gausslegendre", "riemann_middle"])
def test_integrated_gradients_equal_the_tests_own_quadrature(classifier, rule):
    model, x = classifier, scene(classifier)
    target, m, P = targets.predicted(model, x), 64, model.config.patch_size
    x0 = black(model, x)
    alphas, weights = quadrature(rule, m)
    total = torch.zeros_like(x, dtype=torch.float64)
    for start in range(0, m, 16):
        al = torch.tensor(alphas[start:start + 16], dtype=torch.float32).view(-1, 1, 1, 1)
        path = (x0 + al * (x - x0)).requires_grad_(True)
        (grads,) = torch.autograd.grad(model(path)[:, target.index].sum(), path)
        w = torch.tensor(weights[start:start + 16]).view(-1, 1, 1, 1)
        total += (w * grads.double()).sum(0, keepdim=True)
    attr = total * (x - x0).double()
    g = model.config.grid
    want = attr[0].sum(0).reshape(g, P, g, P).sum((1, 3)).reshape(-1)
    a = attribution.integrated_gradients(model, x, target, steps=m, rule=rule)
    torch.testing.assert_close(a.patches.double(), want, rtol=1e-3, atol=1e-4)
    with torch.no_grad():
        fx, fx0 = model(torch.cat([x, x0]))[:, target.index].double().tolist()
    assert a.completeness_gap == pytest.approx(float(want.sum()) - (fx - fx0), abs=1e-3)
    if rule == "gausslegendre":  # completeness within 1 % at m = 64
        assert abs(a.completeness_gap) < 0.01 * abs(fx - fx0), (a.completeness_gap, fx - fx0)
        assert a.settings["relative_gap"] == pytest.approx(a.completeness_gap / abs(fx - fx0))


def test_a_rule_whose_weights_fall_short_is_refused(classifier):
    with pytest.raises(ValueError, match="riemann_trapezoid weighs its steps 1/m"):
        attribution.integrated_gradients(classifier, scene(classifier), Target(0),
                                         rule="riemann_trapezoid")


def test_occlusion_equals_a_loop_of_single_patch_passes(classifier, captioner):
    for model, x, target in cases(classifier, captioner):
        c, P = model.config, model.config.patch_size
        grey = ((0.5 - torch.tensor(c.mean)) / torch.tensor(c.std)).view(-1, 1, 1)
        want = []
        with torch.no_grad():
            full = float(test_score(model, x, target))
            for i in range(c.num_patches):
                r, col = divmod(i, c.grid)
                y = x.clone()
                y[0, :, r * P:(r + 1) * P, col * P:(col + 1) * P] = grey
                want.append(full - float(test_score(model, y, target)))
        a = attribution.occlusion(model, x, target, batch=8)
        torch.testing.assert_close(a.patches.double(), torch.tensor(want, dtype=torch.float64),
                                   rtol=1e-4, atol=1e-4)


# ---- the API: one shape, progress, cancel, what cannot be explained

def test_every_method_returns_one_shape_and_leaves_the_pixels(classifier):
    x = scene(classifier)
    before = x.clone()
    heard = []
    maps = attribution.attribute_all(classifier, x, progress=lambda d, t: heard.append((d, t)))
    assert list(maps) == SIX == list(attribution.METHODS)
    top = targets.predicted(classifier, x)
    for name, a in maps.items():
        assert a.method == name and a.target == top and a.seconds > 0
        assert a.patches.shape == (49,) and a.patches.dtype == torch.float32
        assert (a.prefix is None) == (name not in ("cls_attention", "rollout", "grad_rollout"))
        assert (a.completeness_gap is None) == (name != "integrated_gradients")
    assert torch.equal(x, before)
    assert heard[-1] == (6, 6) and [d for d, _ in heard] == sorted(d for d, _ in heard)
    assert len(heard) > 6  # also between each method's own batches


@pytest.mark.parametrize("method", ["integrated_gradients", "occlusion", "rollout"])
def test_progress_counts_every_batch_and_a_cancel_stops_it(classifier, method):
    x = scene(classifier)
    heard = []
    attribution.attribute(classifier, x, method, progress=lambda d, t: heard.append((d, t)))
    total = heard[-1][1]
    assert heard == [(d, total) for d in range(1, total + 1)] and total > 1, heard

    def stop(done, total):
        raise Cancelled

    with pytest.raises(Cancelled):
        attribution.attribute(classifier, x, method, progress=stop)


def test_a_headless_encoder_or_an_unknown_method_says_why():
    torch.manual_seed(0)
    encoder = ViT(ViTConfig(img_size=32, patch_size=8, embed_dim=16, depth=1, num_heads=2,
                            num_classes=0)).eval()
    with pytest.raises(ValueError, match="headless encoder: it has no class head and no text"):
        attribution.attribute(encoder, torch.zeros(1, 3, 32, 32), "rollout")
    with pytest.raises(ValueError, match="headless encoder"):
        attribution.rollout(encoder, torch.zeros(1, 3, 32, 32), Target(0))
    with pytest.raises(ValueError, match="not an attribution method; choose one of"):
        attribution.attribute(encoder, torch.zeros(1, 3, 32, 32), "saliency")


# ---- the captioner: a word's map is that word's

def test_a_words_map_changes_with_the_word(captioner):
    x = scene(captioner)
    words = targets.word_targets(captioner, x)
    colour, shape = words[1], words[2]  # 'a red ball ...': two places in the caption
    ids = list(colour.ids)
    other = next(i for i, w in enumerate(captioner.config.vocab) if w in ("blue", "green")
                 and i != ids[colour.index])
    ids[colour.index] = other
    swapped = Target(colour.index, ids=tuple(ids), label=captioner.config.vocab[other])
    for method in SIX:
        a, b = (attribution.attribute(captioner, x, method, t, **fast(method))
                for t in (colour, shape))
        assert not torch.allclose(a.patches, b.patches), method  # another place, another map
        c = attribution.attribute(captioner, x, method, swapped, **fast(method))
        if method in ("cls_attention", "rollout"):  # they read the row, not the word
            assert torch.equal(a.patches, c.patches), method
        else:
            assert not torch.allclose(a.patches, c.patches), method


def fast(method: str) -> dict:
    return {"steps": 16} if method == "integrated_gradients" else {}


# ---- the docs' example runs as written

def test_the_library_docs_attribution_example_runs_and_prints_what_it_says():
    text = (ROOT / "docs" / "library.md").read_text()
    section = text.split("## Why this answer: attribution", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"^```python\n(.*?)^```", section, re.S | re.M)
    printed = []
    exec(compile(code, "docs/library.md", "exec"), {"print": lambda *a: printed.append(a)})
    expected = [m.strip() for m in re.findall(r"^print\(.*\)\s*#(.*)$", code, re.M)]
    for want, got in zip(expected, printed, strict=True):
        assert " ".join(map(str, got)).startswith(want.removesuffix("...").strip()), (want, got)
