"""Opening a stage from a click: the model map's boxes (the overview stage).

The pages are those app.py built from the stages (ui/routes.PAGES); a box names the stage of the
pass it belongs to, and ui/lesson/routes.py's MAP_PAGES gives the page that explains it.
"""

from __future__ import annotations

import streamlit as st

from ui import keys
from ui.lesson import deck
from ui.lesson.routes import MAP_PAGES, PAGES
from ui.lesson.share import current_params


def clicked_box(chart_key: str) -> tuple[str, int] | None:
    """(page slug or "", layer or -1) of the map box the last click selected, else None."""
    event = st.session_state.get(chart_key)
    points = (event or {}).get("selection", {}).get("points", [])
    data = points[0].get("customdata") if points else None
    if not isinstance(data, list) or len(data) < 2:
        return None
    return MAP_PAGES.get(str(data[0] or ""), ""), int(data[1])  # data[0]: the box's stage


def on_map_click(chart_key: str) -> None:
    """on_select of the model map: a block box or layer cell selects its layer; a box opens its
    stage on the next run (st.switch_page cannot run inside a callback)."""
    hit = clicked_box(chart_key)
    if hit is None:
        return
    slug, layer = hit
    if layer >= 0:
        st.session_state[keys.LAYER] = layer
    if slug in PAGES:
        st.session_state[keys.MAP_OPEN] = slug


def open_pending() -> None:
    """Open the stage a map click asked for (call at the top of the page, before any work)."""
    slug = st.session_state.pop(keys.MAP_OPEN, None)
    if slug in PAGES:
        st.switch_page(PAGES[slug], query_params=current_params(slug))


def map_chart(fig, key: str, width: str) -> None:
    """The model map, a click on a box opening its stage (on the next run: open_pending)."""
    deck.chart(fig, key=key, on_select=lambda: on_map_click(key),
               selection_mode="points", config={"displayModeBar": False}, width=width)
