"""One masked-autoencoder pass in numbers (the MAE stage, ui/stages/mae/, words them): which
patches are hidden and in which order the encoder reads the rest, every tensor's shape, each
patch's squared error, the loss, and what a flat guess would score. Numbers only."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import torch

from ..mae import pixel_targets, visible_colour_errors


@dataclass(frozen=True)
class MAENumbers:
    """What the steps say about one pass: shapes, which patches, errors."""

    N: int
    grid: int
    P: int
    C: int
    D: int
    D_dec: int
    mode: str  # "random" | "click"
    ratio: float  # asked for (mode "random")
    hidden: tuple[int, ...]  # grid order
    visible: tuple[int, ...]  # in the order the encoder reads them
    error: np.ndarray  # (N,) each patch's squared error, mean over its P²C values
    flat: float | None  # the hidden patches' loss for a flat guess (flat_error)
    norm_pix: bool
    shapes: tuple[tuple[int, ...], ...]  # SHAPES' tensors, in that order
    lo: float  # the input's smallest and largest normalised value
    hi: float

    @property
    def n_hidden(self) -> int:
        return len(self.hidden)

    @property
    def n_visible(self) -> int:
        return len(self.visible)

    @property
    def S_enc(self) -> int:  # the encoder's tokens: CLS + the visible patches
        return 1 + self.n_visible

    @property
    def S_dec(self) -> int:  # the decoder's tokens: CLS + every patch
        return 1 + self.N

    @property
    def P2C(self) -> int:  # the values of one patch
        return self.P * self.P * self.C

    @property
    def enc_scores(self) -> int:  # one head's attention scores in an encoder block
        return self.S_enc ** 2

    @property
    def full_scores(self) -> int:  # ... were every patch read (CLS + N tokens)
        return self.S_dec ** 2

    @property
    def scores_share(self) -> float:
        return self.enc_scores / self.full_scores

    @property
    def loss(self) -> float | None:  # the mean error over hidden patches; None: none hidden
        return float(self.error[list(self.hidden)].mean()) if self.hidden else None

    @property
    def visible_error(self) -> float:
        return float(self.error[list(self.visible)].mean())

    @property
    def all_error(self) -> float:  # what the loss would be if it counted every patch
        return float(self.error.mean())

    @property
    def exact_visible(self) -> int:
        """⌊N (1 − r)⌋ in exact arithmetic, for the ratio asked."""
        return int(Fraction(self.N) * (1 - Fraction(self.ratio).limit_denominator(1000)))

    @property
    def flat_times(self) -> float | None:
        """How many times the flat guess's error the loss is lower (None: nothing hidden)."""
        if self.loss is None or self.flat is None:
            return None
        return float("inf") if self.loss == 0 else self.flat / self.loss

    @property
    def below_flat(self) -> float | None:
        """The share by which the loss is below the flat guess's (negative: above it)."""
        return None if self.loss is None or self.flat is None else 1 - self.loss / self.flat

    @property
    def hardest_times(self) -> float | None:
        """The hardest hidden patch's error in multiples of the loss."""
        return hardest_of(self.error, self.hidden)[1]

    @property
    def hardest(self) -> int | None:
        """The hidden patch with the largest error (None: none hidden)."""
        return hardest_of(self.error, self.hidden)[0]

    @property
    def easiest(self) -> int | None:
        return min(self.hidden, key=lambda p: self.error[p]) if self.hidden else None


def hardest_of(error, hidden) -> tuple[int | None, float | None]:
    """The hidden patch with the largest error, and its error in multiples of the hidden
    patches' mean (the loss); (None, None) when none is hidden.

    Args:
        error: [N] each patch's squared error. hidden: the hidden patches.
    """
    if not hidden:
        return None, None
    e = np.asarray(error, dtype=np.float64)
    worst = max(hidden, key=lambda p: e[p])
    return worst, float(e[worst] / e[list(hidden)].mean())


# The tensors whose shapes MAENumbers.shapes gives, in order (the stage names them).
SHAPES = ("patches", "encoder_input", "encoded", "decoder_input", "decoded", "pred")


def flat_error(out, pixels: torch.Tensor, patch_size: int, norm_pix: bool) -> torch.Tensor:
    """[N] what a flat guess scores on each patch, in the loss's own units: 0 everywhere after
    the per-patch normalisation (norm_pix), else every patch filled with the mean colour of the
    visible ones (vit_core.mae.visible_colour_errors)."""
    if norm_pix:
        return (out.target[0] ** 2).mean(-1)
    return visible_colour_errors(pixel_targets(pixels, patch_size), out.mask)[0]


def measure(out, pixels: torch.Tensor, encoder_config, mae_config, mode: str,
            ratio: float) -> MAENumbers:
    """The numbers of one MAE pass `out` (vit_core.mae's output, batch of one) on `pixels`."""
    c, m = encoder_config, mae_config
    hidden = tuple(int(i) for i in torch.nonzero(out.mask[0]).flatten())
    flat = None
    if hidden:
        flat = float(flat_error(out, pixels, c.patch_size, m.norm_pix_loss)[list(hidden)].mean())
    shapes = ((c.num_patches, c.patch_size**2 * c.in_chans),
              *(tuple(getattr(out, name).shape[1:]) for name in SHAPES[1:]))
    return MAENumbers(c.num_patches, c.grid, c.patch_size, c.in_chans, c.embed_dim,
                      m.decoder_dim, mode, ratio, hidden,
                      tuple(int(i) for i in out.ids_keep[0]), out.error[0].double().numpy(),
                      flat, m.norm_pix_loss, shapes, float(pixels.min()), float(pixels.max()))
