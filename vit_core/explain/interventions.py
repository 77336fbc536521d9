"""Interventions for the experiments page: change one thing, rerun, compare the two results.

Each run function returns a fresh Trace (or Generation); the model itself is never modified, so a
cached model shared by many sessions stays intact. `alter` says what an intervention feeds the
model (the altered pixels, the mask, the head switches, positions on or off); `run` and `caption`
run it, the head switches, positions and a changed mask as written hooks (vit_core/hooked.py:
run_trace's and the model's `mask=` install mask_hooks); the comparison
helpers below read the two results as numbers (the Experiments stage, ui/stages/experiments.py,
words them).

Kinds (the `arg` each takes):
    "heads"                 ((layer, head), ...) to switch off
    "occlude"               (patch, ...) to grey out
    "positions"             ()  leave out the image position embeddings
    "shuffle"               (seed,) rearrange the patches, positions still added
    "shuffle_no_positions"  (seed,) rearrange the patches and leave out the positions
    "mask"                  (kind,) run with this attention mask instead
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..hooked import experiment_hooks, run_with_hooks
from ..masks import allowed_keys
from ..patches import patchify, unpatchify
from ..trace import Trace, run_trace
from .attention import allowed_from_mask
from .generation import Generation, generate

KINDS = ("heads", "occlude", "positions", "shuffle", "shuffle_no_positions", "mask")
SAME_P = 0.01  # a top-class probability that moved less than one percentage point "did not move"
SAME_OUTPUT = 1e-3  # outputs this close (largest absolute difference) are equal up to rounding


# ---------------------------------------------------------------- the interventions
def ablate_heads(model, pixels, heads: list[tuple[int, int]], text_ids=None,
                 mask=None) -> Trace:
    """Switch off the given (layer, head) pairs: their outputs are zeroed before W_O."""
    return run(model, pixels, "heads", tuple(heads), text_ids, mask)


def occlude(model, pixels, patches: list[int], text_ids=None, mask=None) -> Trace:
    """Grey out the given patches (set them to the normalised mean, i.e. 0) and rerun."""
    return run(model, pixels, "occlude", tuple(patches), text_ids, mask)


def shuffle_patches(model, pixels, seed: int = 0, text_ids=None, positions: bool = True,
                    mask=None) -> tuple[Trace, torch.Tensor]:
    """Rearrange the image's patches in a random order; returns (trace, permutation).

    With positions=False, and a mask that lets every image token see every other (full or
    prefix), attention cannot tell the orders apart: the outputs come out the same as without
    positions on the original image. Under a causal mask they do not: patch i sees only the
    patches before it, so the order matters even without positions.
    """
    kind = "shuffle" if positions else "shuffle_no_positions"
    altered = alter(model, pixels, kind, (seed,), mask)
    return _run(model, altered, text_ids), altered.perm


def without_positions(model, pixels, text_ids=None, mask=None) -> Trace:
    """Leave out the image position embeddings: the model loses where each patch was."""
    return run(model, pixels, "positions", (), text_ids, mask)


def with_mask(model, pixels, kind: str, text_ids=None) -> Trace:
    """Run with another attention mask than the one the model was trained with."""
    return run(model, pixels, "mask", (kind,), text_ids)


@dataclass(frozen=True)
class Altered:
    """One intervention made concrete: what the model is fed, and how it is run."""

    pixels: torch.Tensor  # [1, C, H, W] normalised input after the change
    mask: str | None  # attention mask of the run (None: the model's own)
    head_mask: torch.Tensor | None  # [L, H] 1 keeps a head, 0 switches it off
    positions: bool  # image position embeddings added
    perm: torch.Tensor | None  # shuffles: grid cell i shows original patch perm[i]

    def hooks(self, model) -> dict:
        """The hooks that write the head switches and leave the positions out."""
        return experiment_hooks(model, self.head_mask, self.positions)


def permutation(n: int, seed: int) -> torch.Tensor:
    """The shuffle's order for `n` patches: cell i of the shuffled image shows patch perm[i]."""
    return torch.randperm(n, generator=torch.Generator().manual_seed(int(seed)))


