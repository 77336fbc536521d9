"""Stage 7 (logits) as a deck of steps: the steps each model family gets, one key figure per
slide, the temperature kept from slide to slide, and its sentences checked against numbers worked
out here from the model's own trace (float64), never by the stage's facts functions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.independent import SOS, caption_text, charts_by_key, greedy, pixels_of
from tests.support import HUB, arr, open_app, photo_bytes, reveal, softmax64
from ui import keys, stages
from ui.stages.logits.keys import GEN_ALL, GEN_DIST, LOGITS_LENS, LOGITS_RAW, LOGITS_TOPK
from vit_core import load_model, run_trace
from vit_core.explain.readout import distribution, lens_summary

HEADLESS = str(HUB / "tiny-org/vit-headless")
NOCLS = str(HUB / "timm/vit_tiny_avg_nocls.test")
CLASSIFIER, CAPTIONER = "shapes-classifier", "shapes-captioner-causal"
FAMILIES = {  # model -> (step keys, the one figure key each slide shows)
    CLASSIFIER: (["answer", "raw", "lens"], [LOGITS_TOPK, LOGITS_RAW, LOGITS_LENS]),
    CAPTIONER: (["caption", "score"], [GEN_DIST, None]),
    HEADLESS: (["vector", "similar"], [LOGITS_RAW, None]),
}
FIGURES = {LOGITS_TOPK, LOGITS_RAW, LOGITS_LENS, GEN_DIST}


def words(at) -> list[str]:
    """What the steps say (deck.run draws each step's words as an info)."""
    return [i.value for i in at.info]


def presenting(model: str, step: int, **params):
    return open_app(model=model, params={"page": "logits", "presenter": "1", "step": str(step),
                                         **params}, no_error=True)


def lens_by_hand(model, tr, T: float = 1.0) -> np.ndarray:
    """[L + 1, K] logit lens of a CLS-token model, float64: the final LayerNorm of the CLS row
    after the embedding and after each block, the head, softmax(· / T)."""
    rows = [tr["embed"][0]] + [tr[f"blocks.{i}.resid_post"][0] for i in range(model.config.depth)]
    x = torch.stack(rows).double().numpy()
    ln, head = model.norm, model.head
    x = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + ln.eps)
    x = x * ln.weight.detach().double().numpy() + ln.bias.detach().double().numpy()
    z = x @ head.weight.detach().double().numpy().T + head.bias.detach().double().numpy()
    return softmax64(z / T)


# ---------------------------------------------------------------- the declaration
@pytest.mark.parametrize("model", list(FAMILIES), ids=lambda m: m.split("/")[-1])
def test_each_family_gets_its_own_steps(model):
    c = load_model(model).config
    expected, _ = FAMILIES[model]
    assert [s.key for s in stages.get("logits").steps_for(c)] == expected
    titles = stages.titles("logits", c)
    assert len(titles) == len(set(titles)) == len(expected)


@pytest.mark.parametrize("model", list(FAMILIES), ids=lambda m: m.split("/")[-1])
def test_each_slide_shows_one_key_figure_and_the_page_shows_them_all(model):
    _, figures = FAMILIES[model]
    page = open_app("logits", model, no_error=True)
    assert {f for f in figures if f} <= set(charts_by_key(page))
    for k, figure in enumerate(figures, start=1):
        at = presenting(model, k)
        assert set(charts_by_key(at)) & FIGURES == ({figure} if figure else set()), k
        assert len(words(at)) >= 1  # its sentence(s)
    if model == CAPTIONER:  # the scores table is the second slide's figure
        assert not presenting(model, 1).dataframe and presenting(model, 2).dataframe
    if model == HEADLESS:  # the similarity map is the second slide's figure
        assert not presenting(model, 1).get("image") and presenting(model, 2).get("image")


def test_the_temperature_set_with_the_bars_carries_to_the_lens_slide():
    at = presenting(CLASSIFIER, 1)
    at.slider(key=keys.CLASS_TEMPERATURE).set_value(2.5).run()
    for _ in range(2):  # the raw logits (no slider), then the lens
        at.button(key=keys.PRESENTER_NEXT).click().run()
        assert not at.exception
    model = load_model(CLASSIFIER)
    tr = run_trace(model, pixels_of(at, model))
    P = lens_by_hand(model, tr, 2.5)
    names = list(model.config.class_names)
    lens = charts_by_key(at)[LOGITS_LENS]
    assert lens["layout"]["title"]["text"].endswith("(T = 2.5)")
    for line in lens["data"]:
        np.testing.assert_allclose(arr(line["y"]), P[:, names.index(line["name"])], atol=1e-5)


# ---------------------------------------------------------------- the classifier's sentences
def test_the_raw_logits_gap_is_the_difference_of_the_printed_values():
    at = open_app("logits", NOCLS, no_error=True)
    model = load_model(NOCLS)
    z = run_trace(model, pixels_of(at, model)).logits.double().numpy()
    a, b = np.sort(z)[::-1][:2]
    a, b = f"{a:.2f}", f"{b:.2f}"
    said = [w for w in words(at) if w.startswith("The head gives")]
    assert len(said) == 1
    assert f"from {z.min():.2f} to {z.max():.2f}" in said[0]
    assert f"is highest at {a}, {float(a) - float(b):.2f} above" in said[0] and f"({b})" in said[0]


