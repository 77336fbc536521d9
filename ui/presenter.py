"""Presenter mode: large type, no sidebar, one stage per screen with Previous / Next / Exit."""

from __future__ import annotations

import streamlit as st

from . import keys
from .narrative import NARRATIVE

LARGE = """<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"] { display: none; }
[data-testid="stMainBlockContainer"] { zoom: 1.3; max-width: 100%; }
[data-testid="stMainBlockContainer"] p { font-size: 1.2rem; }
</style>"""


def header(stages: dict, slug: str) -> None:
    """Stage number, Previous / Next, and the narrative for this stage."""
    slugs = list(stages)
    i = slugs.index(slug) if slug in slugs else 0
    st.html(LARGE)
    prev_col, mid, next_col, exit_col = st.columns([1, 4, 1, 1], vertical_alignment="center")
    exit_col.button("✕ Exit", key=keys.PRESENTER_EXIT, on_click=leave,
                    help="Back to the normal view with the sidebar (model, image, sharing).")
    title = stages[slugs[i]][1].split(" · ", 1)[-1]  # "4 · Attention heads" -> "Attention heads"
    n = len(slugs) - 1  # the overview comes before stage 1
    mid.markdown(f"**Stage {i} / {n}** · {title}" if i else f"**Overview** · then {n} stages")
    if prev_col.button("◀ Previous", key=keys.PRESENTER_PREV, disabled=i == 0):
        go_to(stages, slugs[i - 1])
    if next_col.button("Next ▶", key=keys.PRESENTER_NEXT, disabled=i == len(slugs) - 1):
        go_to(stages, slugs[i + 1])
    st.success(NARRATIVE.get(slugs[i], ""))


def go_to(stages: dict, slug: str) -> None:
    from .share import current_params

    st.switch_page(stages[slug][0], query_params=current_params(slug))


def leave() -> None:
    """on_click: switch presenter mode off before the sidebar's toggle is drawn."""
    st.session_state[keys.PRESENTER] = False
    st.session_state[keys.kept(keys.PRESENTER)] = False
