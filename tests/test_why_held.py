"""The why stage on a model that counts as big (worker.SMALL_PARAMS set to 0 here, so that the
bundled models take the big models' path in seconds, not ViT-B/16's minutes): the guess's score,
Sanity, patching and a caption's words first show a progress bar (no exception, no "busy", even
when patching waits longer than a page would), and once the background computation is done the
figure says what this test computes itself through the library's public functions
(faithfulness.deletion, faithfulness_sanity.sanity_check, attribution.attribute, patching); in a
live class a guess sent before its score could be computed is kept pending, scored behind the
pages, and shown on Reveal. Alone, the maps wait for a guess: absent before the student tests
one or skips guessing, there after. The answer they explain is read from the overview's pass."""

from __future__ import annotations

import csv
import io
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from tests.support import HUB, WAIT_S, arr, chart_titled, idle, open_app, pending, settle
from tests.test_why_guess import (
    attention_order,
    heard,
    maps_on,
    own_scores,
    shown_auc,
    teacher_does,
)
from tests.test_why_sanity_patching import (
    check_patching,
    check_sanity,
    image,
    object_patches,
    tile,
)
from tests.test_why_words import figure, own_map, shown_map
from ui import keys
from ui.live import classes, session
from ui.selection import inputs
from ui.serving import state, worker
from ui.serving.budget import get_model, shared_cache
from ui.stages.why import compute
from ui.stages.why.keys import (
    WHY_GUESS_PICK,
    WHY_GUESS_SCORES,
    WHY_GUESS_SKIP,
    WHY_GUESS_TEST,
    WHY_OPEN,
    WHY_WORD,
)
from vit_core import load_image, load_model, preprocess
from vit_core.explain import attribution, patching
from vit_core.explain.attribution import METHODS
from vit_core.explain.targets import predicted, word_targets

# the slow tier: seven tests of 4-9 s each, ~35 s of the quick tier's ~380 test-seconds (its 4
# minutes ran out at 232-240 s in CI)
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.slow]

CLF, CAUSAL = "shapes-classifier", "shapes-captioner-causal"
FIXTURE = str(HUB / "tiny-org/vit-1block-1head-p14")
GATE_S = 240  # the most the gated table waits for the test's go-ahead (a page that waits fails)
HELD = "stay hidden until you test your guess"  # the sentence under the guess, alone
COMPUTED = ("_maps", "_table", "_sanity", "_curve", "_patched")  # the why stage's long computations


@pytest.fixture
def big(monkeypatch):
    """Every model counts as big, and the why stage's computations start from nothing."""
    monkeypatch.setattr(worker, "SMALL_PARAMS", 0)
    shared_cache().clear(lambda key: key[0] in COMPUTED)
    yield
    idle()


def test_alone_the_maps_wait_for_a_guess_and_a_big_models_guess_is_scored_behind_progress(big):
    seed = inputs.sample_seeds()[2]
    at = open_app("why", CLF, params={keys.SAMPLE: str(seed)}, no_error=True)
    assert any(HELD in c.value for c in at.caption), "no sentence says why the rest is hidden"
    assert not maps_on(at) and len(at.subheader) == 1, "a later step before the guess"
    assert at.button(key=WHY_GUESS_SKIP), "no way to skip guessing"
    guess = attention_order(seed)[:3]
    at.multiselect(key=WHY_GUESS_PICK).set_value(guess).run()
    at.button(key=WHY_GUESS_TEST).click().run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    assert at.get("progress"), "the guess's score did not wait behind a progress bar"
    assert any(t.startswith(("Computing the six maps (1 of 3)", "Putting each map to the test "
                             "(2 of 3)", "Putting your guess to the test (3 of 3)"))
               for t in pending(at)), pending(at)
    assert not [c for c in at.get("plotly_chart") if c.proto.id.endswith(WHY_GUESS_SCORES)]
    settle(at)
    assert shown_auc(at) == pytest.approx(own_scores(seed, guess, only_auc=True)["auc"],
                                          abs=5e-4)
    assert maps_on(at) and not any(HELD in c.value for c in at.caption), "tested: still held"


