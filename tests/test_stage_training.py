"""The Training stage (ui/stages/training/): its numbers against references worked out here.

Position cosines in float64 from the snapshot files read with safetensors directly; mean
attention distance by a plain loop over heads, queries and keys; CLS attention on the object
from the last block's pattern and the scene generator's own pixel mask, pixel by pixel; the
prediction from a forward pass of every kept step's weights; the curves drawn against the
training log's rows. The stage opens at step 0 and at the end on the bundled classifier, on a
captioner and on a preset; every question's right value is recomputed here.
"""

from __future__ import annotations

import logging
import math
import re

import numpy as np
import pytest
import streamlit as st
import torch
from safetensors.torch import load_file

from tests.independent import array, charts_by_key, pixels_of
from tests.support import SMALL, open_app, randomised
from ui import keys, stages
from ui.drawing.numbers import pct
from ui.lesson import deck
from ui.lesson.replies import Number, PatchPick
from ui.selection import inputs, session
from ui.serving import state
from ui.stages.training.keys import (
    TRAIN_CLS,
    TRAIN_CURVES,
    TRAIN_DISTANCE,
    TRAIN_POSITIONS,
    TRAIN_PREDICTION,
)
from vit_core import load_model, run_trace, training_log
from vit_core.explain import training as tx
from vit_core.explain.attention import summarise
from vit_core.explain.embeddings import position_distance_stats
from vit_core.io.checkpoints import BUNDLED_DIR
from vit_core.scenes import world

NAME = "shapes-classifier"
CAPTIONER = "shapes-captioner-causal"
PRESET = "vit-ti16"


@pytest.fixture(scope="module")
def log():
    found = training_log(NAME)
    assert found is not None, f"{NAME} ships without its training log"
    return found


# ---------------------------------------------------------------- references, by hand
def pos_vectors(step: int | None, log) -> np.ndarray:
    """[N, D] float64 patch position vectors of the classifier after `step` steps (None or the
    last step: the shipped file), read from the safetensors file itself."""
    file = (BUNDLED_DIR / f"{NAME}.safetensors" if step in (None, log.final_step) else
            BUNDLED_DIR / f"{NAME}.snapshots" / f"step-{step}.safetensors")
    pos = load_file(str(file))["pos_embed"].double().numpy()[0]
    return pos[1:]  # CLS first


def cosines(e: np.ndarray) -> np.ndarray:
    n = len(e)
    out = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            out[i, j] = float(e[i] @ e[j]) / math.sqrt(float(e[i] @ e[i]) * float(e[j] @ e[j]))
    return out


