"""Presenter mode in steps, its questions and the players, driven with AppTest.

The browser half (every step fits 1280×720, 1024×768 and 1920×1080; the clicker's keys walk
every step; Play advances the layers and the caption) is in tests/test_deck_browser.py and
tests/test_browser.py.
"""

import re

import pytest
from streamlit.testing.v1 import AppTest

from tests.independent import charts_by_key
from tests.support import open_app as _open
from tests.support import reveal
from ui import keys, stages
from ui.stages import BY_SLUG as ROUTES
from ui.stages.attention.keys import ATTN_DISTANCE, ATTN_ENTROPY, ATTN_MATRIX
from ui.stages.input_patches import GRID_CLICK, PATCH_MATRIX, PATCH_VECTOR, WHAT_IF_GRID
from ui.stages.logits.keys import GEN_ALL, GEN_STEPS, PLAY_CAPTION
from vit_core import load_image, load_model, preprocess, run_trace

LAST = len(ROUTES) - 1  # the numbered stages: 'Stage 1/LAST' … (the overview is not numbered)

HUB = "tests/fixtures/hub"


def open_app(params: dict, model: str | None = None) -> AppTest:
    return _open(model=model, params=params)  # fails if another model ran


def where(at) -> str:
    """The header's 'Stage 4/10 · step 2/5 · …' line."""
    found = [m.value for m in at.markdown if re.search(r"(Stage \d+/\d+|Overview) · step", m.value)]
    assert len(found) == 1, found
    return found[0]


def trace_of(at, name: str):
    model = load_model(name)
    pixels = preprocess(load_image(at.session_state[keys.INPUT].data), model.config)
    return model, run_trace(model, pixels)


# ---------------------------------------------------------------- steps
PATCH_STEPS = [{GRID_CLICK}, {PATCH_VECTOR}, {PATCH_MATRIX}, {WHAT_IF_GRID},
               set()]  # the last step: the table of patch sizes
ATTENTION_STEPS = [{ATTN_MATRIX}, set(), set(), set(), {ATTN_ENTROPY},
                   {ATTN_DISTANCE}]


@pytest.mark.parametrize(("slug", "expected"), [
    ("patches", PATCH_STEPS), pytest.param("attention", ATTENTION_STEPS, marks=pytest.mark.slow)])
def test_presenter_mode_shows_only_the_current_steps_figures(slug, expected):
    everything = set().union(*expected)
    normal = open_app({"page": slug})
    assert everything <= set(charts_by_key(normal))  # outside presenter mode: all of them
    assert normal.session_state[keys.MODEL] == "shapes-classifier"
    n = len(expected)
    for k, shown in enumerate(expected):
        at = open_app({"page": slug, "presenter": "1", "step": str(k + 1)})
        assert f"step {k + 1}/{n}" in where(at)
        assert set(charts_by_key(at)) & everything == shown, k
    # the intro is said on the first step only
    first = open_app({"page": slug, "presenter": "1"})
    later = open_app({"page": slug, "presenter": "1", "step": "2"})
    assert len(first.markdown) > len(later.markdown) or len(first.latex) > len(later.latex)


def test_next_and_previous_walk_the_steps_then_the_stages():
    at = open_app({"page": "patches", "presenter": "1"}, "vit-ti16")
    assert f"Stage 1/{LAST} · step 1/5" in where(at) and "cut into patches" in where(at)
    for expected in [f"Stage 1/{LAST} · step {k}/5" for k in (2, 3, 4, 5)] + [
            f"Stage 2/{LAST} · step 1/"]:
        at.button(key=keys.PRESENTER_NEXT).click().run()
        assert not at.exception
        if expected.startswith("Stage 2"):  # st.switch_page: AppTest keeps the elements drawn
            assert at.title[0].value.startswith("2 · Patch embeddings")  # after pg.run();
            at.run()  # the header is drawn before, and shows from the next run on
        assert expected in where(at), where(at)
    assert at.query_params["page"] == "embeddings" and at.query_params["model"] == "vit-ti16"
    at.button(key=keys.PRESENTER_PREV).click().run()  # back to the last step of stage 1
    assert at.title[0].value.startswith("1 · Input") and at.query_params["step"] == "5"
    at.run()
    assert f"Stage 1/{LAST} · step 5/5" in where(at)
    assert not set(charts_by_key(at)) & set().union(*PATCH_STEPS)
    (table,) = [h.proto.body for h in at.get("html") if "big-table" in h.proto.body]
    assert "<th>P</th>" in table  # the table of patch sizes, in large type (deck.table)


def test_the_last_step_of_the_last_stage_has_no_next():
    c = load_model("shapes-classifier").config
    n = len(stages.get(list(ROUTES)[-1]).steps_for(c))
    at = open_app({"page": list(ROUTES)[-1], "presenter": "1", "step": str(n)})
    assert at.button(key=keys.PRESENTER_NEXT).disabled
    assert not at.button(key=keys.PRESENTER_PREV).disabled


