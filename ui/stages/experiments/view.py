"""The Experiments stage's view: the change chosen (kept across steps), the run before it and,
when a step first asks, the runs after it."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import streamlit as st

from ui import keys
from ui.lesson import deck
from ui.selection import session
from ui.serving import state
from ui.stages import choices
from vit_core.explain import experiment_facts as facts
from vit_core.explain import interventions as ex
from vit_core.explain.generation import tokenizer_for
from vit_core.explain.readout import image_blind

KINDS = choices.KINDS  # the radio's labels -> the intervention
SHUFFLES = ("shuffle", "shuffle_no_positions")
WIDGETS = (keys.EXP_KIND, keys.EXP_HEADS, keys.EXP_SEED, keys.EXP_MASK)  # kept across steps
# In presenter mode the figure's row of columns fills the figure's height, so that a chart drawn
# in a column (deck.chart, height "stretch") fills the slide and no more (ui/presenter.CSS
# stretches a figure drawn directly in the figure's container; a row of columns would keep its
# content's height); the choices' column scrolls if a short screen cannot hold them.
PRESENTER_ROW_CSS = """<style>
.st-key-%FIG% [data-testid="stLayoutWrapper"]:has(> [data-testid="stHorizontalBlock"]
  .st-key-%KIND%) { flex: 1 1 0; min-height: 0; }
.st-key-%FIG% [data-testid="stHorizontalBlock"]:has(.st-key-%KIND%) { min-height: 0; }
.st-key-%FIG% [data-testid="stColumn"]:has(.st-key-%KIND%) { overflow-y: auto;
  overflow-x: hidden; }
</style>""".replace("%FIG%", deck.FIGURE).replace("%KIND%", keys.EXP_KIND)

around = facts.around  # the 3 x 3 patches around a patch (the grey set's start)
mask_options = choices.mask_options


@dataclass
class Ctx:
    """The stage's view: the change chosen and the run before it (a captioner's fed its own
    caption, so that both runs score the same words); the runs after are computed once, when a
    step first asks."""

    v: deck.View
    label: str  # the radio's label
    kind: str  # its intervention
    arg: tuple  # the intervention's argument (vit_core.explain.interventions)
    mask: str | None  # the sidebar's mask (None: the model's own); both runs keep it
    tr: Any  # the run before (a captioner's: fed its greedy caption)
    gen0: Any  # a captioner's greedy caption before (None otherwise)
    enc: Any  # that caption, encoded as fed to both runs
    grey: tuple[int, ...]  # the grey set (keys.EXP_OCCLUDED), which the first question greys
    grey_around: int | None  # the patch the grey set is the 3 x 3 around, if it is
    seed: int  # the shuffle seed (keys.EXP_SEED)
    altered: ex.Altered  # what the chosen change feeds the model

    def __getattr__(self, name):  # the view's fields (inp, name, model, prep, c, …)
        if name == "v":
            raise AttributeError(name)
        return getattr(self.v, name)

    @property
    def text_ids(self) -> list[int] | None:
        return self.enc.ids if self.enc is not None else None

    @property
    def n_text(self) -> int:
        return len(self.text_ids or [])

    @property
    def run_mask(self) -> str:
        return self.tr.mask_kind

    @property
    def empty(self) -> bool:
        """Nothing switched off or greyed out yet: the run after would be the run before."""
        return self.kind in ("heads", "occlude") and not self.arg

    def run(self, kind: str, arg: tuple = ()):
        """The trace with intervention `kind` (cached in ui.serving.state), fed the same text."""
        return state.experiment(self.inp, self.name, kind, arg, self.text_ids, self.mask)

    def caption(self, kind: str, arg: tuple = ()):
        """A captioner's greedy caption with intervention `kind` in place (cached)."""
        return state.experiment_caption(self.inp, self.name, kind, arg, self.mask)

    @cached_property
    def after(self):
        return self.tr if self.empty else self.run(self.kind, self.arg)

    @cached_property
    def gen1(self):
        return self.gen0 if self.empty else self.caption(self.kind, self.arg)

    @cached_property
    def diff(self) -> float:
        return ex.max_difference(self.tr, self.after)


def blind(tr) -> bool:
    """The class logits of this run cannot see the image (decided from its mask tensor)."""
    return image_blind(tr.config, tr.mask)


def _keep_widgets(c, run_mask: str) -> None:
    """The choices live in the first step's widgets; presenter mode draws the other steps
    without them, so their values are stored again each run (as controls.keep_shared does), and
    fitted to this model."""
    ss = st.session_state
    for key in WIDGETS:
        if key in ss:
            ss[key] = ss[key]
    if ss.get(keys.EXP_KIND) not in KINDS:
        ss[keys.EXP_KIND] = next(iter(KINDS))
    ss[keys.EXP_HEADS] = [h for h in ss.get(keys.EXP_HEADS, [0]) if h < c.num_heads]
    if keys.EXP_OCCLUDED not in ss:  # start with the 3 x 3 patches around the selected one
        ss[keys.EXP_OCCLUDED] = around(int(ss[keys.PATCH]), c.grid)
    others = mask_options(c, run_mask)
    if ss.get(keys.EXP_MASK) not in others:
        ss[keys.EXP_MASK] = others[0]


def _argument(kind: str, layer: int, grey: tuple, seed: int) -> tuple:
    """The intervention's argument, from the widgets (vit_core.explain.interventions)."""
    ss = st.session_state
    if kind == "heads":
        return tuple((layer, h) for h in sorted(ss[keys.EXP_HEADS]))
    if kind == "occlude":
        return grey
    if kind in SHUFFLES:
        return (seed,)
    if kind == "mask":
        return (ss[keys.EXP_MASK],)
    return ()


def view() -> Ctx:
    if deck.presenting():  # before anything is drawn: the first step's row of columns stretches
        st.html(PRESENTER_ROW_CSS)
    v = deck.load()
    c, ss = v.c, st.session_state
    mask = session.chosen_mask()  # the sidebar's mask: both runs use it (unless it is the change)
    gen0 = enc = None
    tr = v.tr
    if c.has_text:  # the caption the model writes unchanged, fed to both runs to score its words
        gen0 = state.generation(v.inp, v.name, mask=mask)
        enc = tokenizer_for(v.model).encode(gen0.text, max_len=c.max_text_len)
        tr = state.trace(v.inp, v.name, mask=mask, text_ids=enc.ids)
    _keep_widgets(c, tr.mask_kind)
    label = ss[keys.EXP_KIND]
    kind = KINDS[label]
    grey = tuple(p for p in ss[keys.EXP_OCCLUDED] if p < c.num_patches)
    seed = int(ss.get(keys.EXP_SEED, 0))
    arg = _argument(kind, v.layer, grey, seed)
    grey_around = facts.grey_centre(grey, (v.patch, facts.middle(c.grid)), c.grid)
    return Ctx(v, label, kind, arg, mask, tr, gen0, enc, grey, grey_around, seed,
               ex.alter(v.model, v.prep.pixels, kind, arg, mask))


def intro(x: Ctx) -> str:
    trained = ("" if x.mask else ", the one this model was trained with"
               if x.model.info.trained else ", this model's own (its weights are random)")
    return ("The best way to see what a part of the model does is to take it away. Pick an "
            "intervention below: the model runs again on the same image with that one change, and "
            "the two results are compared. Unless the change is the mask itself, both runs use the "
            f"{x.run_mask} attention mask{trained} (sidebar).")
