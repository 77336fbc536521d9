"""Layer, head and patch selection, shared by every page (same widget keys everywhere).

Streamlit drops a widget's value when a page without that widget runs; `keep_shared` re-stores
the values at the top of every run (in app.py) so they survive page changes, and `clamp` keeps
them valid when the user switches to a model with fewer layers, heads or patches. A model with
a single layer, head or patch gets a sentence instead of a widget (a slider needs min < max);
the session value is still set, so the other pages and the shared link keep working.
"""

from __future__ import annotations

import streamlit as st

from ui import keys
from ui.selection import composer

SHARED = (keys.LAYER, keys.HEAD, keys.PATCH, keys.KEY_PATCH)
SIDEBAR = (keys.PRESENTER, keys.MODEL, keys.MASK, keys.SAMPLE,  # widgets drawn on every page
           keys.SIZE, keys.TRAIN_STEP, keys.SHARE_OPEN, *composer.WIDGETS)


def keep_shared() -> None:
    """Call before any widget: keep shared values, and restore sidebar values that a
    st.switch_page issued in the middle of a run would otherwise drop."""
    ss = st.session_state
    for key in SHARED:
        if key in ss:
            ss[key] = ss[key]
    for key in SIDEBAR:
        if key not in ss and keys.kept(key) in ss:
            ss[key] = ss[keys.kept(key)]


def resend_sidebar() -> None:
    """Call before the sidebar's widgets are drawn in presenter mode's popover: store their
    values again, so that each run sends them to the browser.

    A widget in a popover is created in the browser only when the popover opens, from the value
    sent with the element; Streamlit sends that value only in a run that set it in the session
    state. So a popover first opened after a later run showed each widget's first value ("0
    (random start)", presenter mode off), and a change in it sent those back: presenter mode
    left."""
    ss = st.session_state
    for key in (*SIDEBAR, keys.USE_CAMERA):
        if key in ss:
            ss[key] = ss[key]


def remember_sidebar() -> None:
    """Call after the sidebar is drawn: remember its values for keep_shared."""
    for key in SIDEBAR:
        if key in st.session_state:
            st.session_state[keys.kept(key)] = st.session_state[key]


def clamp(config) -> None:
    """Make sure every shared value exists and fits this model (call before widgets exist)."""
    limits = {keys.LAYER: config.depth, keys.HEAD: config.num_heads,
              keys.PATCH: config.num_patches, keys.KEY_PATCH: config.num_patches}
    centre = (config.grid // 2) * config.grid + config.grid // 2  # a patch near the middle
    defaults = {keys.LAYER: config.depth - 1, keys.HEAD: 0, keys.PATCH: centre,
                keys.KEY_PATCH: 0}
    for key, n in limits.items():
        value = st.session_state.get(key, defaults[key])
        st.session_state[key] = min(max(int(value), 0), n - 1)


def _only(where, text: str) -> None:
    """A model with one block / head / patch: Streamlit cannot draw a slider whose minimum
    equals its maximum, so the fixed choice is said in words instead."""
    (where or st).markdown(text)


def layer(config, where=None) -> int:
    if config.depth == 1:
        st.session_state[keys.LAYER] = 0
        _only(where, "Layer 0 (the only one: this model has 1 block)")
    else:
        (where or st).slider("Layer", 0, config.depth - 1, key=keys.LAYER,
                             help="Blocks are numbered from 0 (nearest the pixels).")
    return st.session_state[keys.LAYER]


def head(config, where=None) -> int:
    if config.num_heads == 1:
        st.session_state[keys.HEAD] = 0
        _only(where, "Head 0 (the only one: this model has 1 attention head)")
    else:
        (where or st).slider("Head", 0, config.num_heads - 1, key=keys.HEAD)
    return st.session_state[keys.HEAD]


def patch(config, where=None, label="Selected patch") -> int:
    if config.num_patches == 1:
        st.session_state[keys.PATCH] = 0
        _only(where, f"{label}: 0 (the only one: the image is a single patch)")
    else:
        (where or st).number_input(label, 0, config.num_patches - 1, step=1, key=keys.PATCH,
                                   help="Or click a patch in the image.")
    return st.session_state[keys.PATCH]


def select_patch_from_chart(chart_key: str) -> None:
    """on_select callback: a click on a patch-grid chart selects that patch."""
    event = st.session_state.get(chart_key)
    points = (event or {}).get("selection", {}).get("points", [])
    if points and points[0].get("customdata") is not None:
        data = points[0]["customdata"]
        st.session_state[keys.PATCH] = int(data[0] if isinstance(data, list) else data)