def test_step_titles_follow_the_model_family():
    captioner = stages.titles("logits", load_model("shapes-captioner-causal").config)
    assert captioner[0].startswith("Writing the caption")
    assert stages.titles("logits", load_model(f"{HUB}/tiny-org/vit-headless").config)[0] == (
        "The final token vector")
    nocls = load_model(f"{HUB}/timm/vit_tiny_avg_nocls.test").config
    titles = stages.titles("attention", nocls)
    assert not any("CLS" in t for t in titles)
    at = open_app({"page": "attention", "presenter": "1", "step": "3"},
                  f"{HUB}/timm/vit_tiny_avg_nocls.test")
    assert f"step 3/{len(titles)}" in where(at) and "rollout" in where(at).lower()


def test_the_model_and_image_stay_reachable_in_presenter_mode():
    at = open_app({"page": "patches", "presenter": "1"})
    # the sidebar's own widgets, drawn in the header's popover instead of the hidden sidebar
    assert not at.sidebar.selectbox  # nothing is drawn twice
    at.selectbox(key=keys.MODEL).set_value("vit-ti16").run()
    assert not at.exception and at.session_state[keys.MODEL] == "vit-ti16"
    assert f"Stage 1/{LAST}" in where(at)
    at.toggle(key=keys.PRESENTER).set_value(False).run()  # the popover also leaves
    assert not at.exception and at.sidebar.selectbox(key=keys.MODEL).value == "vit-ti16"


# ---------------------------------------------------------------- questions
@pytest.mark.parametrize("model", ["shapes-classifier", "vit-ti16"])
def test_the_patch_size_answer_is_computed_for_this_model(model):
    answers, at = reveal("patches", model)
    _, tr = trace_of(at, model)
    n = tr["patches"].shape[0]  # patches of this model
    s = tr["embed"].shape[0]  # tokens
    img = int(round((n * tr["patches"].shape[1] / 3) ** 0.5))  # N · 3P² = 3 · img²
    p = img // int(round(n ** 0.5))
    n2 = (img // (p // 2)) ** 2
    s2 = n2 + (s - n)
    ratio = s2 * s2 / (s * s)
    text = answers[0]
    assert f"If P were {p // 2} instead of {p}" in " ".join(m.value for m in at.markdown)
    assert f"= {n2:,} patches" in text and f"{s2:,}² = {s2 * s2:,}" in text
    assert f"{ratio:.1f}× bigger" in text
    assert {"shapes-classifier": "15.5×", "vit-ti16": "15.9×"}[model] in text


@pytest.mark.parametrize("model", ["shapes-classifier", "vit-ti16"])
def test_the_share_of_hidden_units_on_is_read_from_the_trace(model):
    answers, at = reveal("mlp", model, {"layer": "1", "patch": "3"})
    _, tr = trace_of(at, model)
    c = load_model(model).config
    u = tr["blocks.1.mlp.pre"][3 + c.num_prefix_tokens]  # patch 3's hidden pre-activations
    on = int((u > 0).sum())
    assert f"In block 1, {on} of patch 3 (0,3)'s {c.mlp_hidden} hidden units" in answers[0]
    assert f"{on / c.mlp_hidden:.1%}" in answers[0]


def test_questions_that_do_not_apply_say_so():
    answers, _ = reveal("logits", f"{HUB}/tiny-org/vit-headless")
    assert answers == ["This model has no head, so there are no logits to divide by a "
                       "temperature: its output is the final token vectors."]
    answers, _ = reveal("masks", f"{HUB}/timm/vit_tiny_avg_nocls.test")
    assert "This model has no CLS token." in answers[2]


def test_each_slide_asks_its_own_steps_question_only():
    c = load_model("shapes-classifier").config
    steps = stages.get("attention").steps_for(c)
    asked = [s.key for s in steps if s.key in ("heads", "distance")]
    assert asked == ["heads", "distance"]
    for k, step in enumerate(steps):
        at = open_app({"page": "attention", "presenter": "1", "step": str(k + 1)})
        toggles = [str(t.key) for t in at.toggle if str(t.key).startswith(keys.REVEAL_PREFIX)]
        expected = [] if step.key in ("pattern", "where", "rollout") else [
            keys.reveal("attention", step.key)]
        assert toggles == expected, (k, toggles)


# ---------------------------------------------------------------- players
def test_play_rewinds_the_layers_and_pause_stops():
    at = open_app({"page": "attention"})
    assert at.slider(key=keys.LAYER).value == 5  # the last block of shapes-classifier
    at.button(key=keys.PLAY_LAYERS).click().run()
    assert not at.exception
    assert at.session_state[keys.PRESENTER_PLAYING] == "layers"
    assert at.slider(key=keys.LAYER).value == 0  # played from block 0
    assert at.button(key=keys.PLAY_LAYERS).label == "Pause"
    at.button(key=keys.PLAY_LAYERS).click().run()
    assert at.session_state[keys.PRESENTER_PLAYING] is None
    assert at.button(key=keys.PLAY_LAYERS).label == "Play"


def test_play_starts_the_caption_from_the_first_word():
    at = open_app({"page": "logits"}, "shapes-captioner-causal")
    at.button(key=GEN_ALL).click().run()  # the caption written out
    at.button(key=PLAY_CAPTION).click().run()
    assert not at.exception and at.session_state[GEN_STEPS] == 0
    assert at.session_state[keys.PRESENTER_PLAYING] == "caption"
    shown = [h.value for h in at.subheader if h.value.startswith("[SOS]")]  # under the step's
    assert shown == ["[SOS]  …"]  # title; no word yet: Play writes them one by one
