"""Stage 3 (ui/stages/ln_qkv.py) as a deck of steps: the query chosen with the stage's CLS toggle
reaches every step and both answers, the score step's numbers against a softmax computed here,
Q, K and V on one slide, and the token numbering for one, two and no prefix tokens."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tests.support import HUB, arr, open_app, page_text, photo_bytes, reveal, softmax64
from ui import keys
from ui.drawing.numbers import pct
from ui.stages import ln_qkv as stage
from vit_core import load_image, load_model, preprocess, run_trace

CLF, CAP = "shapes-classifier", "shapes-captioner-causal"
DEIT, NOCLS = str(HUB / "tiny-org/deit-distilled"), str(HUB / "timm/vit_tiny_avg_nocls.test")


def trace_of(at, name: str, mask: str | None = None):
    model = load_model(name)
    pixels = preprocess(load_image(at.session_state[keys.INPUT].data), model.config)
    return model, run_trace(model, pixels, mask=mask)


def step_number(model: str, key: str) -> int:
    """The ?step= of a step, read from the declaration by its key."""
    return [s.key for s in stage.STAGE.steps_for(load_model(model).config)].index(key) + 1


def test_the_stage_has_three_steps_and_two_questions():
    for name in (CLF, CAP, NOCLS):
        assert [s.key for s in stage.STAGE.steps_for(load_model(name).config)] == [
            "layernorm", "qkv", "score"]
    at = open_app("qkv", CLF, no_error=True)
    asked = {str(t.key) for t in at.toggle if str(t.key).startswith(keys.REVEAL_PREFIX)}
    assert asked == {keys.reveal("qkv", "layernorm"), keys.reveal("qkv", "score")}


@pytest.mark.parametrize("name,names,offset", [
    (CLF, "CLS is token 0, so patch 7 is token 8 (every patch number + 1)", 1),
    (DEIT, "CLS is token 0, DIST is token 1, so patch 7 is token 9 (every patch number + 2)", 2),
    (NOCLS, "this model has no CLS token, so patch 7 is token 7", 0)])
def test_the_token_numbering_follows_the_prefix_tokens(name, names, offset):
    c = load_model(name).config
    assert c.num_prefix_tokens == offset
    assert names in stage.token_numbering(c, 7)


def test_the_cls_query_reaches_every_step_and_both_answers():
    """With "Use the CLS token as the query" on, the LayerNorm numbers, the outlined rows, the
    score and both answers are token 0's, computed here from the trace."""
    at = open_app("qkv", CLF, state={keys.LAYER: 2, keys.HEAD: 1, keys.KEY_PATCH: 5},
                  no_error=True)
    at.toggle(key=keys.QUERY_IS_CLS).set_value(True).run()
    assert not at.exception
    model, tr = trace_of(at, CLF)
    x = tr["blocks.2.resid_pre"][0].double().numpy()
    mu = x.mean()
    sd = np.sqrt(((x - mu) ** 2).mean())
    said = page_text(at)
    assert f"The token's numbers have mean μ = {mu:.3f} and std σ = {sd:.3f}" in said, said
    assert "Outlined: the query CLS (token 0) in Q, the key patch 5 (0,5) (token 6) in K." in said
    q, k = tr["blocks.2.attn.q"][1].double(), tr["blocks.2.attn.k"][1].double()
    scores = (q[0] @ k.T).numpy() / math.sqrt(model.config.head_dim)
    weight = softmax64(scores)[6]
    assert (f"Query **CLS** (token 0), key **patch 5 (0,5)** (token 6), layer 2, head 1: "
            f"q·k/√d_k = **{scores[6]:.4f}**") in said
    assert f"this key gets {pct(float(weight))} of the query's attention" in said
    for t in at.toggle:
        if str(t.key).startswith(keys.REVEAL_PREFIX):
            t.set_value(True)
    at.run()
    answers = [i.value for i in at.info if i.icon == ":material/lightbulb:"]
    y = tr["blocks.2.ln1"][0].double().numpy()
    assert f"For CLS (token 0) at block 2 the result has mean {y.mean():.3f} and std " \
           f"{y.std():.3f}" in answers[0]
    dot = float(q[0] @ k[6])  # the pair the step's equation works out
    assert (f"q_0·k_6 = {dot:.2f}, so the score is {dot:.2f}/√{model.config.head_dim} = "
            f"{scores[6]:.2f}.") in answers[1]


