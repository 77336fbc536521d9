"""The Experiments stage's questions: what the model answers with the change chosen (step 2),
and why shuffling without positions gives what removing positions gives (step 4)."""

from __future__ import annotations

import torch

from ui.lesson.deck import Choice, Number, Question
from ui.stages import common
from ui.stages.experiments.compare import Compare
from ui.stages.experiments.printed import listed, moved, names_of, points, share, turned
from ui.stages.experiments.view import SHUFFLES, Ctx
from vit_core.explain import experiment_facts as facts
from vit_core.explain import interventions as ex

NAMED_PATCHES = 6  # a grey set this small is listed patch by patch in the question
OFFERED = 4  # "what does it answer now?" offers this many classes at most
COSINE_TOLERANCE = 0.05  # how far a student's guess of a cosine similarity may be off
SAME_CAPTION = ("The same caption as before", "Another caption")  # right: it changed
UNORDERED = (  # the shuffle-without-positions question's options; right: decided from the mask
    "Yes: shuffling changes no pixel, so nothing can change",
    "Yes: without positions the patches are a set, order is lost",
    "Yes: under this mask no patch reaches what the output reads",
    "No: under this mask a patch sees only those before it")


def _where_grey(x: Ctx) -> str:
    k = len(x.grey)
    if x.grey_around is not None:
        around = f"the {k} patches around patch {x.grey_around}"
        return (f"the middle of the picture ({around})"
                if x.grey_around == facts.middle(x.c.grid) else around)
    if not k:
        return "patches"
    if k <= NAMED_PATCHES:
        return f"patch {x.grey[0]}" if k == 1 else f"patches {listed(x.grey)}"
    return f"the {k} patches chosen on the grid"


def _what(x: Ctx) -> str:
    """The change chosen, said after 'with'."""
    if x.kind == "heads":
        hs = [h for _, h in x.arg]
        return (f"head{'s' if len(hs) > 1 else ''} {listed(hs)} of block {x.layer} switched off"
                if hs else "no head switched off")
    if x.kind == "occlude":
        return f"{_where_grey(x)} greyed out"
    if x.kind == "positions":
        return "the position embeddings removed"
    if x.kind in SHUFFLES:
        return (f"the patches shuffled (seed {x.seed})"
                + (" and positions removed" if x.kind == "shuffle_no_positions" else ""))
    return f"the {common.mask_label(x.arg[0])} mask"


def _class_after(names: list[str], ch: ex.ClassChange, what: str) -> str:
    """What a classifier answers after a change (`what`: the change, said after 'with')."""
    n0, n1 = names[ch.top_before], names[ch.top_after]
    a, b = share(ch.before), share(ch.after)
    pts = points(a, b)
    if ch.changed:
        return (f"{n1} ({share(ch.new)}) with {what}, where it answered {n0} ({a}); P({n0}) "
                f"is now {b}.")
    change = f", a change of {pts}." if pts else "."
    if not moved(ch):
        return f"Still {n0}: {a} before and {b} with {what}{change}"
    return (f"Still {n0}, but {'less' if ch.after < ch.before else 'more'} sure: {a} before "
            f"and {b} with {what}{change}")


def _uniform_words(trained: bool, K: int) -> str:
    if not trained:
        return ("But this model has random weights: nothing was learned, so this says nothing "
                "about what it uses.")
    return (f"But its probabilities are close to uniform (1/{K} = {share(1 / K)} each), so this "
            f"says little about what it uses.")


def class_choice(c, p1: torch.Tensor, also: int, right: int | None) -> Choice:
    """Choose the class answered: the top classes of the run after (`p1`, probabilities) and the
    class `also` (the one answered before), at most OFFERED, in class order so that where the
    right one stands tells nothing; `right` is a class index (None: nobody is marked)."""
    names = names_of(c)
    ranked = [int(k) for k in p1.argsort(descending=True, stable=True)]
    picks = list(dict.fromkeys([*([right] if right is not None else []), also, *ranked]))
    picks = sorted(picks[:OFFERED])
    return Choice(tuple(names[k] for k in picks), None if right is None else picks.index(right))


def cosine_number(sims: dict[str, float] | None) -> Number:
    """A model without a head: the cosine similarity of its first final token (CLS, else the
    mean patch token) with the unchanged run's, the first the answer names."""
    if not sims:
        return Number(None, COSINE_TOLERANCE)
    name, value = next(iter(sims.items()))
    return Number(round(value, 3), COSINE_TOLERANCE, f"cosine similarity, final {name}")


