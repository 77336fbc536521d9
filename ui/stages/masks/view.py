"""The Masks stage's view: the captioners shown, the runs made live, the classifier put under a
causal mask and the caption the student typed; and what its steps share (the caption box, a
row of figures, a figure built once for every image)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

from ui import keys
from ui.drawing import figures
from ui.lesson import deck
from ui.serving import state, tour
from ui.stages.common import window_sizes
from vit_core.explain.generation import tokenizer_for


@dataclass(frozen=True)
class Ctx:
    """The session's view and what the steps share: the captioners shown (the two bundled ones,
    else the chosen one, else a preset), the (captioner, mask) pairs run live, the classifier put
    under a causal mask, and the caption the student typed, as the first captioner reads it."""

    v: deck.View
    captioners: list[str]
    runs: list[tuple[str, str]]
    clf: str
    models: dict[str, Any]
    caption: str
    enc: Any  # vit_core.io.text.Encoding of `caption` by the first captioner's tokenizer
    fed: list[str]  # the words fed after [SOS], [UNK] where the vocabulary has none

    def __getattr__(self, name):  # the view's fields (inp, name, tr, c, …)
        return getattr(self.v, name)

    @property
    def cap(self):
        return self.models[self.captioners[0]]

    @property
    def trained(self) -> list[str]:
        """The bundled (trained) captioners among those shown."""
        return [m for m in self.captioners if m in tour.BUNDLED]

    @property
    def others(self) -> bool:
        """The captioners shown are other models than the one chosen."""
        return self.name not in self.captioners


def _keep(key: str, default, limit: int | None = None) -> None:
    """Keep a widget's value while a presenter step without that widget runs (Streamlit drops
    the value of a widget a run does not draw); clamp a slider to this captioner."""
    ss = st.session_state
    value = ss.get(key, default)
    ss[key] = value if limit is None else min(max(int(value), 0), limit - 1)


def fed_words(tok, enc) -> list[str]:
    """The words an encoding feeds, [UNK] where the vocabulary has none."""
    return ["[UNK]" if i == tok.unk_id else w for w, i in zip(enc.words, enc.ids, strict=True)]


def view() -> Ctx:
    v = deck.load()
    captioners, runs, clf = tour.masks_page_models(v.name, v.model)
    models = {m: state.get_model(m) for m in captioners}
    cc = models[captioners[0]].config
    _keep(keys.MASK_CAPTION, tour.MASK_CAPTION)
    _keep(keys.MASK_LAYER, cc.depth - 1, cc.depth)
    _keep(keys.MASK_HEAD, 0, cc.num_heads)
    sizes = window_sizes(v.c)
    if sizes and st.session_state.get(keys.MASK_WINDOW) not in sizes:  # first visit, or a model
        st.session_state[keys.MASK_WINDOW] = min(tour.WINDOW_SIZE, sizes[-1])  # with fewer
    elif sizes:
        _keep(keys.MASK_WINDOW, tour.WINDOW_SIZE)
    caption = str(st.session_state[keys.MASK_CAPTION])
    tok = tokenizer_for(models[captioners[0]])
    enc = tok.encode(caption, max_len=cc.max_text_len)
    return Ctx(v, captioners, runs, clf, models, caption, enc, fed_words(tok, enc))


def intro(x: Ctx) -> str:
    return ("An image-to-text model puts the image tokens first and the text after them, in one "
            "sequence. A mask M is added to the scores before the softmax: 0 where a query may "
            "read a key, −∞ where it may not, which the softmax turns into a weight of exactly 0. "
            "The mask decides what each token can know. Text must never see words after it "
            "(otherwise training would let it copy the answer), but the image has no order, so "
            "its patches may as well see each other in both directions: that is the prefix mask.")


def caption_input(x: Ctx) -> None:
    """The caption fed to the captioners' text stream (its value kept by `view`)."""
    st.text_input("Caption fed to the text stream", key=keys.MASK_CAPTION, max_chars=2000)
    if x.enc.notice:
        st.warning(x.enc.notice)


def side_by_side(figs: list, titles: list[str], title: str, height: int,
                 colour: dict | None = None, spacing: float = 0.08):
    """One plotly figure holding `figs` (single-subplot figures) in a row, each under its title:
    their traces, axes (square cells kept), lines and labels. `colour`: a colour axis the
    heatmaps share (one scale for maps that are compared), e.g. {"colorscale": ..., "cmin": ...,
    "colorbar": ...}."""
    more = dict(title=dict(text=title, font=dict(size=14)), height=height,
                margin=dict(l=0, r=0, t=60, b=0), showlegend=False)
    if colour is not None:
        more["coloraxis"] = colour
    return figures.panels(figs, titles, spacing=spacing, coloraxis=colour is not None, more=more)


@st.cache_resource(max_entries=16, show_spinner=False)
def _same_for_every_image(what: str, key: tuple, _build):
    """A key figure that depends on the model's shape, the caption and the controls in `key`,
    never on the image: built once for every student of the class (a big heatmap is most of
    a run's time). Shared and read-only: deck.chart copies a figure before changing it."""
    return _build()


same_for_every_image = _same_for_every_image
