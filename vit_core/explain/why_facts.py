"""The numbers the "Why this answer?" stage says, read from the library's outputs (attribution maps
and faithfulness.table rows): plain floats and tuples, no wording. Tested against float64 /
plain-torch references in tests/test_why_facts.py.

    m = map_facts(maps, grid)          # each map on one scale, its top patch, how many agree
    t = test_facts(rows)               # the deletion race: who removed the answer fastest
    frames = play_frames(curve, n)     # the Play: patches greyed and the probability, n frames
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

SCALE = (-1.0, 1.0)  # every map divided by its own largest |value|: one colour scale for all
CLEAR_SPREADS = 2.0  # a deletion AUC this many random spreads below random's mean: "clearly"
MIN_GAP = 0.02  # an AUC difference smaller than this (probability x fraction) is "the same"
PLAY_FRAMES = 8  # the Play greys the patches in this many groups


def scaled(values) -> np.ndarray:
    """A map in float64 divided by its largest |value| (an all-zero map stays zero)."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    peak = float(np.abs(v).max()) if v.size else 0.0
    return v / peak if peak > 0 else v


def top_patch(values, grid: int) -> tuple[int, int]:
    """(row, column) of the map's highest value (the first one on a tie)."""
    return divmod(int(np.argmax(np.asarray(values, dtype=np.float64).reshape(-1))), grid)


@dataclass(frozen=True)
class MapFacts:
    scaled: dict[str, np.ndarray]  # method -> [N] float64 in [-1, 1]
    tops: dict[str, tuple[int, int]]  # method -> (row, column) of its highest value
    places: int  # how many different patches the methods put first
    common: tuple[int, int]  # the patch most methods put first (the earliest method's on a tie)
    agreeing: tuple[str, ...]  # the methods that put `common` first, in order
    lo: float  # the lowest scaled value over every map
    hi: float  # the highest (1 unless every map is zero)


def map_facts(maps: dict, grid: int) -> MapFacts:
    """`maps`: {method: an Attribution (or anything with `.patches` [N])}, in display order."""
    scaled_maps = {m: scaled(a.patches.detach().double().cpu().numpy()) for m, a in maps.items()}
    tops = {m: top_patch(v, grid) for m, v in scaled_maps.items()}
    counts = Counter(tops.values())
    best = max(counts.values())
    common = next(t for t in tops.values() if counts[t] == best)
    values = np.concatenate(list(scaled_maps.values()))
    return MapFacts(scaled_maps, tops, len(counts), common,
                    tuple(m for m, t in tops.items() if t == common),
                    float(values.min()), float(values.max()))


@dataclass(frozen=True)
class TestFacts:
    deletion: dict[str, float]  # method -> deletion AUC (lower: the answer falls sooner)
    insertion: dict[str, float]  # method -> insertion AUC (higher: it comes back sooner)
    random_deletion: tuple[float, float]  # (mean, spread) over the random orders
    random_insertion: tuple[float, float]
    fastest: str  # the method with the lowest deletion AUC (the first on a tie)
    slowest: str  # the method with the highest deletion AUC
    gap: float  # random's mean deletion AUC minus the fastest's (> 0: faster than random)
    spreads: float  # gap / random's spread (inf when the spread is 0 and the gap is not)
    clearly: bool  # gap >= MIN_GAP and spreads >= CLEAR_SPREADS
    beat_random: tuple[str, ...]  # methods clearly below random (the same two thresholds)
    behind_random: tuple[str, ...]  # methods whose deletion AUC is above random's mean


def _clear(gap: float, spread: float) -> bool:
    return gap >= MIN_GAP and (gap >= CLEAR_SPREADS * spread)


def test_facts(rows) -> TestFacts:
    """`rows`: faithfulness.table's rows (a row per method, then "random")."""
    methods = [r for r in rows if r.method != "random"]
    rand = next(r for r in rows if r.method == "random")
    dele = {r.method: float(r.deletion_auc) for r in methods}
    ins = {r.method: float(r.insertion_auc) for r in methods}
    mean, spread = float(rand.deletion_auc), float(rand.deletion_spread or 0.0)
    fastest = min(dele, key=lambda m: (dele[m], list(dele).index(m)))
    slowest = max(dele, key=lambda m: (dele[m], -list(dele).index(m)))
    gap = mean - dele[fastest]
    spreads = gap / spread if spread > 0 else (float("inf") if gap > 0 else 0.0)
    return TestFacts(dele, ins, (mean, spread),
                     (float(rand.insertion_auc), float(rand.insertion_spread or 0.0)),
                     fastest, slowest, gap, spreads, _clear(gap, spread),
                     tuple(m for m, a in dele.items() if _clear(mean - a, spread)),
                     tuple(m for m, a in dele.items() if a > mean))


@dataclass(frozen=True)
class Frame:
    removed: int  # patches greyed so far
    probability: float  # the target's probability with them greyed
    greyed: tuple[int, ...]  # which (row-major patch indices)


def play_frames(curve, num_patches: int, frames: int = PLAY_FRAMES) -> list[Frame]:
    """The Play of a deletion curve: frame 0 the image as it is, then `frames` groups of the
    curve's steps (evenly spread over them, the last one every patch greyed), each with the
    probability the curve read there."""
    steps = len(curve.y) - 1
    picks = sorted({round(i * steps / frames) for i in range(frames + 1)})
    out = []
    for s in picks:
        n = int(round(float(curve.x[s]) * num_patches))
        out.append(Frame(n, float(curve.y[s]), tuple(int(i) for i in curve.order[:n])))
    return out
