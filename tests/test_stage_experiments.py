"""Stage 10, Experiments, as a deck of steps: its declaration, its three questions and their
answers, and the sentences worded from numbers (ui/stages/experiments/).

Every expected number is computed here from the raw model (`run_trace` on pixels greyed or
shuffled by hand, a greedy loop), never with the helpers the stage uses; the wording functions
are checked on numbers chosen here.
"""

from __future__ import annotations

import json
import re

import pytest
import torch

from tests.independent import EOS, SOS, pixels_of
from tests.support import HUB, SMALL, open_app, randomised
from ui import keys, stages
from ui.stages import experiments as stage
from ui.stages.experiments.keys import EXP_ALTERED, EXP_COMPARE, EXP_GRID, EXP_UNORDERED, EXP_WORDS
from vit_core import load_model, run_trace
from vit_core.explain import interventions as ex

CENTRE = (16, 17, 18, 23, 24, 25, 30, 31, 32)  # the 3 x 3 patches around patch 24 of a 7 x 7 grid
DEIT = str(HUB / "tiny-org/deit-distilled")
NOCLS = str(HUB / "timm/vit_tiny_avg_nocls.test")
HEADLESS = str(HUB / "tiny-org/vit-headless")


def shown(p: float) -> str:
    """A probability as the stage prints it: one decimal, three under 1 %."""
    return f"{100 * p:.1f}%" if p >= 0.01 else f"{100 * p:.3f}%"


def probs(logits) -> dict[str, float]:
    p = logits.double().softmax(-1)
    names = ["ball", "box", "triangle", "star", "heart", "ring", "cross", "diamond", "moon",
             "arrow"]
    return {n: float(p[k]) for k, n in enumerate(names)}


def grey(x: torch.Tensor, patches, P: int = 32, g: int = 7) -> torch.Tensor:
    x = x.clone()
    for p in patches:
        r, c = divmod(p, g)
        x[:, :, r * P:(r + 1) * P, c * P:(c + 1) * P] = 0.0
    return x


def shuffled(x: torch.Tensor, seed: int, P: int = 32, g: int = 7) -> torch.Tensor:
    perm = torch.randperm(g * g, generator=torch.Generator().manual_seed(seed)).tolist()
    out = torch.empty_like(x)
    for i, src in enumerate(perm):
        (r, c), (sr, sc) = divmod(i, g), divmod(src, g)
        out[:, :, r * P:(r + 1) * P, c * P:(c + 1) * P] = x[:, :, sr * P:(sr + 1) * P,
                                                             sc * P:(sc + 1) * P]
    return out


def greedy(model, x, mask=None) -> list[int]:
    ids = [SOS]
    with torch.no_grad():
        for _ in range(model.config.max_text_len):
            nxt = int(model(x, torch.tensor([ids]), mask=mask)[0, -1].argmax())
            ids.append(nxt)
            if nxt == EOS:
                break
    return ids[1:]


def questions(at) -> list[str]:
    return [m.value.removeprefix("**Ask the class:** ") for m in at.markdown
            if m.value.startswith("**Ask the class:**")]


def revealed(model: str, mask: str | None = None, kind: str | None = None, **chosen):
    """The page with every answer revealed, the change `kind` chosen (default: the first):
    (questions, answers, the app)."""
    at = open_app("experiments", model, mask, state={**({keys.EXP_KIND: kind} if kind else {}),
                                                     **chosen})
    before = {i.value for i in at.info}
    toggles = [t for t in at.toggle if str(t.key).startswith(keys.REVEAL_PREFIX)]
    for t in toggles:
        t.set_value(True)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return questions(at), [i.value for i in at.info if i.value not in before], at


def said(at) -> str:
    return " ".join(m.value for kind in ("markdown", "info", "caption") for m in getattr(at, kind))


# ---------------------------------------------------------------- the declaration
@pytest.mark.parametrize(("name", "keys_"), [
    ("shapes-classifier", ["change", "compare", "unordered"]),
    ("shapes-captioner-causal", ["change", "compare", "words", "unordered"]),
    (HEADLESS, ["change", "compare", "unordered"])])
def test_the_steps_for_each_family(name, keys_):
    c = load_model(name).config
    steps = stages.get("experiments").steps_for(c)
    assert [s.key for s in steps] == keys_
    assert [s.title_for(c) for s in steps][:2] == ["Choose a change", "Before and after"]
    asked = [s.key for s in steps if s.question is not stage.deck._none]
    assert asked == ["compare", "unordered"]  # a question where a chart shows the result


