"""The MAE stage's view (the MAE shown and its pass under the masking chosen), its
thresholds, and what every step shares."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st
from PIL import Image

from ui import keys
from ui.lesson import deck
from ui.serving import state
from ui.stages import choices
from vit_core.explain.mae_facts import MAENumbers as Numbers
from vit_core.explain.mae_facts import measure as measure_pass

DEFAULT_MAE = choices.DEFAULT_MAE  # the MAE shown when the session's model is not one
RATIO_CHOICES = choices.RATIO_CHOICES  # the shares offered: 5 … 95 %
MODES = choices.MODES
HIDDEN_GREY = (128, 128, 128)  # how a hidden patch is drawn in the encoder's input
TEXT_CELLS = 64  # token strips and grids print patch numbers up to this many patches
ROW_TEXT = 30  # the decoder's row prints its patch numbers up to this many tokens (all or none)
CLEARLY = 1.1  # an error this many times lower than the flat guess's is said as "N× lower"
NO_MAE = ("This stage runs a masked autoencoder, and none is on this machine: the bundled one "
          "is trained by `bash tools/train_bundled.sh`, and a pretrained one is fetched with "
          "`.venv/bin/python -m vit_core.fetch facebook/vit-mae-base` (then choose "
          "hf:facebook/vit-mae-base in the sidebar).")


mae_for = choices.mae_for


# ---------------------------------------------------------------- the stage's view
@dataclass(frozen=True)
class Ctx:
    """The session's view, the MAE shown and its pass under the masking chosen."""

    v: deck.View
    mae_name: str | None  # None: no MAE on this machine
    mae: Any
    mode: str  # "random" | "click"
    ratio: float  # the share hidden at random (mode "random")
    run: Any  # ui/state.MAERun, or None without an MAE
    crop: Image.Image | None  # the image as the MAE sees it

    def __getattr__(self, name):  # the view's fields (inp, name, …)
        return getattr(self.v, name)

    @property
    def own(self) -> bool:
        """The session's model is the MAE shown."""
        return self.mae_name == self.v.name


def _keep(key: str, default) -> None:
    """Keep a widget's value while a presenter step without that widget runs (Streamlit drops
    the value of a widget a run does not draw)."""
    st.session_state[key] = st.session_state.get(key, default)


def view() -> Ctx:
    v = deck.load()
    name = mae_for(v.name)
    if name is None:
        return Ctx(v, None, None, "random", 0.75, None, None)
    mae = state.get_mae(name)
    N = mae.encoder.config.num_patches
    ss = st.session_state
    _keep(keys.MAE_MODE, "random")
    if ss.get(keys.MAE_RATIO) not in RATIO_CHOICES:  # first visit: the MAE's own ratio
        ss[keys.MAE_RATIO] = min(RATIO_CHOICES, key=lambda r: abs(r - mae.config.mask_ratio))
    _keep(keys.MAE_RATIO, ss[keys.MAE_RATIO])
    ss.setdefault(keys.MAE_SEED, 0)
    hidden = [p for p in ss.get(keys.MAE_HIDDEN, []) if p < N][:N - 1]  # one stays visible
    ss[keys.MAE_HIDDEN] = hidden
    mode, ratio = str(ss[keys.MAE_MODE]), float(ss[keys.MAE_RATIO])
    run = state.mae_run(v.inp, name, ratio, int(ss[keys.MAE_SEED]),
                        hidden if mode == "click" else None)
    return Ctx(v, name, mae, mode, ratio, run, state.prepare(v.inp, name).crop)


def _intro(x: Ctx) -> str | None:
    if x.run is None:
        return None
    return ("A masked autoencoder learns from images alone, without labels: most patches are "
            "hidden, the encoder (a plain ViT) reads only the visible ones, and a small decoder "
            "has to paint the hidden ones back from what the encoder made of them. The loss is "
            "the reconstruction error on the hidden patches only. What the encoder learns this "
            "way is then reused: every other stage runs on this MAE's encoder too.")


# ---------------------------------------------------------------- the numbers of one pass
SHAPE_WORDS = (  # vit_core.explain.mae_facts.SHAPES, as the shapes table names them
    ("the image cut into patches", "N × P²C"),
    ("CLS + the visible patches, embedded, with positions: the encoder's input",
     "(1 + N_vis) × D"),
    ("the encoder's output (after its final LayerNorm)", "(1 + N_vis) × D"),
    ("mapped to the decoder's width, [MASK] tokens added, back in patch order, + positions:"
     " the decoder's input", "(1 + N) × D_dec"),
    ("the decoder's output", "(1 + N) × D_dec"),
    ("the prediction: P²C pixel values per patch (CLS dropped)", "N × P²C"),
)
LOSS_TEX = (r"\mathcal{L} = \frac{1}{|M|}\sum_{i\in M}\frac{\lVert \hat x_i - x_i\rVert^2}"
            r"{P^2 C}")  # the loss as the stage writes it; M: the hidden patches


def measure(x: Ctx) -> Numbers | None:
    """The numbers of this page's pass (vit_core.explain.mae_facts.measure); None without an
    MAE."""
    if x.run is None:
        return None
    return measure_pass(x.run.out, x.run.pixels, x.mae.encoder.config, x.mae.config, x.mode,
                        x.ratio)


def flat_guess(f: Numbers) -> str:
    """What the flat guess of `Numbers.flat` is, as a phrase."""
    if f.norm_pix:
        return "predicting every hidden patch flat (0 after the per-patch normalisation)"
    return "filling every hidden patch with the mean colour of the visible ones"


def _no_mae(x: Ctx, first: bool = False) -> bool:
    """Without an MAE: say how to get one (on the first step; the others point there)."""
    if x.run is None:
        if first:
            st.info(NO_MAE)
        else:
            st.caption("No masked autoencoder is on this machine: the first step says how to "
                       "get one.")
        return True
    return False


def _which(x: Ctx) -> str:
    """The sentence that says which model runs here, when it is not the session's."""
    if x.own:
        return ""
    return (f"The sidebar's model, {x.v.name}, is not a masked autoencoder, so this stage runs "
            f"the MAE {x.mae_name} on the same image. ")
