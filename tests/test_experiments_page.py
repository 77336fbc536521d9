"""The experiments page under AppTest: what it shows equals interventions done by hand here.

Every expected number is computed in this file from the raw model: pixels greyed or shuffled
with slicing, `run_trace` with positions / mask switched, a greedy loop for captions. None of it
calls ui.serving.state or vit_core.explain.interventions, which the page uses.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.support import open_app
from ui import keys
from ui.stages.experiments.keys import EXP_ALTERED, EXP_CLEAR, EXP_COMPARE, EXP_GRID, EXP_WORDS
from vit_core import load_image, load_model, preprocess, run_trace, run_with_hooks
from vit_core.hooked import without_positions

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hub"
FIXTURE_MODELS = [str(FIXTURES / m) for m in (
    "tiny-org/vit-cls", "tiny-org/vit-headless", "tiny-org/deit-cls", "tiny-org/deit-distilled",
    "tiny-org/vit-1block-1head-p14", "timm/vit_tiny_avg_fcnorm.test",
    "timm/vit_tiny_avg_nocls.test", "timm/vit_tiny_cls.test")]
KINDS = {  # radio label -> what the page does
    "heads": "Switch off attention heads",
    "occlude": "Grey out patches",
    "positions": "Remove position embeddings",
    "shuffle": "Shuffle the patches",
    "shuffle_no_positions": "Shuffle the patches and remove positions",
    "mask": "Apply another attention mask",
}
CENTRE = (16, 17, 18, 23, 24, 25, 30, 31, 32)  # the 3 x 3 patches around patch 24 of a 7 x 7 grid


def open_page(model: str = "shapes-classifier", kind: str | None = None, mask: str | None = None,
              sample: int | None = None, scene: str | None = None) -> AppTest:
    at = open_app("experiments", model, mask, params={"scene": scene} if scene else None)
    if sample is not None:  # the sidebar's n-th sample scene
        at.sidebar.selectbox(key=keys.SAMPLE).select_index(sample).run()
    if kind:
        at.radio(key=keys.EXP_KIND).set_value(KINDS[kind]).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state[keys.MODEL] == model  # the picker did not swap in another model
    return at


def chart(at, key: str) -> dict:
    matches = [e for e in at.get("plotly_chart") if e.key == key]
    assert matches, f"no chart {key}"
    return json.loads(matches[0].proto.spec)


def pct(p: float) -> str:
    """How the page prints a probability: one decimal, three under 1 %."""
    return f"{100 * p:.1f}%" if p >= 0.01 else f"{100 * p:.3f}%"


def text(at) -> str:
    """What the page says: its paragraphs, each step's words and notes."""
    return " ".join(m.value for kind in ("markdown", "info", "caption") for m in getattr(at, kind))


def note(at) -> str:
    """The 'What to notice' under the results, or (nothing chosen yet) the step's words."""
    return next(i.value for kind in ("caption", "info") for i in getattr(at, kind)
                if i.value.startswith(("What to notice", "Nothing is switched off")))


def pixels(at, model):
    return preprocess(load_image(at.session_state[keys.INPUT].data), model.config)


def grey_by_hand(x: torch.Tensor, patches, P: int, g: int) -> torch.Tensor:
    x = x.clone()
    for p in patches:
        r, c = divmod(p, g)
        x[:, :, r * P:(r + 1) * P, c * P:(c + 1) * P] = 0.0  # normalised 0: the mean colour
    return x


def shuffle_by_hand(x: torch.Tensor, perm, P: int, g: int) -> torch.Tensor:
    out = torch.empty_like(x)
    for i, src in enumerate(perm):  # cell i holds patch perm[i]
        (r, c), (sr, sc) = divmod(i, g), divmod(int(src), g)
        out[:, :, r * P:(r + 1) * P, c * P:(c + 1) * P] = x[:, :, sr * P:(sr + 1) * P,
                                                             sc * P:(sc + 1) * P]
    return out


def bars(spec: dict) -> dict[str, dict[str, float]]:
    """before_after_bars: {'before': {label: value}, 'after': {label: value}}."""
    return {d["name"]: dict(zip(d["y"], d["x"], strict=True)) for d in spec["data"]}


def class_probs(model, logits) -> dict[str, float]:
    p = logits.double().softmax(-1)
    names = list(model.config.class_names) or [f"class {k}" for k in range(len(p))]
    return {n: float(p[k]) for k, n in enumerate(names)}


def click_patch(at: AppTest, patch: int) -> AppTest:
    """What a click on a cell of the page's patch grid sends: the chart's selection event with
    the invisible marker's customdata (the patch index), as the browser would."""
    grid = next(e for e in at.get("plotly_chart") if e.key == EXP_GRID)
    states = at._tree.get_widget_states()
    clicked = states.widgets.add()
    clicked.id = grid.proto.id
    clicked.string_value = json.dumps({"selection": {
        "points": [{"customdata": patch, "point_index": patch, "curve_number": 2}],
        "point_indices": [patch], "box": [], "lasso": []}})
    at._run(states)
    assert not at.exception, [e.value for e in at.exception]
    return at


