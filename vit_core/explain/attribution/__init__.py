"""Why this answer: six maps of how much each patch counts for a class or a caption word.

    from vit_core.explain import attribution
    a = attribution.attribute(model, pixels, "rollout")          # the predicted class / word
    a.patches                                                    # [N], row-major over the grid
    maps = attribution.attribute_all(model, pixels)              # {method: Attribution}

Every method is `fn(model, pixels, target, *, mask=None, progress=None, **settings)` ->
`Attribution`, with `pixels` one preprocessed image [1, C, H, W] (never modified) and `target` a
`vit_core.explain.targets.Target`: a classifier's class or a captioner's word. A headless encoder
(no class head, no text head) has nothing to explain: a ValueError says so.

- `cls_attention`, `rollout`, `grad_rollout` (attention_maps.py): read the target's query row
  (CLS for a class; the text position predicting a word) over the patch keys;
- `gradcam`, `integrated_gradients`, `occlusion` (gradient_maps.py): Grad-CAM written on the
  hook points, Integrated Gradients and occlusion through Captum.

`progress(done, total)` is called between batches and may raise
`vit_core.explain.baselines.Cancelled` to stop.
"""

from __future__ import annotations

from collections.abc import Callable

from .attention_maps import cls_attention, grad_rollout, rollout
from .core import Attribution, resolve_target
from .gradient_maps import gradcam, integrated_gradients, occlusion

METHODS: dict[str, Callable[..., Attribution]] = {
    "cls_attention": cls_attention,
    "rollout": rollout,
    "grad_rollout": grad_rollout,
    "gradcam": gradcam,
    "integrated_gradients": integrated_gradients,
    "occlusion": occlusion,
}


def attribute(model, pixels, method: str, target=None, **settings) -> Attribution:
    """One map by `method` (a key of METHODS) for `target` (None: the predicted class, or the
    caption's first word: `targets.predicted`). `settings` go to the method (mask, progress,
    baseline, steps, ...)."""
    if method not in METHODS:
        raise ValueError(f"'{method}' is not an attribution method; choose one of "
                         f"{', '.join(METHODS)}.")
    target = resolve_target(model, pixels, target, settings.get("mask"))
    return METHODS[method](model, pixels, target, **settings)


def attribute_all(model, pixels, target=None, methods=None,
                  progress=None) -> dict[str, Attribution]:
    """{method: Attribution} for every method in `methods` (default: all of METHODS, in order)
    with their default settings, one target for all. progress(done, total) counts the methods
    finished; it is also called, with the same count, between each method's own batches, so a
    cancel stops inside a long method too."""
    methods = list(METHODS) if methods is None else list(methods)
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"{', '.join(unknown)}: not attribution methods; choose from "
                         f"{', '.join(METHODS)}.")
    target = resolve_target(model, pixels, target)
    out = {}
    for done, method in enumerate(methods):
        inner = None if progress is None else (lambda d, t, k=done: progress(k, len(methods)))
        out[method] = METHODS[method](model, pixels, target, progress=inner)
        if progress is not None:
            progress(done + 1, len(methods))
    return out


__all__ = ["METHODS", "Attribution", "attribute", "attribute_all", "cls_attention", "gradcam",
           "grad_rollout", "integrated_gradients", "occlusion", "rollout"]
