"""The view lives in the URL: sample or composed scene, model, layer, head, patch, mask, stage
and presenter mode.

On a session's first run the query parameters are read into session state (values checked and
clamped), and after the sidebar is drawn the current view is written back, so the browser's
address bar is always a link to exactly this view. A query parameter has the name of the
session key it fills (ui/keys.py).
"""

from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

from . import composer, keys, models, state

INT_KEYS = (keys.SAMPLE, keys.LAYER, keys.HEAD, keys.PATCH)
MASKS = ("trained", "full", "causal", "prefix")


def load_once() -> None:
    """Copy the URL's view into session state, once per session (before widgets exist)."""
    if st.session_state.get(keys.URL_LOADED):
        return
    st.session_state[keys.URL_LOADED] = True
    q = st.query_params
    wanted = q.get(keys.MODEL)
    if wanted and models.needs_fetch(wanted):  # a real ViT this machine has not fetched yet
        here = models.teacher_actions_allowed()
        st.session_state[keys.LINK_NOTICE] = (
            f"This link opens {wanted}, which is not on this machine yet"
            + (": fetch it below." if here else "; showing another model instead."))
        if here:
            st.session_state[keys.FETCHING] = wanted
    elif wanted in models.choices():
        st.session_state[keys.MODEL] = wanted
    elif wanted:
        st.session_state[keys.LINK_NOTICE] = (f"This link opens {wanted}, which this app does "
                                              f"not offer; showing another model instead.")
    for key in INT_KEYS:
        try:
            st.session_state[key] = int(q[key])
        except (KeyError, ValueError):
            pass
    if st.session_state.get(keys.SAMPLE) not in state.sample_seeds():
        st.session_state.pop(keys.SAMPLE, None)
    composer.load_link(q.get(keys.SCENE))
    if q.get(keys.MASK) in MASKS:
        st.session_state[keys.MASK] = q[keys.MASK]
    if q.get(keys.PRESENTER) in ("1", "true", "on"):
        st.session_state[keys.PRESENTER] = True


def current_params(stage: str) -> dict[str, str]:
    ss = st.session_state
    params = {"page": stage, keys.MODEL: ss.get(keys.MODEL)}
    inp = ss.get(keys.INPUT)
    if inp is not None and inp.label.startswith("sample"):
        params[keys.SAMPLE] = ss.get(keys.SAMPLE)
    elif inp is not None and inp.label.startswith("composed"):
        params[keys.SCENE] = ss.get(keys.SCENE)
    for key in (keys.LAYER, keys.HEAD, keys.PATCH):
        params[key] = ss.get(key)
    if ss.get(keys.MASK, "trained") != "trained":
        params[keys.MASK] = ss[keys.MASK]
    if ss.get(keys.PRESENTER):
        params[keys.PRESENTER] = 1
    return {k: str(v) for k, v in params.items() if v is not None}


def write(stage: str) -> None:
    """Put the current view into the address bar (only when it changed)."""
    params = current_params(stage)
    if dict(st.query_params) != params:
        st.query_params.from_dict(params)


def link(stage: str) -> str:
    """An absolute link that reopens this view."""
    base = (st.context.url or "").split("?")[0]
    root = base[: base.rfind("/") + 1] if base.count("/") > 2 else base.rstrip("/") + "/"
    return root + "?" + urlencode(current_params(stage))
