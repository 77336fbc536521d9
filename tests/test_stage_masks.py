"""Stage 5 (masks) as a deck of steps: its declaration, each step alone in presenter mode, and
every number its steps show against passes run here (tests/independent.py), not the stage's own
facts."""

from __future__ import annotations

import numpy as np
import pytest

from tests.independent import caption_text, greedy, pixels_of, teacher_forced
from tests.support import HUB, arr, chart_titled, charts, open_app, page_text, photo_bytes, reveal
from ui import keys
from ui.stages import masks
from vit_core import ViTConfig, load_model, run_trace
from vit_core.io.text import Tokenizer

CAPTIONERS = [("shapes-captioner-prefix", "prefix"), ("shapes-captioner-causal", "causal")]
NOCLS = str(HUB / "timm/vit_tiny_avg_nocls.test")
STEPS = ["three", "visible", "live", "scores", "classifier", "windows"]


def subplot_titles(spec: dict) -> list[str]:
    return [a["text"] for a in spec["layout"].get("annotations", [])
            if a.get("xref") == "paper" and a.get("yref") == "paper"]


def presenter(step: int, model: str = "shapes-classifier", **kw):
    return open_app(model=model, params={"page": "masks", "presenter": "1", "step": str(step)},
                    no_error=True, **kw)


# ---------------------------------------------------------------- the declaration
@pytest.mark.parametrize("config", [
    ViTConfig(),  # a classifier with CLS
    ViTConfig(num_classes=0, class_token=False, global_pool="avg"),  # headless, no CLS
    ViTConfig(vocab_size=11, max_text_len=6, num_classes=0, default_mask="causal"),  # captioner
], ids=["classifier", "headless", "captioner"])
def test_every_family_gets_the_six_steps_with_one_question_at_most_each(config):
    steps = masks.STAGE.steps_for(config)
    assert [s.key for s in steps] == STEPS
    assert len({s.title_for(config) for s in steps}) == len(steps)
    reads = {s.key: tuple(r.__name__ for r in s.reads) for s in steps}  # the stage's own reads
    assert reads == {"three": (), "visible": (), "live": ("masks_runs",),
                     "scores": ("masks_scores",), "classifier": ("causal_classifier",),
                     "windows": ("window_top1",)}


def test_the_questions_come_one_per_step_in_the_steps_order():
    answers, at = reveal("masks", "shapes-captioner-causal")
    asked = [m.value for m in at.markdown if m.value.startswith("**Ask the class:**")]
    assert asked == ["**Ask the class:** Why must text not see later words during training?",
                     "**Ask the class:** Why may the image patches see each other both ways?",
                     "**Ask the class:** What does CLS know under a causal mask?",
                     "**Ask the class:** With 2×2 windows, how many keys may patch 24 (row 3, "
                     "column 3, the white square) read in block 0, itself included?"]
    c = load_model("shapes-captioner-causal").config
    assert answers[0].endswith(f"This model reads up to {c.max_text_len} text tokens after its "
                               f"{c.num_image_tokens} image tokens and was trained with the "
                               f"causal mask.")
    # the chosen captioner runs under its causal mask: the image block is a triangle
    assert answers[1].endswith("Here, under the causal mask, they do not: image token i sees "
                               "only tokens 0 … i.")
    # the classifier shown is the bundled one (a captioner has no class head): said so
    assert answers[2].startswith("shapes-classifier, the classifier shown here: nothing about "
                                 "the image. CLS is token 0")
    assert answers[2].endswith("and so is the prediction.")


def test_the_questions_name_the_chosen_model_when_the_captioners_are_others():
    answers, _ = reveal("masks", "shapes-classifier")
    n = load_model("shapes-classifier").config.num_image_tokens
    assert answers[0].endswith("(This model reads no text; the captioners do.)")
    assert answers[1].endswith(f"In shapes-classifier, under the full mask, all {n} image tokens "
                               f"see each other.")
    assert answers[2].startswith("Nothing about the image.")  # its own classifier: no name


# ---------------------------------------------------------------- presenter mode: one step
@pytest.mark.parametrize("step,figure", [
    (1, "Three masks"), (2, "How many keys"), (3, "Layer 5, head 0"), (5, "shapes-classifier: ")])
def test_a_slide_draws_its_own_figure_and_no_other(step, figure):
    at = presenter(step)
    titles = list(charts(at))
    assert len(titles) == 1 and titles[0].startswith(figure), titles
    assert not at.dataframe


def test_the_caption_typed_on_the_first_slide_is_kept_on_the_later_ones():
    at = presenter(1)
    at.text_input(key=keys.MASK_CAPTION).set_value("a blue box on the sand").run()
    at.button(key=keys.PRESENTER_NEXT).click().run()  # how many keys
    at.button(key=keys.PRESENTER_NEXT).click().run()  # the captioners, live
    assert not at.exception
    live = chart_titled(at, "Layer")
    labels = live["data"][0]["y"]
    assert labels[-7:] == [f"text {i}: {w}" for i, w in
                           enumerate(["[SOS]", "a", "blue", "box", "on", "the", "sand"])]
    at.button(key=keys.PRESENTER_NEXT).click().run()  # the scores: the box is drawn again
    assert at.text_input(key=keys.MASK_CAPTION).value == "a blue box on the sand"
    assert at.dataframe[0].value["word"].tolist()[:3] == ["a", "blue", "box"]


