"""Stage 11: how the weights were learned. A bundled model trained here with snapshots
(vit_core.training_log) runs at any kept step (the sidebar's "Training step"); this stage draws
its training curves and, at the chosen step beside the final weights, what the ViT paper points
to: position similarity, mean attention distance, CLS attention on the object, the prediction.
A model without a log (a preset, a fetched ViT, a captioner) shows its only weights."""

from __future__ import annotations

from ui.lesson import deck
from ui.lesson.deck import Step
from ui.serving import tour
from ui.stages.training.base import _intro, view
from ui.stages.training.cls import (
    _cls_describe,
    _cls_facts,
    _cls_figure,
    _cls_notes,
    _cls_question,
    _cls_words,
    _has_cls,
    cls_figure,
    object_mask,
)
from ui.stages.training.curves import (
    _curves_describe,
    _curves_facts,
    _curves_figure,
    _curves_notes,
    _curves_question,
    _curves_words,
    curves_figure,
)
from ui.stages.training.distance import (
    _distance_describe,
    _distance_facts,
    _distance_figure,
    _distance_notes,
    _distance_question,
    _distance_words,
    distance_figure,
)
from ui.stages.training.positions import (
    _positions_describe,
    _positions_facts,
    _positions_figure,
    _positions_notes,
    _positions_question,
    _positions_words,
)
from ui.stages.training.prediction import (
    _classifies,
    _prediction_describe,
    _prediction_facts,
    _prediction_figure,
    _prediction_notes,
    _prediction_question,
    _prediction_words,
    prediction_figure,
)

__all__ = ["STAGE", "cls_figure", "curves_figure", "distance_figure", "object_mask",
           "prediction_figure", "view"]

STAGE = deck.Stage(
    slug="training",
    name="Training",
    icon=":material/trending_up:",
    story="Every weight on the other pages was learned: training starts from random numbers "
          "and nudges them, batch after batch, to lower a loss. Here the run's curves, and at "
          "the chosen training step, beside the final weights: the position embeddings, how "
          "far the heads look, where CLS looks and what the model predicts.",
    view=view,
    intro=_intro,
    steps=(
        Step("curves", "Loss and held-out accuracy, step by step", _curves_figure,
             facts=_curves_facts, words=_curves_words, notes=_curves_notes,
             describe=_curves_describe,
             question=_curves_question, asks=("log", "loss", "recipe")),
        Step("positions", "Position embeddings: neighbours against far positions",
             _positions_figure, facts=_positions_facts, words=_positions_words,
             notes=_positions_notes, describe=_positions_describe, question=_positions_question,
             asks=("runs",), controls=("patch",),
             reads=(tour.weight_views,)),
        Step("distance", "How far the heads look, block by block", _distance_figure,
             facts=_distance_facts, words=_distance_words, notes=_distance_notes,
             describe=_distance_describe,
             question=_distance_question, asks=("baseline", "runs"),
             reads=(tour.attention_summary,)),
        Step("cls", "CLS attention on the object", _cls_figure, facts=_cls_facts,
             words=_cls_words, notes=_cls_notes, describe=_cls_describe, question=_cls_question,
             asks=("blind", "cover", "known", "runs"), applies=_has_cls,
             reads=(tour.attention_summary,)),
        Step("prediction", "The prediction at every kept step", _prediction_figure,
             facts=_prediction_facts, words=_prediction_words, notes=_prediction_notes,
             describe=_prediction_describe,
             question=_prediction_question,
             asks=("curve", "final", "names", "probs", "steps"), applies=_classifies),
    ),
)
