"""Presenter mode: large type, sidebar folded away, one stage per screen with Previous / Next."""

from __future__ import annotations

import streamlit as st

from .narrative import NARRATIVE

LARGE = """<style>
[data-testid="stMainBlockContainer"] { zoom: 1.3; max-width: 100%; }
[data-testid="stMainBlockContainer"] p { font-size: 1.2rem; }
</style>"""


def header(stages: dict, slug: str) -> None:
    """Stage number, Previous / Next, and the narrative for this stage."""
    slugs = list(stages)
    i = slugs.index(slug) if slug in slugs else 0
    st.html(LARGE)
    prev_col, mid, next_col = st.columns([1, 4, 1], vertical_alignment="center")
    mid.markdown(f"**Stage {i + 1} / {len(slugs)}** · {stages[slugs[i]][1]}")
    if prev_col.button("◀ Previous", key="presenter_prev", disabled=i == 0):
        go_to(stages, slugs[i - 1])
    if next_col.button("Next ▶", key="presenter_next", disabled=i == len(slugs) - 1):
        go_to(stages, slugs[i + 1])
    st.success(NARRATIVE.get(slugs[i], ""))


def go_to(stages: dict, slug: str) -> None:
    from .share import current_params

    st.switch_page(stages[slug][0], query_params=current_params(slug))
