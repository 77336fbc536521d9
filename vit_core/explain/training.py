"""How the weights came to be, in numbers: the training log read at one step, how alike
neighbouring position vectors are, how far each block's heads look, and which patches hold an
object whose outline is known. Numbers only: ui/stages/training.py words them.

The training log is `vit_core.training_log(name)` (vit_core/io/snapshots.py); its rows are
dicts with a "step". Like all of vit_core.explain this never imports the scene world: the CLS
ratio itself is vit_core.scenes.evaluate.object_attention_ratio, which the stage calls.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
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
