"""Step 2's note, "What to notice": true for any model, or worded from the two runs' numbers
(decided from the traces' mask tensors, never from a mask's name). The sentences are data
keyed by the change; a small worder per change fills in this run's numbers."""

from __future__ import annotations

from dataclasses import dataclass

from ui.stages import common
from ui.stages.experiments.printed import family, moved, names_of, outputs_name, share
from ui.stages.experiments.view import Ctx, blind
from vit_core.explain import experiment_facts as facts
from vit_core.explain import interventions as ex
from vit_core.masks import parse_window


@dataclass(frozen=True)
class Notice:
    """What the comparison shows, in numbers and flags (decided from the traces' masks)."""

    kind: str
    family: str
    diff: float
    moved: bool | None  # the answer moved (None: no answer, only tokens)
    blind: bool  # before: the class logits cannot see the image (its mask tensor)
    dist_token: bool
    heads_off: int = 0
    plain_diff: float = 0.0  # shuffle without positions: vs positions removed, unshuffled
    block_full: bool = False  # before: every image token sees every other
    block_causal: bool = False  # before: each image token sees itself and those before it
    same_masks: bool = False  # mask: the two masks allow the same keys
    blind_after: bool = False  # mask: after, the class logits cannot see the image
    sight_after: str = ""  # mask: "full" / "causal" / "other" (ex.image_sight)
    ahead_after: bool = False  # mask: after, a text position sees the words after it
    answer_after: tuple[int, float] | None = None  # the class answered after, and its prob
    window: tuple[int, bool] | None = None  # mask: after, a window mask (side M, shifted)
    window_keys: int = 0  # mask: after, the most patch keys a patch may see in block 0
    trained: bool = True  # the model's weights were learned (a preset's are random)


def _answer_moved(x: Ctx, fam: str) -> bool | None:
    if fam == "class":
        return moved(ex.class_change(facts.probabilities(x.tr.logits),
                                     facts.probabilities(x.after.logits)))
    if fam == "text":
        return x.gen0.ids != x.gen1.ids
    return None


def _mask_facts(x: Ctx, fam: str) -> dict:
    """What the run after's mask lets the tokens read, and what the model answers under it."""
    c, tr, after = x.c, x.tr, x.after
    window = parse_window(x.arg[0])
    p1 = facts.probabilities(after.logits) if fam == "class" else None
    return dict(window=window, window_keys=0 if window is None else
                facts.most_patch_keys(c, after.mask),  # read off the mask the run after added
                trained=bool(x.model.info.trained), same_masks=facts.same_allowed(tr.mask,
                                                                                  after.mask),
                blind_after=blind(after), sight_after=ex.image_sight(c, after.mask),
                ahead_after=ex.text_sees_ahead(c, after.mask),
                answer_after=None if p1 is None else facts.top_answer(p1))


def notice_facts(x: Ctx) -> Notice:
    c, tr = x.c, x.tr
    fam = family(c)
    sight = ex.image_sight(c, tr.mask)
    base = dict(kind=x.kind, family=fam, diff=x.diff, moved=_answer_moved(x, fam),
                blind=blind(tr), dist_token=bool(c.dist_token), block_full=sight == "full",
                block_causal=sight == "causal")
    if x.kind == "heads":
        return Notice(heads_off=len(x.arg), **base)
    if x.kind == "shuffle_no_positions":
        return Notice(plain_diff=ex.max_difference(x.after, x.run("positions")), **base)
    if x.kind == "mask":
        return Notice(**_mask_facts(x, fam), **base)
    return Notice(**base)


