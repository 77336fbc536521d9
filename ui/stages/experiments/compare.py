"""Step 2 of the Experiments stage: the two results, before and after the change."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ui.drawing import figures
from ui.lesson import deck
from ui.stages.experiments.keys import EXP_COMPARE
from ui.stages.experiments.notice import notice_facts, notice_words
from ui.stages.experiments.printed import family, moved, names_of, points, share, turned
from ui.stages.experiments.view import Ctx, blind
from vit_core.explain import experiment_facts as facts
from vit_core.explain import interventions as ex
from vit_core.explain.readout import near_uniform

TOP = 5  # the class charts draw the top classes before and after, this many of each


@dataclass(frozen=True)
class Compare:
    """The two results, in numbers."""

    family: str
    empty: bool  # nothing switched off or greyed out yet
    diff: float  # the largest change of any output (ex.outputs)
    p0: torch.Tensor | None = None  # classes: the probabilities before and after
    p1: torch.Tensor | None = None
    change: ex.ClassChange | None = None
    parting: int | None = None  # captions: the first word where they differ (None: the same)
    sims: dict | None = None  # headless: cosine similarity of each final token
    gen0: Any = None  # captions: the greedy caption before and after (Generation)
    gen1: Any = None
    blind: bool = False  # the class logits cannot see the image (readout.image_blind)
    uniform: bool = False  # random weights, or probabilities before close to uniform
    trained: bool = True


def compare_facts(x: Ctx) -> Compare:
    fam, trained = family(x.c), x.model.info.trained
    if fam == "class":
        p0, p1 = facts.probabilities(x.tr.logits), facts.probabilities(x.after.logits)
        return Compare(fam, x.empty, x.diff, p0, p1, ex.class_change(p0, p1),
                       blind=blind(x.tr), uniform=not trained or near_uniform(p0),
                       trained=trained)
    if fam == "text":
        return Compare(fam, x.empty, x.diff, parting=ex.caption_parting(x.gen0, x.gen1),
                       gen0=x.gen0, gen1=x.gen1, trained=trained)
    return Compare(fam, x.empty, x.diff, sims=ex.similarities(x.tr, x.after), trained=trained)


def compare_figure(x: Ctx, f: Compare) -> None:
    c = x.c
    if f.family == "class":
        names = names_of(c)
        top = facts.charted_classes(f.p0, f.p1, min(TOP, c.num_classes))
        deck.chart(figures.before_after_bars(
            [names[i] for i in top], f.p0[top].numpy(), f.p1[top].numpy(),
            title=f"Top classes before and after ({x.label.lower()})",
            value_title="probability (softmax of the logits)").update_yaxes(
                title="class" + (f" (the top {TOP} before and after)" if c.num_classes > TOP
                                 else "")), key=EXP_COMPARE)
    elif f.family == "text":
        g0, g1 = f.gen0, f.gen1
        deck.chart(figures.caption_pair(
            g0.words, g0.chosen, g1.words, g1.chosen, f"before: “{g0.text}”",
            f"after ({x.label.lower()}): “{g1.text}”",
            "The caption each run writes, word by word (greedy)").update_xaxes(
                title="word of the caption, in writing order"), key=EXP_COMPARE)
    else:
        deck.chart(figures.similarity_bars(
            [f"final {k}" for k in f.sims], list(f.sims.values()),
            "How far the final tokens moved").update_yaxes(title="final token"),
            key=EXP_COMPARE)


def class_change_words(ch: ex.ClassChange, names: list[str]) -> str:
    """One sentence, decided from the numbers, on how the prediction moved; the points are the
    difference of the two percentages as printed."""
    n0, n1 = names[ch.top_before], names[ch.top_after]
    a, b = share(ch.before), share(ch.after)
    pts = points(a, b)
    if ch.changed:
        return (f"The prediction changed from **{n0}** ({a}) to **{n1}** ({share(ch.new)}); "
                f"P({n0}) went from {a} to {b}.")
    if not moved(ch):
        return (f"The prediction did not change: **{n0}**, {a} before and {b} after"
                + (f" ({pts})." if pts else "."))
    return (f"The top class is still **{n0}**, but its probability "
            f"{'fell' if ch.after < ch.before else 'rose'} from {a} to {b}"
            + (f" ({pts})." if pts else "."))


def caption_change_words(before, after, parting: int | None) -> str:
    """One sentence on how the greedy caption moved (words compared one by one)."""
    if parting is None:
        return f"The caption did not change: “{before.text}”."
    return (f"The caption changed from “{before.text}” to “{after.text}”: they part at word "
            f"{parting + 1}.")


def similarity_words(sims: dict[str, float]) -> str:
    return ("This model has no classifier or text head, so there is no prediction to compare; "
            f"instead, how far its final tokens turned: cosine similarity before vs after "
            f"{turned(sims)} (1.000 would be unchanged).")


def compare_words(x: Ctx, f: Compare) -> str:
    if f.empty:
        return ("Nothing is switched off or greyed out yet, so both runs are the same; "
                + ("pick a head" if x.kind == "heads" else "click a patch on the grid")
                + " under 'Choose a change'.")
    if f.family == "class":
        return (class_change_words(f.change, names_of(x.c))
                + f" The largest change of any logit is {f.diff:.3g}.")
    if f.family == "text":
        return caption_change_words(x.gen0, x.gen1, f.parting)
    return similarity_words(f.sims)


def compare_notes(x: Ctx, f: Compare) -> str | None:
    if f.empty:
        return None
    return "What to notice: " + notice_words(x, notice_facts(x))
