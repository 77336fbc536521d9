"""Windowed attention as an Experiment (issue 29, item 4): the Experiments stage offers M x M
windows, plain and shifted, beside the other masks; what it draws and says is checked against a
window mask built here by hand and the model run under it (an additive mask per block, not the
library's window names)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.independent import charts_by_key, pixels_of
from tests.support import HUB, arr, open_app
from ui import keys
from ui.stages.experiments.keys import EXP_ALTERED
from vit_core import load_model

KIND = "Apply another attention mask"
NOCLS = str(HUB / "timm/vit_tiny_avg_nocls.test")


def hand_window(grid: int, n_prefix: int, m: int, shift: int = 0) -> np.ndarray:
    """Boolean [S, S] for one block: patches see the patches of their own M x M window (windows
    start at -shift, clipped at the border); prefix tokens see and are seen by everything."""
    S = n_prefix + grid * grid
    out = np.ones((S, S), dtype=bool)
    for i in range(grid * grid):
        for j in range(grid * grid):
            (ri, ci), (rj, cj) = divmod(i, grid), divmod(j, grid)
            same = ((ri + shift) // m == (rj + shift) // m and
                    (ci + shift) // m == (cj + shift) // m)
            out[n_prefix + i, n_prefix + j] = same
    return out


def said(at) -> str:
    return " ".join(m.value for kind in ("markdown", "info", "caption") for m in getattr(at, kind))


def test_the_mask_picker_offers_windows_smaller_than_the_grid():
    at = open_app("experiments", "shapes-classifier", state={keys.EXP_KIND: KIND})
    offered = at.selectbox(key=keys.EXP_MASK).options
    g = load_model("shapes-classifier").config.grid  # 7: windows of 1 to 4 patches
    assert offered == ["causal", "prefix"] + [
        f"window {m}×{m}" + s for m in (1, 2, 3, 4) if m < g for s in ("", ", shifted")]


@pytest.mark.parametrize("shifted", [False, True])
def test_a_window_run_is_the_model_under_a_hand_built_window_mask(shifted):
    name = "window:2" + (":shifted" if shifted else "")
    at = open_app("experiments", "shapes-classifier", state={keys.EXP_KIND: KIND,
                                                             keys.EXP_MASK: name}, no_error=True)
    model = load_model("shapes-classifier")
    c = model.config
    blocks = [hand_window(c.grid, 1, 2, 1 if shifted and layer % 2 else 0)
              for layer in range(c.depth)]
    after = charts_by_key(at)[EXP_ALTERED]
    assert np.array_equal(arr(after["data"][0]["z"]).astype(bool), blocks[0])
    assert "block 0" in after["layout"]["title"]["text"]
    mask = torch.zeros(c.depth, 50, 50).masked_fill(~torch.from_numpy(np.stack(blocks)),
                                                    float("-inf"))
    x = pixels_of(at, model)
    with torch.no_grad():
        p = model(x, mask=mask)[0].double().softmax(-1)
        p0 = model(x)[0].double().softmax(-1)
    k = int(p.argmax())
    moved = k != int(p0.argmax())
    text = said(at)
    assert "each patch attends only to the patches of its own 2×2 window (at most 4 of the 49 " \
           "patch keys in a block) and to CLS, which still sees every patch" in text
    assert ("on blocks 1, 3, … the windows move by 1 patch" in text) == shifted
    assert ("exchange information only through CLS" in text) == (not shifted)
    pct = f"{100 * float(p.max()):.1f}%" if float(p.max()) >= 0.01 else None
    assert f"it now answers {c.class_names[k]} ({pct})" in text
    assert ("another class than before" in text) == moved


def test_without_cls_windows_that_never_move_cut_patches_apart():
    at = open_app("experiments", NOCLS, state={keys.EXP_KIND: KIND, keys.EXP_MASK: "window:1"},
                  no_error=True)
    text = said(at)
    assert "each patch attends to no other patch, only to itself" in text
    assert "patches in different windows exchange nothing" in text


def test_a_preset_is_not_said_to_have_been_trained():
    at = open_app("experiments", "vit-ti16", state={keys.EXP_KIND: KIND, keys.EXP_MASK: "window:2"},
                  no_error=True)
    assert not load_model("vit-ti16").info.trained
    text = said(at)
    assert "This model has random weights: it was never trained" in text
    assert "was trained with" not in text