# ---------------------------------------------------------------- the numbers
def test_the_live_patterns_are_the_captioners_own_passes_on_one_scale():
    at = open_app("masks", "shapes-classifier", no_error=True)
    at.slider(key=keys.MASK_LAYER).set_value(2).run()
    at.slider(key=keys.MASK_HEAD).set_value(1).run()
    spec = chart_titled(at, "Layer 2, head 1")
    assert subplot_titles(spec) == [f"{m}, {k} mask" for m, k in CAPTIONERS]
    zs = []
    for i, (name, kind) in enumerate(CAPTIONERS):
        model = load_model(name)
        ids = Tokenizer(model.config.vocab).encode(masks.tour.MASK_CAPTION,
                                                  max_len=model.config.max_text_len).ids
        tr = run_trace(model, pixels_of(at, model), mask=kind, text_ids=ids)
        z = tr["blocks.2.attn.pattern"][1].double().numpy()
        np.testing.assert_allclose(arr(spec["data"][i]["z"]).reshape(z.shape), z, atol=1e-6)
        assert spec["data"][i]["coloraxis"] == "coloraxis"
        zs.append(z)
    scale = spec["layout"]["coloraxis"]
    assert scale["cmin"] == pytest.approx(min(z.min() for z in zs), abs=1e-6)
    assert scale["cmax"] == pytest.approx(max(z.max() for z in zs), abs=1e-6)
    said = page_text(at)
    for name, kind in CAPTIONERS:  # their greedy captions, written here word by word
        model = load_model(name)
        words, _ = greedy(model, pixels_of(at, model), mask=kind)
        assert f"“{caption_text(words)}” ({name})" in said
        assert f"exact caption {model.info.metrics['exact_match']:.1%}" in said


def test_the_scores_are_teacher_forced_and_the_least_sure_word_is_named():
    at = open_app("masks", "shapes-classifier", no_error=True)
    at.text_input(key=keys.MASK_CAPTION).set_value("a green star on the snow").run()
    df = at.dataframe[0].value
    words = ["a", "green", "star", "on", "the", "snow", "[EOS]"]
    assert df["word"].tolist() == words
    said = page_text(at)
    for name, kind in CAPTIONERS:
        model = load_model(name)
        p = teacher_forced(model, pixels_of(at, model), "a green star on the snow", mask=kind)
        assert df[f"P(word), {name} ({kind} mask)"].tolist() == [f"{q:.1%}" for q in p]
        i = int(np.argmin(p))
        assert f"“{words[i]}” ({p[i]:.1%}) for {name} ({kind} mask)" in said


@pytest.mark.parametrize("model,upload,others,photo", [
    (NOCLS, True, True, True),  # a real ViT on a photo: other models, which know only scenes
    (NOCLS, False, True, False),
    ("shapes-captioner-prefix", True, False, False),  # the chosen model is one of them
])
def test_the_live_step_says_whose_attention_it_shows(model, upload, others, photo):
    at = open_app("masks", model, no_error=True, upload=photo_bytes() if upload else None)
    words = [i.value for i in at.info if "Greedy captions" in i.value]
    assert len(words) == 1, [i.value for i in at.info]
    label = "file: vit_tiny_avg_nocls.test"
    assert (f"shapes-captioner-prefix and shapes-captioner-causal are not {label}: this stage "
            f"needs a model with a text stream." in words[0]) == others
    assert ("They know only this repository's generated scenes" in words[0]) == photo


def test_a_classifier_without_cls_keeps_seeing_the_image_under_a_causal_mask():
    at = presenter(5, NOCLS)
    model = load_model(NOCLS)
    x = pixels_of(at, model)
    from ui.selection.inputs import sample_bytes, sample_seeds
    from vit_core import load_image, preprocess

    other = next(sample_bytes(s) for s in sample_seeds()
                 if sample_bytes(s) != at.session_state[keys.INPUT].data)
    a = run_trace(model, x, mask="causal").logits
    b = run_trace(model, preprocess(load_image(other), model.config), mask="causal").logits
    gap = float((a - b).abs().max())
    said = " ".join(i.value for i in at.info)
    assert gap > 1e-3 and f"different (by up to {gap:.2f})" in said
    assert "This model has no CLS token" in said and "for any picture" not in said



@pytest.mark.parametrize("step, title", [(1, "Three masks"), (6, "Windows on the patch grid")])
def test_a_figure_shared_by_every_image_is_drawn_the_same_and_a_slide_does_not_change_it(
        step, title):
    """The masks and windows figures depend on no image: one is built for every student
    (masks._same_for_every_image). A slide fits it to the projector on its own copy: a page
    opened after the slide still has the figure's own height; and the causal mask shown is the
    rule computed here (query i may read key j when j <= i), whoever's image it is drawn for."""
    slide = presenter(step)
    assert chart_titled(slide, title)["layout"].get("height") is None  # fitted to the slide
    pages = [open_app("masks", model="shapes-classifier", upload=photo_bytes(*size),
                      no_error=True) for size in ((640, 480), (500, 700))]
    specs = [chart_titled(at, title) for at in pages]
    assert specs[0] == specs[1]  # another image, the same figure
    assert specs[0]["layout"]["height"] == (360 if step == 1 else 370)
    if step == 1:
        titles = subplot_titles(specs[0])
        panel = next(i for i, t in enumerate(titles) if t.startswith("causal"))
        z = arr(specs[0]["data"][panel]["z"])
        assert np.array_equal(z, np.tril(np.ones_like(z)))