# ---------------------------------------------------------------- the sentences
SAID = {
    "all heads": ("with {heads} of block {layer} off, only W_O's bias is left of that block's "
                  "attention output: in that block no token takes anything from another token."),
    "some heads": ("heads work side by side and their outputs are added through W_O, so "
                   "switching off {k} of block {layer}'s {H} heads removes {k} of {H} terms from "
                   "that sum."),
    "occlude": ("grey out the object to see whether the answer rests on it, and the background "
                "to check that it does not."),
    "occlude blind": " But under the {mask} mask {sight}, so no greyed patch can reach the class "
                     "head.",
    "positions": ("the pixels are the same; only E_pos is left out, so the model no longer knows "
                  "where each patch is."),
    "shuffle": "a shuffle moves what each patch shows to another cell and its position.",
    "shuffle blind": (" Under the {mask} mask {sight}, and {own} {stay}, so where the patches are "
                      "cannot reach the answer: the largest change of any logit is {diff:.3g}."),
    "positions blind": (" Under the {mask} mask {sight}, so the patches' positions cannot reach "
                        "the answer; but leaving out E_pos also removes {own}, and that alone "),
    "own moves": "moves the logits here, by up to {diff:.3g}.",
    "own hardly": "changes the logits here by only {diff:.2g}.",
    "depends": (" For this image the {answer} {changed}, so it {depends} on where the patches "
                "are."),
    "unordered": ("compared with 'Remove position embeddings' on the unshuffled image, the "
                  "largest difference in the {what} is {d:.2g}: {verdict}"),
    "unordered set": (" Without positions, and with every image token seeing every other "
                      "({mask} mask), shuffling only reorders the patch tokens, and nothing "
                      "that reads them can tell one order from the other."),
    "unordered blind": (" But only because under the {mask} mask {sight}: the answer does not "
                        "depend on the image at all."),
    "unordered causal": (" Under the {mask} mask patch i sees only the patches before it, so "
                         "the order matters even without positions."),
    "same masks": ("with {tokens} text tokens, the {new} mask allows exactly the keys the {mask} "
                   "mask does, so both runs are the same (largest difference {diff:.2g})."),
    "blind after": ("under the {new} mask {sight_after}, so what reaches the class head no longer "
                    "depends on the image: this model now answers {name} ({p}) for every "
                    "picture."),
    "blind before": (" Before, under the {mask} mask {sight}, so the answer could not see the "
                     "image; now it can."),
    "causal after": ("under the causal mask each token sees only itself and the tokens before "
                     "it: patch i no longer sees the patches after it."),
    "ahead after": ("under the {new} mask every text position also sees the words after it, so "
                    "fed the caption before, each position can see the very word it is asked "
                    "to predict."),
    "full after": "under the {new} mask the image tokens see each other in both directions{text}",
    "other after": "under the {new} mask the tokens see other keys than before.",
}
OWN = ("CLS's own position embedding (row 0 of E_pos)",
       "CLS's and DIST's own position embeddings (rows 0 and 1 of E_pos)")  # by dist_token


def _heads(x: Ctx, f: Notice) -> str:
    k, H = f.heads_off, x.c.num_heads
    if k == H:
        return SAID["all heads"].format(heads="the only head" if H == 1 else f"all {H} heads",
                                        layer=x.layer)
    return SAID["some heads"].format(k=k, layer=x.layer, H=H)


def _occlude(x: Ctx, f: Notice) -> str:
    blind_ = SAID["occlude blind"].format(mask=x.run_mask, sight=common.prefix_sight(x.tr))
    return SAID["occlude"] + (blind_ if f.blind else "")


def _positions(x: Ctx, f: Notice) -> str:
    """Positions removed, or the patches shuffled (positions kept)."""
    note = SAID[f.kind]
    sight = dict(mask=x.run_mask, sight=common.prefix_sight(x.tr), own=OWN[f.dist_token],
                 diff=f.diff) if f.blind else {}
    if f.blind and f.kind == "shuffle":
        return note + SAID["shuffle blind"].format(stay="stay" if f.dist_token else "stays",
                                                   **sight)
    if f.blind:
        return note + SAID["positions blind"].format(**sight) + SAID[
            "own moves" if f.diff >= ex.SAME_OUTPUT else "own hardly"].format(diff=f.diff)
    if f.moved is None:
        return note
    return note + SAID["depends"].format(
        answer="caption" if f.family == "text" else "answer",
        changed="changed" if f.moved else "hardly changed",
        depends="depends" if f.moved else "hardly depends")


