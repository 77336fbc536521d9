"""Maps read from attention: the last layer's pattern, attention rollout, and rollout weighted
by the target's gradient.

Each reads one query row of an [S, S] token-to-token matrix over the image keys (`core.
read_row`): for a class, the row the head reads (CLS; CLS and DIST averaged for DeiT; the mean
of the patch rows for an average-pooled head); for a caption word, the text position that
predicts it (index − 1 in the text stream, fed [SOS] and the words before it, exactly the pass
`targets.score` reads). The patch keys give the map, the prefix keys (CLS, DIST) its `prefix`;
a word's row also puts weight on the earlier text keys, which neither holds.
"""

from __future__ import annotations

import time

import torch

from ...trace import run_trace
from .. import targets
from ..attention import rollout as abnar_rollout
from ..baselines import tick
from .core import Attribution, check, read_row, text_ids


def cls_attention(model, pixels, target, *, mask=None, progress=None,
                  layer: int | None = None) -> Attribution:
    """The last block's attention, heads averaged: row q of mean_h A^(L) over the patch keys.

    Args:
        layer: another block's pattern instead (default: the last, L − 1).
    """
    check(model, pixels, target)
    start = time.perf_counter()
    c = model.config
    layer = c.depth - 1 if layer is None else layer % c.depth
    trace = run_trace(model, pixels, text_ids=text_ids(target), mask=mask)
    mean = trace[f"blocks.{layer}.attn.pattern"].mean(0)  # [S, S]  mean over heads
    patches, prefix, row = read_row(mean, c, target)
    tick(progress, 1, 1)
    return Attribution("cls_attention", patches, prefix, target,
                       {"layer": layer, "heads": "mean", "row": row},
                       seconds=time.perf_counter() - start)


def rollout(model, pixels, target, *, mask=None, progress=None) -> Attribution:
    """Attention rollout (Abnar & Zuidema 2020): per block Ā = 0.5 · mean_h A + 0.5 · I, rows
    renormalised, multiplied through the blocks (Ā_L ⋯ Ā_1), in float64; the map is the
    target's row over the patch keys. `vit_core.explain.attention.rollout` computes it."""
    check(model, pixels, target)
    start = time.perf_counter()
    c = model.config
    trace = run_trace(model, pixels, text_ids=text_ids(target), mask=mask)

    def layers():  # one block's pattern at a time; progress (and a cancel) between blocks
        for layer, pattern in enumerate(trace.patterns()):
            yield pattern.double()
            tick(progress, layer + 1, c.depth)

    joint = abnar_rollout(layers(), residual=0.5)  # [S, S]
    patches, prefix, row = read_row(joint, c, target)
    return Attribution("rollout", patches, prefix, target,
                       {"residual": 0.5, "heads": "mean", "blocks": c.depth, "row": row},
                       seconds=time.perf_counter() - start)


def pattern_gradients(model, pixels, target, mask=None) -> tuple[list, list]:
    """([A^(l)], [∂s/∂A^(l)]) for every block l, each [H, S, S]: the patterns of one pass and
    the gradients of the target's score (`targets.score`) with respect to them.

    Each pattern passes through a written identity hook that keeps it (so attention computes
    A V from it, and the gradient flows through A); `torch.autograd.grad` then reads the
    gradients without touching the model's parameters' `.grad`."""
    L = model.config.depth
    kept: dict[str, torch.Tensor] = {}

    def keep(a: torch.Tensor, name: str) -> None:
        kept[name] = a  # the very tensor the pass goes on with

    names = [f"blocks.{layer}.attn.pattern" for layer in range(L)]
    x = pixels.detach().clone().requires_grad_(True)  # a graph even if the weights are frozen
    with torch.enable_grad():
        s = targets.score(model, x, target, hooks=dict.fromkeys(names, keep), mask=mask)
        grads = torch.autograd.grad(s.sum(), [kept[n] for n in names])
    return [kept[n].detach()[0] for n in names], [g[0] for g in grads]


def grad_rollout(model, pixels, target, *, mask=None, progress=None) -> Attribution:
    """Gradient-weighted rollout (Chefer, Gur & Wolf 2021): per block
    Ā = I + mean_h (∂s/∂A ⊙ A)^+, rows renormalised, multiplied through the blocks
    (Ā_L ⋯ Ā_1) in float64 — their code's `compute_rollout_attention` over the gradient ×
    attention maps (A itself where their CVPR method puts A's LRP relevance). s is the target's
    score: the class's logit, or the word's log-probability. The map is the target's row over
    the patch keys."""
    check(model, pixels, target)
    start = time.perf_counter()
    c = model.config
    patterns, grads = pattern_gradients(model, pixels, target, mask)
    tick(progress, 1, 2)  # the forward and backward pass
    joint = None
    for a, g in zip(patterns, grads, strict=True):
        cam = (g.double() * a.double()).clamp(min=0).mean(0)  # [S, S]  mean_h (∇A ⊙ A)^+
        bar = torch.eye(cam.shape[-1], dtype=torch.float64) + cam  # I + ...: the residual
        bar = bar / bar.sum(-1, keepdim=True)  # rows renormalised
        joint = bar if joint is None else bar @ joint  # later blocks act on what earlier mixed
    patches, prefix, row = read_row(joint, c, target)
    tick(progress, 2, 2)
    return Attribution("grad_rollout", patches, prefix, target,
                       {"heads": "mean of (grad x attention)+", "blocks": c.depth, "row": row,
                        "score": "log-probability" if target.is_word else "logit"},
                       seconds=time.perf_counter() - start)