def test_the_lens_question_names_where_the_answer_takes_the_lead():
    answers, at = reveal("logits", CLASSIFIER)
    model = load_model(CLASSIFIER)
    P = lens_by_hand(model, run_trace(model, pixels_of(at, model)))
    top = P.argmax(1)
    final = int(top[-1])
    lead = max([i + 1 for i in range(len(top)) if top[i] != final] or [0])
    where = ("already in the embeddings, before any block" if lead == 0 else
             f"after block {lead - 1}" if lead < len(top) - 1 else
             f"only after the last block ({model.config.depth - 1})")
    name = model.config.class_names[final]
    assert len(answers) == 2  # the temperature's, then the lens's
    assert answers[1] == (f"Read through the logit lens, {name} is on top {where}, and stays "
                          f"there to the end ({len(top) - lead} of {len(top)} read-outs, "
                          f"counting the embeddings).")


def test_a_clear_lead_on_a_photo_is_not_called_confidence():
    """A photo on the bundled classifier: the banner says it knows only its scenes; however
    clear its lead, the words do not call the model confident (issue 27's cameraman case)."""
    model = load_model(CLASSIFIER)
    names = list(model.config.class_names)
    photo = open_app("logits", CLASSIFIER, upload=photo_bytes(), no_error=True)
    p = softmax64(run_trace(model, pixels_of(photo, model)).logits.numpy())
    first, second = np.argsort(-p)[:2]
    assert p[first] >= 0.75 and p[first] >= 5 * p[second]  # a clear lead, by the stated rule
    said = " ".join(words(photo))
    assert "only knows generated scenes" in said  # the banner
    assert "confident" not in said
    assert (f"{names[first]} leads clearly (the runner-up, {names[second]}, has "
            f"{p[second]:.1%}), but this model knows only its generated scenes, so on a photo "
            f"a clear lead does not make it right.") in said
    scene = open_app("logits", CLASSIFIER, no_error=True)  # its own world: confident is fair
    q = softmax64(run_trace(model, pixels_of(scene, model)).logits.numpy())
    a, b = np.sort(q)[::-1][:2]
    assert ("the model is confident" in " ".join(words(scene))) == (a >= 0.75 and a >= 5 * b)


# ---------------------------------------------------------------- the captioner's sentences
def test_the_caption_slide_says_the_tallest_bar_then_finishes_with_the_greedy_caption():
    at = open_app("logits", CAPTIONER, no_error=True)
    model = load_model(CAPTIONER)
    pixels = pixels_of(at, model)
    z = run_trace(model, pixels, text_ids=[SOS]).logits[-1].double()
    p = z.softmax(-1)
    best = int(p.argmax())
    assert (f"Word 1: greedy takes the tallest bar, “{model.config.vocab[best]}” at "
            f"{float(p[best]):.1%}.") in words(at)
    at.button(key=GEN_ALL).click().run()
    out, probs = greedy(model, pixels)
    assert out[-1] == "[EOS]"
    assert f"Finished: “{caption_text(out)}” (the model wrote [EOS])." in words(at)
    # the chart stays (a slide keeps its figure when Play ends): the last word's distribution
    last = charts_by_key(at)[GEN_DIST]
    assert last["layout"]["title"]["text"].startswith(
        f"P(word {len(out)} | image, words before): it wrote “[EOS]”")
    x, y = arr(last["data"][0]["x"]), last["data"][0]["y"]
    assert y[int(x.argmax())] == "[EOS]" and x.max() == pytest.approx(probs[-1], abs=1e-4)


def test_the_sampling_settings_stay_while_the_other_slide_shows():
    at = presenting(CAPTIONER, 1)
    at.number_input(key=keys.TOP_K).set_value(3).run()
    at.button(key=keys.PRESENTER_NEXT).click().run()
    at.button(key=keys.PRESENTER_PREV).click().run()
    assert not at.exception and at.number_input(key=keys.TOP_K).value == 3
    bars = charts_by_key(at)[GEN_DIST]["data"][0]
    assert int((arr(bars["x"]) > 0).sum()) == 3  # top-k still in force


# ---------------------------------------------------------------- the numbers in explain
def test_lens_summary_finds_every_class_that_led_before_the_final_one():
    P = torch.tensor([[0.3, 0.2, 0.5], [0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.7, 0.1],
                      [0.1, 0.1, 0.8], [0.1, 0.1, 0.8]])
    s = lens_summary(P)
    assert (s["first"], s["final"], s["lead"]) == (2, 2, 4)
    assert [(k, rows) for k, rows, _ in s["rivals"]] == [(0, [1]), (1, [2, 3])]
    assert [peak for *_, peak in s["rivals"]] == pytest.approx([0.6, 0.7])
    assert s["first_on_top"] == {2: 0, 0: 1, 1: 2}
    flat = lens_summary(torch.full((3, 4), 0.25))
    assert flat["all_near_uniform"] and flat["lead"] == 0 and flat["rivals"] == []


def test_distribution_gives_the_leaders_and_the_entropy():
    p = np.array([0.5, 0.3, 0.15, 0.05])
    d = distribution(torch.tensor(p), 3)
    assert [k for k, _ in d["leaders"]] == [0, 1, 2]
    assert [v for _, v in d["leaders"]] == pytest.approx([0.5, 0.3, 0.15])
    assert d["entropy"] == pytest.approx(float(-(p * np.log(p)).sum()))
    assert d["max_entropy"] == pytest.approx(np.log(4)) and not d["near_uniform"]
