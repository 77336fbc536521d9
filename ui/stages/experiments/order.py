"""Steps 3 and 4 of the Experiments stage: (a captioner's) each word of its caption scored by
both runs, and the order of the patches without positions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ui.drawing import figures
from ui.drawing.equation import latex
from ui.lesson import deck
from ui.stages import common
from ui.stages.experiments.compare import TOP
from ui.stages.experiments.keys import EXP_UNORDERED, EXP_WORDS
from ui.stages.experiments.printed import family, names_of, outputs_name, share
from ui.stages.experiments.view import Ctx
from vit_core.explain import experiment_facts as facts
from vit_core.explain import interventions as ex
from vit_core.explain.generation import score_logits, tokenizer_for

GIVEN_BEFORE = "image, the words before it"  # what a text position sees: causal or prefix mask
GIVEN_FULL = "image, every word fed, itself and those after it too"  # a text position sees ahead


# ---------------------------------------------------------------- step 3: each word, scored
@dataclass(frozen=True)
class Fed:
    """The caption before, fed to both runs: each word's probability in each."""

    words: list[str]
    before: list[float]
    after: list[float]
    ahead: tuple[bool, bool]  # a text position sees the words after it: before, after
    diff: float
    mean_before: float  # the words' mean probability, before and after
    mean_after: float


def fed_facts(x: Ctx) -> Fed:
    tok = tokenizer_for(x.model)
    s0, s1 = score_logits(tok, x.enc, x.tr.logits), score_logits(tok, x.enc, x.after.logits)
    c = x.c
    return Fed(s0.words, s0.probs, s1.probs,
               (ex.text_sees_ahead(c, x.tr.mask), ex.text_sees_ahead(c, x.after.mask)), x.diff,
               facts.mean_probability(s0.probs), facts.mean_probability(s1.probs))


def fed_figure(x: Ctx, f: Fed) -> None:
    given = [GIVEN_FULL if a else GIVEN_BEFORE for a in f.ahead]
    masks = (x.run_mask, common.mask_label(x.after.mask_kind))
    title = ("The caption before, fed to both runs: "
             + (f"P(each word | {given[0]})" if given[0] == given[1] else
                f"before ({masks[0]} mask) P(each word | {given[0]}); after "
                f"({masks[1]} mask) P(each word | {given[1]})"))
    deck.chart(figures.before_after_bars(
        [f"{i + 1}. {w}" for i, w in enumerate(f.words)], f.before, f.after,
        title=title, value_title="P(word)").update_yaxes(
            title="word of the caption before, in order"), key=EXP_WORDS)


def fed_words(x: Ctx, f: Fed) -> str:
    return (f"Fed the caption written before the change, the changed model gives its words "
            f"{share(f.mean_after)} on average (unchanged: {share(f.mean_before)}); the largest "
            f"change of any text logit is {f.diff:.3g}.")


# ---------------------------------------------------------------- step 4: order without positions
@dataclass(frozen=True)
class Unordered:
    """'Remove position embeddings' against the same with the patches shuffled."""

    family: str
    seed: int
    diff: float  # the largest difference of the two runs' outputs
    plain: Any  # classes: probabilities; text: each word's probability; headless: None
    shuffled: Any
    words: list[str] | None = None
    sims: dict | None = None  # headless: cosine similarity of each final token, the two runs


def unordered_facts(x: Ctx) -> Unordered:
    fam = family(x.c)
    plain, shuffled = x.run("positions"), x.run("shuffle_no_positions", (x.seed,))
    d = ex.max_difference(plain, shuffled)
    if fam == "class":
        return Unordered(fam, x.seed, d, facts.probabilities(plain.logits),
                         facts.probabilities(shuffled.logits))
    if fam == "text":
        tok = tokenizer_for(x.model)
        s0, s1 = score_logits(tok, x.enc, plain.logits), score_logits(tok, x.enc, shuffled.logits)
        return Unordered(fam, x.seed, d, s0.probs, s1.probs, words=s0.words)
    return Unordered(fam, x.seed, d, None, None, sims=ex.similarities(plain, shuffled))


def _unordered_chart(x: Ctx, f: Unordered):
    c = x.c
    runs = ("positions removed", f"shuffled (seed {f.seed}), positions removed")
    if f.family == "class":
        names = names_of(c)
        top = facts.charted_classes(f.plain, f.shuffled, min(TOP, c.num_classes))
        return figures.before_after_bars(
            [names[i] for i in top], f.plain[top].numpy(), f.shuffled[top].numpy(),
            title="Without positions: the picture as it is, and shuffled",
            value_title="probability (softmax of the logits)", names=runs).update_yaxes(
                title="class")
    if f.family == "text":
        return figures.before_after_bars(
            [f"{i + 1}. {w}" for i, w in enumerate(f.words)], f.plain, f.shuffled,
            title="Without positions: the caption before, fed to both runs",
            value_title="P(word)", names=runs).update_yaxes(
                title="word of the caption before, in order")
    fig = figures.similarity_bars(
        [f"final {k}" for k in f.sims], list(f.sims.values()),
        "Without positions: how far shuffling turns the final tokens")
    fig.update_xaxes(title="cosine similarity, shuffled vs not (1 = unchanged)")
    return fig.update_yaxes(title="final token")


def unordered_figure(x: Ctx, f: Unordered) -> None:
    tokens = "".join(rf"x_\mathrm{{{n.lower()}}};\," for n in x.c.prefix_names)  # CLS, DIST
    latex(r"z_0 = [" + tokens + r"X_pE] + \lambda E_\mathrm{pos},\quad \lambda = 0")
    deck.chart(_unordered_chart(x, f), key=EXP_UNORDERED)


def unordered_words(x: Ctx, f: Unordered) -> str:
    verdict = ("exactly the same" if f.diff == 0 else "the same up to float rounding"
               if f.diff < ex.SAME_OUTPUT else "they differ")
    return (f"Both runs leave out the position embeddings; shuffling the patches as well (seed "
            f"{f.seed}) changes the {outputs_name(f.family, x.tr)} by at most {f.diff:.2g}: "
            f"{verdict}.")


UNORDERED_NOTES = {"class": "Each pair of bars is one class under the two runs.",
                   "text": ("Each pair of bars is one word of the caption before, fed to both "
                            "runs."),
                   "headless": "Each bar compares one final token of the two runs."}


def unordered_notes(x: Ctx, f: Unordered) -> str:
    return (f"Both runs use the {x.run_mask} mask, and the seed is the shuffle seed of the first "
            "step. " + UNORDERED_NOTES[f.family])