def test_each_presenter_step_draws_one_key_figure():
    """In presenter mode each step draws its own figure only: the input before and after, the
    two results, the caption's words, the runs without positions."""
    expected = {1: {EXP_GRID, EXP_ALTERED}, 2: {EXP_COMPARE},
                3: {EXP_WORDS}, 4: {EXP_UNORDERED}}
    for step, charts in expected.items():
        at = open_app(model="shapes-captioner-causal", params={
            "page": "experiments", "presenter": "1", "step": str(step)},
            state={keys.EXP_KIND: "Grey out patches"})
        assert not at.exception, [e.value for e in at.exception]
        drawn = {el.proto.id.split("-", 2)[-1] for el in at.get("plotly_chart")}
        assert drawn == charts, (step, drawn)
        assert len(questions(at)) == (0 if step in (1, 3) else 1)


# ---------------------------------------------------------------- the questions
GREY, SHUFFLE = "Grey out patches", "Shuffle the patches"
GREYED = "the middle of the picture (the 9 patches around patch 24) greyed out"


def test_the_questions_and_their_answers_on_the_classifier():
    """The question asks about the change the chart shows (issue 39: it asked about greying
    while the chart showed switched-off heads)."""
    name = "shapes-classifier"
    model = load_model(name)
    asked, answers, at = revealed(name)  # the first change: heads switched off
    L = (model.config.depth - 1) // 2
    assert asked[0] == (f"With head 0 of block {at.session_state[keys.LAYER]} switched off: "
                        "what does the classifier answer now?"), (asked, L)
    asked, answers, at = revealed(name, kind=GREY)
    x = pixels_of(at, model)
    assert asked == [
        f"With {GREYED}: what does the classifier answer now?",
        "Why do 'Shuffle the patches and remove positions' and 'Remove position embeddings' "
        "give the same logits?"]
    p0 = probs(run_trace(model, x).logits)
    p1 = probs(run_trace(model, grey(x, CENTRE)).logits)
    top1 = max(p1, key=p1.get)
    assert top1 != "ball"  # greying the middle of the ball changes the answer
    assert answers[0] == (f"{top1} ({shown(p1[top1])}) with {GREYED}, where it answered ball "
                          f"({shown(p0['ball'])}); P(ball) is now {shown(p1['ball'])}.")
    asked, answers, at = revealed(name, kind=SHUFFLE)
    p2 = probs(run_trace(model, shuffled(x, 0)).logits)
    assert max(p2, key=p2.get) == "ball"
    a, b = shown(p0["ball"]), shown(p2["ball"])
    points = round(float(b[:-1]) - float(a[:-1]), 1) + 0.0
    sign = "+" if points > 0 else "−" if points < 0 else ""
    assert answers[0].startswith(f"Still ball: {a} before and {b} with the patches shuffled "
                                 f"(seed 0), a change of {sign}{abs(points):.1f} points.")
    plain = run_trace(model, x, positions=False).logits.double()
    mixed = run_trace(model, shuffled(x, 0), positions=False).logits.double()
    assert float((plain - mixed).abs().max()) < 1e-4
    assert "every image token sees every other" in answers[1]


def test_the_questions_follow_the_seed_and_the_grey_set():
    model = load_model("shapes-classifier")
    asked, answers, at = revealed("shapes-classifier", kind=GREY, **{keys.EXP_OCCLUDED: [0, 1]})
    assert asked[0].startswith("With patches 0 and 1 greyed out: ")
    x = pixels_of(at, model)
    p1 = probs(run_trace(model, grey(x, (0, 1))).logits)
    assert f"{shown(p1['ball'])} with patches 0 and 1 greyed out" in answers[0]
    asked, answers, at = revealed("shapes-classifier", kind=SHUFFLE, **{keys.EXP_SEED: 1})
    p2 = probs(run_trace(model, shuffled(x, 1)).logits)
    assert f"{shown(p2['ball'])} with the patches shuffled (seed 1)" in answers[0]


def test_under_a_causal_mask_the_answers_say_the_classifier_cannot_see_the_image():
    model = load_model("shapes-classifier")
    for kind, change in ((GREY, lambda x: grey(x, CENTRE)), (SHUFFLE, lambda x: shuffled(x, 0))):
        asked, answers, at = revealed("shapes-classifier", "causal", kind)
        x = pixels_of(at, model)
        base = run_trace(model, x, mask="causal").logits
        assert torch.equal(run_trace(model, change(x), mask="causal").logits, base)
        assert answers[0].startswith("Exactly what it answered before: under the causal mask "
                                     "CLS sees only itself"), answers[0]


