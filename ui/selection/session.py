"""What every page does first: the session's image, model and mask, and one pass over them.

Reads st.session_state (set by app.py and the sidebar before the page runs); the cached compute
it calls (ui/serving/state.py) never does.
"""

from __future__ import annotations

import streamlit as st

from ui import keys
from ui.selection import models
from ui.selection.inputs import Input, make_input, sample_bytes, sample_caption, sample_seeds
from ui.serving.state import get_model, prepare, sized, stepped, trace
from vit_core import ImageError


def image_error(inp: Input, model_name: str) -> str | None:
    """One sentence when `inp` cannot be read (the app then shows a sample scene), else None."""
    try:
        prepare(inp, model_name)
    except ImageError as e:
        what = inp.label.removeprefix("upload: ") if inp.label.startswith("upload: ") else \
            f"the {inp.label}"
        return f"{e} Showing a sample scene instead of {what}."
    return None


def current() -> tuple[Input, str]:
    """The input and model name chosen in the sidebar (set by app.py before the page runs)."""
    return st.session_state[keys.INPUT], model_name()


def model_name(ss=None) -> str:
    """The picker's model at the sidebar's training step and input size: the name every ui/state
    call takes ('NAME@step250' before its last training step, state.stepped; then '@288px' at
    another size than the model's own, state.sized). `ss`: another mapping than this session's
    state (a following student's settings, ui/live/follow.py)."""
    ss = st.session_state if ss is None else ss
    return sized(stepped(ss[keys.MODEL], ss.get(keys.TRAIN_STEP)), ss.get(keys.SIZE))


def load_current(text_free_note: bool = False):
    """(input, model name, model, prepared image, trace) for the page; a spinner on first use.

    A file that cannot be read shows one line and falls back to the default sample scene.

    Args:
        text_free_note: the page draws what image tokens compute inside the blocks; say so
            when the trace (fed no text) differs from a captioner's writing passes, i.e. when
            the mask lets image tokens read the text (the full mask).
    """
    inp, name = current()
    with st.spinner(f"Loading {name}…"):
        model = get_model(name)
    if st.session_state.get(keys.INPUT_ERROR):  # the sidebar already fell back to a sample
        st.error(st.session_state[keys.INPUT_ERROR])
    try:
        prep = prepare(inp, name)
    except ImageError as e:
        st.error(f"{e} Showing a sample scene instead.")
        seed = sample_seeds()[0]
        inp = make_input(f"sample: {sample_caption(seed)}", sample_bytes(seed))
        st.session_state[keys.INPUT] = inp
        prep = prepare(inp, name)
    with st.spinner(f"Running {name} on this image: one forward pass…"):
        tr = trace(inp, name, mask=chosen_mask())
    if not model.info.trained:
        st.warning(f"{name} has random weights: every shape and number here is real, but "
                   f"nothing was learned, so patterns and predictions mean nothing.")
    note = models.honesty_note(model, inp.label)
    if note:
        st.info(note, icon=":material/info:")
    if text_free_note and model.config.has_text and tr.mask_kind == "full":
        st.caption("This page shows the pass over the image alone, with no text fed. Under the "
                   "full mask the image tokens also read the words while the model writes a "
                   "caption, so inside the blocks its writing passes differ from this one; the "
                   "Masks and Logits pages feed text.")
    return inp, name, model, prep, tr


def chosen_mask() -> str | None:
    """The sidebar's attention mask: None means the one the model was trained with."""
    mask = st.session_state.get(keys.MASK, "trained")
    return None if mask == "trained" else mask
