"""What windowed attention costs a classifier that was trained without it: top-1 on held-out
scenes with the window mask put in at inference, next to full attention.

No bundled model was trained with windows, so this measures the damage of taking attention
away, not what a model trained with windows (Swin) would reach. The scenes are rendered once and
every mask reads the same pixels, so the numbers differ only by the mask.
`python -m vit_core.scenes.windowed shapes-classifier --sizes 1 2 3` prints them as JSON.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

import torch

from ..io.checkpoints import load_model
from ..masks import window_name
from .evaluate import loader

HELDOUT_N, HELDOUT_SEED = 200, 3  # the scenes tests/test_bundled.py measures top-1 on


def masks_for(sizes: Sequence[int]) -> list[str]:
    """"full", then each window size plain and shifted (a 1 x 1 window shifts by 0: plain only)."""
    names = ["full"]
    for m in sizes:
        names += [window_name(m)] + ([window_name(m, True)] if m // 2 else [])
    return names


@torch.inference_mode()
def top1_by_mask(model, masks: Sequence[str], n: int = HELDOUT_N,
                 seed: int = HELDOUT_SEED) -> dict[str, float]:
    """The classifier's top-1 on `n` held-out scenes (heldout_seeds(n, seed)) under each mask.

    Args:
        model: a ViT with a class head, trained on the scene world (labels are its classes).
        masks: mask names ("full", "window:2", "window:2:shifted", ...).
    Returns:
        {mask name: share of the n scenes whose top class is the scene's label}.
    """
    if not model.config.num_classes or model.config.has_text:
        raise ValueError("Top-1 needs a classifier (a model with a class head and no text).")
    correct = dict.fromkeys(masks, 0)
    for batch in loader(n, seed, model.config):
        for name in masks:
            logits = model(batch["pixels"], mask=name)  # (B, K)
            correct[name] += int((logits.argmax(-1) == batch["label"]).sum())
    return {name: hits / n for name, hits in correct.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("model", help="a bundled classifier's name or a .safetensors path")
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--n", type=int, default=HELDOUT_N)
    ap.add_argument("--seed", type=int, default=HELDOUT_SEED)
    args = ap.parse_args(argv)
    out = top1_by_mask(load_model(args.model), masks_for(args.sizes), args.n, args.seed)
    print(json.dumps({"n": args.n, "seed": args.seed, "top1": out}, indent=2))


if __name__ == "__main__":
    main()