def test_a_captioner_answer_is_the_greedy_caption_written_with_the_change():
    name = "shapes-captioner-causal"
    _, answers, at = revealed(name, kind=GREY)
    model = load_model(name)
    vocab = model.config.vocab
    x = pixels_of(at, model)
    before, after = greedy(model, x), greedy(model, grey(x, CENTRE))
    assert before != after

    def text(ids):
        return " ".join(vocab[i] for i in ids if i != EOS)

    assert answers[0] == f"With {GREYED} it writes “{text(after)}” instead of “{text(before)}”."
    _, answers, at = revealed(name, kind=SHUFFLE)
    moved = greedy(model, shuffled(x, 0))
    assert answers[0].startswith(f"With the patches shuffled (seed 0) it writes “{text(moved)}”"
                                 if moved != before else "The same caption")


def test_the_order_question_asks_whether_when_the_runs_differ():
    """Under the causal mask a mean-pooled model's output sees the patches' order: the question
    asks whether the two runs agree, and the answer says they need not."""
    asked, answers, at = revealed(NOCLS, "causal")
    model = load_model(NOCLS)
    x = pixels_of(at, model)
    g, P = model.config.grid, model.config.patch_size
    plain = run_trace(model, x, mask="causal", positions=False).logits.double()
    mixed = run_trace(model, shuffled(x, 0, P, g), mask="causal", positions=False).logits
    assert float((plain - mixed.double()).abs().max()) > 1e-3
    assert asked[1].startswith("Do 'Shuffle the patches and remove positions'")
    assert "they need not" in answers[1]


# ---------------------------------------------------------------- facts from the mask tensor
def test_the_mask_note_says_what_the_answer_sees_from_the_tensor():
    """From the causal mask to the full one, the classifier's answer starts to see the image
    (its logits differ between two pictures under full, not under causal); from full to causal
    on a distilled model, CLS and DIST lose it."""
    at = open_app("experiments", "shapes-classifier", "causal",
                  state={keys.EXP_KIND: "Apply another attention mask"})
    assert at.session_state[keys.EXP_MASK] == "full"
    model = load_model("shapes-classifier")
    x = pixels_of(at, model)
    other = grey(x, range(49))
    assert torch.equal(run_trace(model, x, mask="causal").logits,
                       run_trace(model, other, mask="causal").logits)
    assert not torch.allclose(run_trace(model, x).logits, run_trace(model, other).logits)
    text = said(at)
    assert ("Before, under the causal mask CLS sees only itself, so the answer could not see "
            "the image; now it can.") in text
    deit = open_app("experiments", DEIT, state={keys.EXP_KIND: "Apply another attention mask"})
    assert deit.session_state[keys.EXP_MASK] == "causal"
    model = load_model(DEIT)
    x = pixels_of(deit, model)
    p = run_trace(model, x, mask="causal").logits.double().softmax(-1)
    names = list(model.config.class_names)
    assert (f"under the causal mask CLS sees only itself, and DIST only CLS and itself, so what "
            f"reaches the class head no longer depends on the image: this model now answers "
            f"{names[int(p.argmax())]} ({shown(float(p.max()))}) for every picture.") in said(deit)
    nocls = open_app("experiments", NOCLS, state={keys.EXP_KIND: "Apply another attention mask"})
    assert "for every picture" not in said(nocls)  # its head reads every patch token


def test_the_points_said_on_the_page_are_the_difference_of_the_printed_values():
    """Sample 5 (a red triangle) without positions: 92.4% to 91.4% as printed, −1.0 points,
    though the unrounded change is −0.93 (it would print −0.9). Under the causal mask the
    answer no longer depends on the picture and moves by only +0.1 points ("did not change")."""
    at = open_app("experiments", "shapes-classifier", "full",
                  state={keys.EXP_KIND: "Remove position embeddings"})
    at.sidebar.selectbox(key=keys.SAMPLE).select_index(5).run()
    assert not at.exception, [e.value for e in at.exception]
    found = re.search(r"from ([\d.]+)% to ([\d.]+)% \(([+−])([\d.]+) points\)", said(at))
    assert found, said(at)
    a, b, sign, pts = found.groups()
    assert float(("-" if sign == "−" else "") + pts) == pytest.approx(float(b) - float(a),
                                                                      abs=1e-9)


