"""Maps from gradients and from passes with patches taken away: Grad-CAM on the last block's
patch tokens, Integrated Gradients on the pixels (Captum), occlusion per patch (Captum).

Every method explains the target's score, `targets.score`: the class's logit, or the word's
log-probability given [SOS] and the words before it.

Captum is imported inside the functions that use it, not with this module: `captum.attr`
imports matplotlib.pyplot (its visualisation helpers), and importing vit_core loads nothing of
the app's stack. Captum's forward functions here are plain functions of the input, so they run
no module hooks on the shared model: two threads attributing with one model never mix.
"""

from __future__ import annotations

import math
import time

import torch

from .. import budget, targets
from ..baselines import baseline as baseline_image
from ..baselines import patch_pixels, tick
from .core import Attribution, check, per_patch


def gradcam(model, pixels, target, *, mask=None, progress=None,
            layer: int | None = None) -> Attribution:
    """Grad-CAM (Selvaraju et al. 2017) on the patch tokens entering block `layer`'s attention
    (default: the last block's `ln1`, where pytorch-grad-cam's ViT recipe reads): the tokens
    X [N, D] reshaped to the grid [D, g, g], weights α_d = the mean over the grid of ∂s/∂X_d,
    map = ReLU(Σ_d α_d X_d).

    Why `ln1` of the last block and not its output: after the last block, a patch token reaches
    a class head that reads CLS through nothing (the final LayerNorm is per token), so its
    gradient there is zero. Written here rather than with Captum's LayerGradCam: that one
    averages the gradient over every dimension after the first two (per token over D for
    [B, S, D] tokens, with no reshape to the grid) and registers torch hooks on the shared
    model's module, which other threads' passes would run too; a written hook is per call.
    """
    check(model, pixels, target)
    start = time.perf_counter()
    c = model.config
    layer = c.depth - 1 if layer is None else layer % c.depth
    name = f"blocks.{layer}.ln1"
    kept: dict[str, torch.Tensor] = {}
    x = pixels.detach().clone().requires_grad_(True)  # a graph even if the weights are frozen
    with torch.enable_grad():
        s = targets.score(model, x, target, hooks={name: lambda t, n: kept.update({n: t})},
                          mask=mask)
        (grad,) = torch.autograd.grad(s.sum(), kept[name])
    pre, n_img, g = c.num_prefix_tokens, c.num_image_tokens, c.grid
    tokens = kept[name].detach()[0, pre:n_img].T.reshape(-1, g, g)  # [D, g, g]
    slopes = grad[0, pre:n_img].T.reshape(-1, g, g)  # [D, g, g]  ∂s/∂X
    alpha = slopes.mean((1, 2))  # [D]  mean gradient over the grid per channel
    cam = (alpha[:, None, None] * tokens).sum(0).clamp(min=0)  # [g, g]  ReLU(Σ_d α_d X_d)
    tick(progress, 1, 1)
    return Attribution("gradcam", cam.reshape(-1), None, target,
                       {"layer": layer, "tensor": name},
                       seconds=time.perf_counter() - start)


def batched_score(model, target, mask, progress, total: int):
    """f(inputs) -> [B] scores for Captum, calling progress(k, total) as batch k + 1 starts
    (batch k, its backward included, is then done) — where a cancel stops Captum."""
    calls = [0]

    def f(inputs: torch.Tensor) -> torch.Tensor:
        if calls[0]:
            tick(progress, min(calls[0], total), total)
        calls[0] += 1
        return targets.score(model, inputs, target, mask=mask)

    return f


# Captum's rules whose step weights sum to 1 (its "riemann_trapezoid" sums to 1 − 1/m, a gap
# tests/test_attribution.py measured as 1/m of s(x) − s(x0)).
RULES = ("gausslegendre", "riemann_middle", "riemann_left", "riemann_right")


