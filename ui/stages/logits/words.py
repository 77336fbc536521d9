"""The Logits stage's sentences about a read-out, worded from vit_core.explain.readout's and
logit_facts' numbers: the head, the answer's distribution, the logit lens, a scored caption."""

from __future__ import annotations

from ui.drawing.numbers import pct, pct_at_least
from vit_core.explain.logit_facts import caption_scores
from vit_core.explain.readout import (
    UNIFORM_ENTROPY,
    UNIFORM_MOVED,
    distribution,
    lens_summary,
)

CONFIDENT = 0.75  # "confident": at least this much on the top class ...
CLEAR_LEAD = 5.0  # ... and at least this many times the runner-up's probability
LEANS = 0.5  # "leans to" the top class: at least this much on it (below: "no class gets half")
TOGETHER = 3  # ... and then what the top this-many classes hold together is said
RIVALS_NAMED = 3  # classes on top on the way that the lens words name; the rest are counted


# ---------------------------------------------------------------- wording of the read-out
def readout_words(c) -> str:
    """How this model's class head turns the final tokens into K logits, as one sentence."""
    K = c.num_classes
    if c.global_pool == "avg":
        return (f"The {c.num_patches} final patch tokens"
                + ("" if c.fc_norm else ", after the final LayerNorm,") + " are averaged"
                + (" (CLS is left out)" if c.class_token else "")
                + (", the mean goes through one more LayerNorm (fc_norm)," if c.fc_norm else "")
                + f" and one linear layer gives one score (logit) per class, {K} in all.")
    if c.dist_token:
        return (f"The final CLS token and the final DIST token (after the final LayerNorm) each "
                f"go through their own linear layer, and the two sets of {K} scores (logits) "
                f"are averaged.")
    return (f"Only the final CLS token is used: after the final LayerNorm, one linear layer "
            f"gives one score (logit) per class, {K} in all.")


def readout_path(c) -> str:
    """The path from the residual stream to the logits, short: for the logit lens."""
    if c.global_pool == "avg":
        return ("the mean of the patch tokens → fc_norm → class head" if c.fc_norm else
                "final LayerNorm → the mean of the patch tokens → class head")
    if c.dist_token:
        return "final LayerNorm → CLS and DIST through their two heads, averaged"
    return "final LayerNorm → CLS token → class head"


DOUBTED = 0.1  # a caption word "doubted" by the model: below this probability
AGREES = 0.5  # the model "agrees with the caption": every word at least this likely


def scored_column(sees_ahead: bool = False) -> str:
    """The heading of a scored caption's probabilities: what each position could see. Under a
    mask where a text position also sees the words after it (full), that is the whole caption."""
    return "P(word | image, whole caption)" if sees_ahead else "P(word | image, words before)"


def caption_note(scored, sees_ahead: bool = False) -> str:
    """One sentence on a scored caption, worded from its probabilities: the least and the most
    likely word, and whether the model agrees with the caption.

    Args:
        sees_ahead: each text position also saw the words after it (the full mask): every word
            fed was then scored by a position that could read that very word, so the scores are
            not predictions from the words before.
    """
    if not scored.words:
        return "There is nothing to score: type a caption."
    s = caption_scores(scored.words, scored.probs, DOUBTED)
    low, high, doubted = s.low, s.high, s.doubted
    listed = ", ".join(f"“{w}”" for w in doubted[:4]) + (" …" if len(doubted) > 4 else "")
    if sees_ahead:
        # [EOS] is scored (last) only when the caption fitted, and it is never fed
        eos = scored.words[-1] == "[EOS]"
        head = (f"Every word gets at least {pct(low[1], 1)} (the least likely is “{low[0]}”)."
                if low[1] >= AGREES else
                f"The least likely word is “{low[0]}” at {pct(low[1], 1)}, the most likely "
                f"“{high[0]}” at {pct(high[1], 1)}"
                + (f"; the model doubts {listed} (under {pct(DOUBTED)})." if doubted else "."))
        return head + (" But under the full mask every text position also sees the words after "
                       "it: " + ("every word but [EOS]" if eos else "every word")
                       + " is scored by a position that can read that very word, so a high "
                       "score can come from reading the word rather than predicting it.")
    if low[1] >= AGREES:
        return (f"Every word gets at least {pct(low[1], 1)} (the least likely is “{low[0]}”), so "
                f"the model agrees with this caption for this image.")
    return (f"The least likely word is “{low[0]}” at {pct(low[1], 1)}, the most likely “{high[0]}” "
            f"at {pct(high[1], 1)}"
            + (f"; the model doubts {listed} (under {pct(DOUBTED)}) after the words before them."
               if doubted else "."))


def blind_words(c, mask_kind: str) -> str:
    """Why the prediction cannot see the image (readout.image_blind), as a sentence."""
    who = ("CLS (token 0) may attend only to itself"
           + (", and DIST only to CLS and itself" if c.dist_token else ""))
    reads, them = ("CLS and DIST", "them") if c.dist_token else ("CLS", "it")
    return (f"Under the {mask_kind} mask {who}: no patch ever reaches {them}, and the class head "
            f"reads only {reads}, so this prediction is the same for every picture.")


