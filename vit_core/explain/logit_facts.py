"""The Logits stage's numbers (ui/stages/logits/ words them): a classifier's probabilities at a
temperature, its raw logits in order, the logit lens at that temperature, a captioner's next
word, a typed caption's least and most likely words, and whether a text position can read the
words after it. Numbers only; the wording thresholds are the stage's."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..config import MASK_KINDS
from ..masks import allowed_keys
from .lens import logit_lens
from .readout import lens_lines


def tempered(logits: torch.Tensor, T: float) -> np.ndarray:
    """softmax(logits / T) over the last axis, in the logits' own dtype."""
    return (torch.as_tensor(logits) / T).softmax(-1).numpy()


def top_of(probs) -> tuple[int, float]:
    """The most probable entry of one distribution (the first on a tie) and its probability."""
    p = np.asarray(probs).reshape(-1)
    k = int(np.argmax(p))
    return k, float(p[k])


@dataclass(frozen=True)
class LogitOrder:
    """One row of logits in numbers: its range and its two highest entries."""

    lo: float
    hi: float
    first: int  # the highest logit's class
    second: int | None  # the runner-up's (None with one class)


def logit_order(z) -> LogitOrder:
    v = np.asarray(z, dtype=np.float64).reshape(-1)
    order = np.argsort(-v)
    return LogitOrder(float(v.min()), float(v.max()), int(order[0]),
                      int(order[1]) if v.size > 1 else None)


@dataclass(frozen=True)
class LensAt:
    """The logit lens at temperature T, and which classes its chart draws."""

    probs: np.ndarray  # [L + 1, K] softmax(lens logits / T); row 0 after the embedding
    drawn: list[int]  # readout.lens_lines
    left_out: list[int]  # classes on top at some depth that the chart does not draw


def lens_at(model, trace, T: float) -> LensAt:
    probs = tempered(logit_lens(model, trace), T)
    drawn, left_out = lens_lines(tempered(trace.logits, T), probs)
    return LensAt(probs, drawn, left_out)


def live_words(probs) -> int:
    """How many words keep any probability (top-k, or a float underflow, leaves the rest 0)."""
    return int((np.asarray(probs) > 0).sum())


@dataclass(frozen=True)
class CaptionScores:
    """A scored caption's least and most likely words, and those under a threshold."""

    low: tuple[str, float]
    high: tuple[str, float]
    doubted: list[str]  # in caption order


def caption_scores(words, probs, doubted: float) -> CaptionScores | None:
    """From a caption's words and each one's probability; None for no words."""
    pairs = [(w, float(p)) for w, p in zip(words, probs, strict=True)]
    if not pairs:
        return None
    return CaptionScores(min(pairs, key=lambda wp: wp[1]), max(pairs, key=lambda wp: wp[1]),
                         [w for w, p in pairs if p < doubted])


def sees_ahead(mask_kind: str, n_image: int) -> bool:
    """True when under `mask_kind` a text position also sees the text after it (full)."""
    return mask_kind in MASK_KINDS and bool(allowed_keys(mask_kind, n_image, 2)[-2, -1])