def test_the_patch_query_answers_are_read_from_the_trace():
    answers, at = reveal("qkv", DEIT, {"layer": "1", "patch": "3"})
    model, tr = trace_of(at, DEIT)
    i, g = 3 + 2, model.config.grid  # CLS and DIST first
    y = tr["blocks.1.ln1"][i].double().numpy()
    assert (f"For patch 3 ({3 // g},{3 % g}) (token 5) at block 1 the result has mean "
            f"{y.mean():.3f} and std {y.std():.3f}") in answers[0]
    head = at.session_state[keys.HEAD]
    q, k = tr["blocks.1.attn.q"][head].double(), tr["blocks.1.attn.k"][head].double()
    scores = (q[i] @ k.T).numpy() / math.sqrt(model.config.head_dim)
    j = at.session_state[keys.KEY_PATCH] + 2  # the key the step's equation works out
    assert f"q_{i}·k_{j} = {float(q[i] @ k[j]):.2f}, so the score is" in answers[1]
    assert answers[1].endswith(f" = {scores[j]:.2f}.")


def test_a_photo_on_the_qkv_stage():
    at = open_app("qkv", CLF, upload=photo_bytes(), no_error=True)
    assert at.session_state[keys.INPUT].label == "upload: photo.jpg"
    _, tr = trace_of(at, CLF)
    i = at.session_state[keys.PATCH] + 1
    x = tr[f"blocks.{at.session_state[keys.LAYER]}.resid_pre"][i].double().numpy()
    assert f"mean μ = {x.mean():.3f}" in page_text(at)


# ---------------------------------------------------------------- presenter mode
@pytest.mark.parametrize("name", [CLF, "vit-b16"])
def test_q_k_and_v_share_one_chart_on_a_slide(name):
    """On the slide the three matrices are the panels of one chart (three charts in columns
    keep a fixed height and overflow the slide), with the trace's values; the page keeps one
    chart each."""
    k = step_number(name, "qkv")
    at = open_app(model=name, params={"page": "qkv", "presenter": "1", "step": str(k)})
    assert not at.exception
    _, tr = trace_of(at, name)
    layer, head = at.session_state[keys.LAYER], at.session_state[keys.HEAD]
    drawn = {el.proto.id.rsplit("-", 1)[-1]: json.loads(el.proto.spec)
             for el in at.get("plotly_chart")}
    assert set(drawn) == {keys.qkv("QKV")}
    panels = drawn[keys.qkv("QKV")]["data"]
    assert [p["type"] for p in panels] == ["heatmap"] * 3
    for panel, n in zip(panels, "qkv", strict=True):
        want = tr[f"blocks.{layer}.attn.{n}"][head].numpy()
        np.testing.assert_allclose(arr(panel["z"]).reshape(want.shape), want, atol=1e-6)
    assert not at.get("latex")
    normal = open_app("qkv", name)
    shown = {el.proto.id.rsplit("-", 1)[-1] for el in normal.get("plotly_chart")}
    assert {keys.qkv(n) for n in "QKV"} <= shown and keys.qkv("QKV") not in shown


def test_the_cls_query_stays_on_while_the_slides_move():
    at = open_app(model=CLF, params={"page": "qkv", "presenter": "1"})
    at.toggle(key=keys.QUERY_IS_CLS).set_value(True).run()
    assert "Outlined" not in page_text(at)
    for _ in range(2):
        at.button(key=keys.PRESENTER_NEXT).click().run()
        assert not at.exception and at.toggle(key=keys.QUERY_IS_CLS).value
        said = page_text(at)
        assert "the query CLS (token 0)" in said or "Query **CLS** (token 0)" in said, said
