"""The view lives in the URL: sample, model, layer, head, patch, mask, stage and presenter mode.

On a session's first run the query parameters are read into session state (values checked and
clamped), and after the sidebar is drawn the current view is written back, so the browser's
address bar is always a link to exactly this view.
"""

from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

from . import state

INT_KEYS = ("sample", "layer", "head", "patch")
MASKS = ("trained", "full", "causal", "prefix")


def load_once() -> None:
    """Copy the URL's view into session state, once per session (before widgets exist)."""
    if st.session_state.get("_url_loaded"):
        return
    st.session_state["_url_loaded"] = True
    q = st.query_params
    if q.get("model") in state.model_choices():
        st.session_state["model"] = q["model"]
    for key in INT_KEYS:
        try:
            st.session_state[key] = int(q[key])
        except (KeyError, ValueError):
            pass
    if st.session_state.get("sample") not in state.sample_seeds():
        st.session_state.pop("sample", None)
    if q.get("mask") in MASKS:
        st.session_state["mask"] = q["mask"]
    if q.get("presenter") in ("1", "true", "on"):
        st.session_state["presenter"] = True


def current_params(stage: str) -> dict[str, str]:
    ss = st.session_state
    params = {"page": stage, "model": ss.get("model")}
    inp = ss.get("_input")
    if inp is not None and inp.label.startswith("sample"):
        params["sample"] = ss.get("sample")
    for key in ("layer", "head", "patch"):
        params[key] = ss.get(key)
    if ss.get("mask", "trained") != "trained":
        params["mask"] = ss["mask"]
    if ss.get("presenter"):
        params["presenter"] = 1
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
