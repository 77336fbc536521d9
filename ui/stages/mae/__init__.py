"""Stage 12: masked patches (MAE). Hide most of the patches, let the encoder read only the rest,
and watch a light decoder paint the hidden ones back; the loss counts the hidden patches only.

The stage runs a masked autoencoder on the session's image: the session's model when it is one
(the bundled shapes-mae, an `hf:` ViTMAE, a ViTMAE folder), else the bundled MAE. Every number
said comes from that one pass (ui/state.mae_run)."""

from __future__ import annotations

from ui.lesson import deck
from ui.lesson.deck import Step
from ui.stages.mae.base import (
    DEFAULT_MAE,
    MODES,
    NO_MAE,
    RATIO_CHOICES,
    Ctx,
    _intro,
    flat_guess,
    mae_for,
    measure,
    view,
)
from ui.stages.mae.errors import (
    _error_figure,
    _error_question,
    _error_words,
    _loss_figure,
    _loss_question,
    _loss_words,
    _reconstruction_figure,
    _reconstruction_question,
    _reconstruction_words,
)
from ui.stages.mae.hide import (
    _hide_figure,
    _hide_question,
    _hide_words,
    _shapes_figure,
    _shapes_notes,
    _shapes_question,
    _shapes_words,
)
from ui.stages.mae.pictures import error_map, loss_bars, token_strips

__all__ = ["DEFAULT_MAE", "MODES", "NO_MAE", "RATIO_CHOICES", "STAGE", "Ctx", "error_map",
           "flat_guess", "loss_bars", "mae_for", "measure", "token_strips", "view"]

# ---------------------------------------------------------------- the stage
STAGE = deck.Stage(
    slug="mae",
    name="Masked patches (MAE)",
    icon=":material/blur_on:",
    story=("Hide three quarters of the patches and ask the model to paint them back: a masked "
           "autoencoder learns what images look like from the images alone. Its encoder is a "
           "plain ViT that reads only the visible patches; a small decoder fills in the rest."),
    view=view,
    intro=_intro,
    steps=(
        Step("hide", "Hide patches", _hide_figure, measure, _hide_words,
             question=_hide_question, asks=("N",)),
        Step("shapes", "The encoder reads fewer tokens; the decoder all of them", _shapes_figure,
             measure, _shapes_words, _shapes_notes, question=_shapes_question,
             asks=("N", "S_dec", "n_hidden", "n_visible")),
        Step("reconstruction", "The reconstruction", _reconstruction_figure, measure,
             _reconstruction_words, question=_reconstruction_question,
             asks=("n_hidden", "n_visible")),
        Step("error", "Error per patch", _error_figure, measure, _error_words,
             question=_error_question, asks=("error", "grid", "hidden", "loss")),
        Step("loss", "The loss counts hidden patches only", _loss_figure, measure, _loss_words,
             question=_loss_question, asks=("hidden", "loss", "n_hidden")),
    ),
)
