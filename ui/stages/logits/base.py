"""The Logits stage's view (the sidebar's mask and the stage's own widgets), its wording
thresholds, the model families it tells apart, and the temperature question."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from ui import keys
from ui.lesson import deck
from ui.lesson.deck import Choice
from ui.selection import session

TOP_BARS = 5  # the classifier's bars: the most probable this-many classes
WORD_BARS = 8  # the captioner's bars: the most likely this-many next words
LOGIT_BARS = 15  # the raw logits' bars: every class up to this many, else the largest
SLIDE_ROWS = 8  # a scored caption on a slide shows this many rows (the rest scroll)
CAPTION = "a red ball on the grass"  # the caption scored until the student types one


@dataclass(frozen=True)
class Ctx:
    """The stage's view and the sidebar's mask (None: the one the model was trained with)."""

    v: deck.View
    mask: str | None

    def __getattr__(self, name):  # the view's fields (inp, tr, c, …)
        return getattr(self.v, name)

    @property
    def masked(self) -> str:
        """' (under the causal mask)' when the sidebar chose a mask, else ''."""
        return "" if self.mask is None else f" (under the {self.tr.mask_kind} mask)"

    @property
    def names(self) -> list[str]:
        c = self.c
        return list(c.class_names) or [f"class {k}" for k in range(c.num_classes)]


# The stage's own widgets, with their first values. Each is drawn by one step, so in presenter
# mode it is not drawn while another step shows; its value is written back at every run (before
# any widget), so it stays instead of Streamlit dropping it, and the widgets take no default.
WIDGETS = {keys.CLASS_TEMPERATURE: 1.0, keys.TEMPERATURE: 0.0, keys.TOP_K: 0, keys.GEN_SEED: 0,
           keys.CAPTION: CAPTION}


def view() -> Ctx:
    ss = st.session_state
    for key, first in WIDGETS.items():
        ss[key] = ss.get(key, first)
    return Ctx(deck.load(), session.chosen_mask())


def _classifier(c) -> bool:
    return c.num_classes > 0


def _captioner(c) -> bool:
    return not c.num_classes and c.has_text


def _headless(c) -> bool:
    return not c.num_classes and not c.has_text


# ---------------------------------------------------------------- the temperature question
TEMPERATURE_Q = "What does temperature change, and what does it never change?"
TEMPERATURE = Choice((  # its options: the right one (true for any logits) and misconceptions
    "Which one is on top; never how sure it looks",
    "How sure it looks; never which one is on top",
    "The logits' order; never the probabilities",
    "Nothing at all: the softmax undoes it"), right=1)


# ---------------------------------------------------------------- classifier: the answer
def _temperature() -> float:
    return float(st.session_state[keys.CLASS_TEMPERATURE])


def _temperature_slider() -> None:
    """The classifier's temperature, drawn with the bars; the lens's lines follow it too (on a
    slide of their own, with the T chosen on the bars' slide: view() keeps it)."""
    st.slider("Temperature T", 0.1, 5.0, step=0.1, key=keys.CLASS_TEMPERATURE,
              help="The logits are divided by T before the softmax.")
