"""Stage 10: change one thing, rerun the model, and compare the two results.

The steps: choose a change (and see what the model is fed: `change`), the two results before
and after (`compare`, its note `notice`, its question in `question`), (a captioner's) each word
of its caption scored by both runs, and the order of the patches without positions (`order`).
The session's view is `view`; numbers are printed as `printed` says. Facts are decided once,
from the traces' mask tensors (vit_core.explain.readout's `image_blind` /
`prefix_sees_no_patch`, vit_core.explain.interventions' `image_sight` / `text_sees_ahead`),
never from a mask's name, computed in vit_core.explain (interventions, experiment_facts) and
worded here.
"""

from __future__ import annotations

from ui.lesson import deck
from ui.lesson.deck import Step
from ui.serving import tour
from ui.stages.experiments import reads
from ui.stages.experiments.change import (
    change_facts,
    change_figure,
    change_notes,
    change_words,
    shuffled_words,
)
from ui.stages.experiments.compare import (
    caption_change_words,
    class_change_words,
    compare_facts,
    compare_figure,
    compare_notes,
    compare_words,
    similarity_words,
)
from ui.stages.experiments.describe import (
    change_describe,
    compare_describe,
    fed_describe,
    unordered_describe,
)
from ui.stages.experiments.notice import notice_facts, notice_words, window_notice
from ui.stages.experiments.order import (
    fed_facts,
    fed_figure,
    fed_words,
    unordered_facts,
    unordered_figure,
    unordered_notes,
    unordered_words,
)
from ui.stages.experiments.printed import family, moved, names_of, points, share
from ui.stages.experiments.question import (
    after_question,
    class_choice,
    cosine_number,
    unordered_question,
)
from ui.stages.experiments.view import KINDS, SHUFFLES, Ctx, around, intro, mask_options, view

__all__ = ["STAGE", "KINDS", "SHUFFLES", "Ctx", "around", "caption_change_words",
           "class_change_words", "class_choice", "cosine_number", "deck", "family", "mask_options",
           "moved", "names_of", "notice_facts", "notice_words", "points", "share",
           "shuffled_words", "similarity_words", "view", "window_notice"]


def _has_text(c) -> bool:
    return bool(c.has_text)


STAGE = deck.Stage(
    slug="experiments",
    name="Experiments",
    icon=":material/science:",
    story="Now break it on purpose: switch off heads, hide patches, remove positions. What "
          "changes tells us what each part was doing.",
    view=view,
    intro=intro,
    extra_reads=(tour.generation, tour.caption_pass),
    steps=(
        Step("change", "Choose a change", change_figure, facts=change_facts,
             words=change_words, notes=change_notes, describe=change_describe),
        Step("compare", "Before and after", compare_figure, facts=compare_facts,
             words=compare_words, notes=compare_notes, describe=compare_describe,
             question=after_question,
             asks=("family", "empty", "p0", "p1", "gen0", "gen1", "sims", "blind", "uniform",
                   "trained"), reads=(reads.experiment,)),
        Step("words", "Each word of the caption, before and after", fed_figure,
             facts=fed_facts, words=fed_words, describe=fed_describe, reads=(reads.experiment,),
             applies=_has_text),
        Step("unordered", "Shuffled without positions", unordered_figure,
             facts=unordered_facts, words=unordered_words, notes=unordered_notes,
             describe=unordered_describe,
             question=unordered_question, reads=(reads.unordered_runs,)),
    ),
)
