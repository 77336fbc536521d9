"""Stage 6 (ui/stages/mlp.py) as a deck of steps: the token chosen with the stage's CLS toggle
reaches every step and both answers (numbers computed here from the trace), the residual chart
never stacks norms that need not add up, the norm wording at its threshold, presenter mode."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.support import HUB, arr, open_app, page_text, photo_bytes, reveal
from ui import keys
from ui.drawing.numbers import pct
from ui.stages import mlp as stage
from ui.stages.mlp import MLP_GELU, MLP_RESID, MLP_TOP
from vit_core import load_image, load_model, preprocess, run_trace

CLF, CAP = "shapes-classifier", "shapes-captioner-causal"
NOCLS = str(HUB / "timm/vit_tiny_avg_nocls.test")


def trace_of(at, name: str):
    model = load_model(name)
    pixels = preprocess(load_image(at.session_state[keys.INPUT].data), model.config)
    return model, run_trace(model, pixels)


def step_number(model: str, key: str) -> int:
    """The ?step= of a step, read from the declaration by its key."""
    return [s.key for s in stage.STAGE.steps_for(load_model(model).config)].index(key) + 1


def norm(tr, name: str, i: int) -> float:
    return float(np.linalg.norm(tr[name][i].double().numpy()))


def test_the_stage_has_three_steps_and_two_questions():
    for name in (CLF, CAP, NOCLS):
        assert [s.key for s in stage.STAGE.steps_for(load_model(name).config)] == [
            "gelu", "units", "stream"]
    at = open_app("mlp", CLF, no_error=True)
    asked = {str(t.key) for t in at.toggle if str(t.key).startswith(keys.REVEAL_PREFIX)}
    assert asked == {keys.reveal("mlp", "gelu"), keys.reveal("mlp", "stream")}


def test_a_model_without_cls_has_no_cls_toggle():
    at = open_app("mlp", NOCLS, no_error=True)
    assert keys.MLP_CLS not in {str(t.key) for t in at.toggle}


def test_the_cls_token_reaches_every_step_and_both_answers():
    at = open_app("mlp", CLF, state={keys.LAYER: 2}, no_error=True)
    at.toggle(key=keys.MLP_CLS).set_value(True).run()
    assert not at.exception
    model, tr = trace_of(at, CLF)
    L, F = model.config.depth, model.config.mlp_hidden
    u = tr["blocks.2.mlp.pre"][0].double().numpy()
    post = tr["blocks.2.mlp.post"][0].double().numpy()
    on = int((u > 0).sum())
    said = page_text(at)
    assert (f"CLS (token 0) at block 2: each dot is one of its {F} hidden units, placed at its "
            f"input U and its output GELU(U). {on} of them ({pct(on / F, 1)}) are switched on "
            f"(U > 0).") in said, said
    top = int(np.argmax(post))
    assert f"Its most active hidden unit, unit {top}, outputs GELU(U) = {post[top]:.2f}." in said
    assert (f"‖X'‖ = {norm(tr, 'blocks.2.resid_mid', 0):.2f} before, the MLP adds a vector of "
            f"norm {norm(tr, 'blocks.2.mlp_out', 0):.2f}, giving ‖X_out‖ = "
            f"{norm(tr, 'blocks.2.resid_post', 0):.2f}.") in said
    resid = [norm(tr, "embed", 0)] + [norm(tr, f"blocks.{b}.resid_post", 0) for b in range(L)]
    assert f"{resid[0]:.2f} at the embedding to {resid[-1]:.2f} after block {L - 1}" in said
    for t in at.toggle:
        if str(t.key).startswith(keys.REVEAL_PREFIX):
            t.set_value(True)
    at.run()
    answers = [i.value for i in at.info if i.icon == ":material/lightbulb:"]
    assert answers[0].startswith(f"In block 2, {on} of CLS's {F} hidden units have U > 0: "
                                 f"{pct(on / F, 1)}.")
    attn = sum(norm(tr, f"blocks.{b}.attn_out", 0) for b in range(L))
    mlp = sum(norm(tr, f"blocks.{b}.mlp_out", 0) for b in range(L))
    assert answers[1].startswith(f"For CLS, summed over the {L} blocks: attention adds vectors "
                                 f"of norm {attn:.1f}, the MLP {mlp:.1f}")


def test_the_share_of_units_is_the_charted_blocks_read_from_the_trace():
    """The answer gives the block the chart draws, and no other (it also gave every block's,
    which no figure of the step shows)."""
    answers, at = reveal("mlp", CAP, {"layer": "3", "patch": "10"})
    model, tr = trace_of(at, CAP)
    on, F = int((tr["blocks.3.mlp.pre"][11] > 0).sum()), model.config.mlp_hidden
    assert answers[0].endswith(f"{on} of patch 10 (1,3)'s {F} hidden units have U > 0: "
                               f"{pct(on / F, 1)}.")
    assert "Over its" not in answers[0]


def stream(first: float, last: float, attn=(1.0, 1.0), mlp=(2.0, 0.5)) -> dict:
    return {"resid": [first, 5.0, last], "attn": list(attn), "mlp": list(mlp)}


def test_the_norm_wording_turns_at_its_named_threshold():
    assert "grows from 10.00 at the embedding to 11.00 after block 1 (1.1×)" in \
        stage.stream_words(stream(10.0, 10.0 * stage.GROWS))
    assert "stays about the same, 10.00 at the embedding and 10.90 after block 1" in \
        stage.stream_words(stream(10.0, 10.9))
    assert "shrinks from 11.00 at the embedding to 10.00 after block 1 (0.91×)" in \
        stage.stream_words(stream(11.0, 10.0))
    assert stage.stream_words(stream(1, 1)).endswith(
        "the MLP adds a larger vector than attention in 1 of 2 blocks.")
    assert stage.stream_words(stream(1, 1, mlp=(3, 3))).endswith("in all 2 blocks.")
    assert stage.stream_words(stream(1, 1, mlp=(0, 0))).endswith(
        "attention adds a larger vector than the MLP in all 2 blocks.")


def test_a_photo_on_the_mlp_stage():
    at = open_app("mlp", CLF, upload=photo_bytes(), no_error=True)
    assert at.session_state[keys.INPUT].label == "upload: photo.jpg"
    _, tr = trace_of(at, CLF)
    i, layer = at.session_state[keys.PATCH] + 1, at.session_state[keys.LAYER]
    on = int((tr[f"blocks.{layer}.mlp.pre"][i] > 0).sum())
    assert f"{on} of them (" in page_text(at)


# ---------------------------------------------------------------- presenter mode
# ViT-B/16's three slides (12 blocks of 197 x 3072 activations) take ~17 s: the slow tier
@pytest.mark.parametrize("name", [CLF, pytest.param("vit-b16", marks=pytest.mark.slow)])
def test_each_slide_draws_one_chart_and_the_stream_is_not_stacked(name):
    charts = {"gelu": MLP_GELU, "units": MLP_TOP, "stream": MLP_RESID}
    for key, chart in charts.items():
        at = open_app(model=name, params={"page": "mlp", "presenter": "1",
                                          "step": str(step_number(name, key))})
        assert not at.exception
        drawn = {el.proto.id.rsplit("-", 1)[-1]: json.loads(el.proto.spec)
                 for el in at.get("plotly_chart")}
        assert set(drawn) == {chart}, key
        assert not at.get("latex") and not at.metric  # the chart has the slide to itself
    fig = drawn[MLP_RESID]
    assert fig["layout"]["barmode"] == "group"
    _, tr = trace_of(at, name)
    i = at.session_state[keys.PATCH] + 1
    bars = [t for t in fig["data"] if t["type"] == "bar"]
    for bar, part in zip(bars, ("attn_out", "mlp_out"), strict=True):
        want = [norm(tr, f"blocks.{b}.{part}", i) for b in range(load_model(name).config.depth)]
        np.testing.assert_allclose(arr(bar["y"]), want, rtol=1e-4)


def test_the_cls_token_stays_on_while_the_slides_move():
    at = open_app(model=CLF, params={"page": "mlp", "presenter": "1"})
    at.toggle(key=keys.MLP_CLS).set_value(True).run()
    assert "CLS (token 0) at block" in page_text(at)
    at.button(key=keys.PRESENTER_NEXT).click().run()
    at.button(key=keys.PRESENTER_NEXT).click().run()
    assert not at.exception and at.toggle(key=keys.MLP_CLS).value
    title = [json.loads(el.proto.spec)["layout"]["title"]["text"]
             for el in at.get("plotly_chart")][0]
    assert title.startswith("CLS: the norm of what each sublayer adds")
