"""What the "Guess first" step computes: a guess's deletion curve, once per (image, model, mask,
target, guess), in the app's shared byte budget and on the server's one worker; with the table
it is compared with, the kind "guess" of ui/stages/why/jobs.py (on a big model a page asks for
it with `jobs.ready` and shows a progress bar meanwhile, as for the maps and the table)."""

from __future__ import annotations

from ui.lesson.replies import PENDING
from ui.serving import state
from ui.serving.budget import forward_worker, get_model, held
from ui.stages.why import compute, jobs
from vit_core.explain import why_guess_facts
from vit_core.explain.faithfulness import Curve
from vit_core.explain.targets import Target

UNSCORED = "unscored"  # in a guess's scores: why its score could not be computed after Send


def _sorted(guess) -> tuple[int, ...]:
    return tuple(sorted(int(p) for p in guess))


@held
def _curve(key: str, model_name: str, mask: str | None, target: Target, guess: tuple,
           _pixels) -> Curve:
    model = get_model(model_name)
    return forward_worker().run(why_guess_facts.score, model, _pixels, target, guess,
                                mask=mask, model=model, timeout=jobs.LONG_S)


def curve(inp, model_name: str, mask: str | None, target: Target, guess) -> Curve:
    """vit_core.explain.why_guess_facts.score: the guess first, then the rest (REST_SEED)."""
    return _curve(inp.key, model_name, state.same_mask(model_name, mask), target,
                  _sorted(guess), state.prepare(inp, model_name).pixels)


def _keys(inp, model_name: str, mask: str | None, target: Target, guess) -> list[tuple]:
    return [compute.held_key("table", inp, model_name, mask, target),
            jobs.held_key("_curve", inp, model_name, mask, target, _sorted(guess))]


@jobs.kind("guess", "Putting your guess to the test", _keys, after="table")
def scored(inp, model_name: str, mask: str | None, target: Target,
           guess) -> why_guess_facts.Verdict:
    """The guess's deletion AUC beside the methods' and random's (compute.table) on this image,
    for `target`."""
    rows = compute.table(inp, model_name, mask, target)
    return why_guess_facts.verdict(guess, curve(inp, model_name, mask, target, guess).auc, rows)


def verdict(inp, model_name: str, mask: str | None, guess) -> why_guess_facts.Verdict:
    """`scored` for the answer the model gives (compute.target), waiting for it."""
    return scored(inp, model_name, mask, compute.target(inp, model_name, mask), guess)


def scores_now(inp, model_name: str, mask: str | None, guess) -> dict:
    """A guess's scores at Send, never holding the page: Verdict.scores when they are computed
    (or the model is small); else the guess alone marked PENDING, its score started on a
    background thread (`scores_later` waits for it)."""
    target = compute.target(inp, model_name, mask)
    try:
        return jobs.ready("guess", inp, model_name, mask, target, guess).scores()
    except jobs.NotReady:
        return {"patches": list(_sorted(guess)), PENDING: True}


def scores_later(inp, model_name: str, mask: str | None, guess) -> dict:
    """A guess's scores, waiting for them behind the pages' passes (a thread of the class's,
    after Send: ui/live/student.py); the guess with UNSCORED and the reason when they could not
    be computed."""
    try:
        with forward_worker().behind():
            return verdict(inp, model_name, mask, guess).scores()
    except Exception as e:  # (Busy: a queue longer than jobs.LONG_S) kept for the teacher
        return {"patches": list(_sorted(guess)), UNSCORED: str(e)}