def _unordered(x: Ctx, f: Notice) -> str:
    """Shuffled without positions, against positions removed on the image as it is."""
    d = f.plain_diff
    same = d < ex.SAME_OUTPUT
    verdict = ("exactly the same." if d == 0 else "the same up to float rounding." if same
               else "they differ.")
    note = SAID["unordered"].format(what=outputs_name(f.family, x.tr), d=d, verdict=verdict)
    rule = ("unordered set" if f.block_full and same else "unordered blind" if f.blind and same
            else "unordered causal" if f.block_causal and not same else None)
    if rule is None:
        return note
    return note + SAID[rule].format(mask=x.run_mask, sight=common.prefix_sight(x.tr))


def _mask(x: Ctx, f: Notice) -> str:
    """Another mask: what it lets the tokens read, against the mask before."""
    said = dict(new=x.arg[0], mask=x.run_mask, diff=f.diff,
                text="; the text stays causal." if x.n_text else ".")
    if f.same_masks:
        return SAID["same masks"].format(tokens=x.n_text or "no", **said)
    if f.blind_after and f.answer_after is not None:
        k, p = f.answer_after
        return SAID["blind after"].format(sight_after=common.prefix_sight(x.after),
                                          name=names_of(x.c)[k], p=share(p), **said)
    before = (SAID["blind before"].format(sight=common.prefix_sight(x.tr), **said) if f.blind
              else "")
    if f.window is not None:
        return window_notice(x, f) + before
    rule = ("causal after" if f.sight_after == "causal" else "ahead after" if f.ahead_after
            else "full after" if f.sight_after == "full" else "other after")
    return SAID[rule].format(**said) + before


NOTES = {"heads": _heads, "occlude": _occlude, "positions": _positions, "shuffle": _positions,
         "shuffle_no_positions": _unordered, "mask": _mask}


def notice_words(x: Ctx, f: Notice) -> str:
    """The note under the results: true for any model, or worded from these two runs."""
    return NOTES[f.kind](x, f)


# ---------------------------------------------------------------- a window mask
def _window_sees(c, f: Notice, m: int) -> str:
    pre = list(c.prefix_names)
    sees = ("each patch attends to no other patch, only to itself" if f.window_keys == 1 else
            f"each patch attends only to the patches of its own {m}×{m} window (at most "
            f"{f.window_keys} of the {c.num_patches} patch keys in a block)")
    if pre:
        sees += (f" and to {' and '.join(pre)}, which still see{'s' if len(pre) == 1 else ''} "
                 f"every patch")
    return sees


def _window_road(c, m: int, shifted: bool) -> str:
    """How information crosses the windows' borders."""
    pre = list(c.prefix_names)
    if not shifted:
        return ("; the windows never move, so patches in different windows exchange "
                + ("information only through " + " and ".join(pre) if pre else "nothing"))
    if not m // 2:
        return "; a 1×1 window cannot shift, so the shifted mask is the plain one"
    return (f"; on blocks 1, 3, … the windows move by {m // 2} patch"
            f"{'' if m // 2 == 1 else 'es'}, so what a patch gathers crosses the borders "
            "of the block before's windows")


def window_notice(x: Ctx, f: Notice) -> str:
    """What a window mask did, from the mask the run after added and the two runs' answers."""
    c, (m, shifted) = x.c, f.window
    text = (f" The text tokens keep the model's own {c.default_mask} rule." if x.n_text else "")
    said = (f"under the {common.mask_label(x.arg[0])} mask {_window_sees(c, f, m)}"
            f"{_window_road(c, m, shifted)}.{text} "
            + (f"This model was trained with its {c.default_mask} mask, not with windows"
               if f.trained else "This model has random weights: it was never trained"))
    if f.moved is None:
        return said + f": the largest change of any {'output' if not c.has_text else 'logit'} " \
                      f"is {f.diff:.3g}."
    if f.family == "class" and f.answer_after is not None:
        k, p = f.answer_after
        return said + (f": it now answers {names_of(c)[k]} ({share(p)})"
                       + (", another class than before." if f.moved else ", as before."))
    return said + (": the caption changed." if f.moved else ": the caption stayed the same.")
