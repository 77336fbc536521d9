"""Steps 1 and 2 of the Masks stage: the three masks over the same tokens, and how many keys
each query may see under the causal and the prefix mask."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st

from ui.drawing import figures
from ui.drawing.equation import latex
from ui.lesson import deck
from ui.lesson.deck import Choice, Question
from ui.selection import models as picker
from ui.stages.common import image_block_full
from ui.stages.masks.keys import MASK_VISIBLE, MASKS_THREE
from ui.stages.masks.view import Ctx, caption_input, same_for_every_image, side_by_side
from vit_core import allowed_keys
from vit_core.explain.mask_facts import visible_keys

KINDS = ("full", "causal", "prefix")  # the three masks drawn side by side
NO_PEEKING = Choice((  # why text must not see later words: the right reason and misconceptions
    "The text comes after the image, so it must go last",
    "Attention over later words would cost too much",
    "It would learn to copy the next word, not to predict it",
    "Later words are padding with nothing in them"), right=2)
BOTH_WAYS = Choice((  # why image patches may see each other both ways
    "The patches have no positions, so order cannot matter",
    "Nothing is predicted from the image, so nothing can leak",
    "Attention both ways is cheaper to compute",
    "A causal mask works only on text tokens"), right=1)


# ---------------------------------------------------------------- the three masks
@dataclass(frozen=True)
class Tokens:
    n_img: int
    n_txt: int
    labels: list[str]  # a name per token of the captioner's sequence
    pairs: dict[str, int]  # (query, key) pairs each of KINDS lets through

    @property
    def S(self) -> int:
        return self.n_img + self.n_txt


def tokens(x: Ctx) -> Tokens:
    cc = x.cap.config
    n_img, n_txt = cc.num_image_tokens, len(x.enc.ids)
    return Tokens(n_img, n_txt, figures.token_labels(cc, x.fed),
                  {k: int(visible_keys(k, n_img, n_txt).sum()) for k in KINDS})


def three_alt(x: Ctx, f: Tokens) -> str:
    kept = "; ".join(f"{k} lets {f.pairs[k]:,} of the {f.S * f.S:,} pairs through" for k in KINDS)
    return (f"Three {f.S}×{f.S} masks side by side, full, causal and prefix, over the same "
            f"{f.n_img} image and {f.n_txt} text tokens: rows are query tokens (who looks), "
            f"columns key tokens (looked at); a light cell may look, a dark one is −∞, and "
            f"lines split the image tokens from the text. {kept}.")


def three_figure(x: Ctx, f: Tokens) -> None:
    left, right = st.columns([2, 3], vertical_alignment="center")
    with left:
        caption_input(x)
    with right:
        latex(r"A = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right),\quad "
              r"M_{ij}\in\{0, -\infty\}")
    grid = x.cap.config.grid

    def build():
        ticks = figures.spaced_ticks(f.labels, grid, 190)
        figs = [figures.mask_figure(allowed_keys(k, f.n_img, f.n_txt).numpy(), f.n_img, k,
                                    labels=f.labels, ticks=ticks) for k in KINDS]
        return side_by_side(figs, [f"{k}: {f.S}×{f.S}" for k in KINDS],
                            "Three masks over the same tokens (light: may look; dark: −∞)", 360,
                            spacing=0.12)

    key = (f.n_img, f.n_txt, tuple(f.labels), grid)
    deck.chart(same_for_every_image("three masks", key, build), key=MASKS_THREE)


def three_words(x: Ctx, f: Tokens) -> str:
    cc = x.cap.config
    pre = " + ".join(cc.prefix_names)
    n = f.n_txt - 1
    return (f"{x.captioners[0]}: **{f.n_img}** image tokens ({pre + ' + ' if pre else ''}"
            f"{cc.num_patches} patches) + **{f.n_txt}** text tokens ([SOS] + {n} "
            f"word{'' if n == 1 else 's'}) = S = **{f.S}**. Full lets every token see every other; "
            f"causal, itself and the tokens before it; prefix, the whole image, and the text only "
            f"up to itself.")


def three_notes(x: Ctx, f: Tokens) -> str:
    return (f"On the axes pN is patch N; the text rows and columns are [SOS] and then, in "
            f"order, {' '.join(x.fed[1:]) or 'no words'} (where they do not fit, only some are "
            f"printed). Orange lines split the image tokens from the text: the four blocks are "
            f"who looks (rows) and who is looked at (columns).")


def three_question(x: Ctx, _) -> Question:
    c = x.c
    if c.has_text:
        mine = (f" This model reads up to {c.max_text_len} text tokens after its "
                f"{c.num_image_tokens} image tokens and was trained with the {c.default_mask} "
                f"mask.")
    else:
        mine = " (This model reads no text; the captioners do.)"
    return Question("Why must text not see later words during training?",
                    "In training the whole caption goes in at once, and each position is asked "
                    "for the next word. If it could see that word it would learn to copy it, and "
                    "when writing a new caption, where the next word does not exist yet, it would "
                    "have learned nothing." + mine, NO_PEEKING)


# ---------------------------------------------------------------- how many keys each query sees
def visible_facts(x: Ctx) -> dict:
    f = tokens(x)
    visible: dict[str, np.ndarray] = {k: visible_keys(k, f.n_img, f.n_txt)
                                      for k in ("causal", "prefix")}
    return {"tokens": f, "visible": visible}


def visible_alt(x: Ctx, f: dict) -> str:
    t, v = f["tokens"], f["visible"]
    said = "; ".join(f"{k} from {int(v[k].min())} to {int(v[k].max())}" for k in v)
    return (f"Two lines, one per mask: across, the {t.S} query tokens (the {t.n_img} image "
            f"tokens first, the text from token {t.n_img}); up, how many keys each may see: "
            f"{said}.")


def visible_figure(x: Ctx, f: dict) -> None:
    t = f["tokens"]
    deck.chart(figures.visible_keys_chart(
        f["visible"], t.labels, figures.spaced_ticks(t.labels, x.cap.config.grid, 760,
                                                     figures.TURNED_GAP_PX), t.n_img),
        key=MASK_VISIBLE)


def visible_words(x: Ctx, f: dict) -> str:
    return ("What to notice: the prefix and causal masks differ only in the image block; the "
            "text rows are identical. What changes is what the image tokens know by the time the "
            "text reads them: under the causal mask the early patches never see the rest of the "
            "image.")


def visible_notes(x: Ctx, f: dict) -> str:
    cc, n_img = x.cap.config, f["tokens"].n_img
    pre = cc.num_prefix_tokens
    first = (f"{cc.prefix_names[0]} (token 0) sees only itself and patch p (token p + {pre}) "
             f"sees p + {pre + 1} tokens" if pre else
             "patch 0 sees only itself and patch p sees p + 1 tokens")
    return (f"Under the causal mask token i sees i + 1 tokens: {first}. Under the prefix mask "
            f"every image token sees all {n_img} image tokens. A text token sees the same keys "
            f"under both: every image token, and the text up to itself. A causal mask also tells "
            f"each token its position: token i sees exactly i + 1 keys.")


def visible_question(x: Ctx, _) -> Question:
    n_img = x.c.num_image_tokens
    where = "Here" if not x.others else f"In {picker.plain_label(x.name)}"
    if image_block_full(x.tr):
        here = f"{where}, under the {x.tr.mask_kind} mask, all {n_img} image tokens see each other."
    else:
        here = (f"{where}, under the {x.tr.mask_kind} mask, they do not: image token i sees only "
                f"tokens 0 … i.")
    return Question("Why may the image patches see each other both ways?",
                    "The image is given whole and nothing is predicted from it patch by patch, so "
                    "there is nothing to leak: every patch may use every other. " + here,
                    BOTH_WAYS)