def test_skipping_shows_the_maps_and_sanity_waits_behind_progress_then_is_the_librarys(
        big, monkeypatch):
    at = open_app("why", CLF, no_error=True)
    assert not maps_on(at)
    at.button(key=WHY_GUESS_SKIP).click().run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    # the maps, the test, sanity and patching each wait (their jobs start as the page asks)
    assert len(pending(at)) == 4 and len(at.get("progress")) == 4, pending(at)
    assert "Patching the activations (1 of 1) for this image: the step shows them as soon as " \
           "they are ready." in pending(at)
    assert at.radio(key=keys.WHY_PATCH_KIND).value == "object", "no corruption to choose meanwhile"
    settle(at)
    assert maps_on(at)
    model = load_model(CLF)
    pixels, target = image(at, model)
    check_sanity(at, model, pixels, target)
    bad = patching.corrupt(pixels, model.config, "grey", patches=object_patches(at, model.config))
    check_patching(at, model, pixels, target, bad, exact=True)
    patching_outwaits_a_pages_limit(at, target, monkeypatch)


def patching_outwaits_a_pages_limit(at, target, monkeypatch) -> None:
    """A class's patching jobs queue among the pages' passes, but no page waits for them: one
    held longer than a page's limit (worker.LIMIT_S) still ends in the figure (the one just
    checked against the library), not "busy"."""
    drawn = chart_titled(at, f"“{target.label}” against")["data"]
    shared_cache().clear(lambda key: key[0] == "_patched")
    monkeypatch.setattr(worker, "LIMIT_S", 0.3)
    gate, w = threading.Event(), state.forward_worker()
    with ThreadPoolExecutor(1) as pool:
        held = pool.submit(w.run, gate.wait, WAIT_S, timeout=WAIT_S)  # another page's pass
        until(lambda: w.running)
        at.run()
        assert pending(at) == ["Patching the activations (1 of 1) for this image: the step "
                               "shows them as soon as they are ready."], pending(at)
        until(lambda: len(w.fresh) == 1)  # the patching job, queued behind that pass ...
        time.sleep(3 * worker.LIMIT_S)  # ... longer than a page would wait
        gate.set()
        held.result(WAIT_S)
    settle(at)
    again = chart_titled(at, f"“{target.label}” against")["data"]
    for before, after in zip(drawn[:2], again[:2], strict=True):
        assert np.array_equal(arr(before["z"]), arr(after["z"]), equal_nan=True)


def until(done) -> None:
    end = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < end, "never got there"
        time.sleep(0.01)


def test_the_answer_explained_is_read_from_the_pass_the_overview_made(big):
    """compute.target, which every step of the stage asks first, runs no pass of its own once
    the overview has shown the answer (the trace's logits, the caption's words) and is the
    library's `predicted`."""
    for name in (CLF, CAUSAL, FIXTURE):
        at = open_app("overview", name, no_error=True)
        inp, model = at.session_state[keys.INPUT], get_model(name)
        passes = []
        hook = model.register_forward_hook(lambda *a, seen=passes: seen.append(1))
        try:
            found = compute.target(inp, name)
        finally:
            hook.remove()
        assert not passes, f"{name}: {len(passes)} passes to read the answer"
        x = preprocess(load_image(inp.data), model.config)
        assert found == predicted(model, x), name


def test_a_clicked_words_maps_wait_behind_progress_then_are_the_librarys(big):
    at = open_app("why", CAUSAL, state={WHY_OPEN: True}, no_error=True)
    settle(at)
    model = load_model(CAUSAL).eval()
    x = preprocess(load_image(at.session_state[keys.INPUT].data), model.config)
    words = word_targets(model, x)
    place = 3
    at.pills(key=WHY_WORD).set_value(place).run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    assert pending(at) == ["Computing the six maps (1 of 1) for this image: the step shows "
                           "them as soon as they are ready."] and at.get("progress")
    settle(at)
    method = at.selectbox(key="why_word_method").value
    assert shown_map(figure(at)) == pytest.approx(own_map(model, x, method, words[place - 1]),
                                                  abs=1e-5)