def near_far(e: np.ndarray, g: int) -> tuple[float, float, int]:
    """Mean cosine of patch pairs 1 step apart, and of pairs max(3, g) or more steps apart."""
    cos, far_from = cosines(e), max(3, g)
    near, far = [], []
    for i in range(g * g):
        for j in range(g * g):
            d = abs(i // g - j // g) + abs(i % g - j % g)
            if d == 1:
                near.append(cos[i, j])
            elif d >= far_from:
                far.append(cos[i, j])
    return sum(near) / len(near), sum(far) / len(far), far_from


def distances(pattern: torch.Tensor, g: int, P: int, pre: int) -> list[float]:
    """Mean attention distance per head [H, S, S] -> [H] px, one weight at a time."""
    out = []
    N = g * g
    for h in range(pattern.shape[0]):
        per_query = []
        for i in range(N):
            row = [float(pattern[h, pre + i, pre + j]) for j in range(N)]
            total = sum(row)
            ri, ci = (i // g + 0.5) * P, (i % g + 0.5) * P
            per_query.append(sum(w / total * math.hypot(ri - (j // g + 0.5) * P,
                                                        ci - (j % g + 0.5) * P)
                                 for j, w in enumerate(row)))
        out.append(sum(per_query) / N)
    return out


def even_spread(g: int, P: int) -> float:
    pairs = [math.hypot((i // g - j // g) * P, (i % g - j % g) * P)
             for i in range(g * g) for j in range(g * g)]
    return sum(pairs) / len(pairs)


def cls_ratio(pattern: torch.Tensor, mask: np.ndarray, g: int, P: int, pre: int) -> float:
    """The last block's CLS row (mean over heads) over the patches; each patch's share spread
    over its pixels; the share on object pixels over the object's share of the image."""
    a = pattern[:, 0, pre:pre + g * g].double().mean(0)
    a = a / a.sum()
    on = cover = 0.0
    for p in range(g * g):
        cell = mask[(p // g) * P:(p // g + 1) * P, (p % g) * P:(p % g + 1) * P] > 0
        on += float(a[p]) * float(cell.mean())
        cover += float(cell.sum())
    return on / (cover / mask.size)


def scene_mask(at) -> np.ndarray:
    """The shown sample scene's object mask, drawn again by the scene world from its seed."""
    seed = at.session_state[keys.SAMPLE]
    assert inputs.sample_bytes(seed) == at.session_state[keys.INPUT].data
    return world.make_scene(seed).mask


def px_span(values) -> str:
    """'102–113' (or '16' when both ends print the same), as the page prints a range."""
    lo, hi = f"{min(values):.0f}", f"{max(values):.0f}"
    return lo if lo == hi else f"{lo}–{hi}"


def words(at) -> str:
    return "\n".join(i.value for i in at.info)


def two(v: float) -> str:
    return f"{v:.2f}".replace("-0.00", "0.00")


# ---------------------------------------------------------------- the facts, on small inputs
def test_position_closeness_is_the_float64_cosines_by_hand():
    model = randomised(SMALL)
    g = SMALL.grid
    e = model.pos_embed.detach().double().numpy()[0, 1:]
    near, far, far_from = near_far(e, g)
    got = tx.position_closeness(position_distance_stats(model.pos_embed.detach(), g, 1))
    assert got["far_from"] == far_from
    assert got["near"] == pytest.approx(near, abs=1e-9)
    assert got["far"] == pytest.approx(far, abs=1e-9)
    assert got["gap"] == pytest.approx(near - far, abs=1e-9)
    cos = cosines(e)
    for p in (0, 5, g * g - 1):
        row = [cos[p, j] if j != p else -9 for j in range(g * g)]
        best = max(row)
        assert tx.best_of(cos[p], tie=0.0, exclude=p) == (row.index(best),)
        assert set(tx.best_of(cos[p], tie=0.05, exclude=p)) == {
            j for j in range(g * g) if j != p and cos[p, j] >= best - 0.05}


def test_attention_distance_per_layer_by_a_hand_loop():
    model = randomised(SMALL, seed=3)
    c = model.config
    tr = run_trace(model, torch.randn(1, 3, c.img_size, c.img_size, generator=torch.Generator()
                                      .manual_seed(0)))
    layers = tx.layer_distances(summarise(tr)["distance"])
    for layer in range(c.depth):
        d = distances(tr[f"blocks.{layer}.attn.pattern"], c.grid, c.patch_size, 1)
        assert layers["mean"][layer] == pytest.approx(sum(d) / len(d), abs=1e-4)
        assert layers["lo"][layer] == pytest.approx(min(d), abs=1e-4)
        assert layers["hi"][layer] == pytest.approx(max(d), abs=1e-4)
    d = np.array([[10.0, 30.0], [49.0, 51.0]])
    assert tx.local_heads(d, 100.0, 0.5) == 3  # 10, 30, 49 < 50


def test_the_object_pixels_through_the_models_crop():
    mask = world.make_scene(world.heldout_seeds(1, 5)[0]).mask
    c224 = load_model(NAME).config
    assert np.array_equal(tx.crop_mask(mask, c224), mask)  # its own size: unchanged
    c288 = state.get_model(state.sized(NAME, 288)).config
    big = tx.crop_mask(mask, c288)
    assert big.shape == (288, 288)
    src = ((np.arange(288) + 0.5) * 224 / 288).astype(int)  # nearest: the pixel each maps to
    assert np.array_equal(big, mask[src][:, src])
    cover = tx.object_cover(mask, 7, 32)
    for p in (0, 24, 48):
        cell = mask[(p // 7) * 32:(p // 7 + 1) * 32, (p % 7) * 32:(p % 7 + 1) * 32] > 0
        assert cover[p] == pytest.approx(cell.mean())


def test_the_log_readers_by_hand():
    values = [4.0, 2.0, 6.0, 0.0]
    assert tx.smooth(values, 2).tolist() == [4.0, 3.0, 4.0, 3.0]
    assert tx.top_from([0, 10, 100, 500], [3, 1, 1, 1], 1) == 10
    assert tx.top_from([0, 10, 100, 500], [1, 3, 1, 1], 1) == 100
    assert tx.top_from([0, 10, 100], [1, 1, 2], 1) is None
    assert tx.uniform_loss(10) == pytest.approx(2.302585, abs=1e-6)


# ---------------------------------------------------------------- the stage, opened
def curve(fig: dict, name: str) -> tuple[np.ndarray, np.ndarray]:
    found = [t for t in fig["data"] if t.get("name") == name]
    assert found, (name, [t.get("name") for t in fig["data"]])
    return array(found[0]["x"]), array(found[0]["y"])


def check_curves(at, log, step: int, marked: str = "this snapshot") -> None:
    """The curves drawn are the log's rows; the session's step is the marked one (named
    `marked`: another model's curves mark "its final weights")."""
    fig = charts_by_key(at)[TRAIN_CURVES]
    x, y = curve(fig, "training loss")
    rows = [r for r in log.train if "loss" in r]
    assert x.tolist() == [r["step"] for r in rows]
    assert np.allclose(y, [r["loss"] for r in rows], atol=1e-6)
    if log.held_out:
        x, y = curve(fig, f"held-out top-1 ({log.recipe['eval_n']} scenes)")
        assert x.tolist() == [r["step"] for r in log.held_out]
        assert np.allclose(y, [r["top1"] for r in log.held_out])
    x, y = curve(fig, f"top-1 of each kept step ({log.snapshot_eval['n']} scenes)")
    kept = [s for s in log.snapshots if "top1" in s]
    assert x.tolist() == [max(s["step"], 1) for s in kept]  # step 0 drawn at 1
    assert np.allclose(y, [s["top1"] for s in kept])
    x, _ = curve(fig, f"{marked}: step {step:,}")
    assert set(x.tolist()) == {max(step, 1)}
    ticks = next(v for k, v in fig["layout"].items() if k.startswith("xaxis")
                 and v.get("ticktext"))
    assert ticks["ticktext"] == [f"{s:,}" for s in log.steps]
    assert ticks["type"] == "log" and "log scale" in ticks["title"]["text"]


def check_numbers(at, log, step: int) -> None:
    """Position cosines, attention distances, the CLS ratio and the prediction, as the page
    says them, recomputed here for the weights of `step` (and the final ones)."""
    said = words(at)
    model = load_model(NAME, step=step)
    c = model.config
    g, P = c.grid, c.patch_size
    near, far, far_from = near_far(pos_vectors(step, log), g)
    assert (f"At step {step:,}, neighbouring positions have mean cosine {two(near)} and "
            f"positions {far_from} or more steps apart {two(far)}") in said
    pixels = pixels_of(at, model)
    tr = run_trace(model, pixels)
    d = [x for layer in range(c.depth)
         for x in [sum(distances(tr[f"blocks.{layer}.attn.pattern"], g, P, 1)) / c.num_heads]]
    assert (f"At step {step:,} the blocks' mean distances run {px_span(d)} px (attention spread "
            f"evenly: {even_spread(g, P):.0f} px)") in said
    ratio = cls_ratio(tr[f"blocks.{c.depth - 1}.attn.pattern"], scene_mask(at), g, P, 1)
    assert f"**{ratio:.1f}× chance**" in said
    probs = {s: run_trace(load_model(NAME, step=s), pixels).logits.double().softmax(-1)
             for s in log.steps}
    k = int(probs[log.final_step].argmax())
    name = c.class_names[k]
    assert (f"P({name}) at the kept steps: " + ", ".join(
        f"{pct(float(p[k]))} at {s:,}" for s, p in probs.items())) in said
    top = int(probs[step].argmax())
    assert f"At step {step:,} the top class is **{c.class_names[top]}**" in said


@pytest.mark.parametrize("where", ["start", "end"])
def test_the_stage_at_step_0_and_at_the_end(log, where):
    step = 0 if where == "start" else log.final_step
    at = open_app("training", params={"train_step": str(step)} if step == 0 else None,
                  no_error=True)
    assert at.session_state[keys.TRAIN_STEP] == step
    assert at.title[0].value == "11 · Training"
    check_curves(at, log, step)
    check_numbers(at, log, step)
    held = tx.held_out_at(log, step)
    if held is not None:  # a kept step: its own 200 scenes, not the model card's
        assert (f"held-out top-1 was **{pct(held['top1'], 1)}** on the {held['n']} scenes every "
                f"kept step is measured on") in words(at)
    assert {TRAIN_POSITIONS, TRAIN_DISTANCE, TRAIN_CLS,
            TRAIN_PREDICTION} <= set(charts_by_key(at))


@pytest.mark.slow  # an AppTest run; the quick tier keeps the stage's main runs
def test_a_captioner_has_no_log_and_no_class_logits(log):
    """Its curves step draws the classifier's log instead, titled as the classifier's."""
    at = open_app("training", CAPTIONER, no_error=True)
    said = words(at)
    assert f"{CAPTIONER} was trained by this repository without keeping snapshots" in said
    assert f"**{NAME}** was trained here with one (its curves are drawn here)" in said
    charts = charts_by_key(at)
    assert TRAIN_PREDICTION not in charts
    title = charts[TRAIN_CURVES]["layout"]["title"]["text"]
    assert title == f"How {NAME}'s weights formed (its log: {CAPTIONER} has none)"
    check_curves(at, log, log.final_step, marked="its final weights")
    assert "CLS sees only itself" in said  # its own causal mask: nothing reaches a patch
    model = load_model(CAPTIONER)
    c = model.config
    tr = run_trace(model, pixels_of(at, model))
    d = [sum(distances(tr[f"blocks.{layer}.attn.pattern"], c.grid, c.patch_size, 1)) /
         c.num_heads for layer in range(c.depth)]
    assert f"In this model the blocks' mean distances run {px_span(d)} px" in said


@pytest.mark.slow  # an AppTest run; the quick tier keeps the stage's main runs
def test_a_preset_was_never_trained():
    at = open_app("training", PRESET, no_error=True)
    said = words(at)
    assert f"{PRESET} has random weights and was never trained" in said
    model = load_model(PRESET)
    e = model.pos_embed.detach().double().numpy()[0, 1:]
    near, far, far_from = near_far(e, model.config.grid)
    assert (f"In this model, neighbouring positions have mean cosine {two(near)} and positions "
            f"{far_from} or more steps apart {two(far)}") in said
    assert "(random weights: nothing was learned)" in said


@pytest.mark.slow  # an AppTest run; the quick tier keeps the stage's main runs
def test_a_photo_has_no_known_outline():
    """No outline: the question asks for the patch CLS looks at most, found here by hand."""
    from tests.support import photo_bytes

    at = open_app("training", NAME, upload=photo_bytes(), no_error=True)
    assert "This photo's object outline is unknown" in words(at)
    before = set(words(at).splitlines())
    at.toggle(key=keys.reveal("training", "cls")).set_value(True).run()
    answer = next(i.value for i in at.info if i.value not in before)
    model = load_model(NAME)
    c = model.config
    tr = run_trace(model, pixels_of(at, model))
    row = tr[f"blocks.{c.depth - 1}.attn.pattern"][:, 0, 1:].double().mean(0)
    assert answer.startswith(f"Patch {int(row.argmax())} (")


@pytest.mark.slow  # an AppTest run; the quick tier keeps the stage's main runs
def test_a_composed_scene_gives_its_outline():
    comp = world.Composition(shape="star", colour="red", background="sky", position="left",
                             size=80, rotation=0, distractors=0, variation=0)
    at = open_app("training", params={"scene": comp.code}, no_error=True)
    assert at.session_state[keys.INPUT].label.startswith("composed")
    model = load_model(NAME)
    c = model.config
    tr = run_trace(model, pixels_of(at, model))
    mask = world.compose(comp).mask
    ratio = cls_ratio(tr[f"blocks.{c.depth - 1}.attn.pattern"], mask, c.grid, c.patch_size, 1)
    assert f"The object covers {pct(float((mask > 0).mean()))} of this image" in words(at)
    assert f"**{ratio:.1f}× chance**" in words(at)


# ---------------------------------------------------------------- the questions' right values
def build(name: str) -> dict:
    """Every question of the stage for model `name` (a picker name, maybe '@stepN'), on the
    first sample scene, patch 5: {step key: (view, question)}."""
    inp = inputs.make_input("sample", inputs.sample_bytes(inputs.sample_seeds()[0]))
    model = state.get_model(name)
    loaded = (inp, name, model, state.prepare(inp, name), state.trace(inp, name))
    ss = st.session_state
    for key in list(ss.keys()):
        del ss[key]
    ss[keys.LAYER], ss[keys.HEAD], ss[keys.PATCH] = 0, 0, 5
    out = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(session, "load_current", lambda text_free_note=False: loaded)
        stage = stages.get("training")
        v = stage.view()
        for step in stage.steps_for(model.config):
            q = step.question(v, step.facts(v))
            if q is not None:
                out[step.key] = (v, q)
    for key in list(ss.keys()):
        del ss[key]
    return out


@pytest.fixture(scope="module")
def asked(log):
    bare = logging.getLogger("streamlit")
    level, bare.level = bare.level, logging.ERROR
    try:
        middle = sorted(log.steps)[len(log.steps) // 2]
        return {s: build(state.stepped(NAME, s)) for s in (0, middle, log.final_step)}
    finally:
        bare.setLevel(level)


def test_every_question_is_marked(asked):
    for step, qs in asked.items():
        assert set(qs) == {"curves", "positions", "distance", "cls", "prediction"}, step
        for _, q in qs.values():
            assert isinstance(q, deck.Question) and isinstance(q.reply, Number | PatchPick)


def test_the_right_values_by_hand(asked, log):
    mask = world.make_scene(inputs.sample_seeds()[0]).mask
    for step, qs in asked.items():
        v = qs["curves"][0]
        c = v.c
        g, P = c.grid, c.patch_size
        first = log.train[0]["loss"]  # the curve's first point: the whole loss, as drawn
        assert qs["curves"][1].reply.value == pytest.approx(first, abs=0.005)
        assert first > math.log(c.num_classes) + 1  # the segmentation term is in it
        cos = cosines(pos_vectors(step, log))
        best = max(cos[5, j] for j in range(g * g) if j != 5)
        assert set(qs["positions"][1].reply.right) == {
            j for j in range(g * g) if j != 5 and cos[5, j] >= best - 0.01}, step
        assert qs["distance"][1].reply.value == pytest.approx(even_spread(g, P), abs=0.051)
        model = load_model(NAME, step=step)
        tr = run_trace(model, v.prep.pixels)
        ratio = cls_ratio(tr[f"blocks.{c.depth - 1}.attn.pattern"], mask, g, P, 1)
        assert qs["cls"][1].reply.value == pytest.approx(ratio, abs=0.0051), step
        assert qs["prediction"][1].reply.value == pytest.approx(100 / c.num_classes, abs=1e-3)
        answer = qs["cls"][1].answer
        assert re.match(rf"\*\*{ratio:.2f}×\*\*", answer), answer