# ---------------------------------------------------------------- classifier: numbers by hand
def test_greyed_patches_before_and_after_equal_a_hand_greyed_image():
    at = open_page(kind="occlude")
    model = load_model("shapes-classifier")
    x = pixels(at, model)
    assert tuple(at.session_state[keys.EXP_OCCLUDED]) == CENTRE
    before, after = run_trace(model, x).logits, run_trace(model, grey_by_hand(x, CENTRE, 32, 7))
    shown = bars(chart(at, EXP_COMPARE))
    p0, p1 = class_probs(model, before), class_probs(model, after.logits)
    for label, value in shown["before"].items():
        assert value == pytest.approx(p0[label], abs=1e-5)
        assert shown["after"][label] == pytest.approx(p1[label], abs=1e-5)
    assert set(sorted(p0, key=p0.get)[-5:]) <= set(shown["before"])  # the top 5 before ...
    assert set(sorted(p1, key=p1.get)[-5:]) <= set(shown["after"])  # ... and after are drawn
    top0, top1 = max(p0, key=p0.get), max(p1, key=p1.get)
    assert top0 == "ball" and top1 != top0  # greying the middle of the ball changes the answer
    said = text(at)
    assert (f"The prediction changed from **{top0}** ({pct(p0[top0])}) to **{top1}** "
            f"({pct(p1[top1])}); P({top0}) went from {pct(p0[top0])} to {pct(p1[top0])}.") in said
    largest = float((after.logits.double() - before.double()).abs().max())
    assert f"The largest change of any logit is {largest:.3g}." in said
    # the altered input drawn is the hand-greyed one, with the greyed patches outlined
    altered = chart(at, EXP_ALTERED)
    assert "9 patches greyed out" in altered["layout"]["title"]["text"]
    assert len({(s["x0"], s["y0"]) for s in altered["layout"]["shapes"]}) == 9  # drawn twice


def test_shuffle_shows_where_each_patch_went_and_its_numbers_equal_a_hand_shuffle():
    at = open_page(kind="shuffle")
    model = load_model("shapes-classifier")
    x = pixels(at, model)
    labels = [d for d in chart(at, EXP_ALTERED)["data"] if d.get("mode") == "text"][0]
    perm = [int(t) for t in labels["text"]]
    assert sorted(perm) == list(range(49)) and perm != list(range(49))
    after = run_trace(model, shuffle_by_hand(x, perm, 32, 7))  # positions kept
    shown = bars(chart(at, EXP_COMPARE))
    p1 = class_probs(model, after.logits)
    for label, value in shown["after"].items():
        assert value == pytest.approx(p1[label], abs=1e-5)


def test_the_note_says_whether_the_answer_moved_from_the_numbers():
    """Shuffling leaves the red ball's answer where it was, but not the purple box's."""
    ball = open_page(kind="shuffle")
    assert "The prediction did not change: **ball**" in text(ball)
    assert "hardly changed, so it hardly depends on where the patches are" in note(ball)
    box = open_page(kind="shuffle", sample=6)
    assert "a purple box on the water" in box.session_state[keys.INPUT].label
    said = text(box)
    assert "The prediction did not change" not in said
    assert "the answer changed, so it depends on where the patches are" in note(box)
    model = load_model("shapes-classifier")
    x = pixels(box, model)
    perm = [int(t) for t in [d for d in chart(box, EXP_ALTERED)["data"]
                             if d.get("mode") == "text"][0]["text"]]
    p0 = class_probs(model, run_trace(model, x).logits)
    p1 = class_probs(model, run_trace(model, shuffle_by_hand(x, perm, 32, 7)).logits)
    assert f"fell from {pct(p0['box'])} to {pct(p1['box'])}" in said


def test_shuffling_without_positions_states_the_measured_difference():
    at = open_page(kind="shuffle_no_positions")
    model = load_model("shapes-classifier")
    x = pixels(at, model)
    perm = [int(t) for t in [d for d in chart(at, EXP_ALTERED)["data"]
                             if d.get("mode") == "text"][0]["text"]]
    shuffled = run_trace(model, shuffle_by_hand(x, perm, 32, 7), positions=False).logits
    plain = run_trace(model, x, positions=False).logits
    d = float((shuffled.double() - plain.double()).abs().max())
    said = note(at)
    same = "exactly the same" if d == 0 else "the same up to float rounding"
    assert f"the largest difference in the logits is {d:.2g}: {same}" in said
    assert "(full mask)" in said


