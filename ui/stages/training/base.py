"""The Training stage's view (the picker model, its log and the step that runs), its wording
thresholds, and the small helpers every step shares."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from ui.drawing import palette
from ui.lesson import deck
from ui.serving import state
from vit_core import bundled_models
from vit_core.io.ref import ModelRef

# Wording thresholds, each named where the sentence uses it:
NEAR_CHANCE = 2.0  # held-out top-1 under this many times chance (1/K) is "near chance"
CLEAR_GAP = 0.2  # neighbouring positions "clearly more alike" than far ones by this cosine gap
WEAK_GAP = 0.05  # ... "a little more alike" from this gap; under it "hardly"
ON_OBJECT = 2.0  # CLS attention on the object at least this many times chance: "clearly on it"
ABOVE_CHANCE = 1.25  # ... from this ratio "somewhat more than an even spread"; under it "no more"
TIE = 0.01  # cosines (or attention shares, relative) this close to the best count as the best
OBJECT_PATCH = 0.5  # a patch is outlined as the object's when this share of its pixels is
TOP_SHOWN = 5  # the prediction's bars show this many classes
READ_OFF = 0.05  # a value read off a chart counts as right within this share of its axis
# step 0, the session's step, the end: each a colour (3:1 on the light and the dark page), a
# marker and a dash of its own (ui/drawing/palette.py: colour never alone)
COLOURS = {"start": palette.NEUTRAL, "this": palette.VERMILLION, "final": palette.BLUE}
SYMBOLS = {COLOURS["start"]: "circle", COLOURS["this"]: "star", COLOURS["final"]: "square"}
DASHES = {COLOURS["start"]: "dot", COLOURS["this"]: "solid", COLOURS["final"]: "dash"}


@dataclass(frozen=True)
class Ctx:
    """The stage's view, the picker model it is a step of, and that model's training log."""

    v: deck.View
    base: str  # the picker model (no step, no size)
    size: int | None  # the sidebar's input size when it is not the model's own
    log: Any  # vit_core.TrainingLog, or None for a model trained without one
    step: int | None  # the training step whose weights run (None without a log)

    def __getattr__(self, name):  # the view's fields (inp, tr, c, layer, …)
        return getattr(self.v, name)

    @property
    def final(self) -> int | None:
        return None if self.log is None else self.log.final_step

    def at(self, step: int) -> str:
        """The model's name after `step` training steps, at the session's input size."""
        return state.sized(state.stepped(self.base, step), self.size)

    def compared(self) -> list[int]:
        """The steps shown side by side: the random start, this one and the final, in order."""
        return [] if self.log is None else sorted({0, self.step, self.final})


def view() -> Ctx:
    v = deck.load(text_free_note=True)
    ref = ModelRef.parse(v.name)
    base, size, step = str(ref.picked), ref.size, ref.step
    log = state.training_log(base)
    if log is not None and step is None:
        step = log.final_step
    return Ctx(v, base, size, log, step)


def _intro(x: Ctx) -> str:
    if x.log is None:
        return ("Every weight on the other pages was learned: a training run starts from random "
                "numbers and nudges them, one batch of images at a time, to lower a loss. "
                "This model was not kept at earlier steps, so the steps below show its only "
                "weights.")
    return (f"{x.base} started from random numbers and was trained for {x.final:,} steps; its "
            f"weights were kept at steps {', '.join(map(str, x.log.steps))}. The sidebar's "
            f"**Training step** runs every page with one of them (now step {x.step:,}), so the "
            f"same image can be followed through training.")


def _label(x: Ctx, step: int) -> str:
    """'step 250 (this snapshot)', 'step 0 (random start)', 'step 12,000 (final)'."""
    roles = [r for r, s in (("random start", 0), ("final", x.final)) if s == step]
    if step == x.step:
        roles.append("this snapshot")
    return f"step {step:,}" + (f" ({', '.join(roles)})" if roles else "")


def _role(x: Ctx, step: int) -> str:
    return "this" if step == x.step else "start" if step == 0 else "final"


def _x(step: int) -> int:
    """Where a step goes on the log-scale axis: step 0 at 1 (its tick still reads 0)."""
    return max(int(step), 1)


def _step_axis(fig: go.Figure, steps, title: str = "training step (log scale; kept steps "
               "ticked, step 0 drawn at 1)", **where) -> None:
    fig.update_xaxes(type="log", tickmode="array", tickvals=[_x(s) for s in steps],
                     ticktext=[f"{s:,}" for s in steps],
                     title=dict(text=title, font=dict(size=12)), **where)


def _kind_of(x: Ctx) -> str:
    """Why this model has no training log, in one clause."""
    info = x.model.info
    if info.source == "preset" or not info.trained:
        return f"{x.base} has random weights and was never trained, so there is no run to show"
    if info.source == "bundled":
        return (f"{x.base} was trained by this repository without keeping snapshots or a log "
                f"of the run")
    if ModelRef.parse(x.base).source == "hub" or str(info.source).startswith(("hf:", "timm")):
        return (f"{x.base} was trained elsewhere, by its authors, so this app has no log of how "
                f"its weights formed")
    return (f"{x.base} was read from a checkpoint file, so this app has no log of how its "
            f"weights formed")


def _with_log() -> list[str]:
    return [m for m in bundled_models() if state.training_log(m) is not None]