def alter(model, pixels, kind: str, arg: tuple = (), mask=None) -> Altered:
    """What intervention `kind` (see the module docstring) feeds the model.

    Args:
        pixels: the preprocessed image [1, C, H, W] (or [C, H, W]).
        mask: the mask of the run before the change (the sidebar's; None: the model's own);
            kept for every kind except "mask", which replaces it with arg[0].
    """
    c = model.config
    if pixels.dim() == 3:
        pixels = pixels[None]
    P, g = c.patch_size, c.grid
    head_mask, positions, perm = None, True, None
    if kind == "heads":
        head_mask = torch.ones(c.depth, c.num_heads)
        for layer, head in arg:
            head_mask[int(layer), int(head)] = 0.0
    elif kind == "occlude":
        bad = [p for p in arg if not 0 <= int(p) < c.num_patches]
        if bad:
            raise ValueError(f"This model has patches 0 to {c.num_patches - 1}, not {bad}.")
        flat = patchify(pixels[0], P).clone()
        flat[[int(p) for p in arg]] = 0.0  # normalised 0 is the normalisation mean: mid-grey
        pixels = unpatchify(flat, P, (g, g))[None]
    elif kind == "positions":
        positions = False
    elif kind in ("shuffle", "shuffle_no_positions"):
        perm = permutation(c.num_patches, arg[0] if arg else 0)
        pixels = unpatchify(patchify(pixels[0], P)[perm], P, (g, g))[None]
        positions = kind == "shuffle"
    elif kind == "mask":
        mask = arg[0]
    else:
        raise ValueError(f"Unknown intervention '{kind}'; choose one of {', '.join(KINDS)}.")
    return Altered(pixels, mask, head_mask, positions, perm)


def _run(model, altered: Altered, text_ids=None) -> Trace:
    return run_trace(model, altered.pixels, text_ids, mask=altered.mask,
                     hooks=altered.hooks(model))


def run(model, pixels, kind: str, arg: tuple = (), text_ids=None, mask=None) -> Trace:
    """The traced pass with intervention `kind` applied (the sidebar's `mask` kept)."""
    return _run(model, alter(model, pixels, kind, arg, mask), text_ids)


class _Intervened:
    """A model that always runs with an intervention's hooks (head switches, positions), so
    that `generate` writes its caption with the intervention in place."""

    def __init__(self, model, altered: Altered):
        self.model, self.hooks = model, altered.hooks(model)
        self.config = model.config

    def __call__(self, pixels, text_ids=None, mask=None):
        return run_with_hooks(self.model, pixels, self.hooks, text_ids, mask)


def caption(model, pixels, kind: str, arg: tuple = (), mask=None) -> Generation:
    """The greedy caption a text model writes with intervention `kind` applied."""
    altered = alter(model, pixels, kind, arg, mask)
    return generate(_Intervened(model, altered), altered.pixels, mask=altered.mask)


# ---------------------------------------------------------------- comparing two runs
def summary(trace: Trace) -> dict[str, torch.Tensor]:
    """What every model has at the end, classifier or not: its final prefix tokens (CLS, DIST)
    and the mean of its final patch tokens (after the final LayerNorm)."""
    c = trace.config
    final, pre = trace["ln_final"], c.num_prefix_tokens
    out = {name: final[i] for i, name in enumerate(c.prefix_names)}
    out["mean patch token"] = final[pre:pre + c.num_patches].mean(0)
    return out


def outputs(trace: Trace) -> torch.Tensor:
    """The model's output to compare runs by: its logits, or (headless) the summary tokens."""
    if "logits" in trace:
        return trace.logits
    return torch.stack(list(summary(trace).values()))


def max_difference(a: Trace, b: Trace) -> float:
    """The largest absolute difference between the two runs' outputs (see `outputs`)."""
    return float((outputs(a).double() - outputs(b).double()).abs().max())


def cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    """Cosine similarity of two vectors, in float64 (1: same direction)."""
    a, b = a.double().flatten(), b.double().flatten()
    return float(a @ b / (a.norm() * b.norm()).clamp_min(1e-30))


@dataclass(frozen=True)
class ClassChange:
    """How a class prediction moved from p0 to p1 (numbers; ui/stages/experiments.py words it)."""

    top_before: int  # the top class before
    top_after: int  # the top class after
    before: float  # P(top_before) before
    after: float  # P(top_before) after
    new: float  # P(top_after) after

    @property
    def changed(self) -> bool:
        """The top class is another one."""
        return self.top_before != self.top_after

    @property
    def moved(self) -> bool:
        """The answer moved: another top class, or its probability moved by SAME_P or more."""
        return self.changed or abs(self.after - self.before) >= SAME_P


def class_change(p0: torch.Tensor, p1: torch.Tensor) -> ClassChange:
    """The top class before and after, and their probabilities (p0, p1: [K] probabilities)."""
    b0, b1 = int(p0.argmax()), int(p1.argmax())
    return ClassChange(b0, b1, float(p0[b0]), float(p1[b0]), float(p1[b1]))


def caption_parting(before: Generation, after: Generation) -> int | None:
    """The index of the first word where the two greedy captions differ (None: the same)."""
    if before.ids == after.ids:
        return None
    return next((i for i, (a, b) in enumerate(zip(before.ids, after.ids, strict=False))
                 if a != b), min(len(before.ids), len(after.ids)))


def forced_parting(ids: list[int], logits: torch.Tensor) -> tuple[int, int] | None:
    """Where a greedy caption would part from `ids`, read from one teacher-forced pass.

    `logits` [T, V] come from a pass fed [SOS] + ids[:-1] (position t predicts ids[t]). Returns
    (t, the id picked at t) for the first position whose greedy pick is not ids[t], or None
    when every pick is ids' own. When no text position sees the words after it, that pass with
    a change in place tells exactly whether the greedy caption written with the change is `ids`
    again, and where it first differs (every earlier word, fed, was its own pick).
    """
    picks = logits[:len(ids)].argmax(-1).tolist()
    return next(((t, a) for t, (a, b) in enumerate(zip(picks, ids, strict=True)) if a != b), None)


def similarities(before: Trace, after: Trace) -> dict[str, float]:
    """For a model without a head: the cosine similarity of each summary token (see `summary`)
    before vs after (1: unchanged direction)."""
    s0, s1 = summary(before), summary(after)
    return {name: cosine(s0[name], s1[name]) for name in s0}


def image_sight(config, mask: torch.Tensor) -> str:
    """How the image tokens see each other under `mask` (a trace's additive [S, S] mask, or
    [L, S, S] per block): "full" (in every block each sees every image token), "causal" (in
    every block each sees itself and those before it), or "other" (a window mask among them)."""
    n = config.num_image_tokens
    allowed = allowed_from_mask(mask)[..., :n, :n]
    if bool(allowed.all()):
        return "full"
    if bool((allowed == torch.ones(n, n, dtype=torch.bool).tril()).all()):
        return "causal"
    return "other"


def text_sees_ahead(config, mask: torch.Tensor) -> bool:
    """True when, under `mask` ([S, S], or [L, S, S] per block), some text position may attend
    to a text position after it in some block (the full mask: fed a caption, a position sees
    the very word it is scored on)."""
    n = config.num_image_tokens
    text = allowed_from_mask(mask)[..., n:, n:]
    return text.numel() > 0 and bool(text.triu(1).any())


def same_image_masks(model, a: str, b: str, n_text: int = 0) -> bool:
    """True when masks `a` and `b` allow exactly the same keys for this model and text length."""
    n = model.config.num_image_tokens
    return torch.equal(allowed_keys(a, n, n_text), allowed_keys(b, n, n_text))