# A ring the classifier is surer of (92.8 %) than the answer it gives every picture under the
# causal mask (ring, 91.7 %): the top class stays and its probability falls by a printed point.
SURE_RING = "ring_white_water_centre_80_124_1_5478"


def test_the_causal_mask_note_is_true_for_any_picture():
    at = open_page(kind="mask", scene=SURE_RING)
    model = load_model("shapes-classifier")
    full = class_probs(model, run_trace(model, pixels(at, model)).logits)
    causal = class_probs(model, run_trace(model, pixels(at, model), mask="causal").logits)
    assert (f"The top class is still **ring**, but its probability fell from {pct(full['ring'])} "
            f"to {pct(causal['ring'])}") in text(at)
    assert pct(full["ring"]) == "92.8%"  # the scene still shows the branch it was chosen for
    assert "The prediction did not change" not in text(at)
    blank = class_probs(model, run_trace(model, torch.zeros(1, 3, 224, 224), mask="causal").logits)
    assert blank == pytest.approx(causal, abs=1e-6)  # a grey picture gets the same answer
    top = max(causal, key=causal.get)
    assert f"now answers {top} ({pct(causal[top])}) for every picture" in note(at)


# ---------------------------------------------------------------- clicking the grid
def test_clicking_a_patch_toggles_it_in_the_grey_set():
    at = open_page(kind="occlude")
    model = load_model("shapes-classifier")
    x = pixels(at, model)
    click_patch(at, 0)
    assert at.session_state[keys.EXP_OCCLUDED] == [0, *CENTRE]
    assert "10 patches greyed out" in chart(at, EXP_ALTERED)["layout"]["title"]["text"]
    shown = bars(chart(at, EXP_COMPARE))["after"]
    p1 = class_probs(model, run_trace(model, grey_by_hand(x, (0, *CENTRE), 32, 7)).logits)
    assert shown == pytest.approx({k: p1[k] for k in shown}, abs=1e-5)
    click_patch(at, 24)  # a second click on a chosen patch takes it out again
    assert at.session_state[keys.EXP_OCCLUDED] == [0, 16, 17, 18, 23, 25, 30, 31, 32]
    at.button(key=EXP_CLEAR).click().run()
    assert at.session_state[keys.EXP_OCCLUDED] == []
    assert "click a patch on the grid" in note(at)


# ---------------------------------------------------------------- captioners
def greedy(model, x, mask=None, positions=True) -> list[int]:
    hooks = {} if positions else without_positions(model)  # embed written without E_pos
    ids = [1]
    with torch.no_grad():
        for _ in range(model.config.max_text_len):
            nxt = int(run_with_hooks(model, x, hooks, torch.tensor([ids]), mask)[0, -1].argmax())
            ids.append(nxt)
            if nxt == 2:
                break
    return ids[1:]


@pytest.mark.parametrize("name", ["shapes-captioner-prefix", "shapes-captioner-causal"])
def test_a_captioner_shows_both_captions_and_the_altered_image(name):
    at = open_page(name, kind="occlude")
    model = load_model(name)
    vocab = model.config.vocab
    x = pixels(at, model)
    before = greedy(model, x)
    after = greedy(model, grey_by_hand(x, CENTRE, 32, 7))
    pair = chart(at, EXP_COMPARE)["data"]
    assert [b["x"] for b in pair] == [[f"{i + 1}. {vocab[t]}" for i, t in enumerate(ids)]
                                      for ids in (before, after)]
    assert pair[0]["x"][-1].endswith("[EOS]")  # nothing after [EOS]
    # the caption before, fed to both runs: one row per word and [EOS], none after it
    words = bars(chart(at, EXP_WORDS))
    fed = [1] + before[:-1] if before[-1] == 2 else [1] + before
    assert list(words["before"]) == [f"{i + 1}. {vocab[t]}" for i, t in enumerate(before)]
    for run, pix in (("before", x), ("after", grey_by_hand(x, CENTRE, 32, 7))):
        probs = run_trace(model, pix, text_ids=fed).logits.double().softmax(-1)
        expected = [float(probs[t, before[t]]) for t in range(len(before))]
        assert list(words[run].values()) == pytest.approx(expected, abs=1e-5)
    altered = chart(at, EXP_ALTERED)
    framed = {(s["x0"], s["y0"]) for s in altered["layout"]["shapes"]}  # each drawn twice:
    assert altered["data"][0]["type"] == "image" and len(framed) == 9  # dark under light


