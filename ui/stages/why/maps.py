"""Step 1: the six maps side by side, on one colour scale."""

from __future__ import annotations

import numpy as np

from ui.drawing.figures.heatmaps import grid_heatmap
from ui.drawing.figures.parts import panels
from ui.lesson import deck
from ui.selection import session
from ui.stages.why import compute
from ui.stages.why.keys import WHY_MAPS
from vit_core.explain.attribution import METHODS

NAMES = {"cls_attention": "CLS attention", "rollout": "Rollout", "grad_rollout":
         "Gradient rollout", "gradcam": "Grad-CAM", "integrated_gradients":
         "Integrated Gradients", "occlusion": "Occlusion"}
VALUE = "share of the map's largest |value| (red: for the answer, blue: against)"


def title(config) -> str:
    return "Six maps of one answer" if config.num_classes else "Six maps of one word"


def facts(x: deck.View) -> dict:
    mask = session.chosen_mask()
    target = compute.target(x.inp, x.name, mask)
    found = compute.maps(x.inp, x.name, mask, target)
    scaled = {m: _scaled(found[m].patches.double().numpy()) for m in METHODS}
    tops = {m: int(np.argmax(found[m].patches.numpy())) for m in METHODS}
    return {"target": target.label, "maps": scaled, "top": tops, "grid": x.c.grid}


def _scaled(v: np.ndarray) -> np.ndarray:
    peak = float(np.abs(v).max())
    return v / peak if peak > 0 else v


def figure(x: deck.View, f: dict) -> None:
    g = f["grid"]
    figs = [grid_heatmap(f["maps"][m].reshape(g, g), "", value_name=VALUE, zmin=-1, zmax=1,
                         dtick_up_to=8) for m in METHODS]
    fig = panels(figs, [NAMES[m] for m in METHODS], coloraxis=True, spacing=0.03)
    fig.update_layout(title=f"What made the answer “{f['target']}”? Six methods, one scale",
                      coloraxis=dict(colorscale="RdBu_r", cmin=-1, cmax=1), height=320)
    deck.chart(fig, key=WHY_MAPS)


def words(x: deck.View, f: dict) -> str:
    g = f["grid"]
    tops = {m: divmod(f["top"][m], g) for m in METHODS}
    same = len(set(tops.values()))
    return (f"Each map gives every patch a share of the answer “{f['target']}”. The six methods "
            f"put their strongest patch in {same} different place{'s' if same != 1 else ''}.")
