"""What the read-ahead computes before a student gets there: every read the tour's steps
declare (`Step.reads`: functions of a `tour.Ask`, declared with their stages), in the tour's
order (ui/serving/readahead.py queues it)."""

from __future__ import annotations

from collections.abc import Callable

from ui import stages
from ui.selection import inputs
from ui.serving import state, tour


def plan(inp: inputs.Input, name: str, mask: str | None, layer: int | None,
         caption: str = tour.MASK_CAPTION, patch: int | None = None,
         start: str | None = None, lesson: tuple[str, ...] = ()) -> list[Callable]:
    """What the stages' steps read beyond the trace, in the tour's order (each once): calls
    into ui.serving.state's caches, runnable off a script run. `layer`: the session's layer;
    `caption`:
    the Masks stage's caption; `patch`: the session's patch; `start`: the stage to begin with
    (a live class's: the stages before it are behind the class); `lesson`: the class's stages
    (the others are skipped). Read from the steps' declarations (`Step.reads`)."""
    config = state.get_model(name).config
    ask = tour.Ask(inp, name, mask, layer, caption, patch)
    items, seen = [], set()
    order = stages.walk(lesson, start)
    for slug in order[order.index(start):] if start in order else order:
        stage = stages.get(slug)
        for read in [*stage.extra_reads, *(r for s in stage.steps_for(config) for r in s.reads)]:
            if read not in seen:  # a read several steps declare is computed once
                seen.add(read)
                items += read(ask)
    return items
