"""What some stages' controls offer, apart from the stages that draw them: the live class's
follow rules (ui/live/follow.py) check a teacher's choice against these for the student's model
without importing a stage (a stage imports the deck, and the deck reaches the class)."""

from __future__ import annotations

from ui.stages import common
from vit_core import MASK_KINDS
from vit_core.io.mae_files import bundled_maes, is_mae
from vit_core.masks import window_name

# Attention: what the score matrix shows
VIEWS = ("raw scores q·k", "scaled scores q·k/√d_k", "softmax pattern A")

# Experiments: the radio's labels -> the intervention (vit_core.explain.interventions.KINDS)
KINDS = {
    "Switch off attention heads": "heads",
    "Grey out patches": "occlude",
    "Remove position embeddings": "positions",
    "Shuffle the patches": "shuffle",
    "Shuffle the patches and remove positions": "shuffle_no_positions",
    "Apply another attention mask": "mask",
}

# Why this answer?, where the answer is formed: what the image is patched against (the
# object's patches greyed, the whole image greyed or blurred, another sample scene)
PATCH_AGAINST = ("object", "grey", "blur", "other")


def mask_options(c, run_mask: str) -> list[str]:
    """The masks the run after may use: the other plain masks, then M x M windows (plain, and
    shifted on odd blocks) for the window sides smaller than the grid."""
    windows = [window_name(m, shifted) for m in common.window_sizes(c) for shifted in (False, True)]
    return [k for k in (*MASK_KINDS, *windows) if k != run_mask]


# MAE: the shares of patches offered to hide (5 … 95 %) and how they are chosen
RATIO_CHOICES = tuple(round(0.05 * k, 2) for k in range(1, 20))
MODES = {"random": "At random: a share of them", "click": "The patches I click"}
DEFAULT_MAE = "shapes-mae"  # the MAE shown when the session's model is not one


def mae_for(session_model: str) -> str | None:
    """The MAE the stage runs: the session's model if it is one, else the bundled one."""
    if is_mae(session_model):
        return session_model
    if is_mae(DEFAULT_MAE):
        return DEFAULT_MAE
    return next(iter(bundled_maes()), None)
