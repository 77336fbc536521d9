"""Stage 13: why this answer? Six maps say which patches made the model's answer; each claim is
put to a test (grey the patches it names and watch the answer fall), checked against a model
with random weights, and traced through the blocks by patching activations.

Every number comes from vit_core.explain (attribution, faithfulness, patching) on the session's
image, computed once per image on the server's worker (ui/stages/why/compute.py); on a big model
each step whose numbers take long (the maps, the test, a guess's score, sanity, patching, a
word's maps) shows a progress bar until they are there (ui/stages/why/jobs.py, waiting.py)."""

from __future__ import annotations

from ui.lesson import deck
from ui.lesson.deck import Step
from ui.stages.why import (
    compute,
    guess,
    maps,
    patch_compute,
    patching,
    sanity,
    test,
    word_compute,
    words,
)
from ui.stages.why.waiting import waits

STAGE = deck.Stage(
    slug="why",
    name="Why this answer?",
    nav="Why this answer?",
    icon=":material/psychology_alt:",
    story=("The model gave an answer; which patches made it? Six methods each draw a map, and "
           "they do not agree. A map is a claim we can test: grey the patches it names first and "
           "watch the answer fall."),
    view=deck.load,
    steps=(
        waits(Step("guess", guess.TITLE, guess.figure, guess.facts, guess.words,
                   notes=guess.notes, describe=guess.describe, question=guess.question,
                   reads=(compute.table_read,), applies=compute.applies,
                   holds=guess.holds, asks=guess.ASKS)),
        waits(Step("maps", maps.title, maps.figure, maps.facts, maps.words,
                   describe=maps.describe, question=maps.question, reads=(compute.maps_read,),
                   asks=maps.ASKS), before=maps.equation),
        waits(Step("test", test.TITLE, test.figure, test.facts, test.words,
                   describe=test.describe, question=test.question, reads=(compute.table_read,),
                   applies=compute.applies, asks=test.ASKS), meanwhile=test.equation),
        waits(Step("sanity", sanity.title, sanity.figure, sanity.facts, sanity.words,
                   notes=sanity.notes, describe=sanity.describe, question=sanity.question,
                   reads=(patch_compute.sanity_read,), applies=compute.applies,
                   asks=("most_kept", "rho")), meanwhile=sanity.meanwhile),
        waits(Step("patching", patching.title, patching.figure, patching.facts, patching.words,
                   notes=patching.notes, describe=patching.describe, question=patching.question,
                   reads=(patch_compute.patched_read,), applies=compute.applies,
                   asks=("error", "top", "n_prefix", "grid", "prefix_names", "depth")),
              before=patching.corruption),
        waits(Step("words", words.TITLE, words.figure, words.facts, words.words,
                   describe=words.describe, question=words.question, asks=words.ASKS,
                   reads=(word_compute.words_read,), applies=words.applies),
              before=words.choices),
    ),
)
