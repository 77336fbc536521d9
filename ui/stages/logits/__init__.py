"""Stage 7: logits, as the model family has them. A classifier: its class probabilities under a
temperature, the raw logits, and the logit lens. A captioner: the caption written word by word,
and a typed caption scored. A model without a head: its final token vector, and which patches
point like it."""

from __future__ import annotations

from ui.lesson import deck
from ui.lesson.deck import Step
from ui.selection import models
from ui.serving import tour
from ui.stages.logits.base import (
    CAPTION,
    TEMPERATURE,
    TEMPERATURE_Q,
    WIDGETS,
    Ctx,
    _captioner,
    _classifier,
    _headless,
    view,
)
from ui.stages.logits.captioner import (
    _scoring_describe,
    _scoring_facts,
    _scoring_figure,
    _scoring_notes,
    _scoring_words,
    _writing_describe,
    _writing_facts,
    _writing_figure,
    _writing_notes,
    _writing_question,
    _writing_words,
)
from ui.stages.logits.classifier import (
    _answer_describe,
    _answer_facts,
    _answer_figure,
    _answer_notes,
    _answer_question,
    _answer_words,
    _lens_describe,
    _lens_facts,
    _lens_figure,
    _lens_notes,
    _lens_question,
    _lens_words,
    _raw_describe,
    _raw_facts,
    _raw_figure,
    _raw_notes,
    _raw_words,
)
from ui.stages.logits.headless import (
    _headless_question,
    _similar_describe,
    _similar_figure,
    _similar_notes,
    _similar_words,
    _vector_describe,
    _vector_facts,
    _vector_figure,
    _vector_words,
)
from ui.stages.logits.words import (
    blind_words,
    caption_note,
    distribution_words,
    lens_words,
    readout_path,
    readout_words,
    scored_column,
)

__all__ = ["CAPTION", "STAGE", "TEMPERATURE", "TEMPERATURE_Q", "WIDGETS", "Ctx", "blind_words",
           "caption_note", "distribution_words", "lens_words", "readout_path", "readout_words",
           "scored_column", "view"]

# ---------------------------------------------------------------- the stage's intro
def _intro(x: Ctx) -> str:
    c = x.c
    if _classifier(c):
        return (f"{readout_words(c)} Softmax turns the scores into probabilities. Dividing the "
                f"logits by a temperature before the softmax makes the distribution sharper "
                f"(T < 1) or flatter (T > 1) without changing which class wins.")
    if _headless(c):
        return (f"{models.plain_label(x.name)} has no class head, so there are no class logits: "
                f"its output is the final token vectors themselves ({c.embed_dim} numbers "
                f"each).")
    return ("An image-to-text model reads the image tokens and then the text so far, starting "
            "with [SOS]. At every text position it produces one logit per word of its "
            "vocabulary: its guess for the next word. Generation picks a word, appends it, and "
            "runs again.")


STAGE = deck.Stage(
    slug="logits",
    name="Logits",
    icon=":material/bar_chart:",
    story="The head reads the final tokens (the CLS token, or the mean of the patch tokens, as "
          "this model was built): a classifier's linear layer gives a score per class, and "
          "softmax makes them probabilities. A captioner writes word by word; a model without "
          "a head hands over its final vectors.",
    view=view,
    intro=_intro,
    steps=(
        Step("answer", "From the last layer to an answer", _answer_figure, facts=_answer_facts,
             words=_answer_words, notes=_answer_notes, describe=_answer_describe,
             question=_answer_question,
             asks=("probs", "T"),
             applies=_classifier),
        Step("raw", "The raw logits", _raw_figure, facts=_raw_facts, words=_raw_words,
             notes=_raw_notes, describe=_raw_describe, applies=_classifier),
        Step("lens", "The logit lens: how the answer forms", _lens_figure, facts=_lens_facts,
             words=_lens_words, notes=_lens_notes, describe=_lens_describe,
             question=_lens_question,
             asks=("probs", "trained"),
             applies=_classifier),
        Step("caption", "Writing the caption, word by word", _writing_figure,
             facts=_writing_facts, words=_writing_words, notes=_writing_notes,
             describe=_writing_describe,
             question=_writing_question, asks=("probs",), reads=(tour.generation,),
             applies=_captioner),
        Step("score", "Score your own caption", _scoring_figure, facts=_scoring_facts,
             words=_scoring_words, notes=_scoring_notes, describe=_scoring_describe,
             applies=_captioner),  # reads nothing ahead: a typed caption is not known before
        Step("vector", "The final token vector", _vector_figure, facts=_vector_facts,
             words=_vector_words, describe=_vector_describe, question=_headless_question,
             applies=_headless),
        Step("similar", "Which patches point like it", _similar_figure, facts=_vector_facts,
             words=_similar_words, notes=_similar_notes, describe=_similar_describe,
             applies=_headless),
    ),
)
