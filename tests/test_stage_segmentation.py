"""Stage 9, the segmentation pivot, as a deck of steps: the steps each model family gets, and
the words and the edges picture checked against a class map and pixel pairs counted here (loops
over the cells, bilinear upsampling, numpy), never with the stage's own facts."""

from __future__ import annotations

import ast

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.support import ROOT, open_app, page_text
from ui import keys, stages
from ui.drawing import figures
from vit_core import load_image, load_model, preprocess, run_trace

CLF = "shapes-classifier"


def labels_by_hand(at, model) -> np.ndarray:
    c = model.config
    pixels = preprocess(load_image(at.session_state[keys.INPUT].data), c)
    s = run_trace(model, pixels)["seg_logits"].double()
    g, r = c.grid, c.seg_upsample
    grid = torch.zeros(c.seg_classes, g * r, g * r, dtype=torch.float64)
    for n in range(g * g):
        pr, pc = divmod(n, g)
        grid[:, pr * r:(pr + 1) * r, pc * r:(pc + 1) * r] = s[n]
    return F.interpolate(grid[None], size=(c.img_size,) * 2, mode="bilinear",
                         align_corners=False)[0].argmax(0).numpy()


def share_text(x: float) -> str:
    return f"{x:.1%}" if x < 0.1 or 0.995 <= x < 1 else f"{x:.0%}"


def open_step(model: str, key: str, **kw):
    c = load_model(model).config
    n = [s.key for s in stages.get("segmentation").steps_for(c)].index(key) + 1
    at = open_app(model=model, params={"page": "segmentation", "presenter": "1", "step": str(n)},
                  **kw)
    assert not at.exception, [e.value for e in at.exception]
    return at


# ---------------------------------------------------------------- the declaration
@pytest.mark.parametrize(("model", "keys_"), [
    (CLF, ["tokens", "map", "shares", "edges"]),
    ("shapes-captioner-causal", ["tokens"]), ("vit-ti16", ["tokens"])])
def test_each_family_gets_the_steps_that_apply(model, keys_):
    c = load_model(model).config
    assert [s.key for s in stages.get("segmentation").steps_for(c)] == keys_
    questions = [s for s in stages.get("segmentation").steps_for(c) if s.question]
    assert questions  # every family keeps a question


def test_the_stage_module_addresses_no_step_by_position():
    for path in ("ui/stages/segmentation.py",):
        tree = ast.parse((ROOT / path).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert not any(a.name == "steps" for a in node.names), path


def test_a_model_without_a_head_says_so_on_its_one_step():
    at = open_step("vit-ti16", "tokens")
    said = " ".join(i.value for i in at.info)
    assert "vit-ti16 has no segmentation head, so there is no class map" in said
    assert not at.dataframe


# ---------------------------------------------------------------- words against the numbers
def test_the_class_map_words_and_shares_by_hand():
    at = open_app("segmentation", CLF, no_error=True)
    model = load_model(CLF)
    c = model.config
    lab = labels_by_hand(at, model)
    said = page_text(at)
    g, r = c.grid, c.seg_upsample
    assert f"so the map has {g * r}×{g * r} cells where the patch grid has {g}×{g}" in said
    back = float((lab == 0).mean())
    assert f"Background covers {share_text(back)} of the pixels" in said
    objects = {k: float((lab == k).mean()) for k in np.unique(lab) if k}
    names = ["background", *c.class_names]
    top = max(objects, key=objects.get)
    if len(objects) == 1:
        assert f"and {names[top]} the other {share_text(objects[top])}" in said
    else:
        assert f"the largest is {names[top]}, at {share_text(objects[top])}" in said


def test_the_edges_picture_counts_the_pairs_by_hand(monkeypatch):
    legends = []
    real = figures.with_legend

    def spy(img, entries, *a, **k):
        legends.append([label for label, _ in entries])
        return real(img, entries, *a, **k)

    monkeypatch.setattr(figures, "with_legend", spy)
    at = open_step(CLF, "edges")
    model = load_model(CLF)
    lab = labels_by_hand(at, model)
    P = model.config.patch_size
    on = inside = 0
    for x in range(lab.shape[1] - 1):
        d = int((lab[:, x] != lab[:, x + 1]).sum())
        on, inside = (on + d, inside) if (x + 1) % P == 0 else (on, inside + d)
    for y in range(lab.shape[0] - 1):
        d = int((lab[y] != lab[y + 1]).sum())
        on, inside = (on + d, inside) if (y + 1) % P == 0 else (on, inside + d)
    assert legends[-1][:2] == [f"class edge on a patch border ({on:,} pairs)",
                               f"class edge inside a patch ({inside:,} pairs)"]
    said = " ".join(i.value for i in at.info)
    n = on + inside
    assert f"Of the {n:,} neighbouring-pixel pairs where the class changes, {on:,} " \
           f"({share_text(on / n)}) straddle a patch boundary" in said
    assert ("So here the edges do follow the patch grid." in said) == (on / n >= 0.5)


def test_the_first_question_sits_under_the_tokens():
    at = open_step(CLF, "tokens")
    toggles = [t for t in at.toggle if str(t.key).startswith(keys.REVEAL_PREFIX)]
    assert len(toggles) == 1
    toggles[0].set_value(True)
    at.run()
    c = load_model(CLF).config
    said = " ".join(i.value for i in at.info)
    assert f"at row i // {c.grid} and column i % {c.grid}" in said
    assert f"this model's head scores {c.seg_upsample}×{c.seg_upsample} cells per patch" in said
