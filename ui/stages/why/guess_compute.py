"""What the "Guess first" step computes: a guess's deletion curve, once per (image, model, mask,
target, guess), in the app's shared byte budget and on the server's one worker (as compute.py
does for the maps and the table it is compared with)."""

from __future__ import annotations

from ui.serving import state
from ui.serving.budget import forward_worker, get_model, held
from ui.serving.tour import Ask
from ui.stages.why import compute
from vit_core.explain import why_guess_facts
from vit_core.explain.faithfulness import Curve
from vit_core.explain.targets import Target


@held
def _curve(key: str, model_name: str, mask: str | None, target: Target, guess: tuple,
           _pixels) -> Curve:
    model = get_model(model_name)
    return forward_worker().run(why_guess_facts.score, model, _pixels, target, guess,
                                mask=mask, model=model)


def curve(inp, model_name: str, mask: str | None, target: Target, guess) -> Curve:
    """vit_core.explain.why_guess_facts.score: the guess first, then the rest (REST_SEED)."""
    return _curve(inp.key, model_name, state.same_mask(model_name, mask), target,
                  tuple(sorted(int(p) for p in guess)), state.prepare(inp, model_name).pixels)


def verdict(inp, model_name: str, mask: str | None, guess) -> why_guess_facts.Verdict:
    """The guess's deletion AUC beside the methods' and random's (compute.table) on this image,
    for the answer the model gives (compute.target)."""
    target = compute.target(inp, model_name, mask)
    rows = compute.table(inp, model_name, mask, target)
    return why_guess_facts.verdict(guess, curve(inp, model_name, mask, target, guess).auc, rows)


def rows(inp, model_name: str, mask: str | None) -> list:
    """compute.table for the answer the model gives."""
    return compute.table(inp, model_name, mask, compute.target(inp, model_name, mask))


def table_read(a: Ask) -> list:
    """The read-ahead's call: the table a guess is scored against (computed, never shown,
    before the student guesses)."""
    return compute.table_read(a)  # `rows` is that table: its maps first, then the table
