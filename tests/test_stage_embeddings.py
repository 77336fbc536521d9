"""Stage 2 (ui/stages/embeddings.py) as a deck of steps: its steps per model family, what each
step says against numbers computed here from the model's weights and the page's trace, the
position-similarity wording at its thresholds, and presenter mode (one figure per slide)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.support import HUB, open_app, page_text, photo_bytes
from ui import keys
from ui.drawing.numbers import pct, span
from ui.stages import embeddings as stage
from ui.stages.embeddings.keys import (
    EMBED_MATRIX,
    EMBED_POS_ALL,
    EMBED_POS_ONE,
    EMBED_TEXT,
    EMBED_VECTOR,
)
from vit_core import load_image, load_model, preprocess, run_trace

CLF, CAP, TI = "shapes-classifier", "shapes-captioner-causal", "vit-ti16"
NOCLS = str(HUB / "timm/vit_tiny_avg_nocls.test")


def step_number(model: str, key: str) -> int:
    """The ?step= of a step, read from the declaration by its key."""
    keys_ = [s.key for s in stage.STAGE.steps_for(load_model(model).config)]
    return keys_.index(key) + 1


def chart_keys(at) -> set[str]:
    return {el.proto.id.rsplit("-", 1)[-1] for el in at.get("plotly_chart")}


def positions(model) -> np.ndarray:
    """The patch position vectors, unit length, in float64 ([N, D])."""
    c = model.config
    e = model.pos_embed.detach().double().numpy().reshape(-1, c.embed_dim)[
        c.num_prefix_tokens:c.num_prefix_tokens + c.num_patches]
    return e / np.linalg.norm(e, axis=1, keepdims=True)


def steps_apart(a: int, b: int, g: int) -> int:
    return abs(a // g - b // g) + abs(a % g - b % g)


# ---------------------------------------------------------------- the declaration
def test_a_captioner_has_a_text_step_and_a_classifier_none():
    for name, text in ((CLF, False), (CAP, True), (NOCLS, False)):
        found = [s.key for s in stage.STAGE.steps_for(load_model(name).config)]
        assert found[:5] == ["vector", "filters", "position", "similarity", "sum"], found
        assert ("text" in found) == text


def test_each_question_sits_on_its_own_step():
    at = open_app("embeddings", CLF, no_error=True)
    asked = {str(t.key) for t in at.toggle if str(t.key).startswith(keys.REVEAL_PREFIX)}
    assert asked == {keys.reveal("embeddings", "vector"), keys.reveal("embeddings", "sum"),
                     keys.reveal("embeddings", "size")}


# ---------------------------------------------------------------- what the steps say
@pytest.mark.parametrize("model_name,patch", [(CLF, 24), (CAP, 10), (NOCLS, 5)])
def test_the_position_step_names_the_most_alike_position(model_name, patch):
    at = open_app("embeddings", model_name, state={keys.PATCH: patch}, no_error=True)
    model = load_model(model_name)
    g = model.config.grid
    e = positions(model)
    cos = e @ e[patch]
    others = [i for i in range(len(e)) if i != patch]
    best = max(others, key=lambda i: cos[i])
    d = steps_apart(best, patch, g)
    near = [i for i in others if steps_apart(i, patch, g) == 1]
    said = page_text(at)
    assert (f"Patch {patch}'s position vector is most like patch {best} ({best // g},"
            f"{best % g})'s, {d} step{'' if d == 1 else 's'} away (cosine {cos[best]:.2f}); its "
            f"{len(near)} neighbours average {np.mean(cos[near]):.2f}.") in said, said


@pytest.mark.parametrize("model_name", [CLF, CAP, TI])
def test_the_map_note_names_far_apart_most_alike_pairs_as_its_strongest_pattern(model_name):
    """The classifier's most alike pairs are 4-6 steps apart (found here in numpy); the words
    under the map say so with the range of their steps and cosines. A captioner's most alike
    pairs are neighbours, and random weights have learned nothing: neither says it."""
    at = open_app("embeddings", model_name, no_error=True)
    model = load_model(model_name)
    g = model.config.grid
    e = positions(model)
    sim = e @ e.T
    i, j = np.triu_indices(len(e), 1)
    best = np.argsort(-sim[i, j], kind="stable")[:3]
    d = [steps_apart(int(i[k]), int(j[k]), g) for k in best]
    cos = [float(sim[i[k], j[k]]) for k in best]
    near = float(np.mean([sim[a, b] for a in range(len(e)) for b in range(len(e))
                          if steps_apart(a, b, g) == 1]))
    far = model.info.trained and min(d) >= 3 and min(cos) >= near + 0.2
    said = page_text(at)
    sentence = (f"Yet the 3 most alike pairs of positions are not neighbours: "
                f"{span(str(min(d)), str(max(d)))} steps apart (cosine "
                f"{span(f'{min(cos):.2f}', f'{max(cos):.2f}')}).")
    assert (sentence in said) == far, said
    assert far == (model_name == CLF)
    if not far:
        assert "most alike pairs" not in said


def stats(near, two, far, even=None, odd=None, alike=()):
    return {"near": near, "two": two, "far": far, "far_from": 7, "even": even, "odd": odd,
            "most_alike": list(alike), "grid": 7}


def test_the_closeness_verdict_turns_at_its_named_thresholds():
    clear = stage.similarity_words(stats(0.5, 0.4, 0.5 - stage.CLEAR_GAP))
    assert "clearly more alike" in clear
    weak = stage.similarity_words(stats(0.5, 0.4, 0.5 - stage.CLEAR_GAP + 0.01))
    assert "only a little more alike" in weak
    hardly = stage.similarity_words(stats(0.5, 0.4, 0.5 - stage.WEAK_GAP + 0.01))
    assert "hardly more alike" in hardly
    none = stage.similarity_words(stats(0.1, 0.2, 0.3), trained=False)
    assert none.endswith("do not encode closeness (random weights: nothing was learned).")
    assert "single patch" in stage.similarity_words(stats(None, None, None))
    odd = 0.3 - stage.CHECKERBOARD - 1e-9  # just past the threshold (floats)
    board = stage.similarity_notes(stats(0.5, 0.4, 0.1, even=0.3, odd=odd))
    assert "checkerboard pattern" in board and "(mean 0.30)" in board
    flat = stage.similarity_notes(stats(0.5, 0.4, 0.1, even=0.3, odd=0.26))
    assert "checkerboard" not in flat


def test_the_most_alike_pairs_are_named_only_when_all_of_them_are_far_and_alike():
    far = [(0, 6, 6, 0.9, True), (7, 13, 6, 0.85, True), (0, 48, 12, 0.8, True)]
    said = stage.similarity_words(stats(0.3, 0.2, 0.1, alike=far))
    assert "Yet the 3 most alike pairs of positions are not neighbours: 6–12 steps apart " \
           "(cosine 0.80–0.90)." in said
    notes = stage.similarity_notes(stats(0.3, 0.2, 0.1, alike=far))
    assert "0 (0,0) and 6 (0,6): 6 steps, 0.90; 7 (1,0) and 13 (1,6): 6 steps, 0.85" in notes
    assert "All of them on the grid's border." in notes
    one_close = far[:2] + [(0, 1, stage.APART - 1, 0.8, True)]
    assert "most alike" not in stage.similarity_words(stats(0.3, 0.2, 0.1, alike=one_close))
    barely = [(a, b, d, 0.3 + stage.ALIKE_GAP - 0.01, e) for a, b, d, _, e in far]
    assert "most alike" not in stage.similarity_words(stats(0.3, 0.2, 0.1, alike=barely))
    assert "most alike" not in stage.similarity_words(stats(0.3, 0.2, 0.1, alike=far), False)


@pytest.mark.parametrize("model_name", [CLF, "vit-b16"])
def test_the_filters_step_gives_the_variance_of_the_first_component(model_name):
    at = open_app("embeddings", model_name, no_error=True)
    model = load_model(model_name)
    w = model.patch_embed.proj.weight.detach().double().numpy().reshape(model.config.embed_dim, -1)
    s = np.linalg.svd(w - w.mean(0), compute_uv=False)
    share = s ** 2 / (s ** 2).sum()
    said = page_text(at)
    assert f"the first explains {pct(float(share[0]))} of their variance, the 28 shown " \
           f"{pct(float(share[:28].sum()))}." in said, said
    assert ("Random weights give noise here." in said) == (not model.info.trained)


@pytest.mark.parametrize("model_name,pre", [(CLF, 1), (NOCLS, 0)])
def test_the_sum_step_counts_the_tokens(model_name, pre):
    at = open_app("embeddings", model_name, state={keys.PATCH: 3}, no_error=True)
    net = load_model(model_name)
    tr = run_trace(net, preprocess(load_image(at.session_state[keys.INPUT].data), net.config))
    S, D = tr["embed"].shape
    said = page_text(at)
    assert f"= **{S}** tokens of **{D}** numbers each" in said
    assert (f"patch 3 is token {3 + pre}, because CLS comes first" if pre else
            "with no CLS token, patch 3 is token 3.") in said


def test_a_photo_on_the_embeddings_stage():
    at = open_app("embeddings", CLF, upload=photo_bytes(), no_error=True)
    assert at.session_state[keys.INPUT].label == "upload: photo.jpg"
    net = load_model(CLF)
    tr = run_trace(net, preprocess(load_image(photo_bytes()), net.config))
    p = at.session_state[keys.PATCH]
    first = (tr["patches"][p].double() @ net.patch_embed.proj.weight.detach().double().reshape(
        net.config.embed_dim, -1).T + net.patch_embed.proj.bias.detach().double())[:5].numpy()
    assert np.array2string(first, precision=3) in page_text(at)


# ---------------------------------------------------------------- presenter mode
STEP_CHARTS = {"vector": {EMBED_VECTOR}, "filters": set(), "position": {EMBED_POS_ONE},
               "similarity": {EMBED_POS_ALL}, "sum": {EMBED_MATRIX},
               "text": {EMBED_TEXT}}


def test_each_slide_draws_its_own_figure_alone():
    everything = set().union(*STEP_CHARTS.values())
    normal = open_app("embeddings", CAP, no_error=True)
    assert everything <= chart_keys(normal) and normal.get("latex")
    for key, shown in STEP_CHARTS.items():
        k = step_number(CAP, key)
        at = open_app(model=CAP, params={"page": "embeddings", "presenter": "1", "step": str(k)})
        assert not at.exception
        assert chart_keys(at) & everything == shown, key
        assert not at.get("latex")  # the chart takes the slide; its title says the sum
    text = open_app(model=CAP, params={"page": "embeddings", "presenter": "1",
                                       "step": str(step_number(CAP, "text"))})
    rows = [json.loads(el.proto.spec) for el in text.get("plotly_chart")
            if el.proto.id.endswith(EMBED_TEXT)][0]
    assert rows["layout"]["yaxis"]["ticktext"][0] == "[SOS]"
