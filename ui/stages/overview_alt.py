"""The overview stage's text alternatives (deck.Step.describe): each figure said in words from
the same facts as its sentence (ui/drawing/describe.py words them)."""

from __future__ import annotations

from ui.drawing import describe
from ui.drawing.numbers import pct
from vit_core.explain.extremes import extremes, ranked


def map_alt(x, f) -> str:
    """The model map: every arrow's tensor and its shape in this pass, in the pass's order."""
    arrows = "; ".join(f"{e.name} {e.label}" for e in f.mm.edges)
    return (f"A diagram of the forward pass as boxes joined by arrows, from the image to "
            f"{'the logits' if f.mm.edges[-1].name == 'logits' else 'the final tokens'}; each "
            f"arrow is labelled with the shape of the tensor it carries in this pass: {arrows}.")


def grid_alt(x, _) -> str:
    c = x.c
    g, P = c.grid, c.patch_size
    numbered = (f", numbered 0 to {c.num_patches - 1} row by row from the top left"
                if g <= 16 else "")
    return (f"Your image, cropped to {c.img_size}×{c.img_size} pixels, under a {g}×{g} grid of "
            f"lines: {c.num_patches} patches of {P}×{P} pixels{numbered}.")


def prediction_alt(x, f, shown: int) -> str:
    top = ranked(f.probs, shown)  # the bars, said from the top (the most likely) down
    return describe.bars(f"the probability of the {len(top)} most likely of {len(f.names)} "
                         f"classes, the most likely first",
                         [f.names[i] for i in top], [float(f.probs[i]) for i in top], fmt=pct)


def caption_alt(x, f) -> str:
    return describe.bars("the probability the model gave each token of its caption when it "
                         "wrote it, in reading order",
                         [f"{i + 1}. {w}" for i, w in enumerate(f.words)], f.chosen, fmt=pct)


def encoded_alt(x, f) -> str:
    if f.cls_to_patches is not None:
        return describe.patch_map(
            f"Your image under the final CLS token's attention (block {x.c.depth - 1}, mean of "
            f"the heads)", "attention weight", extremes(f.cls_to_patches), x.c.grid)
    return (f"Your image as a {x.c.grid}×{x.c.grid} grid of coloured squares, one per patch: "
            f"the final patch tokens' first three principal components as red, green and blue.")


def table_alt(x, f) -> str:
    return describe.table("every tensor of this pass with its live shape", f.rows)