@pytest.fixture
def gated(monkeypatch):
    """A guess's score waits for the test's go-ahead (its table, off the worker's thread):
    the table takes "long"."""
    gate, table = threading.Event(), compute.table

    def waits(*args, **kwargs):
        gate.wait(GATE_S)
        return table(*args, **kwargs)

    monkeypatch.setattr(compute, "table", waits)
    yield gate
    gate.set()


def scored(code: str, secret: str) -> dict:
    rows = list(csv.DictReader(io.StringIO(classes.csv_text(session.store(), code, secret))))
    assert len(rows) == 1
    return dict(c.split("=") for c in rows[0]["scores"].split("; "))


def test_in_class_a_guess_sent_before_its_score_is_scored_later_and_shown_on_reveal(big, gated):
    teacher = open_app("why", params={"presenter": "1"})
    teacher.button(key=keys.LIVE_START).click().run()
    code, secret = teacher.session_state[keys.LIVE_CODE], teacher.session_state[keys.LIVE_SECRET]
    seed = inputs.sample_seeds()[3]
    student = open_app("why", CLF, params={keys.LIVE_JOIN: code, keys.SAMPLE: str(seed)})
    guess = [0, 1, 2]
    student.multiselect(key=WHY_GUESS_PICK).set_value(guess).run()
    student.button(key=keys.answer_send("why", "guess")).click().run()
    assert not student.exception and not student.error
    cells = scored(code, secret)
    assert cells.get("pending") == "yes" and "guess_auc" not in cells, cells
    teacher.run()
    said = " ".join(m.value for m in teacher.markdown)
    assert "No guess scored yet. 1 more is still being scored" in said, said
    teacher_does(teacher, keys.reveal_class("why", "guess"), code)
    student.run()
    assert not student.exception and not student.error
    assert student.get("progress") and not maps_on(student), "Reveal: no progress bar"
    gated.set()
    end = time.monotonic() + WAIT_S
    while "guess_auc" not in scored(code, secret):
        assert time.monotonic() < end, "the guess was never scored"
        time.sleep(0.1)
    mine = own_scores(seed, guess)
    cells = scored(code, secret)
    assert float(cells["guess_auc"]) == pytest.approx(mine["auc"], abs=5.1e-5)
    assert "pending" not in cells
    settle(student)
    assert shown_auc(student) == pytest.approx(mine["auc"], abs=5e-4)
    heard(code)
    teacher.run()
    said = " ".join(m.value for m in teacher.markdown if "Of 1 guesses" in m.value)
    assert said and "still being scored" not in said, said


def test_while_sanitys_random_maps_are_computed_its_step_draws_the_trained_ones(big):
    """A slide waiting for the randomised copy's maps still has its key figure: the trained
    maps (kept since the maps step), each its own map scaled to its largest |value|."""
    at = open_app("why", CLF, state={WHY_OPEN: True}, no_error=True)
    settle(at)
    shared_cache().clear(lambda key: key[0] == "_sanity")  # Sanity's numbers only: recomputed
    at.run()
    assert not at.exception and not at.error
    assert len(at.get("progress")) == 1, pending(at)
    model = load_model(CLF)
    pixels, target = image(at, model)
    fig = chart_titled(at, f"“{target.label}”: the maps on the trained model (random weights: "
                           f"being computed)")
    z, g = arr(fig["data"][0]["z"]).astype(float), model.config.grid
    for i, m in enumerate(METHODS):
        own = attribution.attribute(model, pixels, m, target).patches.double().numpy()
        assert np.allclose(tile(z, i, 3, (g, g)), (own / np.abs(own).max()).reshape(g, g),
                           atol=1e-5), m
    idle()
