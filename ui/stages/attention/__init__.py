"""Stage 4: attention, head by head: scores, softmax, where a patch looks, every head's CLS map
(`patterns`), rollout, and how far and how evenly the heads look (`measures`). What the steps
share is in `context`; the numbers come from vit_core.explain.attention."""

from __future__ import annotations

from ui.lesson import deck
from ui.stages.attention import measures, patterns
from ui.stages.attention.context import EVEN_ENTROPY, LOCAL, NEAR_EVEN, STRONGEST, VIEWS, Ctx, view
from ui.stages.attention.measures import distance_words, entropy_words, head_choice, head_name

__all__ = ["EVEN_ENTROPY", "LOCAL", "NEAR_EVEN", "STAGE", "STRONGEST", "VIEWS", "Ctx",
           "distance_words", "entropy_words", "head_choice", "head_name", "view"]


def _intro(x: Ctx) -> str:
    return ("Each head turns its scores into weights with a softmax over every row, so each "
            "query spreads exactly 1 unit of attention over the keys it may see. Its output for "
            "a token is the weighted average of the value vectors. Heads can learn different "
            "habits (looking at neighbours, at the whole image, at one token); the last steps "
            "measure what this model's heads do.")


STAGE = deck.Stage(
    slug="attention",
    name="Attention heads",
    icon=":material/visibility:",
    story="Softmax turns scores into weights: where each token looks. Each head has its own "
          "habit; the stage measures how far and how evenly each one looks.",
    view=view,
    intro=_intro,
    steps=patterns.STEPS + measures.STEPS,
)