def integrated_gradients(model, pixels, target, *, mask=None, progress=None,
                         baseline: str = "black", steps: int | None = None, batch: int = 16,
                         rule: str = "gausslegendre") -> Attribution:
    """Integrated Gradients (Sundararajan, Taly & Yan 2017) with Captum's IntegratedGradients:
    attr_i = (x_i − x0_i) ∫₀¹ ∂s(x0 + α(x − x0))/∂x_i dα, the integral by `rule` (one of
    RULES, Captum's names) at `steps` points, `batch` of them per pass; each patch's value is
    the signed sum of its C·P² pixel attributions.

    Completeness says Σ attr = s(x) − s(x0); `completeness_gap` is Σ attr − (s(x) − s(x0)),
    and settings hold s(x), s(x0) and the gap relative to |s(x) − s(x0)|.

    Args:
        baseline: x0, "black", "grey" or "blur" (`vit_core.explain.baselines`).
        steps: m; None: `budget.ig_steps` (32, or 8 on a heavy model).
    """
    check(model, pixels, target)
    steps = budget.ig_steps(model.config) if steps is None else int(steps)
    if rule not in RULES:
        raise ValueError(f"'{rule}' is not an integration rule here; choose one of "
                         f"{', '.join(RULES)} (Captum's riemann_trapezoid weighs its steps "
                         f"1/m, not 1/(m − 1): its sum falls short by 1/m).")
    from captum.attr import IntegratedGradients  # not at import: captum loads matplotlib

    start = time.perf_counter()
    x = pixels.detach()
    x0 = baseline_image(x, model.config, baseline)
    total = math.ceil(steps / batch)
    ig = IntegratedGradients(batched_score(model, target, mask, progress, total))
    attr = ig.attribute(x, baselines=x0, n_steps=steps, method=rule, internal_batch_size=batch)
    tick(progress, total, total)
    with torch.inference_mode():
        fx, fx0 = targets.score(model, torch.cat([x, x0]), target, mask=mask).double().tolist()
    gap = float(attr.double().sum()) - (fx - fx0)
    relative = gap / abs(fx - fx0) if fx != fx0 else math.inf
    return Attribution("integrated_gradients", per_patch(attr[0], model.config.patch_size), None,
                       target, {"baseline": baseline, "steps": steps, "rule": rule,
                                "batch": batch, "score": fx, "baseline_score": fx0,
                                "relative_gap": relative, "per_patch": "signed sum"},
                       completeness_gap=gap, seconds=time.perf_counter() - start)


def occlusion(model, pixels, target, *, mask=None, progress=None, baseline: str = "grey",
              batch: int = 16, window: int | None = None) -> Attribution:
    """Occlusion (Zeiler & Fergus 2014) with Captum's FeatureAblation, one feature per square
    of `window` × `window` patches (`budget.windows`): value_i = s(x) − s(x with the square of
    patch i taken from the baseline image), so the patches of one square share its value;
    `batch` occluded images per pass (plus one pass for s(x)).

    Args:
        baseline: what a patch becomes, "grey", "black" or "blur" (`vit_core.explain.baselines`).
        window: the square's side in patches; None: `budget.occlusion_window` (1, each patch
            alone; 2 on a heavy model, a quarter of the passes).
    """
    check(model, pixels, target)
    from captum.attr import FeatureAblation  # not at import: captum loads matplotlib

    start = time.perf_counter()
    c = model.config
    window = budget.occlusion_window(c) if window is None else int(window)
    x = pixels.detach()
    x0 = baseline_image(x, c, baseline)
    squares = budget.windows(c.grid, window)
    feature = torch.empty(c.num_patches, dtype=torch.long)
    for i, square in enumerate(squares):
        feature[square] = i
    which = patch_pixels(feature[None], c.patch_size)  # [1, 1, H, W]
    total = 1 + math.ceil(len(squares) / batch)  # s(x), then the occluded batches
    ablation = FeatureAblation(batched_score(model, target, mask, progress, total))
    with torch.inference_mode():
        attr = ablation.attribute(x, baselines=x0, feature_mask=which,
                                  perturbations_per_eval=batch)
    tick(progress, total, total)
    g, P = c.grid, c.patch_size
    patches = attr[0, 0].reshape(g, P, g, P)[:, 0, :, 0].reshape(-1)  # one value per patch
    return Attribution("occlusion", patches.clone(), None, target,
                       {"baseline": baseline, "batch": batch, "window": window,
                        "value": "s(x) − s(x occluded)"},
                       seconds=time.perf_counter() - start)
