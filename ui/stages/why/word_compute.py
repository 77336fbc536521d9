"""What the step "A caption's words" computes, once per (image, model, mask, word, method, k),
kept in the app's shared byte budget (ui/serving/state's `held`) and run on the server's one
worker, like ui/stages/why/compute.py (whose cached maps it reads)."""

from __future__ import annotations

from ui.serving import state
from ui.serving.budget import forward_worker, get_model, held
from ui.serving.tour import Ask
from ui.stages.why import compute
from vit_core.explain import why_word_facts
from vit_core.explain.targets import Target, word_targets

METHOD = "gradcam"  # the map whose top patches are greyed until the student picks another
K = 5  # patches greyed until the student picks another number


@held
def _words(key: str, model_name: str, mask: str | None, _pixels) -> tuple[Target, ...]:
    model = get_model(model_name)
    return tuple(forward_worker().run(word_targets, model, _pixels, mask=mask, model=model))


def words(inp, model_name: str, mask: str | None = None) -> tuple[Target, ...]:
    """One Target per word of the greedy caption of this image (targets.word_targets)."""
    return _words(inp.key, model_name, state.same_mask(model_name, mask),
                  state.prepare(inp, model_name).pixels)


@held
def _greyed(key: str, model_name: str, mask: str | None, target: Target, method: str, k: int,
            _values, _pixels) -> why_word_facts.Greyed:
    model = get_model(model_name)
    return forward_worker().run(why_word_facts.grey_top, model, _pixels, target, _values, k,
                                mask=mask, model=model)


def greyed(inp, model_name: str, mask: str | None, target: Target, method: str,
           k: int) -> why_word_facts.Greyed:
    """The caption written again with the k patches greyed that `method`'s map of `target`
    ranks highest (vit_core.explain.why_word_facts.grey_top)."""
    values = compute.maps(inp, model_name, mask, target)[method].patches
    return _greyed(inp.key, model_name, state.same_mask(model_name, mask), target, method,
                   int(k), values, state.prepare(inp, model_name).pixels)


def words_read(a: Ask) -> list:
    """The read-ahead's calls: the caption's words, and its first word greyed as the step
    starts (the first word's maps are the maps step's own read)."""
    if not state.get_model(a.name).config.has_text:
        return []

    def first():
        found = words(a.inp, a.name, a.mask)
        return found and greyed(a.inp, a.name, a.mask, found[0], METHOD, K)

    return [lambda: words(a.inp, a.name, a.mask), first]
