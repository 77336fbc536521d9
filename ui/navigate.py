"""Opening a stage from a click: the model map's boxes (pages/overview.py).

The stages and their scripts are app.py's STAGES; app.py is the script Streamlit runs, so it is
read here (its STAGES literal, parsed once) rather than imported, which would run it again.
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from pathlib import Path

import streamlit as st

from . import keys

APP = Path(__file__).resolve().parents[1] / "app.py"


@lru_cache(maxsize=1)
def stage_scripts() -> dict[str, str]:
    """slug -> page script, from app.py's STAGES."""
    for node in ast.parse(APP.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "STAGES"
                                                for t in node.targets):
            return {slug: value[0] for slug, value in ast.literal_eval(node.value).items()}
    raise LookupError("app.py defines no STAGES")


def clicked_box(chart_key: str) -> tuple[str, int] | None:
    """(stage slug or "", layer or -1) of the map box the last click selected, else None."""
    event = st.session_state.get(chart_key)
    points = (event or {}).get("selection", {}).get("points", [])
    data = points[0].get("customdata") if points else None
    if not isinstance(data, list) or len(data) < 2:
        return None
    return str(data[0] or ""), int(data[1])


def on_map_click(chart_key: str) -> None:
    """on_select of the model map: a block box or layer cell selects its layer; a box opens its
    stage on the next run (st.switch_page cannot run inside a callback)."""
    hit = clicked_box(chart_key)
    if hit is None:
        return
    slug, layer = hit
    if layer >= 0:
        st.session_state[keys.LAYER] = layer
    if slug in stage_scripts():
        st.session_state[keys.MAP_OPEN] = slug


def open_pending() -> None:
    """Open the stage a map click asked for (call at the top of the page, before any work)."""
    slug = st.session_state.pop(keys.MAP_OPEN, None)
    if slug in stage_scripts():
        from .share import current_params

        st.switch_page(stage_scripts()[slug], query_params=current_params(slug))



def presenter_zoom() -> float:
    """The CSS zoom presenter mode puts on the page (ui/presenter.LARGE), 1 if none."""
    from .presenter import LARGE

    found = re.search(r"stMainBlockContainer[^}]*zoom:\s*([\d.]+)", LARGE)
    return float(found.group(1)) if found else 1.0


def unzoomed(chart_key: str) -> str:
    """CSS that undoes presenter mode's page zoom on one plotly chart ("" without a zoom).

    Under a CSS `zoom` Streamlit measures the chart's container already zoomed and plotly then
    draws at that width, so the zoom applies twice (1.3² ≈ 1.7×) and the chart is cut at the
    right and bottom. Zooming this chart back by the inverse draws it at its own size; the page
    then draws the figure itself larger (figures.model_map's `scale`).
    """
    zoom = presenter_zoom()
    if zoom == 1:
        return ""
    return f"<style>.st-key-{chart_key} {{ zoom: {1 / zoom:.4f}; }}</style>"