# ---------------------------------------------------------------- wording from numbers
def change(p0, p1) -> ex.ClassChange:
    return ex.class_change(torch.tensor(p0), torch.tensor(p1))


def test_the_verdict_is_worded_from_the_numbers():
    names = ["ball", "box", "star"]
    same = stage.class_change_words(change([0.9, 0.05, 0.05], [0.895, 0.06, 0.045]), names)
    assert same == ("The prediction did not change: **ball**, 90.0% before and 89.5% after "
                    "(−0.5 points).")
    fell = stage.class_change_words(change([0.9, 0.05, 0.05], [0.6, 0.3, 0.1]), names)
    assert fell == ("The top class is still **ball**, but its probability fell from 90.0% to "
                    "60.0% (−30.0 points).")
    changed = stage.class_change_words(change([0.9, 0.05, 0.05], [0.2, 0.7, 0.1]), names)
    assert changed == ("The prediction changed from **ball** (90.0%) to **box** (70.0%); "
                       "P(ball) went from 90.0% to 20.0%.")


def test_a_printed_change_of_a_point_is_never_called_no_change():
    """87.92 % -> 88.88 % moved less than SAME_P, but prints as 87.9% -> 88.9%: +1.0 points."""
    assert 0.8888 - 0.8792 < ex.SAME_P
    text = stage.class_change_words(change([0.8792, 0.1208], [0.8888, 0.1112]), ["a", "b"])
    assert "did not change" not in text and "(+1.0 points)" in text


@pytest.mark.parametrize("before,after", [(0.91249, 0.87454), (0.5049, 0.2951),
                                          (0.334, 0.0051), (0.0123, 0.0049)])
def test_the_points_are_the_difference_of_the_numbers_as_printed(before, after):
    """A reader subtracts the two printed percentages: the points said must be their
    difference (91.2% to 87.5% is −3.7 points, though the unrounded change is −3.795)."""
    text = stage.class_change_words(change([before, 1 - before], [after, 1 - after]), ["a", "b"])
    if "is still" not in text:
        return  # the top class changed: no points are said
    a, b, sign, pts = re.search(r"from ([\d.]+)% to ([\d.]+)% \(([+−]?)([\d.]+) points\)",
                                text).groups()
    assert float(("-" if sign == "−" else "") + pts) == pytest.approx(float(b) - float(a),
                                                                      abs=1e-9), text


def test_a_headless_model_s_sentence_gives_each_final_token_s_cosine():
    model = randomised(SMALL.replace(num_classes=0))
    x = torch.randn(1, 3, 32, 32)
    before, after = run_trace(model, x), ex.ablate_heads(model, x, [(1, 0)])
    f0, f1 = before["ln_final"].double(), after["ln_final"].double()
    cls = float(f0[0] @ f1[0] / (f0[0].norm() * f1[0].norm()))
    m0, m1 = f0[1:].mean(0), f1[1:].mean(0)
    mean = float(m0 @ m1 / (m0.norm() * m1.norm()))
    text = stage.similarity_words(ex.similarities(before, after))
    assert f"{cls:.3f} for CLS and {mean:.3f} for mean patch token" in text


def test_the_shuffle_is_worded_from_its_fixed_points():
    assert stage.shuffled_words((), 4) == (
        "every patch keeps its pixels; all 4 of the 4 patches move to another cell, where each "
        "is given that cell's position embedding.")
    assert stage.shuffled_words((2,), 4, positions=False).endswith(
        "3 of the 4 patches move to another cell, and no image token gets a position "
        "embedding; this seed's order leaves patch 2 in its own cell.")


def test_the_chart_of_the_runs_without_positions_holds_both_runs():
    at = open_app("experiments", "shapes-classifier")
    spec = next(json.loads(e.proto.spec) for e in at.get("plotly_chart")
                if e.key == EXP_UNORDERED)
    model = load_model("shapes-classifier")
    x = pixels_of(at, model)
    runs = {d["name"]: dict(zip(d["y"], d["x"], strict=True)) for d in spec["data"]}
    plain = probs(run_trace(model, x, positions=False).logits)
    mixed = probs(run_trace(model, shuffled(x, 0), positions=False).logits)
    for label, value in runs["positions removed"].items():
        assert value == pytest.approx(plain[label], abs=1e-5)
    for label, value in runs["shuffled (seed 0), positions removed"].items():
        assert value == pytest.approx(mixed[label], abs=1e-5)
