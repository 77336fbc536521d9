"""How the weights came to be, in numbers: the training log read at one step, how alike
neighbouring position vectors are, how far each block's heads look, and which patches hold an
object whose outline is known. Numbers only: ui/stages/training/ words them.

The training log is `vit_core.training_log(name)` (vit_core/io/snapshots.py); its rows are
dicts with a "step". Like all of vit_core.explain this never imports the scene world: the object's
pixels come in as a mask (the stage asks the scene world for it), and `object_ratio` is the
same ratio as vit_core.scenes.evaluate.object_attention_ratio, which the training log uses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import torch
from PIL import Image

from ..io.images import display_crop

SMOOTH_ROWS = 9  # the loss curve's running mean: this many log rows (every 10 steps: 90 steps)


# ---------------------------------------------------------------- the log at a step
def smooth(values, window: int = SMOOTH_ROWS) -> np.ndarray:
    """Trailing running mean over `window` values (the first ones average what there is)."""
    v = np.asarray(values, dtype=np.float64)
    if not v.size:
        return v
    c = np.cumsum(np.insert(v, 0, 0.0))
    idx = np.arange(1, v.size + 1)
    lo = np.maximum(idx - window, 0)
    return (c[idx] - c[lo]) / (idx - lo)


def row_at(rows, step: int) -> dict | None:
    """The row logged at exactly `step`, else None."""
    return next((r for r in rows if int(r["step"]) == step), None)


def series(rows, key: str) -> tuple[list[int], list[float]]:
    """(steps, values) of the rows that have `key`, in step order."""
    have = sorted((r for r in rows if key in r), key=lambda r: int(r["step"]))
    return [int(r["step"]) for r in have], [float(r[key]) for r in have]


def held_out_at(log, step: int) -> dict | None:
    """The held-out measurement of the weights after `step` steps, with how many scenes it
    took: the snapshot's own row (on `log.snapshot_eval` scenes) or else the held-out curve's
    row at that step (on `eval_n` scenes); None when the log has neither."""
    snap = log.snapshot(step)
    if snap is not None and "top1" in snap:
        return {**snap, "n": int(log.snapshot_eval["n"])}
    row = row_at(log.held_out, step)
    if row is not None and "top1" in row:
        return {**row, "n": int(log.recipe.get("eval_n", 0))}
    return None


def log_facts(log, step: int) -> dict:
    """What a training log says with step `step` marked: its curves ("loss" and its running
    mean "smooth", held-out "top1" and "miou", "kept_top1", "lr": (steps, values) each), its
    rows at the step, the first, the last and the end ("row", "first", "last", "end_row"), the
    held-out measurement at the step and at the end ("held", "end": held_out_at), and how many
    scenes were seen by the step and in all ("seen", "seen_all": one new batch per step)."""
    T, r = log.final_step, log.recipe
    loss = series(log.train, "loss")
    batch = int(r["batch"]) if "batch" in r else None
    return {"log": log, "S": step, "T": T, "recipe": r, "steps": log.steps,
            "loss": loss, "smooth": smooth(loss[1]),
            "top1": series(log.held_out, "top1"), "miou": series(log.held_out, "miou"),
            "kept_top1": series(log.snapshots, "top1"),
            "row": row_at(log.train, step), "first": log.train[0] if log.train else None,
            "last": log.train[-1] if log.train else None, "end_row": row_at(log.train, T),
            "held": held_out_at(log, step), "end": held_out_at(log, T),
            "lr": series(log.train, "lr"), "minutes": log.seconds / 60,
            "seen": None if batch is None else step * batch,
            "seen_all": None if batch is None else T * batch}


def top_from(steps, tops, k: int) -> int | None:
    """The first of `steps` from which class `k` is the top class at every later step (`tops`:
    the top class at each step, in the same order); None when it is not the top at the last."""
    since = None
    for s, t in zip(steps, tops, strict=True):
        since = (since if since is not None else s) if t == k else None
    return since


def uniform_loss(num_classes: int) -> float:
    """Cross-entropy of a prediction spread evenly over K classes: ln K, whatever the target
    (one-hot or label-smoothed: the targets sum to 1 and every log-probability is -ln K)."""
    return math.log(num_classes)


# ---------------------------------------------------------------- position embeddings
def position_closeness(stats: dict) -> dict:
    """How much more alike the position vectors of neighbouring patches are than those of far
    patches, from `vit_core.explain.embeddings.position_distance_stats(pos_embed, grid)`:

    {"near": mean cosine of patches 1 step apart (None on a 1x1 grid), "far": of patches at
    least `far_from` steps apart (None when none are), "far_from", "gap": near - far (None
    without both)}."""
    near, far = stats["near"], stats["far"]
    return {"near": near, "far": far, "far_from": stats["far_from"],
            "gap": None if near is None or far is None else near - far}


def best_of(values, tie: float = 0.0, exclude: int | None = None) -> tuple[int, ...]:
    """The indices whose value is within `tie` of the highest, `exclude` left out (e.g. the
    patches whose position vector is most like patch p's: a row of cosines, excluding p).

    Args:
        values: [N] (or [g, g], read row by row).
    """
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    others = np.flatnonzero(np.arange(v.size) != (-1 if exclude is None else exclude))
    if not others.size:
        return ()
    best = v[others].max()
    return tuple(int(i) for i in others if v[i] >= best - tie)


# ---------------------------------------------------------------- attention distance
def layer_distances(distance) -> dict:
    """Per block: the mean, nearest and furthest of its heads' mean attention distances.

    Args:
        distance: [L, H] px (vit_core.explain.attention.mean_attention_distance per layer).
    """
    d = np.asarray(distance, dtype=np.float64)
    return {"mean": d.mean(1), "lo": d.min(1), "hi": d.max(1)}


def spread(values) -> tuple[float, float]:
    """(smallest, largest) of `values`, as floats."""
    v = np.asarray(values, dtype=np.float64)
    return float(v.min()), float(v.max())


def local_heads(distance, baseline: float, share: float) -> int:
    """How many heads look closer than `share` x the even-spread distance `baseline`."""
    return int((np.asarray(distance, dtype=np.float64) < share * baseline).sum())


# ---------------------------------------------------------------- an object's pixels
def crop_mask(mask: np.ndarray, config) -> np.ndarray:
    """A pixel mask of the image (0 = background) put through the same resize and centre crop
    as its pixels (vit_core.io.images.display_crop), nearest neighbour: [img_size, img_size]."""
    img = Image.fromarray(np.asarray(mask, dtype=np.uint8))
    nearest = SimpleNamespace(img_size=config.img_size, resize_to=config.resize_to,
                              resize_mode=config.resize_mode, interpolation="nearest")
    return np.asarray(display_crop(img.convert("RGB"), nearest))[..., 0].copy()


def object_cover(mask: np.ndarray, grid: int, patch_size: int) -> np.ndarray:
    """[N]: the share of each patch's pixels that are on the object (mask > 0)."""
    m = np.asarray(mask)[: grid * patch_size, : grid * patch_size] > 0
    return m.reshape(grid, patch_size, grid, patch_size).mean((1, 3)).reshape(-1)


def grid_steps(a: int, b: int, grid: int) -> int:
    """How many steps along rows and columns patch `a` is from patch `b` (|Δrow| + |Δcol|)."""
    return abs(a // grid - b // grid) + abs(a % grid - b % grid)


def local_blocks(distance, baseline: float, share: float) -> list[int]:
    """The blocks with at least one head closer than `share` x `baseline` (local_heads > 0).

    Args:
        distance: [L, H] px.
    """
    d = np.asarray(distance, dtype=np.float64)
    return [i for i in range(len(d)) if local_heads(d[i], baseline, share)]


# ---------------------------------------------------------------- CLS attention on an object
def cls_patch_row(prefix_rows, num_prefix: int, num_patches: int) -> torch.Tensor:
    """[N] float64: CLS's attention to each patch, the mean over the heads.

    Args:
        prefix_rows: [H, num_prefix, S] one block's prefix-token rows of the pattern
            (vit_core.explain.attention.summarise's "prefix_rows", one entry).
    """
    rows = torch.as_tensor(prefix_rows)
    return rows[:, 0, num_prefix:num_prefix + num_patches].double().mean(0)


def object_ratio(cls, cover) -> float | None:
    """The share of `cls` (attention over the patches) landing on an object's pixels, each
    patch's share spread evenly over its pixels, divided by the object's share of the image
    (1: an even spread); None when nothing is attended or no pixel is the object's.

    Args:
        cls: [N] attention to each patch (any scale). cover: [N] each patch's object share
            (object_cover).
    """
    a = np.asarray(cls, dtype=np.float64).reshape(-1)
    c = np.asarray(cover, dtype=np.float64).reshape(-1)
    if a.sum() <= 0 or not (c > 0).any():
        return None
    return float((a * c).sum() / a.sum() / c.mean())


def object_attention(cls, cover) -> dict:
    """How much of `cls` lands on the object whose patch shares are `cover` (object_cover):
    {"ratio": object_ratio, "cover": the object's share of the image, "on_object": the share
    of the attention on its pixels, ratio x cover}; each None without an object or attention."""
    ratio = object_ratio(cls, cover)
    share = float(np.asarray(cover, dtype=np.float64).mean())
    return {"ratio": ratio, "cover": None if ratio is None else share,
            "on_object": None if ratio is None else ratio * share}


def attention_shares(cls, tie: float) -> tuple[np.ndarray, tuple[int, ...]]:
    """`cls` as shares summing to 1 (as it is when it sums to 0), and the patches whose share
    is within `tie` x the largest of it (best_of): none when nothing is attended."""
    a = np.asarray(cls, dtype=np.float64).reshape(-1)
    total = float(a.sum())
    if total <= 0:
        return a, ()
    share = a / total
    return share, best_of(share, tie=tie * float(share.max()))


# ---------------------------------------------------------------- the prediction over training
def softmax64(logits) -> np.ndarray:
    """[K] float64 softmax of one row of logits."""
    return torch.as_tensor(logits).double().reshape(-1).softmax(-1).numpy()


@dataclass(frozen=True)
class PredictionCurve:
    """One image's prediction at every kept step: the final weights' top class and its
    probability at each step, and from which step on it stays on top (top_from)."""

    steps: list[int]
    curve: list[float]  # P(final) at each step
    final: int  # the last step's top class
    since: int | None
    start: np.ndarray | None  # the probabilities at step 0, when it was kept


def prediction_curve(steps, probs) -> PredictionCurve:
    """From the probabilities `probs[i]` ([K] each) of the weights after `steps[i]` steps."""
    steps = list(steps)
    k = int(np.argmax(probs[-1]))
    tops = [int(np.argmax(p)) for p in probs]
    return PredictionCurve(steps, [float(p[k]) for p in probs], k, top_from(steps, tops, k),
                           probs[steps.index(0)] if 0 in steps else None)