def _nothing_yet(x: Ctx, f: Compare, q: str) -> Question:
    reply = (class_choice(x.c, f.p0, int(f.p0.argmax()), None) if f.family == "class" else
             Choice(SAME_CAPTION) if f.family == "text" else cosine_number(None))
    return Question(q, "Nothing is changed yet: choose under 'Choose a change', then reveal "
                       "again (does not apply yet).", reply)


def _class_question(x: Ctx, f: Compare, q: str, what: str) -> Question:
    c = x.c
    ch = ex.class_change(f.p0, f.p1)
    reply = class_choice(c, f.p1, ch.top_before, ch.top_after)
    said = _class_after(names_of(c), ch, what)
    if f.blind and x.kind in ("occlude", *SHUFFLES):
        return Question(q, f"Exactly what it answered before: under the {x.run_mask} mask "
                           f"{common.prefix_sight(x.tr)}, so no patch, greyed, moved or not, "
                           f"reaches the class head. {said}", reply)
    if f.uniform:
        return Question(q, f"{said} {_uniform_words(f.trained, c.num_classes)}", reply)
    return Question(q, said + ("" if moved(ch) else " The answer hardly rests on what changed."),
                    reply)


def after_question(x: Ctx, f: Compare) -> Question:
    """What the model answers with the change chosen: read off the step's chart (the two runs'
    top classes, captions or final tokens)."""
    what = _what(x)
    q = (f"With {what}: " + ("what does the classifier answer now?" if f.family == "class" else
                             "does the model still write the same caption?"
                             if f.family == "text" else
                             "how far do the model's final tokens turn?"))
    if f.empty:
        return _nothing_yet(x, f, q)
    if f.family == "text":
        same = f.gen1.text == f.gen0.text
        return Question(q, f"The same caption with {what}: “{f.gen0.text}”." if same else
                        f"With {what} it writes “{f.gen1.text}” instead of “{f.gen0.text}”.",
                        Choice(SAME_CAPTION, int(not same)))
    if f.family != "class":
        return Question(q, f"This model has no head to answer with. Its final tokens turn to a "
                           f"cosine similarity of {turned(f.sims)} with the unchanged run "
                           f"(1.000: unchanged).", cosine_number(f.sims))
    return _class_question(x, f, q, what)


def _blind_answer(c, tr) -> str:
    names = " and ".join(c.prefix_names)
    return (f"Under the {tr.mask_kind} mask used here {common.prefix_sight(tr)}, in every "
            f"block, so no patch ever reaches {names}, and {common.output(c)} depend on {names} "
            f"alone: both experiments give exactly the same "
            + ("logits" if c.num_classes else
               f"final {names} vector{'s' if c.dist_token else ''}")
            + " for any order of the patches and any image. The patch tokens themselves do "
            "differ: patch i sees only the tokens before it, so their order matters even "
            "without positions.")


def unordered_question(x: Ctx, _) -> Question:
    """Why shuffling without positions gives what removing positions gives: decided from the
    mask tensor of the run shown."""
    c, tr = x.c, x.tr
    full = common.image_block_full(tr)
    blind = not full and common.reads_prefix(c) and common.prefix_blind(tr)
    q = (("Why do" if full or blind else "Do") + " 'Shuffle the patches and remove positions' "
         "and 'Remove position embeddings' give the same "
         + ("logits?" if c.num_classes or c.has_text else "output?"))
    if full:
        return Question(q, (
            f"Without positions a patch token is only its pixels' embedding, and under the "
            f"{tr.mask_kind} mask every image token sees every other: attention and the MLP "
            f"treat the patches as a set. Shuffling only reorders the patch tokens, so "
            f"{common.output(c)} come out the same for any order (up to float rounding)."),
            Choice(UNORDERED, 1))
    if blind:
        return Question(q, _blind_answer(c, tr), Choice(UNORDERED, 2))
    return Question(q, (
        f"Under the {tr.mask_kind} mask used here they need not: patch i sees only the "
        f"tokens before it, so the order matters even without positions"
        + (f"; {common.prefix_sight(tr)}, so "
           + ("it comes" if c.num_prefix_tokens == 1 else "they come")
           + " out the same in both." if common.prefix_blind(tr) else ".")),
        Choice(UNORDERED, 3))
