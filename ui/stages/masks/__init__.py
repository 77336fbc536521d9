"""Stage 5: attention masks. Who may look at whom: full, causal and bidirectional-prefix (`three`);
the captioners' attention live under the prefix and causal masks, and how sure they are of a
caption the student types (`live`); a classifier put under a causal mask (`classifier`); and
windowed attention (Swin's local windows, shifted on alternate blocks) with what it saves and,
for the bundled classifier, what it costs in top-1 (`windowed`). The session's view and what the
steps share is `view`; the numbers come from vit_core.explain (mask_facts, windows)."""

from __future__ import annotations

from ui.lesson import deck
from ui.lesson.deck import Step
from ui.serving import tour
from ui.stages.masks import classifier, live, reads, three, windowed
from ui.stages.masks.view import Ctx, _same_for_every_image, intro, side_by_side, view

__all__ = ["STAGE", "Ctx", "_same_for_every_image", "side_by_side", "tour", "view"]

STAGE = deck.Stage(
    slug="masks",
    name="Masks: who may look at whom",
    nav="Masks", icon=":material/grid_goldenratio:",
    story="A mask decides who may look at whom. Text may only read earlier words; the image "
          "patches may read each other in both directions.",
    view=view,
    intro=intro,
    steps=(
        Step("three", "Three masks", three.three_figure, facts=three.tokens,
             words=three.three_words, notes=three.three_notes, question=three.three_question,
             describe=three.three_alt),
        Step("visible", "How many keys each query may see", three.visible_figure,
             facts=three.visible_facts, words=three.visible_words, notes=three.visible_notes,
             question=three.visible_question, describe=three.visible_alt),
        Step("live", "The captioners' attention, live", live.live_figure, facts=live.live_facts,
             words=live.live_words, notes=live.live_notes, describe=live.live_alt,
             reads=(reads.masks_runs,)),
        Step("scores", "How sure they are of your caption", live.scores_figure,
             facts=live.scores_facts, words=live.scores_words, notes=live.scores_notes,
             describe=live.scores_alt,
             reads=(reads.masks_scores,)),
        Step("classifier", "A classifier under a causal mask", classifier.classifier_figure,
             facts=classifier.classifier_facts, words=classifier.classifier_words,
             notes=classifier.classifier_notes, question=classifier.classifier_question,
             describe=classifier.classifier_alt,
             reads=(reads.causal_classifier,)),
        Step("windows", "Windowed attention", windowed.windows_figure,
             facts=windowed.windows_facts, words=windowed.windows_words,
             notes=windowed.windows_notes, question=windowed.windows_question,
             describe=windowed.windows_alt,
             asks=("allowed", "bands", "centre", "size"),
             reads=(reads.window_top1,), applies=windowed.has_windows),
    ),
)