def distribution_words(probs, names: list[str], temperature: float, image_blind: bool = False,
                       outside: bool = False) -> str:
    """One sentence on how sure the shown distribution is, from its top probability, the
    runner-up's, and the entropy (against the uniform 1/K and log K).

    Args:
        image_blind: the distribution cannot depend on the image (readout.image_blind): then it
            is not told as the model's view of this picture.
        outside: the image is outside what the model knows (a photo on a model of generated
            scenes, ui/models.honesty_note): a clear lead is not called confidence.
    """
    d = distribution(probs, TOGETHER)
    K = d["K"]
    (top, p1), *rest = d["leaders"]
    text = (f"At T = {temperature:g} the top class, {names[top]}, has {pct(p1, 1)}; the "
            f"entropy is {d['entropy']:.2f} nats of a possible {d['max_entropy']:.2f}")
    if image_blind:
        return text + ": the same for every picture, so it says nothing about this one."
    if d["near_uniform"]:
        return text + f", so the distribution is close to uniform (1/{K} = {pct(1 / K, 1)} each)."
    if not rest:
        return text + "."
    second, p2 = rest[0]
    runner = f"the runner-up, {names[second]}, has {pct(p2, 1)}"
    if p1 >= CONFIDENT and p1 >= CLEAR_LEAD * p2:
        if outside:
            return (text + f": {names[top]} leads clearly ({runner}), but this model knows only "
                    f"its generated scenes, so on a photo a clear lead does not make it right.")
        return text + f": the model is confident ({runner})."
    if p1 >= LEANS:
        return text + f": the model leans to {names[top]} but is not sure: {runner}."
    together = d["together"]
    return (text + f": no class gets half the probability; {runner}, and the top "
            f"{len(d['leaders'])} together hold {pct(together, 1)}.")


def _where(rows: int) -> list[str]:
    """The name of each lens row: 'the embedding', 'block 0', …"""
    return ["the embedding"] + [f"block {i}" for i in range(rows - 1)]


def _depths(rows: list[int]) -> str:
    """Lens rows (0: after the embedding, l + 1: after block l) as words: runs of consecutive
    blocks joined ("the embedding", "block 1", "blocks 2–4", "the embedding to block 1")."""
    runs, start = [], rows[0]
    for a, b in zip(rows, [*rows[1:], None], strict=True):
        if b != a + 1:
            runs.append((start, a))
            start = b
    out = []
    for a, b in runs:
        if a == b:
            out.append("the embedding" if a == 0 else f"block {a - 1}")
        else:
            out.append(f"the embedding to block {b - 1}" if a == 0 else f"blocks {a - 1}–{b - 1}")
    return ", ".join(out)


def lens_words(lens_probs, names: list[str]) -> str:
    """The logit lens told in numbers: the first read-out, every class that led on the way (and
    how high it got), where the final answer takes the lead for good, and how sure it ends.

    Args:
        lens_probs: [L + 1, K] probabilities; row 0 read after the embedding, row l + 1 after
            block l.
    """
    s = lens_summary(lens_probs)
    K = s["K"]
    if s["all_near_uniform"]:
        return (f"Every read-out is close to uniform (its entropy at least "
                f"{pct(UNIFORM_ENTROPY)} of the maximum, and at most {pct(UNIFORM_MOVED)} of "
                f"the probability away from an even split): the most any class gets at any "
                f"depth is {pct_at_least(s['p_max'])}, {s['p_max_even']:.1f}× the even "
                f"1/{K} = {pct_at_least(1 / K)}.")
    final, lead = s["final"], s["lead"]
    text = (f"Read after the embedding the top guess is {names[s['first']]} at "
            f"{pct(s['p_first'], 0)} (entropy {s['first_entropy']:.2f} of a possible "
            f"{s['max_entropy']:.2f} nats"
            + (", close to uniform)" if s["first_near_uniform"] else ")"))
    if lead == 0:
        return text + f" and it stays on top at every depth, ending at {pct(s['p_final'], 0)}."
    rivals = s["rivals"]
    if rivals:  # every class on top before the final answer took over, where and how high
        said = [f"{names[k]} is on top after {_depths(rows)} "
                + (f"({pct(peak, 0)})" if len(rows) == 1 else f"(up to {pct(peak, 0)})")
                for k, rows, peak in rivals[:RIVALS_NAMED]]
        more = len(rivals) - RIVALS_NAMED
        text += ("; on the way " + ", then ".join(said)
                 + (f", and {more} more class{'es' if more > 1 else ''}" if more > 0 else ""))
    return text + (f"; {names[final]} leads from {_where(s['rows'])[lead]} on and ends at "
                   f"{pct(s['p_final'], 0)}.")