def test_the_sidebar_mask_reaches_both_captioner_runs():
    model = load_model("shapes-captioner-prefix")
    prefix = open_page("shapes-captioner-prefix", kind="positions")
    causal = open_page("shapes-captioner-prefix", kind="positions", mask="causal")
    assert "both runs use the causal attention mask (sidebar)" in text(causal)
    x = pixels(causal, model)
    for at, mask in ((prefix, "prefix"), (causal, "causal")):
        before, after = greedy(model, x, mask=mask), greedy(model, x, mask=mask, positions=False)
        pair = chart(at, EXP_COMPARE)["data"]
        vocab = model.config.vocab
        assert pair[0]["x"] == [f"{i + 1}. {vocab[t]}" for i, t in enumerate(before)], mask
        assert pair[1]["x"] == [f"{i + 1}. {vocab[t]}" for i, t in enumerate(after)], mask
        # the caption before, fed to the run without positions, under the same mask
        fed = [1] + before[:-1] if before[-1] == 2 else [1] + before
        probs = run_trace(model, x, text_ids=fed, mask=mask, positions=False).logits.softmax(-1)
        expected = [float(probs[t, before[t]]) for t in range(len(before))]
        shown = list(bars(chart(at, EXP_WORDS))["after"].values())
        assert shown == pytest.approx(expected, abs=1e-5), mask
    assert chart(prefix, EXP_WORDS) != chart(causal, EXP_WORDS)


def test_shuffling_without_positions_differs_under_the_causal_captioner():
    """Under a causal mask the order of the patches matters even without positions."""
    name = "shapes-captioner-causal"
    at = open_page(name, kind="shuffle_no_positions")
    model = load_model(name)
    x = pixels(at, model)
    perm = [int(t) for t in [d for d in chart(at, EXP_ALTERED)["data"]
                             if d.get("mode") == "text"][0]["text"]]
    before = greedy(model, x)
    fed = [1] + before[:-1] if before[-1] == 2 else [1] + before
    shuffled = run_trace(model, shuffle_by_hand(x, perm, 32, 7), text_ids=fed,
                         positions=False).logits
    plain = run_trace(model, x, text_ids=fed, positions=False).logits
    d = float((shuffled.double() - plain.double()).abs().max())
    assert d > 0.1
    said = note(at)
    assert f"the largest difference in the text logits is {d:.2g}: they differ" in said
    assert "order matters even without positions" in said
    assert "same up to float rounding" not in said


# ---------------------------------------------------------------- every model opens and runs
def check_before(at, model) -> None:
    """The 'before' the page shows is this model's own output on this image."""
    x = pixels(at, model)
    c = model.config
    if c.num_classes:
        p0 = class_probs(model, run_trace(model, x).logits)
        shown = bars(chart(at, EXP_COMPARE))["before"]
        assert shown == pytest.approx({k: p0[k] for k in shown}, abs=1e-5)
    elif c.has_text:
        words = [f"{i + 1}. {c.vocab[t]}" for i, t in enumerate(greedy(model, x))]
        assert chart(at, EXP_COMPARE)["data"][0]["x"] == words
    else:
        assert "no classifier or text head" in text(at)
        assert re.search(r"cosine similarity before vs after -?[0-9.]+ for ", text(at))


@pytest.mark.parametrize("name", ["shapes-classifier", "shapes-captioner-prefix",
                                  "shapes-captioner-causal", "vit-ti16"])
def test_the_page_opens_on_every_bundled_model(name):
    at = open_page(name)
    check_before(at, load_model(name))
    if name == "vit-ti16":
        assert any("random weights" in w.value for w in at.warning)


@pytest.mark.parametrize("path", FIXTURE_MODELS[:1] + [
    pytest.param(p, marks=pytest.mark.slow) for p in FIXTURE_MODELS[1:]],
    ids=lambda p: p.split("hub/")[1])
def test_every_intervention_runs_on_every_fixture_model(path):
    at = open_page(path)
    model = load_model(path)
    check_before(at, model)
    for kind, label in KINDS.items():
        at.radio(key=keys.EXP_KIND).set_value(label).run()
        assert not at.exception, (kind, [e.value for e in at.exception])
        assert note(at) and chart(at, EXP_COMPARE), kind


def test_a_headless_model_is_compared_by_its_final_tokens():
    path = str(FIXTURES / "tiny-org/vit-headless")
    at = open_page(path, kind="positions")
    model = load_model(path)
    x = pixels(at, model)
    f0 = run_trace(model, x)["ln_final"].double()
    f1 = run_trace(model, x, positions=False)["ln_final"].double()
    cls = float(f0[0] @ f1[0] / (f0[0].norm() * f1[0].norm()))
    m0, m1 = f0[1:].mean(0), f1[1:].mean(0)
    mean = float(m0 @ m1 / (m0.norm() * m1.norm()))
    assert f"{cls:.3f} for CLS and {mean:.3f} for mean patch token" in text(at)
    sims = chart(at, EXP_COMPARE)["data"][0]
    assert sims["x"] == pytest.approx([cls, mean], abs=1e-6)
